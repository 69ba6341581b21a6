"""Geometries from files: the rank-``r`` Gram JSON or ``.npy`` vectors of ``--geometry``, and their JSON record.

Examples
--------
>>> from symrmt.models.attention.geometry import Geometry
>>> geometry_record(Geometry(snr="1/2"))
{'snr': '1/2', 'wk2': '0', 'wq2': '0', 'wkwq': '0', 'muwk': '0', 'muwq': '0'}
"""

from __future__ import annotations

import json
import operator
import os
from fractions import Fraction

from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.errors import ParameterError
from symrmt.trust import untrusted
from symrmt.models.attention.params import to_fraction
from symrmt.parsing import check_count
from symrmt.table import decimal_text, is_long

__all__ = ["load_geometry", "geometry_record", "exact_gram"]

#: largest JSON Gram file read (bytes), and its deepest nesting of brackets (a Gram needs 2, or 3 in a dict)
MAX_JSON_BYTES = 2_000_000
MAX_JSON_DEPTH = 4


def _check_json_depth(text: str, path: str) -> None:
    """Refuse JSON nested deeper than :data:`MAX_JSON_DEPTH` before parsing it (no deep recursion)."""
    depth = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise ParameterError(f"--geometry: {path!r} nests brackets deeper than {MAX_JSON_DEPTH}; a Gram "
                                     'file is {"gram": [[...], ...], "alpha": A} or a list of rows')
        elif ch in "]}":
            depth -= 1


def exact_gram(vecs) -> list:
    """The exact Gram matrix (Fractions) of the rows of a finite float64 array, in integer arithmetic.

    Each float is ``m 2^e`` with an integer ``m`` of at most 53 bits; with the smallest exponent
    ``E`` of the array every entry is the integer ``m 2^(e - E)`` times ``2^E``, so the Gram is
    ``2^(2E)`` times integer dot products (exact, and about 50 times faster than Fractions).

    Takes a ``(k, p)`` array-like; returns a ``k x k`` list of lists of Fractions.

    >>> exact_gram([[1, 0.5], [3, -0.25]])   # 1 + 1/4, 3 - 1/8, 9 + 1/16
    [[Fraction(5, 4), Fraction(23, 8)], [Fraction(23, 8), Fraction(145, 16)]]
    >>> exact_gram([[0.1]])[0][0] == Fraction(0.1) ** 2   # the float 0.1 squared, not 1/100
    True
    """
    # import-time cost: the CLI's start loads no NumPy
    import numpy as np

    vecs = np.asarray(vecs, dtype=np.float64)
    mant, ex = np.frexp(vecs)
    ints = (mant * 2.0**53).astype(np.int64)
    ex = ex.astype(np.int64) - 53
    nz = ints != 0
    if not nz.any():
        return [[Fraction(0)] * vecs.shape[0] for _ in range(vecs.shape[0])]
    emin = int(ex[nz].min())
    shift = np.where(nz, ex - emin, 0)
    rows = []
    for i in range(vecs.shape[0]):
        rows.append(list(map(operator.lshift, ints[i].tolist(), shift[i].tolist())))
    scale = Fraction(2) ** (2 * emin)
    k = len(rows)
    gram = [[Fraction(0)] * k for _ in range(k)]
    for i in range(k):
        for j in range(i, k):
            gram[i][j] = gram[j][i] = sum(map(operator.mul, rows[i], rows[j])) * scale
    return gram


def load_geometry(path: str, alpha=None):
    """A :class:`LowRankGeometry` from a JSON Gram file or a ``.npy`` array of vectors (see ``--geometry``).

    A JSON file holds ``{"gram": [[...]], "alpha": A}`` or just the list of rows; a ``.npy`` file a finite
    ``(2r+1, p)`` real array whose rows are ``mu, w_K^1..r, w_Q^1..r`` (its Gram is taken exactly,
    :func:`exact_gram`).  ``alpha`` overrides a file without one (and must agree with a file's own).

    Raises
    ------
    ParameterError
        No such file; a file that cannot be read, too large or too deeply nested; an array of the wrong
        dtype or shape; a JSON of another form; ``alpha`` contradicting the file's; a Gram matrix that is
        not PSD.

    Examples
    --------
    >>> load_geometry("no/such.json")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --geometry: no such file 'no/such.json'
    """
    why = untrusted(path)  # first: a FIFO is refused as such, not as a missing file
    if why is not None:
        raise ParameterError(f"--geometry: refused by the file-trust rule: {why}")
    if not os.path.isfile(path):
        raise ParameterError(f"--geometry: no such file {path!r}")
    if path.endswith(".npy"):
        # import-time cost: the CLI's start loads no NumPy
        import numpy as np

        try:  # mapped, not read: the shape is checked against the limits before any data is loaded
            vecs = np.load(path, allow_pickle=False, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise ParameterError(f"--geometry: cannot read {path!r} as a .npy array: {exc}") from None
        if vecs.dtype.kind not in "fiu":  # strings, objects, complex, bool, structured: not real vectors
            raise ParameterError(f"--geometry: {path!r} holds an array of dtype {vecs.dtype}; it must hold real "
                                 "numbers (a float or integer dtype)")
        if vecs.ndim == 2 and vecs.shape[0] % 2 == 1:
            r = (vecs.shape[0] - 1) // 2
            check_count(r, "rank", "geometry: the rank r of the low-rank weights (rows 2r+1 of the .npy array)")
            check_count(vecs.shape[1], "vector_length", "geometry: the length p of the .npy vectors")
            vecs = np.array(vecs)  # read into memory, within the limits
        if vecs.ndim != 2 or vecs.shape[0] % 2 == 0 or not np.all(np.isfinite(vecs)):
            raise ParameterError(
                f"--geometry: {path!r} must hold a finite (2r+1, p) array whose rows are mu, w_K^1..r, w_Q^1..r; "
                f"got shape {vecs.shape}"
            )
        return LowRankGeometry(exact_gram(vecs), 1 if alpha is None else alpha)
    if os.path.getsize(path) > MAX_JSON_BYTES:
        raise ParameterError(f"--geometry: {path!r} is larger than {MAX_JSON_BYTES} bytes, the limit of a JSON Gram "
                             "file (17 x 17 entries of up to 1100 digits fit)")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, ValueError) as exc:
        raise ParameterError(f"--geometry: cannot read {path!r} as JSON: {exc}") from None
    _check_json_depth(text, path)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParameterError(f"--geometry: cannot read {path!r} as JSON: {exc}") from None
    if isinstance(data, list):
        data = {"gram": data}
    if not isinstance(data, dict) or "gram" not in data or set(data) - {"gram", "alpha"}:
        raise ParameterError(f'--geometry: {path!r} must be {{"gram": [[...]], "alpha": A}} (alpha optional)')
    file_alpha = data.get("alpha", 1)
    if alpha is not None and "alpha" in data and to_fraction(file_alpha, "alpha") != to_fraction(alpha, "alpha"):
        raise ParameterError(f"--alpha {alpha} contradicts the file's alpha {file_alpha}")
    return LowRankGeometry(data["gram"], file_alpha if alpha is None else alpha)


def geometry_record(geom, digits: int = 15, exact: bool = False) -> dict:
    """JSON-ready description of a geometry: exact values as strings (``"1/2"``), a long one (an irrational
    inner product rounded to 1000+ digits) as a decimal at ``digits`` unless ``exact``.

    Takes a :class:`Geometry` (its six entries) or a :class:`LowRankGeometry` (``r``, ``alpha``, ``gram``);
    a geometry made PSD by projection adds ``psd_projection``.

    >>> geometry_record(LowRankGeometry([[1, 0, 0], [0, 1, "1/2"], [0, "1/2", 1]], alpha=2))
    {'r': 1, 'alpha': '2', 'gram': [['1', '0', '0'], ['0', '1', '1/2'], ['0', '1/2', '1']]}
    >>> geometry_record(Geometry.from_angles(2, 1, 1, cos_muwk="1/2"), digits=10)["muwk"]   # sqrt(2)/2
    '0.7071067812'
    """
    def t(v):
        return str(v) if exact or not is_long(v) else decimal_text(v, digits)

    extra = {} if getattr(geom, "projection", None) is None else {"psd_projection": geom.projection}
    if isinstance(geom, Geometry):
        return {**{k: t(v) for k, v in geom.as_dict().items()}, **extra}
    return {"r": geom.r, "alpha": t(geom.alpha), "gram": [[t(x) for x in row] for row in geom.gram()],
            **extra}
