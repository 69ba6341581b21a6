"""The variable ``t`` of a nonlinearity ``f(t)`` and the Hermite polynomials in it.

The module imports nothing else from symrmt, so that the exact and the numeric Gaussian expectations both
import it without importing each other.
"""

from __future__ import annotations

import sympy as sp

__all__ = ["T", "hermite_poly"]

#: The variable of ``f``.
T = sp.Symbol("t", real=True)


def hermite_poly(k):
    """The probabilists' Hermite polynomial ``He_k(t)`` (a SymPy polynomial in :data:`T`) of the order ``k >= 0``.

    >>> hermite_poly(2), hermite_poly(4)
    (t**2 - 1, t**4 - 6*t**2 + 3)
    """
    return sp.hermite_prob(k, T)
