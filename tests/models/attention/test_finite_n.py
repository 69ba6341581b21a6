"""The finite-n prediction of E_A (signal kept inside f, token types): each piece against simulation of the
actual kernel, its reduction to the limit as n grows, and the refusals.

Tolerances: ``|mc - prediction| <= 3 se + 1% + 0.004`` (k = 3), seeds fixed, n <= 512.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import symrmt
from symrmt.errors import ParameterError
from symrmt.hermite.shifted import shifted_moments
from symrmt.models.attention import finite_n as FN
from symrmt.models.attention.geometry import Geometry

pytestmark = pytest.mark.montecarlo

ALIGNED = dict(snr=4, wk2=4, wq2=4, wkwq=4, muwk=4, muwq=4)


def collinear(m2, w2):
    mw = (m2 * w2) ** 0.5
    return Geometry(snr=m2, wk2=w2, wq2=w2, wkwq=w2, muwk=mw, muwq=mw)


def tolerance(se, value):
    return 3 * se + 0.01 * abs(value) + 0.004


def moments(delta):
    """``(F, F', E f^2)`` of tanh at the shift ``delta``, as floats."""
    return [float(v[0]) for v in shifted_moments("tanh", np.array([delta], dtype=np.longdouble))]


def test_conditional_mean_of_the_kernel():
    # E[tanh(t_ij) | u_i, u_j] with t_ij = g_ij + kappa u_i u_j: the model's F against the actual kernel
    rng = np.random.default_rng(1)
    p, trials = 128, 4000
    kappa = 5 / np.sqrt(p)
    for ui, uj, strong in [(2.3, 1.7, True), (-3.0, 2.5, True), (0.4, -1.1, False)]:
        vals = []
        for _ in range(trials):
            zi, zj = rng.standard_normal(p - 1), rng.standard_normal(p - 1)
            t = (zi @ zj + 5 * ui * uj) / np.sqrt(p)
            vals.append(np.tanh(t))
        vals = np.array(vals)
        F, F1, F2 = moments(kappa * ui * uj)
        assert abs(vals.mean() - F) <= 3 * vals.std() / np.sqrt(trials) + 2e-3
        assert abs((vals ** 2).mean() - F2) <= 3 * (vals ** 2).std() / np.sqrt(trials) + 2e-3
        # for typical strong-signal pairs the linearized mean a_1 delta is far off: the reason for the model
        assert (abs(F - moments(0.0)[1] * kappa * ui * uj) > 0.05) == strong


def _simulate_quadratic_form(n, c, m2, w2, gamma, trials, seed):
    """``y^T Q y/n`` and ``E_A`` of the actual tanh kernel (zero diagonal), aligned rank-one weights."""
    rng = np.random.default_rng(seed)
    p = round(c * n)
    phis, errs = [], []
    for _ in range(trials):
        y = rng.choice([-1.0, 1.0], n)
        X = rng.standard_normal((p, n))
        X[0] += np.sqrt(m2) * y
        u = X[0]
        T = (X.T @ X + w2 * np.outer(u, u)) / np.sqrt(p)
        K = np.tanh(T) / np.sqrt(p)
        np.fill_diagonal(K, 0)
        M = K.T @ (X.T @ X) @ K / n + gamma * np.eye(n)
        v = np.linalg.solve(M, y)
        phis.append(y @ v / n)
        errs.append(gamma ** 2 * (v @ v) / n)
    phis, errs = np.array(phis), np.array(errs)
    return phis.mean(), phis.std(ddof=1) / np.sqrt(trials), errs.mean(), errs.std(ddof=1) / np.sqrt(trials)


@pytest.mark.parametrize("n, c, m2, w2", [(256, 0.5, 4, 4), (512, 0.5, 4, 4), (256, 0.5, 8, 8)])
def test_resolvent_quadratic_form_and_error_against_simulation(n, c, m2, w2):
    phi_mc, phi_se, err_mc, err_se = _simulate_quadratic_form(n, c, m2, w2, 1.0, 24 if n == 256 else 8, seed=n + m2)
    phi, err = FN.finite_n_point(n, c, m2, w2, 1.0, FN.TYPES, quadratic_form=True)
    assert abs(phi_mc - phi) <= tolerance(phi_se, phi), (phi_mc, phi_se, phi)
    assert abs(err_mc - err) <= tolerance(err_se, err), (err_mc, err_se, err)
    # the limit alone is outside the same band: the prediction is not the limit in disguise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lim = symrmt.limit("tanh", c, [1], geometry=collinear(m2, w2), digits=10).attention[0]
    assert abs(err_mc - lim) > tolerance(err_se, lim)


def test_package_simulation_c_two():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = symrmt.simulate("tanh", 2, [1], n=256, trials=12, seed=5, progress=False, **ALIGNED)
    r = symrmt.limit("tanh", 2, [1], n=256, **ALIGNED)
    assert r.n == 256
    assert abs(s.attention[0] - r.attention[0]) <= tolerance(s.attention_se[0], r.attention[0])


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_reduces_to_the_limit():
    gammas = ["1/1000", "1/10", 1, 10]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lim = symrmt.limit("tanh", "1/2", gammas, digits=15, **ALIGNED).attention
    far = symrmt.limit("tanh", "1/2", gammas, n=10**8, **ALIGNED).attention
    mid = symrmt.limit("tanh", "1/2", gammas, n=10**6, **ALIGNED).attention
    assert np.all(np.abs(far - lim) <= 1e-5)
    assert np.all(np.abs(far - lim) < np.abs(mid - lim))
    # and at practical sizes it is far from the limit
    near = symrmt.limit("tanh", "1/2", [1], n=512, **ALIGNED).attention[0]
    assert lim[1] - near > 0.05


def test_two_discretizations_agree():
    vals, agree, q = FN.finite_n_values("tanh", "1/2", [1], collinear(4, 4), 256)
    assert agree >= FN.MIN_DIGITS and q in (FN.TYPES, 2 * FN.TYPES)
    other = FN.finite_n_attention("tanh", "1/2", [1], collinear(4, 4), 256, types=100)
    assert abs(other[0] - vals[0]) <= 10.0 ** -FN.MIN_DIGITS


@pytest.mark.parametrize("kw, match", [
    (dict(n=128, f="tanh"), "below the finite-n prediction's minimum"),
    (dict(n=512, f="sin(t)"), "covers f in"),
    (dict(n=512, f="tanh", diagonal="keep"), "diagonal='zero'"),
])
def test_refusals(kw, match):
    f = kw.pop("f")
    with pytest.raises(ParameterError, match=match):
        symrmt.limit(f, "1/2", [1], **kw, **ALIGNED)


def test_refuses_non_collinear_and_asymmetric_weights():
    with pytest.raises(ParameterError, match="collinear"):
        symrmt.limit("tanh", "1/2", [1], n=512, snr=4, wk2=4, wq2=4, wkwq=4)
    with pytest.raises(ParameterError, match="w_K = w_Q"):
        symrmt.limit("tanh", "1/2", [1], n=512, snr=4, wk2=4)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_cli_json_and_refusal():
    base = [sys.executable, "-m", "symrmt", "limit", "--f", "tanh", "--c", "1/2", "--gamma", "1",
            "--snr", "4", "--wk2", "4", "--wq2", "4", "--wkwq", "4", "--muwk", "4", "--muwq", "4"]
    out = subprocess.run(base + ["--n", "512", "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    import json

    res = json.loads(out.stdout)
    assert set(res) >= {"gamma", "attention", "ridge", "params"} and res["params"]["n"] == 512
    assert abs(res["attention"][0] - symrmt.limit("tanh", "1/2", [1], n=512, **ALIGNED).attention[0]) < 1e-9
    bad = subprocess.run(base + ["--n", "100"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "minimum n = 256" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_finite_size_figure(tmp_path):
    pytest.importorskip("matplotlib")
    from symrmt.figures import FIGURES
    from symrmt.figures.finite_size import finite_size

    assert FIGURES["finite_size"] is finite_size
    paths = finite_size(tmp_path, progress=False, sizes=[256], trials=[2])
    assert sorted(p.rsplit(".", 1)[1] for p in paths) == ["pdf", "png"]


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_cli_text_states_the_discretization_digits():
    """The table shows 15 digits of the discretized model; the text also says on how many of them a coarser
    discretization agrees (the JSON's ``discretization_digits``), so the 15 are not read as 15 digits of E_A."""
    import json

    base = [sys.executable, "-m", "symrmt", "limit", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--n", "512",
            "--snr", "4", "--wk2", "4", "--wq2", "4", "--wkwq", "4", "--muwk", "4", "--muwq", "4"]
    text = subprocess.run(base, capture_output=True, text=True, timeout=120)
    js = subprocess.run(base + ["--json"], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0 and js.returncode == 0, text.stderr + js.stderr
    agree = json.loads(js.stdout)["params"]["discretization_digits"]
    assert f"a coarser discretization agrees on {agree} of them (discretization_digits)" in text.stdout
