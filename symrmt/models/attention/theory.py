"""Limits of the interpolation errors: the public theory API (mpmath results).

:func:`ridge_limit` (``E_RR`` of ridge regression on the tokens), :func:`attention_limit` (``E_A`` of nonlinear
Attention, with the solved fixed point on request) and :func:`limit` (both) take the parameters of
:func:`symrmt.models.attention.montecarlo.simulate` and return the ``n, p -> oo`` limits of the same quantities
(``c = p/n`` fixed, ``gamma > 0``, ``f`` centered, ``W = alpha I +`` low rank), each to ``digits`` correct
significant digits, certified at two working precisions or refused with an error.  What the theory covers and
how a value is certified: ``docs/theory.md`` sections 1, 2 and 8.
"""

from __future__ import annotations

from fractions import Fraction
from dataclasses import dataclass

import mpmath

from symrmt.cache import cache_dict
from symrmt.core.certify import ESCALATIONS, GUARD, Disagree, agree, certify
from symrmt.proofs.certified import certified
from symrmt.core.numbers import mpf_of
from symrmt.errors import BranchError, ConvergenceError, PrecisionError, SolverError
from symrmt.models.attention.solver import FixedPoint, lowrank_D, woodbury_value
from symrmt.models.attention.compiled import ridge_function, closed_form_phi
from symrmt.parsing import check_digits
from symrmt.models.attention.geometry import Geometry, LowRankGeometry, as_low_rank
from symrmt.errors import ParameterError
from symrmt.models.attention.params import check_c, check_gammas, to_fraction
from symrmt.models.attention.hermite_data import hermite_at_least, hermite_inputs, scaled_nonlinearity

__all__ = [
    "AttentionPoint",
    "BranchError",
    "ConvergenceError",
    "PrecisionError",
    "SolverError",
    "ATTENTION_C_RANGE",
    "attention_limit",
    "c_range_note",
    "scale_note",
    "guard_digits",
    "hermite_inputs",
    "hermite_at_least",
    "limit",
    "ridge_limit",
    "route_for",
    "scaled_nonlinearity",
]

#: gamma values at which attention_limit solves (a PrecisionError naming gamma outside): below
#: 1e-12 the continuation and guard digits cost minutes, above 1e20 the Woodbury system is
#: numerically singular at any affordable precision
ATTENTION_GAMMA_RANGE = (Fraction(1, 10**12), Fraction(10**20))
#: digits of the Hermite inputs beyond the highest working precision
HERMITE_EXTRA = 5
#: c values at which attention_limit is certified (measured at gamma = 0.01, 1, 100: relu without signal from
#: c = 1e-9 to 1e16, and tanh, cos and erf with a signal and weights at c = 1e-8 and 1e12; relu fails at c = 1e-10,
#: 1e-16, 1e-20 and 1e20): outside, the fixed point mixes terms of order c and 1/c that its continuation from
#: large gamma may not resolve at any working precision, and a failure says so (c_range_note)
ATTENTION_C_RANGE = (Fraction(1, 10**8), Fraction(10**12))


@dataclass(frozen=True)
class AttentionPoint:
    """The solved limit at one ``gamma`` (all values mpf with the requested digits).

    Attributes
    ----------
    gamma : mpf
    error : mpf
        ``E_A(gamma) = lim (gamma^2/n) y^T Q^2 y``.
    quadratic_form : mpf
        ``lim y^T Q y / n`` (``varphi``).
    stieltjes : mpf
        ``m(-gamma) = lim tr Q / n``: the Stieltjes transform of the limiting
        spectrum of ``K^T X^T X K / n`` at ``z = -gamma``.
    block_traces : tuple
        The noise-only 3x3 block-trace matrix ``Gm`` (6 entries, order
        ``G11, G12, G13, G22, G23, G33``), and ``dGm/dgamma`` in ``block_traces_derivative``.

    Examples
    --------
    A point made by hand (the solver makes them):

    >>> pt = AttentionPoint(gamma=mpmath.mpf(1), error=mpmath.mpf("0.25"), quadratic_form=mpmath.mpf("0.5"),
    ...                     stieltjes=mpmath.mpf("0.5"), block_traces=(0,) * 6, block_traces_derivative=(0,) * 6)
    >>> float(pt.error), len(pt.block_traces)
    (0.25, 6)
    """

    gamma: object
    error: object
    quadratic_form: object
    stieltjes: object
    block_traces: tuple
    block_traces_derivative: tuple



def _gstr(g) -> str:
    """``gamma`` for a message: 8 significant digits, any exponent (``1e-400`` stays ``1.0e-400``, not ``0``)."""
    if isinstance(g, Fraction):
        with mpmath.workdps(20):
            return mpmath.nstr(mpmath.mpf(g.numerator) / g.denominator, 8)
    return mpmath.nstr(g, 8) if isinstance(g, mpmath.mpf) else f"{float(g):.8g}"

def _decades(gamma) -> int:
    """``|log10 gamma|`` (rounded up) of a positive Fraction, without a float (no underflow)."""
    g = Fraction(gamma)
    return abs(len(str(g.numerator)) - len(str(g.denominator))) + 1


def guard_digits(gamma) -> int:
    """The guard digits at ``gamma``: :data:`GUARD`, plus one per decade below 1 and two per decade above 10.

    Takes ``gamma`` as a positive Fraction (no float, so any exponent); returns an int.

    >>> GUARD, guard_digits(Fraction(1)), guard_digits(Fraction(1, 1000)), guard_digits(Fraction(1000))
    (10, 10, 13, 18)
    """
    # small gamma costs digits in the implicit derivative and in 1/gamma terms; large gamma
    # cancels about log10(gamma) digits in the Stieltjes root and again in 1 - E: the guard
    # grows with |log10 gamma| in both directions
    # (below 1: one digit per whole decade, floor(-log10 gamma), as before the large-gamma fix)
    return GUARD + (_decades(gamma) - 1 if gamma < 1 else 2 * _decades(gamma) if gamma > 10 else 0)


def c_range_note(c) -> str | None:
    """Why a failed attention solve at ``c`` outside :data:`ATTENTION_C_RANGE` failed, and what to try
    (``None`` inside the range).  Takes ``c`` as a number or a Fraction.

    >>> ATTENTION_C_RANGE, c_range_note(1) is None
    ((Fraction(1, 100000000), Fraction(1000000000000, 1)), True)
    >>> print(c_range_note(Fraction(1, 10**9)))
    c = 1.0e-9 is so small that the fixed point mixes terms of order c and 1/c, about 18 decades apart, which
    its continuation from large gamma (it starts near gamma = 1e4 (1 + c)(1 + 1/c)) does not resolve; more
    digits do not help: the attention limit is certified for 1e-08 <= c <= 1e+12, use a c in that range (the
    ridge limit E_RR alone is certified at any c > 0)
    """
    lo, hi = ATTENTION_C_RANGE
    c = Fraction(c)
    if lo <= c <= hi:
        return None
    side = "small" if c < lo else "large"
    return (f"c = {_gstr(c)} is so {side} that the fixed point mixes terms of order c and 1/c, about "
            f"{2 * (_decades(c) - 1)} decades apart, which its continuation from large gamma (it starts near "
            f"gamma = 1e4 (1 + c)(1 + 1/c)) does not resolve; more digits do not help: the attention limit is "
            f"certified for {float(lo):g} <= c <= {float(hi):g}, use a c in that range (the ridge limit E_RR "
            "alone is certified at any c > 0)")


SCALE_RANGE = (Fraction(1, 10**6), Fraction(10**6))
"""``nu = E[f(xi)^2]`` outside this range marks a nonlinearity whose scale is far from O(1) (:func:`scale_note`)."""


def scale_note(a1, nu, gamma) -> str | None:
    """Why a failed attention solve for an ``f`` whose scale is far from O(1) failed, and what to try
    (``None`` when ``nu`` lies in :data:`SCALE_RANGE`).  Takes the Hermite data ``a_1, nu`` and ``gamma``
    (ints, Fractions or mpfs); uses that ``s f`` at ridge ``gamma`` gives the ``E_A`` of ``f`` at ``gamma / s``.

    >>> scale_note(1, 2, 1) is None
    True
    >>> note = scale_note(10**12, 10**24, 1)
    >>> print(note[:97])
    the scale of f is far outside O(1): nu = E[f(xi)^2] = 1.0e+24, a_1 = 1.0e+12; since s f at gamma
    >>> print(note[-93:])
    more digits do not help: rescale f to O(1) (divide f by about 1.0e+12, and gamma by the same)
    """
    with mpmath.workdps(30):
        nu_, a1_, g = (mpf_of(Fraction(x)) if not isinstance(x, mpmath.mpf) else +x for x in (nu, a1, gamma))
        if mpf_of(SCALE_RANGE[0]) <= nu_ <= mpf_of(SCALE_RANGE[1]):
            return None
        s = mpmath.sqrt(nu_)
        return (f"the scale of f is far outside O(1): nu = E[f(xi)^2] = {mpmath.nstr(nu_, 2)}, a_1 = "
                f"{mpmath.nstr(a1_, 2)}; since s f at gamma gives the same E_A as f at gamma/s, this is a solve at "
                f"the effective gamma/sqrt(nu) = {mpmath.nstr(g / s, 2)}, where the fixed point is ill-posed; more "
                f"digits do not help: rescale f to O(1) (divide f by about {mpmath.nstr(s, 2)}, and gamma by the "
                "same)")


def _agree(x, y, digits: int) -> bool:
    """:func:`symrmt.core.certify.agree` (kept for this module's callers)."""
    return agree(x, y, digits)


def ridge_limit(c, gammas, snr=0, digits: int = 15):
    """Limit of the ridge-regression interpolation error ``E_RR(gamma)``.

    Compiled from the SymPy closed form :func:`symrmt.models.attention.equations.ridge_error_closed_form`, with the
    Marchenko-Pastur root in its cancellation-free form (:func:`symrmt.models.attention.equations.ridge_error_stable_form`).

    Parameters
    ----------
    c : number or str
        ``p/n > 0``.
    gammas : number or list
        Ridge parameters ``gamma > 0``.
    snr : number or str
        ``||mu||^2``.
    digits : int
        Correct significant digits wanted.

    Returns
    -------
    list of mpf, each carrying the ``digits`` asked (:class:`symrmt.proofs.certified.CertifiedMpf`)

    Examples
    --------
    >>> import mpmath
    >>> [mpmath.nstr(v, 30) for v in ridge_limit("1/2", ["0.1", 1], snr=1, digits=30)]
    ['0.260290284671631894856080116241', '0.388611792030507433008221659263']
    """
    cf = check_c(c)
    gs = check_gammas(gammas)
    s = to_fraction(snr, "snr")
    if s < 0:
        raise ParameterError(f"snr = ||mu||^2 must be >= 0, got {float(s)!r}")
    fn = ridge_function()
    out = []
    for g in gs:
        def attempt(dps, g=g):
            guard = dps - digits
            vals = []
            for extra in (0, 10 + guard):  # the second solve carries twice the guard
                with mpmath.workdps(digits + guard + extra):
                    vals.append(fn(mpf_of(g), mpf_of(cf), mpf_of(s)))
            if not _agree(vals[0], vals[1], digits):
                raise Disagree(f"solves at {dps} and {dps + 10 + guard} digits disagree beyond digit {digits}")
            return vals[1], vals

        v = certify(attempt, digits, guard_digits(g), ESCALATIONS, catch=(),
                    fail=lambda failures, dps, g=g: PrecisionError(
                        f"ridge limit at gamma={_gstr(g)}: could not reach {digits} digits")).value
        if not (0 <= v <= 1):
            raise BranchError(f"ridge limit {mpmath.nstr(v, 10)} at gamma={_gstr(g)} is outside [0, 1]")
        # the value keeps every bit of the solve and prints the digits asked, rounded once (rounding it to the
        # precision of ``digits`` first would round twice and can change the last printed digit)
        out.append(certified(v, digits))
    return out


def route_for(a1, geometry) -> str:
    """Which formula gives ``varphi`` (the solver uses a closed form whenever one applies).

    * ``"noise_only"`` -- ``mu = 0``: ``varphi = G_11`` for any weights (the coefficient
      ``e^T H U = g_1^T (x) mu^T`` of the low-rank update vanishes);
    * ``"a1_zero"`` -- ``a_1 = 0``: :func:`symrmt.models.attention.equations.a1_zero_phi`;
    * ``"aligned"`` -- every ``w_K^j, w_Q^j`` parallel to ``mu`` (Gram of rank one):
      :func:`symrmt.models.attention.equations.aligned_phi` with ``w_K^T w_Q = sum_j w_K^j . w_Q^j``;
    * ``"general"`` -- the ``3(2r+2)``-square Woodbury update (12x12 for rank one).

    Takes ``a_1`` (any number) and a geometry (as :func:`~symrmt.models.attention.geometry.as_low_rank`).

    >>> from symrmt.models.attention.geometry import Geometry
    >>> aligned = Geometry(snr=1, wk2=1, wq2=1, wkwq=1, muwk=1, muwq=1)
    >>> route_for(1, None), route_for(0, Geometry(snr=1)), route_for(1, aligned), route_for(1, Geometry(snr=1, wk2=1))
    ('noise_only', 'a1_zero', 'aligned', 'general')
    """
    geometry = as_low_rank(geometry)
    if geometry.snr == 0:
        return "noise_only"
    if a1 == 0:
        return "a1_zero"
    if geometry.rank() == 1:
        return "aligned"
    return "general"


def _attention_at(fp: FixedPoint, phi_at, g, dps: int, start=None):
    try:
        gv, dgv, step = fp.solve(g, dps, start=start)
    except ZeroDivisionError as exc:  # a singular Jacobian on the way from large gamma (core.linalg.inverse)
        raise ConvergenceError(f"the fixed point's matrix is numerically singular on the way to gamma={_gstr(g)}") \
            from exc
    with mpmath.workdps(dps):
        try:
            phi, dphi = phi_at(gv, dgv, dps)
        except ZeroDivisionError as exc:  # a closed form's removable singularity, or a singular I + D H
            raise ConvergenceError(
                f"varphi divides by zero at gamma={_gstr(g)} (a closed form's removable singularity, or a "
                "singular Woodbury system I + D H); try route='general' or a nearby gamma"
            ) from exc
        gam = mpf_of(g)
        err = -gam**2 * dphi
    return gv, dgv, phi, err, step


def attention_limit(f, c, gammas, geometry: Geometry | LowRankGeometry | None = None, diagonal: str = "zero",
                    digits: int = 15, details: bool = False, route: str | None = None):
    r"""Limit of the Attention interpolation error ``E_A(gamma)``.

    Solves the noise-only operator-valued fixed point (compiled from
    :func:`symrmt.models.attention.equations.fixed_point_system`) by continuation from large
    ``gamma`` and Newton's method, then adds the signal and the weights by the
    Woodbury identity of :mod:`symrmt.models.attention.equations`; ``E_A = -gamma^2 d varphi/d gamma``
    with ``dGm/dgamma`` from implicit differentiation.

    Parameters
    ----------
    f : Nonlinearity, str or dict
        The nonlinearity (or its Hermite data ``{"a1", "nu", "d"}``).
    c : number or str
        ``p/n > 0``.
    gammas : number or list
        ``gamma > 0``.
    geometry : Geometry or LowRankGeometry
        Gram data of ``(mu, w_K, w_Q)`` (or of ``(mu, w_K^1..r, w_Q^1..r)`` with ``alpha``);
        default ``mu = 0, W = I``.
    diagonal : {"zero", "keep"}
    digits : int
        Correct significant digits wanted (checked by a second solve at higher precision).
    details : bool
        Return :class:`AttentionPoint` objects instead of bare errors.
    route : str, optional
        Force a formula for ``varphi`` (see :func:`route_for`); by default the
        closed form of the special case is used whenever it applies.  Forcing
        ``"general"`` is how the derivations check the closed forms.

    Returns
    -------
    list of mpf (or of AttentionPoint), one per ``gamma``, in the order given; each mpf carries the
    ``digits`` asked (:class:`symrmt.proofs.certified.CertifiedMpf`: its ``repr`` and ``str`` show them).

    Examples
    --------
    >>> import mpmath
    >>> from symrmt.models.attention.geometry import Geometry
    >>> v = attention_limit("tanh", "1/2", [1], Geometry(snr=1), digits=30)
    >>> mpmath.nstr(v[0], 30)
    '0.431819565620211295530756045623'
    """
    cf = check_c(c)
    gs = check_gammas(gammas)
    for g in gs:
        if not ATTENTION_GAMMA_RANGE[0] <= g <= ATTENTION_GAMMA_RANGE[1]:
            raise PrecisionError(
                f"attention limit at gamma={_gstr(g)}: outside [{float(ATTENTION_GAMMA_RANGE[0]):g}, "
                f"{float(ATTENTION_GAMMA_RANGE[1]):g}], where the fixed point is solved to the digits asked "
                "(below, the solve costs minutes: use the ridgeless limit E_A(0+); above, E_A = 1 - O(1/gamma) "
                "cancels every digit of the Woodbury system)"
            )
    geometry = as_low_rank(geometry)
    digits = check_digits(digits)  # the one digits rule: an integer (NumPy too) in [1, LIMITS['digits']]
    if geometry.alpha != 1:
        f = scaled_nonlinearity(f, geometry.alpha)
        geometry = geometry.scaled()
    guards = {g: guard_digits(g) for g in gs}
    a1, nu, d = hermite_at_least(f, diagonal, digits + max(guards.values()) + 10 + HERMITE_EXTRA)

    route = route if route is not None else route_for(a1, geometry)
    solvers = {}

    def solver_for(dps):
        """``(FixedPoint, phi_at)`` whose Hermite inputs carry ``dps + HERMITE_EXTRA`` digits (recomputed
        when an escalation needs more): the two-precision comparison cannot see an error in a_1 or nu."""
        if solvers.get("dps", -1) < dps:
            a1_, nu_, d_ = (a1, nu, d) if not solvers else hermite_at_least(f, diagonal, dps + HERMITE_EXTRA)
            solvers.update(dps=dps, fp=_fixed_point(cf, a1_, nu_, d_), phi=_phi_function(route, a1_, cf, geometry))
        return solvers["fp"], solvers["phi"]

    solver_for(digits + max(guards.values()) + 10)
    results = {}
    for g in sorted(gs, reverse=True):  # continuation runs from large gamma down
        def attempt(dps, g=g):
            fp, phi_at = solver_for(dps + 10)
            lo = _attention_at(fp, phi_at, g, dps)
            # residual check: Newton must have reached beyond the digits asked for
            if lo[4] > mpmath.mpf(10) ** -(digits + 2):
                raise ConvergenceError(
                    f"Newton at {dps} digits stalled at a relative step {mpmath.nstr(lo[4], 3)}"
                )
            # the same system at 10 more digits, started from the first solution
            hi = _attention_at(fp, phi_at, g, dps + 10, start=lo[0])
            if _agree(lo[3], hi[3], digits) and _agree(lo[2], hi[2], digits):
                return hi[3], hi
            raise Disagree(f"solves at {dps} and {dps + 10} digits disagree beyond digit {digits}")

        hi = certify(attempt, digits, guards[g], ESCALATIONS, fail=lambda failures, dps, g=g: PrecisionError(
            f"attention limit at gamma={_gstr(g)}: could not certify {digits} digits with up to "
            f"{dps + 10} working digits ({'; '.join(dict.fromkeys(failures))}); "
            f"{c_range_note(cf) or scale_note(a1, nu, g) or 'ask for fewer digits'}"
        )).data
        gv, dgv, phi, err, _ = hi
        with mpmath.workdps(digits + 5):
            gam = mpf_of(g)
            slack = mpmath.mpf(10) ** (-digits)
            if not (-slack <= err <= 1 + slack) or not (0 < phi <= (1 + slack) / gam):
                raise BranchError(
                    f"attention limit at gamma={_gstr(g)}: E_A = {mpmath.nstr(err, 10)} (must be in [0, 1]) and "
                    f"y^T Q y/n = {mpmath.nstr(phi, 10)} (must be in (0, 1/gamma]); the solution is not physical"
                )
        with mpmath.workdps(digits):
            if details:
                results[g] = AttentionPoint(
                    gamma=+gam, error=+err, quadratic_form=+phi, stieltjes=+gv[0],
                    block_traces=tuple(+x for x in gv), block_traces_derivative=tuple(+x for x in dgv),
                )
            else:
                results[g] = certified(err, digits)  # every bit of the solve; prints the digits asked, rounded once
    return [results[g] for g in gs]


def _phi_function(route: str, a1, cf, geometry: LowRankGeometry):
    """``(G, dG, dps) -> (varphi, dvarphi/dgamma)`` for the chosen route."""
    if route == "noise_only":
        if geometry.snr != 0:
            raise ParameterError("route 'noise_only' needs snr = 0")
        return lambda gv, dgv, dps: (gv[0], dgv[0])
    if route in ("a1_zero", "aligned"):
        if route == "a1_zero" and a1 != 0:
            raise ParameterError("route 'a1_zero' needs a1 = 0")
        if route == "aligned" and geometry.rank() > 1:
            raise ParameterError("route 'aligned' needs every w_K^j, w_Q^j parallel to mu (Gram of rank one)")
        fn = closed_form_phi(route)

        def phi_closed(gv, dgv, dps):
            vals = fn(gv, dgv, +a1, mpf_of(cf), mpf_of(geometry.snr), mpf_of(geometry.trace_wkwq))
            return vals[0], vals[1]

        return phi_closed
    if route != "general":
        raise ParameterError(f"unknown route {route!r}; use noise_only, a1_zero, aligned or general")
    @_memo
    def D_at(dps):
        return lowrank_D(geometry, a1, cf, dps)

    return lambda gv, dgv, dps: woodbury_value(gv, dgv, D_at(dps))


_FIXED_POINTS = cache_dict("symrmt.models.attention.theory._FIXED_POINTS", 256)


def _fixed_point(cf, a1, nu, d) -> FixedPoint:
    """A cached :class:`FixedPoint` per exact parameter set, so that later calls start their
    continuation from the solutions already found (only as starting points: every value is
    re-polished and re-checked at the requested precision)."""
    key = (cf, to_fraction(a1, "a1"), to_fraction(nu, "nu"), to_fraction(d, "d"))
    fp = _FIXED_POINTS.get(key)
    if fp is None:
        fp = _FIXED_POINTS[key] = FixedPoint(cf, a1, nu, d)
    return fp


def _memo(fn):
    cache = {}

    def wrapper(dps):
        if dps not in cache:
            cache[dps] = fn(dps)
        return cache[dps]

    return wrapper


def limit(f, c, gammas, geometry: Geometry | LowRankGeometry | None = None, diagonal: str = "zero",
          digits: int = 15):
    """Both limits: ``{"ridge": [E_RR(gamma)...], "attention": [E_A(gamma)...]}`` (mpf lists).

    The theory counterpart of :func:`symrmt.models.attention.montecarlo.simulate`.  Takes and raises what
    :func:`ridge_limit` and :func:`attention_limit` take and raise.

    The inputs are checked before any solve:

    >>> limit("tanh", -1, [1])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: c = p/n must be positive, got -1
    >>> limit("tanh", "1/2", [0])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: gamma must be positive (the probe needs gamma > 0), got 0.0
    """
    geometry = as_low_rank(geometry)
    return {
        "ridge": ridge_limit(c, gammas, geometry.snr, digits),
        "attention": attention_limit(f, c, gammas, geometry, diagonal, digits),
    }
