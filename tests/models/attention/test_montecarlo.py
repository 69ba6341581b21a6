"""Tests of the Monte-Carlo layer (symrmt.models.attention.montecarlo, symrmt.progress).

Tolerances against theory are k * (standard error) + a stated finite-size slack,
with k = 3: for roughly Gaussian trial means each comparison fails by chance
with probability ~0.3%, so ~1% over the 4 ridge comparisons; the seeds are fixed,
so in practice every run is deterministic.
"""

from __future__ import annotations

import io
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import symrmt
from symrmt.errors import ParameterError
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import (
    attention_errors,
    draw_tokens,
    kernel_matrix,
    resolvent_errors,
    ridge_errors,
    simulate,
    simulate_trial,
    vectors_from_gram,
)
from symrmt.progress import Progress

pytestmark = pytest.mark.montecarlo

REPO = Path(__file__).resolve().parents[3]
GEOM = Geometry(snr=2, wk2=1, wq2="3/2", wkwq="1/2", muwk="1/2", muwq="-1/4")


def identity(t):
    return t


# 1. layering ------------------------------------------------------------------
def test_import_does_not_load_sympy_or_mpmath():
    code = (
        "import sys, symrmt.models.attention.montecarlo, symrmt.progress\n"
        "bad = [m for m in ('sympy', 'mpmath') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# 2. geometry --------------------------------------------------------------------
@pytest.mark.parametrize(
    "geom",
    [
        Geometry(),
        GEOM,
        Geometry(snr=1, wk2=1, wq2=1, wkwq=1, muwk=1, muwq=1),  # rank 1
        Geometry(snr=4, wk2=1, wq2=1, wkwq=-1),  # w_Q = -w_K, rank 2
        Geometry(snr="1/3", wk2=2, wq2=5, wkwq="0.7", muwk="0.1", muwq="-0.2"),
    ],
)
def test_vectors_from_gram_reproduces_gram(geom):
    gram = np.array([[float(v) for v in row] for row in geom.gram()])
    for p in (geom.rank(), 3, 17):
        if p < 1:
            continue
        mu, wk, wq = vectors_from_gram(geom.gram(), p)
        v = np.stack([mu, wk, wq])
        assert v.shape == (3, p)
        np.testing.assert_allclose(v @ v.T, gram, rtol=0, atol=1e-12)
        # embedded in the first rank coordinates
        assert not np.any(v[:, geom.rank():])


def test_vectors_from_gram_needs_p_at_least_rank():
    with pytest.raises(ParameterError, match="p = round"):
        vectors_from_gram(GEOM.gram(), 2)


def test_non_psd_geometry_raises():
    with pytest.raises(ParameterError, match="not positive semi-definite"):
        Geometry(snr=1, wk2=1, muwk=2)
    with pytest.raises(ParameterError, match="not positive semi-definite"):
        vectors_from_gram([[1, 2, 0], [2, 1, 0], [0, 0, 0]], 5)


# 3. split independence / 4. reproducibility --------------------------------------
def test_workers_do_not_change_per_trial_results(two_workers):
    kw = dict(f=np.tanh, n=48, c=0.5, gammas=[0.1, 1.0], geometry=GEOM, trials=5, seed=11, progress=False)
    a = simulate(workers=1, **kw)
    b = simulate(workers=2, **kw)
    for key in ("attention", "ridge"):
        assert np.array_equal(a[key]["trials"], b[key]["trials"])
        assert np.array_equal(a[key]["mean"], b[key]["mean"])


def test_unpicklable_f_with_workers_is_a_clear_error():
    with pytest.raises(ParameterError, match="workers=1"):
        simulate(lambda t: np.tanh(t), n=16, c=1, gammas=[1.0], trials=2, workers=2, progress=False)


def test_reproducible_and_seed_dependent():
    kw = dict(f=np.tanh, n=40, c=2, gammas=[0.1, 1.0], geometry=GEOM, trials=3, progress=False)
    a, b, d = simulate(seed=5, **kw), simulate(seed=5, **kw), simulate(seed=6, **kw)
    for key in ("attention", "ridge"):
        assert np.array_equal(a[key]["trials"], b[key]["trials"])
        assert not np.any(a[key]["trials"] == d[key]["trials"])


def test_trial_j_uses_child_j():
    kw = dict(f=np.tanh, n=32, c=0.5, gammas=[1.0], trials=4, progress=False)
    full = simulate(seed=3, **kw)["attention"]["trials"][:, 0]
    child = np.random.SeedSequence(3).spawn(4)[2]
    zeros = np.zeros(16)
    e_att, _ = simulate_trial(np.tanh, 32, zeros, zeros, zeros, np.array([1.0]), "zero", "gaussian",
                              np.random.default_rng(child))
    assert e_att[0] == full[2]


def test_result_structure():
    r = simulate(np.tanh, n=20, c="1/2", gammas=[0.5, 2], trials=3, seed=2, progress=False)
    assert r["params"] == {
        "n": 20, "p": 10, "c": 0.5, "gammas": [0.5, 2.0], "diagonal": "zero", "noise": "gaussian",
        "trials": 3, "seed": 2,
        "geometry": {k: 0.0 for k in ("snr", "wk2", "wq2", "wkwq", "muwk", "muwq")},
    }
    for key in ("attention", "ridge"):
        t = r[key]["trials"]
        assert t.shape == (3, 2) and t.dtype == np.float64
        np.testing.assert_array_equal(r[key]["mean"], t.mean(axis=0))
        np.testing.assert_allclose(r[key]["se"], t.std(axis=0, ddof=1) / math.sqrt(3), rtol=1e-15)


# 5. exact small facts --------------------------------------------------------------
@pytest.mark.parametrize("c", [0.5, 1, 2])
@pytest.mark.parametrize("diagonal", ["zero", "keep"])
def test_errors_in_unit_interval_and_monotone(c, diagonal):
    gam = np.geomspace(1e-4, 1e6, 16)
    r = simulate(np.tanh, n=64, c=c, gammas=gam, geometry=GEOM, diagonal=diagonal, trials=4, seed=1,
                 progress=False)
    for key in ("attention", "ridge"):
        t = r[key]["trials"]
        assert np.all(t >= 0) and np.all(t <= 1 + 1e-12)
        assert np.all(np.diff(t, axis=1) >= -1e-14)
        assert np.all(t[:, -1] > 0.99)  # gamma -> infinity: E -> ||y||^2/n = 1


def test_identity_keep_kernel_is_xtwx_over_p():
    p, n = 30, 20
    mu, wk, wq = vectors_from_gram(GEOM.gram(), p)
    x, _ = draw_tokens(np.random.default_rng(0), n, mu)
    w = np.eye(p) + np.outer(wk, wq)
    k = kernel_matrix(identity, x, wk, wq, "keep")
    np.testing.assert_allclose(k, x.T @ w @ x / p, rtol=1e-13, atol=1e-13)
    kz = kernel_matrix(identity, x, wk, wq, "zero")
    assert np.all(np.diag(kz) == 0)
    off = ~np.eye(n, dtype=bool)
    assert np.array_equal(kz[off], k[off])


def test_tokens_and_labels():
    p, n = 12, 4000
    mu, _, _ = vectors_from_gram(Geometry(snr=4).gram(), p)
    x, y = draw_tokens(np.random.default_rng(0), n, mu, "rademacher")
    assert set(np.unique(y)) == {-1.0, 1.0}
    z = x - np.outer(mu, y)
    assert set(np.unique(z)) == {-1.0, 1.0}
    assert abs(y.mean()) < 4 / math.sqrt(n)


def _direct(p_mat, y, gammas):
    n = len(y)
    out = []
    for g in gammas:
        q = np.linalg.solve(p_mat + g * np.eye(n), y)
        out.append(g * g * (q @ q) / n)
    return np.array(out)


@pytest.mark.parametrize("c", [0.5, 2])
@pytest.mark.parametrize("diagonal", ["zero", "keep"])
def test_eigen_trick_matches_direct_solve(c, diagonal):
    n = 60
    p = round(c * n)
    mu, wk, wq = vectors_from_gram(GEOM.gram(), p)
    x, y = draw_tokens(np.random.default_rng(7), n, mu)
    k = kernel_matrix(np.tanh, x, wk, wq, diagonal)
    gam = np.array([1e-3, 0.05, 1.0, 30.0])
    want_att = _direct(k.T @ x.T @ x @ k / n, y, gam)
    want_rr = _direct(x.T @ x / n, y, gam)
    np.testing.assert_allclose(attention_errors(x, k, y, gam), want_att, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ridge_errors(x, y, gam), want_rr, rtol=0, atol=1e-10)
    if p >= n:  # the cached-Gram path used by simulate_trial
        np.testing.assert_allclose(attention_errors(x, k, y, gam, gram=x.T @ x), want_att, rtol=0, atol=1e-10)
    np.testing.assert_allclose(resolvent_errors(x @ k, y, gam), want_att, rtol=0, atol=1e-10)


def test_rank_deficient_small_side():
    # A has rank 3 < m = 5 < n: the zero eigenvalues of A A^T must go to the null part
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 3)) @ rng.standard_normal((3, 40))
    y = np.sign(rng.standard_normal(40))
    gam = np.array([1e-2, 1.0])
    np.testing.assert_allclose(resolvent_errors(a, y, gam), _direct(a.T @ a / 40, y, gam), rtol=0, atol=1e-10)


# 6. ridge against the Marchenko-Pastur closed form (written here, independently) -----
def mp_ridge_error(c, g):
    """mu = 0: y^T Q_0 y/n -> m(g), the Stieltjes transform of X^T X/n (ratio c = p/n) at -g:
    g m^2 + (g + c - 1) m - 1 = 0, positive root; E = -g^2 dm/dg = g^2 (m^2 + m)/(2 g m + g + c - 1)."""
    b = g + c - 1
    m = (-b + math.sqrt(b * b + 4 * g)) / (2 * g)
    return g * g * (m * m + m) / (2 * g * m + b)


def test_mp_closed_form_is_right():
    # sanity of the test's own formula: large-gamma expansion and a numerical derivative
    for c in (0.5, 2.0):
        assert abs(mp_ridge_error(c, 1e6) - 1) < 1e-5
        g, h = 0.7, 1e-5

        def m_of(g, c=c):
            b = g + c - 1
            return (-b + math.sqrt(b * b + 4 * g)) / (2 * g)

        assert abs(-g * g * (m_of(g + h) - m_of(g - h)) / (2 * h) - mp_ridge_error(c, g)) < 1e-8


@pytest.mark.parametrize("c", [0.5, 2])
def test_ridge_matches_marchenko_pastur(c):
    gam = [0.1, 1.0]
    r = simulate(np.tanh, n=256, c=c, gammas=gam, trials=20, seed=2024, progress=False)["ridge"]
    for i, g in enumerate(gam):
        theory = mp_ridge_error(c, g)
        assert abs(r["mean"][i] - theory) <= 3 * r["se"][i] + 0.01, (c, g, r["mean"][i], r["se"][i], theory)


# 7. universality -------------------------------------------------------------------
def test_gaussian_vs_rademacher_noise():
    kw = dict(f=np.tanh, n=256, c=0.5, gammas=[0.1, 1.0], geometry=GEOM, trials=20, progress=False)
    g = simulate(noise="gaussian", seed=1, **kw)
    r = simulate(noise="rademacher", seed=2, **kw)
    for key in ("attention", "ridge"):
        gap = np.abs(g[key]["mean"] - r[key]["mean"])
        tol = 3 * np.sqrt(g[key]["se"] ** 2 + r[key]["se"] ** 2) + 0.01
        assert np.all(gap <= tol), (key, gap, tol)


# 8. bad inputs ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n=1), "n must be >= 2"),
        (dict(n=10.5), "n must be an integer"),
        (dict(n=True), "n must be an integer"),
        (dict(c=0), "c = p/n must be positive"),
        (dict(c=-1), "c = p/n must be positive"),
        (dict(c=0.01), r"p = round\(c\*n\)"),
        (dict(gammas=[1.0, 0.0]), "gamma must be positive"),
        (dict(gammas=-0.5), "gamma must be positive"),
        (dict(gammas=[]), "gamma"),
        (dict(diagonal="one"), "diagonal must be one of"),
        (dict(noise="uniform"), "noise must be one of"),
        (dict(trials=1), "trials must be >= 2"),
        (dict(workers=0), "workers must be >= 1"),
        (dict(seed=-1), "seed must be >= 0"),
        (dict(f=3.0), "f must be a callable"),
        (dict(f=lambda t: 1.0), "f must be vectorized"),
        (dict(f=np.log), "non-finite"),
        (dict(geometry=GEOM, n=4, c=0.5), r"p = round\(c\*n\) = 2 is smaller than the rank"),
        (dict(progress="yes"), "progress must be"),
    ],
)
def test_bad_inputs(kwargs, match):
    base = dict(f=np.tanh, n=10, c=1, gammas=[1.0], trials=2, progress=False)
    base.update(kwargs)
    with pytest.raises(ParameterError, match=match):
        with np.errstate(all="ignore"):
            simulate(**base)


# progress bar ----------------------------------------------------------------------
def test_progress_disabled_is_silent_and_forced_prints():
    buf = io.StringIO()
    with Progress(5, "x", enabled=False, stream=buf) as bar:
        for _ in range(5):
            bar.update()
    assert buf.getvalue() == ""
    buf = io.StringIO()
    with Progress(4, "run", enabled=True, stream=buf) as bar:
        bar.update(4)
    text = buf.getvalue()
    assert "run: 4/4" in text and "it/s" in text and "ETA" in text


def test_progress_auto_is_silent_for_short_runs_off_a_tty():
    buf = io.StringIO()  # not a TTY
    with Progress(3, "x", stream=buf) as bar:
        bar.update(3)
    assert buf.getvalue() == ""


def test_simulate_progress_flag(capsys):
    simulate(np.tanh, n=16, c=1, gammas=[1.0], trials=2, progress=True)
    assert "simulate n=16 p=16" in capsys.readouterr().err
    simulate(np.tanh, n=16, c=1, gammas=[1.0], trials=2, progress=False)
    assert capsys.readouterr().err == ""


def test_simulate_refusals():
    from symrmt.models.attention.montecarlo import simulate

    with pytest.raises(ParameterError, match="vectorized"):
        simulate(math.tanh, n=16, c=0.5, gammas=[1], trials=2)
    with pytest.raises(ParameterError, match="GiB"):
        simulate(np.tanh, n=1_000_000, c=0.5, gammas=[1], trials=2)
    with pytest.raises(ParameterError, match="GiB"):
        simulate(np.tanh, n=64, c="1e9", gammas=[1], trials=2)
    with pytest.raises(ParameterError, match="float64 range"):
        simulate(np.tanh, n=16, c=0.5, gammas=["1e-400"], trials=2)


def test_low_level_simulate_takes_the_same_f():
    from symrmt.hermite import Nonlinearity
    from symrmt.models.attention.montecarlo import simulate

    ref = simulate(np.tanh, 64, 0.5, [1], trials=3, seed=1)["attention"]["trials"]
    t = sp.Symbol("t")
    for f in ("tanh", "tanh(t)", Nonlinearity("tanh"), sp.tanh(t)):
        got = simulate(f, 64, 0.5, [1], trials=3, seed=1, geometry={"snr": 0})["attention"]["trials"]
        assert np.allclose(got, ref, rtol=1e-12, atol=0), f
    with pytest.raises(symrmt.ParameterError):
        simulate(3, 64, 0.5, [1], trials=3)
