"""LaTeX output: ``symrmt latex theorem1 --explicit`` and every result object's ``.latex()``.

Where ``pdflatex`` or ``tectonic`` is installed the standalone documents are compiled.  Otherwise
they are parsed with pylatexenc's ``LatexWalker`` in strict mode (unbalanced braces, a ``\\begin``
without its ``\\end`` or a stray ``&`` outside a group raise), and every macro and environment used
must be a standard LaTeX/amsmath one, so a typo such as ``\\mathbbb`` fails too.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import symrmt
from symrmt.cli import main
from symrmt.latex import latex_of

ENVIRONMENTS = {"document", "align", "matrix", "pmatrix", "tabular"}
MACROS = {
    "documentclass", "usepackage", "begin", "end", "section", "intertext", "text", "operatorname", "mathbb",
    "mathcal", "frac", "tfrac", "sqrt", "left", "right", "bigl", "bigr", "Bigl", "Bigr", "quad", "qquad", "otimes",
    "top", "le", "to", "infty", "in", "sim", "pm", "dot", "partial", "lim", "tilde", "dots", "cdot", "times",
    "gamma", "mu", "nu", "xi", "mathrm", "hline", "\\", ",", " ", "|", "det", "log", "exp", "sum",
    "prod", "alpha", "beta", "theta", "pi", "sigma", "tau", "varphi", "phi", ";",
    # escaped characters in text cells
    "_", "{", "}", "#", "$", "%", "&", "^", "~", "textbackslash",
}


def _engine():
    return shutil.which("pdflatex") or shutil.which("tectonic")


def _document(body: str) -> str:
    return ("\\documentclass{article}\n\\usepackage{amsmath,amssymb}\n\\begin{document}\n" + body
            + "\n\\end{document}\n")


def _names(nodes, macros, envs):
    from pylatexenc.latexwalker import (LatexEnvironmentNode, LatexGroupNode, LatexMacroNode,
                                        LatexMathNode)

    for node in nodes or ():
        if node is None:
            continue
        if isinstance(node, LatexMacroNode):
            macros.add(node.macroname)
            if node.nodeargd is not None:
                _names([a for a in node.nodeargd.argnlist if a is not None], macros, envs)
        elif isinstance(node, LatexEnvironmentNode):
            envs.add(node.environmentname)
            _names(node.nodelist, macros, envs)
        elif isinstance(node, (LatexGroupNode, LatexMathNode)):
            _names(node.nodelist, macros, envs)


def check_latex(tex: str, tmp_path, name: str) -> None:
    """Compile ``tex`` (a whole document) when a TeX engine exists, else parse it strictly."""
    engine = _engine()
    if engine:
        src = tmp_path / f"{name}.tex"
        src.write_text(tex)
        cmd = [engine, "-interaction=nonstopmode", "-halt-on-error", src.name] if engine.endswith("pdflatex") \
            else [engine, src.name]
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:]
        assert (tmp_path / f"{name}.pdf").stat().st_size > 0
        return
    walker_mod = pytest.importorskip("pylatexenc.latexwalker")
    nodes, _, _ = walker_mod.LatexWalker(tex, tolerant_parsing=False).get_latex_nodes()
    macros, envs = set(), set()
    _names(nodes, macros, envs)
    assert envs <= ENVIRONMENTS, envs - ENVIRONMENTS
    assert macros <= MACROS, macros - MACROS


def test_theorem1_explicit_defines_every_symbol(tmp_path, capsys):
    tex = latex_of("theorem1", standalone=True, explicit=True)
    check_latex(tex, tmp_path, "theorem1")
    # the shorthand of the short form is defined: D entry by entry, e, x, H, G, N, C, A and the inputs
    for definition in ("L_0 &=", "G &=", "N = c I_3 + G A_S =", "C A C^\\top &=", "C C^\\top &=", "D &=", "H &=",
                       "e &=", "x &=", "E_A(\\gamma) &\\to", "E_{RR}(\\gamma) &\\to", "a_1 = \\mathbb{E}",
                       "\\nu = \\mathbb{E}", "b^2 = \\nu - a_1^2", "\\mu = (m_1, m_2, m_3)", "w_K = (k_1, k_2, k_3)"):
        assert definition in tex, definition
    # C A C^T is written out in the coordinates
    assert "k_{1} q_{1}" in tex and "m_{1}" in tex
    assert main(["latex", "theorem1", "--explicit"]) == 0
    assert "D &=" in capsys.readouterr().out
    assert main(["latex", "ridge", "--explicit"]) == 2


@pytest.mark.parametrize("result", ["ridge", "theorem1", "lowrank"])
def test_short_forms_parse(tmp_path, result):
    check_latex(latex_of(result, standalone=True), tmp_path, result)


def test_result_objects_latex(tmp_path):
    geo = symrmt.Geometry(snr=1)
    th = symrmt.limit("tanh", 0.5, [0.1, 1], geo, digits=20)
    sim = symrmt.simulate("tanh", 0.5, [0.1, 1], geo, n=64, trials=3, seed=0)
    sw = symrmt.sweep("tanh", {"c": [0.5, 2], "gamma": 1}, digits=10, progress=False)
    cr = symrmt.crossings("Max(t, 0)", over="c", between=(0.2, 0.5), gamma=1, snr=1, center=True, digits=10,
                          scan=3, progress=False)
    empty = symrmt.crossings("tanh", over="gamma", between=(0.1, 1), c=2, snr=1, digits=8, scan=3, progress=False)
    assert len(cr) == 1 and len(empty) == 0
    for i, obj in enumerate((th, sim, sim.compare(th), sw, cr, empty)):
        body = obj.latex()
        assert isinstance(body, str) and body.strip()
        check_latex(_document(body), tmp_path, f"result{i}")
        assert obj._repr_latex_().startswith("$")
    assert "f = Max(t, 0), centered" in cr._caption()
    assert np.isfinite(sw.attention).all()
