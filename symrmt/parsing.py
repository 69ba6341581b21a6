"""The one restricted parser for every text a user gives symrmt.

Every text input -- the nonlinearity ``--f``, the candidates of ``symrmt check`` (SymPy syntax,
the right-hand sides of a ``.py`` file, LaTeX), ``--where`` bounds, every numeric flag and every
entry of a JSON Gram matrix -- is read here, and only here.  Nothing a user types reaches
``eval``, ``exec``, ``compile`` or a namespace with Python's builtins:

1. the text is capped in length (:data:`LIMITS` ``["chars"]``);
2. it is parsed by :func:`ast.parse` in ``"eval"`` mode (a syntax tree, nothing runs);
3. the tree is walked, allowing only numeric literals, names and functions from a whitelist the
   caller gives, the operators ``+ - * / @ **`` (``^`` is a power, as in mathematics), unary
   ``+ -``, and, when the caller asks for them, comparisons and ``& |``; the number of nodes, the
   nesting depth, the digits of a literal and the size of a power are capped;
4. the value is built by walking the tree and calling the caller's objects (SymPy symbols and
   functions, or any other objects), under one time limit (:func:`run_limited`).

Decimal literals are exact rationals (``0.1`` is ``1/10``, ``1e-3`` is ``1/1000``).  LaTeX is read by
SymPy's LaTeX parser with automatic evaluation off, and the resulting tree is rebuilt through the
same checks (every symbol and every function class must be whitelisted).  Every refusal is a
:class:`~symrmt.params.ParameterError` that names the offending token and the limit hit.

Examples
--------
>>> import sympy as sp
>>> t = sp.Symbol("t")
>>> parse_expression("t^2 - 0.5", {"t": t}, {}, what="f")
t**2 - 1/2
>>> parse_expression("t**10**10", {"t": t}, {}, what="f")
Traceback (most recent call last):
...
symrmt.parsing.ParseLimitError: f: exponent tower: the exponent 10000000000 is above the limit 1000 ...
>>> parse_number("sqrt(2)/2", what="muwk")
sqrt(2)/2
>>> parse_number("1e999999999", what="c")
Traceback (most recent call last):
...
symrmt.parsing.ParseLimitError: c: the literal '1e999999999' has decimal exponent 999999999, above the limit 1000 ...
"""

from __future__ import annotations

import ast
import multiprocessing
import operator
import re
import signal
import threading
from fractions import Fraction

from symrmt.params import ParameterError

__all__ = [
    "LIMITS",
    "ParseLimitError",
    "TimeLimitExceeded",
    "parse_expression",
    "parse_number",
    "parse_latex_expression",
    "number_to_fraction",
    "split_equation",
    "literal_fraction",
    "run_limited",
    "check_digits",
    "check_count",
]

#: Every limit on user input, in one place (each is stated in the error that enforces it and in
#: ``docs/input.md``).
LIMITS = {
    # characters in one text input (an expression, a number, a --where item, a Gram entry)
    "chars": 4000,
    # digits in one numeric literal (mantissa; 1100 > the largest --digits, so any value printed
    # by symrmt can be typed back)
    "literal_digits": 1100,
    # |decimal exponent| of a literal (1e-400 is read; 1e999999999 is refused before any work)
    "literal_exponent": 1000,
    # |exponent| of a power with a numeric exponent (t**1000 is read, t**10000 is not)
    "exponent": 1000,
    # decimal digits of a number built from literals by powers (10**1000 is the largest)
    "magnitude": 10000,
    # nodes of one syntax tree, and its nesting depth
    "nodes": 1000,
    "depth": 60,
    # --digits of any verb: above it, mpmath and Python's int/str conversions grow
    # quadratically (and Python refuses int<->str conversions above 4300 digits);
    # 1000 digits of E_A cost seconds, 4000 would cost minutes
    "digits": 1000,
    # largest Hermite index k (hermite --k); the symbolic Gaussian moments grow like k! and
    # quadrature needs about k/2 extra digits
    "hermite_k": 60,
    # largest rank r of a low-rank geometry (its Gram matrix is (2r+1) x (2r+1)); the exact
    # solver's Woodbury system grows like (2r+1)^3 rationals
    "rank": 8,
    # largest number of gamma values in one call
    "gammas": 1000,
    # seconds for parsing and building one input (LaTeX included)
    "time": 5.0,
}

#: significant digits kept when an irrational input (such as ``sqrt(2)``) becomes a rational:
#: more than any precision symrmt can be asked for (``LIMITS["digits"]``)
IRRATIONAL_DIGITS = LIMITS["digits"] + 20


class ParseLimitError(ParameterError):
    """A user input was refused by a limit of :data:`LIMITS` (the message names it)."""


class TimeLimitExceeded(Exception):
    """A time-limited computation ran past its limit (see :func:`run_limited`)."""


# ---------------------------------------------------------------------------
# the one time limit
# ---------------------------------------------------------------------------
class _Alarm(BaseException):
    """Raised by SIGALRM inside a limited computation (a BaseException, so that SymPy's
    ``except Exception`` clauses do not swallow it)."""


_ACTIVE = threading.local()


def _child(conn, fn, args):
    try:
        value = ("ok", fn(*args))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        value = ("error", exc)
    try:
        conn.send(value)
    except Exception:  # noqa: BLE001 - an unpicklable result or exception: send its text
        conn.send(("error", ArithmeticError(f"{type(value[1]).__name__}: {value[1]}")))
    finally:
        conn.close()


def run_limited(fn, args=(), seconds: float = LIMITS["time"], *, what: str = "computation",
                isolate: bool = False, error=TimeLimitExceeded):
    """``fn(*args)``, stopped after ``seconds`` with ``error`` (default :class:`TimeLimitExceeded`).

    This is the package's one time limit.  With ``isolate=True`` (and ``fork`` available, in a
    process with one thread) ``fn`` runs in a forked child that is killed on time: this stops even
    a long C-level operation; the result and any exception must pickle.  Otherwise, on the main
    thread, a ``SIGALRM`` timer interrupts ``fn`` between Python bytecodes; elsewhere ``fn`` runs in
    a daemon thread that is abandoned on time.  A call nested in another limited call runs under
    the outer limit.

    Parameters
    ----------
    fn, args : the computation.
    seconds : float
        The limit; must be positive and finite.
    what : str
        Named in the error.
    isolate : bool
        Run in a killable child process where possible.
    error : type
        The exception class raised on time.

    Examples
    --------
    >>> run_limited(sum, ([1, 2, 3],), 5.0)
    6
    >>> import time
    >>> run_limited(time.sleep, (5,), 0.2, what="the nap")
    Traceback (most recent call last):
    ...
    symrmt.parsing.TimeLimitExceeded: the nap exceeded its time limit of 0.2 s
    """
    if not (seconds > 0 and seconds < float("inf")):
        raise ParameterError(f"time limit must be positive and finite, got {seconds!r}")
    message = f"{what} exceeded its time limit of {seconds:g} s"
    if isolate and "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1 \
            and not getattr(_ACTIVE, "on", False):
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(child, fn, args), daemon=True)
        proc.start()
        child.close()
        try:
            if not parent.poll(seconds):
                raise error(message + " (killed)")
            try:
                status, value = parent.recv()
            except EOFError:
                raise error(f"{what} died without an answer") from None
        finally:
            if proc.is_alive():
                proc.kill()
            proc.join()
            parent.close()
        if status == "error":
            raise value
        return value
    if getattr(_ACTIVE, "on", False):
        return fn(*args)
    main = threading.current_thread() is threading.main_thread()
    if main and hasattr(signal, "setitimer") and signal.getitimer(signal.ITIMER_REAL)[0] == 0:

        def handler(signum, frame):
            raise _Alarm

        old = signal.signal(signal.SIGALRM, handler)
        _ACTIVE.on = True
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                return fn(*args)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Alarm:
            raise error(message) from None
        finally:
            _ACTIVE.on = False
            signal.signal(signal.SIGALRM, old)
    box = {}

    def target():
        _ACTIVE.on = True
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(seconds)
    if th.is_alive():
        raise error(message + " (abandoned)")
    if "error" in box:
        raise box["error"]
    return box["value"]


# ---------------------------------------------------------------------------
# literals
# ---------------------------------------------------------------------------
_LITERAL = re.compile(r"(?P<int>\d*)(?:\.(?P<frac>\d*))?(?:[eE](?P<exp>[+-]?\d+))?")
_RATIO = re.compile(r"\s*([+-]?[0-9.eE+-]+)\s*/\s*([0-9.eE+-]+)\s*")


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def literal_fraction(token: str, what: str) -> Fraction:
    """The exact value of one unsigned decimal literal (``12``, ``0.25``, ``1e-3``, ``.5``).

    The mantissa may have at most ``LIMITS["literal_digits"]`` digits and the decimal exponent at
    most ``LIMITS["literal_exponent"]`` in absolute value; both are checked before any arithmetic.

    >>> literal_fraction("2.5e-3", "c")
    Fraction(1, 400)
    """
    m = _LITERAL.fullmatch(token)
    if not m or not (m.group("int") or m.group("frac")):
        raise ParameterError(f"{what}: cannot read the number {_short(token)!r} (write a decimal such as 0.25, "
                             "1e-3, or an expression such as 3/4 or sqrt(2))")
    ip, fp, ex = m.group("int") or "", m.group("frac") or "", m.group("exp")
    digits = len((ip + fp).lstrip("0"))
    if digits > LIMITS["literal_digits"]:
        raise ParseLimitError(f"{what}: the literal {_short(token)!r} has {digits} digits, above the limit "
                              f"{LIMITS['literal_digits']} digits per literal")
    if ex is not None and len(ex.lstrip("+-").lstrip("0")) > 6:
        raise ParseLimitError(f"{what}: the literal {_short(token)!r} has decimal exponent {ex.lstrip('+')}, "
                              f"above the limit {LIMITS['literal_exponent']} (|exponent| of a literal)")
    e = int(ex) if ex is not None else 0
    if abs(e) > LIMITS["literal_exponent"]:
        raise ParseLimitError(f"{what}: the literal {_short(token)!r} has decimal exponent {e}, above the limit "
                              f"{LIMITS['literal_exponent']} (|exponent| of a literal)")
    value = Fraction(int(ip + fp or "0"), 10 ** len(fp))
    return value * (Fraction(10) ** e)


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


def _describe(node) -> str:
    if isinstance(node, ast.Constant):
        return f"the constant {_short(repr(node.value))}"
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
    def __init__(self, text, names, functions, what, attributes, relations, number):
        self.text, self.names, self.functions, self.what = text, names, functions, what
        self.attributes, self.relations, self.number = attributes, relations, number

    def fail(self, msg, cls=ParameterError):
        raise cls(f"{self.what}: {msg} in {_short(self.text)!r}")

    def known(self):
        fs = ", ".join(sorted(self.functions)) or "none"
        ns = ", ".join(sorted(self.names)) or "none"
        return f"known names: {ns}; functions: {fs}"

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
            self.fail(f"unknown name {node.id!r} ({self.known()})")
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
            self.fail(f"unknown name {name!r} called as a function ({self.known()})")
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
            self.fail(f"{what} failed ({type(exc).__name__}: {_short(str(exc), 120)})")


def _log10_abs(value):
    """``log10 |value|`` of a number (SymPy number, Fraction, int) or None if not a number."""
    try:
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
            import math
            return math.log10(v) if v > 0 and math.isfinite(v) else None
    return None


def check_power(base, expo, what: str, text: str = "", tower: bool = False) -> None:
    """Refuse ``base ** expo`` when the exponent is a number above ``LIMITS["exponent"]`` (an
    exponent tower such as ``10**10**10`` is refused this way, before it is computed) or the result
    would have more than ``LIMITS["magnitude"]`` decimal digits.  A symbolic exponent is allowed."""
    e = _numeric_value(expo)
    if e is None:
        return
    where = f" in {_short(text)!r}" if text else ""
    if abs(e) > LIMITS["exponent"]:
        kind = "exponent tower: the exponent" if tower else "the exponent"
        raise ParseLimitError(f"{what}: {kind} {_short(str(expo), 30)} is above the limit "
                              f"{LIMITS['exponent']} (|exponent| of a power){where}")
    lb = _log10_abs(base)
    if lb is not None and abs(lb * float(e)) > LIMITS["magnitude"]:
        raise ParseLimitError(f"{what}: the power {_short(str(base))}**{_short(str(expo))} has about "
                              f"{abs(lb * float(e)):.0f} digits, above the limit {LIMITS['magnitude']}{where}")


def _numeric_value(x):
    """A float for a numeric (symbol-free) value, else None."""
    if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
        return float(x) if abs(x) < 1e300 else float("inf")
    try:
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
        raise ParameterError(f"{what}: cannot parse {_short(text)!r} ({exc.msg}); check the parentheses "
                             "and operators") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseLimitError(f"{what}: cannot parse {_short(text)!r} ({type(exc).__name__}: "
                              f"{_short(str(exc), 100)})") from None
    n = sum(1 for _ in ast.walk(tree))
    if n > LIMITS["nodes"]:
        raise ParseLimitError(f"{what}: the expression has {n} syntax nodes, above the limit {LIMITS['nodes']}")
    return tree


def parse_expression(text, names, functions, *, what, attributes=frozenset(), relations=False, number=None,
                     seconds=None):
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

    Returns
    -------
    The built object.

    Raises
    ------
    ParameterError
        A refused token or construct (named), or :class:`ParseLimitError` for a limit.

    Examples
    --------
    >>> import sympy as sp
    >>> x = sp.Symbol("x")
    >>> parse_expression("sqrt(x) + 1e-3", {"x": x}, {"sqrt": sp.sqrt}, what="demo")
    sqrt(x) + 1/1000
    >>> parse_expression("x.__class__", {"x": x}, {}, what="demo")
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: demo: the attribute '.__class__' is not allowed (allowed attributes: none) ...
    >>> parse_expression("__import__('os')", {"x": x}, {}, what="demo")
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: demo: unknown name '__import__' called as a function ...
    """
    text = _prepare(text, what, relations)
    tree = _tree(text, what)
    builder = _Builder(text, dict(names), dict(functions), what, frozenset(attributes), relations,
                       number or _sympy_number)
    seconds = LIMITS["time"] if seconds is None else seconds
    return run_limited(builder.build, (tree,), seconds, what=f"{what}: parsing {_short(text)!r}",
                       error=ParseLimitError)


# ---------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------
def _number_vocabulary():
    import sympy as sp

    names = {"pi": sp.pi, "E": sp.E}
    functions = {"sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log, "sin": sp.sin, "cos": sp.cos, "tan": sp.tan,
                 "atan": sp.atan, "asin": sp.asin, "acos": sp.acos, "tanh": sp.tanh, "cbrt": sp.cbrt,
                 "Abs": sp.Abs, "abs": sp.Abs, "erf": sp.erf}
    return names, functions


_PLAIN = re.compile(r"\s*([+-]?)\s*([0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?)\s*(?:/\s*([0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?)\s*)?")


def plain_fraction(text: str, what: str):
    """A plain decimal or ``p/q`` of decimals read exactly without SymPy, or None if ``text`` is not one."""
    if len(text) > LIMITS["chars"]:
        raise ParseLimitError(f"{what}: the text has {len(text)} characters, above the limit {LIMITS['chars']}")
    m = _PLAIN.fullmatch(text)
    if not m or not m.group(2) or not any(ch.isdigit() for ch in m.group(2)):
        return None
    if m.group(3) is not None and not any(ch.isdigit() for ch in m.group(3)):
        return None
    value = literal_fraction(m.group(2), what)
    if m.group(3) is not None:
        den = literal_fraction(m.group(3), what)
        if den == 0:
            raise ParameterError(f"{what}: division by zero in {_short(text.strip())!r}")
        value = value / den
    return -value if m.group(1) == "-" else value


def parse_number(text, *, what, positive=False, nonnegative=False):
    """The exact real value of a numeric text: a SymPy Rational or an exact algebraic/transcendental
    number (``sqrt(2)``, ``pi/4``).

    Accepts decimals (``0.25``, ``1e-3``: exact), fractions (``3/4``), ``pi``, ``E`` and the functions
    ``sqrt exp log sin cos tan atan asin acos tanh cbrt Abs erf`` with ``+ - * / ** ^``; refuses
    anything else, non-real or infinite values, and the limits of :data:`LIMITS`.

    Examples
    --------
    >>> parse_number("3/4", what="c")
    3/4
    >>> parse_number("1.4142e-3", what="gamma")
    7071/5000000
    >>> parse_number("-1", what="gamma", positive=True)
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: gamma must be positive, got -1
    """
    import sympy as sp

    if isinstance(text, str):
        q = plain_fraction(text, what)
        if q is not None:
            value = sp.Rational(q.numerator, q.denominator)
        else:
            names, functions = _number_vocabulary()
            try:
                value = parse_expression(text, names, functions, what=what)
            except ParseLimitError:
                raise
            except ParameterError as exc:
                detail = str(exc).removeprefix(f"{what}: ")
                raise ParameterError(f"{what}: cannot read {_short(text.strip())!r} as a number ({detail}); "
                                     "write a decimal such as 0.25, a fraction such as 3/4, or an exact "
                                     "expression such as sqrt(2)/2") from None
    else:
        value = sp.sympify(text)
    if not isinstance(value, sp.Expr) or not value.is_number:
        raise ParameterError(f"{what}: {_short(str(text))!r} is not a number")
    if value.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        raise ParameterError(f"{what}: {_short(str(text))!r} is not finite")
    if not isinstance(value, sp.Rational):
        try:
            approx = sp.N(value, 30)
        except Exception as exc:  # noqa: BLE001
            raise ParameterError(f"{what}: cannot evaluate {_short(str(text))!r} ({exc})") from None
        if approx.has(sp.I) and sp.im(approx) != 0:
            raise ParameterError(f"{what}: {_short(str(text))!r} is not real")
        if not approx.is_real or not approx.is_finite:
            raise ParameterError(f"{what}: {_short(str(text))!r} is not a finite real number")
        sign = int(bool(approx > 0)) - int(bool(approx < 0))
    else:
        sign = int(value.p > 0) - int(value.p < 0)
    if positive and sign <= 0:
        raise ParameterError(f"{what} must be positive, got {_short(str(text))}")
    if nonnegative and sign < 0:
        raise ParameterError(f"{what} must be >= 0, got {_short(str(text))}")
    return value


def number_to_fraction(value, what: str = "value", digits: int = IRRATIONAL_DIGITS) -> Fraction:
    """An exact rational for a SymPy number: exact for a Rational, else rounded to ``digits``
    significant digits (by default more than any precision symrmt computes at).

    >>> import sympy as sp
    >>> float(number_to_fraction(sp.sqrt(2), digits=20))
    1.4142135623730951
    """
    import sympy as sp

    if isinstance(value, Fraction):
        return value
    if isinstance(value, sp.Rational):
        return Fraction(int(value.p), int(value.q))
    approx = sp.N(value, digits)
    if not isinstance(approx, sp.Float) or not approx.is_finite:
        raise ParameterError(f"{what}: {_short(str(value))} is not a finite real number")
    return Fraction(str(approx))


# ---------------------------------------------------------------------------
# equations, LaTeX
# ---------------------------------------------------------------------------
_EQ_SPLIT = re.compile(r"(?<![<>!=])==?(?![=])")


def split_equation(text: str, what: str = "candidate"):
    """``"LHS = RHS"`` -> ``["LHS", "RHS"]`` (one ``=`` or ``==``); a text without one -> ``[text]``.

    >>> split_equation("m^2 = 1")
    ['m^2 ', ' 1']
    """
    if len(text) > LIMITS["chars"]:
        raise ParseLimitError(f"{what}: the text has {len(text)} characters, above the limit {LIMITS['chars']}")
    parts = _EQ_SPLIT.split(text)
    if len(parts) > 2:
        raise ParameterError(f"{what}: {_short(text)!r} has more than one '='")
    return parts


def _latex_tree(text):
    """SymPy's LaTeX parse of ``text`` with automatic evaluation off (nothing is computed)."""
    import sympy as sp
    from sympy.parsing.latex import parse_latex

    with sp.evaluate(False):
        return parse_latex(text)


def parse_latex_expression(text, names, functions, *, what, seconds=None):
    """Parse LaTeX with SymPy's parser (evaluation off, killable child process, time limit), then
    rebuild the tree through the same checks as :func:`parse_expression`.

    ``names`` maps a LaTeX symbol name (spaces and ``*`` removed, e.g. ``"\\\\gamma"``, ``"a_{1}"``)
    to an object; ``functions`` maps a SymPy function class name (``"exp"``, ``"log"``, ``"Abs"``)
    to a callable.  Any other symbol or function -- ``\\\\exec(c)``, ``f(c)``, ``\\\\sum``, ``\\\\int`` -- is
    refused by name.

    Returns
    -------
    list
        The built sides: one element, or two for ``LHS = RHS``.
    """

    if not isinstance(text, str):
        raise ParameterError(f"{what}: expected a string, got {type(text).__name__}")
    if len(text) > LIMITS["chars"]:
        raise ParseLimitError(f"{what}: the text has {len(text)} characters, above the limit {LIMITS['chars']}")
    try:
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
                       what=f"{what}: parsing LaTeX {_short(text)!r}", isolate=True, error=ParseLimitError)


def _latex_parse_and_build(text, names, functions, what):
    import sympy as sp

    try:
        tree = _latex_tree(text)
    except Exception as exc:  # noqa: BLE001 - a LaTeX syntax error is a user error
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ParameterError(f"{what}: cannot parse LaTeX {_short(text)!r} ({type(exc).__name__}: "
                             f"{_short(first, 120)})") from None
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
        raise cls(f"{self.what}: {msg} in LaTeX {_short(self.text)!r}")

    def build(self, e, depth=0):
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
        self.fail(f"{type(e).__name__} ({_short(str(e))}) is not allowed")


# ---------------------------------------------------------------------------
# counts
# ---------------------------------------------------------------------------
def check_digits(digits, what: str = "digits") -> int:
    """``digits`` as an int in ``[1, LIMITS["digits"]]``.

    >>> check_digits(5000)
    Traceback (most recent call last):
    ...
    symrmt.parsing.ParseLimitError: digits = 5000 is above the limit 1000 (LIMITS['digits'])
    """
    if isinstance(digits, bool) or not isinstance(digits, int):
        raise ParameterError(f"{what} must be an integer, got {digits!r}")
    if digits < 1:
        raise ParameterError(f"{what} must be >= 1, got {digits}")
    if digits > LIMITS["digits"]:
        raise ParseLimitError(f"{what} = {digits} is above the limit {LIMITS['digits']} (LIMITS['digits'])")
    return digits


def check_count(n: int, limit_name: str, what: str) -> int:
    """Refuse ``n`` above ``LIMITS[limit_name]`` (number of gammas, Hermite k, rank r).

    >>> check_count(2000, "gammas", "number of gamma values")
    Traceback (most recent call last):
    ...
    symrmt.parsing.ParseLimitError: number of gamma values = 2000 is above the limit 1000 (LIMITS['gammas'])
    """
    if n > LIMITS[limit_name]:
        raise ParseLimitError(f"{what} = {n} is above the limit {LIMITS[limit_name]} (LIMITS[{limit_name!r}])")
    return n
