"""The limits on user input (:data:`LIMITS`), their errors, and the package's one time limit
(:func:`run_limited`)."""

from __future__ import annotations

import multiprocessing
import numbers
import signal
import sys
import threading

from symrmt.errors import ParameterError
from symrmt.errors import ParseLimitError, TimeLimitExceeded  # noqa: F401  (defined in symrmt.errors, importable here)

LIMITS = {
    # characters in one text input (an expression, a number, a --where item, a Gram entry)
    "chars": 4000,
    # digits in one numeric literal (mantissa; 1100 > the largest --digits, so any value printed
    # by symrmt can be typed back)
    "literal_digits": 1100,
    # |decimal exponent| of a literal (1e-400 is read; 1e999999999 is refused before any work)
    "literal_exponent": 1000,
    # |exponent| of a power with a numeric exponent (t**1000 is read, t**10000 is not)
    "exponent": 1000,
    # decimal digits of a number built from literals by powers (10**1000 is the largest)
    "magnitude": 10000,
    # nodes of one syntax tree, and its nesting depth
    "nodes": 1000,
    "depth": 60,
    # --digits of any verb: above it, mpmath and Python's int/str conversions grow
    # quadratically (and Python refuses int<->str conversions above 4300 digits);
    # 1000 digits of E_A cost seconds, 4000 would cost minutes
    "digits": 1000,
    # largest Hermite index k (hermite --k); the symbolic Gaussian moments grow like k! and
    # quadrature needs about k/2 extra digits
    "hermite_k": 60,
    # for an f without closed-form Gaussian expectations (tanh, sigmoid, softplus): the working
    # digits of its certified trapezoidal rule on the whole line (all a_k share its nodes; tanh at
    # 400 digits about 2 s, at 500 about 7 s), and the working digits and largest k of the certified
    # tanh-sinh quadrature used where f has kinks or its mass lies far from 0 (Abs(tanh(t)) - 1/2 at
    # 55 digits or k = 10 about 10 s on a loaded machine, tanh at 200 digits a minute)
    "trapezoid_digits": 400,
    "quadrature_digits": 60,
    "quadrature_k": 10,
    # largest rank r of a low-rank geometry (its Gram matrix is (2r+1) x (2r+1)); one limit
    # point costs about 6.5 s of CPU at r = 4, 12 s at r = 6 and 21 s at r = 8 (measured), and
    # the cost grows about like r^2
    "rank": 8,
    # length p of the vectors of a .npy geometry (their exact Gram matrix is formed in integers:
    # about 0.5 s at p = 1e6 for r = 1)
    "vector_length": 1_000_000,
    # largest number of gamma values in one call
    "gammas": 1000,
    # points of one certified (mpmath) sweep grid (the product of its axes) and of one crossings scan
    "points": 10000,
    # points of one float64 sweep grid (sweep fast=True / --fast): its peak memory is about 2.3 kB
    # per point (measured: 360 000 points of a rank-one grid, 0.8 GB and 9 s), so 10^6 points
    # need about 2.3 GB
    "fast_points": 1_000_000,
    # unknowns of one trace-engine fixed point (each trace, and each quadratic form's bulk, is solved
    # on its own, so the cap applies to each part, not to their total): the
    # solve grows about like its cube (measured: 50 unknowns 0.9 s, 98 unknowns 3.5 s,
    # 128 unknowns 22 s on a loaded 2-core machine); (Z.T*Z/n)**16 would need 512
    "unknowns": 100,
    # unknowns of a polynomial expression (no inverse) whose fixed point passes "unknowns" and is
    # summed as a finite series instead (symrmt.engine.solve.moments); the series costs about the fourth
    # power of the pencil size (measured on a loaded 2-core machine: 289 unknowns milliseconds,
    # 4489 about 4 s, 17161 more than a minute)
    "series_unknowns": 5000,
    # nodes of one engine expression written out as a tree: every --let name replaced by its
    # expression and every matrix power by its factors (a chain of lets that squares a matrix each
    # time doubles it at every step: 8 such lets write out 256 copies); checked on every let and
    # every expression before any other work
    "expanded_nodes": 2000,
    # seconds for parsing and building one input (LaTeX included)
    "time": 5.0,
    # seconds of one trace-engine solve (one point of Model.limit, Model.sweep's certified path,
    # symrmt trace and trace-sweep; one point of a density): past it the solve is stopped with an
    # error naming its stage (homotopy, continuation, Newton polish, certification); a note names
    # the stage after 15 s on the command line
    "solve_seconds": 60.0,
}

#: significant digits kept when an irrational input (such as ``sqrt(2)``) becomes a rational:
#: more than any precision symrmt can be asked for (``LIMITS["digits"]``)
IRRATIONAL_DIGITS = LIMITS["digits"] + 20


# ---------------------------------------------------------------------------
# the one time limit
# ---------------------------------------------------------------------------
class _Alarm(BaseException):
    """Raised by SIGALRM inside a limited computation (a BaseException, so that SymPy's
    ``except Exception`` clauses do not swallow it)."""


_ACTIVE = threading.local()

#: seconds after which an alarm swallowed by Python is raised again
_REFIRE_SECONDS = 0.001


class _AlarmRefire:
    """The ``sys.unraisablehook`` of a limited computation.

    Python cannot propagate an exception raised where it calls back into Python code from C: a
    garbage-collector callback, a ``weakref.finalize`` function, a ``__del__`` method.  It hands it to
    ``sys.unraisablehook`` and carries on.  An alarm that lands there would be lost and the time limit
    would not stop the computation; this hook drops it and raises the alarm again a moment later, in
    the computation itself.  Every other unraisable exception goes to the hook that was installed
    before."""

    def __init__(self, previous):
        self.previous = previous

    def __call__(self, unraisable):
        if isinstance(unraisable.exc_value, _Alarm) or unraisable.exc_type is _Alarm:
            if getattr(_ACTIVE, "on", False):
                signal.setitimer(signal.ITIMER_REAL, _REFIRE_SECONDS)
            return
        self.previous(unraisable)


def _child(conn, fn, args):
    try:
        value = ("ok", fn(*args))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        value = ("error", exc)
    try:
        conn.send(value)
    except Exception:  # noqa: BLE001 - an unpicklable result or exception: send its text
        conn.send(("error", ArithmeticError(f"{type(value[1]).__name__}: {value[1]}")))
    finally:
        conn.close()


def run_limited(fn, args=(), seconds: float = LIMITS["time"], *, what: str = "computation",
                isolate: bool = False, error=TimeLimitExceeded):
    """``fn(*args)``, stopped after ``seconds`` with ``error`` (default :class:`TimeLimitExceeded`).

    This is the package's one time limit.  With ``isolate=True`` (and ``fork`` available, in a
    process with one thread) ``fn`` runs in a forked child that is killed on time: this stops even
    a long C-level operation; the result and any exception must pickle.  Otherwise, on the main
    thread, a ``SIGALRM`` timer interrupts ``fn`` between Python bytecodes; elsewhere ``fn`` runs in
    a daemon thread that is abandoned on time.  A call nested in another limited call runs under
    the outer limit.

    Parameters
    ----------
    fn, args : the computation.
    seconds : float
        The limit; must be positive and finite.
    what : str
        Named in the error.
    isolate : bool
        Run in a killable child process where possible.
    error : type
        The exception class raised on time.

    Examples
    --------
    >>> run_limited(sum, ([1, 2, 3],), 5.0)
    6
    >>> import time
    >>> run_limited(time.sleep, (5,), 0.2, what="the nap")
    Traceback (most recent call last):
    ...
    symrmt.errors.TimeLimitExceeded: the nap exceeded its time limit of 0.2 s
    """
    if not (seconds > 0 and seconds < float("inf")):
        raise ParameterError(f"time limit must be positive and finite, got {seconds!r}")
    message = f"{what} exceeded its time limit of {seconds:g} s"
    if isolate and "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1 \
            and not getattr(_ACTIVE, "on", False):
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(child, fn, args), daemon=True)
        proc.start()
        child.close()
        try:
            if not parent.poll(seconds):
                raise error(message + " (killed)")
            try:
                status, value = parent.recv()
            except EOFError:
                raise error(f"{what} died without an answer") from None
        finally:
            if proc.is_alive():
                proc.kill()
            proc.join()
            parent.close()
        if status == "error":
            raise value
        return value
    if getattr(_ACTIVE, "on", False):
        return fn(*args)
    main = threading.current_thread() is threading.main_thread()
    if main and hasattr(signal, "setitimer") and signal.getitimer(signal.ITIMER_REAL)[0] == 0:

        def handler(signum, frame):
            raise _Alarm

        old = signal.signal(signal.SIGALRM, handler)
        old_hook = sys.unraisablehook
        sys.unraisablehook = _AlarmRefire(old_hook)
        _ACTIVE.on = True
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                return fn(*args)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Alarm:
            raise error(message) from None
        finally:
            _ACTIVE.on = False
            sys.unraisablehook = old_hook
            signal.signal(signal.SIGALRM, old)
    box = {}

    def target():
        _ACTIVE.on = True
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(seconds)
    if th.is_alive():
        raise error(message + " (abandoned)")
    if "error" in box:
        raise box["error"]
    return box["value"]


# ---------------------------------------------------------------------------
# counts
# ---------------------------------------------------------------------------
def check_digits(digits, what: str = "digits") -> int:
    """``digits`` as an int in ``[1, LIMITS["digits"]]``.

    >>> check_digits(5000)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParseLimitError: digits = 5000 is above the limit 1000 (LIMITS['digits'])
    """
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral):  # NumPy integers are fine
        raise ParameterError(f"{what} must be an integer, got {digits!r}")
    digits = int(digits)
    if digits < 1:
        raise ParameterError(f"{what} must be >= 1, got {digits}")
    if digits > LIMITS["digits"]:
        raise ParseLimitError(f"{what} = {digits} is above the limit {LIMITS['digits']} (LIMITS['digits'])")
    return digits


def check_count(n: int, limit_name: str, what: str) -> int:
    """Refuse ``n`` above ``LIMITS[limit_name]`` (number of gammas, Hermite k, rank r).

    >>> check_count(2000, "gammas", "number of gamma values")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParseLimitError: number of gamma values = 2000 is above the limit 1000 (LIMITS['gammas'])
    """
    if n > LIMITS[limit_name]:
        raise ParseLimitError(f"{what} = {n} is above the limit {LIMITS[limit_name]} (LIMITS[{limit_name!r}])")
    return n

