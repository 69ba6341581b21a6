"""``symrmt verify --prove`` for the derivations whose claims are limits, tolerances or simulations.

These derivations assert a number up to a stated tolerance (a value at ``gamma = 1e-12`` against the
ridgeless limit, a central difference against the implicit derivative, a 30-digit answer against a
60-digit one, a 15-digit theory value that a Monte-Carlo mean is compared with).  On balls the same
claim becomes: the proved ball lies within the tolerance of the reference (the upper bound of
``|ball - ref|`` is at most ``tol |ref|``), so the rounding of the computation is removed and only the
mathematical gap the tolerance is for remains.  Where the reference is itself a proved ball (an exactly
isolated root of the ridgeless cubic), it is a ball too.  A check fails when the bound does not hold.
The simulations themselves are not provable: only the theory side of each comparison is a ball.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

import symrmt
from symrmt.derivations.proved_common import DIGITS, ball_of, contains, gap, rational, record, tight, within
from symrmt.models.attention.geometry import Geometry, as_low_rank


# ---------------------------------------------------------------- ridgeless

def _ridgeless(ck):
    """``c < 1``: ``E_A(1e-12) == 1 - c`` and ``G23 == gamma G11`` to 15 digits on the proved balls; ``a_1 = 0``:
    the cubic's real roots isolated exactly (exactly one), ``E_A(0+)`` on that root's ball, and the proved
    ``E_A(1e-12)`` (and ``G12``) within the derivation's tolerances of it; ``c > 1``, ``a_1 = d = 0``:
    ``E_A/sqrt(gamma)`` within ``1e-5`` of ``sqrt(c/(nu (c-1)))/2``."""
    # optional dependency (flint); import-time cost: the CLI's start loads no SymPy or NumPy
    import flint
    import sympy as sp

    from symrmt.proofs.arb import isolate_real_roots, to_arb, working_bits
    from symrmt.derivations import ridgeless as RL
    from symrmt.models.attention import equations as S
    from symrmt.models.attention.closed_forms import ridgeless as R
    from symrmt.models.attention.prove import prove_attention

    g = Fraction(1, 10 ** 12)
    for diag in ("zero", "keep"):
        b = prove_attention(RL.TANH, "1/2", [g], Geometry(), diag, DIGITS)[0]
        record(ck, f"c=1/2, tanh, {diag} diagonal, mu=0: E_A(1e-12) within 1e-15 of 1 - c", b.error,
                within(b.error, Fraction(1, 2), Fraction(1, 10 ** 15)), gap(b.error, Fraction(1, 2)))
        G = b.block_traces
        with working_bits(256):
            ref = to_arb(g) * G[0]
        record(ck, f"c=1/2, tanh, {diag}: G23 within 1e-15 of gamma G11 (alpha = omega)", G[4],
                within(G[4], ref, Fraction(1, 10 ** 15)), gap(G[4], ref))
    # a1 = 0, d = 1 (centered |t|: nu = 1 - 2/pi, taken as the exact rational of its 50 digits on both sides)
    with mpmath.workdps(60):
        nu = rational(1 - 2 / mpmath.pi)
    c, d, snr = Fraction(1, 2), 1, 1
    cubic = sp.Poly(R.a1_zero_cubic().subs({S.c: sp.Rational(1, 2), S.nu: sp.Rational(nu.numerator, nu.denominator),
                                            S.d: d}), R.rho)
    with working_bits(256):
        fp = flint.fmpq_poly([flint.fmpq(int(x.p), int(x.q)) for x in reversed(cubic.all_coeffs())])
        roots = isolate_real_roots(fp)
    ck.add("proved: a1=0, d=1, c=1/2: the ridgeless cubic has exactly one real root (isolated exactly)", "precision",
           len(roots) == 1, f"{len(roots)} real root(s): " + ", ".join(r.str(10) for r in roots))
    if len(roots) != 1:
        return
    rho = roots[0]
    with working_bits(256):
        e0 = ball_of(R.a1_zero_error(), [R.rho, S.c, S.nu, S.d, S.snr], [rho, to_arb(c), to_arb(nu), to_arb(d),
                                                                            to_arb(snr)])
    b = prove_attention({"a1": 0, "nu": str(nu), "d": d}, c, [g], Geometry(snr=snr), "keep", DIGITS)[0]
    record(ck, "a1=0, d=1, snr=1: E_A(1e-12) within 1e-15 of E_A(0+) on the cubic's root", b.error,
            within(b.error, e0, Fraction(1, 10 ** 15)), gap(b.error, e0))
    record(ck, "a1=0, d=1: G12(1e-12) within 1e-9 of the cubic's root", b.block_traces[1],
            within(b.block_traces[1], rho, Fraction(1, 10 ** 9)), gap(b.block_traces[1], rho))
    # c > 1, centered cos (a1 = d = 0): E_A ~ sqrt(c/(nu (c-1)))/2 sqrt(gamma)
    with mpmath.workdps(60):
        nuc = rational((1 + mpmath.e ** -2) / 2 - mpmath.e ** -1)
    b = prove_attention({"a1": 0, "nu": str(nuc), "d": 0}, "2", [g], Geometry(), "zero", DIGITS)[0]
    with working_bits(256):
        rate = ball_of(R.rate_above_a1_d_zero(), [S.c, S.nu], [to_arb(2), to_arb(nuc)])
        ratio = b.error / to_arb(g).sqrt()
    record(ck, "c=2, centered cos (a1=d=0): E_A(1e-12)/sqrt(gamma) within 1e-5 of sqrt(c/(nu(c-1)))/2", b.error,
            within(ratio, rate, Fraction(1, 10 ** 5)), gap(ratio, rate))


# ---------------------------------------------------------------- attention_limit

def _attention_limit(ck):
    """The implicit derivative (a ball) against the central difference of two proved ``varphi`` balls, to the
    derivation's tolerance; ``0 <= E_A <= 1`` and ``E_A`` strictly increasing along the derivation's ``gamma``
    grid, proved on the balls (each ball above the previous one)."""
    # import-time cost: the CLI's start loads this module without SymPy
    from symrmt.proofs.arb import to_arb, working_bits
    from symrmt.derivations import attention_limit as AL  # noqa: F401  (the derivation whose claims these are)
    from symrmt.models.attention.prove import prove_attention

    tanh = {"a1": "0.6057055096021588", "nu": "0.3942944903978412", "d": 1}
    geo = Geometry(snr="3/2", wk2=1, wq2="1/2", wkwq="1/4", muwk="1/2", muwq="-1/3")
    gam, h = Fraction(1, 5), Fraction(1, 10 ** 15)
    for route in ("general", None):
        lo, hi, mid = prove_attention(tanh, "3/2", [gam - h, gam + h, gam], geo, "keep", DIGITS, route=route)
        with working_bits(256):
            fd = -to_arb(gam) ** 2 * (hi.quadratic_form - lo.quadratic_form) / to_arb(2 * h)
        record(ck, f"E_A (implicit derivative, a ball) within 1e-11 of the central difference of proved varphi "
                f"(h=1e-15), route={route or 'auto'}", mid.error, within(mid.error, fd, Fraction(1, 10 ** 11)),
                gap(mid.error, fd))
    gammas = ["1e-4", "1e-3", "0.01", "0.1", "1", "10"]
    for f, cc, gg, diag in (("tanh", "1/2", geo, "zero"), ("relu", "2", Geometry(snr=4, wk2=1, wq2=1, wkwq=1,
                            muwk=2, muwq=2), "keep"), ("cos", "3", Geometry(snr=1), "zero")):
        balls = [b.error for b in prove_attention(f, cc, gammas, gg, diag, DIGITS)]
        ok = all(b >= 0 and b <= 1 for b in balls) and all(a < b for a, b in zip(balls, balls[1:]))
        ck.add(f"proved: 0 <= E_A <= 1, strictly increasing in gamma on the balls ({f}, c={cc}, {diag})", "precision",
               ok and all(tight(b) for b in balls), " ".join(b.str(6, radius=False) for b in balls))


# ---------------------------------------------------------------- precision

def _precision(ck):
    """The derivation's claim (a 30-digit answer has at least 28 correct digits) against the proved ball: the
    unproved 30-digit value within ``1e-28`` of the ball, at the derivation's quick points."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention.prove import prove_attention, prove_ridge
    from symrmt.models.attention.theory import attention_limit, ridge_limit

    geo = Geometry(snr=1, wk2=1, wq2="1/4", wkwq="3/10", muwk="1/2", muwq="-1/10")
    D = 30
    for c, g in (("1/2", "1e-3"), ("0.98", "1e-3"), ("1.02", "0.01")):
        pts = attention_limit("tanh", c, [g], geo, digits=D, details=True)
        b = prove_attention("tanh", c, [g], geo, "zero", DIGITS, points=pts)[0].error
        record(ck, f"E_A: the {D}-digit answer within 1e-{D - 2} of the proved ball, c={c}, gamma={g}", b,
                within(b, pts[0].error, Fraction(1, 10 ** (D - 2))), gap(b, pts[0].error))
    lo = ridge_limit("0.98", ["1e-8"], snr=2, digits=D)[0]
    b = prove_ridge(Fraction(98, 100), [Fraction(1, 10 ** 8)], Fraction(2), DIGITS)[0]
    record(ck, f"E_RR: the {D}-digit answer within 1e-{D - 2} of the proved ball, c=0.98, gamma=1e-8", b,
            within(b, lo, Fraction(1, 10 ** (D - 2))), gap(b, lo))


# ---------------------------------------------------------------- simulations: the theory side

def _theory_side(ck, label, f, c, gammas, geo, diag, values, rel, ridge=None):
    """The theory values a Monte-Carlo comparison uses, each within ``rel`` of its proved ball."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention.prove import prove_attention, prove_ridge

    balls = [b.error for b in prove_attention(f, c, list(gammas), geo, diag, DIGITS)]
    for g, b, v in zip(gammas, balls, values):
        record(ck, f"theory side: {label} gamma={g}: E_A used by the simulation check within {rel} of the proved "
                f"ball", b, within(b, v, rel), gap(b, v))
    if ridge is not None:
        rr = prove_ridge(Fraction(c), [Fraction(g) for g in gammas], geo.snr, DIGITS)
        for g, b, v in zip(gammas, rr, ridge):
            record(ck, f"theory side: {label} gamma={g}: E_RR used by the simulation check within {rel} of the "
                    f"proved ball", b, within(b, v, rel), gap(b, v))


def _simulation_agreement(ck):
    """The 15-digit theory values of every point (both quantities) within ``1e-13`` of their proved balls;
    ``gelu`` is skipped (its Hermite data have no proved tail bound: ``ProofError``)."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import simulation_agreement as SA
    from symrmt.models.attention.theory import attention_limit, ridge_limit

    seen = set()
    for f, c, gname, diag, _noise in SA.POINTS:
        if f == "gelu" or (f, c, gname, diag) in seen:  # the noise law changes the simulation only
            continue
        seen.add((f, c, gname, diag))
        geo = SA.GEOMETRIES[gname]
        att = attention_limit(f, c, list(SA.GAMMAS), geo, diag, digits=15)
        rr = ridge_limit(c, list(SA.GAMMAS), snr=geo.snr, digits=15)
        _theory_side(ck, f"{f} c={c} {gname} {diag}", f, c, SA.GAMMAS, geo, diag,
                     [mpmath.mpf(mpmath.nstr(v, 15)) for v in att], Fraction(1, 10 ** 13),
                     ridge=[mpmath.mpf(mpmath.nstr(v, 15)) for v in rr])


def _attention_grid(ck):
    """The float64 theory values of all 27 points within
    ``1e-13`` of their proved balls."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import attention_grid as AG
    from symrmt.models.attention.theory import attention_limit

    for i in range(len(AG.POINTS)):
        f, c, gname, diag = AG.POINTS[i]
        geo = AG.GEOMETRIES[gname]
        th = [float(v) for v in attention_limit(f, c, list(AG.GAMMAS), geo, diag, digits=15)]
        _theory_side(ck, f"point {i}: {f} c={c} {gname} {diag}", f, c, AG.GAMMAS, geo, diag, th,
                     Fraction(1, 10 ** 13))


# ---------------------------------------------------------------- engine_density

def _engine_density(ck):
    """The densities the derivation asserts at interior points, as ``Im tau((W - z I)^{-1})/pi`` with the complex
    fixed point proved on ``acb`` balls at ``z = x + 1e-40 i`` (the trace is analytic in ``z`` off the spectrum's
    edges: it moves by ``O(1e-40)`` between ``eta = 1e-40`` and ``eta -> 0+``), within ``1e-28`` of the
    derivation's references (the closed form, the independent subordination solve); the Ginibre resolvent
    (Hermitized inside the disk: the pinned fixed point at ``eps = 0``, :mod:`symrmt.engine.prove.hermitized`)
    against ``gamma`` inside and ``1/gamma`` outside.  Not on balls: the edges, the atom (a search over ``x``)
    and the histograms (simulations)."""
    # optional dependency (flint); import-time cost: the CLI's start loads no SymPy or NumPy
    import flint

    from symrmt.proofs.arb import working_bits
    from symrmt.derivations import engine_density as E

    eta = "1e-40"
    for c, xs in (("1/2", ("0.3137", "1.61", "2.77")), ("2", ("0.5", "3.3"))):
        m = E._wishart()
        for x in xs:
            r = m.limit("trace(inv(Z.T*Z/n - z*I(n)))", at={"c": c, "z": f"{x}+{eta}j"}, digits=DIGITS, prove=True)
            with working_bits(256):
                dens = r.ball.imag / flint.arb.pi()
            with mpmath.workdps(60):
                ref = E.mp_density(E.eval_q(c), mpmath.mpf(x))
            record(ck, f"MP density c={c} x={x}: Im tau/pi at x + 1e-40 i (acb ball) within 1e-28 of the closed "
                    f"form ({r.branch})", dens, within(dens, ref, Fraction(1, 10 ** 28)), gap(dens, ref))
    m2 = E._wishart(goe=True)
    for x in ("-1.31", "0.77", "2.9"):
        r = m2.limit("trace(inv(G/sqrt(n) + Z.T*Z/n - z*I(n)))", at={"c": "1/2", "z": f"{x}+{eta}j"}, digits=DIGITS,
                     prove=True)
        with working_bits(256):
            dens = r.ball.imag / flint.arb.pi()
        with mpmath.workdps(60):  # x as a 60-digit number (as the derivation calls it)
            ref = E.subordination_density(mpmath.mpf(1) / 2, mpmath.mpf(x), 60)
        record(ck, f"semicircle + MP density x={x}: Im tau/pi (acb ball) within 1e-28 of the subordination solve "
                f"({r.branch})", dens, within(dens, ref, Fraction(1, 10 ** 28)), gap(dens, ref))


    # import-time cost: the CLI's start loads no symrmt.engine
    from symrmt.engine import Model

    gm = Model()
    gm.gaussian("Z", "n", "n")
    for gam in ("1/2", "-3/4", "2"):
        r = gm.limit("trace(inv(Z/sqrt(n) + gamma*I(n)))", at={"gamma": gam}, digits=DIGITS, prove=True)
        q = Fraction(gam)
        ref = q if abs(q) <= 1 else 1 / q
        with mpmath.workdps(60):
            refm = mpmath.mpf(ref.numerator) / ref.denominator
        record(ck, f"Ginibre tau((gamma + Z)^-1), gamma={gam}: {'gamma' if abs(q) <= 1 else '1/gamma'} in the ball "
               f"({r.branch}{', Hermitized' if r.hermitized else ''})", r.ball, contains(r.ball, refm))


# ---------------------------------------------------------------- softmax

def _softmax(ck):
    """The softmax limit against the entry-wise kernel ``h(t) = exp(t - alpha^2/2) - 1`` on balls (its Hermite
    data at the scale ``alpha`` proved from their closed forms): the 30-digit softmax limit within ``1e-28`` of
    the proved ball at the derivation's three points, and the 15-digit theory of every simulation route within
    ``1e-13``.  The softmax's own steps (the linearization, the spike) are the derivation's mathematics and
    simulations, not provable here."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import softmax as SM
    from symrmt.models.attention.prove import prove_attention

    def kernel(geo):
        al = Fraction(as_low_rank(geo).alpha)
        return f"exp(t - {al * al / 2}) - 1"

    for c, g, geo in (("1/2", "0.05", SM.ROUTES[1][1]), ("2", "1", SM.ROUTES[2][1]), ("1/2", "1/2", SM.ROUTES[4][1])):
        b = prove_attention(kernel(geo), c, [g], geo, "zero", DIGITS)[0].error
        a = symrmt.limit(None, c, [g], geo, digits=30, attention="softmax").attention_mp[0]
        record(ck, f"softmax limit (30 digits) within 1e-28 of the ball of the kernel {kernel(geo)} (c={c}, gamma={g})",
               b, within(b, a, Fraction(1, 10 ** 28)), gap(b, a))
    gammas = ["0.05", "1"]
    for name, geo in SM.ROUTES:
        th = symrmt.limit(None, "1/2", gammas, geo, digits=15, attention="softmax").attention_mp
        balls = prove_attention(kernel(geo), "1/2", gammas, geo, "zero", DIGITS)
        for g, v, b in zip(gammas, th, balls):
            record(ck, f"theory side: softmax, {name}, gamma={g}: the limit used by the simulation check within "
                   "1e-13 of the proved ball", b.error, within(b.error, v, Fraction(1, 10 ** 13)), gap(b.error, v))


#: derivation name -> the function adding its proved checks to a CheckList
PROVED_THEORY = {
    "softmax": _softmax,
    "ridgeless": _ridgeless,
    "attention_limit": _attention_limit,
    "precision": _precision,
    "simulation_agreement": _simulation_agreement,
    "attention_grid": _attention_grid,
    "engine_density": _engine_density,
}
