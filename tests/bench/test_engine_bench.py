"""The trace engine's entry in ``symrmt bench`` (symrmt.bench.engine)."""

import mpmath
import pytest

from symrmt.bench import engine as be


def test_closed_form_of_the_cubed_wishart_resolvent():
    """The bench's reference (three MP Stieltjes values at the cube roots of -gamma) against the moments:
    for gamma -> oo the trace is 1/gamma - E[W^3]/gamma^2 + O(gamma^-3), with the MP moment
    tau(W^3) = c + 3c^2 + c^3 of W = Z^T Z/n (Z p x n, c = p/n)."""
    g = 10**10
    val = be.closed_form("1/2", str(g), 40)
    with mpmath.workdps(40):
        c = mpmath.mpf(1) / 2
        approx = 1 / mpmath.mpf(g) - (c + 3 * c**2 + c**3) / mpmath.mpf(g) ** 2
        assert abs(val - approx) < mpmath.mpf(10) ** -27


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_worker_measures_and_agrees_with_the_closed_form():
    out = be.worker({"warm_points": 1})
    assert out["blocks"] == [6]
    assert out["agree_digits_min"] >= 30
    assert out["first_s"] > 0 and len(out["warm_s"]) == 1
    res = {"engine": {"expression": be.EXPR, "digits": be.DIGITS, "cold_cache": out, "warm_cache": out}}
    rows = []
    be.verdicts(res, lambda *r: rows.append(r))
    assert any("6-block pencil" in r[0] for r in rows)
    assert out["qf_batch_fallbacks"] == 0 and out["qf_batch_s_per_point"] > 0
    assert any("quadratic form on the float64 batch" in r[0] for r in rows)
    eg = out["e_a_grid"]  # the engine's E_A grid against the hand-built fast grid (an independent solver)
    assert eg["points"] == 400 and eg["fallbacks"] == 0 and eg["gap_max"] <= 2 * eg["estimate_max"] + 2.2e-16
    assert any("c x gamma grid" in r[0] for r in rows)
    text = be.report(res, lambda header, body: "|".join(header) + str(len(body)))
    assert "Trace engine" in text and "6 blocks" in text


def test_the_paper_curve_row_prints_the_ratio_against_its_target():
    cold = {"blocks": [6], "warm_median_s": 0.05, "first_s": 3.0, "agree_digits_min": 31.0,
            "paper_curve": {"points": 200, "engine_cpu_s": 6.0, "hand_cpu_s": 3.0, "agree_digits_min": 31.0}}
    rows = []
    be.verdicts({"engine": {"cold_cache": cold, "warm_cache": {"first_s": 0.4}}}, lambda *r: rows.append(r))
    curve = [r for r in rows if "200-point E_A curve" in r[0]]
    assert len(curve) == 1 and curve[0][1] == 2.0 and curve[0][3] is False
