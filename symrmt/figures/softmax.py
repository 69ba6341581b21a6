r"""The paper's three claims for masked softmax attention (``docs/guide.md`` section 6.6).

One figure, three panels, limits as lines (``symrmt.limit(None, ..., attention="softmax")``, the
entry-wise limit of ``exp(t - alpha^2/2) - 1``) and simulations of the real softmax as points
(mean +- 2 se):

(a) random inputs, ``W = I``, ``||mu||^2 = 1``: ``E_A`` (solid) and ``E_RR`` (dashed) against
    ``gamma`` for ``c in {1/4, 1/2, 2}``;
(b) aligned weights ``w = w_K = w_Q`` at angle ``theta`` to ``mu`` (``c = 1/2``, ``gamma = 1/4``,
    ``||mu||^2 = 1``, ``||w||^2 in {1, 4}``), with ``E_RR`` as a horizontal line;
(c) the temperature: ``W = alpha I`` fixes ``a_1 = alpha`` and ``nu = e^{alpha^2} - 1``;
    ``E_A`` against ``gamma`` for ``alpha in {1/2, 1, 3/2}`` (``c = 1/2``, ``||mu||^2 = 1``).

Run ``python -m symrmt.figures.softmax OUT_DIR [--n N] [--trials T]`` (needs matplotlib).
"""

from __future__ import annotations

import argparse
import math
import sys
from fractions import Fraction

import symrmt
from symrmt.figures.data import aligned_geometry, logspace
from symrmt.figures.draw import errorbar, new_figure, save_figure
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.models.attention.montecarlo import simulate

__all__ = ["softmax_claims", "main"]


def _limits(c, gammas, geo):
    r = symrmt.limit(None, c, gammas, geo, digits=10, attention="softmax")
    return [float(v) for v in r.attention_mp], [float(v) for v in r.ridge_mp]


def _sim(n, c, gammas, geo, trials, seed):
    r = simulate(None, n, c, [float(Fraction(g)) for g in gammas], geo, trials=trials, seed=seed, progress=False,
                 attention="softmax")
    return r["attention"]["mean"], r["attention"]["se"]


def softmax_claims(out, n: int = 512, trials: int = 8, points: int = 13) -> list[str]:
    """Draw ``softmax_claims.png`` and ``.pdf`` in ``out``; returns the paths.

    Takes the folder, the size ``n``, ``trials`` and ``points``; raises :class:`~symrmt.errors.ExtraUnavailable`
    without matplotlib.
    (No doctest: it simulates and draws a figure.)
    """
    gam = [Fraction(str(round(g, 4))) for g in logspace(0.01, 10, points)]
    gam_sim = [Fraction(1, 20), Fraction(1, 2), Fraction(5)]
    fig, axes = new_figure(3)
    # (a) random inputs
    ax = axes[0]
    for i, c in enumerate((Fraction(1, 4), Fraction(1, 2), Fraction(2))):
        ea, er = _limits(c, gam, Geometry(snr=1))
        line, = ax.plot([float(g) for g in gam], ea, label=f"softmax, c = {c}")
        ax.plot([float(g) for g in gam], er, "--", color=line.get_color())
        m, s = _sim(n, c, gam_sim, Geometry(snr=1), trials, 10 + i)
        errorbar(ax, [float(g) for g in gam_sim], m, s, color=line.get_color())
    ax.set_xscale("log")
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel("error")
    ax.set_title(r"(a) random inputs, $W = I$: $E_A$ solid, $E_{RR}$ dashed", fontsize=9)
    ax.legend(fontsize=7)
    # (b) aligned weights
    ax = axes[1]
    thetas = [90 * k / (points - 1) for k in range(points)]
    er = None
    for i, w2 in enumerate((1, 4)):
        ea = []
        for t in thetas:
            a, r = _limits("1/2", ["1/4"], aligned_geometry(1, w2, math.cos(math.radians(t))))
            ea.append(a[0])
            er = r[0]
        line, = ax.plot(thetas, ea, label=rf"softmax, $\|w\|^2 = {w2}$")
        for t in (0, 45, 90):
            m, s = _sim(n, "1/2", ["1/4"], aligned_geometry(1, w2, math.cos(math.radians(t))), trials, 20 + t + i)
            errorbar(ax, [t], m, s, color=line.get_color())
    ax.axhline(er, ls="--", color="k", label=r"$E_{RR}$")
    ax.set_xlabel(r"angle $\theta$ between $w = w_K = w_Q$ and $\mu$ (degrees)")
    ax.set_ylabel(r"$E_A(\gamma = 1/4)$")
    ax.set_title(r"(b) aligned weights, $c = 1/2$, $\|\mu\|^2 = 1$", fontsize=9)
    ax.legend(fontsize=7)
    # (c) temperature
    ax = axes[2]
    for i, al in enumerate((Fraction(1, 2), Fraction(1), Fraction(3, 2))):
        geo = LowRankGeometry([[1, 0, 0], [0, 0, 0], [0, 0, 0]], al)
        ea, er = _limits("1/2", gam, geo)
        line, = ax.plot([float(g) for g in gam], ea, label=rf"$\alpha = {al}$ ($a_1 = \alpha$)")
        m, s = _sim(n, "1/2", gam_sim, geo, trials, 30 + i)
        errorbar(ax, [float(g) for g in gam_sim], m, s, color=line.get_color())
    ax.plot([float(g) for g in gam], er, "--", color="k", label=r"$E_{RR}$")
    ax.set_xscale("log")
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel(r"$E_A$")
    ax.set_title(r"(c) temperature, $W = \alpha I$, $c = 1/2$, $\|\mu\|^2 = 1$", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, out, "softmax_claims")


def main(argv=None) -> int:
    """``python -m symrmt.figures.softmax OUT``: draw the softmax figure into the folder ``OUT``; returns 0.

    Takes the command line words; argparse refuses bad ones (exit 2) before any work:

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()):
    ...     main(["out", "--trials", "eight"])
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m symrmt.figures.softmax", description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--points", type=int, default=13)
    a = p.parse_args(argv)
    for path in softmax_claims(a.out, a.n, a.trials, a.points):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
