r"""The general trace engine: from an expression alone to a certified large-n limit.

Public names (stable): :class:`Model` and the expression-tree classes of
:mod:`symrmt._engine.nodes` (``Gaussian``, ``GOE``, ``Identity``, ``Diagonal``,
``MatSum``, ``MatProduct``, ``Scaled``, ``Transpose``, ``Inverse``, ``Const``,
``Trace``, ``Diff``, ``ScalarSum``, ``ScalarProduct``, ``Power``, ``Dim``), the
tree utilities :func:`bind` (numeric values and sizes, for a NumPy simulation),
:func:`differentiate` (exact ``Diff`` removal) and :func:`walk`, and
:class:`ModelError`.

Examples
--------
>>> m = Model()
>>> m.dim("p", "c*n")
Dim('p', c)
>>> Z = m.gaussian("Z", "p", "n")
>>> e = m.parse("-gamma**2*diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)")
>>> e.kind
'sproduct'
"""

from __future__ import annotations

from ._engine.nodes import (  # noqa: F401
    GOE,
    Const,
    Diagonal,
    Diff,
    Dim,
    Gaussian,
    Identity,
    Inverse,
    MatProduct,
    MatSum,
    ModelError,
    Power,
    ScalarProduct,
    ScalarSum,
    Scaled,
    Trace,
    Transpose,
    walk,
)
from ._engine.model import Model  # noqa: F401
from ._engine.tree import bind, differentiate  # noqa: F401
