"""The batched (vectorised float64) forms of the one Newton driver and the one continuation.

The float64 fast paths solve one system at many points at once, on stacked NumPy arrays: each row is a
point, and each row runs the same algorithm as :func:`symrmt.core.newton.newton` and :func:`symrmt.core.continuation.follow`,
with the same rules, elementwise:

* :func:`newton` -- ``x <- x + dx`` per row; a row stops at ``step <= tol`` or by the core's
  stagnation rule (:func:`symrmt.core.newton.stagnated`); a row whose step blows up (above
  ``blowup``) stops unconverged; a row is ``ok`` when it stopped converged with finite values;
* :func:`follow` -- predictor ``h + dh (t' - t)``, the caller's corrector, the core's trust region
  (:func:`symrmt.core.continuation.in_trust_region`: near the predictor and near the previous
  point, ``tighten`` times tighter on the checking pass), and the step schedules of
  :mod:`symrmt.core.continuation` themselves (:class:`~symrmt.core.continuation.Linear`,
  :class:`~symrmt.core.continuation.Geometric`, which work elementwise on arrays), every row
  with its own step; a row that stalls or runs out of rounds fails (no error: the caller sends it
  to the certified mpmath path);
* :func:`paths_gap` -- the relative gap of the two passes' end points, per row;
* :func:`solve` -- stacked dense solves, a singular or non-finite system giving ``nan`` in its row only;
* :func:`lstsq` -- stacked least squares ``J x = b`` by modified Gram--Schmidt on ``[J | b]`` (backward
  stable for least squares), written as whole-column NumPy operations so that a batch of many small
  systems costs a few dozen vector operations instead of one LAPACK call per system.

Nothing here raises on a bad row: a row's failure is a ``False`` in the ``ok`` mask it returns.
"""

from __future__ import annotations

import numpy as np

from symrmt.core.continuation import CORRECTION_FRACTION, MOVE_FRACTION, in_trust_region
from symrmt.core.newton import stagnated

#: NumPy's long double: the type of the one extended-precision correction step of the float64 batches
LD = np.longdouble
#: True where ``numpy.longdouble`` carries more digits than float64
EXTENDED = bool(np.finfo(LD).eps < 1e-18)

__all__ = ["newton", "follow", "paths_gap", "solve", "lstsq", "lstsq_columns", "qr_columns", "qr_solve", "stack", "norm_rows", "blockwise",
           "STAGNATION_FLOOR", "BLOCK"]

#: rows per block of a large batch (:func:`blockwise`): the generated code of a system keeps a hundred
#: temporaries or more alive, which fit in the processor's cache at this size and not at 10^4 rows and up
BLOCK = 2048

#: the float64 floor of the stagnation rule: a step that no longer shrinks below this has converged as
#: far as float64 allows (an ill-conditioned system)
STAGNATION_FLOOR = 1e-11


def blockwise(fn, *arrays, block: int = BLOCK):
    """``fn(*arrays)`` evaluated on blocks of ``block`` rows (the first axis of every array) and put back
    together: each output (an array, or each array of a tuple) is concatenated along its first axis.
    The same values as one call on all rows (every row is computed by itself), in a memory footprint
    that stays in the processor's cache.

    >>> import numpy as np
    >>> x = np.arange(5.0)
    >>> blockwise(lambda a: (a * 2, a + 1), x, block=2)[1].tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0]
    """
    n = arrays[0].shape[0]
    if n <= block:
        return fn(*arrays)
    parts = [fn(*(a[s:s + block] for a in arrays)) for s in range(0, n, block)]
    if isinstance(parts[0], tuple):
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(len(parts[0])))
    return np.concatenate(parts)


def stack(values, n: int, dtype=float) -> np.ndarray:
    """A compiled function's list of ``len`` entries (arrays of ``n`` values, or scalar constants) as an
    ``(n, len)`` array of ``dtype``: one row per point.

    >>> import numpy as np
    >>> stack([np.array([1.0, 2.0]), 3.0], 2).tolist()
    [[1.0, 3.0], [2.0, 3.0]]
    """
    out = np.empty((len(values), n), dtype=dtype)
    for k, v in enumerate(values):
        out[k] = v
    return out.T


def solve(M, b):
    """``numpy.linalg.solve`` on the stacked float64 (or complex128) systems ``M (n,m,m)``, ``b (n,m,k)``; returns
    ``x (n,m,k)``.  A system that is singular or holds a non-finite entry gives ``nan`` in its row only (nothing
    raises).

    >>> import numpy as np
    >>> M = np.array([[[2.0, 0.0], [0.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]]]); b = np.array([[[2.0], [2.0]], [[1.0], [1.0]]])
    >>> solve(M, b)[:, :, 0].tolist()
    [[1.0, 0.5], [nan, nan]]
    """
    fin = np.isfinite(M).all(axis=(1, 2)) & np.isfinite(b).all(axis=(1, 2))
    if fin.all():  # every system finite: one LAPACK call on the whole stack, rows one by one if one is singular
        try:
            return np.linalg.solve(M, b).astype(np.result_type(M, b, np.float64), copy=False)
        except np.linalg.LinAlgError:
            pass
    out = np.full(b.shape, np.nan, dtype=np.result_type(M, b, np.float64))
    if fin.any():
        idx = np.flatnonzero(fin)
        try:
            out[idx] = np.linalg.solve(M[idx], b[idx])
        except np.linalg.LinAlgError:
            for i in idx:
                try:
                    out[i] = np.linalg.solve(M[i], b[i])
                except np.linalg.LinAlgError:
                    pass
    return out


def lstsq(J, rhs, max_cond=float("inf")):
    """Stacked least squares ``J x = rhs`` (``J (n,m,k)`` with ``m >= k``, ``rhs (n,m,p)``, float64);
    returns ``(x (n,k,p), cond (n,))``.

    The columns of ``J`` are scaled to unit norm, then modified Gram--Schmidt runs on the augmented
    matrix ``[J | rhs]`` (Bjorck: the least-squares solution it yields is backward stable) and the
    triangular system is solved by back substitution, all as operations on whole columns of the
    batch.  ``cond = max|R_ii| / min|R_ii|`` (of the scaled ``J``) is a cheap condition estimate;
    a row with ``cond > max_cond``, a non-finite entry or a zero pivot gets ``nan`` (that row only).

    >>> import numpy as np
    >>> J = np.array([[[2.0, 0.0], [0.0, 1.0], [0.0, 0.0]]]); b = np.array([[[2.0], [3.0], [0.0]]])
    >>> x, cond = lstsq(J, b)
    >>> x[0, :, 0].tolist(), float(cond[0])
    ([1.0, 3.0], 1.0)
    """
    k = J.shape[2]
    A = np.concatenate([J, rhs], axis=2).transpose(2, 1, 0).copy()  # (k + p, m, n): columns of the batch
    x, cond = lstsq_columns(A, k, max_cond)
    return x.transpose(2, 0, 1), cond


def lstsq_columns(A, k: int, max_cond=float("inf")):
    """:func:`lstsq` on the batch stored by columns: ``A (k + p, m, n)`` holds column ``j`` of ``[J | rhs]`` of every
    system as ``A[j] (m, n)`` (overwritten).  Returns ``(x (k, p, n), cond (n,))``, ``nan`` in the refused rows.

    >>> import numpy as np
    >>> A = np.array([[[2.0], [0.0], [0.0]], [[0.0], [1.0], [0.0]], [[2.0], [3.0], [0.0]]])  # J = diag(2, 1), b = (2, 3, 0)
    >>> x, cond = lstsq_columns(A, 2)
    >>> x[:, 0, 0].tolist(), cond.tolist()
    ([1.0, 3.0], [1.0])
    """
    p = A.shape[0] - k
    n = A.shape[2]
    with np.errstate(all="ignore"):
        scale = np.sqrt(np.einsum("jin,jin->jn", A[:k], A[:k]))
        scale[scale == 0] = 1.0
        A[:k] /= scale[:, None, :]
        R = np.zeros((k, k + p, n))
        for j in range(k):
            q = A[j]
            rjj = np.sqrt(np.einsum("in,in->n", q, q))
            R[j, j] = rjj
            q = q / rjj
            if j + 1 < k + p:
                rest = A[j + 1:]
                r = np.einsum("in,jin->jn", q, rest)
                R[j, j + 1:] = r
                rest -= r[:, None, :] * q[None, :, :]
        x = np.empty((k, p, n))
        for j in range(k - 1, -1, -1):
            acc = R[j, k:].copy()
            for i in range(j + 1, k):
                acc -= R[j, i] * x[i]
            x[j] = acc / R[j, j]
        diag = np.abs(R[np.arange(k), np.arange(k)])
        cond = diag.max(axis=0) / diag.min(axis=0)
        x /= scale[:, None, :]
    cond[~np.isfinite(cond)] = np.inf
    bad = ~(cond <= max_cond) | ~np.isfinite(x).all(axis=(0, 1))
    x[:, :, bad] = np.nan
    return x, cond


def qr_columns(J, max_cond=float("inf")):
    """The factorization of :func:`lstsq_columns` alone, to solve several right-hand sides one after the
    other (:func:`qr_solve`): ``J (k, m, n)`` holds column ``j`` of every system as ``J[j] (m, n)``
    (overwritten).  Returns ``(Q, R, scale, bad)``: the orthonormal columns (modified Gram--Schmidt on the
    unit-norm columns), ``R (k, k, n)``, the column scales, and the rows whose condition estimate
    ``max|R_ii| / min|R_ii|`` exceeds ``max_cond`` or is not finite.

    >>> import numpy as np
    >>> J = np.array([[[2.0, 0.0], [0.0, 1.0], [0.0, 0.0]]])  # one system, stored by columns
    >>> x = qr_solve(qr_columns(J.transpose(2, 1, 0).copy()), np.array([[[2.0]], [[3.0]], [[0.0]]]))
    >>> x[:, 0, 0].tolist()
    [1.0, 3.0]
    """
    k, _, n = J.shape
    with np.errstate(all="ignore"):
        scale = np.sqrt(np.einsum("jin,jin->jn", J, J))
        scale[scale == 0] = 1.0
        J /= scale[:, None, :]
        R = np.zeros((k, k, n))
        for j in range(k):
            q = J[j]
            rjj = np.sqrt(np.einsum("in,in->n", q, q))
            R[j, j] = rjj
            q /= rjj
            if j + 1 < k:
                rest = J[j + 1:]
                r = np.einsum("in,jin->jn", q, rest)
                R[j, j + 1:] = r
                rest -= r[:, None, :] * q[None, :, :]
        diag = np.abs(R[np.arange(k), np.arange(k)])
        cond = diag.max(axis=0) / diag.min(axis=0)
    return J, R, scale, ~(cond <= max_cond)


def qr_solve(factor, rhs):
    """Least squares with the factorization ``factor`` of :func:`qr_columns`: ``rhs (m, p, n)`` (the ``p``
    right-hand sides of every system); returns ``x (k, p, n)``, ``nan`` in the refused rows and where a value is
    not finite.  The right-hand sides are projected as modified Gram--Schmidt does (one column after the other),
    then the triangular system is solved by back substitution.

    >>> import numpy as np
    >>> J = np.array([[[1.0], [1.0]], [[0.0], [1.0]]])  # one system [[1, 0], [1, 1]], stored by columns
    >>> x = qr_solve(qr_columns(J), np.array([[[1.0], [2.0]], [[3.0], [2.0]]]))  # b = (1, 3), (2, 2)
    >>> np.round(x[:, :, 0], 12).tolist()
    [[1.0, 2.0], [2.0, 0.0]]
    """
    Q, R, scale, bad = factor
    k = Q.shape[0]
    b = np.array(rhs, dtype=float)
    with np.errstate(all="ignore"):
        c = np.empty((k,) + b.shape[1:])
        for j in range(k):
            c[j] = np.einsum("in,ipn->pn", Q[j], b)
            b -= Q[j][:, None, :] * c[j][None]
        x = np.empty_like(c)
        for j in range(k - 1, -1, -1):
            acc = c[j].copy()
            for i in range(j + 1, k):
                acc -= R[j, i] * x[i]
            x[j] = acc / R[j, j]
        x /= scale[:, None, :]
    x[:, :, bad | ~np.isfinite(x).all(axis=(0, 1))] = np.nan
    return x


def norm_rows(x):
    """The Euclidean norm of each row of a 2-d array.

    >>> import numpy as np
    >>> norm_rows(np.array([[3.0, 4.0], [0.0, 1.0]])).tolist()
    [5.0, 1.0]
    """
    return np.linalg.norm(x, axis=1)


def newton(linear, x, tol, maxsteps: int, floor=STAGNATION_FLOOR, blowup=1e6, contract=None, contract_above=0.0):
    """Newton's method on every row of ``x``; returns ``(x, extra, step, ok)``.

    ``linear(rows, x_rows) -> (dx, extra)`` solves the linearized systems of the rows ``rows`` (an
    index array) at ``x_rows`` (``extra``: what the same factorization yields, e.g. the implicit
    derivative, one row per point, ``x``'s shape).  ``step`` is each row's last relative step
    ``|dx| / (1 + |x|)``.  A row is ``ok`` when its step fell below ``tol`` or stagnated below
    ``floor``, with finite ``x`` and ``extra``.  ``contract`` (a corrector's rule, as the scalar
    :func:`symrmt.core.newton.newton`'s ``contract``): a row whose step, not yet converged and above
    ``contract_above``, is not ``contract`` times smaller than its previous step stops there, unconverged
    (a continuation then takes a shorter step instead of iterating outside Newton's basin); below
    ``contract_above`` the steps of an ill-conditioned system may shrink slowly in rounding noise, and only the
    other rules apply.

    >>> import numpy as np
    >>> slow = lambda rows, x: (-x / 2, x)  # steps that shrink only twofold
    >>> newton(slow, np.ones((1, 1)), 1e-6, 40, contract=4)[3].tolist()
    [False]
    """
    n = x.shape[0]
    x = x.copy()
    extra = np.full_like(x, np.nan)
    step = np.full(n, np.inf)
    prev = np.full(n, np.inf)
    done = np.zeros(n, dtype=bool)
    act = np.arange(n)
    for _ in range(maxsteps):
        if act.size == 0:
            break
        with np.errstate(all="ignore"):
            dx, ex = blockwise(linear, act, x[act])
            xn = x[act] + dx
            st = norm_rows(dx) / (1 + norm_rows(xn))
        st[~np.isfinite(st)] = np.inf
        x[act], extra[act], step[act] = xn, ex, st
        fin = (st <= tol) | stagnated(st, prev[act], floor)  # the core's stopping rules
        done[act[fin]] = True
        going = ~fin & (st < blowup)
        if contract is not None:
            going &= ~((st > prev[act] / contract) & (st > contract_above))
        prev[act] = st
        act = act[going]
    ok = done & np.isfinite(x).all(axis=1) & np.isfinite(extra).all(axis=1)
    return x, extra, step, ok


def follow(correct, h, dh, t, t1, schedule, *, correction=CORRECTION_FRACTION, move=MOVE_FRACTION, tighten=1,
           max_rounds=600, ok=None, step=None):
    """Follow every row of ``h`` from ``t`` to ``t1`` (arrays); returns ``(h, dh, step, ok)`` at ``t1``.

    ``correct(rows, pred, nxt) -> (h, dh, step, ok)`` is the batched Newton corrector of the rows
    ``rows`` at the predictors ``pred`` and the next points ``nxt``; ``schedule`` is a
    :class:`~symrmt.core.continuation.Linear` or :class:`~symrmt.core.continuation.Geometric` over the
    arrays (each row its own step); ``correction``, ``move`` and ``tighten`` bound the trust region as in
    :func:`symrmt.core.continuation.follow`.  ``ok``: the rows that start (default: those with finite
    ``h`` and ``dh``); ``step``: each row's Newton step so far (returned for the rows that moved).  Each
    round moves every active row by one accepted or rejected step; a row still short of ``t1`` after
    ``max_rounds`` rounds, or whose step stalls, fails (``False`` in ``ok``; nothing raises).

    >>> import numpy as np
    >>> from symrmt.core.continuation import Linear
    >>> def correct(rows, pred, t):  # h = sqrt(t): Newton on h^2 = t, dh/dt = 1 / (2 h)
    ...     h = pred.copy()
    ...     for _ in range(30):
    ...         h = h - (h * h - t[:, None]) / (2 * h)
    ...     return h, 1 / (2 * h), np.zeros(len(rows)), np.ones(len(rows), bool)
    >>> t0, t1 = np.array([1.0, 1.0]), np.array([4.0, 9.0])
    >>> h, dh, step, ok = follow(correct, np.ones((2, 1)), np.full((2, 1), 0.5), t0, t1, Linear(t0, t1))
    >>> h[:, 0].tolist(), ok.tolist()
    ([2.0, 3.0], [True, True])
    """
    h, dh = h.copy(), dh.copy()
    t = np.array(t, dtype=float)
    n = h.shape[0]
    step = np.full(n, np.inf) if step is None else step.copy()
    if ok is None:
        ok = np.isfinite(h).all(axis=1) & np.isfinite(dh).all(axis=1)
    failed = ~ok
    act = np.flatnonzero(~failed & (t != t1))
    rounds = 0
    while act.size and rounds < max_rounds:
        rounds += 1
        now = t[act]
        nxt = schedule.advance(now, act)
        pred = h[act] + dh[act] * (nxt - now)[:, None]
        hn, dhn, stn, okn = correct(act, pred, nxt)
        with np.errstate(all="ignore"):
            size = 1 + norm_rows(h[act])
            # the core's trust region: near the predictor and near the previous point
            good = okn & in_trust_region(norm_rows(hn - pred), norm_rows(hn - h[act]), size, correction, move,
                                         tighten)
        a_ok, a_bad = act[good], act[~good]
        t[a_ok], h[a_ok], dh[a_ok], step[a_ok] = nxt[good], hn[good], dhn[good], stn[good]
        schedule.grow(a_ok)
        failed[a_bad[~schedule.shrink(a_bad)]] = True
        act = act[(t[act] != t1[act]) & ~failed[act]]
    failed[act] = True  # out of rounds
    return h, dh, step, ~failed


def paths_gap(h1, h2):
    """Relative max-norm gap ``max|h1 - h2| / (1 + max|h1|)`` of each row of two 2-d arrays (the batched
    :func:`symrmt.core.continuation.paths_gap`).

    >>> import numpy as np
    >>> [round(g, 12) for g in paths_gap(np.array([[1.0, 2.0]]), np.array([[1.0, 2.3]])).tolist()]
    [0.1]
    """
    with np.errstate(all="ignore"):
        return np.max(np.abs(h1 - h2), axis=1) / (1 + np.max(np.abs(h1), axis=1))
