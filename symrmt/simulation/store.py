"""The trial store: finished Monte-Carlo trials kept in one SQLite file (stdlib ``sqlite3``, WAL mode).

A store holds one row per trial: the vector of its results (for ``simulate``, the
Attention errors at every gamma followed by the ridge errors), the seconds it
took, and the point it belongs to.  A *point* is everything that decides a
trial's numbers except its index:

* ``kind``: the trial function's stable name (``"simulate"``, ``"ridge"``, ...);
* ``version``: the version of that function's numerics.  Sampling code that
  changes the numbers bumps it, so old rows are never mixed with new ones;
  they stay in the file and are reported as *stale*;
* ``params``: the exact model parameters as canonical JSON (sorted keys,
  rationals as ``"p/q"`` strings), including ``n``, the noise law and the root seed.

Trial ``j`` of a point always uses child ``j`` of ``SeedSequence(seed)``, so a
stored trial is the same number whichever run, executor or worker computed it.

Only the client process writes, and it commits each trial on its own, so an
interrupted run (Ctrl-C, kill, a lost worker) keeps every finished trial.

A file that is not a store (not SQLite, an SQLite file without the store's
``meta`` table, a damaged database) is refused with a one-line
:class:`StoreError` and never written to.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from symrmt.errors import ParameterError
from symrmt.errors import NonFiniteTrial, StoreError, TrialOutOfRange  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.trust import untrusted

__all__ = ["StoreError", "TrialStore", "canonical", "exact", "check_values", "NonFiniteTrial", "TrialOutOfRange"]

FORMAT = "symrmt-trial-store"
SCHEMA = "1"
_SQLITE_MAGIC = b"SQLite format 3\x00"

_CREATE = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE points (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, version TEXT NOT NULL, "
    "params TEXT NOT NULL, created REAL NOT NULL, UNIQUE (kind, version, params))",
    "CREATE TABLE trials (point INTEGER NOT NULL REFERENCES points(id), j INTEGER NOT NULL, "
    "data BLOB NOT NULL, seconds REAL NOT NULL, created REAL NOT NULL, PRIMARY KEY (point, j))",
)


def _norm_sql(sql) -> str:
    return " ".join(str(sql).split())


#: the store's whole schema: its three tables, as created by this package, and their automatic indexes
_TABLES = {stmt.split()[2]: _norm_sql(stmt) for stmt in _CREATE}


def _schema_mismatch(db) -> str | None:
    """Why the schema of an open (read-only) database is not exactly a store's, or ``None``: the same
    three tables with the same columns, no other table, view or trigger, and only SQLite's automatic
    indexes.  Checked before the file is opened for writing, so a file that is not a store is never
    written to (not even the journal mode in its header)."""
    rows = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    seen = set()
    for kind, name, table, sql in rows:
        if kind == "table":
            if name not in _TABLES:
                return f"an SQLite database with the table {name!r}, which a store does not have"
            if _norm_sql(sql) != _TABLES[name]:
                return f"the table {name!r} has other columns than a store's"
            seen.add(name)
        elif kind == "index" and sql is None and name.startswith("sqlite_autoindex_") and table in _TABLES:
            continue
        else:
            return f"an SQLite database with the {kind} {name!r}, which a store does not have"
    if seen != set(_TABLES):
        return "an SQLite database without the store's tables"
    return None


def exact(x) -> str:
    """A number as an exact rational string, the form the store keys use.

    >>> exact(0.5), exact("1/3"), exact(2)
    ('1/2', '1/3', '2')
    """
    if isinstance(x, float):
        return str(Fraction(x))
    return str(Fraction(x))


def canonical(params) -> str:
    """Canonical JSON of a key: sorted keys, no spaces.

    >>> canonical({"b": 1, "a": ["1/2", 3]})
    '{"a":["1/2",3],"b":1}'
    """
    return json.dumps(params, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _refuse(path, why: str) -> StoreError:
    return StoreError(f"{path} is not a symrmt trial store ({why}); refusing to touch it")


class TrialStore:
    """An open trial store (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The SQLite file.  A missing or empty file becomes a new store; an
        existing file must be a store written by this package.
    readonly : bool
        Open an existing store for reading only (nothing is written).

    Use as a context manager, or call :meth:`close`.

    Raises
    ------
    StoreError
        A file that is not a store, an untrusted file (a link, another user's, writable by others), or a
        missing file opened read-only.

    Examples
    --------
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "trials.sqlite")
    >>> with TrialStore(path) as st:
    ...     pid = st.point("demo", "1", {"n": 8, "seed": 0})
    ...     st.add(pid, 0, [0.25, 0.5], 0.01)
    ...     sorted(st.trials(pid)), st.trials(pid)[0].tolist()
    ([0], [0.25, 0.5])
    >>> with TrialStore.open_existing(path) as st:
    ...     [(r["kind"], r["trials"]) for r in st.summary()]
    [('demo', 1)]
    >>> with open(os.path.join(os.path.dirname(path), "x.txt"), "w") as fh:
    ...     _ = fh.write("hello")
    >>> TrialStore(os.path.join(os.path.dirname(path), "x.txt"))
    Traceback (most recent call last):
    ...
    symrmt.errors.StoreError: ...x.txt is not a symrmt trial store (not an SQLite database); refusing to touch it
    """

    def __init__(self, path, readonly: bool = False):
        self.path = Path(path)
        self._db = None
        exists = self.path.exists() and self.path.stat().st_size > 0
        if not readonly:  # its trials enter a Monte-Carlo mean: the code cache's trust rule applies
            why = untrusted(self.path)
            if why is not None:
                raise StoreError(f"not using the trial store: {why} (its trials would enter the results; "
                                 "see docs/input.md, 'trial store')")
        if exists:
            self._validate()
        if readonly:
            if not exists:
                raise StoreError(f"{self.path}: no such trial store")
            self._db = sqlite3.connect(self._ro_uri(), uri=True)
            return
        try:
            self._db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            if not exists:
                with self._db:
                    self._db.execute("BEGIN")
                    for stmt in _CREATE:
                        self._db.execute(stmt)
                    self._db.executemany("INSERT INTO meta VALUES (?, ?)", [("format", FORMAT), ("schema", SCHEMA)])
                os.chmod(self.path, 0o600)  # private whatever the umask, so the trust rule holds next time
        except sqlite3.Error as exc:
            self.close()
            raise StoreError(f"cannot open the trial store {self.path}: {exc}") from None

    # -- opening ---------------------------------------------------------------
    @classmethod
    def open_existing(cls, path) -> TrialStore:
        """An existing store, opened read-only (for listing); a missing file is an error."""
        return cls(path, readonly=True)

    def _validate(self) -> None:
        """Read-only checks of an existing file; nothing is written to it."""
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(f"cannot read the trial store {self.path}: {exc.strerror}") from None
        if head != _SQLITE_MAGIC:
            raise _refuse(self.path, "not an SQLite database")
        try:
            db = sqlite3.connect(self._ro_uri(), uri=True)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the trial store {self.path}: {exc}") from None
        try:
            check = db.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                raise _refuse(self.path, f"damaged database: {check[0][0]}")
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not {"meta", "points", "trials"} <= tables:
                raise _refuse(self.path, "an SQLite database without the store's tables")
            why = _schema_mismatch(db)
            if why is not None:
                raise _refuse(self.path, why)
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("format") != FORMAT:
                raise _refuse(self.path, f"format {meta.get('format')!r}")
            if meta.get("schema") != SCHEMA:
                raise StoreError(f"{self.path} is a symrmt trial store of schema {meta.get('schema')!r}, this "
                                 f"version reads schema {SCHEMA!r}; use a new store file")
        except sqlite3.Error as exc:
            raise _refuse(self.path, f"damaged database: {exc}") from None
        finally:
            db.close()

    def _ro_uri(self) -> str:
        """Read-only; with no -wal file beside it (no writer at work) also immutable, so that
        SQLite creates no -wal/-shm files next to a file that may not be ours."""
        wal = Path(str(self.path) + "-wal")
        return self.path.resolve().as_uri() + ("?mode=ro" if wal.exists() else "?mode=ro&immutable=1")

    def close(self) -> None:
        """Close the database connection (a second close does nothing)."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> TrialStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _q(self, sql, args=()):
        try:
            return self._db.execute(sql, args)
        except sqlite3.Error as exc:
            raise StoreError(f"trial store {self.path}: {exc}") from None

    # -- points and trials -----------------------------------------------------
    def point(self, kind: str, version: str, params, create: bool = True):
        """The id of the point ``(kind, version, params)`` (created when missing and ``create``), or ``None``."""
        key = canonical(params)
        row = self._q("SELECT id FROM points WHERE kind=? AND version=? AND params=?", (kind, version, key)).fetchone()
        if row is not None:
            return row[0]
        if not create:
            return None
        cur = self._q("INSERT INTO points (kind, version, params, created) VALUES (?, ?, ?, ?)",
                      (kind, version, key, time.time()))
        return cur.lastrowid

    def trials(self, point_id, below: int | None = None, width: int | None = None, bounds=None,
               kind: str = "trial") -> dict:
        """``{j: array}`` of the stored trials of a point (only ``j < below`` when given).

        Every row read is validated (:meth:`check_row`): a BLOB of little-endian float64 values,
        ``width`` of them when given, all finite, within ``bounds = (lo, hi)`` when given.  A row
        that fails is refused in one line naming it; nothing of it is used."""
        sql, args = "SELECT j, data FROM trials WHERE point=?", (point_id,)
        if below is not None:
            sql, args = sql + " AND j < ?", (point_id, int(below))
        return {j: self.check_row(point_id, j, blob, width, bounds, kind) for j, blob in self._q(sql, args)}

    def check_row(self, point_id, j, blob, width=None, bounds=None, kind: str = "trial") -> np.ndarray:
        """The values of one stored row, or an error naming it (see :meth:`trials`)."""
        where = f"the trial store {self.path}, point {point_id}, trial {j}"
        if not isinstance(j, int) or isinstance(j, bool) or j < 0:
            raise StoreError(f"{where}: the trial index {j!r} is not a non-negative integer; the store was edited "
                             "or damaged: use a new store file")
        if not isinstance(blob, bytes):
            raise StoreError(f"{where}: the row is {type(blob).__name__}, not a BLOB of float64 values; the store "
                             "was edited or damaged: use a new store file")
        if len(blob) % 8 or not blob:
            raise StoreError(f"{where}: the row has {len(blob)} bytes, not a whole number of float64 values; the "
                             "store was edited or damaged: use a new store file")
        row = np.frombuffer(blob, dtype="<f8").astype(np.float64)
        if width is not None and row.size != width:
            raise StoreError(f"{where}: the row has {row.size} values, a {kind} trial of this point has {width}; "
                             "the store was edited or damaged: use a new store file")
        check_values(row, j, kind, bounds, f" (stored in {where})")
        return row

    def stale(self, kind: str, version: str, params) -> dict:
        """``{version: number of trials}`` stored for the same point under other numerics versions."""
        rows = self._q("SELECT p.version, COUNT(t.j) FROM points p LEFT JOIN trials t ON t.point = p.id "
                       "WHERE p.kind=? AND p.params=? AND p.version<>? GROUP BY p.version",
                       (kind, canonical(params), version)).fetchall()
        return {v: k for v, k in rows if k}

    def add(self, point_id, j: int, values, seconds: float) -> None:
        """Store trial ``j`` of a point and commit it at once."""
        data = np.ascontiguousarray(values, dtype="<f8").tobytes()
        self._q("INSERT OR IGNORE INTO trials (point, j, data, seconds, created) VALUES (?, ?, ?, ?, ?)",
                (point_id, int(j), data, float(seconds), time.time()))

    def summary(self) -> list[dict]:
        """One dict per point: ``kind, version, params, trials, seconds`` (sum of trial times)."""
        rows = self._q("SELECT p.kind, p.version, p.params, COUNT(t.j), COALESCE(SUM(t.seconds), 0) "
                       "FROM points p LEFT JOIN trials t ON t.point = p.id GROUP BY p.id ORDER BY p.id").fetchall()
        out = []
        for k, v, p, t, s in rows:
            try:
                params = json.loads(p) if isinstance(p, str) else None
            except ValueError:
                params = None
            if not isinstance(params, dict) or not isinstance(k, str) or not isinstance(v, str):
                raise StoreError(f"the trial store {self.path}: a point's key ({str(p)[:60]!r}) is not the JSON "
                                 "object a store writes; the store was edited or damaged: use a new store file")
            out.append({"kind": k, "version": v, "params": params, "trials": int(t), "seconds": float(s)})
        return out


def check_values(row, j, kind: str, bounds=None, where: str = "") -> None:
    """The one check of a trial's values, fresh or stored: all finite, and within ``bounds`` (with a
    slack of 1e-9 for rounding).  A stored NaN is the same error as a fresh one.

    >>> check_values(np.array([0.5, float("nan")]), 3, "simulate")
    Traceback (most recent call last):
    ...
    symrmt.errors.NonFiniteTrial: trial 3 of a 'simulate' point returned a non-finite value (nan)
    """
    bad = ~np.isfinite(row)
    if bad.any():
        raise NonFiniteTrial(f"trial {j} of a {kind!r} point returned a non-finite value ({row[bad][0]}){where}")
    if bounds is not None:
        lo, hi = bounds
        out = (row < lo - 1e-9) | (row > hi + 1e-9)
        if out.any():
            raise TrialOutOfRange(f"trial {j} of a {kind!r} point holds {float(row[out][0])!r}, outside [{lo}, {hi}] "
                                  f"where its values lie{where}")


def open_store(store):
    """``(TrialStore, owned)`` for a path (opened here: ``owned`` is True, the caller closes it) or an open store
    (``owned`` False); ``(None, False)`` for ``None``.  Raises :class:`ParameterError` for anything else, and what
    :class:`TrialStore` raises.

    >>> open_store(None)
    (None, False)
    >>> open_store(3)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: store must be a path or a TrialStore, got int
    """
    if store is None:
        return None, False
    if isinstance(store, TrialStore):
        return store, False
    if isinstance(store, (str, os.PathLike)):
        return TrialStore(store), True
    raise ParameterError(f"store must be a path or a TrialStore, got {type(store).__name__}")
