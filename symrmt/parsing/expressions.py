"""The expression walker: :func:`parse_expression` (user text to SymPy through a whitelist, under the
size caps and the time limit), :func:`check_power` and the suggestions of its error messages."""

from __future__ import annotations

import ast
import difflib
import keyword
import math
import operator
from fractions import Fraction

from symrmt.errors import ParameterError, UnknownNameError
from symrmt.parsing.limits import LIMITS, ParseLimitError, run_limited
from symrmt.parsing.literals import literal_fraction, shorten

# ---------------------------------------------------------------------------
# the expression walker
# ---------------------------------------------------------------------------
_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.MatMult: operator.matmul, ast.Pow: None,
}
_BOOLOPS = {ast.BitAnd: operator.and_, ast.BitOr: operator.or_}
_OPNAMES = {ast.Mod: "%", ast.FloorDiv: "//", ast.LShift: "<<", ast.RShift: ">>", ast.BitXor: "^",
            ast.Not: "not", ast.Invert: "~", ast.And: "and", ast.Or: "or"}


def suggest(word, candidates, n: int = 2, cutoff: float = 0.6) -> list:
    """The words of ``candidates`` closest to ``word`` (:func:`difflib.get_close_matches`), best first.

    >>> suggest("tanhh", ["tanh", "sinh", "t", "relu"])
    ['tanh']
    >>> suggest("inve", ["inv", "trace", "diff"])
    ['inv']
    >>> suggest("--gama", ["--gamma", "--c", "--snr"])
    ['--gamma']
    """
    return difflib.get_close_matches(word, sorted(set(candidates)), n=n, cutoff=cutoff)


def did_you_mean(words) -> str:
    """The tail of an error message that suggests the ``words``: ``"; did you mean 'a'?"`` (or ``'a' or 'b'``), or
    ``""`` without a word.

    >>> did_you_mean(["tanh"]), did_you_mean(["a", "b"]), did_you_mean([])
    ("; did you mean 'tanh'?", "; did you mean 'a' or 'b'?", '')
    """
    return f"; did you mean {' or '.join(repr(w) for w in words)}?" if words else ""


def _describe(node) -> str:
    if isinstance(node, ast.Constant):
        return f"the constant {shorten(repr(node.value))}"
    if isinstance(node, ast.Attribute):
        return f"the attribute '.{node.attr}'"
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp)):
        return f"the operator {_OPNAMES.get(type(node.op), type(node.op).__name__)!r}"
    names = {ast.Lambda: "lambda", ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
             ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator", ast.Subscript: "indexing [..]",
             ast.List: "a list [..]", ast.Dict: "a dict {..}", ast.Set: "a set {..}", ast.IfExp: "if/else",
             ast.NamedExpr: "':='", ast.JoinedStr: "an f-string", ast.Starred: "'*'", ast.Await: "await",
             ast.Compare: "a comparison", ast.Tuple: "a tuple", ast.Slice: "a slice"}
    return names.get(type(node), type(node).__name__)


class _Builder:
    def __init__(self, text, names, functions, what, attributes, relations, number, alternatives=None):
        self.text, self.names, self.functions, self.what = text, names, functions, what
        self.attributes, self.relations, self.number = attributes, relations, number
        self.alternatives = {k: sorted(v) for k, v in (alternatives or {}).items()}

    def fail(self, msg, cls=ParameterError):
        raise cls(f"{self.what}: {msg} in {shorten(self.text)!r}")

    def typeable_names(self):
        """The names a user may type as a value: not a function (listed apart) and not a Python keyword
        (``True`` is read as a constant, never as a name)."""
        return sorted(k for k in self.names if k not in self.functions and not keyword.iskeyword(k)
                      and not k.startswith("_"))

    def known(self):
        fs = ", ".join(sorted(self.functions)) or "none"
        ns = ", ".join(self.typeable_names()) or "none"
        more = "".join(f"; {label}: {', '.join(words)}" for label, words in self.alternatives.items())
        return f"known names: {ns}; functions: {fs}{more}"

    def unknown(self, name, called):
        """Refuse the unknown ``name`` with the closest names a user may type (a called name: functions)."""
        pool = list(self.functions) if called else [*self.typeable_names(), *self.functions]
        if not called and self.text.strip() == name:  # the whole text: a preset would do too
            pool += [w for words in self.alternatives.values() for w in words]
        close = suggest(name, pool)
        how = " called as a function" if called else ""
        msg = f"{self.what}: unknown name {name!r}{how}{did_you_mean(close)} ({self.known()}) in {shorten(self.text)!r}"
        raise UnknownNameError(msg, name, called, close)

    # -- the walk --------------------------------------------------------------------
    def build(self, node, depth=0):
        if depth > LIMITS["depth"]:
            self.fail(f"nesting deeper than the limit {LIMITS['depth']}", ParseLimitError)
        d = depth + 1
        if isinstance(node, ast.Expression):
            return self.build(node.body, d)
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            if node.id in self.functions:
                self.fail(f"the function {node.id!r} is used without arguments")
            self.unknown(node.id, called=False)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            val = self.build(node.operand, d)
            return self.apply(operator.neg if isinstance(node.op, ast.USub) else operator.pos, val)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                return self.power(node, d)
            if type(node.op) in _BINOPS:
                return self.apply(_BINOPS[type(node.op)], self.build(node.left, d), self.build(node.right, d))
            if self.relations and type(node.op) in _BOOLOPS:
                return self.apply(_BOOLOPS[type(node.op)], self.build(node.left, d), self.build(node.right, d))
        if isinstance(node, ast.Call):
            return self.call(node, d)
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_") or node.attr not in self.attributes:
                allowed = ", ".join("." + a for a in sorted(self.attributes)) or "none"
                self.fail(f"the attribute '.{node.attr}' is not allowed (allowed attributes: {allowed})")
            return getattr(self.build(node.value, d), node.attr)
        if isinstance(node, ast.Compare) and self.relations:
            return self.compare(node, d)
        self.fail(f"{_describe(node)} is not allowed (use numbers, names, calls of the whitelisted "
                  "functions and + - * / ** ^" + (", comparisons, & |" if self.relations else "") + ")")

    def constant(self, node):
        v = node.value
        if isinstance(v, bool):
            if "True" in self.names and v:
                return self.names["True"]
            self.fail(f"the constant {v!r} is not allowed")
        if isinstance(v, complex):
            self.fail(f"the complex number {self.segment(node)!r} is not allowed (values must be real)")
        if isinstance(v, (int, float)):
            token = self.segment(node)
            return self.number(literal_fraction(token.replace("_", ""), self.what))
        self.fail(f"{_describe(node)} is not allowed (only numbers)")

    def segment(self, node):
        seg = ast.get_source_segment(self.text, node)
        if seg is None:  # pragma: no cover - every node of a parsed string has a position
            self.fail("cannot locate a literal")
        if seg[:2].lower() in ("0x", "0o", "0b"):
            self.fail(f"the literal {seg!r} is not a decimal number")
        return seg

    def call(self, node, d):
        if not isinstance(node.func, ast.Name):
            self.fail(f"only calls of whitelisted functions by name are allowed, not a call of {_describe(node.func)}")
        name = node.func.id
        if name not in self.functions:
            self.unknown(name, called=True)
        if node.keywords:
            self.fail(f"keyword arguments ({node.keywords[0].arg}=...) are not allowed in {name}(...)")
        args = []
        for a in node.args:
            if isinstance(a, ast.Tuple):  # Piecewise((expr, cond), ...)
                args.append(tuple(self.build(e, d) for e in a.elts))
            else:
                args.append(self.build(a, d))
        return self.apply(self.functions[name], *args, label=f"{name}(...)")

    def compare(self, node, d):
        ops = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}
        left = self.build(node.left, d)
        out = None
        for op, comp in zip(node.ops, node.comparators):
            right = self.build(comp, d)
            if type(op) in ops:
                rel = self.apply(ops[type(op)], left, right)
            elif isinstance(op, ast.Eq) and "Eq" in self.functions:
                rel = self.apply(self.functions["Eq"], left, right)
            else:
                self.fail(f"the comparison {type(op).__name__} is not allowed (use < <= > >=)")
            out = rel if out is None else self.apply(operator.and_, out, rel)
            left = right
        return out

    def power(self, node, d):
        base = self.build(node.left, d)
        expo = self.build(node.right, d)
        tower = any(isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Pow) for sub in ast.walk(node.right))
        check_power(base, expo, self.what, self.text, tower)
        return self.apply(operator.pow, base, expo)

    def apply(self, fn, *args, label=None):
        try:
            return fn(*args)
        except ParameterError:
            raise
        except (RecursionError, MemoryError) as exc:
            self.fail(f"{type(exc).__name__} while building it", ParseLimitError)
        except Exception as exc:  # noqa: BLE001 - any error of the caller's objects is a user error
            what = label or getattr(fn, "__name__", "an operation")
            self.fail(f"{what} failed ({type(exc).__name__}: {shorten(str(exc), 120)})")


def _unwrap(value):
    """The number inside a caller's wrapper node (an object whose ``value`` is a SymPy number, such as
    the trace engine's constants), so that the power limits see numbers however the caller wraps them."""
    inner = getattr(value, "value", None)
    if inner is not None and type(inner).__module__.startswith("sympy"):
        return inner
    return value


def _log10_abs(value):
    """``log10 |value|`` of a number (SymPy number, Fraction, int) or None if not a number."""
    value = _unwrap(value)
    try:
        # import-time cost: `import symrmt`, the CLI's start and the Monte-Carlo trials load no SymPy or mpmath
        import sympy as sp
    except ImportError:  # pragma: no cover
        sp = None
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        value = Fraction(value)
        if value == 0:
            return None
        return (abs(value.numerator).bit_length() - value.denominator.bit_length()) * 0.30103
    if sp is not None and isinstance(value, sp.Basic):
        if isinstance(value, sp.Rational):
            return _log10_abs(Fraction(int(value.p), int(value.q)))
        if value.is_number:
            try:
                v = abs(complex(sp.N(value, 15)))
            except (TypeError, ValueError, OverflowError):
                return None
            return math.log10(v) if v > 0 and math.isfinite(v) else None
    return None


def check_power(base, expo, what: str, text: str = "", tower: bool = False) -> None:
    """Check ``base ** expo`` before it is computed; returns ``None``.  Raises :class:`ParseLimitError` (naming
    ``what`` and the ``text`` it came from) when the exponent is a number above ``LIMITS["exponent"]`` (an
    exponent tower such as ``10**10**7`` is refused this way; ``tower=True`` names it so) or the result would
    have more than ``LIMITS["magnitude"]`` decimal digits.  A symbolic exponent is allowed.

    >>> check_power(2, 10, "c") is None
    True
    >>> check_power(10, 10 ** 7, "c", "10**10**7", tower=True)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParseLimitError: c: exponent tower: the exponent 10000000 is above the limit 1000 (|exponent| of a power) in '10**10**7'
    >>> check_power(10 ** 20, 600, "c")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParseLimitError: c: the power 100000000000000000000**600 has about 11921 digits, above the limit 10000
    """
    e = _numeric_value(expo)
    if e is None:
        return
    where = f" in {shorten(text)!r}" if text else ""
    if abs(e) > LIMITS["exponent"]:
        kind = "exponent tower: the exponent" if tower else "the exponent"
        raise ParseLimitError(f"{what}: {kind} {shorten(str(_unwrap(expo)), 30)} is above the limit "
                              f"{LIMITS['exponent']} (|exponent| of a power){where}")
    lb = _log10_abs(base)
    if lb is not None and abs(lb * float(e)) > LIMITS["magnitude"]:
        raise ParseLimitError(f"{what}: the power {shorten(str(_unwrap(base)))}**{shorten(str(_unwrap(expo)))} has about "
                              f"{abs(lb * float(e)):.0f} digits, above the limit {LIMITS['magnitude']}{where}")


def _numeric_value(x):
    """A float for a numeric (symbol-free) value, else None."""
    x = _unwrap(x)
    if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
        return float(x) if abs(x) < 1e300 else float("inf")
    try:
        # import-time cost: `import symrmt`, the CLI's start and the Monte-Carlo trials load no SymPy or mpmath
        import sympy as sp
    except ImportError:  # pragma: no cover
        return None
    if isinstance(x, sp.Basic) and x.is_number:
        if isinstance(x, sp.Rational):
            return _numeric_value(Fraction(int(x.p), int(x.q)))
        try:
            return abs(complex(sp.N(x, 15)))
        except (TypeError, ValueError, OverflowError):
            return float("inf")
    return None


def _sympy_number(q: Fraction):
    # import-time cost: `import symrmt`, the CLI's start and the Monte-Carlo trials load no SymPy or mpmath
    import sympy as sp

    return sp.Rational(q.numerator, q.denominator)


def _prepare(text, what, relations):
    if not isinstance(text, str):
        raise ParameterError(f"{what}: expected a string, got {type(text).__name__}")
    if len(text) > LIMITS["chars"]:
        raise ParseLimitError(f"{what}: the text has {len(text)} characters, above the limit {LIMITS['chars']}")
    text = text.strip()
    if not text:
        raise ParameterError(f"{what}: empty expression")
    # ``^`` is a power (at the precedence of ``**``), as in mathematics and SymPy's convert_xor
    return text.replace("^", "**")


def _tree(text, what):
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ParameterError(f"{what}: cannot parse {shorten(text)!r} ({exc.msg}); check the parentheses "
                             "and operators") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseLimitError(f"{what}: cannot parse {shorten(text)!r} ({type(exc).__name__}: "
                              f"{shorten(str(exc), 100)})") from None
    n = sum(1 for _ in ast.walk(tree))
    if n > LIMITS["nodes"]:
        raise ParseLimitError(f"{what}: the expression has {n} syntax nodes, above the limit {LIMITS['nodes']}")
    return tree


def parse_expression(text, names, functions, *, what, attributes=frozenset(), relations=False, number=None,
                     seconds=None, whole_call=None, alternatives=None):
    """Parse and build ``text`` from the caller's whitelisted objects.

    Parameters
    ----------
    text : str
        The user's text.
    names : dict
        Name -> object (a SymPy symbol or constant, or any object supporting the operators).
    functions : dict
        Name -> callable; only ``NAME(args)`` calls of these are allowed.
    what : str
        What the text is (``"f"``, ``"candidate"``, ``"where c"``); starts every error message.
    attributes : set of str
        Attribute names allowed after a value (e.g. ``{"T"}``); none by default.
    relations : bool
        Allow comparisons ``< <= > >=`` (and ``==`` when ``functions`` has ``"Eq"``) and ``& |``.
    number : callable
        Fraction -> object for numeric literals (default: ``sympy.Rational``).
    seconds : float
        Time limit of parse and build (default ``LIMITS["time"]``).
    whole_call : set of str
        For a declaration: the whole text must be exactly one call of one of these functions
        (``gaussian(p, n)``), nothing around it (no factor, transpose or sum) and no second such
        call inside; anything more is refused, never dropped.
    alternatives : dict
        Label -> words a user may type instead of the whole expression (the presets of ``f``): listed
        in the message of an unknown name and offered as suggestions when the whole text is one name.

    Returns
    -------
    The built object.

    Raises
    ------
    ParameterError
        A refused token or construct (named), :class:`UnknownNameError` for a name outside the
        whitelist (with the closest names a user may type), or :class:`ParseLimitError` for a limit.

    Examples
    --------
    >>> import sympy as sp
    >>> x = sp.Symbol("x")
    >>> parse_expression("sqrt(x) + 1e-3", {"x": x}, {"sqrt": sp.sqrt}, what="demo")
    sqrt(x) + 1/1000
    >>> parse_expression("x.__class__", {"x": x}, {}, what="demo")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: demo: the attribute '.__class__' is not allowed (allowed attributes: none) ...
    >>> parse_expression("__import__('os')", {"x": x}, {}, what="demo")
    Traceback (most recent call last):
    ...
    symrmt.errors.UnknownNameError: demo: unknown name '__import__' called as a function ...
    >>> parse_expression("sqr(x)", {"x": x}, {"sqrt": sp.sqrt}, what="demo")
    Traceback (most recent call last):
    ...
    symrmt.errors.UnknownNameError: demo: unknown name 'sqr' called as a function; did you mean 'sqrt'? ...
    """
    text = _prepare(text, what, relations)
    tree = _tree(text, what)
    if whole_call is not None:
        _check_whole_call(tree, text, what, whole_call, functions, attributes)
    builder = _Builder(text, dict(names), dict(functions), what, frozenset(attributes), relations,
                       number or _sympy_number, alternatives)
    seconds = LIMITS["time"] if seconds is None else seconds
    return run_limited(builder.build, (tree,), seconds, what=f"{what}: parsing {shorten(text)!r}",
                       error=ParseLimitError)


def _check_whole_call(tree, text, what, laws, functions, attributes):
    """A declaration is one call of a law and its arguments: refuse a factor, a transpose, a sum or a
    second law around or inside it (they would otherwise be silently dropped)."""
    body = tree.body
    laws = set(laws)
    shown = " or ".join(f"{k}(...)" for k in sorted(laws))
    if isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id not in functions:
        return  # an unknown function: the walk names it
    if any(isinstance(n, ast.Attribute) and (n.attr.startswith("_") or n.attr not in attributes)
           for n in ast.walk(body)):
        return  # a refused attribute: the walk names it
    if not (isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id in laws):
        raise ParameterError(f"{what}: a declaration is a law and its dimensions only ({shown}), got "
                             f"{shorten(text)!r}; write a factor, a transpose or a sum in the expression "
                             "instead (e.g. declare Z=gaussian(p,n) and write 2*Z or Z.T there)")
    inner = [n for a in body.args for n in ast.walk(a)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in laws]
    if inner:
        raise ParameterError(f"{what}: a declaration holds one law, got a second {inner[0].func.id}(...) inside "
                             f"{shorten(text)!r}")
