"""Float64 expansions: arrays (or numbers) held as unevaluated sums of two or three float64 components.

Error-free sums (Knuth's two-sum) and products (Dekker's, :func:`symrmt.core.numbers.two_product`), the
double-double sum and products used by the refinement of :mod:`symrmt.engine.solve.given_dd`, their
versions for longer expansions through :func:`renorm`, and sums of float64 arrays to about ``u^2``
(:func:`sum_dd`) or ``u^k`` (:func:`sum_acc`) of their sum of magnitudes.

>>> import mpmath
>>> x = split(mpmath.mpf(2) / 3, 2)
>>> dd_add(x, x)[0] == 4 / 3
True
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from symrmt.core.numbers import two_product

__all__ = ["two_sum", "dd_add", "dd_scale", "dd_scale_64", "renorm", "split", "sum_dd", "sum_acc", "trace_exp",
           "RENORM_PASSES"]


def two_sum(a, b):
    """Knuth's error-free sum: ``(s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (float64 arrays
    or numbers).

    >>> two_sum(1.0, 2.0 ** -60)
    (1.0, 8.673617379884035e-19)
    """
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def dd_add(x, y):
    """The sum of two expansions ``x``, ``y`` (tuples of float64 arrays or numbers, largest first): double-double
    (two components each) directly, longer ones through :func:`renorm` to the longer length.

    >>> dd_add((1.0, 2.0 ** -60), (2.0 ** -50, 0.0)) == (1.0 + 2.0 ** -50, 2.0 ** -60)
    True
    """
    if len(x) == 2 and len(y) == 2:
        s, e = two_sum(x[0], y[0])
        e = e + x[1] + y[1]
        hi = s + e
        return hi, e - (hi - s)
    return renorm(list(x) + list(y), max(len(x), len(y)))


def dd_scale(c, x):
    """The product of the scalar expansion ``c`` and the array expansion ``x`` (double-double directly; longer
    ones: Dekker products of the component pairs whose indices sum below the length less one, plain products
    where they sum to it, the rest left out, then :func:`renorm`).

    >>> import mpmath
    >>> with mpmath.workdps(50):   # (1/3) * 3 in double-double: 1 to about u^2
    ...     p = dd_scale(split(mpmath.mpf(1) / 3, 2), (np.array([3.0]), np.array([0.0])))
    ...     print(abs(mpmath.mpf(p[0][0]) + mpmath.mpf(p[1][0]) - 1) < mpmath.mpf(10) ** -31)
    True
    """
    if len(c) == 2 and len(x) == 2:
        p, e = two_product(np.asarray(c[0], dtype=np.float64), x[0])
        e = e + c[0] * x[1] + c[1] * x[0]
        hi = p + e
        return hi, e - (hi - p)
    k = max(len(c), len(x))
    if k == 3 and len(c) == 3 and len(x) == 3:
        # triple-double: the products of order u exactly, those of order u^2 in float64 (errors of order u^3)
        p, e = two_product(np.asarray(c[0], dtype=np.float64), x[0])
        p01, e01 = two_product(np.asarray(c[0], dtype=np.float64), x[1])
        p10, e10 = two_product(np.asarray(c[1], dtype=np.float64), x[0])
        m, em = two_sum(p01, p10)
        mid, r = two_sum(e, m)
        low = r + em + e01 + e10 + (c[0] * x[2] + c[1] * x[1] + c[2] * x[0])
        return renorm([p, mid, low], 3)
    comps = []
    for i, ci in enumerate(c):
        for j, xj in enumerate(x):
            if i + j < k - 1:
                comps.extend(two_product(np.asarray(ci, dtype=np.float64), xj))
            elif i + j == k - 1:
                comps.append(ci * xj)
    return renorm(comps, k)


def dd_scale_64(c, x):
    """The product of the scalar expansion ``c`` and the float64 array ``x``, as an expansion of ``len(c)``
    components.

    >>> hi, lo = dd_scale_64((1.0 + 2.0 ** -52, 0.0), np.array([1.0 + 2.0 ** -52]))
    >>> hi[0] == 1 + 2.0 ** -51, lo[0] == 2.0 ** -104   # (1 + u)^2 = 1 + 2u + u^2 held exactly
    (np.True_, np.True_)
    """
    if len(c) == 2:
        p, e = two_product(np.asarray(c[0], dtype=np.float64), x)
        e = e + c[1] * x
        hi = p + e
        return hi, e - (hi - p)
    comps = []
    for i, ci in enumerate(c):
        comps.extend(two_product(np.asarray(ci, dtype=np.float64), x) if i < len(c) - 1 else (ci * x,))
    return renorm(comps, len(c))


#: passes of error-free two-sums over the components before each component of :func:`renorm` is read off
RENORM_PASSES = 2


def renorm(comps, k):
    """An expansion of ``k`` float64 arrays, largest first, whose sum is that of the arrays (or numbers)
    ``comps`` to about ``u^k`` of its size (``u = 2^-53``; for one of those components, ``u^k`` of the
    largest partial sum when the sum cancels by more than ``u^-2``).

    Each component is read off after :data:`RENORM_PASSES` bottom-up passes of error-free two-sums
    (Ogita, Rump and Oishi 2005, Algorithm 4.1): after the first, the leading sum is within about
    ``n u`` of ``sum |comps|``, after the second within about ``u`` of the sum (for a sum that does not
    cancel by more than ``u^-2``); the error terms, whose sum is exact, give the next components; the last
    is their float64 sum.

    >>> a = np.array([1.0]); parts = renorm([a, -a * (1 - 2.0 ** -45), np.array([2.0 ** -100])], 3)
    >>> [float(x[0]) for x in parts] == [2.0 ** -45, 2.0 ** -100, 0.0]
    True
    """
    c = [np.asarray(x, dtype=np.float64) for x in comps if not (np.ndim(x) == 0 and x == 0)]
    if not c:
        return tuple(np.float64(0.0) for _ in range(k))
    out = []
    while len(out) < k - 1 and len(c) > 1:
        for _ in range(RENORM_PASSES):
            s, errs = c[-1], []
            for x in reversed(c[:-1]):
                s, e = two_sum(x, s)
                errs.append(e)
            c = [s] + errs[::-1]
        out.append(c[0])
        c = c[1:]
    last = c[0]
    for x in c[1:]:
        last = last + x
    out.append(last)
    while len(out) < k:
        out.append(np.zeros_like(out[0]))
    return tuple(out)


def split(x, k):
    """The mpmath number ``x`` as ``k`` float64 numbers whose sum is ``x`` to about ``u^k`` of its size.

    >>> import mpmath
    >>> with mpmath.workdps(60):
    ...     parts = split(mpmath.mpf(1) / 3, 3)
    ...     print(abs(sum(mpmath.mpf(p) for p in parts) - mpmath.mpf(1) / 3) < mpmath.mpf(10) ** -48)
    True
    """
    out = []
    for _ in range(k):
        f = float(x)
        out.append(f)
        x = x - f
    return tuple(out)


def sum_dd(x):
    """The sum of the float64 array ``x`` as an mpmath number, to about ``(log2 N eps)^2 sum|x|``: a pairwise
    tree of error-free two-sums (Knuth), whose rounding errors are summed in float64 at the end.

    >>> with mpmath.workdps(40):
    ...     print(sum_dd([1.0, 2.0 ** -60, -1.0]) == mpmath.mpf(2) ** -60, float(sum([1.0, 2.0 ** -60, -1.0])))
    True 0.0
    """

    hi, errs = _two_sum_tree(x)
    return mpmath.mpf(hi) + mpmath.mpf(math.fsum(float(np.sum(e)) for e in errs))


def _two_sum_tree(x):
    """``(hi, errs)``: the float64 sum of ``x`` by a pairwise tree of two-sums and the arrays of their exact
    rounding errors, one per level (``hi + sum(errs)`` is the exact sum of ``x``)."""
    x = np.asarray(x, dtype=np.float64).ravel()
    errs = []
    while len(x) > 1:
        if len(x) % 2:
            x = np.append(x, 0.0)
        x, e = two_sum(x[0::2], x[1::2])
        errs.append(e)
    return (float(x[0]) if len(x) else 0.0), errs


def sum_acc(x, terms=2):
    """The sum of the float64 array ``x`` as an mpmath number: :func:`sum_dd` for ``terms = 2``; for more, a
    pairwise tree of error-free two-sums whose errors (an array as long as ``x``, exactly the sum's rounding)
    are summed the same way with one term less, to about ``(log2 N u)^terms sum|x|``.

    >>> x = np.array([1.0, 2.0 ** -60, -1.0, 2.0 ** -120])
    >>> with mpmath.workdps(60):
    ...     print(sum_acc(x, 3) == mpmath.mpf(2) ** -60 + mpmath.mpf(2) ** -120)
    True
    """
    if terms <= 2:
        return sum_dd(x)
    hi, errs = _two_sum_tree(x)
    return mpmath.mpf(hi) + (sum_acc(np.concatenate(errs), terms - 1) if errs else 0)


def trace_exp(A, Bt, terms):
    """``sum(A * Bt)`` (``tr(A Bt^T)``) of two expansions of float64 arrays (tuples, largest first) as an
    mpmath number to about ``u^terms`` of ``sum |A_0 Bt_0|``: the component pairs whose indices sum below
    ``terms - 1`` as Dekker products, those that sum to it as float64 products, the sum by :func:`sum_acc`.

    >>> a = (np.array([1.0, 2.0]), np.array([2.0 ** -60, 0.0])); b = (np.array([3.0, -1.5]), np.array([0.0, 0.0]))
    >>> with mpmath.workdps(60):
    ...     print(trace_exp(a, b, 3) == 3 * mpmath.mpf(2) ** -60)
    True
    """
    parts = []
    for i, a in enumerate(A[:terms]):
        for j, b in enumerate(Bt[:terms - i]):
            if i + j < terms - 1:
                parts.extend(x.ravel() for x in two_product(np.ascontiguousarray(a), np.ascontiguousarray(b)))
            else:
                parts.append((np.asarray(a) * np.asarray(b)).ravel())
    return sum_acc(np.concatenate(parts), terms)
