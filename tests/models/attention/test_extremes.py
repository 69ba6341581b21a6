"""The attention and ridge limits at the ends of their ranges: gamma far outside [1e-300, 1e25],
the float64 path at large gamma, and the digits cap, against closed forms at 40 digits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp

from symrmt.models.attention import equations as S
from symrmt.models.attention import fast
from symrmt.models.attention.geometry import Geometry

pytestmark = pytest.mark.slow  # seconds a test: outside the fast tier (pytest -m "not slow")


_RIDGE = None


def ridge_reference(c, gamma):
    """E_RR(snr = 1) from the plain closed form (the root with its cancelling numerator), evaluated by SymPy's
    adaptive-precision N at exact inputs: independent of the compiled stable form under test."""
    global _RIDGE
    if _RIDGE is None:
        _RIDGE = S.ridge_error_closed_form().subs(S.snr, 1)
    val = _RIDGE.subs({S.c: sp.Rational(str(c)), S.gamma: sp.Rational(str(gamma))})
    return mpmath.mpf(str(sp.N(val, 40)))


def cli(*args, timeout=300):
    """The completed ``python -m symrmt ARGS`` (the timeout only stops a hang: no test asserts a time)."""
    return subprocess.run([sys.executable, "-m", "symrmt", *args], capture_output=True, text=True, timeout=timeout)


def _rel(x, ref):
    with mpmath.workdps(40):
        return float(abs(mpmath.mpf(x) - ref) / abs(ref))


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


def test_stable_root_is_the_root():
    b = S.gamma + S.c - 1
    D = b**2 + 4 * S.gamma
    assert sp.simplify(2 / (b + sp.sqrt(D)) - S.mp_root()) == 0
    assert sp.simplify((sp.sqrt(D) - b) / (2 * S.gamma) - S.mp_root()) == 0


@pytest.mark.parametrize("gammas,cs", [((1e9, 1e10, 3e10), (2, 1000)), ((1e11, 1e12, 2e12), (100, 10000))])
def test_fast_ridge_within_stated_accuracy_at_large_gamma(gammas, cs):
    G, C = np.meshgrid(gammas, cs)
    r = fast.solve_grid("tanh", {"c": C.ravel(), "gamma": G.ravel(), "snr": np.ones(G.size)})
    for g, c, v in zip(G.ravel(), C.ravel(), r.ridge):
        with mpmath.workdps(40):
            ref = ridge_reference(c, g)
            assert _rel(v, ref) <= 1e-10 * 1e-2, (g, c, v, ref)  # stated 1e-10; the stable form gives ~1e-16


def test_fast_sweep_cli_ridge_matches_30_digits_at_large_gamma():
    # E_RR at c = 2, gamma = 1e10 is 0.9999999994... (a cancelling form gives 0.9999999996), on the CLI
    args = ["sweep", "--f", "tanh", "--grid", "gamma=1e10,1e12", "--grid", "c=2,10000", "--snr", "1", "--json"]
    p = cli(*args, "--fast")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    cols = doc["columns"]
    assert len(doc["rows"]) == 4
    for row in doc["rows"]:
        c, g = row[cols.index("c")], row[cols.index("gamma")]
        with mpmath.workdps(40):
            ref = ridge_reference(c, g)
            assert abs(mpmath.mpf(row[cols.index("ridge")]) - ref) <= 1e-10 * ref, (row, ref)


def test_erf_at_the_documented_digits_cap():
    # the cap itself (LIMITS['digits'] = 1000) runs for an f with closed forms (it was refused: dps 1025 > 1000);
    # a consistency check against the 30-digit solve (its time is benchmarks/limits_at_cap.py's)
    from symrmt.models.attention.geometry import Geometry
    from symrmt.models.attention.theory import attention_limit

    v = attention_limit("erf", "1/2", [1], Geometry(snr=1), digits=1000)[0]
    ref = attention_limit("erf", "1/2", [1], Geometry(snr=1), digits=30)[0]
    with mpmath.workdps(40):
        assert abs(v - ref) < mpmath.mpf(10) ** -29
