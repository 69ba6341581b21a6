"""The outcome of ``symrmt check``: :class:`CheckReport` and how points are written."""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass, field

import sympy as sp

from symrmt.check.vocabulary import PARAM_SYMBOLS
from symrmt.latex_blocks import LINE_CHARS
from symrmt.table import math_text

# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------
@dataclass
class CheckReport:
    """The outcome of :func:`symrmt.check`: ``status`` is proved, verified, disproved or undecided, and
    ``evidence`` says why; ``symbolic``, ``numeric``, ``region`` and ``mc`` hold each stage's findings.

    >>> r = CheckReport(quantity="E_RR0", kind="value", candidate="(1 - c)/(snr + 1)", status="proved",
    ...                 evidence="symbolic proof", symbolic={"status": "proved", "detail": "c < 1"}, numeric={})
    >>> r.as_dict()["status"], r.as_dict()["seconds"]
    ('proved', 0.0)
    """

    quantity: str
    kind: str
    candidate: str
    status: str
    evidence: str
    symbolic: dict
    numeric: dict
    region: dict | None = None
    mc: dict | None = None
    notes: list = field(default_factory=list)
    seconds: float = 0.0
    proved: dict | None = None  # check(..., prove=True): symrmt.check.balls.prove_points
    claim_tex: str = ""  # the claim ``lhs = rhs`` as LaTeX (SymPy), for :meth:`latex`

    def as_dict(self) -> dict:
        """The report as plain data (what ``symrmt check --json`` prints)."""
        return {
            "quantity": self.quantity, "kind": self.kind, "candidate": self.candidate, "status": self.status,
            "evidence": self.evidence, "symbolic": self.symbolic, "numeric": self.numeric, "region": self.region,
            "mc": self.mc, "notes": list(self.notes), "seconds": round(self.seconds, 2),
            **({"proved": self.proved} if self.proved is not None else {}),
        }

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        """A notebook shows the status in bold, then the text report."""
        color = {"proved": "green", "verified": "green", "disproved": "firebrick"}.get(self.status, "darkorange")
        return (f'<div><b style="color:{color}">{html.escape(self.status.upper())}</b>: '
                f"{html.escape(self.evidence)}<pre>{html.escape(self.text())}</pre></div>")

    def latex(self) -> str:
        r"""The report as LaTeX that pdflatex (amsmath) and MathJax 3 both render: the claim in a numbered
        ``equation`` (its SymPy LaTeX, or the text as typed, broken over lines, when that is too long for
        the page), then each line of :meth:`text` as a paragraph (a left-aligned ``array`` display, when it takes
        more than one line), with the symbols ``≈ ± → ≤ ≥ ×`` and every
        character TeX treats as special in inline math, and no character outside ASCII.

        >>> rep = CheckReport("E_RR", "value", "E_RR = m", "verified", "agree within 1e-30 ± 1e-40",
        ...                   {"status": "n/a", "detail": "x ≈ 0.5"}, {"points": 1, "digits": 30, "seed": 0,
        ...                   "where": "", "passed": 1, "failed": 0, "skipped": 0}, claim_tex="E_{RR} = m")
        >>> tex = rep.latex()
        >>> "E_{RR} = m" in tex and r"$\approx$" in tex and r"$\pm$" in tex and tex.isascii()
        True
        """
        lines = self.text().splitlines()
        if self.claim_tex:
            claim = "\\begin{equation}\n" + self.claim_tex + "\n\\end{equation}"
        else:
            typed = textwrap.wrap(self.candidate, LINE_CHARS, break_on_hyphens=False) or [""]
            claim = ("\\begin{equation}\n\\begin{array}{l}\n" + " \\\\\n".join(math_text(x) for x in typed)
                     + "\n\\end{array}\n\\end{equation}")
        head = (f"Status: {self.status.upper()}. The claim, a {tex_prose(self.kind)} of "
                f"${sp.latex(sp.Symbol(self.quantity))}$, is")
        paragraphs = [head, claim]
        for line in (x.strip() for x in lines[1:]):
            if len(line) <= LINE_CHARS - 8:  # one line: a paragraph (its last line is never stretched)
                paragraphs.append(tex_prose(line))
            else:  # numbers and fractions break badly in justified text: left-aligned lines in a display
                rows = textwrap.wrap(line, LINE_CHARS - 8, subsequent_indent="    ", break_on_hyphens=False)
                paragraphs.append("\\begin{equation}\n\\begin{array}{l}\n" + " \\\\\n".join(map(tex_math_text, rows))
                                  + "\n\\end{array}\n\\end{equation}")
        return "\n\n".join(paragraphs) + "\n"

    def _repr_latex_(self) -> str:
        return self.latex()

    def text(self) -> str:
        """The report as the text ``symrmt check`` prints: the claim, each stage, the status."""
        n = self.numeric
        lines = [f"claim: {self.candidate}  [{self.kind} of {self.quantity}]",
                 f"symbolic: {self.symbolic['status']}: {self.symbolic['detail']}"]
        ce = self.symbolic.get("counterexample")
        if ce:
            lines.append(f"  counterexample: {point_str(ce['point'])}: LHS - RHS {ce['difference']} ({ce['how']})")
        lines.append(f"numeric: {n['points']} points at {n['digits']} digits (seed {n['seed']}"
                     + (f", where {n['where']}" if n["where"] else "") + f"): {n['passed']} agree, {n['failed']} fail"
                     + (f", {n['skipped']} skipped" if n["skipped"] else ""))
        if n.get("max_gap") is not None:
            lines.append(f"  largest relative gap {n['max_gap']} at {point_str(n['max_gap_at'])} "
                         f"(threshold {n['threshold']})")
        if n.get("worst"):
            w = n["worst"]
            lines.append(f"  there: LHS = {w['lhs']}, RHS = {w['rhs']}")
        if self.region:
            lines.append(f"region: {self.region['summary']}")
            for b in self.region.get("boundaries", []):
                lines.append(f"  {b['summary']}")
        if self.mc:
            lines.append(f"Monte-Carlo: {self.mc['summary']}")
        if self.proved is not None:
            lines.append(f"proved: {self.proved['summary']}")
            for x in self.proved["points"]:
                what = ("excludes 0: proved counterexample" if x.get("excludes") else "contains 0") if x.get("proved") \
                    else f"not proved ({x['reason']})"
                diff = f"LHS - RHS in [{x['difference']['mid']} ± {x['difference']['rad']}] " if x.get("proved") else ""
                lines.append(f"  {point_str(x['point'])} ({x['numeric']} numerically): {diff}{what}")
        for note in self.notes:
            lines.append(f"note: {note}")
        lines.append(f"status: {self.status.upper()} -- {self.evidence}")
        return "\n".join(lines)


#: characters outside ASCII that the reports write, as math
_UNICODE_MATH = {"≈": r"\approx", "±": r"\pm", "→": r"\to", "≤": r"\le", "≥": r"\ge", "×": r"\times",
                 "−": "-", "∞": r"\infty", "γ": r"\gamma", "μ": r"\mu", "ν": r"\nu"}


def tex_prose(text: str) -> str:
    r"""Plain text as LaTeX prose for pdflatex and MathJax: every special character and every symbol of
    :data:`_UNICODE_MATH` in inline math (no macro outside math), adjacent math runs merged; any other
    character outside ASCII becomes ``?``.

    >>> tex_prose("E_RR ≈ 0.5 ± 1e-3, 100% <ok>")
    'E$\\_$RR $\\approx$ 0.5 $\\pm$ 1e-3, 100$\\%$ $<$ok$>$'
    """
    out, math = [], []
    for ch in str(text):
        escaped = math_text(ch)
        tex = _UNICODE_MATH.get(ch) or (escaped if escaped != r"\text{" + ch + "}" else None)
        if tex is not None and not (ch in _UNICODE_MATH and not tex.startswith("\\")):
            math.append(tex.strip() if tex.startswith("\\") and tex.endswith(" ") else tex)
            continue
        if math:
            out.append("$" + " ".join(math) + "$")
            math = []
        out.append(tex if tex is not None else (ch if ch.isascii() else "?"))
    if math:
        out.append("$" + " ".join(math) + "$")
    return "".join(out)


def tex_math_text(text: str) -> str:
    r"""Text for math mode (:func:`symrmt.table.math_text`), the symbols of :data:`_UNICODE_MATH` as math.

    >>> tex_math_text("a ≈ b")
    '\\text{a }\\approx \\text{ b}'
    """
    out, run = [], []
    for ch in str(text):
        if ch in _UNICODE_MATH or not ch.isascii():
            out.append(math_text("".join(run)) if run else "")
            out.append(_UNICODE_MATH.get(ch, "?") + (" " if _UNICODE_MATH.get(ch, "").startswith("\\") else ""))
            run = []
        else:
            run.append(ch)
    if run:
        out.append(math_text("".join(run)))
    return "".join(out)


def point_str(pt) -> str:
    """A point ``{name: value}`` as text.

    >>> from fractions import Fraction
    >>> point_str({"c": Fraction(1, 2), "gamma": 1})
    'c = 1/2, gamma = 1'
    """
    return ", ".join(f"{k} = {v}" for k, v in pt.items())


def point_json(pt) -> dict:
    """A point ``{name: value}`` with each value as its exact text (for JSON).

    >>> from fractions import Fraction
    >>> point_json({"c": Fraction(1, 2)})
    {'c': '1/2'}
    """
    return {k: str(v) for k, v in pt.items()}




def claim_tex(lhs, rhs, width: int | None = None) -> str:
    r"""The claim ``lhs = rhs`` as LaTeX (SymPy's), with the parameters under their own names; ``""``
    when it would not fit a line of display math (``width`` characters of LaTeX source, by default
    the :data:`symrmt.latex_blocks.LINE_CHARS` of a line, a fraction counting as its wider part).

    >>> from symrmt.models.attention.equations import gamma, m
    >>> claim_tex(gamma * m, m**2)
    '\\gamma m = m^{2}'
    >>> claim_tex(sum(gamma**k * m for k in range(30)), m)
    ''
    """
    width = LINE_CHARS if width is None else width
    sides = [e.xreplace({v: sp.Symbol(k) for k, v in PARAM_SYMBOLS.items()}) for e in (lhs, rhs)]

    def wide(e):
        num, den = sp.fraction(e)
        return len(sp.latex(e)) if den == 1 else max(len(sp.latex(num)), len(sp.latex(den))) + 6

    if sum(wide(e) for e in sides) + 3 > width:
        return ""
    return f"{sp.latex(sides[0])} = {sp.latex(sides[1])}"


def claim_str(lhs, rhs) -> str:
    """The claim ``lhs = rhs`` (SymPy expressions) as text, with the parameters by their plain names.

    >>> from symrmt.check.candidate import parse_candidate
    >>> claim_str(*parse_candidate("m", "gamma*m^2 + (gamma + c - 1)*m = 1", kind="equation"))
    'gamma*m**2 + m*(c + gamma - 1) = 1'
    """
    def s(e):
        return str(e.xreplace({v: sp.Symbol(k) for k, v in PARAM_SYMBOLS.items()}))
    return f"{s(lhs)} = {s(rhs)}"
