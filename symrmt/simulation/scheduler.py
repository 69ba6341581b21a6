"""Which Dask scheduler symrmt connects to, and on what terms; and the cap on local workers.

**A Dask scheduler is trusted code.**  In Dask's protocol a client deserializes what its
scheduler and workers send (pickles), so whoever runs the scheduler at ``--scheduler ADDRESS``,
or can answer on that address, can run code in the symrmt process.  symrmt therefore:

* reads the address strictly: ``tcp://HOST:PORT`` or ``tls://HOST:PORT`` (``HOST:PORT`` means
  ``tcp://``), a host and a port in 1..65535, at most :data:`MAX_ADDRESS` characters; other
  protocols (``ucx://``, ``inproc://``, ``ws://``) are refused;
* connects over plain ``tcp://`` only to a loopback address (``localhost``, ``127.x.x.x``,
  ``::1``), unless told that the scheduler is trusted (``--trust-scheduler``,
  ``Scheduler(address, trust=True)``): on a network plain TCP can be answered by anyone on the
  path;
* connects over ``tls://`` with Dask's ``Security`` configuration: a CA file, and the client's
  certificate and key (``--tls-ca-file``, ``--tls-cert``, ``--tls-key``, or Dask's own
  ``distributed.comm.tls`` configuration); TLS authenticates the scheduler, so use it for a
  cluster that is not yours;
* checks every trial result that comes back (a plain buffer of float64 values, of the
  point's length, finite and in range; see :mod:`symrmt.simulation.executor`).

The checks make a typo or a stray service a one-line error; they cannot make a hostile scheduler
safe.  Connect only to schedulers you would let run code as you.
"""

from __future__ import annotations

import ipaddress
import os
import re

from symrmt.errors import ParameterError

__all__ = ["Scheduler", "as_scheduler", "max_workers", "check_workers", "MAX_ADDRESS"]

#: the longest scheduler address read
MAX_ADDRESS = 200

_ADDRESS = re.compile(r"^(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)"
                      r":(?P<port>[0-9]{1,5})$")


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost: where it points is not known here


class Scheduler:
    """A checked Dask scheduler address and the terms of the connection (see the module docstring).

    Parameters
    ----------
    address : str
        ``tcp://HOST:PORT``, ``tls://HOST:PORT`` or ``HOST:PORT``.
    trust : bool
        The scheduler is trusted: allows plain ``tcp://`` to a host that is not loopback.
    tls_ca_file, tls_cert, tls_key : str, optional
        For ``tls://``: the CA certificate and the client's certificate and key (PEM files).
    security : distributed.security.Security, optional
        A ready Dask ``Security`` object instead of the three files.

    Raises
    ------
    ParameterError
        An address that is not of that form, another protocol, a port outside 1..65535, plain ``tcp://`` to a
        host that is not loopback without ``trust``, TLS files with ``tcp://``, or a TLS configuration that is
        missing or refused.

    Examples
    --------
    >>> Scheduler("tcp://127.0.0.1:8786").address
    'tcp://127.0.0.1:8786'
    >>> Scheduler("tcp://10.0.0.5:8786")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --scheduler tcp://10.0.0.5:8786: plain tcp:// to a non-loopback host ...
    >>> Scheduler("10.0.0.5:8786", trust=True).address
    'tcp://10.0.0.5:8786'
    """

    def __init__(self, address, trust: bool = False, tls_ca_file=None, tls_cert=None, tls_key=None, security=None):
        what = "--scheduler"
        if not isinstance(address, str):
            raise ParameterError(f"{what}: the address must be text such as tcp://127.0.0.1:8786, got "
                                 f"{type(address).__name__}")
        text = address.strip()
        if not text:
            raise ParameterError(f"{what}: empty address; give one such as tcp://127.0.0.1:8786")
        if len(text) > MAX_ADDRESS:
            raise ParameterError(f"{what}: the address has {len(text)} characters, above the limit {MAX_ADDRESS}")
        m = _ADDRESS.match(text)
        if not m:
            raise ParameterError(f"{what} {text!r}: not an address of the form tcp://HOST:PORT or tls://HOST:PORT")
        scheme = (m.group("scheme") or "tcp").lower()
        host, port = m.group("host"), int(m.group("port"))
        if scheme not in ("tcp", "tls"):
            raise ParameterError(f"{what} {text!r}: the protocol {scheme}:// is not supported (use tcp:// on a "
                                 "loopback address, or tls:// with --tls-ca-file, --tls-cert and --tls-key)")
        if not 1 <= port <= 65535:
            raise ParameterError(f"{what} {text!r}: the port {port} is not in 1..65535")
        self.address = f"{scheme}://{host}:{port}"
        self.scheme, self.host, self.port, self.trust = scheme, host, port, bool(trust)
        files = {"--tls-ca-file": tls_ca_file, "--tls-cert": tls_cert, "--tls-key": tls_key}
        given = {k: v for k, v in files.items() if v is not None}
        if scheme == "tcp":
            if given or security is not None:
                raise ParameterError(f"{what} {self.address}: {', '.join(given) or 'security'} need a tls:// address")
            if not self.trust and not _loopback(host):
                raise ParameterError(
                    f"{what} {self.address}: plain tcp:// to a non-loopback host is refused: a Dask scheduler "
                    "can run code in this process, and on a network anyone on the path can answer plain TCP. "
                    "Use tls:// with --tls-ca-file, --tls-cert and --tls-key, or say --trust-scheduler if you "
                    "run that scheduler yourself on a network you trust (see docs/input.md, 'Dask scheduler')")
            self.security = None
            return
        for flag, path in given.items():
            if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
                raise ParameterError(f"{what} {self.address}: {flag} {path!r} is not a file")
        self.security = security if security is not None else self._security(given)

    def _security(self, given):
        try:
            # optional dependency (distributed)
            from distributed.security import Security
        except ImportError as exc:
            raise ParameterError(f"--scheduler needs Dask: pip install 'symrmt[dask]' ({exc})") from None
        kwargs = {"tls_ca_file": given.get("--tls-ca-file"), "tls_client_cert": given.get("--tls-cert"),
                  "tls_client_key": given.get("--tls-key")}
        try:
            sec = Security(require_encryption=True, **{k: v for k, v in kwargs.items() if v is not None})
        except (TypeError, ValueError, ImportError, OSError) as exc:
            raise ParameterError(f"--scheduler {self.address}: the TLS configuration is refused ({exc})") from None
        if not sec.tls_ca_file or not sec.tls_client_cert:
            raise ParameterError(
                f"--scheduler {self.address}: tls:// needs a CA certificate and a client certificate: give "
                "--tls-ca-file, --tls-cert (and --tls-key unless the key is in the certificate file), or set "
                "Dask's distributed.comm.tls.ca-file and distributed.comm.tls.client.cert")
        return sec

    def __repr__(self):
        return f"Scheduler({self.address!r}{', trust=True' if self.trust else ''})"


def as_scheduler(scheduler) -> Scheduler | None:
    """``None``, a :class:`Scheduler` (returned as it is), or an address (checked with the default terms: not
    trusted), as a :class:`Scheduler`; raises :class:`ParameterError` for an address the checks refuse.

    >>> as_scheduler("localhost:8786"), as_scheduler(None)
    (Scheduler('tcp://localhost:8786'), None)
    """
    if scheduler is None or isinstance(scheduler, Scheduler):
        return scheduler
    return Scheduler(scheduler)


def max_workers() -> int:
    """The most worker processes of a local cluster: the CPU cores this process may use (at least 2).

    >>> max_workers() >= 2
    True
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(2, cores)


def check_workers(workers) -> int:
    """``workers`` (an int, or a number with an integer value) as an int in ``1..max_workers()``.  Raises
    :class:`ParameterError`, a one-line error stating the cap, otherwise.

    >>> check_workers(2), check_workers(2.0)
    (2, 2)
    >>> check_workers(0)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --workers must be >= 1, got 0
    """
    if isinstance(workers, bool) or not isinstance(workers, int):
        try:
            ok = float(workers) == int(workers)
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok or isinstance(workers, bool):
            raise ParameterError(f"--workers must be an integer, got {workers!r}")
        workers = int(workers)
    if workers < 1:
        raise ParameterError(f"--workers must be >= 1, got {workers}")
    cap = max_workers()
    if workers > cap:
        raise ParameterError(f"--workers {workers} is above the limit {cap}: the CPU cores available to this process "
                             "(at least 2); more worker processes than cores only compete for them (see docs/input.md)")
    return workers
