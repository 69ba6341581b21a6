"""The Hermite inputs of the attention theory: ``(a_1, nu, d)`` of ``f`` at a working precision.

* :func:`hermite_inputs` -- from a :class:`~symrmt.hermite.Nonlinearity`, a preset or an expression,
  or the data given directly (``{"a1": ..., "nu": ..., "d": ...}``);
* :func:`hermite_at_least` -- the same, reusing values already computed at that precision or more;
* :func:`scaled_nonlinearity` -- ``f_alpha(t) = f(alpha t)``, the kernel of ``W = alpha I + ...``.
"""

from __future__ import annotations

import mpmath

from symrmt.cache import cache_dict
from symrmt.errors import ParameterError
from symrmt.models.attention.params import check_diagonal, to_fraction
from symrmt.core.numbers import mpf_of
from symrmt.hermite import Nonlinearity
from symrmt.hermite.scaled import scaled_nonlinearity  # noqa: F401  (re-exported)

__all__ = ["hermite_inputs", "hermite_at_least", "scaled_nonlinearity"]


def hermite_inputs(f, diagonal: str, dps: int):
    """``(a_1, nu, d)`` as mpf at ``dps`` digits from ``f``.

    ``f`` is a :class:`symrmt.hermite.Nonlinearity`, a preset name / expression
    string (made into one), or a mapping with keys ``a1``, ``nu`` and (for
    ``keep``) ``d``, giving the Hermite data directly; ``diagonal`` is ``"zero"`` (``d`` returned as 0)
    or ``"keep"``; ``dps`` is the working precision in decimal digits.

    Raises
    ------
    ParameterError
        ``diagonal`` is not one of ``("zero", "keep")``; a mapping misses ``a1`` or ``nu`` (or ``d`` for
        ``keep``); ``nu < a1^2`` (Cauchy-Schwarz fails); or ``f`` has no finite ``d`` under ``keep``.

    Examples
    --------
    >>> hermite_inputs({"a1": "1/2", "nu": 1, "d": "1/3"}, "keep", 20)
    (mpf('0.5'), mpf('1.0'), mpf('0.33333333333333333'))
    >>> hermite_inputs({"a1": "1/2", "nu": 1, "d": "1/3"}, "zero", 20)[2]
    mpf('0.0')
    >>> hermite_inputs({"a1": 2, "nu": 1}, "zero", 15)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: nu - a1^2 must be >= 0 (Cauchy-Schwarz), got nu=1.0, a1=2.0
    >>> hermite_inputs({"a1": 0, "nu": 1}, "keep", 15)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: diagonal='keep' needs d = lim f(t)/t in the Hermite data
    """
    diagonal = check_diagonal(diagonal)
    if isinstance(f, dict):
        missing = {"a1", "nu"} - set(f)
        if missing:
            raise ParameterError(f"Hermite data needs keys a1 and nu; missing {sorted(missing)}")
        with mpmath.workdps(dps):
            a1 = mpf_of(to_fraction(f["a1"], "a1")) if not isinstance(f["a1"], mpmath.mpf) else +f["a1"]
            nu = mpf_of(to_fraction(f["nu"], "nu")) if not isinstance(f["nu"], mpmath.mpf) else +f["nu"]
            if diagonal == "keep":
                if "d" not in f:
                    raise ParameterError("diagonal='keep' needs d = lim f(t)/t in the Hermite data")
                dv = f["d"]
                d = +dv if isinstance(dv, mpmath.mpf) else mpf_of(to_fraction(dv, "d"))
            else:
                d = mpmath.mpf(0)
    else:
        if not isinstance(f, Nonlinearity):
            f = Nonlinearity(f)
        a1 = f.a_mpf(1, dps)
        nu = f.nu_mpf(dps)
        d = f.d_mpf(dps) if diagonal == "keep" else mpmath.mpf(0)
    with mpmath.workdps(dps):
        if nu - a1**2 < -mpmath.mpf(10) ** (-dps + 3):
            raise ParameterError(f"nu - a1^2 must be >= 0 (Cauchy-Schwarz), got nu={nu}, a1={a1}")
    return a1, nu, d


_HERMITE_CACHE = cache_dict("symrmt.models.attention.hermite_data._HERMITE_CACHE", 64)


def hermite_at_least(f, diagonal: str, dps: int):
    """:func:`hermite_inputs` with at least ``dps`` digits, reusing values already computed at
    ``dps`` or more for the same ``f`` (the quadratures for tanh etc. dominate a single point).

    Takes and raises what :func:`hermite_inputs` does; a string or a Nonlinearity is cached (up to 64
    of them), Hermite data given as a mapping are converted each time.

    >>> hermite_at_least({"a1": 1, "nu": 2, "d": 0}, "keep", 15)
    (mpf('1.0'), mpf('2.0'), mpf('0.0'))
    """
    if isinstance(f, str):
        key = (f.strip(), False)
    elif isinstance(f, Nonlinearity):
        key = (f.text, f.center)
    else:
        return hermite_inputs(f, diagonal, dps)
    key += (check_diagonal(diagonal),)
    hit = _HERMITE_CACHE.get(key)
    if hit is not None and hit[0] >= dps:
        return hit[1]
    values = hermite_inputs(f, diagonal, dps)
    _HERMITE_CACHE[key] = (dps, values)
    return values


