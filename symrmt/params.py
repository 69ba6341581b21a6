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
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from fractions import Fraction
from numbers import Rational, Real

DIAGONALS = ("zero", "keep")
NOISES = ("gaussian", "rademacher")


class ParameterError(ValueError):
    """A parameter is outside the domain of the model; the message names it."""


def to_fraction(value, name: str) -> Fraction:
    """Convert an int, float, Fraction or decimal/fraction string to an exact Fraction.

    Floats are converted through their shortest ``repr`` (``0.1`` becomes 1/10),
    so that a value typed by a user is taken as the decimal they typed.
    """
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a number, got a bool")
    try:
        if isinstance(value, Fraction):
            return value
        if isinstance(value, Rational):
            return Fraction(int(value.numerator), int(value.denominator))
        if hasattr(value, "_mpf_"):  # an mpmath mpf: its exact binary value
            man, exp = value.man_exp
            if man is None:
                raise ParameterError(f"{name} must be finite, got {value!r}")
            return Fraction(int(man)) * Fraction(2) ** int(exp)
        if isinstance(value, Real):
            fv = float(value)
            if fv != fv or fv in (float("inf"), float("-inf")):
                raise ParameterError(f"{name} must be finite, got {value!r}")
            return Fraction(repr(fv))
        if isinstance(value, str):
            return Fraction(value.strip())
        # mpmath mpf, sympy numbers and the like: go through their string form
        return Fraction(str(value))
    except (ValueError, ZeroDivisionError, TypeError) as exc:
        raise ParameterError(
            f"{name}: cannot read {value!r} as a number (use a decimal such as 0.25 or a fraction such as 1/4)"
        ) from exc


def check_c(c) -> Fraction:
    """Validate the aspect ratio ``c = p/n > 0``."""
    cf = to_fraction(c, "c")
    if cf <= 0:
        raise ParameterError(f"c = p/n must be positive, got {c!r}")
    return cf


def check_gammas(gammas) -> tuple[Fraction, ...]:
    """Validate a non-empty list of ridge parameters, each ``gamma > 0``."""
    if isinstance(gammas, (str, int, float, Fraction)):
        gammas = [gammas]
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


def _det(m):
    n = len(m)
    if n == 1:
        return m[0][0]
    if n == 2:
        return m[0][0] * m[1][1] - m[0][1] * m[1][0]
    return sum(
        (-1) ** j * m[0][j] * _det([row[:j] + row[j + 1:] for row in m[1:]]) for j in range(n)
    )


def is_psd(m) -> bool:
    """Exact PSD test of a small symmetric rational matrix: every principal minor is >= 0."""
    from itertools import combinations

    n = len(m)
    for k in range(1, n + 1):
        for idx in combinations(range(n), k):
            sub = [[m[i][j] for j in idx] for i in idx]
            if _det(sub) < 0:
                return False
    return True


@dataclass(frozen=True)
class Geometry:
    """Gram data of ``(mu, w_K, w_Q)``: ``snr = ||mu||^2``, ``wk2 = ||w_K||^2``,
    ``wq2 = ||w_Q||^2``, ``wkwq = w_K . w_Q``, ``muwk = mu . w_K``, ``muwq = mu . w_Q``.

    Values are stored as exact Fractions.  Construction fails with a
    :class:`ParameterError` naming the problem when the entries do not form a
    positive semi-definite Gram matrix.

    >>> Geometry(snr=1, wk2=1, wq2=1, wkwq=1, muwk=1, muwq=1).rank()
    1
    >>> Geometry(snr=1, muwk=2, wk2=1)
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: the geometry is not a Gram matrix (not positive semi-definite): ...
    """

    snr: Fraction = Fraction(0)
    wk2: Fraction = Fraction(0)
    wq2: Fraction = Fraction(0)
    wkwq: Fraction = Fraction(0)
    muwk: Fraction = Fraction(0)
    muwq: Fraction = Fraction(0)

    def __post_init__(self):
        for f in fields(self):
            object.__setattr__(self, f.name, to_fraction(getattr(self, f.name), f.name))
        for name in ("snr", "wk2", "wq2"):
            if getattr(self, name) < 0:
                raise ParameterError(f"{name} is a squared norm and must be >= 0, got {float(getattr(self, name))!r}")
        if not is_psd(self.gram()):
            g = [[float(x) for x in row] for row in self.gram()]
            raise ParameterError(
                "the geometry is not a Gram matrix (not positive semi-definite): "
                f"[[snr, muwk, muwq], [muwk, wk2, wkwq], [muwq, wkwq, wq2]] = {g}; "
                "check that |mu.w_K| <= ||mu|| ||w_K|| and the other Cauchy-Schwarz bounds hold"
            )

    def gram(self):
        """The 3x3 Gram matrix of (mu, w_K, w_Q) as nested lists of Fractions."""
        return [
            [self.snr, self.muwk, self.muwq],
            [self.muwk, self.wk2, self.wkwq],
            [self.muwq, self.wkwq, self.wq2],
        ]

    def rank(self) -> int:
        """Exact rank of the Gram matrix (the dimension of span(mu, w_K, w_Q))."""
        from itertools import combinations

        m = self.gram()
        for k in (3, 2, 1):
            for idx in combinations(range(3), k):
                if _det([[m[i][j] for j in idx] for i in idx]) != 0:
                    return k
        return 0

    @property
    def has_weights(self) -> bool:
        """False exactly when ``w_K w_Q^T = 0`` (``w_K = 0`` or ``w_Q = 0``), i.e. ``W = I``."""
        return self.wk2 != 0 and self.wq2 != 0

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}
