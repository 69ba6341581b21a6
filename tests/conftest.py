"""Test-session settings.

The simulations are BLAS-bound and small (n <= 512); one BLAS thread per process
avoids oversubscription on a shared 2-core machine (set before NumPy is imported).
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# The compiled-code disk cache (symrmt.codegen.codecache) goes to a throw-away folder, never the
# user's ~/.cache, unless the caller chose one.
if "SYMRMT_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _cache = tempfile.mkdtemp(prefix="symrmt-test-cache-")
    os.environ["SYMRMT_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, True)


import mpmath  # noqa: E402
import pytest  # noqa: E402


#: the doctests that take seconds each (a simulation with its finite-size curve, a benchmark worker, kernels
#: from a given weight matrix): in the slow tier, with the tests that take seconds; the whole suite runs them
SLOW_DOCTESTS = frozenset({
    "symrmt.figures.finite_size.finite_size_data",
    "symrmt.bench.weights.worker",
    "symrmt.engine.kernels.weights.kernel_given",
    "symrmt.engine.kernels.inner_product.kernel",
})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The doctests named in :data:`SLOW_DOCTESTS` (a doctest item is named by its object's dotted path) carry
    the ``slow`` mark, as a doctest has no decorator; first, so that ``-m "not slow"`` sees it.  This file is
    loaded when ``tests/`` is collected, as with the configured ``testpaths`` (``pytest symrmt`` alone runs every
    doctest, marked or not)."""
    for item in items:
        if item.name in SLOW_DOCTESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _mpmath_context_unchanged():
    """Every test leaves mpmath's global working precision as it found it: symrmt raises precision
    only inside ``mpmath.workdps``/``workprec`` blocks, never by setting ``mp.dps`` for good."""
    before = (mpmath.mp.dps, mpmath.mp.prec)
    yield
    after = (mpmath.mp.dps, mpmath.mp.prec)
    if after != before:
        mpmath.mp.prec = before[1]  # restore first, so that one offender does not fail every later test
        pytest.fail(f"mpmath precision changed by this test: (dps, prec) {before} -> {after}", pytrace=False)


@pytest.fixture(autouse=True)
def _no_dask_gc_diagnosis():
    """A Dask worker in this process registers a garbage-collector callback (``distributed.gc``). The
    parser's time limit raises from a SIGALRM handler, and an alarm that lands inside that callback is
    swallowed there as an "unraisable" exception (a warning, so an error under ``-W error``) in whichever
    test happens to run a later parse. The diagnosis only logs long collections, so it is switched off
    after any test that switched it on."""
    yield
    import sys

    gc_mod = sys.modules.get("distributed.gc")
    if gc_mod is not None and getattr(gc_mod, "_gc_diagnosis", None) is not None and gc_mod._gc_diagnosis.enabled:
        gc_mod.disable_gc_diagnosis(force=True)


@pytest.fixture
def dask_cluster():
    """A 2-worker local Dask cluster for one test, started by the package's own code
    (:class:`symrmt.simulation.executor.DaskExecutor` with ``workers=2``: one BLAS thread per worker).
    One per test, not one per session: a cluster idle for minutes in a loaded test process can lose its
    workers, and a later test would then wait on it."""
    pytest.importorskip("distributed")
    from symrmt.simulation.executor import DaskExecutor

    ex = DaskExecutor(workers=2)
    yield ex
    ex.close()


class _Borrowed:
    """The session's cluster lent to one ``make_executor(workers=2)`` call; closing it is a no-op."""

    def __init__(self, cluster, asked, workers=None, scheduler=None):
        assert scheduler is None and workers == 2, (workers, scheduler)
        asked.append(workers)
        self._cluster = cluster

    def __getattr__(self, name):
        return getattr(self._cluster, name)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


@pytest.fixture
def two_workers(dask_cluster, monkeypatch):
    """``simulate(workers=2)`` and ``--workers 2`` run on the session's 2-worker cluster instead of
    starting their own (a cluster takes seconds to start); the list returned holds the worker count
    each ``make_executor`` call asked for, so a test can assert that the code asked for a cluster."""
    from symrmt.simulation import executor

    asked: list = []
    monkeypatch.setattr(executor, "DaskExecutor", lambda **kw: _Borrowed(dask_cluster, asked, **kw))
    yield asked
    assert asked, "the code under test never asked for a Dask cluster"
