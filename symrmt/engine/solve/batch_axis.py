r"""Continuation of the float64 batch along a grid axis: one s-homotopy per line instead of one per point.

On a product grid (``Model.sweep``), the fixed point of :mod:`symrmt.engine.solve.batch` moves smoothly with a
continuous parameter ``theta`` of an axis (``gamma``, ``c``, ...).  :class:`AxisSolver` solves it thus:

1. **Axis and order.**  The axis is a grid axis of a parameter of the block system with at least
   :data:`AXIS_MIN` distinct values, the same on every line (a shift parameter of ``L_0`` first: ``gamma``).  Its
   values are followed in sorted order, in ``log theta`` when they are all positive (equal steps on a
   log-spaced axis), from the largest value of a shift parameter (far from the spectrum, where the homotopy
   in ``s`` is easiest) or the smallest of another.
2. **Start slice.**  The points of the first value (one per line) are solved by the same scheme on the
   remaining axes (a corner point, then its line, ...), and where no axis is left by the two-path homotopy in
   ``s`` of :func:`symrmt.engine.solve.batch.solve_system`.  Few lines (a one-axis grid) are cut into
   segments whose starts are a coarser grid of the same axis, solved the same way (:data:`SEGMENT`,
   :data:`WIDE`): the steps along a line are sequential, the lines of one step are one batch.
3. **Steps along the axis**, every line at once: the predictor (the tangent ``dh/dtheta = -J^{-1} dR/dtheta``
   from the compiled parameter derivative at the first step, then the cubic through the two previous
   points and their tangents), a Newton corrector (ended after its second step when that step is below
   :data:`SETTLED`, the third being below the float64 rounding; else to
   :data:`~symrmt.engine.solve.batch.NEWTON_TOL`), inside the trust region of
   :func:`symrmt.engine.solve.batch.follow` (the correction within ``CORRECTION_FRACTION`` and the move within
   ``MOVE_FRACTION`` of ``1 + |h|``); a rejected step is halved (substeps between grid values), as there.
   The step has a **second path**: from the third point on, the secant predictor through the two previous
   points (a second, independent extrapolation of the same curve, no solve) lying within the trust region
   ``CHECK_TIGHTEN`` times tighter confirms it (a corrector that lands on another solution lands far from
   both predictors); a step it does not confirm, and every first step, is taken again in
   :data:`FINE_STEPS` substeps with the tighter trust region, and the two ends must agree to ``PATHS_AGREE``
   (the checking path of the homotopy, on the steps that need it).
4. **Checks against the homotopy in s.**  The last point of :data:`AXIS_CHECKS` lines spread over each batch
   of lines, and of every line that stopped, is re-solved by the homotopy in ``s`` (one batched path for the
   whole grid, at the end; where it fails, by the continuation in a shift parameter from the starts of
   :func:`~symrmt.engine.solve.batch.continued`, as :func:`~symrmt.engine.solve.batch.solve_system` does) and
   must agree to ``PATHS_AGREE``; if one disagrees, or cannot be solved, no continued point is trusted:
   every one goes back to the homotopy.  A line that stops (a step refused at
   the smallest substep: an edge of the spectrum, the end of a branch) goes back to the homotopy point by
   point from there (:func:`~symrmt.engine.solve.batch.solve_system`, which continues in a shift parameter
   where it fails).

What holds the branch.  The branch the engine returns at a point is the end of the homotopy in ``s``.  Where
that homotopy is regular for every ``theta`` between two grid values (no singular Jacobian on
``[theta_j, theta_{j+1}] x [0, 1]``), its end is a continuous solution curve in ``theta`` with a regular
Jacobian, the one curve a regular continuation from the start point follows: step 3 keeps each step on
the curve (a regular Jacobian, Newton converging from a predictor close to the curve, two predictors or two
paths that agree), and step 4 checks the regularity assumption on a sample (it is not proved between the
checked points: the same assumption the homotopy in ``s`` makes between its own steps).  Every returned point then passes the
checks of :func:`symrmt.engine.solve.batch.solve_traces` as any other (the condition number, the
long-double correction and error estimate, the sanity bounds); a point failing one goes to the certified
path, as before.
"""

from __future__ import annotations

import numpy as np

from symrmt.core import batch as core_batch
from symrmt.core.batch import norm_rows as _norm
from symrmt.core.continuation import Linear, in_trust_region
from symrmt.engine.solve.batch import (MAX_ROUNDS, NEWTON_TOL, continued, newton_ev, path, scaled_solve,
                                      solve_system)
from symrmt.engine.solve.continuation import shift_params
from symrmt.engine.solve.newton import CHECK_TIGHTEN, CORRECTION_FRACTION, MOVE_FRACTION, PATHS_AGREE

__all__ = ["AxisSolver", "AXIS_MIN", "AXIS_CHECKS", "FINE_STEPS"]

#: an axis with fewer values is not continued along (its points are solved one by one)
AXIS_MIN = 6
#: a corrector's second Newton step below this (relative) ends it: the third would be below the float64 rounding
SETTLED = 1e-10
#: an axis with few lines is cut into segments of at least SEGMENT points, continued side by side, so that
#: about WIDE lines run at once (the steps along a line are sequential; the lines of a step are one batch)
SEGMENT, WIDE = 8, 12
#: substeps of the checking path of a step the secant predictor does not confirm (and of every first step)
FINE_STEPS = 4
#: lines (spread over each batch of lines) whose end is re-solved by the homotopy in s, besides those that stopped
AXIS_CHECKS = 3


class AxisSolver:
    """The fixed points of a product grid, continued along its axes: a ``solver(bs, p) -> (h, ok)`` for
    :func:`symrmt.engine.solve.batch.solve_traces` (see the module docstring).

    ``shape``: the grid's shape; ``names``: the parameter name of each axis (``None``: not continued along); the
    rows of ``p`` are the grid's points in C order.  ``stats`` counts, over the calls: ``points``, ``continued``
    (reached along an axis), ``homotopy`` (solved by the homotopy in ``s`` one by one: the start points and the
    points sent back), ``checked`` (line ends re-solved) and ``sent_back`` (points sent back).  Returns
    :func:`~symrmt.engine.solve.batch.solve_system`'s ``(h, ok)``; raises nothing (a failing point has ``ok``
    False).

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.batch import solve_plan
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> g = np.geomspace(0.1, 10, 8)
    >>> solver = AxisSolver((8,), ["gamma"])
    >>> v, est, ok, _ = solve_plan(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))"), compiled_system, {"gamma": g}, 8,
    ...                            solver=solver)
    >>> bool(np.abs(v - (np.sqrt(g * g + 4 * g) - g) / (2 * g)).max() < 1e-15), bool(ok.all())
    (True, True)
    >>> solver.stats["continued"], solver.stats["sent_back"]
    (7, 0)
    """

    def __init__(self, shape, names):
        self.shape, self.names = tuple(int(x) for x in shape), list(names)
        self.stats = dict(points=0, continued=0, homotopy=0, checked=0, sent_back=0)

    def __call__(self, bs, p):
        n = p.shape[0]
        self.stats["points"] += n
        if int(np.prod(self.shape)) != n:
            return self._homotopy(bs, p, np.arange(n))
        names = [x.name for x in bs.params]
        ks = [names.index(a) if a in names else None for a in self.names]
        h = np.full((n, bs.m), np.nan)
        ok = np.zeros(n, dtype=bool)
        self._ends, self._moved = [], np.zeros(n, dtype=bool)  # the line ends to check, the continued points
        self._solve(bs, p, np.arange(n).reshape(self.shape), ks, h, ok)
        if self._ends:  # every line end to check against the homotopy in s: one batched path
            ends = np.unique(np.concatenate(self._ends))
            self.stats["checked"] += ends.size
            hc, okc = path(bs, p[ends])
            bad = np.flatnonzero(~okc)
            if bad.size:  # where the homotopy fails, the continuation of solve_system from its starts
                hc[bad], okc[bad] = continued(bs, p[ends], bad)
            if not (okc & (core_batch.paths_gap(h[ends], hc) <= PATHS_AGREE)).all():
                # a check that disagrees, or that the homotopy cannot make: no continued point is trusted
                rows = np.flatnonzero(self._moved)
                self.stats["sent_back"] += rows.size
                h[rows], ok[rows] = self._homotopy(bs, p, rows)
                self._moved[:] = False
        self.stats["continued"] += int(self._moved.sum())
        return h, ok

    def _homotopy(self, bs, p, rows):
        self.stats["homotopy"] += rows.size
        return solve_system(bs, p[rows])

    def _axis(self, bs, p, idx, ks):
        """The axis to continue along (or None) and its ordered values."""
        shifts = set(shift_params(bs.system))
        best = None
        for d, k in enumerate(ks):
            if k is None or idx.shape[d] < AXIS_MIN:
                continue
            lines = np.moveaxis(idx, d, -1).reshape(-1, idx.shape[d])
            v = p[lines, k]
            if not (np.isfinite(v).all() and (v == v[:1]).all() and np.unique(v[0]).size == v.shape[1]):
                continue
            key = (bs.params[k] in shifts, idx.shape[d])
            if best is None or key > best[0]:
                best = (key, d, k)
        if best is None:
            return None
        (shift, _), d, k = best
        v = p[np.moveaxis(idx, d, -1).reshape(-1, idx.shape[d])[0], k]
        order = np.argsort(v)
        return d, k, order[::-1] if shift else order

    def _solve(self, bs, p, idx, ks, h, ok):
        """Solve the rows of the index grid ``idx`` into ``h``, ``ok``."""
        axis = self._axis(bs, p, idx, ks)
        if axis is None:
            rows = idx.ravel()
            h[rows], ok[rows] = self._homotopy(bs, p, rows)
            return
        d, k, order = axis
        moved = np.moveaxis(idx, d, -1)[..., order]
        nd = order.size
        lines = moved.reshape(-1, nd)
        # few lines: the axis cut into segments, continued side by side from their own starts (equal lengths, the
        # last one overlapping the one before); the starts are a coarser grid, solved by the same scheme
        parts = max(1, min(nd // SEGMENT, -(-WIDE // lines.shape[0])))
        size = -(-nd // parts)
        starts = np.minimum(np.arange(parts) * size, nd - size)
        self._solve(bs, p, moved[..., starts], ks[:d] + ks[d + 1:] + [k if parts > 1 else None], h, ok)
        segments = np.stack([moved[..., a:a + size] for a in starts], axis=-2).reshape(-1, size)
        self._lines(bs, p, segments, k, h, ok)

    def _lines(self, bs, p, lines, k, h, ok):
        """Continue every line (rows of ``lines``, in order of the axis, first point solved) along column ``k``."""
        v = p[lines, k]
        logs = bool((v > 0).all())
        u = np.log(v) if logs else v.astype(float)  # (lines, points): each line its own values
        nl, nd = lines.shape

        def ev(rows, cur, hh, t):
            """``(R, J, dR/du)`` at ``u = t`` for the lines ``cur[rows]`` (their other parameters from the row ``j``)."""
            pp = p[cur[rows]].copy()
            pp[:, k] = np.exp(t) if logs else t
            F, J, dR = bs.evaluate_axis(hh, pp, k)  # R, J and dR/dtheta in one compiled call
            return F, J, dR * (pp[:, k:k + 1] if logs else 1.0)

        alive = ok[lines[:, 0]].copy()
        start = lines[alive, 0]
        F, J, dR = ev(np.arange(start.size), start, h[start], u[alive, 0])
        dh = np.full((nl, bs.m), np.nan)
        dh[alive] = scaled_solve(J, -dR[:, :, None])[:, :, 0]
        prev = np.full((nl, bs.m), np.nan)
        prev_dh = np.full((nl, bs.m), np.nan)
        reached = np.zeros(nl, dtype=int)  # the last index each line reached
        rough = np.zeros(nl, dtype=bool)  # a step the secant predictor did not confirm

        def step(act, j, fine, slope):
            """Lines ``act`` from point ``j`` to ``j + 1`` with the predictor ``h + slope (u - u_j)``:
            ``(h, dh/du, ok)``."""
            nxt = lines[act, j + 1]
            t0, t1 = u[act, j], u[act, j + 1]

            def correct(rows, pred, tt):
                f = (lambda r, hh, ts: ev(rows[r], nxt, hh, ts))
                hn, dhn, st, okn = newton_ev(f, pred, tt, NEWTON_TOL, maxsteps=2)
                # two steps, the second below SETTLED: converging quadratically, the next one is below the float64
                # rounding (the long-double correction of solve_traces measures it at every point)
                okn |= (st <= SETTLED) & np.isfinite(hn).all(axis=1) & np.isfinite(dhn).all(axis=1)
                more = np.flatnonzero(~okn & np.isfinite(st))
                if more.size:
                    hm, dhm, stm, okm = newton_ev(lambda r, hh, ts: f(more[r], hh, ts), hn[more], tt[more], NEWTON_TOL,
                                                  maxsteps=6)
                    hn[more], dhn[more], st[more], okn[more] = hm, dhm, stm, okm
                return hn, dhn, st, okn

            sched = Linear(t0, t1, first=FINE_STEPS, cap=1 / FINE_STEPS) if fine else Linear(t0, t1, first=1)
            hn, dhn, _, okn = core_batch.follow(correct, h[lines[act, j]], slope, t0, t1, sched,
                                                correction=CORRECTION_FRACTION, move=MOVE_FRACTION,
                                                tighten=CHECK_TIGHTEN if fine else 1, max_rounds=MAX_ROUNDS)
            return hn, dhn, okn

        for j in range(nd - 1):
            act = np.flatnonzero(alive)
            if not act.size:
                break
            h0 = h[lines[act, j]]
            slope = dh[act]
            if j >= 1:  # the cubic through h_{j-1}, h_j with their slopes (Hermite), at u_{j+1}
                width, ahead = (u[act, j] - u[act, j - 1])[:, None], (u[act, j + 1] - u[act, j])[:, None]
                tau = 1 + ahead / width
                cubic = ((2 * tau ** 3 - 3 * tau ** 2 + 1) * prev[act] + (tau ** 3 - 2 * tau ** 2 + tau) * width
                         * prev_dh[act] + (3 * tau ** 2 - 2 * tau ** 3) * h0 + (tau ** 3 - tau ** 2) * width * slope)
                slope = (cubic - h0) / ahead
            hn, dhn, okn = step(act, j, False, slope)
            # the second path: the secant predictor through the two previous points within the checking
            # trust region, or else the step again in FINE_STEPS substeps, to the same point
            smooth = np.zeros(act.size, dtype=bool)
            if j >= 1:
                sec = h0 + (h0 - prev[act]) * (ahead / width)
                with np.errstate(all="ignore"):
                    smooth = in_trust_region(_norm(hn - sec), None, 1 + _norm(h0), CORRECTION_FRACTION,
                                             tighten=CHECK_TIGHTEN)
            redo = np.flatnonzero(okn & ~smooth)
            if redo.size:
                hf, _, okf = step(act[redo], j, True, dh[act[redo]])
                okn[redo] &= okf & (core_batch.paths_gap(hn[redo], hf) <= PATHS_AGREE)
                rough[act[redo]] |= j >= 1
            good, bad = act[okn], act[~okn]
            h[lines[good, j + 1]], ok[lines[good, j + 1]] = hn[okn], True
            prev[good], prev_dh[good], dh[good], reached[good] = h0[okn], dh[good], dhn[okn], j + 1
            alive[bad] = False
        back = ~ok[lines[:, 0]]  # no start: every point of the line by the homotopy
        moved = np.flatnonzero(~back & (reached > 0))
        if moved.size:  # line ends to check: a sample, every line the secant did not confirm, every line that stopped
            checked = np.zeros(nl, dtype=bool)
            checked[moved[np.linspace(0, moved.size - 1, min(AXIS_CHECKS, moved.size)).round().astype(int)]] = True
            checked[moved[rough[moved] | (reached[moved] < nd - 1)]] = True
            rows = np.flatnonzero(checked)
            self._ends.append(lines[rows, reached[rows]])
        at = np.arange(nd)[None, :]
        self._moved[lines[(at >= 1) & (at <= reached[:, None]) & ~back[:, None]]] = True
        # a line without a start is solved by the homotopy from its start; one that stopped, from where it stopped
        rows = lines[at >= np.where(back, 0, reached + 1)[:, None]]
        if rows.size:
            self.stats["sent_back"] += rows.size
            self._moved[rows] = False
            h[rows], ok[rows] = self._homotopy(bs, p, rows)
