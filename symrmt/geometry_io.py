"""Geometries from files: the rank-``r`` Gram JSON or ``.npy`` vectors of ``--geometry``, and their JSON record.

Examples
--------
>>> from symrmt.geometry import Geometry
>>> geometry_record(Geometry(snr="1/2"))
{'snr': '1/2', 'wk2': '0', 'wq2': '0', 'wkwq': '0', 'muwk': '0', 'muwq': '0'}
"""

from __future__ import annotations

import json

from symrmt.geometry import Geometry, LowRankGeometry
from symrmt.params import ParameterError, to_fraction

__all__ = ["load_geometry", "geometry_record"]


def load_geometry(path: str, alpha=None):
    """A :class:`LowRankGeometry` from a JSON Gram file or a ``.npy`` array of vectors (see ``--geometry``)."""
    import os

    if not os.path.isfile(path):
        raise ParameterError(f"--geometry: no such file {path!r}")
    if path.endswith(".npy"):
        import numpy as np

        try:
            vecs = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ParameterError(f"--geometry: cannot read {path!r} as a .npy array: {exc}") from None
        if vecs.dtype.kind not in "fiu":  # strings, objects, complex, bool, structured: not real vectors
            raise ParameterError(f"--geometry: {path!r} holds an array of dtype {vecs.dtype}; it must hold real "
                                 "numbers (a float or integer dtype)")
        if vecs.ndim != 2 or vecs.shape[0] % 2 == 0 or not np.all(np.isfinite(vecs)):
            raise ParameterError(
                f"--geometry: {path!r} must hold a finite (2r+1, p) array whose rows are mu, w_K^1..r, w_Q^1..r; "
                f"got shape {vecs.shape}"
            )
        r = (vecs.shape[0] - 1) // 2
        return LowRankGeometry.from_vectors(vecs[0], vecs[1:1 + r].T, vecs[1 + r:].T, 1 if alpha is None else alpha)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
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
    inner product rounded to 1000+ digits) as a decimal at ``digits`` unless ``exact``."""
    from symrmt.results import decimal_text, is_long

    def t(v):
        return str(v) if exact or not is_long(v) else decimal_text(v, digits)

    extra = {} if getattr(geom, "projection", None) is None else {"psd_projection": geom.projection}
    if isinstance(geom, Geometry):
        return {**{k: t(v) for k, v in geom.as_dict().items()}, **extra}
    return {"r": geom.r, "alpha": t(geom.alpha), "gram": [[t(x) for x in row] for row in geom.gram()],
            **extra}
