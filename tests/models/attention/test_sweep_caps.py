"""Caps of the sweeps and crossings (grid points, scan points, the float64 range), refused in one line.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from symrmt.parsing import ParseLimitError


def cli(*args, timeout=300):
    """The completed ``python -m symrmt ARGS`` (the timeout only stops a hang: no test asserts a time)."""
    return subprocess.run([sys.executable, "-m", "symrmt", *args], capture_output=True, text=True, timeout=timeout)


def _one_line_refusal(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stdout[-300:], p.stderr[-300:])
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("spec,needle", [("c=1e-300:1e300:5:log", "c = 1e-300"), ("c=1e-400:1:3:log", "c = 1e-400")])
def test_fast_sweep_out_of_float_range_is_one_line(spec, needle):
    p = cli("sweep", "--f", "tanh", "--grid", spec, "--grid", "gamma=1", "--fast")
    _one_line_refusal(p, needle, "fast")


@pytest.mark.slow
def test_log_grid_below_float_range_is_read():
    from symrmt.cli.sweeps import grid_entry

    assert grid_entry("c=1e-400:1:3:log") == ("c", ["1e-400", "1e-200", "1"])


@pytest.mark.slow
def test_crossings_empty_c_range_shows_the_numbers_as_typed():
    p = cli("crossings", "--f", "tanh", "--over", "c", "--between=-1,0", "--gamma", "1", "--snr", "1")
    _one_line_refusal(p, "(-1, 0)")
    assert "Fraction" not in p.stderr
    p = cli("crossings", "--f", "tanh", "--over", "c", "--between=0,1", "--gamma", "1", "--snr", "1", "--linear")
    _one_line_refusal(p, "got 0")
    assert "Fraction" not in p.stderr


@pytest.mark.parametrize("fast", [False, True])
def test_sweep_grid_points_capped(fast):
    # each path its cap: the certified path 10^4 points, the float64 path 10^6
    from symrmt import sweep

    k, name = (1001, "fast_points") if fast else (200, "points")
    with pytest.raises(ParseLimitError, match=f"LIMITS\\['{name}'\\]"):
        sweep("tanh", center=True, fast=fast,
              grid={"c": np.linspace(0.1, 0.9, k), "gamma": np.linspace(0.1, 1, 1000 if fast else 200)})


def test_crossings_scan_capped():
    from symrmt import crossings

    with pytest.raises(ParseLimitError, match="scan points"):
        crossings("tanh", center=True, over="gamma", between=(0.1, 1), c=0.5, scan=10**8)
