r"""Normalization and automatic linearization of a model expression.

Normalize
---------
Every Gaussian ``Z`` is written ``sqrt(n) Zh`` and every GOE ``G`` as ``sqrt(n) Gh``, so
that ``Zh``, ``Gh`` have entries of variance ``1/n`` and norms of order one.  Each
node is then ``n^e (Mh + o(1))``; :func:`normalize` returns the exponent ``e`` and the
leading part ``Mh``, whose scalars are free of ``n``.  The terms of a sum must have one
order (a sum of an ``O(n)`` and an ``O(1)`` matrix, e.g. a missing ``/n``, is refused
with both orders), and the whole expression must be of order ``n^0``.

Linearize
---------
A realization of an ``r x s`` matrix expression ``M`` is a square block pencil ``Q``
(each block ``k`` of size ``N_k``), a constant block row ``u`` and column ``v`` with
``M = u Q^{-1} v``.  Entries of ``Q`` are linear combinations of the identity, ``Zh``,
``Zh^T``, ``Gh`` and diagonal matrices.  The rules (Helton, Mai and Speicher 2018,
sections 3-4):

- leaf ``X``: ``Q = [[-I, X], [0, I]]``, ``u = e_1``, ``v = e_2``
  (``Q^{-1} = [[-I, X], [0, I]]``); a scalar multiple of ``I``: ``Q = [I]``, ``v = a``;
- ``a M``: ``v -> a v``;
- ``M_1 + M_2``: ``Q = diag(Q_1, Q_2)``, ``u = [u_1, u_2]``, ``v = [v_1; v_2]``;
- ``M_1 M_2``: ``Q = [[Q_1, -v_1 u_2], [0, Q_2]]``, ``u = [u_1, 0]``, ``v = [0; v_2]``;
- ``M^{-1}``: ``Q' = [[Q, v], [u, -eps]]``, whose last diagonal block of ``Q'^{-1}`` is
  ``-(u Q^{-1} v + eps)^{-1}``, so ``u' = -e_last``, ``v' = e_last`` (``eps`` = :data:`EPS_SHIFT`
  is 0 in the value; the solver moves it only to leave a singular deterministic part);
- transposes are pushed down to the leaves first.

The pencil is then reduced: a block ``k`` whose diagonal entry is a non-zero number
times ``I``, outside the support of ``u`` and ``v``, and whose every product
``Q_ik Q_kj`` stays linear, is removed by its Schur complement
``Q_ij <- Q_ij - Q_ik Q_kk^{-1} Q_kj`` (this leaves ``u Q^{-1} v`` unchanged).

Diagonal matrices with a finite law are handled by :func:`split_atoms`: their
dimension is cut into one block per atom (of size ``w_i N``); each diagonal becomes
a number times ``I`` on each part, and each Gaussian touching the dimension becomes
independent sub-blocks.

The examples use the Marchenko-Pastur matrix ``Z^T Z/n`` of a ``p x n`` Gaussian ``Z``, and read a pencil
with commuting stand-ins for its leaves (``Zh`` and ``Zt`` for ``Zh^T``: enough to check ``u Q^{-1} v``):

>>> from symrmt.engine import Model
>>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n")
>>> stand_in = lambda leaf, block: 1 if leaf == "I" else sp.Symbol("Zt" if leaf[2] else "Zh")
>>> P = linearize(normalize(m.expr("Z.T*Z/n"))[1])
>>> P.symbolic_matrix(stand_in).inv()[0, 2]  # u = e_0, v = e_2
Zh*Zt
"""

from __future__ import annotations

import sympy as sp

from symrmt.engine.lang.matrices import (
    GOE, N, Const, Diagonal, Diff, Dim, Gaussian, Identity, Inverse, MatProduct, MatSum, ModelError, Power, Scaled,
    ScalarProduct, ScalarSum, Trace, Transpose,
)
from symrmt.engine.lang.matrices import walk
from symrmt.engine.lang.vectors import QuadForm, Vector

__all__ = [
    "HALF", "EPS_SHIFT", "n_order", "normalize", "push_transposes", "Pencil", "add_entry", "linearize", "reduce",
    "is_symmetric", "symmetrize", "split_atoms", "diagonals_of", "scalar_and_matrix",
]

HALF = sp.Rational(1, 2)
#: the shift ``eps`` of every inverse, ``inv(M) -> inv(M + eps I)``; 0 in every value, non-zero only
#: on the solver's path when the deterministic part of a pencil is singular
EPS_SHIFT = sp.Symbol("eps_shift", real=True)


# ---------------------------------------------------------------- orders in n

def n_order(expr):
    """``(coefficient, exponent)`` with ``expr = coefficient * n**exponent * (1 + o(1))`` as ``n -> oo`` (``expr``: a
    SymPy expression or what :func:`sympy.sympify` reads).  Raises :class:`ModelError` for an expression that is
    not of that form (e.g. ``log n``).

    >>> n_order(3 * N ** 2 + N), n_order(sp.sqrt(N ** 2 + 1)), n_order(5)
    ((3, 2), (1, 1), (5, 0))
    >>> n_order(sp.log(N))
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: the scalar log(n) is not a power of n times a constant in the limit
    """
    expr = sp.sympify(expr)
    if not expr.has(N):
        return expr, sp.Integer(0)
    terms = sp.Add.make_args(sp.expand(sp.powsimp(expr, force=True)))
    by_exp = {}
    for t in terms:
        coeff, e = t.as_coeff_exponent(N)
        if coeff.has(N):
            break
        by_exp[e] = by_exp.get(e, 0) + coeff
    else:
        for e in sorted(by_exp, reverse=True):
            c = sp.cancel(sp.expand(by_exp[e]))
            if c != 0:
                return c, e
        return sp.Integer(0), sp.Integer(0)
    x = sp.Symbol("x_", positive=True)
    lead = sp.cancel(expr.subs(N, 1 / x)).as_leading_term(x)
    coeff, e = lead.as_coeff_exponent(x)
    if coeff.has(x) or coeff.has(N):
        raise ModelError(f"the scalar {expr} is not a power of n times a constant in the limit")
    return coeff, -e


def _order_str(e) -> str:
    return "n^" + (f"({e})" if not e.is_Integer else str(e))


def normalize(node, _memo=None):
    """``(e, hat)``: the node is ``n^e (hat + o(1))`` with Gaussians read as ``Zh = Z/sqrt(n)`` (``(None, None)`` for
    a node that is zero).

    ``hat`` is a tree of the same classes whose ``Const`` values are free of ``n`` (and whose
    ``Gaussian``/``GOE`` leaves now stand for ``Zh``, ``Gh``).  Zero terms of sums are dropped.  Raises
    :class:`ModelError` for a sum of terms of different orders, the inverse of a zero matrix, or a node it
    cannot normalize.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n")
    >>> normalize(m.expr("Z.T*Z/n"))[0], normalize(m.expr("Z.T*Z"))[0]
    (0, 1)
    >>> normalize(m.expr("Z.T*Z/n + n*I(n)"))
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: the terms of a sum have different orders in n (n^1 and n^0); ...
    """
    memo = {} if _memo is None else _memo  # one tree: a part shared by several parents is normalized once
    hit = memo.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    out = _normalize_node(node, memo)
    memo[id(node)] = (node, out)
    return out


def _normalize_node(node, memo):
    normalize = lambda x: _normalize_memo(x, memo)  # noqa: E731
    if isinstance(node, (Gaussian, GOE)):
        return HALF, node
    if isinstance(node, (Identity, Diagonal)) or getattr(node, "constant_leaf", False):  # given entries: O(1)
        return sp.Integer(0), node
    if isinstance(node, Vector):  # a random vector counts as sqrt(n): its normalized version has norm 1
        return (HALF if node.random else sp.Integer(0)), node
    if isinstance(node, QuadForm):
        e, m = normalize(node.matrix)
        return (None, None) if m is None else (e, QuadForm(m))
    if isinstance(node, Const):
        c, e = n_order(node.value)
        return e, Const(c)
    if isinstance(node, Scaled):
        es, s = normalize(node.scalar)
        if s.value == 0:
            return None, None
        em, m = normalize(node.matrix)
        if m is None:
            return None, None
        return es + em, Scaled(s, m) if s.value != 1 else m
    if isinstance(node, (MatSum, ScalarSum)):
        parts = [(e, t) for e, t in map(normalize, node.terms) if t is not None and not _zero_const(t)]
        if not parts:
            return None, None
        orders = {e for e, _ in parts}
        if len(orders) > 1:
            hi, lo = max(orders), min(orders)
            raise ModelError(
                f"the terms of a sum have different orders in n ({_order_str(hi)} and {_order_str(lo)}); "
                "the limit would not be O(1) -- check the scalings (a missing /n or /sqrt(n)?)"
            )
        terms = tuple(t for _, t in parts)
        e = parts[0][0]
        if len(terms) == 1:
            return e, terms[0]
        if isinstance(node, MatSum):
            return e, MatSum(terms)
        if all(isinstance(t, Const) for t in terms):
            return e, Const(sum(t.value for t in terms))
        return e, ScalarSum(terms)
    if isinstance(node, (MatProduct, ScalarProduct)):
        parts = [normalize(f) for f in (node.factors)]
        if any(t is None for _, t in parts):
            return None, None
        e = sum((p[0] for p in parts), sp.Integer(0))
        fs = tuple(t for _, t in parts)
        if isinstance(node, MatProduct):
            return e, MatProduct(fs)
        out = fs[0]
        for f in fs[1:]:
            out = out * f
        return e, out
    if isinstance(node, Transpose):
        e, m = normalize(node.matrix)
        return e, None if m is None else Transpose(m)
    if isinstance(node, Inverse):
        e, m = normalize(node.matrix)
        if m is None:
            raise ModelError("inverse of a zero matrix")
        return -e, Inverse(m)
    if isinstance(node, Trace):
        e, m = normalize(node.matrix)
        return (None, None) if m is None else (e, Trace(m))
    if isinstance(node, Power):
        e, b = normalize(node.base)
        if b is None:
            raise ModelError("a power of an expression that is zero in the limit")
        return e * node.exponent, Power(b, node.exponent)
    if isinstance(node, Diff):
        e, s = normalize(node.scalar)
        return (None, None) if s is None else (e, Diff(s, node.param))
    raise ModelError(f"cannot normalize {node!r}")


def _normalize_memo(x, memo):
    return normalize(x, memo)


def _zero_const(t) -> bool:
    return isinstance(t, Const) and t.value == 0


def push_transposes(m, transposed: bool = False):
    """The matrix tree ``m`` (transposed first when ``transposed``) with every transpose moved onto a leaf: a
    Gaussian, a vector or a given matrix (symmetric leaves drop it).  Raises :class:`ModelError` for a node that
    is not a matrix expression.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n"), m.goe("G", "n")
    >>> push_transposes(m.expr("(Z*G).T")) == m.expr("G*Z.T")
    True
    """
    if isinstance(m, Transpose):
        return push_transposes(m.matrix, not transposed)
    if isinstance(m, (Gaussian, Vector)) or getattr(m, "constant_leaf", False):
        return Transpose(m) if transposed else m
    if isinstance(m, (GOE, Identity, Diagonal)):
        return m
    if isinstance(m, Scaled):
        return Scaled(m.scalar, push_transposes(m.matrix, transposed))
    if isinstance(m, MatSum):
        return MatSum(tuple(push_transposes(t, transposed) for t in m.terms))
    if isinstance(m, MatProduct):
        fs = m.factors[::-1] if transposed else m.factors
        return MatProduct(tuple(push_transposes(f, transposed) for f in fs))
    if isinstance(m, Inverse):
        return Inverse(push_transposes(m.matrix, transposed))
    raise ModelError(f"not a matrix expression: {m!r}")


# ---------------------------------------------------------------- pencils

class Pencil:
    """A realization ``M = u Q^{-1} v`` (see the module docstring).

    ``blocks``: list of block keys ``(dim_name, atom)`` (``atom`` None before splitting);
    ``ratios``: block key -> ``N_k / n`` (SymPy);
    ``Q``: dict ``(i, j) -> {leaf: coefficient}`` with leaf ``"I"``, ``("Z", name, transposed)``,
    ``("G", name)`` or ``("D", name)``; ``u``, ``v``: dict block index -> coefficient.

    >>> P = Pencil([("n", None)], {("n", None): 1}, {(0, 0): {"I": sp.Integer(2)}}, {0: 1}, {0: 1})  # M = 1/2 I
    >>> P.size, P.entry(0, 0), P.entry(0, 1), P.symbolic_matrix(lambda leaf, block: 1).inv()[0, 0]
    (1, {'I': 2}, {}, 1/2)
    """

    def __init__(self, blocks, ratios, Q, u, v):
        self.blocks, self.ratios, self.Q, self.u, self.v = list(blocks), dict(ratios), Q, dict(u), dict(v)

    @property
    def size(self) -> int:
        return len(self.blocks)

    def key(self) -> str:
        """A canonical text of the pencil (cache key)."""
        q = sorted((i, j, sorted((str(k), sp.srepr(c)) for k, c in e.items())) for (i, j), e in self.Q.items())
        return repr((self.blocks, sorted((str(k), sp.srepr(c)) for k, c in self.ratios.items()), q,
                     sorted((i, sp.srepr(c)) for i, c in self.u.items()),
                     sorted((i, sp.srepr(c)) for i, c in self.v.items())))

    def entry(self, i, j) -> dict:
        return self.Q.get((i, j), {})

    def symbolic_matrix(self, leaf_symbol):
        """The pencil at ``eps = 0`` as a SymPy matrix: entry ``(i, j)`` is the sum of its coefficients
        times ``leaf_symbol(leaf, blocks[i])`` (a non-commutative symbol for each leaf)."""
        M = sp.zeros(self.size, self.size)
        for (i, j), e in self.Q.items():
            M[i, j] = sum((c.subs(EPS_SHIFT, 0) * leaf_symbol(leaf, self.blocks[i]) for leaf, c in e.items()),
                          sp.Integer(0))
        return M


def add_entry(Q, i, j, leaf, coef):
    """Add ``coef * leaf`` to the block ``(i, j)`` of the pencil entries ``Q`` (in place), dropping a
    coefficient, or a block, that becomes zero; returns ``None``.

    >>> Q = {}
    >>> add_entry(Q, 0, 1, "I", sp.Integer(2)); Q
    {(0, 1): {'I': 2}}
    >>> add_entry(Q, 0, 1, "I", sp.Integer(-2)); Q
    {}
    """
    if coef == 0:
        return
    e = Q.setdefault((i, j), {})
    c = sp.expand(e.get(leaf, 0) + coef)
    if c == 0:
        e.pop(leaf, None)
        if not e:
            del Q[(i, j)]
    else:
        e[leaf] = c


def _shift(Q, off):
    return {(i + off, j + off): dict(e) for (i, j), e in Q.items()}


def _leaf(m):
    if isinstance(m, Gaussian):
        return ("Z", m.name, False)
    if isinstance(m, Transpose) and isinstance(m.matrix, Gaussian):
        return ("Z", m.matrix.name, True)
    if isinstance(m, GOE):
        return ("G", m.name)
    if isinstance(m, Diagonal):
        return ("D", m.name)
    if getattr(m, "kind", None) == "given":  # a matrix given by its entries (symrmt.engine.laws.given)
        return ("A", m.name, False)
    if isinstance(m, Transpose) and getattr(m.matrix, "kind", None) == "given":
        return ("A", m.matrix.name, True)
    if isinstance(m, Vector):
        return ("V", m.name, False)
    if isinstance(m, Transpose) and isinstance(m.matrix, Vector):
        return ("V", m.matrix.name, True)
    return None


def _realize(m, ratios):
    """``(blocks, Q, u, v)`` of a normalized, transpose-pushed matrix tree."""
    dims = {}

    def bk(d: Dim):
        ratios[(d.name, None)] = d.ratio
        return (d.name, None)

    if isinstance(m, Identity):
        return [bk(m.dim)], {(0, 0): {"I": sp.Integer(1)}}, {0: sp.Integer(1)}, {0: sp.Integer(1)}
    leaf = _leaf(m)
    if leaf is not None:
        Q = {(0, 0): {"I": sp.Integer(-1)}, (0, 1): {leaf: sp.Integer(1)}, (1, 1): {"I": sp.Integer(1)}}
        return [bk(m.rows), bk(m.cols)], Q, {0: sp.Integer(1)}, {1: sp.Integer(1)}
    if isinstance(m, Scaled):
        b, Q, u, v = _realize(m.matrix, ratios)
        return b, Q, u, {k: sp.expand(c * m.scalar.value) for k, c in v.items()}
    if isinstance(m, MatSum):
        blocks, Q, u, v = [], {}, {}, {}
        for t in m.terms:
            b, q, uu, vv = _realize(t, ratios)
            off = len(blocks)
            blocks += b
            Q.update(_shift(q, off))
            u.update({k + off: c for k, c in uu.items()})
            v.update({k + off: c for k, c in vv.items()})
        return blocks, Q, u, v
    if isinstance(m, MatProduct):
        blocks, Q, u, v = _realize(m.factors[0], ratios)
        for f in m.factors[1:]:
            b2, q2, u2, v2 = _realize(f, ratios)
            off = len(blocks)
            for i, ci in v.items():
                for j, cj in u2.items():
                    add_entry(Q, i, j + off, "I", -ci * cj)
            Q.update(_shift(q2, off))
            blocks = blocks + b2
            v = {k + off: c for k, c in v2.items()}
        return blocks, Q, u, v
    if isinstance(m, Inverse):
        blocks, Q, u, v = _realize(m.matrix, ratios)
        last = len(blocks)
        for i, c in v.items():
            add_entry(Q, i, last, "I", c)
        for j, c in u.items():
            add_entry(Q, last, j, "I", c)
        add_entry(Q, last, last, "I", -EPS_SHIFT)
        blocks = blocks + [bk(m.rows)]
        del dims
        return blocks, Q, {last: sp.Integer(-1)}, {last: sp.Integer(1)}
    raise ModelError(f"cannot linearize {m!r}")


def linearize(m) -> Pencil:
    """A reduced realization (a :class:`Pencil`) of the normalized matrix tree ``m``, ``M = u Q^{-1} v``
    (:func:`normalize` gives ``m``).  Raises :class:`ModelError` for a node it cannot linearize.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n")
    >>> P = linearize(normalize(m.expr("Z.T*Z/n"))[1])
    >>> P.blocks, P.u, P.v
    ([('n', None), ('p', None), ('n', None)], {0: 1}, {2: 1})
    >>> sorted((ij, list(e.values())) for ij, e in P.Q.items())  # [[-I, Zh^T, 0], [0, -I, Zh], [0, 0, I]]
    [((0, 0), [-1]), ((0, 1), [1]), ((1, 1), [-1]), ((1, 2), [1]), ((2, 2), [1])]
    """
    ratios = {}
    blocks, Q, u, v = _realize(push_transposes(m), ratios)
    return reduce(Pencil(blocks, ratios, Q, u, v))


def _constant(e: dict) -> bool:
    return set(e) <= {"I"}


def reduce(p: Pencil, constant=_constant) -> Pencil:
    """The pencil ``p`` with blocks removed by Schur complements while it stays linear (module docstring):
    ``u Q^{-1} v`` is unchanged.  ``constant(entry)`` says which entries count as constant (default: multiples
    of ``I`` only).

    >>> Q = {(0, 0): {"I": sp.Integer(-1)}, (0, 1): {("G", "G"): sp.Integer(1)}, (1, 1): {"I": sp.Integer(1)},
    ...      (1, 2): {"I": sp.Integer(-1)}, (2, 2): {"I": sp.Integer(1)}}  # u Q^{-1} v = G
    >>> R = reduce(Pencil([("n", None)] * 3, {("n", None): 1}, Q, {0: 1}, {2: 1}))
    >>> R.size, R.Q[(0, 1)]  # the middle block is gone: [[-I, G], [0, I]], still u Q^{-1} v = G
    (2, {('G', 'G'): 1})
    """
    Q = {k: dict(e) for k, e in p.Q.items()}
    alive = list(range(p.size))
    changed = True
    while changed:
        changed = False
        for k in list(alive):
            if k in p.u or k in p.v:
                continue
            piv = Q.get((k, k), {})
            if set(piv) != {"I"} or not piv["I"].is_number or piv["I"] == 0:
                continue
            rows = [i for i in alive if i != k and (i, k) in Q]
            cols = [j for j in alive if j != k and (k, j) in Q]
            if any(not constant(Q[(i, k)]) and not constant(Q[(k, j)]) for i in rows for j in cols):
                continue
            inv = 1 / piv["I"]
            for i in rows:
                for j in cols:
                    a, b = Q[(i, k)], Q[(k, j)]
                    if constant(a):
                        for leaf, c in b.items():
                            add_entry(Q, i, j, leaf, -a["I"] * inv * c)
                    else:
                        for leaf, c in a.items():
                            add_entry(Q, i, j, leaf, -c * inv * b["I"])
            for i in alive:
                Q.pop((i, k), None)
                Q.pop((k, i), None)
            alive.remove(k)
            changed = True
    index = {old: new for new, old in enumerate(alive)}
    newQ = {(index[i], index[j]): e for (i, j), e in Q.items()}
    return Pencil([p.blocks[i] for i in alive], p.ratios, newQ, {index[i]: c for i, c in p.u.items()},
                  {index[j]: c for j, c in p.v.items()})


def is_symmetric(m) -> bool:
    """Whether ``m^T == m`` by structure (transposes pushed to the leaves on both sides, and the scalar
    factors of each product gathered in front of it, so ``w*Z.T*Z/n`` is symmetric as ``Z.T*Z*w/n`` is).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n"), m.goe("G", "n")
    >>> is_symmetric(m.expr("Z.T*Z/n")), is_symmetric(m.expr("Z.T*Z*G/n")), is_symmetric(m.expr("G*Z.T*Z*G/n"))
    (True, False, True)
    >>> _ = m.gaussian("Y", "n", "n"); is_symmetric(m.expr("(Y + Y.T)/sqrt(n)"))  # a sum in any order
    True
    """
    return _sums_sorted(_pull_scalars(push_transposes(Transpose(m)))) == _sums_sorted(_pull_scalars(push_transposes(m)))


def _sums_sorted(m):
    """``m`` with the terms of every sum in one order (by their hash), so that two trees that differ only in the
    order of the terms of a sum compare equal (``Z + Z.T`` and its transpose ``Z.T + Z``)."""
    if isinstance(m, MatSum):
        return MatSum(tuple(sorted((_sums_sorted(t) for t in m.terms), key=hash)))
    if isinstance(m, MatProduct):
        return MatProduct(tuple(_sums_sorted(f) for f in m.factors))
    if isinstance(m, Scaled):
        return Scaled(m.scalar, _sums_sorted(m.matrix))
    if isinstance(m, Inverse):
        return Inverse(_sums_sorted(m.matrix))
    if isinstance(m, Transpose):
        return Transpose(_sums_sorted(m.matrix))
    return m


def scalar_and_matrix(m):
    """``(c, x)`` with ``m = c x``: the deterministic scalars of the products and scalings of ``m`` gathered in
    ``c`` (a SymPy number), ``x`` the rest, for comparing two matrix trees up to a scalar factor.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n")
    >>> scalar_and_matrix(m.parse("Z.T*Z/n"))[0]
    1/n
    """
    return _scalar_and_matrix(m)


def _pull_scalars(m):
    """``m`` with the deterministic scalars inside each product moved in front of it (for comparison)."""
    c, x = _scalar_and_matrix(m)
    return x if c == 1 else Scaled(Const(c), x)


def _scalar_and_matrix(m):
    """``(c, x)`` with ``m = c x``, ``c`` a SymPy scalar taken out of the products and scalings of ``m``."""
    if isinstance(m, Scaled) and isinstance(m.scalar, Const):
        c, x = _scalar_and_matrix(m.matrix)
        return m.scalar.value * c, x
    if isinstance(m, Scaled):
        return sp.Integer(1), Scaled(m.scalar, _pull_scalars(m.matrix))
    if isinstance(m, MatProduct):
        c, fs = sp.Integer(1), []
        for f in m.factors:
            cf, xf = _scalar_and_matrix(f)
            c, fs = c * cf, fs + [xf]
        return c, MatProduct(tuple(fs))
    if isinstance(m, MatSum):
        return sp.Integer(1), MatSum(tuple(_pull_scalars(t) for t in m.terms))
    if isinstance(m, Inverse):
        return sp.Integer(1), Inverse(_pull_scalars(m.matrix))
    if isinstance(m, Transpose):
        c, x = _scalar_and_matrix(m.matrix)
        return c, Transpose(x)
    return sp.Integer(1), m


def symmetric_rotation(node):
    """A cyclic rotation ``Y X`` of a product ``X Y`` (times a scalar) that is symmetric by structure and
    has the dimension of ``X Y`` (both square ``N x N``, so the two have the same eigenvalues), e.g.
    ``Z1*Z1.T*Z2*Z2.T`` -> ``Z2.T*Z1*Z1.T*Z2``; else ``node`` unchanged.  The spectral density and the
    eigenvalue histogram of a product of symmetric factors take it.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z1", "n", "n"), m.gaussian("Z2", "n", "n")
    >>> node = symmetric_rotation(m.expr("Z1*Z1.T*Z2*Z2.T/n**2"))
    >>> is_symmetric(node), is_symmetric(m.expr("Z1*Z1.T*Z2*Z2.T/n**2"))
    (True, False)
    """
    scalar, core = (node.scalar, node.matrix) if isinstance(node, Scaled) else (None, node)
    if not isinstance(core, MatProduct) or core.rows != core.cols:
        return node
    f = core.factors
    for k in range(1, len(f)):
        if f[k].rows != core.rows:
            continue
        rot = MatProduct(f[k:] + f[:k])
        rot = Scaled(scalar, rot) if scalar is not None else rot
        if is_symmetric(rot):
            return rot
    return node


def symmetrize(p: Pencil) -> Pencil:
    """A symmetric realization of a symmetric expression ``M = u Q^{-1} v``.

    With ``L = [[0, Q], [Q^T, 0]]`` (symmetric), ``L^{-1} = [[0, Q^{-T}], [Q^{-1}, 0]]`` and
    ``M = (M^T + M)/2 = 1/2 [v^T, u] L^{-1} [v; u^T]``: the new row is half the new column, and
    the pencil has twice the blocks.  Valid only when ``M`` is symmetric (the self-test checks it).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n")
    >>> S = symmetrize(linearize(normalize(m.expr("Z.T*Z/n"))[1]))
    >>> L = S.symbolic_matrix(lambda leaf, block: 1 if leaf == "I" else sp.Symbol("Zt" if leaf[2] else "Zh"))
    >>> S.size, sum(cu * cv * L.inv()[i, j] for i, cu in S.u.items() for j, cv in S.v.items())
    (6, Zh*Zt)
    """
    k = p.size
    Q = {}
    for (i, j), e in p.Q.items():
        for leaf, c in e.items():
            add_entry(Q, i, k + j, leaf, c)
            flipped = (leaf[0], leaf[1], not leaf[2]) if leaf != "I" and leaf[0] == "Z" else leaf
            add_entry(Q, k + j, i, flipped, c)
    u = {i: c / 2 for i, c in p.v.items()}
    u.update({k + i: c / 2 for i, c in p.u.items()})
    v = dict(p.v)
    v.update({k + i: c for i, c in p.u.items()})
    return Pencil(p.blocks + p.blocks, p.ratios, Q, u, v)


# ---------------------------------------------------------------- atoms of diagonal matrices

def split_atoms(p: Pencil, diagonals: dict) -> Pencil:
    """Cut every dimension that carries a diagonal law into one block per atom.

    ``diagonals``: name -> :class:`~symrmt.engine.lang.matrices.Diagonal`.  Block ``(d, None)``
    becomes ``(d, 0), ..., (d, k-1)`` with ratios ``w_a N_d / n``; a diagonal leaf becomes its value times ``I``
    on each atom's block, and a Gaussian touching ``d`` independent sub-blocks (``Z[,a]``).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n"); _ = m.diag("D", "n", [1, 4], ["1/4", "3/4"])
    >>> h = normalize(m.expr("Z*D*Z.T/n"))[1]
    >>> P = split_atoms(linearize(h), diagonals_of(h))
    >>> [P.ratios[b] for b in P.blocks if b[0] == "n"], P.Q[(2, 4)]  # the atom 4 on the weight 3/4
    ([1/4, 3/4, 1/4, 3/4], {'I': 4})
    """
    laws = {}
    for D in diagonals.values():
        laws[D.dim.name] = D
    if not laws:
        return p
    new_blocks, where = [], {}
    ratios = dict(p.ratios)
    for i, (d, atom) in enumerate(p.blocks):
        if d in laws and atom is None:
            D = laws[d]
            where[i] = []
            for a, w in enumerate(D.weights):
                key = (d, a)
                ratios[key] = p.ratios[(d, None)] * w
                where[i].append((len(new_blocks), a))
                new_blocks.append(key)
        else:
            where[i] = [(len(new_blocks), None)]
            new_blocks.append((d, atom))
    Q = {}
    for (i, j), e in p.Q.items():
        for leaf, c in e.items():
            if leaf == "I" or leaf[0] == "D":
                for (ii, a), (jj, _b) in zip(where[i], where[j]):
                    value = diagonals[leaf[1]].values[a] if leaf != "I" else 1
                    add_entry(Q, ii, jj, "I", c * value)
            elif leaf[0] == "Z":
                for ii, a in where[i]:
                    for jj, b in where[j]:
                        ra, cb = (a, b) if not leaf[2] else (b, a)
                        add_entry(Q, ii, jj, ("Z", _sub(leaf[1], ra, cb), leaf[2]), c)
            else:  # GOE: diagonal parts stay GOE, off-diagonal parts are Gaussian (and their transposes)
                for ii, a in where[i]:
                    for jj, b in where[j]:
                        if a == b:
                            add_entry(Q, ii, jj, ("G", _sub(leaf[1], a, a)), c)
                        elif a < b:
                            add_entry(Q, ii, jj, ("Z", _sub(leaf[1], a, b), False), c)
                        else:
                            add_entry(Q, ii, jj, ("Z", _sub(leaf[1], b, a), True), c)
    u = {ii: c for i, c in p.u.items() for ii, _ in where[i]}
    v = {jj: c for j, c in p.v.items() for jj, _ in where[j]}
    return Pencil(new_blocks, ratios, Q, u, v)


def _sub(name, a, b) -> str:
    if a is None and b is None:
        return name
    return f"{name}[{'' if a is None else a},{'' if b is None else b}]"


def diagonals_of(m) -> dict:
    """A dict name -> :class:`~symrmt.engine.lang.matrices.Diagonal` of every diagonal leaf of the tree ``m``.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n"); _ = m.diag("D", "n", [1, 4], ["1/4", "3/4"])
    >>> diagonals_of(m.expr("Z*D*Z.T/n"))
    {'D': Diagonal('D', 'n', (1, 4), (1/4, 3/4))}
    """
    return {x.name: x for x in walk(m) if isinstance(x, Diagonal)}
