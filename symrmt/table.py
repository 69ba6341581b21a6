r"""The one table protocol of symrmt's results (:class:`TableResult`) and the formatting it is built from.

A result that is a table gives its column names, text cells and caption; :class:`TableResult` turns them
into ``str()``, HTML, LaTeX, MathJax, pandas and xarray.  Only the standard library is imported at import time.
"""

from __future__ import annotations

import html
import sys
from decimal import Decimal, localcontext
from fractions import Fraction

import mpmath

from symrmt.errors import ExtraUnavailable, ParameterError, SolverError

__all__ = ["TableResult", "text_table", "html_table", "latex_tabular", "latex_array", "latex_escape", "math_text",
           "math_name", "digit_lines", "grouped_digits", "need_pandas", "LATEX_WIDE_DIGITS", "float_text",
           "param_text", "param_column", "decimal_text", "is_long", "geometry_text", "LONG_TEXT", "FLOAT_SIG",
           "TYPED_SIG", "SHORT_SIG", "mp_text", "float_array", "gram_items", "se_text", "number_value", "csv_param",
           "FLOAT_DIGITS"]


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
    """An HTML table (every cell escaped).

    >>> html_table(["x", "y"], [[1, "a<b"]], "two columns")
    '<table><caption>two columns</caption><thead><tr><th>x</th><th>y</th></tr></thead><tbody><tr><td>1</td><td>a&lt;b</td></tr></tbody></table>'
    """
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
    r"""A ``tabular``: header cells are LaTeX; body cells are escaped text, except the columns in ``raw``
    (LaTeX as given).  The caption goes in a comment line above; ``cols`` is the column spec (default
    right-aligned columns).

    >>> print(latex_tabular([r"$\gamma$", "value"], [["0.5", "a_1"]], "caption"), end="")
    % caption
    \begin{tabular}{rr}
    \hline
    $\gamma$ & value \\
    \hline
    0.5 & a\_1 \\
    \hline
    \end{tabular}
    """
    cols = "r" * len(header) if cols is None else cols
    lines = []
    if caption:
        lines.append("% " + caption.replace("\n", " "))
    lines += [f"\\begin{{tabular}}{{{cols}}}", "\\hline", " & ".join(header) + r" \\", "\\hline"]
    lines += [" & ".join(str(c) if i in raw else latex_escape(c) for i, c in enumerate(r)) + r" \\" for r in rows]
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def latex_array(header, rows) -> str:
    r"""The same numbers as a math-mode ``array`` (what MathJax renders in a notebook).

    >>> latex_array(["x", "y"], [[1, 2], [3, 4]])
    '$$\\begin{array}{rr} x & y \\\\ \\hline 1 & 2 \\\\ 3 & 4 \\end{array}$$'
    """
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
    """``import pandas``, with the install hint when it is missing.

    Takes nothing; returns the ``pandas`` module; raises :class:`~symrmt.errors.ExtraUnavailable` (an
    ``ImportError``) with the install hint when it is missing.

    >>> need_pandas().__name__
    'pandas'
    """
    try:
        # optional dependency (pandas)
        import pandas
    except ImportError as exc:  # pragma: no cover - pandas is installed where the tests run
        raise ExtraUnavailable("to_pandas() needs pandas: pip install 'symrmt[results]'") from exc
    return pandas


def mp_text(x, digits: int) -> str:
    """``x`` (an mpf or a float) written with ``digits`` significant digits (``mpmath.nstr``).

    >>> import mpmath
    >>> mp_text(mpmath.mpf(1) / 3, 5), mp_text(2.5, 10)
    ('0.33333', '2.5')
    """
    return mpmath.nstr(x, digits)


#: above this many digits numbers are written as decimal strings instead of floats
FLOAT_DIGITS = 15


def number_value(x, digits: int):
    """The one writer of a computed real number (JSON, CSV, tables): rounded once, in decimal, to
    ``digits`` significant digits; then a float when ``digits <= 15`` and that float reads back as the
    same decimal, else the decimal string.  A value outside the float64 normal range (``1e-400``, a
    subnormal ``2.3423e-322``, ``1e400``) is never written as ``0.0``, a float with lost digits or
    ``inf``: it is a string.  A value that is not finite (or complex) is a :class:`~symrmt.errors.SolverError`
    (an ``ArithmeticError``, exit 3).

    >>> import mpmath
    >>> number_value(mpmath.mpf("3.1084952830141509"), 1), number_value(mpmath.mpf("3.49"), 1)
    (3.0, 3.0)
    >>> number_value(mpmath.mpf("1e-400"), 15), number_value(mpmath.mpf("2.3423e-322"), 5)
    ('1.0e-400', '2.3423e-322')
    >>> number_value(0.1, 20)
    '0.10000000000000000555'
    >>> number_value(mpmath.inf, 15)
    Traceback (most recent call last):
    ...
    symrmt.errors.SolverError: a result is +inf, not a finite real number; no value is written
    """
    with mpmath.workdps(max(digits, FLOAT_DIGITS) + 10):
        if isinstance(x, Fraction):
            x = mpmath.mpf(x.numerator) / x.denominator
        x = mpmath.mpf(x) if not isinstance(x, mpmath.mpc) else x
        if not mpmath.isfinite(x) or isinstance(x, mpmath.mpc):
            raise SolverError(f"a result is {x}, not a finite real number; no value is written")
        text = mpmath.nstr(x, digits)
        if digits <= FLOAT_DIGITS and (x == 0 or sys.float_info.min <= abs(x) <= sys.float_info.max):
            f = float(text)
            if f == f and abs(f) != float("inf") and (f != 0 or x == 0) and \
                    mpmath.nstr(mpmath.mpf(f), digits) == text:
                return f
    return text


def csv_param(x, digits: int = 15) -> str:
    """A parameter value for a CSV column that a reader takes as a number: a terminating decimal as
    typed (``0.5``, ``1e-12``), any other exact value (``1/3``, an irrational rounded to 1000 digits)
    as a decimal at ``digits`` significant digits (never a fraction ``p/q``).

    >>> csv_param(Fraction(1, 3)), csv_param(Fraction(1, 2)), csv_param(Fraction(1, 3), 20)
    ('0.333333333333333', '0.5', '0.33333333333333333333')
    >>> csv_param(Fraction(1, 10**400))
    '1e-400'
    """
    if isinstance(x, Fraction):
        sig = _decimal_sig(x)
        if sig is not None and sig <= FLOAT_SIG:
            text = float_text(x)
            if "/" not in text:
                return text
        return decimal_text(x, digits)
    return str(x)


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
    """Whether the exact value ``x`` is "long" (:data:`LONG_TEXT`): printed as a decimal at the digits.

    >>> is_long(Fraction(1, 3)), is_long(Fraction(2**80 + 1, 2**80)), is_long(0.5)
    (False, True, False)
    """
    if not isinstance(x, Fraction):
        return False
    sig = _decimal_sig(x)
    if sig is not None:  # a terminating decimal: long when it has many digits or a long exact text (10^400)
        return sig > FLOAT_SIG or len(str(x)) > LONG_TEXT
    return len(str(x)) > LONG_TEXT


def decimal_text(x: Fraction, digits: int) -> str:
    """``x`` as a decimal rounded to ``digits`` significant digits (exact arithmetic, no float).

    >>> decimal_text(Fraction(2, 3), 5), decimal_text(Fraction(1, 3 * 10**20), 3)
    ('0.66667', '3.33e-21')
    """
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
        return float_text(x)
    if is_long(x):
        return decimal_text(x, digits)
    return float_text(x)


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


def float_text(x) -> str:
    """An exact input as typed: ``1/2``, ``0.1``, ``3``.

    >>> float_text(Fraction(1, 2)), float_text(Fraction(1, 3)), float_text(Fraction(6, 2)), float_text(0.1)
    ('0.5', '1/3', '3', '0.1')
    """
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
    irrational inner product) as a decimal at ``digits`` significant digits (:func:`param_text`).

    >>> from symrmt.models.attention.geometry import Geometry
    >>> geometry_text(None), geometry_text(Geometry(snr=Fraction(1, 2)))
    ('mu = 0, W = I', 'snr = 0.5')
    """
    if geometry is None:
        return "mu = 0, W = I"
    if hasattr(geometry, "gram_entries"):
        return (f"rank r = {geometry.r}, alpha = {param_text(geometry.alpha, digits)}, "
                f"||mu||^2 = {param_text(geometry.snr, digits)}")
    parts = [f"{k} = {param_text(v, digits)}" for k, v in geometry.as_dict().items() if v != 0]
    return ", ".join(parts) if parts else "mu = 0, W = I"


def gram_items(geometry):
    """``(name, value)`` of a rank-one geometry's Gram entries (none for a low-rank one).

    >>> from symrmt.models.attention.geometry import Geometry
    >>> dict(gram_items(Geometry(snr=2)))["snr"]
    Fraction(2, 1)
    """
    return list(geometry.as_dict().items()) if hasattr(geometry, "as_dict") else []


def float_array(values):
    """The float64 NumPy array of ``values`` (Fractions, mpf, ints or floats), each rounded once to float.

    >>> from fractions import Fraction
    >>> float_array([Fraction(1, 4), 2]).tolist()
    [0.25, 2.0]
    """
    # import-time cost: the CLI's start loads no NumPy
    import numpy as np

    return np.array([float(v) for v in values], dtype=np.float64)


def se_text(mean: float, se: float) -> str:
    """A Monte-Carlo mean with its standard error, as the tables print it.

    >>> se_text(0.5, 0.0123)
    '0.500000 ± 1.2e-02'
    """
    return f"{mean:.6f} ± {se:.1e}"


def math_name(name: str, tex: dict | None = None) -> str:
    r"""A column or parameter name in math mode: its entry in ``tex``, a single letter as it is, any other
    name as escaped text (``cos_muwk`` without an entry is ``\text{cos}\_\text{muwk}``).

    >>> math_name("x"), math_name("gamma", {"gamma": r"\gamma"}), math_name("a_b")
    ('x', '\\gamma', '\\text{a}\\_\\text{b}')
    """
    name = str(name)
    if tex and name in tex:
        return tex[name]
    return name if len(name) == 1 and name.isalpha() else math_text(name)


class TableResult:
    """The protocol every table result follows (see the module docstring).

    A subclass gives ``_columns``, ``_rows`` and ``_caption``:

    >>> class Squares(TableResult):
    ...     def _columns(self):
    ...         return ["k", "k^2"]
    ...     def _rows(self, limit=None):
    ...         return [[str(k), str(k * k)] for k in range(1, 4)][:limit]
    >>> print(Squares())
    Squares
    k  k^2
    -  ---
    1    1
    2    4
    3    9
    """

    #: rows shown by ``str()`` and ``_repr_latex_`` (``to_pandas()`` has them all); ``None``: every row
    SHOWN_ROWS = 60
    #: what a row is, in the line ``str()`` adds below the shown rows
    ROW_NAME = "rows"

    def _columns(self) -> list:
        raise NotImplementedError

    def _rows(self, limit: int | None = None) -> list:
        raise NotImplementedError

    def _caption(self) -> str:
        return type(self).__name__

    def _columns_tex(self) -> list:
        return [math_name(c) for c in self._columns()]

    def _empty_text(self) -> str:
        return "No points."

    def __str__(self) -> str:
        rows = self._rows(self.SHOWN_ROWS)
        if not rows:
            return self._caption() + "\n" + self._empty_text()
        more = self._count() - len(rows)
        tail = f"\n... {more} more {self.ROW_NAME} (to_pandas() has them all)" if more > 0 else ""
        return self._caption() + "\n" + text_table(self._columns(), rows) + tail

    def _count(self) -> int:
        return len(self._rows())

    def _repr_html_(self) -> str:
        rows = self._rows(200)
        if not rows:
            return f"<p>{html.escape(self._caption())}<br>{html.escape(self._empty_text())}</p>"
        return html_table(self._columns(), rows, self._caption())

    def latex(self) -> str:
        r"""A ``tabular`` (the caption in a comment line above); a sentence when there is no row.

        >>> class One(TableResult):
        ...     def _columns(self):
        ...         return ["x"]
        ...     def _rows(self, limit=None):
        ...         return [["1/2"]]
        >>> print(One().latex(), end="")
        % One
        \begin{tabular}{r}
        \hline
        $x$ \\
        \hline
        1/2 \\
        \hline
        \end{tabular}
        """
        rows = self._rows()
        if not rows:
            return "% " + self._caption().replace("\n", " ") + "\n" + latex_escape(self._empty_text()) + "\n"
        return latex_tabular([f"${t}$" for t in self._columns_tex()], rows, self._caption())

    def _repr_latex_(self) -> str:
        rows = self._rows(self.SHOWN_ROWS)
        if not rows:
            return "$" + math_text(self._empty_text()) + "$"
        return latex_array(self._columns_tex(), [[math_text(c) for c in r] for r in rows])

    def to_pandas(self):
        """One row per point (needs pandas).

        >>> class One(TableResult):
        ...     def _columns(self):
        ...         return ["x", "y"]
        ...     def _rows(self, limit=None):
        ...         return [["1", "2"]]
        >>> One().to_pandas().to_dict("records")
        [{'x': '1', 'y': '2'}]
        """
        pd = need_pandas()
        return pd.DataFrame(self._rows(), columns=self._columns())

    def to_xarray(self):
        """The rows of :meth:`to_pandas` as an xarray Dataset over ``index`` (one row per point); raises
        :class:`~symrmt.errors.ParameterError` without xarray.

        >>> class One(TableResult):
        ...     def _columns(self):
        ...         return ["x", "y"]
        ...     def _rows(self, limit=None):
        ...         return [["1", "2"]]
        >>> ds = One().to_xarray()
        >>> ds["x"].values.tolist(), ds.sizes["index"]
        (['1'], 1)
        """
        try:
            import xarray  # noqa: F401
        except ImportError:
            raise ParameterError("to_xarray() needs xarray (pip install xarray)") from None
        return self.to_pandas().to_xarray()
