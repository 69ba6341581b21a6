r"""The model language of the trace engine: dimensions, matrices and expressions.

A :class:`Model` holds the dimensions (ratios to the reference dimension ``n``),
the random and deterministic matrices, and the scalar parameters.  Expressions
are built from them with Python operators, or parsed from text by
:meth:`Model.parse` (through the package's one restricted parser: nothing in the
text runs code).  Every node checks its sizes when it is built.

This module documents the whole language and defines its leaves (``Gaussian``, ``GOE``,
``Diagonal``, ``DimConst``, ``Trace``, ``Diff``); the node classes that the operators build
(sums, products, ``Scaled``, ``Transpose``, ``Inverse``, ``Identity``, ``Const``, ``Power``, and
the quadratic form of a ``1 x 1`` product) are in :mod:`symrmt.engine.lang.algebra`, re-exported
here, and vectors in :mod:`symrmt.engine.lang.vectors`.

Conventions
-----------
- ``gaussian(a, b)``: an ``a x b`` matrix of iid ``N(0, 1)`` entries.
- ``goe(a)``: a symmetric ``a x a`` matrix, ``N(0, 1)`` off the diagonal (the
  diagonal does not enter the limit).
- ``I(a)``: the identity; ``diag(values, weights)``: a diagonal matrix whose
  entries take ``values[i]`` on a fraction ``weights[i]`` of the diagonal.
- All random matrices are independent.
- ``trace(M) = (1/N) tr M`` for a square ``N x N`` matrix ``M`` (normalized).
- ``*`` and ``@`` are both the matrix product; ``/`` divides by a scalar.
- ``diff(s, x)``: the derivative of the scalar ``s`` in the parameter ``x``.
- The user writes the scalings (``/n``, ``/sqrt(p)``).

Expression tree (stable; a visitor dispatches on ``node.kind``)
---------------------------------------------------------------
Matrix nodes carry ``rows`` and ``cols`` (:class:`Dim`):

============  =========================================  ===========================
kind          class and fields                           meaning
============  =========================================  ===========================
"gaussian"    ``Gaussian(name, rows, cols)``             iid N(0, 1) entries
"goe"         ``GOE(name, dim)``                         symmetric, N(0, 1) off-diagonal
"identity"    ``Identity(dim)``                          ``I``
"diag"        ``Diagonal(name, dim, values, weights)``   finite spectral law
"sum"         ``MatSum(terms)``                          ``terms[0] + terms[1] + ...``
"product"     ``MatProduct(factors)``                    ``factors[0] @ factors[1] @ ...``
"scaled"      ``Scaled(scalar, matrix)``                 deterministic scalar times a matrix
"transpose"   ``Transpose(matrix)``                      ``M.T``
"inverse"     ``Inverse(matrix)``                        ``M^{-1}``
============  =========================================  ===========================

Scalar nodes:

============  =========================================  ===========================
"const"       ``Const(value)``                           SymPy expression in ``n`` and
                                                         the parameters (deterministic)
"trace"       ``Trace(matrix)``                          ``(1/N) tr M``
"diff"        ``Diff(scalar, param)``                    ``d scalar / d param``
"ssum"        ``ScalarSum(terms)``                       sum of scalars
"sproduct"    ``ScalarProduct(factors)``                 product of scalars
"power"       ``Power(base, exponent)``                  ``base ** exponent`` (Rational)
============  =========================================  ===========================

``Dim(name, ratio)`` is a dimension of size ``ratio * n`` (``ratio`` a SymPy
expression in the parameters; ``n`` itself has ratio 1).  ``Const.value``,
``Dim.ratio``, ``Diagonal.values``/``weights`` and ``Power.exponent`` are SymPy
objects; :func:`bind` turns a tree into the same classes with Python floats
and integer sizes (the boundary a NumPy simulation reads), and
:func:`differentiate` removes every ``Diff`` node by exact differentiation of
the tree (``d M^{-1} = -M^{-1} dM M^{-1}``).

Examples
--------
>>> from symrmt.engine import Model
>>> m = Model()
>>> m.dim("p", "c*n")
Dim('p', c)
>>> Z = m.gaussian("Z", "p", "n")
>>> e = m.parse("trace(inv(Z.T*Z/n + gamma*I(n)))")
>>> e
Trace(Inverse(MatSum(...)))
>>> e.kind, e.matrix.rows.name
('trace', 'n')
"""

from __future__ import annotations

import sympy as sp

from symrmt.engine.lang.node import MAX_ATOMS, N, Dim, ModelError, Node, check_law, walk  # noqa: F401
from symrmt.engine.lang.algebra import (
    Const, Identity, Inverse, MatProduct, MatrixNode, MatSum, Power, ScalarNode, ScalarProduct, ScalarSum, Scaled,
    Transpose, as_scalar, node_text, square_matrix,
)

__all__ = [
    "ModelError", "Dim", "Node", "MatrixNode", "ScalarNode", "Gaussian", "GOE", "Identity", "Diagonal",
    "MatSum", "MatProduct", "Scaled", "Transpose", "Inverse", "Const", "Trace", "Diff", "ScalarSum",
    "ScalarProduct", "Power", "DimConst", "walk", "N", "as_scalar", "node_text",
]


class Gaussian(MatrixNode):
    """A ``rows x cols`` matrix (two :class:`Dim`) of iid ``N(0, 1)`` entries named ``name``.  Products check the
    sizes: a mismatch raises :class:`ModelError`.

    >>> n, p = Dim("n", sp.Integer(1)), Dim("p", sp.Symbol("c"))
    >>> Z = Gaussian("Z", p, n)
    >>> Z.T, (Z.T * Z).rows
    (Transpose(Gaussian('Z', 'p', 'n')), Dim('n', 1))
    >>> Z * Z
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: size mismatch in a product: (p x n) times (p x n)
    """

    kind = "gaussian"
    _fields = ("name", "rows", "cols")

    def __init__(self, name: str, rows: Dim, cols: Dim):
        self.name, self.rows, self.cols = name, rows, cols


class GOE(MatrixNode):
    """A symmetric ``dim x dim`` matrix named ``name``, iid ``N(0, 1)`` above the diagonal; its transpose is itself.

    >>> G = GOE("G", Dim("n", sp.Integer(1)))
    >>> G.T is G, (G.rows, G.cols)
    (True, (Dim('n', 1), Dim('n', 1)))
    """

    kind = "goe"
    _fields = ("name", "dim")

    def __init__(self, name: str, dim: Dim):
        self.name, self.dim = name, dim
        self.rows = self.cols = dim

    def transpose(self):
        return self


class Diagonal(MatrixNode):
    """A diagonal ``dim x dim`` matrix named ``name`` taking ``values[i]`` on a fraction ``weights[i]`` of its
    diagonal.

    ``values`` and ``weights`` become tuples of SymPy expressions; the weights are positive and sum to 1
    (checked when they are numbers: :func:`~symrmt.engine.lang.node.check_law`, whose :class:`ModelError` it
    raises).  Its transpose is itself.

    >>> D = Diagonal("D", Dim("n", sp.Integer(1)), [1, 4], ["1/4", "3/4"])
    >>> D.values, D.weights, D.T is D
    ((1, 4), (1/4, 3/4), True)
    """

    kind = "diag"
    _fields = ("name", "dim", "values", "weights")

    def __init__(self, name: str, dim: Dim, values, weights):
        values, weights = check_law(name, values, weights)
        self.name, self.dim, self.values, self.weights = name, dim, values, weights
        self.rows = self.cols = dim

    def transpose(self):
        return self


# ---------------------------------------------------------------- scalar leaves

class DimConst(Const):
    """The size ``ratio * n`` of the dimension ``dim`` used as a scalar (``n``, ``p``); also accepted where a
    dimension is.

    >>> c = DimConst(Dim("p", sp.Symbol("c")))
    >>> c.value, c.dim.name
    (c*n, 'p')
    """

    def __init__(self, dim: Dim):
        super().__init__(dim.size)
        self.dim = dim


class Trace(ScalarNode):
    """The normalized trace ``(1/N) tr M`` of the square ``N x N`` matrix node ``matrix``.  Raises
    :class:`ModelError` for a scalar or a non-square matrix.

    >>> n, p = Dim("n", sp.Integer(1)), Dim("p", sp.Symbol("c"))
    >>> Z = Gaussian("Z", p, n)
    >>> Trace(Z.T * Z).matrix.rows
    Dim('n', 1)
    >>> Trace(Z)
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: trace of a non-square block (p x n)
    """

    kind = "trace"
    _fields = ("matrix",)

    def __init__(self, matrix: MatrixNode):
        self.matrix = square_matrix(matrix, "trace() takes a matrix", "trace of a non-square block")


class Diff(ScalarNode):
    """The derivative of the scalar node ``scalar`` in the parameter ``param`` (a SymPy Symbol other than ``n``, or
    a :class:`Const` holding one).  Raises :class:`ModelError` for a matrix or another ``param``.

    >>> n, gamma = Dim("n", sp.Integer(1)), sp.Symbol("gamma")
    >>> s = Trace(Inverse(GOE("G", n) + Scaled(Const(gamma), Identity(n))))
    >>> Diff(s, Const(gamma)).param
    gamma
    >>> Diff(s, Const(sp.Integer(2)))
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: diff(., x) needs a parameter name for x, got 2
    """

    kind = "diff"
    _fields = ("scalar", "param")

    def __init__(self, scalar: ScalarNode, param):
        if not isinstance(scalar, ScalarNode):
            raise ModelError("diff() differentiates a scalar (take a trace first)")
        if isinstance(param, Const):
            param = param.value
        if not isinstance(param, sp.Symbol) or param == N:
            raise ModelError(f"diff(., x) needs a parameter name for x, got {param}")
        self.scalar, self.param = scalar, param
