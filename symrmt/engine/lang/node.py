"""The base of the trace engine's expression language: the reference dimension ``n``, :class:`Dim`,
the node base class :class:`Node`, :func:`walk`, the checks of a diagonal law and :class:`ModelError`.
"""

from __future__ import annotations

import sympy as sp

from symrmt.errors import ModelError  # noqa: F401  (defined in symrmt.errors, importable here)

__all__ = ["ModelError", "Dim", "Node", "walk", "expanded_size", "check_law", "N", "MAX_ATOMS", "SPLIT_ATOMS", "MAX_SPLIT_ATOMS", "MAX_POWER"]

N = sp.Symbol("n", positive=True)

#: most atoms of one diagonal law (a law of more than ``SPLIT_ATOMS`` is reduced to weighted sums,
#: :mod:`symrmt.engine.reduce.atoms`), most atoms a law split into blocks may have, most factors of a matrix power
MAX_ATOMS = 4096
SPLIT_ATOMS = 16
MAX_SPLIT_ATOMS = 64
MAX_POWER = 16


# ---------------------------------------------------------------- dimensions

class Dim:
    """A dimension named ``name`` of size ``ratio * n`` (``ratio`` a positive SymPy expression, e.g. ``c`` for
    ``p = c n``).  Dimensions compare by name, ratio and bound integer size (``count``).

    >>> p = Dim("p", sp.Symbol("c"))
    >>> p, p.size, p == Dim("p", sp.Symbol("c")), p == Dim("p", sp.Integer(2))
    (Dim('p', c), c*n, True, False)
    """

    __slots__ = ("name", "ratio", "count")

    def __init__(self, name: str, ratio):
        self.name = name
        self.ratio = ratio
        self.count = None  # the integer size, in a tree made by :func:`bind`

    # the ratio (and a bound size) are part of a dimension's identity: two models with the same name
    # for dimensions of different sizes must never share a memoized pencil or plan
    def __eq__(self, other):
        return isinstance(other, Dim) and other.name == self.name and other.ratio == self.ratio and \
            other.count == self.count

    def __hash__(self):
        return hash(("Dim", self.name, self.ratio, self.count))

    def __repr__(self):
        return f"Dim({self.name!r}, {self.ratio})"

    @property
    def size(self):
        """``ratio * n`` as a SymPy expression."""
        return self.ratio * N


# ---------------------------------------------------------------- nodes

class Node:
    """Base of every expression node; nodes are immutable and compare (and hash) by their kind and the fields
    named in ``_fields``.

    >>> from symrmt.engine.lang.matrices import GOE
    >>> n = Dim("n", sp.Integer(1))
    >>> GOE("G", n) == GOE("G", n), GOE("G", n) == GOE("H", n), (GOE("G", n) * GOE("H", n)).children()
    (True, False, (GOE('G', 'n'), GOE('H', 'n')))
    """

    kind = ""
    _fields: tuple = ()

    def _key(self):
        return (self.kind,) + tuple(getattr(self, f) for f in self._fields)

    def __eq__(self, other):
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self):
        # computed once per node (a node is immutable; hashing a tree walks all of it): the plan and pencil
        # memos hash the expression at every call
        h = self.__dict__.get("_hash")
        if h is None:
            h = self.__dict__["_hash"] = hash(self._key())
        return h

    def __repr__(self):
        inner = ", ".join(_short(getattr(self, f)) for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def children(self) -> tuple:
        """The child nodes (for a visitor)."""
        out = []
        for f in self._fields:
            v = getattr(self, f)
            if isinstance(v, Node):
                out.append(v)
            elif isinstance(v, tuple):
                out.extend(x for x in v if isinstance(x, Node))
        return tuple(out)


def _short(v) -> str:
    if isinstance(v, tuple) and len(v) > 1 and all(isinstance(x, Node) for x in v):
        return "..."
    if isinstance(v, tuple):
        return "(" + ", ".join(_short(x) for x in v) + ")"
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, Dim):
        return repr(v.name)
    return repr(v)


def walk(node):
    """Every node of the tree ``node`` (a generator), parents before children, left to right; a shared
    sub-expression is visited each time it occurs.

    >>> from symrmt.engine.lang.matrices import GOE
    >>> n = Dim("n", sp.Integer(1))
    >>> [x.kind for x in walk(GOE("G", n) * GOE("H", n) + GOE("G", n))]
    ['sum', 'product', 'goe', 'goe', 'goe']
    """
    stack = [node]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(x.children()))


def expanded_size(node, cap=None) -> int:
    """The number of nodes of ``node`` written out as a tree: a sub-expression used twice (a name of
    ``--let`` / :meth:`Model.let` used twice, a matrix power) counts twice.  Counted on the shared
    structure (linear in its distinct nodes); with ``cap``, the count stops once it passes ``cap``
    (a chain of lets that squares a matrix each time doubles the written-out tree at every step).

    >>> from symrmt.engine.lang.matrices import GOE
    >>> G = GOE("G", Dim("n", sp.Integer(1)))
    >>> W = G * G
    >>> expanded_size(W), expanded_size(W * W), expanded_size(W * W, cap=3) > 3
    (3, 5, True)
    """
    memo = {}
    stack = [(node, False)]
    while stack:  # post-order over the distinct nodes
        x, done = stack.pop()
        if done:
            total = 1
            for c in x.children():
                total += memo[id(c)]
            memo[id(x)] = total if cap is None else min(total, cap + 1)
        elif id(x) not in memo:
            memo[id(x)] = None
            stack.append((x, True))
            stack.extend((c, False) for c in x.children() if id(c) not in memo)
    return memo[id(node)]


def check_law(name: str, values, weights) -> tuple:
    """``(values, weights)`` of a diagonal law as tuples of SymPy expressions, checked: as many of each, at most
    :data:`MAX_ATOMS`, exact, finite, real and free of ``n``, and (when they are numbers) positive weights that
    sum to 1.  Raises :class:`ModelError`, naming the law ``name``, otherwise.

    >>> check_law("D", [1, 4], ["1/4", "3/4"])
    ((1, 4), (1/4, 3/4))
    >>> check_law("D", [1, 4], ["1/2", "1/4"])
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: diag D: weights must be positive and sum to 1, got [1/2, 1/4]
    """
    values = tuple(sp.sympify(v) for v in values)
    weights = tuple(sp.sympify(w) for w in weights)
    if not values or len(values) != len(weights):
        raise ModelError(f"diag {name}: give as many weights as values (got {len(values)} and {len(weights)})")
    if len(values) > MAX_ATOMS:
        raise ModelError(f"diag {name}: at most {MAX_ATOMS} atoms, got {len(values)}")
    for v in values + weights:
        if v.has(N) or v.atoms(sp.Float):
            raise ModelError(f"diag {name}: values and weights must be exact and free of n, got {v}")
        if v.has(sp.zoo, sp.oo, -sp.oo, sp.nan) or (v.is_number and v.is_extended_real is not True):
            raise ModelError(f"diag {name}: values and weights must be finite real numbers, got {v}")
    if all(w.is_number for w in weights):
        if any(not w > 0 for w in weights) or sp.nsimplify(sum(weights)) != 1:
            raise ModelError(f"diag {name}: weights must be positive and sum to 1, got {list(weights)}")
    return values, weights
