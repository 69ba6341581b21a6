"""The public API: ``import symrmt`` is cheap, ``symrmt.limit``/``simulate`` return result objects
that carry their inputs, and the results print, convert and compare.

Independent references: the ridge limit at ``mu = 0`` from the Marchenko-Pastur quadratic
(solved here with mpmath), ``relu`` against ``Max(t, 0)`` centered by ``center=True``, and the
gaps of ``compare`` recomputed from the raw trials.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

import symrmt
from symrmt.errors import ParameterError
from symrmt.parsing import ParseLimitError

REPO = Path(__file__).resolve().parents[1]


def _python(code: str) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_import_symrmt_is_cheap():
    heavy = ("sympy", "mpmath", "numpy", "scipy", "pandas", "xarray", "tqdm")
    out = _python(
        "import sys, symrmt\n"
        "symrmt.Geometry(snr=1); symrmt.LowRankGeometry([[1]]); symrmt.ParameterError\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    assert out == "[]"


def test_lazy_names_resolve_and_unknown_names_fail():
    for name in symrmt.__all__:
        assert getattr(symrmt, name) is not None, name
    assert "limit" in dir(symrmt) and "crossings" in dir(symrmt)
    with pytest.raises(AttributeError):
        symrmt.no_such_name  # noqa: B018
    assert issubclass(symrmt.PrecisionError, symrmt.SolverError)
    assert issubclass(symrmt.ParameterError, ValueError)


def _ridge_mu0(c, g, dps):
    """E_RR at mu = 0: gamma^2 (m^2 + m)/(2 gamma m + gamma + c - 1), m > 0 the Marchenko-Pastur root."""
    with mpmath.workdps(dps + 20):
        c = mpmath.mpf(c.numerator) / c.denominator
        g = mpmath.mpf(g.numerator) / g.denominator
        m = (-(g + c - 1) + mpmath.sqrt((g + c - 1) ** 2 + 4 * g)) / (2 * g)
        return g**2 * (m * m + m) / (2 * g * m + g + c - 1)


def test_limit_carries_inputs_and_certified_digits():
    gam = np.array([2.0, 0.1, 0.5])  # unsorted on purpose: the order given is kept
    r = symrmt.limit("tanh", "3/2", gam, digits=30)
    assert isinstance(r, symrmt.LimitResult)
    assert r.c == Fraction(3, 2) and r.digits == 30 and r.f == "tanh" and r.diagonal == "zero"
    assert r.gamma.tolist() == [2.0, 0.1, 0.5]
    for g, v in zip(r.gamma_exact, r.ridge_mp):
        ref = _ridge_mu0(Fraction(3, 2), g, 30)
        assert abs(v - ref) <= abs(ref) * mpmath.mpf(10) ** -29
    text = str(r)
    # the table shows the certified digits, not 15
    for v in r.attention_mp:
        assert mpmath.nstr(v, 30) in text
    assert any(len(mpmath.nstr(v, 30).split(".")[1]) >= 28 for v in r.attention_mp)
    assert r.to_numpy().shape == (3, 3)
    df = r.to_pandas()
    assert list(df.columns) == ["gamma", "attention", "ridge"] and df.attrs["c"] == "3/2"
    assert "<table>" in r._repr_html_() and r._repr_latex_().startswith("$$\\begin{array}")
    assert "\\begin{tabular}" in r.latex()


def test_limit_f_forms_and_center():
    import sympy as sp

    t = sp.Symbol("t")
    base = symrmt.limit("relu", 2, [0.3], digits=20)
    for f in ("Max(t, 0)", sp.Max(t, 0)):
        r = symrmt.limit(f, 2, [0.3], digits=20, center=True)
        assert r.center
        assert abs(r.attention_mp[0] - base.attention_mp[0]) <= mpmath.mpf(10) ** -19
    with pytest.raises(ParameterError, match="not centered"):
        symrmt.limit("Max(t, 0)", 2, [0.3])
    nl = symrmt.Nonlinearity("tanh")
    assert symrmt.limit(nl, 1, 1.0, digits=12).attention_mp == symrmt.limit("tanh", 1, [1], digits=12).attention_mp
    with pytest.raises(ParameterError, match="symbolic form"):
        symrmt.limit(np.tanh, 1, [1])


def test_limit_bad_input_is_named():
    with pytest.raises(ParameterError, match="gamma"):
        symrmt.limit("tanh", 1, [-1])
    with pytest.raises(ParameterError, match="digits"):
        symrmt.limit("tanh", 1, [1], digits=0)
    with pytest.raises(ParameterError, match="geometry"):  # a dict of entries is a geometry; a list is not
        symrmt.limit("tanh", 1, [1], geometry=[1, 0, 0])


def test_simulate_accepts_names_and_callables_and_compares():
    geo = symrmt.Geometry(snr=1)
    s1 = symrmt.simulate("tanh", 0.5, [0.1, 1.0], geo, n=96, trials=3, seed=4)
    s2 = symrmt.simulate(np.tanh, 0.5, [0.1, 1.0], geo, n=96, trials=3, seed=4)
    assert s1.p == 48 and s1.n == 96 and s1.trials == 3
    np.testing.assert_allclose(s1.attention_trials, s2.attention_trials, rtol=1e-12)
    th = symrmt.limit("tanh", 0.5, [0.1, 1.0], geo)
    cmp = s1.compare(th)
    mean = s1.attention_trials.mean(axis=0)
    se = s1.attention_trials.std(axis=0, ddof=1) / np.sqrt(3)
    np.testing.assert_allclose(cmp.attention_gap, (mean - th.attention) / se, rtol=1e-12)
    assert cmp.max_gap == pytest.approx(max(np.abs(cmp.attention_gap).max(), np.abs(cmp.ridge_gap).max()))
    assert "gap/se" in str(cmp) and cmp.to_pandas().shape == (2, 9)
    assert "±" in str(s1) and s1.to_numpy().shape == (2, 5) and "tabular" in s1.latex()
    with pytest.raises(ParameterError, match="different models"):
        s1.compare(symrmt.limit("tanh", 2, [0.1, 1.0], geo))
    with pytest.raises(ParameterError, match="center"):
        symrmt.simulate(np.tanh, 0.5, [1], n=16, trials=2, center=True)


def test_check_report_str_is_text():
    rep = symrmt.check("E_RR", "0", kind="value", where="snr=0", points=2, region=False)
    assert str(rep) == rep.text()


def test_rank2_example_file_runs_the_guides_command(capsys):
    """docs/examples/rank2.json is the guide's rank-2 geometry; the guide's command runs on it."""
    from symrmt.cli.app import main
    from symrmt.models.attention.geometry import LowRankGeometry
    from symrmt.models.attention.theory import attention_limit

    path = REPO / "docs" / "examples" / "rank2.json"
    guide = (REPO / "docs" / "guide.md").read_text()
    assert "--geometry docs/examples/rank2.json" in guide
    F = Fraction
    geo = LowRankGeometry.from_vectors(mu=[1, 0, 0, 0, 0], wk=[[F(1, 2), 0], [0, 1], [0, 0], [0, 0], [0, 0]],
                                       wq=[[1, 0], [0, 0], [0, 1], [0, 0], [0, 0]], alpha=2)
    loaded = json.loads(path.read_text())
    assert LowRankGeometry(loaded["gram"], loaded["alpha"]) == geo
    assert json.loads(geo.to_json()) == loaded
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        rc = main(["limit", "--f", "tanh", "--c", "1/2", "--gamma", "0.1,1", "--geometry", "docs/examples/rank2.json",
                   "--alpha", "2", "--json"])
    finally:
        os.chdir(cwd)
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    ref = attention_limit("tanh", "1/2", [0.1, 1], geo, digits=15)
    assert out["attention"] == pytest.approx([float(v) for v in ref], rel=1e-14)


def test_progress_bar_picks_tqdm_on_a_terminal_and_the_plain_bar_elsewhere(monkeypatch):
    import io

    from symrmt import progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", Tty())
    bar = progress.progress_bar(3, "x", enabled=False)
    assert isinstance(bar, progress.Progress)  # never shown: the silent plain bar
    bar = progress.progress_bar(3, "x", enabled=True)
    assert type(bar).__module__.startswith("tqdm")
    bar.close()
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # tqdm missing
    assert isinstance(progress.progress_bar(3, "x", enabled=True), progress.Progress)
    monkeypatch.delitem(sys.modules, "tqdm.auto")
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a log file: the plain bar, one line per redraw
    bar = progress.progress_bar(2, "log", enabled=True)
    assert isinstance(bar, progress.Progress)
    bar.update(2)
    bar.close()
    assert sys.stderr.getvalue().count("log: 2/2") == 1


def test_progress_bar_in_a_headless_kernel_draws_nothing(monkeypatch):
    """nbconvert --execute runs each cell with allow_stdin=False: no bar there (auto), a plain one on request;
    an interactive kernel without ipywidgets gets the plain bar, never tqdm's 'IProgress not found' warning."""
    import io
    import types

    from symrmt import progress

    # internal seams: a fake Jupyter kernel (IPython's own attribute _allow_stdin) and no ipywidgets
    kernel = types.SimpleNamespace(_allow_stdin=False)
    monkeypatch.setattr(progress, "_kernel", lambda: kernel)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    bar = progress.progress_bar(3, "x")
    assert isinstance(bar, progress.Progress) and bar.enabled is False
    bar.update(3)
    bar.close()
    assert sys.stderr.getvalue() == ""
    assert isinstance(progress.progress_bar(3, "x", enabled=True), progress.Progress)
    kernel._allow_stdin = True
    monkeypatch.setattr(progress, "_widgets", lambda: False)
    assert isinstance(progress.progress_bar(3, "x", enabled=True), progress.Progress)


def test_public_api_reads_numpy_digits_and_refuses_huge_trials():
    import symrmt

    r = symrmt.limit("tanh", c=np.float32(0.5), gamma=np.float64(1), center=True, digits=np.int64(10))
    assert r.digits == 10
    with pytest.raises(ParseLimitError, match="LIMITS\\['digits'\\]"):
        symrmt.limit("tanh", c=0.5, gamma=1, center=True, digits=10**6)
    with pytest.raises(ParameterError, match="GiB.*lower trials"):
        symrmt.simulate(np.tanh, n=8, c=0.5, gamma=[1.0], trials=10**12)
    with pytest.raises(ParseLimitError, match="digits"):
        symrmt.limit("tanh", c=10**100000, gamma=1, center=True)
