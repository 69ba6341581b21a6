"""Softmax attention: the simulated kernel, the bad-input rules and the limit's route.

The references are computed here without the code under test: the softmax by its textbook formula,
the Hermite data of ``exp(t - alpha^2/2) - 1`` in closed form (``a_1 = alpha``, ``nu = e^{alpha^2} - 1``).
The Monte-Carlo checks on five geometry routes are in the derivation (``symrmt/derivations/softmax.py``,
quick mode run by ``tests/derivations/test_derivations.py``); one route is repeated here with its own seed.
"""

from __future__ import annotations

import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest

import symrmt
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.errors import ParameterError
from symrmt.models.attention.montecarlo import weights_from_geometry, draw_tokens, simulate, softmax_kernel

pytestmark = [pytest.mark.slow, pytest.mark.montecarlo]  # seconds a test: outside the fast tier (pytest -m "not slow")


def _naive(x, w, mask):
    p, n = x.shape
    s = x.T @ w @ x / math.sqrt(p)
    e = np.exp(s)
    if mask:
        np.fill_diagonal(e, 0.0)
    return (n / math.sqrt(p)) * e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("mask", [True, False])
def test_softmax_kernel_matches_the_formula(mask):
    geo = LowRankGeometry([[1, "1/2", 0], ["1/2", 1, "1/3"], [0, "1/3", 1]], "3/2")
    n, p = 40, 20
    mu, wk, wq, alpha = weights_from_geometry(geo, p)
    x, _ = draw_tokens(np.random.default_rng(0), n, mu)
    k = softmax_kernel(x, wk, wq, mask, alpha=alpha)
    ref = _naive(x, alpha * np.eye(p) + wk @ wq.T, mask)
    assert np.max(np.abs(k - ref)) < 1e-12 * np.max(np.abs(ref))
    assert np.allclose(k.sum(axis=1), n / math.sqrt(p), rtol=1e-13)
    if mask:
        assert not np.any(np.diag(k))


def test_softmax_kernel_is_stable_where_exp_overflows():
    n, p = 30, 15
    x, _ = draw_tokens(np.random.default_rng(1), n, np.zeros(p))
    k = softmax_kernel(x * 100.0, np.zeros(p), np.zeros(p), True)  # scores ~ 1e4: exp overflows
    assert np.all(np.isfinite(k))
    assert np.allclose(k.sum(axis=1), n / math.sqrt(p), rtol=1e-12)
    # each row puts (almost) all its mass on its largest off-diagonal score
    s = x.T @ x
    np.fill_diagonal(s, -np.inf)
    assert np.all(k[np.arange(n), np.argmax(s, axis=1)] > 0.99 * n / math.sqrt(p))


def test_unmasked_softmax_tends_to_the_identity():
    r = simulate(None, 256, "1/2", [0.05, 2.0], trials=2, seed=0, attention="softmax", mask=False)
    e = r["attention"]["mean"]
    assert abs(e[1] - e[0]) < 1e-3  # flat in gamma: A ~ I
    assert r["params"]["attention"] == "softmax"


@pytest.mark.parametrize("kwargs, text", [
    ({"attention": "relu"}, "attention must be one of"),
    ({"attention": "softmax", "f": np.tanh}, "fixes the kernel"),
    ({"attention": "softmax", "diagonal": "keep"}, "mask"),
    ({"mask": False, "f": np.tanh}, "softmax"),
])
def test_simulate_refuses(kwargs, text):
    f = kwargs.pop("f", None if kwargs.get("attention") == "softmax" else np.tanh)
    with pytest.raises(ParameterError, match=text):
        simulate(f, 64, "1/2", [1.0], trials=2, **kwargs)


def test_simulate_estimates_memory_before_allocating():
    with pytest.raises(ParameterError, match="GiB"):
        simulate(None, 10**6, "1/2", [1.0], trials=2, attention="softmax")


def test_limit_refuses():
    with pytest.raises(ParameterError, match="no limit in this scaling"):
        symrmt.limit(None, "1/2", [1], attention="softmax", mask=False)
    with pytest.raises(ParameterError, match="fixes the kernel"):
        symrmt.limit("tanh", "1/2", [1], attention="softmax")
    with pytest.raises(ParameterError, match="attention must be one of"):
        symrmt.limit("tanh", "1/2", [1], attention="sparsemax")


@pytest.mark.parametrize("alpha", ["1", "3/2"])
def test_limit_is_the_entrywise_limit_with_the_closed_form_hermite_data(alpha):
    from symrmt.models.attention.theory import attention_limit

    geo = LowRankGeometry([[2, "1/2", 0], ["1/2", 1, "1/4"], [0, "1/4", 1]], alpha)
    a = symrmt.limit(None, "1/2", ["0.2"], geo, digits=20, attention="softmax").attention_mp[0]
    al = mpmath.mpf(3) / 2 if alpha == "3/2" else mpmath.mpf(1)
    with mpmath.workdps(60):
        nu = mpmath.nstr(mpmath.expm1(al**2), 50)
    b = attention_limit({"a1": alpha, "nu": nu, "d": 0}, "1/2", ["0.2"], geo.scaled(), digits=20)[0]
    assert abs(a - b) <= mpmath.mpf(10) ** -18 * abs(b)


def test_softmax_simulation_agrees_with_the_limit():
    # signal, W = I, n = 512: tolerance 3 se (a two-sided 0.3% false alarm per gamma under normality)
    # + 0.01, the finite-size bias (+0.005 measured at n = 512 on this route, decreasing with n; docs/theory.md)
    g = Geometry(snr=2)
    th = symrmt.limit(None, "1/2", [0.1, 1], g, digits=12, attention="softmax")
    sim = simulate(None, 512, "1/2", [0.1, 1], g, trials=12, seed=7, attention="softmax")
    for i in range(2):
        assert abs(sim["attention"]["mean"][i] - float(th.attention_mp[i])) <= 3 * sim["attention"]["se"][i] + 0.01


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "symrmt", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, text", [
    (("limit", "--attention", "softmax", "--f", "tanh"), "softmax fixes the kernel"),
    (("limit", "--attention", "softmax", "--no-mask"), "no limit in this scaling"),
    (("limit", "--attention", "linear"), "--attention must be entrywise or softmax"),
    (("limit",), "--f is required"),
    (("simulate", "--n", "64", "--f", "tanh", "--no-mask"), "--no-mask is for --attention softmax"),
])
def test_cli_refuses(args, text):
    verb, *rest = args
    extra = ("--n", "64") if verb == "simulate" and "--n" not in rest else ()
    r = _cli(verb, *rest, *extra, "--c", "1/2", "--gamma", "1")
    assert r.returncode == 2, r.stderr
    assert text in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_cli_softmax_limit_json():
    import json

    r = _cli("limit", "--attention", "softmax", "--c", "1/2", "--gamma", "0.2", "--snr", "2", "--digits", "12",
             "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["params"]["attention"] == "softmax" and out["params"]["expr"] == "exp(t - 1/2) - 1"
    ref = symrmt.limit("exp(t - 1/2) - 1", "1/2", ["0.2"], Geometry(snr=2), digits=12).attention_mp[0]
    assert abs(float(out["attention"][0]) - float(ref)) < 1e-11


def test_cli_sweep_softmax_matches_limit_and_refuses_alpha():
    r = _cli("sweep", "--attention", "softmax", "--grid", "gamma=0.1,1", "--c", "1/2", "--snr", "2", "--digits", "10")
    assert r.returncode == 0, r.stderr
    rows = [line.split(",") for line in r.stdout.strip().splitlines()[1:]]
    th = symrmt.limit(None, "1/2", ["0.1", "1"], Geometry(snr=2), digits=10, attention="softmax").attention_mp
    assert [abs(float(row[-2]) - float(t)) < 1e-9 for row, t in zip(rows, th)] == [True, True]
    r = _cli("crossings", "--attention", "softmax", "--over", "gamma", "--between", "0.01,10", "--c", "1/2",
             "--alpha", "3/2")
    assert r.returncode == 2 and "need alpha = 1" in r.stderr


def test_api_simulate_compares_with_the_limit():
    g = Geometry(snr=2)
    th = symrmt.limit(None, "1/2", [0.1, 1], g, digits=10, attention="softmax")
    sim = symrmt.simulate(None, "1/2", [0.1, 1], g, n=256, trials=4, seed=3, attention="softmax")
    assert sim.f == th.f == "softmax" and sim.compare(th).attention_gap.shape == (2,)
    unmasked = symrmt.simulate(None, "1/2", [0.1], g, n=64, trials=2, attention="softmax", mask=False)
    with pytest.raises(ParameterError, match="different models"):
        unmasked.compare(symrmt.limit(None, "1/2", [0.1], g, digits=10, attention="softmax"))
    with pytest.raises(ParameterError, match="fixes the kernel"):
        symrmt.simulate("tanh", "1/2", [0.1], n=64, trials=2, attention="softmax")


def test_softmax_limit_is_symrmt_limit_and_at_size_reruns_the_softmax():
    from symrmt.models.softmax import softmax_limit

    g = Geometry(snr=1)
    a = softmax_limit("1/2", [1], g, digits=12)
    b = symrmt.limit(None, "1/2", [1], g, digits=12, attention="softmax")
    assert a.attention_mp == b.attention_mp and a.expr == b.expr
    sim = symrmt.simulate(None, "1/2", [0.5], g, n=32, trials=3, seed=5, attention="softmax")
    other = sim.at_size(48)  # the softmax again, not an entry-wise f named "softmax"
    direct = symrmt.simulate(None, "1/2", [0.5], g, n=48, trials=3, seed=5, attention="softmax")
    assert other.n == 48 and other.expr == direct.expr
    assert np.array_equal(other.attention_trials, direct.attention_trials)


def test_the_softmax_kernel_does_not_import_the_attention_calls():
    """The softmax kernel's definitions load neither the attention calls nor SymPy (import-time cost)."""
    code = ("import sys, symrmt.models.softmax as s; s.softmax_text(2); "
            "print('symrmt.models.attention.api' in sys.modules, 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
