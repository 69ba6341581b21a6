"""kernel(f, Z, W) for a weight matrix given by its entries (mu = 0), against simulations of the
actual kernel f(Z^T W Z/sqrt(p))/sqrt(p) (diagonal zero) with the same W, and the --weights CLI."""

import json
import os
import subprocess
import sys

import mpmath
import numpy as np
import pytest

from symrmt.engine import Model, diff, inv, trace
from symrmt.engine.kernels.weights import general_coefficients, kernel_given, remainder_correlation, weight_statistics
from symrmt.hermite import Nonlinearity

pytestmark = [pytest.mark.slow, pytest.mark.montecarlo]  # seconds a test: outside the fast tier (pytest -m "not slow")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _weights(p, seed=1, scale=1.2):
    """A non-symmetric, non-normal W with tr(W) != 0: rho ~ 0.6, s = scale."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((p, p))
    W = G + 0.3 * G.T + 0.3 * np.sqrt(p) * np.eye(p)
    return scale * W / np.sqrt((W ** 2).sum() / p)


def test_statistics_closed_forms():
    W = np.array([[1.0, 2.0], [0.0, 3.0]])
    st = weight_statistics(W)
    assert float(st["s2"]) == pytest.approx(14 / 2)
    assert float(st["rho"]) == pytest.approx(10 / 14)  # tr(W^2) = 1 + 9, ||W||_F^2 = 14
    assert float(st["m"]) == pytest.approx(2.0)


def test_mehler_correlation_closed_form():
    # f = He_3 = t^3 - 3t: a_3 = 6, every other a_k = 0; a1 is 0 so tau = rho^3
    nl = Nonlinearity("t**3 - 3*t")
    v = remainder_correlation(nl, mpmath.mpf("0.4"), 0, 6, 20)
    assert abs(v - mpmath.mpf("0.4") ** 3) < mpmath.mpf(10) ** -15  # rho enters as a float64
    # tanh: Mehler's series against the 2-D Gaussian integral E[f(u) f(v)] - rho a1^2 by quadrature
    rho = mpmath.mpf("0.5")
    nl = Nonlinearity("tanh")
    a1, nu = nl.a_mpf(1, 20), nl.nu_mpf(20)
    tau = remainder_correlation(nl, rho, a1, nu, 12)
    r = mpmath.sqrt(1 - rho ** 2)
    phi = lambda x: mpmath.exp(-x * x / 2) / mpmath.sqrt(2 * mpmath.pi)  # noqa: E731
    with mpmath.workdps(20):
        cov = mpmath.quad(lambda u, e: phi(u) * phi(e) * mpmath.tanh(u) * mpmath.tanh(rho * u + r * e),
                          [-12, 0, 12], [-12, 0, 12])
    assert abs(tau - (cov - rho * a1 ** 2) / (nu - a1 ** 2)) < 1e-10


def test_identity_weights_reduce_to_the_package_kernel():
    k = general_coefficients("tanh", 2 * np.eye(5), digits=20)
    assert float(k["s"]) == 2 and k["tau"] == 1 and float(k["m"]) == 2


def _simulate(fname, W, n, trials, seed, center=False):
    p = W.shape[0]
    k = general_coefficients(fname, W, center, 15)
    f_s, s = k["nonlinearity"].numpy(), float(k["s"])
    rng = np.random.default_rng(seed)
    res, ea = [], []
    for _ in range(trials):
        Z = rng.standard_normal((p, n))
        K = f_s(Z.T @ W @ Z / np.sqrt(p) / s) / np.sqrt(p)  # f(t) = f_s(t/s), centered as the theory takes it
        np.fill_diagonal(K, 0)
        res.append(np.trace(np.linalg.inv(K.T @ K + np.eye(n))) / n)
        F = Z @ K
        Q = np.linalg.inv(F.T @ F / n + np.eye(n))
        ea.append(np.trace(Q @ Q) / n)
    return [(np.mean(a), np.std(a, ddof=1) / np.sqrt(trials)) for a in (res, ea)]


@pytest.mark.parametrize("fname,center,c", [("tanh", False, "1/2"), ("cos(t)", True, "1/2")])
def test_kernel_spectrum_and_error_against_the_actual_kernel(fname, center, c):
    """The kernel's own resolvent trace tau((K^T K + I)^-1) and E_A = tau(Q^2) at gamma = 1, p = 64,
    n = 128: tanh (linear part and elliptic remainder), centered cos (the remainder alone, a1 = 0).
    Tolerance 3 se + 0.025 (the kernel's finite-p error, measured to shrink with p)."""
    p = 64
    W = _weights(p)
    m = Model()
    m.dim("p", "c*n")
    Z = m.gaussian("Z", "p", "n")
    Wm = m.matrix("W", "p", "p", W)
    K = kernel_given(fname, Z, Wm, model=m, digits=15, center=center)
    g = m.param("gamma")
    n_ = m.size("n")
    e_res = trace(inv(K.T * K + m.identity("n")))
    e_a = -g ** 2 * diff(trace(inv(K.T * Z.T * Z * K / n_ + g * m.identity("n"))), g)
    at = {"c": c, "gamma": "1"}
    th = [float(m.limit(e, at=at, digits=15).value) for e in (e_res, e_a)]
    sims = _simulate(fname, W, 128, 24, 7, center)
    for (mean, se), t in zip(sims, th):
        assert abs(mean - t) <= 3 * se + 0.025, (mean, se, t)


def test_zero_weights_and_a_wrong_signal_refused():
    from symrmt.errors import ParameterError
    from symrmt.models.attention.weights import weights_limit

    with pytest.raises(ParameterError):
        weights_limit("tanh", "1/2", [1], np.zeros((4, 4)))
    with pytest.raises(ParameterError):
        weights_limit("tanh", "1/2", [1], np.full((4, 4), np.nan))
    with pytest.raises(ParameterError):
        weights_limit("tanh", "1/2", [1], np.ones((3, 4)))
    with pytest.raises(ParameterError):
        weights_limit("tanh", "1/2", [1], np.eye(4), mu=np.ones(5))


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "symrmt", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)


def test_cli_weights_limit_against_simulate(tmp_path):
    p = 32
    path = tmp_path / "W.npy"
    np.save(path, _weights(p, seed=3, scale=1.0))
    os.chmod(path, 0o600)
    r = _cli("limit", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--weights", str(path), "--json")
    assert r.returncode == 0, r.stderr
    th = json.loads(r.stdout)
    assert set(th) >= {"attention", "ridge"}
    r = _cli("simulate", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--weights", str(path), "--trials", "40",
             "--json")
    assert r.returncode == 0, r.stderr
    sim = json.loads(r.stdout)
    assert sim["params"]["n"] == 64
    for key in ("attention", "ridge"):
        mean, se = sim[key]["mean"][0], sim[key]["se"][0]
        t = float(th[key][0])
        assert abs(mean - t) <= 3 * se + 0.02 * t + 0.005 + 1 / 64, (key, mean, se, t)


def test_cli_weights_bad_input(tmp_path):
    bad = tmp_path / "bad.npy"
    np.save(bad, np.ones((3, 4)))
    os.chmod(bad, 0o600)
    zero = tmp_path / "zero.npy"
    np.save(zero, np.zeros((4, 4)))
    os.chmod(zero, 0o600)
    W = tmp_path / "W.npy"
    np.save(W, np.eye(4))
    os.chmod(W, 0o600)
    mu = tmp_path / "mu.npy"
    np.save(mu, np.ones(5))
    os.chmod(mu, 0o600)
    base = ("limit", "--f", "tanh", "--c", "1/2", "--gamma", "1")
    for path in (bad, zero, tmp_path / "missing.npy"):
        r = _cli(*base, "--weights", str(path))
        assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = _cli(*base, "--weights", str(W), "--mu", str(mu))
    assert r.returncode == 2 and "length p = 4" in r.stderr


def test_python_api_weights_and_refusals():
    import symrmt
    from symrmt.errors import ParameterError

    W = _weights(16, seed=5, scale=1.0)
    th = symrmt.limit("tanh", "1/2", [1], weights=W)
    sim = symrmt.simulate("tanh", "1/2", [1], weights=W, trials=3)
    assert sim.params["n"] == 32 and th.params["p"] == 16 and 0 < th.attention[0] < 1
    with pytest.raises(ParameterError):
        symrmt.limit("tanh", "1/2", [1], weights=W, mu=np.ones(15))
    with pytest.raises(ParameterError):
        symrmt.limit("tanh", "1/2", [1], weights=W, diagonal="keep")
    with pytest.raises(ParameterError):
        symrmt.limit("tanh", "1/2", [1], weights=W, heads=2, head_width=1)
