"""``symrmt verify --prove``: key asserted numbers of the derivations, re-run with proved balls.

For each derivation in :data:`PROVED` the same claims are checked on balls
(:mod:`symrmt.models.attention.prove`): a reference value computed independently (a closed form, a
quadrature) must lie in the ball, or two routes' balls must overlap; every ball must have a radius
at most ``10**-DIGITS`` of its midpoint.  A ball that excludes the reference is a proved
disagreement.  The claims made up to a tolerance (ridgeless limits at ``gamma = 1e-12``, a central
difference, two working precisions, the theory side of the simulations, densities) are in
:mod:`symrmt.derivations.proved_theory`.  The derivations in :data:`NOT_PROVED` have no proved
counterpart: :func:`proved_checks` returns ``None`` for them and ``symrmt verify --prove`` lists them
with the reason.
"""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath

from symrmt.derivations.proved_common import DIGITS  # noqa: F401  (the digits of every proved check)
from symrmt.derivations.proved_common import contains as _contains, mpq as _mpq, record as _record, tight as _tight
from symrmt.derivations.proved_theory import PROVED_THEORY
from symrmt.models.attention.geometry import Geometry, LowRankGeometry


def _hermite_linearization(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.hermite.balls import prove_hermite_report
    from symrmt.hermite import Nonlinearity

    t = prove_hermite_report(Nonlinearity("tanh"), 1, DIGITS)
    _record(ck, "tanh: nu = 1 - a1 (Stein's lemma), balls overlap", t["nu"], t["nu"].overlaps(1 - t["a"][1]))
    e = prove_hermite_report(Nonlinearity("erf"), 1, DIGITS)
    with mpmath.workdps(60):
        ref = 2 / mpmath.sqrt(3 * mpmath.pi)
    _record(ck, "erf: a1 = 2/sqrt(3 pi) in the ball", e["a"][1], _contains(e["a"][1], ref))


def _ridge(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention.prove import prove_attention, prove_ridge

    geo = Geometry(snr="3/2")
    for cc in ("1/2", "3"):
        gs = [Fraction(1, 20), Fraction(1)]
        att = prove_attention({"a1": 0, "nu": 0, "d": 1}, cc, gs, geo, "keep", DIGITS)
        rr = prove_ridge(Fraction(cc), gs, Fraction(3, 2), DIGITS)
        for a, b, g in zip(att, rr, gs):
            _record(ck, f"attention solver with K = I equals ridge (c={cc}, gamma={g}): balls overlap", a.error,
                    a.error.overlaps(b) and _tight(b))


def _linear_kernel(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations.linear_kernel import mp_integral
    from symrmt.models.attention.prove import prove_attention

    for c, g in (("1/2", "1/10"), ("2", "1")):
        for diag, psi in (("keep", lambda cc, x: cc * x ** 3), ("zero", lambda cc, x: cc * x * (x - 1) ** 2)):
            b = prove_attention("t", c, [g], None, diag, DIGITS)[0]
            with mpmath.workdps(50):
                cc, gg = _mpq(c), _mpq(g)
                ref = gg ** 2 * mp_integral(cc, gg, lambda x, cc=cc, psi=psi: psi(cc, x), 2, 45)
            _record(ck, f"{diag}: E_A == gamma^2 MP integral, c={c}, gamma={g}: in the ball", b.error,
                    _contains(b.error, ref))


def _aligned(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations.aligned import aligned_geometry
    from symrmt.models.attention.prove import prove_attention

    tanh = {"a1": "0.6057055096021588", "nu": "0.3942944903978412", "d": 1}
    for c, g, geo, diag in (("1/2", "0.05", (1, "3/2", "3/2"), "zero"), ("2", "1", (4, 1, "-1/2"), "zero")):
        G = aligned_geometry(*geo)
        a = prove_attention(tanh, c, [g], G, diag, DIGITS)[0].error
        b = prove_attention(tanh, c, [g], G, diag, DIGITS, route="general")[0].error
        _record(ck, f"closed form == general Woodbury, c={c}, gamma={g}, geometry={geo}: balls overlap", a,
                a.overlaps(b) and _tight(b))


def _engine_mp(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import engine_mp as E

    m = E.model()
    for at in E.POINTS:
        r = m.limit(E.EXPR, at=at, digits=DIGITS, prove=True)
        with mpmath.workdps(60):
            ref = E.closed_form(E._mpq(at["phi"]), E._mpq(at["lam"]), 60)
        _record(ck, f"limit == closed form (phi={at['phi']}, lam={at['lam']}): in the ball ({r.branch})", r.ball,
                _contains(r.ball, ref))


def _engine_anisotropic_mp(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import engine_anisotropic_mp as E

    m = E.model()
    for at in E.POINTS:
        r = m.limit(E.EXPR, at=at, digits=DIGITS, prove=True)
        ref = E.closed_form(at["phi"], at["lam"], 60)
        _record(ck, f"limit == Silverstein (phi={at['phi']}, lam={at['lam']}): in the ball ({r.branch})", r.ball,
                _contains(r.ball, ref))


def _engine_subordination(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import engine_subordination as E

    m = E.model()
    for at in E.POINTS:
        r = m.limit(E.EXPR, at=at, digits=DIGITS, prove=True)
        ref = E.closed_form(at, 60)
        tag = ", ".join(f"{k}={v}" for k, v in at.items())
        _record(ck, f"limit == coupled subordination equations ({tag}): in the ball ({r.branch})", r.ball,
                _contains(r.ball, ref))


def _engine_ridge_bias_variance(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import engine_ridge_bias_variance as E

    m = E.model()
    for at in E.POINTS:
        rb, rv = E.bias_variance(at["phi"], at["lam"], 60)
        for label, expr, ref in (("bias", E.BIAS, rb), ("variance", E.VARIANCE, rv)):
            r = m.limit(expr, at=at, digits=DIGITS, prove="branch")  # 22 unknowns: the chain on request
            _record(ck, f"{label} == deterministic equivalent (phi={at['phi']}, lam={at['lam']}): in the ball "
                    f"({r.branch})", r.ball, _contains(r.ball, ref))


def _engine_random_features(ck):
    """(S67) and (S68) on balls: the derivation's own residual function, run with the parameters and the
    two proved traces as balls; a residual ball that excludes 0 is a proved violation."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import engine_random_features as E
    from symrmt.proofs.arb import to_arb, working_bits

    mdl = E.model()
    for at in (E.AT, E.OTHER):
        t1 = mdl.limit(E.TAU1, at=at, digits=DIGITS, prove=True)
        t2 = mdl.limit(E.TAU2, at=at, digits=DIGITS, prove=True)
        saved = E.eval_q
        E.eval_q = lambda text: to_arb(Fraction(text))  # the exact parameters as balls
        try:
            with working_bits(256):
                s67, s68 = E.relations(at, t1.ball, t2.ball)
        finally:
            E.eval_q = saved
        tag = f"phi={at['phi']}, psi={at['psi']}, lam={at['lam']}"
        for name, res in (("S67", s67), ("S68", s68)):
            ok = res.contains(0) and res.rad() <= abs(t1.ball.mid()) ** 3 * 10 ** -(DIGITS - 2)
            ck.add(f"proved: ({name}) residual ball holds 0 ({tag}; branches {t1.branch}, {t2.branch})", "precision",
                   ok, res.str(5))


def _lowrank(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import lowrank as L
    from symrmt.models.attention.prove import prove_attention

    vecs4 = L._vectors(4, seed=3)
    geo4 = LowRankGeometry(L._gram(vecs4))
    geo8 = LowRankGeometry(L._gram(L._split(vecs4, 4)))
    a = prove_attention("tanh", "1/2", ["1/10"], geo4, "zero", DIGITS)[0].error
    b = prove_attention("tanh", "1/2", ["1/10"], geo8, "zero", DIGITS)[0].error
    _record(ck, "rank 8 (each of 4 terms split in two) == rank 4, tanh, c=1/2, gamma=1/10: balls overlap", a,
            a.overlaps(b) and _tight(b))
    vecs2 = L._vectors(2, seed=5)
    geo_a = LowRankGeometry(L._gram(vecs2), alpha=2)
    geo_s = LowRankGeometry(L._gram([vecs2[0]] + [[x / 2 for x in v] for v in vecs2[1:3]] + vecs2[3:]))
    a = prove_attention("t", "2", ["1/5"], geo_a, "zero", DIGITS)[0].error
    b = prove_attention("t", "2", ["1/20"], geo_s, "zero", DIGITS)[0].error
    _record(ck, "f = t: E_A(gamma; 2 I + L) = E_A(gamma/4; I + L/2): balls overlap", a, a.overlaps(b) and _tight(b))


def _a1_zero(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention.api import as_nonlinearity
    from symrmt.models.attention.prove import prove_attention

    f = as_nonlinearity("cos", center=True)  # a_1 = 0, d = 0 (zero diagonal)
    for c in ("1/2", "2"):
        ref = prove_attention(f, c, ["1/20", "1"], Geometry(), "zero", DIGITS)
        geo = Geometry(snr=2, wk2="9/4", wq2=1, wkwq="1/2", muwk="1/3", muwq=-1)
        for route in (None, "general"):
            val = prove_attention(f, c, ["1/20", "1"], geo, "zero", DIGITS, route=route)
            for a, b in zip(val, ref):
                _record(ck, f"d=0: E_A(snr=2, rank 2) == E_A(noise only), c={c}, gamma={a.gamma}, "
                        f"route={route or 'closed'}: balls overlap", a.error, a.error.overlaps(b.error) and _tight(b.error))


def _engine_ridge_teacher(ck):
    """Quadratic forms (:mod:`symrmt.engine.prove.quadratic_forms`): bias, variance and risk against Hastie et al."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import engine_ridge_teacher as E

    m = E.model()
    for at in E.POINTS:
        rb, rv, _ = E.hastie(at["phi"], at["lam"], at["beta.beta"], at["sigma"], 60)
        with mpmath.workdps(60):
            total = rb + rv
        tag = f"phi={at['phi']}, lam={at['lam']}, r2={at['beta.beta']}, sigma={at['sigma']}"
        for label, expr, ref in (("bias", E.BIAS, rb), ("variance", E.VARIANCE, rv), ("risk", E.RISK, total)):
            r = m.limit(expr, at=at, digits=DIGITS, prove=True)
            _record(ck, f"{label} == Hastie et al. ({tag}): in the ball ({r.branch})", r.ball, _contains(r.ball, ref))


def _engine_ridge_signal(ck):
    """The derivative of a quadratic form (``diff``, the implicit system on balls) against the ridge closed form,
    and against its proved ball (the Marchenko-Pastur root isolated exactly)."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import engine_ridge_signal as E
    from symrmt.models.attention.prove import prove_ridge
    from symrmt.models.attention.theory import ridge_limit

    m = E.model()
    for at in E.POINTS:
        r = m.limit(E.E_RR, at=at, digits=DIGITS, prove=True)
        ref = ridge_limit(at["c"], [at["gamma"]], snr=at["mu.mu"], digits=50)[0]
        closed = prove_ridge(at["c"], [at["gamma"]], at["mu.mu"], DIGITS)[0]
        tag = f"c={at['c']}, gamma={at['gamma']}, mu.mu={at['mu.mu']}"
        _record(ck, f"E_RR == ridge closed form ({tag}): in the ball, overlaps its proved ball ({r.branch})", r.ball,
                _contains(r.ball, ref) and r.ball.overlaps(closed))


def _engine_spiked(ck):
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import engine_spiked as E

    m = E.model()
    for at in E.POINTS:
        refs = E.closed_forms(at, 60)
        tag = ", ".join(f"{k}={v}" for k, v in at.items() if k != "v.v")
        for label, expr, ref in zip(("v^T Q v", "w^T Q w", "v^T Q w"), (E.QVV, E.QWW, E.QVW), refs):
            r = m.limit(expr, at=at, digits=DIGITS, prove=True)
            _record(ck, f"{label} == closed form ({tag}): in the ball ({r.branch})", r.ball, _contains(r.ball, ref))


def _engine_attention(ck):
    """The paper's E_A and E_RR as engine expressions (quadratic forms with ``diff``, the nonlinear kernel)
    on balls, against the hand-built solver's proved balls (two routes that share only the Hermite data)."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.derivations import engine_attention as E
    from symrmt.models.attention import at_from_gram, attention_model
    from symrmt.models.attention.prove import prove_attention, prove_ridge

    rng = random.Random(20261202)
    for f, rank, alpha, diagonal, route in (E.ROUTES[1], E.ROUTES[2], E.ROUTES[4]):
        m, ex = attention_model(f, rank, alpha, diagonal)
        gram = E.random_gram(rng, rank, route)
        c, g = Fraction(rng.randint(1, 12), 4), Fraction(rng.randint(1, 40), 40)
        at = {"c": str(c), "gamma": str(g), **at_from_gram(gram, rank)}
        geo = LowRankGeometry(gram if rank else [[gram[0][0]]], alpha=Fraction(alpha))
        hand = prove_attention(f, c, [g], geo, diagonal, DIGITS)[0].error
        ridge = prove_ridge(c, [g], geo.snr, DIGITS)[0]
        tag = f"{route}: f={f}, c={c}, gamma={g}"
        for label, expr, ref in (("E_A", ex["E_A"], hand), ("E_RR", ex["E_RR"], ridge)):
            r = m.limit(expr, at=at, digits=DIGITS, prove=True)
            _record(ck, f"{label} engine == hand-built solver ({tag}): balls overlap ({r.branch})", r.ball,
                    r.ball.overlaps(ref) and _tight(ref))


def _noise_only(ck):
    """The eliminated (or stored) polynomial ``P(m; gamma)`` at exact points: its real roots isolated exactly
    (``fmpq_poly``); the proved ``m(-gamma)`` of the general fixed point (``tau(Q)``, noise only) must meet
    one of them in ``(0, 1/gamma]`` (a ball disjoint from every root would prove ``P(m) != 0``), and
    ``E_A = gamma^2 P_gamma / P_m`` on that root's ball must overlap the proved ``E_A``."""
    # optional dependency (flint); import-time cost: the CLI's start loads no SymPy or NumPy
    import flint
    import sympy as sp

    from symrmt.proofs.arb import isolate_real_roots, to_arb, working_bits
    from symrmt.derivations import noise_only as NO
    from symrmt.models.attention import equations as S
    from symrmt.models.attention.closed_forms import noise_only as N
    from symrmt.models.attention.prove import prove_attention

    for point in NO.QUICK_POINTS:
        cc, aa, nn, dd = point
        diag = "zero" if sp.Rational(str(dd)) == 0 else "keep"
        P = sp.Poly(N.stieltjes_polynomial(*point), S.m, S.gamma)
        for gam in ("1/10", "1"):
            ball = prove_attention({"a1": aa, "nu": nn, "d": dd}, cc, [gam], None, diag, DIGITS)[0]
            g = sp.Rational(gam)
            Pm = sp.Poly(P.as_expr().subs(S.gamma, g), S.m)
            with working_bits(256):
                fp = flint.fmpq_poly([flint.fmpq(int(sp.Rational(x).p), int(sp.Rational(x).q))
                                      for x in reversed(Pm.all_coeffs())])
                inside = [r for r in isolate_real_roots(fp) if r > 0 and r <= to_arb(Fraction(gam)) ** -1]
                hit = [r for r in inside if r.overlaps(ball.block_traces[0])]
                ok = len(hit) == 1
                if ok:
                    r = hit[0]
                    num = sp.diff(P.as_expr(), S.gamma).subs(S.gamma, g)
                    den = sp.diff(P.as_expr(), S.m).subs(S.gamma, g)
                    pg = sum((to_arb(Fraction(int(cf.p), int(cf.q))) * r ** int(k)
                              for (k,), cf in sp.Poly(num, S.m).terms()), flint.arb(0))
                    pm = sum((to_arb(Fraction(int(cf.p), int(cf.q))) * r ** int(k)
                              for (k,), cf in sp.Poly(den, S.m).terms()), flint.arb(0))
                    ea = to_arb(Fraction(gam)) ** 2 * pg / pm
                    ok = ea.overlaps(ball.error)
            tag = f"c={cc}, a1={aa}, nu={nn}, d={dd}, gamma={gam}"
            _record(ck, f"P(m) = 0: the proved m meets one isolated root in (0, 1/gamma], and E_A = gamma^2 "
                    f"P_gamma/P_m on it overlaps the proved E_A ({tag}; {len(inside)} root(s) there)",
                    ball.block_traces[0], ok)


#: derivation name -> the function adding its proved checks to a CheckList
PROVED = {
    "hermite_linearization": _hermite_linearization,
    "ridge": _ridge,
    "a1_zero": _a1_zero,
    "linear_kernel": _linear_kernel,
    "aligned": _aligned,
    "engine_mp": _engine_mp,
    "engine_anisotropic_mp": _engine_anisotropic_mp,
    "engine_subordination": _engine_subordination,
    "engine_ridge_bias_variance": _engine_ridge_bias_variance,
    "engine_random_features": _engine_random_features,
    "lowrank": _lowrank,
    "engine_ridge_teacher": _engine_ridge_teacher,
    "engine_ridge_signal": _engine_ridge_signal,
    "engine_spiked": _engine_spiked,
    "engine_attention": _engine_attention,
    "noise_only": _noise_only,
    **PROVED_THEORY,
}

#: derivation name -> why it has no proved counterpart (printed by ``symrmt verify --prove``)
NOT_PROVED = {
    "pretrained": "its theory points are low-rank geometries of float vectors fitted to the downloaded MiniLM "
                  "weights (an optional extra), and the rest are simulations, which are not provable",
    "icl": "no proved counterpart is written yet: its limit is Result 1, an explicit formula in two task-diversity "
           "resolvents that the engine can prove as balls, but pushing those balls through the formula in ball "
           "arithmetic is not implemented; its exact identity (tau > 1) is symbolic and the rest are simulations",
    "engine_fresh_samples": "no proved counterpart is written yet: a form split across independent samples is "
                            "solved part by part and certified at two precisions; the rest are simulations",
    "generalization": "no proved counterpart is written yet: the test errors are certified (two precisions), not "
                      "proved; its exact identities are symbolic and the rest are simulations",
}


def not_proved_reason(name: str) -> str:
    """Why derivation ``name`` is not re-run on balls (a default for a derivation not listed)."""
    return NOT_PROVED.get(name, "no proved counterpart is written for it yet")


def proved_checks(name: str):
    """The :class:`~symrmt.derivations.checklist.CheckList` of the proved checks of derivation ``name`` (``None``: none)."""
    # import-time cost: the CLI's start loads no SymPy
    from symrmt.derivations.checklist import CheckList

    fn = PROVED.get(name)
    if fn is None:
        return None
    ck = CheckList(name)
    fn(ck)
    return ck
