r"""Double descent of in-context learning by linear attention (``docs/icl.md`` section 6).

One figure: the ridgeless limit of the ICL error (:func:`symrmt.models.icl.theory.icl_limit`, lines) against
``tau = n/d^2`` on a log axis, for three task diversities ``kappa`` (``alpha = 1``, ``rho = 1/10``), with the
model simulated at token dimension ``d`` (:func:`symrmt.models.icl.simulation.icl_simulate`, points: mean
+- 2 se).  The limit has its pole at ``tau = 1``; the finite model has its own at ``n = d(d+1)``, i.e.
``tau = 1 + 1/d`` (dotted line).

Run ``python -m symrmt.figures.icl OUT_DIR [--d D] [--trials T]`` (needs matplotlib).
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction

import numpy as np

from symrmt.figures.draw import errorbar, new_figure, save_figure
from symrmt.models.icl.simulation import icl_simulate
from symrmt.models.icl.theory import icl_limit

__all__ = ["icl_double_descent", "main", "KAPPAS", "SIM_TAUS"]

#: task diversities drawn (one curve each)
KAPPAS = ("1/2", "2", "8")
#: tau of the simulation points (away from both poles)
SIM_TAUS = ("1/5", "2/5", "3/5", "2", "3", "5", "8")
ALPHA, RHO = "1", "1/10"


def _limit_curve(kappa, taus):
    return [float(icl_limit(ALPHA, kappa, t, RHO, digits=10).error) for t in taus]


def icl_double_descent(out, d: int = 20, trials: int = 8, points: int = 120, seed: int = 0) -> list[str]:
    """Draw ``icl_double_descent.png`` and ``.pdf`` in ``out``; returns the paths.

    Takes the folder and the model's size ``d``, ``trials`` and ``points``; raises
    :class:`~symrmt.errors.ExtraUnavailable` without matplotlib.  (No doctest: it simulates and draws a figure.)
    """
    fig, (ax,) = new_figure(1, width=6.0, height=4.5)
    grid = np.logspace(-1.3, 1.2, points)
    grid = [t for t in grid if abs(t - 1) > 0.02]
    for i, kappa in enumerate(KAPPAS):
        color = f"C{i}"
        below = [t for t in grid if t < 1]
        above = [t for t in grid if t > 1]
        for part in (below, above):
            ax.plot(part, _limit_curve(kappa, [repr(float(t)) for t in part]), color=color,
                    label=rf"$\kappa = {kappa}$" if part is below else None)
        sims = [icl_simulate(ALPHA, kappa, t, RHO, d=d, trials=trials, seed=seed) for t in SIM_TAUS]
        errorbar(ax, [float(_fraction(t)) for t in SIM_TAUS], [s.mean for s in sims], [s.se for s in sims],
                 color=color)
    ax.axvline(1, color="0.5", lw=0.8)
    ax.axvline(1 + 1 / d, color="0.5", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(0.5, 30)
    ax.set_xlabel(r"$\tau = n/d^2$ (pretraining contexts)")
    ax.set_ylabel(r"ICL error $e_{\mathrm{ICL}}$")
    ax.set_title(rf"linear attention, $\alpha = {ALPHA}$, $\rho = {RHO}$: limit (lines), $d = {d}$ (points, $\pm 2$ se)",
                 fontsize=9)
    ax.legend(fontsize=8)
    return save_figure(fig, out, "icl_double_descent")


def _fraction(text: str):
    """``"3/5"`` -> ``Fraction(3, 5)`` (plain fractions only)."""
    return Fraction(text)


def main(argv=None) -> int:
    """``python -m symrmt.figures.icl OUT``: draw the ICL figure into the folder ``OUT``; returns 0.

    Takes the command line words; argparse refuses bad ones (exit 2) before any work:

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()):
    ...     main(["out", "--d", "twenty"])
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m symrmt.figures.icl",
                                description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--d", type=int, default=20)
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--points", type=int, default=120)
    a = p.parse_args(argv)
    for path in icl_double_descent(a.out, a.d, a.trials, a.points):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
