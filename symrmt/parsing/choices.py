"""Parameters that take one of a few names: the kernel's diagonal convention (:func:`check_diagonal`).

>>> check_diagonal("keep")
'keep'
"""

from __future__ import annotations

from symrmt.errors import ParameterError

__all__ = ["DIAGONALS", "check_diagonal"]

#: the kernel's diagonal conventions: ``K_ii = 0``, or ``K_ii = f(x_i^T W x_i/sqrt(p))/sqrt(p)`` kept
DIAGONALS = ("zero", "keep")


def check_diagonal(diagonal: str) -> str:
    """``diagonal`` if it is one of :data:`DIAGONALS`, else :class:`~symrmt.errors.ParameterError`.

    >>> check_diagonal("zero")
    'zero'
    """
    if diagonal not in DIAGONALS:
        raise ParameterError(f"diagonal must be one of {DIAGONALS}, got {diagonal!r}")
    return diagonal
