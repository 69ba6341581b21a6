"""The one continuation: predictor, Newton corrector, trust region, second pass, polish check.

:func:`follow` follows a solution ``h(t)`` from ``t0`` to ``t1``.  Each step predicts
``h + dh (t' - t)`` from the implicit derivative ``dh``, corrects with the caller's Newton
(``correct(pred, t') -> (h', dh')``) and accepts the step only inside a **trust region**:

* **near the predictor** -- ``|h' - pred| <= correction (1 + |h|)``: the corrector must not
  jump to another branch;
* **near the previous point** -- ``|h' - h| <= move (1 + |h|)``: an overshooting predictor (a
  steep start) must not let Newton settle on the other root near the overshoot;
* the new point is finite.

A rejected step is retried smaller (the :class:`Linear` or :class:`Geometric` schedule decides
how much); a step too small to make progress raises
:class:`~symrmt.errors.ConvergenceError`.  ``tighten > 1`` shrinks both bounds (the
checking pass).

:func:`two_pass` follows a path twice, the second time with finer steps and a tighter trust
region, and refuses end points that differ (a jump between branches depends on the steps,
the branch does not); :func:`check_polish` refuses a final Newton polish that moves away
from the checked point.  One code path serves floats and mpmath: the arithmetic is that of
the numbers handed in, the square root that of the :class:`~symrmt.core.numbers.NumberContext`.
"""

from __future__ import annotations

import numpy as np

from symrmt.errors import BranchError, ConvergenceError
from symrmt.core.budget import check as check_budget
from symrmt.core.numbers import NumberContext

__all__ = ["Linear", "Geometric", "follow", "in_trust_region", "two_pass", "check_polish", "paths_gap", "finite_trace",
           "CORRECTION_FRACTION", "MOVE_FRACTION", "CHECK_MAX_STEP", "CHECK_TIGHTEN", "PATHS_AGREE",
           "POLISH_MOVE"]

#: trust region of a continuation step: the corrected point may move at most ``MOVE_FRACTION`` of
#: ``1 + |h|`` from the previous point, and the Newton correction at most ``CORRECTION_FRACTION``
#: from the predictor
MOVE_FRACTION = 0.25
CORRECTION_FRACTION = 0.1
#: the checking pass: largest step (a fraction of the leg) and the factor on the trust region
CHECK_MAX_STEP = 1 / 8
CHECK_TIGHTEN = 2
#: relative agreement of the two passes' end points, and the largest relative move of the polish
PATHS_AGREE = 1e-7
POLISH_MOVE = 1e-6


def _at(v, rows):
    """``v`` at the rows ``rows`` of a batch (``v`` itself for a scalar or ``rows=None``)."""
    return v if rows is None or np.ndim(v) == 0 else v[rows]


def _not(cond):
    """Logical not, elementwise on arrays."""
    return np.logical_not(cond) if isinstance(cond, np.ndarray) else not cond


def _where(cond, a, b):
    """``a`` where ``cond`` else ``b``: elementwise on arrays, a plain choice on scalars (mpf included)."""
    if isinstance(cond, np.ndarray):
        return np.where(cond, a, b)
    return a if cond else b


class _Schedule:
    """A step schedule: ``advance(t)`` gives the next point, ``shrink()`` (rejected step; ``False`` when
    stalled) and ``grow()`` (accepted step) change the step.  The same rules serve one path (scalars:
    float, mpf) and a batch of paths (NumPy arrays, one step per row: ``rows`` selects the rows)."""

    def _set(self, new, rows):
        if rows is None:
            self.size = new
        else:
            self.size[rows] = new


class Linear(_Schedule):
    """Additive steps ``t -> t + dt`` from ``t0`` to ``t1`` (scalars, or arrays with one step per row): first
    ``(t1 - t0) / first`` (or ``step`` itself), halved on a rejected step, doubled up to ``cap (t1 - t0)`` on an
    accepted one (``cap=None``: no cap); stalled below ``|t1 - t0| / 2**40``.

    >>> s = Linear(0.0, 1.0, first=8)
    >>> s.size, s.advance(0.5)
    (0.125, 0.625)
    """

    def __init__(self, t0, t1, first=4, cap=1, step=None):
        self.t0, self.t1 = t0, t1
        self.cap = None if cap is None else (t1 - t0) * cap
        self.size = (t1 - t0) / first if step is None else step

    def advance(self, t, rows=None):
        """The next point after ``t``: ``t + dt``, never past ``t1``.

        >>> s = Linear(0.0, 1.0)
        >>> s.advance(0.0), s.advance(0.9)
        (0.25, 1.0)
        """
        size, t1 = _at(self.size, rows), _at(self.t1, rows)
        nxt = t + size
        return _where(((size > 0) & (nxt > t1)) | ((size < 0) & (nxt < t1)), t1, nxt)

    def shrink(self, rows=None):
        """Halve the step after a rejected one; ``False`` when it fell below ``|t1 - t0| / 2**40`` (stalled).

        >>> s = Linear(0.0, 1.0)
        >>> s.shrink(), s.size
        (True, 0.125)
        """
        new = _at(self.size, rows) / 2
        self._set(new, rows)
        return _not(abs(new) < abs(_at(self.t1, rows) - _at(self.t0, rows)) / 2**40)

    def grow(self, rows=None):
        """Double the step after an accepted one, up to the cap.

        >>> s = Linear(0.0, 1.0, cap=0.4)
        >>> s.grow(); s.size
        0.4
        """
        twice = _at(self.size, rows) * 2
        if self.cap is None:
            self._set(twice, rows)
            return
        cap = _at(self.cap, rows)
        self._set(_where(abs(twice) <= abs(cap), twice, cap), rows)


class Geometric(_Schedule):
    """Multiplicative steps ``t -> t / r`` (towards a smaller ``t1``) or ``t r`` (towards a larger): ``r`` starts at
    ``first``, goes to ``1 + (r - 1) / 2`` on a rejected step and doubles up to ``largest`` on an accepted one;
    stalled when ``r < 1 + smallest``.  ``grow="affine"``: ``r -> 2 r - 1`` instead (doubles ``r - 1``).
    ``t0`` is not used (the steps are relative); scalars or arrays with one ratio per row.

    >>> s = Geometric(1.0, 1e-6, first=10.0, largest=1e3, smallest=1e-12, grow="affine")
    >>> s.advance(1e-2), s.grow(), s.size
    (0.001, None, 19.0)
    """

    def __init__(self, t0, t1, first, largest, smallest, grow="double"):
        self.t1 = t1
        self.size = first if np.ndim(t1) == 0 else np.full(np.shape(t1), first, dtype=float)
        self.largest, self.smallest = largest, smallest
        self.affine = grow == "affine"

    def advance(self, t, rows=None):
        """The next point after ``t``: ``t / r`` towards a smaller ``t1``, ``t r`` towards a larger, never past ``t1``.

        >>> s = Geometric(1.0, 1e-3, first=10.0, largest=100.0, smallest=1e-12)
        >>> s.advance(1.0), s.advance(0.002)
        (0.1, 0.001)
        """
        size, t1 = _at(self.size, rows), _at(self.t1, rows)
        down = t1 < t
        nxt = _where(down, t / size, t * size)
        return _where((down & (nxt < t1)) | ((t1 > t) & (nxt > t1)), t1, nxt)

    def shrink(self, rows=None):
        """``r -> 1 + (r - 1)/2`` after a rejected step; ``False`` when ``r < 1 + smallest`` (stalled).

        >>> s = Geometric(1.0, 1e-3, first=3.0, largest=100.0, smallest=1e-12)
        >>> s.shrink(), s.size
        (True, 2.0)
        """
        new = 1 + (_at(self.size, rows) - 1) / 2
        self._set(new, rows)
        return _not(new < 1 + self.smallest)

    def grow(self, rows=None):
        """``r -> 2 r`` (or ``2 r - 1`` when affine) after an accepted step, up to ``largest``.

        >>> s = Geometric(1.0, 1e-3, first=3.0, largest=5.0, smallest=1e-12)
        >>> s.grow(); s.size
        5.0
        """
        size = _at(self.size, rows)
        new = 2 * size - 1 if self.affine else size * 2
        self._set(np.minimum(new, self.largest) if isinstance(new, np.ndarray) else min(new, self.largest), rows)


def finite_trace(new, ndh) -> bool:
    """The default finiteness check of :func:`follow`: whether the new point ``new`` has no ``nan`` and no entry
    beyond ``1e300`` in modulus (``ndh``, its derivative, is not checked).

    >>> finite_trace([1.0, -2.0], None), finite_trace([1.0, float("nan")], None), finite_trace([1e301], None)
    (True, False, False)
    """
    return all(x == x and abs(x) < 1e300 for x in new)


def in_trust_region(jump, move, size, correction=CORRECTION_FRACTION, move_fraction=MOVE_FRACTION, tighten=1):
    """The trust region of a step, elementwise (NumPy arrays of batched rows, or scalars): whether the correction
    ``jump = |h' - pred|`` is within ``correction size`` and the move ``|h' - h|`` within ``move_fraction size``
    (``size = 1 + |h|``), both ``tighten`` times tighter on the checking pass.

    ``move=None``: near the predictor only -- the test of a Newton finish that must stay near the end of
    the path it was predicted from (``correction``: the caller's fraction).  A ``nan`` is outside.

    >>> in_trust_region(0.1, 0.2, 2.0), in_trust_region(0.1, 0.6, 2.0), in_trust_region(0.1, 0.2, 2.0, tighten=3)
    (True, False, False)
    >>> in_trust_region(float("nan"), None, 2.0)
    False
    """
    near = jump * tighten <= size * correction
    if move is None:
        return near
    return near & (move * tighten <= size * move_fraction)


def follow(correct, h, dh, t0, t1, schedule, ctx: NumberContext, *, correction=CORRECTION_FRACTION,
           move=MOVE_FRACTION, tighten=1, max_steps=600, catch=(ArithmeticError, ValueError),
           finite=finite_trace, stalled=None, too_many=None, on_step=None, derivative=None):
    """Follow the solution ``h`` (a list, with its derivative ``dh`` in ``t``) from ``t0`` to ``t1``; returns
    ``(h, dh)`` at ``t1``.

    Parameters
    ----------
    correct : callable
        ``correct(pred, t) -> (h, dh)``, the Newton corrector; its exceptions in ``catch`` reject the step.
    schedule : Linear or Geometric
        The step sizes; ``max_steps``: the most steps, accepted or not.
    ctx : NumberContext
        Its norm measures the distances.
    correction, move, tighten
        The trust region (:func:`in_trust_region`; ``move=None``: no bound near the previous point).
    finite, stalled, too_many, on_step, derivative
        ``finite(h, dh)`` checks the new point; ``stalled(t)`` and ``too_many()`` give the error messages;
        ``on_step(t, h, dh)`` sees each accepted point; ``derivative(h, t)``, where given, is the predictor's
        slope at each accepted point (then ``correct`` may return ``None`` for it).

    Raises
    ------
    ConvergenceError
        The step became too small to make progress, or more than ``max_steps`` steps.

    Examples
    --------
    >>> from symrmt.core.numbers import FLOAT64
    >>> def correct(pred, t):  # h = sqrt(t): Newton on h^2 = t
    ...     h = pred[0]
    ...     for _ in range(30):
    ...         h -= (h * h - t) / (2 * h)
    ...     return [h], [1 / (2 * h)]
    >>> follow(correct, [1.0], [0.5], 1.0, 9.0, Linear(1.0, 9.0), FLOAT64)
    ([3.0], [0.16666666666666666])
    """
    norm = ctx.norm
    t, steps = t0, 0
    while t != t1:
        check_budget()
        steps += 1
        if steps > max_steps:
            raise ConvergenceError(too_many() if too_many else f"took more than {max_steps} steps")
        nxt = schedule.advance(t)
        pred = [a + b * (nxt - t) for a, b in zip(h, dh)]
        try:
            new, ndh = correct(pred, nxt)
            size = 1 + norm(h)
            jump = norm([a - b for a, b in zip(new, pred)])
            dist = None if move is None else norm([a - b for a, b in zip(new, h)])
            ok = bool(in_trust_region(jump, dist, size, correction, move, tighten))
            ok = ok and (finite is None or finite(new, ndh))
        except catch:
            ok = False
        if not ok:
            if not schedule.shrink():
                raise ConvergenceError(stalled(t) if stalled else f"stalled at {float(t):.6g}")
            continue
        t, h, dh = nxt, new, ndh
        if derivative is not None:
            dh = derivative(h, t)
        if on_step is not None:
            on_step(t, h, dh)
        schedule.grow()
    return h, dh


def paths_gap(h, h2):
    """Relative max-norm gap ``max|h - h2| / (1 + max|h|)`` of two end points (sequences).

    >>> paths_gap([1.0, 3.0], [1.0, 3.5]) == 0.5 / 4
    True
    """
    size = 1 + max(abs(x) for x in h)
    return max(abs(x - y) for x, y in zip(h, h2)) / size


def two_pass(path, first=None, agree=PATHS_AGREE, catch=(ArithmeticError, ValueError)):
    """``path(fine=False)``'s end point (or ``first``, when the caller has run it), checked by ``path(fine=True)``;
    returns the first end point.

    Raises :class:`BranchError` when the end points differ by more than ``agree`` (relative, :func:`paths_gap`)
    and :class:`ConvergenceError` when the checking pass fails with an exception in ``catch``; exceptions of the
    first pass propagate (the caller may try another number type).

    >>> two_pass(lambda fine: [1.0, 2.0 + 1e-9 * fine])
    [1.0, 2.0]
    >>> two_pass(lambda fine: [1.0, 2.0 + fine])
    Traceback (most recent call last):
    ...
    symrmt.errors.BranchError: two homotopy paths (coarse and fine steps) end at different fixed points (relative gap 0.333): ...
    """
    h = path(False) if first is None else first
    try:
        h2 = path(True)
    except catch as exc:
        raise ConvergenceError(f"the homotopy reached s = 1, but its checking path (finer steps) "
                               f"failed: {exc}") from None
    gap = paths_gap(h, h2)
    if not gap <= agree:
        raise BranchError(
            f"two homotopy paths (coarse and fine steps) end at different fixed points (relative gap "
            f"{float(gap):.3g}): the continuation jumped between branches; no value is returned"
        )
    return h


def check_polish(h, h0, dps, limit=POLISH_MOVE, nstr=None,
                 what="the homotopy's checked point: it found another root; no value is returned"):
    """The relative max-norm move of a Newton polish ``h0 -> h``, refused above ``limit``: raises
    :class:`BranchError` naming ``dps`` (the working digits) and ending with ``what`` (the point it left);
    ``nstr`` formats the move in the message.

    >>> check_polish([1.0, 2.0000001], [1.0, 2.0], 30, limit=1e-6) < 1e-7
    True
    >>> check_polish([1.0, 2.1], [1.0, 2.0], 30)
    Traceback (most recent call last):
    ...
    symrmt.errors.BranchError: the Newton polish at 30 digits moved 0.0333 (relative) away from the homotopy's checked point: ...
    """
    moved = max(abs(a - b) for a, b in zip(h, h0)) / (1 + max(abs(x) for x in h0))
    if not moved <= limit:
        text = nstr(moved) if nstr is not None else f"{float(moved):.3g}"
        raise BranchError(
            f"the Newton polish at {dps} digits moved {text} (relative) away from {what}"
        )
    return moved
