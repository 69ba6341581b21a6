"""Proved balls of quadratic forms (:mod:`symrmt.engine.prove.quadratic_forms`) against closed forms computed here in
mpmath at 50 digits, and the attention branch proved by the chain at small ``gamma``
(:mod:`symrmt.models.attention.prove_branch`), a wrong box still refused."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

flint = pytest.importorskip("flint")

from symrmt.errors import BranchError  # noqa: E402
from symrmt.models.attention import prove as P  # noqa: E402

pytestmark = pytest.mark.prove

D = 30


def _contains(ball, ref):
    """The ball holds the 50-digit reference (as a ball of its own rounding, 1e-45 relative)."""
    with P.working_bits(220):
        return ball.overlaps(flint.arb(mpmath.nstr(ref, 50), abs(float(ref)) * 1e-45 + 1e-300))


def _tight(ball, digits=D):
    return ball.rad() <= abs(ball.mid()) * flint.arb(10) ** (-digits)


def _hastie(phi, lam, r2, sigma):
    """Bias and variance of ridge regression with a teacher (Hastie, Montanari, Rosset, Tibshirani 2019,
    Thm. 1, isotropic): ``B = r2 lam^2 m'(-lam)``, ``V = sigma^2 phi (m(-lam) - lam m'(-lam))``, ``m`` the
    positive root of ``phi lam m^2 + (1 - phi + lam) m - 1 = 0``, ``m'`` by mpmath's numerical derivative of
    ``g(l) = m(-l)`` (``m'(-lam) = -g'(lam)``): written and computed here, at 50 digits."""
    with mpmath.workdps(60):
        phi, lam, r2, sigma = (mpmath.mpf(x.numerator) / x.denominator for x in (phi, lam, r2, sigma))

        def g(x):
            b = 1 - phi + x
            return (-b + mpmath.sqrt(b * b + 4 * phi * x)) / (2 * phi * x)

        mp = -mpmath.diff(g, lam)
        return r2 * lam ** 2 * mp, sigma ** 2 * phi * (g(lam) - lam * mp)


@pytest.mark.parametrize("at", [
    {"phi": Fraction(2, 3), "lam": Fraction(1, 7), "beta.beta": Fraction(3), "sigma": Fraction(1, 3)},
    {"phi": Fraction(9, 4), "lam": Fraction(2, 5), "beta.beta": Fraction(1, 2), "sigma": Fraction(5, 4)},
])
def test_ridge_teacher_bias_variance_balls(at):
    """The bias ``lam^2 beta^T R^2 beta`` and variance of engine_ridge_teacher, proved: each ball holds the
    closed form and has a radius <= 1e-30 of its midpoint at 30 digits."""
    from symrmt.derivations import engine_ridge_teacher as E

    m = E.model()
    rb, rv = _hastie(at["phi"], at["lam"], at["beta.beta"], at["sigma"])
    for expr, ref in ((E.BIAS, rb), (E.VARIANCE, rv)):
        r = m.limit(expr, at=at, digits=D, prove=True)
        assert _contains(r.ball, ref) and _tight(r.ball), (expr, r.ball, ref)
        assert r.branch in ("isolated", "continued"), r.branch_notes
        assert len(r.balls["forms"]) >= 1
        with mpmath.workdps(40):
            assert abs(r.value - ref) <= mpmath.mpf(10) ** -28 * abs(ref)


def test_ridge_signal_derivative_of_a_form_ball():
    """``-gamma^2 diff(y^T Q y/n, gamma)`` with a signal (engine_ridge_signal): the form's derivative by the
    implicit linear system on balls.  The ball holds the package's ridge closed form (a Sherman-Morrison update
    of the Marchenko-Pastur resolvent derived by hand, no pencil, no engine) at 50 digits, and the proved ball
    of that closed form (its root isolated exactly)."""
    from symrmt.derivations import engine_ridge_signal as E
    from symrmt.models.attention.theory import ridge_limit

    for at in ({"c": Fraction(1, 2), "gamma": Fraction(1, 10), "mu.mu": Fraction(3, 2)},
               {"c": Fraction(7, 4), "gamma": Fraction(1, 3), "mu.mu": Fraction(2, 5)}):
        r = E.model().limit(E.E_RR, at=at, digits=D, prove=True)
        ref = ridge_limit(at["c"], [at["gamma"]], snr=at["mu.mu"], digits=50)[0]
        assert _tight(r.ball) and r.branch in ("isolated", "continued"), (r.ball, r.branch_notes)
        assert _contains(r.ball, ref), (r.ball, ref)
        assert r.ball.overlaps(P.prove_ridge(at["c"], [at["gamma"]], at["mu.mu"], D)[0])


@pytest.mark.slow  # seconds per call: outside the fast tier
@pytest.mark.parametrize("f, gamma", [("relu", Fraction(1, 40)), ("tanh", Fraction(1, 30))])
def test_attention_branch_continued_at_small_gamma(f, gamma):
    """The chain closes at small ``gamma`` (the log-gamma leg, tubes along the tangent): branch ``continued``, the
    same ball as without it; a second, smaller ``gamma`` in the same call continues from the first's end."""
    b0 = P.prove_attention(f, Fraction(1, 2), [gamma], None, "zero", D)[0]
    pair = P.prove_attention(f, Fraction(1, 2), [gamma, gamma / 2], None, "zero", D, chain=True)
    b1 = pair[0]
    assert b0.branch == "sanity" and b1.branch == "continued", b1.note
    assert b1.error.overlaps(b0.error) and _tight(b1.error)
    assert pair[1].branch == "continued" and f"through the chain at gamma={gamma}" in pair[1].note, pair[1].note


@pytest.mark.slow  # a 30-digit proof of the attention fixed point: seconds, outside the fast tier
def test_attention_wrong_box_refused_on_the_gamma_leg():
    """A proved box moved off the root at ``gamma = 1/10`` (the chain's ``gamma`` leg ends in a tube) is refused."""
    from symrmt.proofs.arb import bits_for, working_bits
    from symrmt.models.attention.prove_branch import attention_chain

    b = P.prove_attention("tanh", Fraction(1, 2), [Fraction(1, 10)], None, "zero", D)[0]
    with working_bits(bits_for(D)):
        a1, nu, d = P.hermite_ball("tanh")
        params = [P.to_arb(Fraction(1, 10)), P.to_arb(Fraction(1, 2)), a1, nu, d]
        wrong = [x * 2 for x in b.block_traces]
    with pytest.raises(BranchError, match="another root"):
        attention_chain(params, wrong, "test")


def test_many_atoms_branch_continued_against_silverstein():
    """A law of 99 atoms (the weighted-sum reduction): the chain starts from its exact value at ``s = 0`` and
    closes (branch ``continued``); the ball holds the root in ``(0, 1/gamma]`` of Silverstein's equation
    ``1/m = gamma + c sum_a w_a v_a/(1 + v_a m)``, written and solved here (monotone iteration, findroot)."""
    from symrmt.engine import Model

    values = [Fraction(50 + a, 100) for a in range(99)]
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.diag("D", "p", [str(v) for v in values])
    at = {"c": Fraction(1, 2), "gamma": Fraction(1, 3)}
    r = m.limit("trace(inv(Z.T*D*Z/n + gamma*I(n)))", at=at, digits=D, prove=True)
    assert r.branch == "continued", r.branch_notes
    with mpmath.workdps(60):
        c, g = mpmath.mpf(1) / 2, mpmath.mpf(1) / 3
        vs = [mpmath.mpf(v.numerator) / v.denominator for v in values]

        def rhs(x):
            return 1 / (g + c * mpmath.fsum(v / (1 + v * x) for v in vs) / len(vs))

        x = 1 / g
        for _ in range(300):
            x = rhs(x)
        ref = mpmath.findroot(lambda y: y - rhs(y), x)
    assert _contains(r.ball, ref) and _tight(r.ball), (r.ball, ref)


@pytest.mark.slow  # three derivations proved: seconds, outside the fast tier
def test_verify_prove_new_derivations():
    """``verify --prove`` on the quadratic-form derivations and noise_only: every proved check passes."""
    from symrmt.derivations.proved import PROVED, proved_checks

    assert {"engine_ridge_teacher", "engine_ridge_signal", "engine_spiked", "engine_attention",
            "noise_only"} <= set(PROVED)
    for name in ("engine_ridge_signal", "engine_spiked", "noise_only"):
        ck = proved_checks(name)
        assert ck.checks and ck.passed, ck.table()
