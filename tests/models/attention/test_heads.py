"""Independent random heads W_h = Q_h K_h^T/sqrt(p d) (mu = 0): the engine's limit against
simulations of the actual heads, within 3 se + 2% + 0.005, and the CLI flags."""

import os
import subprocess
import sys

import numpy as np
import pytest

from symrmt.models.attention.weights import check_heads, heads_limit, heads_simulate

pytestmark = [pytest.mark.slow, pytest.mark.montecarlo]  # seconds a test: outside the fast tier (pytest -m "not slow")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_random_head_statistics_concentrate():
    """rho = tr(W^2)/||W||_F^2 -> 0 and s^2 = ||W||_F^2/p -> 1 for W = Q K^T/sqrt(p d)."""
    rng = np.random.default_rng(0)
    p, d = 400, 200
    W = rng.standard_normal((p, d)) @ rng.standard_normal((p, d)).T / np.sqrt(p * d)
    fro = (W ** 2).sum()
    assert abs(fro / p - 1) < 0.05
    assert abs(np.trace(W @ W) / fro) < 5 / p
    assert abs(np.trace(W) / p) < 5 / np.sqrt(p * p)
    W2 = rng.standard_normal((p, d)) @ rng.standard_normal((p, d)).T / np.sqrt(p * d)
    assert abs(np.trace(W @ W2.T) / fro) < 5 / p  # tr(W_h W_g^T) ~ 0: independent remainders


@pytest.mark.parametrize("f,center,H,D", [("tanh", False, 2, "1/2"), ("exp(t)", True, 2, "1/2")])
def test_heads_limit_against_simulation(f, center, H, D):
    """3 se + 2% + 0.005 at n = 256 (the exponential kernel sits 3-4 se above its limit there; its gap
    shrinks with n: measured 0.021 at n = 256, 0.006 at n = 1024 for gamma = 0.1)."""
    gam = [0.1, 1.0]
    th = heads_limit(f, "1/2", gam, H, D, center=center)
    sim = heads_simulate(f, 256, "1/2", gam, H, D, trials=10, seed=3, center=center)
    for key in ("attention", "ridge"):
        for i in range(len(gam)):
            t = float(th[key][i])
            mean, se = sim[key]["mean"][i], sim[key]["se"][i]
            assert abs(mean - t) <= 3 * se + 0.02 * t + 0.005, (key, gam[i], mean, se, t)


def test_heads_bad_input():
    from symrmt.errors import ParameterError

    for H, D in ((0, 1), (9, 1), (2, 0), (2.5, 1), (2, "-1")):
        with pytest.raises(ParameterError):
            check_heads(H, D)


def test_cli_heads_bad_input():
    env = dict(os.environ, PYTHONPATH=ROOT)
    base = [sys.executable, "-m", "symrmt", "limit", "--f", "tanh", "--c", "1/2", "--gamma", "1"]
    for extra in (["--heads", "0", "--head-width", "1"], ["--heads", "2"], ["--heads", "2", "--head-width", "0"],
                  ["--heads", "2", "--head-width", "1", "--snr", "-1"], ["--heads", "2", "--head-width", "1", "--wk2", "1"]):
        r = subprocess.run(base + extra, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (extra, r.stderr)


def test_softmax_heads_limit_against_simulation(monkeypatch):
    """Masked softmax heads K_h = (n/sqrt(p)) row-softmax(X^T W_h X/sqrt(p)): the entry-wise limit of
    exp(t - 1/2) - 1 per head, 3 se + 2% + 0.005 at n = 512 (6 trials).  The row normalization adds a
    finite-n error that shrinks with n: measured gaps 0.045 and 0.049 at n = 256 (10 trials, 5 and 7 se),
    0.016 and 0.019 at n = 512, for gamma = 1 and 1/10."""
    from symrmt.parsing.limits import LIMITS

    monkeypatch.setitem(LIMITS, "solve_seconds", 900)  # 165 unknowns: about a minute on a loaded 2-core machine
    gam = [1.0, 0.1]
    th = heads_limit(None, "1/2", gam, 2, "1/2", attention="softmax")
    sim = heads_simulate(None, 512, "1/2", gam, 2, "1/2", trials=6, seed=1, attention="softmax")
    for i in range(len(gam)):
        t = float(th["attention"][i])
        mean, se = sim["attention"]["mean"][i], sim["attention"]["se"][i]
        assert abs(mean - t) <= 3 * se + 0.02 * t + 0.005, (gam[i], mean, se, t)


def test_softmax_heads_refusals():
    from symrmt.errors import NotDerived, ParameterError
    from symrmt.models.attention.weights import limit_with_weights

    with pytest.raises(ParameterError, match="fixes the kernel"):
        heads_simulate("tanh", 32, "1/2", [1.0], 2, "1/2", trials=2, attention="softmax")
    with pytest.raises(NotDerived, match="given W"):
        limit_with_weights(None, "1/2", [1], weights=np.eye(4), other=(None, {}, "zero", False, "softmax"))
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "symrmt", "limit", "--attention", "softmax", "--c", "1/2", "--gamma",
                        "1", "--heads", "2", "--head-width", "1/2", "--f", "tanh"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert r.returncode == 2 and "fixes the kernel" in r.stderr
