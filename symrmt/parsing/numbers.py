"""The number reader: :func:`parse_number` (a parameter typed as text: a decimal, a fraction or an
expression such as ``sqrt(2)/2``), :func:`plain_fraction`, :func:`number_to_fraction`, and
:func:`split_equation` (a claim's two sides).  Expressions go through the one walker,
:func:`symrmt.parsing.expressions.parse_expression`.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from numbers import Rational, Real

from symrmt.errors import ParameterError
from symrmt.parsing.expressions import parse_expression
from symrmt.parsing.limits import IRRATIONAL_DIGITS, LIMITS, ParseLimitError
from symrmt.parsing.literals import literal_fraction, shorten

__all__ = ["parse_number", "plain_fraction", "number_to_fraction", "split_equation", "to_fraction"]


# ---------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------
def _number_vocabulary():
    # import-time cost: `import symrmt`, the CLI's start and the Monte-Carlo trials load no SymPy or mpmath
    import sympy as sp

    names = {"pi": sp.pi, "E": sp.E}
    functions = {"sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log, "sin": sp.sin, "cos": sp.cos, "tan": sp.tan,
                 "atan": sp.atan, "asin": sp.asin, "acos": sp.acos, "tanh": sp.tanh, "cbrt": sp.cbrt,
                 "Abs": sp.Abs, "abs": sp.Abs, "erf": sp.erf}
    return names, functions


_PLAIN = re.compile(r"\s*([+-]?)\s*([0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?)\s*(?:/\s*([0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?)\s*)?")


def plain_fraction(text: str, what: str):
    """The exact value (a Fraction) of a plain decimal or ``p/q`` of decimals, with an optional sign, read without
    SymPy; ``None`` when ``text`` is not one (``sqrt(2)``, ``E-2``: Euler's number minus 2).  Raises
    :class:`ParameterError` for a zero denominator and :class:`ParseLimitError` beyond the size caps.

    >>> plain_fraction("-3/4", "c"), plain_fraction("1e-3", "c"), plain_fraction("sqrt(2)", "c")
    (Fraction(-3, 4), Fraction(1, 1000), None)
    >>> plain_fraction("1/0", "c")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: c: division by zero in '1/0'
    """
    if len(text) > LIMITS["chars"]:
        raise ParseLimitError(f"{what}: the text has {len(text)} characters, above the limit {LIMITS['chars']}")
    m = _PLAIN.fullmatch(text)

    def has_mantissa(lit):  # a digit before any exponent: 'E-2' is Euler's number minus 2, not a literal
        return any(ch.isdigit() for ch in re.split("[eE]", lit, maxsplit=1)[0])

    if not m or not m.group(2) or not has_mantissa(m.group(2)):
        return None
    if m.group(3) is not None and not has_mantissa(m.group(3)):
        return None
    value = literal_fraction(m.group(2), what)
    if m.group(3) is not None:
        den = literal_fraction(m.group(3), what)
        if den == 0:
            raise ParameterError(f"{what}: division by zero in {shorten(text.strip())!r}")
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
    symrmt.errors.ParameterError: gamma must be positive, got -1
    """
    # import-time cost: `import symrmt`, the CLI's start and the Monte-Carlo trials load no SymPy or mpmath
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
                raise ParameterError(f"{what}: cannot read {shorten(text.strip())!r} as a number ({detail}); "
                                     "write a decimal such as 0.25, a fraction such as 3/4, or an exact "
                                     "expression such as sqrt(2)/2") from None
    else:
        value = sp.sympify(text)
    if not isinstance(value, sp.Expr) or not value.is_number:
        raise ParameterError(f"{what}: {shorten(str(text))!r} is not a number")
    if value.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        raise ParameterError(f"{what}: {shorten(str(text))!r} is not finite")
    if not isinstance(value, sp.Rational):
        try:
            approx = sp.N(value, 30)
        except Exception as exc:  # noqa: BLE001
            raise ParameterError(f"{what}: cannot evaluate {shorten(str(text))!r} ({exc})") from None
        if approx.has(sp.I) and sp.im(approx) != 0:
            raise ParameterError(f"{what}: {shorten(str(text))!r} is not real")
        if not approx.is_real or not approx.is_finite:
            raise ParameterError(f"{what}: {shorten(str(text))!r} is not a finite real number")
        sign = int(bool(approx > 0)) - int(bool(approx < 0))
    else:
        sign = int(value.p > 0) - int(value.p < 0)
    if positive and sign <= 0:
        raise ParameterError(f"{what} must be positive, got {shorten(str(text))}")
    if nonnegative and sign < 0:
        raise ParameterError(f"{what} must be >= 0, got {shorten(str(text))}")
    return value


def number_to_fraction(value, what: str = "value", digits: int = IRRATIONAL_DIGITS) -> Fraction:
    """An exact rational for a SymPy number: exact for a Rational, else rounded to ``digits``
    significant digits (by default more than any precision symrmt computes at).

    >>> import sympy as sp
    >>> float(number_to_fraction(sp.sqrt(2), digits=20))
    1.4142135623730951
    """
    # import-time cost: `import symrmt`, the CLI's start and the Monte-Carlo trials load no SymPy or mpmath
    import sympy as sp

    if isinstance(value, Fraction):
        return value
    if isinstance(value, sp.Rational):
        return Fraction(int(value.p), int(value.q))
    approx = sp.N(value, digits)
    if not isinstance(approx, sp.Float) or not approx.is_finite:
        raise ParameterError(f"{what}: {shorten(str(value))} is not a finite real number")
    return Fraction(str(approx))


# ---------------------------------------------------------------------------
# equations
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
        raise ParameterError(f"{what}: {shorten(text)!r} has more than one '='")
    return parts


def to_fraction(value, name: str) -> Fraction:
    """Convert an int, float, Fraction, SymPy number or numeric text to an exact Fraction.

    Floats are converted through their shortest ``repr`` (``0.1`` becomes 1/10),
    so that a value typed by a user is taken as the decimal they typed.  Text goes
    through the package's restricted parser (:func:`symrmt.parsing.parse_number`):
    decimals and fractions are exact, an irrational such as ``sqrt(2)`` is rounded
    to :data:`symrmt.parsing.IRRATIONAL_DIGITS` significant digits, and the size
    limits of :data:`symrmt.parsing.LIMITS` apply.

    >>> to_fraction("3/4", "c"), to_fraction("1e-3", "gamma")
    (Fraction(3, 4), Fraction(1, 1000))
    >>> float(to_fraction("sqrt(2)", "muwk"))
    1.4142135623730951
    """
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a number, got a bool")
    try:
        if isinstance(value, Fraction):
            return value
        if isinstance(value, Rational):
            _check_size(int(value.numerator).bit_length() + int(value.denominator).bit_length(), name)
            return Fraction(int(value.numerator), int(value.denominator))
        if hasattr(value, "_mpf_"):  # an mpmath mpf: its exact binary value
            man, exp = value.man_exp
            if man is None:
                raise ParameterError(f"{name} must be finite, got {value!r}")
            _check_size(int(man).bit_length() + abs(int(exp)), name)
            return Fraction(int(man)) * Fraction(2) ** int(exp)
        if isinstance(value, Real):
            fv = float(value)
            if not math.isfinite(fv):
                raise ParameterError(f"{name} must be finite, got {value!r}")
            return Fraction(*Decimal(repr(fv)).as_integer_ratio())  # the decimal repr, exactly (Decimal parses it in C)
        if isinstance(value, str):
            # the package's one parser: a plain decimal or p/q exactly, else an exact expression
            # such as sqrt(2) (rounded to more digits than any precision symrmt computes at)
            q = plain_fraction(value, name)
            return q if q is not None else number_to_fraction(parse_number(value, what=name), name)
        if type(value).__module__.startswith("sympy"):
            return number_to_fraction(parse_number(value, what=name), name)
        # mpmath mpf, sympy numbers and the like: go through their string form
        return to_fraction(str(value), name)
    except ParameterError:
        raise
    except (ValueError, ZeroDivisionError, TypeError) as exc:
        raise ParameterError(
            f"{name}: cannot read {value!r} as a number (use a decimal such as 0.25 or a fraction such as 1/4)"
        ) from exc


def _check_size(bits: int, name: str) -> None:
    """Refuse a number from Python bigger than any typed literal can spell (``LIMITS["literal_digits"]``
    plus ``LIMITS["literal_exponent"]`` decimal digits in numerator and denominator together)."""
    cap = LIMITS["literal_digits"] + LIMITS["literal_exponent"]
    if bits * 0.30103 > cap:
        raise ParseLimitError(f"{name}: a number of about {bits * 0.30103:.0f} digits, above the limit {cap} "
                              "(LIMITS['literal_digits'] + LIMITS['literal_exponent'])")
