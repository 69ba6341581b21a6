"""The triple-double refinement of a deterministic equivalent with given matrices (29 to 32 digits).

Its values are checked against numbers computed independently of it: the AR(1) Silverstein trace and the
HMRT ridge bias of ``test_given.py`` (closed forms solved in mpmath with the eigenvalues), and python-flint's
``arb_mat`` refinement (another arithmetic, another algorithm) on ``E_A`` with a Gaussian ``W``, including a
small ``gamma`` where the inner inverse is amplified.  Two mutations show that the checks can fail (the third
float64 component dropped from the arrays, or from the coefficients); and a bound that cannot be met sends the
point to python-flint instead of answering.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from symrmt.engine.solve import given as gv
from symrmt.engine.solve import expansions, given_dd
from symrmt.errors import PrecisionError

from tests.engine.test_given import agree, closed_form_cases

pytestmark = pytest.mark.slow  # seconds per test (python-flint references)


def _spy(monkeypatch):
    """Record the width of every refinement (2: double-double, 3: triple-double) and the python-flint calls."""
    seen = {"widths": [], "flint": 0}
    dd, fl = gv.solve_dd, gv.solve_flint

    def solve_dd(*a, **k):
        seen["widths"].append(a[6] if len(a) > 6 else k.get("width", 2))
        return dd(*a, **k)

    def solve_flint(*a, **k):
        seen["flint"] += 1
        return fl(*a, **k)

    monkeypatch.setattr(gv, "solve_dd", solve_dd)
    monkeypatch.setattr(gv, "solve_flint", solve_flint)
    return seen


@pytest.mark.parametrize("digits", [30, 32])
def test_triple_double_path_against_theclosed_form_cases(digits, monkeypatch):
    """From 29 to 32 digits the residuals are triple-double: the AR(1) trace and the ridge bias to the digits
    asked, without python-flint."""
    seen = _spy(monkeypatch)
    for got, want in closed_form_cases(digits):
        assert agree(got, want, digits)
    assert 3 in seen["widths"] and seen["flint"] == 0


def _weights_ea(p, gamma, digits):
    from symrmt.models.attention.weights import weights_limit

    W = np.random.default_rng(p).standard_normal((p, p)) / np.sqrt(p)
    return weights_limit("tanh", "1/2", [gamma], W, digits=digits)["attention"][0]


@pytest.mark.parametrize("gamma", ["1/2", "1/100"])
def test_triple_double_against_flint_on_general_weights(gamma, monkeypatch):
    """``E_A`` with a Gaussian ``48 x 48`` ``W`` at 30 digits (the Woodbury inner matrix's two diagonal blocks):
    the triple-double value against python-flint's, to 30 digits; at ``gamma = 1/100`` the inner inverse is
    amplified (the a-priori bound is about 1e14) and the tail ``R^2`` of the series is needed in double-double."""
    pytest.importorskip("flint")
    seen = _spy(monkeypatch)
    td = _weights_ea(48, gamma, 30)
    assert seen["widths"].count(3) >= 2 and seen["flint"] == 0
    monkeypatch.setattr(gv, "TD_DIGITS", gv.DD_DIGITS)
    fl = _weights_ea(48, gamma, 30)
    assert seen["flint"] > 0
    assert agree(td, fl, 30)


def test_the_checks_fail_without_the_third_component():
    """Mutations: with the third float64 component of every expansion dropped, or of the coefficients (the
    entries of ``A^{-1}`` and the pencil's numbers as double-doubles), no 32-digit value is both certified and right: the refinement stalls (the point would go to
    python-flint), the two evaluations disagree, or a value misses its closed form."""
    renorm = given_dd.renorm

    def two_only(comps, k):
        out = renorm(comps, k)
        return out if k < 3 else (out[0], out[1], np.zeros_like(out[0]))

    split = given_dd.split

    def split_two(x, k):
        out = split(x, k)
        return out if k < 3 else (out[0], out[1], 0.0)

    outcomes = {}
    for name, value in (("renorm", two_only), ("split", split_two)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(given_dd, name, value)
            mp.setattr(expansions, name, value)
            mp.setattr(gv, "solve_flint", _no_flint)
            try:
                pairs = closed_form_cases(32)
            except _Refused:
                outcomes[name] = "stalled"
                continue
            except PrecisionError:
                outcomes[name] = "disagree"
                continue
            outcomes[name] = [float(-mpmath.log10(abs(got - want) / abs(want))) for got, want in pairs]
            assert not all(agree(got, want, 32) for got, want in pairs), (name, outcomes[name])
    print(outcomes)


class _Refused(Exception):
    pass


def _no_flint(*a, **k):
    raise _Refused


def test_a_bound_that_fails_goes_to_flint(monkeypatch):
    """At ``gamma = 1/100`` the series needs ``R^3`` and more; with the series cut at ``R^2`` its bound fails, and
    the point is answered by python-flint, not by the triple-double path."""
    pytest.importorskip("flint")
    seen = _spy(monkeypatch)
    monkeypatch.setattr(given_dd, "MAX_ORDER", 2)
    value = _weights_ea(48, "1/100", 30)
    assert seen["flint"] > 0
    monkeypatch.setattr(given_dd, "MAX_ORDER", 8)
    assert agree(value, _weights_ea(48, "1/100", 30), 30)
