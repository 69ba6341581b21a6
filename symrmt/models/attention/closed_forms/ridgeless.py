r"""Ridgeless limit ``gamma -> 0+`` of the Attention error: ``E_A(0+) = lim gamma varphi``, the share of ``y``
in the kernel of ``P = c K^T S K``.

Below the threshold (``c < 1``) the block traces scale as ``(alpha/gamma, rho, sigma/gamma, kappa gamma,
omega, tau/gamma)`` and their leading order solves a ``gamma``-free system (:func:`reduced_system_below`):
``E_A(0+) = 1 - c`` without signal, explicit for ``a_1 = 0`` (:func:`a1_zero_cubic`), a rational function of
the scaled traces for aligned weights (:func:`aligned_ridgeless_error`), the Woodbury formula for any geometry
(:func:`general_ridgeless_error`), the traces by Newton (:func:`ridgeless_traces`).  Above it (``c > 1``)
``E_A(0+) = 0`` and, for indefinite ``K``, ``E_A ~ (beta/2) sqrt(gamma)`` (:func:`rate_above`).  The
derivation is in ``docs/theory.md`` section 7.
"""

from __future__ import annotations


import mpmath
import sympy as sp

from symrmt.cache import cached
from symrmt.codegen.compile import compile_expr
from symrmt.errors import ParameterError
from symrmt.models.attention import equations as S
from symrmt.models.attention.solver import FixedPoint, lowrank_D, woodbury_value

eps = sp.Symbol("epsilon", positive=True)
alpha, rho, sigma, tau, kappa, omega, beta = sp.symbols("alpha rho sigma tau kappa omega beta", real=True)
#: scaled ridgeless block traces (c < 1), in the order of ``G_SYMBOLS``
BELOW = (alpha, rho, sigma, kappa, omega, tau)


def _compile(args, expr):
    """The package's one compile step (empty ``__builtins__``), without its common subexpressions."""
    return compile_expr(args, expr, cse=False, floats_ok=True)


def scaling_below():
    """``c < 1``: ``G -> (alpha/eps, rho, sigma/eps, kappa eps, omega, tau/eps)`` with ``eps = gamma``.

    Returns the two substitutions ``({G_ij: ...}, {gamma: eps})``.

    >>> sub, gsub = scaling_below()
    >>> sub[S.G_SYMBOLS[0]], sub[S.G_SYMBOLS[3]], gsub
    (alpha/epsilon, epsilon*kappa, {gamma: epsilon})
    """
    vals = (alpha / eps, rho, sigma / eps, kappa * eps, omega, tau / eps)
    return dict(zip(S.G_SYMBOLS, vals)), {S.gamma: eps}


def scaling_above():
    """``c > 1``, ``K`` indefinite: ``G -> (beta/eps, rho, sigma, kappa eps, beta eps, tau)``, ``eps = sqrt(gamma)``.

    Returns the two substitutions ``({G_ij: ...}, {gamma: eps^2})``.

    >>> sub, gsub = scaling_above()
    >>> sub[S.G_SYMBOLS[4]], gsub
    (beta*epsilon, {gamma: epsilon**2})
    """
    vals = (beta / eps, rho, sigma, kappa * eps, beta * eps, tau)
    return dict(zip(S.G_SYMBOLS, vals)), {S.gamma: eps**2}


def leading(expr, sub, gsub, shift=6):
    """``(order, coefficient)`` of the lowest power of ``eps`` in ``expr`` after the substitution.

    ``sub`` and ``gsub`` as :func:`scaling_below` returns them; ``shift`` bounds the negative powers
    looked for.  ``gamma G_11 + G_22 = alpha + kappa eps``:

    >>> leading(S.gamma * S.G_SYMBOLS[0] + S.G_SYMBOLS[3], *scaling_below())
    (0, alpha)
    """
    x = sp.expand(expr.subs(sub).subs(gsub) * eps**shift)
    p = sp.Poly(x, eps)
    low = min(m[0] for m in p.monoms())
    # factor_terms, not factor: multivariate factor() uses random evaluation points and its
    # run time varies wildly from run to run (minutes in some runs)
    return low - shift, sp.factor_terms(p.coeff_monomial(eps**low))


def det_factor_below():
    """The leading coefficient of ``det N`` (common factor of several reduced equations).

    With ``a_1 = 0`` only ``c^3 tau`` is left:

    >>> det_factor_below().subs(S.a1, 0)
    c**3*tau
    """
    return sp.factor_terms(leading(S.det_N(), *scaling_below())[1])


@cached(maxsize=1)
def reduced_system_below():
    """The 3x3 matrix of leading coefficients of :func:`symrmt.models.attention.equations.fixed_point_polynomial`
    under :func:`scaling_below`, with the factor :func:`det_factor_below` divided out where it divides.

    Takes nothing; returns an immutable 3x3 SymPy matrix.  (No doctest: deriving it takes seconds;
    ``tests/models/attention/closed_forms/test_ridgeless.py`` checks it.)
    """
    F = S.fixed_point_polynomial()
    sub, gsub = scaling_below()
    dn = sp.expand(det_factor_below())
    out = sp.zeros(3, 3)
    for i in range(3):
        for j in range(3):
            co = sp.expand(leading(F[i, j], sub, gsub)[1])
            q, r = sp.div(co, dn, *BELOW)
            out[i, j] = sp.factor_terms(q) if r == 0 else sp.factor_terms(co)
    return out.as_immutable()


@cached(maxsize=1)
def reduced_system_above():
    """Leading coefficients of the fixed point under :func:`scaling_above` (``c > 1``).

    Takes nothing; returns an immutable 3x3 SymPy matrix.  (No doctest: deriving it takes seconds.)
    """
    F = S.fixed_point_polynomial()
    sub, gsub = scaling_above()
    return sp.ImmutableMatrix(3, 3, lambda i, j: leading(F[i, j], sub, gsub)[1])


# ---------------------------------------------------------------- closed forms (c < 1)

def noise_only_error():
    """``E_A(0+) = 1 - c`` (``mu = 0``, ``c < 1``, any ``a_1, nu, d``).

    >>> noise_only_error()
    1 - c
    """
    return 1 - S.c


def a1_zero_cubic(x=rho):
    """``a_1 = 0``: the physical ``rho = lim G_12`` solves this cubic (unique real root when
    ``c d^2 < 2 nu (1 + c)``, since then it is increasing).  ``x`` replaces the symbol ``rho``.

    With ``d = 0`` it is ``rho (2 nu^2 rho^2 + c (1 + c) nu)``, whose only real root is ``rho = 0``:

    >>> sp.expand(a1_zero_cubic().subs(S.d, 0) - rho * (2 * S.nu**2 * rho**2 + S.c * (1 + S.c) * S.nu))
    0
    """
    c, nu, d = S.c, S.nu, S.d
    return 2 * nu**2 * x**3 - 3 * c * d * nu * x**2 + c * (c * d**2 + nu + c * nu) * x - c**3 * d


def a1_zero_traces(x=rho):
    """``a_1 = 0``: ``(alpha, rho, sigma, kappa, omega, tau)`` in terms of ``rho``.

    ``x`` replaces the symbol ``rho``; ``alpha = omega = 1 - c``.

    >>> traces = a1_zero_traces()
    >>> traces[0], traces[3]
    (1 - c, -c*rho/(c*d - 2*nu*rho))
    """
    c, nu, d = S.c, S.nu, S.d
    A = 1 - c
    return (A, x, -A * (c * d - 2 * nu * x) / c, -c * x / (c * d - 2 * nu * x), A, A * (c * d - 2 * nu * x) / x)


def a1_zero_traces_d_zero():
    """``a_1 = d = 0``: ``rho = sigma = 0``, ``kappa = -c^2/((1-c) nu)``, ``tau = (1-c)^2 nu / c``.

    These are the limits ``d -> 0`` of :func:`a1_zero_traces` along the cubic's root
    ``rho ~ c^2 d/((1 + c) nu)`` (at ``d = 0`` itself ``rho = 0`` leaves ``kappa`` and ``tau`` there as 0/0).

    >>> a1_zero_traces_d_zero()
    (1 - c, 0, 0, -c**2/(nu*(1 - c)), 1 - c, nu*(1 - c)**2/c)
    """
    c, nu = S.c, S.nu
    A = 1 - c
    return (A, sp.Integer(0), sp.Integer(0), -c**2 / (A * nu), A, A**2 * nu / c)


def a1_zero_error(x=rho):
    """``a_1 = 0``: ``E_A(0+) = (1-c)(1 - s rho (c d - 2 nu rho)/((1+s) c^2))``.

    ``x`` replaces the symbol ``rho``.  It is :func:`a1_zero_ridgeless_error_in_traces` on
    :func:`a1_zero_traces`, and ``1 - c`` at ``rho = 0`` (``d = 0``):

    >>> a1_zero_error(0)
    1 - c
    >>> in_traces = a1_zero_ridgeless_error_in_traces().subs(dict(zip(BELOW, a1_zero_traces())))
    >>> sp.cancel(in_traces - a1_zero_error())
    0
    """
    c, nu, d, s = S.c, S.nu, S.d, S.snr
    return (1 - c) * (1 - s * x * (c * d - 2 * nu * x) / ((1 + s) * c**2))


def scaled_limit(phi):
    """``lim_{gamma->0} gamma phi`` under :func:`scaling_below` (a rational function of the scaled traces).

    Takes a SymPy expression in ``G_11..G_33``, ``gamma`` and the parameters; returns the limit in the
    scaled traces.  Raises :class:`~symrmt.errors.ParameterError` (a ``ValueError``) when ``gamma phi``
    diverges under the ansatz.

    >>> scaled_limit(S.G_SYMBOLS[0]), scaled_limit(S.G_SYMBOLS[1])   # gamma G_11 -> alpha, gamma G_12 -> 0
    (alpha, 0)
    >>> scaled_limit(S.G_SYMBOLS[0] / S.gamma)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: scaled_limit: gamma phi diverges like gamma^-1 as gamma -> 0 under the ansatz of scaling_below(); give a phi that is O(1/gamma)
    """
    sub, gsub = scaling_below()
    n, dd = sp.fraction(sp.together(phi.subs(sub).subs(gsub) * eps))
    n, dd = sp.Poly(sp.expand(n), eps), sp.Poly(sp.expand(dd), eps)
    ln = min(m[0] for m in n.monoms())
    ld = min(m[0] for m in dd.monoms())
    if ln < ld:
        raise ParameterError(f"scaled_limit: gamma phi diverges like gamma^{ln - ld} as gamma -> 0 under the ansatz "
                             "of scaling_below(); give a phi that is O(1/gamma)")
    if ln > ld:
        return sp.Integer(0)
    return n.coeff_monomial(eps**ln) / dd.coeff_monomial(eps**ld)


@cached(maxsize=1)
def aligned_ridgeless_error():
    """``E_A(0+)`` for aligned weights as a rational function of ``(alpha..tau)``, ``||mu||^2``, ``w_K^T w_Q``.

    Takes nothing; returns a SymPy expression.  (No doctest: deriving it takes seconds.)
    """
    return sp.factor(scaled_limit(S.aligned_phi()))


@cached(maxsize=1)
def a1_zero_ridgeless_error_in_traces():
    """``lim gamma varphi`` of :func:`symrmt.models.attention.equations.a1_zero_phi`: ``alpha - s sigma^2/((1+s) tau)``.

    >>> s = S.snr
    >>> sp.cancel(a1_zero_ridgeless_error_in_traces() - (alpha - s * sigma**2 / ((1 + s) * tau)))
    0
    """
    return sp.factor(scaled_limit(S.a1_zero_phi()))


# ---------------------------------------------------------------- numerics

def _numeric_params(c, a1, nu, d):
    return {S.c: mpmath.mpf(c), S.a1: mpmath.mpf(a1), S.nu: mpmath.mpf(nu), S.d: mpmath.mpf(d)}


@cached(maxsize=1)
def _below_functions():
    R = reduced_system_below()
    A = 1 - S.c
    unknowns = (rho, sigma, kappa, tau)
    eqs = [R[0, 2], R[1, 2], R[2, 0], R[2, 1]]
    eqs = [sp.expand(e.subs({alpha: A, omega: A})) for e in eqs]
    allres = [sp.expand(R[i, j].subs({alpha: A, omega: A})) for i in range(3) for j in range(3)]
    args = unknowns + (S.c, S.a1, S.nu, S.d)
    f = _compile(args, eqs)
    fall = _compile(args, allres)
    return f, fall


def ridgeless_traces(c, a1, nu, d, dps: int = 50, seed=None):
    """Scaled ridgeless traces ``(alpha, rho, sigma, kappa, omega, tau)`` for ``c < 1`` (mpf).

    Newton (``mpmath.findroot``) on four of the reduced equations with ``alpha = omega = 1 - c``;
    the seed is ``gamma G`` etc. from the fixed point at ``gamma = 1e-6`` unless given.
    Returns the traces and the largest residual of all nine reduced equations.

    Takes exact or numeric ``c < 1``, ``a_1``, ``nu``, ``d``; raises mpmath's ``ValueError`` when Newton does
    not converge.  (No doctest: it solves the fixed point first.)
    """
    f, fall = _below_functions()
    with mpmath.workdps(dps + 10):
        cc, aa, nn, dd = (mpmath.mpf(x) for x in (c, a1, nu, d))
        if seed is None:
            g0 = mpmath.mpf("1e-6")
            fp = FixedPoint(c, a1, nu, d)
            gv, _, _ = fp.solve(g0, 30)
            seed = (gv[1], gv[2] * g0, gv[3] / g0, gv[5] * g0)
        sol = mpmath.findroot(lambda *x: f(*x, cc, aa, nn, dd), [mpmath.mpf(x) for x in seed])
        r, s, k, t = (sol[i] for i in range(4))
        res = max(abs(v) for v in fall(r, s, k, t, cc, aa, nn, dd))
        A = 1 - cc
        out = (A, r, s, k, A, t)
    return out, res


def evaluate(expr, traces, c, a1, nu, d, snr=0, wkwq=0, dps: int = 50):
    """Evaluate a SymPy expression in the scaled traces and the parameters with mpmath.

    ``traces`` in the order of :data:`BELOW`; the parameters are numbers or numeric strings; returns an mpf
    at ``dps`` digits.

    >>> evaluate(alpha * S.c + S.snr, (1, 0, 0, 0, 0, 0), "1/2", 0, 1, 0, snr="1/4", dps=20)
    mpf('0.75')
    """
    args = BELOW + (S.c, S.a1, S.nu, S.d, S.snr, S.wkwq)
    fn = _compile(args, expr)
    with mpmath.workdps(dps):
        return fn(*traces, *(mpmath.mpf(x) for x in (c, a1, nu, d, snr, wkwq)))


def general_ridgeless_error(traces, c, a1, geometry, dps: int = 50):
    r"""``E_A(0+)`` for any geometry: ``lim_{eps->0} eps varphi`` of the 12x12 Woodbury formula
    evaluated on ``G(eps) = (alpha/eps, rho, sigma/eps, kappa eps, omega, tau/eps)``.

    The limit is taken numerically: the expression is evaluated at ``eps = 10^{-dps}`` and
    ``10^{-dps-5}`` (error ``O(eps)``) at ``3 dps + 20`` working digits; the second value
    and the difference of the two are returned.

    Takes the traces of :func:`ridgeless_traces`, ``c``, ``a_1`` and a geometry; returns ``(value, difference)``
    as mpf.  (No doctest: it takes seconds at ``3 dps + 20`` digits.)
    """
    vals = []
    work = 3 * dps + 20
    k = dps
    with mpmath.workdps(work):
        Dm = lowrank_D(geometry, a1, c, work)
        a, r, s, kk, w, t = (mpmath.mpf(x) for x in traces)
        for e in (mpmath.mpf(10) ** (-k), mpmath.mpf(10) ** (-k - 5)):
            g = [a / e, r, s / e, kk * e, w, t / e]
            phi, _ = woodbury_value(g, [0] * 6, Dm)
            vals.append(e * phi)
    return vals[1], abs(vals[1] - vals[0])


# ---------------------------------------------------------------- c > 1

def rate_above_a1_d_zero():
    """``a_1 = d = 0``, ``c > 1``: ``E_A ~ (beta/2) sqrt(gamma)`` with ``beta = sqrt(c/(nu (c-1)))``.

    Returns the coefficient ``beta/2``:

    >>> rate_above_a1_d_zero().subs({S.c: 2, S.nu: 1})
    sqrt(2)/2
    """
    return sp.sqrt(S.c / (S.nu * (S.c - 1))) / 2


@cached(maxsize=1)
def _above_functions():
    R = reduced_system_above()
    t0 = 1 / (S.c - 1)
    # (0,0) and (0,1) carry the factor (tau + 1) != 0; (2,0), (2,1), (0,2) as they are
    eqs = [sp.cancel(R[0, 0] / (tau + 1)), sp.cancel(R[0, 1] / (kappa * (tau + 1))), R[2, 0], R[2, 1]]
    eqs = [sp.expand(e.subs(tau, t0)) for e in eqs]
    args = (beta, rho, sigma, kappa, S.c, S.a1, S.nu, S.d)
    return _compile(args, eqs)


def rate_above(c, a1, nu, d, dps: int = 40, seed_gamma="1e-8"):
    """``c > 1``, ``K`` indefinite: ``(beta, rho, sigma, kappa)``; ``E_A ~ (beta/2) sqrt(gamma)``.

    Takes exact or numeric ``c > 1``, ``a_1``, ``nu``, ``d``; returns four mpf; raises the solver's errors and
    mpmath's ``ValueError`` when Newton does not converge.  (No doctest: it solves the fixed point first.)
    """
    f = _above_functions()
    with mpmath.workdps(dps + 10):
        g0 = mpmath.mpf(seed_gamma)
        gv, _, _ = FixedPoint(c, a1, nu, d).solve(g0, 30)
        r0 = mpmath.sqrt(g0)
        seed = [gv[0] * r0, gv[1], gv[2], gv[3] / r0]
        cc, aa, nn, dd = (mpmath.mpf(x) for x in (c, a1, nu, d))
        sol = mpmath.findroot(lambda *x: f(*x, cc, aa, nn, dd), seed)
        return tuple(sol[i] for i in range(4))
