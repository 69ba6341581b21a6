r"""The float64 side of :func:`symrmt.sweep` (``fast=True``): a product grid as float meshes.

Each value of each axis (and each fixed value) is validated once, exactly (``c > 0``, ``gamma > 0``, squared
norms ``>= 0``, cosines in ``[-1, 1]``, not both an angle and the inner product of one pair), and the grid goes
to :func:`symrmt.models.attention.fast.solve_grid` as float64 columns (an inner product given by its angle is
``cos * sqrt(norm * norm)``); a point whose Gram matrix is not positive semi-definite is refused by name.
:class:`GridPoints` holds the points, building a point's dict only when asked.

Examples
--------
>>> pts = grid_points({"c": (0.5, 2), "snr": (0, 1, 4)}, {"gamma": 1}, None)
>>> len(pts), pts.shape, pts[5]["c"], pts[5]["snr"]
(6, (2, 3), Fraction(2, 1), Fraction(4, 1))
>>> pts.column("snr").tolist()
[0.0, 1.0, 4.0, 0.0, 1.0, 4.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.errors import ParameterError
from symrmt.models.attention.params import check_c, to_fraction
from symrmt.table import float_text

__all__ = ["GridPoints", "grid_points", "exact_value"]

GRAM_KEYS = ("snr", "wk2", "wq2", "wkwq", "muwk", "muwq")
ANGLE_KEYS = ("cos_muwk", "cos_muwq", "cos_wkwq")
#: an angle key, its inner product, and the two squared norms it is scaled by
_ANGLE = {"cos_muwk": ("muwk", "snr", "wk2"), "cos_muwq": ("muwq", "snr", "wq2"),
          "cos_wkwq": ("wkwq", "wk2", "wq2")}


def exact_value(key: str, value) -> Fraction:
    """One grid value, validated exactly as the certified path would (the parameter named on error).

    >>> exact_value("cos_muwk", "1/2")
    Fraction(1, 2)
    >>> exact_value("gamma", 0)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: gamma must be positive, got 0
    """
    if key == "c":
        return check_c(value)
    x = to_fraction(value, key)
    if key == "gamma" and x <= 0:
        raise ParameterError(f"gamma must be positive, got {value!r}")
    if key in ("snr", "wk2", "wq2") and x < 0:
        raise ParameterError(f"{key} is a squared norm and must be >= 0, got {value!r}")
    if key in ANGLE_KEYS and abs(x) > 1:
        raise ParameterError(f"{key} must lie in [-1, 1], got {value!r}")
    return x


#: the magnitudes the float64 path takes (``fast=True``): beyond them float64 underflows or overflows
#: in the fixed point (``c**3``) before any check could see it
FLOAT_RANGE = (1e-100, 1e100)
#: :data:`FLOAT_RANGE` as exact Fractions (the same comparisons as against the floats, without converting them
#: at every value)
_FLOAT_RANGE_EXACT = tuple(Fraction(x) for x in FLOAT_RANGE)


def _float_ok(key: str, x: Fraction, given) -> Fraction:
    """``x`` unchanged when its magnitude is 0 or within :data:`FLOAT_RANGE`; else a ParameterError naming
    the value as the user wrote it."""
    if x != 0 and not _FLOAT_RANGE_EXACT[0] <= abs(x) <= _FLOAT_RANGE_EXACT[1]:
        shown = given if isinstance(given, str) else float_text(x)
        raise ParameterError(f"{key} = {shown} is outside the range of the float64 path fast=True (magnitudes "
                             f"{FLOAT_RANGE[0]:g} to {FLOAT_RANGE[1]:g}, or 0); use fast=False (CLI: drop --fast)")
    return x


class GridPoints(Sequence):
    """The points of a product grid, in C order, each a dict built on access.

    ``column(key)`` gives a parameter at every point as float64 (flat), ``text(key)`` as the
    exact text given (float64 ``repr`` for the inner products computed from angles).  Made by
    :func:`grid_points`; an index out of range raises ``IndexError``.

    >>> pts = grid_points({"c": ["1/2", 2], "gamma": [1]}, {"snr": 1}, None)
    >>> len(pts), pts.shape, pts.column("c").tolist(), pts.text("c")
    (2, (2, 1), [0.5, 2.0], ['0.5', '2'])
    >>> pts[1]["c"], pts[1]["snr"], pts.locate(1)
    (Fraction(2, 1), Fraction(1, 1), 'c = 2, gamma = 1, snr = 1, wk2 = 0, wq2 = 0, wkwq = 0, muwk = 0, muwq = 0')
    """

    def __init__(self, shape: tuple, keys: tuple, sources: dict):
        self.shape = tuple(shape)
        self.keys = tuple(keys)
        self._sources = sources  # key -> ("axis", dim, exact values) | ("fixed", exact) | ("float", flat array)
        self._size = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._size))]
        i = int(i)
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError("grid point index out of range")
        idx = np.unravel_index(i, self.shape) if self.shape else ()
        out = {}
        for key in self.keys:
            kind, *rest = self._sources[key]
            if kind == "axis":
                out[key] = rest[1][idx[rest[0]]]
            elif kind == "fixed":
                out[key] = rest[0]
            else:
                out[key] = float(rest[0][i])
        return out

    def _broadcast(self, values: np.ndarray, dim: int) -> np.ndarray:
        view = [1] * len(self.shape)
        view[dim] = -1
        return np.broadcast_to(values.reshape(view), self.shape).ravel()

    def column(self, key: str) -> np.ndarray:
        """Parameter ``key`` at every point, float64, flat (C order).

        >>> pts = grid_points({"c": ["1/2", 2], "gamma": ["0.1"]}, {"snr": 1}, None)
        >>> pts.column("c").tolist(), pts.column("gamma").tolist()
        ([0.5, 2.0], [0.1, 0.1])
        """
        kind, *rest = self._sources[key]
        if kind == "axis":
            return self._broadcast(np.array([float(v) for v in rest[1]], dtype=np.float64), rest[0])
        if kind == "fixed":
            return np.full(self._size, float(rest[0]))
        return np.asarray(rest[0], dtype=np.float64)

    def text(self, key: str) -> list:
        """Parameter ``key`` at every point as text (each exact value formatted once).

        >>> pts = grid_points({"c": ["1/2", 2], "gamma": ["0.1"]}, {"snr": 1}, None)
        >>> pts.text("gamma"), pts.text("snr")
        (['0.1', '0.1'], ['1', '1'])
        """
        kind, *rest = self._sources[key]
        if kind == "axis":
            return self._broadcast(np.array([float_text(v) for v in rest[1]], dtype=object), rest[0]).tolist()
        if kind == "fixed":
            return [float_text(rest[0])] * self._size
        return [repr(x) for x in np.asarray(rest[0], dtype=np.float64).tolist()]

    def locate(self, i: int) -> str:
        """Point ``i`` as ``c = ..., snr = ...`` (its axis values), for error messages.

        >>> pts = grid_points({"c": ["1/2", 2], "gamma": ["0.1"]}, {"snr": 1}, None)
        >>> pts.locate(0)
        'c = 0.5, gamma = 0.1, snr = 1, wk2 = 0, wq2 = 0, wkwq = 0, muwk = 0, muwq = 0'
        """
        p = self[i]
        return ", ".join(f"{k} = {float_text(p[k]) if isinstance(p[k], Fraction) else repr(p[k])}" for k in self.keys)


def grid_points(axes: dict, fixed: dict, base) -> GridPoints:
    """The points of the grid ``axes`` x ``fixed`` over the base geometry ``base``, validated per value.

    Parameters
    ----------
    axes : dict
        Axis name (``"c"``, or tied names ``"cos_muwk=cos_muwq"``) to its values.
    fixed : dict
        Scalar parameters.
    base : Geometry or None
        The Gram entries not given (``None``: ``mu = 0``, ``W = I``).

    Returns
    -------
    GridPoints
        Keys ``c, gamma``, the six Gram entries, then the angles given.

    Raises
    ------
    ParameterError
        A :class:`LowRankGeometry` or another object as ``base``; a value out of range or beyond
        float64; both an angle and its inner product.

    Examples
    --------
    An angle gives its inner product, ``mu . w_K = cos sqrt(||mu||^2 ||w_K||^2) = (1/2) 2``:

    >>> pts = grid_points({"cos_muwk": ["1/2"]}, {"c": 1, "gamma": 1, "snr": 4, "wk2": 1}, None)
    >>> pts.keys[-1], pts.column("muwk").tolist()
    ('cos_muwk', [1.0])
    >>> grid_points({"c": [1]}, {}, LowRankGeometry([[1]]))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: fast=True takes rank-one geometries only (Geometry); use fast=False
    """
    if isinstance(base, LowRankGeometry):
        raise ParameterError("fast=True takes rank-one geometries only (Geometry); use fast=False")
    if base is not None and not isinstance(base, Geometry):
        raise ParameterError(f"geometry must be a symrmt.Geometry or LowRankGeometry, got {type(base).__name__}")
    sources = {}
    shape = []
    for dim, (name, vals) in enumerate(axes.items()):
        keys = name.split("=")
        for key in keys:
            sources[key] = ("axis", dim, tuple(_float_ok(key, exact_value(key, v), v) for v in vals))
        shape.append(len(vals))
    for key, v in fixed.items():
        sources[key] = ("fixed", _float_ok(key, exact_value(key, v), v))
    for key, (pair, _, _) in _ANGLE.items():
        if key in sources and pair in sources:
            raise ParameterError(f"give either {key} or {pair}, not both")
    entries = (base or Geometry()).as_dict()
    for key in GRAM_KEYS:
        sources.setdefault(key, ("fixed", entries[key]))
    pts = GridPoints(tuple(shape), ("c", "gamma") + GRAM_KEYS, sources)
    angles = tuple(k for k in ANGLE_KEYS if k in sources)
    for key in angles:
        pair, a, b = _ANGLE[key]
        with np.errstate(all="raise"):
            sources[pair] = ("float", pts.column(key) * np.sqrt(pts.column(a) * pts.column(b)))
    pts.keys += angles
    return pts


def solve_points(nl, points: GridPoints, diagonal: str, certify: int = 0, seed: int = 0):
    """:func:`symrmt.models.attention.fast.solve_grid` on ``points`` (flat), a non-PSD point refused by its parameters.

    Takes a :class:`~symrmt.hermite.Nonlinearity`, the points, ``diagonal``, ``certify`` and ``seed`` as
    :func:`~symrmt.models.attention.fast.solve_grid`; returns its result; raises
    :class:`~symrmt.errors.ParameterError` naming the first point whose Gram data are not a Gram matrix, before
    any solve (here ``[[||mu||^2, mu.w_K], [mu.w_K, ||w_K||^2]] = [[1, 2], [2, 1]]``, eigenvalues 3 and -1):

    >>> from symrmt.hermite import Nonlinearity
    >>> pts = grid_points({"c": ["1/2", 2], "gamma": [1]}, {"snr": 1, "wk2": 1, "muwk": 2}, None)
    >>> solve_points(Nonlinearity("tanh"), pts, "zero")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: the geometry at the grid point c = 0.5, gamma = 1, ... is not a Gram matrix (not positive semi-definite, eigenvalue -1 < 0): ...
    """
    try:
        # imported here: an installation without the vectorised solver refuses fast=True, and says so
        from symrmt.models.attention import fast as fast_module
    except ImportError as exc:  # pragma: no cover - the module ships with the package
        raise ParameterError(
            "fast=True needs the vectorised solver symrmt.models.attention.fast, which this installation does not have; "
            "use fast=False (the certified solver)"
        ) from exc
    arrays = {k: points.column(k) for k in ("c", "gamma") + GRAM_KEYS}
    try:
        return fast_module.solve_grid(nl, arrays, diagonal=diagonal, center=nl.center, certify=certify, seed=seed)
    except ParameterError as exc:
        if getattr(exc, "index", None) is None:
            raise
        raise ParameterError(f"the geometry at the grid point {points.locate(exc.index)} is not a Gram matrix "
                             f"(not positive semi-definite, eigenvalue {exc.eigenvalue:.3g} < 0): check that "
                             "|mu.w_K| <= ||mu|| ||w_K|| and the other Cauchy-Schwarz bounds hold") from None
