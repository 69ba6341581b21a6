"""Quadratic forms on the engine's float64 batch (symrmt.engine.solve.batch_qf) through Model.sweep.

References are independent of the batch: the ridge closed form (symrmt.models.attention.theory.ridge_limit),
the spiked-covariance closed forms of symrmt.derivations.engine_spiked, the hand-built solver of the paper's
model (symrmt.limit), and the certified mpmath path at 30 digits (``certify=``).
"""

from fractions import Fraction

import mpmath
import numpy as np
import pytest

pytestmark = pytest.mark.slow

#: the sweep's values are float64: besides the batch's own estimate, one ulp for the float rounding of the
#: returned value (the estimate holds half of it) and of the reference
ULP = np.finfo(float).eps


def _rel(a, b):
    with mpmath.workdps(40):
        return float(abs(mpmath.mpf(a) - b) / abs(b))


def _checked_against_certified(r):
    """Every point came from the batch, claims >= 12 digits, and is within its claim of the certified value."""
    assert not r.fallback.any()
    est = r.error_estimate.ravel()
    assert np.all(est <= 1e-12)
    assert len(r.certified) == r.values.size
    for i, gap in r.certified:
        assert gap <= 2 * est[i] + ULP, (i, gap, est[i])


def _ridge_model():
    from symrmt.engine import Model

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("mu", "p")
    m.signs("y", "n")
    m.let("X", m.parse("mu*y.T + Z"))
    return m


@pytest.mark.parametrize("c,snr", [("1/2", "3/2"), ("2", "1/3")])
def test_ridge_error_with_a_signal_from_the_batch(c, snr):
    from symrmt.models.attention.engine_model import E_RR
    from symrmt.models.attention.theory import ridge_limit

    gammas = np.geomspace(0.02, 50, 24)
    r = _ridge_model().sweep(E_RR, grid={"gamma": gammas}, at={"c": c, "mu.mu": snr}, certify=24)
    _checked_against_certified(r)
    ref = ridge_limit(c, [Fraction(float(g)) for g in gammas], snr=snr, digits=30)
    for v, e, x in zip(r.values.ravel(), r.error_estimate.ravel(), ref):
        assert _rel(v, x) <= 2 * e + ULP


@pytest.mark.parametrize("which", [0, 1])
def test_a_spiked_form_from_the_batch(which):
    from symrmt.derivations.engine_spiked import QVV, QWW, closed_forms, model

    at = {"c": "3/4", "k": "2", "v.v": "1", "w.w": "5/4", "v.w": "2/3"}
    gammas = np.geomspace(0.02, 50, 24)
    r = model().sweep((QVV, QWW)[which], grid={"gamma": gammas}, at=at, certify=24)
    _checked_against_certified(r)
    for v, e, g in zip(r.values.ravel(), r.error_estimate.ravel(), gammas):
        ref = closed_forms({**at, "gamma": str(Fraction(float(g)))}, 40)[which]
        assert _rel(v, ref) <= 2 * e + ULP


def test_the_papers_attention_error_with_a_signal_from_the_batch():
    import symrmt
    from symrmt.models.attention import at_from_gram, attention_model

    gram = [[Fraction(3, 2), Fraction(1, 2), Fraction(1, 3)], [Fraction(1, 2), 1, Fraction(1, 2)],
            [Fraction(1, 3), Fraction(1, 2), 1]]
    m, ex = attention_model("tanh", 1)
    gammas = [0.125, 0.25, 0.5, 2.0]
    r = m.sweep(ex["E_A"], grid={"gamma": gammas}, at={"c": "1/2", **at_from_gram(gram, 1)})
    assert not r.fallback.any()
    ref = symrmt.limit("tanh", "1/2", [str(g) for g in gammas], geometry={"gram": gram, "alpha": 1}, digits=30,
                       progress=False)
    for v, e, x in zip(r.values, r.error_estimate, ref.attention_mp):
        assert e <= 1e-12 and _rel(v, x) <= 2 * e + ULP


def test_a_resolvent_form_from_the_batch_and_a_non_symmetric_inverse_left_to_the_certified_path():
    # y^T (Z^T Z/n + gamma I)^{-1} y/n is the Marchenko-Pastur Stieltjes transform at -gamma (ratio 1)
    from symrmt.engine import Model
    from symrmt.engine.solve.batch_qf import takes

    m = Model()
    _ = m.gaussian("Z", "n", "n"), m.gaussian_vector("y", "n")
    r = m.sweep("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n", grid={"gamma": [0.5, 1.0, 4.0]})
    assert not r.fallback.any()
    with mpmath.workdps(30):
        for g, v in zip([0.5, 1.0, 4.0], r.values):  # Marchenko-Pastur (ratio 1) at -gamma
            g = mpmath.mpf(g)
            assert _rel(v, (-g + mpmath.sqrt(g * g + 4 * g)) / (2 * g)) <= 4 * ULP
    assert takes(m.plan("y.T*inv(Z/sqrt(n) + gamma*I(n))*y/n")) is not None


def test_a_spiked_goe_form_outside_and_inside_the_spectrum():
    # u^T (W/sqrt(n) + g I + k u u^T)^{-1} u = a/(1 + k a), a = u.u * (g - sign(g) sqrt(g^2 - 4))/2 (semicircle
    # Stieltjes at -g, Sherman-Morrison); inside the bulk (|g| < 2) there is no real limit: the batch fails those
    # points and the certified path refuses them (marked)
    from symrmt.engine import Model

    m = Model()
    _ = m.goe("W", "n"), m.vector("u", "n")
    gs = [-3, -2.5, -1, 0.5, 2.5, 3]
    r = m.sweep("u.T*inv(W/sqrt(n) + g*I(n) + k*u*u.T)*u", grid={"g": gs}, at={"k": "1", "u.u": "1"},
                on_error="mark")
    assert sorted(r.errors) == [2, 3]
    assert list(r.fallback) == [False, False, True, True, False, False]
    with mpmath.workdps(30):
        for i in (0, 1, 4, 5):
            g = mpmath.mpf(gs[i])
            a = (g - mpmath.sign(g) * mpmath.sqrt(g * g - 4)) / 2
            assert _rel(r.values[i], a / (1 + a)) <= 2 * r.error_estimate[i] + ULP


def test_a_point_failing_a_form_check_goes_to_the_certified_path_marked(monkeypatch):
    from symrmt.derivations.engine_spiked import QWW, closed_forms, model
    from symrmt.engine.solve import batch_qf

    monkeypatch.setattr(batch_qf, "MAX_COND", 0.0)  # no Woodbury system passes: every point to mpmath
    at = {"c": "3/4", "k": "2", "v.v": "1", "w.w": "5/4", "v.w": "2/3"}
    r = model().sweep(QWW, grid={"gamma": [0.5, 2.0]}, at=at)
    assert r.fallback.all()
    for v, g in zip(r.values, ["1/2", "2"]):
        assert _rel(v, closed_forms({**at, "gamma": g}, 40)[1]) <= ULP


def test_trace_sweep_cli_solves_a_form_on_the_batch(capsys):
    import json

    from symrmt.cli.app import main
    from symrmt.models.attention.engine_model import E_RR
    from symrmt.models.attention.theory import ridge_limit

    argv = ["trace-sweep", E_RR, "--dim", "p=c*n", "--matrix", "Z=gaussian(p,n)", "--vector", "mu=vector(p)",
            "--vector", "y=signs(n)", "--let", "X=mu*y.T + Z", "--grid", "gamma=1/10,1,10", "--at", "c=1/2, mu.mu=3/2",
            "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fallbacks"] == 0
    ref = ridge_limit("1/2", ["1/10", "1", "10"], snr="3/2", digits=30)
    for (_g, v, fallback, est, _e), x in zip(out["rows"], ref):
        assert not fallback and _rel(v, x) <= 2 * est + ULP
