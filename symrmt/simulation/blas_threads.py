"""One BLAS thread for Monte-Carlo trials (standard library only: importing this module loads nothing else).

A trial of symrmt is a handful of dense products, factorizations and
eigen-decompositions of matrices of size ``n`` (hundreds to a few thousand).
With OpenBLAS's default of one thread per CPU, a trial in a process that shares
its cores with other work spends most of its time waiting for its own BLAS
threads: measured on a 2-vCPU machine under load, one BLAS thread was faster at
every size tried (``docs/performance.md``, ``benchmarks/blas_threads.py``).
Parallel speed comes from running trials side by side (``--workers N``, one
BLAS thread each), not from threads inside one trial.

So trials use one BLAS thread, unless the environment sets a thread count
itself (any of :data:`BLAS_VARS`, e.g. ``OPENBLAS_NUM_THREADS=4``): that choice
is always respected.  How it is applied:

* the ``symrmt`` command sets :data:`BLAS_VARS` to ``1`` at its start, before
  NumPy is loaded (:func:`one_thread_env_before_numpy`), so every BLAS call of
  the command runs on one thread (``symrmt bench`` is left alone: it states the
  thread count of each of its measurements itself);
* in a Python session NumPy is usually loaded already, and an environment
  variable no longer changes anything; then the in-process trials of the
  executor run under :func:`one_blas_thread`, which limits the BLAS pool with
  ``threadpoolctl`` for the duration of each trial when that package is
  installed (``pip install threadpoolctl``), and does nothing otherwise (start
  Python with ``OPENBLAS_NUM_THREADS=1`` to get the same effect);
* Dask workers started by ``--workers N`` get ``1`` in their environment, and on
  an existing cluster each trial is limited as above.
"""

from __future__ import annotations

import os
import sys

__all__ = ["BLAS_VARS", "env_sets_threads", "one_blas_thread", "one_thread_env_before_numpy"]

#: The environment variables that set the thread count of the BLAS libraries NumPy may load.
BLAS_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
             "NUMEXPR_NUM_THREADS")


def env_sets_threads(environ=None) -> bool:
    """Whether the environment sets a BLAS thread count (then symrmt leaves the count alone).

    >>> env_sets_threads({"OPENBLAS_NUM_THREADS": "4"}), env_sets_threads({})
    (True, False)
    """
    env = os.environ if environ is None else environ
    return any(env.get(k, "").strip() for k in BLAS_VARS)


def one_thread_env_before_numpy() -> bool:
    """Set :data:`BLAS_VARS` to ``1`` in ``os.environ`` when NumPy is not loaded yet and the environment sets no
    count; returns whether it did.  Once NumPy is loaded its BLAS pool has its size, and this does nothing (see
    :func:`one_blas_thread`).

    >>> import numpy
    >>> one_thread_env_before_numpy()  # NumPy is loaded: too late, nothing is set
    False
    """
    if "numpy" in sys.modules or env_sets_threads():
        return False
    os.environ.update({k: "1" for k in BLAS_VARS})
    return True


class _Limit:
    """Reusable context manager: one BLAS thread while inside (threadpoolctl), or nothing."""

    def __init__(self, controller):
        self._controller = controller
        self._active = []

    def __enter__(self):
        if self._controller is not None:
            self._active.append(self._controller.limit(limits=1, user_api="blas"))
        return self

    def __exit__(self, *exc):
        if self._controller is not None:
            self._active.pop().restore_original_limits()
        return None


def one_blas_thread() -> _Limit:
    """A context manager, reusable for many trials, that runs its body with one BLAS thread.

    It uses ``threadpoolctl`` when installed and the environment sets no thread count
    (:func:`env_sets_threads`); otherwise it does nothing.  Make it after NumPy is loaded
    (the libraries are looked up once, here), then enter it around each trial: entering
    costs a fraction of a millisecond.  Raises nothing.

    >>> import numpy as np
    >>> limit = one_blas_thread()
    >>> for _ in range(2):  # one object, entered around each trial
    ...     with limit:
    ...         float((2 * np.eye(3) @ np.ones(3)).sum())
    6.0
    6.0
    """
    if env_sets_threads():
        return _Limit(None)
    try:
        # optional dependency (threadpoolctl)
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return _Limit(None)
    return _Limit(ThreadpoolController())
