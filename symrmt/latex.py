r"""LaTeX of the package's results (``symrmt latex RESULT``).

:func:`latex_of` returns a result's equations as an ``align`` environment, or a whole
document.  ``explicit=True`` (``symrmt latex theorem1 --explicit``) writes the general
result with every symbol defined: the pencil matrices, the fixed point and its branch,
the rotated coordinates of ``(mu, w_K, w_Q)``, the Woodbury matrix ``D`` entry by entry,
the vectors ``e`` and ``x``, and ``E_RR`` for comparison.  The matrices come from the
symbolic layer (:mod:`symrmt.symbolic.attention`), so the LaTeX is the formula the package evaluates.
"""

from __future__ import annotations

from symrmt.params import ParameterError

__all__ = ["LATEX_RESULTS", "EXPLICIT", "latex_of", "theorem1_explicit"]

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


def theorem1_explicit() -> str:
    r"""The limit of ``E_A`` (rank-one weights) as ``align`` lines, every symbol defined.

    >>> tex = theorem1_explicit()
    >>> r"\intertext" in tex and "D &=" in tex and "x &=" in tex and "e &=" in tex
    True
    """
    import sympy as sp

    from symrmt.symbolic import attention as S

    L0, A_S, P = S.noise_pencil()
    G = S.block_trace_matrix()
    N = S.c * sp.eye(3) + G * A_S
    k = 3
    coords = S.lowrank_coords(1)
    mu, wk, wq = (sp.Matrix(coords[i * k:(i + 1) * k]) for i in range(3))
    C = sp.Matrix.vstack(mu.T, sp.eye(k))
    A = sp.eye(k) + wk * wq.T
    M = (C * A * C.T).applyfunc(sp.expand)
    NC = (C * C.T).applyfunc(sp.expand)
    E_RR = S.ridge_error_in_m()
    lat = sp.latex

    lines = [
        r"\intertext{Model: tokens $x_i = y_i \mu + z_i \in \mathbb{R}^p$ ($i \le n$), labels $y_i = \pm 1$, "
        r"$z_i$ i.i.d.\ standardized; $W = I_p + w_K w_Q^\top$; kernel $K = f(X^\top W X/\sqrt{p})/\sqrt{p}$ "
        r"entry-wise, with $K_{ii} = 0$ (or kept); probe $Q(\gamma) = (K^\top X^\top X K/n + \gamma I_n)^{-1}$; "
        r"$E_A(\gamma) = \frac{\gamma^2}{n} y^\top Q(\gamma)^2 y$ in the limit $n, p \to \infty$, $c = p/n$ fixed, "
        r"$\gamma > 0$.}",
        r"\intertext{Inputs from $f$, with $\xi \sim \mathcal{N}(0, 1)$ and $f$ centered ($\mathbb{E} f(\xi) = 0$): "
        r"$a_1 = \mathbb{E}[f(\xi)\,\xi]$, $\nu = \mathbb{E}[f(\xi)^2]$, $b^2 = \nu - a_1^2$; "
        r"$d = 0$ when $K_{ii} = 0$, and $d = \lim_{t\to\infty} f(t)/t$ when the diagonal is kept.}",
        r"L_0 &= " + lat(L0) + r", \quad A_S = " + lat(A_S) + r", \quad P = " + lat(P) + r", \\",
        r"\intertext{The unknown is the symmetric $3\times 3$ matrix of normalized block traces of the inverse "
        r"of the linear pencil $L_0 \otimes I + A_S \otimes S + b P \otimes \tilde G$ "
        r"($S = Z^\top Z/p$, $\tilde G$ a Wigner matrix of variance $1/c$):}",
        r"G &= " + lat(G) + r", \qquad N = c I_3 + G A_S = " + lat(N) + r", \\",
        r"\intertext{It solves the operator-valued fixed point (free Poisson plus semicircular R-transforms), "
        r"with $\operatorname{adj}$ the adjugate; the equations the package solves are the nine entries of the "
        r"second line:}",
        r"G &= \bigl(L_0 + R(-G)\bigr)^{-1}, \qquad R(-G) = c A_S N^{-1} - \frac{b^2}{c} P G P, \\",
        r"0 &= \det N \Bigl(L_0 G - \frac{b^2}{c} P G P G - I_3\Bigr) + c A_S \operatorname{adj}(N)\, G, \\",
        r"\intertext{on the branch with $G \to \operatorname{diag}\Bigl(\frac{1}{\gamma}, "
        r"\begin{pmatrix} -c & 1 \\ 1 & 0 \end{pmatrix}\Bigr)$ as $\gamma \to \infty$ (followed by continuation "
        r"in $\gamma$). $\dot G = \partial_\gamma G$ is the solution of the linear system obtained by "
        r"differentiating these equations in $\gamma$ ($\partial_\gamma L_0$ has a single non-zero entry, 1, at "
        r"position $(1, 1)$).}",
        r"\intertext{Signal and weights: in an orthonormal basis of $\operatorname{span}(\mu, w_K, w_Q)$ write "
        r"$\mu = (m_1, m_2, m_3)$, $w_K = (k_1, k_2, k_3)$, $w_Q = (q_1, q_2, q_3)$ (any factor of their Gram "
        r"matrix: only inner products enter). With $C = \begin{pmatrix} m^\top \\ I_3 \end{pmatrix}$ and "
        r"$A = I_3 + k q^\top$:}",
        r"C A C^\top &= " + lat(M) + r", \\",
        r"C C^\top &= " + lat(NC) + r", \\",
        r"D &= \begin{pmatrix} 0_{4} & \frac{a_1}{c} (C A C^\top)^\top & 0_{4} \\ \frac{a_1}{c} C A C^\top & 0_{4} "
        r"& 0_{4} \\ 0_{4} & 0_{4} & C C^\top \end{pmatrix} \in \mathbb{R}^{12 \times 12}, \\",
        r"H &= G \otimes I_4, \qquad \dot H = \dot G \otimes I_4, \\",
        r"e &= (1, 0, \dots, 0)^\top \in \mathbb{R}^{12} \quad \text{(block 1, direction } y/\sqrt{n}\text{ of the "
        r"basis } [y, \xi_1, \xi_2, \xi_3]/\sqrt{n}), \\",
        r"x &= (I_{12} + D H)^{-1} e, \\",
        r"\frac{1}{n} y^\top Q(\gamma)\, y &\to \varphi(\gamma) = e^\top H x, \\",
        r"E_A(\gamma) &\to -\gamma^2 \partial_\gamma \varphi(\gamma) = -\gamma^2\, x^\top \dot H x. \\",
        r"\intertext{For comparison, ridge regression on the tokens, "
        r"$E_{RR}(\gamma) = \frac{\gamma^2}{n} y^\top (X^\top X/n + \gamma I_n)^{-2} y$, with "
        r"$\|\mu\|^2 = m_1^2 + m_2^2 + m_3^2$ and $m$ the Marchenko-Pastur Stieltjes transform "
        r"(the root $m > 0$ of $\gamma m^2 + (\gamma + c - 1) m - 1 = 0$):}",
        r"E_{RR}(\gamma) &\to " + lat(E_RR),
    ]
    return "\n".join(lines)


#: results with an ``--explicit`` form
EXPLICIT = {"theorem1": theorem1_explicit}


def latex_of(result: str, standalone: bool = False, explicit: bool = False) -> str:
    """The LaTeX of a result: an ``align`` environment (or a whole document with ``standalone``).

    ``explicit`` writes every symbol out (available for ``theorem1``).
    """
    from symrmt.derivations import load_module

    if result not in LATEX_RESULTS:
        raise ParameterError(f"unknown result {result!r}; known: {', '.join(sorted(LATEX_RESULTS))}")
    if explicit:
        if result not in EXPLICIT:
            raise ParameterError(f"--explicit is available for {', '.join(sorted(EXPLICIT))}, not {result!r}")
        inner = EXPLICIT[result]()
    else:
        mod = load_module(LATEX_RESULTS[result])
        if mod is None or not hasattr(mod, "latex"):
            raise ParameterError(f"result {result!r} has no LaTeX form in this version")
        inner = mod.latex().strip()
    body = "\\begin{align}\n" + inner + "\n\\end{align}\n"
    if not standalone:
        return body
    return (
        "\\documentclass{article}\n\\usepackage{amsmath,amssymb}\n\\usepackage[margin=2cm]{geometry}\n"
        "\\begin{document}\n"
        f"\\section*{{symrmt: {result}}}\n" + body + "\\end{document}\n"
    )
