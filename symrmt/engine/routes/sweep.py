r"""A trace-engine expression on a whole grid of parameter values: :meth:`symrmt.engine.Model.sweep`.

``Model.sweep(expr, grid={name: values, ...}, at={fixed...}, certify=k)`` evaluates the limit at every
point of the product grid of ``grid``'s axes (in the order given), with the other parameters fixed by
``at``, by the float64 batched path of :mod:`symrmt.engine.solve.batch`: the SymPy fixed point printed
for NumPy, the homotopy in ``s`` for all points at once (two paths; a continuation in a shift parameter
where it fails) or, along an axis of six values or more, the continuation of the fixed point from grid
value to grid value (:mod:`symrmt.engine.solve.batch_axis`), a Newton polish, a long-double
error estimate and the trace's sanity bounds at every point.  A point that fails any check is
recomputed alone by the certified mpmath path (:meth:`~symrmt.engine.Model.limit` at 15 digits, which
also continues in a parameter where the homotopy fails) and marked in ``fallback``; if the mpmath path
refuses it too, its error is raised with the point named.  No value is returned unchecked.

Quadratic forms of vectors take the batched path too (:mod:`symrmt.engine.solve.batch_qf`: the Woodbury readout
at the batched fixed point), with the inner products fixed by ``at``.
Expressions the batched path does not take (an inner product on a grid axis, a diagonal law of many atoms
solved by weighted sums, the inverse of a non-normal matrix, whose Gram test runs point by point) are
computed point by point by the mpmath path, every point marked ``fallback``, within
``LIMITS['points']`` points.  The batched path itself takes up to ``LIMITS['fast_points']`` points.

``certify=k`` re-solves ``k`` random points (chosen with ``seed``) at 30 digits and reports the largest
relative gap in ``certified_gap`` (absolute where the 30-digit value is 0).

A parameter value outside the float64 normal range (``1e-400``, ``1e-320``, ``1e400``) never enters the
float path: its points are solved by the certified path from the exact value.  A limit outside that range
(``7.8e-401``) is kept as the mpmath number it is: ``values`` is then an object array (never ``0.0``, a
subnormal or ``inf``).  With ``on_error="mark"`` a point the certified path refuses too is marked in
``failed`` (its reason in ``errors``) and the sweep goes on.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from itertools import product

import mpmath
import numpy as np
import sympy as sp

from symrmt.core.batch import LD
from symrmt.engine.lang.matrices import ModelError
from symrmt.engine.lang.tree import exact_value
from symrmt.engine.lang.vectors import vectors_of, gram_values
from symrmt.engine.reduce import hermitize as herm
from symrmt.engine.reduce.atoms import AtomSystem
from symrmt.engine.solve.batch import batch_system, solve_plan
from symrmt.engine.solve.batch_axis import AxisSolver
from symrmt.engine.solve.batch_qf import compile_forms, solve_qf_plan, takes
from symrmt.engine.solve.certify import compiled_system
from symrmt.errors import ParameterError, SymrmtError as _Refused, SymrmtError
from symrmt.parsing import LIMITS
from symrmt.progress import counted
from symrmt.table import TableResult, number_value

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
        The limit at every grid point, shape ``(len(axis_1), len(axis_2), ...)`` in the order of ``grid``
        (NaN at a point marked in ``failed``).  When a limit lies outside the float64 normal range
        (``|x| < 2.2e-308`` but not 0, or ``|x| > 1.8e308``) the array is of dtype object and holds that
        limit as an ``mpmath.mpf`` (15 certified digits), the others as floats.
    fallback : ndarray of bool
        True where the float path failed a check (or a parameter was outside the float64 normal range)
        and the certified mpmath path recomputed the point.
    exact : dict
        Flat index -> the ``mpmath.mpf`` value (15 certified digits) of every point the certified path
        computed.
    failed : ndarray of bool
        True where the certified path refused the point too (``on_error="mark"`` only; else the error is
        raised); ``errors``: flat index -> the reason.
    error_estimate : ndarray of float64
        Estimated relative error of the float64 values (float64 against the long-double-corrected
        value); ``inf`` at points whose checks failed before it (their values then carry 15 certified
        digits, from mpmath).
    grid : dict
        Axis name -> float64 array of its values (an object array holding ``mpmath.mpf`` values when one
        lies outside the float64 normal range, ``1e-400``); ``at``: the fixed values (exact).
    certified_gap : float or None
        Largest relative gap of the ``certify`` sample from its 30-digit values; ``certified``: the
        sampled flat indices and their gaps.
    timings : dict
        Seconds (``compile``, ``batch``, ``fallback``, ``certify``, ``total``) and counts (``points``,
        ``fallbacks``).

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> res = m.sweep("trace(inv(Z.T*Z/n + gamma*I(n)))", {"gamma": [1.0, 2.0]})
    >>> type(res).__name__, res.shape, res.to_numpy().round(12).tolist()   # (sqrt(g^2 + 4g) - g)/(2g)
    ('TraceSweep', (2,), [0.61803398875, 0.366025403784])
    """

    def __init__(self, expression, grid, at, values, fallback, error_estimate, certified, timings, exact=None,
                 errors=None, axis_text=None, at_text=None):
        self.expression, self.grid, self.at = expression, grid, at
        #: each axis value and each fixed value as given (the text typed, or a number's repr): a grid value
        #: outside the float64 range (``1e-400``) is shown as typed, never as its float ``0.0``
        self.axis_text = axis_text or {k: [str(v) for v in vals] for k, vals in grid.items()}
        self.at_text = at_text or {k: str(v) for k, v in at.items()}
        self.values, self.fallback, self.error_estimate = values, fallback, error_estimate
        self.exact = dict(exact or {})
        self.errors = dict(errors or {})
        self.failed = np.zeros(values.shape, dtype=bool)
        self.failed.flat[list(self.errors)] = True
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
        """Flat columns: each axis name and ``value``, ``fallback``, ``error_estimate`` and ``error`` (the
        reason a point failed, ``""`` elsewhere) (one row per point)."""
        names = list(self.grid)
        mesh = np.meshgrid(*[self.grid[k] for k in names], indexing="ij") if names else []
        out = {k: m.ravel() for k, m in zip(names, mesh)}
        out.update(value=self.values.ravel(), fallback=self.fallback.ravel(),
                   error_estimate=self.error_estimate.ravel())
        out["error"] = np.array([self.errors.get(i, "") for i in range(self.values.size)], dtype=object)
        return out

    def to_pandas(self):
        """One row per grid point (needs pandas)."""
        try:
            # optional dependency (pandas)
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas is in the test extras
            raise ParameterError("to_pandas() needs pandas (pip install pandas)") from None
        return pd.DataFrame(self.points())

    # the table protocol (symrmt.table.TableResult): str(), HTML, LaTeX, to_xarray()
    ROW_NAME = "points"

    def _columns(self) -> list:  # the printed tables show the error column only when a point failed
        return [*self.grid, "value", "fallback", "error_estimate"] + (["error"] if self.errors else [])

    def _rows(self, limit: int | None = None) -> list:
        pts, n = self.points(), int(self.values.size)
        k = n if limit is None else min(n, limit)

        def cell(c, i):
            if c == "fallback":
                return str(bool(pts[c][i]))
            if c == "error":  # the reason in full is in .errors
                e = pts[c][i]
                return e if len(e) <= 80 else e[:77] + "..."
            if c == "value":
                return value_text(self, i)
            if c in self.axis_text:
                return self.axis_text[c][int(np.unravel_index(i, self.shape)[list(self.grid).index(c)])]
            return repr(float(pts[c][i]))

        return [[cell(c, i) for c in self._columns()] for i in range(k)]

    def _count(self) -> int:
        return int(self.values.size)

    def _caption(self) -> str:
        at = ", ".join(f"{k} = {v}" for k, v in self.at_text.items())
        return f"trace sweep: {self.expression}" + (f" at {at}" if at else "") + f"; {self.values.size} points (float64)"

    def _empty_text(self) -> str:
        return "No grid points."

    def __repr__(self):
        return (f"TraceSweep({self.expression!r}, shape={self.shape}, fallbacks={int(self.fallback.sum())}, "
                + (f"failed={len(self.errors)}, " if self.errors else "") + f"certified_gap={self.certified_gap})")


#: the float64 normal range: a nonzero value outside it (subnormal, underflowing to 0, or overflowing to inf)
#: is not the number it stands for, so it never enters the float path nor is returned as a float
FLOAT_MIN, FLOAT_MAX = sys.float_info.min, sys.float_info.max


def representable(x) -> bool:
    """Whether the real number ``x`` (an mpmath number, a Fraction, an int) is 0 or lies in the float64
    normal range (so ``float(x)`` carries its 15 digits).

    >>> representable(1), representable("1e-400"), representable(0), representable("1e-320")
    (True, False, True, False)
    """
    with mpmath.workdps(30):
        v = mpmath.mpf(x.numerator) / x.denominator if hasattr(x, "denominator") else mpmath.mpf(x)
        return bool(v == 0 or (mpmath.isfinite(v) and FLOAT_MIN <= abs(v) <= FLOAT_MAX))


def value_text(res, i: int) -> str:
    """The value of flat point ``i`` of a :class:`TraceSweep` ``res`` as text: a float's ``repr`` (a batched
    point), 15 significant digits of a certified one (a decimal string outside the float range, never
    ``0.0`` or ``inf``), ``""`` at a failed point.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> res = m.sweep("trace(inv(Z.T*Z/n + gamma*I(n)))", {"gamma": [1.0]})
    >>> value_text(res, 0)   # (sqrt(5) - 1)/2
    '0.6180339887498949'
    """
    if i in res.errors:
        return ""
    if i in res.exact:
        v = number_value(res.exact[i], 15)
        return repr(v) if isinstance(v, float) else v
    return repr(float(res.values.flat[i]))


def _ld(x):
    """The long double nearest the exact real ``x`` (rounded from 25 digits, not from its float64)."""
    with mpmath.workdps(30):
        v = mpmath.mpf(x.numerator) / x.denominator if hasattr(x, "denominator") else mpmath.mpf(x)
        return LD(mpmath.nstr(v, 25, strip_zeros=False, min_fixed=1, max_fixed=0))


def _typed(v) -> str:
    """A value as given: the text typed, a Python or NumPy number's ``repr``, else ``str`` (a Fraction
    ``1/3``, a SymPy number)."""
    if isinstance(v, str):
        return v.strip()
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return repr(v.item() if hasattr(v, "item") else v)
    return str(v)


class _Axis:
    """One grid axis: its float64 values (for the batched path) and each value exact, on demand (for the
    mpmath path): a text is read by the restricted parser at once, a number is converted when needed."""

    def __init__(self, name, values):
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
        floats, lds, inrange = [], [], []
        for i, v in enumerate(vals):
            if isinstance(v, complex) or (isinstance(v, str) and "j" in v):
                raise ParameterError(f"grid[{name!r}]: sweep takes real values (a complex z: use Model.limit or "
                                     "Model.density)")
            if isinstance(v, (float, np.floating)) and not np.isfinite(v):
                raise ParameterError(f"grid[{name!r}] holds a non-finite value ({v!r})")
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and \
                    abs(v) <= FLOAT_MAX and (v == 0 or abs(v) >= FLOAT_MIN):
                # a number in the normal range is its own exact value (no conversion per value: 10^6 of them)
                inrange.append(True)
                floats.append(float(v))
                lds.append(np.longdouble(v) if not isinstance(v, (int, np.integer)) or abs(v) < 2**63 else _ld(v))
                continue
            x = self.exact(i)
            ok = representable(x)
            inrange.append(ok)
            # outside the normal range no float is used (the point is solved from its exact value)
            floats.append(float(x) if ok else np.nan)
            lds.append(_ld(x) if ok else np.nan)
        self.floats = np.array(floats, dtype=float)
        self.longdouble = np.array(lds, dtype=np.longdouble)
        self.in_range = np.array(inrange, dtype=bool)

    def values(self) -> np.ndarray:
        """The axis as :attr:`TraceSweep.grid` holds it: float64, or, when a value lies outside the float64
        normal range, an object array holding that value as an ``mpmath.mpf`` (30 digits of the exact one)."""
        if self.in_range.all():
            return self.floats

        out = self.floats.astype(object)
        with mpmath.workdps(30):
            for i in np.flatnonzero(~self.in_range):
                x = self.exact(int(i))
                out[i] = mpmath.mpf(x.numerator) / x.denominator
        return out

    def text(self, i) -> str:
        """Value ``i`` as given (:func:`_typed`)."""
        return _typed(self.raw[i])

    def __len__(self):
        return len(self.raw)

    def exact(self, i):
        if i not in self._exact:
            self._exact[i] = exact_value(self.raw[i], self.name)
        return self._exact[i]

    def distinct_exact(self):
        return sorted({self.exact(i) for i in range(len(self.raw))})


#: a numeric constant of the expression outside [10^-CONST_EXP, 10^CONST_EXP] (``1e-400``, ``1e400``, or one
#: whose square leaves the float64 range) keeps the expression off the float64 path
CONST_EXP = 150


def _wide_constant(plan) -> bool:
    """Whether a nonzero numeric constant of the plan's formula or systems lies outside
    ``[10^-CONST_EXP, 10^CONST_EXP]``."""
    exprs = [plan.formula]
    for t in plan.traces:
        exprs += list(t.system.residual) + list(t.system.readout.values())
    for f in getattr(plan, "forms", ()):
        exprs += list(f.S) + list(f.e) + list(f.f)
    lo, hi = sp.Integer(10) ** -CONST_EXP, sp.Integer(10) ** CONST_EXP
    for e in exprs:
        for a in sp.sympify(e).atoms(sp.Number):
            if a != 0 and not (lo <= abs(a) <= hi):
                return True
    return False


def _batchable(plan, model, names=()) -> str | None:
    """Why the batched path cannot take ``plan`` (``None``: it can); ``names``: the parameters of the grid and
    ``at=``."""
    if hasattr(plan, "forms"):
        why = takes(plan)
        if why is not None:
            return why
    elif model.vectors() and (vectors_of(plan.expr) or any("." in str(k) for k in names)):
        # the certified path checks the inner products (their Gram matrix) at every point
        return "vectors in the expression, or inner products given"
    if _wide_constant(plan):
        return f"a constant outside [1e-{CONST_EXP}, 1e{CONST_EXP}] (float64 would round it or a product of it)"
    for t in plan.traces:
        if isinstance(t.system, AtomSystem):
            return "a diagonal law solved by weighted sums"
        if t.matrix is not None and herm.nonnormal_inverses(t.matrix):
            return "the inverse of a non-normal matrix (its Gram test runs point by point)"
    return None


def _chunks(shape, names, chunk):
    """``(chunk, layout)``: chunks of whole sub-grids for the continuation along the axes
    (:class:`~symrmt.engine.solve.batch_axis.AxisSolver`): ``layout = (points per leading index, trailing shape,
    axis names)``, the leading axis of a chunk being a range of the grid's first axis (or of several axes
    flattened, then not continued along); a one-axis grid in ranges of its axis; ``(chunk, None)`` when one line
    of the last axis of a grid of several axes exceeds ``chunk``.

    >>> _chunks((4, 5, 6), ["a", "b", "c"], 100)
    (90, (30, (5, 6), ['a', 'b', 'c']))
    >>> _chunks((4, 5, 6), ["a", "b", "c"], 20)
    (18, (6, (6,), [None, 'c']))
    >>> _chunks((4, 5), ["a", "b"], 100)
    (20, (5, (5,), ['a', 'b']))
    >>> _chunks((600,), ["a"], 256)
    (256, (1, (), ['a']))
    """
    for k in range(len(shape)):
        inner = int(np.prod(shape[k:]))
        if inner <= chunk:
            if k == 0:
                return inner, (int(np.prod(shape[1:])), tuple(shape[1:]), list(names))
            lead = names[0] if k == 1 else None
            return (chunk // inner) * inner, (inner, tuple(shape[k:]), [lead] + list(names[k:]))
    if len(shape) == 1:
        return chunk, (1, (), list(names))
    return chunk, None


def _check_ratios(model, axes, fixed):
    """``Model.check_ratios`` at every combination of the axis values a ratio depends on (exact)."""
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


def sweep(model, expr, grid, at=None, certify: int = 0, seed: int = 0, on_error: str = "raise") -> TraceSweep:
    """See :meth:`symrmt.engine.Model.sweep`: the :class:`TraceSweep` of ``expr`` over ``grid`` (name -> values) at
    the fixed values ``at``; ``certify`` points re-solved at 30 digits (sampled with ``seed``); ``on_error``:
    ``"raise"`` or ``"mark"`` a point the certified path refuses too.  Raises :class:`ModelError` (a bad grid, a
    parameter given twice or unknown), :class:`~symrmt.errors.ParameterError` (a bad ``certify`` or
    ``on_error``), and the certified path's errors at a point (``on_error="raise"``).

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> res = sweep(m, "trace(inv(Z.T*Z/n + gamma*I(n)))", {"gamma": [1.0, 2.0]})
    >>> res.values.round(12).tolist(), res.fallback.tolist()   # (sqrt(g^2 + 4g) - g)/(2g)
    ([0.61803398875, 0.366025403784], [False, False])
    >>> sweep(m, "trace(inv(Z.T*Z/n + gamma*I(n)))", {"gamma": [1.0]}, at={"gamma": 1})
    Traceback (most recent call last):
        ...
    symrmt.errors.ModelError: gamma is given both in grid= and in at=
    """
    t0 = time.perf_counter()
    timings = {}
    if not isinstance(grid, Mapping) or not grid:
        raise ModelError("grid must be a non-empty dict {name: values}")
    at = {} if at is None else at
    if not isinstance(at, Mapping):
        raise ModelError(f"at must be a dict of parameter values, got {type(at).__name__}")
    if isinstance(certify, bool) or not isinstance(certify, (int, np.integer)) or certify < 0:
        raise ParameterError(f"certify must be a non-negative integer, got {certify!r}")
    if on_error not in ("raise", "mark"):
        raise ParameterError(f"on_error must be 'raise' or 'mark', got {on_error!r}")
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
    why = _batchable(plan, model, [*map(str, grid), *map(str, at)])
    if why is None and hasattr(plan, "forms") and any("." in k for k in names):
        why = "an inner product on a grid axis"
    cap = LIMITS["fast_points"] if why is None else LIMITS["points"]
    if n > cap:
        which = "fast_points" if why is None else "points"
        extra_why = "" if why is None else f" (the expression holds {why}: every point is solved in mpmath)"
        raise ParameterError(f"the grid has {n} points, above LIMITS[{which!r}] = {cap}{extra_why}")
    fixed = {str(k): v for k, v in at.items()}
    missing = [p.name for p in plan.params if p.name not in axes and p.name not in fixed]
    if missing:
        raise ModelError(f"no value given for {', '.join(missing)} (in grid= or at=)", missing=missing, known=known)

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
            if p.name in axes:
                ax = axes[p.name]
                bad = [ax.text(i) for i in range(len(ax)) if not ax.exact(i) > 0]
            else:
                bad = [str(fixed_exact[p.name])] if not fixed_exact[p.name] > 0 else []
            if bad:
                raise ModelError(f"{p.name} is a dimension ratio and must be positive, got {bad[0]}")
    values = np.full(n, np.nan)
    est = np.full(n, np.inf)
    ok = np.zeros(n, dtype=bool)
    # a point whose parameters are outside the float64 normal range is solved from its exact values only
    batchable = np.ones(n, dtype=bool)
    for a, k in enumerate(names):
        batchable &= axes[k].in_range[index[a]]
    if not all(representable(v) for v in fixed_exact.values()):
        batchable[:] = False
    grams = None
    if why is None and hasattr(plan, "forms"):
        try:  # the inner products are the same at every point: checked once (a refusal: the certified path says why)
            grams = gram_values({**plan.vectors, **model.vectors()}, fixed_exact)
        except (_Refused, ArithmeticError, ValueError):
            batchable[:] = False
    t = time.perf_counter()
    if why is None and batchable.any():
        rows = np.flatnonzero(batchable)
        nb = rows.size
        cols = {k: floats[k][index[a][rows]] for a, k in enumerate(names)}
        cols.update({k: np.full(nb, float(v)) for k, v in fixed_exact.items()})
        cols_ld = {k: axes[k].longdouble[index[a][rows]] for a, k in enumerate(names)}
        cols_ld.update({k: np.full(nb, _ld(v), dtype=np.longdouble) for k, v in fixed_exact.items()})
        try:
            for tr in plan.traces:  # compile (cached on disk) before timing the batch
                batch_system(compiled_system(tr.system))
            if hasattr(plan, "forms"):
                compile_forms(plan)
        finally:
            timings["compile"] = time.perf_counter() - t
        t = time.perf_counter()
        m_max = max([len(tr.system.unknowns) for tr in plan.traces] + [len(f.units) for f in getattr(plan, "forms", ())]
                    + [1])
        chunk = max(256, CHUNK_ENTRIES // (m_max * m_max))  # the stacked Jacobians of one chunk: bounded memory
        chunk, layout = _chunks(shape, names, chunk) if nb == n else (chunk, None)
        for a in range(0, nb, chunk):
            sl = slice(a, min(nb, a + chunk))
            r = rows[sl]
            solver = None if layout is None else AxisSolver(((sl.stop - sl.start) // layout[0],) + layout[1], layout[2])
            args = (plan, compiled_system, {k: v[sl] for k, v in cols.items()}, sl.stop - sl.start,
                    {k: v[sl] for k, v in cols_ld.items()})
            if hasattr(plan, "forms"):
                values[r], est[r], ok[r], _ = solve_qf_plan(*args, grams=grams, solver=solver)
            else:
                values[r], est[r], ok[r], _ = solve_plan(*args, solver=solver)
        # a batched value outside the float64 normal range is not the number it stands for: the certified
        # path recomputes it
        with np.errstate(all="ignore"):
            ok &= (values == 0) | ((np.abs(values) >= FLOAT_MIN) & (np.abs(values) <= FLOAT_MAX))
        timings["batch"] = time.perf_counter() - t
    else:
        timings["compile"] = timings["batch"] = 0.0
    t = time.perf_counter()
    fallback = ~ok
    _check_ratios(model, axes, fixed_exact)
    exact, errors = {}, {}

    todo = np.flatnonzero(fallback)
    for i in counted(todo, len(todo), "sweep: points by the certified path"):
        pt = exact_at(i)
        try:
            r = model.limit(expr, at=pt, digits=FALLBACK_DIGITS)
        except (ArithmeticError, ValueError, SymrmtError) as exc:
            if on_error == "mark":  # no value at the point (the float path's, which failed its checks, is dropped)
                errors[int(i)] = f"{type(exc).__name__}: {exc}"
                values[i], est[i] = np.nan, np.inf
                continue
            if not isinstance(exc, (ArithmeticError, ValueError)):
                raise
            where = ", ".join(f"{k}={axes[k].text(int(index[a, i]))}" for a, k in enumerate(names))
            raise type(exc)(f"sweep: the point {where} (flat index {int(i)}) failed the float checks and the "
                            f"certified path: {exc}") from exc
        exact[int(i)] = r.value
        values[i] = float(r.value) if representable(r.value) else np.nan
    if any(not representable(v) for v in exact.values()):  # keep such a limit as the number it is
        values = values.astype(object)
        for i, v in exact.items():
            if not representable(v):
                values[i] = v
    timings["fallback"] = time.perf_counter() - t
    t = time.perf_counter()
    certified = []
    if certify:
        rng = np.random.default_rng(seed)
        good = np.flatnonzero(~np.isin(np.arange(n), list(errors)))
        for i in sorted(rng.choice(good, size=min(int(certify), good.size), replace=False).tolist()):
            ref = model.limit(expr, at=exact_at(i), digits=CERTIFY_DIGITS).value
            with mpmath.workdps(40):
                d = abs(mpmath.mpf(exact.get(i, values[i])) - ref)
                gap = float(d / abs(ref)) if ref != 0 else float(d)
            certified.append((int(i), gap))
    timings["certify"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0
    timings.update(points=n, fallbacks=int(fallback.sum()), failed=len(errors))
    res = TraceSweep(str(expr) if isinstance(expr, str) else repr(expr), {k: axes[k].values() for k in names},
                     {k: fixed_exact[k] for k in fixed_exact}, values.reshape(shape), fallback.reshape(shape),
                     est.reshape(shape), certified, timings, exact=exact, errors=errors,
                     axis_text={k: [axes[k].text(i) for i in range(len(axes[k]))] for k in names},
                     at_text={k: _typed(v) for k, v in fixed.items()})
    return res
