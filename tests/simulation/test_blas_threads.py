"""One BLAS thread for the trials (symrmt.simulation.blas_threads): the command sets it before NumPy loads,
a thread count in the environment wins, and threadpoolctl (when installed) limits in-process trials."""

import json
import os
import subprocess
import sys

import pytest

from symrmt.simulation.blas_threads import BLAS_VARS, env_sets_threads

_CLEAN = {k: v for k, v in os.environ.items() if k not in BLAS_VARS}

_PROBE = (
    "import json, os, sys\n"
    "from symrmt.cli.app import main\n"
    "code = main(sys.argv[1:])\n"
    "print(json.dumps({'code': code, 'numpy': 'numpy' in sys.modules,\n"
    "                  'env': {k: os.environ.get(k) for k in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')}}),\n"
    "      file=sys.stderr)\n"
)
#: a verb that loads NumPy and stops at once (the store does not exist: exit 2)
_VERB = ["store", os.path.join(os.path.dirname(__file__), "no-such-store.sqlite")]


def _probe(argv, env):
    res = subprocess.run([sys.executable, "-c", _PROBE, *argv], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(res.stderr.strip().splitlines()[-1])


def test_command_sets_one_thread_before_numpy_loads():
    out = _probe(_VERB, _CLEAN)
    assert out["code"] == 2 and out["numpy"]
    assert out["env"] == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def test_a_thread_count_in_the_environment_wins():
    out = _probe(_VERB, dict(_CLEAN, OPENBLAS_NUM_THREADS="2"))
    assert out["env"] == {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": None}


def test_nothing_is_set_once_numpy_is_loaded(monkeypatch):
    from symrmt.simulation.blas_threads import one_thread_env_before_numpy

    for k in BLAS_VARS:
        monkeypatch.delenv(k, raising=False)
    import numpy  # noqa: F401

    assert one_thread_env_before_numpy() is False
    assert not env_sets_threads()


def test_in_process_trials_run_with_one_blas_thread(monkeypatch):
    """With threadpoolctl installed, each in-process trial sees one BLAS thread, and the count is restored."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numpy as np

    from symrmt.simulation.executor import TrialSpec, run_trials

    for k in BLAS_VARS:
        monkeypatch.delenv(k, raising=False)
    seen = []

    def probe(params, context, seed, j):  # runs in this process: a closure is fine
        seen.append([i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"])
        return np.zeros(1)

    before = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        run_trials(TrialSpec("probe", "1", probe), {}, 2, 0)
        assert all(v == 1 for row in seen for v in row) and seen
    assert [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"] == before
    # a count set in the environment is left alone: the trials see the caller's threads
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    seen.clear()
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        outside = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        run_trials(TrialSpec("probe", "1", probe), {}, 2, 0)
    assert seen and all(row == outside for row in seen), (seen, outside)
