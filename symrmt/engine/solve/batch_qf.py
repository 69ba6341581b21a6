r"""Quadratic forms on the float64 batched path: the Woodbury readout at the batched fixed point.

A form ``u^T M v`` tends to ``e^T S^{-1} f`` with ``S`` the Woodbury system of
:mod:`symrmt.engine.reduce.woodbury` at the bulk fixed point ``H``.  Here, on a whole grid of points at
once, the bulk fixed points come from :func:`symrmt.engine.solve.batch.solve_traces` (float64 and
long double), the entries of ``S``, ``e``, ``f`` (and of their total derivatives in a parameter, for
``diff`` of a form) are compiled for NumPy from the same SymPy entries the mpmath path compiles
(:func:`symrmt.engine.solve.quadratic_forms.form_entries`), and each point's ``S x = f`` is a stacked float64
solve refined once by its long-double residual.  A first derivative is
``dq = de.x + x_e.(df - dS x)`` with ``S^T x_e = e``, as on the mpmath path.

The checks of the traces apply to the bulk fixed point; for the forms a point fails when ``S`` has a
column-scaled condition number (the upper bound of :class:`~symrmt.engine.solve.batch.ScaledInverse`, whose
inverse also makes every solve with ``S`` and ``S^T``) above :data:`~symrmt.engine.solve.batch.MAX_COND`, when the long-double
correction of ``x`` exceeds :data:`~symrmt.engine.solve.batch.RESIDUAL_TOL`, when a value is not finite, or
when a form ``x^T A^{-1} x`` (``A`` positive semi-definite plus ``g I``) leaves ``[0, <x, x>/g]``.
The error estimate of :func:`symrmt.engine.solve.batch.evaluate_formula` then compares the float64 value with
the long-double one.  A plan with a non-symmetric inverse is not taken (every point fails, so that the
certified path, which Hermitizes or refuses it, takes it).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from symrmt.codegen.compile import compile_expr
from symrmt.core.batch import LD, norm_rows as _norm, stack as _stack
from symrmt.engine.lang.vectors import Vector, gram_symbol
from symrmt.engine.reduce.hermitize import nonnormal_inverses
from symrmt.engine.solve.batch import MAX_COND, RESIDUAL_TOL, ScaledInverse, evaluate_formula, solve_traces
from symrmt.engine.solve.quadratic_forms import (
    form_derivative_entries,
    form_entries,
    form_params,
    self_test_plan,
    form_bounds as _form_bounds,
)

__all__ = ["solve_qf_plan", "compile_forms", "takes"]

def takes(plan) -> str | None:
    """Why the batched path cannot take the quadratic forms of ``plan`` (``None``: it can).

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> takes(m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n")) is None
    True
    """
    mats = [t.matrix for t in plan.traces if t.matrix is not None] + [f.matrix for f in plan.forms]
    if any(nonnormal_inverses(m) for m in mats):
        return "the inverse of a non-normal matrix (its Gram test runs point by point)"
    return None


def _compiled(f, grams, theta=None):
    """The NumPy-compiled entries of ``S, e, f`` of form ``f`` (or of their derivative in ``theta``; memoized on
    the form)."""
    cache = f.__dict__.setdefault("_numpy_compiled", {})
    key = (tuple(grams), theta)
    if key not in cache:
        args, entries = form_entries(f, grams) if theta is None else form_derivative_entries(f, grams, theta)
        cache[key] = compile_expr([args], [sp.sympify(e) for e in entries] + [sp.Integer(0)], modules="numpy")
    return cache[key]


def compile_forms(plan) -> None:
    """Compile (and memoize on the plan's forms) every NumPy function :func:`solve_qf_plan` calls for ``plan``:
    the entries of each form and of the derivatives its formula needs; the pencils are self-tested once.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> compile_forms(m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n")) is None
    True
    """
    self_test_plan(form_params(plan))
    for f in plan.forms:
        _compiled(f, plan.grams)
        for _sym, what in plan.symbols:
            if what[0] == "dform" and what[1] == f.index:
                _compiled(f, plan.grams, what[2])


def _number(x, dtype):
    """An exact rational ``x`` (Fraction or int) in ``dtype`` (long double: numerator over denominator)."""
    x = Fraction(x)
    return float(x) if dtype is float else LD(x.numerator) / LD(x.denominator)


def _entries(fn, args, n, k, dtype):
    """``(S (n,k,k), e (n,k), f (n,k))`` from a compiled entry function."""
    with np.errstate(all="ignore"):
        v = _stack(fn(args), n, dtype)
    return v[:, :k * k].reshape(n, k, k), v[:, k * k:k * k + k], v[:, k * k + k:k * k + 2 * k]


def _refined(solve, Sl, rhs, rhsl):
    """``x`` of ``S x = rhs`` in float64 (``solve``: float64 ``S x = b`` on stacked ``b (N,k,1)``) and, refined once
    by its long-double residual (``Sl``: ``S`` in long double), in long double; and the relative size of the
    refinement."""
    x = solve(rhs[:, :, None])[:, :, 0]
    xl = x.astype(LD)
    r = np.einsum("nij,nj->ni", Sl, xl) - rhsl
    corr = solve(r[:, :, None])[:, :, 0]
    xl = xl - corr
    with np.errstate(all="ignore"):
        rel = _norm(corr) / (1 + _norm(x))
    return x, xl, rel


def _bound_values(f, plan, grams, cols, n, dtype):
    """``(applies, upper)`` per point for a form ``x^T A^{-1} x`` (else None): see the module docstring."""
    b = _form_bounds(f, plan)
    if b is None:
        return None
    g, conds, x = b
    if not isinstance(x, Vector):
        return None
    xx = sp.sympify(x.dim.ratio) if x.random else sp.Rational(grams.get(gram_symbol(x.name, x.name), 0))
    cache = f.__dict__.setdefault("_numpy_bound", {})
    key = (sp.srepr(xx), tuple(p.name for p in plan.params))
    if key not in cache:
        exprs = [sp.sympify(xx) / sp.sympify(g), sp.sympify(g)] + [sp.sympify(c) for c in set(conds)] + [sp.Integer(0)]
        cache[key] = compile_expr([list(plan.params)], exprs, modules="numpy")
    fn = cache[key]
    with np.errstate(all="ignore"):
        v = _stack(fn(tuple(np.asarray(cols[p.name], dtype) for p in plan.params)), n, dtype)
    applies = (v[:, 1] > 0) & np.all(v[:, 2:-1] >= 0, axis=1)
    return applies, v[:, 0]


def solve_qf_plan(plan, compiled_of, cols, n, cols_ld=None, grams=None, solver=None):
    """The value of a plan with quadratic forms at ``n`` points, as :func:`symrmt.engine.solve.batch.solve_plan`.

    ``cols`` / ``cols_ld``: parameter name -> float64 / long-double arrays of length ``n``; ``grams``: the
    exact inner products of the deterministic vectors (``gram_symbol -> Fraction``, from
    :func:`symrmt.engine.lang.vectors.gram_values`, the same at every point); ``solver``: as
    :func:`~symrmt.engine.solve.batch.solve_plan`.  Returns ``(value, error_estimate, ok,
    cond)``; points with ``ok`` False carry no value to stand behind (the caller recomputes them).

    >>> import numpy as np
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> plan = m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n")
    >>> v, est, ok, _ = solve_qf_plan(plan, compiled_system, {"gamma": np.array([1.0, 2.0])}, 2)
    >>> bool(ok.all()), bool(abs(v[0] - (np.sqrt(5) - 1) / 2) < 1e-14)
    (True, True)
    """
    fail = (np.full(n, np.nan), np.full(n, np.inf), np.zeros(n, dtype=bool), np.zeros(n))
    if takes(plan) is not None:
        return fail
    grams = dict(grams or {})
    gsyms = plan.grams
    self_test_plan(form_params(plan))
    args64, argsld, ok, cond, cols_ld = solve_traces(plan, compiled_of, cols, n, cols_ld, solver)
    wanted = {}
    for _sym, what in plan.symbols:
        if what[0] == "dform":
            wanted.setdefault(what[1], []).append(what[2])
    for f in plan.forms:
        k = len(f.units)
        per = []
        for dt, args, pc in ((float, args64, cols), (LD, argsld, cols_ld)):
            h = [args[(f.trace_index, ij, ())] for ij in f.system.unknowns] if f.system is not None else []
            gv = [np.full(n, _number(grams.get(g, 0), dt), dtype=dt) for g in gsyms]
            pv = [np.asarray(pc[p.name], dt) for p in f.params]
            per.append((h, pv, gv))
        (h64, p64, g64), (hld, pld, gld) = per
        S, e, fv = _entries(_compiled(f, gsyms), tuple(h64 + p64 + g64), n, k, float)
        Sl, el, fl = _entries(_compiled(f, gsyms), tuple(hld + pld + gld), n, k, LD)
        inv = ScaledInverse(S)  # the condition number and every solve with S and S^T below
        c = inv.cond
        cond = np.maximum(cond, c)
        x, xl, rel = _refined(inv.solve, Sl, fv, fl)
        okf = (c <= MAX_COND) & np.isfinite(rel) & (rel <= RESIDUAL_TOL)
        q64 = np.einsum("ni,ni->n", e, x)
        qld = np.einsum("ni,ni->n", el, xl)
        okf &= np.isfinite(q64) & np.isfinite(qld.astype(float))
        args64[("form", f.index)], argsld[("form", f.index)] = q64, qld
        bound = _bound_values(f, plan, grams, cols_ld, n, LD)
        if bound is not None:
            applies, upper = bound
            slack = 1e-12
            with np.errstate(all="ignore"):
                inside = (qld >= -slack * (1 + upper)) & (qld <= upper * (1 + slack) + slack)
            okf &= ~applies | inside
        if f.index in wanted:
            xe, xel, rel_e = _refined(inv.solve_t, np.swapaxes(Sl, 1, 2), e, el)
            okf &= np.isfinite(rel_e) & (rel_e <= RESIDUAL_TOL)
            for theta in wanted[f.index]:
                fn = _compiled(f, gsyms, theta)
                out = []
                for dt, args, (h, pv, gv), xx, xxe in ((float, args64, per[0], x, xe), (LD, argsld, per[1], xl, xel)):
                    dh = [args[(f.trace_index, ij, (theta,))] for ij in f.system.unknowns] if f.system is not None \
                        else []
                    dS, de, df = _entries(fn, tuple(h + dh + pv + gv), n, k, dt)
                    rest = df - np.einsum("nij,nj->ni", dS, xx)
                    out.append(np.einsum("ni,ni->n", de, xx) + np.einsum("ni,ni->n", xxe, rest))
                args64[("dform", f.index, theta)], argsld[("dform", f.index, theta)] = out
                okf &= np.isfinite(out[0]) & np.isfinite(out[1].astype(float))
        ok &= okf
    return evaluate_formula(plan, args64, argsld, cols, cols_ld, n, ok, cond)
