"""The one file-trust rule, for every file whose contents can change what symrmt prints.

A file (or folder) is trusted when it is not a symbolic link (checked with ``os.lstat``), is a
regular file or a folder (not a FIFO, a device or a socket), is owned by the current user, and is
not writable by group or others.  The code cache applies
it to its folder and entries (which hold code); the trial store applies it to its file
(which holds trials that enter a Monte-Carlo mean); the input files (weights and matrices,
diagonal laws, geometries, check candidates) are read only when it holds.  See docs/input.md.
"""

from __future__ import annotations

import os
import stat

from symrmt.errors import ParameterError

__all__ = ["untrusted", "input_file_size"]


def untrusted(path) -> str | None:
    """Why ``path`` (a file or folder) must not be trusted, or ``None`` when it may be (or is missing).

    Takes a path (``str`` or ``Path``); returns the reason as one sentence naming the path, or ``None``.

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     os.chmod(d, 0o700)
    ...     ok = untrusted(d)
    ...     os.symlink(d, d + "/link")
    ...     os.chmod(d, 0o777)
    ...     reasons = untrusted(d), untrusted(d + "/link")
    >>> ok, reasons[0].endswith("is writable by group or others (mode 777)"), reasons[1].endswith("is a symbolic link")
    (None, True, True)
    """
    try:
        st = os.lstat(path)
    except OSError:
        return None  # missing: nothing to load
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link"
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return f"{path} is not a regular file (a FIFO, a device or a socket, whose reading may never end)"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}, not by the current user (uid {os.getuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def input_file_size(path, what: str, max_bytes: int, limit_note: str = "") -> int:
    """The size in bytes of an input file that passes the file-trust rule and the size cap ``max_bytes``.

    Takes the path, ``what`` (how messages name the file, e.g. ``"diag_file x.npy"``), the cap and an optional
    ``limit_note`` (why the cap, printed after it).  Raises :class:`~symrmt.errors.ParameterError` naming ``what``
    when the rule refuses the file, when it cannot be read (missing), or when it is larger than the cap.

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = os.path.join(d, "a.npy")
    ...     with open(f, "wb") as fh:
    ...         _ = fh.write(b"12345")
    ...     os.chmod(f, 0o600)
    ...     size = input_file_size(f, "a", 10)
    ...     try:
    ...         input_file_size(f, "a", 4, " (a test)")
    ...     except ParameterError as exc:
    ...         msg = str(exc)
    >>> size, msg
    (5, 'a: the file has 5 bytes, above the limit 4 (a test)')
    """
    why = untrusted(path)
    if why is not None:
        raise ParameterError(f"{what}: refused by the file-trust rule: {why}")
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise ParameterError(f"{what}: cannot read the file ({exc.strerror or exc})") from None
    if size > max_bytes:
        raise ParameterError(f"{what}: the file has {size} bytes, above the limit {max_bytes}{limit_note}")
    return size
