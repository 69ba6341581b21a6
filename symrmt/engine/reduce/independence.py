r"""Quadratic forms across independent samples: a form whose chain of factors crosses between two
independent sets of random objects (a model trained on one sample and evaluated on a fresh copy) is
split into forms and traces of each set alone.

Let ``D`` be the dimension where the chain crosses, ``V`` the span of the deterministic vectors of ``D``
that occur in the chain (Gram matrix ``G`` of the basis ``e_1..e_k``, its pseudo-inverse ``G^+``), and
let the random objects of one side be Gaussian or GOE matrices and deterministic vectors only (no
diagonal law, no given matrix, no sign vector of dimension ``D``).  Then the law of that side is invariant
under every rotation ``O`` of ``D`` that fixes ``V``, and averaging over ``O`` (independent of the other
side) gives, for ``a`` and ``b`` of one side and ``M`` of the other,

.. math::

    a^T b &\to (E^T a)^T G^+ (E^T b), \\
    a^T M b &\to \tau(M)\,\big(a^T b - (E^T a)^T G^+ (E^T b)\big) + (E^T a)^T G^+ (E^T M E)\, G^+ (E^T b),

with ``E = (e_1 .. e_k)``: the projection on ``V`` is ``E G^+ E^T``, and off ``V`` the rotation
average of ``M`` is ``tau(M)`` times the identity (``tau`` the normalized trace).  The right-hand sides
are forms and traces of one side each, so the engine solves them separately (each part under the cap on
unknowns), and a random vector of one side that meets only the other side's objects is centred:
``e^T M v -> 0``.  ``G^+`` is exact (the inner products are exact rationals), so the rewrite is made at
the parameter point.  The rule is stated in the limit's notes, never applied silently.
"""

from __future__ import annotations

import sympy as sp

from symrmt.cache import cached
from symrmt.engine.lang.node import ModelError, walk
from symrmt.engine.lang.algebra import (
    Const, MatProduct, MatSum, Power, QuadForm, ScalarProduct, ScalarSum, Scaled, Transpose,
)
from symrmt.engine.lang.matrices import N, Diff, Identity, Inverse, Trace
from symrmt.engine.lang.vectors import UNIT, Vector, gram_symbol
from symrmt.engine.reduce.linearize import normalize, is_symmetric, push_transposes, scalar_and_matrix

__all__ = ["split_independent", "crosses", "push_through"]

#: leaves whose law is invariant under the rotations of their dimensions that fix the deterministic vectors
_INVARIANT = ("gaussian", "goe", "identity", "vector", "const", "sum", "product", "scaled", "transpose", "inverse",
              "trace", "ssum", "sproduct", "power", "qform", "diff")


def _random_leaves(node) -> frozenset:
    out = set()
    for x in walk(node):
        if x.kind in ("gaussian", "goe", "diag") or (isinstance(x, Vector) and x.random):
            out.add((x.kind, getattr(x, "name", repr(x))))
        elif getattr(x, "constant_leaf", False):
            out.add(("given", getattr(x, "name", repr(x))))
    return frozenset(out)


def _has_matrix(leaves) -> bool:
    return any(k in ("gaussian", "goe") for k, _ in leaves)


def _components(node) -> list:
    """The random leaves of ``node`` grouped by co-occurrence inside one inverse (a union-find)."""
    parent = {}

    def find(a):
        while parent.setdefault(a, a) != a:
            a = parent[a]
        return a

    seen = set()
    for x in walk(node):
        if id(x) in seen:
            continue
        seen.add(id(x))
        for leaf in _random_leaves(x) if not x.children() else ():
            find(leaf)
        if isinstance(x, Inverse):
            ls = sorted(_random_leaves(x))
            for a in ls[1:]:
                parent[find(a)] = find(ls[0])
    groups = {}
    for a in list(parent):
        groups.setdefault(find(a), set()).add(a)
    return sorted((frozenset(g) for g in groups.values()), key=lambda g: (-len(g), sorted(g)))


def _chains(m, side):
    """``m`` (a matrix node) as a list of ``(coefficient, factors)``: products, scalings and transposes
    flattened, and a sum distributed only when its random leaves meet both ``side`` and its complement."""
    if isinstance(m, Scaled):
        return [((m.scalar,) + c, fs) for c, fs in _chains(m.matrix, side)]
    if isinstance(m, Transpose):
        inner = m.matrix
        if isinstance(inner, Transpose):
            return _chains(inner.matrix, side)
        if isinstance(inner, Scaled):
            return _chains(Scaled(inner.scalar, Transpose(inner.matrix)), side)
        if isinstance(inner, MatProduct):
            return _chains(MatProduct(tuple(Transpose(f) for f in reversed(inner.factors))), side)
        if isinstance(inner, MatSum) and _mixed(inner, side):
            return _chains(MatSum(tuple(Transpose(t) for t in inner.terms)), side)
        return [((), (m,))]
    if isinstance(m, MatSum) and _mixed(m, side):
        return [c for t in m.terms for c in _chains(t, side)]
    if isinstance(m, MatProduct):
        out = [((), ())]
        for f in m.factors:
            out = [(c1 + c2, f1 + f2) for c1, f1 in out for c2, f2 in _chains(f, side)]
        return out
    return [((), (m,))]


def _mixed(m, side) -> bool:
    ls = _random_leaves(m)
    return bool(ls & side) and bool(ls - side)


def _invariant(factors, dim) -> bool:
    for f in factors:
        for x in walk(f):
            if x.kind not in _INVARIANT:
                return False
            if isinstance(x, Vector) and x.law == "signs" and x.dim == dim:
                return False
    return True


def _lone_matrix(fs):
    """The name of a Gaussian or GOE matrix that is a factor of the chain ``fs`` (or its transpose) and occurs
    nowhere else in it, or ``None``: ``a^T Z b`` with ``a, b`` independent of ``Z`` is centred, of variance
    ``|a|^2 |b|^2/n`` at the scale where the chain is O(1)."""
    counts = {}
    for f in fs:
        for x in walk(f):
            if x.kind in ("gaussian", "goe"):
                counts[x.name] = counts.get(x.name, 0) + 1
    for f in fs:
        g = f.matrix if isinstance(f, Transpose) else f
        if g.kind in ("gaussian", "goe") and counts[g.name] == 1:
            return g.name
    return None


def _prod(fs):
    return fs[0] if len(fs) == 1 else MatProduct(tuple(fs))


def _scaled_form(node):
    """``node`` (a form or trace) times ``n^-e``, its order in ``n``, so that the piece is O(1); and ``e``."""
    e, hat = normalize(node)
    if hat is None:
        return None, 0
    return ScalarProduct((Const(N ** (-e)), node)), e


def _inverse_of(f):
    """``B`` when the factor ``f`` is ``inv(B)``, or ``inv(B).T`` with ``B`` symmetric; else ``None``."""
    if isinstance(f, Inverse):
        return f.matrix
    if isinstance(f, Transpose) and isinstance(f.matrix, Inverse) and is_symmetric(f.matrix.matrix):
        return f.matrix.matrix
    return None


def _shift(B):
    """``(s, R)`` with ``B = R + s I``, ``s`` one parameter symbol that occurs nowhere in ``R``; else ``None``."""
    if not isinstance(B, MatSum):
        return None
    ident = [t for t in B.terms if isinstance(t, Scaled) and isinstance(t.matrix, Identity)
             and isinstance(t.scalar, Const) and isinstance(t.scalar.value, sp.Symbol)]
    rest = [t for t in B.terms if not any(t is u for u in ident)]
    if len(ident) != 1 or not rest:
        return None
    s = ident[0].scalar.value
    R = rest[0] if len(rest) == 1 else MatSum(tuple(rest))
    if any(isinstance(x, Const) and x.value.has(s) for x in walk(R)):
        return None
    return s, R


def push_through(fs):
    """``a^T Q P Q b`` with ``Q = inv(P/c + s I)`` (``s`` a parameter) as the scalar node ``c (F + s dF/ds)``,
    ``F = a^T Q b`` (since ``Q P Q = c (Q - s Q^2)`` and ``Q^2 = -dQ/ds``), for the chain of factors ``fs`` (a
    list of matrix nodes); ``None`` where the chain has no such pattern.  The one form ``F`` has a pencil with
    ``Q`` once instead of twice.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n"); _ = m.vector("a", "n"), m.vector("b", "n")
    >>> qf = m.expr("a.T*inv(Z.T*Z/n + s*I(n))*(Z.T*Z/n)*inv(Z.T*Z/n + s*I(n))*b")
    >>> out = push_through(list(qf.matrix.factors))
    >>> out.factors[0], out.factors[1].terms[0] == m.expr("a.T*inv(Z.T*Z/n + s*I(n))*b")  # c = 1, F
    (Const(1), True)
    >>> print(push_through(list(m.expr("a.T*inv(Z.T*Z/n + s*I(n))*b").matrix.factors)))
    None
    """
    for i, f in enumerate(fs):
        B = _inverse_of(f)
        if B is None:
            continue
        for j in range(i + 2, len(fs)):
            if _inverse_of(fs[j]) != B:
                continue
            sr = _shift(B)
            if sr is None:
                break
            s, R = sr
            outside = list(fs[:i]) + list(fs[j + 1:]) + list(fs[i + 1:j])
            if any(isinstance(x, Const) and x.value.has(s) for g in outside for x in walk(g)):
                break
            c1, x1 = scalar_and_matrix(push_transposes(_prod(list(fs[i + 1:j]))))
            c2, x2 = scalar_and_matrix(push_transposes(R))
            if x1 != x2:
                break
            F = QuadForm(_prod(list(fs[:i]) + [fs[i]] + list(fs[j + 1:])))
            return ScalarProduct((Const(c1 / c2), ScalarSum((F, ScalarProduct((Const(s), Diff(F, s)))))))
    return None


class _Rewriter:
    def __init__(self, vectors, gram, notes):
        self.vectors, self.gram, self.notes = vectors, gram, notes
        self.stated = set()
        self.forms = {}

    def basis(self, factors, dim):
        names = sorted({x.name for f in factors for x in walk(f) if isinstance(x, Vector) and not x.random
                        and x.dim == dim})
        G = sp.Matrix(len(names), len(names), lambda i, j: sp.Rational(self.gram.get(gram_symbol(names[i], names[j]),
                                                                                       0)))
        Gp = G.pinv() if names else G
        return [self.vectors[nm] for nm in names], Gp

    def split(self, coef, fs, side):
        """The scalar of the chain ``coef * fs`` split at an independent crossing, or ``None``."""
        lone = _lone_matrix(fs)
        if lone is not None and ("lone", lone) not in self.stated:
            self.stated.add(("lone", lone))
            self.notes.append(f"independent samples: the random matrix {lone} enters a product once, linearly, "
                              "independent of the rest of it: the product has mean 0 and a vanishing variance, "
                              "so it tends to 0")
        if lone is not None:
            return Const(sp.Integer(0))
        sides = [bool(_random_leaves(f) & side) for f in fs]
        rnd = [bool(_random_leaves(f)) for f in fs]
        # each deterministic factor joins the side of its left neighbour (or the right one, at the start)
        lab, cur = [], None
        for i in range(len(fs)):
            if rnd[i]:
                cur = sides[i]
            lab.append(cur)
        first = next((x for x in lab if x is not None), None)
        lab = [first if x is None else x for x in lab]
        cuts = [i for i in range(1, len(fs)) if lab[i] != lab[i - 1]]
        if not cuts or len(cuts) > 2:
            return None
        parts = [fs[:cuts[0]], fs[cuts[0]:cuts[-1]], fs[cuts[-1]:]] if len(cuts) == 2 else [fs[:cuts[0]], fs[cuts[0]:]]
        if len(parts) == 3 and parts[1][0].rows != parts[1][-1].cols:
            return None  # the middle is not square: no rotation acts on both of its sides at once
        leaves = [_random_leaves(_prod(p)) for p in parts]
        if len(parts) == 3:
            outer = leaves[0] | leaves[2]
            if outer & leaves[1] or not (_has_matrix(outer) and _has_matrix(leaves[1])):
                return None
        elif leaves[0] & leaves[1] or not (_has_matrix(leaves[0]) and _has_matrix(leaves[1])):
            return None
        dim = parts[0][-1].cols
        if dim == UNIT:
            return None
        if not _invariant(parts[1], dim) and (len(parts) == 3 or not _invariant(parts[0], dim)):
            return None  # the middle (or, for a^T b, either side) must be invariant under the rotations
        basis, Gp = self.basis(fs, dim)
        a, b = parts[0], parts[-1]
        terms = []

        def form(factors):
            return self.cached_form(factors)

        ea = [form(list(a) + [v]) for v in basis]
        eb = [form([Transpose(v)] + list(b)) for v in basis]
        k = len(basis)
        if len(parts) == 2:
            for r in range(k):
                for s in range(k):
                    if Gp[r, s] != 0 and ea[r][0] is not None and eb[s][0] is not None:
                        terms.append(ScalarProduct((Const(Gp[r, s] * N ** (ea[r][1] + eb[s][1])), ea[r][0], eb[s][0])))
            self.state(dim, "a.T*b", side)
        else:
            M = parts[1]
            tau, et = _scaled_form(Trace(_prod(M)))
            pushed = push_through(list(a) + list(b))
            ab, eab = _scaled_form(pushed) if pushed is not None else form(list(a) + list(b))
            if pushed is not None and "push" not in self.stated:
                self.stated.add("push")
                self.notes.append("push-through: a form a.T*Q*P*Q*b with Q = inv(P/c + s*I) is written "
                                  "c*(F + s*dF/ds) with F = a.T*Q*b (Q*P*Q = c*(Q - s*Q^2), Q^2 = -dQ/ds)")
            if tau is not None and ab is not None:
                terms.append(ScalarProduct((Const(N ** (et + eab)), tau, ab)))
                for r in range(k):
                    for s in range(k):
                        if Gp[r, s] != 0 and ea[r][0] is not None and eb[s][0] is not None:
                            terms.append(ScalarProduct((Const(-Gp[r, s] * N ** (et + ea[r][1] + eb[s][1])), tau,
                                                        ea[r][0], eb[s][0])))
            GFG = {}
            for r in range(k):
                for s in range(k):
                    fr, er = form([Transpose(basis[r])] + list(M) + [basis[s]])
                    if fr is None:
                        continue
                    for i in range(k):
                        for j in range(k):
                            w = Gp[i, r] * Gp[s, j]
                            if w != 0:
                                GFG.setdefault((i, j), []).append((w, fr, er))
            for (i, j), items in GFG.items():
                if ea[i][0] is None or eb[j][0] is None:
                    continue
                for w, fr, er in items:
                    terms.append(ScalarProduct((Const(w * N ** (ea[i][1] + er + eb[j][1])), ea[i][0], fr, eb[j][0])))
            self.state(dim, "a.T*M*b", side)
        scalar = Const(sp.Integer(1))
        for c in coef:
            scalar = scalar * c
        if not terms:
            return Const(sp.Integer(0))
        return ScalarProduct((scalar, ScalarSum(tuple(terms)) if len(terms) > 1 else terms[0]))

    def cached_form(self, factors):
        """The scaled form of the chain ``factors``, the same node for a chain and its transpose (one solve)."""
        key = QuadForm(_prod(list(factors)))
        if key in self.forms:
            return self.forms[key]
        flipped = QuadForm(_prod([f.matrix if isinstance(f, Transpose) else Transpose(f) for f in reversed(factors)]))
        if flipped in self.forms:
            return self.forms[flipped]
        self.forms[key] = out = _scaled_form(key)
        return out

    def state(self, dim, shape, side):
        key = (dim.name, shape)
        if key in self.stated:
            return
        self.stated.add(key)
        names = ", ".join(sorted(n for _, n in side))
        what = ("a.T*b -> (E.T*a).T*G^+*(E.T*b)" if shape == "a.T*b" else
                "a.T*M*b -> tau(M)*(a.T*b - (E.T*a).T*G^+*(E.T*b)) + (E.T*a).T*G^+*(E.T*M*E)*G^+*(E.T*b)")
        self.notes.append(f"independent samples: a form crosses in dimension {dim.name} between {{{names}}} and the "
                          f"random objects independent of them; averaged over the rotations of {dim.name} that fix "
                          f"its deterministic vectors E (Gram matrix G), {what}")

    def form(self, q):
        comps = _components(q.matrix)
        if sum(_has_matrix(c) for c in comps) < 2:  # random vectors alone: the mean-0 rule of woodbury_qf
            return None
        for side in comps:
            out, changed = [], False
            for coef, fs in _chains(q.matrix, side):
                piece = self.split(coef, fs, side)
                for other in comps:  # a chain of the distributed form may cross between other sets
                    if piece is None and other != side:
                        piece = self.split(coef, fs, other)
                if piece is None:
                    m = _prod(list(fs))
                    node = QuadForm(m)
                    for c in coef:
                        node = c * node
                    out.append(node)
                else:
                    changed = True
                    out.append(piece)
            if changed:
                return out[0] if len(out) == 1 else ScalarSum(tuple(out))
        return None

    def walk(self, s):
        if isinstance(s, QuadForm):
            new = self.form(s)
            return s if new is None else _simplified(new)
        if isinstance(s, ScalarSum):
            return _simplified(ScalarSum(tuple(self.walk(t) for t in s.terms)))
        if isinstance(s, ScalarProduct):
            return _simplified(ScalarProduct(tuple(self.walk(t) for t in s.factors)))
        if isinstance(s, Power):
            base = self.walk(s.base)
            if _is_zero(base) and s.exponent < 0:
                raise ModelError("a quadratic form that tends to 0 (it crosses between independent samples and "
                                 "averages to 0) is raised to a negative power: its reciprocal has no limit")
            return s if base is s.base else Power(base, s.exponent)
        if isinstance(s, Diff):
            inner = self.walk(s.scalar)
            return s if inner is s.scalar else Diff(inner, s.param)
        return s


def _is_zero(s) -> bool:
    return isinstance(s, Const) and s.value == 0


def _simplified(s):
    """``s`` with the zero terms of its sums dropped and a product with a zero factor made 0."""
    if isinstance(s, ScalarSum):
        terms = [t for t in s.terms if not _is_zero(t)]
        return Const(sp.Integer(0)) if not terms else terms[0] if len(terms) == 1 else ScalarSum(tuple(terms))
    if isinstance(s, ScalarProduct) and any(_is_zero(f) for f in s.factors):
        return Const(sp.Integer(0))
    return s


def crosses(expr) -> bool:
    """Whether a quadratic form of ``expr`` holds random matrices of two groups (leaves that never meet
    inside one inverse), the case :func:`split_independent` looks at.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n"); _ = m.vector("u", "p")
    >>> crosses(m.parse("u.T*Z*Z.T*u/n"))
    False
    """
    return _crosses(expr)


@cached(maxsize=256)
def _crosses(expr) -> bool:
    """:func:`crosses`, memoized on the (immutable) expression."""
    return any(isinstance(x, QuadForm) and sum(_has_matrix(c) for c in _components(x.matrix)) > 1 for x in walk(expr))


def split_independent(expr, vectors, gram) -> tuple:
    """``(expr', notes)``: ``expr`` with each quadratic form that crosses between independent random objects
    rewritten by the rules of the module docstring (``expr`` itself, and no notes, where none does).

    ``vectors``: name -> :class:`~symrmt.engine.lang.vectors.Vector` of the model; ``gram``: the exact inner
    products (:func:`symrmt.engine.lang.vectors.gram_values`).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n")
    >>> _ = m.gaussian("Z", "p", "n"), m.gaussian("Z2", "p", "n"), m.signs("y", "n")
    >>> e, notes = split_independent(m.parse("y.T*Z.T*inv(Z*Z.T/n + I(p))*Z2*Z2.T*inv(Z*Z.T/n + I(p))*Z*y/n**3"),
    ...                              m.vectors(), {})
    >>> len(notes), isinstance(e, QuadForm)
    (1, False)
    """
    notes = []
    try:
        out = _Rewriter(vectors, gram, notes).walk(expr)
    except RecursionError as exc:  # pragma: no cover - a pathological tree
        raise ModelError("the expression is too deeply nested to split its independent parts") from exc
    if isinstance(out, Const):  # nothing left to solve: the expression as written takes the usual route
        return expr, []
    return (out, notes) if notes else (expr, [])
