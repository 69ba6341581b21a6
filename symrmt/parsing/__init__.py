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
:class:`~symrmt.errors.ParameterError` that names the offending token and the limit hit.

Examples
--------
>>> import sympy as sp
>>> t = sp.Symbol("t")
>>> parse_expression("t^2 - 0.5", {"t": t}, {}, what="f")
t**2 - 1/2
>>> parse_expression("t**10**10", {"t": t}, {}, what="f")
Traceback (most recent call last):
...
symrmt.errors.ParseLimitError: f: exponent tower: the exponent 10000000000 is above the limit 1000 ...
>>> parse_number("sqrt(2)/2", what="muwk")
sqrt(2)/2
>>> parse_number("1e999999999", what="c")
Traceback (most recent call last):
...
symrmt.errors.ParseLimitError: c: the literal '1e999999999' has decimal exponent 999999999, above the limit 1000 ...
"""

from __future__ import annotations

from symrmt.parsing.expressions import check_power, did_you_mean, parse_expression, suggest
from symrmt.parsing.literals import literal_fraction
from symrmt.parsing.numbers import number_to_fraction, parse_number, plain_fraction, split_equation
from symrmt.parsing.latex import parse_latex_expression
from symrmt.parsing.limits import (
    IRRATIONAL_DIGITS,
    LIMITS,
    ParseLimitError,
    TimeLimitExceeded,
    check_count,
    check_digits,
    run_limited,
)

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
    "check_power",
    "plain_fraction",
    "IRRATIONAL_DIGITS",
    "suggest",
    "did_you_mean",
]
