"""Proved balls (``--prove``, :mod:`symrmt.models.attention.prove`): each ball must contain an independent
40-digit value (a closed form, a one-dimensional quadrature, or a separate certified solve) and have a
radius at most ``1e-30`` of its midpoint at 30 digits; a box around a wrong root is refused."""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.prove]  # seconds a test: outside the fast tier (pytest -m "not slow")

flint = pytest.importorskip("flint")

from symrmt.models.attention import prove as P  # noqa: E402
from symrmt.errors import BranchError  # noqa: E402
from symrmt.engine.prove import trace as EP  # noqa: E402

D = 30


def _contains(ball, ref):
    """The ball contains the 40-digit reference (as a ball of its own rounding, 1e-40 relative)."""
    with P.working_bits(200):
        r = flint.arb(mpmath.nstr(ref, 45), abs(float(ref)) * 1e-40 + 1e-300)
        return ball.overlaps(r)


def _tight(ball, digits=D):
    return ball.rad() <= abs(ball.mid()) * flint.arb(10) ** (-digits)


def _mp_m(c, g):
    """Marchenko-Pastur ``m(-g)`` of ``Z^T Z/n`` (ratio ``c``; mpf arguments): the positive root of
    ``g m^2 + (g + c - 1) m - 1 = 0``."""
    b = g + c - 1
    return (-b + mpmath.sqrt(b * b + 4 * g)) / (2 * g)


def _q(x):
    return mpmath.mpf(x.numerator) / x.denominator


def _mp_closed_form(c, gamma, dps=45):
    with mpmath.workdps(dps):
        return _mp_m(_q(c), _q(gamma))


def _model():
    from symrmt.engine import Model

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.goe("G", "n")
    return m


@pytest.mark.parametrize("c, gamma", [(Fraction(3, 7), Fraction(2, 9)), (Fraction(5, 3), Fraction(1, 30))])
def test_engine_mp_ball_contains_closed_form(c, gamma):
    m = _model()
    r = m.limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"c": c, "gamma": gamma}, digits=D, prove=True)
    ref = _mp_closed_form(c, gamma)
    assert _contains(r.ball, ref) and _tight(r.ball)
    assert r.branch == "isolated"  # two unknowns: eliminated exactly, one real root in (0, 1/gamma]


def test_engine_semicircle_ball():
    """``tau((G^2/n + gamma)^-1)`` for the semicircle law (variance 1), by quadrature of its density."""
    gamma = Fraction(3, 11)
    r = _model().limit("trace(inv(G*G/n + gamma*I(n)))", at={"gamma": gamma}, digits=D, prove=True)
    with mpmath.workdps(50):
        g = mpmath.mpf(3) / 11
        ref = mpmath.quad(lambda th: 2 / mpmath.pi * mpmath.sin(th) ** 2 / (4 * mpmath.cos(th) ** 2 + g),
                          [0, mpmath.pi / 2, mpmath.pi])  # x = 2 cos(theta)
    assert _contains(r.ball, ref) and _tight(r.ball)


def test_engine_derivative_ball():
    """``d/dgamma tau(Q)`` (implicit linear system on balls) against the closed form's derivative."""
    c, gamma = Fraction(2, 5), Fraction(3, 4)
    r = _model().limit("diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)", at={"c": c, "gamma": gamma}, digits=D,
                       prove=True)
    with mpmath.workdps(50):
        ref = mpmath.diff(lambda g: _mp_m(_q(c), g), _q(gamma))
    assert _contains(r.ball, ref) and _tight(r.ball)


def test_ridge_balls():
    from symrmt.models.attention import equations as S
    import sympy as sp

    c, gammas = Fraction(3, 4), [Fraction(1, 20), Fraction(7, 3)]
    # snr = 0: E_RR = -gamma^2 m'(gamma) with m the Marchenko-Pastur root (numerical derivative, 50 digits)
    balls = P.prove_ridge(c, gammas, 0, D)
    for g, b in zip(gammas, balls):
        with mpmath.workdps(50):
            ref = -_q(g) ** 2 * mpmath.diff(lambda x: _mp_m(_q(c), x), _q(g))
        assert _contains(b, ref) and _tight(b)
    # snr = 3/2: the SymPy closed form evaluated by SymPy itself at 45 digits
    b = P.prove_ridge(c, [Fraction(2, 5)], Fraction(3, 2), D)[0]
    expr = S.ridge_error_closed_form().subs({S.gamma: sp.Rational(2, 5), S.c: sp.Rational(3, 4),
                                             S.snr: sp.Rational(3, 2)})
    with mpmath.workdps(45):
        ref = mpmath.mpf(str(sp.N(expr, 45)))
    assert _contains(b, ref) and _tight(b)


@pytest.mark.parametrize("diagonal, psi", [("keep", lambda c, x: c * x ** 3),
                                           ("zero", lambda c, x: c * x * (x - 1) ** 2)])
def test_attention_linear_kernel_ball(diagonal, psi):
    """f(t) = t: E_A is a one-dimensional Marchenko-Pastur integral (derivations.linear_kernel)."""
    from symrmt.derivations.linear_kernel import mp_integral

    c, gamma = Fraction(2, 3), Fraction(3, 10)
    b = P.prove_attention("t", c, [gamma], None, diagonal, D)[0]
    with mpmath.workdps(50):
        cc, g = mpmath.mpf(2) / 3, mpmath.mpf(3) / 10
        ref = g ** 2 * mp_integral(cc, g, lambda x: psi(cc, x), 2, 45)
    assert _contains(b.error, ref) and _tight(b.error)
    assert b.branch == "sanity"


def test_attention_tanh_signal_ball_vs_separate_solve():
    """tanh with a signal and weights: the ball against the certified solve at 40 digits (two precisions,
    the nine-equation least-squares Newton: a separate computation from the Krawczyk test)."""
    import symrmt
    from symrmt.models.attention.theory import attention_limit

    geo = symrmt.Geometry(snr=1, wk2=1, wq2="1/2", muwk="1/3", muwq=0, wkwq="1/4")
    gamma = Fraction(7, 10)
    ref = attention_limit("tanh", "1/2", [gamma], geo, digits=40)[0]
    b = P.prove_attention("tanh", "1/2", [gamma], geo, "zero", D)[0]
    assert _contains(b.error, ref) and _tight(b.error)


def test_hermite_balls():
    """erf: closed forms exactly as balls; tanh (quadrature on balls): Stein's identity nu = 1 - a_1."""
    from symrmt.hermite import Nonlinearity

    rep = P.prove_hermite_report(Nonlinearity("erf"), 1, D)
    with mpmath.workdps(50):
        assert _contains(rep["a"][1], 2 / mpmath.sqrt(3 * mpmath.pi))
        assert _contains(rep["nu"], 2 / mpmath.pi * mpmath.asin(mpmath.mpf(2) / 3))
    t = P.prove_hermite_report(Nonlinearity("tanh"), 1, D)
    assert t["nu"].overlaps(1 - t["a"][1]) and _tight(t["nu"]) and _tight(t["a"][1])
    with P.working_bits(200):
        assert not t["nu"].overlaps(1 - t["a"][1] + flint.arb(10) ** -32)  # the check can fail


def test_wrong_mp_root_refused():
    """Krawczyk proves the root -1.962 as readily as 50.96 (c = 1/2, gamma = 1/100); it is refused."""
    with pytest.raises(BranchError, match="not the physical one"):
        P.prove_mp_root("1/2", "1/100", -1.962, D)
    good = P.prove_mp_root("1/2", "1/100", 50.96, D)
    assert _contains(good, _mp_closed_form(Fraction(1, 2), Fraction(1, 100)))


def test_wrong_engine_root_refused():
    """An engine box around the other Marchenko-Pastur root (a solver handing it over) is refused."""
    m = _model()
    expr = "trace(inv(Z.T*Z/n + gamma*I(n)))"
    at = {"c": Fraction(1, 2), "gamma": Fraction(1, 100)}
    r = m.limit(expr, at=at, digits=15)
    sol = r.solvers[0]
    physical = _mp_closed_form(Fraction(1, 2), Fraction(1, 100))
    with mpmath.workdps(40):
        other = -1 / (mpmath.mpf(1) / 100 * physical)  # the product of the roots is -1/gamma: m = -1.962...
        assert -2 < other < -1.9
        h = [None, None]
        k22 = sol.c.system.unknowns.index((1, 1))
        h[k22] = -other  # tau = -H_22 (the readout)
        h[1 - k22] = 1 / (-other - 1)  # H_11 (H_22 - 1) = 1

    class Wrong:
        c = sol.c

        def solve(self, dps, alphas=()):
            return [mpmath.mpf(x) for x in h], {}, 0, 0

    with pytest.raises(BranchError, match="violates its bound"):
        P.prove_trace(m.plan(expr), at, D, {"values": at, 0: Wrong()})


def test_square_system_symmetric():
    """G F(G) is symmetric (the square system's premise), checked exactly at a rational point."""
    import sympy as sp

    from symrmt.models.attention import equations as S

    F, _, _ = S.fixed_point_system(expand=False)
    R = sp.Matrix(3, 3, list(F))
    G = S.block_trace_matrix()
    vals = dict(zip(S.G_SYMBOLS, [sp.Rational(k, 7) for k in (3, -2, 5, 1, 4, -6)]))
    vals.update({S.gamma: sp.Rational(2, 3), S.c: sp.Rational(5, 4), S.a1: sp.Rational(1, 3),
                 S.nu: sp.Rational(1, 2), S.d: sp.Rational(1, 5)})
    GR = (G * R).subs(vals)
    assert sp.simplify(GR - GR.T) == sp.zeros(3, 3)
    assert R.subs(vals) != R.subs(vals).T  # F itself is not symmetric: the premise is not vacuous


def test_cli_limit_prove_json(capsys):
    from symrmt.cli.app import main

    assert main(["limit", "--f", "erf", "--c", "1/2", "--gamma", "1", "--digits", "30", "--prove", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    pr = out["proved"]
    assert set(pr) >= {"attention", "ridge", "branch"} and set(pr["attention"][0]) >= {"mid", "rad"}
    assert pr["ridge"][0]["mid"].startswith(out["ridge"][0][:25])
    assert float(pr["attention"][0]["rad"]) <= 1e-30 * float(pr["attention"][0]["mid"])


def test_cli_prove_without_flint(monkeypatch, capsys):
    import sys

    from symrmt.cli.app import main

    monkeypatch.setitem(sys.modules, "flint", None)  # import flint raises ImportError
    assert main(["limit", "--f", "erf", "--c", "1/2", "--gamma", "1", "--prove"]) == 2
    assert "pip install 'symrmt[prove]'" in capsys.readouterr().err


def test_verify_prove_checks():
    """``verify --prove``: the proved counterparts pass, and their containment test can fail."""
    from symrmt.derivations.proved import PROVED, proved_checks
    from symrmt.derivations.proved_common import contains

    assert set(PROVED) >= {"hermite_linearization", "ridge", "a1_zero", "linear_kernel", "aligned", "engine_mp"}
    for name in ("engine_mp", "aligned"):
        ck = proved_checks(name)
        assert ck.checks and ck.passed, ck.table()
    assert proved_checks("pretrained") is None
    b = P.prove_mp_root("1/2", "1/100", 50.96, D)
    ref = _mp_closed_form(Fraction(1, 2), Fraction(1, 100))
    assert contains(b, ref) and not contains(b, ref * (1 + mpmath.mpf(10) ** -33))


def test_check_prove():
    """check --prove: a wrong value is a proved counterexample; a true equation's balls contain 0."""
    from symrmt.check.core import check

    bad = check("E_RR", "gamma^2*m^2", points=2, prove=True, region=False)
    assert bad.status == "disproved" and bad.proved["counterexamples"] >= 1
    good = check("m", "gamma*m^2 + (gamma+c-1)*m - 1", kind="equation", points=2, prove=True)
    assert good.proved["counterexamples"] == 0
    assert all(x["proved"] and not x["excludes"] for x in good.proved["points"])
    near = check("E_A", "E_A + 10^-12", kind="identity", points=1, digits=20, prove=True, region=False,
                 where="snr=0, wk2=0, wq2=0, wkwq=0, muwk=0, muwq=0")
    assert near.status == "disproved" and near.proved["counterexamples"] >= 1  # a gap of 1e-12 is resolved


def test_a1_zero_invariance_balls():
    """a_1 = 0 (centered cos, d = 0): E_A does not move with the signal; the two balls overlap, and an
    a_1 = 0 system (exact zeros in the box) is proved at all."""
    import symrmt

    from symrmt.models.attention.api import as_nonlinearity

    f = as_nonlinearity("cos", center=True)
    g = [Fraction(1, 7)]
    a = P.prove_attention(f, "1/3", g, symrmt.Geometry(snr=1, wk2=1, wq2=1, wkwq="1/2", muwk="1/2"), "zero", D)[0]
    b = P.prove_attention(f, "1/3", g, None, "zero", D)[0]
    assert a.error.overlaps(b.error) and _tight(a.error) and _tight(b.error)


def test_cli_trace_hermite_sweep_prove(capsys, tmp_path):
    from symrmt.cli.app import main

    assert main(["trace", "trace(inv(Z.T*Z/n + gamma*I(n)))", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n",
                 "--at", "c=1/2, gamma=1/100", "--digits", "30", "--prove", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["proved"]["branch"] == "isolated"
    ref = _mp_closed_form(Fraction(1, 2), Fraction(1, 100))
    with mpmath.workdps(50):
        assert abs(mpmath.mpf(out["proved"]["mid"]) - ref) <= mpmath.mpf(out["proved"]["rad"])
    assert main(["hermite", "--f", "erf", "--k", "1", "--digits", "20", "--prove", "--json"]) == 0
    h = json.loads(capsys.readouterr().out)["proved"]
    with mpmath.workdps(40):
        assert abs(mpmath.mpf(h["a"][1]["mid"]) - 2 / mpmath.sqrt(3 * mpmath.pi)) <= mpmath.mpf(h["a"][1]["rad"])
    csv_path = tmp_path / "s.csv"
    assert main(["sweep", "--f", "erf", "--grid", "gamma=1/2,2", "--c", "1/2", "--digits", "20", "--prove",
                 "--out", str(csv_path)]) == 0
    lines = csv_path.read_text().splitlines()
    assert lines[0].endswith("attention,ridge,attention_rad,ridge_rad") and len(lines) == 3
    assert main(["sweep", "--f", "erf", "--grid", "gamma=1/2,2", "--c", "1/2", "--fast", "--prove"]) == 2


# ---------------------------------------------------------------- the branch by continuation


def _toy_chain():
    """``x0^2 = 1 + 3t``, ``x1 = x0 x0 / 2``: from ``(1, 1/2)`` at ``t = 0`` the continued root at ``t = 1`` is
    ``(2, 2)``; ``(-2, 2)`` is a root too."""
    def F(x, t):
        return [x[0] * x[0] - 1 - 3 * t, x[1] - x[0] * x[0] / 2]

    def J(x, t):
        return [[2 * x[0], flint.arb(0)], [-x[0], flint.arb(1)]]

    def Ft(x, t):
        return [flint.arb(-3), flint.arb(0)]

    return F, J, Ft


def _point_box(x):
    return [flint.arb(v, 1e-20) for v in x]


@pytest.mark.parametrize("with_ft", [False, True])
def test_chain_toy_continued_and_wrong_root_refused(with_ft):
    from symrmt.engine.prove.chain import continuation_chain

    F, J, Ft = _toy_chain()
    ft = Ft if with_ft else None
    start = [flint.arb(1), flint.arb("0.5")]
    boxes, enc = continuation_chain(F, J, start, _point_box([2, 2]), "toy", Ft=ft)
    assert boxes >= 1 and enc[0].contains(2) and enc[1].contains(2)
    with pytest.raises(BranchError, match="another root"):
        continuation_chain(F, J, start, _point_box([-2, 2]), "toy", Ft=ft)


def _mp_stieltjes(c, z):
    """``tau((Z^T Z/n - z)^-1)`` at complex ``z`` (Im z > 0): the root of ``z m^2 + (z + 1 - c) m + 1 = 0``
    (the quadratic of :func:`_mp_m` with ``z = -g``) with ``Im m > 0``."""
    b = z + 1 - c
    disc = mpmath.sqrt(b * b - 4 * z)
    roots = [(-b + disc) / (2 * z), (-b - disc) / (2 * z)]
    good = [r for r in roots if r.imag > 0]
    assert len(good) == 1
    return good[0]


def test_engine_branch_continued_square_resolvent():
    """``tau(((Z^T Z/n)^2 + gamma)^-1)`` (8 unknowns: beyond exact elimination): the branch is proved by the
    chain along ``s``, and the ball holds ``Im m(i sqrt(gamma)) / sqrt(gamma)`` from the closed-form
    Marchenko-Pastur Stieltjes transform at complex ``z`` (``1/(x^2 + g) = Im(1/(x - i sqrt g))/sqrt g``)."""
    c, gamma = Fraction(3, 5), Fraction(2, 7)
    r = _model().limit("trace(inv(Z.T*Z*Z.T*Z/n**2 + gamma*I(n)))", at={"c": c, "gamma": gamma}, digits=D,
                       prove=True)
    assert r.branch == "continued", r.branch_notes
    with mpmath.workdps(50):
        sg = mpmath.sqrt(_q(gamma))
        ref = _mp_stieltjes(_q(c), mpmath.mpc(0, sg)).imag / sg
    assert _contains(r.ball, ref) and _tight(r.ball)


def test_engine_branch_chain_opt_in():
    """Beyond 32 unknowns (here 50) the chain runs only with ``prove="branch"``; by default the branch is
    ``sanity``."""
    from symrmt.engine.prove.trace import CHAIN_DEFAULT_UNKNOWNS

    m = _model()
    expr = "trace(inv(Z.T*Z*Z.T*Z*Z.T*Z*Z.T*Z*Z.T*Z/n**5 + gamma*I(n)))"
    at = {"c": Fraction(1, 2), "gamma": Fraction(1, 2)}
    assert len(m.plan(expr).traces[0].system.h) > CHAIN_DEFAULT_UNKNOWNS
    assert m.limit(expr, at=at, digits=D, prove=True).branch == "sanity"
    r = m.limit(expr, at=at, digits=D, prove="branch")
    assert r.branch == "continued"


def test_attention_branch_continued():
    """The attention fixed point's branch by the chain along the kernel strength (tanh, gamma = 1, aligned
    signal): the same ball as without the chain, branch ``continued``; the homotopy is the fixed point at t = 1."""
    import sympy as sp

    from symrmt.models.attention import equations as S

    diff = (S.fixed_point_homotopy(1) - S.fixed_point_polynomial(expand=False)).applyfunc(sp.expand)
    assert diff == sp.zeros(3, 3)
    at0 = S.fixed_point_homotopy(0).applyfunc(sp.expand)
    L0, _, _ = S.noise_pencil()
    assert (at0 - (S.c ** 3 * (L0 * S.block_trace_matrix() - sp.eye(3))).applyfunc(sp.expand)) == sp.zeros(3, 3)
    b0 = P.prove_attention("tanh", Fraction(1, 2), [Fraction(1)], None, "zero", D)[0]
    b1 = P.prove_attention("tanh", Fraction(1, 2), [Fraction(1)], None, "zero", D, chain=True)[0]
    assert b0.branch == "sanity" and b1.branch == "continued", b1.note
    assert b1.error.overlaps(b0.error)


def test_attention_wrong_box_refused_by_chain():
    """A proved box that is not the continued one (here: the proved box moved to another point) is refused."""
    from symrmt.proofs.arb import bits_for, working_bits
    from symrmt.models.attention.prove_branch import attention_chain

    b = P.prove_attention("tanh", Fraction(1, 2), [Fraction(1)], None, "zero", D)[0]
    with working_bits(bits_for(D)):
        a1, nu, d = P.hermite_ball("tanh")
        params = [P.to_arb(1), P.to_arb(Fraction(1, 2)), a1, nu, d]
        wrong = [x + 1 for x in b.block_traces]
    with pytest.raises(BranchError, match="another root"):
        attention_chain(params, wrong, "test")


def test_engine_branch_chain_with_stationary_entries():
    """The ridge bias of engine_ridge_bias_variance (22 unknowns, entries that stay 0 along the path): the chain
    closes with ``prove="branch"`` and the ball holds the derivation's deterministic equivalent (a separate
    scalar fixed point, monotone iteration and findroot at 60 digits)."""
    from symrmt.derivations import engine_ridge_bias_variance as E

    at = E.POINTS[1]
    r = E.model().limit(E.BIAS, at=at, digits=D, prove="branch")
    assert r.branch == "continued", r.branch_notes
    ref, _ = E.bias_variance(at["phi"], at["lam"], 60)
    assert _contains(r.ball, ref) and _tight(r.ball)


def test_cli_prove_branch(capsys):
    """``--prove-branch``: ``limit`` reports the attention branch ``continued`` (erf, gamma = 2); ``trace`` on a
    system beyond 32 unknowns reports ``continued`` where ``--prove`` alone says ``sanity``."""
    from symrmt.cli.app import main

    assert main(["limit", "--f", "erf", "--c", "1/2", "--gamma", "2", "--digits", "30", "--prove-branch",
                 "--json"]) == 0
    pr = json.loads(capsys.readouterr().out)["proved"]
    assert pr["branch"] == {"attention": "continued", "ridge": "isolated"}
    import symrmt

    res = symrmt.limit("erf", "1/2", [2], digits=D, prove="branch")
    assert res.balls["branch"]["attention"] == "continued"
    assert res.balls["attention"][0].overlaps(symrmt.limit("erf", "1/2", [2], digits=D, prove=True).balls["attention"][0])
    args = ["trace", "trace(inv(Z.T*Z*Z.T*Z*Z.T*Z*Z.T*Z*Z.T*Z/n**5 + gamma*I(n)))", "--matrix", "Z=gaussian(p,n)", "--dim",
            "p=c*n", "--at", "c=1/2, gamma=1/2", "--digits", "30", "--json"]
    assert main(args + ["--prove"]) == 0
    assert json.loads(capsys.readouterr().out)["proved"]["branch"] == "sanity"
    assert main(args + ["--prove-branch"]) == 0
    out = json.loads(capsys.readouterr().out)["proved"]
    assert out["branch"] == "continued" and float(out["rad"]) <= 1e-30 * float(out["mid"])


def test_complex_point_ball_and_wrong_branch_refused(capsys):
    """At complex ``z`` (``--at 'z=0.5+0.01j'``): an ``acb`` ball (Krawczyk on the realified system) holding the
    closed-form Marchenko-Pastur Stieltjes transform; a box around the other root of the quadratic (``Im tau``
    of the wrong sign) is refused with ``BranchError``."""
    from symrmt.cli.app import main

    m = _model()
    r = m.limit("trace(inv(Z.T*Z/n - z*I(n)))", at={"c": "1/2", "z": "1/2+1/100j"}, digits=D, prove=True)
    with mpmath.workdps(50):
        ref = _mp_stieltjes(mpmath.mpf(1) / 2, mpmath.mpc(mpmath.mpf(1) / 2, mpmath.mpf(1) / 100))
    assert _contains(r.ball.real, ref.real) and _contains(r.ball.imag, ref.imag) and r.branch == "sanity"
    assert _tight(r.ball.real) and _tight(r.ball.imag)
    # the lower half-plane: the conjugate
    r2 = m.limit("trace(inv(Z.T*Z/n - z*I(n)))", at={"c": "1/2", "z": "1/2-1/100j"}, digits=D, prove=True)
    with mpmath.workdps(50):  # negated at the reference's precision (at 15 digits it misses the tight ball)
        assert _contains(r2.ball.imag, -ref.imag) and _contains(r2.ball.real, ref.real)
    assert _tight(r2.ball.real) and _tight(r2.ball.imag)  # the radius promise below the real axis too
    # the other root: tau = -H_22 and H_11 (H_22 - 1) = 1 for tau((Z^T Z/n + gamma)^-1), gamma = -z
    expr = "trace(inv(Z.T*Z/n + gamma*I(n)))"
    plan = m.plan(expr)
    unknowns = plan.traces[0].system.unknowns
    with mpmath.workdps(50):
        z = mpmath.mpc(mpmath.mpf(1) / 2, -mpmath.mpf(1) / 100)  # gamma = -1/2 + i/100
        good = mpmath.conj(ref)  # m(z) at Im z < 0
        other = 1 / (z * good)  # the product of the roots of z m^2 + (z + 1 - c) m + 1 is 1/z
        assert other.imag > 0  # the wrong sign for Im z < 0
    for tau, ok in ((good, True), (other, False)):
        h = [None, None]
        k22 = unknowns.index((1, 1))
        h[k22] = -tau
        h[1 - k22] = 1 / (-tau - 1)
        args = (plan, {"c": Fraction(1, 2)}, "gamma", Fraction(-1, 2), Fraction(1, 100), D, {0: h}, {0: -1})
        if ok:
            value, _ = EP.prove_complex_trace(*args)
            assert _contains(value.real, good.real) and _contains(value.imag, good.imag)
        else:
            with pytest.raises(BranchError, match="Stieltjes"):
                EP.prove_complex_trace(*args)
    assert main(["trace", "trace(inv(Z.T*Z/n - z*I(n)))", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at",
                 "c=1/2, z=0.5+0.01j", "--digits", "30", "--prove", "--json"]) == 0
    pr = json.loads(capsys.readouterr().out)["proved"]
    assert set(pr) >= {"re", "im", "branch"} and float(pr["im"]["rad"]) < 1e-30


def test_a_ball_of_a_number_that_is_not_finite_is_refused():
    from symrmt.errors import ParameterError
    from symrmt.proofs.arb import to_arb

    for bad in (mpmath.inf, -mpmath.inf, mpmath.nan):
        with pytest.raises(ParameterError, match="not finite .* give a finite value"):
            to_arb(bad)
    assert to_arb(mpmath.mpf("0.25")) == flint.arb("0.25")
