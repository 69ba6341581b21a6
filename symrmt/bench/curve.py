"""The reference point of ``symrmt bench``: the paper's 200-point curve (tanh, ``c = 1/2``, aligned geometry),
shared by the sections that time it."""

__all__ = ["CURVE_GEOMETRY", "CURVE_F", "CURVE_C", "CURVE_POINTS", "curve_gammas"]

#: the geometry of the 200-point target curve: w_K, w_Q parallel to mu (rank-one Gram, route "aligned")
CURVE_GEOMETRY = {"snr": "1", "wk2": "1", "wq2": "1", "wkwq": "1", "muwk": "1", "muwq": "1"}
CURVE_F, CURVE_C = "tanh", "1/2"
#: its number of points
CURVE_POINTS = 200


def curve_gammas(k: int) -> list[str]:
    """``k`` log-spaced gammas from 1e-3 to 1e2, as exact decimal strings.

    >>> curve_gammas(6)
    ['0.001', '0.01', '0.1', '1', '10', '100']
    """
    return [f"{10 ** (-3 + 5 * i / (k - 1)):.6g}" for i in range(k)]

