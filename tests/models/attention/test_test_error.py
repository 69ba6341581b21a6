"""Test errors on a fresh sequence (``symrmt limit/simulate --error test``, ``symrmt.limit(..., error="test")``).

The limits are checked against what does not share their code: the ridge closed form (Marchenko-Pastur and
Sherman-Morrison) against the trace engine's quadratic forms; the fresh-sample formula against its special
cases (ridge, no signal) and against a NumPy simulation of the nonlinear kernel for a fixed readout; and the
whole pipeline against a simulation of the actual model (train on one sequence, test on a fresh one) at
n = 384-512, within 3 se + 1% + 0.003 (k = 3).  Then the CLI, its JSON, and the refusals.
"""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest
import sympy as sp

import symrmt
from symrmt.cli.app import main
from symrmt.errors import NotDerived, ParameterError
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.models.attention.generalization import (
    fresh_error_formula, ridge_test_formula, fresh_simulate, fresh_limit as _test_limit, training_forms,
)

K_SE, REL, ABS = 3.0, 0.01, 0.003


def _close(theory, mean, se):
    return abs(mean - theory) <= K_SE * se + REL * abs(theory) + ABS


def _run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# --------------------------------------------------------------------------- closed forms
def test_fresh_formula_is_ridge_for_the_identity_readout():
    """a_1 = nu = 0, d = 1 (K = I): T = ||y' - X'^T v||^2/n = (1 - mu.v)^2 + ||v||^2, any geometry."""
    g = sp.symbols("g0:9")
    gram = [[g[0], g[1], g[2]], [g[1], g[3], g[4]], [g[2], g[4], g[5]]]
    vv, s, t, q = sp.symbols("vv s t q")
    T = fresh_error_formula(0, 0, 1, sp.Symbol("c"), gram, 1, vv, [s, t, q])
    assert sp.expand(T - ((1 - s) ** 2 + vv)) == 0


def test_fresh_formula_without_signal_or_weights():
    """mu = 0, W = I: T = 1 + ((d + a_1/c)^2 + nu/c) ||v||^2 (section 12.2)."""
    a1, nu, d, c, vv = sp.symbols("a_1 nu d c vv", positive=True)
    for r in (0, 1, 2):
        k = 2 * r + 1
        T = fresh_error_formula(a1, nu, d, c, [[0] * k for _ in range(k)], r, vv, [0] * k)
        assert sp.simplify(T - 1 - ((d + a1 / c) ** 2 + nu / c) * vv) == 0


@pytest.mark.parametrize("c,gamma,snr", [("1/2", "1/10", "0"), ("2", "1", "3/2"), ("3/4", "1/3", "2")])
def test_ridge_closed_form_against_the_engine(c, gamma, snr):
    """T_RR from the closed form equals T_RR from the engine's quadratic forms ||w_R||^2, mu.w_R (25 digits)."""
    from symrmt.models.attention.engine_model import attention_model

    model, _ = attention_model("t", 1)
    at = {"c": c, "gamma": gamma, "mu.mu": snr}
    zero = {"mu"} if snr == "0" else set()
    vv, (s,) = training_forms(model, at, ["mu"], 30, ridge=True, zero=zero)
    with mpmath.workdps(40):
        engine = fresh_error_formula(0, 0, 1, 1, [[0]], 0, vv, [s])  # c does not enter when a_1 = 0
        closed = sp.N(ridge_test_formula(sp.Rational(c), sp.Rational(gamma), sp.Rational(snr)), 40)
        assert abs(engine - mpmath.mpf(str(closed))) < mpmath.mpf(10) ** -25 * abs(engine)


def test_ridge_closed_form_against_simulation():
    rng = np.random.default_rng(5)
    n, c, g, snr = 400, 0.5, 0.2, 2.0
    p = int(c * n)
    vals = []
    mu = np.zeros(p)
    mu[0] = math.sqrt(snr)
    for _ in range(20):
        y = rng.choice([-1.0, 1.0], n)
        x = np.outer(mu, y) + rng.standard_normal((p, n))
        w = np.linalg.solve(x @ x.T / n + g * np.eye(p), x @ y / n)
        y2 = rng.choice([-1.0, 1.0], n)
        x2 = np.outer(mu, y2) + rng.standard_normal((p, n))
        vals.append(np.mean((y2 - x2.T @ w) ** 2))
    th = float(sp.N(ridge_test_formula(sp.Rational(1, 2), sp.Rational(1, 5), 2)))
    assert _close(th, np.mean(vals), np.std(vals, ddof=1) / math.sqrt(len(vals)))


def test_norm_of_the_readout_push_through():
    """||w||^2 = y^T Q y/n - gamma y^T Q^2 y/n = phi - E_A/gamma, exactly at finite n (what fresh_limit uses)."""
    from symrmt.models.attention.sampling import draw_tokens, kernel_matrix

    rng = np.random.default_rng(2)
    n, p, g = 120, 90, 0.3
    mu = np.zeros(p)
    mu[0] = 1.0
    x, y = draw_tokens(rng, n, mu)
    phi = x @ kernel_matrix(np.tanh, x, np.zeros(p), np.zeros(p))
    w = np.linalg.solve(phi @ phi.T / n + g * np.eye(p), phi @ y / n)
    Q = np.linalg.inv(phi.T @ phi / n + g * np.eye(n))
    assert abs(w @ w - (y @ Q @ y / n - g * y @ Q @ Q @ y / n)) < 1e-10


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_engine_route_agrees_with_limit():
    """T_A with every training quantity an engine expression (phi, E_A, u.w) == symrmt.limit(error="test")
    (the hand-built solver and its Woodbury read-out) to 25 digits."""
    from symrmt.models.attention.engine_model import at_from_gram, attention_model

    geo = Geometry(snr="3/2", wk2=1, wq2=1, wkwq="1/2", muwk=1, muwq="1/3")
    gram = geo.gram()
    model, _ = attention_model("tanh", 1)
    at = {"c": "2", "gamma": "1/3", **at_from_gram(gram, 1)}
    vv, dots = training_forms(model, at, ["mu", "wk1", "wq1"], 30)
    from symrmt.models.attention.hermite_data import hermite_inputs

    a1, nu, d = hermite_inputs("tanh", "zero", 50)
    ref = symrmt.limit("tanh", "2", ["1/3"], geo, digits=30, error="test").attention_mp[0]
    with mpmath.workdps(50):
        T = fresh_error_formula(a1, nu, d, mpmath.mpf(2), [[mpmath.mpf(x.numerator) / x.denominator for x in row]
                                                          for row in gram], 1, vv, dots)
        assert abs(T - ref) < mpmath.mpf(10) ** -25 * abs(ref)


# --------------------------------------------------------------------------- the fresh-sample piece
@pytest.mark.parametrize("f,c,gram", [
    ("tanh", 2.0, [[2, 1, 0.5], [1, 1, 0.5], [0.5, 0.5, 1]]),
    ("relu", 0.5, [[2, 0, 0], [0, 1, 0.5], [0, 0.5, 1]]),
])
def test_fixed_readout_against_simulation(f, c, gram):
    """For a readout v fixed before the fresh sequence is drawn, ||y' - K'^T X'^T v||^2/n against T(v)."""
    from symrmt.models.attention.hermite_data import hermite_inputs
    from symrmt.models.attention.sampling import draw_tokens, kernel_matrix, vectors_from_gram

    nl = symrmt.Nonlinearity(f)
    fn = nl.numpy()
    n, trials = 512, 16
    p = round(c * n)
    mu, wk, wq = vectors_from_gram(gram, p)
    v = 0.3 * mu + 0.2 * wk - 0.4 * wq
    v[-1] += 0.7
    rng = np.random.default_rng(11)
    vals = []
    for _ in range(trials):
        x, y = draw_tokens(rng, n, mu)
        k = kernel_matrix(fn, x, wk, wq, "zero")
        vals.append(np.mean((y - k.T @ (x.T @ v)) ** 2))
    a1, nu, d = hermite_inputs(nl, "zero", 20)
    th = float(fresh_error_formula(a1, nu, d, c, gram, 1, float(v @ v), [float(v @ mu), float(v @ wk), float(v @ wq)]))
    assert _close(th, np.mean(vals), np.std(vals, ddof=1) / math.sqrt(trials))


# --------------------------------------------------------------------------- the whole model against simulation
CASES = [
    ("tanh", "1/2", Geometry(), "zero", "noise only"),
    ("relu", "2", Geometry(), "zero", "noise only"),
    ("tanh", "2", Geometry(snr=2), "zero", "signal"),
    ("relu", "1/2", Geometry(snr="3/2", wk2=1, wq2=1, wkwq="1/2", muwk=1, muwq="1/2"), "zero", "aligned"),
    ("tanh", "1/2", Geometry(snr=2, wk2=1, wq2=1, wkwq="1/2"), "zero", "orthogonal"),
    ("erf", "2", LowRankGeometry([[1, "1/2", "1/2"], ["1/2", 1, "1/2"], ["1/2", "1/2", 1]], alpha="3/2"), "zero",
     "alpha = 3/2"),
    ("relu", "2", Geometry(), "keep", "diagonal kept"),
]


@pytest.mark.slow  # seconds per call: outside the fast tier
@pytest.mark.parametrize("f,c,geo,diagonal,route", CASES, ids=[c[-1] + " " + c[0] for c in CASES])
def test_limit_against_simulation(f, c, geo, diagonal, route):
    gammas = ["1/10", "1"]
    L = symrmt.limit(f, c, gammas, geo, diagonal, digits=12, error="test")
    S = symrmt.simulate(f, c, gammas, geo, diagonal, n=384, trials=10, seed=3, error="test")
    assert L.error == S.error == "test"
    for key in ("attention", "ridge"):
        for th, mean, se in zip(getattr(L, key), getattr(S, key), getattr(S, key + "_se")):
            assert _close(th, mean, se), (route, key, th, mean, se)


def test_no_signal_bounds_and_large_gamma():
    """mu = 0: the labels are independent of the tokens, so both test errors are >= 1, and -> 1 as gamma -> oo."""
    r = _test_limit("relu", "1/2", ["1/100", "1", "1000"], digits=20)
    for key in ("attention", "ridge"):
        assert all(v > 1 for v in r[key])
        assert r[key][-1] - 1 < mpmath.mpf("1e-5")


def test_digits_are_stable():
    a = _test_limit("tanh", "2", ["1/2"], Geometry(snr=1, wk2=1, muwk="1/2"), digits=30)
    b = _test_limit("tanh", "2", ["1/2"], Geometry(snr=1, wk2=1, muwk="1/2"), digits=40)
    with mpmath.workdps(50):
        for key in ("attention", "ridge"):
            assert abs(a[key][0] - b[key][0]) < mpmath.mpf(10) ** -29 * abs(b[key][0])


def test_simulate_test_is_seeded():
    a = fresh_simulate(np.tanh, 64, 0.5, [1.0], trials=3, seed=4)
    b = fresh_simulate(np.tanh, 64, 0.5, [1.0], trials=3, seed=4)
    assert np.array_equal(a["attention"]["trials"], b["attention"]["trials"])


# --------------------------------------------------------------------------- CLI and refusals
def test_cli_limit_error_test_json(capsys):
    args = ["limit", "--f", "tanh", "--c", "2", "--gamma", "0.5,1", "--snr", "1", "--digits", "20"]
    rc, out, err = _run(capsys, *args, "--error", "test", "--json")
    assert rc == 0, err
    test = json.loads(out)
    assert test["params"]["error"] == "test" and len(test["attention"]) == len(test["ridge"]) == 2
    ref = _test_limit("tanh", "2", ["1/2", "1"], Geometry(snr=1), digits=20)
    with mpmath.workdps(40):
        for key in ("attention", "ridge"):
            for text, v in zip(test[key], ref[key]):
                assert abs(mpmath.mpf(text) - v) < mpmath.mpf(10) ** -19
    rc, out, _ = _run(capsys, *args, "--json")
    train = json.loads(out)
    rc2, out2, _ = _run(capsys, *args, "--error", "train", "--json")
    assert json.loads(out2)["attention"] == train["attention"] and train["params"]["error"] == "train"
    assert train["attention"] != test["attention"]
    rc, out, _ = _run(capsys, *args, "--error", "test")
    assert rc == 0 and "T_A (attention, test)" in out


def test_cli_simulate_error_test(capsys):
    rc, out, err = _run(capsys, "simulate", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--n", "64", "--trials", "3",
                        "--error", "test", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["params"]["error"] == "test" and d["attention"]["mean"][0] > 0


def test_refusals(capsys):
    rc, _, err = _run(capsys, "limit", "--attention", "softmax", "--c", "1/2", "--gamma", "1", "--error", "test")
    assert rc == 3 and "not derived" in err
    rc, _, err = _run(capsys, "limit", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--error", "test", "--prove")
    assert rc == 2 and "--prove" in err
    rc, _, err = _run(capsys, "simulate", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--n", "64", "--error", "test",
                      "--workers", "2")
    assert rc == 2 and "--workers" in err
    rc, _, err = _run(capsys, "limit", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--error", "bogus")
    assert rc == 2
    # a verb with no readout has no test error
    rc, _, err = _run(capsys, "hermite", "--f", "tanh", "--error", "test")
    assert rc == 2 and "--error" in err
    with pytest.raises(ParameterError, match="error must be one of"):
        symrmt.limit("tanh", "1/2", [1], error="validation")
    with pytest.raises(NotDerived, match=r"softmax.*section 11.*part along X 1/sqrt\(p\)"):
        symrmt.limit(None, "1/2", [1], attention="softmax", error="test")
    with pytest.raises(ParameterError, match="workers=1"):
        symrmt.simulate("tanh", "1/2", [1], n=64, error="test", workers=2)


def test_compare_refuses_train_against_test():
    th = symrmt.limit("tanh", "1/2", [1], digits=10, error="test")
    sim = symrmt.simulate("tanh", "1/2", [1], n=64, trials=3, error="test")
    assert sim.compare(th).theory is th
    assert "T_A (attention, test)" in str(th) and "T_A (test, mean" in str(sim) and "$T_A" in sim.latex()
    train = symrmt.limit("tanh", "1/2", [1], digits=10)
    with pytest.raises(ParameterError, match="training against test"):
        sim.compare(train)


def test_test_errors_print_the_digits_asked_rounded_once():
    """The values of ``symrmt.limit(..., error="test")`` print the digits asked: the 5-digit values are the 30-digit
    ones rounded once (not mpmath's 15 digits, whose last ones are not certified)."""
    geo = Geometry(snr=1, wk2=1, wq2=1, wkwq=0.5, muwk=0.7, muwq=0.2)
    lo = symrmt.limit("tanh", "1/2", [1], geo, digits=5, error="test")
    hi = symrmt.limit("tanh", "1/2", [1], geo, digits=30, error="test")
    for a, b in ((lo.attention_mp[0], hi.attention_mp[0]), (lo.ridge_mp[0], hi.ridge_mp[0])):
        assert repr(a) == f"mpf('{mpmath.nstr(b, 5, strip_zeros=False)}')"
        assert str(a) == mpmath.nstr(b, 5, strip_zeros=False)
