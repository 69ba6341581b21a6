"""The general-W entry of ``symrmt bench`` (symrmt.bench.weights) and the exact summation it relies on."""

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from symrmt.bench import weights as bw
from symrmt.engine.solve.expansions import sum_dd

pytestmark = pytest.mark.slow  # tens of seconds: deterministic equivalents at 15 and 30 digits


def test_sum_dd_against_exact_rational_sum():
    """The two-sum tree against the exact sum in rationals, on terms that cancel to 1e-20 of their size."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(10001) * np.exp2(rng.integers(-30, 30, 10001))
    x = np.concatenate([x, -x[:5000] * (1 + 2.0 ** -52)])
    exact = sum((Fraction(float(v)) for v in x), Fraction(0))
    with mpmath.workdps(50):
        got = sum_dd(x)
        err = abs(got - mpmath.mpf(exact.numerator) / exact.denominator)
        scale = mpmath.fsum(abs(mpmath.mpf(float(v))) for v in x)
    assert err <= scale * mpmath.mpf(10) ** -28


def test_worker_15_digits_agree_with_30_digits():
    """The 15-digit value (double-double path) against the 30-digit one (python-flint): at least 15 digits."""
    out = bw.worker({"sizes": [[10, [15, 30]]], "gammas": ["1", "1/2"]})
    pts = out["points"]
    assert [p["digits"] for p in pts[:2]] == [15, 30]
    assert pts[2]["agree"] >= 15
    assert all(p["first_s"] > 0 and p["warm_s"] > 0 for p in pts[:2])
    rows = []
    bw.verdicts({"weights": out, "quick": True}, lambda *r: rows.append(r))
    assert any("15-digit E_A against the 30-digit" in r[0] and r[3] for r in rows)
