"""In-context regression by linear attention (symrmt.models.icl, ``symrmt icl``): the ridgeless limit against an
independent transcription of the paper's Result 1 and against the package's own min-norm derivation, limits,
the simulation at small d, the CLI and its JSON, and bad input."""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import pytest

from symrmt.cli.app import main
from symrmt.errors import ParameterError
from symrmt.models.icl import icl, icl_limit, icl_simulate

pytestmark = pytest.mark.montecarlo


def _paper_result1(alpha, kappa, tau, rho, dps):
    """Result 1 of Lu et al. (PNAS 2025) retyped here from the paper's statement, with the Marchenko-Pastur
    resolvent written as the root of its quadratic: an implementation independent of the package's."""
    with mpmath.workdps(dps):
        a, k, t, r = (mpmath.mpf(Fraction(v).numerator) / Fraction(v).denominator for v in (alpha, kappa, tau, rho))

        def M(x, kap):  # M_kappa(x): (x/kappa) M^2 + (x + 1 - 1/kappa) M - 1 = 0, M > 0
            b = x + 1 - 1 / kap
            return (-b + mpmath.sqrt(b * b + 4 * x / kap)) / (2 * x / kap)

        x = (1 + r) / a
        if t < 1:
            mu = x * M(x, k / t)
            return t * (1 + x) / (1 - t) * (1 - t * (1 - mu) ** 2 - (x - r) / x * mu) - 2 * t * (1 - mu) + r + 1
        m = M(x, k)
        ks = 1 / (1 - k * (m / (k + m)) ** 2)
        return ((ks - 1 / (t - 1)) * (1 + x) * (x * m) ** 2 + (3 - 2 * t) / (t - 1) * m * x**2
                + ((1 + r) / (t - 1) * m + 1) * x + r * m / (t - 1) + r)


POINTS = [("1", "1/2", "1/2", "1/10"), ("2", "3", "3/10", "0"), ("1/2", "1/5", "4/5", "1"), ("1", "1/2", "2", "1/10"),
          ("2", "3", "5", "3/10"), ("7/10", "2/5", "3/2", "0"), ("5", "10", "1/10", "1/2"), ("1/10", "1/10", "10", "2"),
          ("3", "1", "99/100", "1/4"), ("3", "1", "101/100", "1/4")]


@pytest.mark.parametrize("alpha,kappa,tau,rho", POINTS)
def test_limit_matches_independent_result1(alpha, kappa, tau, rho):
    r = icl_limit(alpha, kappa, tau, rho, digits=30)
    ref = _paper_result1(alpha, kappa, tau, rho, 60)
    with mpmath.workdps(60):
        assert abs(r.error - ref) <= mpmath.mpf(10) ** -30 * abs(ref)
    assert r.branch == ("below" if Fraction(tau) < 1 else "above")


def test_below_branch_matches_own_min_norm_derivation():
    from symrmt.derivations.icl import min_norm_value

    for alpha, kappa, tau, rho in (("1", "1/2", "1/2", "1/10"), ("3", "1", "99/100", "1/4")):
        val = min_norm_value(Fraction(alpha), Fraction(kappa), Fraction(tau), Fraction(rho), 60)
        with mpmath.workdps(60):
            assert abs(val - icl_limit(alpha, kappa, tau, rho, digits=30).error) <= mpmath.mpf(10) ** -29 * val


def test_above_branch_identity_is_exact_and_can_fail():
    import sympy as sp

    from symrmt.derivations.icl import above_difference
    from symrmt.models.icl import equations as S

    assert above_difference() == 0
    # the same reduction of a slightly wrong formula leaves a remainder
    wrong = S.result1("above") + S.M / (S.TAU - 1) / 100
    q = sp.together(sp.diff(S.mp_resolvent_equation(S.M, S.U, S.KAPPA), S.U)
                    / sp.diff(S.mp_resolvent_equation(S.M, S.U, S.KAPPA), S.M)).subs(S.U, S.X)
    derived = S.infinite_pretraining_error(S.X, S.RHO, S.M, q) + S.ols_variance(S.X, S.RHO, S.TAU, S.M)
    num = sp.numer(sp.together(derived - wrong))
    assert sp.simplify(sp.rem(sp.expand(num), sp.expand(S.KAPPA * S.mp_resolvent_equation(S.M, S.X, S.KAPPA)),
                              S.M)) != 0


def test_limits_of_the_formula():
    # no pretraining: the readout is 0 and the error is the label variance 1 + rho
    assert abs(float(icl_limit(1, 1, "1e-12", "1/2").error) - 1.5) < 1e-9
    # infinite pretraining and task diversity: rho + x/(1 + x), x = (1 + rho)/alpha
    x = 1.25 / 2
    assert abs(float(icl_limit(2, "1e12", "1e12", "1/4").error) - (0.25 + x / (1 + x))) < 1e-9
    # the pole: large on both sides, of opposite orientation in (tau - 1)
    assert icl_limit(1, 1, "0.999999", 0).error > 1e4 and icl_limit(1, 1, "1.000001", 0).error > 1e4


def test_precision_is_stable_across_digits():
    lo, hi = icl_limit(1, "1/3", "7/10", "1/5", digits=50), icl_limit(1, "1/3", "7/10", "1/5", digits=90)
    with mpmath.workdps(100):
        assert abs(lo.error - hi.error) <= mpmath.mpf(10) ** -50 * hi.error


@pytest.mark.parametrize("bad", [dict(alpha=0), dict(kappa=-1), dict(tau=0), dict(rho="-0.1"), dict(tau=1),
                                 dict(alpha="nan")])
def test_bad_input_is_refused(bad):
    args = dict(alpha=1, kappa=1, tau=2, rho=0) | bad
    with pytest.raises(ParameterError) as exc:
        icl(**args)
    if bad == dict(tau=1):
        assert "pole" in str(exc.value)


def test_simulation_refuses_the_finite_d_pole_and_bad_sizes():
    with pytest.raises(ParameterError, match="d\\(d\\+1\\)"):
        icl_simulate(1, 1, Fraction(4, 3), 0, d=3, trials=2)  # n = 12 = d(d+1)
    with pytest.raises(ParameterError):
        icl_simulate("0.01", 1, 2, 0, d=4, trials=2)  # ell = round(0.04) = 0
    with pytest.raises(ParameterError):
        icl_simulate(1, 1, 2, 0, d=1, trials=2)


#: finite-d slack of the simulation checks: 6 e/d (measured gap about 1.5-5 e/d for d = 10..60, docs/icl.md)
SLACK = 6


@pytest.mark.parametrize("alpha,kappa,tau,rho,d,trials", [("1", "1/2", "1/2", "1/10", 20, 10),
                                                          ("1", "1", "3/10", "0", 24, 10),
                                                          ("1", "2", "2", "1/10", 12, 8)])
def test_simulation_agrees_with_the_limit(alpha, kappa, tau, rho, d, trials):
    th = float(icl_limit(alpha, kappa, tau, rho).error)
    s = icl_simulate(alpha, kappa, tau, rho, d=d, trials=trials, seed=3)
    assert abs(s.mean - th) <= 3 * s.se + SLACK * th / d, (s.mean, s.se, th)


def test_simulation_is_reproducible_and_the_api_pairs():
    a = icl_simulate(1, 1, "1/2", 0, d=8, trials=3, seed=4)
    b = icl(1, 1, "1/2", 0, simulate=True, d=8, trials=3, seed=4)
    assert a.errors == b.errors and len(a.errors) == 3


def test_cli_json(capsys):
    assert main(["icl", "--alpha", "2", "--kappa", "3", "--tau", "5", "--rho", "0.3", "--digits", "30", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    ref = _paper_result1("2", "3", "5", "3/10", 50)
    with mpmath.workdps(50):
        assert abs(mpmath.mpf(rec["error"]) - ref) <= mpmath.mpf(10) ** -29 * ref
    assert rec["branch"] == "above" and rec["digits"] == 30
    assert main(["icl", "--alpha", "1", "--kappa", "1", "--tau", "0.5", "--rho", "0", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert isinstance(rec["error"], float) and rec["branch"] == "below"


def test_cli_simulate_json(capsys):
    assert main(["icl", "--alpha", "1", "--kappa", "1", "--tau", "0.5", "--rho", "0", "--simulate", "--d", "8",
                 "--trials", "3", "--seed", "2", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert {"error", "se", "trials", "d", "n", "theory", "gap_se", "errors"} <= set(rec)
    assert rec["n"] == 32 and rec["trials"] == 3 and len(rec["errors"]) == 3


@pytest.mark.parametrize("argv,needle", [
    (["--alpha", "1", "--kappa", "1", "--tau", "1", "--rho", "0"], "pole"),
    (["--alpha", "0", "--kappa", "1", "--tau", "2", "--rho", "0"], "alpha"),
    (["--alpha", "1", "--kappa", "1", "--tau", "2", "--rho", "-1"], "rho"),
    (["--alpha", "1", "--kappa", "1", "--tau", "2", "--rho", "0", "--d", "8"], "--simulate"),
    (["--alpha", "1", "--kappa", "1", "--tau", "2", "--rho", "0", "--simulate"], "--d"),
])
def test_cli_bad_input_exits_2(argv, needle, capsys):
    assert main(["icl", *argv, "--json"]) == 2
    rec = json.loads(capsys.readouterr().out)
    assert rec["exit"] == 2 and needle in rec["error"]


@pytest.mark.slow  # a figure drawn to PNG and PDF: seconds, outside the fast tier
def test_figure_draws(tmp_path):
    pytest.importorskip("matplotlib")
    from symrmt.figures.icl import icl_double_descent

    paths = icl_double_descent(tmp_path, d=6, trials=2, points=12)
    assert sorted(p.rsplit(".", 1)[1] for p in paths) == ["pdf", "png"]
    assert all((tmp_path / p.rsplit("/", 1)[1]).stat().st_size > 1000 for p in paths)
