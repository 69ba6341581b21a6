"""Drawing the figures with matplotlib (its object-oriented API only: no ``pyplot``, no GUI backend).

The values come from :mod:`symrmt.figures.data` and the theory; this module only lays them out."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

from symrmt.errors import ExtraUnavailable, SolverError
from symrmt.figures.data import (
    DIGITS,
    ERRBAR,
    FULL_N,
    FULL_N_SWEEP,
    QUICK_N,
    QUICK_N_SWEEP,
    RANDOM_PRESETS,
    aligned_geometry,
    as_floats,
    attention_over_geometries,
    figure_progress,
    FigureSims,
    linspace,
    logspace,
    near_fraction,
    phase_diagram_data,
    preset_hermite,
    random_case,
    size_or_default,
)
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.theory import ridge_limit, attention_limit

_INSTALL_HINT = "matplotlib is needed to draw the figures: pip install 'symrmt[plot]'"
_DPI = 150


def matplotlib_figure():
    """The matplotlib ``Figure`` class, imported lazily.

    Takes nothing; returns the class; raises :class:`~symrmt.errors.ExtraUnavailable` with the install hint
    (``pip install 'symrmt[plot]'``) without matplotlib.

    >>> matplotlib_figure().__module__
    'matplotlib.figure'
    """
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ExtraUnavailable(_INSTALL_HINT) from exc
    return Figure


def new_figure(ncols: int, width: float = 5.0, height: float = 4.3):
    """A matplotlib figure of ``ncols`` panels in a row (``width`` x ``height`` inches each) and its axes.

    Takes the number of panels and a panel's size in inches; returns ``(figure, list of axes)`` (nothing is
    rendered); raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib.

    >>> fig, axes = new_figure(3, width=2.0, height=1.5)
    >>> len(axes), fig.get_size_inches().tolist()
    (3, [6.0, 1.5])
    """
    Figure = matplotlib_figure()
    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def save_figure(fig, out, name: str) -> list[str]:
    """Write ``fig`` as ``out/name.png`` and ``out/name.pdf`` (without time stamps, so reruns give the same
    files); returns the two paths.

    (No doctest: it writes a figure.)
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "pdf"):
        path = out / f"{name}.{ext}"
        meta = {"Software": None} if ext == "png" else {"Creator": None, "Producer": None, "CreationDate": None}
        fig.savefig(path, dpi=_DPI, metadata=meta)
        paths.append(str(path))
    return paths


def errorbar(ax, x, mean, se, **kw):
    """Draw Monte-Carlo means with error bars of ``ERRBAR`` standard errors on ``ax`` (the package's style).

    Takes the axes, the abscissae, the means, their standard errors and matplotlib's ``errorbar`` keywords;
    returns ``None``.  A bar spans ``mean -+ ERRBAR se`` (axes of a figure that is not rendered):

    >>> fig, (ax,) = new_figure(1)
    >>> errorbar(ax, [1.0], [0.5], [0.1])
    >>> lo, hi = ax.containers[0][2][0].get_segments()[0][:, 1]
    >>> bool(abs(hi - lo - 2 * ERRBAR * 0.1) < 1e-15)
    True
    """
    kw.setdefault("fmt", "o")
    kw.setdefault("ms", 4)
    kw.setdefault("capsize", 2.5)
    kw.setdefault("elinewidth", 1)
    kw.setdefault("zorder", 3)
    ax.errorbar(x, mean, yerr=[ERRBAR * s for s in se], **kw)


def ridge_error(out, full: bool = False, progress: bool = True, *, n=None, n_sweep=None, trials=None,
                points=None, seed: int = 0, workers=None, store=None, executor=None) -> list[str]:
    """``E_RR``: against ``gamma`` (log axis), against ``c = p/n`` at fixed ``n``, against ``||mu||^2``.

    Theory: :func:`symrmt.models.attention.theory.ridge_limit` (closed form).  Simulation: ridge
    only (:func:`simulate_ridge`), ``n = 2048`` (``p = 512`` at ``c = 1/4``) and
    ``n = 4096`` for the sweep in ``p`` with ``full=True``; ``n = 512`` and
    ``256`` otherwise.  ``||mu||^2 = 1`` in (a) and (b), ``c = 1/4`` in (c).

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    n = size_or_default(n, QUICK_N, FULL_N, full)
    n_sweep = size_or_default(n_sweep, QUICK_N_SWEEP, FULL_N_SWEEP, full)
    trials = size_or_default(trials, 20, 40, full)
    points = size_or_default(points, 60, 120, full)
    snr0, c0 = 1, Fraction(1, 4)

    cs_a = [Fraction(1, 4), Fraction(1), Fraction(2)]
    g_curve = logspace(1e-3, 1e2, points)
    g_sim = [1e-3, 1e-2, 1e-1, 1, 10, 100]
    gammas_bc = [0.01, 0.1, 1.0]
    c_curve = logspace(1 / 16, 4, points)
    c_sim = [Fraction(1, 16), Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1),
             Fraction(3, 2), Fraction(2), Fraction(4)]
    if n_sweep > 2048:  # p = 4 n = 16384 is too costly for a routine run
        c_sim = [c for c in c_sim if c <= 2]
    s_curve = linspace(0, 8, points)
    s_sim = [0, 1, 2, 4, 6, 8]
    colors = ["C0", "C1", "C2"]
    fig, (ax_a, ax_b, ax_c) = new_figure(3)
    with FigureSims(store, executor, workers) as run, figure_progress(3, "figure ridge_error", progress) as bar:
        jobs_a = [run.ridge(n, c, g_sim, snr0, trials, seed) for c in cs_a]
        jobs_b = [run.ridge(n_sweep, c, gammas_bc, snr0, trials, seed) for c in c_sim]
        jobs_c = [run.ridge(n, c0, gammas_bc, s, trials, seed) for s in s_sim]
        bar.total += run.trials
        run.start(bar)

        curves_a = [as_floats(ridge_limit(c, g_curve, snr0, DIGITS)) for c in cs_a]
        bar.update()
        curves_b = {g: [] for g in gammas_bc}
        for c in c_curve:
            for g, v in zip(gammas_bc, ridge_limit(near_fraction(c), gammas_bc, snr0, DIGITS)):
                curves_b[g].append(float(v))
        bar.update()
        curves_c = {g: [] for g in gammas_bc}
        for snr in s_curve:
            for g, v in zip(gammas_bc, ridge_limit(c0, gammas_bc, near_fraction(snr), DIGITS)):
                curves_c[g].append(float(v))
        bar.update()

        for col, c, y, job in zip(colors, cs_a, curves_a, jobs_a):
            sim = job.result()
            ax_a.plot(g_curve, y, color=col, label=f"limit, c = {c}")
            errorbar(ax_a, g_sim, sim["mean"], sim["se"], color=col, label=f"simulation, n = {n}, p = {sim['p']}")
        sims_b = [job.result() for job in jobs_b]
        sims_c = [job.result() for job in jobs_c]

    ax_a.set_xscale("log")
    ax_a.set_xlabel(r"ridge parameter $\gamma$")
    ax_a.set_title(rf"(a) against $\gamma$, $\|\mu\|^2 = {snr0}$", fontsize=10)
    ax_a.legend(fontsize=7.5, loc="upper left")
    for i, (col, g) in enumerate(zip(colors, gammas_bc)):
        ax_b.plot(c_curve, curves_b[g], color=col, label=rf"$\gamma = {g:g}$")
        errorbar(ax_b, [float(c) for c in c_sim], [s["mean"][i] for s in sims_b], [s["se"][i] for s in sims_b],
                  color=col)
        ax_c.plot(s_curve, curves_c[g], color=col, label=rf"$\gamma = {g:g}$")
        errorbar(ax_c, s_sim, [s["mean"][i] for s in sims_c], [s["se"][i] for s in sims_c], color=col)
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
    return save_figure(fig, out, "ridge_error")


def random_inputs(out, full: bool = False, progress: bool = True, *, n=None, trials=None, count=None,
                  simulated=None, seed: int = 0, workers=None, store=None, executor=None) -> list[str]:
    """``E_A`` against ``E_RR`` on ``count`` random parameter sets, with the line ``y = x``.

    Each set draws ``f`` from :data:`RANDOM_PRESETS`, ``c`` log-uniform in
    ``[1/8, 4]``, ``gamma`` log-uniform in ``[0.01, 10]``, ``||mu||^2`` uniform in
    ``[0, 4]`` and, two times in three, ``w_K`` (and ``w_Q = w_K`` or an
    independent direction) with ``||w_K||^2, ||w_Q||^2`` uniform in ``[0, 2]``.
    The first ``simulated`` sets are also simulated at ``n``.  Returns the paths written; raises
    :class:`~symrmt.errors.SolverError` when the solver refuses so many of the ``5 count`` drawn sets that
    fewer than ``count`` points remain.
    """
    n = size_or_default(n, QUICK_N, FULL_N, full)
    trials = size_or_default(trials, 10, 30, full)
    count = size_or_default(count, 30, 80, full)
    simulated = min(size_or_default(simulated, 8, 20, full), count)
    rng = np.random.default_rng(seed)
    cases = [random_case(rng) for _ in range(5 * count)]
    rows = []
    with FigureSims(store, executor, workers) as run, figure_progress(count, "figure random_inputs", progress) as bar:
        jobs = [run.sim(f, n, c, [g], geom, trials, seed + i) for i, (f, c, g, geom) in enumerate(cases[:simulated])]
        bar.total += run.trials
        run.start(bar)
        for i, (f, c, gamma, geom) in enumerate(cases):
            if len(rows) == count:
                break
            try:
                ea = float(attention_limit(dict(preset_hermite(f)), c, [gamma], geom, digits=DIGITS)[0])
            except ArithmeticError as exc:  # the solver refuses rather than guess: draw another set
                if i < simulated:
                    raise
                print(f"random_inputs: skipped f={f}, c={c}, gamma={gamma}: {exc}", file=sys.stderr)
                continue
            er = float(ridge_limit(c, [gamma], geom.snr, DIGITS)[0])
            rows.append({"f": f, "c": c, "gamma": gamma, "geometry": geom, "E_A": ea, "E_RR": er})
            bar.update()
        if len(rows) < count:
            raise SolverError(f"random_inputs: the solver refused {5 * count - len(rows)} of {5 * count} random "
                              f"parameter sets and only {len(rows)} of the {count} points were drawn; ask for "
                              "fewer points (count=) or another seed=")
        for row, job in zip(rows, jobs):
            row["sim"] = job.result()

    fig, (ax,) = new_figure(1, width=6.4, height=6.4)
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
    return save_figure(fig, out, "random_inputs")


def role_of_a1(out, full: bool = False, progress: bool = True, *, n=None, trials=None, points=None,
               fs=("tanh", "relu", "erf", "cos"), gamma_range=(1e-3, 1e2), seed: int = 0,
               workers=None, store=None, executor=None) -> list[str]:
    """``E_A`` against ``gamma`` for tanh, ReLU, erf, cos; ``E_A`` against ``a_1`` at fixed ``nu = 1``.

    The family ``f_a(t) = a t + sqrt(1 - a^2) (t^2 - 1)/sqrt(2)`` has ``a_1 = a``
    and ``nu = 1``; its limit is computed from the Hermite data
    ``{"a1": a, "nu": 1}`` directly and simulated with that polynomial.
    ``c = 1/4``, ``||mu||^2 = 1``, ``W = I``.  ``fs``: the presets of panel (a);
    ``gamma_range``: its range of ``gamma``.

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    n = size_or_default(n, QUICK_N, FULL_N, full)
    trials = size_or_default(trials, 12, 30, full)
    points = size_or_default(points, 16, 41, full)
    c, snr = Fraction(1, 4), 1
    geom = Geometry(snr=snr)
    g_curve = logspace(gamma_range[0], gamma_range[1], points)
    g_sim = [g for g in (1e-3, 1e-2, 1e-1, 1, 10, 100) if gamma_range[0] <= g <= gamma_range[1]]
    a_curve = [Fraction(i, points - 1) for i in range(points)]
    a_sim = [0, 0.25, 0.5, 0.75, 1]
    g_fam = [0.1, 1.0, 10.0]
    total = len(fs) + len(a_curve)
    with FigureSims(store, executor, workers) as run, figure_progress(total, "figure role_of_a1", progress) as bar:
        jobs_f = [run.sim(name, n, c, g_sim, geom, trials, seed) for name in fs]
        jobs_a = [run.sim(("family", a, math.sqrt(max(1 - a * a, 0.0))), n, c, g_fam, geom, trials, seed)
                  for a in a_sim]
        bar.total += run.trials
        run.start(bar)
        rr_curve = as_floats(ridge_limit(c, g_curve, snr, DIGITS))
        rr_fam = as_floats(ridge_limit(c, g_fam, snr, DIGITS))
        curves_f = []
        for name in fs:
            curves_f.append(as_floats(attention_limit(dict(preset_hermite(name)), c, g_curve, geom, digits=DIGITS)))
            bar.update()
        curves_a = []
        for a in a_curve:
            curves_a.append(as_floats(attention_limit({"a1": a, "nu": 1}, c, g_fam, geom, digits=DIGITS)))
            bar.update()
        sims_f = [job.result() for job in jobs_f]
        sims_a = [job.result() for job in jobs_a]

    fig, (ax_a, ax_b) = new_figure(2, width=5.6, height=4.8)
    ax_a.plot(g_curve, rr_curve, color="k", ls="--", lw=1.3, label=r"ridge $E_{RR}$")
    for i, (name, y, sim) in enumerate(zip(fs, curves_f, sims_f)):
        h = preset_hermite(name)
        ax_a.plot(g_curve, y, color=f"C{i}",
                  label=rf"{name}: $a_1 = {float(h['a1']):.3f}$, $\nu = {float(h['nu']):.3f}$")
        errorbar(ax_a, g_sim, sim["attention"]["mean"], sim["attention"]["se"], color=f"C{i}")
    ax_a.set_xscale("log")
    ax_a.set_xlabel(r"ridge parameter $\gamma$")
    ax_a.set_title(r"(a) $E_A(\gamma)$ for several nonlinearities", fontsize=10)
    ax_a.legend(fontsize=7.5, loc="upper left")
    xs = [float(a) for a in a_curve]
    for i, g in enumerate(g_fam):
        col = f"C{i + 4}"
        ax_b.plot(xs, [y[i] for y in curves_a], color=col, label=rf"$E_A$, $\gamma = {g:g}$")
        ax_b.axhline(rr_fam[i], color=col, ls="--", lw=1.1, label=rf"$E_{{RR}}$, $\gamma = {g:g}$")
        errorbar(ax_b, a_sim, [s["attention"]["mean"][i] for s in sims_a],
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
    return save_figure(fig, out, "role_of_a1")


def alignment(out, full: bool = False, progress: bool = True, *, n=None, trials=None, points=None,
              ns=None, seed: int = 0, workers=None, store=None, executor=None) -> list[str]:
    """``E_A`` against the angle ``theta`` between ``w = w_K = w_Q`` and ``mu`` (tanh, ``gamma = 1``).

    Gram data: ``||mu||^2 = 1``, ``||w_K||^2 = ||w_Q||^2 = w_K.w_Q = ||w||^2``,
    ``mu.w_K = mu.w_Q = ||mu|| ||w|| cos theta``; ``||w||^2 in {1, 4}``, ``c in {1/4, 2}``.
    Panel (c): simulation minus limit at ``theta = 0`` against ``n`` (the
    finite-``n`` gap of the aligned case, which closes slowly).

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    n = size_or_default(n, QUICK_N, FULL_N, full)
    trials = size_or_default(trials, 12, 30, full)
    points = size_or_default(points, 31, 61, full)
    ns = size_or_default(ns, [128, 256, 512, 1024], [256, 512, 1024, 2048, 4096], full)
    f, snr, gamma = "tanh", 1, 1
    w2s = (1, 4)
    cs = (Fraction(1, 4), Fraction(2))
    th_curve = linspace(0, 90, points)
    th_sim = [0, 30, 60, 90]

    def geo(w2, theta):
        return aligned_geometry(snr, w2, math.cos(math.radians(theta)))

    with FigureSims(store, executor, workers) as run, figure_progress(len(cs), "figure alignment", progress) as bar:
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
            theory[c] = (er, as_floats(attention_over_geometries(dict(preset_hermite(f)), c, gamma, geoms)))
            bar.update()
        sims = {key: job.result() for key, job in jobs.items()}
        sims_n = {key: job.result() for key, job in jobs_n.items()}

    fig, axes = new_figure(3, width=5.0, height=4.5)
    for k, (ax, c) in enumerate(zip(axes, cs)):
        er, vals = theory[c]
        ax.axhline(er, color="k", ls="--", lw=1.3, label=r"ridge $E_{RR}$")
        ax.axhline(vals[0], color="0.5", ls=":", lw=1.5, label=r"Attention, $W = I$")
        for i, w2 in enumerate(w2s):
            col = f"C{i}"
            ax.plot(th_curve, vals[1 + i * points:1 + (i + 1) * points], color=col,
                    label=rf"Attention, $\|w\|^2 = {w2}$")
            errorbar(ax, th_sim, [sims[(c, w2, t)]["attention"]["mean"][0] for t in th_sim],
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
            errorbar(ax, [m * shift for m in ns],
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
    return save_figure(fig, out, "alignment")


def phase_diagram(out, full: bool = False, progress: bool = True, *, grid=None, fast: bool = True,
                  certify=None) -> list[str]:
    r"""Where Attention beats ridge: the sign of ``E_A - E_RR`` from the limits.

    tanh, ``gamma = 1``.  (a) ``(c, ||mu||^2)`` with ``W = I``, ``c`` log-spaced
    in ``[1/16, 4]``, ``||mu||^2`` in ``[0, 8]``.  (b) ``(cos theta, ||mu||^2)`` at
    ``c = 1/2`` with ``w = w_K = w_Q``, ``||w||^2 = 4``, at angle ``theta`` to ``mu``.
    No simulation: every cell is a limit (:func:`phase_diagram_data`, through :func:`symrmt.sweep`).

    ``fast=True`` (default): the float64 path (:func:`symrmt.models.attention.fast.solve_grid`, every
    point checked, failures recomputed by mpmath), ``grid`` x ``grid`` points per panel (41 in
    quick mode, 200 in full mode), ``certify`` points per panel (default 4 quick, 20 full)
    re-solved at 30 digits, the largest relative gap in the title and on stderr.
    ``fast=False``: every cell certified to 15 digits by the mpmath solver (25 and 61 points).

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it certifies two grids of limits and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    grid = size_or_default(grid, 41 if fast else 25, 200 if fast else 61, full)
    certify = (20 if full else 4) if certify is None else certify
    gamma = 1
    data = phase_diagram_data(grid, DIGITS, progress, fast=fast, certify=certify)
    if progress and fast:
        print(f"figures: phase_diagram: {data['note']}", file=sys.stderr)
    c_axis, s_axis, cos_axis = data["c"], data["snr"], data["cos"]
    diff_a, diff_b = data["diff_a"], data["diff_b"]
    c_b, w2_b = Fraction(1, 2), 4

    # optional dependency (matplotlib)
    from matplotlib.colors import TwoSlopeNorm

    fig, (ax_a, ax_b) = new_figure(2, width=6.0, height=4.9)
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
    return save_figure(fig, out, "phase_diagram")
