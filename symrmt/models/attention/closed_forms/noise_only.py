r"""The noise-only Stieltjes transform as a root of a polynomial (``mu = 0``, ``W = I``): an independent
check of the fixed-point solver.

``m = m(-gamma) = G_11`` solves ``P(m; gamma, c, a_1, nu, d) = 0``, found by eliminating the other entries of
the fixed point, rewritten as nine cubic equations (:func:`cubic_system`, :func:`reduced_system`), by
resultants: once symbolically for ``a_1 = 0`` (:func:`a1_zero_polynomial`, degree 7 in ``m``), per exact
rational point otherwise (degree 17 in ``m``, about 15 s a point, cached).  The physical root is the one in
the Jensen bracket ``1/(gamma + mu_1) <= m <= 1/gamma`` (:func:`spectral_mean`), followed down from large
``gamma`` (:func:`stieltjes_closed_form_value`); ``E_A = gamma^2 P_gamma / P_m``.  The route is in
``docs/theory.md`` section 7.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import sympy as sp

from symrmt.cache import cached
from symrmt.core.certify import Disagree, agree, certify
from symrmt.core.continuation import Geometric, follow
from symrmt.core.errors import ConvergenceError
from symrmt.core.newton import newton
from symrmt.core.numbers import MPMATH, mpf_of
from symrmt.errors import NotDerived, ParameterError
from symrmt.errors import ClosedFormError  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.models.attention import equations as S
from symrmt.models.attention.closed_forms.noise_only_data import POLYNOMIALS
from symrmt.models.attention.solver import compile_expr

G11, G12, G13, G22, G23, G33 = S.G_SYMBOLS
m, gamma, c, a1, nu, d = S.m, S.gamma, S.c, S.a1, S.nu, S.d

__all__ = [
    "a1_zero_d_zero_polynomial",
    "a1_zero_functions",
    "a1_zero_polynomial",
    "cubic_system",
    "degree",
    "noise_only_error",
    "reduced_system",
    "spectral_mean",
    "stieltjes_closed_form_value",
    "stieltjes_polynomial",
    "stored_polynomial",
    "eliminated_polynomial",
]


# ---------------------------------------------------------------- symbolic part
def spectral_mean():
    r"""``mu_1 = tau(c K S K)`` for ``K = a_1 S + (d - a_1) + b Gt``.

    ``tau(S) = 1``, ``tau(S^2) = 1 + 1/c``, ``tau(S^3) = 1 + 3/c + 1/c^2`` (free Poisson),
    ``tau(S Gt^2) = tau(S) tau(Gt^2) = 1/c`` and the odd terms in ``Gt`` vanish.  Returns the expanded
    SymPy expression; with ``a_1 = 0`` it is ``c tau(S (d + b Gt)^2) = c d^2 + nu``:

    >>> spectral_mean()
    a_1**2/c + 2*a_1*d + c*d**2 + nu
    >>> spectral_mean().subs(a1, 0)
    c*d**2 + nu
    """
    e = d - a1
    return sp.expand(c * (a1**2 * (1 + 3 / c + 1 / c**2) + 2 * a1 * e * (1 + 1 / c) + e**2 + S.b_squared() / c))


@cached(maxsize=1)
def cubic_system() -> sp.Matrix:
    r"""``c [c (I - Gm Lambda) - Gm Lambda Gm A_S - (c - 1) Gm A_S]`` with ``G_23 = gamma m``, ``G_11 = m``.

    Returns an immutable 3x3 SymPy matrix, free of ``G_11`` and ``G_23``:

    >>> E = cubic_system()
    >>> E.shape, E.free_symbols & {G11, G23}, m in E.free_symbols
    ((3, 3), set(), True)
    """
    gm = S.block_trace_matrix()
    L0, A_S, P = S.noise_pencil()
    lam = L0 - S.b_squared() / c * P * gm * P
    E = c * (c * (sp.eye(3) - gm * lam) - gm * lam * gm * A_S - (c - 1) * gm * A_S)
    return E.subs(G23, gamma * G11).subs(G11, m).applyfunc(sp.expand).as_immutable()


def _linear(expr, x):
    p = sp.Poly(expr, x)
    if p.degree() != 1:
        raise ClosedFormError(f"expected an equation linear in {x}, got degree {p.degree()}")
    a, b = p.all_coeffs()
    return a, b


def _substitute_ratio(expr, x, num, den):
    """``den^k expr(x = num/den)`` with ``k = deg_x expr`` (denominator cleared)."""
    p = sp.Poly(expr, x)
    k = p.degree()
    return sp.expand(sum(cf * num**e * den ** (k - e) for (e,), cf in p.terms()))


def reduced_system(vals=None):
    """Three polynomials in ``(m, G_12, G_22)`` (and the parameters) whose common zeros hold ``m``.

    ``vals`` substitutes parameter values first (a dict of SymPy symbols to exact numbers).
    Returns ``(E21, R1, R2)``: entry (2,1) of :func:`cubic_system`; ``G_13`` eliminated
    from entries (1,1), (1,2); ``G_33`` from (1,3), (3,2) and then ``G_13`` via (1,1).
    Valid where ``a_1 G_22 != 0`` (the coefficient of ``G_13`` in entry (1,1)).

    (No doctest: the elimination takes seconds.)
    """
    E = cubic_system()
    if vals:
        E = E.subs(vals).applyfunc(sp.expand)
    a11, b11 = _linear(E[0, 0], G13)
    a12, b12 = _linear(E[0, 1], G13)
    R1 = sp.expand(a11 * b12 - a12 * b11)
    A13, B13 = _linear(E[0, 2], G33)
    A32, B32 = _linear(E[2, 1], G33)
    R2 = _substitute_ratio(sp.expand(A13 * B32 - A32 * B13), G13, -b11, a11)
    return E[1, 0], R1, R2


def _core(expr, var):
    """Product of the distinct irreducible factors of ``expr`` that contain ``var``."""
    _, fl = sp.factor_list(expr)
    return sp.expand(sp.Mul(*[f for f, _k in fl if f.has(var)]))


def _eliminate(vals):
    """Irreducible factors (over Q) in ``(m, gamma)`` of the eliminant at exact parameters."""
    E21, R1, R2 = reduced_system(vals)
    s1 = _core(sp.resultant(E21, R1, G12), G22)
    s2 = _core(sp.resultant(E21, R2, G12), G22)
    A = sp.Poly(sp.resultant(s1, s2, G22), m, gamma)
    r1 = _core(sp.resultant(E21, R1, G22), G12)
    r2 = _core(sp.resultant(E21, R2, G22), G12)
    B = sp.Poly(sp.resultant(r1, r2, G12), m, gamma)
    g = sp.gcd(A, B)
    _, fl = sp.factor_list(g.as_expr(), m, gamma)
    return [sp.Poly(f, m, gamma) for f, _k in fl if sp.Poly(f, m, gamma).degree(m) > 0]


def _bracket(gam, mu1):
    return 1 / (gam + mu1), 1 / gam


def _in_bracket(x, lo, hi, mu1, tol):
    """``1/(gamma + mu_1) <= x < 1/gamma`` (closed at ``1/gamma`` only when ``mu_1 = 0``, i.e. ``K = 0``)."""
    if mu1 == 0:
        return abs(x - hi) <= tol * hi
    return lo * (1 - tol) <= x <= hi * (1 - tol)


def _select_factor(factors, mu1_value):
    """The one factor with a root in the Jensen bracket at large gamma (see the module docstring)."""
    with mpmath.workdps(40):
        mu1 = mpmath.mpf(sp.Rational(mu1_value).p) / sp.Rational(mu1_value).q
        gam0 = mpmath.mpf(10) ** 4 * (1 + abs(mu1))
        lo, hi = _bracket(gam0, mu1)
        tol = mpmath.mpf(10) ** -25
        hits = []
        for f in factors:
            coeffs = [mpmath.mpf(sp.Rational(cf.subs(gamma, sp.Rational(int(gam0)))).p)
                      / sp.Rational(cf.subs(gamma, sp.Rational(int(gam0)))).q
                      for cf in sp.Poly(f.as_expr(), m).all_coeffs()]
            lo, hi = _bracket(mpmath.mpf(int(gam0)), mu1)
            roots = mpmath.polyroots(coeffs, maxsteps=200, extraprec=200)
            inside = [r for r in roots if abs(mpmath.im(r)) <= tol and _in_bracket(mpmath.re(r), lo, hi, mu1, tol)]
            if inside:
                hits.append((f, len(inside)))
    if len(hits) != 1 or hits[0][1] != 1:
        raise ClosedFormError(f"factor choice is ambiguous: {len(hits)} factors with roots in the Jensen bracket")
    return hits[0][0]


@cached(maxsize=1)
def a1_zero_polynomial():
    r"""``P(m; gamma, c, nu, d)`` for ``a_1 = 0``, fully symbolic (a SymPy ``Poly`` in ``m``).

    With ``a_1 = 0``: entry (1,2) gives ``G_13``, entry (2,1) gives ``G_22``, entry (3,2)
    gives ``G_33`` (all linear); entry (2,3) is then linear in ``G_12``, and entry (1,1)
    a cubic in ``G_12``; substituting gives the polynomial in ``m``.  Raises
    :class:`~symrmt.errors.ClosedFormError` when the factor carrying the physical root is not unique.

    >>> P = a1_zero_polynomial()
    >>> P.degree(), P.gens
    (7, (m,))
    """
    E = cubic_system().subs(a1, 0).applyfunc(sp.expand)
    sol = {}
    a, b = _linear(E[0, 1], G13)
    sol[G13] = -b / a
    a, b = _linear(E[1, 0], G22)
    sol[G22] = -b / a
    a, b = _linear(sp.numer(sp.together(E[2, 1].subs(sol))), G33)
    sol[G33] = -b / a
    lin = sp.numer(sp.together(E[1, 2].subs(sol)))
    a, b = _linear(sp.factor(lin), G12)
    cub = sp.numer(sp.together(E[0, 0].subs(sol)))
    full = _substitute_ratio(sp.expand(cub), G12, -b, a)
    _, fl = sp.factor_list(full, m)
    factors = [f for f, _k in fl if sp.Poly(f, m).degree() > 0 and f.has(gamma)]
    # choose symbolically-once: the factor carrying the physical root at a generic rational point
    probe = {c: sp.Rational(3, 7), nu: sp.Rational(5, 11), d: sp.Rational(2, 3)}
    mu1 = spectral_mean().subs(a1, 0).subs(probe)
    chosen = _select_factor([sp.Poly(f.subs(probe), m, gamma) for f in factors], mu1)
    idx = [sp.Poly(f.subs(probe), m, gamma) for f in factors].index(chosen)
    return sp.Poly(factors[idx], m)


@cached(maxsize=1)
def a1_zero_d_zero_polynomial():
    """``P`` for ``a_1 = d = 0``: ``nu gamma^2 m^3 + nu gamma (c - 1) m^2 + c gamma m - c`` (up to a factor).

    Returns a SymPy ``Poly`` in ``m``:

    >>> P = a1_zero_d_zero_polynomial().as_expr()
    >>> sp.expand(P - (nu * gamma**2 * m**3 + nu * gamma * (c - 1) * m**2 + c * gamma * m - c))
    0
    """
    E = cubic_system().subs({a1: 0, d: 0}).applyfunc(sp.expand)
    # G_12 = G_13 = 0 here (K -> -K symmetry); then entries (3,2) and (2,1) give G_33, G_22
    E = E.subs({G12: 0, G13: 0}).applyfunc(sp.expand)
    a, b = _linear(E[2, 1], G33)
    G33v = -b / a
    a, b = _linear(E[1, 2].subs(G33, G33v), G22)
    sol = {G33: G33v, G22: -b / a}
    eq = sp.factor(sp.numer(sp.together(E[0, 0].subs(sol))))
    _, fl = sp.factor_list(eq, m)
    (f,) = [f for f, _k in fl if sp.Poly(f, m).degree() > 0]
    return sp.Poly(f, m)


def _exact(x, name):
    if isinstance(x, (sp.Rational, Fraction, int)):
        return sp.Rational(x)
    if isinstance(x, str):
        return sp.Rational(Fraction(x))
    raise ClosedFormError(
        f"{name} must be exact (int, Fraction, str or SymPy Rational) when a_1 != 0: "
        "the elimination is done in exact arithmetic per parameter point"
    )


def stored_polynomial(c_, a1_, nu_, d_):
    """The polynomial stored in :mod:`symrmt.models.attention.closed_forms.noise_only_data` for the exact
    point ``(c, a_1, nu, d)``, as a ``Poly`` in ``(m, gamma)``, or ``None`` where none is stored.

    Each stored polynomial is the output of :func:`eliminated_polynomial` at its point; the
    derivation ``noise_only`` checks in its quick mode that it vanishes at the general solver's
    ``m(-gamma)`` at several ``gamma`` (40 digits), and in its full mode that the elimination
    gives it again, coefficient for coefficient.  Raises :class:`~symrmt.errors.ClosedFormError` for a
    parameter that is not exact (a float).

    >>> P = stored_polynomial("1/2", "3/5", "2/5", 0)
    >>> P.degree(m), P.degree(gamma), stored_polynomial(1, 1, 1, 1)
    (17, 10, None)
    """
    key = tuple(str(_exact(x, n)) for x, n in zip((c_, a1_, nu_, d_), ("c", "a_1", "nu", "d")))
    terms = POLYNOMIALS.get(key)
    if terms is None:
        return None
    return sp.Poly.from_dict({(i, j): sp.Integer(int(cf)) for i, j, cf in terms}, m, gamma)


@cached(maxsize=16)
def eliminated_polynomial(cv, a1v, nuv, dv):
    """The eliminant's factor carrying the physical root at exact ``(c, a_1, nu, d)``, computed
    (resultants in exact arithmetic: tens of seconds for ``a_1 != 0``).

    Raises :class:`~symrmt.errors.ClosedFormError` when no factor carries the physical root.  (No doctest:
    it takes tens of seconds.)
    """
    vals = {c: cv, a1: a1v, nu: nuv, d: dv}
    factors = _eliminate(vals)
    return _select_factor(factors, spectral_mean().subs(vals))


@cached(maxsize=16)
def _general_polynomial(cv, a1v, nuv, dv):
    stored = stored_polynomial(cv, a1v, nuv, dv)
    return stored if stored is not None else eliminated_polynomial(cv, a1v, nuv, dv)


def stieltjes_polynomial(c_=None, a1_=None, nu_=None, d_=None):
    r"""The polynomial ``P`` with ``P(m(-gamma)) = 0``, as a SymPy expression in ``S.m`` and ``S.gamma``.

    * ``a1_ = 0`` and the other parameters ``None``: fully symbolic in ``gamma, c, nu, d``.
    * ``a1_ = 0, d_ = 0``: the cubic of :func:`a1_zero_d_zero_polynomial`.
    * otherwise all four of ``c, a_1, nu, d`` must be exact numbers: ``P`` is returned
      symbolic in ``(m, gamma)`` (cached per point; taken from :func:`stored_polynomial` where
      the point is stored, else from :func:`eliminated_polynomial`).

    Raises :class:`~symrmt.errors.NotDerived` for symbolic parameters with ``a_1 != 0`` (degree 17
    in ``m`` with five parameters: beyond SymPy's elimination in reasonable time), and
    :class:`~symrmt.errors.ClosedFormError` for a parameter that is not exact when ``a_1 != 0``.

    Examples
    --------
    The cubic at ``gamma = 1``, ``c = 1/2``, ``nu = 3/4`` (its physical root is the module's
    :func:`stieltjes_closed_form_value` example, ``0.76595...``):

    >>> P = stieltjes_polynomial(a1_=0, d_=0).subs({gamma: 1, c: sp.Rational(1, 2), nu: sp.Rational(3, 4)})
    >>> P
    3*m**3/4 - 3*m**2/8 + m/2 - 1/2
    >>> abs(P.subs(m, sp.Float("0.76595358042929952552", 25))) < 1e-19
    True
    >>> stieltjes_polynomial(a1_="1/2")
    Traceback (most recent call last):
    ...
    symrmt.errors.NotDerived: fully symbolic elimination is done for a_1 = 0 only; pass exact c, a_1, nu, d for the general case (degree 17 in m, symbolic in gamma)
    """
    if a1_ is not None and _exact(a1_, "a_1") == 0 and c_ is None and nu_ is None:
        if d_ is not None and _exact(d_, "d") == 0:
            return a1_zero_d_zero_polynomial().as_expr()
        P = a1_zero_polynomial().as_expr()
        return P if d_ is None else sp.expand(P.subs(d, _exact(d_, "d")))
    if any(x is None for x in (c_, a1_, nu_, d_)):
        raise NotDerived(
            "fully symbolic elimination is done for a_1 = 0 only; pass exact c, a_1, nu, d "
            "for the general case (degree 17 in m, symbolic in gamma)"
        )
    vals = tuple(_exact(x, n) for x, n in zip((c_, a1_, nu_, d_), ("c", "a_1", "nu", "d")))
    if vals[1] == 0:
        return sp.expand(a1_zero_polynomial().as_expr().subs({c: vals[0], nu: vals[2], d: vals[3]}))
    return _general_polynomial(*vals).as_expr()


def degree(c_=None, a1_=0, nu_=None, d_=None):
    """``(deg_m P, deg_gamma P)`` of :func:`stieltjes_polynomial` for the same arguments.

    >>> degree(a1_=0, d_=0), degree(a1_=0)
    ((3, 2), (7, 4))
    """
    P = sp.Poly(stieltjes_polynomial(c_, a1_, nu_, d_), m, gamma)
    return P.degree(m), P.degree(gamma)


# ---------------------------------------------------------------- numeric part (compiled, mpmath)

def _compile(args, expr):
    items = expr if isinstance(expr, (list, tuple)) else [expr]
    if any(sp.sympify(e).atoms(sp.Float) for e in items):
        raise ClosedFormError("polynomial holds float literals")

    return compile_expr(args, expr, floats_ok=True)


@cached(maxsize=1)
def a1_zero_functions():
    """The compiled mpmath code of the symbolic ``a_1 = 0`` polynomial ``P`` (:func:`a1_zero_polynomial`) in ``m``:
    ``(coeffs, P, P_m, P_gamma)``, each a function of ``(m, gamma, c, nu, d)`` (``coeffs``: the coefficients of
    ``P`` in ``m``, highest first), exact rationals only (cached).

    Takes nothing; raises :class:`ClosedFormError` if the polynomial held a float literal.  (No doctest:
    compiling it cold takes about a second; :func:`stieltjes_closed_form_value`'s example runs it.)
    """
    P = a1_zero_polynomial().as_expr()
    args = (m, gamma, c, nu, d)
    coeffs = sp.Poly(P, m).all_coeffs()
    return (_compile(args, coeffs), _compile(args, P), _compile(args, sp.diff(P, m)), _compile(args, sp.diff(P, gamma)))


@cached(maxsize=16)
def _compiled_general(cv, a1v, nuv, dv):
    P = _general_polynomial(cv, a1v, nuv, dv).as_expr()
    args = (m, gamma, c, nu, d)
    coeffs = sp.Poly(P, m).all_coeffs()
    return (_compile(args, coeffs), _compile(args, P), _compile(args, sp.diff(P, m)), _compile(args, sp.diff(P, gamma)))


def _mpf(x):
    """An exact input as an mpf through the package's one converter (:func:`symrmt.core.numbers.mpf_of`)."""
    if isinstance(x, str):
        x = Fraction(x)
    elif isinstance(x, sp.Rational):
        x = Fraction(int(x.p), int(x.q))
    return mpf_of(x)


def _functions(c_, a1_, nu_, d_):
    """Compiled functions and the mpf parameters ``(c, nu, d)`` plus ``mu_1``."""
    a1_zero = (a1_ == 0) if not isinstance(a1_, str) else (Fraction(a1_) == 0)
    if a1_zero:
        fns = a1_zero_functions()
    else:
        key = tuple(_exact(x, n) for x, n in zip((c_, a1_, nu_, d_), ("c", "a_1", "nu", "d")))
        fns = _compiled_general(*key)
    cv, a1v, nuv, dv = (_mpf(x) for x in (c_, a1_, nu_, d_))
    if cv <= 0:
        raise ParameterError(f"c must be > 0, got {cv}")
    if nuv < a1v**2:
        raise ParameterError(f"nu must be >= a_1^2, got nu={nuv}, a_1={a1v}")
    e = dv - a1v
    mu1 = cv * (a1v**2 * (1 + 3 / cv + 1 / cv**2) + 2 * a1v * e * (1 + 1 / cv) + e**2 + (nuv - a1v**2) / cv)
    return fns, (cv, nuv, dv), mu1


def _bracket_roots(coeffs_fn, gam, params, mu1, start=None):
    """The real roots of ``P(., gam)`` in the Jensen bracket, and all its roots.  ``start``: the roots at a
    nearby ``gamma``, where the Durand--Kerner iteration starts (it converges to all roots from any
    distinct starts, to the same tolerance; nearby ones take a few steps instead of a hundred)."""
    coeffs = list(coeffs_fn(0, gam, *params))
    while coeffs and coeffs[0] == 0:
        coeffs.pop(0)
    roots = mpmath.polyroots(coeffs, maxsteps=100 + 4 * mpmath.mp.dps, extraprec=3 * mpmath.mp.prec,
                             roots_init=start)
    lo, hi = _bracket(gam, mu1)
    tol = mpmath.mpf(10) ** (-mpmath.mp.dps // 2)
    inside = [mpmath.re(r) for r in roots
              if abs(mpmath.im(r)) <= tol * abs(r) and _in_bracket(mpmath.re(r), lo, hi, mu1, tol)]
    return inside, [r for r in roots]


def _root(fns, gam, params, mu1):
    """The physical root at ``gam`` (bracket + continuation from large gamma; see the module docstring)."""
    coeffs_fn = fns[0]
    inside, roots = _bracket_roots(coeffs_fn, gam, params, mu1)
    if len(inside) == 1:
        return inside[0]
    # go up until the bracket isolates one root
    path = [gam]
    g = gam
    for _ in range(60):
        g = g * 4
        path.append(g)
        inside, roots = _bracket_roots(coeffs_fn, g, params, mu1, roots)
        if len(inside) == 1:
            break
    else:
        raise ClosedFormError(f"no gamma >= {mpmath.nstr(gam, 8)} isolates one root in the Jensen bracket")
    # follow that root back down: Euler predictor (dm/dgamma = -P_gamma/P_m), nearest root as corrector
    # (the continuation is the numerical core's, symrmt.core.continuation.follow; the corrector here)
    _, _, Pm, Pg = fns
    cur, x = path[-1], inside[0]
    state = {"x": x, "roots": roots}

    def slope(x, g):
        return -Pg(x, g, *params) / Pm(x, g, *params)

    def correct(pred, nxt):
        pred, x = pred[0], state["x"]
        _, roots = _bracket_roots(coeffs_fn, nxt, params, mu1, state["roots"])
        state["next_roots"] = roots
        dist = sorted(((abs(r - pred), r) for r in roots), key=lambda t: t[0])
        ok = abs(mpmath.im(dist[0][1])) <= abs(dist[0][1]) * mpmath.mpf(10) ** (-mpmath.mp.dps // 2)
        ok = ok and dist[0][0] <= abs(pred - x) / 4 + abs(x) * mpmath.mpf(10) ** (-mpmath.mp.dps // 2)
        ok = ok and (len(dist) == 1 or dist[0][0] * 8 < dist[1][0])  # the nearest root is isolated
        if not ok:
            raise ConvergenceError("no isolated real root near the predictor")
        new = mpmath.re(dist[0][1])
        return [new], [slope(new, nxt)]

    def accepted(t, h, dh):
        state["x"], state["roots"] = h[0], state["next_roots"]

    if cur != gam:
        # the core's trust region is wide here (m(-gamma/r) <= r m(-gamma) with r <= 2 moves the root by at
        # most |m|): the corrector's own test above (a quarter of the predictor's move, isolation) is stricter
        try:
            h, _ = follow(correct, [x], [slope(x, cur)], cur, gam,
                          Geometric(cur, gam, mpmath.mpf(2), mpmath.mpf(2), mpmath.mpf(10) ** -8, grow="affine"),
                          MPMATH, correction=1, move=1, max_steps=10000, catch=(ConvergenceError,), finite=None,
                          on_step=accepted,
                          stalled=lambda t: f"root continuation stalled at gamma={mpmath.nstr(t, 8)}",
                          too_many=lambda: f"root continuation to gamma={mpmath.nstr(gam, 8)} took too many steps")
        except ConvergenceError as exc:
            raise ClosedFormError(str(exc)) from None
        x = h[0]
    lo, hi = _bracket(gam, mu1)
    if not _in_bracket(x, lo, hi, mu1, mpmath.mpf(10) ** (-mpmath.mp.dps // 2)):
        raise ClosedFormError(f"continued root {mpmath.nstr(x, 10)} left the Jensen bracket at gamma={mpmath.nstr(gam, 8)}")
    return x


def _polish(fns, x, gam, params):  # Newton on P(m) = 0 from x (the core's driver, at most 8 steps)
    _, P, Pm, _ = fns
    def step(v):
        return [-P(v[0], gam, *params) / Pm(v[0], gam, *params)], None
    try:  # a failure to converge is an error, never a silent unpolished value
        return newton(step, [x], MPMATH, 4 * mpmath.eps, 8, where=f" polishing the root at gamma={mpmath.nstr(gam, 8)}")[0][0]
    except ConvergenceError as exc:
        raise ClosedFormError(str(exc)) from None


def stieltjes_closed_form_value(gamma_, c_, a1_, nu_, d_, dps: int = 30):
    r"""``m(-gamma)`` as the physical root of :func:`stieltjes_polynomial`, at ``dps`` digits.

    ``a_1 = 0``: any real ``c, nu, d`` (mpf allowed).  ``a_1 != 0``: exact ``c, a_1, nu, d``.

    Examples
    --------
    >>> import mpmath
    >>> mpmath.nstr(stieltjes_closed_form_value(1, "1/2", 0, "3/4", 0, 30), 25)
    '0.7659535804292995...'
    """
    def attempt(wdps):  # the root at two working precisions, which must agree (the core's certification)
        vals = []
        for extra in (0, 10):
            with mpmath.workdps(wdps + extra):
                fns, params, mu1 = _functions(c_, a1_, nu_, d_)
                gam = _mpf(gamma_)
                if gam <= 0:
                    raise ParameterError(f"gamma must be > 0, got {gam}")
                vals.append(_polish(fns, _root(fns, gam, params, mu1), gam, params))
        with mpmath.workdps(wdps):
            if not agree(vals[0], vals[1], dps + 1):
                raise Disagree(f"root at two precisions disagrees: {vals[0]} vs {vals[1]}")
        return vals[1], None
    hi = certify(attempt, dps, 20, 1, catch=(), fail=lambda failures, _: ClosedFormError("; ".join(failures))).value
    with mpmath.workdps(dps):
        return +hi


def noise_only_error(gamma_, c_, a1_, nu_, d_, dps: int = 30):
    r"""Noise-only ``E_A(gamma) = -gamma^2 dm/dgamma = gamma^2 P_gamma / P_m`` at the physical root.

    Takes exact or numeric ``gamma, c, a_1, nu, d``; returns an mpf at ``dps`` digits; raises
    :class:`~symrmt.errors.ClosedFormError` where the closed form cannot deliver.  (No doctest: it derives the
    polynomial's code, seconds cold; ``tests/models/attention/closed_forms/test_noise_only.py`` checks it against the solver.)
    """
    mval = stieltjes_closed_form_value(gamma_, c_, a1_, nu_, d_, dps + 10)
    with mpmath.workdps(dps + 20):
        fns, params, _ = _functions(c_, a1_, nu_, d_)
        gam = _mpf(gamma_)
        x = _polish(fns, mpmath.mpf(mval), gam, params)
        val = gam**2 * fns[3](x, gam, *params) / fns[2](x, gam, *params)
    with mpmath.workdps(dps):
        return +val
