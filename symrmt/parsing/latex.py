"""LaTeX through SymPy's LaTeX parser, rebuilt through the checks of :mod:`symrmt.parsing`."""

from __future__ import annotations

from symrmt.errors import ParameterError
from symrmt.parsing.expressions import check_power
from symrmt.parsing.literals import literal_fraction, shorten
from symrmt.parsing.limits import LIMITS, ParseLimitError, run_limited

def _latex_tree(text):
    """SymPy's LaTeX parse of ``text`` with automatic evaluation off (nothing is computed)."""
    # import-time cost: `import symrmt`, the CLI's start and the Monte-Carlo trials load no SymPy or mpmath
    import sympy as sp
    from sympy.parsing.latex import parse_latex

    with sp.evaluate(False):
        return parse_latex(text)


def parse_latex_expression(text, names, functions, *, what, seconds=None):
    """Parse the LaTeX ``text`` with SymPy's parser (evaluation off, in a killable child process, within ``seconds``,
    default ``LIMITS["time"]``), then rebuild the tree through the same checks as :func:`parse_expression`.

    ``names`` maps a LaTeX symbol's name as SymPy's parser gives it (spaces and ``*`` removed: ``"gamma"`` for
    ``\\gamma`` with SymPy 1.14, ``"a_{1}"``) to an object; ``functions`` maps a SymPy function class name
    (``"exp"``, ``"log"``, ``"Abs"``) to a callable.  Any other symbol or function -- ``\\exec(c)``, ``f(c)``,
    ``\\sum``, ``\\int`` -- is refused by name.  ``what`` names the input in the errors.

    Returns
    -------
    list
        The built sides: one element, or two for ``LHS = RHS``; e.g. ``[g**2 + 1/2]`` for
        ``\\frac{1}{2} + \\gamma^{2}`` with ``names={"gamma": g}``.

    Raises
    ------
    ParameterError
        Not a string, a syntax error, an unknown name or function, or no LaTeX parser (antlr4) installed.
    ParseLimitError
        Beyond the size caps or the time limit.

    Examples
    --------
    >>> parse_latex_expression(3, {}, {}, what="candidate")  # refused before any process starts
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: candidate: expected a string, got int
    """

    if not isinstance(text, str):
        raise ParameterError(f"{what}: expected a string, got {type(text).__name__}")
    if len(text) > LIMITS["chars"]:
        raise ParseLimitError(f"{what}: the text has {len(text)} characters, above the limit {LIMITS['chars']}")
    try:
        # optional dependency (antlr4, which SymPy's LaTeX parser needs)
        import antlr4  # noqa: F401
        from sympy.parsing.latex import parse_latex
    except ImportError as exc:
        raise ParameterError("LaTeX input needs SymPy's LaTeX parser, which needs antlr4-python3-runtime 4.11: "
                             "pip install 'symrmt[latex]' (or give the candidate as a SymPy string)") from exc
    try:
        parse_latex("1")  # load the grammar (and its SymPy imports) with evaluation on
    except ImportError as exc:  # SymPy refuses an antlr4 of the wrong version
        raise ParameterError(f"LaTeX input needs antlr4-python3-runtime 4.11 ({exc}); "
                             "pip install 'symrmt[latex]'") from exc
    seconds = LIMITS["time"] if seconds is None else seconds
    # parse and rebuild in one killable child: only the rebuilt (checked) expressions come back
    # (an unevaluated tree must never be unpickled: unpickling evaluates it, 10^{10^{10}} included)
    return run_limited(_latex_parse_and_build, (text, names, functions, what), seconds,
                       what=f"{what}: parsing LaTeX {shorten(text)!r}", isolate=True, error=ParseLimitError)


def _latex_parse_and_build(text, names, functions, what):
    # import-time cost: `import symrmt`, the CLI's start and the Monte-Carlo trials load no SymPy or mpmath
    import sympy as sp

    try:
        tree = _latex_tree(text)
    except Exception as exc:  # noqa: BLE001 - a LaTeX syntax error is a user error
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ParameterError(f"{what}: cannot parse LaTeX {shorten(text)!r} ({type(exc).__name__}: "
                             f"{shorten(first, 120)})") from None
    count = sum(1 for _ in sp.preorder_traversal(tree))
    if count > LIMITS["nodes"]:
        raise ParseLimitError(f"{what}: the expression has {count} nodes, above the limit {LIMITS['nodes']}")
    rebuild = _LatexRebuild(text, names, functions, what)
    sides = (tree.lhs, tree.rhs) if isinstance(tree, sp.Equality) else (tree,)
    return [rebuild.build(side) for side in sides]


class _LatexRebuild:
    def __init__(self, text, names, functions, what):
        self.text, self.names, self.functions, self.what = text, names, functions, what

    def fail(self, msg, cls=ParameterError):
        raise cls(f"{self.what}: {msg} in LaTeX {shorten(self.text)!r}")

    def build(self, e, depth=0):
        # import-time cost: `import symrmt`, the CLI's start and the Monte-Carlo trials load no SymPy or mpmath
        import sympy as sp

        if depth > LIMITS["depth"]:
            self.fail(f"nesting deeper than the limit {LIMITS['depth']}", ParseLimitError)
        d = depth + 1
        if isinstance(e, sp.Rational):  # Integer included
            size = max(int(e.p).bit_length(), int(e.q).bit_length()) * 0.30103
            if size > LIMITS["literal_digits"]:
                self.fail(f"a number of about {size:.0f} digits, above the limit {LIMITS['literal_digits']} digits "
                          "per literal", ParseLimitError)
            return sp.Rational(e.p, e.q)
        if isinstance(e, sp.Float):
            q = literal_fraction(str(abs(e)).replace("+", ""), self.what)
            v = sp.Rational(q.numerator, q.denominator)
            return -v if e < 0 else v
        if isinstance(e, sp.Symbol):
            key = e.name.replace(" ", "").replace("*", "")
            if key in self.names:
                return self.names[key]
            self.fail(f"unknown name {e.name!r} (known: {', '.join(sorted(self.names))})")
        if e in (sp.pi, sp.E) and str(e) in self.names:
            return self.names[str(e)]
        if isinstance(e, sp.Add):
            out = self.build(e.args[0], d)
            for a in e.args[1:]:
                out = out + self.build(a, d)
            return out
        if isinstance(e, sp.Mul):
            out = self.build(e.args[0], d)
            for a in e.args[1:]:
                out = out * self.build(a, d)
            return out
        if isinstance(e, sp.Pow):
            base, expo = self.build(e.base, d), self.build(e.exp, d)
            check_power(base, expo, self.what, self.text, isinstance(e.exp, sp.Pow))
            return base ** expo
        if isinstance(e, sp.Function) or isinstance(e, sp.Basic) and e.args:
            name = type(e).__name__ if not isinstance(e, sp.core.function.AppliedUndef) else str(e.func)
            if isinstance(e, sp.core.function.AppliedUndef) or name not in self.functions:
                known = ", ".join(sorted(self.functions)) or "none"
                self.fail(f"unknown function {name!r} (known functions: {known})")
            return self.functions[name](*[self.build(a, d) for a in e.args])
        self.fail(f"{type(e).__name__} ({shorten(str(e))}) is not allowed")


