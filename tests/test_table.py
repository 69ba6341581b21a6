"""One result protocol (issue 18): every table result is a :class:`symrmt.table.TableResult`, and the
engine's results (a trace sweep, a spectral density) print, show as HTML and as LaTeX through it; their
LaTeX, empty or not, with a column name that needs escaping, compiles with pdflatex (skipped without it)."""

from __future__ import annotations

import numpy as np
import pytest

from symrmt.comparison import Comparison
from symrmt.engine import Model
from symrmt.engine.density import Density
from symrmt.engine.sweep import TraceSweep
from symrmt.models.attention.boundary import CrossingsResult
from symrmt.models.attention.sweeps import SweepResult
from symrmt.results import LimitResult, SimulationResult
from symrmt.table import TableResult, math_name
from tests.test_latex import check_mathjax, compile_all, document, text_outside_math


def test_every_table_result_follows_the_protocol():
    for cls in (LimitResult, SimulationResult, Comparison, SweepResult, CrossingsResult, TraceSweep, Density):
        assert issubclass(cls, TableResult), cls


def wishart():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    return m


def _sweep(values_shape=(3,)):
    n = int(np.prod(values_shape))
    grid = {"gamma_1": np.linspace(0.5, 1.5, values_shape[0])} if n else {"gamma_1": np.array([])}
    return TraceSweep("trace(inv(Z.T*Z/n + gamma_1*I(n)))", grid, {"c": "1/2"}, np.linspace(1, 2, n),
                      np.zeros(n, bool), np.full(n, 1e-16), [], {})


def _check_latex(obj, documents, name):
    """The checks that need no TeX; the two documents to compile go into ``documents``."""
    body = obj.latex()
    assert isinstance(body, str) and body.strip()
    assert not set("<>|") & set(text_outside_math(body)), body
    shown = obj._repr_latex_()
    check_mathjax(shown)
    documents[name], documents[name + "_shown"] = document(body), document(shown)


def test_trace_sweep_and_density_print_and_compile(tmp_path):
    sw = wishart().sweep("trace(inv(Z.T*Z/n + gamma*I(n)))", grid={"gamma": [0.5, 1, 2]}, at={"c": "1/2"})
    d = wishart().density("Z.T*Z/n", x=["0.5", "1", "2"], at={"c": "1/2"}, digits=10, edges=False, atoms=False)
    documents = {}
    for i, obj in enumerate((sw, d, _sweep(), _sweep((0,)), Density([], [], [], [], [], [], 10, "Z.T*Z/n", {}))):
        text, page = str(obj), obj._repr_html_()
        assert obj._caption() in text and page.startswith(("<table>", "<p>"))
        _check_latex(obj, documents, f"r{i}")
    assert "gamma" in str(sw) and len(sw.to_pandas()) == 3
    assert "\\text{gamma}\\_\\text{1}" in _sweep().latex()  # a name with "_" is escaped in the header
    assert "No grid points" in _sweep((0,)).latex() and "tabular" not in _sweep((0,)).latex()
    xr = pytest.importorskip("xarray")
    assert isinstance(d.to_xarray(), xr.Dataset)
    compile_all(documents, tmp_path)  # last: it skips without pdflatex


def test_math_name():
    assert math_name("x") == "x" and math_name("gamma", {"gamma": r"\gamma"}) == r"\gamma"
    assert math_name("cos_muwk") == r"\text{cos}\_\text{muwk}"
