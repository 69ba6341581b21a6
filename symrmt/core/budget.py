"""The wall-clock budget of one solve: a solve that runs past its stated time is stopped, and the
error names the stage it was in.

A solve opens a budget with :func:`solve_budget`; a budget opened inside another runs under the outer one.  The solvers name what they do with :func:`stage` and call :func:`check` in
their loops (each Newton step, each continuation step): past the deadline, :func:`check` raises
an internal signal that no solver's ``except`` clause catches (it is a ``BaseException``, so no
fallback route is tried after it), and :func:`solve_budget` turns it into :class:`SolveTimeLimit`
(a :class:`~symrmt.errors.SolverError`: exit 3 on the command line) naming the stage, the time and
the limit.  The check is cooperative: one long step (a large factorization) finishes before it is
seen.  Outside a budget :func:`check` does nothing.

While a budget runs past :data:`NOTE_AFTER_S` seconds, a one-line note goes to :data:`NOTE_STREAM`
when one is set (the command line sets ``sys.stderr``): which stage is running and when it will be
stopped, so that no run is silent for long.

>>> import time
>>> with solve_budget(0.05, "the demo"):
...     with stage("the demo loop"):
...         while True:
...             time.sleep(0.01)
...             check()
Traceback (most recent call last):
...
symrmt.errors.SolveTimeLimit: the demo: stopped in the demo loop after ... s, the time limit of one solve (0.05 s here; LIMITS['solve_seconds'] is the default); the point is not certified
"""

from __future__ import annotations

import contextlib
import threading
import time

from symrmt.errors import SolveTimeLimit

__all__ = ["SolveTimeLimit", "solve_budget", "stage", "check", "paused", "NOTE_AFTER_S", "active"]

#: seconds after which a running solve says, once, what it is doing (when :data:`NOTE_STREAM` is set)
NOTE_AFTER_S = 15.0
#: where that note goes (``None``: nowhere; the command line sets ``sys.stderr``)
NOTE_STREAM = None


class _Expired(BaseException):
    """Raised by :func:`check` past the deadline (a BaseException: no solver's fallback catches it)."""

    def __init__(self, where):
        super().__init__(where)
        self.where = where


_STATE = threading.local()


def active() -> bool:
    """Whether the calling thread runs inside a :func:`solve_budget`.

    >>> active()
    False
    >>> with solve_budget(60):
    ...     active()
    True
    """
    return getattr(_STATE, "deadline", None) is not None


@contextlib.contextmanager
def solve_budget(seconds: float, what: str = "the solve"):
    """Run the block under a deadline of ``seconds`` (a budget opened inside another runs under the outer one);
    ``what`` names the solve in the error.

    Raises :class:`SolveTimeLimit` naming ``what``, the stage and the time when :func:`check` sees the deadline
    pass (the module's example shows one).

    >>> with solve_budget(60, "a quick solve"):
    ...     check()  # well inside the minute: nothing happens
    ...     2 + 2
    4
    """
    if active():
        yield
        return
    start = time.monotonic()
    _STATE.deadline, _STATE.start, _STATE.stages, _STATE.noted = start + seconds, start, [], False
    _STATE.what, _STATE.seconds = what, seconds
    try:
        yield
    except _Expired as exc:
        elapsed = time.monotonic() - start
        raise SolveTimeLimit(
            f"{what}: stopped in {exc.where} after {elapsed:.3g} s, the time limit of one solve "
            f"({seconds:g} s here; LIMITS['solve_seconds'] is the default); the point is not certified") from None
    finally:
        _STATE.deadline = None


@contextlib.contextmanager
def stage(name: str):
    """Name the stage the block runs (for the error and the note); stages nest, and the error names them joined
    by ``" / "``.  Outside a budget it does nothing.

    >>> with solve_budget(0.0, "the demo"), stage("setup"), stage("Newton"):
    ...     check()
    Traceback (most recent call last):
    ...
    symrmt.errors.SolveTimeLimit: the demo: stopped in setup / Newton after ... s, ...
    """
    stages = getattr(_STATE, "stages", None)
    if not active() or stages is None:
        yield
        return
    stages.append(name)
    try:
        yield
    finally:
        if stages and stages[-1] == name:
            stages.pop()


@contextlib.contextmanager
def paused():
    """Run the block outside the budget (its time is not counted): a stage with limits of its own, such as a
    proof, inside a budgeted call.

    >>> import time
    >>> with solve_budget(0.1):
    ...     with paused():
    ...         time.sleep(0.12)  # longer than the budget, but not counted
    ...     check()
    ...     "not stopped"
    'not stopped'
    """
    deadline = getattr(_STATE, "deadline", None)
    if deadline is None:
        yield
        return
    start = time.monotonic()
    _STATE.deadline = None
    try:
        yield
    finally:
        spent = time.monotonic() - start
        _STATE.deadline = deadline + spent
        _STATE.start += spent


def _where() -> str:
    stages = getattr(_STATE, "stages", None) or []
    return " / ".join(stages) if stages else "the solve"


def check() -> None:
    """Stop the solve once its deadline has passed: inside a :func:`solve_budget`, past the deadline, raises the
    internal signal that the budget turns into :class:`SolveTimeLimit`; outside a budget does nothing.

    >>> check() is None
    True
    """
    deadline = getattr(_STATE, "deadline", None)
    if deadline is None:
        return
    now = time.monotonic()
    if now > deadline:
        raise _Expired(_where())
    if not _STATE.noted and NOTE_STREAM is not None and now - _STATE.start > NOTE_AFTER_S:
        _STATE.noted = True
        try:
            print(f"symrmt: {_STATE.what} is still running after {now - _STATE.start:.0f} s ({_where()}); "
                  f"it is stopped at {_STATE.seconds:g} s (LIMITS['solve_seconds'])", file=NOTE_STREAM, flush=True)
        except (OSError, ValueError):
            pass
