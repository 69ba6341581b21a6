"""Decimal literals of user text: :func:`literal_fraction` (one literal, exactly, within the caps of
:data:`~symrmt.parsing.limits.LIMITS`) and :func:`shorten` (user text cut for an error message).
"""

from __future__ import annotations

import re
from fractions import Fraction

from symrmt.errors import ParameterError
from symrmt.parsing.limits import LIMITS, ParseLimitError

__all__ = ["literal_fraction", "shorten"]

# ---------------------------------------------------------------------------
# literals
# ---------------------------------------------------------------------------
_LITERAL = re.compile(r"(?P<int>\d*)(?:\.(?P<frac>\d*))?(?:[eE](?P<exp>[+-]?\d+))?")


def shorten(text: str, n: int = 60) -> str:
    """``text`` cut to ``n`` characters (``...`` at the end) for an error message.

    >>> shorten("x" * 70, 10), shorten("short", 10)
    ('xxxxxxx...', 'short')
    """
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
        raise ParameterError(f"{what}: cannot read the number {shorten(token)!r} (write a decimal such as 0.25, "
                             "1e-3, or an expression such as 3/4 or sqrt(2))")
    ip, fp, ex = m.group("int") or "", m.group("frac") or "", m.group("exp")
    digits = len((ip + fp).lstrip("0"))
    if digits > LIMITS["literal_digits"]:
        raise ParseLimitError(f"{what}: the literal {shorten(token)!r} has {digits} digits, above the limit "
                              f"{LIMITS['literal_digits']} digits per literal")
    if ex is not None and len(ex.lstrip("+-").lstrip("0")) > 6:
        raise ParseLimitError(f"{what}: the literal {shorten(token)!r} has decimal exponent {ex.lstrip('+')}, "
                              f"above the limit {LIMITS['literal_exponent']} (|exponent| of a literal)")
    e = int(ex) if ex is not None else 0
    if abs(e) > LIMITS["literal_exponent"]:
        raise ParseLimitError(f"{what}: the literal {shorten(token)!r} has decimal exponent {e}, above the limit "
                              f"{LIMITS['literal_exponent']} (|exponent| of a literal)")
    value = Fraction(int(ip + fp or "0"), 10 ** len(fp))
    return value * (Fraction(10) ** e)
