"""The reference point of ``symrmt bench``: the paper's 200-point curve (tanh, ``c = 1/2``, aligned geometry),
shared by the sections that time it."""

__all__ = ["CURVE_GEOMETRY", "CURVE_F", "CURVE_C"]

#: the geometry of the 200-point target curve: w_K, w_Q parallel to mu (rank-one Gram, route "aligned")
CURVE_GEOMETRY = {"snr": "1", "wk2": "1", "wq2": "1", "wkwq": "1", "muwk": "1", "muwq": "1"}
CURVE_F, CURVE_C = "tanh", "1/2"
