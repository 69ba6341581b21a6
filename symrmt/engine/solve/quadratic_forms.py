r"""Certified limits of expressions with vectors and quadratic forms (numbers: mpmath, NumPy).

The symbolic plan is :func:`symrmt.engine.reduce.woodbury.prepare_qf`.  Here each pencil is
self-tested at a finite size (vectors included), each bulk fixed point is solved by the trace
engine's solver (homotopy, path check, Newton polish: :mod:`symrmt.engine.solve.newton`), each
Woodbury system ``S x = f`` is solved in mpmath at the working precision, and the value is
certified as a trace limit is: two working precisions (``digits + guard`` and ``+ 10``) must agree
to ``digits`` significant digits, the guard doubling up to three times, else
:class:`~symrmt.errors.PrecisionError`.  The sanity bounds of the traces apply, and a
quadratic form ``x^T A^{-1} x`` of a positive semi-definite ``A`` plus ``g I`` must lie in
``[0, <x, x>/g]`` (else :class:`~symrmt.errors.BranchError`).
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from symrmt.engine.reduce.plan import formula_args, psd_conditions
from symrmt.engine.lang.matrices import GOE, Gaussian, Inverse, MatProduct, Transpose, walk
from symrmt.engine.lang.algebra import identity_part
from symrmt.engine.lang.vectors import QuadForm, Vector, gram_symbol, gram_values
from symrmt.codegen.compile import compile_expr
from symrmt.engine.reduce.pencil_check import (
    check_gap, coefficient, coefficient_symbols, direct_value, draw_leaves, sample_values,
)
from symrmt.core.certify import Disagree, agree, certify
from symrmt.core.linalg import lu_dense, lu_dense_solve, singular_tolerance
from symrmt.errors import BranchError, ConvergenceError
from symrmt.core.numbers import mpf_of
from symrmt.core.certify import ESCALATIONS, GUARD
from symrmt.core.budget import stage
from symrmt.engine.reduce.pencil_check import checked
from symrmt.engine.solve.certify import TraceLimit, admitted, branch_acceptor, check_bounds, check_real, compiled_system
from symrmt.engine.solve.continuation import ContinuedSolver

__all__ = ["qf_self_test", "certified_qf_limit", "form_entries", "form_derivative_entries", "form_params"]


def qf_self_test(pencil, hat, size: int = 12, seed: int = 20261201):
    """``u Q^{-1} v == hat`` at a finite size ``size``, with vectors (random ones: any vector, the identity is
    algebraic), for the ``pencil`` of the form ``hat`` (draws seeded by ``seed``); raises
    :class:`~symrmt.errors.PencilError` when they differ.  Returns the relative gap.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> f = form_params(m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n")).forms[0]
    >>> bool(qf_self_test(f.pencil, f.matrix) < 1e-10)
    True
    """
    rng = np.random.default_rng(seed)
    vals = sample_values(coefficient_symbols(pencil, hat), rng)

    def num(c):
        return coefficient(c, vals)

    dims = {"1": 1}
    for x in walk(hat):
        for d in ((x.rows, x.cols) if hasattr(x, "rows") else ()):
            dims.setdefault(d.name, size)
    for (d, _a) in pencil.blocks:
        dims.setdefault(d, size)
    leaves = (Gaussian, GOE, Vector)
    mats = draw_leaves(hat, leaves, dims, size, rng, num)

    sizes = [dims[b[0]] for b in pencil.blocks]
    offs = np.cumsum([0] + sizes)
    L = np.zeros((offs[-1], offs[-1]), dtype=complex)
    for (i, j), e in pencil.Q.items():
        for leaf, c in e.items():
            if leaf == "I":
                block = np.eye(sizes[i])
            else:
                block = mats[leaf[1]].T if len(leaf) > 2 and leaf[2] else mats[leaf[1]]
            L[offs[i]:offs[i + 1], offs[j]:offs[j + 1]] += num(c) * block
    X = np.linalg.inv(L)
    want = direct_value(hat, leaves, mats, dims, num)
    got = np.zeros(want.shape, dtype=complex)
    for i, cu in pencil.u.items():
        for j, cv in pencil.v.items():
            got += num(cu) * num(cv) * X[offs[i]:offs[i + 1], offs[j]:offs[j + 1]]
    return check_gap(got, want, size)


def self_test_plan(plan):
    """Every pencil of a :class:`~symrmt.engine.reduce.woodbury.QFPlan`, self-tested once (each marked
    ``tested``); returns the plan, or raises :class:`~symrmt.errors.PencilError` from :func:`qf_self_test`.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> plan = self_test_plan(m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n"))
    >>> [f.tested for f in plan.forms]
    [True]
    """
    for t in plan.traces:
        if getattr(t, "tested", False):
            continue
        if t.full_matrix is not None and t.full_pencil is not t.pencil:
            qf_self_test(t.full_pencil, t.full_matrix)
        elif t.matrix is not None:
            checked(t.pencil, t.matrix)
        t.tested = True
    for f in plan.forms:
        if not getattr(f, "tested", False):
            qf_self_test(f.pencil, f.matrix)
            f.tested = True
    return plan


def form_entries(f, grams):
    """``(args, entries)``: the arguments (``h, params, inner products``) and the SymPy entries of ``S``, ``e`` and
    ``f`` (flattened in that order) of a form, the one source every evaluation of it is compiled from.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> plan = form_params(m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n"))
    >>> args, entries = form_entries(plan.forms[0], plan.grams)
    >>> len(plan.forms[0].units), len(entries)  # S (k x k), e, f for k unit blocks
    (2, 8)
    """
    hs = list(f.system.h) if f.system is not None else []
    return hs + list(f.params) + list(grams), list(f.S) + list(f.e) + list(f.f)


def form_derivative_entries(f, grams, theta):
    """``(args, entries)`` of ``dS/dtheta``, ``de/dtheta`` and ``df/dtheta`` of a form: the total derivative
    ``sum_h dS/dh h_theta + dS/dtheta`` (``h_theta``: the implicit derivatives of the bulk fixed point), in the
    arguments ``h, h_theta, params, inner products``.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> plan = form_params(m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n"))
    >>> args, entries = form_derivative_entries(plan.forms[0], plan.grams, plan.params[0])
    >>> entries[4:]  # e and f do not move with gamma
    [0, 0, 0, 0]
    """
    hs = list(f.system.h) if f.system is not None else []
    dh = list(f.system.derivative_symbols((theta,))) if f.system is not None else []
    entries = []
    for ent in list(f.S) + list(f.e) + list(f.f):
        ent = sp.sympify(ent)
        d = sp.diff(ent, theta)
        for x, dx in zip(hs, dh):
            if ent.has(x):
                d += sp.diff(ent, x) * dx
        entries.append(d)
    return hs + dh + list(f.params) + list(grams), entries


def _form_function(f, grams):
    """The compiled entries of ``S``, ``e`` and ``f`` of a form (memoized on the form)."""
    key = tuple(grams)
    cache = f.__dict__.setdefault("_compiled", {})
    if key not in cache:
        args, entries = form_entries(f, grams)
        cache[key] = compile_expr([args], entries)
    return cache[key]


def _form_derivative_function(f, grams, theta):
    """The compiled :func:`form_derivative_entries` of a form (memoized on the form)."""
    key = (tuple(grams), theta)
    cache = f.__dict__.setdefault("_dcompiled", {})
    if key not in cache:
        args, entries = form_derivative_entries(f, grams, theta)
        cache[key] = compile_expr([args], entries)
    return cache[key]


def form_params(plan):
    """Set ``f.params`` of each form of ``plan``: the plan's parameters its ``S``, ``e`` and ``f`` hold (sorted);
    returns ``plan``.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> form_params(m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n")).forms[0].params  # gamma: in the bulk H only
    []
    """
    for f in plan.forms:
        if getattr(f, "params", None) is None:  # a form's entries are fixed: once per form
            f.params = sorted({p for p in plan.params if p in (f.S.free_symbols | set().union(
                *[sp.sympify(c).free_symbols for c in f.e + f.f]))}, key=lambda s: s.name)
    return plan


def _form_bounds(f, plan):
    """``(kind, g, xx)`` when the form is ``x^T inv(A) x`` with ``A`` PSD plus ``g I`` (else None)."""
    m = f.matrix
    fs = m.factors if isinstance(m, MatProduct) else ()
    if len(fs) != 3 or not isinstance(fs[1], Inverse):
        return None
    a, b = fs[0], fs[2]
    if not (isinstance(a, Transpose) and a.matrix == b):
        return None
    g, rest = identity_part(fs[1].matrix)
    conds = []
    for t in rest:
        c = psd_conditions(t)
        if c is None:
            return None
        conds += c
    if g == 0:
        return None
    return g, conds, b


def _evaluate(plan, solvers, grams, dps):
    """``(value, traces, forms, step, residual)`` at ``dps`` working digits."""
    with mpmath.workdps(dps):
        hs, ds, worst_step, worst_res = {}, {}, mpmath.mpf(0), mpmath.mpf(0)
        for t in plan.traces:
            alphas = tuple(a for a in plan.needs[t.index] if a)
            h, derivs, step, res = solvers[t.index].solve(dps, alphas)
            hs[t.index], ds[t.index] = h, derivs
            worst_step, worst_res = max(worst_step, step), max(worst_res, res)
        pv = {p: mpf_of(solvers["values"][p.name]) for p in plan.params}
        gsyms = plan.grams
        gv = [mpf_of(grams[g]) for g in gsyms]
        qs, dqs = [], {}
        wanted = {}
        for _sym, what in plan.symbols:
            if what[0] == "dform":
                wanted.setdefault(what[1], []).append(what[2])
        for f in plan.forms:
            fn = _form_function(f, gsyms)
            h = hs[f.trace_index] if f.trace_index is not None else []
            vals = fn(list(h) + [pv[p] for p in f.params] + gv)
            k = len(f.units)
            S = [[vals[r * k + c] for c in range(k)] for r in range(k)]
            e = vals[k * k:k * k + k]
            if f.index in wanted:
                x, xe = _woodbury_solve(S, vals[k * k + k:], e)
            else:
                x = _woodbury_solve(S, vals[k * k + k:])
            x = mpmath.matrix(x)
            qs.append(sum((e[i] * x[i] for i in range(k)), mpmath.mpf(0)))
            if f.index in wanted:
                for theta in wanted[f.index]:
                    dfn = _form_derivative_function(f, gsyms, theta)
                    dh = ds[f.trace_index][(theta,)] if f.trace_index is not None else []
                    dv = dfn(list(h) + list(dh) + [pv[p] for p in f.params] + gv)
                    dS = mpmath.matrix(k, k)
                    for r in range(k):
                        for c in range(k):
                            dS[r, c] = dv[r * k + c]
                    de, dfv = dv[k * k:k * k + k], mpmath.matrix(dv[k * k + k:])
                    rest = dfv - dS * x
                    dqs[(f.index, theta)] = (sum((de[i] * x[i] for i in range(k)), mpmath.mpf(0))
                                             + sum((xe[i] * rest[i] for i in range(k)), mpmath.mpf(0)))
        args = formula_args(plan, pv.__getitem__, lambda k, pos, alpha: hs[k][pos] if not alpha else ds[k][alpha][pos],
                            qs.__getitem__, lambda i, theta: dqs[(i, theta)])
        fn = compile_cached(plan)
        value = fn(args)
        taus = []
        for t in plan.traces:
            if not t.system.readout:
                continue
            tau = mpmath.mpf(0)
            subs = {p: solvers["values"][p.name] for p in plan.params}
            for (i, j), c in t.system.readout.items():
                tau += mpf_of(sp.sympify(c).subs(subs)) * hs[t.index][t.system.unknowns.index((i, j))]
            taus.append(tau)
        return value, taus, qs, worst_step, worst_res


def _woodbury_solve(S, rhs, left=None):
    """``S^{-1} rhs`` for a Woodbury system (lists of mpf) by the core's dense LU
    (:func:`symrmt.core.linalg.lu_dense`) at 10 more bits than the working precision, on the system
    equilibrated by columns then rows; a pivot within ``||S'||_1 eps`` of 0 (``S'`` equilibrated) is a
    numerically singular system (:class:`ConvergenceError`).  With ``left``: ``(S^{-1} rhs, S^{-T} left)``
    from the same factorization."""
    with mpmath.workprec(mpmath.mp.prec + 10):
        # equilibrated first (each column, then each row, scaled to a largest entry of 1): the singularity test
        # is relative to the matrix's norm, and an entry of 1e300 (an inner product v.v = 1e300) next to
        # entries of 1 must not make a well-conditioned triangular system look singular
        k = len(S)
        cs = [max((abs(S[i][j]) for i in range(k)), default=0) or mpmath.mpf(1) for j in range(k)]
        S1 = [[S[i][j] / cs[j] for j in range(k)] for i in range(k)]
        rs = [max((abs(x) for x in r), default=0) or mpmath.mpf(1) for r in S1]
        S2 = [[x / rs[i] for x in r] for i, r in enumerate(S1)]
        b2 = [b / rs[i] for i, b in enumerate(rhs)]
        try:
            # S = diag(rs) S2 diag(cs): S x = b is S2 (cs x) = b/rs, and S^T y = e is S2^T (rs y) = e/cs
            lu = lu_dense([list(r) for r in S2], tol=singular_tolerance(S2, mpmath.eps))
            x = [y / cs[j] for j, y in enumerate(lu_dense_solve(lu, b2))]
            if left is None:
                return x
            z = lu_dense_solve(lu, [v / cs[j] for j, v in enumerate(left)], transposed=True)
            return x, [v / rs[i] for i, v in enumerate(z)]
        except ZeroDivisionError:
            raise ConvergenceError("the Woodbury system of a quadratic form is singular at these values "
                                   "(a finite-rank part makes the matrix non-invertible in the limit)") from None


def compile_cached(plan):
    """The plan's outer formula compiled in its symbols (memoized on the plan); the function takes the list
    of the symbols' values.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> plan = m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n + gamma")
    >>> plan.formula, [s for s, _ in plan.symbols]
    (QF0 + gamma, [QF0, gamma])
    >>> fn = compile_cached(plan)
    >>> fn is compile_cached(plan), fn([3, 1])
    (True, 4)
    """
    if getattr(plan, "_formula_fn", None) is None:
        plan._formula_fn = compile_expr([[s for s, _ in plan.symbols]], plan.formula)
    return plan._formula_fn


def _check_form_bounds(plan, values, grams, qs, digits):
    subs = {p: sp.Rational(values[p.name]) for p in plan.params}
    slack = mpmath.mpf(10) ** (-digits)
    for f, q in zip(plan.forms, qs):
        b = _form_bounds(f, plan)
        if b is None:
            continue
        g, conds, x = b
        if not all(bool(sp.sympify(c).subs(subs) >= 0) for c in conds):
            continue
        g = sp.sympify(g).subs(subs)
        if not g > 0:
            continue
        if isinstance(x, Vector):
            xx = sp.sympify(x.dim.ratio).subs(subs) if x.random else sp.sympify(grams.get(_gram(x.name), 0))
        else:
            continue
        upper = mpf_of(sp.Rational(xx) / g)
        if not (q >= -slack * (1 + upper) and q <= upper * (1 + slack) + slack):
            raise BranchError(f"the limit of quadratic form #{f.index + 1} is {mpmath.nstr(q, 12)}, but it must lie "
                              f"in [0, {mpmath.nstr(upper, 10)}] (x^T A^-1 x with A positive semi-definite plus "
                              f"{g} I): the fixed point is off the physical branch")


def _gram(a):
    return gram_symbol(a, a)


def certified_qf_limit(plan, values: dict, digits: int, vectors=None):
    """The :class:`~symrmt.engine.TraceLimit` of a QF plan at exact ``values`` (name -> Fraction; the inner
    products as ``"a.b"``) to ``digits`` significant digits, with ``forms`` (the limit of each quadratic
    form); ``vectors``: the model's declared vectors (name -> Vector; default: the expression's), whose Gram
    matrices are checked.

    Raises :class:`~symrmt.errors.BranchError` (a coefficient not real, a value off its bounds),
    :class:`~symrmt.errors.PencilError` (a failed self-test), :class:`~symrmt.errors.ConvergenceError` and
    :class:`~symrmt.errors.PrecisionError` (the two precisions never agree).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    >>> out = certified_qf_limit(m.plan("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n"), {"gamma": Fraction(1)}, 12)
    >>> print(out)   # m |y|^2/n = (sqrt(5) - 1)/2
    0.61803398875
    """

    plan = admitted(plan, values)  # a no-op on a plan Model.limit admitted at these values
    grams = gram_values({**plan.vectors, **(vectors or {})}, values)
    form_params(plan)
    with stage("the pencil self-test and compilation"):
        self_test_plan(plan)
        solvers = {"values": values}
        for t in plan.traces:  # a Hermitized trace carries its own solver; the others continue in log(param)
            solvers[t.index] = getattr(t, "solver", ContinuedSolver)(compiled_system(t.system), values)
    for t in plan.traces:
        with stage(f"the homotopy of fixed point #{t.index + 1} ({len(t.system.unknowns)} unknowns)"):
            solvers[t.index].start(branch_acceptor(t, values) if t.system.readout else None)

    def attempt(dps):
        with stage(f"the Newton polish and certification at {dps} and {dps + 10} working digits"):
            return _attempt(dps)

    def _attempt(dps):
        try:
            lo, taus_lo, qs_lo, step_lo, res_lo = _evaluate(plan, solvers, grams, dps)
            if step_lo > mpmath.mpf(10) ** -(digits + 2):
                raise ConvergenceError(f"Newton at {dps} digits stalled at a relative step {mpmath.nstr(step_lo, 3)} "
                                       f"(fixed-point residual max|R| = {mpmath.nstr(res_lo, 3)})")
            hi, taus, qs, _, res = _evaluate(plan, solvers, grams, dps + 10)
            with mpmath.workdps(dps + 10):
                if agree(lo, hi, digits) and all(agree(a, b, digits) for a, b in zip(taus_lo + qs_lo, taus + qs)):
                    hi = check_real(hi, digits)
                    real = [t for t in plan.traces if t.system.readout]
                    check_bounds(_Sub(plan, real), values, taus, digits)
                    _check_form_bounds(plan, values, grams, qs, digits)
                    # kept at the working precision, as a trace's value is (certify.py): the one rounding to
                    # ``digits`` is the decimal one when it is printed
                    with mpmath.workdps(dps + 10):
                        out = TraceLimit(+hi, digits, dps + 10, res, dict(values), [+x for x in taus])
                        out.forms = [+q for q in qs]
                        out.solvers = solvers  # the checked homotopy starts (symrmt.engine.prove.quadratic_forms reuses them)
                        return out.value, out
        except ZeroDivisionError as exc:
            raise Disagree(f"division by zero ({exc})") from None
        raise Disagree(f"solves at {dps} and {dps + 10} digits disagree beyond digit {digits} "
                       f"(fixed-point residual max|R| = {mpmath.nstr(res, 3)})")

    # the one two-precision certification (symrmt.core.certify): the guard doubles on each failure
    return certify(attempt, digits, GUARD, ESCALATIONS).data


class _Sub:
    """A view of a plan with only the traces that are read out (for the trace sanity bounds)."""

    def __init__(self, plan, traces):
        self.params, self.traces = plan.params, traces


_ = QuadForm  # the node this module certifies (re-exported for readers)

#: the form evaluations under public names (the complex-z path, symrmt.engine.routes.complex_qf, and the outlier
#: search, symrmt.engine.routes.outliers, read the Woodbury systems through them)
form_function, form_derivative_function, woodbury_solve = _form_function, _form_derivative_function, _woodbury_solve
#: the bound of a form x^T inv(A) x (A positive semi-definite plus g I), read by the float64 batch too
form_bounds = _form_bounds
