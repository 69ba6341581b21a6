"""The outcome of ``symrmt check``: :class:`CheckReport` and how points are written."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from symrmt.check.vocabulary import PARAM_SYMBOLS

# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------
@dataclass
class CheckReport:
    """The outcome of :func:`check`.  ``status``: proved, verified, disproved or undecided."""

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

    def as_dict(self) -> dict:
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
        import html

        color = {"proved": "green", "verified": "green", "disproved": "firebrick"}.get(self.status, "darkorange")
        return (f'<div><b style="color:{color}">{html.escape(self.status.upper())}</b>: '
                f"{html.escape(self.evidence)}<pre>{html.escape(self.text())}</pre></div>")

    def latex(self) -> str:
        """The report as math-mode lines (``array``), at most 64 characters each: pdflatex and MathJax."""
        import textwrap

        from symrmt.table import math_text

        lines = []
        for line in self.text().splitlines():
            lines += textwrap.wrap(line, 64, subsequent_indent="    ", break_on_hyphens=False) or [""]
        return "$$\\begin{array}{l}\n" + " \\\\\n".join(math_text(x) for x in lines) + "\n\\end{array}$$"

    def _repr_latex_(self) -> str:
        return self.latex()

    def text(self) -> str:
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


def point_str(pt) -> str:
    return ", ".join(f"{k} = {v}" for k, v in pt.items())


def point_json(pt) -> dict:
    return {k: str(v) for k, v in pt.items()}




def claim_str(lhs, rhs) -> str:
    def s(e):
        return str(e.xreplace({v: sp.Symbol(k) for k, v in PARAM_SYMBOLS.items()}))
    return f"{s(lhs)} = {s(rhs)}"
