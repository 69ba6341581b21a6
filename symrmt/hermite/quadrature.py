"""Gaussian expectations by mpmath quadrature: the numeric side of the Hermite data.

Used when a coefficient has no closed form (``tanh``, ``sigmoid``, ``softplus``, ...):
:func:`mpmath.quad` at the requested precision plus :data:`GUARD_DPS` guard digits,
split at the kinks of ``f``, with its error estimate checked.  The integrands are
compiled from their SymPy form by the package's one compile step.
"""

from __future__ import annotations


import mpmath
import sympy as sp

from symrmt.errors import ParameterError
from symrmt.cache import cached
from symrmt.core.certify import agree
from symrmt.errors import NotTrapezoid as _NotTrapezoid, QuadratureError  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.hermite.variable import T, hermite_poly
from symrmt.codegen.compile import compile_expr
from symrmt.parsing import run_limited, LIMITS, ParseLimitError

__all__ = [
    "GUARD_DPS",
    "QuadratureError",
    "mp_function",
    "sympy_to_mpf",
    "exact_to_mpf",
    "quad_pieces",
    "numeric_hermite",
    "numeric_square",
    "trapezoid_moments",
]

#: Guard digits used inside every numeric evaluation.
GUARD_DPS = 15


# ---------------------------------------------------------------------------


@cached(maxsize=1024)
def mp_function(g):
    """``g``, a SymPy expression in ``t``, compiled to a callable of one mpf (cached per ``g``).

    >>> mp_function(T ** 2 - 1)(mpmath.mpf(3))
    mpf('8.0')
    """
    return compile_expr(T, g, floats_ok=True)


def sympy_to_mpf(value, dps):
    """A real SymPy number (or ``+-oo``) as an mpf at the current working precision, evaluated by SymPy to
    ``dps + 5`` digits.  Raises :class:`ParameterError` for a number that is not real.

    >>> with mpmath.workdps(20):
    ...     print(sympy_to_mpf(sp.Rational(1, 3), 20), sympy_to_mpf(-sp.oo, 20))
    0.33333333333333333333 -inf
    """
    if value == sp.oo:
        return mpmath.inf
    if value == -sp.oo:
        return -mpmath.inf
    v = sp.N(value, dps + 5)
    if not v.is_real:
        raise ParameterError(f"not a real number: {value}")
    return mpmath.mpf(str(v))


def _peak_points(fn, a, b):
    """Points around the largest value of ``|fn|`` on ``[a, b]``.

    A Gaussian-weighted integrand such as ``exp(50 t) exp(-t^2/2)`` has all its mass near ``t = 50``;
    quadrature nodes placed only around 0 miss it and the error estimate does not see it.  The search
    runs on a grid of step 1/2 over ``[-300, 300]`` and, beyond, on a geometric grid (ratio 1.05) up to
    ``|t| = 10^6`` (``exp(700 t)`` peaks at ``t = 700``, its square at ``1400``); the best grid point
    is then refined by a golden-section search of ``log |fn|``."""
    cands = [i / 2 for i in range(-600, 601)]
    x = 300.0
    while x < 1e6:
        x *= 1.05
        cands += [x, -x]
    best, arg = None, None
    with mpmath.workdps(15):
        def val(t):
            try:
                v = abs(mpmath.mpmathify(fn(mpmath.mpf(t))))
            except (ZeroDivisionError, ValueError, OverflowError, TypeError):
                return None
            return v if mpmath.isfinite(v) else None

        for t in cands:
            if not a < t < b:
                continue
            v = val(t)
            if v is not None and (best is None or v > best):
                best, arg = v, t
        if arg is None or abs(arg) < 3:
            return []
        if abs(arg) > 300:  # refine between the geometric neighbours
            lo, hi = arg / 1.05 if arg > 0 else arg * 1.05, arg * 1.05 if arg > 0 else arg / 1.05
            lo, hi = max(lo, a), min(hi, b)
            g = (mpmath.sqrt(5) - 1) / 2

            def lv(t):
                v = val(t)
                return -mpmath.inf if v is None or v == 0 else mpmath.log(v)

            for _ in range(80):
                x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
                if lv(x1) >= lv(x2):
                    hi = x2
                else:
                    lo = x1
                if hi - lo < 0.25:
                    break
            arg = float((lo + hi) / 2)
    return [arg + d for d in (-20, -10, -5, -2, 0, 2, 5, 10, 20)]


def _refined(pts):
    """A second set of breakpoints (midpoints added, the ends kept): other quadrature nodes."""
    out = set(pts)
    finite = [p for p in pts if mpmath.isfinite(p)]
    for x, y in zip(finite[:-1], finite[1:]):
        out.add((x + y) / 2)
    if finite:
        if not mpmath.isfinite(pts[0]):
            out.add(finite[0] - 3)
        if not mpmath.isfinite(pts[-1]):
            out.add(finite[-1] + 3)
    return sorted(out)


def _quad_once(fn, pts, dps, g, lo, hi):
    """One tanh-sinh quadrature at ``dps`` working digits (escalating the degree), with its error estimate."""
    value = error = None
    for degree in (None, 8, 10):
        kw = {} if degree is None else {"maxdegree": degree}
        value, error = mpmath.quad(fn, pts, error=True, **kw)
        if error <= mpmath.mpf(10) ** -(dps - GUARD_DPS + 5) * max(1, abs(value)):
            return value
    raise QuadratureError(
        f"quadrature of E[({g}) * ...] over ({lo}, {hi}) did not converge: "
        f"error estimate {mpmath.nstr(error, 3)} at {dps - GUARD_DPS} digits; ask for fewer digits, "
        "or check that f is finite and integrable against the Gaussian"
    )


#: extra working digits of the second (certifying) quadrature
CERTIFY_EXTRA_DPS = 10


#: seconds allowed to one certified tanh-sinh quadrature (all its pieces); beyond, QuadratureError
QUAD_SECONDS = 30.0


def quad_pieces(pieces, weight_power, dps, factor=None):
    """``E[prod(g)^weight_power * factor]``, ``xi ~ N(0, 1)``, by certified tanh-sinh quadrature over the smooth
    ``pieces`` ``((lo, hi, g), ...)`` of ``f`` (``factor``: an expression in ``t``, e.g. ``He_k``); an mpf correct
    to ``dps`` digits.

    Each piece is integrated twice, on two sets of breakpoints at two precisions; raises :class:`QuadratureError`
    when they disagree or when the whole takes more than :data:`QUAD_SECONDS` seconds.

    >>> mpmath.nstr(quad_pieces(((-sp.oo, sp.oo, T),), 2, 15), 15)  # E[xi^2] = 1
    '1.0'
    >>> mpmath.nstr(quad_pieces(((-sp.oo, sp.oo, sp.tanh(T)),), 2, 12), 12)  # nu of tanh, no closed form
    '0.394294490398'
    """
    f = " / ".join(str(g) for _, _, g in pieces)
    return run_limited(_quad_pieces, (pieces, weight_power, dps, factor), QUAD_SECONDS,
                       what=f"the certified quadrature of a Gaussian expectation of f = {f} at {dps} digits "
                       "(a steep or kinked integrand; ask for fewer digits)", error=QuadratureError)


def _quad_pieces(pieces, weight_power, dps, factor=None):
    """E[prod(g)^weight_power * factor] by quadrature; returns an mpf correct to dps digits.

    Certified: each piece is integrated twice, by tanh-sinh on two different sets of breakpoints
    (so two different node sets) at two precisions (``dps + GUARD_DPS`` and ``CERTIFY_EXTRA_DPS``
    more); the two must agree to ``10^-(dps+2)`` times ``max(1, |value|)``, else :class:`QuadratureError`.  A
    quadrature that misses the mass of a steep integrand (all of ``exp(450 t)`` lies near
    ``t = 450``) then refuses instead of returning a wrong value.
    """
    work = dps + GUARD_DPS
    with mpmath.workdps(work + CERTIFY_EXTRA_DPS):
        total = mpmath.mpf(0)
        for lo, hi, g in pieces:
            integrand_expr = g**weight_power * (factor if factor is not None else 1) * sp.exp(-(T**2) / 2)
            fn = mp_function(integrand_expr)
            a, b = sympy_to_mpf(lo, work), sympy_to_mpf(hi, work)
            pts = sorted({a, b, *(x for x in [mpmath.mpf(0), *_peak_points(fn, a, b)] if a < x < b)})
            with mpmath.workdps(work):
                first = _quad_once(fn, pts, work, g, lo, hi)
            second = _quad_once(fn, _refined(pts), work + CERTIFY_EXTRA_DPS, g, lo, hi)
            if not agree(first, second, dps + 1, floor=1):  # the core's test: within 10^-(dps+2) max(|.|, 1)
                raise QuadratureError(
                    f"quadrature of E[({g}) * ...] over ({lo}, {hi}) is not certified: two rules disagree "
                    f"({mpmath.nstr(first, 12)} vs {mpmath.nstr(second, 12)}); the integrand is too steep for "
                    "the quadrature (no closed form of this expectation is known)"
                )
            total += second
        total /= mpmath.sqrt(2 * mpmath.pi)
    with mpmath.workdps(dps):
        return +total


#: most nodes of the trapezoidal rule on the whole line (beyond: tanh-sinh, or refused)
TRAPEZOID_NODES = 60_000


@cached(maxsize=64)
def trapezoid_moments(g, kmax, dps):
    """``(E[g He_0], ..., E[g He_kmax], E[g^2])`` by the trapezoidal rule on the whole line, certified.

    Takes ``g`` (a SymPy expression in ``t``, smooth on the whole line), the highest order ``kmax`` and the
    digits ``dps``; returns the ``kmax + 2`` mpf values, each correct to ``dps`` digits (cached).  Raises
    :class:`~symrmt.errors.NotTrapezoid` where the rule does not converge (a kink, ``g`` not evaluable far
    out), and the callers (:func:`numeric_hermite`) use tanh-sinh instead.

    >>> [mpmath.nstr(v, 15) for v in trapezoid_moments(T**2, 2, 15)]  # E[t^2] = 1, E[t^2 He_2] = 2, E[t^4] = 3
    ['1.0', '0.0', '2.0', '3.0']

    For ``g`` analytic in a strip around the real line the trapezoidal rule of step ``h`` on
    ``g(t) He_k(t) exp(-t^2/2)`` has an error that falls like ``exp(-c/h)``; the step is halved
    (``1/4, 1/8, ...``: nested nodes) until two consecutive steps agree, for every moment, to
    ``10^-(dps+3)`` times ``max(1, |value|)``; the finer sum is returned (its error is about the square of
    the agreement).  All the moments share the nodes (``He_k`` by its three-term recurrence), so
    ``a_0 .. a_60`` cost about what one does.  The line is cut at ``|t| = L`` where the weight times
    ``t^kmax`` and ``|g|`` is below ``10^-(dps+GUARD_DPS)``.  A kink (``Abs`` inside ``g``) makes the
    halving stall: :class:`~symrmt.errors.NotTrapezoid` after :data:`TRAPEZOID_NODES` nodes, and the caller uses tanh-sinh.
    """
    work = dps + GUARD_DPS
    fn = mp_function(g)
    with mpmath.workdps(work):
        ln10 = mpmath.log(10)
        L = mpmath.sqrt(2 * ln10 * (work + 5))
        for _ in range(3):  # room for the growth of He_kmax and of g
            try:
                grow = max(abs(mpmath.mpmathify(fn(L))), abs(mpmath.mpmathify(fn(-L))), 1)
            except (ZeroDivisionError, ValueError, OverflowError, TypeError):
                raise _NotTrapezoid from None
            L = mpmath.sqrt(2 * (ln10 * (work + 5) + kmax * mpmath.log(L + 1) + mpmath.log(grow)))
        tol = mpmath.mpf(10) ** -(dps + 3)
        nmom = kmax + 2
        sums = [mpmath.mpf(0)] * nmom

        def add(t, w):
            """Add the node ``t`` with Gaussian weight ``w = exp(-t^2/2)``."""
            try:
                ft = mpmath.mpmathify(fn(t))
            except (ZeroDivisionError, ValueError, OverflowError, TypeError):
                raise _NotTrapezoid from None
            if isinstance(ft, mpmath.mpc) or not mpmath.isfinite(ft):
                raise _NotTrapezoid
            w = ft * w
            sums[nmom - 1] += ft * w
            h0, h1 = mpmath.mpf(1), t
            sums[0] += w
            if kmax >= 1:
                sums[1] += w * t
            for k in range(1, kmax):
                h0, h1 = h1, t * h1 - k * h0
                sums[k + 1] += w * h1

        def level(first, step, n):
            """Nodes ``first + i step``, ``i = 0..n-1``, and their mirrors, with the weights by recurrence:
            ``exp(-(t + step)^2/2) = exp(-t^2/2) exp(-t step - step^2/2)``."""
            w = mpmath.exp(-first * first / 2)
            r = mpmath.exp(-first * step - step * step / 2)
            q = mpmath.exp(-step * step)
            t = first
            for _ in range(n):
                add(t, w)
                if t != 0:
                    add(-t, w)
                w *= r
                r *= q
                t += step

        h = mpmath.mpf(1) / 4
        n = int(L / h) + 1
        level(mpmath.mpf(0), h, n + 1)
        count = 2 * n + 1
        prev = [v * h for v in sums]
        last = None
        while True:
            h /= 2
            n = int(L / h) + 1
            count += n + 1
            if count > TRAPEZOID_NODES:
                raise _NotTrapezoid
            level(h, 2 * h, (n + 1) // 2 + 1)  # the odd multiples of the new step
            cur = [v * h for v in sums]
            d = max(abs(a - b) / max(1, abs(a)) for a, b in zip(cur, prev))
            # accept when the change is below tol^(2/3) and falls at least like the power 3/2 of the previous
            # one (the geometric convergence of the rule for analytic g: the error of cur is about d^2 <= tol^(4/3))
            if d <= tol or (last is not None and last < 1 and d <= tol ** (mpmath.mpf(2) / 3) and d <= last ** 1.5):
                break
            prev, last = cur, d
        norm = mpmath.sqrt(2 * mpmath.pi)
        return tuple(v / norm for v in cur)


@cached(maxsize=256)
def _far_peak(g) -> bool:
    """True when ``|g| exp(-t^2/2)`` peaks farther than 3 from 0."""
    return bool(_peak_points(mp_function(g * sp.exp(-(T**2) / 2)), -mpmath.inf, mpmath.inf))


def _whole_line(pieces):
    return len(pieces) == 1 and pieces[0][0] == -sp.oo and pieces[0][1] == sp.oo


def _by_trapezoid(pieces, k, dps, square=False):
    """The trapezoidal moment (None where it does not apply); ``kmax`` rounded up to share the nodes."""
    if not _whole_line(pieces):
        return None
    g = pieces[0][2]
    if _far_peak(g):  # the mass lies far from 0: the peak-following tanh-sinh
        return None
    kmax = next(m for m in (3, 64, k) if m >= k)  # two node sets shared by all orders
    try:
        vals = trapezoid_moments(g, kmax, -(-dps // 10) * 10)  # and by nearby precisions
    except _NotTrapezoid:
        return None
    with mpmath.workdps(dps):
        return +(vals[-1] if square else vals[k])


def _caps(pieces, dps, k, key):
    f = " / ".join(str(g) for _, _, g in pieces)
    if dps > LIMITS[key]:
        how = ("the trapezoidal rule" if key == "trapezoid_digits" else
               "tanh-sinh (f has kinks, or its mass lies far from 0, or the trapezoidal rule did not converge)")
        raise ParseLimitError(
            f"f = {f} has no closed-form Gaussian expectations; its quadrature by {how} would need {dps} working "
            f"digits, above the limit {LIMITS[key]} (LIMITS[{key!r}]); ask for fewer digits (limit and sweep add "
            "about 30 guard digits to --digits)")
    if key == "quadrature_digits" and k > LIMITS["quadrature_k"]:
        raise ParseLimitError(
            f"f = {f} has no closed-form Gaussian expectations, and a_{k} by tanh-sinh quadrature is above the "
            f"limit k <= {LIMITS['quadrature_k']} (LIMITS['quadrature_k'])")


@cached(maxsize=1024)
def numeric_hermite(pieces, k, dps):
    """``E[f(xi) He_k(xi)]`` (an mpf to ``dps`` digits) by quadrature, ``f`` given by its smooth pieces
    ``((lo, hi, g), ...)``: the trapezoidal rule on the whole line, else certified tanh-sinh (cached).  Raises
    :class:`ParseLimitError` beyond ``LIMITS['trapezoid_digits']`` / ``LIMITS['quadrature_digits']`` /
    ``LIMITS['quadrature_k']`` and :class:`QuadratureError` for a quadrature it cannot certify.

    >>> relu = ((-sp.oo, 0, sp.Integer(0)), (0, sp.oo, T))
    >>> numeric_hermite(relu, 1, 15), numeric_hermite(((-sp.oo, sp.oo, T ** 2 - 1),), 2, 15)  # 1/2 and 2! = 2
    (mpf('0.5'), mpf('2.0'))
    """
    if _whole_line(pieces):
        _caps(pieces, dps, k, "trapezoid_digits")
        v = _by_trapezoid(pieces, k, dps)
        if v is not None:
            return v
    _caps(pieces, dps, k, "quadrature_digits")
    return quad_pieces(pieces, 1, dps, hermite_poly(k) if k else None)


@cached(maxsize=256)
def numeric_square(pieces, dps):
    """``E[f(xi)^2]`` (an mpf to ``dps`` digits) by quadrature, ``f`` given by its smooth pieces, with the methods,
    limits and errors of :func:`numeric_hermite` (cached).

    >>> numeric_square(((-sp.oo, 0, sp.Integer(0)), (0, sp.oo, T)), 15)  # E[max(xi, 0)^2] = 1/2
    mpf('0.5')
    """
    if _whole_line(pieces):
        _caps(pieces, dps, 0, "trapezoid_digits")
        v = _by_trapezoid(pieces, 0, dps, square=True)
        if v is not None:
            return v
    _caps(pieces, dps, 0, "quadrature_digits")
    return quad_pieces(pieces, 2, dps)


def exact_to_mpf(value, dps):
    """A real SymPy number as an mpf correct to ``dps`` digits (evaluated with :data:`GUARD_DPS` guard digits, rounded
    once to ``dps``); raises :class:`ParameterError` for a number that is not real.

    >>> mpmath.nstr(exact_to_mpf(sp.pi, 20), 20)
    '3.1415926535897932385'
    """
    with mpmath.workdps(dps + GUARD_DPS):
        x = sympy_to_mpf(value, dps + GUARD_DPS)
    with mpmath.workdps(dps):
        return +x
