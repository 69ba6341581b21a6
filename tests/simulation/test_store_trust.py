"""The trial store trusts no row (symrmt.simulation.store): an edited, foreign or malformed store is
refused in one line and left byte for byte.
"""

import hashlib
import json
import os
import shutil
import sqlite3

import numpy as np
import pytest

from tests.cli_helpers import _run, _no_result, _one_line


TRACE_SIM = ["trace", "trace(Z.T*Z/n)", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2",
             "--simulate", "--n", "16", "--trials", "3"]


SIMULATE = ["simulate", "--f", "tanh", "--n", "16", "--c", "1/2", "--gamma", "1,2", "--trials", "3"]


DENSITY_SIM = ["density", "Z.T*Z/n", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2",
               "--over", "x=0:3:7", "--simulate", "--n", "32", "--trials", "2"]


@pytest.fixture(scope="module")
def built_stores(tmp_path_factory):
    """The stores the CLI wrote in this module, one per command line (built on first use)."""
    return {"dir": tmp_path_factory.mktemp("stores"), "paths": {}}


def _store(capsys, tmp_path, argv, built):
    """A private copy (``tmp_path/trials.sqlite``, mode kept) of the store that ``argv --store PATH --json``
    writes; the CLI runs once per command line in this module, and each test edits its own copy."""
    key = tuple(argv)
    if key not in built["paths"]:
        first = str(built["dir"] / f"store{len(built['paths'])}.sqlite")
        code, _, err = _run(capsys, [*argv, "--store", first, "--json"])
        assert code == 0, err
        assert not os.path.exists(first + "-wal"), "the CLI left a -wal file: the store is not one file"
        built["paths"][key] = first
    path = str(tmp_path / "trials.sqlite")
    shutil.copy2(built["paths"][key], path)
    return path


def _edit(path, sql, args=()):
    db = sqlite3.connect(path)
    with db:
        db.execute(sql, args)
    db.close()


NAN = np.array([np.nan], dtype="<f8").tobytes()


def _nan_trial(params, context, seed, j):
    return np.array([np.nan if j == 1 else 0.0])


def _zero_trial(params, context, seed, j):
    return np.array([0.0])


def _sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


@pytest.mark.parametrize("argv, blob, code_want, match", [
    (TRACE_SIM, NAN, 3, "non-finite"),
    (TRACE_SIM, np.array([np.inf]).tobytes(), 3, "non-finite"),
    (TRACE_SIM, np.array([0.5, 0.5]).tobytes(), 2, "2 values"),
    (TRACE_SIM, b"\x00" * 7, 2, "7 bytes"),
    (TRACE_SIM, b"", 2, "0 bytes"),
    (TRACE_SIM, "0.5", 2, "str"),
    (TRACE_SIM, 0.5, 2, "float"),
    (SIMULATE, np.full(4, np.nan).tobytes(), 3, "non-finite"),
    (SIMULATE, np.full(2, 0.5).tobytes(), 2, "2 values"),                  # rows too short
    (SIMULATE, np.full(6, 0.5).tobytes(), 2, "6 values"),                  # rows too long
    (SIMULATE, np.array([0.5, 1.5, 0.5, 0.5]).tobytes(), 3, r"outside \[0.0, 1.0\]"),
    (SIMULATE, np.array([0.5, -0.1, 0.5, 0.5]).tobytes(), 3, r"outside \[0.0, 1.0\]"),
])
@pytest.mark.parametrize("json_out", [True, False])
def test_an_edited_store_row_is_refused_in_one_line(capsys, tmp_path, built_stores, argv, blob, code_want, match,
                                                    json_out):
    path = _store(capsys, tmp_path, argv, built_stores)
    _edit(path, "UPDATE trials SET data = ? WHERE j = 1", (blob,))
    code, out, err = _run(capsys, [*argv, "--store", path] + (["--json"] if json_out else []))
    assert code == code_want and _no_result(out), err
    line = _one_line(err)
    assert "trial 1" in line and path in line
    import re

    assert re.search(match, line), line


def test_a_stored_nan_is_the_error_of_a_fresh_nan(tmp_path):
    from symrmt.simulation.executor import TrialSpec, run_trials
    from symrmt.simulation.store import NonFiniteTrial

    spec = TrialSpec("probe", "1", _nan_trial, width=lambda params: 1)
    with pytest.raises(NonFiniteTrial, match="trial 1 of a 'probe' point returned a non-finite value") as fresh:
        run_trials(spec, {"n": 1}, 2, 0)
    path = str(tmp_path / "s.sqlite")
    ok = TrialSpec("probe", "1", _zero_trial, width=lambda params: 1)
    run_trials(ok, {"n": 1}, 2, 0, store=path)
    _edit(path, "UPDATE trials SET data = ? WHERE j = 1", (NAN,))
    with pytest.raises(NonFiniteTrial, match="trial 1 of a 'probe' point returned a non-finite value") as stored:
        run_trials(ok, {"n": 1}, 2, 0, store=path)
    assert type(fresh.value) is type(stored.value)


def test_store_verb_on_a_point_key_that_is_not_json(capsys, tmp_path, built_stores):
    path = _store(capsys, tmp_path, TRACE_SIM, built_stores)
    _edit(path, "UPDATE points SET params = 'not json'")
    code, out, err = _run(capsys, ["store", path])
    assert code == 2 and _no_result(out)
    assert "not the JSON" in _one_line(err)


@pytest.mark.parametrize("bad", [("x",), (b"\x00" * 8,)])
def test_malformed_trial_results_are_refused(bad):
    from symrmt.simulation.executor import TrialSpec, _checked_result, _Point

    # the internal seam where a worker's answer enters: a real worker cannot be made to send these malformed results
    pt = _Point(TrialSpec("probe", "1", _zero_trial, width=lambda params: 2), {}, 2, 0, None)
    for result in [(0, np.zeros(2), 0.1), (0, *bad, 0.1), (1, np.zeros(2).tobytes(), 0.1),
                   (0, np.zeros(3).tobytes(), 0.1), [0, np.zeros(2).tobytes(), 0.1], "x",
                   (0, np.zeros(2).tobytes(), "1")]:
        with pytest.raises(FloatingPointError):
            _checked_result(pt, 0, result)
    row, secs = _checked_result(pt, 0, (0, np.array([0.25, 0.5]).tobytes(), 0.1))
    assert row.tolist() == [0.25, 0.5] and row.dtype == np.float64 and secs == 0.1


@pytest.mark.parametrize("schema", [
    ["CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", "CREATE TABLE points (a, b)",
     "CREATE TABLE trials (x, y)"],
    ["CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL, extra)",
     "CREATE TABLE points (id INTEGER PRIMARY KEY)", "CREATE TABLE trials (point)"],
])
def test_a_foreign_sqlite_file_is_refused_and_left_byte_for_byte(capsys, tmp_path, schema):
    path = str(tmp_path / "other.sqlite")
    db = sqlite3.connect(path)
    with db:
        for stmt in schema:
            db.execute(stmt)
        db.execute("INSERT INTO meta (key, value) VALUES ('format', 'symrmt-trial-store')")
        db.execute("INSERT INTO meta (key, value) VALUES ('schema', '1')")
    db.close()
    os.chmod(path, 0o600)
    before, files = _sha(path), sorted(os.listdir(tmp_path))
    code, out, err = _run(capsys, [*TRACE_SIM, "--store", path])
    assert code == 2 and _no_result(out)
    assert "not a symrmt trial store" in _one_line(err)
    assert _sha(path) == before and sorted(os.listdir(tmp_path)) == files


def test_a_store_with_an_extra_trigger_is_refused_unchanged(capsys, tmp_path, built_stores):
    path = _store(capsys, tmp_path, TRACE_SIM, built_stores)
    _edit(path, "CREATE TRIGGER t AFTER INSERT ON trials BEGIN DELETE FROM trials; END")
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    before = _sha(path)
    code, out, err = _run(capsys, [*TRACE_SIM, "--store", path])
    assert code == 2 and "trigger" in _one_line(err)
    assert _sha(path) == before


def test_store_trust_rule_and_parameterized_queries(tmp_path):
    import os

    from symrmt.simulation.store import StoreError, TrialStore

    path = tmp_path / "a.sqlite"
    with TrialStore(path) as st:
        st.add(st.point("demo", "1", {"n": 8, "seed": 0}), 0, [1.0], 0.1)
    assert os.stat(path).st_mode & 0o077 == 0
    (tmp_path / "link.sqlite").symlink_to(path)
    with pytest.raises(StoreError, match="symbolic link"):
        TrialStore(tmp_path / "link.sqlite")
    os.chmod(path, 0o666)
    with pytest.raises(StoreError, match="writable by group or others"):
        TrialStore(path)
    os.chmod(path, 0o600)
    if hasattr(os, "getuid") and os.getuid() == 0:  # only root can give a file away
        os.chown(path, 12345, -1)
        with pytest.raises(StoreError, match="owned by uid 12345"):
            TrialStore(path)
        os.chown(path, 0, -1)
    with TrialStore(path) as st:
        evil = "x' OR '1'='1"
        assert st.point(evil, "1); DROP TABLE trials; --", {"n": evil}, create=False) is None
        assert [r["trials"] for r in st.summary()] == [1]


@pytest.mark.parametrize("edit", ["negative", "fraction"])
def test_density_store_with_edited_counts_is_refused(capsys, tmp_path, built_stores, edit):
    db = _store(capsys, tmp_path, DENSITY_SIM, built_stores)
    argv = [*DENSITY_SIM, "--store", db, "--json"]
    con = sqlite3.connect(db)
    pt, j, data = con.execute("SELECT point, j, data FROM trials ORDER BY j LIMIT 1").fetchone()
    row = np.frombuffer(data, dtype="<f8").copy()
    row[1] = -5.0 if edit == "negative" else row[1] + 0.5  # a count below 0, or one that is not whole
    con.execute("UPDATE trials SET data=? WHERE point=? AND j=?", (row.tobytes(), pt, j))
    con.commit()
    con.close()
    code, out, err = _run(capsys, argv)
    assert code == 3, out
    assert json.loads(out)["kind"] == "numerical failure" and "trial 0" in json.loads(out)["error"]
