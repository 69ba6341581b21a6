r"""Limiting spectral densities of symmetric matrix expressions: :class:`Density` and :func:`density`.

``rho(x) = lim_{eta -> 0+} (1/pi) Im tau((M - (x + i eta))^{-1})`` of a symmetric matrix expression ``M``
of a :class:`symrmt.engine.Model`, computed on a grid by continuation from ``Im z = O(1)`` toward the
real axis and certified at each point (:mod:`symrmt.engine.density_solver`); with the edges of its support
and the masses of its atoms.

Examples
--------
>>> import mpmath

from symrmt.table import TableResult
>>> from symrmt.engine import Model
>>> m = Model()
>>> m.dim("p", "c*n")
Dim('p', c)
>>> Z = m.gaussian("Z", "p", "n")
>>> d = m.density("Z.T*Z/n", x=[1, 3], at={"c": 2}, digits=20, edges=False)
>>> print(mpmath.nstr(d.density[0], 20))  # 1/pi, the Marchenko-Pastur density at x = 1 for c = 2
0.31830988618379067154
"""

from __future__ import annotations

import mpmath

from symrmt.table import TableResult

__all__ = ["Density", "density"]


class Density(TableResult):
    """A spectral density on a grid.

    Attributes: ``x`` (floats), ``density`` (mpf, or ``None`` where the point is singular: an edge or an
    atom on the grid), ``tau`` (the complex ``tau((M - x - i0)^{-1})``), ``status`` (``"ok"`` or
    ``"singular"`` per point; ``"float"`` for a checked float64 point with ``certify=k``), ``digits``, ``expression``, ``at``, ``histogram`` (after :meth:`simulate`).
    """

    def __init__(self, x, density, tau, status, support, atoms, digits, expression, at):
        self.x, self.density, self.tau, self.status = x, density, tau, status
        self._support, self._atoms = support, atoms
        self.digits, self.expression, self.at = digits, expression, at
        self.histogram = None

    def support(self):
        """The intervals ``[lo, hi]`` of the support seen on the grid (edges to ``digits``; ``None``: beyond
        the grid)."""
        return [list(s) for s in self._support]

    def atoms(self):
        """The atoms found: ``[{"x": x0, "mass": mass}]`` (mass to ``digits``)."""
        return [dict(a) for a in self._atoms]

    def to_pandas(self):
        """A DataFrame with columns ``x``, ``density`` (float, NaN at a singular point), ``status``."""
        import pandas as pd

        return pd.DataFrame({"x": self.x,
                             "density": [float(d) if d is not None else float("nan") for d in self.density],
                             "status": self.status})

    def to_json(self, num) -> dict:
        """The ``--json`` object; ``num(value, digits)`` formats a number (floats up to 15 digits)."""
        def f(v):
            return None if v is None else num(v, self.digits)

        out = {"x": [float(x) for x in self.x], "density": [f(d) for d in self.density], "status": self.status,
               "support": [[f(a), f(b)] for a, b in self._support],
               "atoms": [{"x": f(a["x"]), "mass": f(a["mass"])} for a in self._atoms],
               "digits": self.digits, "expression": self.expression, "at": {k: str(v) for k, v in self.at.items()}}
        if self.histogram is not None:
            out["histogram"] = self.histogram
        return out

    def simulate(self, model, matrix, n=512, trials=10, seed=0, bins=None, *, store=None, workers=1,
                 scheduler=None):
        """Eigenvalues of the matrix at size ``n`` over ``trials`` seeded draws, as a histogram on the grid's
        range with error bars (the standard error of each bin's density across trials), through the
        package's executor and trial store (:mod:`symrmt.engine.density_sim`)."""
        from symrmt.engine.density_sim import eigen_histogram

        self.histogram = eigen_histogram(model, matrix, self.at, n, trials, seed, min(self.x), max(self.x),
                                         bins or min(60, max(10, len(self.x) // 4)), store=store,
                                         workers=workers, scheduler=scheduler)
        return self.histogram

    def plot(self, path=None, ax=None, title=None):
        """The density over the histogram (if simulated), edges dashed, atoms as stems; saved to ``path``."""
        from symrmt.figures.density_plot import plot_density

        return plot_density(self, path=path, ax=ax, title=title)

    # the table protocol (symrmt.table.TableResult): str(), HTML, LaTeX, to_xarray()
    ROW_NAME = "points"

    def _columns(self) -> list:
        return ["x", "density", "status"]

    def _rows(self, limit: int | None = None) -> list:
        k = len(self.x) if limit is None else min(len(self.x), limit)
        return [[repr(float(self.x[i])), "" if self.density[i] is None else mpmath.nstr(self.density[i], self.digits),
                 self.status[i]] for i in range(k)]

    def _count(self) -> int:
        return len(self.x)

    def _caption(self) -> str:
        at = ", ".join(f"{k} = {v}" for k, v in self.at.items())
        return (f"spectral density of {self.expression}" + (f" at {at}" if at else "")
                + f"; {len(self.x)} points, {len(self._atoms)} atom(s), {self.digits} digits")

    def _empty_text(self) -> str:
        return "No points on the grid."

    def __repr__(self):
        return f"Density({self.expression!r}, {len(self.x)} points, support={self._support}, atoms={len(self._atoms)})"


def density(model, matrix, x, at=None, digits=15, edges=True, atoms=True, certify=None) -> Density:
    """The density of ``matrix`` (text or node) of ``model`` on the points ``x`` (a sequence, or the text
    ``"LO:HI:K"`` of ``symrmt density --over``) at the values ``at``.

    ``certify=k``: certify every ``k``-th point only; the others are float64 values, checked (status
    ``"float"``; see :mod:`symrmt.engine.density_solver`)."""
    from symrmt.engine.density_solver import compute
    from symrmt.parsing import check_digits

    digits = check_digits(digits)
    if isinstance(x, str):  # the CLI's grid 'LO:HI:K' (or 'x=LO:HI:K'), read as --over reads it
        from symrmt.cli.density import parse_over

        _, xs = parse_over(x if "=" in x else f"x={x}")
    else:
        xs = list(x)
    if not xs:
        raise ValueError("x: give at least one point")
    if certify is not None and (not isinstance(certify, int) or certify < 1):
        raise ValueError(f"certify must be a positive integer (every k-th point certified), got {certify!r}")
    return compute(model, matrix, xs, at or {}, digits=digits, edges=edges, atoms=atoms,
                   label=matrix if isinstance(matrix, str) else None, certify=certify)


def _format(v, digits):
    return mpmath.nstr(v, digits)
