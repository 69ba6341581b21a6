"""Reading a candidate formula and its ``where`` conditions (through the package's one restricted parser)."""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import ast
import os
import re

import sympy as sp

from symrmt.errors import ParameterError
from symrmt.trust import input_file_size
from symrmt.parsing.numbers import to_fraction
from symrmt.parsing import LIMITS, parse_expression, parse_latex_expression, split_equation
from symrmt.check.vocabulary import (
    PARSE_TIMEOUT, QUANTITIES, VOCABULARY, CONSTANTS, FUNCTIONS, PARAM_SYMBOLS, QUANTITY_SYMBOLS, SYMBOL_NAME,
)

#: the largest ``.py`` candidate file read (bytes): sixteen expressions of ``LIMITS['chars']`` characters
MAX_FILE_BYTES = 16 * LIMITS["chars"]

# ---------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------
def _names_message():
    return ("parameters " + ", ".join(VOCABULARY) + "; quantities " + ", ".join(QUANTITIES)
            + "; functions " + ", ".join(sorted(FUNCTIONS)) + "; constants pi, E")


def _namespace(extra=None):
    ns = dict(CONSTANTS)
    ns.update(PARAM_SYMBOLS)
    ns.update(QUANTITY_SYMBOLS)
    ns.update(extra or {})
    return ns


def _parse_one(text: str, extra=None) -> sp.Expr:
    """One side of a candidate through the package's one restricted parser (whitelist, limits)."""
    text = text.strip()
    if not text:
        raise ParameterError("candidate: empty expression")
    expr = parse_expression(text, _namespace(extra), FUNCTIONS, what="candidate", relations=True,
                            seconds=PARSE_TIMEOUT)
    return _check_expr(expr, text)


def _check_expr(expr, text) -> sp.Expr:
    if isinstance(expr, bool) or not isinstance(expr, sp.Expr):
        raise ParameterError(f"candidate: {text!r} is not a real-valued expression (got {type(expr).__name__})")
    floats = expr.atoms(sp.Float)
    if floats:
        expr = expr.xreplace({fl: sp.Rational(str(fl)) for fl in floats})
    # a Symbol spelled like a vocabulary name (e.g. sympy.Symbol("c") without assumptions) is that name
    byname = {**PARAM_SYMBOLS, **QUANTITY_SYMBOLS}
    rename = {s: byname[s.name] for s in expr.free_symbols if s.name in byname and s != byname[s.name]}
    if rename:
        expr = expr.xreplace(rename)
    known = set(SYMBOL_NAME)
    foreign = [s for s in expr.free_symbols if s not in known]
    if foreign:
        raise ParameterError(f"candidate: {text!r} has free symbols outside the vocabulary "
                             f"({', '.join(sorted(map(str, foreign)))}); known: " + _names_message())
    if expr.has(sp.I, sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise ParameterError(f"candidate: {text!r} contains I, oo or nan")
    return expr


def _split_equation(text: str):
    return split_equation(text, "candidate")


_LATEX_NAMES = {
    "c": "c", "gamma": "gamma", "\\gamma": "gamma", "nu": "nu", "\\nu": "nu", "d": "d", "m": "m",
    "a_1": "a1", "a_{1}": "a1", "a1": "a1", "snr": "snr", "s": "snr",
    "E_{RR}": "E_RR", "E_RR": "E_RR", "E_{A}": "E_A", "E_A": "E_A", "m_{A}": "m_A", "m_A": "m_A",
    "E_{RR0}": "E_RR0", "E_{A0}": "E_A0",
}


def _parse_latex(text: str):
    """A LaTeX candidate through the one parser: every symbol and every function is whitelisted."""
    names = {k.replace(" ", ""): PARAM_SYMBOLS.get(v, QUANTITY_SYMBOLS.get(v)) for k, v in _LATEX_NAMES.items()}
    names.update({"pi": sp.pi, "\\pi": sp.pi, "E": sp.E})
    functions = {f.__name__: f for f in FUNCTIONS.values() if isinstance(f, type)}
    try:
        sides = parse_latex_expression(text, names, functions, what="candidate", seconds=PARSE_TIMEOUT)
    except ParameterError as exc:
        if "unknown name" in str(exc) and "called" not in str(exc):
            raise ParameterError(f"{exc}; use c, \\gamma, s (= snr), a_1, \\nu, d, m, E_{{RR}}, E_{{A}}, m_{{A}}") \
                from None
        raise
    return [_check_expr(side, text) for side in sides]


def _parse_py_file(path: str, quantity: str):
    """Read ``NAME = EXPR`` statements of a ``.py`` file without executing it.

    Each right-hand side goes through the same restricted parser (names assigned earlier in the file
    are available).  The candidate is ``candidate`` (an expression, or a string ``'LHS = RHS'``),
    else ``lhs``/``rhs``, else a variable named after the quantity.
    """
    input_file_size(path, f"candidate file {path}", MAX_FILE_BYTES, " of a candidate file (MAX_FILE_BYTES: each "
                    "expression in it is held to LIMITS['chars'] anyway)")
    try:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        tree = ast.parse(source, filename=path)
    except (OSError, SyntaxError, ValueError) as exc:
        raise ParameterError(f"candidate file {path}: cannot read it ({exc})") from exc
    except (RecursionError, MemoryError):
        raise ParameterError(f"candidate file {path}: an expression nests or chains too deeply for Python's parser; "
                             f"each expression is held to {LIMITS['nodes']} syntax nodes") from None
    defined: dict = {}
    texts: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            # ``import sympy`` or ``from sympy import sqrt, pi`` are skipped: nothing is executed.  An import
            # that would change what a name means (``as``, or a name that is not one of the candidate
            # language's functions and constants) is refused, never silently ignored
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                known = bound in FUNCTIONS or bound in CONSTANTS or bound in VOCABULARY or bound in QUANTITIES
                if alias.asname is not None and alias.asname != alias.name and \
                        (isinstance(node, ast.ImportFrom) or known):
                    raise ParameterError(f"candidate file {path}, line {node.lineno}: 'import ... as {alias.asname}' "
                                         "would rename a name of the candidate language, and the file is parsed, "
                                         "not executed; write the function's own name in the expression")
                if isinstance(node, ast.ImportFrom) and (alias.name == "*" or (
                        bound not in FUNCTIONS and bound not in CONSTANTS)):
                    raise ParameterError(f"candidate file {path}, line {node.lineno}: 'from {node.module} import "
                                         f"{alias.name}' is not read (the file is parsed, not executed; only the "
                                         "candidate language's functions and constants may be imported)")
            continue
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            raise ParameterError(f"candidate file {path}, line {node.lineno}: only 'NAME = expression' "
                                 "statements are read (the file is parsed, not executed)")
        name = node.targets[0].id
        if name in VOCABULARY or (name in QUANTITIES and name != quantity):
            raise ParameterError(f"candidate file {path}, line {node.lineno}: {name!r} is a vocabulary name "
                                 "and cannot be assigned")
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            seg = node.value.value
        else:
            seg = ast.get_source_segment(source, node.value)
        texts[name] = seg
        if name == "candidate" and len(_split_equation(seg)) == 2:
            continue
        defined[name] = _parse_one(seg, {k: v for k, v in defined.items()})
    for key in ("candidate",):
        if key in texts:
            if key not in defined:  # an 'LHS = RHS' string
                return [_parse_one(p, defined) for p in _split_equation(texts[key])]
            return [defined[key]]
    if "lhs" in defined and "rhs" in defined:
        return [defined["lhs"], defined["rhs"]]
    if quantity in defined:
        return [defined[quantity]]
    raise ParameterError(f"candidate file {path}: define 'candidate' (or 'lhs' and 'rhs', or {quantity!r})")


def parse_candidate(quantity: str, text: str, kind: str = "value", syntax: str = "auto"):
    """``(lhs, rhs)`` SymPy expressions of the claim ``lhs = rhs`` (see the module docstring).

    ``syntax``: ``"sympy"``, ``"latex"``, ``"file"`` or ``"auto"`` (a path ending in ``.py`` is a file,
    text with a backslash is LaTeX, anything else SymPy syntax).

    >>> parse_candidate("E_RR0", "(1 - c)/2")
    (1/2 - c/2, E_RR0)
    >>> parse_candidate("m", "gamma*m^2 + (gamma + c - 1)*m = 1", kind="equation")
    (gamma*m**2 + m*(c + gamma - 1), 1)
    """
    if quantity not in QUANTITIES:
        raise ParameterError(f"unknown quantity {quantity!r}; known: {', '.join(QUANTITIES)}")
    if kind not in ("value", "equation", "identity"):
        raise ParameterError(f"kind must be value, equation or identity, got {kind!r}")
    if not isinstance(text, str):
        if isinstance(text, sp.Basic):
            sides = [text.lhs, text.rhs] if isinstance(text, sp.Eq) else [text]
            sides = [_check_expr(sp.sympify(s), str(text)) for s in sides]
        else:
            raise ParameterError(f"candidate: expected a string or a SymPy expression, got {type(text).__name__}")
    else:
        if syntax == "auto":
            syntax = "file" if text.strip().endswith(".py") else ("latex" if "\\" in text else "sympy")
        if syntax == "file":
            if not os.path.exists(text.strip()):
                raise ParameterError(f"candidate file {text.strip()!r} does not exist")
            sides = _parse_py_file(text.strip(), quantity)
        elif syntax == "latex":
            sides = _parse_latex(text)
        elif syntax == "sympy":
            sides = [_parse_one(p) for p in _split_equation(text)]
        else:
            raise ParameterError(f"syntax must be auto, sympy, latex or file, got {syntax!r}")
    q = QUANTITY_SYMBOLS[quantity]
    if kind == "value":
        if len(sides) == 2:
            if sides[0] != q:
                raise ParameterError(f"a value claim reads '{quantity} = EXPR' or 'EXPR'; got a left side {sides[0]}")
            sides = [sides[1]]
        lhs, rhs = sides[0], q
        if q in lhs.free_symbols:
            raise ParameterError(f"a value of {quantity} cannot contain {quantity}; use --kind equation")
    else:
        lhs, rhs = (sides[0], sp.Integer(0)) if len(sides) == 1 else tuple(sides)
        if kind == "equation" and q not in (lhs - rhs).free_symbols:
            raise ParameterError(f"the equation does not involve {quantity}")
    _check_names(quantity, kind, lhs, rhs)
    return lhs, rhs


def quantities_in(expr):
    """The names of the package's quantities (``E_A``, ``E_RR``, ...) that occur in the SymPy ``expr``.

    >>> lhs, rhs = parse_candidate("E_A", "E_A = E_RR + E_A0", kind="identity")
    >>> quantities_in(lhs), quantities_in(rhs)
    (['E_A'], ['E_RR', 'E_A0'])
    """
    return [name for name, s in QUANTITY_SYMBOLS.items() if s in expr.free_symbols]


def params_of(quantity: str, lhs, rhs):
    """Parameters that must be drawn: those of every quantity involved (and of the claim's own), in the order
    of the vocabulary; ``lhs``, ``rhs``: the parsed claim.

    >>> params_of("E_RR0", *parse_candidate("E_RR0", "(1 - c)/2"))
    ['c', 'snr']
    """
    names = set(QUANTITIES[quantity].params)
    for qn in quantities_in(lhs) + quantities_in(rhs):
        names |= set(QUANTITIES[qn].params)
    return [p for p in VOCABULARY if p in names]


def _check_names(quantity, kind, lhs, rhs):
    used = {SYMBOL_NAME[s] for s in (lhs.free_symbols | rhs.free_symbols)}
    if kind == "value":
        # a value may use m (the Marchenko-Pastur Stieltjes transform) for E_RR only
        others = sorted(n for n in used if n in QUANTITIES and n != quantity and not (quantity == "E_RR" and n == "m"))
        if others:
            raise ParameterError(f"a value of {quantity} may not use the quantities {', '.join(others)}"
                                 + (" (m is allowed in a value of E_RR)" if "m" in others else "")
                                 + "; state it as --kind identity")
    allowed = set(params_of(quantity, lhs, rhs))
    extra = sorted(n for n in used if n in VOCABULARY and n not in allowed)
    if extra:
        raise ParameterError(f"candidate uses {', '.join(extra)}, which {quantity} does not depend on "
                             f"(its parameters: {', '.join(QUANTITIES[quantity].params)})")


# ---------------------------------------------------------------------------
# where: simple inequalities
# ---------------------------------------------------------------------------
_WHERE_ITEM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|==|=|<|>)\s*([^<>=]+?)\s*$")


class WhereBound(NamedTuple):
    """The ``where`` conditions on one parameter: ``low < x`` (``low <= x`` unless ``low_strict``), ``x < high``
    likewise, or ``x = fixed``; ``None`` where there is no such condition (:func:`parse_where` builds them).

    >>> WhereBound(None, False, Fraction(1), True, None)   # c < 1
    WhereBound(low=None, low_strict=False, high=Fraction(1, 1), high_strict=True, fixed=None)
    """

    low: Fraction | None
    low_strict: bool
    high: Fraction | None
    high_strict: bool
    fixed: Fraction | None


def parse_where(text) -> dict:
    """``"c<1, snr>0, gamma>=0.01, snr=0"`` -> ``{name: WhereBound(low, low_strict, high, high_strict, fixed)}``.

    Each item is ``NAME OP NUMBER`` with ``OP`` one of ``< <= > >= = ==``; numbers are decimals or
    fractions (read exactly).  Nothing is evaluated.

    >>> parse_where("c<1, snr=0")["c"]
    WhereBound(low=None, low_strict=False, high=Fraction(1, 1), high_strict=True, fixed=None)
    """
    out: dict = {}
    if text is None:
        return out
    if isinstance(text, (list, tuple)):
        text = ",".join(text)
    for item in (s for s in str(text).split(",") if s.strip()):
        mt = _WHERE_ITEM.match(item)
        if not mt:
            raise ParameterError(f"where: cannot read {item.strip()!r}; write NAME OP NUMBER, e.g. 'c<1, snr>0'")
        name, op, num = mt.groups()
        if name not in VOCABULARY:
            raise ParameterError(f"where: unknown parameter {name!r}; known: {', '.join(VOCABULARY)}")
        val = to_fraction(num, f"where {name}")
        lo, los, hi, his, fixed = out.get(name, (None, False, None, False, None))
        if op in ("=", "=="):
            fixed = val
        elif op in (">", ">="):
            if lo is None or val >= lo:
                lo, los = val, op == ">"
        else:
            if hi is None or val <= hi:
                hi, his = val, op == "<"
        out[name] = WhereBound(lo, los, hi, his, fixed)
    for name, (lo, los, hi, his, fixed) in out.items():
        if fixed is not None and not in_bounds(fixed, WhereBound(lo, los, hi, his, None)):
            raise ParameterError(f"where: {name} = {fixed} contradicts the other conditions on {name}")
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (los or his))):
            raise ParameterError(f"where: the conditions on {name} leave no values")
    return out


_POSITIVE = ("c", "gamma")
_NONNEGATIVE = ("snr", "wk2", "wq2", "nu")


def check_where_domain(wh) -> None:
    """Conditions that leave nothing of the model's domain (``c, gamma > 0``; ``snr, wk2, wq2, nu >= 0``):
    :class:`~symrmt.errors.ParameterError`; returns ``None`` otherwise.  ``wh``: as from :func:`parse_where`.

    >>> check_where_domain(parse_where("c<1, snr=0"))
    >>> check_where_domain(parse_where("c<0"))
    Traceback (most recent call last):
        ...
    symrmt.errors.ParameterError: where: the conditions on c leave no values with c > 0
    """
    for name, (_lo, _los, hi, his, fixed) in wh.items():
        if name in _POSITIVE + _NONNEGATIVE:
            strict = name in _POSITIVE
            what = "> 0" if strict else ">= 0"
            if fixed is not None and (fixed < 0 or (strict and fixed == 0)):
                raise ParameterError(f"where: {name} = {fixed} is outside the model ({name} must be {what})")
            if hi is not None and (hi < 0 or (hi == 0 and (strict or his))):
                raise ParameterError(f"where: the conditions on {name} leave no values with {name} {what}")


def in_bounds(x, bound) -> bool:
    """Whether ``x`` satisfies a ``where`` bound ``(lo, lo_strict, hi, hi_strict, fixed)`` (``None``: no bound).

    >>> in_bounds(1, (0, True, 1, False, None)), in_bounds(0, (0, True, 1, False, None)), in_bounds(2, (None, False, None, False, 2))
    (True, False, True)
    """
    lo, los, hi, his, fixed = bound
    if fixed is not None:
        return x == fixed
    if lo is not None and (x < lo or (los and x == lo)):
        return False
    if hi is not None and (x > hi or (his and x == hi)):
        return False
    return True


def where_str(where: dict) -> str:
    """The ``where`` bounds ``{name: (lo, lo_strict, hi, hi_strict, fixed)}`` as text.

    >>> where_str(parse_where("c<1, gamma>=1/100, snr=0"))
    'c < 1, gamma >= 1/100, snr = 0'
    """
    parts = []
    for name, (lo, los, hi, his, fixed) in where.items():
        if fixed is not None:
            parts.append(f"{name} = {fixed}")
            continue
        if lo is not None:
            parts.append(f"{name} {'>' if los else '>='} {lo}")
        if hi is not None:
            parts.append(f"{name} {'<' if his else '<='} {hi}")
    return ", ".join(parts)
