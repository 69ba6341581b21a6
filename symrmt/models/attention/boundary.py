r"""Where Attention and ridge regression tie: ``symrmt.crossings``.

:func:`crossings` finds every point of an interval of one parameter (``c``, ``gamma``,
``snr``, a Gram entry or an angle) where the limits satisfy ``E_A = E_RR``:

1. **scan**: the sign of ``E_A - E_RR`` at ``scan`` points (both errors certified; a sign
   counts only when ``|E_A - E_RR|`` exceeds the certified error of the two values,
   otherwise the point is recomputed with more digits);
2. **bracket**: every sign change between neighbours brackets a crossing;
3. **polish**: ``mpmath.findroot`` (Anderson-Bjorck, a bracketing secant method) refines
   the root on values certified to ``digits + 10`` digits;
4. **certify**: the sign of ``E_A - E_RR`` is certified on both sides of the root, at
   ``x (1 -+ 10^-digits / 2)``; when that fails, certified bisection of the bracket takes
   over.  A root is returned only inside such a certified bracket.

With ``fast=True`` step 1 is one call of the vectorised float64 solver
(:func:`symrmt.models.attention.fast.solve_grid`) on :data:`FAST_SCAN` points: the float sign of
``E_A - E_RR`` counts where ``|E_A - E_RR|`` exceeds :data:`MARGIN` times the solver's
per-point error estimate (points it handed to mpmath count as certified to 15 digits); any
other scan point gets its certified sign as above.  The two ends of each bracket are then
certified before the polish, so steps 3 and 4 -- and the result's contract -- are those of
the certified scan.  Should a certified end disagree with its float sign, the whole scan is
redone certified (``r.fast`` is then False).

Two crossings closer together than the scan spacing (or a tangency, where the sign does
not change) can be missed: the result says how fine the scan was; raise ``scan`` to look
closer.

Examples
--------
>>> import symrmt
>>> r = symrmt.crossings("tanh", over="gamma", between=(0.01, 10), c=2, snr=1, digits=12, scan=8)
>>> len(r), r.over
(0, 'gamma')
>>> print(r.summary())  # doctest: +ELLIPSIS
E_A - E_RR keeps its sign on [0.01, 10] (E_A > E_RR at all 8 scan points): no crossing found
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

from symrmt.errors import ParameterError
from symrmt.models.attention.params import check_c, check_diagonal, to_fraction
from symrmt.table import (
    TableResult, digit_lines, float_text, geometry_text, html_table, latex_array, latex_escape, latex_tabular,
    math_text, need_pandas, param_text, text_table,
)
from symrmt.models.attention.sweeps import GRID_KEYS, _exact_or
from symrmt.models.attention.geometry import point_geometry

#: the interval is scanned at this many points (by default) before each sign change is bracketed
SCAN = 24
#: at most this many digits beyond ``digits`` are spent to decide the sign of E_A - E_RR
EXTRA_DIGITS = 40
#: scan points of the float64 scan (``fast=True``), by default
FAST_SCAN = 257
#: a float64 sign counts when ``abs(E_A - E_RR)`` exceeds this many times its estimated error
MARGIN = 100

__all__ = ["crossings", "CrossingsResult"]


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
        Each is a :class:`~symrmt.certified.CertifiedMpf`: an ``mpf`` of ``digits`` digits
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

    columns = ("root", "direction")

    def __len__(self) -> int:
        return len(self.roots)

    def __iter__(self):
        return iter(self.roots)

    def __getitem__(self, i):
        return self.roots[i]

    @property
    def values(self):
        """The roots as a float64 array."""
        import numpy as np

        return np.array([float(r) for r in self.roots], dtype=np.float64)

    def to_numpy(self):
        """Float64 array ``(len(roots), 2)``: root, direction."""
        import numpy as np

        return np.array([[float(r), d] for r, d in zip(self.roots, self.directions)], dtype=np.float64).reshape(-1, 2)

    def to_xarray(self):
        """An ``xarray.Dataset`` over ``root`` (the roots as float64, their directions and brackets), and the
        scan's signs over ``scan``."""
        from symrmt.plotting import need_xarray

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
        """The sign of ``E_A - E_RR`` at the scan points and a line at each root (matplotlib); returns the axes."""
        from symrmt.plotting import plot_crossings

        return plot_crossings(self, ax=ax, log=log)

    def to_pandas(self):
        """A DataFrame, one row per root: ``<over>`` (float64), ``root`` (the certified mpf, every digit),
        ``direction``, ``bracket_lo``, ``bracket_hi`` (float64); the inputs in ``.attrs``."""
        pd = need_pandas()
        df = pd.DataFrame({self.over: self.values, "root": pd.Series(list(self.roots), dtype=object),
                           "direction": list(self.directions),
                           "bracket_lo": [float(b[0]) for b in self.brackets],
                           "bracket_hi": [float(b[1]) for b in self.brackets]})
        df.attrs.update({"f": self.f, "expr": self.expr, "over": self.over, "digits": self.digits,
                         **{k: str(v) for k, v in self.fixed.items()}})
        return df

    def _interval(self) -> str:
        return f"[{float_text(self.between[0])}, {float_text(self.between[1])}]"

    def summary(self) -> str:
        """One sentence: how many crossings, or that the sign never changes."""
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
        import mpmath

        return [[mpmath.nstr(r, self.digits), "E_A < E_RR below" if d > 0 else "E_A < E_RR above"]
                for r, d in zip(self.roots, self.directions)]

    def __str__(self) -> str:
        if not self.roots:
            return self._caption() + "\n" + self.summary()
        return self._caption() + "\n" + text_table([self.over, "side"], self._rows(), left=(1,))

    def __repr__(self) -> str:
        return f"<CrossingsResult over={self.over!r} {len(self.roots)} root(s)>"

    def _repr_html_(self) -> str:
        if not self.roots:
            return f"<p>{self._caption()}<br>{self.summary()}</p>"
        return html_table([self.over, "side"], self._rows(), self._caption())

    def _over_tex(self) -> str:
        """The varying parameter in math mode (``cos_muwk`` is ``\\cos(\\mu, w_K)``; tied names joined by ``=``)."""
        from symrmt.models.attention.sweeps import _TEX

        return " = ".join(_TEX.get(k, k if len(k) == 1 and k.isalpha() else math_text(k))
                          for k in str(self.over).split("="))

    def _summary_tex(self) -> str:
        """:meth:`summary` as text with inline math (pdflatex and MathJax)."""
        text = latex_escape(self.summary())
        for err in (r"E\_A - E\_RR", r"E\_A > E\_RR", r"E\_A < E\_RR"):
            text = text.replace(err, "$" + err.replace(r"\_RR", "_{RR}").replace(r"\_A", "_A") + "$")
        return text

    def latex(self) -> str:
        """The roots as a LaTeX ``tabular`` (inputs in a comment line above); a sentence when there is none."""
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


class _Difference:
    """``x -> E_A - E_RR`` at the point ``{**fixed, over: x}``, certified to a number of digits."""

    def __init__(self, nl, over, fixed, geometry, diagonal):
        self.nl, self.over, self.fixed, self.geometry, self.diagonal = nl, over, fixed, geometry, diagonal
        self.count = 0

    def __call__(self, x, digits: int):
        """``(E_A - E_RR, bound)``: the difference and a bound on its error (mpf)."""
        import mpmath

        from symrmt.models.attention.theory import attention_limit, ridge_limit

        xv = to_fraction(x, self.over)
        vals = {**self.fixed, **dict.fromkeys(self.over.split("="), xv)}
        geo = point_geometry(vals, self.geometry)
        c = check_c(vals["c"])
        g = to_fraction(vals["gamma"], "gamma")
        if g <= 0:
            raise ParameterError(f"gamma must be positive, got {float(g)!r}")
        a = attention_limit(self.nl, c, [g], geo, self.diagonal, digits)[0]
        r = ridge_limit(c, [g], geo.snr, digits)[0]
        self.count += 1
        with mpmath.workdps(digits + 10):
            return a - r, (abs(a) + abs(r)) * mpmath.mpf(10) ** (-digits)

    def sign(self, x, digits: int, top: int) -> int:
        """The certified sign at ``x``, raising the digits up to ``top``; 0 when it stays undecided."""
        while True:
            d, bound = self(x, digits)
            if abs(d) > bound:
                return 1 if d > 0 else -1
            if digits >= top:
                return 0
            digits = min(top, digits + 10)


def _scan_points(lo: Fraction, hi: Fraction, k: int, log: bool):
    if log:
        a, b = math.log(float(lo)), math.log(float(hi))
        inner = [Fraction(math.exp(a + (b - a) * i / (k - 1))).limit_denominator(10**12) for i in range(1, k - 1)]
        return [lo, *inner, hi]
    return [lo + (hi - lo) * i / (k - 1) for i in range(k)]


def crossings(f, over: str = "c", between=(0.1, 10), *, c=None, gamma=None, geometry=None, diagonal: str = "zero",
              digits: int = 15, center: bool = False, scan: int | None = None, log: bool | None = None,
              progress: bool | None = None, fast: bool = False, **values) -> CrossingsResult:
    r"""Every crossing ``E_A = E_RR`` of the limits for ``over`` in ``between``.

    Parameters
    ----------
    f : str, sympy.Expr or Nonlinearity
        As for :func:`symrmt.limit`.
    over : str or tuple of str
        The parameter that varies: one of ``c``, ``gamma``, ``snr``, ``wk2``, ``wq2``, ``wkwq``,
        ``muwk``, ``muwq``, ``cos_muwk``, ``cos_muwq``, ``cos_wkwq``.  A tuple of names ties them,
        as a tuple key of :func:`symrmt.sweep` does: ``over=("cos_muwk", "cos_muwq")`` varies both
        cosines together (``w_K = w_Q`` at a varying angle to ``mu``); the result's ``over`` is then
        ``"cos_muwk=cos_muwq"`` (that text is accepted as ``over`` too).
    between : (a, b)
        The interval, ``a < b``.
    c, gamma : number, optional
        Fixed values (both needed, except the one that varies).
    geometry : Geometry or dict, optional
        Base Gram entries; ``**values`` (``snr=``, ``wk2=``, ..., ``cos_muwk=``, ...) set
        others, as for :func:`symrmt.sweep`.
    diagonal, digits, center
        As for :func:`symrmt.limit`; each root is returned to ``digits`` significant digits.
    scan : int
        Number of scan points (default 24, or 257 with ``fast``), spread evenly, or log-evenly
        when ``log`` (default: log for ``c`` and ``gamma`` when ``b/a >= 10``).
    progress : bool or None
        Progress bar over the scan (``None``: auto).
    fast : bool
        Scan on the vectorised float64 path (rank-one geometries only), then certify and
        polish each bracket as without it: the roots keep the same guarantee.

    Returns
    -------
    CrossingsResult
        Empty (``len(r) == 0``) when the sign never changes at the scan points; ``str(r)``
        says so.

    Raises
    ------
    PrecisionError
        The sign of ``E_A - E_RR`` cannot be decided at a scan point even with
        ``digits + 40`` digits (the difference vanishes there: a crossing exactly at a scan
        point, or the two errors coincide); move ``between`` or change ``scan``.
    """
    import mpmath

    from symrmt.models.attention.kernel_f import as_nonlinearity
    from symrmt.errors import PrecisionError
    from symrmt.progress import progress_bar

    t0 = time.monotonic()
    over, keys = _over_keys(over)
    if isinstance(geometry, dict):  # a plain dict of entries, read once (symrmt.models.attention.geometry.as_geometry)
        from symrmt.models.attention.geometry import as_geometry

        geometry = as_geometry(geometry)
    unknown = [k for k in values if k not in GRID_KEYS]
    if unknown:
        raise ParameterError(f"unknown parameter(s) {', '.join(unknown)}; use {', '.join(GRID_KEYS)}")
    fixed = {k: v for k, v in (("c", c), ("gamma", gamma)) if v is not None}
    fixed.update(values)
    for key in keys:
        if key in fixed:
            raise ParameterError(f"{key} varies (over={over!r}); do not also fix it")
    for key in ("c", "gamma"):
        if key not in keys and key not in fixed:
            raise ParameterError(f"crossings over {over} needs a fixed {key}=")
    try:
        lo, hi = (to_fraction(v.item() if hasattr(v, "item") else v, "between") for v in between)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"between must be a pair (a, b), got {between!r}") from exc
    if not lo < hi:
        raise ParameterError(f"between must have a < b, got {between!r}")
    if over in ("c", "gamma") and hi <= 0:
        shown = ", ".join(v if isinstance(v, str) else str(v) for v in between)
        raise ParameterError(f"{over} must be positive, and the interval between = ({shown}) holds no positive "
                             f"{over}; give 0 < a < b")
    if scan is None:
        scan = FAST_SCAN if fast else SCAN
    if isinstance(scan, bool) or not isinstance(scan, int) or scan < 2:
        raise ParameterError(f"scan must be an integer >= 2, got {scan!r}")
    from symrmt.parsing import check_count

    check_count(scan, "points", "number of scan points")
    from symrmt.parsing import check_digits

    digits = check_digits(digits)  # the one digits rule: an integer (NumPy too) in [1, LIMITS['digits']]
    diagonal = check_diagonal(diagonal)
    nl = as_nonlinearity(f, center)
    if log is None:
        log = all(k in ("c", "gamma") for k in keys) and lo > 0 and hi / lo >= 10
    if log and lo <= 0:
        raise ParameterError("a log-spaced scan needs a > 0")
    diff = _Difference(nl, over, fixed, geometry, diagonal)
    top = digits + EXTRA_DIGITS

    xs = _scan_points(lo, hi, scan, log)

    def certified_sign(x):
        # at large gamma E_A and E_RR both are 1 - O(1/gamma): their difference needs about log10(gamma) more
        # digits, so start there instead of climbing in steps of 10 (each step a full solve)
        g = float(to_fraction(x if over == "gamma" else fixed["gamma"], "gamma"))
        start = min(digits, 15) + (max(0, math.ceil(math.log10(g))) if g > 1 else 0)
        s = diff.sign(x, min(start, top), top)
        if s == 0:
            raise PrecisionError(
                f"E_A - E_RR at {over} = {float_text(x)} is 0 to {top} digits: a crossing exactly at a scan point, "
                "or E_A = E_RR identically; move the interval or change scan")
        return s

    signs = _fast_signs(nl, over, xs, fixed, geometry, diagonal, certified_sign) if fast else None
    if signs is None:
        fast = False
        with progress_bar(scan, f"crossings {nl.name} over {over}", enabled=progress) as bar:
            signs = []
            for x in xs:
                signs.append(certified_sign(x))
                bar.update()

    roots, brackets, directions = [], [], []
    for i in range(len(xs) - 1):
        if signs[i] == signs[i + 1]:
            continue
        root, bracket = _refine(diff, xs[i], xs[i + 1], signs[i], digits, top)
        roots.append(root)
        brackets.append(bracket)
        directions.append(signs[i + 1])
    from symrmt.certified import certified

    with mpmath.workdps(digits):  # rounded to the digits asked for, kept at that precision, printed at it
        roots = [certified(+r, digits) for r in roots]
    return CrossingsResult(f=nl.name, expr=str(nl.expr), over=over, between=(lo, hi), fixed=fixed,
                           diagonal=diagonal, digits=digits, roots=tuple(roots), brackets=tuple(brackets),
                           directions=tuple(directions), scan_x=tuple(xs), scan_sign=tuple(signs),
                           center=nl.center, geometry=geometry, evaluations=diff.count, seconds=time.monotonic() - t0,
                           fast=fast)


def _over_keys(over):
    """``over`` (a name, a tuple of names, or names joined by ``=``) as ``(name, keys)``: the names of the
    tied parameters joined by ``=``, and the tuple of them."""
    if isinstance(over, (tuple, list)):
        keys = tuple(over)
        if len(keys) < 2:
            raise ParameterError(f"a tuple over= ties two or more parameters, got {over!r}")
    elif isinstance(over, str):
        keys = tuple(k.strip() for k in over.split("="))
    else:
        raise ParameterError(f"over must be a parameter name or a tuple of names, got {over!r}")
    for k in keys:
        if not isinstance(k, str) or k not in GRID_KEYS:
            raise ParameterError(f"over must be parameter names among {', '.join(GRID_KEYS)}, got {k!r}")
    if len(set(keys)) != len(keys):
        raise ParameterError(f"over names a parameter twice: {over!r}")
    return "=".join(keys), keys


def _fast_signs(nl, over, xs, fixed, geometry, diagonal, certified_sign):
    """The signs of ``E_A - E_RR`` at ``xs`` from one float64 solve, or None when a check fails.

    A float sign counts where ``|E_A - E_RR|`` exceeds :data:`MARGIN` times its estimated error
    (``error_estimate`` relative to ``|E_A| + |E_RR|``; 15 certified digits at the points the solver
    handed to mpmath); elsewhere ``certified_sign`` decides.  The ends of every sign change are then
    certified; if one disagrees with its float sign, None (the caller scans certified instead).
    """
    import numpy as np

    from symrmt.models.attention.sweeps_fast import grid_points, solve_points

    pts = grid_points({over: tuple(xs)}, fixed, geometry)
    out = solve_points(nl, pts, diagonal)
    a, r = np.asarray(out.attention, dtype=float), np.asarray(out.ridge, dtype=float)
    rel = np.where(out.fallback, 1e-15, np.maximum(out.error_estimate, 4 * np.finfo(float).eps))
    d = a - r
    trusted = np.isfinite(d) & (np.abs(d) > MARGIN * rel * (np.abs(a) + np.abs(r)))
    signs = [int(np.sign(di)) if ok else certified_sign(x) for x, di, ok in zip(xs, d.tolist(), trusted.tolist())]
    ends = {j for i in range(len(xs) - 1) if signs[i] != signs[i + 1] for j in (i, i + 1) if trusted[j]}
    for j in sorted(ends):
        if certified_sign(xs[j]) != signs[j]:
            return None
    return signs


def _refine(diff: _Difference, a: Fraction, b: Fraction, sign_a: int, digits: int, top: int):
    """The root in ``[a, b]`` (``sign_a`` the sign at ``a``, the opposite at ``b``), with its certified bracket."""
    import mpmath

    from symrmt.errors import PrecisionError
    from symrmt.models.attention.solver import mpf_of

    work = digits + 10
    with mpmath.workdps(work + 10):
        lo, hi = mpf_of(a), mpf_of(b)

        def value(x):
            return diff(x, work)[0]

        # polish: a bracketing secant method on certified values
        try:
            x = mpmath.findroot(value, (lo, hi), solver="anderson", tol=mpmath.mpf(10) ** (-2 * work),
                                maxsteps=60, verify=False)
        except (ValueError, ZeroDivisionError, ArithmeticError):
            x = None
        if x is not None and lo < x < hi:
            h = abs(x) * mpmath.mpf(10) ** (-digits) / 4 if x != 0 else mpmath.mpf(10) ** (-digits)
            left, right = diff.sign(x - h, work, top), diff.sign(x + h, work, top)
            if left == sign_a and right == -sign_a:
                return x, (x - h, x + h)
        # certified bisection: keeps a bracket whose ends have certified, opposite signs
        while hi - lo > max(abs(lo), abs(hi)) * mpmath.mpf(10) ** (-digits) / 2:
            mid = (lo + hi) / 2
            s = diff.sign(mid, work, top)
            if s == 0:
                h = (hi - lo) / 4
                if diff.sign(mid - h, work, top) == sign_a and diff.sign(mid + h, work, top) == -sign_a:
                    lo, hi = mid - h, mid + h
                    continue
                raise PrecisionError(
                    f"cannot separate E_A from E_RR near {diff.over} = {mpmath.nstr(mid, 12)} with {top} digits "
                    "(a double root?)")
            if s == sign_a:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2, (lo, hi)
