r"""The result objects of the paper's model: :class:`LimitResult` (``symrmt.limit``) and
:class:`SimulationResult` (``symrmt.simulate``), values that carry their inputs.

Both follow the table protocol of :class:`symrmt.table.TableResult` (text, HTML, LaTeX, NumPy, pandas,
xarray, ``.plot()``).  NumPy, mpmath and pandas are imported when a method needs them.
"""

from __future__ import annotations

import html

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from symrmt.comparison import Comparison, Extrapolation
from symrmt.errors import ParameterError
from symrmt.plotting import long_frame, need_xarray, plot_limit, plot_simulation
from symrmt.table import (
    LATEX_WIDE_DIGITS, TableResult, decimal_text, digit_lines, float_array, geometry_text, html_table, is_long,
    latex_array, latex_tabular, mp_text, need_pandas, param_column, param_text, se_text, text_table,
)

__all__ = ["LimitResult", "SimulationResult", "Comparison", "Extrapolation"]


# ---------------------------------------------------------------------------
# limits
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class LimitResult(TableResult):
    r"""Certified large-``n`` limits of ``E_A(gamma)`` and ``E_RR(gamma)`` (from ``symrmt.limit``).

    Attributes
    ----------
    f, expr : str
        The nonlinearity's name (a preset or the text given) and its expression.
    center : bool
        Whether ``a_0`` was subtracted.
    c : Fraction
        ``p/n`` as an exact rational (as the theory used it).
    gamma_exact : tuple of Fraction
        The ``gamma`` values, exactly as used, in the order given.
    geometry : Geometry or LowRankGeometry
    diagonal : str
    digits : int
        Significant digits certified for every value.
    attention_mp, ridge_mp : tuple of mpf
        ``E_A`` and ``E_RR``, certified to ``digits`` digits.
    seconds : float
        Wall time of the computation.
    recompute : callable or None
        ``recompute(gammas, digits)``: ``(E_A, E_RR)`` of the same model at other ``gamma`` values (set by the
        model; a plot draws the limit on a fine grid with it).
    error : str
        ``"train"``: the interpolation errors ``E_A, E_RR``; ``"test"``: the fresh-sample errors ``T_A, T_RR``
        (``symrmt.limit(..., error="test")``), in the same fields.
    finite_size_note : str or None
        Set when the term the limit linearizes is not small at ``p = 512``
        (:func:`symrmt.models.attention.finite_size.finite_size_note`); ``str()`` shows it.
    balls : dict or None
        With ``prove=True``: ``{"attention": [...], "ridge": [...], "branch": {...}}``, each value a
        ``flint.arb`` ball proved to contain the limit (:mod:`symrmt.models.attention.prove`); else ``None``.
    n : int or None
        With ``limit(..., n=N)``: ``attention_mp`` is the finite-n prediction at ``N`` tokens
        (:mod:`symrmt.models.attention.finite_n`) and ``ridge_mp`` the ridge limit; else ``None``.

    Examples
    --------
    >>> import symrmt
    >>> r = symrmt.limit("tanh", "1/2", [0.1, 1], symrmt.Geometry(snr=1), digits=20)
    >>> print(r)
    limits: f = tanh, c = 0.5, snr = 1, diagonal = zero (20 certified digits)
    gamma         E_A (attention)            E_RR (ridge)
    -----  ----------------------  ----------------------
      0.1  0.34436479589541984574  0.26029028467163189486
        1  0.43181956562021129553  0.38861179203050743301
    >>> r.attention.dtype, r.gamma.tolist()
    (dtype('float64'), [0.1, 1.0])
    """

    f: str
    expr: str
    center: bool
    c: Fraction
    gamma_exact: tuple
    geometry: object
    diagonal: str
    digits: int
    attention_mp: tuple
    ridge_mp: tuple
    seconds: float = 0.0
    balls: dict | None = None
    finite_size_note: str | None = None
    recompute: object = field(default=None, repr=False)
    error: str = "train"
    n: int | None = None

    columns = ("gamma", "attention", "ridge")

    # -- arrays -------------------------------------------------------------------
    @property
    def gamma(self):
        """``gamma`` as a float64 array.

        >>> import mpmath, symrmt
        >>> from fractions import Fraction as F
        >>> r = LimitResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1, 10), F(1)),
        ...                 geometry=symrmt.Geometry(), diagonal="zero", digits=5,
        ...                 attention_mp=(mpmath.mpf("0.25"), mpmath.mpf(0.5)), ridge_mp=(mpmath.mpf(1) / 3, mpmath.mpf(0.75)))
        >>> r.gamma.tolist()
        [0.1, 1.0]
        """
        return float_array(self.gamma_exact)

    @property
    def attention(self):
        """``E_A(gamma)`` as a float64 array (``attention_mp`` holds every certified digit).

        >>> import mpmath, symrmt
        >>> from fractions import Fraction as F
        >>> r = LimitResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1, 10), F(1)),
        ...                 geometry=symrmt.Geometry(), diagonal="zero", digits=5,
        ...                 attention_mp=(mpmath.mpf("0.25"), mpmath.mpf(0.5)), ridge_mp=(mpmath.mpf(1) / 3, mpmath.mpf(0.75)))
        >>> r.attention.tolist()
        [0.25, 0.5]
        """
        return float_array(self.attention_mp)

    @property
    def ridge(self):
        """``E_RR(gamma)`` as a float64 array.

        >>> import mpmath, symrmt
        >>> from fractions import Fraction as F
        >>> r = LimitResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1, 10), F(1)),
        ...                 geometry=symrmt.Geometry(), diagonal="zero", digits=5,
        ...                 attention_mp=(mpmath.mpf("0.25"), mpmath.mpf(0.5)), ridge_mp=(mpmath.mpf(1) / 3, mpmath.mpf(0.75)))
        >>> r.ridge.tolist()
        [0.3333333333333333, 0.75]
        """
        return float_array(self.ridge_mp)

    def to_numpy(self):
        """A float64 array of shape ``(len(gamma), 3)``: columns :attr:`columns` = gamma, attention, ridge.

        >>> import mpmath, symrmt
        >>> from fractions import Fraction as F
        >>> r = LimitResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1, 10), F(1)),
        ...                 geometry=symrmt.Geometry(snr=1), diagonal="zero", digits=5,
        ...                 attention_mp=(mpmath.mpf("0.25"), mpmath.mpf(0.5)), ridge_mp=(mpmath.mpf(1) / 3, mpmath.mpf(0.75)))
        >>> r.to_numpy().round(4).tolist()
        [[0.1, 0.25, 0.3333], [1.0, 0.5, 0.75]]
        """
        return np.column_stack([self.gamma, self.attention, self.ridge])

    def to_pandas(self, long: bool = False):
        """A DataFrame with columns ``gamma, attention, ridge`` (float64) and the inputs in ``.attrs``;
        ``long=True``: columns ``gamma, error, value`` (one row per gamma and error).

        >>> import mpmath, symrmt
        >>> from fractions import Fraction as F
        >>> r = LimitResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1, 10), F(1)),
        ...                 geometry=symrmt.Geometry(snr=1), diagonal="zero", digits=5,
        ...                 attention_mp=(mpmath.mpf("0.25"), mpmath.mpf(0.5)), ridge_mp=(mpmath.mpf(1) / 3, mpmath.mpf(0.75)))
        >>> df = r.to_pandas()
        >>> list(df.columns), df.attrs["c"], r.to_pandas(long=True).shape
        (['gamma', 'attention', 'ridge'], '1/2', (4, 3))
        """
        pd = need_pandas()
        df = pd.DataFrame(self.to_numpy(), columns=list(self.columns))
        df.attrs.update(self.params())
        if long:
            return long_frame(df, ["gamma"], ["attention", "ridge"])
        return df

    def to_xarray(self):
        """An ``xarray.Dataset``: ``attention`` and ``ridge`` over ``gamma`` (float64), the inputs in ``attrs``.

        Takes nothing; raises :class:`~symrmt.errors.ExtraUnavailable` without xarray.

        >>> import mpmath, symrmt
        >>> from fractions import Fraction as F
        >>> r = LimitResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1, 10), F(1)),
        ...                 geometry=symrmt.Geometry(snr=1), diagonal="zero", digits=5,
        ...                 attention_mp=(mpmath.mpf("0.25"), mpmath.mpf(0.5)), ridge_mp=(mpmath.mpf(1) / 3, mpmath.mpf(0.75)))
        >>> ds = r.to_xarray()
        >>> ds["attention"].values.tolist(), ds["gamma"].values.tolist(), ds.attrs["c"]
        ([0.25, 0.5], [0.1, 1.0], '1/2')
        """
        xr = need_xarray()
        attrs = {k: str(v) for k, v in self.params().items()}
        return xr.Dataset({"attention": ("gamma", self.attention), "ridge": ("gamma", self.ridge)},
                          coords={"gamma": self.gamma}, attrs=attrs)

    def plot(self, ax=None, log=None):
        """``E_A`` and ``E_RR`` against ``gamma`` (matplotlib; :func:`~symrmt.plotting.plot_limit`): takes optional
        axes and ``log``, returns the axes (here of a ``matplotlib.figure.Figure``, nothing rendered).

        >>> import mpmath, symrmt
        >>> from fractions import Fraction as F
        >>> r = LimitResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1, 10), F(1)),
        ...                 geometry=symrmt.Geometry(snr=1), diagonal="zero", digits=5,
        ...                 attention_mp=(mpmath.mpf("0.25"), mpmath.mpf(0.5)), ridge_mp=(mpmath.mpf(1) / 3, mpmath.mpf(0.75)))
        >>> from matplotlib.figure import Figure
        >>> [line.get_ydata().tolist() for line in r.plot(ax=Figure().add_subplot()).get_lines()]
        [[0.25, 0.5], [0.3333333333333333, 0.75]]
        """
        return plot_limit(self, ax=ax, log=log)

    def params(self, exact: bool = False) -> dict:
        """The inputs as plain Python values: exact numbers as strings (``"1/2"``), except a long one (an
        irrational inner product, rounded to 1000+ digits) as a decimal at :attr:`digits`;
        ``exact=True`` gives every number exactly.

        >>> import mpmath, symrmt
        >>> from fractions import Fraction as F
        >>> r = LimitResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1, 10), F(1)),
        ...                 geometry=symrmt.Geometry(snr=1), diagonal="zero", digits=5,
        ...                 attention_mp=(mpmath.mpf("0.25"), mpmath.mpf(0.5)), ridge_mp=(mpmath.mpf(1) / 3, mpmath.mpf(0.75)))
        >>> p = r.params()
        >>> p["c"], p["geometry"]["snr"], p["digits"]
        ('1/2', '1', 5)
        """

        def t(v):
            return str(v) if exact or not is_long(v) else decimal_text(v, self.digits)

        geo = self.geometry
        geo = ({k: t(v) for k, v in geo.as_dict().items()} if not hasattr(geo, "gram_entries")  # rank one
               else {"r": geo.r, "alpha": t(geo.alpha), "gram": [[t(x) for x in row] for row in geo.gram()]})
        out = {"f": self.f, "expr": self.expr, "center": self.center, "c": t(self.c), "geometry": geo,
               "diagonal": self.diagonal, "digits": self.digits}
        if self.n is not None:
            out["n"] = self.n
        return out

    # -- printing -----------------------------------------------------------------
    def _caption(self) -> str:
        centered = ", centered" if self.center else ""
        head = "limits" if self.n is None else f"finite-n prediction at n = {self.n} (E_RR: its limit)"
        return (f"{head}: f = {self.f}{centered}, c = {param_text(self.c, self.digits)}, "
                f"{geometry_text(self.geometry, self.digits)}, diagonal = {self.diagonal} "
                f"({self.digits} {'certified digits' if self.n is None else 'digits of the prediction'})")

    def _rows(self):
        return [[g, mp_text(a, self.digits), mp_text(r, self.digits)]
                for g, a, r in zip(param_column(self.gamma_exact, self.digits), self.attention_mp, self.ridge_mp)]

    def __str__(self) -> str:
        note = f"\nnote: {self.finite_size_note}" if self.finite_size_note else ""
        heads = ["T_A (attention, test)", "T_RR (ridge, test)"] if self.error == "test" else ["E_A (attention)",
                                                                                               "E_RR (ridge)"]
        return self._caption() + "\n" + text_table(["gamma"] + heads, self._rows()) + note

    def __repr__(self) -> str:
        return (f"<LimitResult f={self.f!r} c={param_text(self.c, self.digits)} {len(self.gamma_exact)} gamma, "
                f"{self.digits} digits>")

    def _repr_html_(self) -> str:
        note = f"<p>note: {html.escape(self.finite_size_note)}</p>" if self.finite_size_note else ""
        heads = ["T_A (attention, test)", "T_RR (ridge, test)"] if self.error == "test" else ["E_A (attention)",
                                                                                               "E_RR (ridge)"]
        return html_table(["γ"] + heads, self._rows(), self._caption()) + note

    def latex(self) -> str:
        r"""The values as a LaTeX ``tabular`` (inputs in a comment line above it) that fits the default
        ``article`` page: above :data:`LATEX_WIDE_DIGITS` digits one value per row, its digits grouped by
        five in a paragraph column (so that 100 digits wrap instead of running off the page).

        >>> import mpmath, symrmt
        >>> from fractions import Fraction as F
        >>> r = LimitResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1, 10), F(1)),
        ...                 geometry=symrmt.Geometry(snr=1), diagonal="zero", digits=5,
        ...                 attention_mp=(mpmath.mpf("0.25"), mpmath.mpf(0.5)), ridge_mp=(mpmath.mpf(1) / 3, mpmath.mpf(0.75)))
        >>> print(r.latex(), end="")
        % limits: f = tanh, c = 0.5, snr = 1, diagonal = zero (5 certified digits)
        \begin{tabular}{rrr}
        \hline
        $\gamma$ & $E_A(\gamma)$ & $E_{RR}(\gamma)$ \\
        \hline
        0.1 & 0.25 & 0.33333 \\
        1 & 0.5 & 0.75 \\
        \hline
        \end{tabular}
        """
        if self.digits <= LATEX_WIDE_DIGITS:
            heads = ([r"$T_A(\gamma)$", r"$T_{RR}(\gamma)$"] if self.error == "test"
                     else [r"$E_A(\gamma)$", r"$E_{RR}(\gamma)$"])
            return latex_tabular([r"$\gamma$"] + heads, self._rows(), self._caption())
        rows = []
        for g, a, r in self._rows():
            names = ("$T_A$", "$T_{RR}$") if self.error == "test" else ("$E_A$", "$E_{RR}$")
            for label, value in zip(names, (a, r)):
                lines = digit_lines(value)  # 40 digits a line
                rows += [[g if label == "$E_A$" and k == 0 else "", label if k == 0 else "", line]
                         for k, line in enumerate(lines)]
        return latex_tabular([r"$\gamma$", "error", "value"], rows, self._caption(), raw=(1,), cols="rll")

    def _repr_latex_(self) -> str:
        heads = [r"T_A(\gamma)", r"T_{RR}(\gamma)"] if self.error == "test" else [r"E_A(\gamma)", r"E_{RR}(\gamma)"]
        return latex_array([r"\gamma"] + heads, self._rows())


def _geometry_key(geometry) -> tuple:
    """What defines a geometry (its Gram matrix and ``alpha``; a rank-one ``Geometry`` has ``alpha = 1``),
    so that two results' geometries compare as the model's ``as_low_rank`` compares them (``None``: the
    empty Gram of ``mu = 0``, ``W = I``), without importing the model."""
    if geometry is None:
        return (((0,),), 1)
    return tuple(tuple(row) for row in geometry.gram()), getattr(geometry, "alpha", 1)


# ---------------------------------------------------------------------------
# simulations
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SimulationResult(TableResult):
    """Monte-Carlo estimates of ``E_A(gamma)`` and ``E_RR(gamma)`` at finite ``n`` (from ``symrmt.simulate``).

    Attributes
    ----------
    f, expr, center, c, gamma_exact, geometry, diagonal
        The inputs, as in :class:`LimitResult` (``expr`` is ``repr(f)`` for a plain callable).
    n, p, trials, seed : int
    noise : str
    attention_trials, ridge_trials : ndarray
        One row per trial: shape ``(trials, len(gamma))``.
    seconds : float
    error : str
        ``"train"`` or ``"test"`` (the fresh-sample errors, ``symrmt.simulate(..., error="test")``).
    resimulate : callable or None
        ``resimulate(n)``: the same simulation at ``n`` tokens (:meth:`at_size`), set by the model
        that made this result (``symrmt.simulate``; ``None`` for ``f`` given as a Python callable).
        This module never imports a model: the model hands its own re-run to the result.

    ``.attention`` and ``.ridge`` are the means over the trials, ``.attention_se`` and
    ``.ridge_se`` their standard errors ``std(ddof=1)/sqrt(trials)``.

    Examples
    --------
    A result made by hand from two trials at one ``gamma`` (``symrmt.simulate`` makes them from
    the model):

    >>> import numpy as np
    >>> from fractions import Fraction
    >>> r = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=Fraction(1, 2), gamma_exact=(Fraction(1),),
    ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
    ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.6]]))
    >>> r.gamma.tolist(), r.attention.tolist(), r.attention_se.round(6).tolist()
    ([1.0], [0.6], [0.1])
    >>> r.to_numpy().shape
    (1, 5)
    """

    f: str
    expr: str
    center: bool
    c: Fraction
    gamma_exact: tuple
    geometry: object
    diagonal: str
    n: int
    p: int
    trials: int
    seed: int
    noise: str
    attention_trials: object
    ridge_trials: object
    seconds: float = 0.0
    resimulate: object = field(default=None, repr=False)
    error: str = "train"

    columns = ("gamma", "attention", "attention_se", "ridge", "ridge_se")

    @property
    def gamma(self):
        """The ``gamma`` values as a float64 array (``gamma_exact`` holds them exactly).

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.8]]))
        >>> s.gamma.tolist()
        [1.0]
        """
        return float_array(self.gamma_exact)

    @property
    def attention(self):
        """Mean of ``E_A`` over the trials.

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.8]]))
        >>> s.attention.tolist()
        [0.6]
        """
        return self.attention_trials.mean(axis=0)

    @property
    def ridge(self):
        """Mean of ``E_RR`` over the trials.

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.8]]))
        >>> s.ridge.round(12).tolist()
        [0.6]
        """
        return self.ridge_trials.mean(axis=0)

    @property
    def attention_se(self):
        """Standard error of :attr:`attention`: ``std(ddof=1)/sqrt(trials)`` over the trials.

        Two trials 0.5, 0.7: ``std(ddof=1) = 0.1 sqrt(2)``, over ``sqrt(2)``:

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.8]]))
        >>> s.attention_se.round(12).tolist()
        [0.1]
        """
        return self.attention_trials.std(axis=0, ddof=1) / self.trials ** 0.5

    @property
    def ridge_se(self):
        """Standard error of :attr:`ridge`: ``std(ddof=1)/sqrt(trials)`` over the trials.

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.8]]))
        >>> s.ridge_se.round(12).tolist()
        [0.2]
        """
        return self.ridge_trials.std(axis=0, ddof=1) / self.trials ** 0.5

    def to_numpy(self):
        """Float64 array ``(len(gamma), 5)``: gamma, attention, attention_se, ridge, ridge_se.

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.6]]))
        >>> s.to_numpy().round(6).tolist()
        [[1.0, 0.6, 0.1, 0.5, 0.1]]
        """
        return np.column_stack([self.gamma, self.attention, self.attention_se, self.ridge, self.ridge_se])

    def _attrs(self) -> dict:
        return {"f": self.f, "expr": self.expr, "c": str(self.c), "n": self.n, "p": self.p,
                "trials": self.trials, "seed": self.seed, "noise": self.noise, "diagonal": self.diagonal}

    def to_pandas(self, long: bool = False):
        """A DataFrame with :attr:`columns` (one row per gamma); ``long=True``: ``gamma, error, value, se``.

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.6]]))
        >>> s.to_pandas().attrs["n"], s.to_pandas(long=True)[["error", "value", "se"]].round(6).values.tolist()
        (64, [['attention', 0.6, 0.1], ['ridge', 0.5, 0.1]])
        """
        pd = need_pandas()
        df = pd.DataFrame(self.to_numpy(), columns=list(self.columns))
        df.attrs.update(self._attrs())
        if long:
            out = long_frame(df, ["gamma"], ["attention", "ridge"])
            out["se"] = list(df["attention_se"]) + list(df["ridge_se"])
            return out
        return df

    def to_xarray(self):
        """An ``xarray.Dataset``: means and standard errors over ``gamma``, and every trial over
        ``(trial, gamma)`` (``attention_trials``, ``ridge_trials``).  Raises
        :class:`~symrmt.errors.ExtraUnavailable` without xarray.  Two trials ``0.5, 0.7``: mean ``0.6``, se
        ``0.2/2 = 0.1``:

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.6]]))
        >>> ds = s.to_xarray()
        >>> ds["attention"].values.round(12).tolist(), ds["attention_se"].values.round(12).tolist(), ds.sizes["trial"]
        ([0.6], [0.1], 2)
        """
        xr = need_xarray()
        g = ("gamma",)
        return xr.Dataset({"attention": (g, self.attention), "attention_se": (g, self.attention_se),
                           "ridge": (g, self.ridge), "ridge_se": (g, self.ridge_se),
                           "attention_trials": (("trial", "gamma"), self.attention_trials),
                           "ridge_trials": (("trial", "gamma"), self.ridge_trials)},
                          coords={"gamma": self.gamma}, attrs={k: str(v) for k, v in self._attrs().items()})

    def plot(self, ax=None, limit=None, k: float = 1.0, log=None, fine: int = 61):
        """The means with error bars of ``k`` standard errors, over the curves of ``limit`` (a
        :class:`LimitResult`) when given, recomputed on ``fine`` values of ``gamma`` spanning the
        simulated ones so that the curves are smooth (``fine=0``: through ``limit``'s own points), in
        the colours of the points (matplotlib; :func:`~symrmt.plotting.plot_simulation`); returns the axes.
        A bar spans ``mean -+ k se`` (``0.6 -+ 0.1``; axes of a ``matplotlib.figure.Figure``, nothing rendered):

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.6]]))
        >>> from matplotlib.figure import Figure
        >>> ax = s.plot(ax=Figure().add_subplot())
        >>> np.round(ax.containers[0][2][0].get_segments()[0], 12).tolist()
        [[1.0, 0.5], [1.0, 0.7]]
        """
        return plot_simulation(self, ax=ax, limit=limit, k=k, log=log, fine=fine)

    def compare(self, theory: LimitResult, sizes=None, runs=()) -> Comparison:
        """Gaps ``(simulation mean - limit) / se`` against a :class:`LimitResult` of the same model.

        ``sizes`` (a list of ``n``) simulates the same point at those sizes too (same trials, seed,
        noise), and ``runs`` adds simulations of the same model already made at other ``n``; with two
        sizes or more the means are extrapolated in ``1/n`` (:class:`Extrapolation`) and the
        comparison reports the extrapolated gap, and says where a gap at ``n`` is a finite-size
        effect (above 3 se at ``n``, within 3 se once extrapolated).

        Raises :class:`~symrmt.models.attention.params.ParameterError` when the two were computed for different
        inputs (``f``, ``c``, ``gamma``, geometry, diagonal, or a training error against a test error).

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.6]]))
        >>> import dataclasses
        >>> other = dataclasses.replace(s, c=F(1, 4))
        >>> limit = LimitResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 4), gamma_exact=(F(1),), geometry=None,
        ...                     diagonal="zero", digits=5, attention_mp=(0.6,), ridge_mp=(0.5,))
        >>> other.compare(limit).max_gap
        0.0
        >>> s.compare(limit)
        Traceback (most recent call last):
        ...
        symrmt.errors.ParameterError: the simulation and the limit are for different models: c: 1/2 vs 1/4
        """
        if not isinstance(theory, LimitResult):
            raise ParameterError(f"compare() takes the LimitResult of symrmt.limit, got {type(theory).__name__}")
        diffs = []
        if self.expr != theory.expr:
            diffs.append(f"f: {self.expr} vs {theory.expr}")
        if self.c != theory.c:
            diffs.append(f"c: {self.c} vs {theory.c}")
        if tuple(self.gamma_exact) != tuple(theory.gamma_exact):
            diffs.append("gamma values differ")
        if _geometry_key(self.geometry) != _geometry_key(theory.geometry):
            diffs.append(f"geometry: {geometry_text(self.geometry)} vs {geometry_text(theory.geometry)}")
        if self.diagonal != theory.diagonal:
            diffs.append(f"diagonal: {self.diagonal} vs {theory.diagonal}")
        if self.error != theory.error:
            diffs.append(f"error: {self.error} vs {theory.error} (training against test error)")
        if diffs:
            raise ParameterError("the simulation and the limit are for different models: " + "; ".join(diffs))
        sims = [self]
        for run in runs:
            if not isinstance(run, SimulationResult):
                raise ParameterError(f"runs= takes SimulationResults, got {type(run).__name__}")
            run.compare(theory)  # the same model, or a ParameterError saying what differs
            sims.append(run)
        for n in sizes or ():
            sims.append(self.at_size(n))
        if len({s.n for s in sims}) != len(sims):
            raise ParameterError(f"the sizes must differ: n = {', '.join(str(s.n) for s in sims)}")
        extra = Extrapolation.fit(sims) if len(sims) > 1 else None
        return Comparison(self, theory, extra)

    def at_size(self, n: int) -> SimulationResult:
        """The same simulation (model, gammas, trials, seed, noise) at ``n`` tokens; raises
        :class:`~symrmt.errors.ParameterError` for a result that cannot be re-run (``f`` a Python callable).

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.6]]))
        >>> s.at_size(128)
        Traceback (most recent call last):
        ...
        symrmt.errors.ParameterError: simulating at another n needs f as text (a preset or an expression), not a Python callable; simulate the other sizes yourself and pass them as runs=
        """
        if self.expr.startswith("<") or self.resimulate is None:
            raise ParameterError("simulating at another n needs f as text (a preset or an expression), not a "
                                 "Python callable; simulate the other sizes yourself and pass them as runs=")
        return self.resimulate(n)

    def _caption(self) -> str:
        return (f"simulation: f = {self.f}, n = {self.n}, p = {self.p}, c = {param_text(self.c)}, "
                f"{geometry_text(self.geometry)}, diagonal = {self.diagonal}, noise = {self.noise}, "
                f"{self.trials} trials, seed {self.seed}")

    def _rows(self):
        a, ase, r, rse = self.attention, self.attention_se, self.ridge, self.ridge_se
        return [[g, se_text(a[i], ase[i]), se_text(r[i], rse[i])] for i, g in enumerate(param_column(self.gamma_exact))]

    def __str__(self) -> str:
        heads = ["T_A (test, mean ± se)", "T_RR (test, mean ± se)"] if self.error == "test" else ["E_A (mean ± se)",
                                                                                                   "E_RR (mean ± se)"]
        return self._caption() + "\n" + text_table(["gamma"] + heads, self._rows())

    def __repr__(self) -> str:
        return f"<SimulationResult f={self.f!r} n={self.n} p={self.p} {self.trials} trials>"

    def _repr_html_(self) -> str:
        heads = ["T_A (test, mean ± se)", "T_RR (test, mean ± se)"] if self.error == "test" else ["E_A (mean ± se)",
                                                                                                   "E_RR (mean ± se)"]
        return html_table(["γ"] + heads, self._rows(), self._caption())

    def _tex_rows(self):
        a, ase, r, rse = self.attention, self.attention_se, self.ridge, self.ridge_se
        return [[g, f"{a[i]:.6f} \\pm {ase[i]:.1e}", f"{r[i]:.6f} \\pm {rse[i]:.1e}"]
                for i, g in enumerate(param_column(self.gamma_exact))]

    def latex(self) -> str:
        r"""A LaTeX ``tabular`` of the means with their standard errors, one row per ``gamma``, with a caption.

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> s = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                      geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                      attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.6]]))
        >>> print(s.latex(), end="")
        % simulation: f = tanh, n = 64, p = 32, c = 0.5, mu = 0, W = I, diagonal = zero, noise = gaussian, 2 trials, seed 0
        \begin{tabular}{rrr}
        \hline
        $\gamma$ & $E_A$ (mean $\pm$ se) & $E_{RR}$ (mean $\pm$ se) \\
        \hline
        1 & $0.600000 \pm 1.0e-01$ & $0.500000 \pm 1.0e-01$ \\
        \hline
        \end{tabular}
        """
        rows = [[g, f"${a}$", f"${r}$"] for g, a, r in self._tex_rows()]
        heads = ([r"$T_A$ (test, mean $\pm$ se)", r"$T_{RR}$ (test, mean $\pm$ se)"] if self.error == "test"
                 else [r"$E_A$ (mean $\pm$ se)", r"$E_{RR}$ (mean $\pm$ se)"])
        return latex_tabular([r"$\gamma$"] + heads, rows,
                             self._caption(), raw=(1, 2))

    def _repr_latex_(self) -> str:
        heads = [r"T_A", r"T_{RR}"] if self.error == "test" else [r"E_A", r"E_{RR}"]
        return latex_array([r"\gamma"] + heads, self._tex_rows())
