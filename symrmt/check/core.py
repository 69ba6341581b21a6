r"""``symrmt check``: test a formula of your own against the package's limits.

A *candidate* is an expression in the named parameters

    ``c, gamma, snr, a1, nu, d, wk2, wq2, wkwq, muwk, muwq``

(``snr = ||mu||^2``; the geometry names are the Gram entries of :class:`symrmt.geometry.Geometry`)
and, where they make sense, the *quantities*

=========  =====================================================  ==========================================
name       meaning                                                parameters
=========  =====================================================  ==========================================
``E_RR``   ridge error ``E_RR(gamma)``                             ``c, gamma, snr``
``m``      Marchenko-Pastur Stieltjes transform                    ``c, gamma``
           ``m = lim tr (X^T X/n + gamma I)^{-1}/n`` at
           ``mu = 0``, the positive root of
           ``gamma m^2 + (gamma+c-1) m - 1``
``E_RR0``  ridgeless ridge error ``E_RR(0+)``                      ``c, snr``
``E_A``    Attention error ``E_A(gamma)``                          all eleven
``m_A``    Attention Stieltjes transform                           ``c, gamma, a1, nu, d``
           ``m_A = lim tr (K^T X^T X K/n + gamma I)^{-1}/n``
           (low-rank signal and weights do not move it)
``E_A0``   ridgeless Attention error ``E_A(0+)``                   all but ``gamma``
=========  =====================================================  ==========================================

``d`` is ``lim f(t)/t`` for the kept diagonal: ``d = 0`` is ``diagonal="zero"``, ``d != 0``
is ``diagonal="keep"`` with that ``d``.

Three kinds of claim (:func:`check`, ``kind=``):

* ``value``    -- ``EXPR`` (or ``QUANTITY = EXPR``) is the value of the quantity; ``EXPR`` may
  use ``m`` for the quantities ``E_RR`` and ``E_RR0`` (the Marchenko-Pastur ``m`` above);
* ``equation`` -- ``LHS = RHS`` (or ``EXPR``, meaning ``EXPR = 0``) holds when the quantity's
  name is replaced by its true value (e.g. a polynomial in ``m``);
* ``identity`` -- ``LHS = RHS`` between expressions that may use any quantity names.

All three reduce to ``F = LHS - RHS = 0`` with every quantity replaced by the package's value.

Symbolic stage (SymPy).  For ``E_RR``, ``m`` and ``E_RR0`` the package has exact forms:
``E_RR`` as a rational function of ``m`` (:func:`symrmt.symbolic.attention.ridge_error_in_m`), ``m`` as
the positive root of :func:`symrmt.symbolic.attention.mp_quadratic` (irreducible over ``Q(c, gamma)``),
and ``E_RR0 = (1-c)/(1+snr)`` for ``c < 1``, ``0`` for ``c > 1`` (proved from the closed form
in ``symrmt/derivations/ridge.py``).  ``F`` is brought to ``N(m)/D(m)``; a square root of the
discriminant ``Delta = (gamma+c-1)^2 + 4 gamma`` is replaced by ``2 gamma m + gamma + c - 1``
(its value at the positive root); ``N`` is reduced modulo the quadratic (pseudo-remainder).
``F`` is *proved* zero when the remainder cancels to 0 and ``D`` does not; ``E_RR0`` is
handled branch by branch (``c = 1/(1+u)`` and ``c = 1 + u``, ``u > 0``).  Values fixed by
``where`` (``snr = 0``) are substituted first.  Each attempt runs in a forked child process
that is killed after ``timeout`` seconds (where ``fork`` is unavailable, the package's
SIGALRM limit is used).  *Disproved* needs a counterexample at an exact rational point:
``F`` evaluated exactly there (the true values as algebraic numbers) and shown nonzero by its
minimal polynomial (``sympy.minimal_polynomial``), or, for transcendental candidates, by
SymPy's error-tracked ``evalf(strict=True)``.  For ``E_A``, ``m_A`` and ``E_A0`` the package
has no closed form: the symbolic stage is *undecided* and the numeric stage decides.

Numeric stage (mpmath).  Points are drawn with a seeded generator (:data:`DOMAIN`; ``where``
restricts it) as short decimals (exact rationals).  The package's value is computed to
``digits + 5`` certified digits, the candidate at ``digits + 20`` working digits.  The gap is

.. math::

    \mathrm{gap} = |\mathrm{LHS} - \mathrm{RHS}| / \max(|\mathrm{LHS}|, |\mathrm{RHS}|,
    \textstyle\sum |\text{terms of LHS}|, \sum |\text{terms of RHS}|)

and a point *fails* when ``gap > 10^{-(digits-5)}``.  A candidate that agrees at every point is
*verified*: strong evidence, not a proof.

Where it fails.  For each parameter whose value separates the failing from the passing points
of the sample, the boundary is located by bisection along that parameter (the others held at
a failing point).  When every point fails, the gap is followed as ``gamma -> 0``: a gap that
shrinks like a power of ``gamma`` means the candidate holds only in the ridgeless limit.
``mc=True`` adds a Monte-Carlo run (:func:`symrmt.simulation.montecarlo.simulate`) at the worst failing point.

Overall status: ``proved`` (symbolic proof), ``verified`` (numeric agreement everywhere),
``disproved`` (a counterexample: exact, or certified to the stated digits for the quantities
without a closed form), ``undecided`` (neither).
"""

from __future__ import annotations

import ast
import math
import os
import random
import re
import time
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import sympy as sp

from symrmt.numeric import compile_expr
from symrmt.check import bracket as checkfast
from symrmt.params import Geometry, ParameterError, to_fraction
from symrmt.parsing import LIMITS, check_digits, parse_expression, parse_latex_expression, split_equation
from symrmt.parsing import run_limited as _run_limited
from symrmt.symbolic import attention as S

__all__ = ["CheckReport", "QUANTITIES", "VOCABULARY", "DOMAIN", "check", "parse_candidate", "parse_where"]

# ---------------------------------------------------------------------------
# vocabulary
# ---------------------------------------------------------------------------
#: the parameter names a candidate may use
VOCABULARY = ("c", "gamma", "snr", "a1", "nu", "d", "wk2", "wq2", "wkwq", "muwk", "muwq")
GEOMETRY_NAMES = ("snr", "wk2", "wq2", "wkwq", "muwk", "muwq")

_PARAM_SYMBOLS = {
    "c": S.c, "gamma": S.gamma, "snr": S.snr, "a1": S.a1, "nu": S.nu, "d": S.d, "wkwq": S.wkwq,
    "wk2": sp.Symbol("wk2", nonnegative=True), "wq2": sp.Symbol("wq2", nonnegative=True),
    "muwk": sp.Symbol("muwk", real=True), "muwq": sp.Symbol("muwq", real=True),
}

ALL = VOCABULARY
ATT_NOGAMMA = tuple(p for p in ALL if p != "gamma")


@dataclass(frozen=True)
class Quantity:
    name: str
    params: tuple
    meaning: str
    exact: bool  # the package has an exact (symbolic) form
    points: int  # default number of numeric points


QUANTITIES = {
    "E_RR": Quantity("E_RR", ("c", "gamma", "snr"), "ridge error E_RR(gamma)", True, 24),
    "m": Quantity("m", ("c", "gamma"), "Marchenko-Pastur Stieltjes transform lim tr (X^T X/n + gamma)^{-1}/n "
                  "at mu = 0 (positive root of gamma m^2 + (gamma+c-1) m - 1)", True, 24),
    "E_RR0": Quantity("E_RR0", ("c", "snr"), "ridgeless ridge error E_RR(0+)", True, 24),
    "E_A": Quantity("E_A", ALL, "Attention error E_A(gamma)", False, 12),
    "m_A": Quantity("m_A", ("c", "gamma", "a1", "nu", "d"),
                    "Attention Stieltjes transform lim tr (K^T X^T X K/n + gamma)^{-1}/n", False, 12),
    "E_A0": Quantity("E_A0", ATT_NOGAMMA, "ridgeless Attention error E_A(0+)", False, 6),
}

_QUANTITY_SYMBOLS = {name: (S.m if name == "m" else sp.Symbol(name, real=True)) for name in QUANTITIES}
_SYMBOL_NAME = {v: k for k, v in {**_PARAM_SYMBOLS, **_QUANTITY_SYMBOLS}.items()}

#: default domain: (low, high, scale, probability of an atom at 0) per parameter (``c`` and ``gamma``
#: log-uniform); ``nu`` is
#: ``a1^2 + U(0, 1)``; the geometry is redrawn until it is a Gram matrix; ``c`` avoids ``|c - 1| < 0.02``
DOMAIN = {
    "c": (0.05, 4.0, "log", 0.0),
    "gamma": (1e-3, 10.0, "log", 0.0),
    "snr": (0.0, 5.0, "linear", 0.0),
    "a1": (-1.0, 1.0, "linear", 0.0),
    "nu": (0.0, 1.0, "above a1^2", 0.0),
    "d": (0.0, 1.0, "linear", 0.5),
    "wk2": (0.0, 2.0, "linear", 0.5),
    "wq2": (0.0, 2.0, "linear", 0.5),
    "wkwq": (-1.0, 1.0, "correlation", 0.5),
    "muwk": (-1.0, 1.0, "correlation", 0.5),
    "muwq": (-1.0, 1.0, "correlation", 0.5),
}
#: the Attention solver is slow below gamma = 1e-2; its quantities start there
ATTENTION_GAMMA_LOW = 1e-2

_FUNCTIONS = {
    "sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log, "Abs": sp.Abs, "abs": sp.Abs, "sign": sp.sign,
    "Min": sp.Min, "Max": sp.Max, "min": sp.Min, "max": sp.Max, "Piecewise": sp.Piecewise,
    "Heaviside": sp.Heaviside, "atan": sp.atan, "asin": sp.asin, "acos": sp.acos,
    "sin": sp.sin, "cos": sp.cos, "tanh": sp.tanh, "arcsin": sp.asin, "erf": sp.erf,
}
_CONSTANTS = {"pi": sp.pi, "E": sp.E, "True": sp.true}
_OPS = frozenset({"+", "-", "*", "/", "**", "^", "(", ")", ",", "<", ">", "<=", ">=", "&", "|"})

DEFAULT_DIGITS = 30
DEFAULT_TIMEOUT = 10.0
#: seconds for parsing one candidate (the parser's own limit, see symrmt.parsing.LIMITS)
PARSE_TIMEOUT = LIMITS["time"]
DEFAULT_SEED = 0


# ---------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------
def _names_message():
    return ("parameters " + ", ".join(VOCABULARY) + "; quantities " + ", ".join(QUANTITIES)
            + "; functions " + ", ".join(sorted(_FUNCTIONS)) + "; constants pi, E")


def _namespace(extra=None):
    ns = dict(_CONSTANTS)
    ns.update(_PARAM_SYMBOLS)
    ns.update(_QUANTITY_SYMBOLS)
    ns.update(extra or {})
    return ns


def _parse_one(text: str, extra=None) -> sp.Expr:
    """One side of a candidate through the package's one restricted parser (whitelist, limits)."""
    text = text.strip()
    if not text:
        raise ParameterError("candidate: empty expression")
    expr = parse_expression(text, _namespace(extra), _FUNCTIONS, what="candidate", relations=True,
                            seconds=PARSE_TIMEOUT)
    return _check_expr(expr, text)


def _check_expr(expr, text) -> sp.Expr:
    if isinstance(expr, bool) or not isinstance(expr, sp.Expr):
        raise ParameterError(f"candidate: {text!r} is not a real-valued expression (got {type(expr).__name__})")
    floats = expr.atoms(sp.Float)
    if floats:
        expr = expr.xreplace({fl: sp.Rational(str(fl)) for fl in floats})
    # a Symbol spelled like a vocabulary name (e.g. sympy.Symbol("c") without assumptions) is that name
    byname = {**_PARAM_SYMBOLS, **_QUANTITY_SYMBOLS}
    rename = {s: byname[s.name] for s in expr.free_symbols if s.name in byname and s != byname[s.name]}
    if rename:
        expr = expr.xreplace(rename)
    known = set(_SYMBOL_NAME)
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
    names = {k.replace(" ", ""): _PARAM_SYMBOLS.get(v, _QUANTITY_SYMBOLS.get(v)) for k, v in _LATEX_NAMES.items()}
    names.update({"pi": sp.pi, "\\pi": sp.pi, "E": sp.E})
    functions = {f.__name__: f for f in _FUNCTIONS.values() if isinstance(f, type)}
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
    try:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        tree = ast.parse(source, filename=path)
    except (OSError, SyntaxError, ValueError) as exc:
        raise ParameterError(f"candidate file {path}: cannot read it ({exc})") from exc
    defined: dict = {}
    texts: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue  # ``import sympy`` and the like are ignored: nothing is executed
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
            if not os.path.isfile(text.strip()):
                raise ParameterError(f"candidate file {text.strip()!r} does not exist")
            sides = _parse_py_file(text.strip(), quantity)
        elif syntax == "latex":
            sides = _parse_latex(text)
        elif syntax == "sympy":
            sides = [_parse_one(p) for p in _split_equation(text)]
        else:
            raise ParameterError(f"syntax must be auto, sympy, latex or file, got {syntax!r}")
    q = _QUANTITY_SYMBOLS[quantity]
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


def _quantities_in(expr):
    return [name for name, s in _QUANTITY_SYMBOLS.items() if s in expr.free_symbols]


def _params_of(quantity: str, lhs, rhs):
    """Parameters that must be drawn: those of every quantity involved (and of the claim's own)."""
    names = set(QUANTITIES[quantity].params)
    for qn in _quantities_in(lhs) + _quantities_in(rhs):
        names |= set(QUANTITIES[qn].params)
    return [p for p in VOCABULARY if p in names]


def _check_names(quantity, kind, lhs, rhs):
    used = {_SYMBOL_NAME[s] for s in (lhs.free_symbols | rhs.free_symbols)}
    if kind == "value":
        # a value may use m (the Marchenko-Pastur Stieltjes transform) for E_RR only
        others = sorted(n for n in used if n in QUANTITIES and n != quantity and not (quantity == "E_RR" and n == "m"))
        if others:
            raise ParameterError(f"a value of {quantity} may not use the quantities {', '.join(others)}"
                                 + (" (m is allowed in a value of E_RR)" if "m" in others else "")
                                 + "; state it as --kind identity")
    allowed = set(_params_of(quantity, lhs, rhs))
    extra = sorted(n for n in used if n in VOCABULARY and n not in allowed)
    if extra:
        raise ParameterError(f"candidate uses {', '.join(extra)}, which {quantity} does not depend on "
                             f"(its parameters: {', '.join(QUANTITIES[quantity].params)})")


# ---------------------------------------------------------------------------
# where: simple inequalities
# ---------------------------------------------------------------------------
_WHERE_ITEM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|==|=|<|>)\s*([^<>=]+?)\s*$")


def parse_where(text) -> dict:
    """``"c<1, snr>0, gamma>=0.01, snr=0"`` -> ``{name: (low, low_strict, high, high_strict, fixed)}``.

    Each item is ``NAME OP NUMBER`` with ``OP`` one of ``< <= > >= = ==``; numbers are decimals or
    fractions (read exactly).  Nothing is evaluated.

    >>> parse_where("c<1, snr=0")["c"]
    (None, False, Fraction(1, 1), True, None)
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
        out[name] = (lo, los, hi, his, fixed)
    for name, (lo, los, hi, his, fixed) in out.items():
        if fixed is not None and not _in_bounds(fixed, (lo, los, hi, his, None)):
            raise ParameterError(f"where: {name} = {fixed} contradicts the other conditions on {name}")
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (los or his))):
            raise ParameterError(f"where: the conditions on {name} leave no values")
    return out


_POSITIVE = ("c", "gamma")
_NONNEGATIVE = ("snr", "wk2", "wq2", "nu")


def _check_where_domain(wh) -> None:
    """Conditions that leave nothing of the model's domain (``c, gamma > 0``; ``snr, wk2, wq2, nu >= 0``)."""
    for name, (_lo, _los, hi, his, fixed) in wh.items():
        if name in _POSITIVE + _NONNEGATIVE:
            strict = name in _POSITIVE
            what = "> 0" if strict else ">= 0"
            if fixed is not None and (fixed < 0 or (strict and fixed == 0)):
                raise ParameterError(f"where: {name} = {fixed} is outside the model ({name} must be {what})")
            if hi is not None and (hi < 0 or (hi == 0 and (strict or his))):
                raise ParameterError(f"where: the conditions on {name} leave no values with {name} {what}")


def _in_bounds(x, bound) -> bool:
    lo, los, hi, his, fixed = bound
    if fixed is not None:
        return x == fixed
    if lo is not None and (x < lo or (los and x == lo)):
        return False
    if hi is not None and (x > hi or (his and x == hi)):
        return False
    return True


def _where_str(where: dict) -> str:
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


# ---------------------------------------------------------------------------
# drawing points
# ---------------------------------------------------------------------------
def _round(x: float, sig: int = 4) -> Fraction:
    """``x`` rounded to ``sig`` significant digits, as the exact rational of that decimal."""
    return Fraction(f"{x:.{sig}g}")


def _interval(name, where, lo, hi):
    """The default range ``[lo, hi]`` intersected with the conditions on ``name``.  Conditions that lie
    outside the default range (``c > 5``, ``gamma < 1e-4``) give a range just inside them."""
    b = where.get(name)
    if b is None:
        return lo, hi
    blo = float(b[0]) if b[0] is not None else None
    bhi = float(b[2]) if b[2] is not None else None
    new_lo = max(lo, blo) if blo is not None else lo
    new_hi = min(hi, bhi) if bhi is not None else hi
    if new_lo <= new_hi:
        return new_lo, new_hi
    if blo is not None and blo >= hi:  # above the default range
        return blo, bhi if bhi is not None else blo + 1.0
    # below the default range
    bottom = blo if blo is not None else (bhi / 10 if bhi > 0 else bhi - 1.0)
    return bottom, bhi


def _draw_one(name, rng, where, lo=None, hi=None, scale=None, atom=None):
    b = where.get(name)
    if b is not None and b[4] is not None:
        return b[4]
    dlo, dhi, dscale, datom = DOMAIN[name]
    lo = dlo if lo is None else lo
    hi = dhi if hi is None else hi
    scale = dscale if scale is None else scale
    atom = datom if atom is None else atom
    if atom and rng.random() < atom and (b is None or _in_bounds(Fraction(0), b)):
        return Fraction(0)
    lo, hi = _interval(name, where, lo, hi)
    for _ in range(100):
        if scale == "log":
            x = math.exp(rng.uniform(math.log(max(lo, 1e-12)), math.log(hi)))
            v = _round(x, 3)
        else:
            v = _round(rng.uniform(lo, hi))
        if b is None or _in_bounds(v, b):
            return v
    raise ParameterError(f"where: could not draw {name} inside the conditions")


def _draw_point(params, rng, where, gamma_low):
    pt = {}
    for _ in range(200):
        pt = {}
        for name in params:
            if name == "c":
                for _k in range(20):
                    v = _draw_one("c", rng, where)
                    if abs(v - 1) >= Fraction(1, 50):
                        break
                pt["c"] = v
            elif name == "gamma":
                pt["gamma"] = _draw_one("gamma", rng, where, lo=gamma_low)
            elif name == "nu":
                continue
            elif name in ("wkwq", "muwk", "muwq"):
                continue
            else:
                pt[name] = _draw_one(name, rng, where)
        if "nu" in params:
            a1v = pt.get("a1", Fraction(0))
            b = where.get("nu")
            if b is not None and b[4] is not None:
                pt["nu"] = b[4]
            else:
                lo = float(a1v) ** 2
                pt["nu"] = _draw_one("nu", rng, where, lo=lo, hi=lo + 1.0)
                if pt["nu"] < a1v**2:
                    continue
        diag = {"wkwq": ("wk2", "wq2"), "muwk": ("snr", "wk2"), "muwq": ("snr", "wq2")}
        for name in ("wkwq", "muwk", "muwq"):
            if name in params:
                x, y = diag[name]
                r = math.sqrt(float(pt.get(x, 0)) * float(pt.get(y, 0)))
                b = where.get(name)
                if b is not None and b[4] is not None:
                    pt[name] = b[4]
                elif r == 0:
                    pt[name] = Fraction(0)
                else:
                    pt[name] = _draw_one(name, rng, where, lo=-r, hi=r)
        if any(n in params for n in GEOMETRY_NAMES[1:]):
            try:
                Geometry(**{n: pt.get(n, 0) for n in GEOMETRY_NAMES})
            except ParameterError:
                continue
        if all(_in_bounds(pt[n], where[n]) for n in where if n in pt):
            return pt
    raise ParameterError("where: could not draw points satisfying the conditions (and the Gram condition)")


# ---------------------------------------------------------------------------
# the package's values (numeric layer)
# ---------------------------------------------------------------------------
def _mp(x: Fraction):
    return mpmath.mpf(x.numerator) / x.denominator


def _hermite_dict(pt):
    d = pt.get("d", Fraction(0))
    return {"a1": pt.get("a1", 0), "nu": pt.get("nu", 0), "d": d}, ("keep" if d != 0 else "zero")


def _geometry(pt):
    return Geometry(**{n: pt.get(n, 0) for n in GEOMETRY_NAMES})


def _mp_root_value(c, g, dps):
    with mpmath.workdps(dps + 10):
        c, g = _mp(c), _mp(g)
        b = g + c - 1
        disc = mpmath.sqrt(b * b + 4 * g)
        # the positive root, written without cancellation: m = 2/(b + disc)
        val = 2 / (b + disc) if b >= 0 else (disc - b) / (2 * g)
    with mpmath.workdps(dps):
        return +val


def _ridgeless_ridge_exact(c: Fraction, snr: Fraction):
    """``E_RR(0+)``: ``(1-c)/(1+snr)`` for ``c < 1``, ``0`` for ``c >= 1`` (exact rationals)."""
    return (1 - c) / (1 + snr) if c < 1 else Fraction(0)


def _ridgeless_attention(pt, digits):
    c = pt["c"]
    if c >= 1:
        return mpmath.mpf(0)  # X^T X and K invertible: no kernel, E_A(0+) = 0 for any signal
    if pt.get("snr", 0) == 0:
        with mpmath.workdps(digits + 10):
            return _mp(1 - c)  # noise only: E_A(0+) = 1 - c for every (a1, nu, d)
    from symrmt.symbolic.closed_forms.ridgeless import general_ridgeless_error, ridgeless_traces
    from symrmt.numeric.solver import PrecisionError

    dps = digits + 10
    with mpmath.workdps(dps + 10):
        cm, a1m, num, dm = (_mp(Fraction(x)) for x in (c, pt["a1"], pt["nu"], pt.get("d", 0)))
    traces, res = ridgeless_traces(cm, a1m, num, dm, dps=dps)
    if res > mpmath.mpf(10) ** (-dps + 5):
        raise PrecisionError(f"ridgeless traces: residual {mpmath.nstr(res, 3)}")
    val, err = general_ridgeless_error(traces, cm, a1m, _geometry(pt), dps=dps)
    if err > abs(val) * mpmath.mpf(10) ** (-digits - 2) and err > mpmath.mpf(10) ** (-digits - 2):
        raise PrecisionError(f"ridgeless Attention limit: epsilon-extrapolation error {mpmath.nstr(err, 3)}")
    return val


def _truth_values(names, pt, digits):
    """The package's values of the quantities ``names`` at ``pt`` (mpf, ``digits`` certified digits)."""
    from symrmt.numeric.theory import attention_limit, ridge_limit

    out = {}
    att = None
    for name in names:
        if name == "E_RR":
            out[name] = ridge_limit(pt["c"], [pt["gamma"]], pt.get("snr", 0), digits)[0]
        elif name == "m":
            out[name] = _mp_root_value(pt["c"], pt["gamma"], digits)
        elif name == "E_RR0":
            with mpmath.workdps(digits + 10):
                out[name] = _mp(_ridgeless_ridge_exact(pt["c"], pt.get("snr", Fraction(0))))
        elif name in ("E_A", "m_A"):
            if att is None:
                f, diag = _hermite_dict(pt)
                geo = _geometry(pt) if name == "E_A" or "E_A" in names else Geometry()
                att = attention_limit(f, pt["c"], [pt["gamma"]], geo, diag, digits, details=True)[0]
            out[name] = att.error if name == "E_A" else att.stieltjes
        elif name == "E_A0":
            out[name] = _ridgeless_attention(pt, digits)
    return out


# ---------------------------------------------------------------------------
# candidate evaluation and gap
# ---------------------------------------------------------------------------
class _Evaluator:
    """Compiled (mpmath) ``lhs``, ``rhs`` and their additive terms."""

    def __init__(self, lhs, rhs):
        self.syms = [_PARAM_SYMBOLS[n] for n in VOCABULARY] + [_QUANTITY_SYMBOLS[n] for n in QUANTITIES]
        terms = list(sp.Add.make_args(lhs)) + list(sp.Add.make_args(rhs))
        self.fn = compile_expr(self.syms, [lhs, rhs] + terms, cse=False)

    def gap(self, pt, truths, dps):
        """``(gap, lhs, rhs)`` at working precision ``dps``; ``gap = None`` and a reason when undefined."""
        with mpmath.workdps(dps):
            args = [_mp(pt[n]) if n in pt else mpmath.mpf(0) for n in VOCABULARY]
            args += [truths.get(n, mpmath.mpf(0)) for n in QUANTITIES]
            try:
                vals = self.fn(*args)
            except (ZeroDivisionError, ValueError, TypeError, OverflowError) as exc:
                return None, None, None, f"candidate undefined ({type(exc).__name__}: {exc})"
            vals = [mpmath.mpmathify(v) for v in vals]
            if any(isinstance(v, mpmath.mpc) and v.imag != 0 for v in vals):
                return None, None, None, "candidate is not real here"
            vals = [mpmath.re(v) for v in vals]
            if any(not mpmath.isfinite(v) for v in vals):
                return None, None, None, "candidate is not finite here"
            lhs, rhs = vals[0], vals[1]
            scale = max(abs(lhs), abs(rhs), mpmath.fsum(abs(v) for v in vals[2:]))
            g = abs(lhs - rhs) / scale if scale != 0 else mpmath.mpf(0)
            return g, lhs, rhs, None


# ---------------------------------------------------------------------------
# time-limited symbolic work
# ---------------------------------------------------------------------------
class SymbolicTimeout(Exception):
    """A symbolic attempt ran past its time limit (it was killed)."""


def run_limited(fn, args, timeout: float):
    """``fn(*args)`` in a forked child, killed after ``timeout`` s (:class:`SymbolicTimeout`).

    The package's one time limit (:func:`symrmt.parsing.run_limited` with ``isolate=True``);
    the result must be picklable, and an error of ``fn`` is reported as an ``ArithmeticError``.
    """
    try:
        return _run_limited(fn, args, timeout, what="symbolic attempt", isolate=True, error=SymbolicTimeout)
    except (SymbolicTimeout, ArithmeticError):
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the attempt is reported, not raised
        raise ArithmeticError(f"{type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------------------
# symbolic layer: proofs and exact counterexamples
# ---------------------------------------------------------------------------
def _delta():
    return sp.expand((S.gamma + S.c - 1) ** 2 + 4 * S.gamma)


def _replace_mp_sqrt(expr, csub=None):
    """Replace ``(q Delta)^(k/2)`` (``q`` a positive square of a rational function) by its value
    ``(sqrt(q) (2 gamma m + gamma + c - 1))^k`` at the positive Marchenko-Pastur root."""
    delta = _delta()
    root_val = 2 * S.gamma * S.m + S.gamma + S.c - 1
    if csub is not None:
        delta, root_val = delta.subs(S.c, csub), root_val.subs(S.c, csub)
    rep = {}
    for p in expr.atoms(sp.Pow):
        b, e = p.as_base_exp()
        if not (e.is_Rational and e.q == 2):
            continue
        q = sp.factor(sp.cancel(b / delta))
        if q.free_symbols - {S.gamma, S.c, S.snr} - set(_PARAM_SYMBOLS.values()):
            continue
        sq = sp.sqrt(q)
        if any(a.exp.is_Rational and not a.exp.is_Integer for a in sq.atoms(sp.Pow)) or sq.has(sp.Abs):
            continue
        if q.free_symbols and not sp.ask(sp.Q.positive(q)):
            continue
        rep[p] = (sq * root_val) ** e.p
    return expr.xreplace(rep) if rep else expr


_KINKS = (sp.Abs, sp.Min, sp.Max, sp.sign, sp.Heaviside, sp.Piecewise)


def _mp_polynomial():
    """:func:`symrmt.symbolic.attention.mp_quadratic` as a polynomial in ``m``: ``gamma m^2 + (gamma + c - 1) m - 1``."""
    num, den = sp.fraction(sp.cancel(sp.together(S.mp_quadratic())))
    return sp.expand(num / den) if den.is_number else sp.expand(num)


def _ridgeless_branches(where):
    """``[(label, c substitution, {symbol: value})]`` for the branches ``c < 1``, ``c > 1`` of the ridgeless
    closed forms that ``where`` allows: ``E_RR0`` and, at ``snr = 0``, ``E_A0``."""
    u = sp.Symbol("u", positive=True)
    b = where.get("c", (None, False, None, False, None))
    out = []
    lo, hi = b[0], b[2]
    if b[4] is not None:
        lo = hi = b[4]
    if lo is None or lo < 1:
        out.append(("c < 1", 1 / (1 + u), {_QUANTITY_SYMBOLS["E_RR0"]: (1 - S.c) / (1 + S.snr),
                                            _QUANTITY_SYMBOLS["E_A0"]: 1 - S.c}))
    if hi is None or hi > 1:
        out.append(("c > 1", 1 + u, {_QUANTITY_SYMBOLS["E_RR0"]: sp.Integer(0), _QUANTITY_SYMBOLS["E_A0"]: sp.Integer(0)}))
    if not out:  # where fixes c = 1: both ridgeless errors are 0 there
        out.append(("c = 1", None, {_QUANTITY_SYMBOLS["E_RR0"]: sp.Integer(0), _QUANTITY_SYMBOLS["E_A0"]: sp.Integer(0)}))
    return out


def _exact_quantities(wh):
    """Quantities with an exact form under the conditions ``wh``: ``E_RR``, ``m``, ``E_RR0``, and ``E_A0`` when
    ``where`` fixes ``snr = 0`` (noise only: ``E_A(0+) = 1 - c`` for ``c < 1``, ``0`` for ``c > 1``, for every
    ``a1, nu, d`` and weights; :func:`symrmt.symbolic.closed_forms.ridgeless.noise_only_error`)."""
    out = {q for q, Q in QUANTITIES.items() if Q.exact}
    snr = wh.get("snr")
    if snr is not None and snr[4] == 0:
        out.add("E_A0")
    return out


def _prove(F, fixed, branches, timeout):
    """Try to prove ``F = 0`` (``F`` in the parameters, ``m`` and the exact quantities).  Returns
    ``("proved", detail)`` or ``("not proved", reason)``.  Runs in a child (time limit per branch)."""
    details = []
    for label, csub, rr0 in branches:
        try:
            res = run_limited(_prove_branch, (F, fixed, csub, rr0), timeout)
        except (SymbolicTimeout, ArithmeticError) as exc:
            return "not proved", (f"{label}: " if label else "") + str(exc)
        if res[0] != "proved":
            return "not proved", (f"{label}: " if label else "") + res[1]
        details.append(f"{label}: {res[1]}" if label else res[1])
    return "proved", "; ".join(details)


def _prove_branch(F, fixed, csub, ridgeless):
    F = F.xreplace({_QUANTITY_SYMBOLS["E_RR"]: S.ridge_error_in_m()})
    if ridgeless:
        F = F.xreplace(ridgeless)
    F = F.xreplace(fixed)
    P = _mp_polynomial()
    if csub is not None:
        F = F.subs(S.c, csub)
        P = P.subs(S.c, csub)
    F = sp.piecewise_fold(F)
    if F.has(sp.Piecewise):
        Fs = sp.simplify(F)
        if Fs == 0:
            return "proved", "simplify"
        return "not proved", "piecewise candidate did not simplify to 0"
    F = _replace_mp_sqrt(F, csub)
    if S.m in F.free_symbols and F.has(*_KINKS):
        return "not proved", "Abs/Min/Max/sign/Heaviside with m: no symbolic route (the numeric stage decides)"
    if S.m not in F.free_symbols:
        Fc = sp.cancel(sp.together(F))
        if Fc == 0:
            return "proved", "rational simplification to 0"
        if sp.simplify(Fc) == 0:
            return "proved", "simplify"
        return "not proved", "the difference does not simplify to 0"
    num, den = sp.fraction(sp.together(F))
    num, den = sp.expand(num), sp.expand(den)
    if not (num.is_polynomial(S.m) and den.is_polynomial(S.m)):
        return "not proved", "m enters non-polynomially after clearing denominators"
    rn = sp.prem(num, P, S.m)
    rd = sp.prem(den, P, S.m)
    if sp.expand(rd) == 0:
        return "not proved", "the candidate's denominator vanishes at the true m"
    coeffs = sp.Poly(rn, S.m).all_coeffs() if rn != 0 else []
    for co in coeffs:
        co = sp.cancel(co)
        if co != 0 and sp.simplify(co) != 0:
            return "not proved", "nonzero remainder modulo the Marchenko-Pastur quadratic"
    return "proved", "reduced to 0 modulo the Marchenko-Pastur quadratic (m irrational over Q(c, gamma))"


def _exact_at(F, pt):
    """``F`` at the exact point ``pt``, the true values as algebraic numbers: ``(nonzero?, value, how)``."""
    subs = {_PARAM_SYMBOLS[n]: sp.Rational(v.numerator, v.denominator) for n, v in pt.items()}
    rr0 = _ridgeless_ridge_exact(pt["c"], pt.get("snr", Fraction(0))) if "c" in pt else None
    vals = {}
    if "gamma" in pt:
        root = S.mp_root().xreplace(subs)
        vals[S.m] = root
        vals[_QUANTITY_SYMBOLS["E_RR"]] = S.ridge_error_in_m().xreplace(subs).xreplace({S.m: root})
    if rr0 is not None:
        vals[_QUANTITY_SYMBOLS["E_RR0"]] = sp.Rational(rr0.numerator, rr0.denominator)
        if pt.get("snr", Fraction(0)) == 0:  # noise only: E_A(0+) = 1 - c (c < 1), 0 (c >= 1)
            a0 = 1 - pt["c"] if pt["c"] < 1 else Fraction(0)
            vals[_QUANTITY_SYMBOLS["E_A0"]] = sp.Rational(a0.numerator, a0.denominator)
    val = F.xreplace(subs).xreplace(vals)
    if val.free_symbols:
        return None, None, "symbols left"
    if val.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        return None, None, "candidate undefined at the point"
    x = sp.Dummy("x")
    short = len(str(val)) <= 60
    try:
        mp_ = sp.Poly(sp.minimal_polynomial(val, x), x)
    except Exception:  # noqa: BLE001 - transcendental: fall back to error-tracked evalf
        try:
            num = sp.N(val, 30, strict=True)
        except Exception as exc:  # noqa: BLE001
            return None, None, f"cannot evaluate exactly ({type(exc).__name__})"
        if num != 0:
            return True, f"≈ {sp.N(val, 15)}", "nonzero by SymPy's error-tracked evaluation (evalf strict, 30 digits)"
        return None, None, "evalf could not separate the value from 0"
    if mp_ == sp.Poly(x, x):
        return False, "0", "exact zero"
    text = f"= {val}" if val.is_Rational else (f"= {val} ≈ {sp.N(val, 15)}" if short else f"≈ {sp.N(val, 15)}")
    return True, text, f"exact: a nonzero algebraic number, minimal polynomial of degree {mp_.degree()}"


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

    def as_dict(self) -> dict:
        return {
            "quantity": self.quantity, "kind": self.kind, "candidate": self.candidate, "status": self.status,
            "evidence": self.evidence, "symbolic": self.symbolic, "numeric": self.numeric, "region": self.region,
            "mc": self.mc, "notes": list(self.notes), "seconds": round(self.seconds, 2),
        }

    def __str__(self) -> str:
        return self.text()

    def text(self) -> str:
        n = self.numeric
        lines = [f"claim: {self.candidate}  [{self.kind} of {self.quantity}]",
                 f"symbolic: {self.symbolic['status']}: {self.symbolic['detail']}"]
        ce = self.symbolic.get("counterexample")
        if ce:
            lines.append(f"  counterexample: {_point_str(ce['point'])}: LHS - RHS {ce['difference']} ({ce['how']})")
        lines.append(f"numeric: {n['points']} points at {n['digits']} digits (seed {n['seed']}"
                     + (f", where {n['where']}" if n["where"] else "") + f"): {n['passed']} agree, {n['failed']} fail"
                     + (f", {n['skipped']} skipped" if n["skipped"] else ""))
        if n.get("max_gap") is not None:
            lines.append(f"  largest relative gap {n['max_gap']} at {_point_str(n['max_gap_at'])} "
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
        for note in self.notes:
            lines.append(f"note: {note}")
        lines.append(f"status: {self.status.upper()} -- {self.evidence}")
        return "\n".join(lines)


def _point_str(pt) -> str:
    return ", ".join(f"{k} = {v}" for k, v in pt.items())


def _pt_json(pt) -> dict:
    return {k: str(v) for k, v in pt.items()}


# ---------------------------------------------------------------------------
# region finding
# ---------------------------------------------------------------------------
def _separating(params, fails, passes):
    """Parameters whose sampled values put every failing point on one side of every passing point."""
    out = []
    for p in params:
        fv = [pt[p] for pt in fails]
        pv = [pt[p] for pt in passes]
        if not fv or not pv or len(set(fv + pv)) < 2:
            continue
        if min(fv) > max(pv):
            out.append((p, "above"))
        elif max(fv) < min(pv):
            out.append((p, "below"))
    return out


def _bisect(status_at, pt_fail, p, v_pass, steps):
    """Bisection along ``p`` between a failing and a passing value; ``(fail_value, pass_value)``."""
    a, b = pt_fail[p], v_pass  # a fails, b passes
    log = p == "gamma"
    for _ in range(steps):
        if log:
            mid = _round(math.sqrt(float(a) * float(b)), 8)
        else:
            mid = _round(float(a + b) / 2, 8)
        if mid in (a, b):
            break
        st = status_at({**pt_fail, p: mid})
        if st is None:
            break
        if st:
            b = mid
        else:
            a = mid
        if abs(float(a - b)) <= 1e-4 * max(abs(float(a)), abs(float(b)), 1e-3):
            break
    return a, b


# ---------------------------------------------------------------------------
# Monte-Carlo
# ---------------------------------------------------------------------------
def _mc_at(quantity, pt, cand_value, truth_value, n=256, trials=8, seed=0):
    import numpy as np

    from symrmt.simulation.montecarlo import simulate

    if quantity in ("E_RR", "E_RR0"):
        g = float(pt.get("gamma", Fraction(1, 10**4)))
        res = simulate(np.tanh, n, pt["c"], [g], _geometry(pt), trials=trials, seed=seed, progress=False)
        mean, se = float(res["ridge"]["mean"][0]), float(res["ridge"]["se"][0])
    elif quantity in ("E_A", "E_A0"):
        if pt.get("d", 0) != 0:
            return {"summary": "skipped: a simulated f with the given d != 0 is not built (needs d = 0)"}
        a1, nu = float(pt["a1"]), float(pt["nu"])
        b = math.sqrt(max(nu - a1 * a1, 0.0) / 2)

        def f(t):
            return a1 * t + b * (t * t - 1)

        g = float(pt.get("gamma", Fraction(1, 10**4)))
        res = simulate(f, n, pt["c"], [g], _geometry(pt), trials=trials, seed=seed, progress=False)
        mean, se = float(res["attention"]["mean"][0]), float(res["attention"]["se"][0])
    else:
        return {"summary": f"skipped: no simulation for {quantity}"}
    se = max(se, 1e-12)
    dc, dt = abs(mean - float(cand_value)) / se, abs(mean - float(truth_value)) / se
    side = "the package's limit" if dt < dc else "the candidate"
    gam = f", gamma = {pt['gamma']}" if "gamma" in pt else ", gamma = 1e-4 standing in for gamma -> 0+"
    point = ", ".join(f"{k} = {v}" for k, v in pt.items() if k != "gamma")
    return {"n": n, "trials": trials, "mean": mean, "se": se, "candidate": float(cand_value),
            "theory": float(truth_value), "candidate_gap_over_se": dc, "theory_gap_over_se": dt,
            "summary": f"n = {n}, {trials} trials{gam}, {point}: simulation {mean:.5f} ± {se:.1e}; candidate "
                       f"{float(cand_value):.5f} ({dc:.3g} se away), package {float(truth_value):.5f} ({dt:.3g} se "
                       f"away; finite n and gamma leave a bias): the simulation sides with {side}"}


# ---------------------------------------------------------------------------
# the check
# ---------------------------------------------------------------------------
def _claim_str(lhs, rhs) -> str:
    def s(e):
        return str(e.xreplace({v: sp.Symbol(k) for k, v in _PARAM_SYMBOLS.items()}))
    return f"{s(lhs)} = {s(rhs)}"


def check(quantity: str, expr, kind: str = "value", where=None, points: int | None = None,
          digits: int = DEFAULT_DIGITS, seed: int = DEFAULT_SEED, mc: bool = False,
          timeout: float = DEFAULT_TIMEOUT, syntax: str = "auto", region: bool = True) -> CheckReport:
    """Check a candidate formula against the package (see the module docstring).

    Parameters
    ----------
    quantity : str
        ``E_RR``, ``m``, ``E_RR0``, ``E_A``, ``m_A`` or ``E_A0``.
    expr : str or sympy expression
        The candidate: SymPy syntax, LaTeX (needs ``symrmt[latex]``) or a path to a ``.py`` file.
    kind : {"value", "equation", "identity"}
    where : str, optional
        Conditions on the parameters, e.g. ``"c<1, snr>0"`` or ``"snr=0"``.
    points : int, optional
        Numeric points (default: 24 for the ridge quantities, 12 for ``E_A``/``m_A``, 6 for ``E_A0``).
    digits : int
        Digits of the numeric comparison (>= 15); a point fails when the relative gap exceeds
        ``10^-(digits-5)``.
    seed : int
        Seed of the point generator.
    mc : bool
        Add a Monte-Carlo simulation at the worst failing point.
    timeout : float
        Time limit (s) of each symbolic attempt.
    region : bool
        Locate the boundary of the failing region by bisection.

    Returns
    -------
    CheckReport

    Examples
    --------
    >>> r = check("E_RR0", "(1 - c)/(1 + snr)", where="c<1", points=4)
    >>> r.status
    'proved'
    >>> check("m", "gamma*m^2 + (gamma+c-1)*m - 1", kind="equation", points=4).status
    'proved'
    """
    t0 = time.monotonic()
    if not isinstance(digits, int) or digits < 15:
        raise ParameterError(f"digits must be an integer >= 15, got {digits!r}")
    check_digits(digits)
    if points is not None and (not isinstance(points, int) or points < 1):
        raise ParameterError(f"points must be a positive integer, got {points!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ParameterError(f"timeout must be a positive, finite number of seconds (the symbolic stage runs "
                             f"under it), got {timeout!r}")
    lhs, rhs = parse_candidate(quantity, expr, kind, syntax)
    wh = parse_where(where)
    params = _params_of(quantity, lhs, rhs)
    _check_where_domain(wh)
    extra = sorted(set(wh) - set(params))
    if extra:
        raise ParameterError(f"where names {', '.join(extra)}, which the claim does not depend on "
                             f"(its parameters: {', '.join(params)})")
    involved = sorted(set(_quantities_in(lhs) + _quantities_in(rhs)), key=list(QUANTITIES).index)
    F = lhs - rhs
    notes = []

    # ---- symbolic
    exact = _exact_quantities(wh)
    exact_only = all(q in exact for q in involved)
    fixed = {_PARAM_SYMBOLS[n]: sp.Rational(b[4].numerator, b[4].denominator) for n, b in wh.items()
             if b[4] is not None}
    if exact_only:
        ridgeless = {"E_RR0", "E_A0"} & set(involved)
        branches = _ridgeless_branches(wh) if ridgeless else [("", None, None)]
        sym_status, sym_detail = _prove(F, fixed, branches, timeout)
    else:
        sym_status, sym_detail = "undecided", ("no closed form for " + ", ".join(q for q in involved
                                               if q not in exact) + " in the package"
                                               + (" (E_A0 has one at snr = 0)" if "E_A0" in involved else "")
                                               + ": the numeric stage decides")
    symbolic = {"status": "proved" if sym_status == "proved" else "undecided", "detail": sym_detail,
                "counterexample": None}

    # ---- numeric
    npts = points if points is not None else min(QUANTITIES[q].points for q in involved + [quantity])
    attention = any(q not in exact for q in involved)
    gamma_low = max(DOMAIN["gamma"][0], ATTENTION_GAMMA_LOW) if attention else DOMAIN["gamma"][0]
    rng = random.Random(seed)
    ev = _Evaluator(lhs, rhs)
    thr = mpmath.mpf(10) ** (-(digits - 5))
    results = []

    def evaluate(pt):
        truths = _truth_values(involved, pt, digits + 5)
        g, lv, rv, why = ev.gap(pt, truths, digits + 20)
        return g, lv, rv, why, truths

    skipped = []
    for _ in range(npts):
        pt = _draw_point(params, rng, wh, gamma_low)
        try:
            g, lv, rv, why, truths = evaluate(pt)
        except (ArithmeticError, ValueError) as exc:  # the package could not deliver here
            skipped.append({"point": _pt_json(pt), "reason": f"{type(exc).__name__}: {exc}"[:200]})
            continue
        results.append((pt, g, lv, rv, why, truths))
    fails = [r for r in results if r[1] is None or r[1] > thr]
    passes = [r for r in results if r[1] is not None and r[1] <= thr]
    gaps = [r for r in results if r[1] is not None]
    worst = max(gaps, key=lambda r: r[1]) if gaps else None
    numeric = {
        "points": len(results), "skipped": len(skipped), "skipped_points": skipped, "digits": digits,
        "seed": seed, "where": _where_str(wh), "threshold": mpmath.nstr(thr, 3),
        "passed": len(passes), "failed": len(fails),
        "max_gap": mpmath.nstr(worst[1], 3) if worst else None,
        "max_gap_at": _pt_json(worst[0]) if worst else None,
        "worst": {"lhs": mpmath.nstr(worst[2], digits), "rhs": mpmath.nstr(worst[3], digits)} if worst else None,
        "undefined_at": [{"point": _pt_json(r[0]), "reason": r[4]} for r in results if r[1] is None][:5],
        "failing_points": [_pt_json(r[0]) for r in fails][:10],
    }

    # ---- exact counterexample (quantities with exact forms)
    exact_zero = []
    if fails and exact_only:
        ordered = sorted(fails, key=lambda r: -(r[1] if r[1] is not None else mpmath.mpf(0)))
        for r in ordered[:3]:
            try:
                nz, val, how = run_limited(_exact_at, (F, r[0]), timeout)
            except (SymbolicTimeout, ArithmeticError) as exc:
                notes.append(f"exact evaluation at a failing point: {exc}")
                continue
            if nz:
                symbolic["status"] = "disproved"
                symbolic["detail"] = f"the proof attempt failed ({sym_detail}); exact counterexample below"
                symbolic["counterexample"] = {"point": _pt_json(r[0]), "difference": val, "how": how}
                break
            if nz is False:
                exact_zero.append(r[0])
                notes.append(f"at {_point_str(r[0])} the exact difference is 0 although the numeric gap is "
                             f"{mpmath.nstr(r[1], 3)}: a precision problem in the candidate's evaluation")
    if symbolic["status"] == "undecided" and exact_only:
        symbolic["detail"] = f"no proof ({sym_detail}) and no exact counterexample"

    # ---- region
    reg = None
    if fails and region:
        fast = None
        if attention and set(involved) <= checkfast.FLOAT_QUANTITIES | {"m", "E_RR0"}:
            def gap_with(pt, fvals):
                truths = {n: mpmath.mpf(float(fvals[n])) for n in involved if n in checkfast.FLOAT_QUANTITIES}
                truths.update(_truth_values([n for n in involved if n not in truths], pt, digits + 5))
                return ev.gap(pt, truths, digits + 20)[0]

            def fast(status_at, pt_fail, p, v_pass):
                return checkfast.bracket(gap_with, status_at, involved, pt_fail, p, v_pass, float(thr))

        reg = _find_region(params, fails, passes, evaluate, thr, wh, attention, fast)

    # ---- Monte-Carlo
    mc_out = None
    if mc and fails:
        r = worst if worst is not None and worst[1] > thr else None
        if r is None:
            mc_out = {"summary": "skipped: the failing points have no candidate value"}
        else:
            cand_val = r[2] if kind == "value" else None
            if kind != "value":
                mc_out = {"summary": "skipped: Monte-Carlo compares values (kind=value) only"}
            else:
                mc_out = _mc_at(quantity, r[0], cand_val, r[5][quantity], seed=seed)

    # ---- status
    if symbolic["status"] == "proved" and fails:
        status = "undecided"
        evidence = "the symbolic proof and the numeric check disagree; please report this"
    elif symbolic["status"] == "proved":
        status, evidence = "proved", "symbolic proof (" + symbolic["detail"] + ")"
        if results:
            evidence += f"; also zero to working precision at {len(results)} points, {digits} digits"
    elif symbolic["status"] == "disproved":
        status, evidence = "disproved", "exact counterexample at " + _point_str(symbolic["counterexample"]["point"])
    elif fails and worst is not None and worst[1] > thr and worst[0] in exact_zero:
        status = "undecided"
        evidence = (f"numeric gaps, but the exact difference is 0 at the worst point {_point_str(worst[0])}: "
                    "the candidate loses precision in evaluation")
    elif fails:
        r = worst if worst is not None and worst[1] > thr else fails[0]
        if r[1] is None:
            status, evidence = "disproved", f"the candidate is undefined at {_point_str(r[0])} ({r[4]})"
        else:
            status = "disproved"
            evidence = (f"numeric counterexample at {_point_str(r[0])}: relative gap {mpmath.nstr(r[1], 3)}, "
                        f"with the package's value certified to {digits + 5} digits")
    elif results:
        status = "verified"
        evidence = (f"zero to working precision at all {len(results)} points ({digits} digits): strong evidence, "
                    "not a proof")
    else:
        status, evidence = "undecided", "no point could be evaluated"
    if skipped:
        notes.append(f"{len(skipped)} point(s) skipped: the package could not deliver there")
    return CheckReport(quantity=quantity, kind=kind, candidate=_claim_str(lhs, rhs), status=status, evidence=evidence,
                       symbolic=symbolic, numeric=numeric, region=reg, mc=mc_out, notes=notes,
                       seconds=time.monotonic() - t0)


def _find_region(params, fails, passes, evaluate, thr, wh, attention, fast=None):
    """Boundaries of the failing region (see the module docstring).

    ``fast(status_at, pt_fail, p, v_pass)``, when given, brackets the boundary on the float64
    path first (:func:`symrmt.check.bracket.bracket`, both ends confirmed by mpmath, then
    bisected in mpmath inside the bracket); where it returns ``None`` the mpmath bisection
    runs as before."""
    steps = 10 if attention else 16

    def status_at(pt):
        try:
            g = evaluate(pt)[0]
        except (ArithmeticError, ValueError):
            return None
        return g is not None and g <= thr

    fail_pts = [r[0] for r in fails]
    pass_pts = [r[0] for r in passes]
    if not pass_pts:
        lims = _edge_limits(params, fails, evaluate, thr, attention, wh)
        summary = "the candidate fails at every point drawn"
        if lims:
            summary += "; " + "; ".join(x["summary"] for x in lims)
        return {"summary": summary, "boundaries": [], "limits": lims}
    worst = max(fails, key=lambda r: r[1] if r[1] is not None else mpmath.mpf(0))[0]
    boundaries = []
    for p, _side in _separating([q for q in params if q not in wh or wh[q][4] is None], fail_pts, pass_pts):
        cands = sorted({pt[p] for pt in pass_pts}, key=lambda v: abs(float(v - worst[p])))[:3]
        for v in cands:
            if status_at({**worst, p: v}):
                ab = fast(status_at, worst, p, v) if fast is not None else None
                if ab is not None:  # a bracket 1/128 of the way, confirmed by mpmath: polish it by bisection
                    a, b = _bisect(status_at, {**worst, p: ab[0]}, p, ab[1], max(1, steps - 7))
                else:
                    a, b = _bisect(status_at, worst, p, v, steps)
                lo_, hi_ = sorted((a, b))
                bnd = (float(a) + float(b)) / 2
                sig = max(2, int(-math.log10(max(abs(float(a - b)) / max(abs(bnd), 1e-300), 1e-15))))
                shown = f"{bnd:#.{sig}g}"
                fail_side = ">" if a > b else "<"
                others = ", ".join(f"{k} = {worst[k]}" for k in params if k != p)
                boundaries.append({
                    "parameter": p, "fails": f"{p} {fail_side} {shown}", "boundary": shown,
                    "bracket": [str(lo_), str(hi_)],
                    "located_by": ("float64 bracket, ends confirmed and bisected by mpmath" if ab is not None
                                   else "mpmath bisection"),
                    "summary": f"fails for {p} {fail_side} {shown} ({'float64 bracket confirmed by mpmath' if ab else 'bisection'} along {p}: passes at "
                               f"{p} = {float(b):.{sig + 2}g}, fails at {p} = {float(a):.{sig + 2}g}; other parameters at the "
                               f"worst failing point: {others})",
                })
                break
    if boundaries:
        summary = "the candidate holds only in part of the domain; it fails for " + " and for ".join(
            b["fails"] for b in boundaries)
    else:
        summary = ("failing and passing points are not separated by a single parameter; failing points: "
                   + "; ".join(_point_str(p) for p in fail_pts[:3]))
    return {"summary": summary, "boundaries": boundaries, "limits": []}


def _edge_limits(params, fails, evaluate, thr, attention, wh):
    """The gap as ``gamma -> 0+`` and as ``snr -> 0`` (from the worst failing point): a gap that shrinks
    like a power means the candidate holds only in that limit."""
    pt = max(fails, key=lambda r: r[1] if r[1] is not None else mpmath.mpf(0))[0]
    found = []
    for p in ("gamma", "snr"):
        if p not in params or (p in wh and wh[p][4] is not None):
            continue
        ks = ((2, 3, 4) if attention else (4, 6, 8, 10)) if p == "gamma" else (2, 4, 6)
        gaps = []
        for k in ks:
            try:
                g = evaluate({**pt, p: Fraction(1, 10**k)})[0]
            except (ArithmeticError, ValueError):
                break
            if g is None:
                break
            gaps.append((k, g))
        if len(gaps) < 2 or not all(b[1] < a[1] for a, b in zip(gaps, gaps[1:])) or gaps[-1][1] == 0:
            continue
        (k1, g1), (k2, g2) = gaps[-2], gaps[-1]
        order = float(mpmath.log10(g1 / g2)) / (k2 - k1)
        if order < 0.3:
            continue
        at_zero = ""
        if p == "snr":
            try:
                g0 = evaluate({**pt, p: Fraction(0)})[0]
                at_zero = "; it holds at snr = 0" if g0 is not None and g0 <= thr else ""
            except (ArithmeticError, ValueError):
                pass
        others = ", ".join(f"{k} = {pt[k]}" for k in params if k != p)
        table = ", ".join(f"{p} = 1e-{k}: {mpmath.nstr(g, 3)}" for k, g in gaps)
        where_lim = "the ridgeless limit gamma -> 0+" if p == "gamma" else "the limit snr -> 0"
        found.append({"parameter": p, "order": round(order, 2), "gaps": {f"1e-{k}": mpmath.nstr(g, 3) for k, g in gaps},
                      "summary": f"the gap vanishes as {p} -> 0 (like {p}^{order:.2f}; {table}; at {others}){at_zero}:"
                                 f" the candidate holds only in {where_lim}"})
    return found
