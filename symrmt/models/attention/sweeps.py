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

import numpy as np

from symrmt.models.attention.geometry import ANGLE_KEYS, GRAM_KEYS, Geometry, as_geometry, point_geometry
from symrmt.errors import ParameterError, SolverError
from symrmt.models.attention.params import check_c, check_diagonal, to_fraction
from symrmt.models.attention.grid_results import SweepResult
from symrmt.models.attention.kernel_f import as_nonlinearity
from symrmt.models.attention.prove import prove_limit
from symrmt.models.attention import sweeps_fast
from symrmt.models.attention.theory import attention_limit, ridge_limit
from symrmt.parsing import LIMITS, check_count, ParseLimitError, check_digits
from symrmt.progress import progress_bar
from symrmt.proofs.arb import require_flint

__all__ = ["sweep", "SweepResult", "GRID_KEYS", "point_geometry", "split_grid", "grid_points"]

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


#: the grid read as sweep reads it, for the other grid calls (symrmt.simulate(grid=...))
def split_grid(grid: dict):
    """``(axes, fixed)`` of a grid dict: its 1-D entries (lists, tied tuples of names as ``"a=b"``) in order, and
    its scalar entries; :class:`~symrmt.ParameterError` on an unknown key, a key given twice, an empty axis or
    a grid without ``c`` and ``gamma``.

    >>> split_grid({"c": [0.5, 1], "gamma": 1})
    ({'c': (0.5, 1)}, {'gamma': 1})
    """
    return _split(grid)


def grid_points(axes: dict, fixed: dict, base):
    """``(points, models)``: every point of the grid as a dict of exact parameters, and as ``(c, geometry, gamma)``
    (the C order of the axes).

    >>> pts, models = grid_points({"c": (0.5, 1)}, {"gamma": 1}, None)
    >>> [p["c"] for p in pts], len(models)
    ([Fraction(1, 2), Fraction(1, 1)], 2)
    """
    return _point_list(axes, fixed, base)


# ---------------------------------------------------------------------------
# sweep
# ---------------------------------------------------------------------------
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
        The certified values over the grid (float64 values with ``fast``).

    Raises
    ------
    ParameterError
        An unknown grid key, a value outside the model's domain, or more points than the path takes.
    SolverError
        A point whose value cannot be certified to ``digits`` digits (the message names the point).

    Examples
    --------
    >>> import symrmt
    >>> s = symrmt.sweep("tanh", c="1/2", gamma=[1, 2], digits=10, progress=False)
    >>> s.axes, s.shape, [round(x, 9) for x in s.attention.tolist()]
    (('gamma',), (2,), [0.7827445, 0.819080898])
    >>> symrmt.sweep("tanh", c="1/2", gama=1)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: ...
    """
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
        geometry = as_geometry(geometry)
    axes, fixed = _split(grid)

    total = 1
    for values in axes.values():
        total *= len(values)
    # each path its cap, before any work: the certified path LIMITS['points'], the float64 path
    # LIMITS['fast_points'] (its memory estimate, about 2.3 kB a point)
    if fast:
        check_count(total, "fast_points", "number of grid points (the product of the axes) of the float64 path")
    elif total > LIMITS["points"]:
        raise ParseLimitError(
            f"number of grid points (the product of the axes) = {total} is above the limit {LIMITS['points']} of "
            f"the certified path (LIMITS['points']); the float64 path (fast=True, --fast) takes up to "
            f"{LIMITS['fast_points']} points (LIMITS['fast_points'])")
    if fast and prove:
        raise ParameterError("prove=True (--prove) needs the certified path: drop fast (--fast)")
    if prove:
        require_flint()
    if fast:
        return _sweep_fast(nl, axes, fixed, geometry, diagonal, certify, seed, t0)
    points, models = _point_list(axes, fixed, geometry)

    digits = check_digits(digits)  # the one digits rule: an integer (NumPy too) in [1, LIMITS['digits']]

    groups: dict = {}
    for c, geo, g in models:
        groups.setdefault((c, geo), []).append(g)
    values, balls = {}, {}
    with progress_bar(len(models), f"sweep {nl.name}", enabled=progress) as bar:
        for (c, geo), gs in sorted(groups.items(), key=lambda kv: kv[0][0]):
            gs = sorted(set(gs), reverse=True)
            if prove:
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
    points = sweeps_fast.grid_points(axes, fixed, geometry)
    out = sweeps_fast.solve_points(nl, points, diagonal, certify, seed)
    att = np.asarray(out.attention, dtype=np.float64)
    rr = np.asarray(out.ridge, dtype=np.float64)
    fb = np.asarray(out.fallback, dtype=bool)
    if att.shape != (len(points),) or rr.shape != att.shape or fb.shape != att.shape:
        raise ParameterError(f"the fast solver returned shapes {att.shape}, {rr.shape}, {fb.shape} for "
                             f"{len(points)} points")  # pragma: no cover - a broken fast solver
    if not (np.all(np.isfinite(att)) and np.all(np.isfinite(rr))):
        raise SolverError("the fast solver returned non-finite values")  # pragma: no cover
    return SweepResult(f=nl.name, expr=str(nl.expr), center=nl.center, diagonal=diagonal, digits=None,
                       grid=axes, fixed=fixed, geometry=geometry, points=points, attention_mp=tuple(att.tolist()),
                       ridge_mp=tuple(rr.tolist()), fast=True, fallback=tuple(fb.tolist()),
                       certified_gap=getattr(out, "certified_gap", None),
                       seconds=time.monotonic() - t0)

