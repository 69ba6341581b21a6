"""The one Newton driver.

:func:`newton` iterates ``x <- x + dx`` with the step ``dx`` of a caller-supplied linear solve
(QR least squares, a float LU, a chord factorization), and owns the stopping rules every
solver shares:

* **tolerance** -- stop when the step is below ``tol`` relative to ``1 + |x|``;
* **stagnation** -- stop when the step no longer shrinks fourfold while already below
  ``sqrt(tol)`` (the attainable accuracy at the working precision has been reached);
* **contraction** (the chord corrector of a continuation) -- the steps must shrink at least
  twofold, else :class:`~symrmt.errors.ConvergenceError` (the caller takes a smaller step);
* **maximum steps** -- then :class:`~symrmt.errors.NewtonError` with the residual ``max|R|``
  and the last relative step in the message (and as attributes).

:func:`refine` is the same iteration with a fixed (low-precision) factorization of the Jacobian and
the residual at the working precision -- iterative refinement, the cheap polish the solvers try
before full Newton: it must contract fast (each step :data:`REFINE_CONTRACTION` times the last),
else it hands back ``None``.
"""

from __future__ import annotations

from symrmt.errors import ConvergenceError
from symrmt.errors import NewtonError  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.core.budget import check as check_budget
from symrmt.core.numbers import NumberContext

__all__ = ["newton", "NewtonError", "stagnated", "refine", "REFINE_CONTRACTION"]

#: iterative refinement gives up (the caller runs full Newton) when a step is not this much smaller
#: than the previous one
REFINE_CONTRACTION = 1e-3


def stagnated(step, prev, floor, shrink=4):
    """The stagnation rule, elementwise (NumPy arrays of batched rows, or scalars): True where the step no longer
    shrinks ``shrink``-fold (``step > prev / shrink``) while already at the precision floor (``step <= floor``).

    >>> stagnated(1e-9, 2e-9, 1e-8), stagnated(1e-10, 1e-8, 1e-8), stagnated(1e-3, 2e-3, 1e-8)
    (True, False, False)
    """
    return (step > prev / shrink) & (step <= floor)


def newton(linear, x, ctx: NumberContext, tol, maxsteps: int, *, stagnation: bool = True,
           contract: bool = False, residual=None, where: str = "", hint: str = "", shrink=4, floor=None,
           diverge=None):
    """Newton's method from the start ``x`` (a list); returns ``(x, extra, step)`` with ``step`` the last relative
    step ``|dx| / (1 + |x|)`` in ``ctx``'s norm.

    Parameters
    ----------
    linear : callable
        ``linear(x) -> (dx, extra)`` solves the linearized system at ``x`` (``extra``: whatever the same
        factorization yields, e.g. an implicit derivative).
    ctx, tol, maxsteps
        The number context, the relative step that stops the iteration, the most steps.
    stagnation, shrink, floor
        Stop also when the step shrinks less than ``shrink``-fold below ``floor`` (default ``sqrt(tol)``).
    contract, diverge
        ``contract``: each step must halve the last (a chord corrector); ``diverge``: no step may exceed
        ``diverge`` times the last.
    residual, where, hint
        ``residual(x) -> max|R|``, evaluated only for the error message; ``where`` (e.g. ``" at gamma=0.1"``)
        and ``hint`` (e.g. ``"; try more digits"``) are inserted into it.

    Raises
    ------
    NewtonError
        ``maxsteps`` steps without convergence (``residual`` and ``step`` as attributes).
    ConvergenceError
        A chord step that does not contract, or a step that diverges.

    Examples
    --------
    >>> from symrmt.core.numbers import FLOAT64
    >>> sqrt2 = lambda x: ([-(x[0] ** 2 - 2) / (2 * x[0])], None)  # Newton on x^2 = 2
    >>> x, _, step = newton(sqrt2, [1.0], FLOAT64, 1e-15, 20)
    >>> abs(x[0] - 2 ** 0.5) < 1e-15, step < 1e-15
    (True, True)
    """
    prev = step = None
    root_tol = ctx.sqrt(tol) if floor is None else floor
    extra = None
    for _ in range(maxsteps):
        check_budget()
        dx, extra = linear(x)
        x = [a + b for a, b in zip(x, dx)]
        step = ctx.norm(dx) / (1 + ctx.norm(x))
        if step <= tol:
            return x, extra, step
        if contract and prev is not None and not step <= prev / 2:
            raise ConvergenceError("the chord corrector does not contract")
        if stagnation and prev is not None and stagnated(step, prev, root_tol, shrink):
            return x, extra, step  # stagnation at the precision floor
        if diverge is not None and prev is not None and step > diverge * prev:
            raise ConvergenceError("Newton diverges")
        prev = step
    res = residual(x) if residual is not None else None
    text = f"residual max|R| = {float(res):.3g}, " if res is not None else ""
    raise NewtonError(
        f"Newton did not converge{where}: {text}last relative step {float(step):.3g} "
        f"> tolerance {float(tol):.3g} after {maxsteps} steps{hint}",
        residual=res, step=step,
    )


def refine(residual, solve, x, tol, maxsteps: int, *, ctx: NumberContext = None, contraction=REFINE_CONTRACTION,
           step_of=None):
    """Iterative refinement ``x <- x - solve(residual(x))`` from the list ``x``; returns ``(x, step)`` once the
    relative step is at most ``tol``, or ``None`` when a step is not ``contraction`` times the previous one (or
    ``maxsteps`` run out): the caller then runs :func:`newton`.  Raises nothing of its own.

    ``solve(r)`` applies the fixed factorization (a float LU, a float inverse) and returns the correction
    at the working precision; ``step`` is ``ctx.norm(dx) / (1 + ctx.norm(x))`` unless ``step_of(dx, x)``
    measures it (e.g. in float64, as the complex density polish does).

    >>> import mpmath
    >>> from symrmt.core.numbers import MPMATH
    >>> with mpmath.workdps(30):  # x^2 = 2 with the slope fixed at 2 x0 = 2.828 (a float factorization)
    ...     x, step = refine(lambda x: [x[0] ** 2 - 2], lambda r: [r[0] / 2.828], [mpmath.mpf("1.414")], 1e-25, 20,
    ...                      ctx=MPMATH)
    ...     print(mpmath.nstr(x[0], 25), step < 1e-25)
    1.414213562373095048801689 True
    >>> print(refine(lambda x: [x[0] ** 2 - 2], lambda r: [r[0] / 2.0], [1.0], 1e-15, 20, ctx=MPMATH))  # too slow
    None
    """
    prev = None
    for _ in range(maxsteps):
        dx = solve(residual(x))
        x = [a - b for a, b in zip(x, dx)]
        step = step_of(dx, x) if step_of is not None else ctx.norm(dx) / (1 + ctx.norm(x))
        if step <= tol:
            return x, step
        if prev is not None and not step <= prev * contraction:
            return None
        prev = step
    return None
