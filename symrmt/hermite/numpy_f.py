"""``f`` as a vectorized float64 NumPy callable: :func:`numpy_function` (what
:meth:`symrmt.hermite.Nonlinearity.numpy` returns, for the simulator).

It is compiled from ``f``'s SymPy expression by :func:`symrmt.codegen.compile.compile_expr`.
"""

from __future__ import annotations

import numpy as np

from symrmt.codegen.compile import compile_expr
from symrmt.hermite.gaussian import T
from symrmt.simulation.ufuncs import numpy_erf

__all__ = ["numpy_function"]


def numpy_function(expr):
    """A vectorized float64 NumPy callable of the SymPy expression ``expr`` in ``t``.

    Intermediate overflow that still gives a finite value (``exp(-t)`` in the sigmoid at
    ``t = -1000``) is silent; a non-finite output at a finite input raises ``FloatingPointError``
    instead of returning ``inf``.
    """
    raw = compile_expr(T, expr, modules=[{"erf": numpy_erf()}, "numpy"], cse=False, floats_ok=True)

    def f(x):
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(over="ignore"):
            y = np.asarray(raw(x), dtype=np.float64)
        if not np.all(np.isfinite(y[np.isfinite(x)] if y.shape == x.shape else y)):
            raise FloatingPointError(
                f"f = {expr} overflowed in float64 at some inputs (|t| too large for this expression)"
            )
        if y.shape != x.shape:
            y = np.broadcast_to(y, x.shape).copy()
        return y

    f.__doc__ = f"f(t) = {expr} (vectorized, float64)"
    return f
