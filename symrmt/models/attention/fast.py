r"""The vectorised float64 path: both limits on a whole grid of parameter points at once.

:func:`solve_grid` evaluates ``E_A`` and ``E_RR`` at thousands of points in a fraction of a second from the same
SymPy systems as the mpmath solver, compiled for NumPy: the noise-only fixed point once per distinct
``(gamma, c)`` by continuation, ``varphi`` and ``E_A`` by the route the mpmath solver would take, every point
checked (Newton, a long-double residual, the branch, the estimated float64 error at most :data:`FALLBACK_TOL`)
and, where a check fails, recomputed alone by the mpmath solver at 15 digits (``fallback``); ``certify=k``
re-solves ``k`` random points at 30 digits.  The method and the measured accuracy are in ``docs/performance.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import mpmath
import numpy as np

from symrmt.models.attention import batch as B
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.errors import ParameterError
from symrmt.hermite import Nonlinearity
from symrmt.models.attention.hermite_data import hermite_at_least
from symrmt.models.attention.params import check_diagonal
from symrmt.models.attention.theory import attention_limit, ridge_limit

__all__ = ["FastGrid", "solve_grid", "distinct_rows", "FALLBACK_TOL", "KEYS"]

#: the keys ``points`` may have (missing ones are 0; ``c`` and ``gamma`` are required)
KEYS = ("c", "gamma", "snr", "wk2", "wq2", "wkwq", "muwk", "muwq")
#: a point whose estimated relative float64 error exceeds this is recomputed by mpmath
FALLBACK_TOL = 1e-11
#: relative size of the long-double correction of the fixed point above which a point fails
RESIDUAL_TOL = 1e-12
#: Gram matrices whose second eigenvalue is below this (relative) take the aligned closed form
ALIGNED_TOL = 1e-13
#: the aligned route evaluates ``varphi`` as a rational function of ``||mu||^2`` (its coefficients once per
#: distinct fixed point and ``w_K^T w_Q``: :func:`symrmt.models.attention.batch.aligned_coefficients`) when the
#: points outnumber those rows this many times, else the closed form at every point; ``E_RR`` likewise takes the
#: Marchenko-Pastur root once per distinct ``(gamma, c)`` when the points outnumber them this many times
HOIST_RATIO = 3
#: digits of the mpmath solves of fallback points, and of the certification
FALLBACK_DIGITS, CERTIFY_DIGITS = 15, 30


@dataclass
class FastGrid:
    """What :func:`solve_grid` returns (arrays of the points' shape, in the order given).

    Attributes
    ----------
    attention, ridge : ndarray of float64
        ``E_A`` and ``E_RR``.
    stieltjes : ndarray of float64
        ``m(-gamma) = lim tr Q / n`` of Attention (the ``(1,1)`` block trace ``tau``).
    fallback : ndarray of bool
        True where the float path failed a check and the mpmath solver recomputed the point.
    error_estimate : ndarray of float64
        Estimated relative error of the float64 values (the gap between the float64 value
        and the long-double-corrected one); at fallback points the estimate that sent them
        to mpmath (``inf`` where a check failed before it), while their values carry 15
        certified digits.
    route : ndarray of str
        ``noise_only``, ``a1_zero``, ``aligned`` or ``general`` per point.
    certified_gap : float or None
        Largest relative gap of the ``certify`` sample from its 30-digit mpmath values.
    certified : list of (int, float)
        The certified points (flat index) and their gaps.
    timings : dict
        Seconds spent in each stage (``hermite``, ``compile``, ``fixed_point``, ``values``,
        ``fallback``, ``certify``, ``total``) and counts (``points``, ``fixed_points``,
        ``fallbacks``).

    Examples
    --------
    One point made by hand (``solve_grid`` makes them):

    >>> g = FastGrid(np.array([0.5]), np.array([0.4]), np.array([0.9]), np.array([False]), np.array([1e-14]),
    ...              np.array(["noise_only"]))
    >>> g.route.tolist(), g.certified_gap, g.certified, g.timings
    (['noise_only'], None, [], {})
    """

    attention: np.ndarray
    ridge: np.ndarray
    stieltjes: np.ndarray
    fallback: np.ndarray
    error_estimate: np.ndarray
    route: np.ndarray
    certified_gap: float | None = None
    certified: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)


def _points(points):
    """Validated float64 columns, the Gram stack ``(n, k, k)``, the eigendecomposition ``(w, V, inverse)`` of
    the distinct Gram matrices (point ``i`` has ``w[inverse[i]]``) and the original shape."""
    if not isinstance(points, dict):
        raise ParameterError("points must be a dict of equal-length arrays keyed by " + ", ".join(KEYS))
    unknown = set(points) - set(KEYS) - {"gram"}
    if unknown:
        raise ParameterError(f"points: unknown keys {sorted(unknown)}; use {', '.join(KEYS)} (or 'gram')")
    for key in ("c", "gamma"):
        if key not in points:
            raise ParameterError(f"points needs the key {key!r}")
    arrays = {k: np.asarray(v, dtype=float) for k, v in points.items() if k != "gram"}
    shape = arrays["c"].shape
    for k, v in arrays.items():
        if v.shape != shape:
            raise ParameterError(f"points[{k!r}] has shape {v.shape}, but points['c'] has {shape}")
        if not np.isfinite(v).all():
            raise ParameterError(f"points[{k!r}] holds non-finite values (first at flat index "
                                 f"{int(np.flatnonzero(~np.isfinite(v.ravel()))[0])})")
    cols = {k: arrays[k].ravel() if k in arrays else np.zeros(int(np.prod(shape))) for k in KEYS}
    n = cols["c"].size
    for key in ("c", "gamma"):
        bad = np.flatnonzero(cols[key] <= 0)
        if bad.size:
            raise ParameterError(f"{key} must be positive; points[{key!r}] is {float(cols[key][bad[0]])!r} at flat index "
                                 f"{int(bad[0])}")
    if "gram" in points:
        if set(points) & {"snr", "wk2", "wq2", "wkwq", "muwk", "muwq"}:
            raise ParameterError("points: give either 'gram' or the Gram entries snr, wk2, ..., not both")
        gram = np.asarray(points["gram"], dtype=float).reshape(n, *np.shape(points["gram"])[-2:])
        k = gram.shape[-1]
        if gram.shape[-2] != k or k % 2 == 0 or not np.isfinite(gram).all():
            raise ParameterError(f"points['gram'] must be finite (n, 2r+1, 2r+1), got shape {np.shape(points['gram'])}")
        if not np.allclose(gram, np.swapaxes(gram, 1, 2), rtol=0, atol=0):
            raise ParameterError("points['gram']: the Gram matrices must be symmetric")
        cols["snr"] = gram[:, 0, 0].copy()
    else:
        gram = np.empty((n, 3, 3))
        gram[:, 0, 0], gram[:, 1, 1], gram[:, 2, 2] = cols["snr"], cols["wk2"], cols["wq2"]
        gram[:, 0, 1] = gram[:, 1, 0] = cols["muwk"]
        gram[:, 0, 2] = gram[:, 2, 0] = cols["muwq"]
        gram[:, 1, 2] = gram[:, 2, 1] = cols["wkwq"]
    # one eigendecomposition per distinct Gram matrix (a grid repeats them along its other axes)
    if "gram" in points:
        first, ginv = distinct_rows(list(gram.reshape(n, -1).T))
    else:
        first, ginv = distinct_rows([cols[k] for k in ("snr", "wk2", "wq2", "wkwq", "muwk", "muwq")])
    w, V = np.linalg.eigh(gram[first])
    neg = w[:, 0] < -1e-12 * np.maximum(1, np.abs(w).max(axis=1))
    if neg.any():
        bad = int(np.flatnonzero(neg[ginv])[0])
        err = ParameterError(f"the geometry at flat index {bad} is not a Gram matrix (eigenvalue "
                             f"{w[ginv[bad], 0]:.3g} < 0): check the Cauchy-Schwarz bounds of snr, wk2, wq2, wkwq, "
                             "muwk, muwq")
        err.index, err.eigenvalue = bad, float(w[ginv[bad], 0])  # for callers that name the point their way
        raise err
    return cols, gram, (w, V, ginv), shape


def distinct_rows(columns):
    """``(first, inverse)``: the index of one row per distinct row of the equal-length ``columns`` and,
    for every row, the number of its distinct row (as ``numpy.unique(..., axis=0)`` would give, up to
    the order of the distinct rows).  A constant column costs one comparison; the others one 1-D
    ``numpy.unique`` each (a grid's columns take few values), combined as integer keys.

    Takes a list of 1-D NumPy arrays of one length; returns two int arrays; raises nothing.

    >>> first, inverse = distinct_rows([np.array([1.0, 2.0, 1.0, 2.0]), np.array([5.0, 5.0, 5.0, 6.0])])
    >>> first.tolist(), inverse.tolist()
    ([0, 1, 3], [0, 1, 0, 2])
    """
    n = columns[0].size
    varying = [col for col in columns if n and not (col == col[0]).all()]
    if len(varying) == 1:  # one column varies: its own distinct values are the distinct rows (one sort)
        _, first, inverse = np.unique(varying[0], return_index=True, return_inverse=True)
        return first, inverse.ravel()
    key = np.zeros(n, dtype=np.int64)
    size = 1
    for col in varying:
        u, code = np.unique(col, return_inverse=True)
        if size * u.size >= 2**62:  # renumber the key before it overflows
            _, key = np.unique(key, return_inverse=True)
            size = int(key.max()) + 1
        key = key * u.size + code.ravel()
        size *= u.size
    if size == 1:
        return np.zeros(min(n, 1), dtype=np.int64), np.zeros(n, dtype=np.int64)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.ravel()


#: the routes of :func:`_routes`, by their code
ROUTES = ("noise_only", "a1_zero", "aligned", "general")


def _routes(a1: float, snr, eig):
    """The mpmath solver's route per point (:func:`symrmt.models.attention.theory.route_for`), rank decided in
    float, as its index in :data:`ROUTES` (``int8``); ``eig`` as :func:`_points` gives it."""
    w, _, ginv = eig
    top = np.abs(w).max(axis=1)
    rank_one = w[:, -2] <= ALIGNED_TOL * np.maximum(top, 1e-300)
    route = np.where(rank_one, np.int8(2), np.int8(3))[ginv]
    if a1 == 0:
        route[:] = 1
    route[snr == 0] = 0
    return route


def _nonlinearity(f, center: bool):
    if isinstance(f, dict) or not center:
        return f

    return f if isinstance(f, Nonlinearity) and f.center else Nonlinearity(f.text if isinstance(f, Nonlinearity)
                                                                               else f, center=True)


def _geometry_at(cols, gram, i, has_gram: bool):
    """The exact geometry of point ``i`` for the mpmath solver (the float values, read as decimals)."""
    if has_gram:
        return LowRankGeometry(gram[i].tolist())
    entries = {k: float(cols[k][i]) for k in ("snr", "wk2", "wq2", "wkwq", "muwk", "muwq")}
    try:
        return Geometry(**entries)
    except ParameterError:  # rounding put a rank-deficient Gram just outside the PSD cone: use its factor
        Bf = B.gram_factor(gram[i:i + 1])[0]
        return LowRankGeometry.from_vectors(Bf[0], Bf[1:2].T, Bf[2:3].T)


def _mp_point(f, c, gamma, geometry, diagonal, digits):
    a = attention_limit(f, c, [gamma], geometry, diagonal, digits, details=True)[0]
    r = ridge_limit(c, [gamma], geometry.snr, digits)[0]
    return a.error, r, a.stieltjes


def solve_grid(f, points, *, diagonal: str = "zero", center: bool = False, certify: int = 0, seed: int = 0):
    """``E_A`` and ``E_RR`` at every point of ``points`` on the float64 path (see the module docstring).

    Parameters
    ----------
    f : Nonlinearity, str or dict
        As :func:`symrmt.models.attention.theory.attention_limit` accepts: a preset name, an expression in ``t``, a
        :class:`~symrmt.hermite.Nonlinearity`, or Hermite data ``{"a1", "nu", "d"}``.
    points : dict of array_like
        Equal-shape arrays keyed by ``c``, ``gamma`` (both required), ``snr``, ``wk2``, ``wq2``,
        ``wkwq``, ``muwk``, ``muwq`` (the Gram entries of :class:`~symrmt.models.attention.geometry.Geometry`;
        missing ones are 0).  Instead of the Gram entries, ``gram`` may give ``(n, 2r+1, 2r+1)``
        Gram matrices of ``(mu, w_K^1..r, w_Q^1..r)`` (rank-``r`` weights, ``alpha = 1``).
    diagonal : {"zero", "keep"}
    center : bool
        Center ``f`` (subtract ``E f(xi)``), as :class:`~symrmt.hermite.Nonlinearity` does.
    certify : int
        Re-solve this many random points (chosen with ``seed``) at 30 digits by mpmath and report
        the largest relative gap in ``certified_gap``.
    seed : int

    Returns
    -------
    FastGrid

    Raises
    ------
    ParameterError
        A bad key, shape, a non-positive ``c`` or ``gamma``, a geometry that is not a Gram matrix.
    SolverError
        A point failed the float checks and the mpmath solver could not deliver it either.

    Examples
    --------
    >>> import numpy as np
    >>> r = solve_grid("tanh", {"c": np.array([0.5, 2.0]), "gamma": np.ones(2), "snr": np.array([1.0, 1.0])})
    >>> f"{r.attention[0]:.12f}", r.fallback.tolist()
    ('0.431819565620', [False, False])
    >>> from symrmt.models.attention.theory import attention_limit
    >>> from symrmt.models.attention.geometry import Geometry
    >>> exact = attention_limit("tanh", 2, [1], Geometry(snr=1), digits=20)[0]
    >>> bool(abs(r.attention[1] - float(exact)) < 1e-12 * float(exact))
    True
    """
    t_start = time.perf_counter()
    timings = {}
    diagonal = check_diagonal(diagonal)
    if not isinstance(certify, (int, np.integer)) or isinstance(certify, bool) or certify < 0:
        raise ParameterError(f"certify must be a non-negative integer, got {certify!r}")
    cols, gram, eig, shape = _points(points)
    n = cols["c"].size
    f = _nonlinearity(f, center)

    t = time.perf_counter()

    a1, nu, d = (float(x) for x in hermite_at_least(f, diagonal, 20))
    timings["hermite"] = time.perf_counter() - t

    t = time.perf_counter()
    B.numpy_functions()
    route = _routes(a1, cols["snr"], eig)
    timings["compile"] = time.perf_counter() - t

    # ---- noise-only fixed point, once per distinct (gamma, c)
    t = time.perf_counter()
    first, inv = distinct_rows([cols["gamma"], cols["c"]])
    gu, cu = cols["gamma"][first], cols["c"][first]
    g, dg, step, ok = B.continuation_tree(gu, cu, a1, nu, d)
    gl, dgl, resid = B.refine(g, dg, gu, cu, a1, nu, d)
    ok &= resid <= RESIDUAL_TOL
    ok &= B.branch_ok(g, dg, gu, cu, a1, nu, d) & B.branch_ok(gl, dgl, gu, cu, a1, nu, d)
    timings["fixed_point"] = time.perf_counter() - t

    # ---- varphi, E_A and E_RR per point
    t = time.perf_counter()
    gamma, c, snr = cols["gamma"], cols["c"], cols["snr"]
    phi = np.empty(n)
    dphi = np.empty(n)
    phil = np.empty(n, dtype=B.LD)
    dphil = np.empty(n, dtype=B.LD)
    for code, name in enumerate(ROUTES):
        idx = np.flatnonzero(route == code)
        if not idx.size:
            continue
        j = inv[idx]
        if name == "noise_only":
            phi[idx], dphi[idx], phil[idx], dphil[idx] = g[j, 0], dg[j, 0], gl[j, 0], dgl[j, 0]
        elif name == "general":
            phi[idx], dphi[idx], phil[idx], dphil[idx] = B.phi_woodbury(
                g[j], dg[j], gl[j], dgl[j], B.gram_factor(None, (eig[0][eig[2][idx]], eig[1][eig[2][idx]])), a1, c[idx])
        else:
            k = gram.shape[-1]
            r = (k - 1) // 2
            wkwq = gram[idx, 1:1 + r, 1 + r:].trace(axis1=1, axis2=2) if k > 3 else gram[idx, 1, 2]
            rows, per = distinct_rows([j.astype(float), wkwq]) if name == "aligned" else (idx, None)
            if rows.size * HOIST_RATIO <= idx.size:  # many snr per (fixed point, w_K^T w_Q): the rational form
                at, cr, wr = j[rows], c[idx[rows]], wkwq[rows]
                for gg, dgg, out, dout in ((g, dg, phi, dphi), (gl, dgl, phil, dphil)):
                    coef, dcoef = B.aligned_coefficients(gg[at], dgg[at], a1, cr, wr)
                    out[idx], dout[idx] = B.phi_from_coefficients(coef, dcoef, snr[idx], per)
            else:
                phi[idx], dphi[idx] = B.phi_closed(name, g[j], dg[j], a1, c[idx], snr[idx], wkwq)
                phil[idx], dphil[idx] = B.phi_closed(name, gl[j], dgl[j], a1, c[idx], snr[idx], wkwq)
    att64 = -gamma**2 * dphi
    attl = -gamma.astype(B.LD) ** 2 * dphil
    if gu.size * HOIST_RATIO <= n:  # E_RR: the Marchenko-Pastur root once per distinct (gamma, c), the rest per point
        rid64 = B.ridge_from_root(B.ridge_parts(gu, cu)[inv], gamma, c, snr)
        ridl = B.ridge_from_root(B.ridge_parts(gu, cu, B.LD)[inv], gamma, c, snr, B.LD)
    else:
        rid64, ridl = B.ridge(gamma, c, snr), B.ridge(gamma, c, snr, B.LD)
    with np.errstate(all="ignore"):
        est = np.maximum(np.abs((att64 - attl) / attl), np.abs((rid64 - ridl) / ridl)).astype(float)
        est[~np.isfinite(est)] = np.inf
        if not B.EXTENDED:  # no wider type to correct with: the measured float64 error, about 1e-16 / gamma
            est = np.maximum(est, 1e-16 * (1 + 1 / gamma))
        good = ok[inv] & (est <= FALLBACK_TOL)
        good &= (phil > 0) & (phil * gamma <= 1 + 1e-12)
        good &= (attl >= 0) & (attl <= 1) & (ridl >= 0) & (ridl <= 1)
    attention = attl.astype(float)
    ridge = ridl.astype(float)
    stieltjes = gl[inv, 0].astype(float)
    timings["values"] = time.perf_counter() - t

    # ---- fallback: mpmath, point by point
    t = time.perf_counter()
    fallback = ~good
    has_gram = "gram" in points
    for i in np.flatnonzero(fallback):
        geom = _geometry_at(cols, gram, i, has_gram)
        try:
            a, r, m = _mp_point(f, float(c[i]), float(gamma[i]), geom, diagonal, FALLBACK_DIGITS)
        except ArithmeticError as exc:
            raise type(exc)(f"solve_grid: point {int(i)} (c={float(c[i])!r}, gamma={float(gamma[i])!r}, snr={float(snr[i])!r}) failed "
                            f"the float checks and the mpmath solver: {exc}") from exc
        attention[i], ridge[i], stieltjes[i] = float(a), float(r), float(m)
    timings["fallback"] = time.perf_counter() - t

    # ---- certification
    t = time.perf_counter()
    certified = []
    if certify:
        rng = np.random.default_rng(seed)
        for i in sorted(rng.choice(n, size=min(int(certify), n), replace=False).tolist()):
            geom = _geometry_at(cols, gram, i, has_gram)
            a, r, _ = _mp_point(f, float(c[i]), float(gamma[i]), geom, diagonal, CERTIFY_DIGITS)
            gap = max(_rel_gap(attention[i], a), _rel_gap(ridge[i], r))
            certified.append((int(i), gap))
    timings["certify"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_start
    timings.update(points=n, fixed_points=int(gu.size), fallbacks=int(fallback.sum()))
    return FastGrid(
        attention=attention.reshape(shape), ridge=ridge.reshape(shape), stieltjes=stieltjes.reshape(shape),
        fallback=fallback.reshape(shape),
        error_estimate=est.reshape(shape), route=np.array(ROUTES)[route].reshape(shape),
        certified_gap=max(gp for _, gp in certified) if certified else None, certified=certified,
        timings=timings,
    )


def _rel_gap(x: float, exact) -> float:
    """``|x - exact| / |exact|`` in mpmath (absolute when ``exact == 0``)."""
    with mpmath.workdps(40):
        diff = abs(mpmath.mpf(x) - exact)
        return float(diff / abs(exact)) if exact != 0 else float(diff)
