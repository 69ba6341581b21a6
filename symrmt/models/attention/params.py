"""Validated parameters shared by the theory and the simulation: the scalar checks.

Parameters are stored as exact rationals (:class:`fractions.Fraction`), so that SymPy, mpmath and the
simulation each convert them at their own boundary; :class:`~symrmt.errors.ParameterError` is importable from
here.  This module imports neither SymPy nor NumPy.
"""

from __future__ import annotations

from fractions import Fraction
from numbers import Integral

from symrmt.errors import ParameterError
from symrmt.parsing import check_count
from symrmt.parsing.choices import DIAGONALS, check_diagonal  # noqa: F401  (re-exported)
from symrmt.parsing.numbers import to_fraction  # noqa: F401  (re-exported: the models' parameter reader)

NOISES = ("gaussian", "rademacher")


def check_c(c) -> Fraction:
    """Validate the aspect ratio ``c = p/n > 0``: returned as an exact Fraction.

    Takes an int, a Fraction, a float or a string such as ``"1/2"``; raises
    :class:`~symrmt.errors.ParameterError` when it is not a number or not positive.

    >>> check_c("1/2")
    Fraction(1, 2)
    >>> check_c(0)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: c = p/n must be positive, got 0
    """
    cf = to_fraction(c, "c")
    if cf <= 0:
        shown = c if isinstance(c, str) else str(c) if isinstance(c, (int, Fraction)) else repr(c)
        raise ParameterError(f"c = p/n must be positive, got {shown}")
    return cf


def check_gammas(gammas) -> tuple[Fraction, ...]:
    """Validate a non-empty list of ridge parameters, each ``gamma > 0``.

    Takes one value or an iterable of them (ints, Fractions, floats, strings); returns them as a tuple
    of exact Fractions; raises :class:`~symrmt.errors.ParameterError` for an empty or too long list or a
    value that is not positive.

    >>> check_gammas(["1/10", 1])
    (Fraction(1, 10), Fraction(1, 1))
    >>> check_gammas(0.5)
    (Fraction(1, 2),)
    >>> check_gammas([-1])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: gamma must be positive (the probe needs gamma > 0), got -1.0
    """
    if isinstance(gammas, (str, int, float, Fraction)):
        gammas = [gammas]

    gammas = list(gammas)
    check_count(len(gammas), "gammas", "the number of gamma values")
    out = tuple(to_fraction(g, "gamma") for g in gammas)
    if not out:
        raise ParameterError("gamma: give at least one value")
    for g in out:
        if g <= 0:
            raise ParameterError(f"gamma must be positive (the probe needs gamma > 0), got {float(g)!r}")
    return out


def check_noise(noise: str) -> str:
    """``noise`` itself when it is one of :data:`NOISES`; raises ``ParameterError`` otherwise.

    >>> check_noise("rademacher")
    'rademacher'
    >>> check_noise("uniform")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: noise must be one of ('gaussian', 'rademacher'), got 'uniform'
    """
    if noise not in NOISES:
        raise ParameterError(f"noise must be one of {NOISES}, got {noise!r}")
    return noise


def check_int(value, name: str, minimum: int, why: str = "") -> int:
    """``value`` as an ``int >= minimum`` (a bool is refused); the error names ``name`` (and ``why``).

    Raises :class:`~symrmt.errors.ParameterError` for a non-integer (a bool included) or a value
    below ``minimum``.

    >>> check_int(3, "n", 1)
    3
    >>> check_int(True, "n", 1)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: n must be an integer, got True
    >>> check_int(0, "n", 1, " (a size)")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: n must be >= 1 (a size), got 0
    """
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ParameterError(f"{name} must be >= {minimum}{why}, got {value}")
    return value
