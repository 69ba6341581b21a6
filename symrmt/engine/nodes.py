r"""The model language of the trace engine: dimensions, matrices and expressions.

A :class:`Model` holds the dimensions (ratios to the reference dimension ``n``),
the random and deterministic matrices, and the scalar parameters.  Expressions
are built from them with Python operators, or parsed from text by
:meth:`Model.parse` (through the package's one restricted parser: nothing in the
text runs code).  Every node checks its sizes when it is built.

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

import numbers
from decimal import Decimal

import sympy as sp

from symrmt.models.attention.params import to_fraction
from symrmt.engine.base import MAX_ATOMS, MAX_POWER, N, Dim, ModelError, Node, check_law, walk  # noqa: F401

__all__ = [
    "ModelError", "Dim", "Node", "MatrixNode", "ScalarNode", "Gaussian", "GOE", "Identity", "Diagonal",
    "MatSum", "MatProduct", "Scaled", "Transpose", "Inverse", "Const", "Trace", "Diff", "ScalarSum",
    "ScalarProduct", "Power", "DimConst", "walk", "N",
]

def _scalar(x) -> ScalarNode:
    """A Python number, Fraction, SymPy number or scalar node as a scalar node."""
    if isinstance(x, ScalarNode):
        return x
    if isinstance(x, bool):
        raise ModelError("a bool is not a scalar")
    if isinstance(x, sp.Basic) and x.is_number or isinstance(x, sp.Symbol):
        return Const(sp.sympify(x))
    if isinstance(x, (numbers.Real, Decimal)) and not isinstance(x, str):
        # the package's one number reader: NumPy scalars, Decimal, finite floats, size limits
        q = to_fraction(x, "a scalar")
        return Const(sp.Rational(q.numerator, q.denominator))
    raise ModelError(f"{x!r} is not a scalar")


class MatrixNode(Node):
    """A matrix expression; ``rows`` and ``cols`` are :class:`Dim`."""

    rows: Dim
    cols: Dim

    @property
    def T(self):  # noqa: N802 - the matrix transpose, as in NumPy
        return self.transpose()

    def transpose(self):
        return Transpose(self)

    @property
    def square(self) -> bool:
        return self.rows == self.cols

    def __add__(self, other):
        if not isinstance(other, MatrixNode):
            raise ModelError(f"cannot add the scalar {_show(other)} to a matrix; write it times I(dim)")
        return MatSum((self, other))

    def __radd__(self, other):
        if isinstance(other, int) and other == 0:  # sum([...])
            return self
        return self.__add__(other)

    def __sub__(self, other):
        if not isinstance(other, MatrixNode):
            raise ModelError(f"cannot subtract the scalar {_show(other)} from a matrix; write it times I(dim)")
        return MatSum((self, Scaled(Const(sp.Integer(-1)), other)))

    def __rsub__(self, other):
        raise ModelError(f"cannot subtract a matrix from the scalar {_show(other)}; write the scalar times I(dim)")

    def __neg__(self):
        return Scaled(Const(sp.Integer(-1)), self)

    def __pos__(self):
        return self

    def __mul__(self, other):
        if isinstance(other, MatrixNode):
            from symrmt.engine.vectors import product  # a 1 x 1 product (u.T*M*v) is a scalar

            return product(self, other)
        return Scaled(_scalar(other), self)

    def __rmul__(self, other):
        return Scaled(_scalar(other), self)

    __matmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, MatrixNode):
            raise ModelError("division by a matrix is ambiguous; write A * inv(B) or inv(B) * A")
        return Scaled(Power(_scalar(other), sp.Integer(-1)), self)

    def __rtruediv__(self, other):
        raise ModelError("division by a matrix is ambiguous; write s * inv(M)")

    def __pow__(self, k):
        k = _integer_exponent(k)
        if not self.square:
            raise ModelError(f"only a square matrix has powers; this one is {self.rows.name} x {self.cols.name}")
        if k == 0:
            return Identity(self.rows)
        base = self if k > 0 else Inverse(self)
        return base if abs(k) == 1 else MatProduct((base,) * abs(k))


def _integer_exponent(k) -> int:
    if isinstance(k, Const):
        k = k.value
    if isinstance(k, sp.Basic):
        if not k.is_Integer:
            raise ModelError(f"a matrix power must be an integer, got {k}")
        k = int(k)
    if not isinstance(k, int) or isinstance(k, bool):
        raise ModelError(f"a matrix power must be an integer, got {k!r}")
    if abs(k) > MAX_POWER:
        raise ModelError(f"matrix powers are limited to |k| <= {MAX_POWER}, got {k}")
    return k


def _show(x) -> str:
    return str(x.value) if isinstance(x, Const) else repr(x)


class Gaussian(MatrixNode):
    """``rows x cols`` matrix of iid ``N(0, 1)`` entries."""

    kind = "gaussian"
    _fields = ("name", "rows", "cols")

    def __init__(self, name: str, rows: Dim, cols: Dim):
        self.name, self.rows, self.cols = name, rows, cols


class GOE(MatrixNode):
    """Symmetric ``dim x dim`` matrix, iid ``N(0, 1)`` above the diagonal."""

    kind = "goe"
    _fields = ("name", "dim")

    def __init__(self, name: str, dim: Dim):
        self.name, self.dim = name, dim
        self.rows = self.cols = dim

    def transpose(self):
        return self


class Identity(MatrixNode):
    """The identity of a dimension."""

    kind = "identity"
    _fields = ("dim",)

    def __init__(self, dim: Dim):
        self.dim = dim
        self.rows = self.cols = dim

    def transpose(self):
        return self


class Diagonal(MatrixNode):
    """Diagonal matrix taking ``values[i]`` on a fraction ``weights[i]`` of its diagonal.

    ``values`` and ``weights`` are tuples of SymPy expressions; the weights are
    positive and sum to 1 (checked when they are numbers).
    """

    kind = "diag"
    _fields = ("name", "dim", "values", "weights")

    def __init__(self, name: str, dim: Dim, values, weights):
        values, weights = check_law(name, values, weights)
        self.name, self.dim, self.values, self.weights = name, dim, values, weights
        self.rows = self.cols = dim

    def transpose(self):
        return self


class MatSum(MatrixNode):
    """Sum of matrices of one shape."""

    kind = "sum"
    _fields = ("terms",)

    def __init__(self, terms):
        flat = []
        for t in terms:
            if not isinstance(t, MatrixNode):
                raise ModelError(f"cannot add {_show(t)} to a matrix")
            flat.extend(t.terms if isinstance(t, MatSum) else (t,))
        a = flat[0]
        for t in flat[1:]:
            if (t.rows, t.cols) != (a.rows, a.cols):
                raise ModelError(
                    f"size mismatch in a sum: {a.rows.name} x {a.cols.name}{_vector_note(a)} plus "
                    f"{t.rows.name} x {t.cols.name}{_vector_note(t)}"
                )
        self.terms = tuple(flat)
        self.rows, self.cols = a.rows, a.cols


class MatProduct(MatrixNode):
    """Matrix product."""

    kind = "product"
    _fields = ("factors",)

    def __init__(self, factors):
        flat = []
        for f in factors:
            flat.extend(f.factors if isinstance(f, MatProduct) else (f,))
        for a, b in zip(flat, flat[1:]):
            if a.cols != b.rows:
                raise ModelError(
                    f"size mismatch in a product: ({a.rows.name} x {a.cols.name}){_vector_note(a)} times "
                    f"({b.rows.name} x {b.cols.name}){_vector_note(b)}"
                )
        self.factors = tuple(flat)
        self.rows, self.cols = flat[0].rows, flat[-1].cols


def _vector_note(m) -> str:
    from symrmt.engine.vectors import vector_name

    name = vector_name(m)
    return f" (the vector {name}{'.T' if isinstance(m, Transpose) else ''})" if name else ""


class Scaled(MatrixNode):
    """A deterministic scalar times a matrix."""

    kind = "scaled"
    _fields = ("scalar", "matrix")

    def __init__(self, scalar, matrix: MatrixNode):
        scalar = _scalar(scalar)
        if not _deterministic(scalar):
            raise ModelError(
                "a matrix may only be multiplied by a deterministic scalar (parameters, dimensions, numbers); "
                "a trace or a quadratic form times a matrix is not in the grammar"
            )
        if isinstance(matrix, Scaled):
            scalar, matrix = scalar * matrix.scalar, matrix.matrix
        self.scalar, self.matrix = scalar, matrix
        self.rows, self.cols = matrix.rows, matrix.cols


class Transpose(MatrixNode):
    """Transpose."""

    kind = "transpose"
    _fields = ("matrix",)

    def __init__(self, matrix: MatrixNode):
        self.matrix = matrix
        self.rows, self.cols = matrix.cols, matrix.rows

    def transpose(self):
        return self.matrix


class Inverse(MatrixNode):
    """Inverse of a square matrix."""

    kind = "inverse"
    _fields = ("matrix",)

    def __init__(self, matrix: MatrixNode):
        if not isinstance(matrix, MatrixNode):
            raise ModelError("inv() takes a matrix; for a scalar s write 1/s")
        if not matrix.square:
            raise ModelError(f"inv() of a non-square matrix ({matrix.rows.name} x {matrix.cols.name})")
        self.matrix = matrix
        self.rows = self.cols = matrix.rows


# ---------------------------------------------------------------- scalars

class ScalarNode(Node):
    """A scalar expression (deterministic, or built from traces)."""

    @property
    def T(self):  # noqa: N802 - a scalar has no transpose: name the object (an undeclared vector, say)
        what = str(self.value) if isinstance(self, Const) else "a scalar"
        raise ModelError(f"{what} is not a declared vector or matrix, so it has no .T "
                         "(declare a vector with --vector NAME=vector(dim) or Model.vector)")

    def __add__(self, other):
        if isinstance(other, MatrixNode):
            return other.__add__(self)
        other = _scalar(other)
        if isinstance(self, Const) and isinstance(other, Const):
            return Const(self.value + other.value)
        return ScalarSum((self, other))

    __radd__ = __add__

    def __neg__(self):
        return Const(sp.Integer(-1)) * self

    def __pos__(self):
        return self

    def __sub__(self, other):
        if isinstance(other, MatrixNode):
            return other.__rsub__(self)
        return self + (-_scalar(other))

    def __rsub__(self, other):
        return _scalar(other) + (-self)

    def __mul__(self, other):
        if isinstance(other, MatrixNode):
            return Scaled(self, other)
        other = _scalar(other)
        if isinstance(self, Const) and isinstance(other, Const):
            return Const(self.value * other.value)
        return ScalarProduct((self, other))

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, MatrixNode):
            raise ModelError("division by a matrix is ambiguous; write s * inv(M)")
        return self * Power(_scalar(other), sp.Integer(-1))

    def __rtruediv__(self, other):
        return _scalar(other) * Power(self, sp.Integer(-1))

    def __pow__(self, k):
        return Power(self, k)

    def __rpow__(self, base):
        return Power(_scalar(base), self)


def _deterministic(s: ScalarNode) -> bool:
    return isinstance(s, Const)


class Const(ScalarNode):
    """A deterministic scalar: a SymPy expression in ``n`` and the parameters."""

    kind = "const"
    _fields = ("value",)

    def __init__(self, value):
        value = sp.sympify(value)
        if value.atoms(sp.Float):
            raise ModelError(f"{value} holds a float literal; write it as a fraction")
        self.value = value


class DimConst(Const):
    """The size of a dimension used as a scalar (``n``, ``p``); also accepted where a dimension is."""

    def __init__(self, dim: Dim):
        super().__init__(dim.size)
        self.dim = dim


class Trace(ScalarNode):
    """Normalized trace ``(1/N) tr M`` of a square matrix."""

    kind = "trace"
    _fields = ("matrix",)

    def __init__(self, matrix: MatrixNode):
        if not isinstance(matrix, MatrixNode):
            raise ModelError("trace() takes a matrix")
        if not matrix.square:
            raise ModelError(f"trace of a non-square block ({matrix.rows.name} x {matrix.cols.name})")
        self.matrix = matrix


class Diff(ScalarNode):
    """Derivative of a scalar in a parameter (a SymPy Symbol)."""

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


class ScalarSum(ScalarNode):
    """Sum of scalars."""

    kind = "ssum"
    _fields = ("terms",)

    def __init__(self, terms):
        flat = []
        for t in terms:
            flat.extend(t.terms if isinstance(t, ScalarSum) else (t,))
        self.terms = tuple(flat)


class ScalarProduct(ScalarNode):
    """Product of scalars."""

    kind = "sproduct"
    _fields = ("factors",)

    def __init__(self, factors):
        flat = []
        for t in factors:
            flat.extend(t.factors if isinstance(t, ScalarProduct) else (t,))
        self.factors = tuple(flat)


class Power(ScalarNode):
    """``base ** exponent`` with a rational exponent (a Const base folds to a Const)."""

    kind = "power"
    _fields = ("base", "exponent")

    def __new__(cls, base, exponent):
        if isinstance(exponent, Const):
            exponent = exponent.value
        if isinstance(exponent, ScalarNode):
            raise ModelError("an exponent must be a number or a parameter expression, not a trace")
        exponent = sp.sympify(exponent)
        if isinstance(base, MatrixNode):
            return base ** exponent
        base = _scalar(base)
        if isinstance(base, Const):
            return Const(base.value ** exponent)
        if not exponent.is_Rational:
            raise ModelError(f"a trace may only be raised to a rational power, got {exponent}")
        self = super().__new__(cls)
        self.base, self.exponent = base, exponent
        return self

    def __init__(self, base, exponent):
        pass


