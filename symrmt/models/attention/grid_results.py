r"""The result objects of the grid calls: :class:`SweepResult` (``symrmt.sweep``) and
:class:`CrossingsResult` (``symrmt.crossings``), with how their parameters print.
Both follow the protocol of :class:`symrmt.table.TableResult` (text, HTML, LaTeX, pandas, xarray).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

from symrmt.errors import ExtraUnavailable, ParameterError
from symrmt.models.attention.params import to_fraction
from symrmt.plotting import plot_sweep, need_xarray, plot_crossings
from symrmt.table import (
    LATEX_WIDE_DIGITS, TableResult, digit_lines, float_text, geometry_text, html_table, latex_array, latex_escape,
    latex_tabular, math_text, need_pandas, param_column, param_text, text_table,
)

__all__ = ["SweepResult", "CrossingsResult"]


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

    Examples
    --------
    A two-point result made by hand (``symrmt.sweep`` makes them from the model):

    >>> from fractions import Fraction as F
    >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
    ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
    ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
    ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
    >>> r.axes, r.shape, r.gamma.tolist(), r.attention.tolist()
    (('gamma',), (2,), [1.0, 2.0], [0.78, 0.82])
    >>> r.columns
    ('c', 'gamma', 'attention', 'ridge')
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
        """The names of the grid's axes, in its order (one per list in the grid).

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> r.axes
        ('gamma',)
        """
        return tuple(self.grid)

    @property
    def shape(self) -> tuple:
        """The grid's shape: the length of each axis.

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> r.shape
        (2,)
        """
        return tuple(len(v) for v in self.grid.values())

    def values(self, key: str):
        """The value of parameter ``key`` at every grid point (float64, the grid's shape).
        Raises :class:`~symrmt.errors.ParameterError` for a parameter the sweep does not have.

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> r.values("c").tolist()
        [0.5, 0.5]
        >>> r.values("snr")
        Traceback (most recent call last):
        ...
        symrmt.errors.ParameterError: no parameter 'snr' in this sweep; known: c, gamma
        """
        if key not in self.points[0]:
            raise ParameterError(f"no parameter {key!r} in this sweep; known: {', '.join(self.points[0])}")
        if hasattr(self.points, "column"):  # the fast path's lazy points
            return self.points.column(key).reshape(self.shape)
        return np.array([float(p[key]) for p in self.points], dtype=np.float64).reshape(self.shape)

    @property
    def gamma(self):
        """``values("gamma")``: ``gamma`` at every grid point (float64, the grid's shape).

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> r.gamma.tolist()
        [1.0, 2.0]
        """
        return self.values("gamma")

    @property
    def attention(self):
        """``E_A`` at every grid point (float64, the grid's shape).

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> r.attention.tolist()
        [0.78, 0.82]
        """
        if self.fast:
            return np.array(self.attention_mp, dtype=np.float64).reshape(self.shape)
        return np.array([float(v) for v in self.attention_mp], dtype=np.float64).reshape(self.shape)

    @property
    def ridge(self):
        """``E_RR`` at every grid point (float64, the grid's shape).

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> r.ridge.tolist()
        [0.67, 0.76]
        """
        if self.fast:
            return np.array(self.ridge_mp, dtype=np.float64).reshape(self.shape)
        return np.array([float(v) for v in self.ridge_mp], dtype=np.float64).reshape(self.shape)

    @property
    def columns(self) -> tuple:
        """The table's columns: every parameter of a point, then ``attention`` and ``ridge``.

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> r.columns
        ('c', 'gamma', 'attention', 'ridge')
        """
        return tuple(self.points[0]) + ("attention", "ridge")

    def to_numpy(self):
        """Float64 array, one row per point: every parameter (:attr:`columns`), then attention, ridge.

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> r.to_numpy().tolist()
        [[0.5, 1.0, 0.78, 0.67], [0.5, 2.0, 0.82, 0.76]]
        """
        if hasattr(self.points, "column"):  # the fast path's lazy points
            return np.column_stack([self.points.column(k) for k in self.points.keys]
                                   + [np.array(self.attention_mp, dtype=np.float64),
                                      np.array(self.ridge_mp, dtype=np.float64)])
        return np.array([[float(p[k]) for k in self.points[0]] + [float(a), float(r)]
                         for p, a, r in zip(self.points, self.attention_mp, self.ridge_mp)], dtype=np.float64)

    def to_pandas(self, long: bool = False):
        """One row per point with every parameter and both errors (the default of every result);
        ``long=True``: one row per (point, error) with the grid's axes, ``error`` and ``value``.

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> r.to_pandas().shape, r.to_pandas(long=True)[["gamma", "error", "value"]].values.tolist()[:2]
        ((2, 4), [[1.0, 'attention', 0.78], [2.0, 'attention', 0.82]])
        """
        pd = need_pandas()
        wide = pd.DataFrame(self.to_numpy(), columns=list(self.columns))
        if self.fallback is not None:
            wide["fallback"] = list(self.fallback)
        if long:
            wide = wide.melt(id_vars=[a.split("=")[0] for a in self.axes], value_vars=["attention", "ridge"], var_name="error",
                             value_name="value")
        wide.attrs.update(self._attrs())
        return wide

    def plot(self, kind: str | None = None, ax=None, log=None):
        """Over a one-axis grid both errors as lines (default; ``kind="difference"``: ``E_A - E_RR``,
        ``"sign"``: its sign); over two axes a heat map of ``E_A - E_RR`` with the contour
        ``E_A = E_RR`` (default; ``kind="attention"``, ``"ridge"``: that error) or the sign map
        (``kind="sign"``: the phase diagram).  matplotlib; returns the axes.  (It draws a figure;
        ``tests/test_plotting.py`` checks the drawing.)

        Raises :class:`~symrmt.errors.ParameterError` for another ``kind`` (before drawing):

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid={"gamma": (F(1), F(2))},
        ...                 fixed={"c": F(1, 2)}, geometry=None, points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> r.plot(kind="phase")
        Traceback (most recent call last):
        ...
        symrmt.errors.ParameterError: kind must be 'both' (one axis), 'difference', 'attention', 'ridge' or 'sign', got 'phase'
        """
        return plot_sweep(self, kind=kind, ax=ax, log=log)

    def to_xarray(self):
        """An ``xarray.Dataset`` with ``attention`` and ``ridge`` over the grid's axes, the grid's values as
        float coordinates; raises :class:`~symrmt.errors.ExtraUnavailable` without xarray.

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid={"gamma": (F(1), F(2))},
        ...                 fixed={"c": F(1, 2)}, geometry=None, points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> ds = r.to_xarray()
        >>> ds["attention"].dims, ds["gamma"].values.tolist(), ds["ridge"].values.tolist()
        (('gamma',), [1.0, 2.0], [0.67, 0.76])
        """
        try:
            # optional dependency (xarray)
            import xarray as xr
        except ImportError as exc:  # pragma: no cover - installed where the tests run
            raise ExtraUnavailable("to_xarray() needs xarray: pip install 'symrmt[results]'") from exc
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
        every parameter exactly (an irrational inner product as its 1000-digit fraction).

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> print(r.table(limit=1))
        sweep: f = tanh, diagonal = zero, c = 0.5; 2 points over gamma (10 certified digits)
          c  gamma  attention  ridge
        ---  -----  ---------  -----
        0.5      1       0.78   0.67
        """
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
        r"""The values as a LaTeX ``tabular``: the parameters that vary and both errors (the rest in the
        comment line above it).

        >>> from fractions import Fraction as F
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10,
        ...                 grid={"gamma": (F(1), F(2))}, fixed={"c": F(1, 2)}, geometry=None,
        ...                 points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                 attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> print(r.latex(), end="")
        % sweep: f = tanh, diagonal = zero, c = 0.5; 2 points over gamma (10 certified digits)
        \begin{tabular}{rrr}
        \hline
        $\gamma$ & $E_A$ & $E_{RR}$ \\
        \hline
        1 & 0.78 & 0.67 \\
        2 & 0.82 & 0.76 \\
        \hline
        \end{tabular}
        """
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


@dataclass(frozen=True, eq=False)
class CrossingsResult(TableResult):
    """The crossings ``E_A = E_RR`` found on an interval (from :func:`crossings`).

    Attributes
    ----------
    over : str
        The parameter that varies; ``between`` its interval; ``fixed`` the other parameters.
    roots : tuple of mpf
        The crossings, increasing, each correct to ``digits`` significant digits (it lies in
        the certified bracket ``brackets[i]``, of relative width at most ``10**-digits``).
        Each is a :class:`~symrmt.proofs.certified.CertifiedMpf`: an ``mpf`` of ``digits`` digits
        that prints them all (``repr``, ``str``), at any ``mpmath.mp.dps``; handed back to
        :func:`symrmt.limit` (``c=r.roots[0]``) it is read bit for bit.
    directions : tuple of int
        ``+1`` when ``E_A - E_RR`` goes from negative to positive through the root (Attention
        wins below it), ``-1`` the other way.
    scan_x, scan_sign : tuple
        The scan points and the sign of ``E_A - E_RR`` at each: certified, or with ``fast``
        a float64 sign at least :data:`MARGIN` times its estimated error away from zero.
    fast : bool
        Whether the scan ran on the float64 path.
    finite_size_note : str or None
        Set when the term the limit linearizes is not small at ``p = 512`` somewhere on the interval
        (:func:`symrmt.models.attention.finite_size.finite_size_note`).

    Examples
    --------
    A one-root result made by hand (``symrmt.crossings`` makes them from the model):

    >>> from fractions import Fraction as F
    >>> r = CrossingsResult(f="tanh", expr="tanh(t)", over="c", between=(F(1, 10), F(2)), fixed={"gamma": F(1)},
    ...                     diagonal="zero", digits=6, roots=(mpmath.mpf("0.5"),),
    ...                     brackets=((mpmath.mpf("0.4999995"), mpmath.mpf("0.5000005")),), directions=(1,),
    ...                     scan_x=(0.1, 1.0, 2.0), scan_sign=(-1, 1, 1))
    >>> r, len(r), r.to_numpy().tolist()
    (<CrossingsResult over='c' 1 root(s)>, 1, [[0.5, 1.0]])
    >>> print(r)
    crossings E_A = E_RR: f = tanh, over c in [0.1, 2], gamma = 1, diagonal = zero (6 digits, scan of 3 points)
      c  side
    ---  ----------------
    0.5  E_A < E_RR below
    """

    f: str
    expr: str
    over: str
    between: tuple
    fixed: dict
    diagonal: str
    digits: int
    roots: tuple
    brackets: tuple
    directions: tuple
    scan_x: tuple
    scan_sign: tuple
    center: bool = False
    geometry: object = None
    evaluations: int = 0
    seconds: float = 0.0
    fast: bool = False
    finite_size_note: str | None = None

    columns = ("root", "direction")

    def __len__(self) -> int:
        return len(self.roots)

    def __iter__(self):
        return iter(self.roots)

    def __getitem__(self, i):
        return self.roots[i]

    @property
    def values(self):
        """The roots as a float64 array.

        >>> from fractions import Fraction as F
        >>> r = CrossingsResult(f="tanh", expr="tanh(t)", over="c", between=(F(1, 10), F(2)), fixed={"gamma": F(1)},
        ...                     diagonal="zero", digits=6, roots=(mpmath.mpf("0.5"),),
        ...                     brackets=((mpmath.mpf("0.4999995"), mpmath.mpf("0.5000005")),), directions=(1,),
        ...                     scan_x=(0.1, 1.0, 2.0), scan_sign=(-1, 1, 1))
        >>> r.values.tolist()
        [0.5]
        """
        return np.array([float(r) for r in self.roots], dtype=np.float64)

    def to_numpy(self):
        """Float64 array ``(len(roots), 2)``: root, direction.

        >>> from fractions import Fraction as F
        >>> r = CrossingsResult(f="tanh", expr="tanh(t)", over="c", between=(F(1, 10), F(2)), fixed={"gamma": F(1)},
        ...                     diagonal="zero", digits=6, roots=(mpmath.mpf("0.5"),),
        ...                     brackets=((mpmath.mpf("0.4999995"), mpmath.mpf("0.5000005")),), directions=(1,),
        ...                     scan_x=(0.1, 1.0, 2.0), scan_sign=(-1, 1, 1))
        >>> r.to_numpy().tolist()
        [[0.5, 1.0]]
        """
        return np.array([[float(r), d] for r, d in zip(self.roots, self.directions)], dtype=np.float64).reshape(-1, 2)

    def to_xarray(self):
        """An ``xarray.Dataset`` over ``root`` (the roots as float64, their directions and brackets), and the
        scan's signs over ``scan``; raises :class:`~symrmt.errors.ExtraUnavailable` without xarray.

        >>> from fractions import Fraction as F
        >>> r = CrossingsResult(f="tanh", expr="tanh(t)", over="c", between=(F(1, 10), F(2)), fixed={"gamma": F(1)},
        ...                     diagonal="zero", digits=6, roots=(mpmath.mpf("0.5"),),
        ...                     brackets=((mpmath.mpf("0.4999995"), mpmath.mpf("0.5000005")),), directions=(1,),
        ...                     scan_x=(0.1, 1.0, 2.0), scan_sign=(-1, 1, 1))
        >>> ds = r.to_xarray()
        >>> ds["c"].values.tolist(), ds["bracket_hi"].values.tolist(), ds["scan_sign"].values.tolist()
        ([0.5], [0.5000005], [-1, 1, 1])
        """
        xr = need_xarray()
        r = ("root",)
        return xr.Dataset({self.over: (r, self.values), "direction": (r, list(self.directions)),
                           "bracket_lo": (r, [float(b[0]) for b in self.brackets]),
                           "bracket_hi": (r, [float(b[1]) for b in self.brackets]),
                           "scan_sign": (("scan",), list(self.scan_sign))},
                          coords={"scan_x": (("scan",), [float(x) for x in self.scan_x])},
                          attrs={"f": self.f, "expr": self.expr, "over": self.over, "digits": self.digits,
                                 **{k: str(v) for k, v in self.fixed.items()}})

    def plot(self, ax=None, log=None):
        """The sign of ``E_A - E_RR`` at the scan points and a line at each root (matplotlib;
        :func:`~symrmt.plotting.plot_crossings`); takes optional axes and ``log``, returns the axes (here of a
        ``matplotlib.figure.Figure``, nothing rendered):

        >>> from fractions import Fraction as F
        >>> r = CrossingsResult(f="tanh", expr="tanh(t)", over="c", between=(F(1, 10), F(2)), fixed={"gamma": F(1)},
        ...                     diagonal="zero", digits=6, roots=(mpmath.mpf("0.5"),),
        ...                     brackets=((mpmath.mpf("0.4999995"), mpmath.mpf("0.5000005")),), directions=(1,),
        ...                     scan_x=(0.1, 1.0, 2.0), scan_sign=(-1, 1, 1))
        >>> from matplotlib.figure import Figure
        >>> ax = r.plot(ax=Figure().add_subplot())
        >>> ax.get_lines()[-1].get_xdata(), ax.get_xscale()
        ([0.5, 0.5], 'log')
        """
        return plot_crossings(self, ax=ax, log=log)

    def to_pandas(self):
        """A DataFrame, one row per root, with the same column types whether or not a root is found:
        ``<over>`` (float64, the root), ``root`` (pandas ``string``: the certified root as a decimal of
        every digit asked), ``direction`` (int64), ``bracket_lo``, ``bracket_hi`` (float64); the inputs in
        ``.attrs``.

        >>> from fractions import Fraction as F
        >>> r = CrossingsResult(f="tanh", expr="tanh(t)", over="c", between=(F(1, 10), F(2)), fixed={"gamma": F(1)},
        ...                     diagonal="zero", digits=6, roots=(mpmath.mpf("0.5"),),
        ...                     brackets=((mpmath.mpf("0.4999995"), mpmath.mpf("0.5000005")),), directions=(1,),
        ...                     scan_x=(0.1, 1.0, 2.0), scan_sign=(-1, 1, 1))
        >>> df = r.to_pandas()
        >>> df.to_dict("records"), str(df["root"].dtype)
        ([{'c': 0.5, 'root': '0.5', 'direction': 1, 'bracket_lo': 0.4999995, 'bracket_hi': 0.5000005}], 'string')
        """
        pd = need_pandas()
        df = pd.DataFrame({self.over: pd.Series(self.values, dtype="float64"),
                           "root": pd.Series([mpmath.nstr(r, self.digits) for r in self.roots], dtype="string"),
                           "direction": pd.Series(list(self.directions), dtype="int64"),
                           "bracket_lo": pd.Series([float(b[0]) for b in self.brackets], dtype="float64"),
                           "bracket_hi": pd.Series([float(b[1]) for b in self.brackets], dtype="float64")})
        df.attrs.update({"f": self.f, "expr": self.expr, "over": self.over, "digits": self.digits,
                         **{k: str(v) for k, v in self.fixed.items()}})
        return df

    def _interval(self) -> str:
        return f"[{float_text(self.between[0])}, {float_text(self.between[1])}]"

    def summary(self) -> str:
        """One sentence: how many crossings, or that the sign never changes.

        >>> from fractions import Fraction as F
        >>> r = CrossingsResult(f="tanh", expr="tanh(t)", over="c", between=(F(1, 10), F(2)), fixed={"gamma": F(1)},
        ...                     diagonal="zero", digits=6, roots=(mpmath.mpf("0.5"),),
        ...                     brackets=((mpmath.mpf("0.4999995"), mpmath.mpf("0.5000005")),), directions=(1,),
        ...                     scan_x=(0.1, 1.0, 2.0), scan_sign=(-1, 1, 1))
        >>> r.summary()
        '1 crossing(s) of E_A = E_RR in c on [0.1, 2]'
        """
        if not self.roots:
            side = "E_A > E_RR" if self.scan_sign[0] > 0 else "E_A < E_RR"
            return (f"E_A - E_RR keeps its sign on {self._interval()} ({side} at all {len(self.scan_x)} scan "
                    "points): no crossing found")
        return f"{len(self.roots)} crossing(s) of E_A = E_RR in {self.over} on {self._interval()}"

    def _caption(self) -> str:
        fixed = ", ".join(f"{k} = {param_text(_exact_or(v, k), self.digits)}" for k, v in self.fixed.items())
        if self.geometry is not None:
            fixed += f", geometry: {geometry_text(self.geometry, self.digits)}"
        centered = ", centered" if self.center else ""
        return (f"crossings E_A = E_RR: f = {self.f}{centered}, over {self.over} in {self._interval()}, {fixed}, "
                f"diagonal = {self.diagonal} ({self.digits} digits, {'float64 ' if self.fast else ''}scan of "
                f"{len(self.scan_x)} points)")

    def _rows(self):
        return [[mpmath.nstr(r, self.digits), "E_A < E_RR below" if d > 0 else "E_A < E_RR above"]
                for r, d in zip(self.roots, self.directions)]

    def __str__(self) -> str:
        note = f"\nnote: {self.finite_size_note}" if self.finite_size_note else ""
        if not self.roots:
            return self._caption() + "\n" + self.summary() + note
        return self._caption() + "\n" + text_table([self.over, "side"], self._rows(), left=(1,)) + note

    def __repr__(self) -> str:
        return f"<CrossingsResult over={self.over!r} {len(self.roots)} root(s)>"

    def _repr_html_(self) -> str:
        if not self.roots:
            return f"<p>{self._caption()}<br>{self.summary()}</p>"
        return html_table([self.over, "side"], self._rows(), self._caption())

    def _over_tex(self) -> str:
        """The varying parameter in math mode (``cos_muwk`` is ``\\cos(\\mu, w_K)``; tied names joined by ``=``)."""
        return " = ".join(_TEX.get(k, k if len(k) == 1 and k.isalpha() else math_text(k))
                          for k in str(self.over).split("="))

    def _summary_tex(self) -> str:
        """:meth:`summary` as text with inline math (pdflatex and MathJax)."""
        text = latex_escape(self.summary())
        for err in (r"E\_A - E\_RR", r"E\_A > E\_RR", r"E\_A < E\_RR"):
            text = text.replace(err, "$" + err.replace(r"\_RR", "_{RR}").replace(r"\_A", "_A") + "$")
        return text

    def latex(self) -> str:
        r"""The roots as a LaTeX ``tabular`` (inputs in a comment line above); a sentence when there is none.

        >>> from fractions import Fraction as F
        >>> r = CrossingsResult(f="tanh", expr="tanh(t)", over="c", between=(F(1, 10), F(2)), fixed={"gamma": F(1)},
        ...                     diagonal="zero", digits=6, roots=(mpmath.mpf("0.5"),),
        ...                     brackets=((mpmath.mpf("0.4999995"), mpmath.mpf("0.5000005")),), directions=(1,),
        ...                     scan_x=(0.1, 1.0, 2.0), scan_sign=(-1, 1, 1))
        >>> print(r.latex(), end="")
        % crossings E_A = E_RR: f = tanh, over c in [0.1, 2], gamma = 1, diagonal = zero (6 digits, scan of 3 points)
        \begin{tabular}{rr}
        \hline
        $c$ & side \\
        \hline
        0.5 & $E_A < E_{RR}$ below \\
        \hline
        \end{tabular}
        """
        if not self.roots:
            return "% " + self._caption() + "\n" + self._summary_tex() + "\n"
        rows = []
        for r in self._rows():  # a root of many digits: 40 digits a line
            lines = digit_lines(r[0]) if self.digits > 40 else [r[0]]
            rows += [[line, r[1].replace("E_A < E_RR", "$E_A < E_{RR}$") if k == 0 else ""]
                     for k, line in enumerate(lines)]
        return latex_tabular([f"${self._over_tex()}$", "side"], rows, self._caption(), raw=(1,))

    def _repr_latex_(self) -> str:
        if not self.roots:
            return self._summary_tex()
        return latex_array([self._over_tex(), r"\text{side}"],
                           [[r[0], r[1].replace("E_A < E_RR ", r"E_A < E_{RR}\ \text{") + "}"] for r in self._rows()])
