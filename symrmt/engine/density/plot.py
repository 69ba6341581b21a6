"""The figure of ``symrmt density --plot``: the limiting density over the eigenvalue histogram.

The density is a line; the histogram (if simulated) is drawn as bars with error bars of 2 standard
errors; the edges of the support are dashed vertical lines, each labelled with its value; an atom is a
stem with its mass.  Object-oriented matplotlib only (no ``pyplot``), saved as PNG (and PDF when the
path ends in ``.pdf``).
"""

from __future__ import annotations

import math

from symrmt.errors import ExtraUnavailable
from symrmt.plotting import figure_path


def plot_density(d, path=None, ax=None, title=None):
    """Draw :class:`symrmt.engine.density.result.Density` ``d`` (on ``ax``, else a new figure; saved to ``path``
    when given, with ``title``); returns the figure: the limit's curve, with the histogram of
    :meth:`~symrmt.engine.density.result.Density.simulate` and its error bars (2 se) when simulated, the edges
    dashed and the atoms as stems.  Raises :class:`~symrmt.errors.ExtraUnavailable` (an ``ImportError``) without matplotlib.
    """
    try:
        # optional dependency (matplotlib)
        from matplotlib.figure import Figure
    except ImportError:
        raise ExtraUnavailable("the figure needs matplotlib: pip install 'symrmt[plot]'") from None

    fig = None
    if ax is None:
        fig = Figure(figsize=(6.4, 4.0), dpi=150)
        ax = fig.add_subplot(1, 1, 1)
    h = d.histogram
    if h is not None:
        e, dens, se = h["edges"], h["density"], h["se"]
        centers = [(a + b) / 2 for a, b in zip(e, e[1:])]
        ax.bar(centers, dens, width=e[1] - e[0], color="#c9d6ea", edgecolor="#8fa6c8", linewidth=0.5,
               label=f"eigenvalues, n = {h['n']} ({h['trials']} trials)")
        ax.errorbar(centers, dens, yerr=[2 * s for s in se], fmt="none", ecolor="#3b5b8c", elinewidth=0.8,
                    capsize=1.5, label="± 2 se")
    xs = [x for x, v in zip(d.x, d.density) if v is not None]
    ys = [float(v) for v in d.density if v is not None]
    ax.plot(xs, ys, color="#b2182b", linewidth=1.6, label="limit (symrmt)")
    # an atom's bin is as tall as its mass over the bin width: it is clipped, and its mass written on its stem
    atom_x = [float(a["x"]) for a in d.atoms()]
    hist_top = []
    if h is not None:
        hist_top = [v + 2 * s for a, b, v, s in zip(h["edges"], h["edges"][1:], h["density"], h["se"])
                    if not any(a <= x0 <= b for x0 in atom_x)]
    top = max(ys + hist_top + [1e-12])
    for lo, hi in d.support():
        for edge in (lo, hi):
            if edge is not None:
                ax.axvline(float(edge), color="0.3", linestyle="--", linewidth=0.9)
                ax.annotate(f"edge {float(edge):.6g}", (float(edge), top * 0.5), fontsize=7, ha="right",
                            va="center", rotation=90, color="0.3", xytext=(-2, 0), textcoords="offset points")
    for a in d.atoms():
        ax.vlines(float(a["x"]), 0, top * 0.9, color="#1a9850", linewidth=2.0)
        ax.annotate(f"atom, mass {float(a['mass']):.4g}", (float(a["x"]), top * 0.9), fontsize=8, color="#1a9850",
                    xytext=(-4, 0), textcoords="offset points", ha="right", va="center")
    ax.set_xlabel("x")
    ax.set_ylabel("density")
    ax.set_ylim(0, top * 1.12 if math.isfinite(top) else None)
    ax.set_title(title or f"spectral density of {d.expression}", fontsize=10)
    ax.legend(fontsize=8, frameon=True, framealpha=0.9, loc="upper right")
    if fig is not None:
        fig.tight_layout()
        if path is not None:
            fig.savefig(figure_path(path, "plot(path=...)"))
    return fig if fig is not None else ax.figure
