"""Non-normal matrices in the trace engine: the invertibility test, and the Hermitized solve.

The block fixed point of a pencil is followed from ``s = 0`` (the random part off) to ``s = 1``.
For a symmetric matrix the real path breaks at the edge of the spectrum, so a value is only
returned outside it.  For a non-normal ``A`` (a square Gaussian block, a product of non-commuting
non-symmetric factors) the path does *not* break when 0 enters the spectrum of ``A``: the fixed
point continues analytically across the support of the Brown measure, and there the analytic
continuation is not the limit of ``tau(A_n^{-1})`` (Ginibre: ``tau((gamma + Z/sqrt(n))^{-1})`` is
``gamma`` for ``|gamma| <= 1``; the continuation gives ``1/gamma``).

So every ``inv(A)`` with ``A`` not symmetric by structure is tested first
(:func:`invertible_on_path`): the symmetric positive semi-definite ``A^T A`` at ``0``, followed along
the same homotopy ``s``, must stay invertible (the real path of ``tau((A^T A)^{-1})`` breaks where 0
enters the spectrum of ``A(s)^T A(s)``, which is where ``A(s)`` stops being invertible).  When it
passes, the limit operator ``A(s)`` is invertible along the whole path, ``tau(A(s)^{-1})`` is analytic
in ``s`` there, and the engine's value is the limit.  When it fails:

- a trace of ``inv(A)`` itself (a resolvent) is solved on the Hermitized pencil
  ``[[eps, P], [P^T, -eps]]`` (:mod:`symrmt.engine.reduce.hermitize`) at ``eps = 1``, followed
  geometrically to ``eps = 1e-10`` and finished by Newton at ``eps = 0``, where the root is regular
  both inside and outside the support of the Brown measure (it is singular on its boundary, and
  there the solve fails);
- any other trace is refused with :class:`NonNormalError`, which says why, and so is a quadratic form of
  such an inverse (inside the spectrum the inverse's norm grows like ``n``: the form has no deterministic
  limit) and a trace whose non-normal inverse holds a finite-rank part (the test runs on the bulk,
  :func:`symrmt.engine.reduce.hermitize.bulk_part`).

:func:`guard` is run for every real-valued limit (:func:`symrmt.engine.solve.certify.admitted`, which
:meth:`symrmt.engine.Model.limit` calls before it dispatches to traces or quadratic forms).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from symrmt.cache import cache_dict
from symrmt.engine.reduce import fixed_point as blockfp, hermitize as herm
from symrmt.engine.reduce.fixed_point import BlockSystem
from symrmt.core.continuation import check_polish, in_trust_region
from symrmt.core.linalg import qr_solve
from symrmt.core.newton import NewtonError, newton
from symrmt.core.numbers import MPMATH
from symrmt.errors import BranchError, ConvergenceError
from symrmt.errors import NonNormalError  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.core.numbers import mpf_of
from symrmt.engine.lang.vectors import has_vectors
from symrmt.engine.reduce.pencil_check import checked
from symrmt.engine.reduce.plan import pencil_for, TracePlan, Plan
from symrmt.engine.solve.newton import NEWTON_SLACK, POLISH_MOVE, TraceSolver

#: the Hermitization's regularization is followed from 1 down to this before the Newton finish at 0
EPS_FLOOR = 1e-10
#: the Newton finish at ``eps = 0`` may move at most this fraction of ``1 + |h|`` from its predictor (the
#: core's trust region near the predictor, :func:`symrmt.core.continuation.in_trust_region`)
FINISH_MOVE = 1e-4
#: a singular value of ``[J; gauge]`` at ``eps = 0`` below this fraction of the largest is a family of fixed points
FAMILY_RANK = 1e-8


def _lsq(A, b):
    """Least squares ``A x = b`` (mpmath matrices) by the core's Householder QR
    (:func:`symrmt.core.linalg.qr_solve`, at the current precision); a rank-deficient system is a
    :class:`ZeroDivisionError`."""
    try:
        return qr_solve(A.tolist(), [[b[i] for i in range(b.rows)]], mpmath.sqrt, mpmath.eps)[0]
    except ConvergenceError:
        raise ZeroDivisionError("the Jacobian with its gauge row is singular") from None


class HermitianSolver(TraceSolver):
    """The trace solver on a Hermitized pencil: the homotopy in ``s`` runs at ``eps = 1`` (never at 0,
    where it would follow the analytic continuation), then ``eps`` goes to 0 geometrically.

    At ``eps = 0`` the fixed point of ``[[0, P], [P^T, 0]]`` is not isolated: with
    ``D = diag(t I, I/t)``, ``D^{-1} H D^{-1}`` is a fixed point whenever ``H`` is (``D L_0 D = L_0`` and
    ``eta(D^{-1} H D^{-1}) = D eta(H) D``).  The family is cut by the identity every ``eps > 0`` obeys,
    ``tr eps (P P^T + eps^2)^{-1} = tr eps (P^T P + eps^2)^{-1}``: the size-weighted traces of the
    two diagonal quadrants of ``H`` sum to 0 (:meth:`gauge`).  The finish at ``eps = 0`` and the
    polish solve the residual together with that row (least squares, a consistent system of full
    column rank at a regular point).  Some pencils have more such families at ``eps = 0`` (the square
    ``Z*Z/n`` of one Ginibre: a direction mixing its two blocks); the null space of ``[J; gauge]`` at the
    start point is then pinned too (:meth:`_families`), once the trace is found constant along it.

    Takes what :class:`TraceSolver` takes, for the system of a Hermitized pencil (:func:`guard` sets it as
    the solver of such a trace).

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> e = "trace(inv(Z/sqrt(n) + gamma*I(n)))"   # Ginibre: gamma for |gamma| <= 1, 1/gamma outside
    >>> [str(m.limit(e, at={"gamma": g}, digits=12)) for g in ("1/2", "4")]
    ['0.5', '0.25']
    """

    def _path(self, floats, shifts=(1, 3, Fraction(1, 3)), fine=False):
        return super()._path(floats, shifts=tuple(s for s in shifts if s != 0) or (1,), fine=fine)

    def start(self, accept=None):
        self._finish_error = None
        try:
            return super().start(accept)
        except (ConvergenceError, BranchError) as exc:
            why = self._finish_error or str(exc)  # the shift path's own wording speaks of a singular L_0
            raise type(exc)(
                "the resolvent of a non-normal matrix whose limit is not invertible on the homotopy path (0 is in "
                "the spectrum of A^T A there) was Hermitized, and its solve failed: " + why) from None

    def _unshift(self, *args, **kwargs):
        try:
            return self._unshift_to_zero(*args, **kwargs)
        except ConvergenceError as exc:
            self._finish_error = f"the path of the regularization eps -> 0 {exc}"
            raise

    def gauge(self):
        """``[(position, weight)]``: the gauge row ``sum weight * h[position] = 0``."""
        if not hasattr(self, "_gauge"):
            system = self.c.system
            p = system.pencil
            k = p.size // 2
            row = []
            for b in range(p.size):
                w = mpf_of(p.ratios[p.blocks[b]]) if not p.ratios[p.blocks[b]].free_symbols else None
                if w is None:
                    row = None
                    break
                row.append((system.unknowns.index((b, b)), w))
            self._gauge = row
            self._gauge_sym = [(system.unknowns.index((b, b)), p.ratios[p.blocks[b]]) for b in range(p.size)]
            self._k = k
        return self._gauge_sym

    def _gauge_row(self, pvals):
        subs = {q: v for q, v in zip(self.c.params, pvals)}
        row = [mpmath.mpf(0)] * self.c.m
        for pos, w in self.gauge():
            row[pos] += mpf_of(sp.sympify(w).subs(subs)) if sp.sympify(w).free_symbols else mpf_of(w)
        return row

    def _families(self, h, pv, pvals, g):
        """Rows ``n`` (floats) spanning the null space of ``[J; gauge]`` at ``h``: directions of a family of
        fixed points at ``eps = 0`` beyond the scaling that :meth:`gauge` cuts (``trace(inv(Z*Z/n + gamma*I(n)))``
        has one, mixing the pencil's two blocks).  The trace must not change along them
        (:class:`ConvergenceError` otherwise: the value would not be determined)."""
        m = self.c.m
        v = self.c.fjs(h, pv)
        A = np.array([[float(x) for x in v[m + m * i:m + m * (i + 1)]] for i in range(m)] + [[float(x) for x in g]])
        if not np.all(np.isfinite(A)):
            return []
        _, sv, vt = np.linalg.svd(A)
        null = [vt[i] for i in range(len(sv)) if sv[i] <= FAMILY_RANK * sv[0]]
        subs = dict(zip(self.c.params, pvals))
        readout = [(self.c.system.unknowns.index(ij), float(sp.sympify(c).subs(subs)))
                   for ij, c in self.c.system.readout.items()]
        size = sum(abs(c) for _, c in readout) or 1.0
        for n in null:
            if abs(sum(c * n[pos] for pos, c in readout)) > FAMILY_RANK ** 0.5 * size:
                raise ConvergenceError("ended at eps = 0 on a family of fixed points along which the trace changes "
                                       "(the value is not determined there)")
        return [[mpmath.mpf(float(x)) for x in n] for n in null]

    def _gauss_newton(self, h, pv, pvals, tol, maxsteps):
        """Newton on ``[R; gauge; pins] = 0`` (least squares by QR) at the current precision, where the pins
        hold ``h`` still along the families of :meth:`_families`; ``(h, step, rows, extra, v)``, ``extra``:
        the gauge and pin rows (their right-hand side 0 for a derivative)."""
        m = self.c.m
        g = self._gauge_row(pvals)
        pins = self._families(h, pv, pvals, g)
        extra = [g] + pins
        h_ref = list(h)

        def linear(x):
            v = self.c.fjs(x, pv)
            A = mpmath.matrix([list(v[m + m * i:m + m * (i + 1)]) for i in range(m)] + extra)
            b = mpmath.matrix([-y for y in v[:m]] + [-sum(a * y for a, y in zip(g, x))]
                              + [-sum(a * (y - y0) for a, y, y0 in zip(n, x, h_ref)) for n in pins])
            dx = _lsq(A, b)
            return [dx[i] for i in range(m)], None

        try:  # the core's Newton (stagnation: the step stops shrinking below sqrt(tol))
            h, _, step = newton(linear, h, MPMATH, tol, maxsteps, shrink=1)
        except NewtonError as exc:
            raise ConvergenceError(f"the Newton polish at eps = 0 did not converge (last relative step "
                                   f"{mpmath.nstr(exc.step, 3)}): the point may lie on the boundary of the "
                                   "spectrum") from None
        v = self.c.fjs(h, pv)
        rows = [list(v[m + m * i:m + m * (i + 1)]) for i in range(m)]
        return h, step, rows, extra, v

    def _unshift_to_zero(self, Fe, pv_at, h, dh, e0, num, fine=False):
        sqrt = num[0]
        e = e0
        while e > EPS_FLOOR * e0:
            h, dh = self._follow(Fe, pv_at, h, dh, e, e / 8, num, fine)
            e = e / 8
        pred = [a - b * e for a, b in zip(h, dh)]
        with mpmath.workdps(20):
            pvals = self._pvals()
            pv = self.c.pv(pvals, mpmath.mpf(1), mpmath.mpf(0))
            try:
                new, _, _, _, _ = self._gauss_newton([mpmath.mpf(x) for x in pred], pv, pvals,
                                                     mpmath.mpf(10) ** -15, 30)
            except (ZeroDivisionError, ValueError):
                raise ConvergenceError("ended in a Newton finish at eps = 0 that met a singular Jacobian (the point lies on "
                                       "the boundary of the support of the Brown measure, or on a real spectrum "
                                       "of a non-normal matrix)") from None
        size = 1 + sqrt(sum(x * x for x in h))
        moved = sqrt(sum((float(a) - float(b)) ** 2 for a, b in zip(new, pred)))
        if not in_trust_region(moved, None, size, FINISH_MOVE):
            raise ConvergenceError(f"ended in a Newton finish at eps = 0 that left the path followed down to eps = {float(e):.3g}"
                                   " (the point may lie on the boundary of the spectrum)")
        return [type(h[0])(x) if isinstance(h[0], float) else x for x in new]

    def solve(self, dps: int, alphas=()):
        start = self.start()
        m = self.c.m
        with mpmath.workdps(dps):
            pvals = self._pvals()
            pv = self.c.pv(pvals, mpmath.mpf(1))
            tol = mpmath.mpf(10) ** (-(dps - NEWTON_SLACK))
            h0 = [mpmath.mpf(x) for x in start]
            h, step, rows, extra, v = self._gauss_newton(h0, pv, pvals, tol, 8 + dps // 5)
            check_polish(h, h0, dps, POLISH_MOVE, nstr=lambda v: mpmath.nstr(v, 3),
                         what="the checked point of the Hermitized path: no value is returned")
            res = max(abs(x) for x in v[:m])
            derivs = {}
            for alpha in sorted({blockfp._canon(a) for a in alphas}, key=len):
                self._hderivative(alpha, h, rows, extra, pvals, derivs)
            return h, derivs, step, res

    def _hderivative(self, alpha, h, rows, extra, pvals, derivs):
        if alpha in derivs:
            return derivs[alpha]
        if not set(alpha) <= set(self.c.params):
            derivs[alpha] = [mpmath.mpf(0)] * self.c.m
            return derivs[alpha]
        fn, lower = self.c.derivative_function(alpha)
        lows = [self._hderivative(b, h, rows, extra, pvals, derivs) for b in lower]
        rhs = fn(h, *lows, pvals)
        x = _lsq(mpmath.matrix(rows + extra), mpmath.matrix([-r for r in rhs] + [0] * len(extra)))
        derivs[alpha] = [x[i] for i in range(self.c.m)]
        return derivs[alpha]


_CHECKS = cache_dict("symrmt.engine.solve.hermitized._CHECKS", 512)


def invertible_on_path(a, values, compiled_system) -> str | None:
    """``None`` when ``A(s)`` stays invertible for every strength ``s`` in ``[0, 1]`` (its Gram matrix
    ``A^T A`` keeps 0 outside its spectrum along the homotopy), else the reason it does not;
    ``a``: the matrix (a node of :mod:`symrmt.engine.lang`), ``values``: parameter name -> exact number;
    ``compiled_system``: the caller's compile step of a block system
    (:func:`symrmt.engine.solve.certify.compiled_system`, which calls this module: passed, not imported).
    Raises nothing of its own: a failed test is the reason returned.

    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce.hermitize import nonnormal_inverses
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> a = nonnormal_inverses(m.plan("trace(inv(Z/sqrt(n) + gamma*I(n)))").traces[0].matrix)[0]
    >>> invertible_on_path(a, {"gamma": Fraction(2)}, compiled_system) is None   # outside the unit disc
    True
    >>> print(invertible_on_path(a, {"gamma": Fraction(1, 2)}, compiled_system))
    the homotopy in the strength s of the random part stalled at 0.25 (the pencil turns singular on the way: the expression may have no real limit at these values, e.g. a resolvent evaluated inside the spectrum)
    """
    g = herm.gram_inverse(a)
    key = (g, tuple(sorted(values.items())))
    if key in _CHECKS:
        return _CHECKS[key]
    p, law = pencil_for(g)
    if law is not None:
        return "its Gram matrix has a diagonal law of many atoms (no test)"
    checked(p, g)
    system = BlockSystem(p)
    missing = [s.name for s in system.params if s.name not in values]
    if missing:
        return f"no value for {', '.join(missing)}"
    solver = TraceSolver(compiled_system(system), values)  # the homotopy in s only: the path is the test
    try:
        h = solver.start()
        tau = sum(float(c.subs({s: values[s.name] for s in system.params}) if hasattr(c, "subs") else c)
                  * float(h[system.unknowns.index(ij)]) for ij, c in system.readout.items())
        if not (tau > 0 and math.isfinite(tau)):
            raise BranchError(f"tau((A^T A)^(-1)) = {tau:.6g} is not positive")
        why = None
    except (ConvergenceError, BranchError, ArithmeticError, ValueError) as exc:
        why = str(exc)
    if len(_CHECKS) > 512:
        _CHECKS.clear()
    _CHECKS[key] = why
    return why


def _refuse_vectors(what, why, form):
    """The :class:`NonNormalError` for a quadratic form (``form``), or a trace with a finite-rank part, of a
    non-normal inverse that is not invertible in the limit (``why``: the Gram test's failure)."""
    reason = ("a quadratic form of it has no deterministic limit (its spread over draws does not shrink as n grows)"
              if form else "a finite-rank part (vectors) inside it may move the normalized trace, and the "
              "Hermitization reads only the bulk; it is not solved")
    return NonNormalError(
        f"{what} holds the inverse of a matrix that is not symmetric (non-normal in general) and not invertible "
        f"in the limit on the homotopy path (the Gram matrix test A^T A failed: {why}); there the inverse's norm "
        f"grows with n and the fixed point's analytic continuation is not the limit: {reason}; no value is "
        "returned")


def guard(plan, values, compiled_system):
    """The plan to solve at ``values``: unchanged when every non-symmetric inverse is invertible along
    the homotopy; a trace of a non-invertible non-normal resolvent replaced by its Hermitization;
    :class:`NonNormalError` for any other trace, and any quadratic form, that holds a non-invertible
    non-normal inverse.  Every real-valued limit passes here (:meth:`symrmt.engine.Model.limit` for traces,
    quadratic forms, their sums, sweeps and proofs; :func:`symrmt.engine.solve.certify.certified_limit` and
    :func:`symrmt.engine.solve.quadratic_forms.certified_qf_limit` call it again, a no-op on a plan already guarded at
    these values).  ``plan``: a :class:`~symrmt.engine.reduce.plan.Plan` or a
    :class:`~symrmt.engine.reduce.woodbury.QFPlan`; ``compiled_system``: as for :func:`invertible_on_path`.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> plan = m.plan("trace(inv(Z/sqrt(n) + gamma*I(n)))")
    >>> [t.solver.__name__ for t in guard(plan, {"gamma": Fraction(1, 2)}, compiled_system).traces]
    ['HermitianSolver']
    >>> guard(m.plan("trace(inv(Z/sqrt(n) + gamma*I(n))*Z/sqrt(n))"), {"gamma": Fraction(1, 2)}, compiled_system)
    Traceback (most recent call last):
        ...
    symrmt.errors.NonNormalError: trace #1 holds the inverse of a matrix that is not symmetric (non-normal in
    general) and not invertible in the limit on the homotopy path (the Gram matrix test A^T A failed: the homotopy
    in the strength s of the random part stalled at 0.25 (the pencil turns singular on the way: the expression may
    have no real limit at these values, e.g. a resolvent evaluated inside the spectrum)); there the fixed point's
    analytic continuation is not the trace (the Brown measure governs it) and only the resolvent trace(inv(A)) of a
    polynomial A is Hermitized; no value is returned
    """
    key = tuple(sorted(values.items()))
    if getattr(plan, "guarded", None) == key:
        return plan
    forms = getattr(plan, "forms", None)  # a quadratic-form plan: its forms' bulk systems are traces too
    form_of = {f.trace_index: f for f in forms or () if f.trace_index is not None}
    new_traces, remap = [], {}
    for t in plan.traces:
        form = form_of.get(t.index)
        matrix = form.matrix if form is not None else t.matrix
        bad = []
        for a in herm.nonnormal_inverses(matrix):
            bulk = herm.bulk_part(a)  # a finite-rank part (vectors) does not move the limit spectrum
            why = "its argument is of finite rank" if bulk is None else invertible_on_path(bulk, values,
                                                                                          compiled_system)
            if why is not None:
                bad.append((a, why))
        if not bad:
            if herm.nonnormal_inverses(matrix) and forms is None:
                # the Gram test vouches for the homotopy in s only: no continuation in a parameter, whose
                # path could cross the support of the Brown measure (the quadratic-form path never continues)
                nt = TracePlan(t.index, t.matrix, t.pencil, t.system, t.bounds)
                nt.solver = TraceSolver
                new_traces.append(nt)
                remap.setdefault(t.index, None)
            else:
                new_traces.append(t)
            continue
        if form is not None:
            raise _refuse_vectors(f"quadratic form #{form.index + 1}", bad[0][1], True)
        if forms is not None and has_vectors(t.matrix):
            raise _refuse_vectors(f"trace #{t.index + 1}", bad[0][1], False)
        a = herm.resolvent_argument(t.matrix)
        if a is None or len(bad) > 1 or bad[0][0] != a or herm.has_inverse(a) or isinstance(t.pencil, tuple):
            raise NonNormalError(
                f"trace #{t.index + 1} holds the inverse of a matrix that is not symmetric (non-normal in "
                "general) and not invertible in the limit on the homotopy path (the Gram matrix test A^T A "
                f"failed: {bad[0][1]}); there the fixed point's analytic continuation is not the trace "
                "(the Brown measure governs it) and only the resolvent trace(inv(A)) of a polynomial A is "
                "Hermitized; no value is returned"
            )
        hp = herm.hermitize(t.pencil)
        nt = TracePlan(t.index, t.matrix, hp, BlockSystem(hp, reduce=False), t.bounds)
        nt.solver = HermitianSolver
        nt.hermitized = True
        nt.full_pencil, nt.full_matrix = hp, None  # the quadratic-form path self-tests (hp, matrix)
        new_traces.append(nt)
        remap[t.index] = t.pencil.size  # the readout (i, j) of M = u P^{-1} v is (size + i, j) there
    if not remap:
        return plan
    remap = {k: v for k, v in remap.items() if v is not None}
    symbols = []
    for sym, what in plan.symbols:
        if isinstance(what[0], int) and what[0] in remap:
            k, (i, j), alpha = what
            what = (k, (remap[k] + i, j), alpha)
        symbols.append((sym, what))
    if forms is None:
        out = Plan(plan.expr, plan.hat, new_traces, plan.formula, symbols, plan.needs, plan.params)
    else:
        out = type(plan)(plan.expr, plan.hat, new_traces, forms, plan.formula, symbols, plan.params, plan.vectors)
        out.needs = plan.needs
    out.guarded = key
    return out
