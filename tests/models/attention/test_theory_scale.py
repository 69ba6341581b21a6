"""An f whose scale is far from O(1): the failed attention solve names the scale of f (s f at gamma is f at
gamma/s) and says to rescale f, instead of asking for fewer digits."""

from __future__ import annotations

import subprocess
import sys

import pytest

from symrmt.errors import PrecisionError
from symrmt.models.attention.theory import attention_limit, scale_note


def test_huge_hermite_data_name_the_scale_and_the_rescaling():
    # nu = 1e200: the effective gamma is gamma/sqrt(nu) = 1e-100, far below where the fixed point is solved
    with pytest.raises(PrecisionError) as info:
        attention_limit({"a1": 1, "nu": 10**200, "d": 0}, "1/2", [1])
    text = str(info.value)
    assert "scale of f" in text and "rescale f" in text and "1.0e-100" in text
    assert "ask for fewer digits" not in text


def test_tiny_and_order_one_scales():
    # nu = 1e-200: effective gamma 1e100 (a solve there fails on the large-gamma side); nu = 2 is O(1): no note
    assert "1.0e+100" in scale_note(10**-100, 10**-200, 1)
    assert scale_note(1, 2, 1) is None


def test_cli_exp300_tanh_names_the_scale():
    out = subprocess.run([sys.executable, "-m", "symrmt", "limit", "--f", "exp(300)*tanh(t)", "--c", "1/2",
                          "--gamma", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 3, out.stderr  # 3: the computation could not deliver
    assert "scale of f" in out.stderr and "rescale f" in out.stderr
    assert "ask for fewer digits" not in out.stderr
