"""The notebook examples run as tests.

* docs/examples/notebook.py: curves over 50 gammas for aligned weights given by angles, the crossings in c
  for ReLU, and a simulation of the same model compared with the limit (its own asserts; n = 256 here to
  keep the test short);
* docs/examples/paper.ipynb: the paper's experiments, executed headless by ``jupyter nbconvert --execute``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.docs]  # seconds a test: outside the fast tier (pytest -m "not slow")

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "examples" / "notebook.py"


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


NOTEBOOK = SCRIPT.parent / "paper.ipynb"


@pytest.mark.slow
def test_paper_notebook_executes_headless_clean(tmp_path):
    """docs/examples/paper.ipynb under ``jupyter nbconvert --execute`` (about 25 s): every cell runs (its own
    asserts included), and the executed notebook holds no error, nothing on stderr (so no warning and no
    progress bar), no widget output and no saved widget state.  nbconvert's own log line about the kernel's
    TCP transport is Jupyter's, not the notebook's; a Python warning category anywhere in its stderr fails."""
    import json
    import os
    import re
    import subprocess
    import sys

    pytest.importorskip("nbconvert")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    out = tmp_path / "executed.ipynb"
    env = dict(os.environ)
    root = str(SCRIPT.parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else root
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    proc = subprocess.run([sys.executable, "-m", "nbconvert", "--execute", "--to", "notebook",
                           "--ExecutePreprocessor.timeout=600", "--output", str(out), str(NOTEBOOK)],
                          capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert not re.search(r"\b[A-Z]\w*Warning\b", proc.stderr), proc.stderr[-4000:]
    nb = json.loads(out.read_text())
    assert "widgets" not in nb["metadata"]
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c.get("execution_count") for c in code)
    for cell in code:
        for o in cell["outputs"]:
            assert o["output_type"] != "error", o
            assert not (o["output_type"] == "stream" and o["name"] == "stderr"), o["text"]
            assert "application/vnd.jupyter.widget-view+json" not in o.get("data", {}), cell["source"]
    shown = [o for c in code for o in c["outputs"] if o["output_type"] in ("display_data", "execute_result")]
    assert sum("image/png" in o["data"] for o in shown) >= 5  # curves, angle, crossings, phase diagram, simulation
    assert any("text/latex" in o["data"] and "\\begin{align}" in "".join(o["data"]["text/latex"]) for o in shown)


def test_paper_notebook_is_committed_with_its_outputs():
    """The committed docs/examples/paper.ipynb is the executed notebook (a reader on GitHub sees the figures
    without running it): every code cell ran, in order, and it holds the figures and the LaTeX, no error and
    nothing on stderr.  Re-executing it is the test above."""
    import json

    nb = json.loads(NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c.get("execution_count") for c in code] == list(range(1, len(code) + 1))
    outputs = [o for c in code for o in c["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error" or o.get("name") == "stderr"]
    shown = [o for o in outputs if o["output_type"] in ("display_data", "execute_result")]
    assert sum("image/png" in o["data"] for o in shown) >= 5
    assert any("text/latex" in o["data"] for o in shown)
    assert "widgets" not in nb["metadata"]
