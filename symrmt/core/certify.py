"""The one two-precision certification with escalation.

A value is certified to ``digits`` significant digits when two solves, at ``dps`` and at more
working digits, agree to ``digits + 1`` (:func:`agree`).  :func:`certify` runs an
``attempt(dps)`` at ``dps = digits + guard``; a disagreement or a
:class:`~symrmt.errors.ConvergenceError` doubles the guard (escalation), up to
``escalations`` tries; then the caller's ``fail(failures, dps)`` builds the error (a
:class:`~symrmt.errors.PrecisionError` naming what was tried).  The result is a
:class:`Certified`: the value, the digits, the working digits, and what the attempt returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mpmath


from symrmt.errors import ConvergenceError, PrecisionError
from symrmt.errors import Disagree  # noqa: F401  (defined in symrmt.errors, importable here)

__all__ = ["GUARD", "ESCALATIONS", "Certified", "Disagree", "agree", "certify"]

#: guard digits a certified solve works with above the digits asked for, and how many times it
#: escalates the precision before it gives up (the attention solver and the trace engine share them)
GUARD = 10
ESCALATIONS = 3


@dataclass(frozen=True)
class Certified:
    """A certified value: ``value`` to ``digits`` significant digits, from solves up to ``working_digits``;
    ``data`` is what the attempt returned beside the value (not compared).

    >>> Certified(value=0.5, digits=10, working_digits=30).digits
    10
    """

    value: Any
    digits: int
    working_digits: int
    data: Any = field(default=None, compare=False)


def agree(x, y, digits: int, absolute=0, floor=0) -> bool:
    """Whether ``x`` and ``y`` agree to ``digits + 1`` significant digits, relative to the larger modulus
    (``absolute``: relative to ``absolute`` plus the larger, e.g. 1 for a value that may be 0, such as an edge or
    a mass; ``floor``: relative to at least ``floor``, e.g. 1 for ``max(|x|, |y|, 1)``).  A ``nan`` never agrees.

    >>> agree(mpmath.mpf("1.0000001"), 1, 5), agree(mpmath.mpf("1.0000001"), 1, 7)
    (True, False)
    >>> agree(1e-12, 0, 10), agree(1e-12, 0, 10, absolute=1), agree(mpmath.nan, 1, 2)
    (False, True, False)
    """
    scale = max(max(abs(x), abs(y)) + absolute, floor)
    if scale == 0:
        return True
    return abs(x - y) <= scale * mpmath.mpf(10) ** (-digits - 1)


def certify(attempt, digits: int, guard: int, escalations: int, fail=None, extra: int = 10,
            catch=(ConvergenceError,)):
    """Run ``attempt(dps)`` from ``dps = digits + guard``, doubling the guard after each failure, until it returns;
    the result is a :class:`Certified`.

    ``attempt(dps) -> (value, data)`` returns on agreement and raises :class:`Disagree` (or an exception in
    ``catch``, e.g. a stalled Newton) otherwise; the messages are collected in order.  ``escalations``: the most
    tries; ``extra``: the second solve's extra digits (reported as ``working_digits = dps + extra``).

    Raises ``fail(failures, dps)`` after the last try, by default a :class:`PrecisionError` naming each reason
    once.

    >>> def attempt(dps):  # agrees from 25 working digits on
    ...     if dps < 25:
    ...         raise Disagree(f"{dps} digits disagree")
    ...     return mpmath.mpf(1) / 3, None
    >>> c = certify(attempt, 10, 10, 3)
    >>> c.working_digits, c.value == mpmath.mpf(1) / 3
    (40, True)
    >>> certify(attempt, 10, 2, 2)
    Traceback (most recent call last):
    ...
    symrmt.errors.PrecisionError: could not certify 10 digits with up to 24 working digits: 12 digits disagree; 14 digits disagree
    """
    failures = []
    dps = digits + guard
    for _ in range(escalations):
        dps = digits + guard
        try:
            value, data = attempt(dps)
            return Certified(value=value, digits=digits, working_digits=dps + extra, data=data)
        except Disagree as exc:
            failures.append(str(exc))
        except catch as exc:
            failures.append(str(exc))
        guard *= 2
    if fail is not None:
        raise fail(failures, dps)
    # each reason once (the same failure at every precision is one reason, not three)
    raise PrecisionError(f"could not certify {digits} digits with up to {dps + extra} working digits: "
                         f"{'; '.join(dict.fromkeys(failures))}")
