r"""Hermite data of the nonlinearity ``f``: the public names of the Hermite layer.

Conventions (``docs/theory.md`` section 2): probabilists' Hermite polynomials
``He_k`` (:func:`sympy.hermite_prob`), ``xi ~ N(0, 1)``,

* ``a_k = E[f(xi) He_k(xi)]``, so that ``f = sum_k a_k He_k / k!``;
* ``nu  = E[f(xi)^2]``;
* ``d   = lim_{t -> +oo} f(t) / t`` (the limit of the kept diagonal of ``K``).

The theory needs ``a_0 = 0``.  Only ``a_1``, ``nu`` and ``d`` enter the limit.

The package holds :class:`Nonlinearity` (``f`` and its data: exact Gaussian expectations where a closed form
exists, each checked against an independent quadrature, else certified quadrature), the preset names
(:data:`PRESETS`), the parser of ``f`` (:func:`parse_f`) and :func:`hermite_report`, the JSON contract of the
CLI verb ``hermite``; proved balls of the data are in :mod:`symrmt.hermite.balls`.

Examples
--------
>>> import mpmath
>>> tanh = Nonlinearity("tanh")
>>> mpmath.nstr(tanh.a_mpf(1, 30), 30)
'0.605705509602158825583540227556'
>>> erf = Nonlinearity("erf")
>>> erf.a(1), erf.nu
(2*sqrt(3)/(3*sqrt(pi)), 2*asin(2/3)/pi)
"""

from __future__ import annotations

import sys

import mpmath

from symrmt.hermite.quadrature import GUARD_DPS, QuadratureError
from symrmt.errors import ParameterError
from symrmt.hermite.gaussian import NotExact, T
from symrmt.hermite.nonlinearity import Nonlinearity
from symrmt.hermite.parser import parse_f
from symrmt.hermite.presets import CENTER_NUMERICALLY, PRESETS, check_dps, check_order

__all__ = [
    "T",
    "PRESETS",
    "CENTER_NUMERICALLY",
    "GUARD_DPS",
    "NotExact",
    "QuadratureError",
    "Nonlinearity",
    "parse_f",
    "hermite_data",
    "hermite_report",
]


def hermite_data(f, k: int = 3, dps: int = 15, center: bool = False, symbolic: bool = False) -> dict:
    """The Hermite data of ``f`` (a preset name, an expression text or SymPy expression in ``t``, or a
    :class:`Nonlinearity`) as a dict: ``a`` (``[a_0 .. a_k]``), ``a1``, ``nu``, ``nu_minus_a1sq``, ``d`` (``None``
    when ``f(t)/t`` has no limit) and ``exact``; mpf values at ``dps`` digits, or SymPy values with
    ``symbolic=True``.  ``center``: subtract ``a_0``.  The same as ``Nonlinearity(f, center).to_dict(k, dps,
    symbolic)``, with its errors (:class:`ParameterError` for a bad ``f``, ``k`` or ``dps``).

    >>> hermite_data("linear", k=2, symbolic=True)  # f = t = He_1: a_1 = 1, nu = E[xi^2] = 1
    {'a': [0, 1, 0], 'a1': 1, 'nu': 1, 'nu_minus_a1sq': 0, 'd': 1, 'exact': True}
    """
    nl = f if isinstance(f, Nonlinearity) else Nonlinearity(f, center=center)
    return nl.to_dict(k, dps, symbolic)


def hermite_report(f, k: int = 3, dps: int = 15, center: bool = False) -> dict:
    """The JSON contract of the CLI verb ``hermite``.

    Parameters
    ----------
    f : str or sympy.Expr or Nonlinearity
        Preset name or expression.
    k : int
        Highest order of ``a``.
    dps : int
        Digits.  Numbers are Python floats when ``dps <= 15``, else decimal
        strings with ``dps`` significant digits.
    center : bool
        Subtract ``a_0`` (see :class:`Nonlinearity`).

    Returns
    -------
    dict
        ``{'a': [a_0..a_k], 'a1', 'nu', 'd' (None when undefined), 'exact'}``.

    Examples
    --------
    >>> hermite_report("relu", k=2)
    {'a': [0.0, 0.5, 0.3989422804014327], 'a1': 0.5, 'nu': 0.3408450569081047, 'd': 1.0, 'exact': True}
    >>> hermite_report("tanh", k=1, dps=20)["a1"]
    '0.60570550960215882558'
    """
    nl = f if isinstance(f, Nonlinearity) else Nonlinearity(f, center=center)
    dps = check_dps(dps)

    def conv(x):
        # a float only when it is one: a value beyond the float64 normal range (1e-400, 1e400, a subnormal)
        # is a decimal string, never 0.0 or inf

        if dps <= 15 and mpmath.isfinite(x) and (x == 0 or sys.float_info.min <= abs(x) <= sys.float_info.max):
            return float(x)
        if not mpmath.isfinite(x):
            raise QuadratureError(f"a Hermite value of f is not finite ({x}); f grows too fast for its "
                                  "Gaussian moments to be computed")
        return mpmath.nstr(x, dps)

    try:
        d = conv(nl.d_mpf(dps))
    except (ParameterError, NotExact):
        d = None
    return {
        "a": [conv(nl.a_mpf(j, dps)) for j in range(check_order(k) + 1)],
        "a1": conv(nl.a_mpf(1, dps)),
        "nu": conv(nl.nu_mpf(dps)),
        "d": d,
        "exact": nl.exact,
    }
