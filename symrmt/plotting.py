r"""Matplotlib plots and xarray/pandas views of the result objects (``r.plot()``, ``r.to_xarray()``).

Every ``plot`` takes an optional ``ax`` (a new figure otherwise) and returns the axes, so a
notebook can keep drawing on it:

* :class:`~symrmt.results.LimitResult`: ``E_A`` and ``E_RR`` against ``gamma`` (log axis when the
  values span a factor 10 or more);
* :class:`~symrmt.results.SimulationResult`: the Monte-Carlo means with error bars of ``k`` standard
  errors, over the limit curves when ``limit=`` is given (``Comparison.plot()`` does that);
* :class:`~symrmt.models.attention.sweeps.SweepResult`: a line per error over a one-axis grid; over a two-axis grid
  a heat map of ``E_A - E_RR`` (diverging colours, zero in white) with the contour
  ``E_A = E_RR``, or with ``kind="sign"`` the sign map of the phase diagram;
* :class:`~symrmt.models.attention.boundary.CrossingsResult`: the sign of ``E_A - E_RR`` at the scan points and a
  vertical line at each certified root.

matplotlib is the optional extra ``symrmt[plot]``, xarray and pandas ``symrmt[results]``.
"""

from __future__ import annotations

__all__ = ["need_matplotlib", "need_xarray", "figure_path", "plot_limit", "plot_simulation", "plot_sweep", "plot_crossings",
           "long_frame"]


def need_matplotlib():
    """``matplotlib.pyplot``, with the install hint when it is missing."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - installed where the tests run
        raise ImportError("plot() needs matplotlib: pip install 'symrmt[plot]'") from exc
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
    import os

    from symrmt.errors import ParameterError

    text = os.fspath(path)
    if os.path.isdir(text):
        raise ParameterError(f"{what} {text}: is a folder; give a file name, e.g. {os.path.join(text, 'density.png')}")
    stem, ext = os.path.splitext(text)
    if not ext or not os.path.basename(stem):
        text, ext = text + ".png", ".png"
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
    """``xarray``, with the install hint when it is missing."""
    try:
        import xarray as xr
    except ImportError as exc:  # pragma: no cover - installed where the tests run
        raise ImportError("to_xarray() needs xarray: pip install 'symrmt[results]'") from exc
    return xr


def long_frame(wide, ids, values):
    """The long format of a wide DataFrame: the columns ``ids``, then ``error`` and ``value``."""
    out = wide.melt(id_vars=list(ids), value_vars=list(values), var_name="error", value_name="value")
    out.attrs.update(wide.attrs)
    return out


def _axes(ax):
    if ax is not None:
        return ax
    plt = need_matplotlib()
    _, ax = plt.subplots(figsize=(5, 3.5))
    return ax


def _log_axis(x) -> bool:
    import numpy as np

    x = np.asarray(x, dtype=float)
    return bool(x.size > 1 and np.all(x > 0) and x.max() / x.min() >= 10)


def plot_limit(r, ax=None, log=None, labels=("$E_A$ (Attention)", "$E_{RR}$ (ridge)")):
    """``E_A`` and ``E_RR`` of a :class:`~symrmt.results.LimitResult` against ``gamma``."""
    ax = _axes(ax)
    order = r.gamma.argsort()
    g = r.gamma[order]
    ax.plot(g, r.attention[order], "-", label=labels[0])
    ax.plot(g, r.ridge[order], "--", label=labels[1])
    if _log_axis(g) if log is None else log:
        ax.set_xscale("log")
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel("interpolation error (limit)")
    ax.legend()
    return ax


def plot_simulation(s, ax=None, limit=None, k: float = 1.0, log=None):
    """Monte-Carlo means of a :class:`~symrmt.results.SimulationResult` with error bars of ``k`` se,
    over the curves of ``limit`` (a :class:`~symrmt.results.LimitResult`) when given."""
    ax = _axes(ax)
    if limit is not None:
        plot_limit(limit, ax=ax, log=log, labels=("$E_A$ limit", "$E_{RR}$ limit"))
    order = s.gamma.argsort()
    g = s.gamma[order]
    ax.errorbar(g, s.attention[order], yerr=k * s.attention_se[order], fmt="o", ms=4, capsize=3,
                label=f"$E_A$ simulation (n = {s.n}, $\\pm${k:g} se)")
    ax.errorbar(g, s.ridge[order], yerr=k * s.ridge_se[order], fmt="s", ms=4, capsize=3,
                label=f"$E_{{RR}}$ simulation (n = {s.n}, $\\pm${k:g} se)")
    if limit is None and (_log_axis(g) if log is None else log):
        ax.set_xscale("log")
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
    from fractions import Fraction

    import numpy as np

    from symrmt.parsing.numbers import to_fraction

    out = []
    for name, vals in sw.grid.items():
        key = name.split("=")[0]
        out.append(np.array([float(v) if isinstance(v, (int, float, Fraction)) else float(to_fraction(v, key))
                             for v in vals], dtype=float))
    return out


def plot_sweep(sw, kind: str = "difference", ax=None, log=None):
    """A :class:`~symrmt.models.attention.sweeps.SweepResult`: lines over one axis, a heat map (``kind="difference"``,
    ``"attention"``, ``"ridge"``) or the sign map (``kind="sign"``) over two."""
    import numpy as np

    if kind not in ("difference", "attention", "ridge", "sign"):
        from symrmt.errors import ParameterError

        raise ParameterError(f"kind must be 'difference', 'attention', 'ridge' or 'sign', got {kind!r}")
    axes = list(sw.grid)
    ax = _axes(ax)
    diff = sw.attention - sw.ridge
    if len(axes) == 1:
        (x,) = _coords(sw)
        if kind == "difference" or kind == "sign":
            ax.plot(x, diff if kind == "difference" else np.sign(diff), "-", label="$E_A - E_{RR}$")
            ax.axhline(0, color="0.5", lw=0.8)
        else:
            ax.plot(x, sw.attention, "-", label="$E_A$")
            ax.plot(x, sw.ridge, "--", label="$E_{RR}$")
        if _log_axis(x) if log is None else log:
            ax.set_xscale("log")
        ax.set_xlabel(_label(axes[0]))
        ax.legend()
        return ax
    if len(axes) != 2:
        from symrmt.errors import ParameterError

        raise ParameterError(f"plot() draws a sweep over one or two axes; this one has {len(axes)} ({', '.join(axes)})")
    x, y = _coords(sw)
    if kind == "sign":
        from matplotlib.colors import ListedColormap

        z = np.sign(diff).T
        mesh = ax.pcolormesh(x, y, z, cmap=ListedColormap(["#3b6fb6", "#f2f2f2", "#c8553d"]), vmin=-1.5, vmax=1.5,
                             shading="nearest")
        cbar = ax.figure.colorbar(mesh, ax=ax, ticks=[-1, 0, 1])
        cbar.ax.set_yticklabels(["$E_A < E_{RR}$", "tie", "$E_A > E_{RR}$"])
    else:
        z = {"difference": diff, "attention": sw.attention, "ridge": sw.ridge}[kind].T
        if kind == "difference":
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
        ax.set_xscale("log")
    if _log_axis(y) if log is None else log:
        ax.set_yscale("log")
    ax.set_xlabel(_label(axes[0]))
    ax.set_ylabel(_label(axes[1]))
    return ax


def plot_crossings(cr, ax=None, log=None):
    """The sign of ``E_A - E_RR`` at the scan points of a :class:`~symrmt.models.attention.boundary.CrossingsResult`
    and a vertical line at each root."""
    import numpy as np

    ax = _axes(ax)
    x = np.array([float(v) for v in cr.scan_x])
    ax.step(x, np.array(cr.scan_sign, dtype=float), where="mid", color="0.4", lw=1)
    ax.plot(x, cr.scan_sign, "o", ms=3, color="0.2", label="sign of $E_A - E_{RR}$ (scan)")
    for i, root in enumerate(cr.roots):
        ax.axvline(float(root), color="C3", lw=1.2, label="crossing $E_A = E_{RR}$" if i == 0 else None)
    ax.set_yticks([-1, 1], ["$E_A < E_{RR}$", "$E_A > E_{RR}$"])
    ax.set_ylim(-1.6, 1.6)
    if _log_axis(x) if log is None else log:
        ax.set_xscale("log")
    ax.set_xlabel(_label(cr.over))
    ax.legend(fontsize="small")
    return ax
