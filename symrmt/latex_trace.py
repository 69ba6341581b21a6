r"""The derivation of an engine limit in LaTeX (``symrmt trace EXPR --latex``, :func:`trace_derivation`).

The text is built from the engine's symbolic objects, nothing retyped: the normalized expression tree
(the quantity, with ``diff`` written as :math:`\partial_\theta`), the linear pencil of each trace
(``Pencil.Q``, ``u``, ``v``), its block fixed point (``BlockSystem.L0``, ``eta``, ``H``, ``readout``) and,
for a quadratic form, the Woodbury system (``FormPlan.S``, ``e``, ``f``).  Every symbol is defined in
prose, every equation is numbered and referred to by number (``\eqref``), and the text keeps to what
both pdflatex (amsmath, the default ``article`` page) and MathJax 3 render: inline math in the prose,
``equation``/``split`` displays, no macro outside math.  A matrix too wide for the page is written
block by block.
"""

from __future__ import annotations

import re

import sympy as sp

from symrmt.engine.lang.matrices import Const, Diff, Trace, walk
from symrmt.engine.lang.vectors import LAWS, QuadForm
from symrmt.engine.reduce.fixed_point import tex_name, S_STRENGTH
from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.engine.reduce.plan import multi_index, scalar_formula
from symrmt.errors import ModelError
from symrmt.latex_blocks import document

__all__ = ["trace_derivation", "typed_tex"]

#: a line break is allowed where the matrix printer puts this marker (removed from the output)
_BREAK = "\x01"
#: most lines of one display (a display does not break across pages)
MAX_LINES = 16
#: estimated width of a display line, in characters of rendered math (the ``article`` text width)
_WIDTH = 52
#: most columns of an amsmath ``pmatrix`` (its ``MaxMatrixCols``, 10 unless a preamble raises it)
MAX_COLUMNS = 10


def typed_tex(text: str, width: int = 48) -> list:
    r"""The expression as typed, as ``\texttt`` pieces of about ``width`` characters (for the lines of a display).

    >>> typed_tex("trace(inv(Z.T*Z/n + gamma*I(n)))")
    ['\\texttt{trace(inv(Z.T*Z/n + gamma*I(n)))}']
    >>> len(typed_tex("a_b*" * 12, 20))
    3
    """
    pieces, cur = [], ""
    for ch in text:
        cur += ch
        if len(cur) >= width and ch in "*+-/,) ":
            pieces.append(cur)
            cur = ""
    if cur:
        pieces.append(cur)
    esc = {"_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#", "$": r"\$", "{": r"\{", "}": r"\}", "\\": "/",
           "^": "**", "~": "-"}
    out = []
    for p in pieces:
        body = "".join(esc.get(ch, ch) for ch in p).strip()
        if body:
            out.append(r"\texttt{" + body + "}")
    return out


# ---------------------------------------------------------------- printing the tree

def _name(name: str, hat: bool = False, transposed: bool = False) -> str:
    """:func:`symrmt.engine.reduce.fixed_point.tex_name`, and a name with an underscore (``G_Z``) as a subscript."""
    name = name.lstrip("_")  # an internal name of the engine (``_A_sym``: the symmetric part of an elliptic A)
    m = re.fullmatch(r"([A-Za-z]+\d*)_([A-Za-z0-9]+)", name)
    if m is None:
        return tex_name(name, hat=hat, transposed=transposed)
    sub = m.group(2) if len(m.group(2)) == 1 or m.group(2).isdigit() else rf"\mathrm{{{m.group(2)}}}"
    return tex_name(m.group(1), hat=hat) + f"_{{{sub}}}" + (r"^{\top}" if transposed else "")


#: a number whose exact LaTeX is longer than this is shown rounded to ROUND_DIGITS significant digits
LONG_NUMBER, ROUND_DIGITS = 24, 8
#: set by :func:`_rounded` when a number of the text was rounded (the text then says so)
_ROUNDED = []


def _rounded(e):
    """``e`` with each long exact number (a Gaussian-equivalent kernel's Hermite coefficients) rounded."""
    def short(x):
        if len(sp.latex(x)) <= LONG_NUMBER:
            return x
        _ROUNDED.append(x)
        return sp.Float(x.evalf(ROUND_DIGITS + 4), ROUND_DIGITS)

    if e.is_number:
        return short(e)
    if not e.args:
        return e
    if e.is_Mul:
        num = sp.Mul(*[a for a in e.args if a.is_number])
        return short(num) * sp.Mul(*[_rounded(a) for a in e.args if not a.is_number])
    return e.func(*[_rounded(a) for a in e.args])


def _sym_tex(expr) -> str:
    """SymPy LaTeX of a coefficient, parameters named as in the rest of the text (long numbers rounded)."""
    expr = _rounded(sp.sympify(expr))
    repl = {}
    for s in expr.free_symbols:
        if "." in s.name:
            a, b = s.name.split(".", 1)
            repl[s] = sp.Symbol(rf"\langle {_name(a)}, {_name(b)} \rangle")
        elif s.name == "v_atom":
            repl[s] = sp.Symbol("v")
        elif _name(s.name) != s.name:
            repl[s] = sp.Symbol(_name(s.name))
    return sp.latex(expr.xreplace(repl))


def _matrix_tex(m) -> str:
    """LaTeX of a normalized matrix node (Gaussians and random vectors as normalized), with break markers."""
    kind = m.kind
    if kind in ("gaussian", "goe"):
        return _name(m.name, hat=True)
    if kind == "identity":
        return f"I_{{{_name(m.rows.name)}}}"
    if kind == "diag":
        return _name(m.name)
    if kind == "vector":
        return _name(m.name, hat=m.random)
    if kind == "transpose":
        if m.matrix.kind in ("gaussian", "goe", "vector"):
            return _name(m.matrix.name, hat=m.matrix.kind != "vector" or m.matrix.random, transposed=True)
        inner = _matrix_tex(m.matrix)
        return (inner if _atomic(m.matrix) else rf"\bigl({inner}\bigr)") + r"^{\top}"
    if kind == "inverse":
        inner = _matrix_tex(m.matrix)
        return (inner if _atomic(m.matrix) else rf"\bigl({inner}\bigr)") + "^{-1}"
    if kind == "scaled":
        c = _scalar_coef(m.scalar)
        inner = _matrix_tex(m.matrix)
        if m.matrix.kind == "sum":
            inner = rf"\bigl({inner}\bigr)"
        if c == "1":
            return inner
        if c == "-1":
            return "-" + inner
        if isinstance(_rounded(sp.sympify(m.scalar.value)), sp.Add):
            c = rf"\left({c}\right)"
        return f"{c} {inner}"
    if kind == "sum":
        out = _matrix_tex(m.terms[0])
        for t in m.terms[1:]:
            tex = _matrix_tex(t)
            out += f" {_BREAK}- {tex[1:].lstrip()}" if tex.startswith("-") else f" {_BREAK}+ {tex}"
        return out
    if kind == "product":
        parts = []
        for f in m.factors:
            tex = _matrix_tex(f)
            parts.append(rf"\bigl({tex}\bigr)" if f.kind == "sum" or (f.kind == "scaled" and tex.startswith("-")
                                                                       and parts) else tex)
        return f" {_BREAK}".join(parts)
    raise ModelError(f"the derivation has no LaTeX for the matrix node {kind!r}")


def _atomic(m) -> bool:
    return m.kind in ("gaussian", "goe", "identity", "diag", "vector")


def _scalar_coef(s) -> str:
    if isinstance(s, Const):
        return _sym_tex(s.value)
    raise ModelError("the derivation writes a matrix times a constant only (a trace times a matrix has no LaTeX "
                     "form here)")


def _visible(tex: str) -> int:
    """A rough count of the characters ``tex`` sets (for line breaking)."""
    t = re.sub(r"\\(left|right|bigl|bigr|begin\{matrix\}|end\{matrix\})", "", tex)
    t = re.sub(r"\\(top|quad|qquad)", " ", t)
    t = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", lambda mm: max(mm.group(1), mm.group(2), key=len), t)
    t = re.sub(r"\\[A-Za-z]+", "x", t)
    return len(re.sub(r"[{}^_\s&\\]", "", t)) + t.count(" + ") + t.count(" - ")


def _lines(tex: str, first: int = _WIDTH, width: int = _WIDTH) -> list:
    """``tex`` cut at its break markers (at brace depth 0) into lines of about ``width`` characters."""
    chunks, depth, cur = [], 0, ""
    for ch in tex:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == _BREAK:
            if depth == 0:
                chunks.append(cur)
                cur = ""
            continue
        cur += ch
    chunks.append(cur)
    lines = [chunks[0]]
    for c in chunks[1:]:
        limit = first if len(lines) == 1 else width
        if _visible(lines[-1] + c) > limit:
            lines.append(c.lstrip())
        else:
            lines[-1] += c
    return [line.strip() for line in lines]


def _display(lhs: str, rhs: str, label: str, end: str = ".") -> str:
    r"""One numbered equation ``lhs = rhs``, broken over lines at the markers when it is too wide."""
    lines = _lines(rhs, _WIDTH - _visible(lhs))
    body = [f"{lhs} &= {lines[0]}"] + [rf"&\quad {line}" for line in lines[1:]]
    body[-1] += end
    return ("\\begin{equation}\n\\begin{split}\n" + " \\\\\n".join(body) + "\n\\end{split}\n\\label{" + label
            + "}\n\\end{equation}")


def _matrix_fits(entries: dict, size: int) -> bool:
    """Whether a ``size x size`` matrix with these entries fits one line of the page (and a ``pmatrix``)."""
    if size > MAX_COLUMNS:
        return False
    widths = [max([_visible(t) for (i, j), t in entries.items() if j == col] + [1]) for col in range(size)]
    return sum(widths) + 2 * size <= _WIDTH + 8


def _row_tex(entries: list) -> str:
    """A row vector: a ``pmatrix`` of one row, or a bracketed list past its column limit."""
    if len(entries) <= MAX_COLUMNS:
        return r"\begin{pmatrix}" + " & ".join(entries) + r"\end{pmatrix}"
    return r"\bigl(" + ", ".join(entries) + r"\bigr)"


def _matrix_display(name: str, entries: dict, size: int, label: str, end: str = ".") -> str:
    """A numbered display of the matrix ``name`` (entries ``(i, j) -> LaTeX``): the whole matrix when it fits
    the page, else its non-zero blocks, several to a line."""
    if _matrix_fits(entries, size):
        rows = [" & ".join(entries.get((i, j), "0") for j in range(size)) for i in range(size)]
        mat = r"\begin{pmatrix}" + r" \\ ".join(rows) + r"\end{pmatrix}"
        return f"\\begin{{equation}}\n{name} = {mat}{end}\n\\label{{{label}}}\n\\end{{equation}}"
    base = f"({name})" if "_" in name or "^" in name else name
    items = [f"{base}_{{{i + 1},{j + 1}}} = {t}" for (i, j), t in sorted(entries.items())]
    lines = [items[0]]
    for it in items[1:]:
        if _visible(lines[-1] + it) + 3 > _WIDTH:
            lines.append(it)
        else:
            lines[-1] += r", \quad " + it
    out = []
    for line in lines:  # a single block wider than the page: cut it at its own break markers
        head, _, rhs = line.partition(" = ")
        if _visible(line) > _WIDTH and _BREAK in rhs:
            parts = _lines(rhs, _WIDTH - _visible(head))
            out += [f"&{head} = {parts[0]}"] + [rf"&\qquad {p}" for p in parts[1:]]
        else:
            out.append("&" + line)
    out = [line.replace(_BREAK, "") for line in out]
    body = [line + "," for line in out[:-1]] + [out[-1] + end]
    # a display does not break across pages: at most MAX_LINES lines each, the first one labelled
    parts = [body[k:k + MAX_LINES] for k in range(0, len(body), MAX_LINES)]
    return "\n".join("\\begin{equation}\n\\begin{split}\n" + " \\\\\n".join(part) + "\n\\end{split}\n"
                     + ("\\label{" + label + "}\n" if k == 0 else "") + "\\end{equation}" for k, part in enumerate(parts))


# ---------------------------------------------------------------- the pieces of the derivation

def _leaf_tex(leaf, block, random: set) -> str:
    if leaf == "I":
        return f"I_{{{_block_tex(block)}}}"
    if leaf[0] == "Z":
        return _name(leaf[1], hat=True, transposed=leaf[2])
    if leaf[0] == "V":
        return _name(leaf[1], hat=leaf[1] in random, transposed=leaf[2])
    if leaf[0] == "G":
        return _name(leaf[1], hat=True)
    return _name(leaf[1])


def _block_tex(block) -> str:
    """A block's dimension: ``p``, ``1`` (a vector's unit dimension) or ``p^{(a)}`` (atom ``a`` of a split law)."""
    return ("1" if block[0] == "1" else _name(block[0])) + ("" if block[1] is None else f"^{{({block[1]})}}")


def _entry_tex(e: dict, block, random: set) -> str:
    """A pencil block ``sum coef * leaf`` in LaTeX."""
    terms = []
    for leaf, c in sorted(e.items(), key=lambda kv: str(kv[0])):
        c = sp.sympify(c).subs(EPS_SHIFT, 0)
        if c == 0:
            continue
        leaf_tex = _leaf_tex(leaf, block, random)
        if c == 1:
            t = leaf_tex
        elif c == -1:
            t = "-" + leaf_tex
        else:
            ct = _sym_tex(c)
            if isinstance(c, sp.Add):
                ct = rf"\left({ct}\right)"
            t = f"{ct} {leaf_tex}"
        terms.append(t)
    if not terms:
        return "0"
    out = terms[0]
    for t in terms[1:]:
        out += f" {_BREAK}- {t[1:].lstrip()}" if t.startswith("-") else f" {_BREAK}+ {t}"
    return out


def _inline(items) -> str:
    """A list of math items, each in its own ``$...$`` (the line may break between them)."""
    return ", ".join(f"${x}$" for x in items)


def _h_names(system, k: int, many: bool) -> dict:
    """The unknowns ``H_{i,j}`` of a system (``H^{(k)}_{i,j}`` when the text has several systems)."""
    sup = f"^{{({k})}}" if many else ""
    return {x: sp.Symbol(f"H{sup}_{{{i + 1},{j + 1}}}") for x, (i, j) in zip(system.h, system.unknowns)}


def _h_tex(expr, names: dict) -> str:
    expr = sp.sympify(expr).subs({EPS_SHIFT: 0, S_STRENGTH: 1}).xreplace(names)
    if expr == 0:
        return "0"
    terms = [_sym_tex(t) for t in sp.expand(expr).as_ordered_terms()]
    out = terms[0]
    for t in terms[1:]:
        out += f" {_BREAK}- {t[1:].lstrip()}" if t.startswith("-") else f" {_BREAK}+ {t}"
    return out


def _pencil_section(pencil, tag: str, what: str, M_tex: str, is_form: bool, random: set) -> list:
    """The pencil ``Q`` of one trace or form, with ``u`` and ``v`` (the readout of ``M`` from ``Q^{-1}``)."""
    blocks = _inline(_block_tex(b) for b in pencil.blocks)
    entries = {ij: _entry_tex(e, pencil.blocks[ij[0]], random) for ij, e in pencil.Q.items()}
    entries = {ij: t for ij, t in entries.items() if t != "0"}
    Qn = f"Q_{{{tag}}}"
    out = [rf"{what} is read off the inverse of the linear pencil ${Qn}$, a ${pencil.size} \times {pencil.size}$ "
           rf"matrix of blocks of sizes {blocks} (in units of the dimension of each block"
           + (r"; $1$ is the unit dimension of a vector" if is_form else "") + "): "
           + r"each entry is a multiple of an identity, of a normalized random matrix or of a vector, and a "
           r"block that is not written is zero.",
           _matrix_display(Qn, entries, pencil.size, f"eq:trace-pencil-{tag}")]
    if any(b[1] is not None for b in pencil.blocks):
        out.insert(1, r"A dimension $d$ that carries a diagonal law is cut into its atoms: $d^{(a)}$ is the part of "
                   r"it (a fraction $w_a$) on which the law takes its value $v_a$, $a = 0, 1, \dots$ in the order of "
                   r"the law above, and a superscript $(a, b)$ on a random matrix is its block on the rows of atom $a$ "
                   r"and the columns of atom $b$ ($\cdot$ where its dimension is not cut).")
    u = {i: c for i, c in pencil.u.items() if c != 0}
    v = {j: c for j, c in pencil.v.items() if c != 0}
    pairs = [(i, j, cu * cv) for i, cu in sorted(u.items()) for j, cv in sorted(v.items())]
    rhs = f" {_BREAK}+ ".join(f"{'' if c == 1 else '-' if c == -1 else _sym_tex(c) + ' '}"
                              f"\\bigl({Qn}^{{-1}}\\bigr)_{{{i + 1},{j + 1}}}" for i, j, c in pairs)
    rhs = rhs.replace(f"{_BREAK}+ -", f"{_BREAK}- ")
    out.append(("The form" if is_form else "The matrix of the trace") + " is a combination of blocks of the inverse:")
    out.append(_display(M_tex, rhs, f"eq:trace-readout-{tag}"))
    return out


def _fixed_point_section(system, tag: str, many: bool, pencil_label: str, readout: dict | None, quantity: str,
                         derivs: list, pencil: str | None = None) -> list:
    """The block fixed point ``H = (L_0 - eta(H))^{-1}`` of one pencil and, for a trace, its readout."""
    names = _h_names(system, tag, many)
    sup = f"^{{({tag})}}" if many else ""
    size = system.H.shape[0]
    L0 = system.L0.subs(EPS_SHIFT, 0)
    lam = {(i, j): _h_tex(L0[i, j] - system.eta[i, j], names) for i in range(size) for j in range(size)
           if L0[i, j] != 0 or system.eta[i, j] != 0}
    unknowns = _inline(f"H{sup}_{{{i + 1},{j + 1}}}" for i, j in system.unknowns)
    fixed = [(ij, e) for ij, e in (system.entries or {}).items() if ij not in system.unknowns]
    if fixed:  # entries the system fixes exactly (symrmt.engine.reduce.merge), substituted in Lambda
        rel = _inline(f"H{sup}_{{{i + 1},{j + 1}}} = {_h_tex(e, names)}" for (i, j), e in fixed)
        unknowns += (rf"; the system fixes {rel} exactly (each proved by substituting it: every equation of "
                     r"the dropped entries becomes zero or another equation), and these relations are written into "
                     r"$\Lambda$ below")
    Qn = pencil or f"Q_{{{tag}}}"
    out = [rf"Let $H{sup}_{{i,j}}$ be the limit of the normalized trace of block $(i, j)$ of ${Qn}^{{-1}}$ "
           rf"(defined where the two blocks have the same dimension; the unknowns are {unknowns}; the other "
           rf"entries of $H{sup}$ are zero). The deterministic equivalent of ${Qn}^{{-1}}$ is "
           rf"$\bigl(\Lambda{sup} \otimes I\bigr)^{{-1}}$, where $\Lambda{sup} = L_0 - \eta(H{sup})$: $L_0$ holds the "
           r"coefficients of the identity blocks of "
           rf"$\eqref{{{pencil_label}}}$, and $\eta(H{sup})$ the second moments of its random blocks "
           r"($\mathbb{E}\,\hat Z M \hat Z^{\top} = \frac{b}{n} \tau(M)\, I_a$ for an $a \times b$ Gaussian, "
           r"$\mathbb{E}\,\hat G M \hat G = \frac{a}{n} \tau(M)\, I_a$ for a GOE of size $a$). Here",
           _matrix_display(rf"\Lambda{sup}", lam, size, f"eq:trace-lambda-{tag}", end=","),
           rf"and $H{sup}$ solves the fixed point",
           "\\begin{equation}\n" + (rf"H{sup} = \bigl(\Lambda{sup}\bigr)^{{-1}}," if sup else r"H = \Lambda^{-1},")
           + "\n\\label{" + f"eq:trace-fixed-point-{tag}" + "}\n\\end{equation}",
           rf"on the branch reached from $H{sup} = L_0^{{-1}}$ by scaling the random part of the pencil from $0$ "
           rf"to $1$ (equation $\eqref{{eq:trace-lambda-{tag}}}$ with $\eta$ multiplied by the homotopy strength)."]
    if hasattr(system, "law"):  # a diagonal law of many atoms, reduced to weighted sums (symrmt.engine.reduce.atoms)
        law = system.law
        out.append(rf"The diagonal law of ${_name(law.name)}$ has ${len(system.values)}$ atoms $v_a$ of weights $w_a$; "
                   rf"the pencil is written with one template atom: ${_name(law.name)}$ is replaced by $v I$ in "
                   rf"$\eqref{{eq:trace-lambda-{tag}}}$. The entries of $H{sup}$ on the blocks of dimension "
                   rf"${_name(law.dim.name)}$ are the weighted sums $\sum_a w_a H^{{(a)}}$, where $H^{{(a)}}$ are the "
                   rf"same entries of $\bigl(\Lambda{sup}\bigr)^{{-1}}$ at $v = v_a$, the other entries as in "
                   rf"$\eqref{{eq:trace-fixed-point-{tag}}}$.")
    if readout is not None:
        rhs = _h_tex(sum((c * system.H[i, j] for (i, j), c in readout.items()), sp.Integer(0)), names)
        out += [rf"By $\eqref{{eq:trace-readout-{tag}}}$, the limit of the trace is",
                _display(quantity, rhs, f"eq:trace-value-{tag}")]
    if derivs:
        ops = ", ".join("$" + _partial(alpha) + f"H{sup}$" for alpha in derivs)
        out.append(rf"The derivatives {ops} solve the linear systems obtained by differentiating "
                   rf"$\eqref{{eq:trace-fixed-point-{tag}}}$ (with $\eqref{{eq:trace-lambda-{tag}}}$) in the "
                   r"parameters, at the solution.")
    return out


def _partial(alpha) -> str:
    """``\\partial_{\\gamma}`` for a multi-index of parameters (repeated for higher orders)."""
    return " ".join(rf"\partial_{{{_name(a.name)}}}" for a in alpha)


def _woodbury_section(form, tag: str, many: bool) -> list:
    """The Schur (Woodbury) system of a quadratic form on its unit blocks."""
    names = _h_names(form.system, tag, many) if form.system is not None else {}
    k = len(form.units)
    S = {(i, j): _h_tex(form.S[i, j], names) for i in range(k) for j in range(k) if form.S[i, j] != 0}
    e, f = (_row_tex([_sym_tex(x) for x in v]) for v in (form.e, form.f))
    f += r"^{\top}"
    units = _inline(str(u + 1) for u in form.units)
    Qn = f"Q_{{{tag}}}"
    sup = f"^{{({tag})}}" if many else ""
    fp = (rf"$H{sup}$ of $\eqref{{eq:trace-fixed-point-{tag}}}$ (the vectors are of finite rank and do not move "
          r"the normalized block traces)") if form.system is not None else "no random block"
    return [rf"The unit blocks of ${Qn}$ (blocks {units}) hold the vectors. Eliminating the other blocks "
            rf"(Schur's complement: the Woodbury system on the span of the vectors) with {fp}, "
            r"the form is $e^{\top} S^{-1} f$, where $S = L_{UU} - V_{UB} (H \otimes I) V_{BU}$ is the "
            r"$" + f"{k} \\times {k}" + r"$ matrix of the unit blocks: $L_{UU}$ their constant part, "
            r"$V_{BU}$ and $V_{UB}$ the vectors between them and the other blocks, and "
            r"$\langle a, b \rangle$ the limit of the inner product of two of its vectors (the parameter $a.b$ of two "
            r"deterministic vectors; for a normalized random vector $\hat{y}$ of dimension $d$, "
            r"$\langle \hat{y}, \hat{y} \rangle = d/n$ and $0$ with any other vector). Here",
            _matrix_display("S", S, k, f"eq:trace-woodbury-{tag}", end=","),
            rf"$e = {e}$ and $f = {f}$ (the readout of $\eqref{{eq:trace-readout-{tag}}}$ on the unit blocks), so that",
            _display(f"q_{{{tag}}}", r"e^{\top} S^{-1} f", f"eq:trace-form-{tag}")]


def trace_derivation(model, expr, text: str | None = None, at: dict | None = None, value: str | None = None,
                     digits: int | None = None, standalone: bool = False, hermitized=()) -> str:
    r"""The derivation of the limit of ``expr`` as LaTeX: the expression as typed, the quantity (with
    :math:`\partial_\theta` for each ``diff``), and for each trace and quadratic form its linear pencil, its
    block fixed point and (a form) its Woodbury system, every symbol defined in prose and every equation
    numbered.

    Parameters
    ----------
    model : symrmt.engine.Model
        The model that declares the names of ``expr``.
    expr : str or ScalarNode
        The expression (a text goes through the model's restricted parser).
    text : str, optional
        The expression as the user typed it (default: ``expr`` when it is a text).
    at, value, digits : optional
        Parameter name -> value as typed, the certified value there (a decimal text) and its number of
        significant digits: with ``value``, the last sentence states the result.
    standalone : bool
        A whole ``article`` instead of the body.
    hermitized : sequence of int
        The traces (by index, from 0) that the limit solved by Hermitization (``TraceLimit.hermitized``): the
        text says that their value does not come from the fixed point it writes.

    Returns
    -------
    str
        Prose with inline math between ``equation`` displays (pdflatex and MathJax 3).

    Raises
    ------
    symrmt.errors.ModelError
        The expression has no symbolic plan (the engine's message).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n")
    >>> tex = trace_derivation(m, "-gamma**2*diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)")
    >>> r"- \gamma^{2} \partial_{\gamma} \tau_{1}" in tex, r"\label{eq:trace-fixed-point-1}" in tex
    (True, True)
    """
    if text is None:
        text = expr if isinstance(expr, str) else repr(expr)
    _ROUNDED.clear()
    plan = model.plan(expr)
    hat = plan.hat
    forms = list(getattr(plan, "forms", []))
    traces = [t for t in plan.traces if t.matrix is not None]
    many = len(traces) + len(forms) > 1
    tags = {}
    for n, t in enumerate(traces):
        tags[("t", t.index)] = str(n + 1)
    for n, f in enumerate(forms):
        tags[("f", f.index)] = str(len(traces) + n + 1)
    tindex = {t.matrix: t for t in traces}
    findex = {f.matrix: f for f in forms}
    # the quantity, from the normalized tree: tau_k and q_k as functions of the parameters
    params = sorted(set().union(*(sp.sympify(p).free_symbols for p in getattr(plan, "params", []))) or set(),
                    key=lambda s: s.name)
    funcs = {}  # LaTeX name -> a SymPy function of the parameters (a symbol without parameters)

    def fn(name):
        if name not in funcs:
            funcs[name] = sp.Function(f"F{len(funcs)}")(*params) if params else sp.Symbol(f"F{len(funcs)}")
        return funcs[name]

    def leaf(s):
        if isinstance(s, Trace):
            return fn(rf"\tau_{{{tags[('t', tindex[s.matrix].index)]}}}")
        if isinstance(s, QuadForm):
            return fn(f"q_{{{tags[('f', findex[s.matrix].index)]}}}")
        return None

    formula = scalar_formula(hat, leaf)
    names = {f: sp.Symbol(name) for name, f in funcs.items()}
    repl = {}
    for d in formula.atoms(sp.Derivative):
        repl[d] = sp.Symbol(_partial(multi_index(d)) + " " + names[d.expr].name)
    formula = formula.xreplace(repl).xreplace(names)
    derivs_of = {}  # tag -> multi-indices of the derivatives the quantity needs
    for d in repl:
        derivs_of.setdefault(names[d.expr].name, []).append(multi_index(d))
    # the symbols of the model, read off the tree
    dims, gauss, goes, diags, vecs = {}, {}, {}, {}, {}
    for node in walk(hat):
        for d in (getattr(node, "rows", None), getattr(node, "cols", None)):
            if d is not None and d.name != "1":
                dims[d.name] = d
        if node.kind == "gaussian":
            gauss[node.name] = node
        elif node.kind == "goe":
            goes[node.name] = node
        elif node.kind == "diag":
            diags[node.name] = node
        elif node.kind == "vector":
            vecs[node.name] = node
    for t in traces:
        for b in t.pencil.blocks:
            if b[0] != "1" and b[0] not in dims:
                dims[b[0]] = None
    typed = typed_tex(text)
    out = ["We derive the large-$n$ limit of the expression, as typed,",
           "\\begin{equation}\n\\begin{split}\n" + " \\\\\n".join("&" + t for t in typed)
           + ".\n\\end{split}\n\\label{eq:trace-typed}\n\\end{equation}"]
    others = [f"${_name(k)} = {_sym_tex(d.ratio)}\\, n$" if d is not None else f"${_name(k)}$"
              for k, d in sorted(dims.items()) if k != "n"]
    defs = [r"Every dimension is a multiple of the reference dimension $n \to \infty$: " + ", ".join(others) + "."
            if others else r"The only dimension is $n \to \infty$."]
    for g in sorted(gauss.values(), key=lambda x: x.name):
        defs.append(rf"${_name(g.name)}$ is a ${_name(g.rows.name)} \times {_name(g.cols.name)}$ matrix of i.i.d. "
                    rf"$\mathcal{{N}}(0, 1)$ entries and ${_name(g.name, hat=True)} = {_name(g.name)}/\sqrt{{n}}$.")
    for g in sorted(goes.values(), key=lambda x: x.name):
        defs.append(rf"${_name(g.name)}$ is a symmetric ${_name(g.dim.name)} \times {_name(g.dim.name)}$ matrix "
                    rf"with i.i.d. $\mathcal{{N}}(0, 1)$ entries above the diagonal and "
                    rf"${_name(g.name, hat=True)} = {_name(g.name)}/\sqrt{{n}}$.")
    for D in sorted(diags.values(), key=lambda x: x.name):
        law = ", ".join(f"${_sym_tex(v)}$ on a fraction ${_sym_tex(w)}$" for v, w in zip(D.values, D.weights))
        if len(D.values) > 4:
            law = (rf"$v_a$ on fractions $w_a$ of its diagonal, ${len(D.values)}$ atoms from "
                   rf"${_sym_tex(min(D.values, key=float))}$ to ${_sym_tex(max(D.values, key=float))}$, ")
        defs.append(rf"${_name(D.name)}$ is a diagonal matrix of size ${_name(D.dim.name)}$ whose entries take the "
                    f"values {law} of its diagonal.")
    random = {v.name for v in vecs.values() if v.random}
    for v in sorted(vecs.values(), key=lambda x: x.name):
        if v.random:
            entries = r"$\pm 1$" if v.law == "signs" else r"$\mathcal{N}(0, 1)$"
            defs.append(rf"${_name(v.name)}$ is a vector of dimension ${_name(v.dim.name)}$ of i.i.d. {entries} "
                        rf"entries (${typed_tex(LAWS[v.law])[0]}$), independent of everything else, and "
                        rf"${_name(v.name, hat=True)} = {_name(v.name)}/\sqrt{{n}}$.")
        else:
            defs.append(rf"${_name(v.name)}$ is a deterministic vector of dimension ${_name(v.dim.name)}$ with norm "
                        r"of order one; $\langle a, b \rangle$ is the inner product of two such vectors.")
    ratio_params = sorted({s for d in dims.values() if d is not None for s in sp.sympify(d.ratio).free_symbols},
                          key=lambda s: s.name)
    scalars = [p for p in params if "." not in p.name and p not in ratio_params]
    if scalars or ratio_params:
        defs.append("The parameters are " + ", ".join(f"${_name(p.name)}$" for p in ratio_params + scalars)
                    + r"; $\tau(A) = \frac{1}{N} \operatorname{tr} A$ is the normalized trace of an "
                    r"$N \times N$ matrix $A$.")
    else:
        defs.append(r"$\tau(A) = \frac{1}{N} \operatorname{tr} A$ is the normalized trace of an $N \times N$ "
                    r"matrix $A$.")
    out.append(" ".join(defs))
    # the quantity
    what = []
    for t in traces:
        what.append(rf"$\tau_{{{tags[('t', t.index)]}}} = \lim_{{n \to \infty}} \tau(M_{{{tags[('t', t.index)]}}})$")
    for f in forms:
        what.append(rf"the quadratic form $q_{{{tags[('f', f.index)]}}} = \lim_{{n \to \infty}} "
                    rf"M_{{{tags[('f', f.index)]}}}$")
    has_diff = any(isinstance(x, Diff) for x in walk(hat))
    out.append("Its limit $E$ is" + (", in terms of " + ", ".join(what) if what else "")
               + (r", with $\partial_{\theta}$ the derivative in the parameter $\theta$" if has_diff else "")
               + ",")
    quantity = _sym_tex(formula)
    out.append(_display("E", quantity.replace(" + ", f" {_BREAK}+ ").replace(" - ", f" {_BREAK}- "),
                        "eq:trace-quantity", end=","))
    mats = []
    for t in traces:
        mats.append((tags[("t", t.index)], t.matrix))
    for f in forms:
        mats.append((tags[("f", f.index)], f.matrix))
    out.append("where")
    for n, (tag, m) in enumerate(mats):
        out.append(_display(f"M_{{{tag}}}", _matrix_tex(m), f"eq:trace-matrix-{tag}",
                            end="." if n == len(mats) - 1 else ","))
    if plan.__dict__.get("notes"):
        out.append(r"A random vector that enters a form of $\eqref{eq:trace-typed}$ once, linearly, is replaced "
                   "by its mean $0$ (it is independent of the rest of the form):")
        out.append("\\begin{equation}\n\\begin{split}\n" + " \\\\\n".join(
            "&" + t for note in plan.notes for t in typed_tex(note)) + ".\n\\end{split}\n\\end{equation}")
    # each trace: pencil, fixed point, value
    for t in traces:
        tag = tags[("t", t.index)]
        if not hasattr(t.system, "eta"):
            raise ModelError("the derivation writes block fixed points only")
        out += _pencil_section(t.pencil, tag, rf"The matrix $M_{{{tag}}}$ of $\eqref{{eq:trace-matrix-{tag}}}$",
                               f"M_{{{tag}}}", False, random)
        out += _fixed_point_section(t.system, tag, many, f"eq:trace-pencil-{tag}", t.system.readout,
                                    rf"\tau_{{{tag}}}", derivs_of.get(rf"\tau_{{{tag}}}", []))
        if t.index in hermitized:
            out.append(rf"At the values below, $M_{{{tag}}}$ is the inverse of a non-normal matrix that is not "
                       r"invertible in the limit, and this fixed point has no solution on its branch there: the "
                       rf"value of $\tau_{{{tag}}}$ is computed by Hermitization instead (the Brown measure; the "
                       r"engine's documentation, section on non-normal matrices).")
    for f in forms:
        tag = tags[("f", f.index)]
        out += _pencil_section(f.pencil, tag, rf"The form $M_{{{tag}}}$ of $\eqref{{eq:trace-matrix-{tag}}}$",
                               f"M_{{{tag}}}", True, random)
        if f.system is not None:
            kept = [str(k + 1) for k in range(f.pencil.size) if k not in f.units]
            out.append(rf"Its blocks of dimensions proportional to $n$ (blocks {_inline(kept)}, renumbered from "
                       rf"$1$ to ${len(kept)}$) form the bulk pencil $B_{{{tag}}}$: ${f'Q_{{{tag}}}'}$ without its "
                       r"vectors and its unit blocks.")
            out += _fixed_point_section(f.system, tag, many, f"eq:trace-pencil-{tag}", None, "",
                                        derivs_of.get(f"q_{{{tag}}}", []), pencil=f"B_{{{tag}}}")
        out += _woodbury_section(f, tag, many)
        if derivs_of.get(f"q_{{{tag}}}"):
            out.append(rf"The derivative of $q_{{{tag}}}$ follows from $\eqref{{eq:trace-form-{tag}}}$: "
                       r"$\partial q = \partial e^{\top} x + x_e^{\top} (\partial f - \partial S\, x)$ with "
                       r"$S x = f$ and $S^{\top} x_e = e$, and $\partial S$ from the derivatives of $H$.")
    if value is not None:
        vals = ", ".join(f"${_sym_tex(sp.Symbol(k))} = {_value_tex(v)}$" for k, v in (at or {}).items())
        out.append(r"Solving the fixed points and evaluating $\eqref{eq:trace-quantity}$"
                   + (f" at {vals}" if vals else "") + " gives"
                   + (f", to {digits} significant digits (certified by two solves at different working precisions),"
                      if digits else ""))
        chunks = [value[k:k + 40] for k in range(0, len(value), 40)]
        out.append("\\begin{equation}\n\\begin{split}\nE &= " + " \\\\\n&\\quad ".join(chunks)
                   + ".\n\\end{split}\n\\label{eq:trace-result}\n\\end{equation}")
    if _ROUNDED:
        out.insert(3, rf"Numbers whose exact form is long (here, Hermite coefficients of a kernel) are shown rounded "
                   rf"to {ROUND_DIGITS} significant digits; the engine computes with their exact values.")
    body = "\n\n".join(out).replace(_BREAK, "") + "\n"
    return document(body, "symrmt trace: the derivation") if standalone else body


def _value_tex(v) -> str:
    """A value as typed, in math (``sqrt(2)`` kept as text)."""
    s = str(v)
    if re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", s):
        return s
    if re.fullmatch(r"-?\d+/\d+", s):
        a, b = s.lstrip("-").split("/")
        return ("-" if s.startswith("-") else "") + rf"\frac{{{a}}}{{{b}}}"
    return r"\texttt{" + s.replace("_", r"\_") + "}"
