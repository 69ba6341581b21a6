"""The named nonlinearities and the checks of the Hermite layer's integer arguments.

* :data:`PRESETS` -- preset name -> expression text; :data:`CENTER_NUMERICALLY`, the presets
  centered by quadrature;
* :func:`check_order` (the order ``k`` of ``a_k``) and :func:`check_dps` (working digits, up to
  ``LIMITS['digits']`` plus :data:`GUARD_ALLOWANCE`).

>>> PRESETS["relu"]
'Max(t, 0) - 1/sqrt(2*pi)'
"""

from __future__ import annotations

from symrmt.errors import ParameterError
from symrmt.parsing import LIMITS, check_count, check_digits

__all__ = ["PRESETS", "CENTER_NUMERICALLY", "GUARD_ALLOWANCE", "check_order", "check_dps"]

#: Presets: name -> expression text.  All are centered (``a_0 = 0``) except
#: ``softplus``, whose Gaussian mean has no closed form: a
#: :class:`Nonlinearity` built from the preset name ``"softplus"`` is always
#: centered numerically (``center=True`` is forced and ``a_0`` is computed by
#: quadrature at the working precision).
PRESETS: dict[str, str] = {
    "tanh": "tanh(t)",
    "relu": "Max(t, 0) - 1/sqrt(2*pi)",
    "erf": "erf(t)",
    "sin": "sin(t)",
    "cos": "cos(t) - exp(-1/2)",
    # E[xi Phi(xi)] = phi(0) * E[...]: E[gelu(xi)] = 1/(2 sqrt(pi))
    "gelu": "t*(1 + erf(t/sqrt(2)))/2 - 1/(2*sqrt(pi))",
    "sigmoid": "1/(1 + exp(-t)) - 1/2",
    "softplus": "log(1 + exp(t))",
    "linear": "t",
    "abs": "Abs(t) - sqrt(2/pi)",
    "sign": "sign(t)",
    "poly2": "t**2 - 1 + t",
}

#: Presets centered by quadrature when built by name.
CENTER_NUMERICALLY = frozenset({"softplus"})


def check_order(k):
    """``k`` (the order of ``a_k``) as an int ``>= 0``, within the size cap ``LIMITS['hermite_k']``.  Raises
    :class:`ParameterError` for a negative or non-integer ``k`` (a bool included) or one above the cap.

    >>> check_order(3)
    3
    >>> check_order(-1)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: k must be an integer >= 0, got -1
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ParameterError(f"k must be an integer >= 0, got {k!r}")
    return check_count(k, "hermite_k", "k")


#: working digits the limit solvers add to the largest --digits when they ask for Hermite data
GUARD_ALLOWANCE = 100


def check_dps(dps):
    """``dps`` (working digits) as an int in ``[1, LIMITS['digits'] + GUARD_ALLOWANCE]`` (the solvers' guard digits
    on top of the largest ``--digits``).  Raises :class:`ParameterError` outside it or for a non-integer.

    >>> check_dps(30)
    30
    >>> check_dps(0)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: dps must be an integer >= 1, got 0
    """
    if isinstance(dps, bool) or not isinstance(dps, int) or dps < 1:
        raise ParameterError(f"dps must be an integer >= 1, got {dps!r}")
    if dps > LIMITS["digits"]:
        return check_digits(dps - GUARD_ALLOWANCE, "dps - GUARD_ALLOWANCE") + GUARD_ALLOWANCE
    return dps
