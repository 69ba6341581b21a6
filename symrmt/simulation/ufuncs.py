"""Float64 special functions for the simulation layer (NumPy only)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["numpy_erf"]


def numpy_erf():
    """A vectorized float64 ``erf``, taking an array and returning one of its shape (SciPy's when installed, else
    :func:`math.erf` elementwise).

    >>> erf = numpy_erf()
    >>> [round(float(v), 12) for v in erf(np.array([0.0, 0.5, -0.5]))]
    [0.0, 0.520499877813, -0.520499877813]
    """
    try:
        from scipy.special import erf  # noqa: PLC0415

        return erf
    except ImportError:  # pragma: no cover - scipy is optional
        uf = np.frompyfunc(math.erf, 1, 1)
        return lambda x: np.asarray(uf(x), dtype=np.float64)
