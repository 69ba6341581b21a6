r"""Result objects of the public API (:mod:`symrmt.models.attention.api`): values that carry their inputs.

* :class:`LimitResult` -- ``symrmt.limit``: certified limits of ``E_A`` and ``E_RR``;
* :class:`SimulationResult` -- ``symrmt.simulate``: Monte-Carlo means and standard errors;
* :class:`Comparison` -- ``SimulationResult.compare(limit)``: gaps in standard errors;
* :class:`SweepResult` and :class:`CrossingsResult` live in :mod:`symrmt.models.attention.sweeps`.

Every result has ``.gamma``, ``.attention`` and ``.ridge`` (float64 NumPy arrays;
the certified values, at their full precision, are in ``.attention_mp`` and
``.ridge_mp``), ``.to_numpy()``, ``.to_pandas()`` (one row per point, the default of every
result; ``long=True``: one row per point and error) and ``.to_xarray()`` (pandas and xarray
are the optional extra ``symrmt[results]``), ``.plot()`` (matplotlib, :mod:`symrmt.plotting`),
a text table as ``str()`` (at the certified digits), an HTML table for notebooks and
``.latex()`` (a ``tabular`` that fits the default ``article`` page; ``_repr_latex_`` gives the
same numbers as a MathJax ``array``).

This module imports only the standard library at import time; NumPy, mpmath and
pandas are imported when a method needs them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["LimitResult", "SimulationResult", "Comparison", "Extrapolation", "text_table", "html_table", "latex_tabular",
           "latex_array", "latex_escape", "math_text", "digit_lines", "need_pandas"]


# ---------------------------------------------------------------------------
# table helpers shared by every result
# ---------------------------------------------------------------------------
def text_table(header, rows, left=()) -> str:
    """Columns right-aligned (numbers), except the indices in ``left`` (text).

    >>> print(text_table(["x", "y"], [[1, "2.50"], [10, "3"]]))
     x     y
    --  ----
     1  2.50
    10     3
    """
    cols = [list(map(str, header)), *[list(map(str, r)) for r in rows]]
    widths = [max(len(r[i]) for r in cols) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in cols]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def html_table(header, rows, caption: str = "") -> str:
    """An HTML table (every cell escaped)."""
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "#": r"\#", "$": r"\$", "%": r"\%",
                  "&": r"\&", "_": r"\_", "^": r"\^{}", "~": r"\~{}"}


def latex_escape(text: str) -> str:
    r"""Text for LaTeX's text mode (the ten special characters escaped).

    >>> latex_escape("Max(t, 0) - 1/sqrt(2*pi) & x_1")
    'Max(t, 0) - 1/sqrt(2*pi) \\& x\\_1'
    """
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


_MATH_SPECIAL = {"\\": r"\backslash ", "{": r"\{", "}": r"\}", "#": r"\#", "$": r"\$", "%": r"\%",
                 "&": r"\&", "_": r"\_", "^": r"\hat{\ }", "~": r"\sim ", "<": "<", ">": ">", "|": r"\vert "}


def math_text(text: str) -> str:
    r"""Text for math mode, in a form both pdflatex and MathJax render: runs of plain characters in
    ``\text{}``, each special character as its math-mode escape (MathJax does not read escapes
    inside ``\text``).

    >>> math_text("E_RR = m**2 & more")
    '\\text{E}\\_\\text{RR = m**2 }\\&\\text{ more}'
    """
    out, run = [], []
    for ch in str(text):
        if ch in _MATH_SPECIAL:
            if run:
                out.append(r"\text{" + "".join(run) + "}")
                run = []
            out.append(_MATH_SPECIAL[ch])
        else:
            run.append(ch)
    if run:
        out.append(r"\text{" + "".join(run) + "}")
    return "".join(out)


def latex_tabular(header, rows, caption: str = "", raw=(), cols: str | None = None) -> str:
    """A ``tabular``: header cells are LaTeX; body cells are escaped text, except the columns in ``raw``
    (LaTeX as given).  The caption goes in a comment line above; ``cols`` is the column spec (default
    right-aligned columns)."""
    cols = "r" * len(header) if cols is None else cols
    lines = []
    if caption:
        lines.append("% " + caption.replace("\n", " "))
    lines += [f"\\begin{{tabular}}{{{cols}}}", "\\hline", " & ".join(header) + r" \\", "\\hline"]
    lines += [" & ".join(str(c) if i in raw else latex_escape(c) for i, c in enumerate(r)) + r" \\" for r in rows]
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def latex_array(header, rows) -> str:
    """The same numbers as a math-mode ``array`` (what MathJax renders in a notebook)."""
    cols = "r" * len(header)
    body = " \\\\ ".join(" & ".join(str(c) for c in r) for r in rows)
    return f"$$\\begin{{array}}{{{cols}}} {' & '.join(header)} \\\\ \\hline {body} \\end{{array}}$$"


#: above this many digits a LimitResult's ``latex()`` lists one value per row, digits grouped by five
LATEX_WIDE_DIGITS = 20


def grouped_digits(text: str, group: int = 5) -> str:
    """A decimal with the digits after its point in groups (spaces: where a long value may break a line).

    >>> grouped_digits("0.34436479589541984574"), grouped_digits("1.2345678e-5")
    ('0.34436 47958 95419 84574', '1.23456 78e-5')
    """
    mant, e, exp = text.partition("e")
    head, dot, frac = mant.partition(".")
    if not dot:
        return text
    return head + "." + " ".join(frac[i:i + group] for i in range(0, len(frac), group)) + e + exp


def digit_lines(value: str, per_line: int = 40) -> list:
    """A long decimal as lines of ``per_line`` digits, grouped by five (for a table that must fit a page).

    >>> digit_lines("0.1234567890123", 10)
    ['0.12345 67890', '123']
    """
    parts = grouped_digits(value).split(" ")
    k = max(per_line // 5, 1)
    return [" ".join(parts[i:i + k]) for i in range(0, len(parts), k)]


def need_pandas():
    """``import pandas``, with the install hint when it is missing."""
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - pandas is installed where the tests run
        raise ImportError("to_pandas() needs pandas: pip install 'symrmt[results]'") from exc
    return pandas


def _nstr(x, digits: int) -> str:
    import mpmath

    return mpmath.nstr(x, digits)


#: an exact parameter whose text (``p/q``) is longer than this, or whose decimal has more than
#: :data:`FLOAT_SIG` significant digits, is "long" (an irrational input rounded to 1000+ digits, or
#: a binary mpf): it prints as a decimal at the digits of the result, its exact form on request
LONG_TEXT = 40
#: significant digits of a float's shortest repr: a terminating decimal with more is long
FLOAT_SIG = 17
#: a parameter decimal with more significant digits than this (up to :data:`FLOAT_SIG`) is a float's
#: repr (``np.logspace``): tables print it short, with :data:`SHORT_SIG` significant digits or as many
#: more as tell the values of its column apart
TYPED_SIG = 12
SHORT_SIG = 6


def _decimal_sig(x: Fraction):
    """Significant digits of the exact decimal of ``x``, or None when ``x`` is not a terminating decimal."""
    den = x.denominator
    a = b = 0
    while den % 2 == 0:
        den //= 2
        a += 1
    while den % 5 == 0:
        den //= 5
        b += 1
    if den != 1:
        return None
    k = max(a, b)
    if k > 4 * LONG_TEXT:  # a binary mpf of many bits: long, without building its digits
        return k
    digits = str(abs(x.numerator * 10**k // x.denominator)).rstrip("0")
    return max(len(digits), 1)


def is_long(x) -> bool:
    """Whether the exact value ``x`` is "long" (:data:`LONG_TEXT`): printed as a decimal at the digits."""
    if not isinstance(x, Fraction):
        return False
    sig = _decimal_sig(x)
    if sig is not None:
        return sig > FLOAT_SIG
    return len(str(x)) > LONG_TEXT


def decimal_text(x: Fraction, digits: int) -> str:
    """``x`` as a decimal rounded to ``digits`` significant digits (exact arithmetic, no float)."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = max(int(digits), 1)
        d = Decimal(x.numerator) / Decimal(x.denominator)
    text = f"{d:.{max(int(digits), 1)}g}"
    if "e" in text or "E" in text:
        mant, _, exp = text.lower().partition("e")
        text = f"{mant}e{int(exp)}"
    return text


def param_text(x, digits: int = 15, exact: bool = False) -> str:
    """A parameter for a table, a caption or JSON: as typed when short (``1/2``, ``0.1``, ``3``), a long
    value (an irrational inner product, a binary mpf) as a decimal at ``digits`` significant digits;
    ``exact=True`` gives the exact form always (``p/q``).

    >>> from fractions import Fraction as F
    >>> param_text(F(1, 2)), param_text(F(1, 3)), param_text(F(2**80 + 1, 2**80), 10)
    ('0.5', '1/3', '1.000000000')
    """
    if exact and isinstance(x, Fraction):
        return _fstr(x)
    if is_long(x):
        return decimal_text(x, digits)
    return _fstr(x)


def param_column(values, digits: int = 15) -> list:
    """:func:`param_text` of a table column, with a float's repr (more than :data:`TYPED_SIG` significant
    digits, as ``np.logspace`` makes) printed short: :data:`SHORT_SIG` significant digits, or as many more
    as keep the column's distinct values distinct.

    >>> param_column([Fraction("0.01778279410038923"), Fraction("0.1"), Fraction("0.31622776601683794")])
    ['0.0177828', '0.1', '0.316228']
    """
    values = list(values)
    floaty = {v for v in values if isinstance(v, Fraction) and not is_long(v)
              and (_decimal_sig(v) or 0) > TYPED_SIG}
    if not floaty:
        return [param_text(v, digits) for v in values]
    distinct = set(values)
    for sig in range(SHORT_SIG, FLOAT_SIG + 1):
        short = {v: f"{float(v):.{sig}g}" for v in floaty}
        texts = {short.get(v) or param_text(v, digits) for v in distinct}
        if len(texts) == len(distinct):
            break
    return [short.get(v) or param_text(v, digits) for v in values]


def _fstr(x) -> str:
    """An exact input as typed: ``1/2``, ``0.1``, ``3``."""
    if isinstance(x, Fraction):
        if x.denominator == 1:
            return str(x.numerator)
        # a terminating decimal reads better as a decimal
        den = x.denominator
        while den % 2 == 0:
            den //= 2
        while den % 5 == 0:
            den //= 5
        if den == 1:
            for s in (f"{float(x):.15g}", repr(float(x))):
                if Fraction(s) == x:
                    return s
        return str(x)
    return str(x)


def geometry_text(geometry, digits: int = 15) -> str:
    """One line describing a geometry (``W = I`` and ``mu = 0`` when it is trivial); a long entry (an
    irrational inner product) as a decimal at ``digits`` significant digits (:func:`param_text`)."""
    if geometry is None:
        return "mu = 0, W = I"
    if hasattr(geometry, "gram_entries"):
        return (f"rank r = {geometry.r}, alpha = {param_text(geometry.alpha, digits)}, "
                f"||mu||^2 = {param_text(geometry.snr, digits)}")
    parts = [f"{k} = {param_text(v, digits)}" for k, v in geometry.as_dict().items() if v != 0]
    return ", ".join(parts) if parts else "mu = 0, W = I"


def _gram_items(geometry):
    """``(name, value)`` of a rank-one geometry's Gram entries (none for a low-rank one)."""
    return list(geometry.as_dict().items()) if hasattr(geometry, "as_dict") else []


def _floats(values):
    import numpy as np

    return np.array([float(v) for v in values], dtype=np.float64)


# ---------------------------------------------------------------------------
# limits
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class LimitResult:
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
    balls : dict or None
        With ``prove=True``: ``{"attention": [...], "ridge": [...], "branch": {...}}``, each value a
        ``flint.arb`` ball proved to contain the limit (:mod:`symrmt.models.attention.prove`); else ``None``.

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

    columns = ("gamma", "attention", "ridge")

    # -- arrays -------------------------------------------------------------------
    @property
    def gamma(self):
        """``gamma`` as a float64 array."""
        return _floats(self.gamma_exact)

    @property
    def attention(self):
        """``E_A(gamma)`` as a float64 array (``attention_mp`` holds every certified digit)."""
        return _floats(self.attention_mp)

    @property
    def ridge(self):
        """``E_RR(gamma)`` as a float64 array."""
        return _floats(self.ridge_mp)

    def to_numpy(self):
        """A float64 array of shape ``(len(gamma), 3)``: columns :attr:`columns` = gamma, attention, ridge."""
        import numpy as np

        return np.column_stack([self.gamma, self.attention, self.ridge])

    def to_pandas(self, long: bool = False):
        """A DataFrame with columns ``gamma, attention, ridge`` (float64) and the inputs in ``.attrs``;
        ``long=True``: columns ``gamma, error, value`` (one row per gamma and error)."""
        pd = need_pandas()
        df = pd.DataFrame(self.to_numpy(), columns=list(self.columns))
        df.attrs.update(self.params())
        if long:
            from symrmt.plotting import long_frame

            return long_frame(df, ["gamma"], ["attention", "ridge"])
        return df

    def to_xarray(self):
        """An ``xarray.Dataset``: ``attention`` and ``ridge`` over ``gamma`` (float64), the inputs in ``attrs``."""
        from symrmt.plotting import need_xarray

        xr = need_xarray()
        attrs = {k: str(v) for k, v in self.params().items()}
        return xr.Dataset({"attention": ("gamma", self.attention), "ridge": ("gamma", self.ridge)},
                          coords={"gamma": self.gamma}, attrs=attrs)

    def plot(self, ax=None, log=None):
        """``E_A`` and ``E_RR`` against ``gamma`` (matplotlib); returns the axes."""
        from symrmt.plotting import plot_limit

        return plot_limit(self, ax=ax, log=log)

    def params(self, exact: bool = False) -> dict:
        """The inputs as plain Python values: exact numbers as strings (``"1/2"``), except a long one (an
        irrational inner product, rounded to 1000+ digits) as a decimal at :attr:`digits`;
        ``exact=True`` gives every number exactly."""
        from symrmt.models.attention.geometry import Geometry

        def t(v):
            return str(v) if exact or not is_long(v) else decimal_text(v, self.digits)

        geo = self.geometry
        geo = ({k: t(v) for k, v in geo.as_dict().items()} if isinstance(geo, Geometry)
               else {"r": geo.r, "alpha": t(geo.alpha), "gram": [[t(x) for x in row] for row in geo.gram()]})
        return {"f": self.f, "expr": self.expr, "center": self.center, "c": t(self.c), "geometry": geo,
                "diagonal": self.diagonal, "digits": self.digits}

    # -- printing -----------------------------------------------------------------
    def _caption(self) -> str:
        centered = ", centered" if self.center else ""
        return (f"limits: f = {self.f}{centered}, c = {param_text(self.c, self.digits)}, "
                f"{geometry_text(self.geometry, self.digits)}, diagonal = {self.diagonal} "
                f"({self.digits} certified digits)")

    def _rows(self):
        return [[g, _nstr(a, self.digits), _nstr(r, self.digits)]
                for g, a, r in zip(param_column(self.gamma_exact, self.digits), self.attention_mp, self.ridge_mp)]

    def __str__(self) -> str:
        return self._caption() + "\n" + text_table(["gamma", "E_A (attention)", "E_RR (ridge)"], self._rows())

    def __repr__(self) -> str:
        return (f"<LimitResult f={self.f!r} c={param_text(self.c, self.digits)} {len(self.gamma_exact)} gamma, "
                f"{self.digits} digits>")

    def _repr_html_(self) -> str:
        return html_table(["γ", "E_A (attention)", "E_RR (ridge)"], self._rows(), self._caption())

    def latex(self) -> str:
        """The values as a LaTeX ``tabular`` (inputs in a comment line above it) that fits the default
        ``article`` page: above :data:`LATEX_WIDE_DIGITS` digits one value per row, its digits grouped by
        five in a paragraph column (so that 100 digits wrap instead of running off the page)."""
        if self.digits <= LATEX_WIDE_DIGITS:
            return latex_tabular([r"$\gamma$", r"$E_A(\gamma)$", r"$E_{RR}(\gamma)$"], self._rows(), self._caption())
        rows = []
        for g, a, r in self._rows():
            for label, value in (("$E_A$", a), ("$E_{RR}$", r)):
                lines = digit_lines(value)  # 40 digits a line
                rows += [[g if label == "$E_A$" and k == 0 else "", label if k == 0 else "", line]
                         for k, line in enumerate(lines)]
        return latex_tabular([r"$\gamma$", "error", "value"], rows, self._caption(), raw=(1,), cols="rll")

    def _repr_latex_(self) -> str:
        return latex_array([r"\gamma", r"E_A(\gamma)", r"E_{RR}(\gamma)"], self._rows())


# ---------------------------------------------------------------------------
# simulations
# ---------------------------------------------------------------------------
def _se_str(mean: float, se: float) -> str:
    return f"{mean:.6f} ± {se:.1e}"


@dataclass(frozen=True, eq=False)
class SimulationResult:
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

    ``.attention`` and ``.ridge`` are the means over the trials, ``.attention_se`` and
    ``.ridge_se`` their standard errors ``std(ddof=1)/sqrt(trials)``.
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

    columns = ("gamma", "attention", "attention_se", "ridge", "ridge_se")

    @property
    def gamma(self):
        return _floats(self.gamma_exact)

    @property
    def attention(self):
        """Mean of ``E_A`` over the trials."""
        return self.attention_trials.mean(axis=0)

    @property
    def ridge(self):
        """Mean of ``E_RR`` over the trials."""
        return self.ridge_trials.mean(axis=0)

    @property
    def attention_se(self):
        return self.attention_trials.std(axis=0, ddof=1) / self.trials ** 0.5

    @property
    def ridge_se(self):
        return self.ridge_trials.std(axis=0, ddof=1) / self.trials ** 0.5

    def to_numpy(self):
        """Float64 array ``(len(gamma), 5)``: gamma, attention, attention_se, ridge, ridge_se."""
        import numpy as np

        return np.column_stack([self.gamma, self.attention, self.attention_se, self.ridge, self.ridge_se])

    def _attrs(self) -> dict:
        return {"f": self.f, "expr": self.expr, "c": str(self.c), "n": self.n, "p": self.p,
                "trials": self.trials, "seed": self.seed, "noise": self.noise, "diagonal": self.diagonal}

    def to_pandas(self, long: bool = False):
        """A DataFrame with :attr:`columns` (one row per gamma); ``long=True``: ``gamma, error, value, se``."""
        pd = need_pandas()
        df = pd.DataFrame(self.to_numpy(), columns=list(self.columns))
        df.attrs.update(self._attrs())
        if long:
            from symrmt.plotting import long_frame

            out = long_frame(df, ["gamma"], ["attention", "ridge"])
            out["se"] = list(df["attention_se"]) + list(df["ridge_se"])
            return out
        return df

    def to_xarray(self):
        """An ``xarray.Dataset``: means and standard errors over ``gamma``, and every trial over
        ``(trial, gamma)`` (``attention_trials``, ``ridge_trials``)."""
        from symrmt.plotting import need_xarray

        xr = need_xarray()
        g = ("gamma",)
        return xr.Dataset({"attention": (g, self.attention), "attention_se": (g, self.attention_se),
                           "ridge": (g, self.ridge), "ridge_se": (g, self.ridge_se),
                           "attention_trials": (("trial", "gamma"), self.attention_trials),
                           "ridge_trials": (("trial", "gamma"), self.ridge_trials)},
                          coords={"gamma": self.gamma}, attrs={k: str(v) for k, v in self._attrs().items()})

    def plot(self, ax=None, limit=None, k: float = 1.0, log=None):
        """The means with error bars of ``k`` standard errors, over the curves of ``limit`` (a
        :class:`LimitResult`) when given (matplotlib); returns the axes."""
        from symrmt.plotting import plot_simulation

        return plot_simulation(self, ax=ax, limit=limit, k=k, log=log)

    def compare(self, theory: LimitResult, sizes=None, runs=()) -> Comparison:
        """Gaps ``(simulation mean - limit) / se`` against a :class:`LimitResult` of the same model.

        ``sizes`` (a list of ``n``) simulates the same point at those sizes too (same trials, seed,
        noise), and ``runs`` adds simulations of the same model already made at other ``n``; with two
        sizes or more the means are extrapolated in ``1/n`` (:class:`Extrapolation`) and the
        comparison reports the extrapolated gap, and says where a gap at ``n`` is a finite-size
        effect (above 3 se at ``n``, within 3 se once extrapolated).

        Raises :class:`~symrmt.models.attention.params.ParameterError` when the two were computed for different
        inputs (``f``, ``c``, ``gamma``, geometry or diagonal).
        """
        from symrmt.errors import ParameterError
        from symrmt.models.attention.geometry import as_low_rank

        if not isinstance(theory, LimitResult):
            raise ParameterError(f"compare() takes the LimitResult of symrmt.limit, got {type(theory).__name__}")
        diffs = []
        if self.expr != theory.expr:
            diffs.append(f"f: {self.expr} vs {theory.expr}")
        if self.c != theory.c:
            diffs.append(f"c: {self.c} vs {theory.c}")
        if tuple(self.gamma_exact) != tuple(theory.gamma_exact):
            diffs.append("gamma values differ")
        if as_low_rank(self.geometry) != as_low_rank(theory.geometry):
            diffs.append(f"geometry: {geometry_text(self.geometry)} vs {geometry_text(theory.geometry)}")
        if self.diagonal != theory.diagonal:
            diffs.append(f"diagonal: {self.diagonal} vs {theory.diagonal}")
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
        """The same simulation (model, gammas, trials, seed, noise) at ``n`` tokens."""
        from symrmt.errors import ParameterError

        if self.expr.startswith("<"):
            raise ParameterError("simulating at another n needs f as text (a preset or an expression), not a "
                                 "Python callable; simulate the other sizes yourself and pass them as runs=")
        from symrmt.models.attention.api import simulate

        return simulate(self.f, self.c, list(self.gamma_exact), self.geometry, self.diagonal, self.center, n=n,
                        trials=self.trials, seed=self.seed, noise=self.noise, progress=False)

    def _caption(self) -> str:
        return (f"simulation: f = {self.f}, n = {self.n}, p = {self.p}, c = {param_text(self.c)}, "
                f"{geometry_text(self.geometry)}, diagonal = {self.diagonal}, noise = {self.noise}, "
                f"{self.trials} trials, seed {self.seed}")

    def _rows(self):
        a, ase, r, rse = self.attention, self.attention_se, self.ridge, self.ridge_se
        return [[g, _se_str(a[i], ase[i]), _se_str(r[i], rse[i])] for i, g in enumerate(param_column(self.gamma_exact))]

    def __str__(self) -> str:
        return self._caption() + "\n" + text_table(["gamma", "E_A (mean ± se)", "E_RR (mean ± se)"], self._rows())

    def __repr__(self) -> str:
        return f"<SimulationResult f={self.f!r} n={self.n} p={self.p} {self.trials} trials>"

    def _repr_html_(self) -> str:
        return html_table(["γ", "E_A (mean ± se)", "E_RR (mean ± se)"], self._rows(), self._caption())

    def _tex_rows(self):
        a, ase, r, rse = self.attention, self.attention_se, self.ridge, self.ridge_se
        return [[g, f"{a[i]:.6f} \\pm {ase[i]:.1e}", f"{r[i]:.6f} \\pm {rse[i]:.1e}"]
                for i, g in enumerate(param_column(self.gamma_exact))]

    def latex(self) -> str:
        rows = [[g, f"${a}$", f"${r}$"] for g, a, r in self._tex_rows()]
        return latex_tabular([r"$\gamma$", r"$E_A$ (mean $\pm$ se)", r"$E_{RR}$ (mean $\pm$ se)"], rows,
                             self._caption(), raw=(1, 2))

    def _repr_latex_(self) -> str:
        return latex_array([r"\gamma", r"E_A", r"E_{RR}"], self._tex_rows())


# ---------------------------------------------------------------------------
# extrapolation in 1/n
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Extrapolation:
    """Simulated means at several ``n`` fitted as ``mean(n) = a + b/n`` (weighted least squares,
    weights ``1/se^2``); ``attention``, ``ridge`` hold ``a`` per ``gamma`` (``n -> oo``) and
    ``attention_se``, ``ridge_se`` its standard error, ``attention_slope``, ``ridge_slope`` the ``b``.

    With two sizes the line passes through both means; with more, ``chi2`` (per error, per
    ``gamma``) measures how well ``1/n`` describes them (about ``len(sizes) - 2`` if it does).
    """

    sizes: tuple
    attention: object
    attention_se: object
    attention_slope: object
    ridge: object
    ridge_se: object
    ridge_slope: object
    chi2: object

    @staticmethod
    def _fit(x, y, se):
        import numpy as np

        w = 1.0 / np.maximum(se, 1e-300) ** 2  # (sizes, gammas)
        s0, s1, s2 = w.sum(0), (w * x).sum(0), (w * x * x).sum(0)
        t0, t1 = (w * y).sum(0), (w * x * y).sum(0)
        det = s0 * s2 - s1 * s1
        a = (s2 * t0 - s1 * t1) / det
        b = (s0 * t1 - s1 * t0) / det
        chi2 = (w * (y - a - b * x) ** 2).sum(0)
        return a, np.sqrt(s2 / det), b, chi2

    @classmethod
    def fit(cls, sims) -> Extrapolation:
        import numpy as np

        sims = sorted(sims, key=lambda s: s.n)
        x = np.array([[1.0 / s.n] for s in sims])
        a, ase, ab, ac = cls._fit(x, np.array([s.attention for s in sims]), np.array([s.attention_se for s in sims]))
        r, rse, rb, rc = cls._fit(x, np.array([s.ridge for s in sims]), np.array([s.ridge_se for s in sims]))
        return cls(sizes=tuple(s.n for s in sims), attention=a, attention_se=ase, attention_slope=ab, ridge=r,
                   ridge_se=rse, ridge_slope=rb, chi2=np.array([ac, rc]))


# ---------------------------------------------------------------------------
# simulation against limit
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Comparison:
    """A simulation against the limit of the same model: signed gaps in standard errors.

    ``attention_gap[i] = (mean_i - limit_i) / se_i`` (``inf`` when ``se_i = 0`` and the
    two differ); likewise ``ridge_gap``.  :meth:`within` applies the rule
    ``|mean - limit| <= k se + slack``.
    """

    simulation: SimulationResult
    theory: LimitResult
    extrapolation: Extrapolation | None = None

    columns = ("gamma", "attention_limit", "attention_mean", "attention_se", "attention_gap",
               "ridge_limit", "ridge_mean", "ridge_se", "ridge_gap")

    @property
    def gamma(self):
        return self.theory.gamma

    @staticmethod
    def _gap(mean, lim, se):
        import numpy as np

        with np.errstate(divide="ignore", invalid="ignore"):
            gap = (mean - lim) / se
        return np.where(mean == lim, 0.0, gap)

    @property
    def attention_gap(self):
        s = self.simulation
        return self._gap(s.attention, self.theory.attention, s.attention_se)

    @property
    def ridge_gap(self):
        s = self.simulation
        return self._gap(s.ridge, self.theory.ridge, s.ridge_se)

    @property
    def attention(self):
        """Simulation mean minus limit, for ``E_A``."""
        return self.simulation.attention - self.theory.attention

    @property
    def ridge(self):
        """Simulation mean minus limit, for ``E_RR``."""
        return self.simulation.ridge - self.theory.ridge

    @property
    def extrapolated_attention_gap(self):
        """``(a - limit)/se(a)`` for ``E_A`` with ``a`` the 1/n-extrapolated mean (None without sizes)."""
        e = self.extrapolation
        return None if e is None else self._gap(e.attention, self.theory.attention, e.attention_se)

    @property
    def extrapolated_ridge_gap(self):
        e = self.extrapolation
        return None if e is None else self._gap(e.ridge, self.theory.ridge, e.ridge_se)

    def notes(self, k: float = 3.0) -> list:
        """Sentences on the gaps: which are finite-size effects (above ``k`` se at ``n``, within ``k`` se
        extrapolated in 1/n), and, without an extrapolation, how to get one."""
        import numpy as np

        out = []
        gaps = {"E_A": self.attention_gap, "E_RR": self.ridge_gap}
        if self.extrapolation is not None:
            ext = {"E_A": self.extrapolated_attention_gap, "E_RR": self.extrapolated_ridge_gap}
            for name in gaps:
                for i, g in enumerate(self.theory.gamma_exact):
                    at_n, inf = gaps[name][i], ext[name][i]
                    if abs(at_n) > k and abs(inf) <= k:
                        out.append(f"{name} at gamma = {_fstr(g)}: {at_n:+.2f} se at n = {self.simulation.n}, "
                                   f"{inf:+.2f} se extrapolated in 1/n: a finite-size effect")
                    elif abs(inf) > k:
                        out.append(f"{name} at gamma = {_fstr(g)}: still {inf:+.2f} se after the 1/n extrapolation "
                                   f"from n = {', '.join(map(str, self.extrapolation.sizes))}")
        elif np.any(np.abs(np.concatenate([gaps["E_A"], gaps["E_RR"]])) > k):
            aligned = self.simulation.geometry is not None and any(
                v != 0 for key, v in _gram_items(self.simulation.geometry) if key in ("muwk", "muwq"))
            known = (" At weights aligned with mu the simulated E_A sits below its limit at n <= 512, a known "
                     "finite-size effect that shrinks as n grows." if aligned and np.any(gaps["E_A"] < -k) else "")
            out.append(f"gaps above {k:g} se at n = {self.simulation.n}.{known} compare(theory, sizes=[n1, n2]) "
                       "simulates other sizes and extrapolates in 1/n.")
        return out

    @property
    def max_gap(self) -> float:
        """The largest ``|gap|`` in standard errors over both errors and every ``gamma``."""
        import numpy as np

        return float(np.max(np.abs(np.concatenate([self.attention_gap, self.ridge_gap]))))

    def within(self, k: float = 3.0, slack: float = 0.0) -> bool:
        """``|mean - limit| <= k se + slack`` at every ``gamma``, for both errors."""
        import numpy as np

        s = self.simulation
        ok_a = np.abs(self.attention) <= k * s.attention_se + slack
        ok_r = np.abs(self.ridge) <= k * s.ridge_se + slack
        return bool(np.all(ok_a) and np.all(ok_r))

    def to_numpy(self):
        import numpy as np

        s, t = self.simulation, self.theory
        return np.column_stack([t.gamma, t.attention, s.attention, s.attention_se, self.attention_gap,
                                t.ridge, s.ridge, s.ridge_se, self.ridge_gap])

    def to_pandas(self, long: bool = False):
        """A DataFrame with :attr:`columns` (one row per gamma); ``long=True``: one row per gamma and error
        with ``limit, mean, se, gap``."""
        pd = need_pandas()
        df = pd.DataFrame(self.to_numpy(), columns=list(self.columns))
        if long:
            parts = []
            for err in ("attention", "ridge"):
                part = df[["gamma", f"{err}_limit", f"{err}_mean", f"{err}_se", f"{err}_gap"]].copy()
                part.columns = ["gamma", "limit", "mean", "se", "gap"]
                part.insert(1, "error", err)
                parts.append(part)
            return pd.concat(parts, ignore_index=True)
        return df

    def to_xarray(self):
        """An ``xarray.Dataset`` of every column over ``gamma``."""
        from symrmt.plotting import need_xarray

        xr = need_xarray()
        data = self.to_numpy()
        return xr.Dataset({name: ("gamma", data[:, i]) for i, name in enumerate(self.columns) if name != "gamma"},
                          coords={"gamma": data[:, 0]})

    def plot(self, ax=None, k: float = 1.0, log=None):
        """The simulation's error bars (``k`` se) over the limit curves (matplotlib); returns the axes."""
        return self.simulation.plot(ax=ax, limit=self.theory, k=k, log=log)

    def _rows(self):
        s, t = self.simulation, self.theory
        ga, gr = self.attention_gap, self.ridge_gap
        return [[g, _nstr(t.attention_mp[i], 10), _se_str(s.attention[i], s.attention_se[i]), f"{ga[i]:+.2f}",
                 _nstr(t.ridge_mp[i], 10), _se_str(s.ridge[i], s.ridge_se[i]), f"{gr[i]:+.2f}"]
                for i, g in enumerate(param_column(t.gamma_exact))]

    _HEADER = ["gamma", "E_A limit", "E_A simulation", "gap/se", "E_RR limit", "E_RR simulation", "gap/se"]

    def _caption(self) -> str:
        s = self.simulation
        return (f"simulation (n = {s.n}, p = {s.p}, {s.trials} trials) against the limit; "
                "gap/se = (mean - limit)/se")

    def _extrapolation_rows(self):
        e = self.extrapolation
        ga, gr = self.extrapolated_attention_gap, self.extrapolated_ridge_gap
        return [[_fstr(g), _se_str(e.attention[i], e.attention_se[i]), f"{ga[i]:+.2f}",
                 _se_str(e.ridge[i], e.ridge_se[i]), f"{gr[i]:+.2f}"] for i, g in enumerate(self.theory.gamma_exact)]

    def __str__(self) -> str:
        out = self._caption() + "\n" + text_table(self._HEADER, self._rows())
        if self.extrapolation is not None:
            out += (f"\nextrapolated in 1/n from n = {', '.join(map(str, self.extrapolation.sizes))} "
                    "(mean(n) = a + b/n; gap/se = (a - limit)/se(a))\n"
                    + text_table(["gamma", "E_A (n -> oo)", "gap/se", "E_RR (n -> oo)", "gap/se"],
                                 self._extrapolation_rows()))
        for note in self.notes():
            out += "\nnote: " + note
        return out

    def __repr__(self) -> str:
        return f"<Comparison max |gap| = {self.max_gap:.2f} se>"

    def _repr_html_(self) -> str:
        out = html_table(self._HEADER, self._rows(), self._caption())
        if self.extrapolation is not None:
            out += html_table(["γ", "E_A (n → ∞)", "gap/se", "E_RR (n → ∞)", "gap/se"], self._extrapolation_rows(),
                              f"extrapolated in 1/n from n = {', '.join(map(str, self.extrapolation.sizes))}")
        return out + "".join(f"<p>note: {html.escape(note)}</p>" for note in self.notes())

    def latex(self) -> str:
        """A ``tabular`` with two rows per ``gamma`` (``E_A``, then ``E_RR``), so that it fits a page."""
        header = [r"$\gamma$", "error", "limit", r"simulation (mean $\pm$ se)", "gap/se"]
        rows = []
        for r in self._rows():
            rows.append([r[0], "$E_A$", r[1], "$" + r[2].replace("±", r"\pm") + "$", r[3]])
            rows.append(["", "$E_{RR}$", r[4], "$" + r[5].replace("±", r"\pm") + "$", r[6]])
        return latex_tabular(header, rows, self._caption(), raw=(1, 3))

    def _repr_latex_(self) -> str:
        rows = []
        for r in self._rows():
            rows.append([r[0], "E_A", r[1], r[2].replace("±", r"\pm"), r[3]])
            rows.append(["", "E_{RR}", r[4], r[5].replace("±", r"\pm"), r[6]])
        return latex_array([r"\gamma", r"\text{error}", r"\text{limit}", r"\text{simulation}",
                            r"\text{gap}/\text{se}"], rows)
