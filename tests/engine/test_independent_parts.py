"""The trace engine on independent objects: a random vector that enters a quadratic form once, linearly, is
replaced by its mean 0 (stated in the plan's notes, not refused), and a sum of independently solved parts is
limited by its largest part, not by the total of their unknowns."""

from __future__ import annotations

import json

import mpmath
import pytest

from symrmt.cli.app import main
from symrmt.engine import Model, ModelError

R = "inv(Z.T*Z/n + lam*I(d))"
A = f"({R}*Z.T*Z/n - I(d))"
BIAS = f"lam**2*beta.T*{R}*{R}*beta"
VARIANCE = f"sigma**2*e.T*Z*{R}*{R}*Z.T*e/n**2"
#: ||beta_hat - beta||^2 expanded: bias + cross term (e once, linearly) + variance
EXPANDED = f"beta.T*{A}.T*{A}*beta + 2*sigma*beta.T*{A}.T*{R}*Z.T*e/n + {VARIANCE}"
AT = {"phi": "1/2", "lam": "1/5", "sigma": "1/2", "beta.beta": "2"}


def _model():
    m = Model()
    m.dim("d", "phi*n")
    m.gaussian("Z", "n", "d")
    m.vector("beta", "d")
    m.gaussian_vector("e", "n")
    m.let("B", m.parse(f"{R}*Z.T*(Z*beta + sigma*e)/n - beta"))
    return m


def test_risk_with_label_noise_is_one_expression():
    m = _model()
    whole = m.limit("B.T*B", at=AT, digits=30)  # e twice in one form: no mean-zero rule needed
    r = m.limit(EXPANDED, at=AT, digits=30)
    bias, variance = m.limit(BIAS, at=AT, digits=30).value, m.limit(VARIANCE, at=AT, digits=30).value
    with mpmath.workdps(40):
        parts = bias + variance
        assert abs(r.value - whole.value) <= mpmath.mpf(10) ** -28 * whole.value
        assert abs(r.value - parts) <= mpmath.mpf(10) ** -28 * parts
    assert len(r.notes) == 1 and "random vector e" in r.notes[0] and "mean 0" in r.notes[0]
    assert not whole.notes


def test_a_linear_random_vector_has_mean_zero():
    m = _model()
    r = m.limit("e.T*Z*beta/n", at=AT)
    assert r.value == 0 and "tends to 0" in r.notes[0]
    # affine in e: the form tends to its value at e = 0, here beta.beta
    r = m.limit("beta.T*(I(d) + Z.T*e*beta.T/n)*beta", at=AT)
    assert r.value == 2 and "with e = 0" in r.notes[0]
    # a product of two vanishing forms is 0 as well; 1 + a vanishing form is 1
    assert m.limit("(e.T*Z*beta/n)**2 + 1", at=AT).value == 1


def test_nonlinear_or_reciprocal_use_is_refused():
    m = _model()
    with pytest.raises(ModelError, match="inside an inverse"):
        m.limit("beta.T*inv(I(d) + Z.T*e*beta.T/n)*beta", at=AT)
    with pytest.raises(ModelError, match="negative power"):
        m.limit("1/(e.T*Z*beta/n)", at=AT)


def test_cli_states_the_rule_and_simulation_agrees(capsys):
    code = main(["trace", EXPANDED, "--matrix", "Z=gaussian(n,d)", "--vector", "beta=vector(d)",
                 "--vector", "e=gaussian_vector(n)", "--dim", "d=phi*n",
                 "--at", "phi=1/2, lam=1/5, sigma=1/2, beta.beta=2", "--simulate", "--n", "256", "--trials", "8",
                 "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["simulation"]["agrees"]
    assert out["notes"] and "random vector e" in out["notes"][0]


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_sum_of_parts_is_limited_by_its_largest_part():
    m = Model()
    m.dim("d", "phi*n")
    for name in ("X", "Y", "Z"):
        m.gaussian(name, "n", "d")
    parts = ["trace(inv((X.T*X/n)**5 + I(d)))", "trace(inv((Y.T*Y/n)**5 + 2*I(d)))",
             "trace(inv((Z.T*Z/n)**4 + 3*I(d)))"]
    whole = " + ".join(parts)
    sizes = [len(t.system.unknowns) for t in m.plan(whole).traces]
    assert max(sizes) <= 100 < sum(sizes)  # refused before: the cap was on the total
    at = {"phi": "1/2"}
    total = m.limit(whole, at=at, digits=25).value
    with mpmath.workdps(40):
        separate = sum(m.limit(p, at=at, digits=25).value for p in parts)
        assert abs(total - separate) <= mpmath.mpf(10) ** -24 * separate
    with pytest.raises(ModelError, match="largest of the 2 independently solved parts .* 128 unknowns"):
        m.plan("trace(inv((X.T*X/n)**8 + I(d))) + " + parts[2])
    with pytest.raises(ModelError, match="the fixed point of this expression has 128 unknowns"):
        m.plan("trace(inv((X.T*X/n)**8 + I(d)))")


@pytest.mark.slow  # a simulation of 209 unknowns: seconds, outside the fast tier
def test_random_features_risk_with_label_noise_is_one_expression(capsys):
    """The Gaussian-equivalent random-features ridge (features ``F = mu1 W X/sqrt(d) + mus Th``) and its test
    risk with label noise, ``|beta - mu1 W^T a/sqrt(d)|^2 + mus^2 |a|^2 + sigma^2`` expanded: a cross term that
    holds the noise ``e`` once, linearly (its mean 0), and parts of 24, 99 and 86 unknowns (209 together, each
    under the cap).  Checked against the simulation of the same expression."""
    risk = ("beta.T*beta - 2*mu1*beta.T*W.T*A/sqrt(d) + mu1**2*A.T*W*W.T*A/d + mus**2*A.T*A + sigma**2")
    code = main(["trace", risk, "--dim", "d=phi*n", "--dim", "N=psi*n", "--matrix", "X=gaussian(d,n)",
                 "--matrix", "W=gaussian(N,d)", "--matrix", "Th=gaussian(N,n)", "--vector", "beta=vector(d)",
                 "--vector", "e=gaussian_vector(n)", "--let", "F=mu1*W*X/sqrt(d) + mus*Th",
                 "--let", "A=inv(F*F.T/n + lam*I(N))*F*(X.T*beta + sigma*e)/n",
                 "--at", "phi=1/2, psi=3/2, mu1=1/2, mus=1/2, lam=1/10, sigma=1/2, beta.beta=1",
                 "--simulate", "--n", "256", "--trials", "10", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["simulation"]["agrees"], out
    assert out["notes"] and "random vector e" in out["notes"][0]
