"""The notebook example (docs/examples/notebook.py) runs as a test: curves over 50 gammas for aligned
weights given by angles, the crossings in c for ReLU, and a simulation of the same model compared with
the limit (its own asserts; n = 256 here to keep the test short)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "examples" / "notebook.py"


def _load():
    spec = importlib.util.spec_from_file_location("symrmt_notebook_example", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_notebook_script_uses_only_symrmt_and_numpy():
    imports = [line.strip() for line in SCRIPT.read_text().splitlines()
               if line.startswith(("import ", "from ")) and "__future__" not in line]
    assert imports == ["import argparse", "import time", "import numpy as np", "import symrmt"]


def test_notebook_runs(tmp_path):
    pytest.importorskip("matplotlib")
    out = _load().main(["--n", "256", "--trials", "8", "--plot", str(tmp_path / "curves.png")])
    assert (tmp_path / "curves.png").stat().st_size > 0
    assert len(out["curve"].gamma) == 50 and len(out["crossings"]) >= 1
    assert out["comparison"].within(k=3, slack=0.01)
