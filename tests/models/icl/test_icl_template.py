"""The ICL model on the package's template: its Monte-Carlo through the executor (seeded per trial, the same
numbers in this process and on 2 Dask workers, a trial store reused), a trial module that loads no SymPy, and
its results as tables (text, HTML, LaTeX, pandas)."""

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

from symrmt.cli.app import main
from symrmt.errors import ParameterError
from symrmt.models.icl import icl, icl_limit, icl_simulate
from symrmt.models.icl.results import ICLLimit, ICLSimulation
from symrmt.models.icl.simulation import test_error as icl_test_error
from symrmt.models.icl.trials import ICL_SPEC
from symrmt.simulation.executor import run_trials

pytestmark = pytest.mark.montecarlo

REPO = Path(__file__).resolve().parents[3]
KW = dict(alpha=1, kappa="1/2", tau="1/2", rho="1/10", d=6)


# -- the trials ------------------------------------------------------------------------------------
def test_trial_module_loads_no_sympy_or_mpmath():
    code = ("import sys, symrmt.models.icl.trials\n"
            "bad = [m for m in ('sympy', 'mpmath') if m in sys.modules]\n"
            "assert not bad, bad\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_two_workers_give_the_numbers_of_this_process(two_workers):
    for tau in ("1/2", "3/2"):  # both fits: the min-norm interpolator and least squares
        kw = dict(KW, tau=tau, trials=4, seed=5)
        a = icl_simulate(**kw)
        b = icl_simulate(**kw, workers=2)
        assert a.errors == b.errors and (a.mean, a.se) == (b.mean, b.se)
    assert two_workers == [2, 2]


def test_a_trial_depends_on_seed_and_index_only():
    key = {"alpha": "1", "kappa": "1/2", "tau": "1/2", "rho": "1/10", "d": 6, "ell": 6, "k": 3, "n": 18}
    three, _ = run_trials(ICL_SPEC, key, 3, seed=9)
    two, _ = run_trials(ICL_SPEC, key, 2, seed=9)
    other, _ = run_trials(ICL_SPEC, key, 2, seed=10)
    assert np.array_equal(three[:2], two)
    assert not np.array_equal(two, other)
    assert len({tuple(r) for r in three}) == 3


def test_the_store_keeps_and_reuses_trials(tmp_path):
    store = tmp_path / "icl.sqlite"
    a = icl_simulate(**KW, trials=3, seed=2, store=store)
    b = icl_simulate(**KW, trials=4, seed=2, store=store)
    assert (a.trials_computed, a.trials_reused) == (3, 0)
    assert (b.trials_computed, b.trials_reused) == (1, 3)
    assert b.errors[:3] == a.errors
    assert icl_simulate(**KW, trials=4, seed=2).errors == b.errors  # the stored rows are the computed ones


def test_exact_test_error_of_a_scaled_identity():
    # Gamma = [c I, 0]: e = 1 + rho - 2c + c^2 b1, b1 = 1 + (d(1 + rho) + 1)/ell (docs/icl.md, section 3)
    d, ell, rho, c = 5, 7, 0.25, 0.6
    gamma = np.hstack([c * np.eye(d), np.zeros((d, 1))])
    b1 = 1 + (d * (1 + rho) + 1) / ell
    assert icl_test_error(gamma, ell, Fraction(rho)) == pytest.approx(1 + rho - 2 * c + c * c * b1, rel=1e-14)


def test_executor_keywords_need_simulate():
    with pytest.raises(ParameterError, match="simulate=True"):
        icl(1, 1, 2, 0, workers=2)
    with pytest.raises(ParameterError, match="workers"):
        icl_simulate(**KW, trials=2, workers=0)


def test_cli_workers_and_store(capsys, tmp_path, two_workers):
    argv = ["icl", "--alpha", "1", "--kappa", "1/2", "--tau", "3/2", "--rho", "0.1", "--simulate", "--d", "6",
            "--trials", "3", "--seed", "4", "--json"]
    assert main(argv) == 0
    one = json.loads(capsys.readouterr().out)
    assert main([*argv, "--workers", "2"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert one == two  # the same record, numbers included
    store = str(tmp_path / "cli.sqlite")
    assert main([*argv, "--store", store]) == 0 and main([*argv, "--store", store]) == 0
    first, again = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert first == again == one


@pytest.mark.parametrize("flags", [["--workers", "2"], ["--store", "x.sqlite"],
                                   ["--scheduler", "tcp://127.0.0.1:8786"]])
def test_cli_simulation_flags_need_simulate(flags, capsys):
    assert main(["icl", "--alpha", "1", "--kappa", "1", "--tau", "2", "--rho", "0", *flags, "--json"]) == 2
    rec = json.loads(capsys.readouterr().out)
    assert "--simulate" in rec["error"] and flags[0] in rec["error"]


# -- the results as tables -------------------------------------------------------------------------
def test_limit_table_forms():
    r = icl_limit(1, "1/2", 2, "1/10", digits=12)
    value = "1.47104594562"  # Result 1 at this point (test_icl.py checks it against the paper's formula)
    assert str(r) == value and isinstance(r, ICLLimit)
    text = r.table()
    assert text.splitlines()[0] == "ICL error, ridgeless limit d -> oo (12 digits)"
    assert text.split()[-4:] == ["above", value, mpmath.nstr(r.m, 12), "-"]
    html = r._repr_html_()
    assert html.startswith("<table><caption>ICL error") and f"<td>{value}</td>" in html
    tex = r.latex()
    assert "\\begin{tabular}{rl}" in tex and "$e_{\\text{ICL}}$ & 1.47104 59456 2 \\\\" in tex  # a row, digits by five
    assert r._repr_latex_().startswith("$$\\begin{array}")
    df = r.to_pandas()
    assert list(df.columns) == ["alpha", "kappa", "tau", "rho", "branch", "error", "m", "mu"] and len(df) == 1
    assert df.loc[0, "error"] == float(r.error) and df.loc[0, "kappa"] == 0.5 and np.isnan(df.loc[0, "mu"])
    assert df.attrs == r.to_dict()
    below = icl_limit(1, "1/2", "1/2", "1/10", digits=12).to_pandas()
    assert below.loc[0, "branch"] == "below" and below.loc[0, "mu"] > 0


def test_limit_latex_of_many_digits_wraps():
    r = icl_limit(1, "1/2", "1/2", "1/10", digits=60)
    tex = r.latex()
    rows = [line.removesuffix("\\\\").split("&") for line in tex.splitlines() if line.endswith("\\\\")][1:]
    names = [c[0].strip() for c in rows]
    at = names.index("$e_{\\text{ICL}}$")
    assert names[at + 1] == ""  # 60 digits: two lines of at most 40
    assert (rows[at][1] + rows[at + 1][1]).replace(" ", "") == str(r)


def test_simulation_table_forms():
    s = icl_simulate(**KW, trials=3, seed=1)
    assert isinstance(s, ICLSimulation)
    text = str(s)
    assert text.splitlines()[0] == "ICL error simulated: alpha = 1, kappa = 0.5, tau = 0.5, rho = 0.1; seed 1"
    assert text.split()[-8:] == ["6", "6", "3", "18", "42", "3", f"{s.mean:.6f}", f"{s.se:.1e}"]
    html = s._repr_html_()
    assert html.startswith("<table><caption>ICL error simulated") and f"<td>{s.mean:.6f}</td>" in html
    assert f"& {s.mean:.6f} &" in s.latex() and s._repr_latex_().startswith("$$\\begin{array}")
    df = s.to_pandas()
    assert df.to_dict("records") == [{"d": 6, "ell": 6, "k": 3, "n": 18, "features": 42, "trials": 3,
                                      "error": s.mean, "se": s.se}]
    assert df.attrs == s.to_dict() and df.attrs["errors"] == list(s.errors)
    assert s.mean == pytest.approx(np.mean(s.errors), rel=1e-15)
    assert s.se == pytest.approx(np.std(s.errors, ddof=1) / np.sqrt(3), rel=1e-12)
