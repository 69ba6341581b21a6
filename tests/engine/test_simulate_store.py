"""``symrmt trace --simulate`` through the executor and the trial store.

The trace engine's trials run through :func:`symrmt.simulation.executor.run_trials`: the same
per-trial numbers in this process and on a 2-worker local Dask cluster (bit for bit), a store
that reuses stored trials and computes only the missing ones, and a store key that changes with
everything that changes a trial's numbers (expression, declarations, exact values, n, seed,
numerics version) and with nothing else (``0.2`` and ``1/5`` are one value).
"""

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

from symrmt.cli.app import main
from symrmt.engine import Model, bind
from symrmt.engine.simulate import trials as trace_trials
from symrmt.simulation.executor import TrialSpec
from symrmt.simulation.store import TrialStore
from symrmt.engine.simulate.monte_carlo import simulate_trace
from symrmt.engine.simulate.trials import from_program, program, trace_point

pytestmark = pytest.mark.montecarlo

#: a tiny model with every kind of leaf, an inverse and an exact derivative
EXPR = "diff(trace(inv(Z.T*D*Z/n + G/sqrt(n) + gamma*I(n))), gamma)"
DECL = ["--matrix", "Z=gaussian(p,n)", "--matrix", "G=goe(n)", "--matrix", "D=diag(p, (1, 4), (1/4, 3/4))",
        "--dim", "p=c*n"]
AT = ["--at", "c=1/2, gamma=3"]


def _trace(capsys, *extra, expr=EXPR, decl=DECL, at=AT, n=32, trials=4, seed=3):
    argv = ["trace", expr, *decl, *at, "--simulate", "--n", str(n), "--trials", str(trials), "--seed", str(seed),
            "--json", *extra]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _rows(path) -> dict:
    with TrialStore.open_existing(path) as st:
        (point,) = st.summary()
        pid = st.point(point["kind"], point["version"], point["params"], create=False)
        return st.trials(pid)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_two_worker_dask_identical_to_in_process(tmp_path, capsys, two_workers):
    """The same trials, bit for bit, whatever the executor (the store rows are compared byte for byte)."""
    local = _trace(capsys, "--store", str(tmp_path / "a.sqlite"), n=48, trials=6)
    dask = _trace(capsys, "--store", str(tmp_path / "b.sqlite"), "--workers", "2", n=48, trials=6)
    assert dask["simulation"] == local["simulation"]
    assert dask["trials_computed"] == local["trials_computed"] == 6
    a, b = _rows(tmp_path / "a.sqlite"), _rows(tmp_path / "b.sqlite")
    assert sorted(a) == sorted(b) == list(range(6))
    assert all(a[j].tobytes() == b[j].tobytes() for j in range(6))
    # and the same as the plain in-process run without a store
    assert _trace(capsys, n=48, trials=6)["simulation"] == local["simulation"]


def test_rerun_with_more_trials_reuses_the_old_ones(tmp_path, capsys):
    store = str(tmp_path / "t.sqlite")
    first = _trace(capsys, "--store", store, trials=4)
    assert (first["trials_computed"], first["trials_reused"], first["trials_stale"]) == (4, 0, 0)
    old = _rows(store)
    more = _trace(capsys, "--store", store, trials=7)
    assert (more["trials_computed"], more["trials_reused"]) == (3, 4)
    new = _rows(store)
    assert all(new[j].tobytes() == old[j].tobytes() for j in range(4))
    # the stored trials give the numbers a fresh run gives
    assert _trace(capsys, trials=7)["simulation"] == more["simulation"]
    # nothing left to compute; text output says so
    assert main(["trace", EXPR, *DECL, *AT, "--simulate", "--n", "32", "--trials", "7", "--seed", "3",
                 "--store", store]) == 0
    assert "7 trial(s) reused, 0 computed" in capsys.readouterr().out


@pytest.mark.parametrize("change", [
    {"expr": "diff(trace(inv(Z.T*D*Z/n + G/sqrt(n) + gamma*I(n))), gamma) + 0"},
    {"decl": [*DECL[:5], "D=diag(p, (1, 5), (1/4, 3/4))", *DECL[6:]]},
    {"at": ["--at", "c=1/2, gamma=4"]},
    {"n": 34},
    {"seed": 4},
])
def test_store_key_changes_with_what_changes_the_numbers(tmp_path, capsys, change):
    store = str(tmp_path / "t.sqlite")
    _trace(capsys, "--store", store)
    other = _trace(capsys, "--store", store, **change)
    assert (other["trials_computed"], other["trials_reused"]) == (4, 0)


def test_store_key_is_the_exact_value_and_ignores_flag_order(tmp_path, capsys):
    store = str(tmp_path / "t.sqlite")
    _trace(capsys, "--store", store)
    decl = [*DECL[4:6], *DECL[0:4], *DECL[6:]]  # D declared first
    same = _trace(capsys, "--store", store, at=["--at", "gamma=3.0, c=0.5"], decl=decl)
    assert (same["trials_computed"], same["trials_reused"]) == (0, 4)


def test_rows_of_another_numerics_version_are_reported_not_reused(tmp_path, capsys, monkeypatch):
    store = str(tmp_path / "t.sqlite")
    _trace(capsys, "--store", store)
    spec = trace_trials.TRACE_SPEC
    monkeypatch.setattr(trace_trials, "TRACE_SPEC", TrialSpec(spec.name, spec.version + "-next", spec.fn))
    code = main(["trace", EXPR, *DECL, *AT, "--simulate", "--n", "32", "--trials", "4", "--seed", "3", "--json",
                 "--store", store])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 0 and (data["trials_computed"], data["trials_reused"], data["trials_stale"]) == (4, 0, 4)
    assert "older simulator version" in err


def test_executor_flags_need_simulate(capsys):
    assert main(["trace", EXPR, *DECL, *AT, "--store", "x.sqlite"]) == 2
    assert "--simulate" in capsys.readouterr().err


def test_program_is_canonical_and_names_the_numbers():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    e = "trace(inv(Z.T*Z/n + gamma*I(n))) + trace(inv(Z.T*Z/n + gamma*I(n)))**2"
    b1, b2 = bind(m.parse(e), {"c": "1/2", "gamma": "1/5"}, 16), bind(m.parse(e), {"c": "0.5", "gamma": "0.2"}, 16)
    assert b1 is not b2 and program(b1) == program(b2)
    assert trace_point(b1).key == trace_point(b2).key
    # the repeated trace is one node of the program
    assert sum(node[0] == "inverse" for node in program(b1)["nodes"]) == 1
    for other in ({"c": "1/2", "gamma": "1/4"}, {"c": "1/4", "gamma": "1/5"}):
        assert trace_point(bind(m.parse(e), other, 16)).key["tree"] != trace_point(b1).key["tree"]
    # the rebuilt tree evaluates to the same trials as the engine's tree
    r = simulate_trace(b1, trials=3, seed=2, progress=False)
    from symrmt.engine.simulate.monte_carlo import draw_matrices, evaluate, random_matrices

    plain = from_program(program(b1))
    rng = np.random.default_rng(np.random.SeedSequence(2).spawn(3)[1])
    assert evaluate(plain, draw_matrices(random_matrices(plain), rng)) == r["trials"][1]


def test_a_worker_needs_no_engine_or_sympy():
    """The trial runs from the pickled program alone, in a process that never imports SymPy or mpmath."""
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    pt = trace_point(bind(m.parse("trace(inv(Z.T*Z/n + gamma*I(n)))"), {"c": "2", "gamma": "1"}, 12))
    expected = trace_trials.TRACE_SPEC.fn(pt.key, pt.context, 9, 1)
    code = (
        "import pickle, sys\n"
        "from symrmt.engine.simulate.trials import TRACE_SPEC\n"
        "key, ctx = pickle.loads(sys.stdin.buffer.read())\n"
        "print(repr(float(TRACE_SPEC.fn(key, ctx, 9, 1)[0])))\n"
        "bad = [m for m in ('sympy', 'mpmath') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    res = subprocess.run([sys.executable, "-c", code], input=pickle.dumps((pt.key, pt.context)),
                         capture_output=True, check=True)
    assert float(res.stdout.decode()) == expected[0]
