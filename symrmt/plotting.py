r"""Matplotlib plots and xarray/pandas views of the result objects (``r.plot()``, ``r.to_xarray()``).

Every ``plot`` takes an optional ``ax`` (a new figure otherwise) and returns the axes.  matplotlib is the
optional extra ``symrmt[plot]``, xarray and pandas ``symrmt[results]``.
"""

from __future__ import annotations

import math
import os
import warnings
from fractions import Fraction

import numpy as np

from symrmt.errors import ExtraUnavailable, ParameterError, SymrmtError
from symrmt.parsing.numbers import to_fraction

__all__ = ["need_matplotlib", "need_xarray", "figure_path", "plot_limit", "plot_simulation", "plot_sweep", "plot_crossings",
           "long_frame", "fine_axis", "fine_limit", "log_axis", "axis_label", "set_log", "COLORS"]


def need_matplotlib():
    """``matplotlib.pyplot``, with the install hint when it is missing.

    Takes nothing; returns the module; raises :class:`~symrmt.errors.ExtraUnavailable` (an ``ImportError``)
    naming ``pip install 'symrmt[plot]'``.

    >>> need_matplotlib().__name__
    'matplotlib.pyplot'
    """
    try:
        # optional dependency (matplotlib)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - installed where the tests run
        raise ExtraUnavailable("plot() needs matplotlib: pip install 'symrmt[plot]'") from exc
    return plt


def figure_path(path, what: str = "--plot") -> str:
    """The file a figure saved to ``path`` is written to, checked before any work: a name without an
    extension gets ``.png`` (as matplotlib's ``savefig`` does, so the path printed is the file written);
    a folder, a folder that does not exist or is not writable, or an extension matplotlib cannot write
    is a :class:`~symrmt.errors.ParameterError` that names what is wrong.

    >>> figure_path("/tmp/rho")
    '/tmp/rho.png'
    >>> figure_path("/tmp/rho.txt")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --plot /tmp/rho.txt: matplotlib cannot write a .txt figure; use one of ...
    """
    text = os.fspath(path)
    if os.path.isdir(text):
        raise ParameterError(f"{what} {text}: is a folder; give a file name, e.g. {os.path.join(text, 'density.png')}")
    stem, ext = os.path.splitext(text)
    if not ext or not os.path.basename(stem):
        text, ext = text + ".png", ".png"
    # optional dependency (matplotlib)
    from matplotlib.figure import Figure

    formats = sorted(Figure().canvas.get_supported_filetypes())
    if ext[1:].lower() not in formats:
        raise ParameterError(f"{what} {path}: matplotlib cannot write a {ext} figure; use one of "
                             f"{', '.join('.' + f for f in formats)}")
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(parent):
        raise ParameterError(f"{what} {path}: the folder {parent} does not exist")
    if (os.path.exists(text) and not os.access(text, os.W_OK)) or not os.access(parent, os.W_OK | os.X_OK):
        raise ParameterError(f"{what} {path}: not writable")
    return text


def need_xarray():
    """``xarray``, with the install hint when it is missing.

    Takes nothing; returns the module; raises :class:`~symrmt.errors.ExtraUnavailable` (an ``ImportError``)
    naming ``pip install 'symrmt[results]'``.

    >>> need_xarray().__name__
    'xarray'
    """
    try:
        # optional dependency (xarray)
        import xarray as xr
    except ImportError as exc:  # pragma: no cover - installed where the tests run
        raise ExtraUnavailable("to_xarray() needs xarray: pip install 'symrmt[results]'") from exc
    return xr


def long_frame(wide, ids, values):
    """The long format of a wide DataFrame: the columns ``ids``, then ``error`` and ``value``.

    Takes the DataFrame, the names of its id columns and of its value columns; returns a new DataFrame with
    the ``attrs`` of ``wide``.

    >>> import pandas as pd
    >>> wide = pd.DataFrame({"gamma": [1.0], "attention": [0.25], "ridge": [0.5]})
    >>> long_frame(wide, ["gamma"], ["attention", "ridge"]).values.tolist()
    [[1.0, 'attention', 0.25], [1.0, 'ridge', 0.5]]
    """
    out = wide.melt(id_vars=list(ids), value_vars=list(values), var_name="error", value_name="value")
    out.attrs.update(wide.attrs)
    return out


def _axes(ax):
    if ax is not None:
        return ax
    plt = need_matplotlib()
    # constrained layout: labels, ticks and legend fit the figure, so savefig(..., bbox_inches="tight") clips none
    _, ax = plt.subplots(figsize=(5.4, 3.8), layout="constrained")
    return ax


def set_log(ax, which: str = "x") -> None:
    """Put axis ``which`` (``"x"`` or ``"y"``) of ``ax`` in log scale with labels that do not overlap: no labels
    on the minor ticks (matplotlib labels them when the axis spans about one decade, and ``3x10^-1`` runs into
    ``4x10^-1``), and over at most 2.5 decades of data major ticks at 1, 2 and 5 times the powers of ten,
    written as plain numbers (``0.5``, ``1``, ``2``).  Call it after the data are drawn.

    Takes matplotlib axes and ``"x"`` or ``"y"``; returns ``None``.  The axes of a
    ``matplotlib.figure.Figure`` (no pyplot, nothing drawn): over one decade the major labels are plain
    numbers and the minor ticks have none:

    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> _ = ax.plot([0.1, 1.0], [0.0, 1.0])
    >>> set_log(ax, "x")
    >>> ax.get_xscale(), ax.xaxis.get_major_formatter()(0.5, 0), type(ax.xaxis.get_minor_formatter()).__name__
    ('log', '0.5', 'NullFormatter')
    """
    # optional dependency (matplotlib)
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    lo, hi = ax.dataLim.intervalx if which == "x" else ax.dataLim.intervaly
    decades = math.log10(hi / lo) if 0 < lo < hi and math.isfinite(hi / lo) else 3.0
    if decades <= 2.5:  # a short span: 1, 2, 5 times the powers of ten, as plain numbers
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def log_axis(x) -> bool:
    """True when the values ``x`` are positive and span a factor 10 or more (then an axis is drawn in log scale).

    >>> log_axis([0.01, 1]), log_axis([0, 1])
    (True, False)
    """
    return _log_axis(x)


def axis_label(axis: str) -> str:
    r"""The matplotlib label of a grid axis (``"snr"`` -> ``$\|\mu\|^2$``; tied axes joined by ``=``).

    >>> axis_label("c")
    '$c$'
    """
    return _label(axis)


def _log_axis(x) -> bool:
    x = np.asarray(x, dtype=float)
    return bool(x.size > 1 and np.all(x > 0) and x.max() / x.min() >= 10)


#: the colours of E_A and E_RR in every plot of a limit and its simulation (lines and points match)
COLORS = {"attention": "C0", "ridge": "C3"}


def plot_limit(r, ax=None, log=None, labels=("$E_A$ (Attention)", "$E_{RR}$ (ridge)")):
    """``E_A`` and ``E_RR`` of a :class:`~symrmt.results.LimitResult` against ``gamma``.

    Takes the result (or any object with ``gamma``, ``attention``, ``ridge`` arrays), optional axes, ``log``
    (``None``: a log axis when ``gamma`` spans a factor 10) and the two legend labels; returns the axes.
    The lines go through the points in increasing ``gamma`` (axes of a ``matplotlib.figure.Figure``; nothing
    is rendered):

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from matplotlib.figure import Figure
    >>> r = SimpleNamespace(gamma=np.array([10.0, 1.0]), attention=np.array([0.2, 0.1]), ridge=np.array([0.4, 0.3]))
    >>> ax = plot_limit(r, ax=Figure().add_subplot())
    >>> [line.get_ydata().tolist() for line in ax.get_lines()], ax.get_xscale()
    ([[0.1, 0.2], [0.3, 0.4]], 'log')
    """
    ax = _axes(ax)
    order = r.gamma.argsort()
    g = r.gamma[order]
    ax.plot(g, r.attention[order], "-", color=COLORS["attention"], label=labels[0])
    ax.plot(g, r.ridge[order], "--", color=COLORS["ridge"], label=labels[1])
    if _log_axis(g) if log is None else log:
        set_log(ax, "x")
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel("interpolation error (limit)")
    ax.legend()
    return ax


def fine_axis(values, points: int = 61, log=None) -> list:
    """``points`` floats spanning ``values`` (log-spaced when they are positive and span a factor 10 or more,
    unless ``log`` says otherwise), rounded to 8 significant digits, with every value of ``values`` added (so
    that a curve drawn through them passes through the simulated abscissae); sorted.

    >>> fine_axis([0.1, 10], points=3)
    [0.1, 1.0, 10.0]
    """
    xs = [float(x) for x in values]
    lo, hi = min(xs), max(xs)
    if log is None:
        log = lo > 0 and hi / lo >= 10
    if points < 2 or lo == hi:
        grid = [lo]
    elif log:
        a, b = math.log10(lo), math.log10(hi)
        grid = [10 ** (a + (b - a) * i / (points - 1)) for i in range(points)]
    else:
        grid = [lo + (hi - lo) * i / (points - 1) for i in range(points)]
    return sorted({float(f"{x:.8g}") for x in grid} | set(xs))


class _Curve:
    """The limits on a fine grid of gamma: ``gamma``, ``attention``, ``ridge`` (float64 arrays), as plot_limit reads."""

    def __init__(self, gamma, attention, ridge):
        self.gamma = np.array(gamma, dtype=float)
        self.attention = np.array([float(v) for v in attention], dtype=float)
        self.ridge = np.array([float(v) for v in ridge], dtype=float)


def fine_limit(limit, gammas, points: int = 61, digits: int = 10):
    """The limits of ``limit``'s model (a :class:`~symrmt.results.LimitResult`) on ``points`` values of
    ``gamma`` spanning ``gammas`` (:func:`fine_axis`), at ``digits`` digits (at most ``limit.digits``): a smooth
    curve instead of segments through the points, computed by the result's ``recompute`` (which the model
    sets).  Returns an object with ``gamma``, ``attention``, ``ridge`` arrays (``limit`` itself when it cannot
    be recomputed or spans fewer than two values); raises the solver's error (a :class:`~symrmt.SolverError`)
    when a value cannot be certified.

    >>> from types import SimpleNamespace
    >>> limit = SimpleNamespace(digits=5, recompute=lambda grid, digits: ([g / 2 for g in grid], grid))
    >>> curve = fine_limit(limit, [1, 100], points=3)
    >>> curve.gamma.tolist(), curve.attention.tolist()
    ([1.0, 10.0, 100.0], [0.5, 5.0, 50.0])
    >>> fine_limit(limit, [1]) is limit
    True
    """
    values = [float(g) for g in gammas]
    recompute = getattr(limit, "recompute", None)
    if len(values) < 2 or recompute is None:
        return limit
    grid = fine_axis(values, points)
    att, rr = recompute(grid, min(digits, limit.digits))
    return _Curve(grid, att, rr)


def plot_simulation(s, ax=None, limit=None, k: float = 1.0, log=None, fine: int = 61):
    """Monte-Carlo means of a :class:`~symrmt.results.SimulationResult` with error bars of ``k`` se,
    over the curves of ``limit`` (a :class:`~symrmt.results.LimitResult`) when given: the limit is
    recomputed on ``fine`` values of ``gamma`` spanning the simulated ones (``fine=0``: drawn through
    ``limit``'s own points), in the colour of its points.  Returns the axes; a limit that cannot be
    recomputed on the fine grid is drawn through its own points, with a warning.  A bar spans
    ``mean -+ k se`` (here ``0.5 -+ 2 * 0.25``; axes of a ``matplotlib.figure.Figure``, nothing rendered):

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from matplotlib.figure import Figure
    >>> s = SimpleNamespace(gamma=np.array([1.0]), attention=np.array([0.5]), attention_se=np.array([0.25]),
    ...                     ridge=np.array([0.5]), ridge_se=np.array([0.0]), n=64)
    >>> ax = plot_simulation(s, ax=Figure().add_subplot(), k=2)
    >>> ax.containers[0][2][0].get_segments()[0].tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    ax = _axes(ax)
    if limit is not None:
        curve = limit
        if fine:
            try:
                curve = fine_limit(limit, s.gamma, fine)
            except (SymrmtError, ArithmeticError) as exc:  # drawn through the certified points, and said so
                warnings.warn(f"plot: the limit could not be computed on a fine grid of gamma ({exc}); it is drawn "
                              "through its certified values at the simulated gamma only", stacklevel=3)
        plot_limit(curve, ax=ax, log=log, labels=("$E_A$ limit", "$E_{RR}$ limit"))
    order = s.gamma.argsort()
    g = s.gamma[order]
    ax.errorbar(g, s.attention[order], yerr=k * s.attention_se[order], fmt="o", ms=4, capsize=3,
                color=COLORS["attention"], label=f"$E_A$ simulation (n = {s.n}, $\\pm${k:g} se)")
    ax.errorbar(g, s.ridge[order], yerr=k * s.ridge_se[order], fmt="s", ms=4, capsize=3, mfc="white",
                color=COLORS["ridge"], label=f"$E_{{RR}}$ simulation (n = {s.n}, $\\pm${k:g} se)")
    if limit is None and (_log_axis(g) if log is None else log):
        set_log(ax, "x")
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel("interpolation error")
    ax.legend(fontsize="small")
    return ax


_LABEL = {"gamma": r"$\gamma$", "c": "$c$", "snr": r"$\|\mu\|^2$", "wk2": r"$\|w_K\|^2$", "wq2": r"$\|w_Q\|^2$",
          "wkwq": r"$w_K \cdot w_Q$", "muwk": r"$\mu \cdot w_K$", "muwq": r"$\mu \cdot w_Q$",
          "cos_muwk": r"$\cos(\mu, w_K)$", "cos_muwq": r"$\cos(\mu, w_Q)$", "cos_wkwq": r"$\cos(w_K, w_Q)$"}


def _label(axis: str) -> str:
    return " = ".join(_LABEL.get(k, k) for k in axis.split("="))


def _coords(sw):
    out = []
    for name, vals in sw.grid.items():
        key = name.split("=")[0]
        out.append(np.array([float(v) if isinstance(v, (int, float, Fraction)) else float(to_fraction(v, key))
                             for v in vals], dtype=float))
    return out


def plot_sweep(sw, kind: str | None = None, ax=None, log=None):
    """A :class:`~symrmt.models.attention.sweeps.SweepResult`: over one axis both errors as lines (the
    default, ``kind="both"``, and ``"attention"``, ``"ridge"``; ``"difference"``: ``E_A - E_RR``;
    ``"sign"``: its sign); over two a heat map (``kind="difference"``, the default, ``"attention"``,
    ``"ridge"``) or the sign map (``kind="sign"``).  Returns the axes; raises
    :class:`~symrmt.errors.ParameterError` for another ``kind``, or a sweep over more than two axes.  The
    check comes before any drawing:

    >>> from types import SimpleNamespace
    >>> plot_sweep(SimpleNamespace(grid={"gamma": [1, 2]}), kind="both ways")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: kind must be 'both' (one axis), 'difference', 'attention', 'ridge' or 'sign', got 'both ways'
    """
    axes = list(sw.grid)
    if kind is None:
        kind = "both" if len(axes) == 1 else "difference"
    if kind not in ("both", "difference", "attention", "ridge", "sign") or (kind == "both" and len(axes) != 1):
        raise ParameterError(f"kind must be 'both' (one axis), 'difference', 'attention', 'ridge' or 'sign', "
                             f"got {kind!r}")
    ax = _axes(ax)
    diff = sw.attention - sw.ridge
    if len(axes) == 1:
        (x,) = _coords(sw)
        if kind == "difference" or kind == "sign":
            ax.plot(x, diff if kind == "difference" else np.sign(diff), "-", label="$E_A - E_{RR}$")
            ax.axhline(0, color="0.5", lw=0.8)
            ax.set_ylabel("$E_A - E_{RR}$ (limits)" if kind == "difference" else "sign of $E_A - E_{RR}$")
        else:
            ax.plot(x, sw.attention, "-", color=COLORS["attention"], label="$E_A$ limit")
            ax.plot(x, sw.ridge, "--", color=COLORS["ridge"], label="$E_{RR}$ limit")
            ax.set_ylabel("interpolation error (limit)")
        if _log_axis(x) if log is None else log:
            set_log(ax, "x")
        ax.set_xlabel(_label(axes[0]))
        ax.legend()
        return ax
    if len(axes) != 2:
        raise ParameterError(f"plot() draws a sweep over one or two axes; this one has {len(axes)} ({', '.join(axes)})")
    x, y = _coords(sw)
    if kind == "sign":
        # optional dependency (matplotlib)
        from matplotlib.colors import ListedColormap

        z = np.sign(diff).T
        mesh = ax.pcolormesh(x, y, z, cmap=ListedColormap(["#3b6fb6", "#f2f2f2", "#c8553d"]), vmin=-1.5, vmax=1.5,
                             shading="nearest")
        cbar = ax.figure.colorbar(mesh, ax=ax, ticks=[-1, 0, 1])
        cbar.ax.set_yticklabels(["$E_A < E_{RR}$", "tie", "$E_A > E_{RR}$"])
    else:
        z = {"difference": diff, "attention": sw.attention, "ridge": sw.ridge}[kind].T
        if kind == "difference":
            # optional dependency (matplotlib)
            from matplotlib.colors import TwoSlopeNorm

            lim = float(np.max(np.abs(z))) or 1.0
            mesh = ax.pcolormesh(x, y, z, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -lim, lim), shading="nearest")
        else:
            mesh = ax.pcolormesh(x, y, z, cmap="viridis", shading="nearest")
        ax.figure.colorbar(mesh, ax=ax, label={"difference": "$E_A - E_{RR}$", "attention": "$E_A$",
                                                "ridge": "$E_{RR}$"}[kind])
    if np.any(diff > 0) and np.any(diff < 0) and len(x) > 1 and len(y) > 1:
        ax.contour(x, y, diff.T, levels=[0.0], colors="k", linewidths=1.0)
    if _log_axis(x) if log is None else log:
        set_log(ax, "x")
    if _log_axis(y) if log is None else log:
        set_log(ax, "y")
    ax.set_xlabel(_label(axes[0]))
    ax.set_ylabel(_label(axes[1]))
    return ax


def plot_crossings(cr, ax=None, log=None):
    """The sign of ``E_A - E_RR`` at the scan points of a :class:`~symrmt.models.attention.boundary.CrossingsResult`
    and a vertical line at each root.  Takes the result (or any object with ``scan_x``, ``scan_sign``,
    ``roots``, ``over``), optional axes and ``log``; returns the axes (of a ``matplotlib.figure.Figure`` here,
    nothing rendered):

    >>> from types import SimpleNamespace
    >>> from matplotlib.figure import Figure
    >>> cr = SimpleNamespace(scan_x=[0.5, 1, 2], scan_sign=[-1, -1, 1], roots=[1.5], over="c")
    >>> ax = plot_crossings(cr, ax=Figure().add_subplot())
    >>> ax.get_lines()[-1].get_xdata(), ax.get_xlabel()
    ([1.5, 1.5], '$c$')
    """
    ax = _axes(ax)
    x = np.array([float(v) for v in cr.scan_x])
    ax.step(x, np.array(cr.scan_sign, dtype=float), where="mid", color="0.4", lw=1)
    ax.plot(x, cr.scan_sign, "o", ms=3, color="0.2", label="sign of $E_A - E_{RR}$ (scan)")
    for i, root in enumerate(cr.roots):
        ax.axvline(float(root), color="C3", lw=1.2, label="crossing $E_A = E_{RR}$" if i == 0 else None)
    ax.set_yticks([-1, 1], ["$E_A < E_{RR}$", "$E_A > E_{RR}$"])
    ax.set_ylim(-1.6, 1.6)
    if _log_axis(x) if log is None else log:
        set_log(ax, "x")
    ax.set_xlabel(_label(cr.over))
    ax.legend(fontsize="small")
    return ax
