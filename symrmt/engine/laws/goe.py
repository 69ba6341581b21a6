"""The GOE (Wigner) law ``goe(dim)``: a symmetric ``dim x dim`` matrix with ``N(0, 1)`` entries off the
diagonal, written ``G/sqrt(n)`` by the user (semicircle on ``[-2, 2]``).

Its pencil leaf (tagged ``"G"``, ``E[G M G] = tr(M)`` in the block fixed point) is read by
:mod:`symrmt.engine.reduce.linearize`; its sampler draws a zero diagonal, which does not enter the limit.
This module imports NumPy only (a Monte-Carlo worker reads its sampler without SymPy).

Examples
--------
>>> from symrmt.engine import Model
>>> m = Model()
>>> G = m.declare("G=goe(n)")
>>> print(m.limit("trace(inv(3*I(n) - G/sqrt(n)))", at={}, digits=16))  # (3 - sqrt(9 - 4))/2
0.3819660112501052
"""

from __future__ import annotations

import math

import numpy as np

from symrmt.engine.laws.registry import Law

__all__ = ["LAW", "declare", "sample"]


def declare(model, name: str, dim):
    """Declare the GOE matrix ``name`` of ``model`` over the declared dimension ``dim``; returns its node.

    >>> from symrmt.engine import Model
    >>> declare(Model(), "G", "n").kind
    'goe'
    """
    # import-time cost: a trial worker loads this law's sampler without SymPy or mpmath
    from symrmt.engine.lang.matrices import GOE

    model._matrix_name(name)
    node = model.matrices[name] = GOE(name, model._dim_of(dim))
    return node


def sample(rows: int, cols: int, rng):
    """One draw: ``(A + A^T)/sqrt(2)`` of a ``rows x rows`` standard Gaussian ``A``, its diagonal set to 0.

    >>> import numpy as np
    >>> g = sample(3, 3, np.random.default_rng(0))
    >>> bool(np.allclose(g, g.T)), float(np.abs(np.diag(g)).max())
    (True, 0.0)
    """
    a = rng.standard_normal((rows, rows))
    g = (a + a.T) * (1.0 / math.sqrt(2.0))
    np.fill_diagonal(g, 0.0)
    return g


LAW = Law("goe", "goe(dim)", "matrix", "symmetric, N(0, 1) off the diagonal; written G/sqrt(n)", declare,
          sample=sample)
