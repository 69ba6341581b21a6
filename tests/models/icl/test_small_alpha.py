"""A small alpha: x = (1 + rho)/alpha is large and Result 1 cancels about log10(x) digits, which the guard digits
cover; where the engine cannot certify the resolvents, the error says what to try; parameters print compactly."""

from __future__ import annotations

import json

import mpmath
import pytest

from symrmt.cli.app import main
from symrmt.errors import PrecisionError
from symrmt.models.icl import icl_limit


def test_tiny_alpha_is_certified_and_continues_the_small_alpha_values():
    # the error is smooth in alpha, e(alpha) = e0 + e1 alpha + O(alpha^2): the linear extrapolation 2 e(h) - e(2h)
    # from h = 1e-10, where the cancellation is small, gives e0 to O(h^2) = 1e-20; e(1e-30) is e0 to ~1e-30
    h1 = icl_limit("1e-10", 1, 2, "0.1", digits=25).error
    h2 = icl_limit("2e-10", 1, 2, "0.1", digits=25).error
    tiny = icl_limit("1e-30", 1, 2, "0.1", digits=15).error
    with mpmath.workdps(40):
        assert abs(tiny - (2 * h1 - h2)) < mpmath.mpf("1e-17")


def test_alpha_beyond_the_engine_says_what_to_try():
    with pytest.raises(PrecisionError) as info:
        icl_limit("1e-300", 1, 2, "0.1")
    text = str(info.value)
    assert "fewer digits" in text and "larger alpha" in text and "1.1e+300" in text


def test_cli_prints_a_tiny_alpha_compactly(capsys):
    argv = ["icl", "--alpha", "1e-100", "--kappa", "1", "--tau", "2", "--rho", "0.1"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("alpha = 1e-100, kappa = 1, tau = 2, rho = 0.1")
    assert main(argv + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["alpha"] == "1e-100"
