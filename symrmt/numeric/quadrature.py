"""Gaussian expectations by mpmath quadrature: the numeric side of the Hermite data.

Used when a coefficient has no closed form (``tanh``, ``sigmoid``, ``softplus``, ...):
:func:`mpmath.quad` at the requested precision plus :data:`GUARD_DPS` guard digits,
split at the kinks of ``f``, with its error estimate checked.  The integrands are
compiled from their SymPy form by the package's one compile step
(:func:`symrmt.numeric.compile_expr`).

Examples
--------
>>> import mpmath, sympy as sp
>>> from symrmt.symbolic.gaussian import T
>>> mpmath.nstr(quad_pieces(((-sp.oo, sp.oo, sp.tanh(T)),), 2, 20), 20)
'0.39429449039784117442'
"""

from __future__ import annotations

import functools

import mpmath
import sympy as sp

from symrmt.symbolic.gaussian import T, hermite_poly

__all__ = [
    "GUARD_DPS",
    "QuadratureError",
    "mp_function",
    "sympy_to_mpf",
    "exact_to_mpf",
    "quad_pieces",
    "numeric_hermite",
    "numeric_square",
]

#: Guard digits used inside every numeric evaluation.
GUARD_DPS = 15


class QuadratureError(ArithmeticError):
    """Numeric quadrature did not reach the requested accuracy."""


# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def mp_function(g):
    """``g(t)`` compiled to an mpmath callable (cached)."""
    from symrmt.numeric import compile_expr

    return compile_expr(T, g, floats_ok=True)


def sympy_to_mpf(value, dps):
    """A SymPy number (or +-oo) as an mpf at the current working precision."""
    if value == sp.oo:
        return mpmath.inf
    if value == -sp.oo:
        return -mpmath.inf
    v = sp.N(value, dps + 5)
    if not v.is_real:
        raise ValueError(f"not a real number: {value}")
    return mpmath.mpf(str(v))


def _peak_points(fn, a, b):
    """Points around the largest value of ``|fn|`` on ``[a, b]``.

    A Gaussian-weighted integrand such as ``exp(50 t) exp(-t^2/2)`` has all its mass near ``t = 50``;
    quadrature nodes placed only around 0 miss it and the error estimate does not see it.  The search
    runs on a grid of step 1/2 over ``[-300, 300]`` and, beyond, on a geometric grid (ratio 1.05) up to
    ``|t| = 10^6`` (``exp(700 t)`` peaks at ``t = 700``, its square at ``1400``); the best grid point
    is then refined by a golden-section search of ``log |fn|``."""
    cands = [i / 2 for i in range(-600, 601)]
    x = 300.0
    while x < 1e6:
        x *= 1.05
        cands += [x, -x]
    best, arg = None, None
    with mpmath.workdps(15):
        def val(t):
            try:
                v = abs(mpmath.mpmathify(fn(mpmath.mpf(t))))
            except (ZeroDivisionError, ValueError, OverflowError, TypeError):
                return None
            return v if mpmath.isfinite(v) else None

        for t in cands:
            if not a < t < b:
                continue
            v = val(t)
            if v is not None and (best is None or v > best):
                best, arg = v, t
        if arg is None or abs(arg) < 3:
            return []
        if abs(arg) > 300:  # refine between the geometric neighbours
            lo, hi = arg / 1.05 if arg > 0 else arg * 1.05, arg * 1.05 if arg > 0 else arg / 1.05
            lo, hi = max(lo, a), min(hi, b)
            g = (mpmath.sqrt(5) - 1) / 2

            def lv(t):
                v = val(t)
                return -mpmath.inf if v is None or v == 0 else mpmath.log(v)

            for _ in range(80):
                x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
                if lv(x1) >= lv(x2):
                    hi = x2
                else:
                    lo = x1
                if hi - lo < 0.25:
                    break
            arg = float((lo + hi) / 2)
    return [arg + d for d in (-20, -10, -5, -2, 0, 2, 5, 10, 20)]


def _refined(pts):
    """A second set of breakpoints (midpoints added, the ends kept): other quadrature nodes."""
    out = set(pts)
    finite = [p for p in pts if mpmath.isfinite(p)]
    for x, y in zip(finite[:-1], finite[1:]):
        out.add((x + y) / 2)
    if finite:
        if not mpmath.isfinite(pts[0]):
            out.add(finite[0] - 3)
        if not mpmath.isfinite(pts[-1]):
            out.add(finite[-1] + 3)
    return sorted(out)


def _quad_once(fn, pts, dps, g, lo, hi):
    """One tanh-sinh quadrature at ``dps`` working digits (escalating the degree), with its error estimate."""
    value = error = None
    for degree in (None, 8, 10):
        kw = {} if degree is None else {"maxdegree": degree}
        value, error = mpmath.quad(fn, pts, error=True, **kw)
        if error <= mpmath.mpf(10) ** -(dps - GUARD_DPS + 5) * max(1, abs(value)):
            return value
    raise QuadratureError(
        f"quadrature of E[({g}) * ...] over ({lo}, {hi}) did not converge: "
        f"error estimate {mpmath.nstr(error, 3)} at {dps - GUARD_DPS} digits; ask for fewer digits, "
        "or check that f is finite and integrable against the Gaussian"
    )


#: extra working digits of the second (certifying) quadrature
CERTIFY_EXTRA_DPS = 10


def quad_pieces(pieces, weight_power, dps, factor=None):
    """E[prod(g)^weight_power * factor] by quadrature; returns an mpf correct to dps digits.

    Certified: each piece is integrated twice, by tanh-sinh on two different sets of breakpoints
    (so two different node sets) at two precisions (``dps + GUARD_DPS`` and ``CERTIFY_EXTRA_DPS``
    more); the two must agree to ``10^-(dps+2)`` times ``max(1, |value|)``, else :class:`QuadratureError`.  A
    quadrature that misses the mass of a steep integrand (all of ``exp(450 t)`` lies near
    ``t = 450``) then refuses instead of returning a wrong value.
    """
    work = dps + GUARD_DPS
    with mpmath.workdps(work + CERTIFY_EXTRA_DPS):
        total = mpmath.mpf(0)
        for lo, hi, g in pieces:
            integrand_expr = g**weight_power * (factor if factor is not None else 1) * sp.exp(-(T**2) / 2)
            fn = mp_function(integrand_expr)
            a, b = sympy_to_mpf(lo, work), sympy_to_mpf(hi, work)
            pts = sorted({a, b, *(x for x in [mpmath.mpf(0), *_peak_points(fn, a, b)] if a < x < b)})
            with mpmath.workdps(work):
                first = _quad_once(fn, pts, work, g, lo, hi)
            second = _quad_once(fn, _refined(pts), work + CERTIFY_EXTRA_DPS, g, lo, hi)
            scale = max(abs(first), abs(second), 1)
            if abs(first - second) > mpmath.mpf(10) ** -(dps + 2) * scale:
                raise QuadratureError(
                    f"quadrature of E[({g}) * ...] over ({lo}, {hi}) is not certified: two rules disagree "
                    f"({mpmath.nstr(first, 12)} vs {mpmath.nstr(second, 12)}); the integrand is too steep for "
                    "the quadrature (no closed form of this expectation is known)"
                )
            total += second
        total /= mpmath.sqrt(2 * mpmath.pi)
    with mpmath.workdps(dps):
        return +total


@functools.lru_cache(maxsize=1024)
def numeric_hermite(pieces, k, dps):
    """``E[f(xi) He_k(xi)]`` by quadrature, ``f`` given by its smooth pieces."""
    return quad_pieces(pieces, 1, dps, hermite_poly(k) if k else None)


@functools.lru_cache(maxsize=256)
def numeric_square(pieces, dps):
    """``E[f(xi)^2]`` by quadrature, ``f`` given by its smooth pieces."""
    return quad_pieces(pieces, 2, dps)


def exact_to_mpf(value, dps):
    """A SymPy number as an mpf correct to ``dps`` digits (evaluated with guard digits)."""
    with mpmath.workdps(dps + GUARD_DPS):
        x = sympy_to_mpf(value, dps + GUARD_DPS)
    with mpmath.workdps(dps):
        return +x
