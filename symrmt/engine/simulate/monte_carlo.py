r"""Monte-Carlo of a trace-engine expression at finite size (NumPy only).

The trace engine states a model once (dimensions, matrices, an expression);
its theory solves the large-``n`` limit and this module samples the same
expression at a finite ``n``.  It reads a *bound* tree: the engine's
expression tree at numeric parameter values and integer sizes, in which every
number is a Python float (:func:`symrmt.engine.bind` is that boundary; it also
removes every ``diff`` by exact differentiation of the tree,
``d M^{-1} = -M^{-1} (dM) M^{-1}``, so a derivative is simulated exactly, with
no finite difference).  This module imports the standard library, :mod:`symrmt.errors` and the
simulation's executor (:mod:`symrmt.simulation`); never SymPy or mpmath.
It dispatches on ``node.kind`` only, so it does not import the engine either.

The conventions of the random matrices, the drawing and the evaluation of one trial are those of
:mod:`symrmt.engine.simulate.evaluate` (whose public names this module re-exports); a trial travels to
the executor as the plain program of :mod:`symrmt.engine.simulate.trials`.  Each trial draws every random
matrix of the expression once; trial ``j`` uses child ``j`` of
``np.random.SeedSequence(seed).spawn(trials)``.

Example
-------
A bound tree is made by :func:`symrmt.engine.bind`; a minimal hand-made one here (the
normalized trace of ``Z^T Z / 4`` for a ``3 x 4`` Gaussian ``Z``, whose mean is ``3/4``):

>>> from types import SimpleNamespace as NS
>>> p, n = NS(name="p", count=3), NS(name="n", count=4)
>>> Z = NS(kind="gaussian", name="Z", rows=p, cols=n)
>>> ZtZ = NS(kind="product", factors=(NS(kind="transpose", matrix=Z, rows=n, cols=p), Z), rows=n, cols=n)
>>> tree = NS(kind="trace", matrix=NS(kind="scaled", scalar=NS(kind="const", value=0.25), matrix=ZtZ,
...                                   rows=n, cols=n))
>>> r = simulate_trace(tree, trials=2000, seed=1)
>>> bool(abs(r["mean"] - 0.75) < 4 * r["se"]), r["params"]["sizes"]
(True, {'n': 4, 'p': 3})
"""

from __future__ import annotations

import math
from numbers import Integral

from symrmt.errors import ParameterError
from symrmt.engine.simulate.evaluate import (  # noqa: F401  (re-exported: the simulation's public names)
    TraceSimulationError, check_trace_memory, draw_matrices, evaluate, random_matrices,
)
from symrmt.engine.simulate import trials as trace_trials  # read at call time: TRACE_SPEC can be replaced there
from symrmt.simulation.executor import make_executor, run_trials
from symrmt.simulation.memory import TRIAL_BOOKKEEPING, check_memory_bytes
from symrmt.simulation.scheduler import check_workers

__all__ = [
    "TraceSimulationError", "check_trace_memory", "draw_matrices", "evaluate", "random_matrices", "simulate_trace",
]


def _check_int(value, name: str, minimum: int, why: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ParameterError(f"{name} must be >= {minimum}{why}, got {value}")
    return int(value)


def simulate_trace(tree, trials: int = 10, seed: int = 0, progress=None, *, store=None, workers: int = 1,
                   scheduler=None, executor=None, label: dict | None = None) -> dict:
    """Monte-Carlo mean and standard error of a bound scalar tree.

    Parameters
    ----------
    tree : bound scalar tree
        The engine's expression bound to numbers and sizes (:func:`symrmt.engine.bind`).
    trials : int
        Independent draws, ``>= 2`` (a standard error needs two).
    seed : int
        Root seed: trial ``j`` uses child ``j`` of ``np.random.SeedSequence(seed).spawn(trials)``,
        so each trial's value does not depend on the executor, the worker count or ``trials``.
    progress : bool or None
        Progress bar on stderr: ``None`` auto (a terminal, or a run longer than 2 s),
        ``True`` always, ``False`` never.
    store : str, Path or TrialStore, optional (keyword only)
        A trial store (:mod:`symrmt.simulation.store`): trials stored for the same tree, seed
        and :data:`NUMERICS_VERSION` are reused, the missing ones computed and committed one by one.
    workers : int (keyword only)
        ``1``: in this process.  ``> 1``: on a new local Dask cluster of that many processes.
    scheduler : str or Scheduler, optional (keyword only)
        Address of a running Dask scheduler; not together with ``workers > 1``.  A scheduler is
        trusted code: see :class:`symrmt.simulation.scheduler.Scheduler`.
    executor : DaskExecutor, optional (keyword only)
        An executor already started (:func:`symrmt.simulation.executor.make_executor`).
    label : dict, optional (keyword only)
        JSON-able description added to the store key (see :func:`trace_point`).

    Returns
    -------
    dict
        ``{"mean": float, "se": float, "trials": array (trials,), "params": {"trials", "seed", "sizes"},
        "trials_computed", "trials_reused", "trials_stale"}`` with ``se = std(ddof=1) / sqrt(trials)``
        and ``sizes`` the integer size of every dimension.

    Raises
    ------
    TraceSimulationError
        A draw gave a singular matrix or a non-finite value.
    ParameterError
        Fewer than 2 trials, a negative seed, a bad ``workers`` or ``progress``, or arrays that would not
        fit in memory.

    Examples
    --------
    >>> from symrmt.engine import Model, bind
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> r = simulate_trace(bind(m.expr("trace(G*G)/n"), {}, 4), trials=2, seed=0, progress=False)
    >>> r["params"], r["trials_computed"], bool(r["mean"] == r["trials"].mean())
    ({'trials': 2, 'seed': 0, 'sizes': {'n': 4}}, 2, True)
    """
    trials = _check_int(trials, "trials", 2, " (a standard error needs at least two trials)")
    seed = _check_int(seed, "seed", 0)
    workers = check_workers(_check_int(workers, "workers", 1))
    if progress not in (None, True, False):
        raise ParameterError(f"progress must be None, True or False, got {progress!r}")
    point = trace_trials.trace_point(tree, label)
    random_matrices(trace_trials.from_program(point.context["program"]))  # two shapes for one name: refused here
    check_trace_memory(tree)  # before any draw or spawn
    check_memory_bytes(trials * TRIAL_BOOKKEEPING, f"simulate trace, {trials} trials", "results and seed sequences",
                       "lower trials")
    desc = "simulate trace " + " ".join(f"{k}={v}" for k, v in point.sizes.items())
    run = dict(store=store, context=point.context, progress=progress, desc=desc)
    if executor is not None:
        rows, info = run_trials(trace_trials.TRACE_SPEC, point.key, trials, seed, executor=executor, **run)
    else:
        parallel = workers > 1 and scheduler is None
        with make_executor(workers=workers if parallel else None, scheduler=scheduler) as ex:
            rows, info = run_trials(trace_trials.TRACE_SPEC, point.key, trials, seed, executor=ex, **run)
    values = rows[:, 0]
    return {
        "mean": float(values.mean()),
        "se": float(values.std(ddof=1) / math.sqrt(trials)),
        "trials": values,
        "params": {"trials": trials, "seed": seed, "sizes": point.sizes},
        **info,
    }
