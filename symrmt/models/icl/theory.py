r"""The ridgeless limit of the ICL error at any precision: :func:`icl_limit`.

Inputs are checked and made exact (:func:`symrmt.models.icl.params.check_icl`), the two task-diversity resolvents
``M_kappa(x)`` and ``M_{kappa/tau}(x)`` come from the trace engine (the expression
:data:`~symrmt.models.icl.equations.RESOLVENT_EXPR`, certified at two precisions), and the branch of
:func:`~symrmt.models.icl.equations.result1` on the side of the pole ``tau = 1`` is compiled from SymPy
(:func:`symrmt.codegen.compile.compile_expr`) and evaluated with mpmath.  The value is computed twice, the
second time with 15 more working digits (the resolvents certified to the higher precision once), and
returned only if both agree to the digits asked for.

>>> r = icl_limit(1, "1/2", "1/2", "1/10", digits=30)
>>> print(r)
1.48294428254953204431926504148
>>> r.branch
'below'
>>> icl_limit(1, 1, 1, 0)
Traceback (most recent call last):
...
symrmt.errors.ParameterError: tau = 1 is the pole of the ridgeless limit (n = d^2 contexts, as many as the d^2 features: double descent); the ICL error diverges there, so no value is returned; give tau != 1
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import sympy as sp

from symrmt.cache import cached
from symrmt.codegen.compile import compile_expr
from symrmt.engine import Model
from symrmt.errors import BranchError, ParameterError, PrecisionError
from symrmt.models.icl import equations as S
from symrmt.models.icl.params import check_icl
from symrmt.models.icl.results import ICLLimit

__all__ = ["ICLLimit", "icl_limit", "resolvent", "MAX_DIGITS"]


@cached(maxsize=8)
def _engine_model():
    model = Model()
    model.dim("d", "phi*n")
    model.gaussian("Z", "n", "d")
    return model


def resolvent(u: Fraction, kappa: Fraction, digits: int):
    """``M_kappa(u) = lim tr((W + u I)^{-1})/d`` from the trace engine, certified to ``digits`` digits.

    >>> print(mpmath.nstr(resolvent(Fraction(3, 10), Fraction(2), 25), 25))
    1.045176241886681281412981
    """
    return _engine_model().limit(S.RESOLVENT_EXPR, at={"phi": 1 / kappa, "u": u}, digits=digits).value


#: the most digits :func:`icl_limit` gives: the engine's limit less the 25 guard digits of the second evaluation
MAX_DIGITS = 975


@cached(maxsize=8)
def _compiled(branch: str):
    """Result 1 on one side of the pole, compiled with ``tau = 1 + s``: ``s`` enters exactly, so ``1 - tau``
    loses no digits near the pole."""
    s = sp.Symbol("s", real=True)
    args = [S.X, S.RHO, s, S.KAPPA, S.M, S.MU]
    return compile_expr(args, S.result1(branch).subs(S.TAU, 1 + s))


def _resolvents(a, k, t, r, branch: str, dps: int):
    """``x``, ``m = M_kappa(x)`` and (below the pole) ``mu = x M_{kappa/tau}(x)``, the engine certifying ``dps`` digits."""
    x = (1 + r) / a
    with mpmath.workdps(dps):
        m = resolvent(x, k, dps)
        mu = _mp(x) * resolvent(x, k / t, dps) if branch == "below" else None
        return m, mu


def _mp(v: Fraction):
    return mpmath.mpf(v.numerator) / v.denominator


def _evaluate(a, k, t, r, branch: str, m, mu, dps: int):
    """Result 1 at ``dps`` working digits (the inputs rounded to ``dps``)."""
    with mpmath.workdps(dps):
        e = _compiled(branch)(_mp((1 + r) / a), _mp(r), _mp(t - 1), _mp(k), +m, +mu if mu is not None else mpmath.mpf(0))
        return +e


def _cancel_note(a: Fraction, x: Fraction, cancel: int, digits: int) -> str:
    """What to try when the two evaluations of :func:`icl_limit` disagree or would need too many digits."""
    size = f"alpha = {_mp_text(a)}, so x = (1 + rho)/alpha = {_mp_text(x)}, " if cancel else ""
    return (f"{size}Result 1 cancels about log10(x) = {cancel} digits between its terms, and {digits} digits "
            "were asked; ask for fewer digits, or use a larger alpha (measured at 15 digits: alpha = 1e-100 is "
            "certified, 1e-150 is not)")


def _mp_text(v: Fraction) -> str:
    with mpmath.workdps(20):
        return mpmath.nstr(_mp(v), 3)


def icl_limit(alpha, kappa, tau, rho, digits: int = 15) -> ICLLimit:
    """The ridgeless ``d -> oo`` limit of the ICL error of linear attention (Result 1 of Lu et al.).

    Parameters: ``alpha`` (``ell = alpha d`` examples per context), ``kappa`` (``k = kappa d`` pretraining
    tasks), ``tau`` (``n = tau d^2`` pretraining contexts), ``rho`` (label-noise variance) -- numbers or
    numeric text, taken exactly; ``digits`` (1..:data:`MAX_DIGITS`) significant digits.

    Returns an :class:`ICLLimit`.  Raises ``ParameterError`` for ``alpha, kappa, tau <= 0``, ``rho < 0``,
    ``tau = 1`` (the pole, :data:`symrmt.models.icl.params.POLE_REASON`) or ``digits`` out of range; ``PrecisionError`` if two
    evaluations 15 working digits apart disagree; ``BranchError`` if the value is not finite or below ``rho`` (the
    query's own noise, a floor of every predictor).

    >>> print(icl_limit(2, 3, "0.3", 0, digits=20))
    0.94605636626358292497
    >>> print(icl_limit(1, "1/2", 2, "1/10", digits=20))
    1.4710459456230643676
    """
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= MAX_DIGITS:
        raise ParameterError(f"digits must be an integer in 1..{MAX_DIGITS} (MAX_DIGITS: the trace engine's limit "
                             f"less 25 guard digits), got {digits!r}")
    a, k, t, r = check_icl(alpha, kappa, tau, rho)
    branch = "below" if t < 1 else "above"
    x = (1 + r) / a
    # Result 1 cancels about log10(x) digits between its terms at a large x = (1 + rho)/alpha (a small alpha)
    cancel = max(0, len(str(x.numerator // x.denominator)) - 1)
    dps = digits + 10 + cancel
    if dps + 15 > MAX_DIGITS + 25:
        raise PrecisionError(_cancel_note(a, x, cancel, digits))
    try:
        m, mu = _resolvents(a, k, t, r, branch, dps + 15)
    except PrecisionError as exc:
        if not cancel:
            raise
        raise PrecisionError(f"the resolvents at x = (1 + rho)/alpha: {exc}; {_cancel_note(a, x, cancel, digits)}") \
            from exc
    e1 = _evaluate(a, k, t, r, branch, m, mu, dps)
    e2 = _evaluate(a, k, t, r, branch, m, mu, dps + 15)
    with mpmath.workdps(dps + 15):
        if not (mpmath.isfinite(e1) and mpmath.isfinite(e2)):
            raise BranchError(f"the ICL error is not finite at alpha={a}, kappa={k}, tau={t}, rho={r}")
        if abs(e1 - e2) > mpmath.mpf(10) ** (-digits - 2) * abs(e2):
            raise PrecisionError(f"two evaluations ({dps} and {dps + 15} working digits) disagree: "
                                 f"{mpmath.nstr(e1, digits + 3)} vs {mpmath.nstr(e2, digits + 3)}; "
                                 + _cancel_note(a, x, cancel, digits))
        if e2 < mpmath.mpf(r.numerator) / r.denominator:
            raise BranchError(f"the ICL error {mpmath.nstr(e2, 10)} is below the noise floor rho = {r}")
    with mpmath.workdps(digits + 5):
        return ICLLimit(+e2, digits, a, k, t, r, branch, _mp((1 + r) / a), +m, None if mu is None else +mu)
