r"""Diagonal laws of the trace engine read from a file: ``diag_file(dim, FILE.npy)``.

A law of hundreds or thousands of atoms (the spectrum of a weight matrix) does not fit in a
typed declaration (the parser's node and character limits, :data:`symrmt.parsing.LIMITS`).
``symrmt trace --matrix 'D=diag_file(p, spectrum.npy)'`` reads it from a NumPy ``.npy`` file
instead; in Python, ``Model.declare("D=diag_file(p, spectrum.npy)")`` or
``Model.diag(name, dim, *load_law(path))`` does the same.

The file must pass the file-trust rule (:func:`symrmt.trust.untrusted`: not a symbolic link, owned by the
current user, not writable by group or others).  It is read with ``allow_pickle=False`` (a pickled object array is refused, nothing in it
runs) and validated before any value reaches the engine:

* at most :data:`MAX_FILE_BYTES` bytes (1 MiB: 4096 atoms with their weights take 64 KiB);
* a real numeric array (integers or floats) of shape ``(k,)`` (the values, equal weights
  ``1/k``) or ``(2, k)`` (row 0 the values, row 1 the weights), ``1 <= k <=``
  :data:`~symrmt.engine.lang.node.MAX_ATOMS` (4096);
* every entry finite; every weight ``> 0``, and the weights summing to 1 within
  :data:`WEIGHT_SUM_TOL` (``1e-9``; they are then divided by their exact sum, so that the law
  the engine solves has weights summing to exactly 1).

Each float is read as the shortest decimal that prints it (``0.51`` is ``51/100``), as symrmt
reads every Python float: a law saved from ``[(50 + a) / 100 for a in range(300)]`` is the law typed as
those fractions.
"""

from __future__ import annotations

import os
import re
from fractions import Fraction

import numpy as np

from symrmt.engine.laws.registry import Law
from symrmt.errors import ParameterError
from symrmt.trust import input_file_size

__all__ = ["LAW", "declare", "declare_text", "load_law", "parse_diag_file", "MAX_FILE_BYTES", "WEIGHT_SUM_TOL"]

#: the largest ``diag_file`` file read (bytes)
MAX_FILE_BYTES = 1 << 20
#: the weights of a file must sum to 1 within this (they are then normalized exactly)
WEIGHT_SUM_TOL = 1e-9

_CALL = re.compile(r"\s*diag_file\s*\(\s*([A-Za-z][A-Za-z0-9_]*)\s*,\s*(?P<q>['\"]?)(?P<path>[^'\"]+?)(?P=q)\s*\)\s*")


def parse_diag_file(rhs: str, what: str):
    """The dimension and the path of the text ``diag_file(dim, FILE.npy)`` (the path may be quoted); the text is
    matched, not evaluated.  Raises :class:`ParameterError`, naming ``what``, for any other text.

    >>> parse_diag_file('diag_file(p, "spectrum.npy")', "D")
    ('p', 'spectrum.npy')
    >>> parse_diag_file("diag_file(p)", "D")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: D: write diag_file(dim, FILE.npy), got 'diag_file(p)'
    """
    m = _CALL.fullmatch(rhs)
    if not m:
        raise ParameterError(f"{what}: write diag_file(dim, FILE.npy), got {rhs[:80]!r}")
    return m.group(1), m.group("path").strip()


def _exact(x) -> Fraction:
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


def load_law(path):
    """``(values, weights)`` of a diagonal law from the ``.npy`` file at ``path``, as lists of exact Fractions (the
    module docstring gives the format and the checks; equal weights ``1/k`` for a 1-D array).  Raises
    :class:`~symrmt.errors.ParameterError` naming what is wrong.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "law.npy")
    >>> np.save(path, np.array([[1.0, 4.0], [0.25, 0.75]]))
    >>> load_law(path)
    ([Fraction(1, 1), Fraction(4, 1)], [Fraction(1, 4), Fraction(3, 4)])
    >>> load_law("law.txt")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: diag_file law.txt: a NumPy .npy file is needed (np.save(path, array))
    """
    # import-time cost: a trial worker loads this law's sampler without SymPy or mpmath
    from symrmt.engine.lang.node import MAX_ATOMS

    path = os.fspath(path)
    what = f"diag_file {path}"
    if not path.endswith(".npy"):
        raise ParameterError(f"{what}: a NumPy .npy file is needed (np.save(path, array))")
    input_file_size(path, what, MAX_FILE_BYTES, f" (1 MiB; {MAX_ATOMS} atoms with weights take 64 KiB)")
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ParameterError(f"{what}: not a readable .npy array without pickles ({exc})") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iuf":
        raise ParameterError(f"{what}: the array must hold real numbers (integers or floats), got "
                             f"{getattr(arr, 'dtype', type(arr).__name__)}")
    if arr.ndim == 1:
        values, weights = arr, None
    elif arr.ndim == 2 and arr.shape[0] == 2:
        values, weights = arr[0], arr[1]
    else:
        raise ParameterError(f"{what}: the array must have shape (k,) (values, equal weights) or (2, k) "
                             f"(values and weights), got {arr.shape}")
    k = values.shape[0]
    if not 1 <= k <= MAX_ATOMS:
        raise ParameterError(f"{what}: a law of 1 to {MAX_ATOMS} atoms, got {k}")
    values = values.astype(np.float64) if values.dtype.kind == "f" else values
    if not np.all(np.isfinite(values)):
        raise ParameterError(f"{what}: every value must be finite")
    vals = [_exact(x) for x in values.tolist()]
    if weights is None:
        return vals, [Fraction(1, k)] * k
    if not np.all(np.isfinite(weights)) or not np.all(weights > 0):
        raise ParameterError(f"{what}: every weight must be finite and positive")
    ws = [_exact(w) for w in weights.tolist()]
    total = sum(ws, Fraction(0))
    if abs(total - 1) > WEIGHT_SUM_TOL:
        raise ParameterError(f"{what}: the weights sum to {float(total)!r}, not 1 (within {WEIGHT_SUM_TOL:g})")
    return vals, [w / total for w in ws]


def declare(model, name: str, dim, path):
    """Declare the diagonal matrix ``name`` of ``model`` over ``dim`` with the law of the file ``path``
    (:func:`load_law`); returns its node.

    >>> import numpy as np, tempfile, os
    >>> from symrmt.engine import Model
    >>> path = os.path.join(tempfile.mkdtemp(), "law.npy")
    >>> np.save(path, np.array([1.0, 4.0]))
    >>> declare(Model(), "D", "n", path).values
    (1, 4)
    """
    return model.diag(name, dim, *load_law(path))


def declare_text(model, name: str, rhs: str):
    """Declare the diagonal matrix ``name`` of ``model`` from the text ``diag_file(dim, FILE.npy)``
    (:func:`parse_diag_file`, then :func:`declare`); returns its node.  Raises :class:`ParameterError` for
    another text and what :func:`load_law` raises.

    >>> from symrmt.engine import Model
    >>> declare_text(Model(), "D", "diag_file(n)")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: the declaration of D: write diag_file(dim, FILE.npy), got 'diag_file(n)'
    """
    dim, path = parse_diag_file(rhs, f"the declaration of {name}")
    return declare(model, name, dim, path)


LAW = Law("diag_file", "diag_file(dim, FILE.npy)", "matrix", "a diagonal law from a .npy array: shape (k,) values with equal weights, or (2, k) values and "
          "weights; at most 4096 atoms, 1 MiB",
          declare, declare_text=declare_text)
