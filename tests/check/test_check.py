"""``symrmt check``: correct formulas are proved or verified, wrong ones are caught.

The correct formulas are written here independently of the package: the ridge error is
derived in this file (Marchenko-Pastur root, Sherman-Morrison quadratic form, derivative
in gamma) with SymPy, or typed from a derivation on paper; no expected number comes from
the package's own output.
"""

import json
import re
import sys
import time

import pytest
import sympy as sp

from symrmt.check.core import SymbolicTimeout, check, parse_candidate, parse_where, run_limited
from symrmt.cli.app import main
from symrmt.errors import ParameterError

c, g, s, m = sp.symbols("c gamma snr m", positive=True)


def ridge_error_by_hand():
    """E_RR derived here: m(-gamma) is the positive root of gamma m^2 + (gamma + c - 1) m - 1,
    y^T Q_0 y/n -> m(1+m)/(1+(1+snr)m) (Sherman-Morrison), E_RR = -gamma^2 d/dgamma of it."""
    root = (1 - c - g + sp.sqrt((1 - c - g) ** 2 + 4 * g)) / (2 * g)
    phi = root * (1 + root) / (1 + (1 + s) * root)
    return -g**2 * sp.diff(phi, g)


# implicit form (on paper): m' = -(m^2+m)/(2 gamma m + gamma + c - 1),
# d/dm [m(1+m)/(1+(1+s)m)] = (1 + 2m + (1+s)m^2)/(1+(1+s)m)^2
E_IN_M = "gamma**2*(m**2 + m)*(1 + 2*m + (1 + snr)*m**2)/((1 + (1 + snr)*m)**2*(2*gamma*m + gamma + c - 1))"
MP_ROOT = "(1 - c - gamma + sqrt((1 - c - gamma)**2 + 4*gamma))/(2*gamma)"
TIGHT = 1e-25  # 10^-(digits - 5) at digits = 30


def _with_mm(text):
    """``m`` renamed ``mm`` (a helper name defined in the candidate file)."""
    return re.sub(r"\bm\b", "mm", text)


def _gap(rep):
    return float(rep.numeric["max_gap"])


# ---------------------------------------------------------------- correct formulas
def test_ridge_closed_form_derived_here_is_proved():
    rep = check("E_RR", str(ridge_error_by_hand()), points=6)
    assert rep.status == "proved", rep.text()
    assert rep.symbolic["status"] == "proved"
    assert rep.numeric["failed"] == 0 and rep.numeric["points"] == 6
    assert _gap(rep) < TIGHT


def test_rearranged_ridge_error_in_m_is_proved():
    rep = check("E_RR", E_IN_M, points=6)
    assert rep.status == "proved", rep.text()
    assert _gap(rep) < TIGHT


def test_candidate_from_py_file(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text('"""my derivation"""\nimport sympy\nmm = ' + MP_ROOT + "\nE_RR = " + _with_mm(E_IN_M) + "\n")
    rep = check("E_RR", str(path), points=4)
    assert rep.status == "proved", rep.text()


def test_mp_quadratic_as_equation_is_proved():
    rep = check("m", "gamma*m^2 + (gamma + c - 1)*m = 1", kind="equation", points=6)
    assert rep.status == "proved", rep.text()
    # the same law as the fixed point of the free Poisson R-transform
    rep2 = check("m", "m = 1/(gamma + c/(1 + m))", kind="equation", points=6)
    assert rep2.status == "proved", rep2.text()


def test_ridgeless_ridge_limit_is_proved_on_both_sides_of_c_1():
    rep = check("E_RR0", "Piecewise(((1 - c)/(1 + snr), c < 1), (0, True))", points=8)
    assert rep.status == "proved", rep.text()
    assert "c < 1" in rep.symbolic["detail"] and "c > 1" in rep.symbolic["detail"]
    rep2 = check("E_RR0", "Max(1 - c, 0)/(1 + snr)", points=8)
    assert rep2.status == "proved", rep2.text()


def test_identity_with_where_fixing_snr():
    # at snr = 0 the ridge error is the Marchenko-Pastur error -gamma^2 dm/dgamma
    rep = check("E_RR", "E_RR = gamma**2*(m**2 + m)/(2*gamma*m + gamma + c - 1)", kind="identity",
                where="snr=0", points=5)
    assert rep.status == "proved", rep.text()
    # without snr = 0 the same identity is false
    rep2 = check("E_RR", "E_RR = gamma**2*(m**2 + m)/(2*gamma*m + gamma + c - 1)", kind="identity",
                 where="snr>0.5", points=5, region=False)
    assert rep2.status == "disproved", rep2.text()


def test_attention_ridgeless_noise_only():
    # E_A(0+) = 1 - c at snr = 0, c < 1 (any a1, nu, d, weights): the package's closed form there
    rep = check("E_A0", "1 - c", where="snr=0, c<1", points=3)
    assert rep.status == "proved", rep.text()
    # the same formula without c < 1 is wrong for c > 1 (E_A(0+) = 0 there)
    rep2 = check("E_A0", "1 - c", where="snr=0", points=8)
    assert rep2.status == "disproved", rep2.text()
    (b,) = [b for b in rep2.region["boundaries"] if b["parameter"] == "c"]
    assert abs(float(b["boundary"]) - 1) < 1e-3 and b["fails"].startswith("c >")


def test_attention_stieltjes_cubic_is_verified():
    # a1 = d = 0: the cubic stated in symrmt/models/attention/closed_forms/noise_only.py; the package's m_A comes from the
    # general fixed-point solver, so this is a cross-check of the two
    rep = check("m_A", "nu*gamma^2*m_A^3 + nu*gamma*(c - 1)*m_A^2 + c*gamma*m_A - c", kind="equation",
                where="a1=0, d=0", points=2)
    assert rep.status == "verified", rep.text()
    assert "not a proof" in rep.evidence
    assert rep.symbolic["status"] == "undecided"


def test_attention_with_identity_kernel_equals_ridge():
    # a1 = 0, nu = 0, d = 1 (kept diagonal) and W = I: K = I, so Attention is ridge regression
    rep = check("E_A", "E_A = E_RR", kind="identity", where="a1=0, nu=0, d=1, wk2=0, wq2=0", points=2)
    assert rep.status == "verified", rep.text()
    assert rep.symbolic["status"] == "undecided"


# ---------------------------------------------------------------- wrong formulas
def test_sign_flip_is_caught_with_exact_counterexample():
    rep = check("E_RR", E_IN_M.replace("1 + 2*m", "1 - 2*m"), points=6)
    assert rep.status == "disproved", rep.text()
    ce = rep.symbolic["counterexample"]
    assert ce is not None and ce["how"].startswith("exact")
    assert abs(float(ce["difference"].split()[-1])) > 1e-6
    assert rep.numeric["failed"] == 6


def test_wrong_power_of_c_is_caught():
    rep = check("m", "gamma*m^2 + (gamma + c^2 - 1)*m - 1", kind="equation", points=6, region=False)
    assert rep.status == "disproved", rep.text()
    assert rep.symbolic["counterexample"] is not None


def test_formula_valid_only_below_c_1_region_found():
    rep = check("E_RR0", "(1 - c)/(1 + snr)", points=10)
    assert rep.status == "disproved", rep.text()
    assert sp.Rational(rep.symbolic["counterexample"]["point"]["c"]) > 1
    assert 0 < rep.numeric["passed"] < 10
    (b,) = [b for b in rep.region["boundaries"] if b["parameter"] == "c"]
    assert abs(float(b["boundary"]) - 1) < 1e-3
    assert b["fails"].startswith("c >")


def test_ridge_formula_with_abs_valid_only_below_c_1(tmp_path):
    path = tmp_path / "abs.py"
    path.write_text("mm = (Abs(1 - c) - gamma + sqrt((1 - c - gamma)**2 + 4*gamma))/(2*gamma)\n"
                    "candidate = " + _with_mm(E_IN_M) + "\n")
    rep = check("E_RR", str(path), points=10)
    assert rep.status == "disproved", rep.text()
    (b,) = [b for b in rep.region["boundaries"] if b["parameter"] == "c"]
    assert abs(float(b["boundary"]) - 1) < 1e-3 and b["fails"].startswith("c >")


def test_missing_one_plus_snr_is_caught_and_snr_limit_reported():
    rep = check("E_RR0", "1 - c", where="c<1", points=6)
    assert rep.status == "disproved", rep.text()
    lims = rep.region["limits"]
    assert [x["parameter"] for x in lims] == ["snr"]
    assert "holds at snr = 0" in lims[0]["summary"]
    rep2 = check("E_RR", E_IN_M.replace("(1 + snr)", "1"), points=6, region=False)
    assert rep2.status == "disproved" and rep2.symbolic["counterexample"] is not None


def test_ridgeless_formula_used_at_positive_gamma():
    rep = check("E_RR", "(1 - c)/(1 + snr)", where="c<1", points=5)
    assert rep.status == "disproved", rep.text()
    (lim,) = [x for x in rep.region["limits"] if x["parameter"] == "gamma"]
    assert lim["order"] > 0.5  # the gap shrinks like a power of gamma


def test_monte_carlo_sides_with_the_package():
    rep = check("E_RR", E_IN_M.replace("(1 + snr)", "1"), where="c<0.8, snr>2, gamma>0.5", points=3,
                region=False, mc=True)
    assert rep.status == "disproved"
    mc = rep.mc
    assert mc["theory_gap_over_se"] < mc["candidate_gap_over_se"], mc["summary"]


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("expr, msg", [
    ("c + beta", "unknown name 'beta'"),
    ("(c + 1", "cannot parse"),
    ("__import__('os')", "__"),
    ("c + a1", "uses a1, which E_RR0 does not depend on"),
    ("E_A + c", "may not use the quantities"),
])
def test_bad_candidates(expr, msg):
    with pytest.raises(ParameterError, match=msg):
        check("E_RR0", expr, points=1)


def test_foreign_symbol_in_sympy_object():
    with pytest.raises(ParameterError, match="outside the vocabulary"):
        check("E_RR", sp.Symbol("zeta") + sp.Symbol("c"), points=1)


def test_bad_where_and_quantity():
    with pytest.raises(ParameterError, match="unknown parameter 'x'"):
        parse_where("x<1")
    with pytest.raises(ParameterError, match="no values"):
        parse_where("c<1, c>2")
    with pytest.raises(ParameterError, match="outside the model"):
        check("E_RR", "1", where="gamma=0", points=1)
    with pytest.raises(ParameterError, match="which the claim does not depend on"):
        check("E_RR0", "1 - c", where="a1>0", points=1)
    with pytest.raises(ParameterError, match="unknown quantity"):
        parse_candidate("E_X", "c")
    with pytest.raises(ParameterError, match="does not involve m"):
        parse_candidate("m", "c - 1", kind="equation")


def test_py_file_is_not_executed(tmp_path):
    path = tmp_path / "evil.py"
    path.write_text("import os\nos.system('echo hi')\ncandidate = c\n")
    with pytest.raises(ParameterError, match="only 'NAME = expression'"):
        check("E_RR0", str(path), points=1)


def test_latex_without_parser(monkeypatch):
    monkeypatch.setitem(sys.modules, "antlr4", None)
    with pytest.raises(ParameterError, match=r"pip install 'symrmt\[latex\]'"):
        check("E_RR0", r"\frac{1-c}{1+s}", points=1)


def test_latex_with_parser():
    try:
        from sympy.parsing.latex import parse_latex

        parse_latex("c")
    except ImportError:
        pytest.skip("SymPy's LaTeX parser needs antlr4-python3-runtime 4.11 (pip install 'symrmt[latex]')")
    rep = check("E_RR0", r"\frac{1-c}{1+s}", where="c<1", points=3)
    assert rep.status == "proved"


def test_runaway_parse_is_stopped():
    # refused by the parser's exponent cap before any work, not by the parse time limit (whose message is another)
    with pytest.raises(ParameterError, match="exponent tower.*limit 1000"):
        parse_candidate("E_RR0", "c*10**10**10")


def test_sympy_symbols_without_assumptions_are_read_by_name():
    rep = check("E_RR0", (1 - sp.Symbol("c")) / (1 + sp.Symbol("snr")), where="c<1", points=2)
    assert rep.status == "proved"


def test_symbolic_attempt_is_killed_after_its_time_limit():
    with pytest.raises(SymbolicTimeout):  # a 30 s nap that ran to its end would raise nothing
        run_limited(time.sleep, (30,), 0.5)


# ---------------------------------------------------------------- CLI
def test_cli_exit_codes(capsys):
    assert main(["check", "E_RR0", "(1-c)/(1+snr)", "--where", "c<1", "--points", "3"]) == 0
    out = capsys.readouterr().out
    assert "PROVED" in out
    assert main(["check", "E_RR0", "(1-c)/(1+snr)", "--points", "8", "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["status"] == "disproved" and rep["symbolic"]["counterexample"]
    assert main(["check", "E_RR0", "c + beta"]) == 2
    assert "unknown name 'beta'" in capsys.readouterr().err
    assert main(["check", "E_RR0", "1-c", "--kind", "nonsense"]) == 2


def test_same_seed_same_points():
    a = check("E_RR", E_IN_M, points=3, seed=5)
    b = check("E_RR", E_IN_M, points=3, seed=5)
    assert a.numeric["max_gap_at"] == b.numeric["max_gap_at"]
    for p in check("E_RR", E_IN_M, points=4, where="c<1, gamma>=0.01").numeric["failing_points"] + [
            check("E_RR", E_IN_M, points=4, where="c<1, gamma>=0.01").numeric["max_gap_at"]]:
        assert sp.Rational(p["c"]) < 1 and sp.Rational(p["gamma"]) >= sp.Rational(1, 100)


def _ridge_closed_form():
    c, g, s = sp.symbols("c gamma snr", positive=True)
    root = (1 - c - g + sp.sqrt((1 - c - g) ** 2 + 4 * g)) / (2 * g)
    phi = root * (1 + root) / (1 + (1 + s) * root)
    return c, -g**2 * sp.diff(phi, g)


@pytest.mark.parametrize("value", ["1", "1/2", "2"])
def test_check_where_fixed_c_proves_the_ridge_error(value):
    from symrmt.check.core import check

    c, expr = _ridge_closed_form()
    for cand in (expr, expr.subs(c, sp.Rational(value))):
        rep = check("E_RR", str(cand), where=f"c={value}", points=4, region=False)
        assert rep.status == "proved", rep.text()
        assert rep.symbolic["status"] == "proved"


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_check_where_fixed_c_still_disproves_a_wrong_formula():
    from symrmt.check.core import check

    _c, expr = _ridge_closed_form()
    rep = check("E_RR", str(expr * sp.Rational(1000001, 1000000)), where="c=1", points=4, region=False)
    assert rep.status == "disproved", rep.text()


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_region_reports_the_line_where_a_wrong_formula_holds_exactly():
    from symrmt.check.core import check

    # the ridge error times c (a lost factor 1/c): wrong everywhere except exactly on c = 1
    rep = check("E_RR", f"c*({E_IN_M})", points=12)
    assert rep.status == "disproved"
    exact = rep.region["exact"]
    assert [(x["parameter"], x["value"]) for x in exact] == [("c", "1")], rep.region
    assert "holds exactly on c = 1" in rep.text()
    # a boundary is not an isolated line: (1-c)/(1+snr) for E_RR0 holds for all c <= 1
    rep2 = check("E_RR0", "(1 - c)/(1 + snr)", points=10)
    assert rep2.region["exact"] == [] and rep2.region["boundaries"]
