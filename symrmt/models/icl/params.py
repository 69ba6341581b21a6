"""The inputs of the ICL model: :func:`check_icl` (exact, in range) and :data:`POLE_REASON` (why ``tau = 1`` is refused).

Imported by both the theory (:mod:`symrmt.models.icl.theory`) and the simulation
(:mod:`symrmt.models.icl.simulation`); it loads neither SymPy nor the engine.
"""

from __future__ import annotations

from symrmt.errors import ParameterError
from symrmt.models.attention.params import to_fraction

__all__ = ["check_icl", "POLE_REASON"]


#: why ``tau = 1`` is refused in the ridgeless limit
POLE_REASON = ("tau = 1 is the pole of the ridgeless limit (n = d^2 contexts, as many as the d^2 features: "
               "double descent); the ICL error diverges there, so no value is returned; give tau != 1")


def check_icl(alpha, kappa, tau, rho, pole: bool = True):
    """Exact ``(alpha, kappa, tau, rho)`` as Fractions; ``ParameterError`` unless ``alpha, kappa, tau > 0`` and
    ``rho >= 0`` (and, with ``pole=True``, ``tau != 1``: :data:`POLE_REASON`).

    >>> check_icl("0.5", 2, "3/2", 0)
    (Fraction(1, 2), Fraction(2, 1), Fraction(3, 2), Fraction(0, 1))
    >>> check_icl(1, 0, 2, 0)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: kappa must be > 0 (k = kappa d pretraining tasks), got 0
    """
    out = []
    for name, value, what in (("alpha", alpha, "ell = alpha d examples per context"),
                              ("kappa", kappa, "k = kappa d pretraining tasks"),
                              ("tau", tau, "n = tau d^2 pretraining contexts")):
        v = to_fraction(value, name)
        if v <= 0:
            raise ParameterError(f"{name} must be > 0 ({what}), got {value}")
        out.append(v)
    r = to_fraction(rho, "rho")
    if r < 0:
        raise ParameterError(f"rho must be >= 0 (the label-noise variance), got {rho}")
    out.append(r)
    if pole and out[2] == 1:
        raise ParameterError(POLE_REASON)
    return tuple(out)


