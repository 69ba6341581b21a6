"""Disk cache of the Python source that ``sympy.lambdify`` generates (start-up speed).

Deriving the fixed-point system and its Jacobian in SymPy and eliminating
common subexpressions takes seconds; the generated code itself is a plain
Python function.  This module stores that generated source text, so that a
later process can ``exec`` it instead of deriving it again.  Nothing here
writes a formula: a cache entry is only ever the text that ``lambdify``
printed from the SymPy expressions of :mod:`symrmt.models.attention.equations`.

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
    """False when ``SYMRMT_NO_CACHE`` is set to anything but ``""``/``0``."""
    return os.environ.get("SYMRMT_NO_CACHE", "") in ("", "0")


def cache_dir() -> Path | None:
    """The cache directory (not created here), or ``None`` when the cache is off."""
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
    """Hex SHA-256 key of recipe ``name`` (see the module docstring for what it covers)."""
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
    """True when the directory of ``path`` and ``path`` itself pass the trust checks (see the module
    docstring); otherwise one line on stderr (once per reason) and False."""
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
    """The cached source for ``(name, key)``, or ``None`` (missing, unreadable, corrupted, stale or
    untrusted: see the module docstring)."""
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
    """Write the entry atomically; ``False`` (silently) when the directory is not writable."""
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
