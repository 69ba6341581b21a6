r"""The float64 density path (``Model.density(..., fast=True)``, ``symrmt density --fast``): every grid
point in one complex128 batch.

The same three stages as the certified path (:mod:`symrmt.engine.density.solver`), run on all the
points of the grid at once on stacked NumPy arrays (the system printed for NumPy by the one compile
step, :class:`symrmt.engine.solve.batch.BatchSystem`; the core's batched Newton, :mod:`symrmt.core.batch`, for the
start and the finish, and its continuation's rules, run here by :func:`_follow` with fewer NumPy calls a
round):

1. **start** at ``z = x + iY`` (``Y`` as the certified path's :data:`~symrmt.engine.density.resolvent.START_HEIGHT`):
   the homotopy in the strength ``s`` from ``H = L_0^{-1}`` to ``s = 1``;
2. **descend** in ``log Im z`` to ``eta = ETA_FLOOR (1 + |x|)`` at fixed ``x``, predictor
   ``dh/dt = -J^{-1} dR/dz dz/dt`` (with a second-order term, and a second predictor on ``z h``, smooth near an
   atom at 0: :func:`_follow`), Newton corrector inside the certified path's trust region
   (:data:`~symrmt.engine.density.resolvent.MOVE`, :data:`~symrmt.engine.density.resolvent.CORRECT`; a move is
   also admitted net of the factor ``1/z``), a step
   that leaves the Stieltjes branch (``Im tau <= 0`` while ``Im z > 0``) refused; the first step is 1/64
   of the descent (at the top the trust region admits about that; a larger first step is refused and halved,
   a whole round of the batch lost for each halving);
3. **finish** by Newton at ``z = x`` itself from the predictor ``h - i eta dh/dz``, within
   :data:`~symrmt.engine.density.resolvent.FINISH` of it (the limit ``eta -> 0`` as the certified path takes it).

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
from symrmt.core.newton import stagnated
from symrmt.engine.density.resolvent import CORRECT, ETA_FLOOR, FINISH, MOVE, START_HEIGHT
from symrmt.engine.solve.batch import batch_system

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
        self.solver = solver
        self.bs = batch_system(solver.c)
        self.m = self.bs.m
        self.kz = solver.kz
        self.dz_fn, _ = self.bs.derivative((solver.zsym,))
        self.fixed = np.array([0.0 if p.name == solver.zsym.name else float(solver.values[p.name])
                               for p in solver.params], dtype=complex)
        self.readout = solver.readout_f

        self._p = [complex(v) for v in self.fixed]

    def _args(self, h, z):
        # the parameters as a tuple of columns: the fixed ones as scalars, z as the array
        p = list(self._p)
        p[self.kz] = z
        return tuple(h.T), p

    def evaluate(self, h, z, s=None, dz=True):
        """``(R, J, dR/ds, dR/dz)`` at ``h (N,m)``, ``z (N,)``, strength ``s`` (default 1); ``dz=False``:
        ``dR/dz`` is ``None``."""
        n, m = h.shape
        hc, p = self._args(h, z)
        with np.errstate(all="ignore"):
            v = core_batch.stack(self.bs.fjs(hc, tuple(p) + (1.0 if s is None else s,)), n, h.dtype)
            Rz = core_batch.stack(self.dz_fn(hc, tuple(p)), n, h.dtype) if dz else None
        return v[:, :m], v[:, m:m + m * m].reshape(n, m, m), v[:, m + m * m:], Rz

    def entries(self, h, z, s=1.0, dz=True):
        """The entries of ``(R, J, dR/ds, dR/dz)`` at ``h (N,m)``, ``z (N,)``, strength ``s``, as lists of
        columns (arrays of length ``N``, or scalars where an entry is constant; ``J`` row by row), without
        stacking them; ``dz=False``: ``dR/dz`` is ``None``."""
        m = self.m
        hc, p = self._args(h, z)
        with np.errstate(all="ignore"):
            v = self.bs.fjs(hc, tuple(p) + (s,))
            rz = self.dz_fn(hc, tuple(p)) if dz else None
        return v[:m], v[m:m + m * m], v[m + m * m:], rz

    def tau(self, h):
        return sum(c * h[:, i] for i, c in self.readout)


def _step(J, R, T, n):
    """``(-J^{-1} R, -J^{-1} T)`` as ``(n, m)`` arrays from the columns of :meth:`_Batch.entries` (``m <= 2``:
    by the explicit inverse, as :func:`_solve`; else stacked and solved by :func:`_solve`); ``nan`` in a
    singular or non-finite row."""
    m = len(R)
    with np.errstate(all="ignore"):
        if m == 1:
            inv = -1.0 / np.broadcast_to(J[0], (n,))
            out = np.stack([R[0] * inv, T[0] * inv], axis=1)[:, None, :]
        elif m == 2:
            a, c, d, e = J
            det = -1.0 / np.broadcast_to(a * e - c * d, (n,))
            i00, i01, i10, i11 = e * det, -c * det, -d * det, a * det
            out = np.empty((n, 2, 2), dtype=complex)
            out[:, 0, 0] = i00 * R[0] + i01 * R[1]
            out[:, 1, 0] = i10 * R[0] + i11 * R[1]
            out[:, 0, 1] = i00 * T[0] + i01 * T[1]
            out[:, 1, 1] = i10 * T[0] + i11 * T[1]
        else:
            Js = core_batch.stack(J, n, complex).reshape(n, m, m)
            b = np.stack([core_batch.stack(R, n, complex), core_batch.stack(T, n, complex)], axis=2)
            out = _solve(Js, -b)
    out[~np.isfinite(out)] = np.nan
    return out[:, :, 0], out[:, :, 1]


def _newton(linear, h, tol=NEWTON_TOL, maxsteps=12):
    return core_batch.newton(linear, h, tol, maxsteps, floor=1e-8)


def _norm(a):
    """The Euclidean norm of each row of a complex ``(N, m)`` array."""
    return np.sqrt(np.einsum("ij,ij->i", a.real, a.real) + np.einsum("ij,ij->i", a.imag, a.imag))


def _correct(step, rows, x, t, tol=1e-7, maxsteps=8, floor=1e-8, blowup=1e6):
    """The batched Newton corrector of :func:`symrmt.core.batch.newton` (the same stopping rules: the
    relative step below ``tol``, or stagnant below ``floor``; a step above ``blowup`` stops a row
    unconverged) on the rows ``rows`` at ``t``, each iteration on the rows not yet stopped only; returns
    ``(x, dx/dt, converged)``, the slope ``-J^{-1} dR/dt`` from the factorization of the last iteration
    (``step(rows, x, t) -> (-J^{-1} R, -J^{-1} dR/dt)``).  ``tol`` is ``1e-7`` on the path: where Newton
    converges quadratically a relative step below it leaves an error of about its square, and the path's
    end is solved again at ``z = x`` to :data:`NEWTON_TOL` by the finish."""
    x = x.copy()
    n = x.shape[0]
    slope = np.full_like(x, np.nan)
    conv = np.zeros(n, dtype=bool)
    prev = np.full(n, np.inf)
    sub = np.arange(n)
    for _ in range(maxsteps):
        dx, sl = step(rows[sub], x[sub], t[sub])
        with np.errstate(all="ignore"):
            xn = x[sub] + dx
            st = _norm(dx) / (1 + _norm(xn))
        st[~np.isfinite(st)] = np.inf
        x[sub], slope[sub] = xn, sl
        fin = (st <= tol) | stagnated(st, prev[sub], floor)
        conv[sub[fin]] = True
        prev[sub] = st
        sub = sub[~fin & (st < blowup)]
        if not sub.size:
            break
    return x, slope, conv & np.isfinite(x).all(axis=1) & np.isfinite(slope).all(axis=1)


def _follow(h, dh, t0, t1, step, branch=None, first=1 / 8, max_rounds=None, path=None):
    """The batched continuation of :func:`symrmt.core.batch.follow` from ``t0`` to ``t1 > t0`` with the
    certified path's trust region (:data:`~symrmt.engine.density.resolvent.CORRECT` near the predictor,
    :data:`~symrmt.engine.density.resolvent.MOVE` near the previous point, both of ``1 + |h|``).

    ``step(rows, h, t) -> (-J^{-1} R, -J^{-1} dR/dt)`` (the Newton step and the slope); ``branch(rows, h, t) ->
    ok`` refuses a step.  Each row has its own step: first ``(t1 - t0) first``, halved on a refused
    step (stalled below ``(t1 - t0) / 2**40``: the row fails), and after an accepted one grown by
    ``min(0.8 / sqrt(used), 0.8 / moved)`` clipped to ``[1, 2]``, where ``used`` and ``moved`` are the
    fractions of the two trust regions the step took (a linear predictor's error grows like the step squared,
    the move like the step): a step that used most of either is not doubled into a refusal.  The predictor
    is ``h + dh dt + h'' dt^2 / 2`` with the slope ``dh/dt = -J^{-1} dR/dt`` of the corrector's last iteration
    and ``h''`` the difference of the row's last two slopes over their ``t`` (0 at the row's first step).  A row
    still short of ``t1`` after ``max_rounds`` rounds fails.  Returns ``(h, dh, ok)``.

    ``path(rows, t) -> (z, dz/dt)``, where ``t`` moves ``z``: a second predictor is taken on ``u = z h``
    (``u + du dt``, divided by the new ``z``), which is smooth where ``h`` grows like ``w / z`` (near an atom at
    0, ``u -> -w``); the corrector starts from the predictor that was nearer the root in the row's last round,
    the predictor's error is the distance to the nearer of the two, and a move counts as inside the trust
    region when either ``h - h_0`` or ``(z h - z_0 h_0) / z_0`` (the move net of the factor ``z_0 / z`` that
    such an ``h`` takes) is within ``MOVE (1 + |h_0|)``."""
    n = h.shape[0]
    h, dh = h.copy(), dh.copy()
    t0, t1 = float(t0), float(t1)
    t = np.full(n, t0)
    size = np.full(n, (t1 - t0) * first)
    stall = (t1 - t0) / 2**40
    ok = np.isfinite(h).all(axis=1) & np.isfinite(dh).all(axis=1)
    act = np.flatnonzero(ok)
    tp, dhp = np.full(n, np.nan), np.zeros_like(dh)  # the previous point's t and slope
    onu = np.zeros(n, dtype=bool)  # the corrector starts from the predictor on u = z h (closer last round)
    for _ in range(max_rounds or MAX_ROUNDS):
        if not act.size:
            break
        ta, ha = t[act], h[act]
        nxt = np.minimum(ta + size[act], t1)
        ds = (nxt - ta)[:, None]
        with np.errstate(all="ignore"):
            curv = (dh[act] - dhp[act]) / (ta - tp[act])[:, None]  # h'' from the last two slopes
        curv[~np.isfinite(curv)] = 0
        pred = ha + dh[act] * ds + curv * (ds * ds / 2)
        if path is not None:
            za, dza = path(act, ta)
            zn = path(act, nxt)[0]
            with np.errstate(all="ignore"):
                upred = (za[:, None] * ha + (za[:, None] * dh[act] + dza[:, None] * ha) * (nxt - ta)[:, None]) \
                    / zn[:, None]
            start = np.where(onu[act][:, None], upred, pred)
        else:
            start = pred
        hn, dhn, good = _correct(step, act, start, nxt)
        with np.errstate(all="ignore"):
            scale = 1 + _norm(ha)
            used = _norm(hn - pred) / (CORRECT * scale)
            moved = _norm(hn - ha) / (MOVE * scale)
            if path is not None:
                uused = _norm(hn - upred) / (CORRECT * scale)
                onu[act] = uused < used
                used = np.minimum(used, uused)
                moved = np.minimum(moved, _norm(hn * (zn / za)[:, None] - ha) / (MOVE * scale))
            good &= (used <= 1) & (moved <= 1)  # the core's trust region
            if branch is not None:
                good &= branch(act, hn, nxt)
            grow = np.clip(np.minimum(0.8 / np.sqrt(np.maximum(used, 1e-12)), 0.8 / np.maximum(moved, 1e-12)),
                           1.0, 2.0)
        acc, rej = act[good], act[~good]
        tp[acc], dhp[acc] = t[acc], dh[acc]
        t[acc], h[acc], dh[acc] = nxt[good], hn[good], dhn[good]
        size[acc] *= grow[good]
        size[rej] /= 2
        ok[rej[size[rej] < stall]] = False
        act = act[ok[act] & (t[act] < t1)]
    ok[act] = False  # out of rounds
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
    def step_s(rows, hh, ss):
        R, J, Rs, _ = bt.entries(hh, top[rows], ss, dz=False)
        return _step(J, R, Rs, rows.size)

    def lin0(rows, hh):
        return step_s(rows, hh, np.zeros(rows.size))

    h, dh, _, ok = _newton(lin0, np.zeros((n, m), dtype=complex), maxsteps=3)  # linear at s = 0
    h, _, ok1 = _follow(h, dh, 0.0, 1.0, step_s)
    ok &= ok1

    # 2. the descent in log Im z to eta = ETA_FLOOR * START_HEIGHT * (1 + |x|)
    eta = ETA_FLOOR * START_HEIGHT * (1 + np.abs(x))
    lr = np.log(eta / Y)

    def z_of(rows, t):
        return x[rows] + 1j * Y * np.exp(t * lr[rows])

    def step_t(rows, hh, t):
        z = z_of(rows, t)
        R, J, _, Rz = bt.entries(hh, z)
        f = 1j * (z.imag * lr[rows])  # dz/dt
        return _step(J, R, [r * f for r in Rz], rows.size)

    def branch(rows, hh, t):
        return np.ones(rows.size, dtype=bool) if sign is None else sign * bt.tau(hh).imag > 0

    _, J, _, Rz = bt.evaluate(h, top)
    dh = _solve(J, -(Rz * (1j * Y * lr)[:, None])[:, :, None])[:, :, 0]
    def path(rows, t):
        z = z_of(rows, t)
        return z, 1j * (z.imag * lr[rows])

    h, _, ok2 = _follow(h, dh, 0.0, 1.0, step_t, branch, first=1 / 64, path=path)
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
