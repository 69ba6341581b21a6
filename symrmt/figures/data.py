"""The data behind the figures: sizes and grids, theory values, simulation jobs (NumPy and mpmath; no
matplotlib)."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import partial
from types import MappingProxyType

import mpmath
import numpy as np

from symrmt.cache import cached
from symrmt.core.numbers import mpf_of
from symrmt.errors import BranchError
from symrmt.hermite import Nonlinearity
from symrmt.models.attention.fast import solve_grid
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.params import check_c, check_gammas
from symrmt.models.attention.solver import lowrank_D, woodbury_value
from symrmt.models.attention.sweeps import sweep
from symrmt.models.attention.theory import attention_limit, hermite_inputs
from symrmt.models.attention.trials import RIDGE_SPEC, ridge_key, summarize, SIMULATE_SPEC, simulate_point
from symrmt.progress import progress_bar
from symrmt.simulation.executor import run_trials, TrialBatch, make_executor

#: Digits asked of the theory for every curve and map.
DIGITS = 15

#: Error bars: mean +- ERRBAR * se.
ERRBAR = 2

#: Paper sizes (full mode) and quick-mode sizes.
FULL_N = 2048
FULL_N_SWEEP = 4096
QUICK_N = 512
QUICK_N_SWEEP = 256


def figure_progress(total: int, desc: str, progress: bool):
    """A progress bar over ``total`` steps labelled ``desc`` (drawn only where a terminal or notebook shows
    it, never when ``progress`` is false).

    >>> bar = figure_progress(3, "figure demo", progress=False)
    >>> bar.update(3); bar.count, bar.enabled
    (3, False)
    """
    return progress_bar(total, desc, enabled=None if progress else False)


def size_or_default(value, quick, full_value, full: bool):
    """``value`` when given, else the full-size default (``full``) or the quick one.

    >>> size_or_default(None, 64, 512, False), size_or_default(None, 64, 512, True), size_or_default(128, 64, 512, True)
    (64, 512, 128)
    """
    if value is not None:
        return value
    return full_value if full else quick


def as_floats(values):
    """``values`` (Fractions, mpf, ...) as a list of floats.

    >>> from fractions import Fraction
    >>> as_floats([Fraction(1, 2), 2])
    [0.5, 2.0]
    """
    return [float(v) for v in values]


def logspace(lo: float, hi: float, k: int) -> list[float]:
    """``k`` points from ``lo`` to ``hi``, evenly spaced in log, each rounded to 6 significant digits.

    >>> logspace(0.01, 1, 3)
    [0.01, 0.1, 1.0]
    """
    if k == 1:
        return [lo]
    return [float(f"{10 ** (math.log10(lo) + i * (math.log10(hi) - math.log10(lo)) / (k - 1)):.6g}") for i in range(k)]


def linspace(lo: float, hi: float, k: int) -> list[float]:
    """``k`` evenly spaced points from ``lo`` to ``hi``, each rounded to 6 significant digits.

    >>> linspace(0, 1, 4)
    [0.0, 0.333333, 0.666667, 1.0]
    """
    if k == 1:
        return [lo]
    return [float(f"{lo + i * (hi - lo) / (k - 1):.6g}") for i in range(k)]


def near_fraction(x: float, den: int = 10**6) -> Fraction:
    """The closest fraction to ``x`` with denominator at most ``den``.

    >>> near_fraction(0.333333)
    Fraction(333333, 1000000)
    >>> near_fraction(0.3333333333)
    Fraction(1, 3)
    """
    return Fraction(x).limit_denominator(den)


def aligned_geometry(snr: float, w2: float, cos: float):
    """Gram data of ``mu`` and ``w = w_K = w_Q`` with ``||mu||^2 ~ snr``, ``||w||^2 ~ w2``, angle ``acos(cos)``.

    The norms and the cosine are rounded to rationals first, so the Gram matrix
    is exactly positive semi-definite (``cos = 1`` gives an exactly rank-one Gram).

    >>> aligned_geometry(1, 4, 0.5)   # ||mu|| = 1, ||w|| = 2, mu . w = 1 * 2 * 1/2
    Geometry(snr=1, wk2=4, wq2=4, wkwq=4, muwk=1, muwq=1)
    """
    sm, sw = near_fraction(math.sqrt(snr)), near_fraction(math.sqrt(w2))
    cs = min(max(near_fraction(cos), Fraction(-1)), Fraction(1))
    return Geometry(snr=sm * sm, wk2=sw * sw, wq2=sw * sw, wkwq=sw * sw, muwk=sm * sw * cs, muwq=sm * sw * cs)


def _vector_geometry(mu, wk, wq):
    """Exact Gram data of three vectors given by (rounded) rational coordinates."""
    m, k, q = ([near_fraction(x, 1000) for x in v] for v in (mu, wk, wq))

    def dot(a, b):
        return sum(x * y for x, y in zip(a, b))

    return Geometry(snr=dot(m, m), wk2=dot(k, k), wq2=dot(q, q), wkwq=dot(k, q), muwk=dot(m, k), muwq=dot(m, q))


@cached(maxsize=64)
def preset_hermite(name: str, dps: int = 80) -> MappingProxyType:
    """Hermite data ``{"a1", "nu"}`` (mpf at ``dps`` digits) of a preset, computed once (read-only:
    pass ``dict(preset_hermite(name))`` where a dict is needed).  Raises the errors of
    :class:`~symrmt.hermite.Nonlinearity` for a name that is not a preset, before any quadrature (a preset's
    cold call costs most of a second: ``tests/figures`` calls it):

    >>> preset_hermite("tanhh")
    Traceback (most recent call last):
    ...
    symrmt.errors.UnknownNameError: f: unknown name 'tanhh'; did you mean 'tanh' or 'tan'? (known names: ...) in 'tanhh'
    """
    nl = Nonlinearity(name)
    return MappingProxyType({"a1": nl.a_mpf(1, dps), "nu": nl.nu_mpf(dps)})


@cached(maxsize=64)
def _numpy_f(name: str):
    return Nonlinearity(name).numpy()


def family_f(x, alpha: float, beta: float):
    """``alpha t + beta (t^2 - 1)/sqrt(2)``: ``a_1 = alpha``, ``a_2 = sqrt(2) beta``, ``nu = alpha^2 + beta^2``.

    The Hermite coefficients by 20-point Gauss-Hermite quadrature (exact for these polynomials):

    >>> import numpy as np
    >>> t, w = np.polynomial.hermite_e.hermegauss(20)
    >>> w = w / w.sum()
    >>> f = family_f(t, 0.6, 0.8)
    >>> round(float(w @ f), 12), round(float(w @ (f * t)), 12), round(float(w @ (f * f)), 12)   # E f, a_1, nu
    (0.0, 0.6, 1.0)
    """
    return alpha * x + beta * (x * x - 1.0) / math.sqrt(2.0)


def attention_over_geometries(f, c, gamma, geometries, digits: int = DIGITS):
    """``E_A(gamma)`` for many geometries at one ``(f, c, gamma)`` (list of mpf).

    The noise-only fixed point does not depend on the geometry, so it is solved
    once (:func:`symrmt.models.attention.theory.attention_limit` with ``details=True`` at
    ``digits + 5`` digits, two-precision checked); each geometry then costs
    one Woodbury solve (:func:`symrmt.models.attention.solver.woodbury_value`, the same
    identity ``attention_limit`` uses) at ``digits + 10`` digits.  The result agrees
    with ``attention_limit(f, c, [gamma], geometry)`` to about ``digits`` digits.  Raises
    :class:`~symrmt.errors.BranchError` for a value outside ``[0, 1]`` and the solver's errors.  (No
    doctest: it runs the solver; ``tests/figures`` checks it against ``attention_limit``.)
    """
    cf = check_c(c)
    (gf,) = check_gammas([gamma])
    point = attention_limit(f, cf, [gf], Geometry(), digits=digits + 5, details=True)[0]
    dps = digits + 10
    a1, _nu, _d = hermite_inputs(f, "zero", dps)
    out = []
    with mpmath.workdps(dps):
        gam = mpf_of(gf)
        for geom in geometries:
            if geom.snr == 0 and not geom.has_weights:
                dphi = point.block_traces_derivative[0]
            else:
                D = lowrank_D(geom, a1, cf, dps)
                _phi, dphi = woodbury_value(point.block_traces, point.block_traces_derivative, D)
            err = -gam**2 * dphi
            if not (-mpmath.mpf(10) ** (-digits) <= err <= 1 + mpmath.mpf(10) ** (-digits)):
                raise BranchError(f"E_A = {mpmath.nstr(err, 10)} outside [0, 1] for {geom}")
            out.append(+err)
    with mpmath.workdps(digits):
        return [+v for v in out]


def simulate_ridge(n: int, c, gammas, snr=0, trials: int = 10, seed: int = 0, *, store=None,
                   executor=None) -> dict:
    """Monte-Carlo ``E_RR`` only (no kernel): ``{"mean", "se", "p"}`` over ``gammas``.

    Same model and seeding as :func:`symrmt.models.attention.montecarlo.simulate` (trial ``j`` uses
    child ``j`` of ``SeedSequence(seed)``), through the ridge-only trial kind
    :data:`symrmt.models.attention.trials.RIDGE_SPEC`; it skips the Attention part, which
    dominates the cost when ``p >= n``.  ``store`` and ``executor`` as in ``simulate``.

    >>> r = simulate_ridge(16, "1/2", [1], trials=2)
    >>> r["p"], r["mean"].shape, bool(0 < r["mean"][0] < 1)
    (8, (1,), True)
    """
    key = ridge_key(n, c, gammas, snr)
    rows, _ = run_trials(RIDGE_SPEC, key, trials, seed, store=store, executor=executor, progress=False)
    return _ridge_summary(rows, key)


def _ridge_summary(rows, key) -> dict:
    return {"mean": rows.mean(axis=0), "se": rows.std(axis=0, ddof=1) / math.sqrt(rows.shape[0]),
            "p": round(Fraction(key["c"]) * key["n"])}


def _resolve_f(f):
    """A preset name, or ``("family", alpha, beta)``, as a NumPy callable (built in the worker)."""
    if isinstance(f, str):
        return _numpy_f(f)
    if isinstance(f, tuple) and f and f[0] == "family":
        return partial(family_f, alpha=f[1], beta=f[2])
    return f


class _FigF:
    """A figure's ``f`` (a preset name or ``("family", alpha, beta)``): small to send, built where it runs."""

    def __init__(self, spec):
        self.spec = spec

    @property
    def store_key(self) -> str:
        if isinstance(self.spec, str):
            return f"preset:{self.spec}"
        return f"family:alpha={self.spec[1]!r},beta={self.spec[2]!r}"

    def __call__(self, x):
        return _resolve_f(self.spec)(x)

    def __repr__(self):
        return f"f({self.store_key})"


class _Job:
    def __init__(self, sims, index, point):
        self._sims, self._index, self._point = sims, index, point

    def result(self) -> dict:
        rows, info = self._sims.batch.results(bar=self._sims.bar)[self._index]
        if self._point is None:
            return _ridge_summary(rows, self._sims.batch.points[self._index].params)
        res = summarize(self._point, rows, 0, info)
        return {k: {"mean": res[k]["mean"], "se": res[k]["se"]} for k in ("attention", "ridge")}


class FigureSims:
    """The simulations of one figure as one batch of trials (:class:`symrmt.simulation.executor.TrialBatch`).

    Submit every point, then :meth:`start` with the figure's progress bar (on Dask the
    trials run meanwhile, while this process computes the theory), then read each
    job's ``result()``.  ``workers > 1`` without an ``executor`` starts a local Dask
    cluster for this figure; ``store`` keeps and reuses the trials.

    >>> with FigureSims() as run:
    ...     job = run.ridge(16, "1/2", [1], 0, 2, 0)
    ...     run.start(None)
    ...     result = job.result()
    >>> run.trials, result["p"], bool(result["mean"][0] == simulate_ridge(16, "1/2", [1], trials=2)["mean"][0])
    (2, 8, True)
    """

    def __init__(self, store=None, executor=None, workers=None):
        self.store, self.executor, self.workers = store, executor, workers
        self.bar = None
        self._ctx = None

    def __enter__(self):
        if self.executor is None and self.workers is not None and int(self.workers) > 1:
            self._ctx = make_executor(workers=int(self.workers))
            self.executor = self._ctx.__enter__()
        self.batch = TrialBatch(store=self.store, executor=self.executor)
        return self

    def __exit__(self, *exc):
        self.batch.close()
        if self._ctx is not None:
            self._ctx.__exit__(*exc)

    @property
    def trials(self) -> int:
        """The number of trials queued so far over every job.

        >>> with FigureSims() as run:
        ...     _ = run.ridge(16, "1/2", [1], 0, 3, 0)
        ...     _ = run.ridge(16, "1/2", [1], 0, 2, 1)
        ...     run.trials
        5
        """
        return self.batch.total

    def ridge(self, n, c, gammas, snr, trials, seed) -> _Job:
        """Queue ``trials`` ridge-regression trials at ``n``, ``c``, ``gammas``, ``snr``; returns the job.

        >>> with FigureSims() as run:
        ...     job = run.ridge(16, "1/2", [0.1, 1], 0, 3, 0)
        ...     run.start(None)
        ...     job.result()["mean"].shape, run.trials
        ((2,), 3)
        """
        return _Job(self, self.batch.add(RIDGE_SPEC, ridge_key(n, c, gammas, snr), trials, seed), None)

    def sim(self, f, n, c, gammas, geometry, trials, seed) -> _Job:
        """Queue ``trials`` attention trials of ``f`` at ``n``, ``c``, ``gammas``, ``geometry``; returns the job.

        ``f`` a preset name or ``("family", alpha, beta)`` (:func:`family_f`):

        >>> from symrmt.models.attention.geometry import Geometry
        >>> with FigureSims() as run:
        ...     job = run.sim(("family", 1.0, 0.0), 16, "1/2", [1], Geometry(), 2, 0)
        ...     run.start(None)
        ...     result = job.result()
        >>> sorted(result), result["attention"]["mean"].shape
        (['attention', 'ridge'], (1,))
        """
        pt = simulate_point(_FigF(f), n, c, gammas, geometry=geometry, need_key=True)
        return _Job(self, self.batch.add(SIMULATE_SPEC, pt.key, trials, seed, pt.context), pt)

    def start(self, bar) -> None:
        """Start every queued trial, reporting progress on ``bar``.

        >>> with FigureSims() as run:
        ...     jobs = [run.ridge(16, "1/2", [1], 0, 2, seed) for seed in (0, 1)]
        ...     run.start(None)
        ...     [job.result()["p"] for job in jobs]
        [8, 8]
        """
        self.bar = bar
        self.batch.start()


#: presets drawn by :func:`random_inputs`
RANDOM_PRESETS = ("tanh", "relu", "erf", "sin", "cos", "gelu", "sigmoid", "linear", "abs", "sign")


def random_case(rng):
    """One random parameter set: ``(f, c, gamma, geometry)``.

    >>> import numpy as np
    >>> f, c, gamma, geometry = random_case(np.random.default_rng(0))
    >>> f in RANDOM_PRESETS, Fraction(1, 8) <= c <= 4, Fraction(1, 100) <= gamma <= 10, 0 <= geometry.snr <= 4
    (True, True, True, True)
    """
    f = RANDOM_PRESETS[int(rng.integers(len(RANDOM_PRESETS)))]
    c = near_fraction(float(10 ** rng.uniform(math.log10(1 / 8), math.log10(4))), 1000)
    gamma = near_fraction(float(10 ** rng.uniform(-2, 1)), 1000)
    snr = float(rng.uniform(0, 4))
    mu = [math.sqrt(snr), 0.0, 0.0]
    if rng.uniform() < 1 / 3:
        wk = wq = [0.0, 0.0, 0.0]
    else:
        def vec():
            v = rng.standard_normal(3)
            return list(v / math.sqrt(float(v @ v)) * math.sqrt(rng.uniform(0, 2)))

        wk = vec()
        wq = wk if rng.uniform() < 0.5 else vec()
    return f, c, gamma, _vector_geometry(mu, wk, wq)


def phase_diagram_data(grid: int = 25, digits: int = DIGITS, progress: bool = True, *, fast: bool = False,
                       certify: int = 4) -> dict:
    r"""The data of :func:`phase_diagram`: ``E_A - E_RR`` on both panels' grids, by :func:`symrmt.sweep`.

    tanh, ``gamma = 1``, every value certified to ``digits`` digits.  (a) ``W = I`` over
    ``(c, ||mu||^2)``, ``c`` log-spaced in ``[1/16, 4]``, ``||mu||^2`` in ``[0, 8]``; (b) ``c = 1/2``,
    ``w = w_K = w_Q`` with ``||w||^2 = 4`` at angle ``theta`` to ``mu`` (one tied axis of
    ``cos_muwk = cos_muwq``), over ``(cos theta, ||mu||^2)``.

    ``fast=True`` uses the float64 path (:func:`symrmt.models.attention.fast.solve_grid` on the two
    meshes directly; ``certify`` points per panel re-solved at 30 digits) instead of
    certified values.

    Returns
    -------
    dict
        ``c``, ``snr``, ``cos`` (the axes, float lists), ``diff_a``, ``diff_b`` (float arrays of
        shape ``(len(snr), len(c))`` and ``(len(snr), len(cos))``) and ``note`` (how the values
        were computed).

    Raises the solver's errors.  (No doctest: two grids of limits take seconds even at ``grid=3``.)
    """
    if fast:
        return _phase_diagram_fast(grid, certify)

    c_axis = [near_fraction(c) for c in logspace(1 / 16, 4, grid)]
    s_axis = [near_fraction(s) for s in linspace(0, 8, grid)]
    cos_axis = [near_fraction(x) for x in linspace(0, 1, grid)]
    show = None if progress else False
    opts = {"digits": digits, "progress": show, "fast": fast, "certify": certify}
    a = sweep("tanh", {"snr": s_axis, "c": c_axis, "gamma": 1}, seed=1, **opts)
    b = sweep("tanh", {"snr": s_axis, ("cos_muwk", "cos_muwq"): cos_axis, "c": Fraction(1, 2), "gamma": 1, "wk2": 4,
                       "wq2": 4, "cos_wkwq": 1}, seed=2, **opts)
    note = f"{digits} digits"
    if fast:
        note = f"float64 path, {sum(a.fallback) + sum(b.fallback)} mpmath fallbacks"
        gaps = [r.certified_gap for r in (a, b) if r.certified_gap is not None]
        if gaps:
            note += f", largest gap to 30 digits at {2 * certify} points: {max(gaps):.1e}"
    return {"c": as_floats(c_axis), "snr": as_floats(s_axis), "cos": as_floats(cos_axis),
            "diff_a": a.attention - a.ridge, "diff_b": b.attention - b.ridge, "note": note}


def _phase_diagram_fast(grid: int, certify: int) -> dict:
    """:func:`phase_diagram_data` on the float64 path: one :func:`symrmt.models.attention.fast.solve_grid` per
    panel on float meshes (no exact geometry per point, which would cost more than the solve)."""
    c_axis, s_axis, cos_axis = logspace(1 / 16, 4, grid), linspace(0, 8, grid), linspace(0, 1, grid)
    S_a, C_a = np.meshgrid(np.array(s_axis), np.array(c_axis), indexing="ij")
    S_b, COS_b = np.meshgrid(np.array(s_axis), np.array(cos_axis), indexing="ij")
    one = np.ones_like(S_b)
    m_b = np.sqrt(4 * S_b) * COS_b  # ||w||^2 = 4, w = w_K = w_Q at angle theta to mu
    a = solve_grid("tanh", {"c": C_a, "gamma": one, "snr": S_a}, certify=certify, seed=1)
    b = solve_grid("tanh", {"c": one / 2, "gamma": one, "snr": S_b, "wk2": 4 * one, "wq2": 4 * one,
                            "wkwq": 4 * one, "muwk": m_b, "muwq": m_b}, certify=certify, seed=2)
    note = f"float64 path, {int(a.fallback.sum() + b.fallback.sum())} mpmath fallbacks"
    gaps = [r.certified_gap for r in (a, b) if r.certified_gap is not None]
    if gaps:
        note += f", largest gap to 30 digits at {2 * certify} points: {max(gaps):.1e}"
    return {"c": c_axis, "snr": s_axis, "cos": cos_axis, "diff_a": a.attention - a.ridge,
            "diff_b": b.attention - b.ridge, "note": note}
