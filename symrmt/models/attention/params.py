"""Validated parameters shared by the theory and the simulation.

This module imports neither SymPy nor NumPy: parameters are stored as exact
rationals (:class:`fractions.Fraction`), so that the symbolic layer can turn
them into ``sympy.Rational``, the numeric layer into ``mpmath.mpf`` at any
precision, and the simulation into ``float``, each at its own boundary.

The geometry of the model is the Gram matrix of ``(mu, w_K, w_Q)``::

    [[ snr,  muwk, muwq],
     [ muwk, wk2,  wkwq],
     [ muwq, wkwq, wq2 ]]

with ``snr = ||mu||^2``.  All entries default to 0, i.e. ``mu = 0`` and
``W = I + w_K w_Q^T = I``.

The geometry classes (:class:`~symrmt.models.attention.geometry.Geometry`,
:class:`~symrmt.models.attention.geometry.LowRankGeometry`, the exact PSD checks) live in
:mod:`symrmt.models.attention.geometry`.  This module holds the scalar checks;
:class:`~symrmt.errors.ParameterError` is defined in :mod:`symrmt.errors` and importable from here.
"""

from __future__ import annotations

from fractions import Fraction
from numbers import Integral, Rational, Real

from symrmt.errors import ParameterError

DIAGONALS = ("zero", "keep")
NOISES = ("gaussian", "rademacher")


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
            if fv != fv or fv in (float("inf"), float("-inf")):
                raise ParameterError(f"{name} must be finite, got {value!r}")
            return Fraction(repr(fv))
        if isinstance(value, str):
            # the package's one parser: a plain decimal or p/q exactly, else an exact expression
            # such as sqrt(2) (rounded to more digits than any precision symrmt computes at)
            from symrmt.parsing import number_to_fraction, parse_number, plain_fraction

            q = plain_fraction(value, name)
            return q if q is not None else number_to_fraction(parse_number(value, what=name), name)
        if type(value).__module__.startswith("sympy"):
            from symrmt.parsing import number_to_fraction, parse_number

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
    from symrmt.parsing import LIMITS, ParseLimitError

    cap = LIMITS["literal_digits"] + LIMITS["literal_exponent"]
    if bits * 0.30103 > cap:
        raise ParseLimitError(f"{name}: a number of about {bits * 0.30103:.0f} digits, above the limit {cap} "
                              "(LIMITS['literal_digits'] + LIMITS['literal_exponent'])")


def check_c(c) -> Fraction:
    """Validate the aspect ratio ``c = p/n > 0``."""
    cf = to_fraction(c, "c")
    if cf <= 0:
        shown = c if isinstance(c, str) else str(c) if isinstance(c, (int, Fraction)) else repr(c)
        raise ParameterError(f"c = p/n must be positive, got {shown}")
    return cf


def check_gammas(gammas) -> tuple[Fraction, ...]:
    """Validate a non-empty list of ridge parameters, each ``gamma > 0``."""
    if isinstance(gammas, (str, int, float, Fraction)):
        gammas = [gammas]
    from symrmt.parsing import check_count

    gammas = list(gammas)
    check_count(len(gammas), "gammas", "the number of gamma values")
    out = tuple(to_fraction(g, "gamma") for g in gammas)
    if not out:
        raise ParameterError("gamma: give at least one value")
    for g in out:
        if g <= 0:
            raise ParameterError(f"gamma must be positive (the probe needs gamma > 0), got {float(g)!r}")
    return out


def check_diagonal(diagonal: str) -> str:
    if diagonal not in DIAGONALS:
        raise ParameterError(f"diagonal must be one of {DIAGONALS}, got {diagonal!r}")
    return diagonal


def check_noise(noise: str) -> str:
    if noise not in NOISES:
        raise ParameterError(f"noise must be one of {NOISES}, got {noise!r}")
    return noise


def check_int(value, name: str, minimum: int, why: str = "") -> int:
    """``value`` as an ``int >= minimum`` (a bool is refused); the error names ``name`` (and ``why``)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ParameterError(f"{name} must be >= {minimum}{why}, got {value}")
    return value
