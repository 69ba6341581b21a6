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


import mpmath
import sympy as sp

from symrmt.params import ParameterError
from symrmt.cache import cached
from symrmt.errors import SymrmtError
from symrmt.symbolic.variable import T, hermite_poly

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


class QuadratureError(ArithmeticError, SymrmtError):
    """Numeric quadrature did not reach the requested accuracy."""


# ---------------------------------------------------------------------------


@cached(maxsize=1024)
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
        raise ParameterError(f"not a real number: {value}")
    return mpmath.mpf(str(v))


def _peak_points(fn, a, b):
    """Points around the largest value of ``|fn|`` on a grid of step 1/2 over ``[a, b] & [-300, 300]``.

    A Gaussian-weighted integrand such as ``exp(50 t) exp(-t^2/2)`` has all its mass near ``t = 50``;
    quadrature nodes placed only around 0 miss it and the error estimate does not see it."""
    lo, hi = max(a, -300), min(b, 300)
    if not lo < hi:
        return []
    best, arg = None, None
    with mpmath.workdps(15):
        n = int((hi - lo) * 2)
        for i in range(n + 1):
            t = lo + (hi - lo) * i / max(n, 1)
            try:
                v = abs(mpmath.mpmathify(fn(t)))
            except (ZeroDivisionError, ValueError, OverflowError, TypeError):
                continue
            if mpmath.isfinite(v) and (best is None or v > best):
                best, arg = v, t
    if arg is None or abs(arg) < 3:
        return []
    return [arg + d for d in (-20, -10, -5, 0, 5, 10, 20)]


def quad_pieces(pieces, weight_power, dps, factor=None):
    """E[prod(g)^weight_power * factor] by quadrature; returns an mpf correct to dps digits."""
    with mpmath.workdps(dps + GUARD_DPS):
        total = mpmath.mpf(0)
        err = mpmath.mpf(0)
        for lo, hi, g in pieces:
            integrand_expr = g**weight_power * (factor if factor is not None else 1) * sp.exp(-(T**2) / 2)
            fn = mp_function(integrand_expr)
            a, b = sympy_to_mpf(lo, dps + GUARD_DPS), sympy_to_mpf(hi, dps + GUARD_DPS)
            pts = sorted({a, b, *(x for x in [mpmath.mpf(0), *_peak_points(fn, a, b)] if a < x < b)})
            value = error = None
            for degree in (None, 8, 10):
                kw = {} if degree is None else {"maxdegree": degree}
                value, error = mpmath.quad(fn, pts, error=True, **kw)
                if error <= mpmath.mpf(10) ** -(dps + 5) * max(1, abs(value)):
                    break
            else:
                raise QuadratureError(
                    f"quadrature of E[({g}) * ...] over ({lo}, {hi}) did not converge: "
                    f"error estimate {mpmath.nstr(error, 3)} at {dps} digits; ask for fewer digits, "
                    "or check that f is finite and integrable against the Gaussian"
                )
            total += value
            err += error
        total /= mpmath.sqrt(2 * mpmath.pi)
    with mpmath.workdps(dps):
        return +total


@cached(maxsize=1024)
def numeric_hermite(pieces, k, dps):
    """``E[f(xi) He_k(xi)]`` by quadrature, ``f`` given by its smooth pieces."""
    return quad_pieces(pieces, 1, dps, hermite_poly(k) if k else None)


@cached(maxsize=256)
def numeric_square(pieces, dps):
    """``E[f(xi)^2]`` by quadrature, ``f`` given by its smooth pieces."""
    return quad_pieces(pieces, 2, dps)


def exact_to_mpf(value, dps):
    """A SymPy number as an mpf correct to ``dps`` digits (evaluated with guard digits)."""
    with mpmath.workdps(dps + GUARD_DPS):
        x = sympy_to_mpf(value, dps + GUARD_DPS)
    with mpmath.workdps(dps):
        return +x
