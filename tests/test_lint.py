"""Lint with ruff (bugbear's B015 flags a bare comparison statement that checks nothing)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed (it is in the test extra)")
    res = subprocess.run([ruff, "check", "symrmt", "tests", "derivations", "benchmarks"], cwd=ROOT, capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
