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

__all__ = ["mpf_of", "exact_dot", "two_product", "NumberContext", "FLOAT64", "LONGDOUBLE", "MPMATH", "COMPLEX128", "MPCOMPLEX", "FLOAT_EPS", "norm",
           "context_of"]

#: unit roundoff of float64 (2^-52, the spacing of floats at 1)
FLOAT_EPS = 2.0**-52


def mpf_of(value):
    """An exact input (``Fraction``, ``int``, ``float``, ``str``, SymPy number or ``mpf``) as an ``mpf`` rounded
    once to the current mpmath precision.

    Raises ``ValueError`` (from mpmath) for a string that is not a number.

    >>> with mpmath.workdps(20):
    ...     print(mpf_of(Fraction(1, 3)), mpf_of(sp.sqrt(2)), mpf_of("0.1"))
    0.33333333333333333333 1.4142135623730950488 0.1
    """
    if isinstance(value, mpmath.mpf):
        return +value
    if isinstance(value, Fraction):
        return mpmath.mpf(value.numerator) / value.denominator
    if not isinstance(value, (int, float, str)):
        if isinstance(value, sp.Basic):
            return mpmath.mpf(sp.N(value, mpmath.mp.dps + 5))
    return mpmath.mpf(value)


def two_product(a, b):
    """``(p, e)`` with ``p = fl(a * b)`` and ``p + e = a * b`` exactly (Dekker 1971), elementwise, for float64
    arrays (or scalars) whose entries and products stay well inside the normal range.

    >>> p, e = two_product(np.array([1.0 + 2.0 ** -30]), np.array([1.0 - 2.0 ** -30]))
    >>> float(p[0]) == 1.0, float(e[0]) == -(2.0 ** -60)
    (True, True)
    """
    p = a * b
    c = 134217729.0  # 2^27 + 1: Veltkamp's split into 26- and 27-bit halves
    ah = c * a - (c * a - a)
    bh = c * b - (c * b - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def exact_dot(a, b):
    """``sum(a * b)`` of two float64 arrays of one shape, exact and rounded once to the current mpmath precision.

    Each product is split exactly into two floats (Dekker's product) and their sum is read as a few floats of
    decreasing size: ``math.fsum`` (correctly rounded) of the terms, then of the terms less the parts so far,
    until the rest is zero or below the working precision.  Arrays with an entry beyond ``2^+-450`` (where the
    split could overflow or underflow) are summed by ``mpmath.fsum`` of the exact products instead.

    >>> x = np.array([1e16, 1.0, -1e16]); y = np.array([1.0, 0.5, 1.0])
    >>> with mpmath.workdps(40):
    ...     print(exact_dot(x, y), exact_dot(x, x) == mpmath.mpf(10) ** 32 * 2 + 1, sum(x * y))
    0.5 True 0.0
    """
    a = np.ascontiguousarray(a, dtype=np.float64).ravel()
    b = np.ascontiguousarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"exact_dot: arrays of {a.size} and {b.size} entries")
    big = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
    nonzero = np.concatenate([np.abs(a[a != 0]), np.abs(b[b != 0])])
    small = float(np.min(nonzero)) if nonzero.size else 1.0
    if not (big < 2.0 ** 450 and small > 2.0 ** -450):
        return mpmath.fsum(mpmath.mpf(float(x)) * mpmath.mpf(float(y)) for x, y in zip(a, b))
    p, e = two_product(a, b)
    terms = np.concatenate([p, e]).tolist()
    parts = []
    while len(parts) < 48:  # an exact sum of floats in this range spans fewer than 48 x 53 bits
        s = math.fsum(terms + [-x for x in parts])
        if s == 0.0:
            break
        parts.append(s)
        if abs(s) < abs(parts[0]) * 2.0 ** -(mpmath.mp.prec + 8):
            break
    return mpmath.fsum(mpmath.mpf(x) for x in parts)


@dataclass(frozen=True)
class NumberContext:
    """``sqrt``, unit roundoff ``eps`` and conversion ``num`` of one number type (``norm_fn``: the Euclidean norm
    where ``sqrt(sum(x * x))`` is not it).  The module's instances are ``FLOAT64``, ``LONGDOUBLE``, ``MPMATH``,
    ``COMPLEX128`` and ``MPCOMPLEX``.

    >>> FLOAT64.eps == 2.0 ** -52, FLOAT64.floats, MPMATH.floats
    (True, True, False)
    >>> FLOAT64.norm([3.0, 4.0]), COMPLEX128.norm([3j, 4.0])
    (5.0, 5.0)
    """

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
    """The Euclidean norm of the sequence ``v`` in the context ``ctx`` (default: mpmath at the current precision).

    >>> norm([3, 4]), norm([1.0, 1.0], FLOAT64) == math.sqrt(2)
    (mpf('5.0'), True)
    """
    return ctx.norm(v)


def context_of(sqrt) -> NumberContext:
    """The context whose square root is ``sqrt`` (the numeric layer passes ``(sqrt, eps)`` pairs); an unknown
    square root gets a ``"custom"`` context with no roundoff and the identity conversion.

    >>> context_of(math.sqrt).name, context_of(mpmath.sqrt).name, context_of(abs).name
    ('float64', 'mpmath', 'custom')
    """
    for ctx in (FLOAT64, MPMATH, LONGDOUBLE):
        if sqrt is ctx.sqrt:
            return ctx
    return NumberContext("custom", sqrt, None, lambda x: x)
