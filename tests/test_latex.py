"""LaTeX output: every ``symrmt latex`` result, ``--explicit``, every result object's ``.latex()`` and the
engine's pencils and fixed points.

Each text is compiled by a real ``pdflatex`` (Debian's ``texlive-latex-base``; ``.ci/run`` installs it) in
the default ``article`` page, and the log must hold no error, no LaTeX warning and no overfull box wider
than 1 pt.  Without ``pdflatex`` a test runs every check that needs no TeX, then skips with the reason; with
``SYMRMT_REQUIRE_PDFLATEX=1`` in the environment (``.ci/run`` sets it) a missing ``pdflatex`` fails the test
instead, so that CI compiles every output.  Whatever a notebook renders
(``symrmt latex`` bodies, ``_repr_latex_``) must also keep to what MathJax 3 renders: every environment and
macro in the whitelists below (all in MathJax 3's TeX input with its ``ams`` extension), no ``\\intertext``,
and outside math no macro at all (MathJax leaves text outside math as it is).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import symrmt
from symrmt.cli.app import main
from symrmt.latex import LATEX_RESULTS, document, latex_of

pytestmark = pytest.mark.latex

# environments and macros of MathJax 3 (TeX input, ams) that the package's LaTeX uses
MATHJAX_ENVIRONMENTS = {"align", "equation", "split", "matrix", "pmatrix", "array"}
MATHJAX_MACROS = {
    "begin", "end", "text", "texttt", "operatorname", "mathbb", "mathcal", "mathrm", "mathsf", "frac", "tfrac",
    "sqrt", "left", "right", "bigl", "bigr", "Bigl", "Bigr", "quad", "qquad", "otimes", "top", "le", "to",
    "infty", "in", "sim", "simeq", "cos", "pm", "dot", "partial", "lim", "tilde", "hat", "widehat", "bar", "dots",
    "cdot", "cdots", "times", "det", "log", "exp", "sum", "prod", "Rightarrow", "phantom", "hline", "vert",
    "backslash", "label", "eqref", "approx", "ge", "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "kappa", "lambda", "mu",
    "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "varphi", "chi", "psi", "omega", "Delta", "Lambda",
    "langle", "rangle", "ell",
    "\\", ",", ";", " ", "|", "{", "}", "_", "#", "$", "%", "&",
}

# a page's overfull boxes: "Overfull \hbox (12.3pt too wide)"
_OVERFULL = re.compile(r"Overfull \\hbox \((\d+(?:\.\d+)?)pt too wide\)")


def pdflatex():
    """The ``pdflatex`` executable; without one the test skips, or fails under ``SYMRMT_REQUIRE_PDFLATEX=1``."""
    exe = shutil.which("pdflatex")
    if exe is None:
        why = ("pdflatex is not installed (apt-get install texlive-latex-base texlive-latex-extra; .ci/run does): "
               "the checks that need no TeX ran, the compilation of the real output did not")
        if os.environ.get("SYMRMT_REQUIRE_PDFLATEX", "") not in ("", "0"):
            pytest.fail(why + "; SYMRMT_REQUIRE_PDFLATEX is set", pytrace=False)
        pytest.skip(why)
    return exe


def compile_tex(tex: str, tmp_path, name: str) -> str:
    """Compile a whole document; fail on an error, a LaTeX warning or an overfull box above 1 pt.

    Skips without ``pdflatex`` (see :func:`pdflatex`): a test calls it after its other checks."""
    exe = pdflatex()
    src = tmp_path / f"{name}.tex"
    src.write_text(tex)
    for _ in range(3):  # as a user would: again while LaTeX asks for it (\eqref needs the .aux of a first run)
        proc = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error", src.name], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        log = (tmp_path / f"{name}.log").read_text(errors="replace")
        if proc.returncode != 0 or ("Rerun to get cross-references" not in log
                                    and "There were undefined references" not in log):
            break
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp_path / f"{name}.pdf").stat().st_size > 0
    too_wide = [float(x) for x in _OVERFULL.findall(log)]
    assert all(w <= 1.0 for w in too_wide), (name, too_wide, tex[:3000])
    assert "LaTeX Warning" not in log, [line for line in log.splitlines() if "Warning" in line]
    return log


def compile_all(documents, tmp_path) -> None:
    """Compile ``{name: document}`` in order (each as :func:`compile_tex`)."""
    for name, tex in documents.items():
        compile_tex(tex, tmp_path, name)


def mathjax_names(tex: str):
    """``(environments, macros, macros outside math)`` of ``tex`` (pylatexenc, strict parsing)."""
    from pylatexenc.latexwalker import (
        LatexCharsNode,
        LatexCommentNode,
        LatexEnvironmentNode,
        LatexGroupNode,
        LatexMacroNode,
        LatexMathNode,
        LatexSpecialsNode,
        LatexWalker,
    )

    envs, macros, outside = set(), set(), []

    def walk(nodes, in_math):
        for node in nodes or ():
            if node is None or isinstance(node, (LatexCharsNode, LatexSpecialsNode)):
                continue
            if isinstance(node, LatexCommentNode):
                outside.append("%" + node.comment)
            elif isinstance(node, LatexMacroNode):
                macros.add(node.macroname)
                if not in_math:
                    outside.append("\\" + node.macroname)
                if node.nodeargd is not None:
                    walk([a for a in node.nodeargd.argnlist if a is not None], in_math)
            elif isinstance(node, LatexEnvironmentNode):
                envs.add(node.environmentname)
                walk(node.nodelist, True)
            elif isinstance(node, LatexMathNode):
                walk(node.nodelist, True)
            elif isinstance(node, LatexGroupNode):
                walk(node.nodelist, in_math)

    nodes, _, _ = LatexWalker(tex, tolerant_parsing=False).get_latex_nodes()
    walk(nodes, False)
    return envs, macros, outside


def text_outside_math(tex: str) -> str:
    """The characters ``tex`` sets in text mode (outside math; tabular cells included)."""
    from pylatexenc.latexwalker import LatexCharsNode, LatexEnvironmentNode, LatexGroupNode, LatexMathNode, LatexWalker

    out = []

    def walk(nodes):
        for node in nodes or ():
            if isinstance(node, LatexCharsNode):
                out.append(node.chars)
            elif isinstance(node, LatexEnvironmentNode) and node.environmentname in ("tabular", "document"):
                walk(node.nodelist)
            elif isinstance(node, LatexGroupNode) and not isinstance(node, LatexMathNode):
                walk(node.nodelist)

    walk(LatexWalker(tex, tolerant_parsing=False).get_latex_nodes()[0])
    return "".join(out)


def check_mathjax(tex: str) -> None:
    """``tex`` keeps to what MathJax 3 renders in a notebook."""
    assert "\\intertext" not in tex
    envs, macros, outside = mathjax_names(tex)
    assert envs <= MATHJAX_ENVIRONMENTS, envs - MATHJAX_ENVIRONMENTS
    assert macros <= MATHJAX_MACROS, macros - MATHJAX_MACROS
    assert not outside, outside


def test_checker_catches_what_it_should(tmp_path):
    """The checks can fail: an overfull line, an \\intertext and a macro outside math are caught."""
    with pytest.raises(AssertionError):
        check_mathjax("\\begin{align} a \\intertext{b} c \\end{align}")
    with pytest.raises(AssertionError):
        check_mathjax("text \\emph{x} and $y$")
    check_mathjax("text $\\frac{1}{2}$ and \\begin{align} a &= b \\end{align}")
    wide = "\\begin{align}\n" + " + ".join(f"x_{{{i}}}" for i in range(80)) + "\n\\end{align}\n"
    pdflatex()  # skips here without TeX (inside pytest.raises a skip would escape as the wrong exception)
    with pytest.raises(AssertionError):
        compile_tex(document(wide), tmp_path, "wide")


@pytest.mark.parametrize("result", [*sorted(LATEX_RESULTS), "theorem1-explicit"])
def test_symrmt_latex_compiles_and_renders(tmp_path, result):
    name, explicit = (result.split("-")[0], True) if result.endswith("-explicit") else (result, False)
    body = latex_of(name, explicit=explicit)
    check_mathjax(body)
    assert not set("<>|") & set(text_outside_math(body))
    # one equation per display: no number repeats a multi-line polynomial's line
    assert "m^{1}" not in body and "m^{0}" not in body
    compile_tex(document(body), tmp_path, result)  # the default article page: no geometry package
    compile_tex(latex_of(name, standalone=True, explicit=explicit), tmp_path, result + "-standalone")


def test_noise_only_states_its_case_and_one_number(tmp_path):
    from symrmt.derivations import noise_only

    body = latex_of("noise-only")
    assert "$\\mu = 0$ and $W = I_p$" in body and "a_1 = 0" in body
    assert "\\operatorname{tr} Q(\\gamma)" in body  # what m is
    assert body.count("\\begin{equation}") == 1 and "\\begin{split}" in body and "\\begin{align}" not in \
        body.split("\\begin{equation}")[1]
    at_point = noise_only.latex(("1/2", 0, "3/4", 1))
    assert "(c, a_1, \\nu, d) = (\\frac{1}{2}, 0, \\frac{3}{4}, 1)" in at_point
    check_mathjax(at_point)
    compile_tex(document(at_point), tmp_path, "noise-point")


def test_every_symbol_is_defined():
    t1 = latex_of("theorem1")
    for definition in ("D &=", "the first vector of the standard basis", "A = I_3 + k q^\\top", "C = ",
                       "b^2 = \\nu - a_1^2", "a_1 = \\mathbb{E}"):
        assert definition in t1, definition
    aligned = latex_of("aligned")
    assert "$g_1 = (G_{11}, G_{12}, G_{13})^\\top$ is the first column of $G$" in aligned
    ridgeless = latex_of("ridgeless")
    assert "(G_{11}, G_{12}, G_{13}, G_{22}, G_{23}, G_{33}) &\\simeq" in ridgeless


# what a text that uses the block traces G of the fixed point must hold to stand alone
_FIXED_POINT_DEFINITIONS = ("matrix of normalized block traces", "L_0 &=", "A_S &=", "A_G = b",
                            "G &= \\bigl(L_0 + R(-G)\\bigr)^{-1}", "R(B) = ", "\\label{eq:fixed-point}",
                            "a_1 = \\mathbb{E}", "\\nu = \\mathbb{E}", "b^2 = \\nu - a_1^2")


@pytest.mark.parametrize("result", sorted(LATEX_RESULTS))
def test_standalone_documents_define_the_fixed_point(tmp_path, result):
    """A standalone document that uses G restates the fixed point it solves; equations are cited by number."""
    tex = latex_of(result, standalone=True)
    uses_g = re.search(r"G_\{\d\d\}|\\partial_\\gamma G|G \\otimes|G \\Delta", tex) is not None
    if result in ("aligned", "a1-zero", "ridgeless", "lowrank", "theorem1"):
        assert uses_g, result  # the check below is not vacuous for the results built on G
    if uses_g:
        for definition in _FIXED_POINT_DEFINITIONS:
            assert definition in tex, (result, definition)
    for words in ("the fourth line", "the first line", "the second line", "the third line", "the last line"):
        assert words not in tex, (result, words)
    labels = re.findall(r"\\label\{([^}]*)\}", tex)
    assert len(labels) == len(set(labels)), labels
    assert set(re.findall(r"\\eqref\{([^}]*)\}", tex)) <= set(labels)
    if result == "ridgeless":
        assert "the cubic $\\eqref{eq:ridgeless-cubic}$" in tex and "\\label{eq:ridgeless-cubic}" in tex
    compile_tex(tex, tmp_path, result)


def test_theorem1_explicit_defines_every_symbol(capsys):
    tex = latex_of("theorem1", standalone=True, explicit=True)
    for definition in ("L_0 &=", "G &=", "N &= c I_3 + G A_S =", "C A C^\\top &=", "C C^\\top &=", "D &=", "H &=",
                       "e &=", "x = (I_{12}", "E_A(\\gamma) &\\to", "E_{RR}(\\gamma) &\\to", "a_1 = \\mathbb{E}",
                       "\\nu = \\mathbb{E}", "b^2 = \\nu - a_1^2", "\\mu = (m_1, m_2, m_3)", "w_K = (k_1, k_2, k_3)"):
        assert definition in tex, definition
    assert "k_{1} q_{1}" in tex and "m_{1}" in tex  # A written out in the coordinates
    assert main(["latex", "theorem1", "--explicit"]) == 0
    assert "D &=" in capsys.readouterr().out
    assert main(["latex", "ridge", "--explicit"]) == 2


def test_explicit_block_form_is_the_symbolic_matrix():
    """The block form of C A C^T printed by --explicit equals the product the package builds."""
    import sympy as sp

    from symrmt.models.attention import equations as S

    coords = S.lowrank_coords(1)
    m, k, q = (sp.Matrix(coords[i * 3:(i + 1) * 3]) for i in range(3))
    A = sp.eye(3) + k * q.T
    C = sp.Matrix.vstack(m.T, sp.eye(3))
    mk, qm = (m.T * k)[0], (q.T * m)[0]
    block = sp.Matrix(sp.BlockMatrix([[sp.Matrix([[(m.T * m)[0] + mk * qm]]), m.T + mk * q.T],
                                      [m + qm * k, A]]))
    assert (block - C * A * C.T).applyfunc(sp.expand) == sp.zeros(4, 4)
    D = S.woodbury_D(coords)
    assert (D[4:8, 0:4] - S.a1 / S.c * C * A * C.T).applyfunc(sp.expand) == sp.zeros(4, 4)
    assert (D[8:12, 8:12] - C * C.T).applyfunc(sp.expand) == sp.zeros(4, 4)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_result_objects_latex(tmp_path):
    geo = symrmt.Geometry(snr=1)
    th = symrmt.limit("tanh", 0.5, [0.1, 1], geo, digits=20)
    sim = symrmt.simulate("tanh", 0.5, [0.1, 1], geo, n=64, trials=3, seed=0)
    sw = symrmt.sweep("tanh", {"c": [0.5, 2], "gamma": 1}, digits=10, progress=False)
    cr = symrmt.crossings("Max(t, 0)", over="c", between=(0.2, 0.5), gamma=1, snr=1, center=True, digits=10,
                          scan=3, progress=False)
    # the header of a root over an angle (only the name changes: the formatting is under test)
    angle = dataclasses.replace(cr, over="cos_muwk")
    empty = symrmt.crossings("tanh", over="gamma", between=(0.1, 1), c=2, snr=1, digits=8, scan=3, progress=False)
    assert len(cr) == 1 and len(empty) == 0
    documents = {}
    for i, obj in enumerate((th, sim, sim.compare(th), sw, cr, angle, empty)):
        body = obj.latex()
        assert isinstance(body, str) and body.strip()
        assert not set("<>|") & set(text_outside_math(body)), body  # OT1 text sets < as an inverted !
        shown = obj._repr_latex_()
        assert shown.startswith(("$$", "$E_A")), shown
        check_mathjax(shown)
        documents[f"result{i}"], documents[f"shown{i}"] = document(body), document(shown)
    assert "\\cos(\\mu, w_K)" in angle.latex()
    assert "f = Max(t, 0), centered" in str(cr).splitlines()[0]  # the caption line
    assert np.isfinite(sw.attention).all()
    compile_all(documents, tmp_path)


def test_engine_latex_names(tmp_path):
    """``lam`` is one symbol, a split Gaussian's block a superscript, and the text compiles."""
    from symrmt.derivations import load_module

    documents = {}
    for name in ("engine_mp", "engine_anisotropic_mp"):
        tex = load_module(name).latex()
        assert "lam" not in tex.replace("\\lambda", "") and "\\lambda" in tex, name
        assert "[" not in tex.replace("\\left[", "").replace("\\right]", ""), name  # no \hat{Z[,0]}
        # each display of a small example fits the page: the pencil, then each line of the fixed point
        displays = ["$$" + line.strip().removeprefix("\\qquad ").rstrip(",") + "$$" for line in tex.splitlines()
                    if not line.startswith("%")]
        for shown in displays:
            check_mathjax(shown)
        documents[name] = document("\n\n".join(displays))
    compile_all(documents, tmp_path)


def test_latex_callable_at_top_level():
    t = symrmt.latex("ridge")
    assert str(t) == latex_of("ridge") and t._repr_latex_() == str(t)
    assert symrmt.latex.latex_of is latex_of
    assert "\\documentclass" in symrmt.latex("ridge", standalone=True)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_check_report_displays(tmp_path):
    rep = symrmt.check("E_RR", "gamma**2*m*(1+m)*((1+snr)*m**2 + 2*m + 1)/((1 + (1+snr)*m)**2*(c + 2*gamma*m "
                       "+ gamma - 1))", points=3, region=False)
    assert rep.status in ("proved", "verified")
    assert rep.status.upper() in rep._repr_html_() and "<pre>" in rep._repr_html_()
    # a refuted claim: its counterexample line holds the "≈" that pdflatex cannot take as text
    bad = symrmt.check("E_RR", "gamma*m**2", points=3, region=False)
    assert bad.status == "disproved" and "≈" in bad.text()
    short = symrmt.check("E_RR", "gamma*m*(1 + m)/(c + 2*gamma*m + gamma - 1) + 0*snr", points=2, region=False)
    typed = dataclasses.replace(short, claim_tex="")  # a claim too wide for the page: written as typed
    documents = {}
    for name, r in (("report", rep), ("disproved", bad), ("short", short), ("typed", typed)):
        tex = r.latex()
        assert tex.isascii(), name
        assert r._repr_latex_() == tex
        check_mathjax(tex)
        assert not set("<>|") & set(text_outside_math(tex)), tex
        assert tex.startswith(f"Status: {r.status.upper()}.") and "$E_{RR}$" in tex
        documents[name] = document(tex)
    # real LaTeX: the claim is SymPy's math, not text; the counterexample's value is in math
    assert "\\text{gamma**2*m" in rep.latex()  # too wide for one line of math: the claim as typed
    assert "\\frac{\\gamma m" in short.latex() and "= E_{RR}" in short.latex()
    assert "\\gamma m^{2} = E_{RR}" in bad.latex() and "\\approx" in bad.latex()
    assert "\\text{gamma*m" in typed.latex()
    compile_all(documents, tmp_path)


def test_icl_results_latex(tmp_path):
    """The ICL model's results (:mod:`symrmt.models.icl.results`): a limit at 15 and at 100 digits (one
    quantity a row, 40 digits a line) and a simulation, each compiled, and what a notebook shows in MathJax."""
    from symrmt.models.icl import icl_limit, icl_simulate

    documents = {}
    for i, obj in enumerate((icl_limit(1, "1/2", "1/2", "1/10"), icl_limit(1, "1/2", 2, "1/10", digits=100),
                             icl_simulate(1, "1/2", "1/2", "1/10", d=6, trials=2, seed=0))):
        body = obj.latex()
        assert "\\begin{tabular}" in body and not set("<>|") & set(text_outside_math(body)), body
        shown = obj._repr_latex_()
        assert shown.startswith("$$"), shown
        check_mathjax(shown)
        documents[f"icl{i}"], documents[f"icl_shown{i}"] = document(body), document(shown)
    compile_all(documents, tmp_path)


def test_many_digits_fit_the_page(tmp_path):
    """45 certified digits: one value per row, 40 digits a line, so nothing runs off the page."""
    th = symrmt.limit("tanh", "1/2", [0.1, 1], symrmt.Geometry(snr=1), digits=45)
    tex = th.latex()
    import mpmath

    rows = [[c.strip() for c in line.removesuffix("\\\\").split("&")] for line in tex.splitlines()
            if line.endswith("\\\\") and "&" in line][1:]
    assert len(rows) == 4 * 2  # each of the 4 values on two lines (45 digits > 40 a line)
    assert rows[0][:2] == ["0.1", "$E_A$"] and rows[1][:2] == ["", ""]
    assert (rows[0][2] + rows[1][2]).replace(" ", "") == mpmath.nstr(th.attention_mp[0], 45)
    compile_tex(document(tex), tmp_path, "digits45")


@pytest.mark.slow  # a 45-digit sweep and 60-digit crossings: seconds, outside the fast tier
def test_many_digits_sweep_and_crossings_fit(tmp_path):
    sw = symrmt.sweep("tanh", {"c": [0.5, 2], "snr": [0, 1], "gamma": 1}, digits=45, progress=False)
    cr = symrmt.crossings("Max(t, 0)", over="c", between=(0.2, 0.5), gamma=1, snr=1, center=True, digits=60,
                          scan=3, progress=False)
    tex = cr.latex()
    import mpmath

    cells = [line.split("&")[0].strip() for line in tex.splitlines() if line.endswith("\\\\") and "&" in line][1:]
    assert "".join(cells).replace(" ", "") == mpmath.nstr(cr.roots[0], 60)
    compile_all({"sweep45": document(sw.latex()), "cross60": document(tex)}, tmp_path)


# ---------------------------------------------------------------- symrmt trace EXPR --latex: the derivation

_MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"
_Z = ["--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n"]


def _trace_latex(capsys, expr, *argv):
    import json

    assert main(["trace", expr, *argv, "--json", "--latex"]) == 0
    data = json.loads(capsys.readouterr().out)
    return data["latex"], data


def _inline_math(tex: str) -> str:
    """The inline math of the prose (``$...$``), joined: where a symbol is defined in words."""
    return " ".join(re.findall(r"\$([^$]+)\$", tex))


def check_derivation(tex: str) -> None:
    """A derivation's structure: no ``%`` comment, every ``\\eqref`` has its ``\\label`` (each label once), the
    expression as typed is quoted, and the symbols of the displays are defined in the prose."""
    assert not [line for line in tex.splitlines() if line.lstrip().startswith("%")], "a comment carries text"
    labels = re.findall(r"\\label\{([^}]+)\}", tex)
    assert len(labels) == len(set(labels)) and labels
    refs = set(re.findall(r"\\eqref\{([^}]+)\}", tex))
    assert refs and refs <= set(labels), refs - set(labels)
    prose = _inline_math(tex)
    for symbol in ("Q_{1}", r"\Lambda", "L_0", r"\eta(H", r"\tau(A) = \frac{1}{N} \operatorname{tr} A",
                   r"\tau_{1}" if r"\tau_{1}" in tex else "q_{1}"):
        assert symbol in prose, symbol
    assert re.search(r"H(\^\{\(1\)\})?_\{i,j\}", prose)  # H^{(1)} when the text has several systems
    check_mathjax(tex)
    assert not set("<>|") & set(text_outside_math(tex))


def test_trace_latex_is_a_derivation_of_the_resolvent(capsys, tmp_path):
    """Marchenko-Pastur: the typed expression, the quantity, the pencil, the fixed point, the readout, and the
    value, which is the closed form's (written here, independent of the engine)."""
    import mpmath

    tex, data = _trace_latex(capsys, _MP, *_Z, "--at", "c=1/2, gamma=1/5")
    check_derivation(tex)
    assert r"\texttt{trace(inv(Z.T*Z/n + gamma*I(n)))}" in tex
    assert r"$\hat{Z} = Z/\sqrt{n}$" in tex and "$p = c\\, n$" in tex
    assert r"M_{1} &= \bigl(\hat{Z}^{\top} \hat{Z} + \gamma I_{n}\bigr)^{-1}" in tex
    assert r"E &= \tau_{1}," in tex and r"\partial" not in tex.split("where")[0]
    assert r"Q_{1} = \begin{pmatrix}-I_{p} & -\hat{Z} \\ \hat{Z}^{\top} & - \gamma I_{n}\end{pmatrix}" in tex
    assert r"M_{1} &= -\bigl(Q_{1}^{-1}\bigr)_{2,2}" in tex and r"\tau_{1} &= - H_{2,2}" in tex
    assert r"H = \Lambda^{-1}," in tex and r"\label{eq:trace-fixed-point-1}" in tex
    # the value stated in the text: the positive root of gamma m^2 + (gamma + c - 1) m - 1 = 0
    b = mpmath.mpf("0.2") + mpmath.mpf("0.5") - 1
    m = (-b + mpmath.sqrt(b * b + 4 * mpmath.mpf("0.2"))) / (2 * mpmath.mpf("0.2"))
    assert f"E &= {mpmath.nstr(m, 15)}." in tex and "15 significant digits" in tex
    compile_tex(document(tex), tmp_path, "trace-mp")


def test_trace_latex_writes_the_derivative_operator(capsys, tmp_path):
    """The ridge error without signal, -gamma^2 d/dgamma of the resolvent trace: the operator is in the quantity."""
    tex, _ = _trace_latex(capsys, "-gamma**2*diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)", *_Z,
                          "--at", "c=1/2, gamma=1/5")
    check_derivation(tex)
    assert r"E &= - \gamma^{2} \partial_{\gamma} \tau_{1}," in tex
    assert r"$\partial_{\theta}$ the derivative in the parameter $\theta$" in tex
    assert r"$\partial_{\gamma}H$ solve" in tex and r"\eqref{eq:trace-fixed-point-1}" in tex
    compile_tex(document(tex), tmp_path, "trace-ridge")


def test_trace_latex_writes_the_woodbury_system_of_a_form(capsys, tmp_path):
    """E_RR with a signal, a derivative of a quadratic form: the bulk fixed point and the Woodbury system."""
    tex, _ = _trace_latex(capsys, "-gamma**2*diff(y.T*inv(X.T*X/n + gamma*I(n))*y/n, gamma)", *_Z,
                          "--vector", "mu=vector(p)", "--vector", "y=signs(n)", "--let", "X=mu*y.T + Z",
                          "--at", "c=1/2, gamma=1/5, mu.mu=1")
    check_derivation(tex)
    assert r"E &= - \gamma^{2} \partial_{\gamma} q_{1}," in tex
    assert r"$\hat{y} = y/\sqrt{n}$" in tex and r"\langle \mu, \mu \rangle" in tex
    assert r"\bigl(\mu \hat{y}^{\top} + \hat{Z}\bigr)" in tex  # the let, written out
    assert "bulk pencil $B_{1}$" in tex and r"\label{eq:trace-woodbury-1}" in tex
    assert r"q_{1} &= e^{\top} S^{-1} f." in tex and "S = L_{UU} - V_{UB} (H \\otimes I) V_{BU}" in tex
    compile_tex(document(tex), tmp_path, "trace-form")


def test_trace_latex_of_split_atoms_and_two_traces_fits(capsys, tmp_path):
    """A split diagonal law (blocks per atom) and two traces (numbered systems) fit the page."""
    documents = {}
    tex, _ = _trace_latex(capsys, "trace(inv(Z.T*D*Z/n + G/sqrt(n) + 3*I(n)))", *_Z, "--matrix", "G=goe(n)",
                          "--matrix", "D=diag(p, (1, 4), (1/4, 3/4))", "--at", "c=1/2")
    check_derivation(tex)
    assert r"\hat{Z}^{(1,\cdot)\top}" in tex and "cut into its atoms" in tex
    documents["trace-atoms"] = document(tex)
    tex, _ = _trace_latex(capsys, "trace(inv(Z.T*Z/n + gamma*I(n)))**2 + trace(Z.T*Z/n)", *_Z,
                          "--at", "c=1/2, gamma=1/5", "--digits", "60")
    check_derivation(tex)
    assert r"E &= \tau_{1}^{2} + \tau_{2}," in tex and r"H^{(2)} = \bigl(\Lambda^{(2)}\bigr)^{-1}" in tex
    documents["trace-two"] = document(tex)
    compile_all(documents, tmp_path)

def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_quadratic_form_latex_fits_the_page(capsys, tmp_path):
    """``trace --latex`` of a quadratic form: the pencil, the fixed point, the Woodbury system and the readout,
    compiled as the other LaTeX outputs (no box > 1 pt)."""

    argv = ["trace", "y.T*inv(X.T*X/n + gamma*I(n))*y/n", "--dim", "p=c*n", "--matrix", "Z=gaussian(p,n)",
            "--vector", "mu=vector(p)", "--vector", "y=signs(n)", "--let", "X=mu*y.T + Z",
            "--at", "c=1/2, gamma=1/10, mu.mu=1", "--latex", "--json"]
    code, out, err = _run(capsys, argv)
    assert code == 0, err
    tex = json.loads(out)["latex"]
    check_derivation(tex)
    assert r"\label{eq:trace-woodbury-1}" in tex and r"q_{1} &= e^{\top} S^{-1} f." in tex
    compile_tex(document(tex), tmp_path, "qf")



@pytest.mark.slow  # seconds per call: outside the fast tier
def test_trace_latex_of_a_pencil_of_more_than_ten_blocks_compiles(capsys, tmp_path):
    """amsmath's ``pmatrix`` takes at most 10 columns (``MaxMatrixCols``): an 11-block pencil whose entries are
    narrow is written block by block, and the document compiles."""
    tex, data = _trace_latex(capsys, "trace(inv(Z.T*Z*Z.T*Z*Z.T*Z*Z.T*Z/n**4 + G*Z.T*Z*G/n**2 + gamma*I(n)))", *_Z,
                             "--matrix", "G=goe(n)", "--at", "c=1/2, gamma=1")
    check_derivation(tex)
    for mat in re.findall(r"\\begin\{pmatrix\}(.*?)\\end\{pmatrix\}", tex, flags=re.S):
        assert all(row.count("&") <= 9 for row in mat.split(r"\\")), mat[:200]
    assert "(Q_{1})_{1,1} = -I_{p}" in tex
    compile_tex(document(tex), tmp_path, "trace-eleven-blocks")
