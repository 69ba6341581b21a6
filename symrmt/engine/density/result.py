r"""Limiting spectral densities of symmetric matrix expressions: the result, :class:`Density`, and its grid.

``rho(x) = lim_{eta -> 0+} (1/pi) Im tau((M - (x + i eta))^{-1})`` of a symmetric matrix expression ``M``
of a :class:`symrmt.engine.Model`, computed on a grid by continuation from ``Im z = O(1)`` toward the
real axis and certified at each point (:mod:`symrmt.engine.density.solver`, called by
:meth:`symrmt.engine.Model.density`); with the edges of its support and the masses of its atoms.  This
module sits below the solver, which builds a :class:`Density`; from the engine it imports only
:mod:`symrmt.engine.lang.tree` (exact values), the histogram of :meth:`Density.simulate` and the figure of
:meth:`Density.plot`.

Examples
--------
>>> import mpmath
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

from fractions import Fraction

import mpmath

from symrmt.engine.density.histogram import eigen_histogram
from symrmt.engine.density.plot import plot_density
from symrmt.engine.lang.tree import exact_value
from symrmt.errors import ParameterError
from symrmt.table import TableResult, csv_param

__all__ = ["Density", "grid_points", "check_points", "MAX_POINTS", "MAX_MAGNITUDE"]

#: the endpoints of a grid lie within +-10**MAX_MAGNITUDE (the density's first stage is float64)
MAX_MAGNITUDE = 300
#: most points of a grid
MAX_POINTS = 4000


class Density(TableResult):
    """A spectral density on a grid (what :meth:`symrmt.engine.Model.density` returns).

    Attributes: ``x`` (floats), ``density`` (mpf, or ``None`` where the point is singular: an edge or an
    atom on the grid), ``tau`` (the complex ``tau((M - x - i0)^{-1})``), ``status`` (``"ok"`` or
    ``"singular"`` per point; ``"float"`` for a checked float64 point with ``certify=k``), ``digits``, ``expression``, ``at``, ``histogram`` (after :meth:`simulate`).

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> d = m.density("G/sqrt(n)", x=[1, 3], digits=12)   # the semicircle sqrt(4 - x^2)/(2 pi)
    >>> [mpmath.nstr(v, 12) for v in d.density], d.status
    (['0.275664447711', '0.0'], ['ok', 'ok'])
    >>> d.support(), d.atoms()   # the upper edge 2 (the lower one lies below the grid)
    ([[None, mpf('2.0')]], [])
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
        # optional dependency (pandas)
        import pandas as pd

        return pd.DataFrame({"x": self.x,
                             "density": [float(d) if d is not None else float("nan") for d in self.density],
                             "status": self.status})

    def to_json(self, num) -> dict:
        """The ``--json`` object; ``num(value, digits)`` formats a number (floats up to 15 digits; a point of
        status ``"float"`` to at most 15 digits, whatever ``digits``)."""
        def f(v, digits=self.digits):
            return None if v is None else num(v, digits)

        # a point of status "float" is a float64 value: written to at most 15 digits, never padded past them
        dens = [f(d, min(self.digits, 15) if st == "float" else self.digits)
                for d, st in zip(self.density, self.status)]
        out = {"x": [float(x) for x in self.x], "density": dens, "status": self.status,
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
        package's executor and trial store (:mod:`symrmt.engine.density.histogram`)."""
        self.histogram = eigen_histogram(model, matrix, self.at, n, trials, seed, min(self.x), max(self.x),
                                         bins or min(60, max(10, len(self.x) // 4)), store=store,
                                         workers=workers, scheduler=scheduler)
        return self.histogram

    def plot(self, path=None, ax=None, title=None):
        """The density over the histogram (if simulated), edges dashed, atoms as stems; saved to ``path``."""
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


def grid_points(spec: str, what: str = "--over", name: str = "x") -> list:
    """``'LO:HI:K'`` -> the ``K`` equally spaced exact points of ``[LO, HI]`` (``LO``, ``HI`` through the
    restricted parser, within ``+-10**MAX_MAGNITUDE``; ``K`` at most :data:`MAX_POINTS`): the grid of
    ``symrmt density --over NAME=LO:HI:K`` and of ``Model.density(M, x="LO:HI:K")``; ``what`` and ``name``
    head the error messages.

    Examples
    --------
    >>> grid_points("0:1:3")
    [Fraction(0, 1), Fraction(1, 2), Fraction(1, 1)]
    """
    parts = spec.split(":")
    if len(parts) != 3:
        raise ParameterError(f"{what}: write LO:HI:K, e.g. 0:4:400; got {spec!r}")
    lo, hi = (exact_value(p.strip(), f"{what} {name}") for p in parts[:2])
    if max(abs(lo), abs(hi)) > Fraction(10) ** MAX_MAGNITUDE:
        raise ParameterError(f"{what}: LO and HI must lie within +-1e{MAX_MAGNITUDE} (MAX_MAGNITUDE: the density's "
                             f"float64 stage), got {parts[0].strip()}:{parts[1].strip()}")
    try:
        k = int(parts[2].strip())
    except ValueError:
        raise ParameterError(f"{what}: K must be an integer, got {parts[2]!r}") from None
    if not 1 <= k <= MAX_POINTS:
        raise ParameterError(f"{what}: K must be between 1 and {MAX_POINTS} (MAX_POINTS), got {k}")
    if not hi > lo and k > 1:
        raise ParameterError(f"{what}: HI must be above LO, got {lo}:{hi}")
    pts = [lo + (hi - lo) * Fraction(i, k - 1) for i in range(k)] if k > 1 else [lo]
    check_points(pts, f"{what} {name}")
    return pts


def check_points(points, what: str = "x") -> None:
    """Refuse a point the density's float64 first stage cannot tell apart from another: a magnitude above
    ``10**MAX_MAGNITUDE``, or a nonzero one below ``10**-MAX_MAGNITUDE`` (``1e-400`` would be read as 0, and
    an atom at 0 reported on a grid that does not hold 0).

    >>> check_points([Fraction(1, 10**400)])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: x: the point 1e-400 is not 0 but closer to 0 than 1e-300 ...
    """
    for x in points:
        x = Fraction(x) if not isinstance(x, Fraction) else x
        if abs(x) > Fraction(10) ** MAX_MAGNITUDE:
            raise ParameterError(f"{what}: the point {csv_param(x)} lies beyond +-1e{MAX_MAGNITUDE} (MAX_MAGNITUDE: "
                                 "the density's first stage is float64)")
        if x != 0 and abs(x) < Fraction(1, 10**MAX_MAGNITUDE):
            raise ParameterError(f"{what}: the point {csv_param(x)} is not 0 but closer to 0 than 1e-{MAX_MAGNITUDE} "
                                 "(MAX_MAGNITUDE: the density's first stage is float64, where it would be 0); use 0, or "
                                 f"points at least 1e-{MAX_MAGNITUDE} away from it")


def _format(v, digits):
    return mpmath.nstr(v, digits)
