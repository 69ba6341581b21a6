"""Hostile and careless inputs of the round on dropped declaration factors: every reproducer is a
fast test, and each class keeps probes of its kind so that the next feature cannot reopen it.

Reference values are closed forms, independent of the engine:

* Marchenko-Pastur: ``tau = tr(Z^T Z/n + gamma I)^{-1}/n`` with ``Z`` p x n, ``p = c n``, is the root
  in ``(0, 1/gamma)`` of ``gamma tau^2 + (gamma + c - 1) tau - 1 = 0`` (from ``tau = 1/(gamma + c/(1 + tau))``);
* semicircle: ``tr(G/sqrt(n) + gamma I)^{-1}/n = (gamma - sqrt(gamma^2 - 4))/2`` for ``gamma > 2``;
* moments: ``tr(Z^T Z)/n^2 -> c``, ``tr(G^2)/n^2 -> 1``.
"""

import hashlib
import json
import os
import socket
import sqlite3
import threading

import mpmath
import numpy as np
import pytest

from symrmt.cli.app import main
from symrmt.cli.common import num
from symrmt.engine import Model, ModelError, bind
from symrmt.errors import ParameterError

MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"
SC = "trace(inv(G/sqrt(n) + gamma*I(n)))"


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _no_result(out):
    """Nothing on stdout, or (with --json) only the error object: no value was printed."""
    if out == "":
        return True
    obj = json.loads(out)
    return isinstance(obj, dict) and set(obj) >= {"error", "exit"} and "value" not in obj


def _one_line(err):
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _trace(capsys, expr, matrices, at, dims=("p=c*n",), extra=()):
    argv = ["trace", expr, "--at", at, *extra]
    for m in matrices:
        argv += ["--matrix", m]
    for d in dims:
        argv += ["--dim", d]
    return _run(capsys, argv)


def mp_closed(c, g, dps):
    with mpmath.workdps(dps + 20):
        c, g = mpmath.mpf(c), mpmath.mpf(g)
        return (-(g + c - 1) + mpmath.sqrt((g + c - 1) ** 2 + 4 * g)) / (2 * g)


# ---------------------------------------------------------------- 1. declarations are a law, nothing more
@pytest.mark.parametrize("expr, decl", [
    ("trace(Z.T*Z/n)", "Z=2*gaussian(p,n)"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,n).T"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,n)*0"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,n)*1"),
    ("trace(Z.T*Z/n)", "Z=-gaussian(p,n)"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,n)/2"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,n)@gaussian(n,n)"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,gaussian(p,n))"),
    ("trace(G*G/n)", "G=3*goe(n)"),
    ("trace(G*G/n)", "G=goe(n).T"),
    ("trace(D)", "D=2*diag(p, (1, 4))"),
    ("trace(D)", "D=diag(p, (1, 4)).T"),
])
def test_a_factor_or_transpose_in_a_declaration_is_refused(capsys, expr, decl):
    code, out, err = _trace(capsys, expr, [decl], "c=1/2")
    assert code == 2 and _no_result(out)
    import re

    assert re.search("a declaration|the attribute '.T' is not allowed", _one_line(err))


@pytest.mark.parametrize("decl", ["K=kernel(relu, Z)*1000", "K=2*kernel(relu, Z)", "K=kernel(relu, Z).T",
                                  "K=kernel(relu, Z) + kernel(tanh, Z)"])
def test_a_factor_around_a_kernel_declaration_is_refused(capsys, decl):
    code, out, err = _trace(capsys, "trace(K*K)", ["Z=gaussian(p,n)", decl], "c=1/2")
    assert code == 2 and _no_result(out)
    _one_line(err)


def test_model_declare_refuses_a_factor():
    m = Model()
    m.dim("p", "c*n")
    with pytest.raises(ParameterError, match="write a factor"):
        m.declare("Z=2*gaussian(p,n)")
    assert "Z" not in m.matrices  # refused before anything is declared
    m.declare("Z=gaussian(p,n)")


@pytest.mark.parametrize("expr, matrices, dims, want", [
    ("trace((2*Z).T*(2*Z)/n)", ["Z=gaussian(p,n)"], ["p=c*n"], 2.0),  # 4 c at c = 1/2
    ("trace(Z.T*Z/n)", ["Z=gaussian(n,p)"], ["p=c*n"], 1.0),          # Z n x p: tr(Z^T Z)/(p n) = 1
    ("gamma*trace((3*G)*(3*G)/n)", ["G=goe(n)"], [], 9.0),            # 9 tr(G^2)/n^2 at gamma = 1
    ("trace((0*Z).T*Z/n)", ["Z=gaussian(p,n)"], ["p=c*n"], 0.0),
])
def test_the_factor_written_in_the_expression_is_honoured(capsys, expr, matrices, dims, want):
    at = "c=1/2" if dims else "gamma=1"
    code, out, err = _trace(capsys, expr, matrices, at, dims=dims, extra=["--json"])
    if want == 0.0:  # an identically zero expression is refused, never printed as a number
        assert code == 2, err
        return
    assert code == 0, err
    assert abs(json.loads(out)["value"] - want) <= 1e-12 * want


# ---------------------------------------------------------------- 2. the digits asked are delivered
def model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.goe("G", "n")
    return m


@pytest.mark.parametrize("digits", [100, 300, 1000])
def test_marchenko_pastur_to_the_digits_asked(digits):
    r = model().limit(MP, at={"c": "1/2", "gamma": "1/5"}, digits=digits)
    ref = mp_closed("0.5", "0.2", digits)
    with mpmath.workdps(digits + 20):
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** (-digits)
    assert mpmath.nstr(r.value, digits) == mpmath.nstr(ref, digits)


@pytest.mark.parametrize("digits", [100, 300, 1000])
def test_semicircle_to_the_digits_asked(digits):
    r = model().limit(SC, at={"gamma": 3}, digits=digits)
    with mpmath.workdps(digits + 20):
        ref = (3 - mpmath.sqrt(5)) / 2
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** (-digits)
    assert mpmath.nstr(r.value, digits) == mpmath.nstr(ref, digits)


def test_a_derivative_to_300_digits():
    # E = -gamma^2 d tau/d gamma; implicit differentiation of the quadratic: d tau/d gamma =
    # -(tau^2 + tau)/(2 gamma tau + gamma + c - 1)
    digits = 300
    r = model().limit("-gamma**2*diff(" + MP + ", gamma)", at={"c": "1/2", "gamma": "1/5"}, digits=digits)
    with mpmath.workdps(digits + 20):
        c, g = mpmath.mpf(1) / 2, mpmath.mpf(1) / 5
        t = mp_closed(c, g, digits)
        ref = g ** 2 * (t ** 2 + t) / (2 * g * t + g + c - 1)
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** (-digits)


def test_cli_250_digits_agree_with_the_closed_form(capsys):
    code, out, err = _trace(capsys, MP, ["Z=gaussian(p,n)"], "c=1/2, gamma=1/5", extra=["--digits", "250", "--json"])
    assert code == 0, err
    got = json.loads(out)["value"]
    assert got == mpmath.nstr(mp_closed("0.5", "0.2", 250), 250)


def test_one_digit_rounds_in_decimal(capsys):
    # 3.108... at one significant digit is 3 (a binary rounding to one digit first gave 3.09375)
    code, out, err = _trace(capsys, MP, ["Z=gaussian(p,n)"], "c=1/2, gamma=1/5", extra=["--digits", "1", "--json"])
    assert code == 0, err
    assert json.loads(out)["value"] == 3.0
    code, out, err = _trace(capsys, MP, ["Z=gaussian(p,n)"], "c=1/2, gamma=1/5", extra=["--digits", "2"])
    assert "limit (2 digits): 3.1" in out


# ---------------------------------------------------------------- 5. no value becomes another number in JSON
@pytest.mark.parametrize("x, digits, want", [
    ("3.1084952830141509", 1, 3.0), ("3.49", 1, 3.0), ("0.0349", 2, 0.035), ("0", 15, 0.0),
    ("1e-400", 15, "1.0e-400"), ("-2.5e400", 15, "-2.5e+400"), ("1e-310", 15, "1.0e-310"),
    ("0.1", 15, 0.1), ("123456.7", 3, 123000.0),
])
def test_num_rounds_in_decimal_and_never_writes_another_number(x, digits, want):
    with mpmath.workdps(50):
        got = num(mpmath.mpf(x), digits)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("x", ["nan", "inf", "-inf"])
def test_num_refuses_a_value_that_is_not_finite(x):
    with pytest.raises(ArithmeticError):
        num(mpmath.mpf(x), 15)


@pytest.mark.parametrize("expr, matrices, at, want", [
    ("gamma", [], "gamma=1e-400", "1.0e-400"),
    (MP, ["Z=gaussian(p,n)"], "c=1/2, gamma=1e400", "1.0e-400"),  # tau = 1/gamma - c/gamma^2 + ...
])
def test_values_outside_the_float_range_are_decimal_strings(capsys, expr, matrices, at, want):
    code, out, err = _trace(capsys, expr, matrices, at, extra=["--json"])
    assert code == 0, err
    assert json.loads(out)["value"] == want


# ---------------------------------------------------------------- 3. dimension ratios at the evaluation point
@pytest.mark.parametrize("dim, at", [("p=(c-1)*n", "c=1/2"), ("p=(c-1)**2*n", "c=1"), ("p=(1-c)*n", "c=1"),
                                     ("p=sqrt(c-1)*n", "c=1/2"), ("p=1/(c-1)*n", "c=1")])
@pytest.mark.parametrize("simulate", [False, True])
def test_a_non_positive_ratio_at_the_point_is_refused(capsys, dim, at, simulate):
    extra = ["--simulate", "--n", "16", "--trials", "2"] if simulate else []
    code, out, err = _trace(capsys, MP, ["Z=gaussian(p,n)"], at + ", gamma=1", dims=[dim], extra=extra)
    assert code == 2 and _no_result(out)
    assert "not a positive real number" in _one_line(err)


def test_a_square_root_in_a_dimension_ratio_is_read():
    m = Model()
    m.dim("p", "sqrt(c)*n")
    m.gaussian("Z", "p", "n")
    assert float(m.limit("trace(Z.T*Z/n)", at={"c": "1/4"}).value) == 0.5  # tr(Z^T Z)/n^2 -> p/n = sqrt(c)


def test_bind_refuses_a_non_positive_ratio():
    m = Model()
    m.dim("p", "(c-1)*n")
    m.gaussian("Z", "p", "n")
    with pytest.raises(ModelError, match="not a positive real number"):
        bind(m.parse("trace(Z.T*Z/n)"), {"c": "1/2"}, 16)
    with pytest.raises(ModelError, match="not a positive real number"):
        m.limit("trace(Z.T*Z/n)", at={"c": "1/2"})


# ---------------------------------------------------------------- 8. one-line errors, not tracebacks
@pytest.mark.parametrize("expr, matrices, dims, at, code_want", [
    ("gamma/0", [], [], "gamma=1", 2),
    ("trace(inv(Z.T*Z/n + gamma/0*I(n)))", ["Z=gaussian(p,n)"], ["p=c*n"], "c=1/2, gamma=1", 2),
    ("sqrt(-1) + gamma", [], [], "gamma=1", 3),
    ("trace(inv(Z.T*Z/n + sqrt(-1)*I(n)))", ["Z=gaussian(n,n)"], [], "gamma=1", None),
    ("trace(inv(Z.T*Z/n + sqrt(gamma-2)*I(n)))", ["Z=gaussian(n,n)"], [], "gamma=1", 3),
    ("trace(inv(Z.T*Z/n + 1/(gamma-1)*I(n)))", ["Z=gaussian(n,n)"], [], "gamma=1", 3),
    ("trace(inv(D + gamma*I(p)))", ["D=diag(p, (sqrt(-2), 4))"], ["p=c*n"], "c=1, gamma=1", 2),
    ("trace(inv(c*I(n)-c*I(n)))", [], [], "c=1", 2),
])
def test_bad_expressions_fail_in_one_line(capsys, expr, matrices, dims, at, code_want):
    code, out, err = _trace(capsys, expr, matrices, at, dims=dims)
    assert code in (2, 3) and _no_result(out)
    if code_want is not None:
        assert code == code_want, err
    _one_line(err)


@pytest.mark.parametrize("ratio", [None, 1.5, [1], {"c": 1}, True])
def test_model_dim_of_the_wrong_type(ratio):
    with pytest.raises(ModelError, match="size of q"):
        Model().dim("q", ratio)


@pytest.mark.parametrize("array", [np.array([["a", "b"]] * 3), np.array([[1, None]] * 3, dtype=object),
                                   np.ones((3, 4), dtype=complex), np.ones((3, 4), dtype=bool)])
def test_geometry_npy_of_the_wrong_dtype(capsys, tmp_path, array):
    path = tmp_path / "g.npy"
    np.save(path, array, allow_pickle=True)
    code, out, err = _run(capsys, ["limit", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--geometry", str(path)])
    assert code == 2 and _no_result(out)
    _one_line(err)


# ---------------------------------------------------------------- 4. the trial store validates every row
TRACE_SIM = ["trace", "trace(Z.T*Z/n)", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2",
             "--simulate", "--n", "16", "--trials", "3"]
SIMULATE = ["simulate", "--f", "tanh", "--n", "16", "--c", "1/2", "--gamma", "1,2", "--trials", "3"]


def _store(capsys, tmp_path, argv):
    path = str(tmp_path / "trials.sqlite")
    code, _, err = _run(capsys, [*argv, "--store", path, "--json"])
    assert code == 0, err
    return path


def _edit(path, sql, args=()):
    db = sqlite3.connect(path)
    with db:
        db.execute(sql, args)
    db.close()


NAN = np.array([np.nan], dtype="<f8").tobytes()


@pytest.mark.parametrize("argv, blob, code_want, match", [
    (TRACE_SIM, NAN, 3, "non-finite"),                                     # issue 25.4
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
def test_an_edited_store_row_is_refused_in_one_line(capsys, tmp_path, argv, blob, code_want, match, json_out):
    path = _store(capsys, tmp_path, argv)
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


def _nan_trial(params, context, seed, j):
    return np.array([np.nan if j == 1 else 0.0])


def _zero_trial(params, context, seed, j):
    return np.array([0.0])


def test_store_verb_on_a_point_key_that_is_not_json(capsys, tmp_path):
    path = _store(capsys, tmp_path, TRACE_SIM)
    _edit(path, "UPDATE points SET params = 'not json'")
    code, out, err = _run(capsys, ["store", path])
    assert code == 2 and _no_result(out)
    assert "not the JSON" in _one_line(err)


@pytest.mark.parametrize("bad", [("x",), (b"\x00" * 8,)])
def test_malformed_trial_results_are_refused(bad):
    from symrmt.simulation.executor import TrialSpec, _checked_result, _Point

    pt = _Point(TrialSpec("probe", "1", _zero_trial, width=lambda params: 2), {}, 2, 0, None)
    for result in [(0, np.zeros(2), 0.1), (0, *bad, 0.1), (1, np.zeros(2).tobytes(), 0.1),
                   (0, np.zeros(3).tobytes(), 0.1), [0, np.zeros(2).tobytes(), 0.1], "x",
                   (0, np.zeros(2).tobytes(), "1")]:
        with pytest.raises(FloatingPointError):
            _checked_result(pt, 0, result)
    row, secs = _checked_result(pt, 0, (0, np.array([0.25, 0.5]).tobytes(), 0.1))
    assert row.tolist() == [0.25, 0.5] and row.dtype == np.float64 and secs == 0.1


# ---------------------------------------------------------------- 6. a foreign SQLite file is never written
def _sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


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


def test_a_store_with_an_extra_trigger_is_refused_unchanged(capsys, tmp_path):
    path = _store(capsys, tmp_path, TRACE_SIM)
    _edit(path, "CREATE TRIGGER t AFTER INSERT ON trials BEGIN DELETE FROM trials; END")
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    before = _sha(path)
    code, out, err = _run(capsys, [*TRACE_SIM, "--store", path])
    assert code == 2 and "trigger" in _one_line(err)
    assert _sha(path) == before


# ---------------------------------------------------------------- 7. the Dask scheduler is trusted code
@pytest.mark.parametrize("address, match", [
    ("junk", "not an address"), ("", "empty"), ("   ", "empty"), ("foo://x", "not an address"),
    ("tcp://", "not an address"), ("ucx://127.0.0.1:8786", "not supported"), ("inproc://127.0.0.1:1", "not supported"),
    ("tls://127.0.0.1:8786", "CA certificate"), ("tcp://127.0.0.1:0", "port"), ("tcp://127.0.0.1:99999", "port"),
    ("tcp://10.1.2.3:8786", "non-loopback"), ("tcp://example.org:8786", "non-loopback"), ("example.org:8786", "non-loopback"),
    ("tcp://[2001:db8::1]:8786", "non-loopback"), ("tcp://127.0.0.1:8786" + "0" * 300, "limit"),
])
def test_scheduler_addresses_are_read_strictly(capsys, address, match):
    code, out, err = _run(capsys, [*TRACE_SIM, "--scheduler", address])
    assert code == 2 and _no_result(out)
    import re

    assert re.search(match, _one_line(err))


def test_scheduler_terms():
    from symrmt.simulation.scheduler import Scheduler

    assert Scheduler("tcp://10.1.2.3:8786", trust=True).address == "tcp://10.1.2.3:8786"
    assert Scheduler("localhost:8786").address == "tcp://localhost:8786"
    assert Scheduler("tcp://[::1]:8786").security is None
    with pytest.raises(ParameterError, match="need a tls:// address"):
        Scheduler("tcp://127.0.0.1:8786", tls_ca_file="ca.pem")
    with pytest.raises(ParameterError, match="is not a file"):
        Scheduler("tls://10.1.2.3:8786", tls_ca_file="/nonexistent/ca.pem", tls_cert="/nonexistent/c.pem")


def test_tls_flags_without_scheduler_are_refused(capsys):
    code, _, err = _run(capsys, [*TRACE_SIM, "--trust-scheduler"])
    assert code == 2 and "apply to --scheduler" in _one_line(err)


def test_a_tcp_service_that_is_not_dask_is_one_line(capsys):
    pytest.importorskip("distributed")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            try:
                conn.recv(65536)
                conn.sendall(b"\xff" * 64)  # a frame length of about 3 EiB
            except OSError:
                pass
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        code, out, err = _run(capsys, [*TRACE_SIM, "--scheduler", f"tcp://127.0.0.1:{port}"])
    finally:
        srv.close()
    assert code == 2 and _no_result(out)
    assert "cannot connect to a Dask scheduler" in _one_line(err)


# ---------------------------------------------------------------- 9. the cap on --workers
def test_workers_are_capped_at_the_cores(capsys):
    from symrmt.simulation.scheduler import check_workers, max_workers

    cap = max_workers()
    for argv in (TRACE_SIM, SIMULATE):
        code, out, err = _run(capsys, [*argv, "--workers", "1000"])
        assert code == 2 and _no_result(out)
        assert f"above the limit {cap}" in _one_line(err)
    with pytest.raises(ParameterError, match=f"above the limit {cap}"):
        check_workers(cap + 1)
    assert check_workers(cap) == cap
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "input.md"), encoding="utf-8") as fh:
        assert "--workers" in fh.read()


# ---------------------------------------------------------------- the same class: a .py candidate's imports
@pytest.mark.parametrize("line", ["from sympy import sqrt as exp", "import sympy as exp", "from math import *",
                                  "from sympy import Symbol", "import numpy as c"])
def test_a_candidate_file_import_that_would_change_a_name_is_refused(capsys, tmp_path, line):
    path = tmp_path / "cand.py"
    path.write_text(line + "\ncandidate = exp(c)\n")
    code, out, err = _run(capsys, ["check", "E_RR0", str(path)])
    assert code == 2 and _no_result(out)
    assert "not executed" in _one_line(err)


def test_a_candidate_file_may_import_the_language_functions():
    from symrmt.check.candidate import parse_candidate

    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cand.py")
        with open(path, "w") as fh:
            fh.write("import sympy\nimport sympy as sp\nfrom sympy import sqrt, pi\nE_RR0 = (1 - c)/2\n")
        lhs, _ = parse_candidate("E_RR0", path)
    assert str(lhs) == "1/2 - c/2"


def test_sweep_json_numbers_outside_the_float_range_are_strings():
    from symrmt.cli.sweeps import _num

    with mpmath.workdps(30):
        assert _num(mpmath.mpf("1e-400"), 12) == "1.0e-400"
        assert _num(mpmath.mpf("2e400"), 12) == "2.0e+400"
        assert _num(mpmath.mpf("0.25"), 12) == 0.25
    assert _num(0.5, 30) == 0.5


def test_tls_scheduler_builds_dask_security(tmp_path):
    pytest.importorskip("distributed")
    from symrmt.simulation.scheduler import Scheduler

    files = {}
    for name in ("ca", "cert", "key"):
        files[name] = tmp_path / f"{name}.pem"
        files[name].write_text("-----BEGIN CERTIFICATE-----\n")
    s = Scheduler("tls://10.1.2.3:8786", tls_ca_file=str(files["ca"]), tls_cert=str(files["cert"]),
                  tls_key=str(files["key"]))
    assert s.address == "tls://10.1.2.3:8786"  # TLS authenticates the scheduler: no --trust-scheduler needed
    assert s.security.require_encryption is True
    assert (s.security.tls_ca_file, s.security.tls_client_cert, s.security.tls_client_key) == \
        (str(files["ca"]), str(files["cert"]), str(files["key"]))


def test_two_solves_that_stall_alike_cannot_certify(monkeypatch):
    """The old refinement measured its step in float64, so both solves stopped at the same ~1e-190
    iterate and agreed with each other; the residual check must refuse that instead of printing it."""
    import math

    import symrmt.engine.solver as ts
    from symrmt.errors import PrecisionError

    def float_step_refine(apply_residual, lu, x, tol, maxsteps=60):
        prev = None
        for _ in range(maxsteps):
            dx = ts._lu_solve(lu, apply_residual(x))
            x = [a - mpmath.mpf(b) for a, b in zip(x, dx)]
            step = mpmath.mpf(math.sqrt(sum(d * d for d in dx))) / (1 + mpmath.sqrt(sum(a * a for a in x)))
            if step <= tol:
                return x, step
            if prev is not None and step > prev * mpmath.mpf("1e-3"):
                return None
            prev = step
        return None

    monkeypatch.setattr(ts, "_refine", float_step_refine)
    with pytest.raises(PrecisionError, match="residual"):
        model().limit(MP, at={"c": "1/2", "gamma": "1/5"}, digits=250)
