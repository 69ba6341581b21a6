"""One result protocol: every table result is a :class:`symrmt.table.TableResult`, and the
engine's results (a trace sweep, a spectral density) print, show as HTML and as LaTeX through it; their
LaTeX, empty or not, with a column name that needs escaping, compiles with pdflatex (skipped without it)."""

from __future__ import annotations

import html
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import symrmt
from symrmt.comparison import Comparison
from symrmt.engine import Model
from symrmt.engine.density.result import Density
from symrmt.engine.routes.sweep import TraceSweep
from symrmt.models.attention.boundary import CrossingsResult
from symrmt.models.attention.sweeps import SweepResult
from symrmt.results import LimitResult, SimulationResult
from symrmt.table import TableResult, math_name
from tests.test_latex import check_mathjax, compile_all, document, text_outside_math

pytestmark = pytest.mark.latex


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


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_trace_sweep_and_density_print_and_compile(tmp_path):
    sw = wishart().sweep("trace(inv(Z.T*Z/n + gamma*I(n)))", grid={"gamma": [0.5, 1, 2]}, at={"c": "1/2"})
    d = wishart().density("Z.T*Z/n", x=["0.5", "1", "2"], at={"c": "1/2"}, digits=10, edges=False, atoms=False)
    documents = {}
    for i, obj in enumerate((sw, d, _sweep(), _sweep((0,)), Density([], [], [], [], [], [], 10, "Z.T*Z/n", {}))):
        text, page = str(obj), obj._repr_html_()
        caption = text.splitlines()[0]  # str(): the caption, then the table or the sentence for no rows
        assert caption and html.escape(caption) in page and page.startswith(("<table>", "<p>"))
        assert obj.latex().startswith("% " + caption)
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


def _alignment_sweep(k=5):
    cosines = [i / (k - 1) for i in range(k)]
    return symrmt.sweep("tanh", {"c": 0.5, "gamma": 1, "snr": 2, "wk2": 1, "wq2": 1, "wkwq": 1,
                                 ("cos_muwk", "cos_muwq"): cosines}, digits=15, progress=False)


def test_irrational_inner_products_print_as_decimals():
    s = _alignment_sweep()
    muwk = [p["muwk"] for p in s.points]
    assert max(len(str(v)) for v in muwk) > 1000  # kept exactly inside
    text, html = str(s), s._repr_html_()
    assert max(len(line) for line in text.splitlines()) < 200 and len(html) < 4000
    # the decimals shown are the exact values rounded to the 15 digits asked (checked here in mpmath)
    def cells(table):  # the rows of a printed table (under the caption, the header and its rule)
        return [line.split() for line in table.splitlines()[3:]]

    col = list(s.columns).index("muwk")
    with mpmath.workdps(40):
        for v, row in zip(muwk, cells(s.table()), strict=True):
            shown = row[col]
            exact = mpmath.mpf(v.numerator) / v.denominator
            assert abs(mpmath.mpf(shown) - exact) <= abs(exact) * mpmath.mpf("1e-14") + mpmath.mpf("1e-40"), shown
    assert any(len(row[col]) > 1000 for row in cells(s.table(exact=True)))  # the exact form on request
    geo = symrmt.Geometry.from_angles(snr=2, wk2=1, wq2=1, cos_muwk=0.3)
    lim = symrmt.limit("tanh", 0.5, 1, geo, digits=20)
    with mpmath.workdps(40):
        ref = mpmath.nstr(mpmath.sqrt(2) * 3 / 10, 20, strip_zeros=False)
    assert lim.params()["geometry"]["muwk"] == ref
    assert len(lim.params(exact=True)["geometry"]["muwk"]) > 1000
    assert "muwk = 0.42426406871192851464" in str(lim) and len(lim._repr_html_()) < 2000


def test_logspace_gammas_print_short():
    gammas = np.logspace(-2, 0, 5)
    lim = symrmt.limit("tanh", 0.5, gammas, digits=12)
    col = [line.split()[0] for line in str(lim).splitlines()[3:]]
    assert col == ["0.01", "0.0316228", "0.1", "0.316228", "1"]
    assert lim.gamma_exact[1] == Fraction(repr(float(gammas[1])))  # the value used is the float given
    sim = symrmt.simulate("tanh", 0.5, gammas, n=32, trials=2, progress=False)
    assert [line.split()[0] for line in str(sim).splitlines()[3:]] == col
    # values that agree to 6 digits get the digits that tell them apart
    close = [1.0, 1.0000001, 1.0000002]
    assert [line.split()[0] for line in str(symrmt.limit("tanh", 0.5, close, digits=8)).splitlines()[3:]] == \
        ["1", "1.0000001", "1.0000002"]
