r"""Proved digits of quadratic forms: an expression with vectors (``beta.T*inv(...)*beta``) as a ball.

The certified path (:mod:`symrmt.engine.solve.quadratic_forms`) solves each bulk fixed point and each form's Woodbury
system ``S x = f`` (``q = e^T x``).  Here, at exact parameter values and inner products:

* each bulk fixed point is proved by Krawczyk's test on its box, with its parameter derivatives from the
  implicit linear system, its sanity bounds and its branch (:func:`symrmt.engine.prove.trace.prove_fixed_point`);
* the entries of ``S``, ``e`` and ``f`` (the same SymPy entries that the certified path compiles) are
  evaluated on that box, and ``S x = f`` is solved on balls (an enclosure for every ``S`` and ``f`` in their
  balls; a singular ``S`` is refused), ``q = e^T x``;
* a derivative ``dq/dtheta`` of a form (``diff``) is the implicit one: with ``S^T x_e = e``,
  ``dq/dtheta = e_theta^T x + x_e^T (f_theta - S_theta x)``, the entries' total derivatives
  (``d/dtheta + sum_h d/dh h_theta``, ``h_theta`` the proved derivatives of the fixed point) on balls;
* the expression's formula on those balls.

The branch is that of the bulk fixed points (the Woodbury system is linear: its solution is unique once
``S`` is proved regular).
"""

from __future__ import annotations

import inspect
from fractions import Fraction

import sympy as sp

from symrmt.codegen.compile import compile_expr
from symrmt.engine.lang.vectors import gram_values
from symrmt.engine.prove.trace import TraceBall, prove_fixed_point
from symrmt.engine.reduce.plan import formula_args
from symrmt.proofs.arb import (
    ESCALATIONS, ProofError, arb_checked, arb_function, bits_for, check_radius, mat_solve, relative_ok,
    require_flint, to_arb, working_bits,
)
from symrmt.errors import BranchError

__all__ = ["prove_qf"]


def _form_params(f, plan):
    """The parameters a form's entries depend on (as :func:`symrmt.engine.solve.quadratic_forms.certified_qf_limit` sets)."""
    got = getattr(f, "params", None)
    if got is not None:
        return list(got)
    free = f.S.free_symbols | set().union(*[sp.sympify(c).free_symbols for c in list(f.e) + list(f.f)])
    return sorted({p for p in plan.params if p in free}, key=lambda s: s.name)


def _form_sources(f, params, grams, thetas):
    """Generated source of the form's ``S, e, f`` entries, and of their total ``theta``-derivatives for each
    ``theta`` in ``thetas`` (arguments ``h (+ h_theta), params, inner products``)."""
    key = (tuple(params), tuple(grams), tuple(thetas))
    cache = f.__dict__.setdefault("_proved_sources", {})  # memoized on the form, as the certified path does
    if key in cache:
        return cache[key]
    hs = list(f.system.h) if f.system is not None else []
    entries = [sp.sympify(x) for x in list(f.S) + list(f.e) + list(f.f)]
    out = {(): inspect.getsource(compile_expr([hs + list(params) + list(grams)], entries))}
    for theta in thetas:
        dh = list(f.system.derivative_symbols((theta,))) if f.system is not None else []
        dents = []
        for ent in entries:
            d = sp.diff(ent, theta)
            for x, dx in zip(hs, dh):
                if ent.has(x):
                    d += sp.diff(ent, x) * dx
            dents.append(d)
        out[theta] = inspect.getsource(compile_expr([hs + dh + list(params) + list(grams)], dents))
    cache[key] = out
    return out


def _unpack(vals, k):
    flint = require_flint()
    S = flint.arb_mat(k, k, [vals[i] for i in range(k * k)])
    return S, list(vals[k * k:k * k + k]), flint.arb_mat([[v] for v in vals[k * k + k:k * k + 2 * k]])


def prove_qf(plan, values: dict, digits: int, solvers, vectors=None, chain=None):
    """The :class:`~symrmt.engine.prove.trace.TraceBall` of a quadratic-form plan
    (:func:`symrmt.engine.reduce.woodbury.prepare_qf`) at exact ``values`` (name -> Fraction, inner products
    as ``"a.b"``) to ``digits``.  ``solvers``: the certified solve's solver of each bulk trace (the boxes'
    centres); ``vectors``: the model's declared vectors; ``chain`` as in
    :func:`symrmt.engine.prove.trace.prove_trace`.  Raises :class:`ProofError` (a box or a Woodbury system not
    proved) and :class:`~symrmt.errors.BranchError` (a bound that fails on the ball).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.quadratic_forms import certified_qf_limit
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> plan = m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n")
    >>> out = certified_qf_limit(plan, {"gamma": Fraction(1)}, 12)
    >>> prove_qf(plan, {"gamma": Fraction(1)}, 12, out.solvers)   # m |y|^2/n = (sqrt(5) - 1)/2
    TraceBall([0.618033988749895 +/- 1.52e-16], branch='continued')
    """
    flint = require_flint()
    grams = gram_values({**plan.vectors, **(vectors or {})}, values)
    gsyms = plan.grams
    wanted = {}
    for _sym, what in plan.symbols:
        if what[0] == "dform":
            wanted.setdefault(what[1], []).append(what[2])
    sources = {f.index: _form_sources(f, _form_params(f, plan), gsyms, wanted.get(f.index, ())) for f in plan.forms}
    formula_src = inspect.getsource(compile_expr([[s for s, _ in plan.symbols]], plan.formula))
    bits = bits_for(digits, 20)
    chained = {}
    for _ in range(ESCALATIONS):
        with working_bits(bits):
            results, taus, branches, notes = {}, [], [], []
            for t in plan.traces:
                H, derivs, tau, branch, note = prove_fixed_point(t, plan, solvers[t.index], values, digits, chain,
                                                                 chained)
                results[t.index] = (H, derivs)
                if t.system.readout:
                    taus.append(tau)
                branches.append(branch)
                if note:
                    notes.append(note)
            pv = {p: to_arb(Fraction(values[p.name])) for p in plan.params}
            gv = [to_arb(Fraction(grams[g])) for g in gsyms]
            qs, dqs = {}, {}
            for f in plan.forms:
                k = len(f.units)
                params = [pv[p] for p in _form_params(f, plan)]
                H, derivs = results[f.trace_index] if f.trace_index is not None else ([], {})
                vals = arb_checked(list(arb_function(sources[f.index][()], "a Woodbury system")(list(H) + params + gv)),
                                   "the Woodbury system")
                S, e, rhs = _unpack(vals, k)
                x = mat_solve(S, rhs)
                qs[f.index] = sum((e[i] * x[i, 0] for i in range(k)), flint.arb(0))
                if f.index in wanted:
                    xe = mat_solve(S.transpose(), flint.arb_mat([[v] for v in e]))
                    for theta in wanted[f.index]:
                        dh = derivs.get((theta,), [flint.arb(0)] * len(H)) if f.trace_index is not None else []
                        dv = arb_checked(list(arb_function(sources[f.index][theta], "a form's derivative")(
                            list(H) + list(dh) + params + gv)), "the derivative of a Woodbury system")
                        dS, de, dfv = _unpack(dv, k)
                        rest = dfv - dS * x
                        dqs[(f.index, theta)] = (sum((de[i] * x[i, 0] for i in range(k)), flint.arb(0))
                                                 + sum((xe[i, 0] * rest[i, 0] for i in range(k)), flint.arb(0)))
            args = formula_args(plan, pv.__getitem__,
                                lambda k, pos, alpha, r=results: r[k][0][pos] if not alpha else r[k][1][alpha][pos],
                                qs.__getitem__, lambda i, theta, d=dqs: d[(i, theta)])
            value, = arb_checked([arb_function(formula_src, "formula")(args)], "the expression")
            if isinstance(value, flint.acb):
                if not value.imag.contains(0) or value.imag.rad() > 0:
                    raise BranchError(f"the limit is not proved real ({value})")
                value = value.real
            if not value.is_finite():
                raise ProofError(f"the limit is not a finite number on the proved box ({value})")
            if relative_ok(value, digits):
                break
        bits *= 2
    check_radius(value, digits, "the quadratic form's limit")
    branch = ("isolated" if all(b == "isolated" for b in branches) else  # no fixed point: nothing to choose
              "continued" if all(b in ("isolated", "continued") for b in branches) else "sanity")
    out = TraceBall(value, taus, branch, notes)
    out.forms = [qs[f.index] for f in plan.forms]
    return out
