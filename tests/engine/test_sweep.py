"""The float64 batched path of the trace engine: ``Model.sweep`` and ``symrmt trace-sweep``.

References are independent of the batched path: the Marchenko-Pastur closed form (the root of
``gamma t^2 + (gamma + c - 1) t - 1 = 0``), and the certified mpmath path (``Model.limit`` at 30
digits, two precisions) at random grid points the batched path is not told about.
"""

import json
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from symrmt.cli.app import main
from symrmt.cli.trace import build_model
from symrmt.engine.solve import batch as trace_batch
from symrmt.engine.lang.matrices import ModelError
from symrmt.errors import ParameterError

MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"
RIDGE = "-gamma**2*diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)"
MPDECL = (["p=c*n"], ["Z=gaussian(p,n)"])


def mp_closed(gamma, c):
    """``tau((Z^T Z/n + gamma)^{-1})``, ``p = c n``: the positive root of ``gamma t^2 + (gamma + c - 1) t - 1``
    (from ``t = 1/(gamma + c/(1 + t))``), in the cancellation-free form."""
    b = gamma + (c - 1)  # c - 1 first: exact for the c used here (gamma + c - 1 would round gamma away)
    sq = np.sqrt(b * b + 4 * gamma)
    with np.errstate(all="ignore"):
        return np.where(b > 0, 2 / (b + sq), (sq - b) / (2 * gamma))


def model(dims=MPDECL[0], mats=MPDECL[1]):
    return build_model(list(dims), list(mats))


def certified(m, expr, at):
    return m.limit(expr, at=at, digits=30).value


def test_marchenko_pastur_grid_matches_closed_form():
    g = np.geomspace(1e-3, 1e3, 60)
    c = np.array([0.25, 0.5, 2.0, 4.0])
    r = model().sweep(MP, grid={"gamma": g, "c": c})
    assert r.shape == (60, 4) and not r.fallback.any()
    ref = mp_closed(g[:, None], c[None, :])
    assert np.max(np.abs(r.values - ref) / ref) <= 1e-13
    assert np.all(r.error_estimate <= trace_batch.FALLBACK_TOL)


@pytest.mark.parametrize("expr,dims,mats,grid,at", [
    (RIDGE, ["p=c*n"], ["Z=gaussian(p,n)"], {"gamma": np.geomspace(0.01, 10, 25), "c": [0.3, 1.7]}, {}),
    ("trace(inv(G/sqrt(n) + Z.T*Z/p + gamma*I(n)))", ["p=c*n"], ["Z=gaussian(p,n)", "G=goe(n)"],
     {"gamma": np.linspace(2.5, 6, 15)}, {"c": "2"}),
    ("trace(inv(Z.T*Z/n + gamma*I(n)))*trace(inv(G/sqrt(n) + gamma*I(n)))", ["p=c*n"],
     ["Z=gaussian(p,n)", "G=goe(n)"], {"gamma": np.linspace(2.5, 5, 8), "c": [0.5, 3]}, {}),
    ("trace(inv(K + gamma*I(n)))", ["p=c*n"], ["Z=gaussian(p,n)", "K=kernel(tanh, Z)"],
     {"gamma": np.geomspace(2, 10, 12)}, {"c": "1/2"}),
])
def test_batched_values_match_the_certified_path_at_random_points(expr, dims, mats, grid, at):
    m = model(dims, mats)
    r = m.sweep(expr, grid=grid, at=at)
    assert not r.fallback.any()
    rng = np.random.default_rng(20)
    names = list(grid)
    for flat in rng.choice(r.values.size, size=3, replace=False):
        idx = np.unravel_index(int(flat), r.shape)
        pt = dict(at)
        pt.update({k: Fraction(float(np.asarray(grid[k])[i])) for k, i in zip(names, idx)})
        exact = certified(m, expr, pt)
        assert abs(mpmath.mpf(float(r.values[idx])) - exact) <= 1e-10 * abs(exact), (pt, r.values[idx], exact)


def test_certify_reports_the_gap_of_k_points():
    r = model().sweep(MP, grid={"gamma": np.geomspace(0.1, 10, 30)}, at={"c": "1/2"}, certify=4, seed=3)
    assert len(r.certified) == 4 and len({i for i, _ in r.certified}) == 4
    assert r.certified_gap is not None and r.certified_gap <= 1e-10
    # the gap is measured, not assumed: each sampled point against an independent closed form too
    for i, gap in r.certified:
        g = float(np.geomspace(0.1, 10, 30)[i])
        assert abs(r.values.flat[i] - mp_closed(g, 0.5)) <= 1e-13 * mp_closed(g, 0.5)
        assert gap <= 1e-10


def test_failing_points_go_to_mpmath_and_are_marked():
    # gamma = 1e-12 at c = 1: the float path fails its checks (its error estimate is of order 1); the
    # certified path (continuation in log gamma) delivers 1/sqrt(gamma) to leading order
    r = model().sweep(MP, grid={"gamma": [1e-12, 1e-3, 1]}, at={"c": 1})
    assert r.fallback.tolist() == [True, False, False]
    ref = mp_closed(np.array([1e-12, 1e-3, 1.0]), 1.0)
    assert np.max(np.abs(r.values - ref) / ref) <= 1e-12


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_continuation_in_gamma_for_the_whole_batch():
    # where the homotopy in s fails, the batch continues in gamma (as the certified path does): tiny gamma
    # (c != 1) and the far side of the gap below the spectrum (c = 2: z = -gamma < (sqrt(2) - 1)^2 = 0.1716)
    g = np.geomspace(1e-14, 1e-9, 6)
    r = model().sweep(MP, grid={"gamma": g, "c": [0.5, 2]})
    assert not r.fallback.any()
    ref = mp_closed(g[:, None], np.array([0.5, 2.0])[None, :])
    assert np.max(np.abs(r.values - ref) / ref) <= 1e-12
    gap = np.linspace(-0.17, -0.01, 9)
    r = model().sweep(MP, grid={"gamma": gap}, at={"c": 2})
    assert not r.fallback.any()
    assert np.max(np.abs(r.values - mp_closed(gap, 2.0)) / mp_closed(gap, 2.0)) <= 1e-13
    assert abs(model().sweep(MP, grid={"gamma": [-0.1]}, at={"c": 2}).values[0] - 1.2984378813) <= 1e-10


def test_forced_fallback_of_every_point(monkeypatch):
    monkeypatch.setattr(trace_batch, "FALLBACK_TOL", -1.0)  # no float value passes: every point to mpmath
    g = [0.5, 1, 2]
    r = model().sweep(MP, grid={"gamma": g}, at={"c": 2})
    assert r.fallback.all()
    assert np.max(np.abs(r.values - mp_closed(np.array(g), 2.0)) / mp_closed(np.array(g), 2.0)) <= 1e-14


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_a_point_no_path_delivers_raises_with_the_point_named():
    # gamma = -1 at c = 1: z = 1 lies inside the spectrum [0, 4]
    with pytest.raises(ArithmeticError, match=r"gamma=-1 \(flat index 0\)"):
        model().sweep(MP, grid={"gamma": [-1, 1]}, at={"c": 1})


def test_non_normal_inverse_is_solved_point_by_point():
    # Ginibre: tau((Z/sqrt(n) + gamma)^{-1}) is 1/gamma outside the unit disk and gamma inside
    r = model([], ["Z=gaussian(n,n)"]).sweep("trace(inv(Z/sqrt(n) + gamma*I(n)))", grid={"gamma": [2, "1/2"]})
    assert r.fallback.all()
    assert np.allclose(r.values, [0.5, 0.5], rtol=1e-14, atol=0)


def test_grid_errors_and_caps(monkeypatch):
    m = model()
    with pytest.raises(ModelError, match="unknown parameter gama"):
        m.sweep(MP, grid={"gama": [1]}, at={"c": 1})
    with pytest.raises(ModelError, match="no value given for c"):
        m.sweep(MP, grid={"gamma": [1]})
    with pytest.raises(ModelError, match="both in grid= and in at="):
        m.sweep(MP, grid={"gamma": [1]}, at={"gamma": 1, "c": 1})
    with pytest.raises(ModelError, match="dimension ratio"):
        m.sweep(MP, grid={"c": [-1, 1]}, at={"gamma": 1})
    with pytest.raises(ParameterError, match="real values"):
        m.sweep(MP, grid={"gamma": [1 + 1j]}, at={"c": 1})
    with pytest.raises(ParameterError, match="certify"):
        m.sweep(MP, grid={"gamma": [1]}, at={"c": 1}, certify=-1)
    from symrmt.parsing import LIMITS

    monkeypatch.setitem(LIMITS, "fast_points", 10)
    with pytest.raises(ParameterError, match=r"LIMITS\['fast_points'\] = 10"):
        m.sweep(MP, grid={"gamma": np.linspace(1, 2, 4), "c": np.linspace(1, 2, 3)})
    monkeypatch.setitem(LIMITS, "points", 1)
    with pytest.raises(ParameterError, match=r"LIMITS\['points'\] = 1 .*non-normal"):
        model([], ["Z=gaussian(n,n)"]).sweep("trace(inv(Z/sqrt(n) + gamma*I(n)))", grid={"gamma": [2, 3]})


def test_result_object():
    r = model().sweep(MP, grid={"gamma": [1, 2, 4], "c": [1, 2]})
    a = r.to_numpy()
    assert a.shape == (3, 2) and a is not r.values
    df = r.to_pandas()
    assert list(df.columns) == ["gamma", "c", "value", "fallback", "error_estimate", "error"]
    assert len(df) == 6
    row = df[(df.gamma == 4) & (df.c == 2)].iloc[0]
    assert abs(row.value - mp_closed(4.0, 2.0)) <= 1e-14 * row.value


def test_marchenko_pastur_400_points_take_the_compiled_path():
    """400 points, none falling back to the slow path (its time is ``symrmt bench``'s, not a test's)."""
    m = model()
    gammas = np.geomspace(1e-2, 1e2, 400)
    r = m.sweep(MP, grid={"gamma": gammas}, at={"c": "1/2"})
    assert not r.fallback.any()
    assert np.allclose(r.values, mp_closed(gammas, 0.5), rtol=1e-13, atol=0)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_cli_trace_sweep(capsys):
    base = ["trace-sweep", MP, "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n"]
    assert main(base + ["--grid", "gamma=1:4:4", "--grid", "c=1/2,2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "gamma,c,value,fallback,error_estimate,error" and len(lines) == 9
    g, c, v, fb, est, err = lines[-1].split(",")
    assert (g, c, fb, err) == ("4", "2", "false", "") and float(est) <= 1e-11
    assert abs(float(v) - mp_closed(4.0, 2.0)) <= 1e-14
    assert main(base + ["--grid", "gamma=1e-2:1e2:5:log", "--at", "c=1", "--json", "--certify", "2"]) == 0
    out = capsys.readouterr()
    d = json.loads(out.out)
    assert d["columns"] == ["gamma", "value", "fallback", "error_estimate", "error"] and len(d["rows"]) == 5
    assert d["certified_gap"] <= 1e-10 and "re-checked" in out.err
    assert main(base + ["--grid", "gama=1,2", "--at", "c=1"]) == 2
    assert "unknown parameter gama" in capsys.readouterr().err
    assert main(base + ["--grid", "gamma=-1,-2", "--at", "c=1"]) == 3  # every point fails
    capsys.readouterr()
    assert main(base + ["--grid", "gamma=1e-12,1", "--at", "c=1", "--json"]) == 0  # a fallback point: null estimate
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0][2:] == [True, None, None] and rows[1][2] is False
    assert main(base + ["--grid", "gamma=1", "--at", "c=1+1j"]) == 2
    assert "real values" in capsys.readouterr().err


def test_chunks_give_the_same_values(monkeypatch):
    from symrmt.engine.routes import sweep as trace_sweep

    g = np.geomspace(0.01, 100, 600)
    whole = model().sweep(MP, grid={"gamma": g}, at={"c": 3})
    monkeypatch.setattr(trace_sweep, "CHUNK_ENTRIES", 1)  # chunks of 256 points
    parts = model().sweep(MP, grid={"gamma": g}, at={"c": 3})
    assert np.array_equal(whole.values, parts.values) and not parts.fallback.any()
    assert np.max(np.abs(parts.values - mp_closed(g, 3.0)) / mp_closed(g, 3.0)) <= 1e-13


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _ridge_form(c, gamma, snr, dps=40):
    """y^T (X^T X/n + gamma)^{-1} y/n for X = mu y^T + Z, written here by Woodbury on the rank-2 update.

    X^T X/n = A + u b^T + b u^T + s u u^T with A = Z^T Z/n, u = y/sqrt(n), b = Z^T mu/sqrt(n),
    s = ||mu||^2; in the limit u^T R u -> m, u^T R b -> 0, b^T R b -> s (1 - gamma mt), with
    R = (A + gamma)^{-1}, mt the Marchenko-Pastur Stieltjes transform of Z Z^T/n at -gamma and
    m = c mt + (1 - c)/gamma its companion.
    """
    import mpmath as mp

    with mp.workdps(dps):
        c, g, s = mp.mpf(c), mp.mpf(gamma), mp.mpf(snr)
        a, b = -c * g, -g - 1 + c  # c z mt^2 + (z - 1 + c) mt + 1 = 0 at z = -gamma
        d = mp.sqrt(b * b - 4 * a)
        mt = [r for r in ((-b + d) / (2 * a), (-b - d) / (2 * a)) if 0 < r < 1 / g][0]
        m = c * mt + (1 - c) / g
        beta = s * (1 - g * mt)
        M = mp.matrix([[m, 1], [1, beta - s]])
        v = mp.matrix([m, 0])
        return m - (v.T * mp.inverse(M) * v)[0]


def test_model_let_takes_text_and_sweep_takes_a_quadratic_form():
    from symrmt.engine import Model

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("mu", "p")
    m.signs("y", "n")
    m.let("X", "mu*y.T + Z")  # text, as the CLI's --let
    e = m.parse("y.T*inv(X.T*X/n + gamma*I(n))*y/n")
    r = m.sweep(e, grid={"gamma": [0.1, 0.4]}, at={"c": "1/2", "mu.mu": 1})
    for g, v in zip(("0.1", "0.4"), r.values):
        assert float(v) == pytest.approx(float(_ridge_form("0.5", g, 1)), rel=1e-10)


def test_trace_sweep_cli_takes_vectors_and_inner_product_axes(capsys):
    argv = ["trace-sweep", "y.T*inv(X.T*X/n + gamma*I(n))*y/n", "--dim", "p=c*n", "--matrix", "Z=gaussian(p,n)",
            "--vector", "mu=vector(p)", "--vector", "y=signs(n)", "--let", "X=mu*y.T + Z",
            "--grid", "mu.mu=0,1", "--at", "c=1/2, gamma=1/10", "--json"]
    code, out, err = _run(capsys, argv)
    assert code == 0, err
    rows = json.loads(out)["rows"]
    for row, s in zip(rows, (0, 1)):
        assert row[1] == pytest.approx(float(_ridge_form("0.5", "0.1", s)), rel=1e-10)


def test_a_vector_declared_but_not_used_keeps_the_batch():
    """A trace without vectors in a model that declares one (as ``trace-sweep --vector`` does) takes the float64
    batch, against the closed form; with an inner product given, every point goes to the certified path, which
    checks the Gram matrix (a negative squared norm is refused)."""
    m = model()
    m.vector("v", "p")
    g = np.geomspace(0.1, 10, 9)
    r = m.sweep(MP, grid={"gamma": g}, at={"c": "1/2"})
    assert not r.fallback.any()
    assert np.max(np.abs(r.values - mp_closed(g, 0.5)) / mp_closed(g, 0.5)) <= 1e-13
    with pytest.raises(ModelError, match="positive semi-definite"):
        m.sweep(MP, grid={"gamma": [1.0]}, at={"c": "1/2", "v.v": -1})
