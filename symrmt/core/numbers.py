"""Number contexts: the one place where the float and the mpmath paths differ.

A :class:`NumberContext` names the square root, the unit roundoff and the conversion of a
number type; every algorithm of :mod:`symrmt.core` takes one, so the float64, long double and
mpmath paths run the same code.  ``MPMATH`` works at the current mpmath precision (its
``eps`` is :data:`mpmath.eps`, which follows ``mpmath.mp.prec``); callers set the precision
with ``mpmath.workdps``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass
from typing import Any, Callable

import mpmath
import numpy as np
import sympy as sp

__all__ = ["mpf_of", "NumberContext", "FLOAT64", "LONGDOUBLE", "MPMATH", "COMPLEX128", "MPCOMPLEX", "FLOAT_EPS", "norm",
           "context_of"]

#: unit roundoff of float64 (2^-52, the spacing of floats at 1)
FLOAT_EPS = 2.0**-52


def mpf_of(value):
    """An exact input (Fraction, int, str, SymPy number) as an mpf at the current precision."""
    if isinstance(value, mpmath.mpf):
        return +value
    if isinstance(value, Fraction):
        return mpmath.mpf(value.numerator) / value.denominator
    if not isinstance(value, (int, float, str)):
        if isinstance(value, sp.Basic):
            return mpmath.mpf(sp.N(value, mpmath.mp.dps + 5))
    return mpmath.mpf(value)


@dataclass(frozen=True)
class NumberContext:
    """``sqrt``, unit roundoff ``eps`` and conversion ``num`` of one number type."""

    name: str
    sqrt: Callable[[Any], Any]
    eps: Any
    num: Callable[[Any], Any]
    #: the Euclidean norm of a sequence, where ``sqrt(sum(x * x))`` is not it (complex numbers)
    norm_fn: Any = None

    @property
    def floats(self) -> bool:
        """Whether the context is a fixed-precision machine type (float64 or long double)."""
        return self.name not in ("mpmath", "mpcomplex")

    def norm(self, v):
        """Euclidean norm of a sequence."""
        if self.norm_fn is not None:
            return self.norm_fn(v)
        return self.sqrt(sum(x * x for x in v))


FLOAT64 = NumberContext("float64", math.sqrt, FLOAT_EPS, float)
LONGDOUBLE = NumberContext("longdouble", np.sqrt, np.finfo(np.longdouble).eps, np.longdouble)
MPMATH = NumberContext("mpmath", mpmath.sqrt, mpmath.eps, mpmath.mpf)
#: complex128 (NumPy's norm, as the density paths measure their steps)
COMPLEX128 = NumberContext("complex128", math.sqrt, FLOAT_EPS, complex,
                           norm_fn=lambda v: float(np.linalg.norm(v)))
#: mpmath complex numbers at the current precision
MPCOMPLEX = NumberContext("mpcomplex", mpmath.sqrt, mpmath.eps, mpmath.mpc,
                          norm_fn=lambda v: mpmath.sqrt(sum(abs(x) ** 2 for x in v)))


def norm(v, ctx: NumberContext = MPMATH):
    """Euclidean norm of ``v`` in ``ctx``."""
    return ctx.norm(v)


def context_of(sqrt) -> NumberContext:
    """The context whose square root is ``sqrt`` (the numeric layer's ``(sqrt, eps)`` pairs)."""
    for ctx in (FLOAT64, MPMATH, LONGDOUBLE):
        if sqrt is ctx.sqrt:
            return ctx
    return NumberContext("custom", sqrt, None, lambda x: x)
