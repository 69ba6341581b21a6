"""The attention limit at an extreme c: ``limit --c 1e-20`` says what happened and
what to try instead of "matrix is numerically singular".

The reference for the ridge limit at tiny c is computed here: with ``c -> 0`` the ``p`` nonzero
eigenvalues of ``X X^T/n`` tend to 1 and the other ``n - p`` are 0, so
``E_RR(gamma) = (1 - c) + c gamma^2/(1 + gamma)^2 + O(c^2)``.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

import symrmt
from symrmt.errors import PrecisionError
from symrmt.models.attention.theory import ATTENTION_C_RANGE, c_range_note, ridge_limit


def test_cli_limit_at_c_1e_minus_20_says_why_and_what_to_try(capsys):
    from symrmt.cli.app import main

    rc = main(["limit", "--f", "relu", "--c", "1e-20", "--gamma", "1"])
    err = capsys.readouterr().err
    assert rc == 3
    assert "numerically singular" in err  # what failed ...
    assert "c = 1.0e-20 is so small" in err and "about 40 decades apart" in err  # ... why ...
    assert "more digits do not help" in err and "certified for 1e-08 <= c <= 1e+12" in err  # ... what to try
    assert "ask for fewer digits" not in err


def test_python_limit_at_huge_c_names_the_side():
    with pytest.raises(PrecisionError, match=r"c = 1\.0e\+20 is so large .* certified for 1e-08 <= c <= 1e\+12"):
        symrmt.limit("relu", "1e20", [1])


def test_the_note_is_only_for_c_outside_the_range():
    lo, hi = ATTENTION_C_RANGE
    assert c_range_note(lo) is None and c_range_note(hi) is None and c_range_note(Fraction(1, 2)) is None
    assert "so small" in c_range_note(lo / 10) and "so large" in c_range_note(hi * 10)


def test_the_ridge_limit_the_note_points_to_is_certified_at_tiny_c():
    c = Fraction(1, 10**20)
    (v,) = ridge_limit(c, [1], digits=30)
    with mpmath.workdps(60):
        ref = 1 - mpmath.mpf(3) / 4 * mpmath.mpf(c.numerator) / c.denominator  # (1 - c) + c/4
        assert abs(v - ref) < mpmath.mpf(10) ** -29
