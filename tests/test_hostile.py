"""Hostile and careless input: every reproducer of the hardening issue, plus generic probes.

Each test checks the outcome (a one-line ParameterError naming the limit, or a correct value); a former hang
that came back would run into the per-test time limit.  No test asserts a time: timings belong in
``symrmt bench``.
"""

import json
import math
import os
import random
import stat
import string
import sys
import time
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from symrmt.cli import app as cli
from symrmt.codegen import codecache
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.parsing.psd import project_psd
from symrmt.errors import ParameterError
from symrmt.models.attention.params import to_fraction
from symrmt.parsing import LIMITS, ParseLimitError, parse_expression, parse_number, run_limited
from symrmt.hermite import parse_f


def _cli(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _has_latex():
    try:
        import antlr4  # noqa: F401
        from sympy.parsing.latex import parse_latex

        parse_latex("c")
    except Exception:  # noqa: BLE001
        return False
    return True


# ---------------------------------------------------------------- code execution
@pytest.mark.skipif(not _has_latex(), reason="needs antlr4-python3-runtime 4.11")
@pytest.mark.parametrize("tex, name", [
    (r"\frac{1-c}{1+s} + \print(c)", "print"),
    (r"\exec(\chr(99))", "exec"),
    (r"\input(c)", "input"),
    (r"\exit(c)", "exit"),
    (r"f(c)", "f"),
    (r"\sum_{k=1}^{10^9} k", "Sum"),
    (r"\int_0^1 c dc", "Integral"),
])
def test_latex_functions_are_whitelisted(tex, name, capsys):
    from symrmt.check import parse_candidate

    with pytest.raises(ParameterError, match=f"unknown function '{name}'"):
        parse_candidate("E_RR0", tex, syntax="latex")
    assert capsys.readouterr().out == ""  # nothing was printed by the candidate


@pytest.mark.skipif(not _has_latex(), reason="needs antlr4-python3-runtime 4.11")
def test_latex_tower_refused():
    from symrmt.check import parse_candidate

    with pytest.raises(ParseLimitError, match="exponent tower.*limit 1000"):
        parse_candidate("E_RR0", r"10^{10^{10}}", syntax="latex")


def test_compile_step_has_no_builtins():
    from symrmt.codegen.compile import compile_expr

    c = sp.Symbol("c")
    with pytest.raises(ValueError, match="undefined functions"):
        compile_expr([c], sp.Function("print")(c))
    fn = compile_expr([c], sp.Max(c, 1) + sp.Abs(c))
    assert fn.__globals__["__builtins__"] == {}
    assert fn(-3) == 4


def _plant(tmp_path, monkeypatch, mode_dir=0o700, mode_file=0o600):
    d = tmp_path / "cache"
    d.mkdir()
    monkeypatch.setenv("SYMRMT_CACHE_DIR", str(d))
    monkeypatch.delenv("SYMRMT_NO_CACHE", raising=False)
    key = codecache.source_key("planted")
    body = "E_RR = 0.123\n"
    assert codecache.store("planted", key, body)
    path = next(d.glob("planted-*.py"))
    os.chmod(path, mode_file)
    os.chmod(d, mode_dir)
    return key, body, path


def test_cache_loads_own_private_file(tmp_path, monkeypatch):
    key, body, _ = _plant(tmp_path, monkeypatch)
    assert codecache.load("planted", key) == body


@pytest.mark.parametrize("mode_dir, mode_file", [(0o777, 0o600), (0o700, 0o666), (0o770, 0o600)])
def test_cache_refuses_writable_by_others(tmp_path, monkeypatch, capsys, mode_dir, mode_file):
    key, _, _ = _plant(tmp_path, monkeypatch, mode_dir, mode_file)
    codecache._WARNED.clear()
    assert codecache.load("planted", key) is None
    assert codecache.load("planted", key) is None
    err = capsys.readouterr().err
    assert err.count("not loading the code cache") == 1 and "writable by group or others" in err


def test_cache_refuses_other_owner(tmp_path, monkeypatch, capsys):
    key, _, _ = _plant(tmp_path, monkeypatch)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    codecache._WARNED.clear()
    assert codecache.load("planted", key) is None
    assert "owned by uid" in capsys.readouterr().err


def test_cache_folder_created_private(tmp_path, monkeypatch):
    d = tmp_path / "new" / "cache"
    monkeypatch.setenv("SYMRMT_CACHE_DIR", str(d))
    monkeypatch.delenv("SYMRMT_NO_CACHE", raising=False)
    old = os.umask(0)
    try:
        assert codecache.store("x", codecache.source_key("x"), "pass\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700


# ---------------------------------------------------------------- wrong numbers
def test_ridge_large_gamma_property():
    from symrmt.models.attention.theory import ridge_limit

    gammas = ["1e-12", "1e-6", "1e-2", "1", "1e2", "1e10", "1e20", "1e50", "1e100"]
    vals = ridge_limit("1/2", gammas, snr=1, digits=20)
    assert all(0 <= v <= 1 for v in vals)
    assert all(a <= b for a, b in zip(vals, vals[1:])), vals
    # E_RR -> 1 as gamma -> oo: 1 - E_RR is O(1/gamma)
    assert 1 - vals[-1] < 1e-90 and 1 - vals[-3] < 1e-15
    # E_RR(0+) = (1-c)/(1+snr) = 1/4 for c = 1/2, snr = 1
    assert abs(vals[0] - Fraction(1, 4)) < 1e-10


def test_attention_gamma_outside_range_names_gamma():
    from symrmt.errors import PrecisionError
    from symrmt.models.attention.theory import attention_limit

    for g in ("1e-300", "1e25"):
        with pytest.raises(PrecisionError, match="gamma="):
            attention_limit("tanh", "1/2", [g], Geometry(snr=1), digits=15)


def test_hermite_beyond_double_range(capsys):
    code, out, _ = _cli(["hermite", "--f", "exp(50*t)", "--center", "--json"], capsys)
    assert code == 0
    rep = json.loads(out)  # strict JSON: no Infinity
    import mpmath

    # a_1 = E[xi exp(50 xi)] = 50 exp(1250) (Gaussian integration by parts), independent of centering
    with mpmath.workdps(30):
        expected = 50 * mpmath.exp(1250)
        assert abs(mpmath.mpf(rep["a1"]) / expected - 1) < 1e-13
        # nu = E[f^2] - a_0^2 with f centered: exp(5000) - exp(2500)
        assert abs(mpmath.mpf(rep["nu"]) / (mpmath.exp(5000) - mpmath.exp(2500)) - 1) < 1e-13
    assert "inf" not in out.lower()


def test_json_writer_is_strict(capsys):
    with pytest.raises(ArithmeticError, match="not finite"):
        cli._dump({"x": float("inf")})


# ---------------------------------------------------------------- hangs
@pytest.mark.parametrize("text", ["t**10**10", "10**10**10", "2**2**2**2**2", "(10**999*10**999)**999"])
def test_towers_refused_fast(text):
    with pytest.raises(ParseLimitError, match="limit"):
        parse_f(text)


@pytest.mark.parametrize("text", ["1e999999999", "1e-999999999", "9" * 2000])
def test_huge_literals_refused_fast(text):
    with pytest.raises(ParseLimitError, match="limit"):
        to_fraction(text, "c")


def test_where_huge_literal():
    from symrmt.check import parse_where

    with pytest.raises(ParseLimitError, match="limit 1000"):
        parse_where("c<1e999999999")


@pytest.mark.parametrize("argv, limit", [
    (["limit", "--f", "tanh", "--c", "1e999999999", "--gamma", "1"], "literal"),
    (["hermite", "--f", "tanh", "--digits", "100000"], "limit 1000"),
    (["hermite", "--f", "tanh", "--digits", "5000"], "limit 1000"),
    (["limit", "--f", "tanh", "--c", "1/2", "--gamma", ",".join(["1"] * 10000)], "limit 1000"),
    (["check", "E_RR0", "(1-c)/(1+snr)", "--timeout", "inf", "--points", "1"], "finite"),
])
def test_cli_refusals(argv, limit, capsys):
    code, _, err = _cli(argv, capsys)
    assert code == 2
    assert limit in err and "Traceback" not in err


def test_rank_cap():
    n = 2 * 20 + 1
    with pytest.raises(ParseLimitError, match="rank"):
        LowRankGeometry([[int(i == j) for j in range(n)] for i in range(n)])


def test_time_limit_helper():
    with pytest.raises(Exception, match="time limit of 0.2 s"):
        run_limited(time.sleep, (5,), 0.2, what="nap")
    with pytest.raises(ParameterError, match="finite"):
        run_limited(time.sleep, (0,), float("inf"))


def test_time_limit_kills_an_isolated_child():
    """``isolate=True`` in a process with one thread forks a child and kills it on time.

    Run in a fresh interpreter: inside the test session other threads are alive (the per-test
    timeout's timer, the shared Dask cluster), so there the call takes the ``SIGALRM`` route."""
    import subprocess

    code = ("import time\nfrom symrmt.parsing import run_limited, TimeLimitExceeded\n"
            "try:\n    run_limited(time.sleep, (30,), 0.5, what='nap', isolate=True)\n"
            "except TimeLimitExceeded as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "nap exceeded its time limit of 0.5 s (killed)"  # (a 30 s nap would print nothing)


# ---------------------------------------------------------------- tracebacks and silent changes
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


@pytest.mark.parametrize("verb", [["latex", sorted(cli.LATEX_RESULTS)[0], "--out"], ["bench", "--quick", "--out"]])
def test_unwritable_out_checked_first(verb, capsys, tmp_path):
    code, _, err = _cli(verb + [str(tmp_path / "missing" / "x.tex")], capsys)
    assert code == 2 and "does not exist" in err


def test_figures_out_not_a_folder(capsys, tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    code, _, err = _cli(["figures", "--out", str(f / "sub")], capsys)
    assert code == 2 and "not a writable folder" in err


# ---------------------------------------------------------------- geometries typed as decimals
def test_aligned_decimal_geometry_is_projected():
    r2 = 1.4142135623730951
    g = Geometry(snr=2, wk2=1, wq2=1, wkwq=1, muwk=r2, muwq=r2)
    assert g.rank() == 1 and 0 < g.projection < 1e-15
    assert g.muwk == Fraction(repr(r2))  # the pivot row is kept as typed (floats are read as their decimal)


def test_psd_violation_too_large_is_refused_with_size():
    with pytest.raises(ParameterError, match=r"violation is 1e-06"):
        Geometry(snr=1, wk2=1, muwk=Fraction(1) + Fraction(1, 2 * 10**6))


@pytest.mark.parametrize("text, value", [("sqrt(2)", math.sqrt(2)), ("3/4", 0.75), ("pi/4", math.pi / 4),
                                         (" -2.5e-3 ", -0.0025), ("2^-3", 0.125)])
def test_numbers_through_the_parser(text, value):
    assert float(to_fraction(text, "x")) == pytest.approx(value, rel=1e-15)


def test_from_angles_aligned_is_exact_rank_one():
    g = Geometry.from_angles(2, 1, 1, 1, 1, 1)
    assert g.rank() == 1 and g.projection is None
    assert abs(g.muwk - Fraction(14142135623730950488, 10**19)) < Fraction(1, 10**18)
    with pytest.raises(ParameterError, match="exclusive"):
        Geometry.from_angles(1, 1, 1, cos_muwk=0.5, muwk=0.5)


def test_from_vectors_rank_one_geometry():
    g = Geometry.from_vectors([1, 1, 0], [1, 0, 0], [0, 1, 0])
    assert (g.snr, g.muwk, g.muwq, g.wkwq) == (2, 1, 1, 0)


def test_cli_cos_flags_and_sqrt(capsys):
    base = ["limit", "--f", "tanh", "--c", "0.5", "--gamma", "0.1", "--snr", "2", "--wk2", "1", "--wq2", "1", "--json"]
    code, out, _ = _cli(base + ["--cos-muwk", "1", "--cos-muwq", "1", "--cos-wkwq", "1"], capsys)
    assert code == 0
    a = json.loads(out)
    code, out, err = _cli(base + ["--wkwq", "1", "--muwk", "1.4142135623730951", "--muwq", "1.4142135623730951"],
                          capsys)
    assert code == 0 and "PSD" in err
    b = json.loads(out)
    assert b["params"]["geometry"]["psd_projection"] < 1e-15
    assert abs(a["attention"][0] - b["attention"][0]) < 1e-12  # rounding-level change, same limit
    code, _, err = _cli(base + ["--muwk", "1", "--cos-muwk", "1"], capsys)
    assert code == 2 and "exclusive" in err


# ---------------------------------------------------------------- generic probes
_T = {"t": sp.Symbol("t")}
_FN = {"exp": sp.exp, "sqrt": sp.sqrt}

PROBES = [
    "__import__('os').system('echo hi')", "t.__class__.__mro__", "().__class__", "t.func", "(lambda: 1)()",
    "[x for x in (1, 2)]", "{1: 2}", "{1, 2}", "t[0]", "t if t else 1", "(t := 1)", "f'{t}'", "*t", "b'x'",
    "exp.__globals__", "open('/etc/passwd')", "getattr(t, 'func')", "eval('1')", "exec('1')", "__builtins__",
    "globals()", "breakpoint()", "t @ t @ exp", "not t", "~t", "t % 2", "t // 2", "t << 1", "exp(t, x=1)",
    "exp(*t)", "1j", "0x10", "'\\x41'", "...", "None", "t;1", "t\n1", "import os", "\u0435xp(t)",
]


@pytest.mark.parametrize("text", PROBES)
def test_generic_probes_refused(text):
    with pytest.raises(ParameterError):
        parse_expression(text, _T, _FN, what="probe")


def test_random_junk_never_escapes():
    rng = random.Random(0)
    alphabet = string.printable + "^_√π"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        try:
            parse_expression(text, _T, _FN, what="junk")
        except ParameterError:
            pass


def test_limits_are_stated():
    for key in ("chars", "literal_digits", "literal_exponent", "exponent", "digits", "hermite_k", "rank",
                "gammas", "time"):
        assert key in LIMITS
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "input.md"), encoding="utf-8") as fh:
        doc = fh.read()
    for key, value in LIMITS.items():
        assert f"`{key}`" in doc and f"{value:g}" in doc, key


def test_parse_number_refuses_non_numbers():
    for text in ("t", "sqrt(-1)", "1/0", "log(0)", "oo"):
        with pytest.raises(ParameterError):
            parse_number(text, what="x")


def test_project_psd_keeps_exact_psd():
    g, v = project_psd([[1, 0], [0, 1]])
    assert v is None and g == [[1, 0], [0, 1]]


def test_simulation_layer_still_free_of_sympy():
    import subprocess

    code = "import sys, symrmt.simulation; print('sympy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
