"""The Gaussian law: ``gaussian(rows, cols)``, a matrix of iid ``N(0, 1)`` entries (written ``Z/sqrt(n)``
by the user; ``Z.T*Z/n`` has the Marchenko-Pastur law), and ``gaussian_vector(dim)``, a vector of iid
``N(0, 1)`` entries (norm about ``sqrt(dim)``).

A matrix's pencil leaf (tagged ``"Z"``, ``E[Z M Z^T] = tr(M)``) is read by
:mod:`symrmt.engine.reduce.linearize`.  This module imports NumPy only (a Monte-Carlo worker reads its
sampler without SymPy).

Examples
--------
>>> from symrmt.engine import Model
>>> m = Model()
>>> Z = m.declare("Z=gaussian(n, n)")
>>> print(m.limit("trace(Z.T*Z/n)", at={}, digits=16))
1.0
"""

from __future__ import annotations

from symrmt.engine.laws.registry import Law

__all__ = ["LAW", "declare", "declare_vector", "sample"]


def declare(model, name: str, rows, cols):
    """Declare the ``rows x cols`` Gaussian matrix ``name`` of ``model``; returns its node.

    >>> from symrmt.engine import Model
    >>> declare(Model(), "Z", "n", "n").kind
    'gaussian'
    """
    # import-time cost: a trial worker loads this law's sampler without SymPy or mpmath
    from symrmt.engine.lang.matrices import Gaussian

    model._matrix_name(name)
    node = model.matrices[name] = Gaussian(name, model._dim_of(rows), model._dim_of(cols))
    return node


def declare_vector(model, name: str, dim):
    """Declare the Gaussian vector ``name`` of ``model`` (iid ``N(0, 1)`` entries); returns its node.

    >>> from symrmt.engine import Model
    >>> declare_vector(Model(), "g", "n").law
    'gaussian'
    """
    return model._vector(name, dim, "gaussian")


def sample(rows: int, cols: int, rng):
    """One draw: a ``rows x cols`` array of iid ``N(0, 1)`` entries.

    >>> import numpy as np
    >>> sample(2, 3, np.random.default_rng(0)).shape
    (2, 3)
    """
    return rng.standard_normal((rows, cols))


LAW = (
    Law("gaussian", "gaussian(rows, cols)", "matrix", "iid N(0, 1) entries; written Z/sqrt(n)", declare,
        sample=sample),
    Law("gaussian_vector", "gaussian_vector(dim)", "vector", "iid N(0, 1) entries (norm about sqrt(dim))",
        declare_vector, sample=sample),
)
