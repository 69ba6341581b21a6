r"""Sweeps and crossings: ``symrmt.sweep`` and ``symrmt.crossings``.

* :func:`sweep` -- the certified limits of ``E_A`` and ``E_RR`` over any product grid of
  ``c``, ``gamma``, ``snr = ||mu||^2``, the Gram entries ``wk2, wq2, wkwq, muwk, muwq``
  and the angles ``cos_muwk, cos_muwq, cos_wkwq`` (cosines between ``mu``, ``w_K``, ``w_Q``);
* :func:`symrmt.models.attention.boundary.crossings` (``symrmt.crossings``) -- every point of an interval where
  ``E_A = E_RR``, built on the same points of the model (:func:`point_geometry`).

Examples
--------
>>> import symrmt
>>> s = symrmt.sweep("tanh", {"c": [0.5, 2], "gamma": 1, "snr": [0, 1, 4]}, digits=10)
>>> s.shape, s.axes
((2, 3), ('c', 'snr'))
>>> bool(s.attention[0, 2] < s.attention[0, 0])   # more signal, lower error
True
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from fractions import Fraction

from symrmt.models.attention.geometry import ANGLE_KEYS, GRAM_KEYS, Geometry, point_geometry
from symrmt.errors import ParameterError
from symrmt.models.attention.params import check_c, check_diagonal, to_fraction
from symrmt.table import (LATEX_WIDE_DIGITS, TableResult, digit_lines, float_text, latex_array, latex_tabular,
                          need_pandas, param_column, param_text, text_table)

__all__ = ["sweep", "SweepResult", "GRID_KEYS", "point_geometry"]

#: every parameter a grid (or a crossing search) may run over
GRID_KEYS = ("c", "gamma") + GRAM_KEYS + ANGLE_KEYS


# ---------------------------------------------------------------------------
# points of the model (one point's geometry: symrmt.models.attention.geometry.point_geometry)
# ---------------------------------------------------------------------------
def _split(grid: dict):
    """``(axes, fixed)``: the grid's 1-D entries in order, and its scalar entries."""
    if not isinstance(grid, dict) or not grid:
        raise ParameterError("grid must be a non-empty dict such as {'c': [0.5, 1, 2], 'gamma': 1}")
    axes, fixed = {}, {}
    seen = set()
    for key, val in grid.items():
        keys = key if isinstance(key, tuple) else (key,)
        for k in keys:
            if k not in GRID_KEYS:
                raise ParameterError(f"unknown grid key {k!r}; use {', '.join(GRID_KEYS)}")
            if k in seen:
                raise ParameterError(f"grid key {k!r} given twice")
            seen.add(k)
        if isinstance(key, tuple):
            if len(key) < 2:
                raise ParameterError(f"a tied grid key needs two or more names, got {key!r}")
            key = "=".join(key)
        if hasattr(val, "tolist"):
            val = val.tolist()
        if isinstance(val, (list, tuple)):
            if len(val) == 0:
                raise ParameterError(f"grid[{key!r}] is empty")
            axes[key] = tuple(val)
        else:
            fixed.update(dict.fromkeys(keys, val))
    for key in ("c", "gamma"):
        if key not in seen:
            raise ParameterError(f"the grid needs {key} (a value or a list)")
    return axes, fixed


# ---------------------------------------------------------------------------
# sweep
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SweepResult(TableResult):
    """Limits of ``E_A`` and ``E_RR`` over a product grid (from :func:`sweep`).

    ``.attention``, ``.ridge`` and ``.values(key)`` are float64 arrays of the grid's shape
    (one axis per list in the grid, in its order); ``.gamma`` is ``.values("gamma")``.
    ``attention_mp``, ``ridge_mp`` hold the certified values (flat, in the grid's C order);
    with ``fast=True`` they are float64 values, ``fallback`` marks the points the fast
    path handed to the certified solver, and ``certified_gap`` is the largest relative gap
    of its re-checked sample from 30-digit values.  ``points`` holds one dict of exact
    parameters per point (with ``fast=True`` a :class:`symrmt.models.attention.sweeps_fast.GridPoints`, which
    builds each dict on access and gives whole columns by ``.column(key)``).
    """

    f: str
    expr: str
    center: bool
    diagonal: str
    digits: int | None
    grid: dict
    fixed: dict
    geometry: object
    points: tuple
    attention_mp: tuple
    ridge_mp: tuple
    fast: bool = False
    fallback: tuple | None = None
    certified_gap: float | None = None
    seconds: float = 0.0
    balls: dict | None = None

    @property
    def axes(self) -> tuple:
        return tuple(self.grid)

    @property
    def shape(self) -> tuple:
        return tuple(len(v) for v in self.grid.values())

    def values(self, key: str):
        """The value of parameter ``key`` at every grid point (float64, the grid's shape)."""
        import numpy as np

        if key not in self.points[0]:
            raise ParameterError(f"no parameter {key!r} in this sweep; known: {', '.join(self.points[0])}")
        if hasattr(self.points, "column"):  # the fast path's lazy points
            return self.points.column(key).reshape(self.shape)
        return np.array([float(p[key]) for p in self.points], dtype=np.float64).reshape(self.shape)

    @property
    def gamma(self):
        return self.values("gamma")

    @property
    def attention(self):
        import numpy as np

        if self.fast:
            return np.array(self.attention_mp, dtype=np.float64).reshape(self.shape)
        return np.array([float(v) for v in self.attention_mp], dtype=np.float64).reshape(self.shape)

    @property
    def ridge(self):
        import numpy as np

        if self.fast:
            return np.array(self.ridge_mp, dtype=np.float64).reshape(self.shape)
        return np.array([float(v) for v in self.ridge_mp], dtype=np.float64).reshape(self.shape)

    @property
    def columns(self) -> tuple:
        return tuple(self.points[0]) + ("attention", "ridge")

    def to_numpy(self):
        """Float64 array, one row per point: every parameter (:attr:`columns`), then attention, ridge."""
        import numpy as np

        if hasattr(self.points, "column"):  # the fast path's lazy points
            return np.column_stack([self.points.column(k) for k in self.points.keys]
                                   + [np.array(self.attention_mp, dtype=np.float64),
                                      np.array(self.ridge_mp, dtype=np.float64)])
        return np.array([[float(p[k]) for k in self.points[0]] + [float(a), float(r)]
                         for p, a, r in zip(self.points, self.attention_mp, self.ridge_mp)], dtype=np.float64)

    def to_pandas(self, long: bool = False):
        """One row per point with every parameter and both errors (the default of every result);
        ``long=True``: one row per (point, error) with the grid's axes, ``error`` and ``value``."""
        pd = need_pandas()
        wide = pd.DataFrame(self.to_numpy(), columns=list(self.columns))
        if self.fallback is not None:
            wide["fallback"] = list(self.fallback)
        if long:
            wide = wide.melt(id_vars=[a.split("=")[0] for a in self.axes], value_vars=["attention", "ridge"], var_name="error",
                             value_name="value")
        wide.attrs.update(self._attrs())
        return wide

    def plot(self, kind: str = "difference", ax=None, log=None):
        """A line per error over a one-axis grid; over two axes a heat map of ``E_A - E_RR`` with the
        contour ``E_A = E_RR`` (``kind="attention"``, ``"ridge"``: that error) or the sign map
        (``kind="sign"``: the phase diagram).  matplotlib; returns the axes."""
        from symrmt.plotting import plot_sweep

        return plot_sweep(self, kind=kind, ax=ax, log=log)

    def to_xarray(self):
        """An ``xarray.Dataset`` with ``attention`` and ``ridge`` over the grid's axes (needs xarray)."""
        try:
            import xarray as xr
        except ImportError as exc:  # pragma: no cover - installed where the tests run
            raise ImportError("to_xarray() needs xarray: pip install 'symrmt[results]'") from exc
        coords = {k: [float(to_fraction(v, k)) for v in vals] for k, vals in self.grid.items()}  # tied: "a=b"
        dims = list(self.axes)
        return xr.Dataset({"attention": (dims, self.attention), "ridge": (dims, self.ridge)}, coords=coords,
                          attrs=self._attrs())

    def _attrs(self) -> dict:
        return {"f": self.f, "expr": self.expr, "diagonal": self.diagonal,
                "digits": -1 if self.digits is None else self.digits,
                **{k: param_text(_exact_or(v, k), self._digits, exact=False) for k, v in self.fixed.items()}}

    @property
    def _digits(self) -> int:
        """The digits parameters print at: the certified digits, or 15 on the float64 path."""
        return 15 if self.digits is None else self.digits

    def _fmt(self, v) -> str:
        if self.digits is None:
            return f"{float(v):.15g}"
        import mpmath

        return mpmath.nstr(v, self.digits)

    def _rows(self, limit: int | None = None, exact: bool = False):
        """Table rows: the parameters as typed when short, a float's repr short (:func:`param_column`), a long
        value (an irrational inner product) as a decimal at the digits; ``exact=True``: every one exactly."""
        keys = list(self.points[0])
        shown = list(itertools.islice(zip(self.points, self.attention_mp, self.ridge_mp), limit))
        cols = []
        for k in keys:
            vals = [p[k] for p, _, _ in shown]
            if exact:
                cols.append([float_text(v) if isinstance(v, Fraction) else str(v) for v in vals])
            elif all(isinstance(v, Fraction) for v in vals):
                cols.append(param_column(vals, self._digits))
            else:  # the float64 inner products of angles on the fast path
                cols.append([param_text(v, self._digits) if isinstance(v, Fraction) else f"{float(v):.{SHORT}g}"
                             for v in vals])
        return [[col[i] for col in cols] + [self._fmt(a), self._fmt(r)] for i, (_, a, r) in enumerate(shown)]

    def table(self, exact: bool = False, limit: int | None = None) -> str:
        """The text table of ``str()`` with every point (``limit``: the first ones); ``exact=True`` prints
        every parameter exactly (an irrational inner product as its 1000-digit fraction)."""
        return self._caption() + "\n" + text_table(list(self.columns), self._rows(limit, exact=exact))

    def _caption(self) -> str:
        prec = "float64 (fast path)" if self.digits is None else f"{self.digits} certified digits"
        fixed = ", ".join(f"{k} = {param_text(_exact_or(v, k), self._digits)}" for k, v in self.fixed.items())
        fixed = f", {fixed}" if fixed else ""
        return (f"sweep: f = {self.f}, diagonal = {self.diagonal}{fixed}; {len(self.points)} points over "
                f"{' x '.join(self.axes) or 'one point'} ({prec})")

    ROW_NAME = "points"  # str(): the protocol's text table, 60 rows, then how many more points

    def _count(self) -> int:
        return len(self.points)

    def __repr__(self) -> str:
        return f"<SweepResult f={self.f!r} shape={self.shape} axes={self.axes}>"

    def _columns(self) -> list:  # the protocol's _repr_html_ (symrmt.table.TableResult)
        return list(self.columns)

    def _varying(self) -> list:
        """Indices of the columns that vary over the grid (the others are in the caption), then E_A, E_RR."""
        keys = list(self.points[0])
        if len(self.points) == 1:
            return [*range(len(keys)), len(keys), len(keys) + 1]
        first = self.points[0]
        varying = [i for i, k in enumerate(keys) if any(p[k] != first[k] for p in self.points)]
        return [*varying, len(keys), len(keys) + 1]

    def latex(self) -> str:
        """The values as a LaTeX ``tabular``: the parameters that vary and both errors (the rest in the
        comment line above it)."""
        keep = self._varying()
        cols = list(self.columns)
        if self.digits is None or self.digits <= LATEX_WIDE_DIGITS:
            rows = [[r[i] for i in keep] for r in self._rows()]
            return latex_tabular([f"${_TEX.get(cols[i], cols[i])}$" for i in keep], rows, self._caption())
        # many digits: one value per row, 40 digits a line less 5 per parameter column (at least 20)
        params, rows = keep[:-2], []
        per_line = max(20, 40 - 5 * len(params))
        for r in self._rows():
            for label, value in (("$E_A$", r[-2]), ("$E_{RR}$", r[-1])):
                for k, line in enumerate(digit_lines(value, per_line)):
                    first = label == "$E_A$" and k == 0
                    rows.append([r[i] if first else "" for i in params] + [label if k == 0 else "", line])
        header = [f"${_TEX.get(cols[i], cols[i])}$" for i in params] + ["error", "value"]
        return latex_tabular(header, rows, self._caption(), raw=(len(params),), cols="r" * len(params) + "rl")

    def _repr_latex_(self) -> str:
        keep = self._varying()
        cols = list(self.columns)
        return latex_array([_TEX.get(cols[i], cols[i]) for i in keep], [[r[i] for i in keep] for r in self._rows(60)])


#: significant digits of a float64 parameter (an inner product from an angle on the fast path) in a table
SHORT = 10


def _exact_or(v, key):
    """A fixed grid value as its exact Fraction when it reads as one, else as given (for printing)."""
    try:
        return to_fraction(v, key)
    except (ParameterError, ValueError, TypeError):
        return v


_TEX = {"gamma": r"\gamma", "snr": r"\|\mu\|^2", "wk2": r"\|w_K\|^2", "wq2": r"\|w_Q\|^2", "wkwq": r"w_K\cdot w_Q",
        "muwk": r"\mu\cdot w_K", "muwq": r"\mu\cdot w_Q", "cos_muwk": r"\cos(\mu, w_K)",
        "cos_muwq": r"\cos(\mu, w_Q)", "cos_wkwq": r"\cos(w_K, w_Q)", "attention": "E_A", "ridge": "E_{RR}"}


def _point_list(axes: dict, fixed: dict, base):
    """Every point as a dict of exact parameters (c, gamma, the Gram entries, and any angles given)."""
    points, models = [], []
    names = [name.split("=") for name in axes]
    for combo in itertools.product(*axes.values()):
        vals = dict(fixed)
        for keys, v in zip(names, combo):
            vals.update(dict.fromkeys(keys, v))
        geo = point_geometry(vals, base)
        c = check_c(vals["c"])
        g = to_fraction(vals["gamma"], "gamma")
        if g <= 0:
            raise ParameterError(f"gamma must be positive, got {vals['gamma']!r}")
        p = {"c": c, "gamma": g}
        if isinstance(geo, Geometry):
            p.update(geo.as_dict())
        else:
            p["snr"] = geo.snr
        p.update({k: to_fraction(vals[k], k) for k in ANGLE_KEYS if k in vals})
        points.append(p)
        models.append((c, geo, g))
    return points, models


def sweep(f, grid: dict | None = None, *, geometry=None, diagonal: str = "zero", digits: int = 15,
          center: bool = False, fast: bool = False, certify: int = 8, seed: int = 0, progress: bool | None = None,
          prove: bool = False, **values) -> SweepResult:
    r"""Limits of ``E_A`` and ``E_RR`` over the product grid ``grid``.

    Parameters
    ----------
    f : str, sympy.Expr or Nonlinearity
        As for :func:`symrmt.limit`.
    grid : dict
        Keys from :data:`GRID_KEYS`: ``c``, ``gamma``, ``snr``, ``wk2``, ``wq2``, ``wkwq``,
        ``muwk``, ``muwq``, ``cos_muwk``, ``cos_muwq``, ``cos_wkwq``.  A list (or 1-D
        array) is an axis of the grid, a scalar a fixed value; ``c`` and ``gamma`` are required.
        A tuple of names as the key ties them to one axis (they take the same values), e.g.
        ``{("cos_muwk", "cos_muwq"): cosines}`` for ``w_K = w_Q`` at a varying angle to ``mu``;
        the axis is then named ``"cos_muwk=cos_muwq"``.
        Angles are turned into inner products with the point's norms
        (:meth:`Geometry.from_angles`).
    geometry : Geometry, LowRankGeometry or dict, optional
        Base values of the Gram entries not in ``grid`` (with a ``LowRankGeometry`` only
        ``c`` and ``gamma`` may vary).
    diagonal, digits, center
        As for :func:`symrmt.limit`: every value is certified to ``digits`` digits.
    fast : bool
        Use the vectorised float64 solver ``symrmt.models.attention.fast.solve_grid`` (rank-one
        geometries); its values are float64, not certified digits, and the points it
        could not handle are solved by the certified path (``.fallback``).  It takes grids
        of up to ``LIMITS["fast_points"]`` = 10^6 points (about 2.3 kB of memory a point);
        the certified path up to ``LIMITS["points"]`` = 10^4.
    certify, seed
        Passed to the fast solver (how many points it re-checks at high precision, and
        the seed that picks them).
    progress : bool or None
        Progress bar (``None``: auto).
    prove : bool
        Also prove every value (``.balls``: ``flint.arb`` balls in the order of the points;
        :mod:`symrmt.models.attention.prove`; needs python-flint).  Not with ``fast``.
    **values
        Grid entries as keywords, as :func:`symrmt.limit` and :func:`symrmt.crossings` take them
        (``c=1/2``, ``snr=1``, ``gamma=[0.1, 1]``, ...): the same as putting them in ``grid``; an entry
        given both ways, or a name outside :data:`GRID_KEYS`, is refused.

    Returns
    -------
    SweepResult
    """
    from symrmt.models.attention.kernel_f import as_nonlinearity
    from symrmt.progress import progress_bar

    t0 = time.monotonic()
    if grid is not None and not isinstance(grid, dict):
        raise ParameterError(f"grid must be a dict of grid entries, got {type(grid).__name__}")
    grid = dict(grid or {})
    for key, value in values.items():  # keyword entries, as limit() and crossings() take them
        if key not in GRID_KEYS:
            raise ParameterError(f"sweep() got an unknown keyword {key!r}; grid entries are {', '.join(GRID_KEYS)}")
        if key in grid or any(isinstance(k, tuple) and key in k for k in grid):
            raise ParameterError(f"{key} is given twice: in grid and as a keyword")
        grid[key] = value
    nl = as_nonlinearity(f, center)
    diagonal = check_diagonal(diagonal)
    if isinstance(geometry, dict):  # a plain dict of entries, read once (symrmt.models.attention.geometry.as_geometry)
        from symrmt.models.attention.geometry import as_geometry

        geometry = as_geometry(geometry)
    axes, fixed = _split(grid)
    from symrmt.parsing import LIMITS, check_count

    total = 1
    for values in axes.values():
        total *= len(values)
    # each path its cap, before any work: the certified path LIMITS['points'], the float64 path
    # LIMITS['fast_points'] (its memory estimate, about 2.3 kB a point)
    if fast:
        check_count(total, "fast_points", "number of grid points (the product of the axes) of the float64 path")
    elif total > LIMITS["points"]:
        from symrmt.parsing import ParseLimitError

        raise ParseLimitError(
            f"number of grid points (the product of the axes) = {total} is above the limit {LIMITS['points']} of "
            f"the certified path (LIMITS['points']); the float64 path (fast=True, --fast) takes up to "
            f"{LIMITS['fast_points']} points (LIMITS['fast_points'])")
    if fast and prove:
        raise ParameterError("prove=True (--prove) needs the certified path: drop fast (--fast)")
    if prove:
        from symrmt.arb import require_flint

        require_flint()
    if fast:
        return _sweep_fast(nl, axes, fixed, geometry, diagonal, certify, seed, t0)
    points, models = _point_list(axes, fixed, geometry)
    from symrmt.parsing import check_digits

    digits = check_digits(digits)  # the one digits rule: an integer (NumPy too) in [1, LIMITS['digits']]
    from symrmt.models.attention.theory import attention_limit, ridge_limit

    groups: dict = {}
    for c, geo, g in models:
        groups.setdefault((c, geo), []).append(g)
    values, balls = {}, {}
    with progress_bar(len(models), f"sweep {nl.name}", enabled=progress) as bar:
        for (c, geo), gs in sorted(groups.items(), key=lambda kv: kv[0][0]):
            gs = sorted(set(gs), reverse=True)
            if prove:
                from symrmt.models.attention.prove import prove_limit

                vals, bl = prove_limit(nl, c, gs, geo, diagonal, digits)
                att, rr = vals["attention"], vals["ridge"]
                for g, a, r in zip(gs, bl["attention"], bl["ridge"]):
                    balls[(c, geo, g)] = (a, r)
            else:
                att = attention_limit(nl, c, gs, geo, diagonal, digits)
                rr = ridge_limit(c, gs, geo.snr, digits)
            for g, a, r in zip(gs, att, rr):
                values[(c, geo, g)] = (a, r)
            bar.update(len(gs))
    return SweepResult(f=nl.name, expr=str(nl.expr), center=nl.center, diagonal=diagonal, digits=digits,
                       grid=axes, fixed=fixed, geometry=geometry, points=tuple(points),
                       attention_mp=tuple(values[m][0] for m in models), ridge_mp=tuple(values[m][1] for m in models),
                       seconds=time.monotonic() - t0,
                       balls=({"attention": [balls[m][0] for m in models], "ridge": [balls[m][1] for m in models],
                               "branch": {"attention": "sanity", "ridge": "isolated"}} if prove else None))


def _sweep_fast(nl, axes, fixed, geometry, diagonal, certify, seed, t0):
    """The grid as float64 columns (each axis value validated once, exactly:
    :func:`symrmt.models.attention.sweeps_fast.grid_points`) through ``symrmt.models.attention.fast.solve_grid``."""
    import numpy as np

    from symrmt.models.attention.sweeps_fast import grid_points, solve_points

    points = grid_points(axes, fixed, geometry)
    out = solve_points(nl, points, diagonal, certify, seed)
    att = np.asarray(out.attention, dtype=np.float64)
    rr = np.asarray(out.ridge, dtype=np.float64)
    fb = np.asarray(out.fallback, dtype=bool)
    if att.shape != (len(points),) or rr.shape != att.shape or fb.shape != att.shape:
        raise ParameterError(f"the fast solver returned shapes {att.shape}, {rr.shape}, {fb.shape} for "
                             f"{len(points)} points")  # pragma: no cover - a broken fast solver
    if not (np.all(np.isfinite(att)) and np.all(np.isfinite(rr))):
        from symrmt.errors import SolverError

        raise SolverError("the fast solver returned non-finite values")  # pragma: no cover
    return SweepResult(f=nl.name, expr=str(nl.expr), center=nl.center, diagonal=diagonal, digits=None,
                       grid=axes, fixed=fixed, geometry=geometry, points=points, attention_mp=tuple(att.tolist()),
                       ridge_mp=tuple(rr.tolist()), fast=True, fallback=tuple(fb.tolist()),
                       certified_gap=getattr(out, "certified_gap", None),
                       seconds=time.monotonic() - t0)

