"""``f_alpha(t) = f(alpha t)``: the nonlinearity a kernel applies when its weights are ``alpha I + ...``.

The limit for ``(f, W)`` is the one for ``(f_alpha, W/alpha)``: the kernel's argument is rescaled, which
changes the Hermite data, so the scaled ``f`` is a :class:`~symrmt.hermite.Nonlinearity` of its own.
"""

from __future__ import annotations

import sympy as sp

from symrmt.cache import cache_dict
from symrmt.errors import ParameterError
from symrmt.parsing.numbers import to_fraction
from symrmt.hermite.gaussian import T
from symrmt.hermite.nonlinearity import Nonlinearity, NotCenteredError
from symrmt.hermite.parser import parse_f
from symrmt.hermite.presets import PRESETS

__all__ = ["scaled_nonlinearity"]

_SCALED = cache_dict("symrmt.hermite.scaled._SCALED", 64)


def scaled_nonlinearity(f, alpha):
    """``f_alpha(t) = f(alpha t)`` as a :class:`~symrmt.hermite.Nonlinearity` (the theory of ``W = alpha I + ...``).

    >>> scaled_nonlinearity("erf", 2).expr
    erf(2*t)
    """
    alpha = to_fraction(alpha, "alpha")
    if isinstance(f, dict):
        raise ParameterError(
            "alpha != 1 rescales the kernel's argument, which changes the Hermite data; "
            "give f itself (a preset or an expression) rather than its Hermite data, or fold alpha in yourself"
        )
    if alpha == 1:
        return f if isinstance(f, Nonlinearity) else Nonlinearity(f)
    if isinstance(f, Nonlinearity):
        base_expr = f.expr
    elif isinstance(f, str):
        # f need only be centered at the scale alpha, not under N(0, 1): parse it without that check

        base_expr = parse_f(PRESETS.get(f.strip(), f.strip()))
    else:
        base_expr = Nonlinearity(f).expr
    key = (str(base_expr), alpha)
    if key not in _SCALED:
        expr = base_expr.subs(T, sp.Rational(alpha.numerator, alpha.denominator) * T)
        try:
            _SCALED[key] = Nonlinearity(expr)
        except NotCenteredError as exc:
            raise NotCenteredError(
                f"with alpha = {alpha} the kernel applies f(alpha t) = {expr}, which is not centered: "
                f"E f(alpha xi) = {exc.a0}; the theory needs E f(alpha xi) = 0. Use an odd f, or give an f "
                "centered at this scale (the same f must then be used in the simulation)",
                a0=exc.a0, a0_exact=exc.a0_exact, a0_value=exc.a0_value,
            ) from None
        except ParameterError as exc:
            raise ParameterError(f"with alpha = {alpha}: f(alpha t) = {expr}: {exc}") from None
    return _SCALED[key]
