r"""The building blocks of the package's LaTeX: ``align`` and ``equation``/``split`` environments, sums
broken to fit the line, a whole ``article`` around a body, and the sentences that state the model and
the Hermite data.
"""

from __future__ import annotations

__all__ = ["BLOCK_TRACES", "FIXED_POINT_LABEL", "HERMITE", "LINE_CHARS", "MODEL", "align", "document", "fixed_point",
           "split_equation", "split_sum"]

#: a line of display math holds about this many characters of LaTeX source (the default
#: ``article`` text width is 345 pt; :func:`split_sum` breaks sums to fit)
LINE_CHARS = 64


# ---------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------
def align(*lines: str) -> str:
    r"""An ``align`` environment, one numbered line per argument (``&`` marks the alignment).

    >>> print(align("a &= 1", "b &= 2"))
    \begin{align}
    a &= 1, \\
    b &= 2.
    \end{align}
    """
    body = [line + ("," if i < len(lines) - 1 else ".") for i, line in enumerate(lines)]
    return "\\begin{align}\n" + " \\\\\n".join(body) + "\n\\end{align}"


def split_equation(*lines: str) -> str:
    r"""One equation (one number) over several lines: ``equation`` around ``split``.

    >>> print(split_equation("P &= a", r"&\quad + b"))
    \begin{equation}
    \begin{split}
    P &= a \\
    &\quad + b
    \end{split}
    \end{equation}
    """
    return "\\begin{equation}\n\\begin{split}\n" + " \\\\\n".join(lines) + "\n\\end{split}\n\\end{equation}"


def split_sum(expr, first: int = LINE_CHARS, width: int = LINE_CHARS) -> list:
    r"""The terms of the sum ``expr`` (SymPy) as LaTeX chunks of at most about ``width`` characters
    (the first ``first``); each chunk after the first starts with its sign.

    >>> import sympy as sp
    >>> a, b = sp.symbols("a b")
    >>> split_sum(a + b, 10, 10)
    ['a + b']
    >>> split_sum(a**2 - 2*a*b + b**2, 8, 8)
    ['a^{2}', '- 2 a b', '+ b^{2}']
    """
    # import-time cost: the CLI's start loads no SymPy
    import sympy as sp

    texs = [sp.latex(t) for t in sp.sympify(expr).as_ordered_terms()]
    pieces = texs[:1] + [f"- {t[1:].lstrip()}" if t.startswith("-") else f"+ {t}" for t in texs[1:]]
    chunks = [pieces[0]]
    for piece in pieces[1:]:
        limit = first if len(chunks) == 1 else width
        if len(chunks[-1]) + 1 + len(piece) > limit:
            chunks.append(piece)
        else:
            chunks[-1] += " " + piece
    return chunks


def document(body: str, title: str = "") -> str:
    r"""A whole ``article`` (amsmath, amssymb) around ``body``, with ``title`` as an unnumbered section.

    >>> print(document("$x = 1$", "one"), end="")
    \documentclass{article}
    \usepackage{amsmath,amssymb}
    \begin{document}
    \section*{one}
    $x = 1$
    \end{document}
    """
    head = f"\\section*{{{title}}}\n" if title else ""
    return ("\\documentclass{article}\n\\usepackage{amsmath,amssymb}\n\\begin{document}\n" + head + body.rstrip()
            + "\n\\end{document}\n")


#: the model (prose and one ``align``): every result's LaTeX starts from it
MODEL = (r"Tokens $x_i = y_i \mu + z_i \in \mathbb{R}^p$ ($i \le n$), with labels $y_i = \pm 1$ and noise "
         r"$z_i$ of i.i.d. standardized entries, form $X = [x_1, \dots, x_n]$. With the weights "
         r"$W = I_p + w_K w_Q^\top$, the kernel (entry-wise, its diagonal set to 0 or kept), the resolvent "
         r"and the interpolation errors of Attention and of ridge regression are" "\n"
         r"\begin{align}" "\n"
         r"K &= f(X^\top W X/\sqrt{p})/\sqrt{p}, \qquad Q(\gamma) = (K^\top X^\top X K/n + \gamma I_n)^{-1}, \\"
         "\n"
         r"E_A(\gamma) &= \frac{\gamma^2}{n} y^\top Q(\gamma)^2 y, \qquad "
         r"E_{RR}(\gamma) = \frac{\gamma^2}{n} y^\top (X^\top X/n + \gamma I_n)^{-2} y," "\n"
         r"\end{align}" "\n"
         r"in the limit $n, p \to \infty$ with $c = p/n$ fixed and $\gamma > 0$.")

#: the Hermite data of ``f`` in one sentence
HERMITE = (r"With $\xi \sim \mathcal{N}(0, 1)$ and $f$ centered ($\mathbb{E} f(\xi) = 0$): "
           r"$a_1 = \mathbb{E}[f(\xi)\,\xi]$, $\nu = \mathbb{E}[f(\xi)^2]$, $b^2 = \nu - a_1^2$; "
           r"$d = 0$ when the diagonal of $K$ is set to 0, and $d = \lim_{t\to\infty} f(t)/t$ when it is kept.")

#: the block traces of the noise-only pencil (theorem 1): a sentence that :func:`fixed_point` completes
BLOCK_TRACES = (r"$G = (G_{ij})$ is the symmetric $3 \times 3$ matrix of normalized block traces of the "
                r"inverse of the noise-only pencil $L_0 \otimes I_n + A_S \otimes S + A_G \otimes \tilde G$ "
                r"($S = Z^\top Z/p$ with $Z = [z_1, \dots, z_n]$, $\tilde G$ a Wigner matrix of variance $1/c$): the "
                r"pencil at $\mu = 0$ and $W = I_p$, so that $G$ depends on $c, \gamma, a_1, \nu, d$ only. It is "
                r"the solution of the fixed point $\eqref{" + "eq:fixed-point" + r"}$ below.")

#: the ``\label`` of the fixed point that :func:`fixed_point` writes (``\eqref{eq:fixed-point}``)
FIXED_POINT_LABEL = "eq:fixed-point"


def fixed_point(lead: str = BLOCK_TRACES) -> str:
    r"""The fixed point of theorem 1 restated, for a text that uses its ``G``: ``lead`` (by default
    :data:`BLOCK_TRACES`, which defines ``G``), the pencil's coefficient matrices ``L_0``, ``A_S``, ``A_G``,
    and the fixed point (numbered, ``\label{eq:fixed-point}``) with its branch and ``\partial_\gamma G``.
    The symbols ``a_1, 
u, b, d`` are those of :data:`HERMITE`; the matrices come from the symbolic layer.

    >>> tex = fixed_point()
    >>> r"\label{eq:fixed-point}" in tex and "L_0 &=" in tex and r"\partial_\gamma G" in tex
    True
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    import sympy as sp

    from symrmt.models.attention import equations as S

    L0, A_S, P, _ = S.r_transform_equation()
    return "\n\n".join([
        lead + " The coefficient matrices of the pencil are",
        align(r"L_0 &= " + sp.latex(L0),
              r"A_S &= " + sp.latex(A_S) + r", \qquad A_G = b\," + sp.latex(P)),
        r"On the branch with "
        r"$G \to \operatorname{diag}\bigl(\frac{1}{\gamma}, \begin{pmatrix} -c & 1 \\ 1 & 0 \end{pmatrix}\bigr)$ "
        r"as $\gamma \to \infty$ (continued in $\gamma$), $G$ solves",
        align(r"G &= \bigl(L_0 + R(-G)\bigr)^{-1}, \qquad R(B) = A_S \bigl(I_3 - \tfrac{1}{c} B A_S\bigr)^{-1}"
              r" + \tfrac{1}{c} A_G B A_G \label{" + FIXED_POINT_LABEL + "}"),
        r"$\partial_\gamma G$ is its derivative in $\gamma$, the solution of the linear system obtained by "
        r"differentiating $\eqref{" + FIXED_POINT_LABEL + r"}$ in $\gamma$.",
    ])
