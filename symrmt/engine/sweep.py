r"""A trace-engine expression on a whole grid of parameter values: :meth:`symrmt.engine.Model.sweep`.

``Model.sweep(expr, grid={name: values, ...}, at={fixed...}, certify=k)`` evaluates the limit at every
point of the product grid of ``grid``'s axes (in the order given), with the other parameters fixed by
``at``, by the float64 batched path of :mod:`symrmt.engine.batch`: the SymPy fixed point printed
for NumPy, the homotopy in ``s`` for all points at once (two paths; a continuation in a shift parameter
where it fails), a Newton polish, a long-double
error estimate and the trace's sanity bounds at every point.  A point that fails any check is
recomputed alone by the certified mpmath path (:meth:`~symrmt.engine.Model.limit` at 15 digits, which
also continues in a parameter where the homotopy fails) and marked in ``fallback``; if the mpmath path
refuses it too, its error is raised with the point named.  No value is returned unchecked.

Expressions the batched path does not take (a quadratic form of vectors, a diagonal law of many atoms
solved by weighted sums, the inverse of a non-normal matrix, whose Gram test runs point by point) are
computed point by point by the mpmath path, every point marked ``fallback``, within
``LIMITS['points']`` points.  The batched path itself takes up to ``LIMITS['fast_points']`` points.

``certify=k`` re-solves ``k`` random points (chosen with ``seed``) at 30 digits and reports the largest
relative gap in ``certified_gap`` (absolute where the 30-digit value is 0).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np

from symrmt.errors import ParameterError
from symrmt.table import TableResult

__all__ = ["TraceSweep", "sweep"]

#: digits of the mpmath solves of fallback points, and of the certification
FALLBACK_DIGITS, CERTIFY_DIGITS = 15, 30
#: the batched path solves the grid in chunks of at most this many Jacobian entries (points x unknowns^2;
#: about 40 MB per stacked copy), so its memory does not grow with the grid
CHUNK_ENTRIES = 5_000_000


class TraceSweep(TableResult):
    """What :meth:`symrmt.engine.Model.sweep` returns.

    Attributes
    ----------
    values : ndarray of float64
        The limit at every grid point, shape ``(len(axis_1), len(axis_2), ...)`` in the order of ``grid``.
    fallback : ndarray of bool
        True where the float path failed a check and the certified mpmath path recomputed the point.
    error_estimate : ndarray of float64
        Estimated relative error of the float64 values (float64 against the long-double-corrected
        value); ``inf`` at points whose checks failed before it (their values then carry 15 certified
        digits, from mpmath).
    grid : dict
        Axis name -> float64 array of its values; ``at``: the fixed values (exact).
    certified_gap : float or None
        Largest relative gap of the ``certify`` sample from its 30-digit values; ``certified``: the
        sampled flat indices and their gaps.
    timings : dict
        Seconds (``compile``, ``batch``, ``fallback``, ``certify``, ``total``) and counts (``points``,
        ``fallbacks``).
    """

    def __init__(self, expression, grid, at, values, fallback, error_estimate, certified, timings):
        self.expression, self.grid, self.at = expression, grid, at
        self.values, self.fallback, self.error_estimate = values, fallback, error_estimate
        self.certified = certified
        self.certified_gap = max(g for _, g in certified) if certified else None
        self.timings = timings

    @property
    def shape(self):
        return self.values.shape

    def to_numpy(self) -> np.ndarray:
        """The values over the grid (a copy), shape :attr:`shape`."""
        return self.values.copy()

    def points(self) -> dict:
        """Flat columns: each axis name and ``value``, ``fallback``, ``error_estimate`` (one row per point)."""
        names = list(self.grid)
        mesh = np.meshgrid(*[self.grid[k] for k in names], indexing="ij") if names else []
        out = {k: m.ravel() for k, m in zip(names, mesh)}
        out.update(value=self.values.ravel(), fallback=self.fallback.ravel(),
                   error_estimate=self.error_estimate.ravel())
        return out

    def to_pandas(self):
        """One row per grid point (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas is in the test extras
            raise ParameterError("to_pandas() needs pandas (pip install pandas)") from None
        return pd.DataFrame(self.points())

    # the table protocol (symrmt.table.TableResult): str(), HTML, LaTeX, to_xarray()
    ROW_NAME = "points"

    def _columns(self) -> list:
        return [*self.grid, "value", "fallback", "error_estimate"]

    def _rows(self, limit: int | None = None) -> list:
        pts, n = self.points(), int(self.values.size)
        k = n if limit is None else min(n, limit)
        return [[str(bool(pts[c][i])) if c == "fallback" else repr(float(pts[c][i])) for c in self._columns()]
                for i in range(k)]

    def _count(self) -> int:
        return int(self.values.size)

    def _caption(self) -> str:
        at = ", ".join(f"{k} = {v}" for k, v in self.at.items())
        return f"trace sweep: {self.expression}" + (f" at {at}" if at else "") + f"; {self.values.size} points (float64)"

    def _empty_text(self) -> str:
        return "No grid points."

    def __repr__(self):
        return (f"TraceSweep({self.expression!r}, shape={self.shape}, fallbacks={int(self.fallback.sum())}, "
                f"certified_gap={self.certified_gap})")


class _Axis:
    """One grid axis: its float64 values (for the batched path) and each value exact, on demand (for the
    mpmath path): a text is read by the restricted parser at once, a number is converted when needed."""

    def __init__(self, name, values):
        from symrmt.parsing import LIMITS

        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise ParameterError(f"grid[{name!r}] must be a sequence of values (a list, a NumPy array)")
        vals = np.asarray(values).ravel().tolist() if isinstance(values, np.ndarray) else list(values)
        if not vals:
            raise ParameterError(f"grid[{name!r}] is empty")
        if len(vals) > LIMITS["fast_points"]:
            raise ParameterError(f"grid[{name!r}] has {len(vals)} values, above LIMITS['fast_points'] = "
                                 f"{LIMITS['fast_points']}")
        self.name, self.raw = name, vals
        self._exact = {}
        floats = []
        for i, v in enumerate(vals):
            if isinstance(v, complex) or (isinstance(v, str) and "j" in v):
                raise ParameterError(f"grid[{name!r}]: sweep takes real values (a complex z: use Model.limit or "
                                     "Model.density)")
            if isinstance(v, str) or not isinstance(v, (int, float)) or isinstance(v, bool):
                floats.append(float(self.exact(i)))
            else:
                if not np.isfinite(v):
                    raise ParameterError(f"grid[{name!r}] holds a non-finite value ({v!r})")
                floats.append(float(v))
        self.floats = np.array(floats, dtype=float)

    def __len__(self):
        return len(self.raw)

    def exact(self, i):
        from symrmt.engine.tree import exact_value

        if i not in self._exact:
            self._exact[i] = exact_value(self.raw[i], self.name)
        return self._exact[i]

    def distinct_exact(self):
        return sorted({self.exact(i) for i in range(len(self.raw))})


def _batchable(plan, model) -> str | None:
    """Why the batched path cannot take ``plan`` (``None``: it can)."""
    from symrmt.engine import hermitize as herm
    from symrmt.engine.atomsums import AtomSystem

    if hasattr(plan, "forms") or model.vectors():
        return "a quadratic form of vectors"
    for t in plan.traces:
        if isinstance(t.system, AtomSystem):
            return "a diagonal law solved by weighted sums"
        if herm.nonnormal_inverses(t.matrix):
            return "the inverse of a non-normal matrix (its Gram test runs point by point)"
    return None


def _check_ratios(model, axes, fixed):
    """``Model.check_ratios`` at every combination of the axis values a ratio depends on (exact)."""
    from itertools import product

    import sympy as sp

    for d in model.dims.values():
        ratio = sp.sympify(d.ratio)
        if ratio.is_Symbol or ratio.is_Number:  # a bare ratio c: its positivity is checked on the axis
            continue
        free = sorted({s.name for s in sp.sympify(d.ratio).free_symbols} & set(axes))
        if not free:
            model.check_ratios(fixed)
            continue
        for combo in product(*[axes[k].distinct_exact() for k in free]):
            model.check_ratios({**fixed, **dict(zip(free, combo))})


def sweep(model, expr, grid, at=None, certify: int = 0, seed: int = 0) -> TraceSweep:
    """See :meth:`symrmt.engine.Model.sweep`."""
    from symrmt.engine.batch import solve_plan
    from symrmt.engine.certify import compiled_system
    from symrmt.parsing import LIMITS
    from symrmt.engine.nodes import ModelError

    t0 = time.perf_counter()
    timings = {}
    if not isinstance(grid, Mapping) or not grid:
        raise ModelError("grid must be a non-empty dict {name: values}")
    at = {} if at is None else at
    if not isinstance(at, Mapping):
        raise ModelError(f"at must be a dict of parameter values, got {type(at).__name__}")
    if isinstance(certify, bool) or not isinstance(certify, (int, np.integer)) or certify < 0:
        raise ParameterError(f"certify must be a non-negative integer, got {certify!r}")
    both = sorted(set(map(str, grid)) & set(map(str, at)))
    if both:
        raise ModelError(f"{both[0]} is given both in grid= and in at=")
    plan = model.plan(expr)
    known = {p.name for p in plan.params} | {k for k in model.symbols if k != "n"}
    extra = sorted(str(k) for k in list(grid) + list(at) if str(k) not in known and "." not in str(k))
    if extra:
        raise ModelError(f"unknown parameter {', '.join(extra)} (the expression's parameters: "
                         f"{', '.join(sorted(known)) or 'none'})", unknown=extra, known=known)
    names = [str(k) for k in grid]
    axes = {k: _Axis(k, v) for k, v in zip(names, grid.values())}
    shape = tuple(len(v) for v in axes.values())
    n = int(np.prod(shape))
    why = _batchable(plan, model)
    cap = LIMITS["fast_points"] if why is None else LIMITS["points"]
    if n > cap:
        which = "fast_points" if why is None else "points"
        extra_why = "" if why is None else f" (the expression holds {why}: every point is solved in mpmath)"
        raise ParameterError(f"the grid has {n} points, above LIMITS[{which!r}] = {cap}{extra_why}")
    fixed = {str(k): v for k, v in at.items()}
    missing = [p.name for p in plan.params if p.name not in axes and p.name not in fixed]
    if missing:
        raise ModelError(f"no value given for {', '.join(missing)} (in grid= or at=)", missing=missing, known=known)
    from symrmt.engine.tree import exact_value

    fixed_exact = {}
    for k, v in fixed.items():
        if isinstance(v, complex) or hasattr(v, "im") or (isinstance(v, str) and "j" in v):
            raise ModelError(f"{k}: sweep takes real values (a complex z: use Model.limit or Model.density)")
        fixed_exact[k] = exact_value(v, k)
    index = np.indices(shape).reshape(len(shape), -1) if shape else np.zeros((0, 1), int)
    floats = {k: axes[k].floats for k in names}

    def exact_at(i):
        pt = dict(fixed_exact)
        for a, k in enumerate(names):
            pt[k] = axes[k].exact(int(index[a, i]))
        return pt

    # the checks of Model.limit that do not depend on the solve, on the axes' values
    for p in plan.params:
        if p.is_positive:
            vals = axes[p.name].floats if p.name in axes else [fixed_exact[p.name]]
            bad = [v for v in vals if not v > 0]
            if bad:
                raise ModelError(f"{p.name} is a dimension ratio and must be positive, got {bad[0]}")
    values = np.full(n, np.nan)
    est = np.full(n, np.inf)
    ok = np.zeros(n, dtype=bool)
    t = time.perf_counter()
    if why is None:
        cols = {k: floats[k][index[a]] for a, k in enumerate(names)}
        cols.update({k: np.full(n, float(v)) for k, v in fixed_exact.items()})
        try:
            for tr in plan.traces:  # compile (cached on disk) before timing the batch
                from symrmt.engine.batch import batch_system

                batch_system(compiled_system(tr.system))
        finally:
            timings["compile"] = time.perf_counter() - t
        t = time.perf_counter()
        m_max = max(len(tr.system.unknowns) for tr in plan.traces)
        chunk = max(256, CHUNK_ENTRIES // (m_max * m_max))  # the stacked Jacobians of one chunk: bounded memory
        for a in range(0, n, chunk):
            sl = slice(a, min(n, a + chunk))
            values[sl], est[sl], ok[sl], _ = solve_plan(plan, compiled_system, {k: v[sl] for k, v in cols.items()},
                                                        sl.stop - sl.start)
        timings["batch"] = time.perf_counter() - t
    else:
        timings["compile"] = timings["batch"] = 0.0
    t = time.perf_counter()
    fallback = ~ok
    _check_ratios(model, axes, fixed_exact)
    for i in np.flatnonzero(fallback):
        pt = exact_at(i)
        try:
            r = model.limit(expr, at=pt, digits=FALLBACK_DIGITS)
        except (ArithmeticError, ValueError) as exc:
            where = ", ".join(f"{k}={float(pt[k])!r}" for k in names)
            raise type(exc)(f"sweep: the point {where} (flat index {int(i)}) failed the float checks and the "
                            f"certified path: {exc}") from exc
        values[i] = float(r.value)
    timings["fallback"] = time.perf_counter() - t
    t = time.perf_counter()
    certified = []
    if certify:
        import mpmath

        rng = np.random.default_rng(seed)
        for i in sorted(rng.choice(n, size=min(int(certify), n), replace=False).tolist()):
            exact = model.limit(expr, at=exact_at(i), digits=CERTIFY_DIGITS).value
            with mpmath.workdps(40):
                d = abs(mpmath.mpf(values[i]) - exact)
                gap = float(d / abs(exact)) if exact != 0 else float(d)
            certified.append((int(i), gap))
    timings["certify"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0
    timings.update(points=n, fallbacks=int(fallback.sum()))
    return TraceSweep(str(expr) if isinstance(expr, str) else repr(expr), floats,
                      {k: fixed_exact[k] for k in fixed_exact}, values.reshape(shape), fallback.reshape(shape),
                      est.reshape(shape), certified, timings)
