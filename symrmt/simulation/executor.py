"""Where Monte-Carlo trials run: in this process, or on a Dask cluster; and the trial store in front of both.

This is the one path every simulation of symrmt takes.  A caller describes its trials by a
:class:`TrialSpec` and a parameter key, and gets back one row of numbers per trial (:func:`run_trials`, or
:class:`TrialBatch` for several points at once); :func:`make_executor` decides where they run.

Every trial runs with one BLAS thread (:mod:`symrmt.simulation.blas_threads`, which says
why and when a thread count set in the environment wins): a local cluster is
started with ``OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = 1``;
on an existing cluster, and in this process, each trial limits the BLAS pool to
one thread when ``threadpoolctl`` is installed (otherwise start the workers, or
Python, with those variables set; the ``symrmt`` command sets them itself).

Only the client writes the store, and each trial is committed as soon as it
arrives, so an interrupted run keeps every finished trial and a rerun computes
only the missing ones.
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from symrmt.simulation.blas_threads import BLAS_VARS, one_blas_thread
from symrmt.errors import ClusterError, ParameterError
from symrmt.errors import StaleTrialsWarning  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.progress import progress_bar
from symrmt.simulation.scheduler import as_scheduler, check_workers
from symrmt.simulation.store import canonical, check_values, open_store

__all__ = [
    "DEMO_SPEC",
    "DaskExecutor",
    "StaleTrialsWarning",
    "TrialBatch",
    "TrialSpec",
    "make_executor",
    "run_trials",
    "trial_seed",
]


@dataclass(frozen=True)
class TrialSpec:
    """A kind of trial: ``fn(params, context, seed, j) -> 1-D float array`` under a stable ``name`` and ``version``
    (the store's key), with optionally the ``width(params)`` of every row and the ``bounds`` ``(lo, hi)`` of its
    values (both checked on every row, fresh or stored).

    ``name`` is the stable name under which the store keeps the rows, ``version`` the version of the numerics
    (bump it when a change of the sampling code changes the numbers: old rows are then reported as stale and
    never reused), and ``fn`` a *module-level* function that computes trial ``j`` and returns a 1-D float array
    of a fixed length.  It must draw all its randomness from ``np.random.default_rng(trial_seed(seed, j))``, the
    ``j``-th child of ``SeedSequence(seed)``, so a trial's numbers depend on ``(params, seed, j)`` only, never on
    the executor, the worker count or the number of trials.

    >>> spec = TrialSpec("demo", "1", DEMO_SPEC.fn, width=lambda params: 2, bounds=(-50.0, 50.0))
    >>> rows, _ = run_trials(spec, {"n": 4}, 3, seed=7)
    >>> bool(np.all(rows[1] == np.random.default_rng(trial_seed(7, 1)).standard_normal(2)))  # trial 1: child 1 of the seed
    True
    >>> bool(np.all(run_trials(spec, {"n": 4}, 2, seed=7)[0] == rows[:2]))  # whatever the number of trials
    True
    """

    name: str
    version: str
    fn: Callable
    #: ``width(params) -> int``: the length of every row of a point (checked on every row, fresh or stored)
    width: Callable | None = None
    #: ``(lo, hi)``: the range every value of a row lies in (the errors of ``simulate`` lie in [0, 1])
    bounds: tuple | None = None


def trial_seed(seed: int, j: int) -> np.random.SeedSequence:
    """Child ``j`` of ``SeedSequence(seed)``, built directly (equal to ``SeedSequence(seed).spawn(m)[j]``, any m > j).

    >>> a = np.random.SeedSequence(5).spawn(4)[3].generate_state(2)
    >>> bool(np.all(trial_seed(5, 3).generate_state(2) == a))
    True
    """
    return np.random.SeedSequence(seed, spawn_key=(j,))


def _demo_trial(params, context, seed, j):
    """Two normal draws per trial (the examples of :class:`TrialSpec` and :func:`run_trials`)."""
    return np.random.default_rng(trial_seed(seed, j)).standard_normal(2)


DEMO_SPEC = TrialSpec("demo", "1", _demo_trial)


_WORKER_LIMIT = []  # this process's one_blas_thread(), made at its first Dask trial


def _timed_trial(fn, params, context, seed, j, limit=None):
    """Run one trial; returns ``(j, row, seconds)``.  With one BLAS thread (see :mod:`symrmt.simulation.blas_threads`):
    ``limit`` in this process, or ``"worker"`` on a Dask worker."""
    if limit == "worker":
        if not _WORKER_LIMIT:
            _WORKER_LIMIT.append(one_blas_thread())
        limit = _WORKER_LIMIT[0]
    t0 = time.perf_counter()
    if limit is not None:
        with limit:
            row = fn(params, context, seed, j)
    else:
        row = fn(params, context, seed, j)
    row = np.asarray(row, dtype=np.float64).reshape(-1)
    # a plain buffer of little-endian float64 values goes back (no NumPy object to deserialize); the
    # client checks its length, the trial index and the values (_checked_result)
    return int(j), np.ascontiguousarray(row, dtype="<f8").tobytes(), float(time.perf_counter() - t0)


# ---------------------------------------------------------------------------
# executors
# ---------------------------------------------------------------------------
#: seconds between two looks at the cluster while trials are pending
_POLL_SECONDS = 5.0
#: seconds with pending trials and no worker in the cluster after which the run stops
NO_WORKER_SECONDS = 60.0


class DaskExecutor:
    """Trials on a Dask cluster: a new local one of ``workers`` processes, or the existing one at ``scheduler`` (an
    address or a :class:`~symrmt.simulation.scheduler.Scheduler`); :func:`make_executor` builds one from the
    command line's options.  Use it as a context manager; a local cluster is shut down at exit.

    Raises :class:`ParameterError` when the scheduler's address or terms are refused (before Dask is imported),
    when Dask is not installed, or when no scheduler answers at the address.

    >>> DaskExecutor(scheduler="tcp://10.0.0.5:8786")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --scheduler tcp://10.0.0.5:8786: plain tcp:// to a non-loopback host is refused: ...
    """

    def __init__(self, workers: int | None = None, scheduler=None):
        scheduler = as_scheduler(scheduler)  # the address and its terms, checked before Dask is imported
        if scheduler is None:
            workers = check_workers(workers)
        try:
            # optional dependency (distributed)
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise ParameterError(f"--workers/--scheduler need Dask: pip install 'symrmt[dask]' ({exc})") from exc
        self._cluster = None
        if scheduler is not None:
            try:
                kwargs = {} if scheduler.security is None else {"security": scheduler.security}
                self.client = Client(scheduler.address, timeout="20s", **kwargs)
            except Exception as exc:  # noqa: BLE001 - whatever answers there (not Dask, TLS refused, ...): one line
                raise ParameterError(f"cannot connect to a Dask scheduler at {scheduler.address}: "
                                     f"{type(exc).__name__}: {str(exc)[:200]}") from None
        else:
            # optional dependency (dask)
            import dask

            env = {k: "1" for k in BLAS_VARS}
            # dashboard_address ":0": the scheduler's HTTP server on a free port (None would mean the
            # default 8787, and a warning when another cluster on the machine holds it)
            with dask.config.set({"distributed.nanny.pre-spawn-environ": env}):
                self._cluster = LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True,
                                             dashboard_address=":0", silence_logs=40)
            self.client = Client(self._cluster)

    def scatter(self, obj):
        """Send ``obj`` to every worker once; returns a handle to pass to :meth:`submit`."""
        if obj is None:
            return None
        return self.client.scatter(obj, broadcast=True, hash=False)

    def submit(self, fn, params, context, seed, j):
        """Send trial ``j`` of ``fn`` to the cluster; returns its future."""
        return self.client.submit(_timed_trial, fn, params, context, seed, j, "worker", pure=False)

    def completed(self, futures):
        """Yield ``(j, row, seconds)`` in order of completion, with the future it came from.

        Raises :class:`~symrmt.errors.ClusterError` when the trials still pending can never finish: the
        cluster has had no worker for :data:`NO_WORKER_SECONDS` (all its workers died or were removed).
        """
        # optional dependency (distributed)
        from distributed import wait

        pending = list(futures)
        alone_since = None
        while pending:
            try:
                done, rest = wait(pending, timeout=_POLL_SECONDS, return_when="FIRST_COMPLETED")
            except TimeoutError:
                alone_since = self._check_workers(alone_since, len(pending))
                continue
            alone_since = None
            for fut in done:
                yield fut, fut.result()
            pending = list(rest)

    def _check_workers(self, alone_since, n_pending):
        """``None`` while the cluster has a worker; else when it was first seen without one (raises
        once that is :data:`NO_WORKER_SECONDS` ago)."""
        if self.client.scheduler_info().get("workers"):
            return None
        now = time.monotonic()
        if alone_since is None:
            return now
        if now - alone_since >= NO_WORKER_SECONDS:
            raise ClusterError(f"the Dask cluster has had no worker for {NO_WORKER_SECONDS:g} s, so its "
                               f"{n_pending} pending trial(s) cannot finish; the trials already stored are "
                               "kept: restart the cluster (or run without --workers/--scheduler) and run "
                               "the same command again")
        return alone_since

    def cancel(self, futures):
        """Cancel the trials still pending among ``futures``."""
        self.client.cancel(list(futures))

    def close(self) -> None:
        """Close the client and, when this executor started it, the local cluster."""
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Task:
    __slots__ = ("args",)

    def __init__(self, *args):
        self.args = args


class _InProcess:
    """Trials in this process, one after another (run when collected)."""

    def scatter(self, obj):
        return obj

    def submit(self, fn, params, context, seed, j):
        return _Task(fn, params, context, seed, j)

    def completed(self, tasks):
        limit = one_blas_thread()  # one BLAS thread per trial, when it can be set now (threadpoolctl)
        for task in tasks:
            yield task, _timed_trial(*task.args, limit=limit)

    def cancel(self, tasks):
        pass


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def make_executor(workers=None, scheduler=None):
    """A context manager giving ``None`` (trials in this process) or a :class:`DaskExecutor`.

    ``workers`` (int >= 1, at most :func:`~symrmt.simulation.scheduler.max_workers`, the cores available) starts a
    local cluster; ``scheduler`` (an address such as ``"tcp://127.0.0.1:8786"``, or a
    :class:`~symrmt.simulation.scheduler.Scheduler` for a trusted plain-TCP or a TLS one) connects to a running
    one; give at most one.  ``workers=1`` or ``None`` with no scheduler means in-process.  A scheduler is trusted
    code (Dask's protocol lets it run code in the client).  Raises :class:`ParameterError` for
    both, for a worker count outside ``1..max_workers()``, and what :class:`DaskExecutor` raises.

    >>> with make_executor(workers=1) as ex:
    ...     print(ex)
    None
    >>> make_executor(workers=2, scheduler="localhost:8786")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: give either --workers (a local Dask cluster) or --scheduler (an existing one), not both
    """
    if workers is not None and scheduler is not None:
        raise ParameterError("give either --workers (a local Dask cluster) or --scheduler (an existing one), not both")
    if scheduler is not None:
        return DaskExecutor(scheduler=as_scheduler(scheduler))
    if workers is None:
        return _Nothing()
    workers = check_workers(workers)
    if workers <= 1:
        return _Nothing()
    return DaskExecutor(workers=workers)


# ---------------------------------------------------------------------------
# batches of points
# ---------------------------------------------------------------------------
class _Point:
    def __init__(self, spec, params, n_trials, seed, context):
        self.spec, self.params, self.n_trials, self.seed, self.context = spec, params, n_trials, seed, context
        self.rows: dict = {}
        self.pid = None
        self.reused = 0
        self.computed = 0
        self.stale: dict = {}
        self.key = dict(params, seed=seed)
        self.width = None if spec.width is None else int(spec.width(params))


def _checked_result(pt, j, result):
    """``(row, seconds)`` of a trial's result as it comes back (from this process or a Dask worker, whose
    answer is not trusted to be well formed): ``(j, bytes of float64, seconds)`` for the trial asked, of
    the point's width, finite and within the kind's bounds."""
    kind = pt.spec.name
    if not (isinstance(result, tuple) and len(result) == 3):
        raise FloatingPointError(f"trial {j} of a {kind!r} point came back as {type(result).__name__}, not "
                                 "(index, float64 buffer, seconds)")
    j_got, data, secs = result
    if isinstance(j_got, bool) or not isinstance(j_got, int) or j_got != j:
        raise FloatingPointError(f"trial {j} of a {kind!r} point came back as trial {j_got!r}")
    if not isinstance(data, bytes) or not data or len(data) % 8:
        size = f"{len(data)} bytes" if isinstance(data, bytes) else type(data).__name__
        raise FloatingPointError(f"trial {j} of a {kind!r} point came back as {size}, not a buffer of float64 values")
    if isinstance(secs, bool) or not isinstance(secs, float) or not secs == secs:
        raise FloatingPointError(f"trial {j} of a {kind!r} point came back with a time of {secs!r}")
    row = np.frombuffer(data, dtype="<f8").astype(np.float64)
    if pt.width is not None and row.size != pt.width:
        raise FloatingPointError(f"trial {j} of a {kind!r} point returned {row.size} values, expected {pt.width}")
    check_values(row, j, kind, pt.spec.bounds)
    return row, secs


class _Borrowed:
    """A caller's progress bar, used without closing it."""

    def __init__(self, bar):
        self.bar = bar

    def __enter__(self):
        return self.bar

    def __exit__(self, *exc):
        return None


class TrialBatch:
    """Several points' trials run together, with one store, one executor and one progress bar: :meth:`add` each
    point, :meth:`start` sends every missing trial, :meth:`results` collects ``(rows, info)`` per point.

    Parameters
    ----------
    store : path, TrialStore or None
    executor : DaskExecutor or None (in this process)
    progress : bool or None (see :class:`symrmt.progress.Progress`)
    desc : str, the progress bar's label

    Examples
    --------
    >>> batch = TrialBatch()
    >>> batch.add(DEMO_SPEC, {"n": 4}, 3, seed=7), batch.add(DEMO_SPEC, {"n": 4}, 2, seed=8)
    (0, 1)
    >>> batch.add(DEMO_SPEC, {"n": 4}, 3, seed=7), batch.total  # the same point twice: computed once
    (0, 5)
    >>> [(rows.shape, info["trials_computed"]) for rows, info in batch.results()]
    [((3, 2), 3), ((2, 2), 2)]
    """

    def __init__(self, store=None, executor=None, progress=None, desc: str = "trials"):
        self._store_arg = store
        self.executor = executor
        self.progress = progress
        self.desc = desc
        self.points: list[_Point] = []
        self._index: dict = {}
        self._pending = None

    def add(self, spec: TrialSpec, params: dict, n_trials: int, seed: int, context=None) -> int:
        """Add a point; returns its index in :meth:`results`."""
        if not isinstance(spec, TrialSpec):
            raise ParameterError(f"spec must be a TrialSpec, got {type(spec).__name__}")
        if self._pending is not None:
            raise ParameterError("add every point before start()")
        ident = (spec.name, spec.version, canonical(params), int(seed), int(n_trials))
        if ident in self._index:  # the same point twice: computed once
            return self._index[ident]
        self.points.append(_Point(spec, params, int(n_trials), int(seed), context))
        self._index[ident] = len(self.points) - 1
        return len(self.points) - 1

    def start(self) -> TrialBatch:
        """Read the store and send every missing trial to the executor (Dask: runs in the background)."""
        if self._pending is not None:
            return self
        self._store, self._owned = open_store(self._store_arg)
        try:
            ex = self.executor if self.executor is not None else _InProcess()
            self._ex = ex
            tasks = {}
            for pt in self.points:
                if self._store is not None:
                    pt.pid = self._store.point(pt.spec.name, pt.spec.version, pt.key)
                    pt.rows = self._store.trials(pt.pid, below=pt.n_trials, width=pt.width,
                                                 bounds=pt.spec.bounds, kind=pt.spec.name)
                    pt.reused = len(pt.rows)
                    pt.stale = self._store.stale(pt.spec.name, pt.spec.version, pt.key)
                    if pt.stale:
                        warnings.warn(
                            f"the store {self._store.path} holds {sum(pt.stale.values())} trial(s) of this "
                            f"{pt.spec.name!r} point from older numerics (version {', '.join(sorted(pt.stale))}, now "
                            f"{pt.spec.version}); they are not reused", StaleTrialsWarning, stacklevel=3)
                missing = [j for j in range(pt.n_trials) if j not in pt.rows]
                if missing:
                    ctx = ex.scatter(pt.context)
                    for j in missing:
                        tasks[ex.submit(pt.spec.fn, pt.params, ctx, pt.seed, j)] = (pt, j)
            self._pending = tasks
        except BaseException:
            self._close_store()
            raise
        return self

    def _close_store(self):
        if getattr(self, "_owned", False) and self._store is not None:
            self._store.close()
            self._store = None

    def close(self) -> None:
        """Give up what was not collected: cancel the pending trials, close the store (if opened here)."""
        if self._pending is not None and getattr(self, "_out", None) is None:
            self._ex.cancel(self._pending)
        self._close_store()

    @property
    def total(self) -> int:
        """The number of trials of all points."""
        return sum(pt.n_trials for pt in self.points)

    def results(self, bar=None) -> list:
        """``(rows, info)`` per point, in the order added (runs :meth:`start` if needed).

        ``bar``: a progress bar (:func:`symrmt.progress.progress_bar`) to advance by one per trial (reused ones
        at once) instead of a bar of the batch's own.  Calling again returns the same results.
        """
        if getattr(self, "_out", None) is not None:
            return self._out
        self.start()
        try:
            with (_Borrowed(bar) if bar is not None else progress_bar(self.total, self.desc, enabled=self.progress)) as bar:
                bar.update(sum(pt.reused for pt in self.points))
                for task, result in self._ex.completed(list(self._pending)):
                    pt, j = self._pending[task]
                    row, secs = _checked_result(pt, j, result)
                    pt.rows[j] = row
                    pt.computed += 1
                    if self._store is not None:
                        self._store.add(pt.pid, j, row, secs)
                    bar.update()
        except BaseException:
            self._ex.cancel(self._pending)
            raise
        finally:
            self._close_store()
        out = []
        for pt in self.points:
            widths = {r.size for r in pt.rows.values()}
            if len(widths) > 1:
                raise FloatingPointError(f"the trials of a {pt.spec.name!r} point returned rows of lengths {widths}")
            rows = np.array([pt.rows[j] for j in range(pt.n_trials)], dtype=np.float64)
            info = {"trials_computed": pt.computed, "trials_reused": pt.reused,
                    "trials_stale": sum(pt.stale.values())}
            out.append((rows, info))
        self._out = out
        return out


def run_trials(spec: TrialSpec, params: dict, n_trials: int, seed: int, store=None, executor=None, context=None,
               progress=None, desc: str = "trials"):
    """Trials ``0 .. n_trials-1`` of one point of ``spec``: ``(rows, info)``, ``rows`` a ``(n_trials, width)``
    float64 array and ``info`` the counts ``trials_computed``, ``trials_reused`` and ``trials_stale``.

    ``params`` is a JSON-able dict with exact values (rationals as strings, see
    :func:`symrmt.simulation.store.exact`); it is the store key, together with ``spec.name``, ``spec.version`` and
    ``seed``, and what the workers receive: they rebuild any arrays from it.  ``context`` carries what cannot be a
    key (a NumPy callable ``f``, an explicit weight matrix): it is sent to each worker once, so the key must
    already name it (e.g. ``params["f"]``).  ``store`` (a path or :class:`~symrmt.simulation.store.TrialStore`)
    keeps and reuses finished trials; ``executor`` (:func:`make_executor`) decides where they run; ``progress``
    and ``desc`` drive the progress bar.  Raises :class:`ParameterError` for a spec that is not a
    :class:`TrialSpec`, and the store's errors for a row of the wrong width, not finite or out of bounds.

    >>> rows, info = run_trials(DEMO_SPEC, {"n": 4}, 3, seed=7)
    >>> rows.shape, info["trials_computed"], info["trials_reused"]
    ((3, 2), 3, 0)
    """
    batch = TrialBatch(store=store, executor=executor, progress=progress, desc=desc)
    batch.add(spec, params, n_trials, seed, context)
    return batch.results()[0]


def report_stale(info: dict, stream=None) -> None:
    """Write one line to ``stream`` (default stderr) when ``info`` (from :func:`run_trials`) counts stale trials
    that were skipped; nothing otherwise.

    >>> import io
    >>> out = io.StringIO()
    >>> report_stale({"trials_stale": 2}, out); report_stale({"trials_stale": 0}, out)
    >>> print(out.getvalue(), end="")
    symrmt: 2 stored trial(s) from an older simulator version were not reused
    """
    if info.get("trials_stale"):
        print(f"symrmt: {info['trials_stale']} stored trial(s) from an older simulator version were not reused",
              file=sys.stderr if stream is None else stream)
