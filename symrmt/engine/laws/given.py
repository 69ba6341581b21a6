r"""Deterministic matrices and vectors given by their entries, and their deterministic equivalent.

Declarations
------------
- ``matrix(p, q, "FILE.npy")`` (``--matrix 'S=matrix(p, q, "S.npy")'``; Python
  ``Model.matrix("S", "p", "q", array_or_path)``): a real ``p x q`` matrix used as given, of any
  shape, not necessarily symmetric or normal, usable anywhere in an expression (``S``, ``S.T``,
  products, inverses).
- ``vector_file(p, "FILE.npy")`` (``--vector 'v=vector_file(p, "v.npy")'``; Python
  ``Model.vector_file("v", "p", array_or_path)``): a deterministic vector given by its entries, in
  the same basis as the matrices of dimension ``p``: its inner products come from the entries.

A file is read only when the file-trust rule of :mod:`symrmt.trust` lets it (not a symbolic link,
owned by the current user, not writable by group or others), with ``numpy.load(allow_pickle=False)``,
at most :data:`MAX_FILE_BYTES` bytes and :data:`MAX_SIDE` rows or columns; it must hold a finite real
2-D array (a matrix) or 1-D array (a vector).  The first object of a dimension fixes its size; an
object of the same dimension with another size is refused naming both.  With the ratios of the
dimensions (``p = c*n``) at the evaluation point, the sizes fix ``n = p/c``; two dimensions whose
sizes disagree with their ratios are refused naming both objects.

Examples
--------
>>> import numpy as np
>>> from symrmt.engine import Model
>>> m = Model()
>>> m.dim("p", "c*n")
Dim('p', c)
>>> Z = m.gaussian("Z", "p", "n")
>>> S = m.matrix("S", "p", "p", np.diag([1.0, 2.0, 1.0, 2.0]))
>>> r = m.limit("trace(inv(S*Z*Z.T*S.T/n + gamma*I(p)))", at={"c": "1/2", "gamma": 1}, digits=25)
>>> r.digits
25
"""

from __future__ import annotations

import hashlib
import os
import re

import numpy as np

from symrmt.engine.lang.node import ModelError, walk
from symrmt.engine.lang.algebra import MatrixNode
from symrmt.engine.lang.vectors import Vector
from symrmt.engine.laws.registry import Law
from symrmt.errors import ParameterError
from symrmt.trust import input_file_size

__all__ = ["LAW", "GivenMatrix", "GivenVector", "declare_matrix", "declare_matrix_text", "declare_vector_file",
           "declare_vector_text", "load_array", "has_given", "MAX_FILE_BYTES", "MAX_SIDE"]

#: the largest file read (bytes): a 2048 x 2048 float64 matrix takes 32 MiB
MAX_FILE_BYTES = 1 << 25
#: the most rows or columns of a given matrix (each fixed-point step inverts a dense k*p x k*p matrix)
MAX_SIDE = 2048


class GivenMatrix(MatrixNode):
    """A deterministic ``rows x cols`` matrix (``rows``, ``cols``: :class:`~symrmt.engine.lang.node.Dim`) given by its
    entries (``data``: a read-only float64 array, as :func:`load_array` returns it).  Nodes compare by name,
    dimensions and the SHA-256 of the entries.

    >>> from symrmt.engine.lang.node import Dim
    >>> p = Dim("p", 1)
    >>> A = GivenMatrix("A", p, p, load_array(np.eye(2), "A", 2))
    >>> A == GivenMatrix("A", p, p, load_array(np.eye(2), "A", 2)), A == GivenMatrix("A", p, p, load_array(2 * np.eye(2), "A", 2))
    (True, False)
    """

    kind = "given"
    _fields = ("name", "rows", "cols", "digest")
    constant_leaf = True

    def __init__(self, name, rows, cols, data):
        self.name, self.rows, self.cols = name, rows, cols
        self.data = data
        self.digest = hashlib.sha256(data.tobytes()).hexdigest()


class GivenVector(Vector):
    """A deterministic vector of the dimension ``dim`` given by its entries (``data``: a read-only float64 array of
    length ``dim``'s size, as :func:`load_array` returns it); its law is ``"det"``.  Nodes compare by name,
    dimension and the SHA-256 of the entries.

    >>> from symrmt.engine.lang.node import Dim
    >>> v = GivenVector("v", Dim("p", 1), load_array([3.0, 4.0], "v", 1))
    >>> v.law, v.data.tolist()
    ('det', [3.0, 4.0])
    """

    _fields = ("name", "dim", "law", "digest")
    constant_leaf = True

    def __init__(self, name, dim, data):
        super().__init__(name, dim, "det")
        self.data = data
        self.digest = hashlib.sha256(data.tobytes()).hexdigest()


def load_array(source, what: str, ndim: int):
    """A finite real float64 array of ``ndim`` dimensions (read-only), from an array or a ``.npy`` path.

    A path passes the file-trust rule (:func:`symrmt.trust.untrusted`), the size cap
    :data:`MAX_FILE_BYTES` and ``numpy.load(allow_pickle=False)``; every side is at most
    :data:`MAX_SIDE`.  Raises :class:`~symrmt.errors.ParameterError` naming what is wrong.

    >>> load_array([[1, 2], [3, 4]], "S", 2).shape
    (2, 2)
    >>> load_array([1.0, float("nan")], "v", 1)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: v: every entry must be finite (1 is not)
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        what = f"{what} ({path})"
        if not path.endswith(".npy"):
            raise ParameterError(f"{what}: a NumPy .npy file is needed (np.save(path, array))")
        input_file_size(path, what, MAX_FILE_BYTES, " (32 MiB)")
        try:
            arr = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise ParameterError(f"{what}: not a readable .npy array without pickles ({exc})") from None
    else:
        try:
            arr = np.asarray(source)
        except Exception as exc:  # an object numpy cannot read as an array
            raise ParameterError(f"{what}: not an array ({exc})") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iuf":
        raise ParameterError(f"{what}: the array must hold real numbers (integers or floats), got "
                             f"{getattr(arr, 'dtype', type(arr).__name__)}")
    if ndim == 1 and arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != ndim:
        raise ParameterError(f"{what}: a {'matrix needs a 2-D' if ndim == 2 else 'vector needs a 1-D'} array, "
                             f"got shape {arr.shape}")
    if arr.size == 0 or max(arr.shape) > MAX_SIDE:
        raise ParameterError(f"{what}: every side must be 1 to {MAX_SIDE}, got shape {arr.shape}")
    arr = np.array(arr, dtype=np.float64)
    bad = np.argwhere(~np.isfinite(arr))
    if len(bad):
        raise ParameterError(f"{what}: every entry must be finite ({', '.join(map(str, bad[0]))} is not)")
    arr.setflags(write=False)
    return arr


def _check_size(model, dim, size, obj):
    sizes = model.__dict__.setdefault("given_sizes", {})
    if dim.name in sizes and sizes[dim.name][0] != size:
        other, osize = sizes[dim.name][1], sizes[dim.name][0]
        raise ModelError(f"{obj} gives dimension {dim.name} the size {size}, but {other} gives it {osize}")
    sizes.setdefault(dim.name, (size, obj))


def declare_matrix(model, name, rows, cols, data) -> GivenMatrix:
    """Declare the given ``rows x cols`` matrix ``name`` of ``model`` from an array or a ``.npy`` path.

    >>> import numpy as np
    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n")
    >>> S = declare_matrix(m, "S", "p", "p", np.eye(3))
    >>> S.rows.name, S.data.shape
    ('p', (3, 3))
    """
    model._matrix_name(name)
    r, c = model._dim_of(rows), model._dim_of(cols)
    arr = load_array(data, f"matrix {name}", 2)
    _check_size(model, r, arr.shape[0], f"matrix {name} ({arr.shape[0]} x {arr.shape[1]})")
    _check_size(model, c, arr.shape[1], f"matrix {name} ({arr.shape[0]} x {arr.shape[1]})")
    node = model.matrices[name] = GivenMatrix(name, r, c, arr)
    return node


def declare_vector_file(model, name, dim, data) -> GivenVector:
    """Declare the vector ``name`` of dimension ``dim`` from its entries (an array or a ``.npy`` path).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n")
    >>> declare_vector_file(m, "v", "p", [1.0, 0.0]).data.tolist()
    [1.0, 0.0]
    """
    model._matrix_name(name)
    d = model._dim_of(dim)
    arr = load_array(data, f"vector {name}", 1)
    _check_size(model, d, arr.shape[0], f"vector {name} (length {arr.shape[0]})")
    node = model.matrices[name] = GivenVector(name, d, arr)
    return node


def _file_call(model, name, rhs, fname, nargs):
    """``(dims, path)`` of the text ``fname(dim, ..., "FILE.npy")``: the dimensions through the restricted
    parser, the path (quoted) matched, never evaluated."""
    m = re.fullmatch(r"\s*" + fname + r"\s*\((?P<dims>[^'\"]*),\s*(?P<q>['\"])(?P<path>[^'\"]+)(?P=q)\s*\)\s*", rhs)
    if not m:
        raise ModelError(f"{name}: write {fname}({', '.join(['dim'] * nargs)}, \"FILE.npy\"), got {rhs[:80]!r}")
    dims = [x.strip() for x in m.group("dims").split(",")]
    if len(dims) != nargs or any(d not in model.dims for d in dims):
        raise ModelError(f"{name}: {fname}() takes {nargs} declared dimension(s) then a quoted path, got {rhs[:80]!r}")
    return dims, m.group("path")


def declare_matrix_text(model, name, rhs):
    """Declare the given matrix ``name`` of ``model`` from the text ``matrix(p, q, "FILE.npy")`` (two declared
    dimensions, a quoted path, matched, never evaluated); returns its :class:`GivenMatrix`.  Raises
    :class:`ModelError` for another text and what :func:`declare_matrix` raises.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n")
    >>> declare_matrix_text(m, "S", "matrix(p, p, S.npy)")  # the path must be quoted
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: S: write matrix(dim, dim, "FILE.npy"), got 'matrix(p, p, S.npy)'
    """
    (r, c), path = _file_call(model, name, rhs, "matrix", 2)
    return declare_matrix(model, name, r, c, path)


def declare_vector_text(model, name, rhs):
    """Declare the given vector ``name`` of ``model`` from the text ``vector_file(p, "FILE.npy")`` (a declared
    dimension, a quoted path, matched, never evaluated); returns its :class:`GivenVector`.  Raises
    :class:`ModelError` for another text and what :func:`declare_vector_file` raises.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n")
    >>> declare_vector_text(m, "v", 'vector_file(q, "v.npy")')  # q is not declared
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: v: vector_file() takes 1 declared dimension(s) then a quoted path, got 'vector_file(q, "v.npy")'
    """
    (d,), path = _file_call(model, name, rhs, "vector_file", 1)
    return declare_vector_file(model, name, d, path)


def has_given(expr) -> bool:
    """Whether the expression tree ``expr`` holds a given matrix or vector (a leaf with fixed entries).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n")
    >>> Z, S = m.gaussian("Z", "p", "n"), m.matrix("S", "p", "p", np.eye(2))
    >>> has_given(S * Z), has_given(Z * Z.T)
    (True, False)
    """
    return any(getattr(x, "constant_leaf", False) for x in walk(expr))


LAW = (
    Law("matrix", 'matrix(rows, cols, "FILE.npy")', "matrix", "a deterministic rows x cols matrix given by its entries: the value is the "
        "deterministic equivalent at that size; file-trust rule, 32 MiB, 2048 per side",
        declare_matrix, declare_text=declare_matrix_text),
    Law("vector_file", 'vector_file(dim, "FILE.npy")', "vector", "a deterministic vector given by its entries, in the basis of the given matrices",
        declare_vector_file, declare_text=declare_vector_text),
)
