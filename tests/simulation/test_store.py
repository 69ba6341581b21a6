"""The executor and the trial store (symrmt.simulation): one test per promise, at small n.

* a 2-worker local Dask cluster and the in-process default give bit-identical trials;
* a run killed midway keeps its finished trials: the rerun reuses them and computes only the rest;
* more trials on a stored point compute only the new ones;
* rows of an older numerics version are reported, never reused;
* a corrupt or foreign file is refused in one line and left byte-for-byte untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from symrmt.cli.app import main
from symrmt.models.attention.geometry import Geometry
from symrmt.errors import ParameterError
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention import trials as trial_kinds
from symrmt.simulation.executor import StaleTrialsWarning, TrialSpec, make_executor, run_trials
from symrmt.simulation.store import StoreError, TrialStore

pytestmark = pytest.mark.montecarlo

ROOT = Path(__file__).resolve().parents[2]
KW = dict(f=np.tanh, n=48, c=0.5, gammas=[0.1, 1.0], geometry=Geometry(snr=1, wk2=1, wq2=1, wkwq=1), seed=3,
          progress=False)


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _cli(capsys, *args):
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


# 1. Dask and in-process agree bit for bit ----------------------------------------
def test_two_worker_dask_cluster_identical_to_in_process(tmp_path, two_workers):
    a = simulate(trials=6, **KW)
    b = simulate(trials=6, workers=2, **KW)
    for key in ("attention", "ridge"):
        assert np.array_equal(a[key]["mean"], b[key]["mean"])
        assert np.array_equal(a[key]["se"], b[key]["se"])
        assert np.array_equal(a[key]["trials"], b[key]["trials"])
    # the store in between changes nothing either: half the trials stored by Dask, the rest here
    with make_executor(workers=2) as ex:
        simulate(trials=3, store=tmp_path / "s.sqlite", executor=ex, **KW)
    c = simulate(trials=6, store=tmp_path / "s.sqlite", **KW)
    assert (c["trials_reused"], c["trials_computed"]) == (3, 3)
    for key in ("attention", "ridge"):
        assert np.array_equal(a[key]["mean"], c[key]["mean"]) and np.array_equal(a[key]["se"], c[key]["se"])


def test_workers_and_scheduler_are_exclusive():
    with pytest.raises(ParameterError, match="not both"):
        make_executor(workers=2, scheduler="tcp://127.0.0.1:1")


# 2. killed midway, resumed ---------------------------------------------------------
def _count(path) -> int:
    try:
        db = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True, timeout=5)
        try:
            return db.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:  # not created yet
        return 0


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_killed_run_keeps_finished_trials_and_rerun_completes(tmp_path, capsys):
    """A real process, killed with SIGKILL (no chance to clean up) once a few trials are stored.

    SIGKILL is harsher than Ctrl-C: only what was committed survives.  The rerun must
    reuse exactly the trials found in the file and compute exactly the others, so that
    reused + computed = trials (no trial computed twice), and the numbers must equal a
    run without a store.
    """
    store = tmp_path / "kill.sqlite"
    trials = 60
    args = [sys.executable, "-m", "symrmt", "simulate", "--f", "tanh", "--n", "96", "--c", "1", "--gamma", "0.5,2",
            "--trials", str(trials), "--seed", "9", "--store", str(store), "--json"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while _count(store) < 3:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no trial stored within 120 s"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    kept = _count(store)
    assert 3 <= kept < trials, f"the run was not interrupted midway ({kept} of {trials} stored)"

    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout)
    assert res["trials_reused"] == kept > 0
    assert res["trials_computed"] == trials - kept
    assert _count(store) == trials
    with TrialStore.open_existing(store) as st:
        (point,) = st.summary()
    assert point["trials"] == trials
    rc, out, _ = _cli(capsys, *args[3:-3], "--json")  # the same run without a store, in this process
    ref = json.loads(out)
    assert res["attention"] == ref["attention"] and res["ridge"] == ref["ridge"]


# 3. more trials: only the new ones -----------------------------------------------
def test_adding_trials_computes_only_the_new_ones(tmp_path):
    path = tmp_path / "more.sqlite"
    ref = simulate(trials=5, **KW)
    a = simulate(trials=3, store=path, **KW)
    assert (a["trials_computed"], a["trials_reused"]) == (3, 0)
    b = simulate(trials=5, store=path, **KW)
    assert (b["trials_computed"], b["trials_reused"]) == (2, 3)
    c = simulate(trials=4, store=path, **KW)  # fewer: all from the store
    assert (c["trials_computed"], c["trials_reused"]) == (0, 4)
    for key in ("attention", "ridge"):
        assert np.array_equal(b[key]["trials"], ref[key]["trials"])
        assert np.array_equal(c[key]["trials"], ref[key]["trials"][:4])
    # another seed or another parameter is another point
    d = simulate(trials=2, store=path, **dict(KW, seed=4))
    e = simulate(trials=2, store=path, **dict(KW, gammas=[0.1, 1.5]))
    assert d["trials_reused"] == e["trials_reused"] == 0


def test_store_needs_a_name_for_f(tmp_path):
    with pytest.raises(ParameterError, match="f_key"):
        simulate(lambda t: np.tanh(t), n=16, c=1, gammas=[1.0], trials=2, progress=False, store=tmp_path / "s")
    r = simulate(lambda t: np.tanh(t), n=16, c=1, gammas=[1.0], trials=2, progress=False, store=tmp_path / "s",
                 f_key="tanh")
    assert r["trials_computed"] == 2


# 4. an older simulator version is reported, not reused -----------------------------
def test_rows_of_an_older_numerics_version_are_not_reused(tmp_path, capsys):
    path = tmp_path / "old.sqlite"
    pt = trial_kinds.simulate_point(np.tanh, 48, 0.5, [0.1, 1.0], geometry=KW["geometry"], need_key=True)
    # the same point, written by a simulator whose numerics were version "0" (numbers that differ)
    old = TrialSpec("simulate", "0", lambda params, context, seed, j: np.full(4, 0.5))
    run_trials(old, pt.key, 4, 3, store=path, context=pt.context)
    with pytest.warns(StaleTrialsWarning, match="older numerics"):
        r = simulate(trials=4, store=path, **KW)
    assert (r["trials_computed"], r["trials_reused"], r["trials_stale"]) == (4, 0, 4)
    assert not np.any(r["attention"]["trials"] == 0.5)
    assert np.array_equal(r["attention"]["trials"], simulate(trials=4, **KW)["attention"]["trials"])
    # the CLI reports it on stderr and in the JSON
    cli_key = trial_kinds.simulate_point(np.tanh, 64, "1/2", [1], geometry=Geometry(), f_key="expr:tanh(t)").key
    run_trials(old, cli_key, 2, 0, store=path, context=pt.context)
    rc, out, err = _cli(capsys, "simulate", "--f", "tanh", "--n", "64", "--c", "1/2", "--gamma", "1", "--trials",
                        "2", "--store", str(path), "--json")
    assert rc == 0 and json.loads(out)["trials_stale"] == 2
    assert "older simulator version" in err


# 5. a corrupt or foreign file: one line, untouched ----------------------------------
def _damaged_store(tmp_path) -> Path:
    path = tmp_path / "damaged.sqlite"
    simulate(trials=3, store=path, **KW)
    data = bytearray(path.read_bytes())
    assert len(data) >= 3 * 4096
    data[4096:3 * 4096] = os.urandom(2 * 4096)  # pages 2 and 3: the tables' b-trees
    path.write_bytes(bytes(data))
    return path


def _foreign_sqlite(tmp_path) -> Path:
    path = tmp_path / "foreign.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE patients (name TEXT)")
    db.execute("INSERT INTO patients VALUES ('x')")
    db.commit()
    db.close()
    return path


def _text_file(tmp_path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("gamma = 1\n")
    return path


@pytest.mark.parametrize("make", [_damaged_store, _foreign_sqlite, _text_file])
@pytest.mark.parametrize("verb", ["simulate", "store"])
def test_corrupt_or_foreign_file_is_refused_untouched(tmp_path, capsys, make, verb):
    path = make(tmp_path)
    before = _sha(path)
    siblings = sorted(p.name for p in tmp_path.iterdir())
    if verb == "simulate":
        args = ["simulate", "--f", "tanh", "--n", "16", "--c", "1", "--gamma", "1", "--trials", "2",
                "--store", str(path)]
    else:
        args = ["store", str(path)]
    rc, out, err = _cli(capsys, *args)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "not a symrmt trial store" in err and str(path) in err
    assert _sha(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == siblings
    with pytest.raises(StoreError):
        TrialStore(path)
    assert _sha(path) == before


# the listing ------------------------------------------------------------------------
def test_store_listing(tmp_path, capsys):
    path = tmp_path / "list.sqlite"
    simulate(trials=3, store=path, **KW)
    simulate(trials=2, store=path, **dict(KW, seed=5))
    rc, out, err = _cli(capsys, "store", str(path), "--json")
    assert rc == 0
    rep = json.loads(out)
    assert rep["trials"] == 5 and [p["trials"] for p in rep["points"]] == [3, 2]
    assert rep["points"][0]["params"]["c"] == "1/2" and rep["points"][1]["params"]["seed"] == 5
    assert rep["points"][0]["version"] == trial_kinds.NUMERICS_VERSION
    rc, out, err = _cli(capsys, "store", str(path))
    assert rc == 0 and "2 point(s), 5 trial(s)" in out and "simulate" in out
    rc, out, err = _cli(capsys, "store", str(tmp_path / "missing.sqlite"))
    assert rc == 2 and "no such trial store" in err and not (tmp_path / "missing.sqlite").exists()


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_figure_rerun_from_the_store_simulates_nothing(tmp_path, monkeypatch):
    """A figure drawn twice with one store: the second time every trial comes from the store."""
    pytest.importorskip("matplotlib")
    from symrmt import figures
    from symrmt.figures import data as figure_data

    calls = []
    real = trial_kinds.RIDGE_SPEC

    def counted(params, context, seed, j):
        calls.append((seed, j))
        return real.fn(params, context, seed, j)

    monkeypatch.setattr(figure_data, "RIDGE_SPEC", TrialSpec(real.name, real.version, counted))  # as the figures use it
    kw = dict(progress=False, n=32, n_sweep=32, points=2, trials=2, store=tmp_path / "fig.sqlite")
    figures.ridge_error(tmp_path, **kw)
    first = len(calls)
    assert first > 0 and len(set(calls)) <= first
    figures.ridge_error(tmp_path, **kw)
    assert len(calls) == first


def test_a_cluster_without_workers_is_an_error_not_a_wait(monkeypatch):
    """Trials sent to a cluster whose workers are all gone can never finish: after
    NO_WORKER_SECONDS without a worker the run stops with ClusterError, naming the pending trials."""
    pytest.importorskip("distributed")
    from symrmt.errors import ClusterError
    from symrmt.simulation import executor

    monkeypatch.setattr(executor, "NO_WORKER_SECONDS", 1.0)
    monkeypatch.setattr(executor, "_POLL_SECONDS", 0.2)
    with executor.DaskExecutor(workers=1) as ex:
        ex._cluster.scale(0)  # the internal seam: every worker gone
        deadline = time.monotonic() + 30
        while ex.client.scheduler_info().get("workers") and time.monotonic() < deadline:
            time.sleep(0.1)
        futures = [ex.submit(executor.DEMO_SPEC.fn, {"n": 4}, None, 7, j) for j in range(2)]
        t0 = time.monotonic()
        with pytest.raises(ClusterError, match="no worker for 1 s.*2 pending trial"):
            list(ex.completed(futures))
        assert time.monotonic() - t0 < 20
