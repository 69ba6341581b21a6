"""The variable ``t`` of a nonlinearity ``f(t)`` and the Hermite polynomials in it.

Both the exact Gaussian engine (:mod:`symrmt.hermite.gaussian`, which re-exports them) and the
numeric quadrature (:mod:`symrmt.hermite.quadrature`) need them; they live here, with no other
import from symrmt, so that neither of those two modules has to import the other at load time.

>>> hermite_poly(3)
t**3 - 3*t
"""

from __future__ import annotations

import sympy as sp

__all__ = ["T", "hermite_poly"]

#: The variable of ``f``.
T = sp.Symbol("t", real=True)


def hermite_poly(k):
    """The probabilists' Hermite polynomial ``He_k(t)``."""
    return sp.hermite_prob(k, T)
