"""The :class:`Model`: declarations of dimensions, matrices and parameters, and parsing.

Text goes through the package's one restricted parser; the objects it may call are
the nodes of :mod:`symrmt.engine.lang.matrices` and the functions ``trace``, ``inv``,
``diff``, ``sqrt`` and ``I``.
"""

from __future__ import annotations

import re
from fractions import Fraction

import sympy as sp

from symrmt.engine.lang.node import expanded_size
from symrmt.engine.lang.matrices import (
    MAX_ATOMS, GOE, N, Const, Diagonal, Diff, Dim, DimConst, Gaussian, Identity, Inverse, MatrixNode, ModelError,
    Node, Power, ScalarNode, Trace, as_scalar, node_text,
)
from symrmt.engine.lang.tree import bind, check_ratios, differentiate, walk  # noqa: F401  (re-exported)
from symrmt.engine.lang.vectors import Vector
from symrmt.engine.laws.registry import law, laws
from symrmt.errors import UnknownNameError
from symrmt.parsing import parse_expression
from symrmt.parsing.limits import LIMITS, ParseLimitError

__all__ = ["Model", "inv", "sqrt", "number_node", "check_expanded"]

# ---------------------------------------------------------------- model

_IDENT = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z_0-9]*)")
#: an identifier that is not called: ``inve`` in ``inve(x)`` is an unknown function, never a new parameter
_PARAM = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z_0-9]*)(?!\w)(?!\s*\()")
#: the words of the language and the keyword of every law (symrmt.engine.laws): never a parameter or a matrix
_RESERVED = {"trace", "inv", "diff", "sqrt", "I", "diag", "n", "vector"} | set(laws())
#: the keyword a declaration's text calls: ``goe`` in ``goe(n)``
_KEYWORD = re.compile(r"\s*([A-Za-z_][A-Za-z_0-9]*)\s*\(")
MAX_TEXT = 4000


class Model:
    """Dimensions, matrices and parameters of one model; builds, parses and solves expressions.

    Examples
    --------
    >>> m = Model()
    >>> m.dim("p", "c*n")
    Dim('p', c)
    >>> Z = m.gaussian("Z", "p", "n")
    >>> G = m.goe("G", "n")
    >>> e = m.parse("trace(inv(Z.T*Z/n + G/sqrt(n) + gamma*I(n)))")
    >>> sorted(map(str, m.params))
    ['c', 'gamma']
    """

    def __init__(self):
        self.dims = {"n": Dim("n", sp.Integer(1))}
        self.matrices = {}
        self.named = {}  # name -> matrix sub-expression (Model.let)
        self.symbols = {"n": N}
        self._ratio_names = set()
        #: the Gaussians under a kernel and the kernels' fresh GOEs (the 1/n term does not cover them)
        self.kernel_names = set()

    # -- declarations
    @property
    def params(self):
        """The scalar parameters (SymPy symbols), dimension ratios included."""
        return tuple(s for k, s in self.symbols.items() if k != "n")

    def param(self, *names: str, positive: bool = False):
        """Declare scalar parameters; returns their :class:`Const` nodes (one, or a tuple)."""
        out = tuple(Const(self._symbol(nm, positive=positive)) for nm in names)
        return out[0] if len(out) == 1 else out

    def _symbol(self, name: str, positive: bool = False):
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise ModelError(f"{name!r} is not a valid name")
        if name in _RESERVED - {"n"} or name in self.matrices or name in self.named or \
                (name in self.dims and name != "n"):
            raise ModelError(f"{name!r} is already used (a function, matrix or dimension)")
        s = self.symbols.get(name)
        if s is None:
            s = self.symbols[name] = sp.Symbol(name, positive=True) if positive else sp.Symbol(name, real=True)
        elif positive and not s.is_positive:
            raise ModelError(f"{name!r} is a dimension ratio, so it must be declared before any other use")
        return s

    def dim(self, name: str, ratio) -> Dim:
        """Declare a dimension of size ``ratio * n`` (``ratio``: text such as ``"c"``, ``"2*c"`` or
        ``"c*n"``, or a SymPy expression); the parameters in it are positive."""
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise ModelError(f"{name!r} is not a valid name")
        if name in self.dims or name in self.symbols or name in self.matrices or name in self.named or \
                name in _RESERVED:
            raise ModelError(f"{name!r} is already used")
        if isinstance(ratio, str):
            for ident in _IDENT.findall(ratio[:MAX_TEXT]):
                if ident != "n" and ident not in self.dims and ident not in _RESERVED:
                    self._symbol(ident, positive=True)
            names = {k: Const(v) for k, v in self.symbols.items()}
            names.update({k: DimConst(d) for k, d in self.dims.items()})
            value = _parse(ratio, names, {"sqrt": sqrt}, what=f"the size of {name}")
            if not isinstance(value, Const):
                raise ModelError(f"the size of {name} must be a parameter expression")
            ratio = value.value
        elif isinstance(ratio, Fraction):
            ratio = sp.Rational(ratio.numerator, ratio.denominator)
        elif isinstance(ratio, bool) or not isinstance(ratio, (int, sp.Expr)):
            raise ModelError(f"the size of {name} must be a text such as 'c*n', an integer, a Fraction or a SymPy "
                             f"expression, got {type(ratio).__name__}")
        ratio = sp.sympify(ratio)
        if ratio.has(N):
            ratio = sp.simplify(ratio / N)
        if ratio.has(N) or not ratio.free_symbols <= set(self.symbols.values()) or ratio.is_positive is False:
            raise ModelError(f"the size of {name} must be a positive ratio times n, got {ratio}*n")
        d = self.dims[name] = Dim(name, ratio)
        return d

    def check_ratios(self, values) -> None:
        """Every dimension ratio must be positive at the evaluation point (after substitution): the
        ratio ``(c-1)`` is refused at ``c = 1/2``, ``(c-1)**2`` at ``c = 1`` (:class:`ModelError`)."""
        check_ratios(self.dims.values(), values)

    def _dim_of(self, x) -> Dim:
        if isinstance(x, Dim):
            return x
        if isinstance(x, DimConst):
            return x.dim
        if isinstance(x, str) and x in self.dims:
            return self.dims[x]
        hint = f" (declare it first, e.g. Model.dim({x!r}, 'c*n'))" if isinstance(x, str) and x.isidentifier() else ""
        raise ModelError(f"{node_text(x) if isinstance(x, Node) else x!r} is not a declared dimension{hint}")

    def _matrix_name(self, name: str):
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise ModelError(f"{name!r} is not a valid matrix name")
        if name in self.matrices or name in self.named or name in self.dims or name in self.symbols or \
                name in _RESERVED:
            raise ModelError(f"{name!r} is already used")

    def __getattr__(self, attr):
        """``model.<keyword>(name, ...)`` declares a matrix or vector of a law of :mod:`symrmt.engine.laws`
        that has no method of its own here (the law's ``declare``)."""
        if not attr.startswith("_") and attr in laws():
            return lambda name, *args: law(attr).declare(self, name, *args)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    def gaussian(self, name: str, rows, cols) -> Gaussian:
        """Declare an independent ``rows x cols`` Gaussian matrix (iid ``N(0, 1)`` entries;
        :mod:`symrmt.engine.laws.gaussian`)."""
        return law("gaussian").declare(self, name, rows, cols)

    def goe(self, name: str, dim) -> GOE:
        """Declare an independent symmetric Gaussian (GOE-type) matrix, ``N(0, 1)`` off the diagonal
        (:mod:`symrmt.engine.laws.goe`)."""
        return law("goe").declare(self, name, dim)

    def diag(self, name: str, dim, values, weights=None) -> Diagonal:
        """Declare a deterministic diagonal matrix with a finite spectral law (equal weights by default).

        Values and weights: numbers, fraction strings or parameter names.
        """
        self._matrix_name(name)
        values = list(values)
        if len(values) > MAX_ATOMS:  # before any value is read
            raise ModelError(f"diag {name}: at most {MAX_ATOMS} atoms, got {len(values)}")
        values = [self._exact(v, f"diag {name} value") for v in values]
        if weights is None:
            weights = [sp.Rational(1, len(values))] * len(values)
        weights = [self._exact(w, f"diag {name} weight") for w in weights]
        dim = self._dim_of(dim)
        if any(isinstance(m, Diagonal) and m.dim == dim for m in self.matrices.values()):
            raise ModelError(f"dimension {dim.name} already has a diagonal matrix (their joint law is not given)")
        node = self.matrices[name] = Diagonal(name, dim, values, weights)
        return node

    def elliptic(self, name: str, dim, tau):
        """Declare an ``dim x dim`` elliptic matrix: iid ``N(0, 1)`` entries with ``corr(A_ij, A_ji) = tau``
        (:mod:`symrmt.engine.laws.elliptic`); returns its expression node."""
        return law("elliptic").declare(self, name, dim, tau)

    def matrix(self, name: str, rows, cols, data):
        """Declare a deterministic ``rows x cols`` matrix given by its entries (an array, or the path of a
        ``.npy`` file read under the file-trust rule and caps of :mod:`symrmt.engine.laws.given`)."""
        return law("matrix").declare(self, name, rows, cols, data)

    def vector(self, name: str, dim):
        """Declare a deterministic vector of dimension ``dim`` with O(1) norm; its inner products with
        the other deterministic vectors of ``dim`` are the parameters ``name.other`` (0 when not given)."""
        return self._vector(name, dim, "det")

    def vector_file(self, name: str, dim, data):
        """Declare a deterministic vector of dimension ``dim`` given by its entries (an array or a ``.npy``
        path, :mod:`symrmt.engine.laws.given`), in the basis of the given matrices of ``dim``."""
        return law("vector_file").declare(self, name, dim, data)

    def signs(self, name: str, dim):
        """Declare a vector of iid +-1 entries (norm ``sqrt(dim)``), independent of every other random object
        (:mod:`symrmt.engine.laws.signs`)."""
        return law("signs").declare(self, name, dim)

    def gaussian_vector(self, name: str, dim):
        """Declare a vector of iid ``N(0, 1)`` entries, independent of every other random object
        (:mod:`symrmt.engine.laws.gaussian`)."""
        return law("gaussian_vector").declare(self, name, dim)

    def _vector(self, name, dim, law):
        self._matrix_name(name)
        if "." in name:
            raise ModelError(f"{name!r} is not a valid vector name")
        dim = self._dim_of(dim)
        node = self.matrices[name] = Vector(name, dim, law)
        return node

    def vectors(self, law=None) -> dict:
        """name -> :class:`~symrmt.engine.lang.vectors.Vector` of the declared vectors (of one law)."""
        return {k: v for k, v in self.matrices.items() if v.kind == "vector" and (law is None or v.law == law)}

    def declare_vector(self, text: str):
        """Declare a vector from text: ``"beta=vector(p)"``, ``"y=signs(n)"`` or ``"g=gaussian_vector(n)"``."""
        if not isinstance(text, str) or "=" not in text:
            raise ModelError(f"a vector declaration reads NAME=vector(dim), signs(dim) or gaussian_vector(dim); "
                             f"got {text!r}")
        name, _, rhs = text.partition("=")
        name = name.strip()
        self._matrix_name(name)
        called = _called_law(rhs, "vector")
        if called is not None and called.declare_text is not None:  # a quoted path: vector_file(p, "v.npy")
            return called.declare_text(self, name, rhs)
        names = {k: DimConst(d) for k, d in self.dims.items()}
        out = {}

        def make(declare):
            def call(dim):
                out["node"] = declare(self, name, dim)
                return out["node"]
            return call

        calls = {"vector": make(lambda model, nm, dim: model._vector(nm, dim, "det"))}
        calls.update({k: make(one.declare) for k, one in laws().items() if one.kind == "vector" and not one.declare_text})
        _parse(rhs, names, calls, what=f"the declaration of {name}", dims=self.dims)
        if "node" not in out:
            raise ModelError(f"{text!r} declares no vector (write vector(dim), signs(dim) or gaussian_vector(dim))")
        return out["node"]

    def _exact(self, v, what):
        if isinstance(v, Const):
            return v.value
        if isinstance(v, str):
            names = {k: Const(s) for k, s in self.symbols.items() if k != "n"}
            for ident in _IDENT.findall(v[:MAX_TEXT]):
                if ident not in names and ident not in _RESERVED:
                    names[ident] = Const(self._symbol(ident))
            out = _parse(v, names, {"sqrt": sqrt}, what=what)
            if not isinstance(out, Const):
                raise ModelError(f"{what} must be a number or a parameter expression")
            return out.value
        return as_scalar(v).value

    def let(self, name: str, node):
        """Name a matrix sub-expression (a node or its text), so that parsed expressions may use it (returns the node).

        The name follows the rules of a matrix name and must be new; every matrix in ``node``
        must be declared in this model.

        Examples
        --------
        >>> m = Model(); Z = m.gaussian("Z", "n", "n")
        >>> W = m.let("W", Z.T * Z / m.size("n"))
        >>> m.parse("trace(W*W)") == Trace(W * W)
        True
        """
        self._matrix_name(name)
        if isinstance(node, str):  # the text of an expression, through the one parser
            node = self.parse(node, what=f"let {name}")
        if not isinstance(node, MatrixNode):
            raise ModelError(f"let {name}: a named sub-expression must be a matrix expression")
        check_expanded(node, f"let {name}")
        for x in walk(node):
            leaf = getattr(x, "name", None)
            if x.kind in ("gaussian", "goe", "diag", "vector") and self.matrices.get(leaf) != x:
                raise ModelError(f"let {name}: the matrix {leaf!r} in it is not declared in this model")
        self.named[name] = node
        return node

    def size(self, dim) -> DimConst:
        """The size of a dimension as a scalar (``m.size("n")`` is ``n``, ``m.size("p")`` is ``c n``)."""
        return DimConst(self._dim_of(dim))

    def identity(self, dim) -> Identity:
        """``I(dim)``."""
        return Identity(self._dim_of(dim))

    def declare(self, text: str):
        """Declare a matrix from text such as ``"Z=gaussian(p,n)"``, ``"G=goe(n)"`` or
        ``"D=diag([1,3],[1/4,3/4])"`` (through the restricted parser)."""
        if not isinstance(text, str) or "=" not in text:
            raise ModelError(f"a matrix declaration reads NAME=gaussian(a,b), goe(a) or diag(values, weights); got {text!r}")
        name, _, rhs = text.partition("=")
        name = name.strip()
        self._matrix_name(name)
        called = _called_law(rhs, "matrix")
        if called is not None and called.declare_text is not None:  # a quoted path: matrix(p, q, "S.npy")
            return called.declare_text(self, name, rhs)
        names = {k: DimConst(d) for k, d in self.dims.items()}
        if called is not None and called.params:  # elliptic(n, tau): its other names are parameters
            for ident in _IDENT.findall(rhs[:MAX_TEXT]):
                if ident not in self.dims and ident not in self.symbols and ident not in _RESERVED:
                    self._symbol(ident)
            names = {k: Const(s) for k, s in self.symbols.items() if k != "n"}
            names.update({k: DimConst(d) for k, d in self.dims.items()})
        out = {}

        def make(declare):
            def call(*args):
                out["node"] = declare(self, name, *args)
                return out["node"]
            return call

        def diag(*args):
            raise ModelError("declare a diagonal matrix with Model.diag(name, dim, values, weights)")

        calls = {k: make(one.declare) for k, one in laws().items() if one.kind == "matrix" and not one.declare_text}
        calls["diag"] = diag
        got = _parse(rhs, names, calls, what=f"the declaration of {name}", whole_call=tuple(calls),
                     dims=self.dims)
        if "node" not in out or got is not out["node"]:  # nothing of the text may be dropped
            hint = f" (write {called.signature})" if called is not None else ""
            raise ModelError(f"{text!r} declares no matrix{hint}")
        return out["node"]

    # -- expressions
    def namespace(self, params=None) -> tuple[dict, dict]:
        """The ``(names, functions)`` the parser may call for this model."""
        names = {k: Const(s) for k, s in self.symbols.items()}
        names.update({k: DimConst(d) for k, d in self.dims.items()})
        names.update(self.matrices)
        names.update(self.named)
        functions = {
            "trace": Trace, "inv": inv, "diff": _diff, "sqrt": sqrt, "I": self.identity,
        }
        return names, functions

    def parse(self, text: str, params=None, *, what: str = "the expression"):
        """Parse an expression (a scalar or a matrix) with the package's restricted parser.

        Names that are neither a dimension nor a matrix become real parameters,
        unless ``params`` lists the allowed ones; ``what`` names the text in a refusal.
        """
        if not isinstance(text, str):
            raise ModelError("the expression must be text")
        if len(text) > MAX_TEXT:
            raise ModelError(f"the expression is longer than {MAX_TEXT} characters")
        for ident in _PARAM.findall(text):
            if ident in self.dims or ident in self.matrices or ident in self.named or ident in self.symbols or \
                    ident in _RESERVED:
                continue
            if params is not None and ident not in params:
                raise ModelError(f"unknown name {ident!r} (not a dimension, matrix or allowed parameter)")
            self._symbol(ident)
        names, functions = self.namespace()
        out = _parse(text, names, functions, what=what)
        if not isinstance(out, Node):
            raise ModelError(f"{what} is not a scalar or a matrix expression")
        check_expanded(out, what)
        return out

    def expr(self, x) -> Node:
        """``x`` as a node: text is parsed, a node is returned as is."""
        return self.parse(x) if isinstance(x, str) else x


def check_expanded(node, what: str = "the expression") -> None:
    """Refuse ``node`` when, written out as a tree (every named sub-expression replaced by its expression,
    every matrix power by its factors), it has more than ``LIMITS["expanded_nodes"]`` nodes
    (a ``ParseLimitError``, before any other work: the pencil grows with the written-out tree).

    >>> m = Model(); G = m.goe("G", "n")
    >>> W = m.let("W1", G * G / m.size("n"))
    >>> for k in range(2, 12):
    ...     W = m.let(f"W{k}", W * W)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParseLimitError: let W10: written out (every let name replaced by its expression, every matrix power by its factors) it has more than 2000 nodes, above the limit 2000 (LIMITS['expanded_nodes']); a chain of lets that multiplies a matrix by itself doubles it at every step
    """
    cap = LIMITS["expanded_nodes"]
    if isinstance(node, Node) and expanded_size(node, cap) > cap:
        raise ParseLimitError(
            f"{what}: written out (every let name replaced by its expression, every matrix power by its factors) "
            f"it has more than {cap} nodes, above the limit {cap} (LIMITS['expanded_nodes']); a chain of lets "
            "that multiplies a matrix by itself doubles it at every step")


def inv(m):
    """``inv(x)`` of the language: the inverse of a matrix (an :class:`Inverse` node), ``x**-1`` of a scalar (a
    :class:`Power` node).

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> type(inv(m.expr("G"))).__name__, inv(m.expr("trace(G)"))
    ('Inverse', Power(Trace(GOE('G', 'n')), -1))
    """
    if isinstance(m, ScalarNode):
        return Power(m, -1)
    return Inverse(m)


def sqrt(x):
    """``sqrt(x)`` of the language: of a scalar only (a :class:`Power` node; a matrix is refused with
    :class:`ModelError`).

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> sqrt(m.expr("trace(G)"))
    Power(Trace(GOE('G', 'n')), 1/2)
    >>> sqrt(m.expr("G"))
    Traceback (most recent call last):
        ...
    symrmt.errors.ModelError: sqrt() of a matrix is not supported (only of scalars such as sqrt(p))
    """
    if isinstance(x, MatrixNode):
        raise ModelError("sqrt() of a matrix is not supported (only of scalars such as sqrt(p))")
    return Power(as_scalar(x), sp.Rational(1, 2))


def number_node(q: Fraction) -> Const:
    """A numeric literal of the restricted parser (a :class:`~fractions.Fraction`) as an exact :class:`Const` node.

    >>> number_node(Fraction(3, 4))
    Const(3/4)
    """
    return Const(sp.Rational(q.numerator, q.denominator))


def _called_law(rhs: str, kind: str):
    """The law of :mod:`symrmt.engine.laws` whose keyword the text ``rhs`` calls, when it declares a ``kind``
    (``"matrix"`` or ``"vector"``); None otherwise."""
    m = _KEYWORD.match(rhs)
    found = laws().get(m.group(1)) if m else None
    return found if found is not None and found.kind == kind else None


def _parse(text, names, functions, *, what, whole_call=None, dims=None):
    """The package's restricted parser, with numeric literals as exact :class:`Const` nodes.  ``dims``: the
    text declares a matrix or vector over these dimensions, so that an unknown name that resembles nothing
    known is most likely a dimension not declared (the message says how to declare it)."""
    try:
        return parse_expression(text, names, functions, what=what, attributes=("T",), number=number_node,
                                whole_call=whole_call)
    except UnknownNameError as exc:
        if dims is None or exc.called or exc.suggestions or exc.name in dims:
            raise
        raise exc.with_hint(f"if {exc.name} is a dimension, declare it first, e.g. Model.dim({exc.name!r}, 'c*n')") \
            from None


def diff_of(*args):
    """``diff(E, theta)`` of an expression: :class:`~symrmt.engine.lang.matrices.Diff` of a scalar ``E`` in one parameter.

    Raises :class:`ModelError` for another number of arguments (a second derivative is
    ``diff(diff(E, theta), theta)``).

    >>> diff_of(1, 2, 2)
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: diff takes an expression and one parameter, diff(E, gamma), got 3 arguments; a second derivative is diff(diff(E, gamma), gamma)
    """
    if len(args) != 2:
        raise ModelError(f"diff takes an expression and one parameter, diff(E, gamma), got {len(args)} argument"
                         f"{'' if len(args) == 1 else 's'}; a second derivative is diff(diff(E, gamma), gamma)")
    return Diff(*args)


_diff = diff_of
