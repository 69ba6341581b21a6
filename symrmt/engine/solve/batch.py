r"""The float64 batched path of the trace engine: one block fixed point on a whole grid of points.

The residual ``R(H; s) = (L_0 - s eta(H)) H - I``, its Jacobian, ``dR/ds``, the right-hand sides of the
parameter derivatives and the readout of :class:`symrmt.engine.reduce.fixed_point.BlockSystem` are printed for
NumPy by the one compile step (:func:`symrmt.codegen.compile.compile_recipe` with ``target="numpy"``,
cached on disk next to the mpmath code), and driven here on stacked arrays, every point at once:

1. **Homotopy in s**, as :class:`symrmt.engine.solve.newton.TraceSolver` does it: ``H = L_0^{-1}`` at
   ``s = 0`` (one Newton step of the linear system), then predictor ``dH/ds = -J^{-1} dR/ds`` and a
   Newton corrector with the same trust regions (the corrected point within ``CORRECTION_FRACTION`` of
   the predictor and ``MOVE_FRACTION`` of the previous point), each point with its own step, halved on
   trouble and doubled on success.  The path is followed **twice**, the second time with steps at most
   ``1/8`` and a trust region twice as tight; the two end points must agree to ``PATHS_AGREE``
   (the checking path of the mpmath solver).
   Where the homotopy fails, :func:`continued` follows the fixed point in a shift parameter from the
   starts of :class:`symrmt.engine.solve.continuation.ContinuedSolver`, in its order, all such rows at once
   (again two paths that must agree; a row whose paths reach the target but disagree is not tried further).
   On a product grid, :class:`symrmt.engine.solve.batch_axis.AxisSolver` takes the place of this step
   (the ``solver`` of :func:`solve_plan`): the fixed point continued from grid value to grid value along an
   axis, checked against this homotopy, which solves every point it cannot continue to.
2. **Polish** at ``s = 1`` by Newton (stacked ``numpy.linalg.solve`` on the column-scaled Jacobians);
   Jacobians whose condition number exceeds :data:`MAX_COND` are refused.  The condition number is bounded
   from above by :class:`ScaledInverse` (the explicit inverse of each column-scaled Jacobian, which also makes
   every solve of step 3): at least the 2-norm condition number, at most ``m`` times it.
3. **Error estimate.**  The generated code is plain arithmetic (and ``sqrt``), so it runs on
   ``numpy.longdouble`` arrays (64-bit mantissa on x86-64 Linux).  The fixed point is corrected once
   with its residual evaluated in long double (the residual alone, :meth:`BatchSystem.residual`), the
   derivatives ``H_alpha`` the formula needs are refined once with their long-double residuals (the
   long-double Jacobian at the corrected point is evaluated only for them), and the value is evaluated again in long double; the gap between the float64
   value and the corrected one estimates the float64 error point by point (the corrected value is the
   one returned).  The long-double stage runs at the parameters rounded from their exact values
   (``cols_ld``), not at their float64 roundings, so the estimate also holds the error that rounding the
   parameters to float64 would cause (near ``c = 1`` at small ``gamma`` it is amplified a thousandfold).
   The estimate is at least half an ulp (the returned value is a float64), plus the long-double value's
   own error, which the comparison cannot see: the long-double precision times the condition bound of
   ``J``; where ``longdouble`` is float64, it is floored at ``1e-16 * cond(J)``.
4. **Branch checks**: the sanity bounds of each trace (``0 < tau <= 1/gamma`` for the resolvent of a
   positive semi-definite matrix, as :func:`symrmt.engine.solve.certify.check_bounds`), a finite real
   value.  A plan with the inverse of a non-symmetric matrix is not solved here: every point fails, so
   that the certified path, which tests it, takes it.  :func:`solve_plan` takes no quadratic form (every
   point fails); :mod:`symrmt.engine.solve.batch_qf` adds the Woodbury readout of forms to
   :func:`solve_traces` and :func:`evaluate_formula`.

A point failing any check is reported to the caller (:mod:`symrmt.engine.routes.sweep`), which recomputes it
by the certified mpmath path and marks it.  Nothing here returns a value by itself.
"""

from __future__ import annotations

import hashlib
import inspect

import numpy as np
import sympy as sp

from symrmt.cache import cache_dict
from symrmt.engine.reduce import fixed_point as blockfp
from symrmt.engine.reduce.fixed_point import S_STRENGTH
from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.core.batch import EXTENDED, LD
from symrmt.codegen.compile import compile_expr, compile_recipe
from symrmt.core import batch as core_batch
from symrmt.core.batch import norm_rows as _norm, stack as _stack
from symrmt.core.continuation import Linear
from symrmt.engine.reduce.hermitize import nonnormal_inverses
from symrmt.engine.solve.continuation import LEG_DECADES, STARTS, shift_params
from symrmt.engine.solve.newton import CHECK_MAX_STEP, CHECK_TIGHTEN, CORRECTION_FRACTION, MOVE_FRACTION, PATHS_AGREE

__all__ = ["BatchSystem", "ScaledInverse", "solve_plan", "FALLBACK_TOL", "RESIDUAL_TOL", "MAX_COND"]

#: a point whose estimated relative float64 error exceeds this goes to the mpmath path
FALLBACK_TOL = 1e-11
#: relative size of the long-double correction of the fixed point above which a point fails
RESIDUAL_TOL = 1e-12
#: column-scaled Jacobians with a larger condition number are refused
MAX_COND = 1e12
#: relative Newton step of the polish (a point stalling above the float floor of ``1e-11`` fails)
NEWTON_TOL = 1e-14
#: intermediate points of the path only seed the next predictor: Newton to this relative step
PATH_TOL = 1e-9
#: most rounds of one path (each round moves every active point by one accepted or rejected step)
MAX_ROUNDS = 600

_SYSTEMS = cache_dict("symrmt.engine.solve.batch._SYSTEMS", 64)


def _digest() -> str:
    h = hashlib.sha256(inspect.getsource(_build_sources).encode())
    return h.hexdigest()[:8]


def _build_sources(system, what, alpha=None):
    """``(args, exprs)`` of one compiled piece: ``"fjs"`` (``R``, ``J``, ``dR/ds``), ``"f"`` (``R`` alone), ``"d"``
    (the rhs of ``alpha``), ``"fjd"`` (``R``, ``J`` and the rhs of ``alpha = (theta,)``, at ``s = 1``) or
    ``"readout"`` (the readout coefficients); the shift ``eps`` of the inverses is 0."""
    params = list(system.params)
    if what == "f":
        return [list(system.h), params + [S_STRENGTH]], [sp.sympify(x).subs(EPS_SHIFT, 0) for x in system.residual]
    if what == "fjd":  # R and J at s = 1 with the rhs of alpha = (theta,): one call per step along an axis
        J = system.jacobian()
        rhs, _ = system.derivative_rhs(alpha)
        flat = list(system.residual) + [x for row in J for x in row] + list(rhs)
        return [list(system.h), params], [sp.sympify(x).subs(EPS_SHIFT, 0).subs(S_STRENGTH, 1) for x in flat]
    if what == "fjs":
        J = system.jacobian()
        flat = list(system.residual) + [x for row in J for x in row] + system.d_strength()
        flat = [sp.sympify(x).subs(EPS_SHIFT, 0) for x in flat]
        return [list(system.h), params + [S_STRENGTH]], flat
    if what == "d":
        rhs, lower = system.derivative_rhs(alpha)
        args = [list(system.h)] + [system.derivative_symbols(b) for b in lower] + [params]
        return args, [sp.sympify(x).subs(EPS_SHIFT, 0) for x in rhs]
    return [params], [sp.sympify(c) for c in system.readout.values()] + [sp.Integer(0)]


class BatchSystem:
    """The NumPy-compiled pieces of one :class:`~symrmt.engine.solve.newton.CompiledSystem`.

    Takes the compiled system (its code is compiled once more for NumPy, cached on disk); the methods
    :meth:`evaluate`, :meth:`derivative` and :meth:`tau` run on stacked rows, one row per point.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> bs = BatchSystem(compiled_system(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system))
    >>> bs.m, bs.params
    (2, [gamma])
    >>> h = np.full((1, 2), -(np.sqrt(5) - 1) / 2)   # the Marchenko-Pastur fixed point at gamma = 1
    >>> R, J, dRds = bs.evaluate(h, np.array([[1.0]]), np.ones(1))
    >>> bool(np.abs(R).max() < 1e-15), J.shape, bool(bs.tau(h, np.array([[1.0]]))[0] == -h[0, 0])
    (True, (1, 2, 2), True)
    """

    def __init__(self, compiled):
        self.system = compiled.system
        self.m = compiled.m
        self.params = list(compiled.params)
        self.name = f"{compiled.name}_batch{_digest()}"
        self.fjs = compile_recipe(self.name + "_fjs", lambda: _build_sources(self.system, "fjs"), "numpy")
        self.readout_fn = compile_recipe(self.name + "_ro", lambda: _build_sources(self.system, "readout"),
                                         "numpy")
        self.readout_pos = [self.system.unknowns.index(ij) for ij in self.system.readout]
        self._deriv = {}
        self._f = None
        self._fjd = {}

    def residual(self, h, p, s):
        """``R (N,m)`` alone at ``h (N,m)``, ``p (N,k)``, ``s (N,)`` (in ``h``'s dtype: the long-double correction)."""
        if self._f is None:
            self._f = compile_recipe(self.name + "_f", lambda: _build_sources(self.system, "f"), "numpy")
        return call_rows(self._f, [h, np.column_stack([p, s])], h.shape[0], h.dtype)

    def evaluate(self, h, p, s):
        """``(R (N,m), J (N,m,m), dR/ds (N,m))`` at ``h (N,m)``, parameters ``p (N,k)``, strength ``s`` (N,)."""
        n, m = h.shape
        v = call_rows(self.fjs, [h, np.column_stack([p, s])], n, h.dtype)
        return v[:, :m], v[:, m:m + m * m].reshape(n, m, m), v[:, m + m * m:]

    def evaluate_axis(self, h, p, k):
        """``(R (N,m), J (N,m,m), rhs (N,m))`` at ``s = 1``, with ``rhs`` that of ``alpha = (params[k],)``
        (``dR/dtheta`` at fixed ``H``): :meth:`evaluate` and :meth:`derivative` in one compiled call."""
        if k not in self._fjd:
            theta = self.params[k]
            self._fjd[k] = compile_recipe(f"{self.name}_fjd_{theta.name}",
                                          lambda: _build_sources(self.system, "fjd", (theta,)), "numpy")
        n, m = h.shape
        v = call_rows(self._fjd[k], [h, p], n, h.dtype)
        return v[:, :m], v[:, m:m + m * m].reshape(n, m, m), v[:, m + m * m:]

    def derivative(self, alpha):
        """``(fn, lower)``: the compiled rhs of ``J H_alpha = -rhs`` and its lower multi-indices."""
        alpha = blockfp._canon(alpha)
        if alpha not in self._deriv:
            tag = "_".join(x.name for x in alpha)
            lower = [b for b in blockfp._submultisets(alpha) if b and b != alpha]
            fn = compile_recipe(f"{self.name}_d_{tag}", lambda: _build_sources(self.system, "d", alpha), "numpy")
            self._deriv[alpha] = (fn, lower)
        return self._deriv[alpha]

    def tau(self, h, p):
        """The normalized trace ``tau = sum readout * H`` per point, in ``h``'s dtype."""
        n = h.shape[0]
        with np.errstate(all="ignore"):
            c = _stack(self.readout_fn(tuple(p.T)), n, h.dtype)
        return sum(c[:, k] * h[:, pos] for k, pos in enumerate(self.readout_pos))


#: at most this many float64 rows are evaluated one by one on float64 scalars (:func:`call_rows`): the generated
#: code of a system is hundreds of operations, each costing about a microsecond on a NumPy array whatever its
#: length and some 60 ns on a scalar
SCALAR_ROWS = 24


def call_rows(fn, groups, n, dtype=float):
    """A compiled function on stacked rows: ``fn(*cols)`` with, for each 2-d array of ``groups`` (``(n, k)``), the
    tuple of its columns, as an ``(n, len)`` array of ``dtype``.  Up to :data:`SCALAR_ROWS` float64 rows are run
    one by one on NumPy float64 scalars: the same generated code and the same float64 operations as on the
    arrays (a division by zero gives ``inf``, a square root of a negative number ``nan``), at a fraction of the
    cost of a NumPy call on a short array; a row that raises there anyway (a complex power) gets ``nan``
    throughout (it fails its checks).

    >>> f = lambda xs, ys: [xs[0] / ys[0], 2.0]
    >>> call_rows(f, [np.array([[1.0], [3.0]]), np.array([[2.0], [0.0]])], 2).tolist()
    [[0.5, 2.0], [inf, 2.0]]
    """
    if np.dtype(dtype) != np.float64 or n > SCALAR_ROWS:
        with np.errstate(all="ignore"):
            return _stack(fn(*[tuple(g.T) for g in groups]), n, dtype)
    out = None
    with np.errstate(all="ignore"):
        for i in range(n):
            try:
                v = np.array(fn(*[tuple(g[i]) for g in groups]), dtype=float)
            except (ArithmeticError, TypeError, ValueError):
                v = None
            if out is None and v is not None:
                out = np.full((n, v.size), np.nan)
            if v is not None:
                out[i] = v
        if out is None:  # every row failed: the width from the array evaluation
            return _stack(fn(*[tuple(g.T) for g in groups]), n, dtype)
    return out


def batch_system(compiled) -> BatchSystem:
    """The :class:`BatchSystem` of a compiled system, built once per system name and memoized.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> cs = compiled_system(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system)
    >>> batch_system(cs) is batch_system(cs)
    True
    """
    if compiled.name not in _SYSTEMS:
        _SYSTEMS[compiled.name] = BatchSystem(compiled)
    return _SYSTEMS[compiled.name]


def _solve(J, b):
    """Stacked ``J x = b`` (``b (N,m,k)``) with the columns of ``J`` scaled to unit norm; a singular or
    non-finite system gives ``nan`` in its row only."""
    J = np.asarray(J, dtype=float)
    with np.errstate(all="ignore"):
        scale = np.sqrt(np.einsum("nij,nij->nj", J, J))
        scale[~(scale > 0) | ~np.isfinite(scale)] = 1.0
        out = core_batch.solve(J / scale[:, None, :], np.asarray(b, dtype=float))
    return out / scale[:, :, None]


def _cond(J):
    """Condition numbers of the column-scaled Jacobians (``inf`` where singular or not finite): the upper bound
    of :class:`ScaledInverse` (at least the 2-norm condition number, at most ``m`` times it)."""
    return ScaledInverse(J).cond


def _norm2_bound(A):
    """An upper bound of the spectral norm of each stacked matrix, at most ``sqrt(m)`` times it: the smaller of
    the Frobenius norm and ``sqrt(||A||_1 ||A||_inf)``."""
    a = np.abs(A)
    with np.errstate(all="ignore"):
        mixed = np.sqrt(a.sum(axis=1).max(axis=1) * a.sum(axis=2).max(axis=1))
        return np.minimum(np.sqrt(np.einsum("nij,nij->n", A, A)), mixed)


class ScaledInverse:
    r"""The explicit inverses of stacked matrices ``J (N,m,m)`` with their columns scaled to unit 2-norm,
    ``A = J diag(1/scale)``, and the solves and condition numbers they give.

    ``cond`` bounds the 2-norm condition number of ``A`` from above: ``b(A) ||A^{-1}||_F`` with ``b`` the smaller
    of the Frobenius norm and ``sqrt(||.||_1 ||.||_inf)``, each factor between the spectral norm and ``sqrt(m)``
    times it, so ``cond_2(A) <= cond <= m cond_2(A)``: a threshold on it (:data:`MAX_COND`) refuses every matrix the same
    threshold on ``cond_2`` refuses, and no matrix better conditioned than ``MAX_COND / m``.  It is ``inf`` where
    ``J`` is singular or not finite; :meth:`solve` then gives ``nan`` in that row only.  The inverse costs about
    half a singular value decomposition and replaces the LU solves of the long-double stage.

    >>> J = np.array([[[2.0, 0.0], [0.0, 4.0]], [[1.0, 1.0], [1.0, 1.0]]])
    >>> inv = ScaledInverse(J)
    >>> inv.cond.round(6).tolist()   # the scaled first matrix is I (condition 1): 1 * ||I||_F = sqrt(2) <= m * 1
    [1.414214, inf]
    >>> inv.solve(np.array([[[2.0], [2.0]], [[1.0], [1.0]]]))[0, :, 0].tolist()
    [1.0, 0.5]
    """

    def __init__(self, J):
        J = np.asarray(J, dtype=float)
        n, m = J.shape[0], J.shape[1]
        with np.errstate(all="ignore"):
            scale = np.sqrt(np.einsum("nij,nij->nj", J, J))
        scale[~(scale > 0) | ~np.isfinite(scale)] = 1.0
        A = J / scale[:, None, :]
        try:
            inv = np.linalg.inv(A)
        except np.linalg.LinAlgError:  # a singular or non-finite matrix: nan in its row only
            inv = core_batch.solve(A, np.broadcast_to(np.eye(m), (n, m, m)))
        with np.errstate(all="ignore"):  # the Frobenius norm of the inverse: close to its 2-norm near singularity
            cond = _norm2_bound(A) * np.sqrt(np.einsum("nij,nij->n", inv, inv))
        cond[~np.isfinite(cond)] = np.inf
        self.inv, self.scale, self.cond = inv, scale, cond

    def solve(self, b):
        """``J x = b`` for stacked ``b (N,m,k)`` (cast to float64)."""
        return np.matmul(self.inv, b.astype(float)) / self.scale[:, :, None]

    def solve_t(self, b):
        """``J^T x = b`` for stacked ``b (N,m,k)`` (cast to float64)."""
        return np.matmul(np.swapaxes(self.inv, 1, 2), b.astype(float) / self.scale[:, :, None])


def newton_ev(ev, h, t, tol, maxsteps=12):
    """Newton on ``R(h; t) = 0`` for every row (``ev(rows, h, t) -> (R, J, dR/dt)``); returns
    ``(h, dh/dt, step, ok)``: the core's batched driver (:func:`symrmt.core.batch.newton`) with the
    column-scaled solve :func:`_solve`.  A row is ``ok`` when its relative step fell below ``tol`` or
    stopped shrinking below ``1e-11`` (the float64 floor), with finite values.  Raises nothing: a row
    that fails has ``ok`` False.

    >>> def ev(rows, h, t):   # h^2 - t = 0 (one unknown), dR/dt = -1
    ...     return h ** 2 - t[:, None], 2 * h[:, :, None], -np.ones_like(h)
    >>> h, dh, step, ok = newton_ev(ev, np.ones((2, 1)), np.array([2.0, 9.0]), 1e-14)
    >>> bool(np.abs(h[:, 0] - [np.sqrt(2), 3]).max() < 1e-15), dh[:, 0].round(12).tolist(), bool(ok.all())
    (True, [0.353553390593, 0.166666666667], True)
    """
    def linear(rows, x):
        F, J, Ft = ev(rows, x, t[rows])
        y = _solve(J, -np.stack([F, Ft], axis=2))
        return y[:, :, 0], y[:, :, 1]

    return core_batch.newton(linear, h, tol, maxsteps)


def newton(bs, h, p, s, tol, maxsteps=12):
    """:func:`newton_ev` on ``R(h; s)`` of the :class:`BatchSystem` ``bs`` at parameters ``p`` (N, k) and
    strengths ``s`` (one per row); returns ``(h, dh/ds, step, ok)``.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> bs = batch_system(compiled_system(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system))
    >>> h, dh, step, ok = newton(bs, np.full((1, 2), -0.6), np.array([[1.0]]), np.ones(1), 1e-14)
    >>> round(float(-h[0, 1]), 14), bool(ok[0])   # (sqrt(5) - 1)/2
    (0.61803398874989, True)
    """
    return newton_ev(lambda rows, hh, ss: bs.evaluate(hh, p[rows], ss), h, s, tol, maxsteps)


def follow(ev, h, dh, t0, t1, fine=False):
    """Follow every row from ``t0`` to ``t1`` (arrays) with the predictor ``dh`` and a Newton corrector inside
    the trust regions of :meth:`symrmt.engine.solve.newton.TraceSolver._follow` (the core's batched continuation,
    :func:`symrmt.core.batch.follow`, with the same :class:`~symrmt.core.continuation.Linear` schedule);
    ``ev(rows, h, t) -> (R, J, dR/dt)`` as :func:`newton_ev`; ``fine``: the checking path.  Returns
    ``(h, dh, ok)`` at ``t1`` (polished); a row that fails has ``ok`` False.

    >>> def ev(rows, h, t):   # h^2 - (1 + t) = 0 from h = 1 at t = 0 to h = sqrt(2) at t = 1
    ...     return h ** 2 - (1 + t[:, None]), 2 * h[:, :, None], -np.ones_like(h)
    >>> h, dh, ok = follow(ev, np.ones((1, 1)), np.full((1, 1), 0.5), np.zeros(1), np.ones(1))
    >>> bool(abs(h[0, 0] - np.sqrt(2)) < 1e-15), bool(ok[0])
    (True, True)
    """
    t0 = t0.astype(float)

    def correct(rows, pred, nxt):
        return newton_ev(lambda r, hh, tt: ev(rows[r], hh, tt), pred, nxt, PATH_TOL, maxsteps=8)

    schedule = Linear(t0, t1, first=16 if fine else 4, cap=CHECK_MAX_STEP if fine else 1)
    h, dh, _, ok = core_batch.follow(correct, h, dh, t0, t1, schedule, correction=CORRECTION_FRACTION,
                                     move=MOVE_FRACTION, tighten=CHECK_TIGHTEN if fine else 1, max_rounds=MAX_ROUNDS)
    h, dh, _, okp = newton_ev(ev, h, t1.astype(float), NEWTON_TOL, maxsteps=8)
    return h, dh, ok & okp


def path(bs, p, fine=False):
    """``(h, ok)`` at ``s = 1`` for every row of the parameters ``p`` (N, k) by the homotopy in ``s`` from the
    linear root at ``s = 0`` (see the module docstring); a row that fails has ``ok`` False.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> bs = batch_system(compiled_system(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system))
    >>> h, ok = path(bs, np.array([[1.0], [2.0]]))   # (sqrt(g^2 + 4g) - g)/(2g) at g = 1, 2
    >>> bs.tau(h, np.array([[1.0], [2.0]])).round(12).tolist(), ok.tolist()
    ([0.61803398875, 0.366025403784], [True, True])
    """
    n, m = p.shape[0], bs.m
    zero = np.zeros(n)
    h, dh, _, ok = newton(bs, np.zeros((n, m)), p, zero, NEWTON_TOL, maxsteps=4)  # linear at s = 0
    h, _, ok2 = follow(lambda rows, hh, ss: bs.evaluate(hh, p[rows], ss), h, dh, zero, np.ones(n), fine)
    return h, ok & ok2


def _theta_path(bs, k, kind, a, v):
    """``theta(t)`` and ``dtheta/dt`` of the continuation from ``a`` to the targets ``v`` (log or segment)."""
    if kind == "log":
        lr = np.log(v / a)
        return (lambda t, rows: a * np.exp(t * lr[rows])), (lambda t, rows: a * np.exp(t * lr[rows]) * lr[rows])
    return (lambda t, rows: a + t * (v[rows] - a)), (lambda t, rows: v[rows] - a)


def continued(bs, p, rows):
    """The rows of ``p`` listed in ``rows``, where the homotopy in ``s`` failed: the fixed point continued in
    a shift parameter from a start where it succeeds, as :class:`symrmt.engine.solve.continuation.ContinuedSolver`
    does (the same starts, in order; two paths that must agree).  Returns ``(h, ok)`` for those rows.  A row
    whose two paths reach the target but disagree is not tried further (the mpmath path then decides).

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> bs = batch_system(compiled_system(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system))
    >>> h, ok = continued(bs, np.array([[0.1]]), np.array([0]))   # from gamma = 1, in log gamma
    >>> round(float(-h[0, 1]), 12), bool(ok[0])   # (sqrt(g^2 + 4g) - g)/(2g) at g = 1/10
    (2.701562118716, True)
    """
    m = bs.m
    h_out = np.full((rows.size, m), np.nan)
    ok_out = np.zeros(rows.size, dtype=bool)
    todo = np.ones(rows.size, dtype=bool)
    for theta in shift_params(bs.system):
        k = bs.params.index(theta)
        for kind, a in STARTS:
            v = p[rows, k]
            cand = np.flatnonzero(todo & (v != a) & ((kind != "log") | (v > 0)))
            if not cand.size:
                continue
            pc = p[rows[cand]].copy()
            vc = pc[:, k].copy()
            p0 = pc.copy()
            p0[:, k] = a
            h0, ok0 = solve_system(bs, p0, tries_continuation=False)
            sel = np.flatnonzero(ok0)
            if not sel.size:
                continue
            th_of, rate_of = _theta_path(bs, k, kind, float(a), vc[sel])
            psel = pc[sel]

            def ev(r, hh, tt, th_of=th_of, rate_of=rate_of, psel=psel, k=k):
                pp = psel[r].copy()
                pp[:, k] = th_of(tt, r)
                F, J, d = bs.evaluate_axis(hh, pp, k)
                return F, J, d * rate_of(tt, r)[:, None]

            legs = 1
            if kind == "log":
                legs = max(1, int(np.ceil(np.max(np.abs(np.log10(vc[sel] / a))) / LEG_DECADES)))
            ends = []
            for fine in (False, True):
                hh = h0[sel]
                _, _, dd = ev(np.arange(sel.size), hh, np.zeros(sel.size))
                _, J, _ = bs.evaluate(hh, p0[sel], np.ones(sel.size))
                dd = _solve(J, -dd[:, :, None])[:, :, 0]
                okk = np.ones(sel.size, dtype=bool)
                for i in range(legs):
                    hh, dd, okl = follow(ev, hh, dd, np.full(sel.size, i / legs), np.full(sel.size, (i + 1) / legs),
                                         fine)
                    okk &= okl
                ends.append((hh, okk))
            (h1, ok1), (h2, ok2) = ends
            gap = core_batch.paths_gap(h1, h2)
            reached = ok1 & ok2
            good = reached & (gap <= PATHS_AGREE)
            idx = cand[sel]
            h_out[idx[good]] = h1[good]
            ok_out[idx[good]] = True
            todo[idx[reached]] = False  # reached: accepted, or refused (the paths disagree)
    return h_out, ok_out


def solve_system(bs, p, tries_continuation=True):
    """The checked fixed point at ``s = 1`` for every row of ``p``: ``(h, ok)`` (two paths that agree; where
    the homotopy in ``s`` fails, a continuation in a shift parameter, :func:`continued`, unless
    ``tries_continuation`` is False).

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> bs = batch_system(compiled_system(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system))
    >>> h, ok = solve_system(bs, np.array([[1.0]]))
    >>> round(float(-h[0, 1]), 14), bool(ok[0])   # (sqrt(5) - 1)/2
    (0.61803398874989, True)
    """
    h1, ok1 = path(bs, p)
    h2, ok2 = path(bs, p, fine=True)
    gap = core_batch.paths_gap(h1, h2)
    ok = ok1 & ok2 & (gap <= PATHS_AGREE)
    bad = np.flatnonzero(~(ok1 & ok2))  # paths that disagree are not continued: the mpmath path decides
    if tries_continuation and bad.size:
        hc, okc = continued(bs, p, bad)
        h1[bad[okc]] = hc[okc]
        ok[bad[okc]] = True
    return h1, ok


def _formula_fn(plan):
    return compile_expr([[s for s, _ in plan.symbols]], plan.formula, modules="numpy")


_FORMULAS = cache_dict("symrmt.engine.solve.batch._FORMULAS", 64)
_BOUNDS = cache_dict("symrmt.engine.solve.batch._BOUNDS", 256)


def _bound_fn(bound, conds, params):
    key = (sp.srepr(bound), tuple(sp.srepr(c) for c in conds), tuple(p.name for p in params))
    if key not in _BOUNDS:
        _BOUNDS[key] = compile_expr([list(params)], [sp.sympify(bound)] + [sp.sympify(c) for c in conds] +
                                    [sp.Integer(0)], modules="numpy")
    return _BOUNDS[key]


def _bounds_ok(t, tau, cols, plan_params, n, dtype):
    """The sanity bounds of trace ``t`` per point (``tau`` in ``dtype``): see ``check_bounds``."""
    ok = np.ones(n, dtype=bool)
    p = tuple(np.asarray(cols[q.name], dtype) for q in plan_params)
    slack = 1e-12
    for kind, bound, conds in t.bounds:
        with np.errstate(all="ignore"):
            v = _stack(_bound_fn(bound, list(set(conds)), plan_params)(p), n, dtype)
            applies = np.all(v[:, 1:-1] >= 0, axis=1) if v.shape[1] > 2 else np.ones(n, dtype=bool)
            b = v[:, 0]
            if kind == "pos":
                bad = ~(tau > 0)
            elif kind == "nonneg":
                bad = ~(tau >= -slack * (1 + np.abs(tau)))
            else:
                bad = np.isfinite(b) & ~(tau <= b * (1 + slack))
        ok &= ~(applies & bad)
    return ok


def solve_plan(plan, compiled_of, cols, n, cols_ld=None, solver=None):
    """The value of ``plan`` at ``n`` points (``cols``: parameter name -> float64 array of length ``n``);
    ``compiled_of``: block system -> :class:`~symrmt.engine.solve.newton.CompiledSystem`
    (:func:`symrmt.engine.solve.certify.compiled_system`).

    ``cols_ld`` (optional, same keys): the parameters in long double, rounded from their exact values
    (not from the float64 ones).  The long-double correction is then made at those values, so the
    error estimate also holds the float64 rounding of the parameters themselves, which a value that
    moves fast with a parameter (a trace near ``c = 1`` at small ``gamma``) amplifies.  ``solver``
    (optional): ``solver(bs, p) -> (h, ok)`` in place of :func:`solve_system`, the checked fixed point of each
    trace's system at the rows ``p`` (:class:`symrmt.engine.solve.batch_axis.AxisSolver` on a product grid).

    Returns ``(value, error_estimate, ok, cond)``: the long-double-corrected values (float64), the
    estimated relative float64 error, the mask of points that passed every check, and the largest
    Jacobian condition number per point.  Points with ``ok`` False carry no value to stand behind.
    Raises nothing of its own: a failing point is marked in ``ok``.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> plan = m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))")
    >>> v, est, ok, cond = solve_plan(plan, compiled_system, {"gamma": np.array([1.0, 2.0])}, 2)
    >>> v.round(12).tolist(), ok.tolist(), bool(est.max() < 1e-15)   # (sqrt(g^2 + 4g) - g)/(2g)
    ([0.61803398875, 0.366025403784], [True, True], True)
    """
    if hasattr(plan, "forms") or any(nonnormal_inverses(t.matrix) for t in plan.traces if t.matrix is not None):
        # no Gram test (nor Hermitization, nor quadratic form) here: every point goes to the certified path,
        # which runs them (symrmt.engine.solve.certify.admitted); the homotopy alone would continue past the
        # support of a Brown measure
        return np.full(n, np.nan), np.full(n, np.inf), np.zeros(n, dtype=bool), np.zeros(n)
    args64, argsld, ok, cond, cols_ld = solve_traces(plan, compiled_of, cols, n, cols_ld, solver)
    return evaluate_formula(plan, args64, argsld, cols, cols_ld, n, ok, cond)


def solve_traces(plan, compiled_of, cols, n, cols_ld=None, solver=None):
    """The checked fixed point of every trace of ``plan`` (and the derivatives ``plan.needs``) at ``n`` points,
    in float64 and long double (steps 1-4 of the module docstring); ``solver`` as :func:`solve_plan`.

    Returns ``(args64, argsld, ok, cond, cols_ld)``: ``(trace, (i, j), alpha) -> (n,)`` arrays, the mask of points
    that passed, the largest condition number per point, and the long-double parameters used.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> plan = m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))")
    >>> args64, argsld, ok, cond, _ = solve_traces(plan, compiled_system, {"gamma": np.array([1.0])}, 1)
    >>> bool(ok[0]), len(args64) == len(plan.traces[0].system.unknowns)  # one array per unknown of H
    (True, True)
    """
    ok = np.ones(n, dtype=bool)
    cond = np.zeros(n)
    args64, argsld = {}, {}
    if cols_ld is None:
        cols_ld = {k: np.asarray(v, LD) for k, v in cols.items()}
    for t in plan.traces:
        bs = batch_system(compiled_of(t.system))
        p = np.column_stack([cols[q.name] for q in bs.params]) if bs.params else np.zeros((n, 0))
        h, okt = (solver or solve_system)(bs, p)
        _, J, _ = bs.evaluate(h, p, np.ones(n))
        inv = ScaledInverse(J)  # the condition number and every solve with J below
        okt &= inv.cond <= MAX_COND
        cond = np.maximum(cond, inv.cond)
        # long double: one correction of h with its residual in long double (at the long-double parameters)
        pl = np.column_stack([np.asarray(cols_ld[q.name], LD) for q in bs.params]) if bs.params \
            else np.zeros((n, 0), dtype=LD)
        hl = h.astype(LD)
        Fl = bs.residual(hl, pl, np.ones(n, dtype=LD))
        corr = inv.solve(-Fl[:, :, None])[:, :, 0]
        hl = hl + corr
        with np.errstate(all="ignore"):
            resid = _norm(corr) / (1 + _norm(h))
        okt &= np.isfinite(resid) & (resid <= RESIDUAL_TOL)
        d64, dld = {(): h}, {(): hl}
        alphas = sorted({blockfp._canon(a) for a in plan.needs[t.index] if a}, key=len)
        if alphas:  # the long-double Jacobian at the corrected point, for the derivatives' residuals only
            Jl = bs.evaluate(hl, pl, np.ones(n, dtype=LD))[1]
            for alpha in alphas:
                _derivative(bs, alpha, d64, dld, p, pl, inv, Jl)
        for alpha in d64:
            okt &= np.isfinite(d64[alpha]).all(axis=1) & np.isfinite(dld[alpha].astype(float)).all(axis=1)
        tau = bs.tau(hl, pl)
        okt &= _bounds_ok(t, tau, cols_ld, plan.params, n, LD) & _bounds_ok(t, bs.tau(h, p), cols, plan.params, n,
                                                                             float)
        ok &= okt
        for alpha in d64:
            for (i, j) in t.system.unknowns:
                pos = t.system.unknowns.index((i, j))
                args64[(t.index, (i, j), alpha)] = d64[alpha][:, pos]
                argsld[(t.index, (i, j), alpha)] = dld[alpha][:, pos]
    return args64, argsld, ok, cond, cols_ld


def evaluate_formula(plan, args64, argsld, cols, cols_ld, n, ok, cond):
    """The plan's formula in float64 and long double from the arguments of :func:`solve_traces` (plus
    ``("form", k)`` and ``("dform", k, theta)`` for quadratic forms); returns ``(value, error_estimate, ok, cond)``
    as :func:`solve_plan`.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> plan = m.plan("2*trace(inv(Z.T*Z/n + gamma*I(n)))")
    >>> cols = {"gamma": np.array([1.0])}
    >>> a64, ald, ok, cond, cld = solve_traces(plan, compiled_system, cols, 1)
    >>> v, est, ok, _ = evaluate_formula(plan, a64, ald, cols, cld, 1, ok, cond)
    >>> bool(ok[0]), round(float(v[0]), 12)
    (True, 1.2360679775)
    """
    key = sp.srepr(plan.formula) + repr([s for s, _ in plan.symbols])
    if key not in _FORMULAS:
        _FORMULAS[key] = _formula_fn(plan)
    fn = _FORMULAS[key]
    vals = []
    for args, dt, pcols in ((args64, float, cols), (argsld, LD, cols_ld)):
        a = []
        for _sym, what in plan.symbols:
            if what[0] == "param":
                a.append(np.asarray(pcols[what[1].name], dt))
            elif what[0] in ("form", "dform"):
                a.append(args[what])
            else:
                k, ij, alpha = what
                a.append(args[(k, ij, blockfp._canon(alpha))])
        with np.errstate(all="ignore"):
            v = np.asarray(fn(a)) * np.ones(n, dtype=dt)
        if np.iscomplexobj(v):  # a real value only: a complex one is not the limit the engine returns
            v = np.where(v.imag == 0, v.real, np.nan)
        vals.append(v.astype(dt))
    v64, vld = vals
    with np.errstate(all="ignore"):
        est = (np.abs(v64 - vld) / np.abs(vld)).astype(float)
        est[~np.isfinite(est)] = np.inf
        if not EXTENDED:  # nothing wider to correct with: the float64 floor times the condition
            est = np.maximum(est, 1e-16 * cond)
        # the returned value is the corrected one rounded to float64: half an ulp of error at least, plus the
        # long-double value's own error, which the comparison with float64 cannot see (its precision times
        # the condition)
        est = np.maximum(est, np.finfo(float).eps / 2)
        if EXTENDED:
            est = est + float(np.finfo(LD).eps) * cond
    value = vld.astype(float)
    ok &= np.isfinite(value) & (est <= FALLBACK_TOL)
    # a value that float64 holds only as 0, a subnormal or inf is not returned as one
    tiny, huge = np.finfo(float).tiny, np.finfo(float).max
    with np.errstate(all="ignore"):
        ok &= (vld == 0) | ((np.abs(vld) >= tiny) & (np.abs(vld) <= huge))
    return value, est, ok, cond


def _derivative(bs, alpha, d64, dld, p, pl, inv, Jl):
    """``H_alpha`` in float64 and, refined once by its long-double residual, in long double (``inv``: the
    :class:`ScaledInverse` of the float64 Jacobian, ``Jl``: the long-double one)."""
    n, m = p.shape[0], bs.m
    if not set(alpha) <= set(bs.params):
        d64[alpha] = np.zeros((n, m))
        dld[alpha] = np.zeros((n, m), dtype=LD)
        return
    fn, lower = bs.derivative(alpha)
    for b in lower:
        if b not in d64:
            _derivative(bs, b, d64, dld, p, pl, inv, Jl)
    with np.errstate(all="ignore"):
        rhs = _stack(fn(tuple(d64[()].T), *[tuple(d64[b].T) for b in lower], tuple(p.T)), n)
        x = inv.solve(-rhs[:, :, None])[:, :, 0]
        rl = _stack(fn(tuple(dld[()].T), *[tuple(dld[b].T) for b in lower], tuple(pl.T)), n, LD)
        xl = x.astype(LD)
        r = np.einsum("nij,nj->ni", Jl, xl) + rl
        xl = xl - inv.solve(r[:, :, None])[:, :, 0]
    d64[alpha], dld[alpha] = x, xl


#: the column-scaled stacked solve and condition numbers under public names
scaled_solve, scaled_cond = _solve, _cond
