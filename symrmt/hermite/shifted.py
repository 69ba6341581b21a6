r"""Gaussian moments of a nonlinearity at a shifted argument, in extended precision.

For ``xi ~ N(0, 1)`` and a shift ``delta``: ``F(delta) = E f(xi + delta)``, ``F'(delta) = E f'(xi + delta)`` and
``F_2(delta) = E f(xi + delta)^2`` (the conditional moments of the finite-n attention kernel, ``docs/theory.md``
section 13.2).  Each formula is a SymPy expression, compiled through :mod:`symrmt.codegen`:

* the centered ReLU ``max(0, t) - 1/sqrt(2 pi)``: all three in closed form (``Phi``, ``phi`` of ``delta``);
* ``erf``: ``F = erf(delta/sqrt 3)``, ``F' = 2/sqrt(3 pi) exp(-delta^2/3)`` in closed form, and
  ``F_2 = 1 - (4/pi) int_0^{1/sqrt 5} exp(-delta^2 (1 + x^2)/3)/(1 + x^2) dx`` (Owen's ``T``), the integrand
  compiled and the integral taken by a Gauss-Legendre rule;
* any other ``f`` (tanh): the integrands ``f, f', f^2`` compiled from ``f``'s SymPy expression and integrated
  against the Gaussian by the trapezoidal rule of step :data:`STEP` on ``|x| <= ``:data:`HALF_WIDTH`
  (exponentially accurate for an ``f`` analytic in a strip: for tanh, whose poles are at ``+-i pi/2``, the
  error is below ``1e-21``).

Everything is evaluated in ``numpy.longdouble`` (64-bit mantissa on x86-64: about 19 digits), with nodes,
weights and constants accurate to that precision (``erf`` by :func:`erf_longdouble`).

>>> import numpy as np
>>> F, F1, F2 = shifted_moments("tanh", np.array([0.0, 0.5], dtype=np.longdouble))
>>> [round(float(v), 12) for v in F]
[0.0, 0.295452877052]
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp
from numpy.polynomial.legendre import leggauss

from symrmt.cache import cached
from symrmt.errors import ParameterError
from symrmt.codegen.compile import compile_expr

__all__ = ["STEP", "HALF_WIDTH", "LEGENDRE_NODES", "erf_longdouble", "shifted_moments", "shifted_formulas",
           "to_longdouble"]

#: the trapezoidal rule's step (an exact binary fraction, so the nodes ``j * STEP`` are exact)
STEP = 0.125
#: the trapezoidal rule's half-width: the Gaussian mass beyond it is below ``2e-23``
HALF_WIDTH = 10
#: Gauss-Legendre nodes for erf's ``F_2`` integral and for :func:`erf_longdouble`
LEGENDRE_NODES = 48

LD = np.longdouble
_t, _d, _x = sp.symbols("t delta x", real=True)


def to_longdouble(values) -> np.ndarray:
    """mpmath numbers (or anything ``mpmath.mpf`` takes) to a ``numpy.longdouble`` array, rounded once
    (two float64 parts carry about 106 bits, more than the 64 of ``longdouble``).

    >>> float(to_longdouble([mpmath.mpf(1) / 3])[0] * 3)
    1.0
    """
    out = []
    for v in values:
        v = mpmath.mpf(v)
        hi = float(v)
        lo = float(v - hi) if math.isfinite(hi) else 0.0
        out.append(LD(hi) + LD(lo))
    return np.array(out, dtype=LD)


def shifted_formulas(name: str) -> dict:
    """The SymPy formulas behind :func:`shifted_moments` for ``name`` (``"relu"``, ``"erf"``, or any
    nonlinearity's expression text): a dict with ``"closed"`` (``[F, F', F_2]`` in ``delta``, where known in
    closed form), ``"integrand"`` (``[f, f', f^2]`` in ``t``, for the Gaussian quadrature) and ``"owen"`` (erf's
    ``F_2`` as ``1 - (4/pi) int_0^{1/sqrt 5}`` of an integrand in ``x`` and ``delta``).

    >>> shifted_formulas("erf")["closed"][0]
    erf(sqrt(3)*delta/3)
    """
    phi = sp.exp(-_d**2 / 2) / sp.sqrt(2 * sp.pi)
    Phi = (1 + sp.erf(_d / sp.sqrt(2))) / 2
    if name == "relu":
        a0 = 1 / sp.sqrt(2 * sp.pi)
        m1 = _d * Phi + phi
        m2 = (_d**2 + 1) * Phi + _d * phi
        return {"closed": [m1 - a0, Phi, m2 - 2 * a0 * m1 + a0**2]}
    if name == "erf":
        return {"closed": [sp.erf(_d / sp.sqrt(3)), 2 / sp.sqrt(3 * sp.pi) * sp.exp(-_d**2 / 3)],
                "owen": sp.exp(-_d**2 * (1 + _x**2) / 3) / (1 + _x**2)}
    f = sp.sympify({"tanh": "tanh(t)"}.get(name, name), locals={"t": _t})
    return {"integrand": [f, sp.diff(f, _t), f**2]}


def _constants_as_args(expr):
    """``(expr', symbols, values)``: every maximal non-integer constant of ``expr`` (``1/3``, ``sqrt(2)``, ``pi``)
    replaced by a symbol, with its value in longdouble; NumPy's printer would write it as a float64 literal."""
    found = {}

    def walk(e):
        if e.is_number and not e.is_Integer:
            if e not in found:
                found[e] = sp.Symbol(f"_k{len(found)}")
            return found[e]
        if not e.args:
            return e
        return e.func(*[walk(a) for a in e.args])

    new = [walk(e) for e in expr] if isinstance(expr, (list, tuple)) else walk(expr)
    with mpmath.workdps(40):
        values = to_longdouble([sp.N(k, 40) for k in found])
    return new, list(found.values()), tuple(values)


class _LongdoubleCode:
    """A compiled NumPy function whose constants travel as longdouble arguments."""

    def __init__(self, args, expr):
        new, syms, self.values = _constants_as_args(expr)
        self.fn = compile_expr(list(args) + syms, new, modules=[{"erf": erf_longdouble}, "numpy"])

    def __call__(self, *args):
        return self.fn(*args, *self.values)


@cached(maxsize=8)
def _compiled(name: str):
    forms = shifted_formulas(name)
    out = {}
    if "closed" in forms:
        out["closed"] = _LongdoubleCode([_d], forms["closed"])
    if "owen" in forms:
        out["owen"] = _LongdoubleCode([_x, _d], forms["owen"])
    if "integrand" in forms:
        out["integrand"] = _LongdoubleCode([_t], forms["integrand"])
    return out


@cached(maxsize=2)
def _trapezoid():
    """Nodes ``j h`` and weights ``h phi(j h)`` (normalized to sum 1) in longdouble."""
    j = np.arange(-round(HALF_WIDTH / STEP), round(HALF_WIDTH / STEP) + 1)
    x = j.astype(LD) * LD(STEP)
    w = np.exp(-x * x / 2)
    w /= w.sum()
    x.flags.writeable = w.flags.writeable = False
    return x, w


@cached(maxsize=4)
def _legendre(n: int):
    """Gauss-Legendre nodes and weights on ``[0, 1]`` in longdouble (Newton-refined roots of ``P_n``)."""
    def legendre(x):
        p0, p1 = np.ones_like(x), x.copy()
        for k in range(2, n + 1):
            p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
        return p1, n * (x * p1 - p0) / (x * x - 1)

    x = leggauss(n)[0].astype(LD)
    for _ in range(4):
        p, dp = legendre(x)
        x = x - p / dp
    dp = legendre(x)[1]
    w = 2 / ((1 - x * x) * dp * dp)
    x, w = (x + 1) / 2, w / 2
    x.flags.writeable = w.flags.writeable = False
    return x, w


#: beyond this ``|x|``, ``erf(x) = sign(x)`` to within ``1e-20``
_ERF_SATURATED = 6.6


def erf_longdouble(x) -> np.ndarray:
    """``erf`` of a longdouble array, to a few units of ``1e-19``: ``erf(x) = (2/sqrt pi) x int_0^1 exp(-x^2 s^2) ds``
    by a Gauss-Legendre rule of :data:`LEGENDRE_NODES` nodes, and ``sign(x)`` beyond ``|x| = 6.6``.

    >>> import numpy as np
    >>> round(float(erf_longdouble(np.array([0.5], dtype=np.longdouble))[0]), 15)
    0.520499877813047
    """
    x = np.asarray(x, dtype=LD)
    s, w = _legendre(LEGENDRE_NODES)
    xc = np.clip(x, -_ERF_SATURATED, _ERF_SATURATED)
    val = _TWO_OVER_SQRT_PI() * xc * (np.exp(-(xc[..., None] * s) ** 2) @ w)
    return np.where(np.abs(x) > _ERF_SATURATED, np.sign(x), val)


@cached(maxsize=1)
def _TWO_OVER_SQRT_PI():
    with mpmath.workdps(30):
        return to_longdouble([2 / mpmath.sqrt(mpmath.pi)])[0]


@cached(maxsize=1)
def _sqrt5():
    with mpmath.workdps(30):
        return to_longdouble([mpmath.sqrt(5)])[0]


def shifted_moments(name: str, delta) -> tuple:
    """``(F, F', F_2)`` at the longdouble array ``delta`` for the nonlinearity ``name`` (``"tanh"``, ``"erf"``,
    ``"relu"`` for the centered ReLU, or an expression in ``t`` whose NumPy code is elementary), each an array of
    ``delta``'s shape in ``numpy.longdouble``, with an absolute error of a few units of ``1e-19``.

    Raises :class:`~symrmt.errors.ParameterError` for an expression that cannot be integrated this way.

    >>> import numpy as np
    >>> F, F1, F2 = shifted_moments("relu", np.array([0.0], dtype=np.longdouble))
    >>> round(float(F1[0]), 15), round(float(F2[0]), 15)  # 1/2 and 1/2 - 1/(2 pi)
    (0.5, 0.340845056908105)
    """
    d = np.asarray(delta, dtype=LD)
    comp = _compiled(name)
    if "closed" in comp:
        cols = [np.broadcast_to(np.asarray(v, dtype=LD), d.shape) for v in comp["closed"](d)]
        if len(cols) == 3:
            return tuple(cols)
        xg, wg = _legendre(LEGENDRE_NODES)
        owen = np.asarray(comp["owen"](xg / _sqrt5(), d[..., None]), dtype=LD) @ wg / _sqrt5()
        with mpmath.workdps(30):
            four_over_pi = to_longdouble([4 / mpmath.pi])[0]
        return cols[0], cols[1], 1 - four_over_pi * owen
    x, w = _trapezoid()
    z = d[..., None] + x
    try:
        parts = comp["integrand"](z)
    except Exception as exc:  # noqa: BLE001 - a function NumPy cannot evaluate on longdouble arrays
        raise ParameterError(f"no extended-precision moments for f = {name}: {exc}") from exc
    out = []
    for part in parts:
        part = np.broadcast_to(np.asarray(part), z.shape)
        if part.dtype != LD:
            raise ParameterError(f"no extended-precision moments for f = {name} (its NumPy code is not longdouble)")
        out.append(part @ w)
    return tuple(out)
