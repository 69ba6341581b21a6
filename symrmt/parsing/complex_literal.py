"""Complex literals ``a+bj``, ``a-bj``, ``bj`` for parameter values (``--at 'z=0.5+0.01j'``).

The text is split at its last top-level sign into a real part and an imaginary part ending in ``j``
(a sign after ``e``/``E`` belongs to an exponent); each part then goes through the package's one
restricted number parser (:func:`symrmt.parsing.parse_number`), so ``1/2+sqrt(2)/100j`` reads like
``1/2`` and ``sqrt(2)/100``.  A text without a trailing ``j`` is not complex (``None``).
"""

from __future__ import annotations

from fractions import Fraction

from symrmt.parsing.limits import LIMITS
from symrmt.parsing.numbers import number_to_fraction, parse_number

__all__ = ["parse_complex"]


def parse_complex(text: str, what: str):
    """``(re, im)`` as exact Fractions for a text ending in ``j``, else ``None``.

    >>> parse_complex("0.5+0.01j", "z")
    (Fraction(1, 2), Fraction(1, 100))
    >>> parse_complex("-2j", "z")
    (Fraction(0, 1), Fraction(-2, 1))
    >>> parse_complex("1/5", "z") is None
    True
    """
    if not isinstance(text, str):
        return None
    t = text.strip().replace(" ", "")
    if not t.endswith("j") or len(t) > LIMITS["chars"]:
        return None
    body = t[:-1]
    depth, cut = 0, None
    for i, ch in enumerate(body):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch in "+-" and depth == 0 and i > 0 and body[i - 1] not in "eE*/^(":
            cut = i
    re_text, im_text = (body[:cut], body[cut:]) if cut is not None else ("0", body)
    if im_text in ("", "+", "-"):
        im_text += "1"
    re_v = number_to_fraction(parse_number(re_text, what=what), what=what)
    im_v = number_to_fraction(parse_number(im_text, what=what), what=what)
    return Fraction(re_v), Fraction(im_v)
