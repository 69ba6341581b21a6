"""Time limits of the trace engine that hold: a chain of ``--let`` squarings is refused by the
written-out size of the expression, the unknown count is read from the pencils before any fixed
point is written, and a solve that runs past its stated time is stopped with an error naming its
stage.  Each refusal comes within seconds."""

import pytest

from symrmt.cli.app import main
from symrmt.core import budget
from symrmt.core.budget import SolveTimeLimit
from symrmt.engine import Model
from symrmt.engine.reduce import plan as plan_module
from symrmt.engine.lang.matrices import ModelError
from symrmt.parsing import LIMITS, ParseLimitError

pytestmark = pytest.mark.slow  # seconds a test: outside the fast tier (pytest -m "not slow")

SQUARINGS = ["--let", "A1=Z.T*Z/n + I(n)"] + [x for k in range(2, 9) for x in ("--let", f"A{k}=A{k - 1}*A{k - 1}")]
WGW = "trace(inv(Z.T*Z/n*G/sqrt(n)*Z.T*Z/n + gamma*I(n)))"


@pytest.fixture
def no_large_system(monkeypatch):
    """Fail if a fixed point above the unknowns cap is ever written in SymPy (that took minutes)."""
    real = plan_module.BlockSystem

    def guarded(pencil):
        assert plan_module.pencil_unknowns(pencil) <= LIMITS["unknowns"], "a system above the cap was written"
        return real(pencil)

    monkeypatch.setattr(plan_module, "BlockSystem", guarded)


def test_let_chain_of_squarings_is_refused_by_the_unknown_count_before_the_system(no_large_system, capsys):
    # 7 squarings of Z.T*Z/n + I: 128 factors, a pencil of 259 blocks (67081 unknowns, above the moment
    # series' limit too)
    rc = main(["trace", "trace(A8)", "--matrix", "Z=gaussian(n,n)", *SQUARINGS])
    err = capsys.readouterr().err
    assert rc == 2
    assert "unknowns, above the limit of 100 (LIMITS['unknowns']" in err and "Traceback" not in err


def test_unknown_count_is_read_before_the_system_in_python(no_large_system):
    m = Model()
    m.gaussian("Z", "n", "n")
    m.let("W", m.parse("inv(Z.T*Z/n + I(n))"))  # not a polynomial: no series route
    with pytest.raises(ModelError, match="above the limit of 100"):
        m.limit(m.parse("trace(W*W*W*W*W*W*W*W*W*W*W*W*W*W*W*W)"), at={})


def test_let_chain_is_refused_by_its_written_out_size_at_the_let():
    m = Model()
    G = m.goe("G", "n")
    W = m.let("W1", G * G / m.size("n"))
    with pytest.raises(ParseLimitError, match=r"more than 2000 nodes.*LIMITS\['expanded_nodes'\]"):
        for k in range(2, 40):  # without the cap the 39th let would hold 2^38 factors
            W = m.let(f"W{k}", W * W)
    assert LIMITS["expanded_nodes"] == 2000


def test_let_chain_refused_on_the_command_line_with_exit_2(capsys):
    lets = ["--let", "A1=G/sqrt(n)"] + [x for k in range(2, 16) for x in ("--let", f"A{k}=A{k - 1}*A{k - 1}")]
    rc = main(["trace", "trace(A15)", "--matrix", "G=goe(n)", *lets])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--let A" in err and "LIMITS['expanded_nodes']" in err and "Traceback" not in err


@pytest.fixture
def no_spectrum_check(monkeypatch):
    """The check that refuses a real point inside the spectrum at once, switched off: the slow solve it
    prevents is then the test's example of a solve that runs past its time."""
    from symrmt.engine import model

    monkeypatch.setattr(model, "inside_spectrum", lambda *args: None)  # symrmt.engine.solve.spectrum_guard.check


def test_a_solve_past_its_time_is_stopped_naming_the_stage(monkeypatch, no_spectrum_check):
    # -1/10 lies inside the spectrum of W G W (symmetric about 0): without the spectrum check the homotopy
    # and every continuation struggle; the solve must stop at its limit (here 2 s) with the stage named
    monkeypatch.setitem(LIMITS, "solve_seconds", 2.0)
    m = Model()
    m.gaussian("Z", "n", "n")
    m.goe("G", "n")
    with pytest.raises(SolveTimeLimit, match=r"stopped in the homotopy of trace #1 \(10 unknowns\).*"
                                             r"after .* s, the time limit of one solve \(2 s here"):
        m.limit(WGW, at={"gamma": "1/10"})


def test_a_solve_past_its_time_exits_3_on_the_command_line(monkeypatch, capsys, no_spectrum_check):
    monkeypatch.setitem(LIMITS, "solve_seconds", 2.0)
    rc = main(["trace", WGW, "--matrix", "Z=gaussian(n,n)", "--matrix", "G=goe(n)", "--at", "gamma=1/10"])
    err = capsys.readouterr().err
    assert rc == 3
    assert "SolveTimeLimit" in err and "the homotopy of trace #1" in err and "Traceback" not in err


def test_trace_sweep_names_a_tiny_point_by_its_value(monkeypatch, capsys, no_spectrum_check):
    monkeypatch.setitem(LIMITS, "solve_seconds", 2.0)
    rc = main(["trace-sweep", WGW, "--matrix", "Z=gaussian(n,n)", "--matrix", "G=goe(n)", "--grid", "gamma=1e-400"])
    err = capsys.readouterr().err
    assert rc == 3
    assert "gamma=1e-400" in err and "gamma=0.0" not in err  # named as typed


def test_budget_is_inert_outside_a_solve_and_proofs_are_not_counted():
    budget.check()  # no budget: nothing happens
    with budget.solve_budget(0.2, "outer"):
        with budget.paused():
            import time

            time.sleep(0.3)  # not counted
        budget.check()
        with budget.solve_budget(100.0, "inner"):  # the outer budget rules
            time.sleep(0.25)
            with pytest.raises(BaseException) as info:
                budget.check()
    assert "_Expired" in type(info.value).__name__


def test_polynomial_chain_within_the_series_limit_is_summed():
    # (Z.T*Z/n + I)^16: 1225 unknowns, summed as a series; tau((W + 1)^16) = sum_j C(16, j) Catalan(j)
    from math import comb

    m = Model()
    Z = m.gaussian("Z", "n", "n")
    W = m.let("A1", Z.T * Z / m.size("n") + m.identity("n"))
    for k in range(2, 6):
        W = m.let(f"A{k}", W * W)
    r = m.limit(m.parse("trace(A5)"), at={})
    assert r.value == sum(comb(16, j) * comb(2 * j, j) // (j + 1) for j in range(17)) == 1777495635
    assert LIMITS["series_unknowns"] == 5000
