r"""Where Attention and ridge regression tie: ``symrmt.crossings``.

:func:`crossings` finds every point of an interval of one parameter (``c``, ``gamma``, ``snr``, a Gram entry
or an angle) where the limits satisfy ``E_A = E_RR``: it scans the certified sign of ``E_A - E_RR``
(``fast=True``: float64 signs from :func:`symrmt.models.attention.fast.solve_grid` where they exceed
:data:`MARGIN` times the solver's error estimate, the brackets' ends certified), brackets each sign change,
polishes the root with ``mpmath.findroot`` (Anderson-Bjorck) on values certified to ``digits + 10`` digits,
and returns a root only inside a bracket whose two ends ``x (1 -+ 10^-digits / 2)`` have certified opposite
signs (else certified bisection).  Two crossings closer than the scan spacing, or a tangency, can be missed:
the result says how fine the scan was.

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
import warnings
from fractions import Fraction

import mpmath
import numpy as np

from symrmt.core.numbers import mpf_of
from symrmt.errors import FiniteSizeWarning, ParameterError, PrecisionError
from symrmt.models.attention.finite_size import finite_size_note, signal_term
from symrmt.models.attention.params import check_c, check_diagonal, to_fraction
from symrmt.models.attention.grid_results import CrossingsResult
from symrmt.models.attention.sweeps import GRID_KEYS
from symrmt.table import float_text
from symrmt.models.attention.geometry import as_geometry, point_geometry
from symrmt.models.attention.kernel_f import as_nonlinearity
from symrmt.models.attention.sweeps_fast import grid_points, solve_points
from symrmt.models.attention.theory import attention_limit, ridge_limit
from symrmt.parsing import check_count, check_digits
from symrmt.progress import progress_bar
from symrmt.proofs.certified import certified

#: the interval is scanned at this many points (by default) before each sign change is bracketed
SCAN = 24
#: at most this many digits beyond ``digits`` are spent to decide the sign of E_A - E_RR
EXTRA_DIGITS = 40
#: scan points of the float64 scan (``fast=True``), by default
FAST_SCAN = 257
#: a float64 sign counts when ``abs(E_A - E_RR)`` exceeds this many times its estimated error
MARGIN = 100

__all__ = ["crossings", "CrossingsResult"]


class _Difference:
    """``x -> E_A - E_RR`` at the point ``{**fixed, over: x}``, certified to a number of digits."""

    def __init__(self, nl, over, fixed, geometry, diagonal):
        self.nl, self.over, self.fixed, self.geometry, self.diagonal = nl, over, fixed, geometry, diagonal
        self.count = 0

    def __call__(self, x, digits: int):
        """``(E_A - E_RR, bound)``: the difference and a bound on its error (mpf)."""
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
    if log and Fraction(1, 10**300) <= lo and hi <= Fraction(10) ** 300:
        a, b = math.log(float(lo)), math.log(float(hi))
        inner = [Fraction(math.exp(a + (b - a) * i / (k - 1))).limit_denominator(10**12) for i in range(1, k - 1)]
        return [lo, *inner, hi]
    if log:  # beyond the float range (float(1e-400) is 0, float(1e400) overflows): in mpmath, 12 digits each
        with mpmath.workdps(30):
            a = mpmath.log(mpmath.mpf(lo.numerator) / lo.denominator)
            b = mpmath.log(mpmath.mpf(hi.numerator) / hi.denominator)
            inner = [Fraction(mpmath.nstr(mpmath.exp(a + (b - a) * i / (k - 1)), 12)) for i in range(1, k - 1)]
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
    ParameterError
        A parameter outside the model's domain, or ``over`` also given a fixed value.

    Examples
    --------
    >>> import symrmt
    >>> r = symrmt.crossings("tanh", over="gamma", between=(0.1, 10), c="1/2", digits=10, progress=False)
    >>> len(r), str(r.roots[0]), r.directions    # E_A < E_RR above gamma = 5.79...
    (1, '5.794119186', (-1,))
    """
    t0 = time.monotonic()
    over, keys = _over_keys(over)
    if isinstance(geometry, dict):  # a plain dict of entries, read once (symrmt.models.attention.geometry.as_geometry)
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

    check_count(scan, "points", "number of scan points")

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

    with mpmath.workdps(digits):  # rounded to the digits asked for, kept at that precision, printed at it
        roots = [certified(+r, digits) for r in roots]
    note = _finite_size_note(over, fixed, geometry, [xs[0], xs[-1], *roots])
    return CrossingsResult(f=nl.name, expr=str(nl.expr), over=over, between=(lo, hi), fixed=fixed,
                           diagonal=diagonal, digits=digits, roots=tuple(roots), brackets=tuple(brackets),
                           directions=tuple(directions), scan_x=tuple(xs), scan_sign=tuple(signs),
                           center=nl.center, geometry=geometry, evaluations=diff.count, seconds=time.monotonic() - t0,
                           fast=fast, finite_size_note=note)


def _finite_size_note(over, fixed, geometry, xs):
    """The finite-size note (:func:`symrmt.models.attention.finite_size.finite_size_note`) at the point of
    ``xs`` (the interval's ends and the roots) where the linearized term is largest, warned once."""
    points = []
    for x in xs:
        vals = {**fixed, **dict.fromkeys(over.split("="), to_fraction(x, over))}
        points.append((signal_term(point_geometry(vals, geometry), 512), vals))
    _, vals = max(points, key=lambda t: t[0])
    note = finite_size_note(point_geometry(vals, geometry), vals["c"])
    if note:
        warnings.warn(note, FiniteSizeWarning, stacklevel=3)
    return note


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
