"""Disk cache of the Python source that ``sympy.lambdify`` generates (start-up speed).

Deriving the fixed-point system and its Jacobian in SymPy and eliminating
common subexpressions takes seconds; the generated code itself is a plain
Python function.  This module stores that generated source text, so that a
later process can ``exec`` it instead of deriving it again.  Nothing here
writes a formula: a cache entry is only ever the text that ``lambdify``
printed from a recipe's SymPy expressions.

Key.  An entry is looked up by a SHA-256 of everything the expression and its
printing depend on: the recipe name, the bytes of ``symrmt/models/attention/equations.py`` and
``symrmt/models/attention/solver.py``, ``symrmt/models/attention/compiled.py`` and ``symrmt/codegen/compile.py``
(where the expressions are derived and assembled), and
the versions of Python, SymPy, mpmath and symrmt.  Changing any of them makes a
new key, so a stale entry is never used.  Each file also carries a SHA-256 of
its body; a truncated or edited file is ignored (and rewritten).

Location: ``$SYMRMT_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/symrmt``, else
``~/.cache/symrmt``.  ``SYMRMT_NO_CACHE=1`` turns the cache off.  A directory
that cannot be created or written is not an error: the code is then derived
in every process, as without a cache.

Trust.  A cache entry is executed, so the SHA-256 header (which only checks a
file against itself) is not what protects it: ownership and permissions are.
The directory is created with mode 0700.  An entry is loaded only when both the
directory and the file are owned by the current user and neither is writable
by group or others (checked with ``os.lstat``, so a symbolic link is refused
too).  Otherwise the entry is not read, one line on stderr says why, and the
code is derived from the SymPy expressions instead (nothing is written there
either).  Anyone who can write files as the current user can already run code
as that user, so this trusts exactly the user's own files.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

import mpmath
import sympy

from symrmt import __version__
from symrmt.trust import untrusted

__all__ = ["cache_dir", "source_key", "load", "store", "enabled", "trusted"]

FORMAT = "symrmt-lambdify-cache v1"
_HERE = Path(__file__).resolve().parent.parent
_KEY_FILES = ("models/attention/equations.py", "models/attention/solver.py", "models/attention/compiled.py",
              "codegen/compile.py")


def enabled() -> bool:
    """Whether the cache is on: False when the environment variable ``SYMRMT_NO_CACHE`` is set to anything but
    ``""`` or ``"0"``.

    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"SYMRMT_NO_CACHE": "1"}):
    ...     enabled()
    False
    >>> with mock.patch.dict(os.environ, {"SYMRMT_NO_CACHE": "0"}):
    ...     enabled()
    True
    """
    return os.environ.get("SYMRMT_NO_CACHE", "") in ("", "0")


def cache_dir() -> Path | None:
    """The cache directory (not created here): ``$SYMRMT_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/symrmt``, else
    ``~/.cache/symrmt``; ``None`` when the cache is off.

    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"SYMRMT_NO_CACHE": "", "SYMRMT_CACHE_DIR": "", "XDG_CACHE_HOME": "xdg"}):
    ...     cache_dir() == Path("xdg", "symrmt")
    True
    >>> with mock.patch.dict(os.environ, {"SYMRMT_NO_CACHE": "1"}):
    ...     print(cache_dir())
    None
    """
    if not enabled():
        return None
    explicit = os.environ.get("SYMRMT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "symrmt"


_FILES_DIGEST = None


def _files_digest() -> bytes:
    global _FILES_DIGEST
    if _FILES_DIGEST is None:
        h = hashlib.sha256()
        for name in _KEY_FILES:
            h.update(name.encode())
            h.update((_HERE / name).read_bytes())
        _FILES_DIGEST = h.digest()
    return _FILES_DIGEST


def source_key(name: str) -> str:
    """The hex SHA-256 key (64 characters) of the recipe ``name``: it covers the name, the versions of Python, SymPy,
    mpmath and symrmt, and the bytes of the files where the expressions are derived (the module docstring).

    >>> k = source_key("demo")
    >>> len(k), k == source_key("demo"), k == source_key("demo@numpy")
    (64, True, False)
    """
    h = hashlib.sha256()
    for part in (FORMAT, name, sys.version, sympy.__version__, mpmath.__version__, __version__):
        h.update(part.encode())
        h.update(b"\0")
    h.update(_files_digest())
    return h.hexdigest()


def _path(name: str, key: str) -> Path | None:
    d = cache_dir()
    if d is None:
        return None
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)
    return d / f"{safe}-{key[:24]}.py"


_WARNED: set = set()


def _untrusted(path: Path) -> str | None:
    """Why ``path`` (a file or directory) must not be trusted, or ``None`` when it may be
    (the package's one trust rule, :func:`symrmt.trust.untrusted`)."""
    return untrusted(path)


def trusted(path: Path) -> bool:
    """Whether ``path`` (a :class:`~pathlib.Path`) and its directory pass the trust checks of the module docstring
    (a missing file or directory passes: there is nothing to load); otherwise one line on stderr (once per
    reason) and False.

    >>> trusted(Path("no-such-directory") / "entry.py")
    True
    """
    for p in (path.parent, path):
        why = _untrusted(p)
        if why is not None:
            if why not in _WARNED:
                _WARNED.add(why)
                print(f"symrmt: not loading the code cache: {why}; deriving instead "
                      "(see docs/input.md, 'code cache')", file=sys.stderr)
            return False
    return True


def load(name: str, key: str) -> str | None:
    """The cached source text for ``(name, key)``, or ``None`` when it is missing, unreadable, corrupted, stale or
    untrusted (the module docstring), or when the cache is off.  Raises nothing.

    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"SYMRMT_NO_CACHE": "1"}):
    ...     print(load("demo", source_key("demo")))
    None
    """
    path = _path(name, key)
    if path is None:
        return None
    if not trusted(path):
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    head, sep, body = text.partition("\n# end of header\n")
    if not sep:
        return None
    lines = head.splitlines()
    if len(lines) != 3 or lines[0] != f"# {FORMAT}" or lines[1] != f"# key: {key}":
        return None
    if lines[2] != f"# sha256: {hashlib.sha256(body.encode()).hexdigest()}":
        return None
    return body


def store(name: str, key: str, body: str) -> bool:
    """Write ``body`` as the entry ``(name, key)``, atomically, under a header with the key and the body's SHA-256;
    returns True when written, False (silently) when the cache is off or its directory is not writable or not the
    user's alone.

    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"SYMRMT_NO_CACHE": "1"}):
    ...     store("demo", source_key("demo"), "x = 1")
    False
    """
    path = _path(name, key)
    if path is None:
        return False
    header = f"# {FORMAT}\n# key: {key}\n# sha256: {hashlib.sha256(body.encode()).hexdigest()}\n# end of header\n"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if _untrusted(path.parent) is not None:
            return False  # never write into a directory that is not ours alone
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(header + body)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        return False
    return True
