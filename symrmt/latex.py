r"""LaTeX of the package's results (``symrmt latex RESULT``, ``symrmt.latex(RESULT)``): prose with inline
math between ``align`` blocks, that compiles with pdflatex (amsmath) and renders in MathJax 3.
``symrmt.latex`` is this module, and calling it, ``symrmt.latex("theorem1")``, returns a :class:`LatexText`.
"""

from __future__ import annotations

import sys
import types

from symrmt.derivations import load_module
from symrmt.errors import ParameterError
from symrmt.latex_blocks import (  # noqa: F401  (re-exported: the building blocks of every result's text)
    BLOCK_TRACES, HERMITE, LINE_CHARS, MODEL, align, document, split_equation, split_sum)

__all__ = ["LATEX_RESULTS", "EXPLICIT", "LatexText", "latex_of", "theorem1_explicit", "align", "split_equation",
           "split_sum", "document"]

#: CLI name -> derivation module with a ``latex()`` function
LATEX_RESULTS = {
    "hermite": "hermite_linearization",
    "ridge": "ridge",
    "noise-only": "noise_only",
    "theorem1": "attention_limit",
    "a1-zero": "a1_zero",
    "aligned": "aligned",
    "lowrank": "lowrank",
    "ridgeless": "ridgeless",
}

class LatexText(str):
    """LaTeX text that a notebook displays (``_repr_latex_``); otherwise a plain ``str``.

    >>> t = LatexText("$x^2$")
    >>> t == "$x^2$", t._repr_latex_() == str(t), repr(LatexText("x" * 70)).endswith("...)")
    (True, True, True)
    """

    def _repr_latex_(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"LatexText({str.__repr__(self)[:60]}{'...' if len(self) > 60 else ''})"


# ---------------------------------------------------------------------------
# theorem 1 with every symbol written out
# ---------------------------------------------------------------------------
def theorem1_explicit() -> str:
    r"""The limit of ``E_A`` (rank-one weights) with every symbol defined: prose and ``align`` blocks.

    >>> tex = theorem1_explicit()
    >>> r"\intertext" in tex, "D &=" in tex and "x = (I_{12}" in tex and "e &=" in tex
    (False, True)
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    import sympy as sp

    from symrmt.models.attention import equations as S

    L0, A_S, P = S.noise_pencil()
    G = S.block_trace_matrix()
    N = S.c * sp.eye(3) + G * A_S
    k = 3
    coords = S.lowrank_coords(1)
    mu, wk, wq = (sp.Matrix(coords[i * k:(i + 1) * k]) for i in range(3))
    A = sp.eye(k) + wk * wq.T
    E_RR = S.ridge_error_in_m()
    lat = sp.latex

    def dot(u, v):
        return " + ".join(f"{lat(a)} {lat(b)}" for a, b in zip(u, v))

    blocks = [
        r"Model: tokens $x_i = y_i \mu + z_i \in \mathbb{R}^p$ ($i \le n$), labels $y_i = \pm 1$, noise "
        r"$z_i$ with i.i.d. standardized entries, $X = [x_1, \dots, x_n]$ and $Z = [z_1, \dots, z_n]$; weights "
        r"$W = I_p + w_K w_Q^\top$; kernel $K = f(X^\top W X/\sqrt{p})/\sqrt{p}$ entry-wise, with $K_{ii} = 0$ "
        r"(or kept); probe $Q(\gamma) = (K^\top X^\top X K/n + \gamma I_n)^{-1}$ and "
        r"$E_A(\gamma) = \frac{\gamma^2}{n} y^\top Q(\gamma)^2 y$, in the limit $n, p \to \infty$ with "
        r"$c = p/n$ fixed and $\gamma > 0$.",
        r"Inputs from $f$, with $\xi \sim \mathcal{N}(0, 1)$ and $f$ centered ($\mathbb{E} f(\xi) = 0$): "
        r"$a_1 = \mathbb{E}[f(\xi)\,\xi]$, $\nu = \mathbb{E}[f(\xi)^2]$, $b^2 = \nu - a_1^2$; "
        r"$d = 0$ when $K_{ii} = 0$, and $d = \lim_{t\to\infty} f(t)/t$ when the diagonal is kept. "
        r"The linear pencil has the $3 \times 3$ coefficient matrices",
        align(r"L_0 &= " + lat(L0), r"A_S &= " + lat(A_S) + r", \qquad P = " + lat(P)),
        r"The unknown is the symmetric $3\times 3$ matrix $G$ of normalized block traces of the inverse "
        r"of the pencil $L_0 \otimes I + A_S \otimes S + b P \otimes \tilde G$, where $S = Z^\top Z/p$ and "
        r"$\tilde G$ is a Wigner matrix of variance $1/c$; $N$ is shorthand:",
        align(r"G &= " + lat(G), r"N &= c I_3 + G A_S = " + lat(N)),
        r"It solves the operator-valued fixed point (free Poisson plus semicircular R-transforms), "
        r"with $\operatorname{adj}$ the adjugate; the equations the package solves are the nine entries of the "
        r"second line:",
        align(r"G &= \bigl(L_0 + R(-G)\bigr)^{-1}, \qquad R(-G) = c A_S N^{-1} - \frac{b^2}{c} P G P",
              r"0 &= \det N \Bigl(L_0 G - \frac{b^2}{c} P G P G - I_3\Bigr) + c A_S \operatorname{adj}(N)\, G"),
        r"on the branch with $G \to \operatorname{diag}\bigl(\frac{1}{\gamma}, "
        r"\begin{pmatrix} -c & 1 \\ 1 & 0 \end{pmatrix}\bigr)$ as $\gamma \to \infty$ (followed by continuation "
        r"in $\gamma$). $\dot G = \partial_\gamma G$ is the solution of the linear system obtained by "
        r"differentiating these equations in $\gamma$ ($\partial_\gamma L_0$ has a single non-zero entry, 1, at "
        r"position $(1, 1)$).",
        r"Signal and weights: in an orthonormal basis of $\operatorname{span}(\mu, w_K, w_Q)$ write "
        r"$\mu = (m_1, m_2, m_3)$, $w_K = (k_1, k_2, k_3)$, $w_Q = (q_1, q_2, q_3)$ (any factor of their Gram "
        r"matrix: only inner products enter), $m$, $k$, $q$ for these coordinate vectors, and "
        rf"$m^\top k = {dot(coords[0:3], coords[3:6])}$, $q^\top m = {dot(coords[6:9], coords[0:3])}$, "
        r"$\|m\|^2 = m_{1}^{2} + m_{2}^{2} + m_{3}^{2} = \|\mu\|^2$. "
        r"With $C = \begin{pmatrix} m^\top \\ I_3 \end{pmatrix} \in \mathbb{R}^{4 \times 3}$ and "
        r"$A = I_3 + k q^\top$:",
        align(r"A &= " + lat(A),
              r"C A C^\top &= \begin{pmatrix} \|m\|^2 + (m^\top k)(q^\top m) & m^\top + (m^\top k)\, q^\top \\ "
              r"m + (q^\top m)\, k & A \end{pmatrix}",
              r"C C^\top &= \begin{pmatrix} \|m\|^2 & m^\top \\ m & I_3 \end{pmatrix}",
              r"D &= \begin{pmatrix} 0_{4} & \frac{a_1}{c} (C A C^\top)^\top & 0_{4} \\ \frac{a_1}{c} C A C^\top "
              r"& 0_{4} & 0_{4} \\ 0_{4} & 0_{4} & C C^\top \end{pmatrix} \in \mathbb{R}^{12 \times 12}",
              r"H &= G \otimes I_4, \qquad \dot H = \dot G \otimes I_4",
              r"e &= (1, 0, \dots, 0)^\top \in \mathbb{R}^{12}, \qquad x = (I_{12} + D H)^{-1} e",
              r"\frac{1}{n} y^\top Q(\gamma)\, y &\to \varphi(\gamma) = e^\top H x",
              r"E_A(\gamma) &\to -\gamma^2 \partial_\gamma \varphi(\gamma) = -\gamma^2\, x^\top \dot H x"),
        r"Here $e$ picks the first of the 12 coordinates: the direction $y/\sqrt{n}$ in the first block of $H$.",
        r"For comparison, ridge regression on the tokens, "
        r"$E_{RR}(\gamma) = \frac{\gamma^2}{n} y^\top (X^\top X/n + \gamma I_n)^{-2} y$, with "
        r"$\mathsf{m}$ the Marchenko-Pastur Stieltjes transform "
        r"(the root $\mathsf{m} > 0$ of $\gamma \mathsf{m}^2 + (\gamma + c - 1) \mathsf{m} - 1 = 0$):",
        align(r"E_{RR}(\gamma) &\to " + lat(E_RR.subs(S.m, sp.Symbol(r"\mathsf{m}", positive=True)))),
    ]
    return "\n\n".join(blocks) + "\n"


#: results with an ``--explicit`` form
EXPLICIT = {"theorem1": theorem1_explicit}


def latex_of(result: str, standalone: bool = False, explicit: bool = False) -> str:
    """The LaTeX of a result: prose and ``align`` blocks (or a whole document with ``standalone``).

    Takes a name of :data:`LATEX_RESULTS`; ``explicit`` writes every symbol out (available for
    ``theorem1``).  Returns the LaTeX text; raises :class:`~symrmt.errors.ParameterError` for an
    unknown name, or ``explicit`` where there is no explicit form.

    >>> latex_of("theorem2")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: unknown result 'theorem2'; known: a1-zero, aligned, hermite, lowrank, noise-only, ridge, ridgeless, theorem1
    >>> latex_of("ridge", explicit=True)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --explicit is available for theorem1, not 'ridge'
    """
    if result not in LATEX_RESULTS:
        raise ParameterError(f"unknown result {result!r}; known: {', '.join(sorted(LATEX_RESULTS))}")
    if explicit:
        if result not in EXPLICIT:
            raise ParameterError(f"--explicit is available for {', '.join(sorted(EXPLICIT))}, not {result!r}")
        body = EXPLICIT[result]()
    else:
        mod = load_module(LATEX_RESULTS[result])
        if mod is None or not hasattr(mod, "latex"):
            raise ParameterError(f"result {result!r} has no LaTeX form in this version")
        body = mod.latex().strip()
        if "\\begin{" not in body:  # the lines of one align environment
            body = "\\begin{align}\n" + body + "\n\\end{align}"
    body = body.rstrip() + "\n"
    if not standalone:
        return body
    return document(body, f"symrmt: {result}")


class _LatexModule(types.ModuleType):
    """``symrmt.latex`` is callable: ``symrmt.latex("theorem1")`` is :func:`latex_of` as a :class:`LatexText`."""

    def __call__(self, result: str, explicit: bool = False, standalone: bool = False) -> LatexText:
        return LatexText(latex_of(result, standalone=standalone, explicit=explicit))


if isinstance(sys.modules.get(__name__), types.ModuleType):
    sys.modules[__name__].__class__ = _LatexModule
