"""The construction checks every nonlinearity ``f`` passes.

* :func:`check_real` -- ``f`` is real and finite on the real line (sampled);
* :func:`check_growth` -- ``E[f(xi)^2]`` is finite: ``f`` grows slower than ``exp(t^2/4)/|t|``.
"""

from __future__ import annotations

import mpmath
import sympy as sp

from symrmt.cache import cached
from symrmt.errors import ParameterError
from symrmt.hermite.gaussian import NotExact, T, smooth_pieces, with_timeout
from symrmt.hermite.quadrature import mp_function

__all__ = ["check_real", "check_growth"]


def check_real(expr):
    """Check that ``f`` (an expression in ``t``) is real and finite at four points of the real line; returns ``None``.
    Raises :class:`ParameterError` naming the first point where it is not.

    >>> check_real(T ** 3) is None
    True
    >>> check_real(sp.log(T))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: f must be real and finite on the whole real line; f(-2.3) = ... Use e.g. Abs(t) inside sqrt/log
    """
    for x0 in ("-2.3", "-0.7", "0.41", "1.9"):
        v = sp.N(expr.subs(T, sp.Rational(x0)), 20)
        if not v.is_real or not v.is_finite:
            raise ParameterError(
                f"f must be real and finite on the whole real line; f({x0}) = {v}. "
                "Use e.g. Abs(t) inside sqrt/log"
            )


def check_growth(expr, timeout: float = 10.0):
    """Check that ``E[f(xi)^2]`` is finite: ``t^2 f(t)^2 exp(-t^2/2)`` vanishes at both ends (a symbolic limit within
    ``timeout`` seconds, else its value at ``t = +-40``); returns ``None``.  Raises :class:`ParameterError` when
    it does not vanish.  The outcome is cached per ``(expr, timeout)``.

    >>> check_growth(T ** 4) is None
    True
    >>> check_growth(sp.exp(T ** 2 / 2))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: f: E[f(ξ)^2] diverges: f grows too fast as t -> oo ...
    """
    message = _growth_outcome(expr, float(timeout))
    if message is not None:
        raise ParameterError(message)


@cached(maxsize=256)
def _growth_outcome(expr, timeout):
    """``None`` when ``E[f(xi)^2]`` is finite, else the message of the ParameterError (see :func:`check_growth`)."""
    pieces = smooth_pieces(expr) or ((-sp.oo, sp.oo, expr),)
    for end, g in ((sp.oo, pieces[-1][2]), (-sp.oo, pieces[0][2])):
        probe = T**2 * g**2 * sp.exp(-(T**2) / 2)
        try:
            lim = with_timeout(lambda probe=probe, end=end: sp.limit(probe, T, end), min(timeout, 10.0))
        except (NotExact, NotImplementedError, ValueError, TypeError):
            lim = None
        if lim is not None and lim.is_number and lim == 0:
            continue
        if lim is None or not lim.is_number or isinstance(lim, sp.AccumBounds):
            fn = mp_function(probe)
            with mpmath.workdps(30):
                x = 40 if end == sp.oo else -40
                try:
                    val = abs(fn(mpmath.mpf(x)))
                except (OverflowError, ZeroDivisionError, ValueError):
                    val = mpmath.inf
            if val < mpmath.mpf("1e-100"):
                continue
        return (f"f: E[f(ξ)^2] diverges: f grows too fast as t -> {end} "
                f"(t^2 f(t)^2 exp(-t^2/2) does not vanish there); f must satisfy |f(t)| = o(exp(t^2/4)/|t|)")
    return None
