"""The node classes closed under the operators of the trace engine's language.

:class:`MatrixNode` and :class:`ScalarNode` define ``+ - * @ / **`` and ``.T``; the nodes those
operators build are here with them, since each operator may build any of them: the sums
(:class:`MatSum`, :class:`ScalarSum`), the products (:class:`MatProduct`,
:class:`ScalarProduct`), :class:`Scaled`, :class:`Transpose`, :class:`Inverse`,
:class:`Identity` (``M**0``), :class:`Const`, :class:`Power` and :class:`QuadForm` (a ``1 x 1``
product such as ``u.T*M*v``, on the unit dimension :data:`UNIT` of a vector's columns).  The
leaves the operators never build (random matrices, traces, derivatives, vectors) are elsewhere.

The examples build their trees from two ``goe(n)`` leaves:

>>> from symrmt.engine.lang.matrices import GOE
>>> n = Dim("n", sp.Integer(1))
>>> G, H = GOE("G", n), GOE("H", n)
>>> (2 * G + H).kind, (G * H).T.kind
('sum', 'transpose')
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
    """A Python number (read exactly: a float as the shortest decimal that prints it), Fraction, Decimal, SymPy
    number or Symbol, or scalar node, as a scalar node.  Raises :class:`ModelError` for a bool or anything else.

    >>> from fractions import Fraction
    >>> as_scalar(0.5), as_scalar(Fraction(1, 3)), as_scalar(sp.Symbol("g"))
    (Const(1/2), Const(1/3), Const(g))
    >>> as_scalar(True)
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: a bool is not a scalar
    """
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
    """A matrix expression; ``rows`` and ``cols`` are :class:`Dim`.  It defines ``+ -`` (matrices of one shape),
    ``* @`` (a product, or a deterministic scalar times the matrix), ``/`` (by a scalar), ``**`` (an integer
    power of a square matrix, at most :data:`MAX_POWER`; ``**0`` is the identity, a negative power an inverse)
    and ``.T``; each raises :class:`ModelError` for an operation outside the language.

    >>> from symrmt.engine.lang.matrices import GOE
    >>> G = GOE("G", Dim("n", sp.Integer(1)))
    >>> (G ** 0).kind, (G ** -2).kind, (G / 2).scalar, G.square
    ('identity', 'product', Const(1/2), True)
    >>> G + 1
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: cannot add the scalar 1 to a matrix; write it times I(dim)
    """

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
    """A scalar as the user wrote it, for messages: a constant's value, else the node's repr.

    >>> from symrmt.engine.lang.matrices import GOE, Trace
    >>> node_text(Const(sp.Rational(1, 2))), node_text(Trace(GOE("G", Dim("n", sp.Integer(1)))))
    ('1/2', "Trace(GOE('G', 'n'))")
    """
    return str(x.value) if isinstance(x, Const) else repr(x)


class Identity(MatrixNode):
    """The identity matrix of the dimension ``dim`` (``I(dim)``); its transpose is itself.

    >>> I = Identity(Dim("n", sp.Integer(1)))
    >>> I, I.T is I
    (Identity('n'), True)
    """

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
    """The sum of the matrix nodes ``terms``, all of one shape; a sum inside a sum is flattened.  Raises
    :class:`ModelError` for a term that is not a matrix or of another shape.

    >>> from symrmt.engine.lang.matrices import GOE
    >>> n = Dim("n", sp.Integer(1))
    >>> [t.name for t in MatSum((GOE("G", n) + GOE("H", n), GOE("G", n))).terms]
    ['G', 'H', 'G']
    """

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
    """The matrix product of the nodes ``factors`` (each one's columns the next one's rows); a product inside a
    product is flattened.  Raises :class:`ModelError` on a size mismatch.

    >>> from symrmt.engine.lang.matrices import GOE, Gaussian
    >>> n, p = Dim("n", sp.Integer(1)), Dim("p", sp.Symbol("c"))
    >>> P = MatProduct((Gaussian("Z", p, n), GOE("G", n)))
    >>> (P.rows.name, P.cols.name), len(MatProduct((P.T, P)).factors)
    (('p', 'n'), 3)
    """

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
    """The name of a vector leaf (kind ``"vector"``) or of its transpose; ``None`` for any other node.

    >>> from symrmt.engine.lang.vectors import Vector
    >>> u = Vector("u", Dim("p", sp.Symbol("c")))
    >>> vector_name(u), vector_name(u.T), vector_name(Identity(u.dim))
    ('u', 'u', None)
    """
    if isinstance(m, Transpose):
        m = m.matrix
    return m.name if m.kind == "vector" else None


def _vector_note(m) -> str:
    name = vector_name(m)
    return f" (the vector {name}{'.T' if isinstance(m, Transpose) else ''})" if name else ""


def identity_part(m):
    """``(g, rest)`` with ``m = g I + sum(rest)``: ``g`` the sum (a SymPy number or expression, ``0`` when there is
    none) of the coefficients of the terms ``I`` and ``c*I`` of ``m`` (a sum, or a single term), and ``rest`` the
    list of its other terms, in order.

    >>> from symrmt.engine.lang.matrices import GOE
    >>> n = Dim("n", sp.Integer(1))
    >>> identity_part(2 * Identity(n) + GOE("G", n) + Identity(n))
    (3, [GOE('G', 'n')])
    """
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
    """A deterministic scalar (a :class:`Const`, or what :func:`as_scalar` reads) times the matrix node ``matrix``;
    a scaled matrix scaled again folds into one.  Raises :class:`ModelError` for a random scalar (a trace, a
    quadratic form).

    >>> from symrmt.engine.lang.matrices import GOE, Trace
    >>> G = GOE("G", Dim("n", sp.Integer(1)))
    >>> Scaled(2, Scaled(3, G))
    Scaled(Const(6), GOE('G', 'n'))
    >>> Scaled(Trace(G), G)
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: a matrix may only be multiplied by a deterministic scalar (parameters, dimensions, numbers); a trace or a quadratic form times a matrix is not in the grammar
    """

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
    """The transpose of the matrix node ``matrix`` (rows and columns swapped); transposing it again gives
    ``matrix`` back.

    >>> from symrmt.engine.lang.matrices import Gaussian
    >>> Z = Gaussian("Z", Dim("p", sp.Symbol("c")), Dim("n", sp.Integer(1)))
    >>> Transpose(Z).rows.name, Transpose(Z).T is Z
    ('n', True)
    """

    kind = "transpose"
    _fields = ("matrix",)

    def __init__(self, matrix: MatrixNode):
        self.matrix = matrix
        self.rows, self.cols = matrix.cols, matrix.rows

    def transpose(self):
        return self.matrix


def square_matrix(matrix, not_matrix: str, not_square: str):
    """``matrix`` itself if it is a square matrix node.  Raises :class:`ModelError` saying ``not_matrix`` for
    anything but a matrix node, or ``not_square`` and the shape for a non-square one.

    >>> from symrmt.engine.lang.matrices import Gaussian
    >>> Z = Gaussian("Z", Dim("p", sp.Symbol("c")), Dim("n", sp.Integer(1)))
    >>> square_matrix(Z.T * Z, "not a matrix", "not square") == Z.T * Z
    True
    >>> square_matrix(Z, "not a matrix", "inv() of a non-square matrix")
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: inv() of a non-square matrix (p x n)
    """
    if not isinstance(matrix, MatrixNode):
        raise ModelError(not_matrix)
    if not matrix.square:
        raise ModelError(f"{not_square} ({matrix.rows.name} x {matrix.cols.name})")
    return matrix


class Inverse(MatrixNode):
    """The inverse of the square matrix node ``matrix``.  Raises :class:`ModelError` for a scalar or a non-square
    matrix.

    >>> from symrmt.engine.lang.matrices import GOE
    >>> n = Dim("n", sp.Integer(1))
    >>> Inverse(GOE("G", n) + Identity(n)).rows
    Dim('n', 1)
    """

    kind = "inverse"
    _fields = ("matrix",)

    def __init__(self, matrix: MatrixNode):
        self.matrix = square_matrix(matrix, "inv() takes a matrix; for a scalar s write 1/s",
                                    "inv() of a non-square matrix")
        self.rows = self.cols = matrix.rows


# ---------------------------------------------------------------- scalars

class ScalarNode(Node):
    """A scalar expression (deterministic, or built from traces).  It defines ``+ - * / **`` with numbers and other
    scalars (two constants fold into one) and ``*`` with a matrix (a :class:`Scaled`); ``.T`` raises
    :class:`ModelError`.

    >>> from symrmt.engine.lang.matrices import GOE, Trace
    >>> t = Trace(GOE("G", Dim("n", sp.Integer(1))))
    >>> (t + 1).kind, (2 * t).kind, (1 / t).kind, Const(2) + Const(3)
    ('ssum', 'sproduct', 'sproduct', Const(5))
    """

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
    """A deterministic scalar: a SymPy expression (or what :func:`sympy.sympify` reads) in ``n`` and the
    parameters.  Raises :class:`ModelError` for an expression holding a float literal.

    >>> Const("1/2").value, Const(sp.Symbol("gamma")) * 2
    (1/2, Const(2*gamma))
    >>> Const(0.5)
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: 0.500000000000000 holds a float literal; write it as a fraction
    """

    kind = "const"
    _fields = ("value",)

    def __init__(self, value):
        value = sp.sympify(value)
        if value.atoms(sp.Float):
            raise ModelError(f"{value} holds a float literal; write it as a fraction")
        self.value = value


class ScalarSum(ScalarNode):
    """The sum of the scalar nodes ``terms``; a sum inside a sum is flattened.

    >>> from symrmt.engine.lang.matrices import GOE, Trace
    >>> t = Trace(GOE("G", Dim("n", sp.Integer(1))))
    >>> len(ScalarSum((ScalarSum((t, t)), Const(1))).terms)
    3
    """

    kind = "ssum"
    _fields = ("terms",)

    def __init__(self, terms):
        self.terms = tuple(_flatten(terms, ScalarSum, "terms"))


class ScalarProduct(ScalarNode):
    """The product of the scalar nodes ``factors``; a product inside a product is flattened.

    >>> from symrmt.engine.lang.matrices import GOE, Trace
    >>> t = Trace(GOE("G", Dim("n", sp.Integer(1))))
    >>> len(ScalarProduct((ScalarProduct((t, t)), Const(2))).factors)
    3
    """

    kind = "sproduct"
    _fields = ("factors",)

    def __init__(self, factors):
        self.factors = tuple(_flatten(factors, ScalarProduct, "factors"))


class Power(ScalarNode):
    """``base ** exponent`` of a scalar with a rational exponent; a constant base folds to a :class:`Const` and a
    matrix base gives the matrix power.  Raises :class:`ModelError` for a random exponent or a trace raised to
    an irrational power.

    >>> from symrmt.engine.lang.matrices import GOE, Trace
    >>> t = Trace(GOE("G", Dim("n", sp.Integer(1))))
    >>> Power(t, -1), Power(Const(4), sp.Rational(1, 2))
    (Power(Trace(GOE('G', 'n')), -1), Const(2))
    >>> Power(t, sp.sqrt(2))
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: a trace may only be raised to a rational power, got sqrt(2)
    """

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
    """The scalar of a ``1 x 1`` matrix expression ``matrix``, such as ``u.T*M*v`` (a quadratic form); the matrix
    product builds it (:func:`product`).  Raises :class:`ModelError` for a matrix that is not ``1 x 1``.

    >>> from symrmt.engine.lang.matrices import GOE
    >>> QuadForm(GOE("G", Dim("n", sp.Integer(1))))
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: a quadratic form is a 1 x 1 product such as u.T*M*v
    """

    kind = "qform"
    _fields = ("matrix",)

    def __init__(self, matrix: MatrixNode):
        if not (isinstance(matrix, MatrixNode) and matrix.rows == UNIT and matrix.cols == UNIT):
            raise ModelError("a quadratic form is a 1 x 1 product such as u.T*M*v")
        self.matrix = matrix


def product(a, b):
    """``a @ b`` of two matrix nodes: a :class:`MatProduct`, or a :class:`QuadForm` when the product is ``1 x 1``.
    Raises :class:`ModelError` on a size mismatch.

    >>> from symrmt.engine.lang.vectors import Vector
    >>> from symrmt.engine.lang.matrices import Gaussian
    >>> p = Dim("p", sp.Symbol("c"))
    >>> u, v, M = Vector("u", p), Vector("v", p), Gaussian("M", p, p)
    >>> product(u.T, M * v).kind, product(u, v.T).kind
    ('qform', 'product')
    """
    out = MatProduct((a, b))
    if out.rows == UNIT and out.cols == UNIT:
        return QuadForm(out)
    return out
