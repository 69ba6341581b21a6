"""The node classes closed under the operators of the trace engine's language.

:class:`MatrixNode` and :class:`ScalarNode` define ``+ - * @ / **`` and ``.T``; the nodes those
operators build are here with them, since each operator may build any of them: the sums
(:class:`MatSum`, :class:`ScalarSum`), the products (:class:`MatProduct`,
:class:`ScalarProduct`), :class:`Scaled`, :class:`Transpose`, :class:`Inverse`,
:class:`Identity` (``M**0``), :class:`Const`, :class:`Power` and :class:`QuadForm` (a ``1 x 1``
product such as ``u.T*M*v``, on the unit dimension :data:`UNIT` of a vector's columns).  The
leaves the operators never build (``Gaussian``, ``GOE``, ``Diagonal``, ``DimConst``, ``Trace``,
``Diff``) are in :mod:`symrmt.engine.lang.matrices`, which documents the whole language and re-exports
these classes; vectors are in :mod:`symrmt.engine.lang.vectors`.
"""

from __future__ import annotations

import numbers
from decimal import Decimal

import sympy as sp

from symrmt.parsing.numbers import to_fraction
from symrmt.engine.lang.node import MAX_POWER, N, Dim, ModelError, Node

__all__ = [
    "MatrixNode", "ScalarNode", "Identity", "MatSum", "MatProduct", "Scaled", "Transpose", "Inverse", "Const",
    "ScalarSum", "ScalarProduct", "Power", "QuadForm", "UNIT", "as_scalar", "node_text", "product", "vector_name",
    "identity_part", "square_matrix",
]

#: the unit dimension of a vector's columns (size 1 at every n)
UNIT = Dim("1", 1 / N)


def as_scalar(x) -> ScalarNode:
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
            raise ModelError(f"cannot add the scalar {node_text(other)} to a matrix; write it times I(dim)")
        return MatSum((self, other))

    def __radd__(self, other):
        if isinstance(other, int) and other == 0:  # sum([...])
            return self
        return self.__add__(other)

    def __sub__(self, other):
        if not isinstance(other, MatrixNode):
            raise ModelError(f"cannot subtract the scalar {node_text(other)} from a matrix; write it times I(dim)")
        return MatSum((self, Scaled(Const(sp.Integer(-1)), other)))

    def __rsub__(self, other):
        raise ModelError(f"cannot subtract a matrix from the scalar {node_text(other)}; write the scalar times I(dim)")

    def __neg__(self):
        return Scaled(Const(sp.Integer(-1)), self)

    def __pos__(self):
        return self

    def __mul__(self, other):
        if isinstance(other, MatrixNode):
            return product(self, other)  # a 1 x 1 product (u.T*M*v) is a scalar
        return Scaled(as_scalar(other), self)

    def __rmul__(self, other):
        return Scaled(as_scalar(other), self)

    __matmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, MatrixNode):
            raise ModelError("division by a matrix is ambiguous; write A * inv(B) or inv(B) * A")
        return Scaled(Power(as_scalar(other), sp.Integer(-1)), self)

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


def node_text(x) -> str:
    """A scalar as the user wrote it: a constant's value, else the node's repr (for messages)."""
    return str(x.value) if isinstance(x, Const) else repr(x)


class Identity(MatrixNode):
    """The identity of a dimension."""

    kind = "identity"
    _fields = ("dim",)

    def __init__(self, dim: Dim):
        self.dim = dim
        self.rows = self.cols = dim

    def transpose(self):
        return self


def _flatten(items, cls, field) -> list:
    """``items`` with each node of the class ``cls`` replaced by its own ``field`` (a sum of sums is one
    sum, a product of products one product)."""
    flat = []
    for t in items:
        flat.extend(getattr(t, field) if isinstance(t, cls) else (t,))
    return flat


class MatSum(MatrixNode):
    """Sum of matrices of one shape."""

    kind = "sum"
    _fields = ("terms",)

    def __init__(self, terms):
        terms = tuple(terms)
        for t in terms:
            if not isinstance(t, MatrixNode):
                raise ModelError(f"cannot add {node_text(t)} to a matrix")
        flat = _flatten(terms, MatSum, "terms")
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
        flat = _flatten(factors, MatProduct, "factors")
        for a, b in zip(flat, flat[1:]):
            if a.cols != b.rows:
                raise ModelError(
                    f"size mismatch in a product: ({a.rows.name} x {a.cols.name}){_vector_note(a)} times "
                    f"({b.rows.name} x {b.cols.name}){_vector_note(b)}"
                )
        self.factors = tuple(flat)
        self.rows, self.cols = flat[0].rows, flat[-1].cols


def vector_name(m) -> str | None:
    """The name of a vector leaf (kind ``"vector"``) or its transpose (else None)."""
    if isinstance(m, Transpose):
        m = m.matrix
    return m.name if m.kind == "vector" else None


def _vector_note(m) -> str:
    name = vector_name(m)
    return f" (the vector {name}{'.T' if isinstance(m, Transpose) else ''})" if name else ""


def identity_part(m):
    """``(g, rest)`` with ``m = g I + sum(rest)``: ``g`` the sum (a SymPy number or expression, ``0``
    when there is none) of the coefficients of the terms ``I`` and ``c*I`` of ``m`` (a sum, or a single
    term), and ``rest`` the list of its other terms, in order."""
    terms = m.terms if isinstance(m, MatSum) else (m,)
    g, rest = sp.Integer(0), []
    for t in terms:
        if isinstance(t, Identity):
            g += 1
        elif isinstance(t, Scaled) and isinstance(t.matrix, Identity):
            g += t.scalar.value
        else:
            rest.append(t)
    return g, rest


class Scaled(MatrixNode):
    """A deterministic scalar times a matrix."""

    kind = "scaled"
    _fields = ("scalar", "matrix")

    def __init__(self, scalar, matrix: MatrixNode):
        scalar = as_scalar(scalar)
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


def square_matrix(matrix, not_matrix: str, not_square: str):
    """``matrix`` if it is a square matrix node; else a :class:`ModelError` saying ``not_matrix``, or
    ``not_square`` and the shape."""
    if not isinstance(matrix, MatrixNode):
        raise ModelError(not_matrix)
    if not matrix.square:
        raise ModelError(f"{not_square} ({matrix.rows.name} x {matrix.cols.name})")
    return matrix


class Inverse(MatrixNode):
    """Inverse of a square matrix."""

    kind = "inverse"
    _fields = ("matrix",)

    def __init__(self, matrix: MatrixNode):
        self.matrix = square_matrix(matrix, "inv() takes a matrix; for a scalar s write 1/s",
                                    "inv() of a non-square matrix")
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
        other = as_scalar(other)
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
        return self + (-as_scalar(other))

    def __rsub__(self, other):
        return as_scalar(other) + (-self)

    def __mul__(self, other):
        if isinstance(other, MatrixNode):
            return Scaled(self, other)
        other = as_scalar(other)
        if isinstance(self, Const) and isinstance(other, Const):
            return Const(self.value * other.value)
        return ScalarProduct((self, other))

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, MatrixNode):
            raise ModelError("division by a matrix is ambiguous; write s * inv(M)")
        return self * Power(as_scalar(other), sp.Integer(-1))

    def __rtruediv__(self, other):
        return as_scalar(other) * Power(self, sp.Integer(-1))

    def __pow__(self, k):
        return Power(self, k)

    def __rpow__(self, base):
        return Power(as_scalar(base), self)


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


class ScalarSum(ScalarNode):
    """Sum of scalars."""

    kind = "ssum"
    _fields = ("terms",)

    def __init__(self, terms):
        self.terms = tuple(_flatten(terms, ScalarSum, "terms"))


class ScalarProduct(ScalarNode):
    """Product of scalars."""

    kind = "sproduct"
    _fields = ("factors",)

    def __init__(self, factors):
        self.factors = tuple(_flatten(factors, ScalarProduct, "factors"))


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
        base = as_scalar(base)
        if isinstance(base, Const):
            return Const(base.value ** exponent)
        if not exponent.is_Rational:
            raise ModelError(f"a trace may only be raised to a rational power, got {exponent}")
        self = super().__new__(cls)
        self.base, self.exponent = base, exponent
        return self

    def __init__(self, base, exponent):
        pass


class QuadForm(ScalarNode):
    """The scalar of a ``1 x 1`` matrix expression, such as ``u.T*M*v`` (a quadratic form)."""

    kind = "qform"
    _fields = ("matrix",)

    def __init__(self, matrix: MatrixNode):
        if not (isinstance(matrix, MatrixNode) and matrix.rows == UNIT and matrix.cols == UNIT):
            raise ModelError("a quadratic form is a 1 x 1 product such as u.T*M*v")
        self.matrix = matrix


def product(a, b):
    """``a @ b``: a matrix product, or a :class:`QuadForm` when the product is ``1 x 1``."""
    out = MatProduct((a, b))
    if out.rows == UNIT and out.cols == UNIT:
        return QuadForm(out)
    return out
