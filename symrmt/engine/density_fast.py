r"""The float64 density path (``Model.density(..., fast=True)``, ``symrmt density --fast``): every grid
point in one complex128 batch.

The same three stages as the certified path (:mod:`symrmt.engine.density_solver`), run on all the
points of the grid at once on stacked NumPy arrays (the system printed for NumPy by the one compile
step, :class:`symrmt.engine.batch.BatchSystem`, and the core's batched Newton and continuation,
:mod:`symrmt.core.batch`):

1. **start** at ``z = x + iY`` (``Y`` as the certified path's :data:`~symrmt.engine.resolvent_solver.START_HEIGHT`):
   the homotopy in the strength ``s`` from ``H = L_0^{-1}`` to ``s = 1``;
2. **descend** in ``log Im z`` to ``eta = ETA_FLOOR (1 + |x|)`` at fixed ``x``, predictor
   ``dh/dt = -J^{-1} dR/dz dz/dt``, Newton corrector inside the certified path's trust region
   (:data:`~symrmt.engine.resolvent_solver.MOVE`, :data:`~symrmt.engine.resolvent_solver.CORRECT`), a step
   that leaves the Stieltjes branch (``Im tau <= 0`` while ``Im z > 0``) refused;
3. **finish** by Newton at ``z = x`` itself from the predictor ``h - i eta dh/dz``, within
   :data:`~symrmt.engine.resolvent_solver.FINISH` of it (the limit ``eta -> 0`` as the certified path takes it).

Every point is then checked: Newton converged (relative step below :data:`NEWTON_TOL`), the residual at
``z = x`` below :data:`RESIDUAL_TOL` ``(1 + |h|)``, the condition number of the column-scaled Jacobian,
times ``(1 + |tau|) / Im tau`` inside the support (the growth of the relative error of ``Im tau`` near an
edge), at most :data:`MAX_COND` (so that the density carries about ``16 - log10`` of that digits: at
least 12), and ``Im tau >= 0`` (the branch of the limit from ``Im z > 0``).  A point that fails is handed back to the
caller, which recomputes it on the certified path.

Examples
--------
>>> from symrmt.engine import Model
>>> m = Model()
>>> _ = m.dim("p", "c*n"), m.gaussian("Z", "p", "n")
>>> d = m.density("Z.T*Z/n", x=[0.5, 1.0, 2.0], at={"c": "1/2"}, fast=True, edges=False, atoms=False)
>>> d.status, round(float(d.density[1]), 12)  # sqrt(7)/(4 pi) = 0.2105421996738...
(['float', 'float', 'float'], 0.210542199674)
"""

from __future__ import annotations

import math

import numpy as np

from symrmt.core import batch as core_batch
from symrmt.core.continuation import Linear
from symrmt.engine.resolvent_solver import CORRECT, ETA_FLOOR, FINISH, MOVE, START_HEIGHT

__all__ = ["solve_points", "NEWTON_TOL", "RESIDUAL_TOL", "MAX_COND", "IN_SUPPORT"]

#: relative Newton step at which a point counts as converged
NEWTON_TOL = 1e-13
#: the residual at ``z = x`` must be below this times ``1 + |h|``
RESIDUAL_TOL = 1e-13
#: a point whose column-scaled Jacobian at ``z = x`` has a larger condition number (times ``(1 + |tau|) / Im tau``
#: inside the support) goes to the certified path (a point near an edge, where the root is nearly double)
MAX_COND = 1e3
#: most rounds of a batched path (the certified path's MAX_STEPS): a row still short of its end goes to the
#: certified path
MAX_ROUNDS = 2000
#: ``Im tau > IN_SUPPORT (1 + |tau|)``: inside the support (the certified path's test)
IN_SUPPORT = 1e-9


def _solve(J, b):
    """Stacked complex ``J x = b`` (``b (N,m,k)``; for ``m <= 2`` by the explicit inverse (Cramer's rule,
    forward stable for 2 x 2), else LU with partial pivoting, which column scaling does not change); a
    singular row gives ``nan`` in that row only, as does a non-finite one."""
    m = J.shape[1]
    if m == 1:
        with np.errstate(all="ignore"):
            out = b / J
        out[~np.isfinite(out)] = np.nan
        return out
    if m == 2:
        with np.errstate(all="ignore"):
            a, c, d, e = J[:, 0, 0, None], J[:, 0, 1, None], J[:, 1, 0, None], J[:, 1, 1, None]
            det = a * e - c * d
            b0, b1 = b[:, 0], b[:, 1]
            out = np.stack([(e * b0 - c * b1) / det, (a * b1 - d * b0) / det], axis=1)
        out[~np.isfinite(out)] = np.nan
        return out
    with np.errstate(all="ignore"):
        try:
            return np.linalg.solve(J, b)
        except np.linalg.LinAlgError:
            out = np.full(b.shape, np.nan, dtype=complex)
            for i in range(J.shape[0]):
                try:
                    out[i] = np.linalg.solve(J[i], b[i])
                except np.linalg.LinAlgError:
                    pass
            return out


def _cond(A):
    """The 2-norm condition numbers of the stacked square ``A`` (``m <= 2``: from the Frobenius norm and the
    determinant, ``s1 s2 = |det|``, ``s1^2 + s2^2 = |A|_F^2``; else by the SVD); ``inf`` where singular."""
    m = A.shape[1]
    with np.errstate(all="ignore"):
        if m == 1:
            out = np.where(np.abs(A[:, 0, 0]) > 0, 1.0, np.inf)
        elif m == 2:
            f2 = np.einsum("nij,nij->n", A.real, A.real) + np.einsum("nij,nij->n", A.imag, A.imag)
            det = np.abs(A[:, 0, 0] * A[:, 1, 1] - A[:, 0, 1] * A[:, 1, 0])
            big2 = (f2 + np.sqrt(np.maximum((f2 - 2 * det) * (f2 + 2 * det), 0.0))) / 2  # s1^2
            small2 = det * det / big2  # s2^2 = det^2 / s1^2 (no cancellation)
            out = np.sqrt(big2 / small2)
        else:
            return np.linalg.cond(A)
    out[~np.isfinite(out)] = np.inf
    return out


class _Batch:
    """The compiled residual, Jacobian and ``dR/dz`` of one resolvent system over a batch of ``z``."""

    def __init__(self, solver):
        from symrmt.engine.batch import batch_system

        self.solver = solver
        self.bs = batch_system(solver.c)
        self.m = self.bs.m
        self.kz = solver.kz
        self.dz_fn, _ = self.bs.derivative((solver.zsym,))
        self.fixed = np.array([0.0 if p.name == solver.zsym.name else float(solver.values[p.name])
                               for p in solver.params], dtype=complex)
        self.readout = solver.readout_f

    def _args(self, h, z):
        # the parameters as a tuple of columns: the fixed ones as scalars, z as the array
        p = [complex(v) for v in self.fixed]
        p[self.kz] = z
        return tuple(h.T), p

    def evaluate(self, h, z, s=None, dz=True):
        """``(R, J, dR/ds, dR/dz)`` at ``h (N,m)``, ``z (N,)``, strength ``s`` (default 1); ``dz=False``:
        ``dR/dz`` is ``None``."""
        n, m = h.shape
        hc, p = self._args(h, z)
        with np.errstate(all="ignore"):
            v = core_batch.stack(self.bs.fjs(hc, tuple(p) + (np.ones(n) if s is None else s,)), n, h.dtype)
            Rz = core_batch.stack(self.dz_fn(hc, tuple(p)), n, h.dtype) if dz else None
        return v[:, :m], v[:, m:m + m * m].reshape(n, m, m), v[:, m + m * m:], Rz

    def tau(self, h):
        return sum(c * h[:, i] for i, c in self.readout)


def _newton(linear, h, tol=NEWTON_TOL, maxsteps=12):
    return core_batch.newton(linear, h, tol, maxsteps, floor=1e-8)


class _Steps(Linear):
    """The certified path's step schedule (:class:`~symrmt.core.continuation.Linear`: halved on a refused
    step), growing after an accepted step by ``min(0.8 / sqrt(used), 0.8 / moved)`` (between 1 and 2)
    instead of 2, where ``used`` is the fraction of the correction's trust region the step's Newton
    correction took (the predictor's error grows like the step squared) and ``moved`` the fraction of the
    move's (it grows like the step): a step that used most of either is not doubled into a refusal.  The
    trust region itself is unchanged."""

    def __init__(self, t0, t1, h, **kw):
        super().__init__(t0, t1, **kw)
        self.used = np.zeros(np.shape(t1))
        self.moved = np.zeros(np.shape(t1))
        self.last = h.copy()  # each row's last accepted point
        self.pending = h.copy()  # each row's last corrected point, accepted or not

    def record(self, rows, pred, new):
        """The fractions of the two trust regions the corrected points ``new`` of ``rows`` take."""
        with np.errstate(all="ignore"):
            size = 1 + core_batch.norm_rows(self.last[rows])
            self.used[rows] = core_batch.norm_rows(new - pred) / (CORRECT * size)
            self.moved[rows] = core_batch.norm_rows(new - self.last[rows]) / (MOVE * size)
        self.pending[rows] = new

    def grow(self, rows=None):
        self.last[rows] = self.pending[rows]
        with np.errstate(all="ignore"):
            factor = np.minimum(0.8 / np.sqrt(np.maximum(self.used[rows], 1e-12)),
                                0.8 / np.maximum(self.moved[rows], 1e-12))
        self._set(self.size[rows] * np.clip(factor, 1.0, 2.0), rows)


def _follow(bt, h, dh, t0, t1, ev, branch=None, first=1 / 8, max_rounds=None):
    """The core's batched continuation from ``t0`` to ``t1`` with the certified path's trust region;
    ``ev(rows, h, t, deriv) -> (R, J, dR/dt)`` (``dR/dt`` only with ``deriv``, else ``None``); ``branch(rows, h,
    t) -> ok`` refuses a step.  The predictor's slope ``dh/dt = -J^{-1} dR/dt`` is taken once at each corrected
    point, after its Newton iterations (which solve for the step alone)."""
    def correct(rows, pred, nxt):
        def linear(r, x):
            R, J, _ = ev(rows[r], x, nxt[r], False)
            return _solve(J, -R[:, :, None])[:, :, 0], 0.0

        hn, _, st, ok = _newton(linear, pred, 1e-11, 8)
        _, J, Rt = ev(rows, hn, nxt, True)
        dhn = _solve(J, -Rt[:, :, None])[:, :, 0]
        ok &= np.isfinite(dhn).all(axis=1)
        if branch is not None:
            with np.errstate(all="ignore"):
                ok &= branch(rows, hn, nxt)
        sched.record(rows, pred, hn)
        return hn, dhn, st, ok

    n = h.shape[0]
    t0 = np.full(n, float(t0))
    t1 = np.full(n, float(t1))
    sched = _Steps(t0, t1, h, cap=None, step=(t1 - t0) * first)
    h, dh, _, ok = core_batch.follow(correct, h, dh, t0, t1, sched, correction=CORRECT, move=MOVE,
                                     max_rounds=max_rounds or MAX_ROUNDS)
    return h, dh, ok


def solve_points(solver, xs, scale):
    """The fixed point at ``z = x`` for every ``x`` of ``xs`` (floats), in one complex128 batch.

    Returns ``(h, tau, good, rooted)``: the roots ``(N, m)``, ``tau`` at them, the mask of the points that
    passed every check of the module docstring (the others must go to the certified path), and the mask of
    those that passed every check but the conditioning (their root is the certified path's float64 root,
    the start of its certification: only its digits are too few).
    """
    bt = solver.__dict__.get("_float_batch")
    if bt is None:  # compiled once per solver (the solver is kept with the model's prepared densities)
        bt = solver.__dict__["_float_batch"] = _Batch(solver)
    x = np.asarray(xs, dtype=float)
    n, m = x.size, bt.m
    Y = START_HEIGHT * (1 + scale)
    top = x + 1j * Y
    sign = solver.branch_sign

    # 1. start: the homotopy in s at z = x + iY
    def ev_s(rows, hh, ss, deriv=True):
        R, J, Rs, _ = bt.evaluate(hh, top[rows], ss, dz=False)
        return R, J, Rs

    def lin0(rows, hh):
        R, J, Rs = ev_s(rows, hh, np.zeros(rows.size))
        y = _solve(J, -np.stack([R, Rs], axis=2))
        return y[:, :, 0], y[:, :, 1]

    h, dh, _, ok = _newton(lin0, np.zeros((n, m), dtype=complex), maxsteps=3)  # linear at s = 0
    h, _, ok1 = _follow(bt, h, dh, 0.0, 1.0, ev_s)
    ok &= ok1

    # 2. the descent in log Im z to eta = ETA_FLOOR * START_HEIGHT * (1 + |x|)
    eta = ETA_FLOOR * START_HEIGHT * (1 + np.abs(x))
    lr = np.log(eta / Y)

    def z_of(rows, t):
        return x[rows] + 1j * Y * np.exp(t * lr[rows])

    def ev_t(rows, hh, t, deriv=True):
        z = z_of(rows, t)
        R, J, _, Rz = bt.evaluate(hh, z, dz=deriv)
        return R, J, (Rz * (1j * (z.imag * lr[rows]))[:, None] if deriv else None)

    def branch(rows, hh, t):
        return np.ones(rows.size, dtype=bool) if sign is None else sign * bt.tau(hh).imag > 0

    _, J, _, Rz = bt.evaluate(h, top)
    dh = _solve(J, -(Rz * (1j * Y * lr)[:, None])[:, :, None])[:, :, 0]
    h, _, ok2 = _follow(bt, h, dh, 0.0, 1.0, ev_t, branch)
    ok &= ok2

    # 3. the finish at z = x: predictor h - i eta dh/dz, Newton, near the predictor
    low = x + 1j * eta
    _, J, _, Rz = bt.evaluate(h, low)
    dhdz = _solve(J, -Rz[:, :, None])[:, :, 0]
    pred = h - 1j * eta[:, None] * dhdz
    real = x.astype(complex)

    def lin1(rows, hh):
        R, J, _, _ = bt.evaluate(hh, real[rows], dz=False)
        y = _solve(J, -R[:, :, None])
        return y[:, :, 0], np.zeros_like(hh)

    root, _, step, ok3 = _newton(lin1, pred, NEWTON_TOL, 30)
    with np.errstate(all="ignore"):
        size = 1 + core_batch.norm_rows(h)
        ok &= ok3 & (core_batch.norm_rows(root - pred) <= FINISH * size)
        R, J, _, _ = bt.evaluate(root, real, dz=False)
        ok &= core_batch.norm_rows(R) <= RESIDUAL_TOL * (1 + core_batch.norm_rows(root))
        tau = bt.tau(root)
        if sign is not None:
            ok &= sign * tau.imag >= -1e-12 * (1 + np.abs(tau))
        ok &= np.isfinite(tau)
        cond = np.full(n, np.inf)
        fin = np.flatnonzero(ok & np.isfinite(J).all(axis=(1, 2)))
        if fin.size:
            sc = np.linalg.norm(J[fin], axis=1)
            sc[~(sc > 0)] = 1.0
            cond[fin] = _cond(J[fin] / sc[:, None, :])
        # the density is Im tau / pi: near an edge Im tau is small against tau, and its relative error grows
        # by (1 + |tau|) / Im tau over the root's
        inside = tau.imag > IN_SUPPORT * (1 + np.abs(tau))
        amp = np.where(inside, (1 + np.abs(tau)) / np.abs(tau.imag), 1.0)
        rooted = ok.copy()
        ok &= cond * amp <= MAX_COND
    return root, tau, ok, rooted


def density_values(tau):
    """``rho = Im tau / pi`` per point (0 outside the support, where ``Im tau <= IN_SUPPORT (1 + |tau|)``)
    and the kind ``"in"``/``"out"``."""
    inside = tau.imag > IN_SUPPORT * (1 + np.abs(tau))
    rho = np.where(inside, np.maximum(tau.imag, 0.0) / math.pi, 0.0)
    return rho, inside
