"""The signs law ``signs(dim)``: a vector of iid ``+-1`` entries (norm ``sqrt(dim)``), independent of every
other random object; in a quadratic form it counts as a random vector of unit variance.

This module imports NumPy only (a Monte-Carlo worker reads its sampler without SymPy).

Examples
--------
>>> from symrmt.engine import Model
>>> m = Model()
>>> y = m.declare_vector("y=signs(n)")
>>> print(m.limit("y.T*y/n", at={}, digits=16))
1.0
"""

from __future__ import annotations

import numpy as np

from symrmt.engine.laws.registry import Law

__all__ = ["LAW", "declare", "sample"]


def declare(model, name: str, dim):
    """Declare the signs vector ``name`` of ``model``; returns its node.

    >>> from symrmt.engine import Model
    >>> declare(Model(), "y", "n").law
    'signs'
    """
    return model._vector(name, dim, "signs")


def sample(rows: int, cols: int, rng):
    """One draw: a ``rows x cols`` array of iid ``+-1`` entries.

    >>> import numpy as np
    >>> sorted(set(sample(4, 1, np.random.default_rng(0)).ravel().tolist()))
    [-1.0, 1.0]
    """
    return rng.integers(0, 2, size=(rows, cols)).astype(np.float64) * 2.0 - 1.0


LAW = Law("signs", "signs(dim)", "vector", "iid +-1 entries (norm sqrt(dim))", declare, sample=sample)
