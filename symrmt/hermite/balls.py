r"""Hermite data as proved balls: a closed form evaluated on balls, a quadrature value from
``acb.integral`` on ``[-L, L]`` (its error bound part of the ball) plus a bound on the Gaussian tails
(:func:`hermite_ball`).  The ball arithmetic is :mod:`symrmt.proofs.arb`.
"""

from __future__ import annotations

import math
import inspect

import mpmath
import sympy as sp
from sympy.calculus.util import function_range
from sympy.core.function import AppliedUndef

from symrmt.cache import cached
from symrmt.errors import ParameterError


from symrmt.proofs.arb import ESCALATIONS, ProofError, arb_function, bits_for, check_radius, relative_ok, require_flint, sympy_ball, to_arb, working_bits
from symrmt.codegen.compile import compile_expr
from symrmt.hermite.gaussian import T, NotExact, hermite_poly
from symrmt.hermite.nonlinearity import with_timeout, Nonlinearity
from symrmt.parsing.numbers import to_fraction

__all__ = ["hermite_ball", "prove_hermite_report"]
# ---------------------------------------------------------------- Hermite data

#: functions whose complex extension is meromorphic (``acb.integral`` needs no analyticity flag for them)
_MEROMORPHIC = (sp.exp, sp.tanh, sp.sin, sp.cos, sp.sinh, sp.cosh, sp.erf, sp.erfc, sp.cot, sp.tan, sp.coth)
#: seconds SymPy may spend bounding ``|f|`` on a tail
TAIL_TIMEOUT = 10.0


def _check_meromorphic(expr, what):
    for node in sp.preorder_traversal(expr):
        if isinstance(node, AppliedUndef) or (isinstance(node, sp.Function) and not isinstance(node, _MEROMORPHIC)):
            raise ProofError(f"{what}: {node.func} is not meromorphic, so acb.integral cannot bound the integral "
                             "of this piece without an analyticity check (no proof for this f)")
        if isinstance(node, sp.Pow) and node.base.has(T) and not node.exp.is_Integer:
            raise ProofError(f"{what}: the power {node} has a branch cut (no proof for this f)")


@cached(maxsize=256)
def _tail_growth(g, side: int):
    """``(B, j)`` with ``|g(t)| <= B (1 + |t|)^j`` for ``side * t >= L`` (``j`` in 0, 1, 2), from SymPy's
    ``function_range`` of ``g / (1 + |t|)^j`` on the tail; ``None`` when SymPy finds no bound."""
    u = sp.Dummy("u", positive=True)
    h = g.subs(T, side * u)
    for j in (0, 1, 2):
        try:
            rng = with_timeout(lambda j=j: function_range(h / (1 + u) ** j, u, sp.Interval(1, sp.oo)), TAIL_TIMEOUT)
        except (NotExact, NotImplementedError, ValueError, TypeError, AttributeError, RecursionError):
            continue
        if isinstance(rng, sp.Interval) and rng.inf.is_finite and rng.sup.is_finite:
            return max(abs(sp.nsimplify(rng.inf) if rng.inf.is_Rational else rng.inf),
                       abs(rng.sup), key=lambda v: sp.N(v, 30)), j
    return None


def _tail_bound(B, j, w, hermite, L):
    """Upper bound (a ball) of ``int_L^oo (B (1+t)^j)^w |He_k(t)| exp(-t^2/2) dt`` (see :func:`hermite_ball`)."""
    flint = require_flint()
    arb = flint.arb
    t = sp.Symbol("t_tail")
    coeffs = sp.Poly(sp.expand((1 + t) ** (j * w)) * sum(abs(cf) * t ** i for i, cf in
                                                          enumerate(reversed(sp.Poly(hermite, t).all_coeffs())))
                     if hermite != 1 else sp.expand((1 + t) ** (j * w)), t).all_coeffs()
    total = arb(0)
    Lb = arb(L)
    core = 2 / Lb * (-(Lb * Lb) / 4).exp()
    for q, cf in enumerate(reversed(coeffs)):
        if cf == 0:
            continue
        peak = arb(1) if q == 0 else (arb(2 * q) / arb(1).exp()) ** (arb(q) / 2)
        total += to_arb(sp.Rational(cf)) * peak * core
    return to_arb(B) ** w * total


def _quad_ball(pieces, w: int, k: int):
    """``E[g^w He_k]`` over the smooth pieces as a ball: ``acb.integral`` on ``[-L, L]`` plus tail bounds."""
    flint = require_flint()
    arb, acb = flint.arb, flint.acb
    prec = flint.ctx.prec
    L = int(math.ceil(2 * math.sqrt(prec * math.log(2) + 40))) + 2
    He = hermite_poly(k) if k else sp.Integer(1)
    total = arb(0)
    for lo, hi, g in pieces:
        _check_meromorphic(g, f"the piece {g} of f")
        expr = g ** w * He * sp.exp(-(T ** 2) / 2)
        fn = arb_function(inspect.getsource(compile_expr(T, expr, floats_ok=False)), "hermite integrand", True)
        a = to_arb(sp.Rational(lo)) if lo.is_finite else arb(-L)
        b = to_arb(sp.Rational(hi)) if hi.is_finite else arb(L)
        if lo.is_finite and lo > L or hi.is_finite and hi < -L:
            raise ProofError("a piece of f lies beyond the integration range; no proof for this f")
        a = max(a, arb(-L)) if lo.is_finite else a
        b = min(b, arb(L)) if hi.is_finite else b
        val = acb.integral(lambda x, _analytic, fn=fn: fn(x), acb(a), acb(b))
        if not val.imag.contains(0):
            raise ProofError("the Hermite integral is not real")
        part = val.real
        for side, end in ((-1, lo), (1, hi)):
            if end.is_finite:
                continue
            growth = _tail_growth(g, side)
            if growth is None:
                raise ProofError(f"no bound of |f| as t -> {'+' if side > 0 else '-'}oo was found (SymPy's "
                                 f"function_range of f/(1+|t|)^j, j <= 2, within {TAIL_TIMEOUT:g} s each), so the "
                                 "Gaussian tail of the Hermite integral is not bounded: no proof for this f")
            bound = _tail_bound(growth[0], growth[1], w, He.subs(T, sp.Symbol("t_tail")), L)
            part += arb(0, bound.upper())
        total += part
    return total / (2 * arb.pi()).sqrt()


def hermite_ball(f, diagonal: str = "zero"):
    """``(a_1, nu, d)`` of ``f`` as python-flint ``arb`` balls at the current flint precision (``d = 0`` unless
    ``diagonal="keep"``).

    ``f``: a preset name, expression text, SymPy expression or :class:`~symrmt.hermite.Nonlinearity`, or Hermite
    data as a dict (``a1``, ``nu``, ``d``: exact numbers or their text), used as given.  A closed form is
    evaluated as a ball; otherwise ``E[f(xi) He_1(xi)]`` and ``E[f(xi)^2]`` are integrated over each smooth piece
    of ``f`` by ``acb.integral`` on ``[-L, L]`` (``L ~ 2 sqrt(prec ln 2)``; its error bound is in the ball) and
    each Gaussian tail ``|t| > L`` is bounded by ``B^w int |He_k| (1+|t|)^(jw) phi``, with ``|f(t)| <= B (1 +
    |t|)^j`` there from SymPy's ``function_range``.  Raises :class:`~symrmt.errors.ProveUnavailable` without python-flint and
    :class:`ProofError` when ``f`` is outside what the integral bounds (not meromorphic, a branch cut, an
    unbounded tail).

    >>> a1, nu, d = hermite_ball({"a1": "1/2", "nu": "1/3", "d": 1})
    >>> float(a1), nu.contains(1 / to_arb(3)), d
    (0.5, True, 0)
    """
    flint = require_flint()
    if isinstance(f, dict):
        vals = []
        for key in ("a1", "nu", "d"):
            v = f.get(key, 0) if key != "d" or diagonal == "keep" else 0
            vals.append(to_arb(v if isinstance(v, mpmath.mpf) else to_fraction(v, key)))
        return tuple(vals)
    nl = f if isinstance(f, Nonlinearity) else Nonlinearity(f)
    try:
        a1 = sympy_ball(nl.a(1))
    except NotExact:
        a1 = _quad_ball(nl._pieces, 1, 1)
    try:
        nu = sympy_ball(nl.nu)
    except NotExact:
        nu = _quad_ball(nl._pieces, 2, 0)
        if nl._num_shift:
            nu = nu - _quad_ball(nl._pieces, 1, 0) ** 2
    d = sympy_ball(nl.d) if diagonal == "keep" else flint.arb(0)
    return a1, nu, d


def prove_hermite_report(nl, k: int, digits: int) -> dict:
    """Proved balls of ``a_0..a_k``, ``nu`` and ``d`` (``None`` when undefined) of the
    :class:`~symrmt.hermite.Nonlinearity` ``nl``, each with a radius below ``10^-digits`` relative (the
    ``hermite --prove`` verb): a dict ``{"a": [...], "nu", "d"}`` of ``arb`` balls.  The working precision
    doubles up to :data:`ESCALATIONS` times; raises :class:`ProofError` when a ball stays too wide.

    >>> balls = prove_hermite_report(Nonlinearity("linear"), 2, 10)  # f = t: a = (0, 1, 0), nu = d = 1
    >>> [float(x) for x in balls["a"]], float(balls["nu"]), float(balls["d"]), balls["nu"].rad() < 1e-10
    ([0.0, 1.0, 0.0], 1.0, 1.0, True)
    """
    bits = bits_for(digits, 10)
    for _ in range(ESCALATIONS):
        with working_bits(bits):
            a = []
            for j in range(k + 1):
                try:
                    a.append(sympy_ball(nl.a(j)))
                except NotExact:
                    a.append(_quad_ball(nl._pieces, 1, j) if j else _quad_ball(nl._pieces, 1, 0) - _quad_ball(nl._pieces, 1, 0))
            _, nu, _ = hermite_ball(nl, "zero")
            try:
                d = sympy_ball(nl.d)
            except (ParameterError, NotExact):
                d = None
            balls = {"a": a, "nu": nu, "d": d}
            if all(relative_ok(x, digits) for x in a + [nu] + ([d] if d is not None else [])):
                break
        bits *= 2
    for j, x in enumerate(a):
        check_radius(x, digits, f"a_{j}")
    check_radius(nu, digits, "nu")
    return balls
