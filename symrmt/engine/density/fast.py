r"""The float64 density path (``Model.density(..., fast=True)``, ``symrmt density --fast``): every grid
point in one complex128 batch.

The same three stages as the certified path (:mod:`symrmt.engine.density.solver`), run on all the
points of the grid at once on NumPy arrays, the unknowns by columns (one point per column; the system printed
for NumPy by the one compile step, :class:`symrmt.engine.solve.batch.BatchSystem`), with the rules of the core's
batched Newton and continuation (:mod:`symrmt.core.batch`) run here by :func:`_newton` and :func:`_follow` in
few NumPy calls a round (a Newton step of a system of at most :data:`STEP_MAX_M` unknowns is one compiled call:
residual, Jacobian, the derivative in ``s`` or ``z`` and the solve,
:func:`~symrmt.engine.density.newton_step.step_sources`; a larger system's entries are solved by a sparse
elimination in a static pivot order, :class:`_Sparse`):

1. **start** at ``z = x + iY`` (``Y`` as the certified path's :data:`~symrmt.engine.density.resolvent.START_HEIGHT`):
   the homotopy in the strength ``s`` from ``H = L_0^{-1}`` to ``s = 1``, first step 1/4;
2. **descend** in ``log Im z`` to ``eta = ETA_FLOOR (1 + |x|)`` at fixed ``x``, predictor
   ``dh/dz = -J^{-1} dR/dz`` in ``z`` (with a second-order term, and a second predictor on ``z h``, smooth near an
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
least 12), and ``Im tau >= 0`` (the branch of the limit from ``Im z > 0``).  A point that passed every check but the
conditioning (next to an edge) is refined (:func:`_refine`): two corrections with the residual in mpmath at
:data:`REFINE_DPS` digits, kept when they contract and bound the density's error to :data:`REFINE_DIGITS`
digits.  A point that fails is handed back to the caller, which recomputes it on the certified path.

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

import mpmath
import numpy as np

from symrmt.codegen.compile import compile_recipe
from symrmt.core.batch import solve as stacked_solve
from symrmt.core.newton import stagnated
from symrmt.engine.density.newton_step import pivot_order, step_digest, step_sources
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
#: a point that passed every check but the conditioning, with a condition number (times the edge factor) up to
#: this (the certified path's own limit for its float64 Jacobian), is refined (:func:`_refine`) instead of certified
REFINE_MAX_COND = 1e8
#: the working digits of that refinement's residual
REFINE_DPS = 40
#: the refinement's second correction must be below this fraction of its first (it contracts), and its error
#: bound, mapped to ``tau``, below ``REFINE_DIGITS`` digits of the density (of ``1 + |tau|`` outside the support)
REFINE_CONTRACTION = 1e-3
REFINE_DIGITS = 14


#: a static pivot of the sparse elimination (``m > 2``, :class:`_Sparse`) is taken where it is at least this
#: fraction of every entry below it in its column (threshold pivoting: one elimination step grows the entries by at
#: most ``1 + 1 / PIVOT_THRESHOLD``); a point where it is not is solved by LAPACK with partial pivoting instead
PIVOT_THRESHOLD = 0.1
#: a point's next step aims at this fraction of either trust region (the step after an accepted one is scaled by
#: ``TARGET / sqrt(used)`` or ``TARGET / moved``, the smaller, clipped to ``[GROW_MIN, GROW_MAX]``): a step that used
#: more than ``TARGET`` of the region is shortened before it is refused, which would cost the point a whole round;
#: one that used little of both grows up to fourfold (every step is still checked against both regions)
TARGET = 0.8
GROW_MIN = 0.5
GROW_MAX = 4.0
#: a system of at most this many unknowns has its Newton step compiled as one function
#: (:func:`~symrmt.engine.density.newton_step.step_sources`); a larger one is solved by :class:`_Sparse` on the
#: compiled entries
STEP_MAX_M = 4


def _stacked(J, m, n, rows=None):
    """The Jacobian's ``m * m`` entries (arrays over ``n`` points, or constants) as an ``(n, m, m)`` array (of the
    points ``rows`` only, when given).

    >>> import numpy as np
    >>> _stacked([np.array([1j, 2.0]), 0.0, -1.0, np.array([3.0, 4.0])], 2, 2, np.array([1])).tolist()
    [[[(2+0j), 0j], [(-1+0j), (4+0j)]]]
    """
    k = n if rows is None else rows.size
    out = np.zeros((k, m * m), dtype=complex)
    for q, v in enumerate(J):
        if isinstance(v, np.ndarray) and v.ndim:
            out[:, q] = v if rows is None else v[rows]
        elif v != 0:  # a constant (a zero one is there already)
            out[:, q] = v
    return out.reshape(k, m, m)


class _Sparse:
    """Gaussian elimination on the columns of a batch (each entry of ``J`` an array over the points, or a
    constant), in a static pivot order chosen once from the sparsity pattern of the system's Jacobian: the
    diagonal first (the Jacobian of a pencil's fixed point is ``-1`` plus the strength ``s`` times the rest, diagonal
    at ``s = 0``), by Markowitz's rule (the fewest entries created), an exact constant pivot first among equals.  Only the
    entries that are not structurally zero are touched, so the Jacobian of a pencil (mostly the constants 0
    and -1) costs a few dozen vector operations instead of one LAPACK call per point.  Each pivot is checked
    at each point against the entries below it (:data:`PIVOT_THRESHOLD`); the points where one is too small,
    or where the result is not finite, are solved again by LAPACK with partial pivoting.

    >>> import numpy as np
    >>> J = [np.array([2.0 + 0j]), -1.0, 0.0, np.array([1.0 + 0j]), 3.0, 0.0, 0.0, 0.0, -1.0]
    >>> b = np.array([[[1.0 + 0j]], [[2.0 + 0j]], [[3.0 + 0j]]])  # (m, right-hand sides, points)
    >>> np.round(_Sparse(J, 3).solve(J, b, 1)[:, 0, 0].real, 12).tolist()  # 2x - y = 1, x + 3y = 2, -z = 3
    [0.714285714286, 0.428571428571, -3.0]
    """

    def __init__(self, J, m):
        # the pattern from one evaluation at random arguments: an entry that is 0 there is 0 everywhere
        const = [[np.ndim(J[i * m + j]) == 0 for j in range(m)] for i in range(m)]
        nz = [[bool(np.any(np.asarray(J[i * m + j]) != 0)) for j in range(m)] for i in range(m)]
        self.m = m
        self.entries = [(i, j) for i in range(m) for j in range(m) if nz[i][j]]
        self.order = pivot_order(nz, const)

    def solve(self, J, b, n):
        """``x`` with ``J x = b`` at every point: ``J`` the ``m * m`` entries (arrays over ``n`` points, or
        constants), ``b (m, k, n)``; returns ``(m, k, n)``, ``nan`` at a point where ``J`` is singular."""
        m = self.m
        a = {(i, j): J[i * m + j] for i, j in self.entries}
        rhs = [b[i] for i in range(m)]
        lams, invs = [], []
        for r, c, below, right in self.order:
            inv = 1.0 / a[r, c]
            invs.append(inv)
            for i in below:
                lam = a[i, c] * inv
                lams.append(lam)
                for j in right:
                    a[i, j] = a[i, j] - lam * a[r, j] if (i, j) in a else -lam * a[r, j]
                rhs[i] = rhs[i] - lam * rhs[r]
        out = np.empty(b.shape, dtype=complex)
        for (r, c, _, right), inv in zip(reversed(self.order), reversed(invs)):
            acc = rhs[r]
            for j in right:
                acc = acc - a[r, j] * out[j]
            out[c] = acc * inv
        bad = ~np.isfinite(out).all(axis=(0, 1))
        varying = [v for v in lams if isinstance(v, np.ndarray) and v.ndim]
        if len(varying) < len(lams) and any(abs(v) > 1 / PIVOT_THRESHOLD for v in lams if not (isinstance(v, np.ndarray) and v.ndim)):
            bad[:] = True  # a constant multiplier too large: at every point
        lams = varying
        if lams:  # the threshold test of every multiplier at once
            bad |= np.abs(np.stack(lams)).max(axis=0) > 1 / PIVOT_THRESHOLD
        redo = np.flatnonzero(bad)
        if redo.size:
            out[:, :, redo] = stacked_solve(_stacked(J, m, n, redo), b[:, :, redo].transpose(2, 0, 1)).transpose(1, 2, 0)
        return out


def _cond(A):
    """The 2-norm condition numbers of the stacked square ``A`` (``m <= 2``: from the Frobenius norm and the
    determinant, ``s1 s2 = |det|``, ``s1^2 + s2^2 = |A|_F^2``; else by the SVD); ``inf`` where singular."""
    m = A.shape[1]
    if m == 1:
        out = np.where(np.abs(A[:, 0, 0]) > 0, 1.0, np.inf)
    elif m == 2:
        f2 = np.einsum("nij,nij->n", A.real, A.real) + np.einsum("nij,nij->n", A.imag, A.imag)
        det = np.abs(A[:, 0, 0] * A[:, 1, 1] - A[:, 0, 1] * A[:, 1, 0])
        big2 = (f2 + np.sqrt(np.maximum((f2 - 2 * det) * (f2 + 2 * det), 0.0))) / 2  # s1^2
        small2 = det * det / big2  # s2^2 = det^2 / s1^2 (no cancellation)
        out = np.sqrt(big2 / small2)
    else:
        out = np.full(A.shape[0], np.inf)
        fin = np.flatnonzero(np.isfinite(A).all(axis=(1, 2)))
        if fin.size:
            out[fin] = np.linalg.cond(A[fin])
    out[~np.isfinite(out)] = np.inf
    return out


def _cond_bound(bt, J, sc, fin, n):
    """An upper bound of the 2-norm condition number of the column-scaled Jacobian at the points ``fin``
    (``J`` the entries over all ``n`` points, ``sc (len(fin), m)`` the column norms): the Frobenius condition
    number ``|A|_F |A^{-1}|_F = sqrt(m) |A^{-1}|_F`` of ``A = J diag(1/sc)`` (unit columns), ``A^{-1} = diag(sc)
    J^{-1}`` with ``J^{-1}`` from the sparse elimination (:class:`_Sparse`) on the identity; ``nan`` where ``J`` is
    singular.  ``cond_2 <= cond_F``: a point whose bound passes a check passes it."""
    m = bt.m
    eye = np.zeros((m, m, n), dtype=complex)
    for i in range(m):
        eye[i, i] = 1.0
    inv = bt.sparse.solve(J, eye, n)[:, :, fin]  # (row i of J^{-1}, column k, point)
    rows = (inv.real * inv.real + inv.imag * inv.imag).sum(axis=1)  # (m, points)
    return np.sqrt(m * (rows * (sc.T * sc.T)).sum(axis=0))


def _norms(a):
    """:func:`_norm` of each ``(m, N)`` slice of a ``(q, m, N)`` array, as ``(q, N)`` (the same arithmetic)."""
    if a.shape[1] == 1:
        return np.abs(a[:, 0])
    if a.shape[1] == 2:
        return np.hypot(np.abs(a[:, 0]), np.abs(a[:, 1]))
    return np.sqrt((a * a.conj()).real.sum(axis=1))  # re^2 + im^2, each rounded as below


def _norm(a):
    """The Euclidean norm of each column of a complex ``(m, N)`` array (a point per column)."""
    if a.shape[0] == 1:
        return np.abs(a[0])
    if a.shape[0] == 2:
        return np.hypot(np.abs(a[0]), np.abs(a[1]))
    return np.sqrt((a * a.conj()).real.sum(axis=0))  # re * re - im * (-im): re^2 + im^2, one pass


class _Batch:
    """The compiled residual, Jacobian, ``dR/ds`` and ``dR/dz`` of one resolvent system over a batch of ``z``,
    the unknowns by columns: ``H (m, N)``, one point per column."""

    def __init__(self, solver):
        self.solver = solver
        self.bs = batch_system(solver.c)
        self.m = self.bs.m
        self.kz = solver.kz
        self.dz_fn, _ = self.bs.derivative((solver.zsym,))
        self.readout = solver.readout_f
        self._p = [0j if p.name == solver.zsym.name else complex(float(solver.values[p.name]))
                   for p in solver.params]
        self.sparse = self.sparse0 = None
        if self.m > 2:  # the patterns of J at a random point, for s random and for s = 0 (the start)
            rng = np.random.default_rng(0)
            k, m = 3, self.m
            H, z = rng.random((m, k)) + 1j * rng.random((m, k)), rng.random(k) + 1j
            self.sparse = _Sparse(self.entries(H, z, rng.random(k), dz=False)[1], m)
            self.sparse0 = _Sparse(self.entries(H, z, np.zeros(k), dz=False)[1], m)
        self.steps = {}
        if self.m <= STEP_MAX_M:
            name = f"{self.bs.name}_step{step_digest()}_{PIVOT_THRESHOLD:g}"
            system, zsym = self.bs.system, solver.zsym
            for wrt in ("s", "z"):
                self.steps[wrt] = compile_recipe(f"{name}_{wrt}", lambda w=wrt: step_sources(system, zsym, w,
                                                                                             PIVOT_THRESHOLD), "numpy")

    def entries(self, H, z, s=1.0, dz=True):
        """The entries of ``(R, J, dR/ds, dR/dz)`` at ``H (m,N)``, ``z (N,)``, strength ``s``, as lists of
        columns (arrays of length ``N``, or constants; ``J`` row by row); ``dz=False``: ``dR/dz`` is ``None``."""
        m = self.m
        p = list(self._p)
        p[self.kz] = z
        hc, p = tuple(H), tuple(p)
        v = self.bs.fjs(hc, p + (s,))
        return v[:m], v[m:m + m * m], v[m + m * m:], (self.dz_fn(hc, p) if dz else None)

    def neg_solve(self, J, rhs, n, start=False):
        """``-J^{-1} b`` for each ``b`` of ``rhs`` (lists of ``m`` entries), as an ``(m, len(rhs), n)`` array
        (``m <= 2``: by the explicit inverse, forward stable for 2 x 2; else :class:`_Sparse`); not finite at a
        point where ``J`` is singular or not finite; ``start``: ``J`` at the strength ``s = 0``, whose pattern has
        more zeros)."""
        m = self.m
        out = np.empty((m, len(rhs), n), dtype=complex)
        if m == 1:
            w = -1.0 / J[0]
            for k, r in enumerate(rhs):
                out[0, k] = r[0] * w
            return out
        if m == 2:
            a, c, d, e = J
            w = -1.0 / (a * e - c * d)
            for k, (r0, r1) in enumerate(rhs):
                out[0, k] = (e * r0 - c * r1) * w
                out[1, k] = (a * r1 - d * r0) * w
            return out
        b = out
        for i in range(m):
            for k, r in enumerate(rhs):
                b[i, k] = r[i]
        b *= -1
        return (self.sparse0 if start else self.sparse).solve(J, b, n)

    def step(self, H, z, s, wrt, start=False):
        """``(-J^{-1} R, -J^{-1} T)`` at ``H (m, N)``, ``z (N,)``, strength ``s`` (a float or ``(N,)``) as a
        ``(2, m, N)`` array: ``T = dR/ds`` (``wrt = "s"``) or ``dR/dz`` (``"z"``, taken at ``s = 1``: the only
        strength it is called at), by the compiled step (:func:`~symrmt.engine.density.newton_step.step_sources`)
        when there is one, else by :meth:`neg_solve` on the entries (``start``: its pattern at ``s = 0``).  A point
        where a multiplier of the elimination exceeds ``1 / PIVOT_THRESHOLD`` or is not finite (a zero pivot above
        it) is solved again by LAPACK with partial pivoting (``m > 2``); the step is not finite where ``J`` is
        singular (a zero last pivot of a column with no entry below: the Schur complement, so ``J``, is
        singular)."""
        m, n = self.m, H.shape[1]
        fn = self.steps.get(wrt)
        if fn is None:
            R, J, Rs, Rz = self.entries(H, z, s, dz=wrt == "z")
            return self.neg_solve(J, (R, Rs if wrt == "s" else Rz), n, start).transpose(1, 0, 2)
        p = list(self._p)
        p[self.kz] = z
        v = fn(tuple(H), tuple(p) + ((s,) if wrt == "s" else ()))
        out = np.empty((2, m, n), dtype=complex)
        for i in range(m):
            out[0, i] = v[i]
            out[1, i] = v[m + i]
        if len(v) > 2 * m:
            # a multiplier too large, or not finite (a zero pivot above it); a zero last pivot leaves the step
            # not finite, as LAPACK would (the matrix is then singular)
            good = np.abs(v[2 * m]) <= 1 / PIVOT_THRESHOLD
            for lam in v[2 * m + 1:]:
                good = good & (np.abs(lam) <= 1 / PIVOT_THRESHOLD)
            if np.ndim(good) == 0:  # every multiplier a constant of the parameters
                good = np.full(n, bool(good))
            if not good.all():
                redo = np.flatnonzero(~good)
                zr = z[redo] if np.ndim(z) else z
                sr = s[redo] if np.ndim(s) else s
                R, J, Rs, Rz = self.entries(H[:, redo], zr, sr, dz=wrt == "z")
                T = Rs if wrt == "s" else Rz
                b = np.empty((m, 2, redo.size), dtype=complex)
                for i in range(m):
                    b[i, 0] = R[i]
                    b[i, 1] = T[i]
                out[:, :, redo] = stacked_solve(_stacked(J, m, redo.size), -b.transpose(2, 0, 1)).transpose(2, 1, 0)
        return out

    def tau(self, H):
        if not self.readout:
            return np.zeros(H.shape[1], dtype=complex)
        return sum(c * H[i] for i, c in self.readout)


def _newton(lin, H, tol, maxsteps, floor=1e-8, blowup=1e6):
    """Newton's method on every column of ``H`` with the core's rules (:func:`symrmt.core.batch.newton`: a point
    stops at a relative step below ``tol`` or stagnant below ``floor``, unconverged at a step above ``blowup``);
    ``lin(cols, H_cols) -> (dx, extra)`` (``extra``: the slope of the same factorization, or ``None``).  Returns
    ``(H, extra, ok)``."""
    m, n = H.shape
    H = H.copy()
    extra = np.zeros_like(H)
    prev = np.full(n, np.inf)
    done = np.zeros(n, dtype=bool)
    act = np.arange(n)
    for _ in range(maxsteps):
        if not act.size:
            break
        dx, ex = lin(act, H[:, act])
        xn = H[:, act] + dx
        st = _norm(dx) / (1 + _norm(xn))
        st[~np.isfinite(st)] = np.inf
        H[:, act] = xn
        if ex is not None:
            extra[:, act] = ex
        fin = (st <= tol) | stagnated(st, prev[act], floor)
        done[act[fin]] = True
        prev[act] = st
        act = act[~fin & (st < blowup)]
    return H, extra, done & np.isfinite(H).all(axis=0) & np.isfinite(extra).all(axis=0)


def _correct(f, H, tol=1e-7, maxsteps=8, floor=1e-8, blowup=1e6):
    """The Newton corrector of one round of :func:`_follow` on all its points at once: ``f(H) -> (-J^{-1} R,
    -J^{-1} dR/dt)``.  A point has converged when its step relative to ``1 + |h|`` at the predictor is below
    ``tol``, or when the step that would follow is, estimated from the observed contraction ``theta = step /
    previous step`` as ``step theta^2`` (where Newton converges quadratically, ``|dx_{k+1}| <= (omega / 2)
    |dx_k|^2`` with ``omega`` estimated from the last two steps: the affine-covariant estimate), or by the core's
    stagnation rule below ``floor``; a step above ``blowup`` stops it unconverged.  The iterations stop when every
    point has stopped; a point that converged earlier takes the remaining Newton steps too (each only refines
    it).  ``tol`` is ``1e-7`` on the path: the path's end is solved again at ``z = x`` to :data:`NEWTON_TOL` by
    the finish.  Returns ``(H, dH/dt, converged)``, the slope from the factorization of the last iteration."""
    k = H.shape[1]
    conv = np.zeros(k, dtype=bool)
    stop = np.zeros(k, dtype=bool)
    size = 1 + _norm(H)  # the point's size at the predictor (the corrector moves it by about CORRECT of it)
    prev = None
    for _ in range(maxsteps):
        dx, sl = f(H)
        H = H + dx
        st = _norm(dx) / size  # nan where not finite: never converged, stopped, its h not finite (failed)
        if prev is None:
            c = st <= tol
        else:
            th = np.minimum(st / prev, 1.0)
            c = (st * th * th <= tol) | stagnated(st, prev, floor)
        conv |= c
        stop |= c | ~(st < blowup)
        prev = st
        if stop.all():
            break
    return H, sl, conv & np.isfinite(H + sl).all(axis=0)  # a sum that overflows fails too (|h| ~ 1e308)


def _follow(h, dh, t1, prepare, branch=None, first=1 / 8, max_rounds=None):
    """The batched continuation of :func:`symrmt.core.batch.follow` from ``t = 0`` to ``t1 > 0`` with the
    certified path's trust region (:data:`~symrmt.engine.density.resolvent.CORRECT` near the predictor,
    :data:`~symrmt.engine.density.resolvent.MOVE` near the previous point, both of ``1 + |h|``), the points
    by columns (``h (m, N)``).

    ``prepare(cols, t, t') -> (f, path)``: ``f(H) -> (-J^{-1} R, -J^{-1} dR/dt)`` at ``t'`` on the points ``cols``
    (the Newton step and the slope), and ``path``, ``None`` or ``(z, dz/dt, z')``, where ``t`` moves ``z`` (``z``
    at ``t`` and ``t'``); ``branch(H) -> ok`` refuses a step.  Each point has its own step: first ``t1 first``,
    halved on a refused step (stalled below ``t1 / 2**40``: the point fails), and after an accepted one scaled by
    ``min(TARGET / sqrt(used), TARGET / moved)`` clipped to ``[GROW_MIN, GROW_MAX]`` (:data:`TARGET`,
    :data:`GROW_MIN`, :data:`GROW_MAX`), where ``used`` and ``moved`` are the fractions of the two trust regions the
    step took (a linear predictor's error grows like the step squared, the move like the step): a step that used
    most of either is not lengthened into a refusal, and one that used more than ``TARGET`` of either is
    shortened.  The predictor is ``h + dh dt + h'' dt^2 / 2`` with the slope ``dh/dt = -J^{-1} dR/dt`` of the
    corrector's last iteration and ``h''`` the difference of the point's last two slopes over their ``t`` (0 at its
    first step).  A point still short of ``t1`` after ``max_rounds`` rounds fails; a point's state is kept compacted
    to the points still on the path.  Returns ``(h, ok)``.

    With a ``path``, the predictor is taken in ``z`` instead of ``t``: ``h + h' dz + h'' dz^2 / 2`` with ``dz = z' -
    z``, ``h' = (dh/dt) / (dz/dt)`` and ``h''`` the difference of the point's last two ``h'`` over their ``z`` (in the
    descent ``z = x + i Y e^{t log(eta/Y)}`` moves exponentially in ``t``, while ``h`` is analytic in ``z``: once
    ``Im z`` is small against the distance to the spectrum's singular points ``h`` is nearly linear in ``z``, not in
    ``t``), and a second predictor on ``u = z h``, in ``z`` the same way (divided by the new ``z``), which is
    smooth where ``h`` grows like ``w / z`` (near an atom at 0, ``u -> -w``); the corrector starts from the
    predictor that was nearer the root in the point's last round, the predictor's error is the distance to the
    nearer of the two, and a move counts as inside the trust region when either ``h - h_0`` or ``(z h - z_0 h_0)
    / z_0`` (the move net of the factor ``z_0 / z`` that such an ``h`` takes) is within ``MOVE (1 + |h_0|)``."""
    m, n = h.shape
    h = h.copy()
    t1 = float(t1)
    stall = t1 / 2**40
    ok = np.isfinite(h).all(axis=0) & np.isfinite(dh).all(axis=0)
    # the state of the points still on the path, compacted to them (a point leaves when it reaches t1 or stalls)
    act = np.flatnonzero(ok)
    T, H, D = np.zeros(act.size), h[:, act], dh[:, act]
    TP, DP = np.full(act.size, np.nan), np.zeros_like(D)  # the previous point's t and slope
    size = np.full(act.size, t1 * first)
    onu = np.zeros(act.size, dtype=bool)  # the corrector starts from the predictor on u = z h (closer last round)
    ZP, SP, USP = np.full(act.size, np.nan + 0j), np.zeros_like(D), np.zeros_like(D)
    fresh = True
    for _ in range(max_rounds or MAX_ROUNDS):
        if not act.size:
            break
        nxt = np.minimum(T + size, t1)
        f, path = prepare(act, T, nxt)
        if path is not None:
            za, dza, zn = path
            dz = zn - za
            S = D / dza  # dh/dz
            US = H + za * S  # d(z h)/dz
            w = (dz * dz / 2) / (za - ZP)
            if fresh:  # a point without an accepted step yet (ZP nan): no second-order term
                w[~np.isfinite(w)] = 0.0
            pred = H + S * dz + (S - SP) * w
            upred = (za * H + US * dz + (US - USP) * w) / zn
            hn, dhn, good = _correct(f, np.where(onu, upred, pred))
            # the distances to either predictor, the moves (of h, and net of z0 / z) and |h|, in one call
            nrm = _norms(np.stack((hn - pred, hn - upred, hn - H, hn * (zn / za) - H, H)))
            r = nrm[:4] / (CORRECT * (1 + nrm[4]))  # in units of CORRECT (1 + |h|)
            onu = r[1] < r[0]
            used = np.fmin(r[0], r[1])
            moved = np.fmin(r[2], r[3])  # as used: at most MOVE / CORRECT
        else:
            ds = nxt - T
            w = ds / (2 * (T - TP))  # h'' ds / 2 = (dh - dh_prev) w
            w[np.isnan(w)] = 0.0
            pred = H + (D + (D - DP) * w) * ds
            hn, dhn, good = _correct(f, pred)
            nrm = _norms(np.stack((hn - pred, hn - H, H)))
            cs = CORRECT * (1 + nrm[2])
            used, moved = nrm[0] / cs, nrm[1] / cs
        moved *= CORRECT / MOVE
        good &= (used <= 1) & (moved <= 1)  # the core's trust region
        if branch is not None:
            good &= branch(hn)
        # min(TARGET / sqrt(used), TARGET / moved); both 0: inf, clipped
        grow = np.minimum(np.maximum(TARGET / np.maximum(np.sqrt(used), moved), GROW_MIN), GROW_MAX)
        if good.all():  # the usual round: every step accepted
            if path is not None:
                ZP, SP, USP = za, S, US
                fresh = False
            else:
                TP, DP = T, D
            T, H, D = nxt, hn, dhn
            size *= grow
            stalled = None
            leave = T >= t1
        else:
            if path is not None:
                ZP, SP, USP = np.where(good, za, ZP), np.where(good, S, SP), np.where(good, US, USP)
                fresh = fresh and bool(np.isnan(ZP).any())
            else:
                TP, DP = np.where(good, T, TP), np.where(good, D, DP)
            T, H, D = np.where(good, nxt, T), np.where(good, hn, H), np.where(good, dhn, D)
            size *= np.where(good, grow, 0.5)
            stalled = ~good & (size < stall)
            leave = (T >= t1) | stalled
        if leave.any():
            h[:, act[leave]] = H[:, leave]
            if stalled is not None:
                ok[act[stalled]] = False
            keep = ~leave
            act, T, H, D, TP, DP, size, onu = (act[keep], T[keep], H[:, keep], D[:, keep], TP[keep], DP[:, keep],
                                                size[keep], onu[keep])
            ZP, SP, USP = ZP[keep], SP[:, keep], USP[:, keep]
    h[:, act] = H
    ok[act] = False  # out of rounds
    return h, ok


def solve_points(solver, xs, scale):
    """The fixed point at ``z = x`` for every ``x`` of ``xs`` (floats), in one complex128 batch; ``solver``: the
    :class:`~symrmt.engine.density.resolvent.ResolventSolver`, ``scale``: the grid's largest ``|x|`` (it sets
    the start height).

    Returns ``(h, tau, good, rooted)``: the roots ``(N, m)``, ``tau`` at them, the mask of the points that
    passed every check of the module docstring, the conditioning's or else the refinement's (:func:`_refine`,
    whose root and ``tau`` are returned; the others must go to the certified path), and the mask of those that
    passed every check but the conditioning (their root is the certified path's float64 root, the start of its
    certification: only its digits are too few).

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.density.resolvent import ResolventSolver
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> plan = m.plan("trace(inv(G/sqrt(n) - z*I(n)))")   # the semicircle: (-x + i sqrt(4 - x^2))/2
    >>> h, tau, good, rooted = solve_points(ResolventSolver(plan, plan.params[0], {}), [0.0, 1.0, 3.0], 3.0)
    >>> tau.round(12).tolist(), good.tolist()
    ([1j, (-0.5+0.866025403784j), (-0.38196601125-0j)], [True, True, True])
    """
    x = np.asarray(xs, dtype=float)
    with np.errstate(all="ignore"):
        bt = solver.__dict__.get("_float_batch")
        if bt is None:  # compiled once per solver (the solver is kept with the model's prepared densities)
            bt = solver.__dict__["_float_batch"] = _Batch(solver)
        root, tau, ok, rooted, J, cond = _solve_points(bt, solver.branch_sign, x, scale)
    for i in np.flatnonzero(rooted & ~ok & (cond <= REFINE_MAX_COND)).tolist():
        out = _refine(solver, float(x[i]), root[:, i], J[i])
        if out is not None:
            root[:, i], tau[i], ok[i] = out[0], out[1], True
    return root.T, tau, ok, rooted


def _solve_points(bt, sign, x, scale):
    n, m = x.size, bt.m
    Y = START_HEIGHT * (1 + scale)
    top = x + 1j * Y

    # 1. start: the homotopy in s at z = x + iY
    def prep_s(cols, t, tn, start=False):
        zc = top[cols]

        def f(H):
            out = bt.step(H, zc, tn, "s", start)
            return out[0], out[1]
        return f, None

    def lin0(cols, H):  # linear at s = 0
        return prep_s(cols, None, np.zeros(cols.size), True)[0](H)

    h, dh, ok = _newton(lin0, np.zeros((m, n), dtype=complex), NEWTON_TOL, 3)
    h, ok1 = _follow(h, dh, 1.0, prep_s, first=1 / 4)  # the trust region admits about that at the first step
    ok &= ok1

    # 2. the descent in log Im z to eta = ETA_FLOOR * START_HEIGHT * (1 + |x|)
    eta = ETA_FLOOR * START_HEIGHT * (1 + np.abs(x))
    lr = np.log(eta / Y)

    held = [None, None, None]  # the columns of the last round and their x, log(eta / Y) (the same until a point leaves)

    def prep_t(cols, t, tn):
        if held[0] is not cols:
            held[:] = cols, x[cols], lr[cols]
        xc, lc = held[1], held[2]
        yn, ya = Y * np.exp(tn * lc), Y * np.exp(t * lc)
        zn = xc + 1j * yn
        fz = 1j * (yn * lc)  # dz/dt at tn

        def f(H):
            out = bt.step(H, zn, 1.0, "z")
            return out[0], out[1] * fz
        return f, (xc + 1j * ya, 1j * (ya * lc), zn)

    def branch(H):
        return np.ones(H.shape[1], dtype=bool) if sign is None else sign * bt.tau(H).imag > 0

    dh = bt.step(h, top, 1.0, "z")[1] * (1j * Y * lr)
    h, ok2 = _follow(h, dh, 1.0, prep_t, branch, first=1 / 64)
    ok &= ok2

    # 3. the finish at z = x: predictor h - i eta dh/dz, Newton, near the predictor
    pred = h - 1j * eta * bt.step(h, x + 1j * eta, 1.0, "z")[1]  # dh/dz = -J^{-1} dR/dz
    real = x.astype(complex)

    def lin1(cols, H):
        return bt.step(H, real[cols], 1.0, "z")[0], None

    root, _, ok3 = _newton(lin1, pred, NEWTON_TOL, 30)
    ok &= ok3 & (_norm(root - pred) <= FINISH * (1 + _norm(h)))
    R, J, _, _ = bt.entries(root, real, dz=False)
    Rs = np.empty((m, n), dtype=complex)
    for i in range(m):
        Rs[i] = R[i]
    ok &= _norm(Rs) <= RESIDUAL_TOL * (1 + _norm(root))
    tau = bt.tau(root)
    if sign is not None:
        ok &= sign * tau.imag >= -1e-12 * (1 + np.abs(tau))
    ok &= np.isfinite(tau)
    # the density is Im tau / pi: near an edge Im tau is small against tau, and its relative error grows
    # by (1 + |tau|) / Im tau over the root's
    inside = tau.imag > IN_SUPPORT * (1 + np.abs(tau))
    amp = np.where(inside, (1 + np.abs(tau)) / np.abs(tau.imag), 1.0)
    cond = np.full(n, np.inf)
    Js = _stacked(J, m, n)
    fin = np.flatnonzero(ok & np.isfinite(Js).all(axis=(1, 2)))
    if fin.size:
        sc = np.linalg.norm(Js[fin], axis=1)
        sc[~(sc > 0)] = 1.0
        if m > 2:  # the SVD only where the Frobenius bound does not already pass the check
            bound = _cond_bound(bt, J, sc, fin, n)
            sure = bound * amp[fin] <= MAX_COND
            cond[fin[sure]] = bound[sure]
            fin, sc = fin[~sure], sc[~sure]
        if fin.size:
            cond[fin] = _cond(Js[fin] / sc[:, None, :])
    rooted = ok.copy()
    ok &= cond * amp <= MAX_COND
    return root, tau, ok, rooted, Js, cond * amp


def _refine(solver, x, h, J):
    """The root ``h`` at the real point ``x`` refined by two steps ``h <- h - J^{-1} R(h)``, the residual in
    mpmath at :data:`REFINE_DPS` digits (the certified path's compiled residual, exact constants), ``J`` the
    float64 Jacobian at ``h``: the error of the float64 root is the first correction, and the error left after the
    second is at most about the second correction when the two contract (:data:`REFINE_CONTRACTION`; an observed
    contraction, the sign of a start well inside Newton-Kantorovich's ball, not a proof of it).  Returns ``(h, tau)`` in complex128, ``tau`` rounded
    from its refined value, or ``None`` (the point goes to the certified path) when the corrections do not
    contract, when that bound, mapped to ``tau`` by the readout, exceeds :data:`REFINE_DIGITS` digits of the
    density (of ``1 + |tau|`` outside the support), or when ``tau`` leaves the Stieltjes branch."""
    if not solver.readout_f:
        return None
    try:
        inv = np.linalg.inv(J)
    except np.linalg.LinAlgError:
        return None
    with mpmath.workdps(REFINE_DPS):
        zm = mpmath.mpf(x)  # the float x, exactly
        hm = [mpmath.mpc(v.real, v.imag) for v in h.tolist()]  # exactly
        steps = []
        for _ in range(2):
            d = inv @ np.array([complex(v) for v in solver.residual_mp(hm, zm)], dtype=complex)
            if not np.isfinite(d).all():
                return None
            hm = [a - b for a, b in zip(hm, d.tolist())]  # a Python complex enters mpmath exactly
            steps.append(float(np.linalg.norm(d)))
        tau = solver.tau_mp(hm)
        t = complex(tau)
        size = 1 + max(abs(complex(a)) for a in hm)
        if not steps[1] <= max(REFINE_CONTRACTION * steps[0], 1e-25 * size):
            return None
        err = steps[1] * sum(abs(c) for _, c in solver.readout_f)  # |d tau| <= |readout|_1 |d h|
        inside = t.imag > IN_SUPPORT * (1 + abs(t))
        ref = abs(t.imag) if inside else 1 + abs(t)
        if not err <= 10.0 ** -REFINE_DIGITS * ref:
            return None
        if solver.branch_sign is not None and solver.branch_sign * t.imag < -1e-12 * (1 + abs(t)):
            return None
        return np.array([complex(a) for a in hm]), t


def density_values(tau):
    """``rho = Im tau / pi`` per point (0 outside the support, where ``Im tau <= IN_SUPPORT (1 + |tau|)``)
    and the mask of the points inside (``tau``: a complex array).

    >>> rho, inside = density_values(np.array([1j, -0.5 + 0j]))   # the semicircle at x = 0, and outside
    >>> rho.round(12).tolist(), inside.tolist()   # 1/pi
    ([0.318309886184, 0.0], [True, False])
    """
    inside = tau.imag > IN_SUPPORT * (1 + np.abs(tau))
    rho = np.where(inside, np.maximum(tau.imag, 0.0) / math.pi, 0.0)
    return rho, inside
