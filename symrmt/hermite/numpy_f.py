"""``f`` as a vectorized float64 NumPy callable (:func:`numpy_function`), compiled from its SymPy expression."""

from __future__ import annotations

import numpy as np

from symrmt.codegen.compile import compile_expr
from symrmt.hermite.gaussian import T
from symrmt.simulation.ufuncs import numpy_erf

__all__ = ["numpy_function"]


def numpy_function(expr):
    """A vectorized float64 NumPy callable of the SymPy expression ``expr`` in ``t``: it takes an array (or a
    number) and returns a float64 array of its shape.

    Intermediate overflow that still gives a finite value (``exp(-t)`` in the sigmoid at ``t = -1000``) is
    silent; a non-finite output at a finite input raises ``FloatingPointError`` instead of returning ``inf``.

    >>> import sympy as sp
    >>> f = numpy_function(T ** 2 - 1)
    >>> f([0.0, 2.0]).tolist(), numpy_function(sp.Integer(3))([1.0, 2.0]).tolist()
    ([-1.0, 3.0], [3.0, 3.0])
    >>> numpy_function(sp.exp(T))([1000.0])
    Traceback (most recent call last):
    ...
    FloatingPointError: f = exp(t) overflowed in float64 at some inputs (|t| too large for this expression)
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
