"""The Dask scheduler is trusted code (symrmt.simulation.scheduler): addresses are read strictly, TLS is
built from its flags, and --workers is capped at the cores.
"""

import os
import socket
import threading

import pytest

from symrmt.errors import ParameterError
from tests.cli_helpers import _run, _no_result, _one_line


TRACE_SIM = ["trace", "trace(Z.T*Z/n)", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2",
             "--simulate", "--n", "16", "--trials", "3"]


SIMULATE = ["simulate", "--f", "tanh", "--n", "16", "--c", "1/2", "--gamma", "1,2", "--trials", "3"]


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
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "input.md"), encoding="utf-8") as fh:
        assert "--workers" in fh.read()


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
