r"""Figures: the limits (curves) against the Monte-Carlo simulation (points).

Every figure draws the theory of :mod:`symrmt.numeric.theory` as lines and the
simulation of :func:`symrmt.simulation.montecarlo.simulate` as points with error bars
(mean :math:`\pm 2` standard errors over independent trials), and is saved as
PNG and PDF.  matplotlib is needed (``pip install 'symrmt[plot]'``); it is
imported inside the functions, through the object-oriented API only (no
``pyplot``, no GUI backend).

Figures
-------
:func:`ridge_error`
    ``E_RR`` against ``gamma`` (log axis), against ``c = p/n`` at fixed ``n``
    and against ``||mu||^2``.
:func:`random_inputs`
    ``E_A`` against ``E_RR`` on random inputs (random ``c``, ``gamma``,
    ``||mu||^2``, ``(w_K, w_Q)`` and ``f`` from the presets), with the line ``y = x``.
:func:`role_of_a1`
    ``E_A`` against ``gamma`` for tanh, ReLU, erf and cos, and ``E_A`` along
    the family ``f_a(t) = a t + sqrt(nu - a^2) (t^2 - 1)/sqrt(2)`` that moves
    ``a_1 = a`` from 0 to ``sqrt(nu)`` at fixed ``nu``.
:func:`alignment`
    ``E_A`` against the angle ``theta`` between ``w = w_K = w_Q`` and ``mu``.
:func:`phase_diagram`
    Where Attention beats ridge (``E_A < E_RR``), from the limits alone: over
    ``(c, ||mu||^2)`` with ``W = I``, and over ``(cos theta, ||mu||^2)``.

Each function takes the output folder, ``full`` (paper sizes: ``n = 2048``,
``p = 512``, ``n = 4096`` for the sweep in ``p``) and ``progress``, plus keyword
overrides of the sizes (``n``, ``trials``, ``points``, ...) so that a tiny
version runs in a test; it returns the list of written paths.  :func:`main`
draws them all.

Quick mode (the default) uses ``n = 512`` (``n = 256`` for the sweep in ``p``)
and takes a few minutes on two cores (about 4.5 minutes on a busy two-core
machine); ``full=True`` takes much longer (tens of minutes or more: the
simulations at ``n = 2048`` with ``p`` up to ``4n`` dominate).

The simulations go through :mod:`symrmt.simulation.executor`, one batch of
trials per figure.  By default they run in this process.  ``workers=N`` starts a
local Dask cluster of ``N`` worker processes with one BLAS thread each (a script
then needs an ``if __name__ == "__main__":`` guard), and ``executor=`` passes one
already started (:func:`main` starts one for all figures, or connects to a
``scheduler``); on Dask the trials run while this process computes the theory.
``store=`` (a path to a trial store, :mod:`symrmt.simulation.store`) keeps every
trial as it finishes and reuses the stored ones, so a rerun after an
interruption continues where it stopped and a finished figure redraws without
simulating.
"""

from __future__ import annotations

import math
import sys
import time
from fractions import Fraction
from functools import lru_cache, partial
from pathlib import Path

__all__ = [
    "FIGURES",
    "alignment",
    "attention_over_geometries",
    "phase_diagram_data",
    "main",
    "phase_diagram",
    "random_inputs",
    "ridge_error",
    "role_of_a1",
    "simulate_ridge",
]

#: Digits asked of the theory for every curve and map.
DIGITS = 15
#: Error bars: mean +- ERRBAR * se.
ERRBAR = 2
#: Paper sizes (full mode) and quick-mode sizes.
FULL_N = 2048
FULL_N_SWEEP = 4096
QUICK_N = 512
QUICK_N_SWEEP = 256

_INSTALL_HINT = "matplotlib is needed to draw the figures: pip install 'symrmt[plot]'"
_DPI = 150


# ---------------------------------------------------------------------------
# plumbing
# ---------------------------------------------------------------------------
def _matplotlib():
    """``(Figure, colors)``: the matplotlib Figure class, imported lazily."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(_INSTALL_HINT) from exc
    return Figure


def _new_figure(ncols: int, width: float = 5.0, height: float = 4.3):
    Figure = _matplotlib()
    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def _save(fig, out, name: str) -> list[str]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "pdf"):
        path = out / f"{name}.{ext}"
        meta = {"Software": None} if ext == "png" else {"Creator": None, "Producer": None, "CreationDate": None}
        fig.savefig(path, dpi=_DPI, metadata=meta)
        paths.append(str(path))
    return paths


def _progress(total: int, desc: str, progress: bool):
    from symrmt.progress import progress_bar

    return progress_bar(total, desc, enabled=None if progress else False)


def _size(value, quick, full_value, full: bool):
    if value is not None:
        return value
    return full_value if full else quick


def _floats(values):
    return [float(v) for v in values]


def _logspace(lo: float, hi: float, k: int) -> list[float]:
    if k == 1:
        return [lo]
    return [float(f"{10 ** (math.log10(lo) + i * (math.log10(hi) - math.log10(lo)) / (k - 1)):.6g}") for i in range(k)]


def _linspace(lo: float, hi: float, k: int) -> list[float]:
    if k == 1:
        return [lo]
    return [float(f"{lo + i * (hi - lo) / (k - 1):.6g}") for i in range(k)]


def _errorbar(ax, x, mean, se, **kw):
    kw.setdefault("fmt", "o")
    kw.setdefault("ms", 4)
    kw.setdefault("capsize", 2.5)
    kw.setdefault("elinewidth", 1)
    kw.setdefault("zorder", 3)
    ax.errorbar(x, mean, yerr=[ERRBAR * s for s in se], **kw)


def _frac(x: float, den: int = 10**6) -> Fraction:
    return Fraction(x).limit_denominator(den)


def _aligned_geometry(snr: float, w2: float, cos: float):
    """Gram data of ``mu`` and ``w = w_K = w_Q`` with ``||mu||^2 ~ snr``, ``||w||^2 ~ w2``, angle ``acos(cos)``.

    The norms and the cosine are rounded to rationals first, so the Gram matrix
    is exactly positive semi-definite (``cos = 1`` gives an exactly rank-one Gram).
    """
    from symrmt.params import Geometry

    sm, sw = _frac(math.sqrt(snr)), _frac(math.sqrt(w2))
    cs = min(max(_frac(cos), Fraction(-1)), Fraction(1))
    return Geometry(snr=sm * sm, wk2=sw * sw, wq2=sw * sw, wkwq=sw * sw, muwk=sm * sw * cs, muwq=sm * sw * cs)


def _vector_geometry(mu, wk, wq):
    """Exact Gram data of three vectors given by (rounded) rational coordinates."""
    from symrmt.params import Geometry

    m, k, q = ([_frac(x, 1000) for x in v] for v in (mu, wk, wq))

    def dot(a, b):
        return sum(x * y for x, y in zip(a, b))

    return Geometry(snr=dot(m, m), wk2=dot(k, k), wq2=dot(q, q), wkwq=dot(k, q), muwk=dot(m, k), muwq=dot(m, q))


@lru_cache(maxsize=None)
def _hermite(name: str, dps: int = 80) -> dict:
    """Hermite data ``{"a1", "nu"}`` (mpf at ``dps`` digits) of a preset, computed once."""
    from symrmt.symbolic.hermite import Nonlinearity

    nl = Nonlinearity(name)
    return {"a1": nl.a_mpf(1, dps), "nu": nl.nu_mpf(dps)}


@lru_cache(maxsize=None)
def _numpy_f(name: str):
    from symrmt.symbolic.hermite import Nonlinearity

    return Nonlinearity(name).numpy()


def _family_f(x, alpha: float, beta: float):
    """``alpha t + beta (t^2 - 1)/sqrt(2)``: ``a_1 = alpha``, ``a_2 = sqrt(2) beta``, ``nu = alpha^2 + beta^2``."""
    return alpha * x + beta * (x * x - 1.0) / math.sqrt(2.0)


# ---------------------------------------------------------------------------
# theory and simulation helpers
# ---------------------------------------------------------------------------
def attention_over_geometries(f, c, gamma, geometries, digits: int = DIGITS):
    """``E_A(gamma)`` for many geometries at one ``(f, c, gamma)`` (list of mpf).

    The noise-only fixed point does not depend on the geometry, so it is solved
    once (:func:`symrmt.numeric.theory.attention_limit` with ``details=True`` at
    ``digits + 5`` digits, two-precision checked); each geometry then costs
    one Woodbury solve (:func:`symrmt.numeric.solver.woodbury_value`, the same
    identity ``attention_limit`` uses) at ``digits + 10`` digits.  The result agrees
    with ``attention_limit(f, c, [gamma], geometry)`` to about ``digits`` digits.
    """
    import mpmath

    from symrmt.numeric.solver import BranchError, lowrank_D, mpf_of, woodbury_value
    from symrmt.params import Geometry, check_c, check_gammas
    from symrmt.numeric.theory import attention_limit, hermite_inputs

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

    Same model and seeding as :func:`symrmt.simulation.montecarlo.simulate` (trial ``j`` uses
    child ``j`` of ``SeedSequence(seed)``), through the ridge-only trial kind
    :data:`symrmt.simulation.trials.RIDGE_SPEC`; it skips the Attention part, which
    dominates the cost when ``p >= n``.  ``store`` and ``executor`` as in ``simulate``.
    """
    from symrmt.simulation.executor import run_trials
    from symrmt.simulation.trials import RIDGE_SPEC, ridge_key

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
        return partial(_family_f, alpha=f[1], beta=f[2])
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
        from symrmt.simulation.trials import summarize

        rows, info = self._sims.batch.results(bar=self._sims.bar)[self._index]
        if self._point is None:
            return _ridge_summary(rows, self._sims.batch.points[self._index].params)
        res = summarize(self._point, rows, 0, info)
        return {k: {"mean": res[k]["mean"], "se": res[k]["se"]} for k in ("attention", "ridge")}


class _Sims:
    """The simulations of one figure as one batch of trials (:class:`symrmt.simulation.executor.TrialBatch`).

    Submit every point, then :meth:`start` with the figure's progress bar (on Dask the
    trials run meanwhile, while this process computes the theory), then read each
    job's ``result()``.  ``workers > 1`` without an ``executor`` starts a local Dask
    cluster for this figure; ``store`` keeps and reuses the trials.
    """

    def __init__(self, store=None, executor=None, workers=None):
        self.store, self.executor, self.workers = store, executor, workers
        self.bar = None
        self._ctx = None

    def __enter__(self):
        from symrmt.simulation.executor import TrialBatch, make_executor

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
        return self.batch.total

    def ridge(self, n, c, gammas, snr, trials, seed) -> _Job:
        from symrmt.simulation.trials import RIDGE_SPEC, ridge_key

        return _Job(self, self.batch.add(RIDGE_SPEC, ridge_key(n, c, gammas, snr), trials, seed), None)

    def sim(self, f, n, c, gammas, geometry, trials, seed) -> _Job:
        from symrmt.simulation.trials import SIMULATE_SPEC, simulate_point

        pt = simulate_point(_FigF(f), n, c, gammas, geometry=geometry, need_key=True)
        return _Job(self, self.batch.add(SIMULATE_SPEC, pt.key, trials, seed, pt.context), pt)

    def start(self, bar) -> None:
        self.bar = bar
        self.batch.start()


# ---------------------------------------------------------------------------
# figure 1: ridge regression
# ---------------------------------------------------------------------------
def ridge_error(out, full: bool = False, progress: bool = True, *, n=None, n_sweep=None, trials=None,
                points=None, seed: int = 0, workers=None, store=None, executor=None) -> list[str]:
    """``E_RR``: against ``gamma`` (log axis), against ``c = p/n`` at fixed ``n``, against ``||mu||^2``.

    Theory: :func:`symrmt.numeric.theory.ridge_limit` (closed form).  Simulation: ridge
    only (:func:`simulate_ridge`), ``n = 2048`` (``p = 512`` at ``c = 1/4``) and
    ``n = 4096`` for the sweep in ``p`` with ``full=True``; ``n = 512`` and
    ``256`` otherwise.  ``||mu||^2 = 1`` in (a) and (b), ``c = 1/4`` in (c).
    """
    from symrmt.numeric.theory import ridge_limit

    n = _size(n, QUICK_N, FULL_N, full)
    n_sweep = _size(n_sweep, QUICK_N_SWEEP, FULL_N_SWEEP, full)
    trials = _size(trials, 20, 40, full)
    points = _size(points, 60, 120, full)
    snr0, c0 = 1, Fraction(1, 4)

    cs_a = [Fraction(1, 4), Fraction(1), Fraction(2)]
    g_curve = _logspace(1e-3, 1e2, points)
    g_sim = [1e-3, 1e-2, 1e-1, 1, 10, 100]
    gammas_bc = [0.01, 0.1, 1.0]
    c_curve = _logspace(1 / 16, 4, points)
    c_sim = [Fraction(1, 16), Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1),
             Fraction(3, 2), Fraction(2), Fraction(4)]
    if n_sweep > 2048:  # p = 4 n = 16384 is too costly for a routine run
        c_sim = [c for c in c_sim if c <= 2]
    s_curve = _linspace(0, 8, points)
    s_sim = [0, 1, 2, 4, 6, 8]
    colors = ["C0", "C1", "C2"]
    fig, (ax_a, ax_b, ax_c) = _new_figure(3)
    with _Sims(store, executor, workers) as run, _progress(3, "figure ridge_error", progress) as bar:
        jobs_a = [run.ridge(n, c, g_sim, snr0, trials, seed) for c in cs_a]
        jobs_b = [run.ridge(n_sweep, c, gammas_bc, snr0, trials, seed) for c in c_sim]
        jobs_c = [run.ridge(n, c0, gammas_bc, s, trials, seed) for s in s_sim]
        bar.total += run.trials
        run.start(bar)

        curves_a = [_floats(ridge_limit(c, g_curve, snr0, DIGITS)) for c in cs_a]
        bar.update()
        curves_b = {g: [] for g in gammas_bc}
        for c in c_curve:
            for g, v in zip(gammas_bc, ridge_limit(_frac(c), gammas_bc, snr0, DIGITS)):
                curves_b[g].append(float(v))
        bar.update()
        curves_c = {g: [] for g in gammas_bc}
        for snr in s_curve:
            for g, v in zip(gammas_bc, ridge_limit(c0, gammas_bc, _frac(snr), DIGITS)):
                curves_c[g].append(float(v))
        bar.update()

        for col, c, y, job in zip(colors, cs_a, curves_a, jobs_a):
            sim = job.result()
            ax_a.plot(g_curve, y, color=col, label=f"limit, c = {c}")
            _errorbar(ax_a, g_sim, sim["mean"], sim["se"], color=col, label=f"simulation, n = {n}, p = {sim['p']}")
        sims_b = [job.result() for job in jobs_b]
        sims_c = [job.result() for job in jobs_c]

    ax_a.set_xscale("log")
    ax_a.set_xlabel(r"ridge parameter $\gamma$")
    ax_a.set_title(rf"(a) against $\gamma$, $\|\mu\|^2 = {snr0}$", fontsize=10)
    ax_a.legend(fontsize=7.5, loc="upper left")
    for i, (col, g) in enumerate(zip(colors, gammas_bc)):
        ax_b.plot(c_curve, curves_b[g], color=col, label=rf"$\gamma = {g:g}$")
        _errorbar(ax_b, [float(c) for c in c_sim], [s["mean"][i] for s in sims_b], [s["se"][i] for s in sims_b],
                  color=col)
        ax_c.plot(s_curve, curves_c[g], color=col, label=rf"$\gamma = {g:g}$")
        _errorbar(ax_c, s_sim, [s["mean"][i] for s in sims_c], [s["se"][i] for s in sims_c], color=col)
    ax_b.axvline(1, color="0.6", lw=0.8, ls=":")
    ax_b.set_xscale("log")
    ax_b.set_xlabel(rf"$c = p/n$ (sweep in $p$ at $n = {n_sweep}$)")
    ax_b.set_title(rf"(b) against $c$, $\|\mu\|^2 = {snr0}$", fontsize=10)
    ax_b.legend(fontsize=8, loc="upper left")
    ax_c.set_xlabel(r"signal strength $\|\mu\|^2$")
    ax_c.set_title(rf"(c) against $\|\mu\|^2$, $c = 1/4$ ($n = {n}$, $p = {round(c0 * n)}$)", fontsize=10)
    ax_c.legend(fontsize=8, loc="upper right")
    for ax in (ax_a, ax_b, ax_c):
        ax.set_ylabel(r"$E_{RR}(\gamma)$")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    fig.suptitle(
        r"Ridge regression on the tokens: interpolation error $E_{RR}(\gamma)$. "
        rf"Lines: large-$n$ limit; points: simulation, mean $\pm$ {ERRBAR} se over {trials} trials",
        fontsize=11,
    )
    return _save(fig, out, "ridge_error")


# ---------------------------------------------------------------------------
# figure 2: random inputs
# ---------------------------------------------------------------------------
#: presets drawn by :func:`random_inputs`
RANDOM_PRESETS = ("tanh", "relu", "erf", "sin", "cos", "gelu", "sigmoid", "linear", "abs", "sign")


def _random_case(rng):
    """One random parameter set: ``(f, c, gamma, geometry)``."""
    f = RANDOM_PRESETS[int(rng.integers(len(RANDOM_PRESETS)))]
    c = _frac(float(10 ** rng.uniform(math.log10(1 / 8), math.log10(4))), 1000)
    gamma = _frac(float(10 ** rng.uniform(-2, 1)), 1000)
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


def random_inputs(out, full: bool = False, progress: bool = True, *, n=None, trials=None, count=None,
                  simulated=None, seed: int = 0, workers=None, store=None, executor=None) -> list[str]:
    """``E_A`` against ``E_RR`` on ``count`` random parameter sets, with the line ``y = x``.

    Each set draws ``f`` from :data:`RANDOM_PRESETS`, ``c`` log-uniform in
    ``[1/8, 4]``, ``gamma`` log-uniform in ``[0.01, 10]``, ``||mu||^2`` uniform in
    ``[0, 4]`` and, two times in three, ``w_K`` (and ``w_Q = w_K`` or an
    independent direction) with ``||w_K||^2, ||w_Q||^2`` uniform in ``[0, 2]``.
    The first ``simulated`` sets are also simulated at ``n``.
    """
    import numpy as np

    from symrmt.numeric.theory import attention_limit, ridge_limit

    n = _size(n, QUICK_N, FULL_N, full)
    trials = _size(trials, 10, 30, full)
    count = _size(count, 30, 80, full)
    simulated = min(_size(simulated, 8, 20, full), count)
    rng = np.random.default_rng(seed)
    cases = [_random_case(rng) for _ in range(5 * count)]
    rows = []
    with _Sims(store, executor, workers) as run, _progress(count, "figure random_inputs", progress) as bar:
        jobs = [run.sim(f, n, c, [g], geom, trials, seed + i) for i, (f, c, g, geom) in enumerate(cases[:simulated])]
        bar.total += run.trials
        run.start(bar)
        for i, (f, c, gamma, geom) in enumerate(cases):
            if len(rows) == count:
                break
            try:
                ea = float(attention_limit(_hermite(f), c, [gamma], geom, digits=DIGITS)[0])
            except ArithmeticError as exc:  # the solver refuses rather than guess: draw another set
                if i < simulated:
                    raise
                print(f"random_inputs: skipped f={f}, c={c}, gamma={gamma}: {exc}", file=sys.stderr)
                continue
            er = float(ridge_limit(c, [gamma], geom.snr, DIGITS)[0])
            rows.append({"f": f, "c": c, "gamma": gamma, "geometry": geom, "E_A": ea, "E_RR": er})
            bar.update()
        if len(rows) < count:
            raise RuntimeError("random_inputs: too many parameter sets refused by the solver")
        for row, job in zip(rows, jobs):
            row["sim"] = job.result()

    fig, (ax,) = _new_figure(1, width=6.4, height=6.4)
    names = sorted({r["f"] for r in rows}, key=RANDOM_PRESETS.index)
    markers = "osD^v<>pXh"
    ax.plot([0, 1], [0, 1], color="0.4", lw=1, ls="--", label="$E_A = E_{RR}$")
    for name in names:
        k = RANDOM_PRESETS.index(name)
        sel = [r for r in rows if r["f"] == name]
        ax.scatter([r["E_RR"] for r in sel], [r["E_A"] for r in sel], color=f"C{k}", marker=markers[k], s=36,
                   facecolors="none", linewidths=1.3, label=f"{name}", zorder=2)
    for i, r in enumerate(rows[:simulated]):
        sim = r["sim"]
        ax.errorbar(
            sim["ridge"]["mean"][0], sim["attention"]["mean"][0],
            xerr=ERRBAR * sim["ridge"]["se"][0], yerr=ERRBAR * sim["attention"]["se"][0],
            fmt=".", color="k", ms=3, elinewidth=0.9, capsize=2, zorder=3,
            label=rf"simulation ($\pm${ERRBAR} se)" if i == 0 else None,
        )
    above = sum(r["E_A"] > r["E_RR"] for r in rows)
    ax.text(0.97, 0.03, f"limits: $E_A > E_{{RR}}$ for {above} of {len(rows)} sets",
            transform=ax.transAxes, ha="right", va="bottom", fontsize=9,
            bbox={"facecolor": "white", "edgecolor": "0.7", "alpha": 0.9})
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.set_xlabel(r"ridge regression $E_{RR}(\gamma)$")
    ax.set_ylabel(r"nonlinear Attention $E_A(\gamma)$")
    ax.legend(fontsize=8, loc="upper left", ncol=2, title="limit (open markers)", title_fontsize=8)
    ax.set_title(
        "Attention vs ridge on random inputs (limits, " + f"{DIGITS} digits)\n"
        r"$c \in [1/8, 4]$, $\gamma \in [0.01, 10]$, $\|\mu\|^2 \in [0, 4]$, random $w_K, w_Q$, $K_{ii} = 0$;"
        "\n"
        rf"{simulated} sets simulated at $n = {n}$ ({trials} trials, $p = \mathrm{{round}}(cn)$)",
        fontsize=10,
    )
    return _save(fig, out, "random_inputs")


# ---------------------------------------------------------------------------
# figure 3: role of a_1
# ---------------------------------------------------------------------------
def role_of_a1(out, full: bool = False, progress: bool = True, *, n=None, trials=None, points=None,
               fs=("tanh", "relu", "erf", "cos"), gamma_range=(1e-3, 1e2), seed: int = 0,
               workers=None, store=None, executor=None) -> list[str]:
    """``E_A`` against ``gamma`` for tanh, ReLU, erf, cos; ``E_A`` against ``a_1`` at fixed ``nu = 1``.

    The family ``f_a(t) = a t + sqrt(1 - a^2) (t^2 - 1)/sqrt(2)`` has ``a_1 = a``
    and ``nu = 1``; its limit is computed from the Hermite data
    ``{"a1": a, "nu": 1}`` directly and simulated with that polynomial.
    ``c = 1/4``, ``||mu||^2 = 1``, ``W = I``.  ``fs``: the presets of panel (a);
    ``gamma_range``: its range of ``gamma``.
    """
    from symrmt.params import Geometry
    from symrmt.numeric.theory import attention_limit, ridge_limit

    n = _size(n, QUICK_N, FULL_N, full)
    trials = _size(trials, 12, 30, full)
    points = _size(points, 16, 41, full)
    c, snr = Fraction(1, 4), 1
    geom = Geometry(snr=snr)
    g_curve = _logspace(gamma_range[0], gamma_range[1], points)
    g_sim = [g for g in (1e-3, 1e-2, 1e-1, 1, 10, 100) if gamma_range[0] <= g <= gamma_range[1]]
    a_curve = [Fraction(i, points - 1) for i in range(points)]
    a_sim = [0, 0.25, 0.5, 0.75, 1]
    g_fam = [0.1, 1.0, 10.0]
    total = len(fs) + len(a_curve)
    with _Sims(store, executor, workers) as run, _progress(total, "figure role_of_a1", progress) as bar:
        jobs_f = [run.sim(name, n, c, g_sim, geom, trials, seed) for name in fs]
        jobs_a = [run.sim(("family", a, math.sqrt(max(1 - a * a, 0.0))), n, c, g_fam, geom, trials, seed)
                  for a in a_sim]
        bar.total += run.trials
        run.start(bar)
        rr_curve = _floats(ridge_limit(c, g_curve, snr, DIGITS))
        rr_fam = _floats(ridge_limit(c, g_fam, snr, DIGITS))
        curves_f = []
        for name in fs:
            curves_f.append(_floats(attention_limit(_hermite(name), c, g_curve, geom, digits=DIGITS)))
            bar.update()
        curves_a = []
        for a in a_curve:
            curves_a.append(_floats(attention_limit({"a1": a, "nu": 1}, c, g_fam, geom, digits=DIGITS)))
            bar.update()
        sims_f = [job.result() for job in jobs_f]
        sims_a = [job.result() for job in jobs_a]

    fig, (ax_a, ax_b) = _new_figure(2, width=5.6, height=4.8)
    ax_a.plot(g_curve, rr_curve, color="k", ls="--", lw=1.3, label=r"ridge $E_{RR}$")
    for i, (name, y, sim) in enumerate(zip(fs, curves_f, sims_f)):
        h = _hermite(name)
        ax_a.plot(g_curve, y, color=f"C{i}",
                  label=rf"{name}: $a_1 = {float(h['a1']):.3f}$, $\nu = {float(h['nu']):.3f}$")
        _errorbar(ax_a, g_sim, sim["attention"]["mean"], sim["attention"]["se"], color=f"C{i}")
    ax_a.set_xscale("log")
    ax_a.set_xlabel(r"ridge parameter $\gamma$")
    ax_a.set_title(r"(a) $E_A(\gamma)$ for several nonlinearities", fontsize=10)
    ax_a.legend(fontsize=7.5, loc="upper left")
    xs = [float(a) for a in a_curve]
    for i, g in enumerate(g_fam):
        col = f"C{i + 4}"
        ax_b.plot(xs, [y[i] for y in curves_a], color=col, label=rf"$E_A$, $\gamma = {g:g}$")
        ax_b.axhline(rr_fam[i], color=col, ls="--", lw=1.1, label=rf"$E_{{RR}}$, $\gamma = {g:g}$")
        _errorbar(ax_b, a_sim, [s["attention"]["mean"][i] for s in sims_a],
                  [s["attention"]["se"][i] for s in sims_a], color=col)
    ax_b.set_xlabel(r"$a_1 = E[f(\xi)\,\xi]$ at fixed $\nu = E[f(\xi)^2] = 1$")
    ax_b.set_title(r"(b) $f_a(t) = a\,t + \sqrt{1-a^2}\,(t^2-1)/\sqrt{2}$: $a_1 = a$, $\nu = 1$", fontsize=10)
    ax_b.legend(fontsize=7.5, loc="lower left", ncol=2)
    for ax in (ax_a, ax_b):
        ax.set_ylabel(r"$E_A(\gamma)$")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    fig.suptitle(
        r"Role of $a_1$: Attention error at $c = 1/4$, $\|\mu\|^2 = 1$, $W = I$, $K_{ii} = 0$" "\n"
        rf"Lines: limit; points: simulation ($n = {n}$, $p = {round(c * n)}$, mean $\pm$ {ERRBAR} se, "
        rf"{trials} trials)",
        fontsize=11,
    )
    return _save(fig, out, "role_of_a1")


# ---------------------------------------------------------------------------
# figure 4: alignment
# ---------------------------------------------------------------------------
def alignment(out, full: bool = False, progress: bool = True, *, n=None, trials=None, points=None,
              ns=None, seed: int = 0, workers=None, store=None, executor=None) -> list[str]:
    """``E_A`` against the angle ``theta`` between ``w = w_K = w_Q`` and ``mu`` (tanh, ``gamma = 1``).

    Gram data: ``||mu||^2 = 1``, ``||w_K||^2 = ||w_Q||^2 = w_K.w_Q = ||w||^2``,
    ``mu.w_K = mu.w_Q = ||mu|| ||w|| cos theta``; ``||w||^2 in {1, 4}``, ``c in {1/4, 2}``.
    Panel (c): simulation minus limit at ``theta = 0`` against ``n`` (the
    finite-``n`` gap of the aligned case, which closes slowly).
    """
    from symrmt.params import Geometry
    from symrmt.numeric.theory import ridge_limit

    n = _size(n, QUICK_N, FULL_N, full)
    trials = _size(trials, 12, 30, full)
    points = _size(points, 31, 61, full)
    ns = _size(ns, [128, 256, 512, 1024], [256, 512, 1024, 2048, 4096], full)
    f, snr, gamma = "tanh", 1, 1
    w2s = (1, 4)
    cs = (Fraction(1, 4), Fraction(2))
    th_curve = _linspace(0, 90, points)
    th_sim = [0, 30, 60, 90]

    def geo(w2, theta):
        return _aligned_geometry(snr, w2, math.cos(math.radians(theta)))

    with _Sims(store, executor, workers) as run, _progress(len(cs), "figure alignment", progress) as bar:
        jobs = {(c, w2, t): run.sim(f, n, c, [gamma], geo(w2, t), trials, seed)
                for c in cs for w2 in w2s for t in th_sim}
        jobs_n = {(c, w2, m): run.sim(f, m, c, [gamma], geo(w2, 0), trials, seed)
                  for c in cs for w2 in w2s for m in ns}
        bar.total += run.trials
        run.start(bar)
        theory = {}
        for c in cs:
            er = float(ridge_limit(c, [gamma], snr, DIGITS)[0])
            geoms = [Geometry(snr=snr)] + [geo(w2, t) for w2 in w2s for t in th_curve]
            theory[c] = (er, _floats(attention_over_geometries(_hermite(f), c, gamma, geoms)))
            bar.update()
        sims = {key: job.result() for key, job in jobs.items()}
        sims_n = {key: job.result() for key, job in jobs_n.items()}

    fig, axes = _new_figure(3, width=5.0, height=4.5)
    for k, (ax, c) in enumerate(zip(axes, cs)):
        er, vals = theory[c]
        ax.axhline(er, color="k", ls="--", lw=1.3, label=r"ridge $E_{RR}$")
        ax.axhline(vals[0], color="0.5", ls=":", lw=1.5, label=r"Attention, $W = I$")
        for i, w2 in enumerate(w2s):
            col = f"C{i}"
            ax.plot(th_curve, vals[1 + i * points:1 + (i + 1) * points], color=col,
                    label=rf"Attention, $\|w\|^2 = {w2}$")
            _errorbar(ax, th_sim, [sims[(c, w2, t)]["attention"]["mean"][0] for t in th_sim],
                      [sims[(c, w2, t)]["attention"]["se"][0] for t in th_sim], color=col)
        ax.set_xlabel(r"angle $\theta$ between $w$ and $\mu$ (degrees)")
        ax.set_ylabel(r"$E_A(\gamma)$")
        ax.set_xticks([0, 15, 30, 45, 60, 75, 90])
        ax.set_title(rf"({'ab'[k]}) $c = {c}$; points: $n = {n}$, $p = {round(c * n)}$", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7.5, loc="best")
    ax = axes[2]
    ax.axhline(0, color="k", lw=1)
    for k, c in enumerate(cs):
        er, vals = theory[c]
        for i, w2 in enumerate(w2s):
            lim = vals[1 + i * points]  # theta = 0
            shift = 1 + 0.04 * (2 * k + i - 1.5)  # spread the markers a little
            _errorbar(ax, [m * shift for m in ns],
                      [sims_n[(c, w2, m)]["attention"]["mean"][0] - lim for m in ns],
                      [sims_n[(c, w2, m)]["attention"]["se"][0] for m in ns],
                      color=f"C{i}", fmt="-o" if k == 0 else "--s", lw=1,
                      label=rf"$c = {c}$, $\|w\|^2 = {w2}$")
    ax.set_xscale("log")
    ax.set_xticks(ns)
    ax.set_xticklabels([str(m) for m in ns])
    ax.minorticks_off()
    ax.set_xlabel(r"$n$ (with $p = cn$)")
    ax.set_ylabel(r"simulation $-$ limit of $E_A$ at $\theta = 0$")
    ax.set_title(r"(c) finite-$n$ gap of the aligned case", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, loc="lower right")
    fig.suptitle(
        rf"Aligning $w_K = w_Q = w$ with $\mu$: tanh, $\gamma = {gamma}$, $\|\mu\|^2 = {snr}$, "
        r"$W = I + w w^T$, $K_{ii} = 0$" "\n"
        rf"Lines: limit; points: simulation (mean $\pm$ {ERRBAR} se, {trials} trials)",
        fontsize=11,
    )
    return _save(fig, out, "alignment")


# ---------------------------------------------------------------------------
# figure 5: phase diagram (beyond the paper)
# ---------------------------------------------------------------------------
def phase_diagram_data(grid: int = 25, digits: int = DIGITS, progress: bool = True, *, fast: bool = False,
                       certify: int = 4) -> dict:
    r"""The data of :func:`phase_diagram`: ``E_A - E_RR`` on both panels' grids, by :func:`symrmt.sweep`.

    tanh, ``gamma = 1``, every value certified to ``digits`` digits.  (a) ``W = I`` over
    ``(c, ||mu||^2)``, ``c`` log-spaced in ``[1/16, 4]``, ``||mu||^2`` in ``[0, 8]``; (b) ``c = 1/2``,
    ``w = w_K = w_Q`` with ``||w||^2 = 4`` at angle ``theta`` to ``mu`` (one tied axis of
    ``cos_muwk = cos_muwq``), over ``(cos theta, ||mu||^2)``.

    ``fast=True`` uses the float64 path (:func:`symrmt.numeric.fast.solve_grid` on the two
    meshes directly; ``certify`` points per panel re-solved at 30 digits) instead of
    certified values.

    Returns
    -------
    dict
        ``c``, ``snr``, ``cos`` (the axes, float lists), ``diff_a``, ``diff_b`` (float arrays of
        shape ``(len(snr), len(c))`` and ``(len(snr), len(cos))``) and ``note`` (how the values
        were computed).
    """
    if fast:
        return _phase_diagram_fast(grid, certify)
    from symrmt.sweeps import sweep

    c_axis = [_frac(c) for c in _logspace(1 / 16, 4, grid)]
    s_axis = [_frac(s) for s in _linspace(0, 8, grid)]
    cos_axis = [_frac(x) for x in _linspace(0, 1, grid)]
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
    return {"c": _floats(c_axis), "snr": _floats(s_axis), "cos": _floats(cos_axis),
            "diff_a": a.attention - a.ridge, "diff_b": b.attention - b.ridge, "note": note}


def _phase_diagram_fast(grid: int, certify: int) -> dict:
    """:func:`phase_diagram_data` on the float64 path: one :func:`symrmt.numeric.fast.solve_grid` per
    panel on float meshes (no exact geometry per point, which would cost more than the solve)."""
    import numpy as np

    from symrmt.numeric.fast import solve_grid

    c_axis, s_axis, cos_axis = _logspace(1 / 16, 4, grid), _linspace(0, 8, grid), _linspace(0, 1, grid)
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


def phase_diagram(out, full: bool = False, progress: bool = True, *, grid=None, fast: bool = True,
                  certify=None) -> list[str]:
    r"""Where Attention beats ridge: the sign of ``E_A - E_RR`` from the limits.

    tanh, ``gamma = 1``.  (a) ``(c, ||mu||^2)`` with ``W = I``, ``c`` log-spaced
    in ``[1/16, 4]``, ``||mu||^2`` in ``[0, 8]``.  (b) ``(cos theta, ||mu||^2)`` at
    ``c = 1/2`` with ``w = w_K = w_Q``, ``||w||^2 = 4``, at angle ``theta`` to ``mu``.
    No simulation: every cell is a limit (:func:`phase_diagram_data`, through :func:`symrmt.sweep`).

    ``fast=True`` (default): the float64 path (:func:`symrmt.numeric.fast.solve_grid`, every
    point checked, failures recomputed by mpmath), ``grid`` x ``grid`` points per panel (41 in
    quick mode, 200 in full mode), ``certify`` points per panel (default 4 quick, 20 full)
    re-solved at 30 digits, the largest relative gap in the title and on stderr.
    ``fast=False``: every cell certified to 15 digits by the mpmath solver (25 and 61 points).
    """
    grid = _size(grid, 41 if fast else 25, 200 if fast else 61, full)
    certify = (20 if full else 4) if certify is None else certify
    gamma = 1
    data = phase_diagram_data(grid, DIGITS, progress, fast=fast, certify=certify)
    if progress and fast:
        print(f"figures: phase_diagram: {data['note']}", file=sys.stderr)
    c_axis, s_axis, cos_axis = data["c"], data["snr"], data["cos"]
    diff_a, diff_b = data["diff_a"], data["diff_b"]
    c_b, w2_b = Fraction(1, 2), 4

    from matplotlib.colors import TwoSlopeNorm

    fig, (ax_a, ax_b) = _new_figure(2, width=6.0, height=4.9)
    for ax, x, d in ((ax_a, c_axis, diff_a), (ax_b, cos_axis, diff_b)):
        lo, hi = min(float(d.min()), -1e-6), max(float(d.max()), 1e-6)
        norm = TwoSlopeNorm(vcenter=0.0, vmin=lo, vmax=hi)
        mesh = ax.pcolormesh(x, s_axis, d, cmap="RdBu_r", norm=norm, shading="gouraud")
        if d.min() < 0 < d.max():
            ax.contour(x, s_axis, d, levels=[0.0], colors="k", linewidths=1.6)
        cbar = fig.colorbar(mesh, ax=ax, shrink=0.95, pad=0.02)
        cbar.set_ticks([lo, lo / 2, 0.0, hi / 2, hi])
        cbar.set_ticklabels([f"{v:.3f}" for v in (lo, lo / 2, 0.0, hi / 2, hi)])
        cbar.set_label(r"$E_A - E_{RR}$ (limits)")
        neg = int((d < 0).sum())
        right = ax is ax_a  # keep the box off the region of panel (b), which hugs cos(theta) = 1
        ax.text(0.97 if right else 0.03, 0.97,
                f"blue, inside the black line: $E_A < E_{{RR}}$\n({neg} of {d.size} grid points)",
                transform=ax.transAxes, ha="right" if right else "left", va="top", fontsize=8.5,
                bbox={"facecolor": "white", "edgecolor": "0.7", "alpha": 0.9})
        ax.set_ylabel(r"signal strength $\|\mu\|^2$")
    ax_a.set_xscale("log")
    ax_a.axvline(float(c_b), color="0.3", ls=":", lw=1)
    ax_a.set_xlabel(r"$c = p/n$ (dotted: $c = 1/2$ of panel b)")
    ax_a.set_title(r"(a) $W = I$, over $(c, \|\mu\|^2)$", fontsize=10)
    ax_b.set_xlabel(r"$\cos\theta$, $\theta$ = angle between $w = w_K = w_Q$ and $\mu$")
    ax_b.set_title(rf"(b) $c = {c_b}$, $W = I + w w^T$, $\|w\|^2 = {w2_b}$, over $(\cos\theta, \|\mu\|^2)$",
                   fontsize=10)
    fig.suptitle(
        r"Where nonlinear Attention beats ridge regression: $E_A - E_{RR}$ from the limits" "\n"
        rf"tanh, $\gamma = {gamma}$, $K_{{ii}} = 0$, {grid} $\times$ {grid} grid per panel ({data['note']})",
        fontsize=11,
    )
    return _save(fig, out, "phase_diagram")


# ---------------------------------------------------------------------------
# all of them
# ---------------------------------------------------------------------------
#: name -> figure function, in drawing order
FIGURES = {
    "ridge_error": ridge_error,
    "random_inputs": random_inputs,
    "role_of_a1": role_of_a1,
    "alignment": alignment,
    "phase_diagram": phase_diagram,
}


def main(out, full: bool = False, progress: bool = True, *, store=None, workers=None, scheduler=None,
         only=None) -> list[str]:
    """Draw every figure into ``out`` (PNG and PDF); return the written paths.

    ``full=True`` uses the paper's sizes (``n = 2048``, ``p = 512``; ``n = 4096``
    for the sweep in ``p``) and finer grids, and takes far longer.  With
    ``progress`` each figure shows a progress bar over its theory steps and its
    trials (on a terminal, or once it has run for a few seconds) and a line with
    its time on stderr.  ``store`` (a trial-store path) keeps every finished
    trial, so an interrupted run continues where it stopped; ``workers`` (a
    local Dask cluster) or ``scheduler`` (an existing one) run the trials, one
    cluster for all figures.  ``only``: a list of figure names (default all).
    """
    from symrmt.simulation.executor import make_executor

    _matplotlib()  # fail early, with the install hint
    names = list(FIGURES) if only is None else list(only)
    unknown = [k for k in names if k not in FIGURES]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; choose from {list(FIGURES)}")
    paths = []
    with make_executor(workers=workers, scheduler=scheduler) as ex:
        for name in names:
            fn = FIGURES[name]
            t0 = time.monotonic()
            kw = {} if name == "phase_diagram" else {"store": store, "executor": ex}
            written = fn(out, full=full, progress=progress, **kw)
            paths.extend(written)
            if progress:
                print(f"figures: {name} written in {time.monotonic() - t0:.1f} s: {', '.join(written)}",
                      file=sys.stderr)
    return paths
