"""Batched float64 kernels of the fast path: the compiled NumPy systems, Newton and continuation.

The SymPy systems of :mod:`symrmt.models.attention.equations`, compiled for NumPy, driven on stacked arrays:
Newton's method with a batched least-squares step, continuation in ``gamma`` for all points at once from the
large-``gamma`` start, the batched Woodbury solve of the low-rank part, and the error estimate: one correction
with the residuals in ``numpy.longdouble`` (:data:`EXTENDED` says whether it is wider than float64), the gap
between the float64 value and the corrected one estimating the float64 error point by point; the corrected
value is the one returned (``docs/performance.md``).
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from symrmt.cache import cached
from symrmt.core import batch as core_batch
from symrmt.core.batch import EXTENDED, LD  # noqa: F401  (EXTENDED re-exported)
from symrmt.core.batch import blockwise
from symrmt.core.batch import stack as _stack
from symrmt.core.continuation import Geometric, in_trust_region
from symrmt.models.attention import equations as S
from symrmt.models.attention.solver import MOVE_FRACTION
from symrmt.models.attention.compiled import (aligned_phi_coefficients, aligned_phi_in_snr_function, closed_form_phi, fixed_point_fjg, fixed_point_residual,
                                             fixed_point_tangent_function, mp_root_function, ridge_function,
                                             ridge_in_m_function, woodbury_D_function)

EPS = float(np.finfo(np.float64).eps)
NEQ, NUNK = 9, 6
#: relative Newton step at which a float solve counts as converged
NEWTON_TOL = 1e-13
#: largest relative jump of the corrector from the predictor in one continuation step
MAX_JUMP = 0.1
#: Jacobians whose (column-scaled) condition estimate exceeds this are refused
MAX_COND = 1e12
#: the continuation's corrector stops a row whose Newton step is not this many times smaller than the
#: previous one (:func:`symrmt.core.batch.newton`'s ``contract``): the step is then refused and retried shorter
CORRECTOR_CONTRACT = 2.0
#: ... for steps above this relative size only (below it, an ill-conditioned system's float64 steps may
#: shrink slowly before they stagnate, and the stagnation rule decides)
CORRECTOR_CONTRACT_ABOVE = 1e-6
#: :func:`continuation_tree`: the stride of the chain along each ``c``'s gammas (then binary levels)
TREE_STRIDE = 16
#: the batched continuation's step in ``s = 1/gamma``: first ratio, largest ratio (the mpmath solver's first, and
#: half its largest 16: the corrector of a ratio-16 step takes five to eight Newton iterations from its predictor,
#: two steps of ratio 4 take about three each, and a batch pays for every iteration of its slowest row)
PATH_RATIO = (4.0, 8.0)


@cached(maxsize=1)
def numpy_functions() -> MappingProxyType:
    """The NumPy-compiled ``FJG`` and ``det N`` of the fixed point and the closed form of ``E_RR``.

    A read-only mapping, built once:

    >>> sorted(numpy_functions())
    ['F', 'Ftangent', 'detN', 'fjg', 'ridge']
    """
    fjg, detn, _ = fixed_point_fjg("numpy")
    return MappingProxyType({"fjg": fjg, "detN": detn, "ridge": ridge_function("numpy"),
                             "F": fixed_point_residual("numpy"), "Ftangent": fixed_point_tangent_function("numpy")})


def fjg(g, p):
    """``(F (n,9), J (n,9,6), Fg (n,9))`` at ``g (n,6)`` with parameters ``p (n,5)``, in ``g``'s dtype.

    ``p``'s columns are ``(gamma, c, a_1, nu, d)``.

    >>> F, J, Fg = fjg(np.array([[1.0, 0, 0, -0.5, 1, 0]]), np.array([[1e4, 0.5, 0.5, 1, 0]]))
    >>> F.shape, J.shape, Fg.shape
    ((1, 9), (1, 9, 6), (1, 9))
    """
    def one(g, p):
        n = g.shape[0]
        with np.errstate(all="ignore"):  # an overflow gives inf or nan, which every caller refuses
            v = _stack(numpy_functions()["fjg"](tuple(g.T), _args(p)), n, g.dtype)
        return v[:, :NEQ], v[:, NEQ:NEQ + NEQ * NUNK].reshape(n, NEQ, NUNK), v[:, NEQ + NEQ * NUNK:]

    return blockwise(one, g, p)


def lstsq(J, rhs):
    """Batched least squares ``J x = rhs`` (``J (n,9,6)``, ``rhs (n,9,k)``, float64).

    The columns are scaled to unit norm first (the unknowns differ in scale by ``1/gamma``), then
    the core's stacked least squares (:func:`symrmt.core.batch.lstsq`: modified Gram--Schmidt on
    ``[J | rhs]`` as whole-column operations).  Returns ``(x, cond)`` with ``cond = max|R_ii|/min|R_ii|``,
    a cheap condition estimate; rows with ``cond > MAX_COND`` get ``nan``.

    Examples
    --------
    A consistent diagonal system (the scaled columns are orthonormal, so ``cond = 1``):

    >>> J = np.zeros((1, 9, 6)); J[0, :6] = np.diag([1.0, 2, 3, 4, 5, 6])
    >>> rhs = np.zeros((1, 9, 1)); rhs[0, :6, 0] = [1, 2, 3, 4, 5, 6]
    >>> x, cond = lstsq(J, rhs)
    >>> x[0, :, 0].round(12).tolist(), cond.tolist()
    ([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [1.0])
    """
    return core_batch.lstsq(J, rhs, MAX_COND)


def newton(g, p, maxsteps: int = 12, contract=None):
    """Newton's method on the fixed point for every row of ``g``; returns ``(g, dg, step, ok)``.

    The core's batched driver (:func:`symrmt.core.batch.newton`) with the least-squares step of
    :func:`lstsq`.  ``dg`` is the implicit derivative ``dGm/dgamma = -J^+ dF/dgamma`` at the last
    iterate and ``step`` the last relative Newton step.  A row is ``ok`` when its step fell below
    :data:`NEWTON_TOL`, or stopped shrinking below ``1e-11`` (the float64 floor of an
    ill-conditioned system), with finite values.  ``contract``: as :func:`symrmt.core.batch.newton`'s
    (the continuation's correctors pass :data:`CORRECTOR_CONTRACT`), for steps above
    :data:`CORRECTOR_CONTRACT_ABOVE`.

    Takes ``g`` (rows of six entries), the parameter columns ``p``, ``maxsteps`` and ``contract``.  (No doctest: it needs the compiled float64 systems, seconds cold; the fast path's tests
    (``tests/models/attention/test_fast.py``, ``test_fast_grid.py``) run it through
    :func:`symrmt.models.attention.fast.solve_grid`.)
    """
    def linear(rows, x):
        # the compiled entries straight into the column layout of the core's least squares:
        # A[j] = column j of [J | -F | -dF/dgamma] over the batch
        n = x.shape[0]
        A = np.empty((NUNK + 2, NEQ, n))
        with np.errstate(all="ignore"):  # an overflow gives inf or nan, which the solve refuses
            vals = numpy_functions()["fjg"](tuple(x.T), _args(p[rows]))
            for i in range(NEQ):
                A[NUNK, i] = vals[i]
                A[NUNK + 1, i] = vals[NEQ + NEQ * NUNK + i]
                for j in range(NUNK):
                    A[j, i] = vals[NEQ + i * NUNK + j]
            A[NUNK:] *= -1
        y, _ = core_batch.lstsq_columns(A, NUNK, MAX_COND)
        return y[:, 0].T, y[:, 1].T

    return core_batch.newton(linear, g, NEWTON_TOL, maxsteps, contract=contract,
                             contract_above=CORRECTOR_CONTRACT_ABOVE)


def _args(p):
    """The parameter arguments of a compiled fixed-point function from the rows ``p`` of :func:`param_columns`:
    the columns ``gamma`` and ``c``, and ``a_1, nu, d`` (the same in every row) as scalars of ``p``'s dtype, so
    that the generated code computes their subexpressions once instead of once per row."""
    if p.shape[0] == 0:
        return tuple(p.T)
    return (p[:, 0], p[:, 1], p[0, 2], p[0, 3], p[0, 4])


def param_columns(gamma, c, a1, nu, d, dtype=float):
    """The parameter columns ``p`` of :func:`newton` and the compiled systems: one row ``(gamma, c, a_1, nu, d)``
    per point, for the arrays ``gamma`` and ``c`` and the scalars ``a1``, ``nu``, ``d``, in ``dtype``.

    >>> param_columns(np.array([0.1, 1.0]), np.array([0.5, 2.0]), 0.5, 0.25, 0.0).tolist()
    [[0.1, 0.5, 0.5, 0.25, 0.0], [1.0, 2.0, 0.5, 0.25, 0.0]]
    """
    n = gamma.shape[0]
    cols = [np.asarray(gamma, dtype), np.asarray(c, dtype)] + [np.full(n, v, dtype=dtype) for v in (a1, nu, d)]
    return np.column_stack(cols)


def continuation(gamma, c, a1: float, nu: float, d: float, max_rounds: int = 400):
    """The noise-only ``Gm`` and ``dGm/dgamma`` at every ``(gamma_i, c_i)``, all points at once.

    Every point starts far above the spectrum, at
    ``gamma_0 = 1e4 (1 + |a_1| + |d| + sqrt(nu))^2 (1 + c)(1 + 1/c)`` (as the mpmath
    solver does) from the ``gamma -> oo`` solution ``diag(1/gamma_0, [[-c, 1], [1, 0]])``,
    and moves to its own ``gamma`` in ratio steps of up to 8 (:data:`PATH_RATIO`; halved on trouble,
    doubled on success); predictor from ``dGm/ds`` in ``s = 1/gamma`` (:func:`_follow_from`), Newton
    corrector.  A step is accepted inside the core's trust region
    (:func:`symrmt.core.continuation.in_trust_region`): Newton converges within :data:`MAX_JUMP` of the
    predictor (no jump to another branch) and within :data:`symrmt.models.attention.solver.MOVE_FRACTION`
    of the previous point.  Returns ``(g, dg, step, ok)`` at the targets.

    Takes float64 arrays ``gamma``, ``c`` (one entry per point) and the Hermite data; rows that fail have
    ``ok`` false (nothing is raised).  (No doctest: it needs the compiled float64 systems, seconds cold; the fast path's tests
    (``tests/models/attention/test_fast.py``, ``test_fast_grid.py``) run it through
    :func:`symrmt.models.attention.fast.solve_grid`.)
    """
    gamma = np.asarray(gamma, dtype=float)
    c = np.asarray(c, dtype=float)
    n = gamma.size
    scale = 1 + abs(a1) + abs(d) + np.sqrt(abs(nu))
    cur = np.maximum(1e4 * scale**2 * (1 + c) * (1 + 1 / c), gamma)
    zero = np.zeros(n)
    start = np.column_stack([1 / cur, zero, zero, -c, zero + 1, zero])
    g, dg, step, ok = newton(start, param_columns(cur, c, a1, nu, d), maxsteps=30)
    return _follow_from(g, dg, cur, gamma, c, a1, nu, d, max_rounds, ok=ok, step=step)


def _follow_from(g, dg, start, gamma, c, a1, nu, d, max_rounds: int = 400, ok=None, step=None):
    """:func:`continuation`'s batched path from solved points ``(g, dg)`` at ``start`` down to ``gamma``.

    The path is followed in ``s = 1/gamma`` (the core's batched continuation,
    :func:`symrmt.core.batch.follow`, with the steps of :data:`PATH_RATIO`: ratio 4, up to 8, stalled below
    ``1 + 1e-6``, and the mpmath solver's trust region): ``Gm`` is analytic in ``s`` at ``s = 0`` (``gamma -> oo``),
    so the predictor ``Gm + (dGm/ds) ds`` is second-order accurate in the step where the one in ``gamma``
    is not, and long steps of a path from the large-``gamma`` start are accepted.  The corrector is
    Newton at ``gamma`` itself (the target ``gamma`` exactly at the last step).  Returns
    ``(g, dg, step, ok)`` with ``dg = dGm/dgamma``."""
    gamma = np.asarray(gamma, dtype=float)
    s1 = 1 / gamma

    def correct(rows, pred, nxt):
        gam = np.where(nxt == s1[rows], gamma[rows], 1 / nxt)
        gn, dgn, st, okn = newton(pred, param_columns(gam, c[rows], a1, nu, d), contract=CORRECTOR_CONTRACT)
        return gn, -(gam * gam)[:, None] * dgn, st, okn  # dGm/ds = -gamma^2 dGm/dgamma

    s0 = 1 / np.asarray(start, dtype=float)
    h, dh, step, ok = core_batch.follow(correct, g, -(start * start)[:, None] * dg, s0, s1,
                                        Geometric(s0, s1, *PATH_RATIO, 1e-6), correction=MAX_JUMP,
                                        move=MOVE_FRACTION, max_rounds=max_rounds, ok=ok, step=step)
    with np.errstate(all="ignore"):
        dgamma = np.where((start == gamma)[:, None], dg, -(s1 * s1)[:, None] * dh)
    return h, dgamma, step, ok


def _between(ga, dga, gam_a, gb, dgb, gam_b, gamma, c, a1, nu, d):
    """Newton at ``gamma`` (between two solved points ``gam_a > gamma > gam_b`` of one path) from the cubic
    Hermite interpolant of their ``(G, dG/dgamma)`` in ``log gamma``; a row is ``ok`` when Newton converged within the
    continuation's trust region of the interpolant and of the point at ``gam_a`` (:data:`MAX_JUMP`,
    :data:`~symrmt.models.attention.solver.MOVE_FRACTION`), else it is left to the continuation."""
    # in u = log(gamma), where the solution is smoother on a grid spaced in ratios: dG/du = gamma dG/dgamma
    ua, ub = np.log(gam_a), np.log(gam_b)
    h = (ub - ua)[:, None]
    t = ((np.log(gamma) - ua) / (ub - ua))[:, None]
    t2, t3 = t * t, t * t * t
    pred = ((2 * t3 - 3 * t2 + 1) * ga + (t3 - 2 * t2 + t) * h * (gam_a[:, None] * dga) + (-2 * t3 + 3 * t2) * gb
            + (t3 - t2) * h * (gam_b[:, None] * dgb))
    gn, dgn, st, okn = newton(pred, param_columns(gamma, c, a1, nu, d), contract=CORRECTOR_CONTRACT)
    with np.errstate(all="ignore"):
        size = 1 + core_batch.norm_rows(ga)
        okn &= in_trust_region(core_batch.norm_rows(gn - pred), core_batch.norm_rows(gn - ga), size, MAX_JUMP,
                               MOVE_FRACTION)
    return gn, dgn, st, okn


def continuation_tree(gamma, c, a1: float, nu: float, d: float, max_rounds: int = 400):
    """:func:`continuation` at many ``gamma`` per ``c`` (a grid with a ``gamma`` axis), sharing the path.

    The points of each ``c`` are sorted by decreasing ``gamma``; the largest is solved by
    :func:`continuation` from the large-``gamma`` start, and the others by the same continuation
    (predictor, Newton corrector, the core's trust region) started from an already solved point of
    the same ``c`` at a larger ``gamma``: first a chain, rank ``k S`` from rank ``(k - 1) S``
    (``S =`` :data:`TREE_STRIDE`; one batched call per step, short steps in ``gamma``), then level by
    level the ranks in between, rank ``k`` from rank ``k - s`` where ``s`` is the largest power of two
    dividing ``k`` (``log2 S`` levels, each one batched call).  Every point thus lies on the
    same path as from the large-``gamma`` start, reached in one or two steps instead of tens.  A
    point whose start failed, or that fails on its way, is solved again by :func:`continuation`
    from the large-``gamma`` start.  Returns ``(g, dg, step, ok)`` in the order given.

    Takes and returns what :func:`continuation` does.  (No doctest: it needs the compiled float64 systems, seconds cold; the fast path's tests
    (``tests/models/attention/test_fast.py``, ``test_fast_grid.py``) run it through
    :func:`symrmt.models.attention.fast.solve_grid`.)
    """
    gamma = np.asarray(gamma, dtype=float)
    c = np.asarray(c, dtype=float)
    n = gamma.size
    order = np.lexsort((-gamma, c))  # by c, then decreasing gamma
    cs = c[order]
    first = np.ones(n, dtype=bool)
    first[1:] = cs[1:] != cs[:-1]
    starts = np.flatnonzero(first)
    rank = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    g = np.full((n, NUNK), np.nan)
    dg = np.full((n, NUNK), np.nan)
    step = np.full(n, np.inf)
    ok = np.zeros(n, dtype=bool)
    gs = gamma[order]
    roots = np.flatnonzero(rank == 0)
    g[roots], dg[roots], step[roots], ok[roots] = continuation(gs[roots], cs[roots], a1, nu, d, max_rounds)
    def level(rows, parent, after=None):
        live = ok[parent] & (gs[parent] > gs[rows])
        same = ok[parent] & (gs[parent] == gs[rows])  # a repeated gamma: the parent's solution
        g[rows[same]], dg[rows[same]], step[rows[same]], ok[rows[same]] = (
            g[parent[same]], dg[parent[same]], step[parent[same]], True)
        r, p = rows[live], parent[live]
        if after is not None and r.size:  # solved on both sides: Newton from the Hermite interpolant
            q = after[live]
            both = (q >= 0)
            both[both] = ok[q[both]] & (gs[q[both]] < gs[r[both]])
            if both.any():
                rb, pb, qb = r[both], p[both], q[both]
                gb, dgb, stb, okb = _between(g[pb], dg[pb], gs[pb], g[qb], dg[qb], gs[qb], gs[rb], cs[rb], a1, nu, d)
                g[rb], dg[rb], step[rb], ok[rb] = gb, dgb, stb, okb
                keep = ~both  # the rows left to the continuation: one side only, or refused here
                keep[both] = ~okb
                r, p = r[keep], p[keep]
        if r.size:
            g[r], dg[r], step[r], ok[r] = _follow_from(g[p], dg[p], gs[p], gs[r], cs[r], a1, nu, d, max_rounds)

    # a chain along each c at stride TREE_STRIDE (short steps: large jumps in gamma cost more Newton steps
    # than several short ones), then the binary levels in between
    top = int(rank.max()) if n else 0
    for j in range(1, top // TREE_STRIDE + 1):
        rows = np.flatnonzero(rank == j * TREE_STRIDE)
        level(rows, rows - TREE_STRIDE)
    s = TREE_STRIDE // 2
    while s >= 1 and n:
        rows = np.flatnonzero((rank % (2 * s)) == s)
        nxt = rows + s  # the solved point on the other side, in the same c (else -1)
        inside = nxt < n
        inside[inside] = (cs[nxt[inside]] == cs[rows[inside]]) & (rank[nxt[inside]] == rank[rows[inside]] + s)
        level(rows, rows - s, np.where(inside, nxt, -1))
        s //= 2
    redo = np.flatnonzero(~ok)
    if redo.size:  # from the large-gamma start, as the plain continuation would
        g[redo], dg[redo], step[redo], ok[redo] = continuation(gs[redo], cs[redo], a1, nu, d, max_rounds)
    out = [np.empty_like(a) for a in (g, dg, step, ok)]
    for o, a in zip(out, (g, dg, step, ok)):
        o[order] = a
    return tuple(out)


def refine(g, dg, gamma, c, a1, nu, d):
    """One correction of ``g`` and ``dg`` with the residuals evaluated in long double.

    Returns ``(g_ld, dg_ld, resid)``: the corrected values (long double) and the
    relative size of the correction of ``g`` (the residual check, in units of the
    solution).  Parameters go in as long double from their float64 values.  Two steps of
    mixed-precision iterative refinement with one float64 factorization of the Jacobian at ``g``
    (:func:`symrmt.core.batch.qr_columns`): the residual ``F`` in long double at ``g``, then ``F`` and the
    implicit derivative's residual ``(dF/dG) dg + dF/dgamma`` in long double at the corrected point
    (:func:`symrmt.models.attention.compiled.fixed_point_tangent_function`).  Row by row (in blocks,
    :func:`symrmt.core.batch.blockwise`).

    Takes the float64 rows and the parameters.  (No doctest: it needs the compiled float64 systems, seconds cold; the fast path's tests
    (``tests/models/attention/test_fast.py``, ``test_fast_grid.py``) run it through
    :func:`symrmt.models.attention.fast.solve_grid`.)
    """
    return blockwise(lambda g, dg, gamma, c: _refine(g, dg, gamma, c, a1, nu, d), g, dg,
                     np.asarray(gamma, dtype=float), np.asarray(c, dtype=float))


def _refine(g, dg, gamma, c, a1, nu, d):
    p = param_columns(gamma, c, a1, nu, d, LD)
    gl = g.astype(LD)
    n = g.shape[0]
    with np.errstate(all="ignore"):  # the residuals in long double, the Jacobian (at g) in float64
        F = _stack(numpy_functions()["F"](tuple(gl.T), _args(p)), n, LD)
        # the Jacobian's entries straight into the column layout of the core's QR: Jc[j] = column j over the batch
        vals = numpy_functions()["fjg"](tuple(g.T), _args(p.astype(float)))
        Jc = np.empty((NUNK, NEQ, n))
        for i in range(NEQ):
            for j in range(NUNK):
                Jc[j, i] = vals[NEQ + i * NUNK + j]
        factor = core_batch.qr_columns(Jc, MAX_COND)
        x = core_batch.qr_solve(factor, -F.astype(float).T[:, None, :])[:, 0, :].T
        gl = gl + x
        # F and the implicit derivative's residual (dF/dG) dg + dF/dgamma at the corrected point
        Ft = _stack(numpy_functions()["Ftangent"](tuple(gl.T), _args(p), tuple(dg.astype(LD).T)), n, LD)
        rhs = -Ft.astype(float).T.reshape(2, NEQ, n).transpose(1, 0, 2)
        y = core_batch.qr_solve(factor, rhs)
        gl = gl + y[:, 0, :].T
        dgl = dg.astype(LD) + y[:, 1, :].T
        resid = (np.linalg.norm(x, axis=1) + np.linalg.norm(y[:, 0, :].T, axis=1)) / (1 + np.linalg.norm(g, axis=1))
    resid[~np.isfinite(resid)] = np.inf
    return gl, dgl, resid


def branch_ok(g, dg, gamma, c, a1, nu, d, slack=1e-12):
    """The branch checks of the noise-only solution: ``det N != 0``, ``0 < tau <= 1/gamma``,
    noise-only error ``-gamma^2 dG_11/dgamma`` in ``[0, 1]`` (each to ``slack``).

    Takes the rows and the parameters; returns a bool array, one per row.  (No doctest: it needs the compiled float64 systems, seconds cold; the fast path's tests
    (``tests/models/attention/test_fast.py``, ``test_fast_grid.py``) run it through
    :func:`symrmt.models.attention.fast.solve_grid`.)
    """
    return blockwise(lambda g, dg, gamma, c: _branch_ok(g, dg, gamma, c, a1, nu, d, slack), g, dg,
                     np.asarray(gamma), np.asarray(c))


def _branch_ok(g, dg, gamma, c, a1, nu, d, slack):
    n = g.shape[0]
    p = param_columns(gamma, c, a1, nu, d, g.dtype)
    with np.errstate(all="ignore"):  # an overflow gives inf or nan, refused below
        detn = np.asarray(numpy_functions()["detN"](tuple(g.T), _args(p))) * np.ones(n, dtype=g.dtype)
    tau = g[:, 0]
    noise = -gamma**2 * dg[:, 0]
    with np.errstate(invalid="ignore"):
        return (detn != 0) & (tau > 0) & (tau * gamma <= 1 + slack) & (noise >= -slack) & (noise <= 1 + slack)


def ridge(gamma, c, snr, dtype=float):
    """``E_RR`` from its compiled closed form, in ``dtype``.

    At ``gamma = c = 1`` without signal it is ``1/sqrt(5)``:

    >>> bool(abs(ridge(np.array([1.0]), np.array([1.0]), np.array([0.0]))[0] - 5 ** -0.5) < 1e-15)
    True
    """
    args = [np.asarray(x, dtype=dtype) for x in (gamma, c, snr)]
    with np.errstate(all="ignore"):
        return np.asarray(numpy_functions()["ridge"](*args), dtype=dtype) * np.ones(args[0].shape, dtype=dtype)


def ridge_parts(gamma, c, dtype=float):
    """The Marchenko-Pastur root ``m(-gamma)`` at the points ``(gamma, c)``, in ``dtype``: the first part of
    :func:`ridge` (:func:`symrmt.models.attention.compiled.mp_root_function`), once per distinct ``(gamma, c)``.

    >>> import numpy as np
    >>> gamma, c, snr = np.array([0.01, 1.0, 100.0]), np.array([2.0, 0.5, 1.0]), np.array([1.0, 0.0, 3.0])
    >>> bool(np.allclose(ridge_from_root(ridge_parts(gamma, c), gamma, c, snr), ridge(gamma, c, snr), rtol=1e-14))
    True
    """
    args = [np.asarray(x, dtype=dtype) for x in (gamma, c)]
    with np.errstate(all="ignore"):
        return np.asarray(mp_root_function("numpy")(*args), dtype=dtype) * np.ones(args[0].shape, dtype=dtype)


def ridge_from_root(m, gamma, c, snr, dtype=float):
    """``E_RR`` from the root ``m`` of :func:`ridge_parts` (:func:`symrmt.models.attention.compiled.ridge_in_m_function`),
    in ``dtype``: the same value as :func:`ridge` at the same points.

    >>> bool(abs(ridge_from_root(np.array([(5 ** 0.5 - 1) / 2]), 1.0, 1.0, 0.0)[0] - 5 ** -0.5) < 1e-15)
    True
    """
    args = [np.asarray(x, dtype=dtype) for x in (m, gamma, c, snr)]
    with np.errstate(all="ignore"):
        return np.asarray(ridge_in_m_function("numpy")(*args), dtype=dtype) * np.ones(args[0].shape, dtype=dtype)


def phi_closed(kind: str, g, dg, a1, c, snr, wkwq):
    """``(varphi, dvarphi/dgamma)`` from the compiled closed form ``kind`` ("aligned" or "a1_zero").

    ``g``, ``dg`` are ``(n, 6)`` stacks; ``c``, ``snr``, ``wkwq`` broadcast to ``n``.  Without signal
    the aligned ``varphi`` is ``G_11``:

    >>> g, dg = np.array([[0.8, 0.1, 0.2, -0.2, 0.8, 0.3]]), np.array([[-0.5, 0.1, 0.0, 0.2, -0.1, 0.1]])
    >>> phi, dphi = phi_closed("aligned", g, dg, 0.6, 0.5, np.array([0.0]), 0.3)
    >>> phi.tolist(), dphi.tolist()
    ([0.8], [-0.5])
    """
    fn = closed_form_phi(kind, "numpy")
    dt = g.dtype

    def one(g, dg, c, snr, wkwq):
        n = g.shape[0]
        with np.errstate(all="ignore"):
            v = fn(tuple(g.T), tuple(dg.T), dt.type(a1), c, snr, wkwq)
        return np.asarray(v[0], dtype=dt) * np.ones(n, dt), np.asarray(v[1], dtype=dt) * np.ones(n, dt)

    n = g.shape[0]
    return blockwise(one, g, dg, *(np.broadcast_to(np.asarray(x, dt), (n,)) for x in (c, snr, wkwq)))


def aligned_coefficients(g, dg, a1, c, wkwq):
    """``(coef, dcoef)``, each ``(n, 7)`` in ``g``'s dtype: ``G_11`` and the coefficients ``P_0, ..., Q_3`` of the
    aligned ``varphi`` as a rational function of ``||mu||^2``
    (:func:`symrmt.models.attention.equations.aligned_phi_in_snr`, compiled:
    :func:`symrmt.models.attention.compiled.aligned_phi_coefficients`), and their ``gamma``-derivatives, at the
    rows ``g, dg`` with ``c``, ``wkwq`` per row.

    >>> import numpy as np
    >>> g, dg = np.array([[0.8, 0.1, 0.2, -0.2, 0.8, 0.3]]), np.array([[-0.5, 0.1, 0.0, 0.2, -0.1, 0.1]])
    >>> coef, dcoef = aligned_coefficients(g, dg, 0.6, np.array([0.5]), np.array([0.3]))
    >>> phi, dphi = phi_from_coefficients(coef[[0, 0]], dcoef[[0, 0]], np.array([1.0, 4.0]))
    >>> ref = phi_closed("aligned", g[[0, 0]], dg[[0, 0]], 0.6, 0.5, np.array([1.0, 4.0]), 0.3)
    >>> bool(np.allclose(phi, ref[0], rtol=1e-13) and np.allclose(dphi, ref[1], rtol=1e-13))
    True
    """
    fn = aligned_phi_coefficients("numpy")
    dt = g.dtype

    def one(g, dg, c, wkwq):
        n = g.shape[0]
        with np.errstate(all="ignore"):
            v = _stack(fn(tuple(g.T), tuple(dg.T), dt.type(a1), c, wkwq), n, dt)
        return np.column_stack([g[:, 0], v[:, :6]]), np.column_stack([dg[:, 0], v[:, 6:]])

    n = g.shape[0]
    return blockwise(one, g, dg, *(np.broadcast_to(np.asarray(x, dt), (n,)) for x in (c, wkwq)))


def phi_from_coefficients(coef, dcoef, snr, per=None):
    """``(varphi, dvarphi/dgamma)`` at every point from the rows of :func:`aligned_coefficients` and ``||mu||^2``
    (the compiled form :func:`symrmt.models.attention.compiled.aligned_phi_in_snr_function`), in ``coef``'s dtype.
    Point ``i`` takes row ``per[i]`` (``per=None``: row ``i``); the rows are gathered column by column, block by
    block, as the form reads them.

    >>> import numpy as np
    >>> g, dg = np.array([[0.8, 0.1, 0.2, -0.2, 0.8, 0.3]]), np.array([[-0.5, 0.1, 0.0, 0.2, -0.1, 0.1]])
    >>> coef, dcoef = aligned_coefficients(g, dg, 0.6, np.array([0.5]), np.array([0.3]))
    >>> a = phi_from_coefficients(coef, dcoef, np.array([1.0, 4.0]), per=np.array([0, 0]))
    >>> b = phi_from_coefficients(coef[[0, 0]], dcoef[[0, 0]], np.array([1.0, 4.0]))
    >>> bool(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))
    True
    """
    fn = aligned_phi_in_snr_function("numpy")
    dt = coef.dtype
    cols, dcols = coef.T.copy(), dcoef.T.copy()  # (7, rows): a block's gather reads contiguous columns
    rows = np.arange(coef.shape[0]) if per is None else np.asarray(per)
    n = rows.shape[0]

    def one(rows, snr):
        k = rows.shape[0]
        with np.errstate(all="ignore"):
            v = fn(tuple(cols.take(rows, axis=1)), tuple(dcols.take(rows, axis=1)), snr)
        return np.asarray(v[0], dtype=dt) * np.ones(k, dt), np.asarray(v[1], dtype=dt) * np.ones(k, dt)

    return blockwise(one, rows, np.broadcast_to(np.asarray(snr, dt), (n,)))


def gram_factor(gram, eig=None):
    """Rows ``B`` with ``B B^T = gram`` for a stack of PSD Gram matrices, from their eigendecomposition
    ``eig = (w, V)`` (computed when not given); the limit depends on the vectors only through their Gram.

    >>> B = gram_factor(np.array([[[4.0, 2], [2, 2]]]))
    >>> (B @ np.swapaxes(B, -1, -2)).round(12).tolist()
    [[[4.0, 2.0], [2.0, 2.0]]]
    """
    w, V = np.linalg.eigh(gram) if eig is None else eig
    return V * np.sqrt(np.clip(w, 0, None))[:, None, :]


def sym3(g):
    """The symmetric ``3x3`` matrices of a stack of the six entries in ``G_INDEX`` order.

    >>> sym3(np.arange(6.0)).tolist()
    [[0.0, 1.0, 2.0], [1.0, 3.0, 4.0], [2.0, 4.0, 5.0]]
    """
    out = np.empty(g.shape[:-1] + (3, 3), dtype=g.dtype)
    for k, (i, j) in enumerate(S.G_INDEX):
        out[..., i, j] = g[..., k]
        out[..., j, i] = g[..., k]
    return out


def solve(M, b):
    """Stacked dense solves (:func:`symrmt.core.batch.solve`); a singular system gives ``nan`` in its row only.

    ``M`` is ``(n, k, k)`` and ``b`` ``(n, k, r)``:

    >>> M = np.array([[[2.0, 0], [0, 4]], [[0.0, 0], [0, 0]]])
    >>> solve(M, np.ones((2, 2, 1)))[..., 0].tolist()
    [[0.5, 0.25], [nan, nan]]
    """
    return core_batch.solve(M, b)


def _woodbury_matrix(D, gm, size):
    """``I + D H`` with ``H = Gm (x) I_size``: ``(D H)[r, (b, i)] = sum_a D[r, (a, i)] Gm[a, b]``."""
    n, m, _ = D.shape
    DH = np.matmul(D.reshape(n, m, 3, size).transpose(0, 1, 3, 2), gm[:, None, :, :])  # (n, m, size, 3)
    return DH.transpose(0, 1, 3, 2).reshape(n, m, m) + np.eye(m, dtype=D.dtype)


def phi_woodbury(g, dg, gl, dgl, factor, a1: float, c):
    """``(varphi, dvarphi/dgamma)`` in float64 and, corrected, in long double, by the Woodbury update.

    ``D`` comes from the compiled :func:`symrmt.models.attention.equations.woodbury_D` of rank
    ``r = (k-1)/2`` at the coordinates ``factor`` (``(n, k, k)``, rows with
    ``factor factor^T`` the Gram matrix; see :func:`gram_factor`).  With
    ``H = Gm (x) I_s``, ``s = k+1``: ``x = (I + D H)^{-1} e``, ``varphi = e^T H x``,
    ``varphi' = x^T (Gm' (x) I_s) x`` (as in :mod:`symrmt.models.attention.equations`).  The second
    value uses the corrected fixed point ``gl, dgl`` and ``x`` after one step of
    mixed-precision iterative refinement (residual of ``(I + D H) x = e`` in long
    double at ``gl``, correction solved in float64).  Returns ``(phi, dphi, phi_ld, dphi_ld)``.

    Takes the float64 and long-double fixed points, the Gram factors, ``a_1`` and ``c``.  (No doctest: it needs the compiled float64 systems, seconds cold; the fast path's tests
    (``tests/models/attention/test_fast.py``, ``test_fast_grid.py``) run it through
    :func:`symrmt.models.attention.fast.solve_grid`.)
    """
    return blockwise(lambda *a: _phi_woodbury(*a, a1), g, dg, gl, dgl, factor, np.broadcast_to(np.asarray(c), (g.shape[0],)))


def _phi_woodbury(g, dg, gl, dgl, factor, c, a1):
    n, k, _ = factor.shape
    r = (k - 1) // 2
    size = k + 1
    m = 3 * size
    Dfun = woodbury_D_function(r, "numpy")
    coords = factor.reshape(n, k * k).T
    D = _stack(Dfun(tuple(coords), a1, c), n).reshape(n, m, m)
    # D in long double from the same coordinates: rounding D entry by entry is not a perturbation of the
    # geometry, and I + D H is ill-conditioned at small gamma
    Dl = _stack(Dfun(tuple(coords.astype(LD)), LD(a1), np.asarray(c, LD)), n, LD).reshape(n, m, m)
    M = _woodbury_matrix(D, sym3(g), size)
    e = np.zeros((n, m, 1))
    e[:, 0, 0] = 1
    with np.errstate(all="ignore"):
        x = solve(M, e)
        # residual of the system at the corrected fixed point, in long double; the correction by float64
        res = e.astype(LD) - np.matmul(_woodbury_matrix(Dl, sym3(gl), size), x.astype(LD))
        xl = x.astype(LD) + solve(M, res.astype(float))
    out = []
    for gg, dgg, xx in ((g, dg, x[:, :, 0]), (gl, dgl, xl[:, :, 0])):
        xb = xx.reshape(n, 3, size)
        phi = (sym3(gg)[:, 0, :] * xb[:, :, 0]).sum(axis=1)
        dphi = (np.matmul(sym3(dgg), xb) * xb).sum(axis=(1, 2))
        out += [phi, dphi]
    return tuple(out)
