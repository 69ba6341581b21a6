"""The text of a nonlinearity ``f``: its whitelist of names and :func:`parse_f`.

The text is read by the package's one restricted parser
(:func:`symrmt.parsing.parse_expression`); this module gives it the SymPy names
``f`` may use and checks the result is a finite real expression in ``t``.

Examples
--------
>>> parse_f("relu(t) - 1/2")
Max(0, t) - 1/2
"""

from __future__ import annotations

import sympy as sp

from symrmt.errors import ParameterError
from symrmt.parsing import parse_expression
from symrmt.hermite.gaussian import T
from symrmt.hermite.presets import PRESETS

__all__ = ["parse_f", "check_f_expression"]


def _sigmoid(x):
    return 1 / (1 + sp.exp(-x))


def _softplus(x):
    return sp.log(1 + sp.exp(x))


def _relu(x):
    return sp.Max(x, 0)


_FUNCTIONS = {
    "sin": sp.sin,
    "cos": sp.cos,
    "tan": sp.tan,
    "tanh": sp.tanh,
    "sinh": sp.sinh,
    "cosh": sp.cosh,
    "atan": sp.atan,
    "asinh": sp.asinh,
    "exp": sp.exp,
    "log": sp.log,
    "sqrt": sp.sqrt,
    "erf": sp.erf,
    "erfc": sp.erfc,
    "Abs": sp.Abs,
    "abs": sp.Abs,
    "sign": sp.sign,
    "Max": sp.Max,
    "Min": sp.Min,
    "max": sp.Max,
    "min": sp.Min,
    "Heaviside": sp.Heaviside,
    "Piecewise": sp.Piecewise,
    "sigmoid": _sigmoid,
    "softplus": _softplus,
    "relu": _relu,
}
_CONSTANTS = {"pi": sp.pi, "E": sp.E, "True": sp.true}


def _local_namespace():
    ns = {"t": T}
    ns.update(_FUNCTIONS)
    ns.update(_CONSTANTS)
    return ns


def _rationalize_floats(expr: sp.Expr) -> sp.Expr:
    """Replace every Float by the rational of its decimal representation."""
    floats = expr.atoms(sp.Float)
    if not floats:
        return expr
    return expr.xreplace({fl: sp.Rational(str(fl)) for fl in floats})


def check_f_expression(expr, text) -> sp.Expr:
    """``expr`` (parsed from ``text``) as a real-valued SymPy expression in ``t`` with its floats made
    rational; raises ``ParameterError`` (naming ``text``) for anything else.

    >>> check_f_expression(sp.Symbol("t") > 0, "t > 0")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: f: 't > 0' is not a real-valued expression in t ...
    """
    if (
        isinstance(expr, bool)
        or not isinstance(expr, sp.Expr)
        or isinstance(expr, (sp.core.relational.Relational, sp.logic.boolalg.BooleanFunction))
    ):
        raise ParameterError(f"f: {text!r} is not a real-valued expression in t (got {type(expr).__name__})")
    expr = _rationalize_floats(sp.sympify(expr))
    # accept any Symbol named t (e.g. sympy.Symbol('t') without assumptions)
    subs = {s: T for s in expr.free_symbols if s.name == "t" and s != T}
    if subs:
        expr = expr.xreplace(subs)
    others = expr.free_symbols - {T}
    if others:
        names = ", ".join(sorted(str(s) for s in others))
        raise ParameterError(
            f"f: {text!r} has free symbols other than t ({names}); f must be a function of t only, "
            "give numeric values for every other parameter"
        )
    if expr.has(sp.I) or expr.has(sp.zoo) or expr.has(sp.nan) or expr.has(sp.oo) or expr.has(-sp.oo):
        raise ParameterError(f"f: {text!r} contains I, oo or nan; f must be a finite real function of t")
    return expr


def parse_f(text: str) -> sp.Expr:
    """Parse the text of ``f`` into a SymPy expression in :data:`T`.

    Only ``t``, numbers, ``pi``, ``E`` (Euler's number), the operators
    ``+ - * / ** ^`` (``^`` is a power) and the functions ``sin cos tan tanh
    sinh cosh atan asinh exp log sqrt erf erfc Abs abs sign Max max Min min
    Heaviside Piecewise sigmoid softplus relu`` are accepted, read by the package's one
    restricted parser (:func:`symrmt.parsing.parse_expression`, whose size limits
    apply: see :data:`symrmt.parsing.LIMITS`).  Names such as
    ``gamma``, ``I``, ``S``, ``N``, ``O``, ``Q`` are rejected rather than
    silently read as SymPy objects.  Decimal literals become exact rationals
    (``0.3`` is ``3/10``).

    Parameters
    ----------
    text : str
        The expression, e.g. ``"tanh(t)"`` or ``"Max(t, 0.3) - 0.5"``.

    Returns
    -------
    sympy.Expr
        The expression in the real symbol :data:`T`.

    Raises
    ------
    ParameterError
        The text is not a whitelisted expression in ``t``; the message says why.

    Examples
    --------
    >>> parse_f("Max(t, 0.3) - 1/2")
    Max(3/10, t) - 1/2
    >>> parse_f("t^2 - 1")
    t**2 - 1
    >>> parse_f("gamma*t")
    Traceback (most recent call last):
    ...
    symrmt.errors.UnknownNameError: f: unknown name 'gamma' ...
    >>> parse_f("__import__('os')")
    Traceback (most recent call last):
    ...
    symrmt.errors.UnknownNameError: f: unknown name '__import__' called as a function ...
    >>> parse_f("t**10**10")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParseLimitError: f: exponent tower: the exponent 10000000000 is above the limit 1000 ...
    """
    if not isinstance(text, str):
        raise ParameterError(f"f: expected a string, got {type(text).__name__}")
    text = text.strip()
    if not text:
        raise ParameterError("f: empty expression; give f in t, e.g. 'tanh(t)'")

    expr = parse_expression(text, _local_namespace(), _FUNCTIONS, what="f", relations=True,
                            alternatives={"presets": PRESETS})
    return check_f_expression(expr, text)
