"""Tests of the command-line interface (symrmt.cli.app), called in-process through ``main(argv)``.

References are computed here independently of the library: the erf coefficient
from its closed form, the tanh coefficient by mpmath quadrature of Stein's form
``a_1 = E[tanh'(xi)]``, and the ridge limit at ``||mu|| = 0`` from the
Marchenko-Pastur quadratic.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import mpmath
import pytest

from symrmt.cli import app as cli
from symrmt.cli.app import main

REPO = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, *argv):
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 0, err
    return json.loads(out)


def agree(text, ref, digits):
    """``text`` (a decimal string) equals ``ref`` to ``digits`` significant digits."""
    with mpmath.workdps(digits + 20):
        x = mpmath.mpf(text)
        return abs(x - ref) <= abs(ref) * mpmath.mpf(10) ** (-digits)


def significant_digits(text: str) -> int:
    mant = re.split("[eE]", text.lstrip("+-"))[0].replace(".", "").lstrip("0")
    return len(mant)


# ---------------------------------------------------------------------------
# top level
# ---------------------------------------------------------------------------
def test_no_verb_prints_help_and_exits_2(capsys):
    rc, out, err = run(capsys)
    assert rc == 2
    assert "usage: symrmt" in err and "hermite" in err and "limit" in err and "simulate" in err


def test_version(capsys):
    rc, out, err = run(capsys, "--version")
    assert rc == 0
    assert out.strip().startswith("symrmt ")


def test_python_dash_m_help():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "symrmt", "--help"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "usage: symrmt" in proc.stdout
    for verb in ("hermite", "limit", "simulate", "demo"):
        assert verb in proc.stdout


# ---------------------------------------------------------------------------
# hermite
# ---------------------------------------------------------------------------
def test_hermite_erf_exact_30_digits(capsys):
    rep = run_json(capsys, "hermite", "--f", "erf", "--digits", "30")
    assert set(rep) == {"a", "a1", "nu", "d", "exact"}
    assert rep["exact"] is True
    assert len(rep["a"]) == 4  # default k = 3
    with mpmath.workdps(50):
        ref = 2 / mpmath.sqrt(3 * mpmath.pi)
        nu = 2 / mpmath.pi * mpmath.asin(mpmath.mpf(2) / 3)
    assert isinstance(rep["a1"], str)
    assert agree(rep["a1"], ref, 25)
    assert agree(rep["a"][1], ref, 25)
    assert agree(rep["nu"], nu, 25)


def test_hermite_tanh_30_digits_vs_quadrature(capsys):
    rep = run_json(capsys, "hermite", "--f", "tanh", "--digits", "30", "--k", "1")
    assert rep["exact"] is False
    with mpmath.workdps(50):
        # Stein: a_1 = E[tanh'(xi)] = 2 * int_0^oo sech(x)^2 phi(x) dx
        phi = lambda x: mpmath.exp(-x * x / 2) / mpmath.sqrt(2 * mpmath.pi)  # noqa: E731
        ref = 2 * mpmath.quad(lambda x: mpmath.sech(x) ** 2 * phi(x), [0, 1, 2, 4, 8, mpmath.inf])
        nu_ref = 1 - ref  # Stein's lemma again: nu = E[tanh^2] = 1 - E[sech^2] = 1 - a_1
    assert agree(rep["a1"], ref, 30)
    assert agree(rep["nu"], nu_ref, 28)


def test_hermite_floats_at_15_digits(capsys):
    rep = run_json(capsys, "hermite", "--f", "relu", "--k", "2")
    assert rep["a1"] == 0.5 and rep["d"] == 1.0 and rep["exact"] is True
    assert all(isinstance(x, float) for x in rep["a"])


def test_hermite_readable(capsys):
    rc, out, err = run(capsys, "hermite", "--f", "sin", "--k", "1")
    assert rc == 0
    assert "a_1 = 0.60653065971263" in out  # exp(-1/2)


def test_non_centered_f_exit_2_mentions_center(capsys):
    rc, out, err = run(capsys, "hermite", "--f", "Max(t, 0)")
    assert rc == 2
    assert out == ""
    assert "--center" in err and "centered" in err
    rep = run_json(capsys, "hermite", "--f", "Max(t, 0)", "--center", "--k", "1")
    assert rep["a"][0] == 0.0 and rep["a1"] == 0.5


def test_unknown_parameter_in_f(capsys):
    rc, out, err = run(capsys, "hermite", "--f", "tanh(a*t)")
    assert rc == 2
    assert "'a'" in err


def test_solver_failure_exit_3(capsys, monkeypatch):
    import symrmt.hermite as hermite

    def boom(*args, **kwargs):
        raise hermite.QuadratureError("quadrature did not converge (test)")

    monkeypatch.setattr(hermite, "hermite_report", boom)
    rc, out, err = run(capsys, "hermite", "--f", "tanh")
    assert rc == 3
    assert "quadrature did not converge" in err


def test_bad_digits_and_k(capsys):
    assert run(capsys, "hermite", "--f", "tanh", "--digits", "0")[0] == 2
    assert run(capsys, "hermite", "--f", "tanh", "--k", "x")[0] == 2


# ---------------------------------------------------------------------------
# simulate
# ---------------------------------------------------------------------------
SIM = ("simulate", "--f", "tanh", "--n", "64", "--c", "0.5", "--gamma", "0.1,1", "--trials", "2", "--snr", "1")


def test_simulate_json_structure_and_reproducible(capsys):
    a = run_json(capsys, *SIM)
    b = run_json(capsys, *SIM)
    assert a == b
    for key in ("attention", "ridge"):
        assert set(a[key]) == {"mean", "se"}
        assert len(a[key]["mean"]) == len(a[key]["se"]) == 2
        assert all(0 <= m <= 1 for m in a[key]["mean"])
        assert all(s >= 0 for s in a[key]["se"])
    assert a["params"]["n"] == 64 and a["params"]["p"] == 32
    assert a["params"]["gamma"] == ["0.1", "1"]
    c = run_json(capsys, *SIM[:-1], "2")  # another snr: another result
    assert c["ridge"] != a["ridge"]


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_simulate_workers_agree_with_serial(capsys, two_workers):
    a = run_json(capsys, *SIM)
    b = run_json(capsys, *SIM, "--workers", "2")
    assert a["attention"] == b["attention"] and a["ridge"] == b["ridge"]


def test_simulate_readable(capsys):
    rc, out, err = run(capsys, *SIM)
    assert rc == 0
    assert "E_A (mean ± se)" in out and "p = 32" in out


@pytest.mark.parametrize("gamma", ["0.1,,x", "0.1,x", "", "0.1,-1", "0"])
def test_bad_gamma_list(capsys, gamma):
    rc, out, err = run(capsys, "simulate", "--f", "tanh", "--n", "64", "--c", "0.5", "--gamma", gamma)
    assert rc == 2
    assert "--gamma" in err
    assert "Traceback" not in err


def test_non_psd_geometry(capsys):
    rc, out, err = run(capsys, *SIM, "--muwk", "2", "--wk2", "1")
    assert rc == 2
    assert "positive semi-definite" in err


@pytest.mark.parametrize("flag,value", [("--c", "-1"), ("--snr", "-1"), ("--c", "abc"), ("--wk2", "1/0")])
def test_bad_numbers(capsys, flag, value):
    argv = ["simulate", "--f", "tanh", "--n", "64", "--c", "0.5", "--gamma", "1", flag, value]
    rc, out, err = run(capsys, *argv)
    assert rc == 2
    assert "Traceback" not in err


# ---------------------------------------------------------------------------
# limit (needs symrmt.models.attention.theory)
# ---------------------------------------------------------------------------
def ridge_noise_only(c, g, dps):
    """E_RR at ||mu|| = 0: m > 0 solves g m^2 + (g + c - 1) m - 1 = 0, E = g^2 (m^2 + m)/(2 g m + g + c - 1)."""
    with mpmath.workdps(dps):
        c, g = mpmath.mpf(c), mpmath.mpf(g)
        b = g + c - 1
        m = (-b + mpmath.sqrt(b * b + 4 * g)) / (2 * g)
        return g**2 * (m * m + m) / (2 * g * m + b)


def test_ridge_closed_form_reference_is_sane():
    # the reference itself: E_RR increases in gamma, lies in [0, 1], and tends to 1 as gamma -> oo
    vals = [ridge_noise_only("0.5", g, 30) for g in ("0.01", "0.1", "1", "10", "1e6")]
    assert all(0 <= v <= 1 for v in vals)
    assert vals == sorted(vals)
    assert abs(vals[-1] - 1) < 1e-5
    # c < 1, gamma -> 0: the ridgeless limit 1 - c
    assert abs(ridge_noise_only("0.5", "1e-12", 30) - mpmath.mpf("0.5")) < 1e-9


def test_limit_json_structure(capsys):
    pytest.importorskip("symrmt.models.attention.theory")
    rep = run_json(capsys, "limit", "--f", "tanh", "--c", "0.5", "--gamma", "0.1,1", "--snr", "1")
    assert rep["gamma"] == ["0.1", "1"]
    assert len(rep["ridge"]) == 2 and all(isinstance(x, float) for x in rep["ridge"])
    assert len(rep["attention"]) == 2 and all(isinstance(x, float) for x in rep["attention"])
    assert all(0 <= x <= 1 for x in rep["ridge"] + rep["attention"])
    assert rep["params"]["c"] == "0.5"
    assert rep["params"]["geometry"]["snr"] == "1"
    assert rep["params"]["diagonal"] == "zero"


def test_limit_ridge_snr0_closed_form_25_digits(capsys):
    pytest.importorskip("symrmt.models.attention.theory")
    gammas = ["0.05", "1", "3"]
    for c in ("0.5", "2"):
        rep = run_json(capsys, "limit", "--f", "tanh", "--c", c, "--gamma", ",".join(gammas), "--digits", "30")
        for g, text in zip(gammas, rep["ridge"]):
            assert isinstance(text, str)
            assert significant_digits(text) <= 30
            assert significant_digits(text) >= 27  # nstr drops trailing zeros only
            assert agree(text, ridge_noise_only(c, g, 60), 25), (c, g, text)
        for text in rep.get("attention", []):
            assert isinstance(text, str) and 27 <= significant_digits(text) <= 30


def test_limit_readable(capsys):
    pytest.importorskip("symrmt.models.attention.theory")
    rc, out, err = run(capsys, "limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--digits", "20")
    assert rc == 0, err
    assert "E_RR (ridge)" in out
    ref = ridge_noise_only("0.5", "1", 40)
    assert mpmath.nstr(ref, 20) in out


def test_limit_bad_input(capsys):
    rc, out, err = run(capsys, "limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--snr", "1", "--muwk", "5",
                       "--wk2", "1")
    assert rc == 2
    assert "positive semi-definite" in err
    rc, out, err = run(capsys, "limit", "--f", "tanh", "--c", "0.5", "--gamma", "1,,2")
    assert rc == 2 and "--gamma" in err


# ---------------------------------------------------------------------------
# demo (shrunk)
# ---------------------------------------------------------------------------
def test_demo_small(capsys, monkeypatch):
    monkeypatch.setitem(cli.DEMO, "n", 64)
    monkeypatch.setitem(cli.DEMO, "trials", 2)
    rc, out, err = run(capsys, "demo")
    have_theory = importlib.util.find_spec("symrmt.models.attention.theory") is not None
    assert rc == (0 if have_theory else 3), err
    assert "simulation (mean ± se)" in out and "|gap|/se" in out
    assert out.count("E_A") >= 3 and out.count("E_RR") >= 3
