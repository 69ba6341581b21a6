r"""How slowly the aligned high-SNR case reaches its limit, and the finite-n prediction.

One figure: ``E_A`` and ``E_RR`` against ``n`` (log axis) for tanh, ``c = 1/2``, ``gamma = 1`` and
``mu = w_K = w_Q`` up to scale, ``||mu||^2 = ||w||^2 = 4``: simulations of the actual kernel as points
(mean +- 2 se), the limits as horizontal lines, and the finite-n prediction of ``E_A``
(:mod:`symrmt.models.attention.finite_n`, ``docs/theory.md`` section 13) as a curve.

Quick mode: ``n`` in {256, 512, 1024}; ``full=True`` adds 2048 and 4096.
"""

from __future__ import annotations

import warnings

import symrmt
from symrmt.figures.data import logspace
from symrmt.figures.draw import errorbar, new_figure, save_figure
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import simulate

__all__ = ["finite_size", "finite_size_data"]

#: the case drawn: tanh, c = 1/2, gamma = 1, aligned weights with ||mu||^2 = ||w||^2 = 4
CASE = {"f": "tanh", "c": "1/2", "gamma": 1, "geometry": dict(snr=4, wk2=4, wq2=4, wkwq=4, muwk=4, muwq=4)}


def finite_size_data(sizes, trials, *, seed: int = 0, store=None, executor=None, progress: bool = False) -> dict:
    """The figure's values: ``{"sizes", "attention": (means, ses), "ridge": (means, ses), "limit": (E_A, E_RR),
    "curve": (ns, predictions)}``; ``trials`` is one count per size.

    >>> d = finite_size_data([256], [2])
    >>> sorted(d), len(d["curve"][0]) > 5
    (['attention', 'curve', 'limit', 'ridge', 'sizes'], True)
    """
    geo = Geometry(**CASE["geometry"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", symrmt.errors.FiniteSizeWarning)
        lim = symrmt.limit(CASE["f"], CASE["c"], [CASE["gamma"]], geo, digits=10)
    am, ase, rm, rse = [], [], [], []
    for i, (n, t) in enumerate(zip(sizes, trials)):
        r = simulate(CASE["f"], n, CASE["c"], [float(CASE["gamma"])], geo, trials=t, seed=seed + i, progress=progress,
                     store=store, executor=executor)
        am.append(r["attention"]["mean"][0])
        ase.append(r["attention"]["se"][0])
        rm.append(r["ridge"]["mean"][0])
        rse.append(r["ridge"]["se"][0])
    ns = sorted({int(round(x)) for x in logspace(256, max(8192, 2 * max(sizes)), 17)})
    pred = [symrmt.limit(CASE["f"], CASE["c"], [CASE["gamma"]], geo, n=m).attention[0] for m in ns]
    return {"sizes": list(sizes), "attention": (am, ase), "ridge": (rm, rse),
            "limit": (float(lim.attention[0]), float(lim.ridge[0])), "curve": (ns, pred)}


def finite_size(out, full: bool = False, progress: bool = True, *, store=None, executor=None, sizes=None,
                trials=None) -> list[str]:
    """Draw ``finite_size.png`` and ``.pdf`` in ``out``; returns the paths (needs matplotlib).

    ``sizes`` and ``trials`` (one count per size) override the defaults: ``n`` in {256, 512, 1024}
    with {32, 16, 8} trials, and with ``full`` also 2048 and 4096 (4 and 3 trials).

    Takes the output folder and the sizes (``full``: the paper's); returns the paths written (PNG and PDF);
    raises :class:`~symrmt.errors.ExtraUnavailable` without matplotlib and the solver's errors.  (No doctest:
    it simulates and draws a figure.)
    """
    if sizes is None:
        sizes = [256, 512, 1024] + ([2048, 4096] if full else [])
    if trials is None:
        default = {256: 32, 512: 16, 1024: 8, 2048: 4, 4096: 3}
        trials = [default.get(n, 4) for n in sizes]
    d = finite_size_data(sizes, trials, store=store, executor=executor, progress=progress)
    fig, (ax,) = new_figure(1, width=6.0)
    ea, er = d["limit"]
    ax.axhline(ea, color="C0", ls="--", label=f"$E_A$ limit ({ea:.4f})")
    ax.axhline(er, color="C1", ls=":", label=f"$E_{{RR}}$ limit ({er:.4f})")
    ns, pred = d["curve"]
    ax.plot(ns, pred, color="C0", label="$E_A$ finite-$n$ prediction")
    errorbar(ax, d["sizes"], *d["attention"], color="C0", label="$E_A$ simulation (±2 se)")
    errorbar(ax, d["sizes"], *d["ridge"], color="C1", fmt="s", label="$E_{RR}$ simulation (±2 se)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("$n$ (tokens), $p = n/2$")
    ax.set_ylabel(r"error at $\gamma = 1$")
    ax.set_title(r"tanh, aligned $w_K = w_Q \parallel \mu$, $\|\mu\|^2 = \|w\|^2 = 4$", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, out, "finite_size")
