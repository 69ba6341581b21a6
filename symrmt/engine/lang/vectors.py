r"""Vectors, finite-rank matrices and quadratic forms in the trace engine's language.

A vector is a ``dim x 1`` matrix node on the built-in unit dimension :data:`UNIT` (named ``1``;
:data:`UNIT` and :class:`QuadForm`, which the matrix product builds, are defined in
:mod:`symrmt.engine.lang.algebra` and re-exported here):

- ``vector(p)`` (:class:`Vector` with ``law="det"``): a deterministic vector of O(1) norm; the inner
  products of the deterministic vectors of one dimension are parameters ``a.b`` (any pair not given
  is 0), and their Gram matrix must be positive semi-definite;
- ``signs(n)`` (``law="signs"``): iid +-1 entries, norm ``sqrt(n)``, independent of every other
  random object; ``gaussian_vector(n)`` (``law="gaussian"``): iid ``N(0, 1)`` entries.

Products of vectors are ordinary products: ``u*v.T`` is a finite-rank matrix, usable anywhere, and a
product whose rows and columns are both the unit dimension, such as ``u.T*M*v``, is the scalar
:class:`QuadForm`.  Orders in ``n`` count a random vector as ``sqrt(n)`` (its normalized version
``y/sqrt(n)`` has norm 1) and a deterministic one as 1, so ``y.T*M*y/n`` is O(1) and ``y.T*M*y``
is refused with its order.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from symrmt.engine.lang.node import Dim, ModelError, walk
from symrmt.engine.lang.algebra import UNIT, MatrixNode, QuadForm
from symrmt.errors import ParameterError
from symrmt.parsing.psd import project_psd

__all__ = ["UNIT", "Vector", "QuadForm", "gram_symbol", "vectors_of", "has_vectors", "LAWS"]

#: the laws of a vector, and their names in the language
LAWS = {"det": "vector", "signs": "signs", "gaussian": "gaussian_vector"}


class Vector(MatrixNode):
    """A ``dim x 1`` vector named ``name`` on the unit dimension :data:`UNIT`: deterministic (``law="det"``), iid
    signs (``"signs"``) or iid ``N(0, 1)`` (``"gaussian"``).  Raises :class:`ModelError` for another law or the
    unit dimension.

    >>> p = Dim("p", sp.Symbol("c"))
    >>> u, y = Vector("u", p), Vector("y", p, "signs")
    >>> (u.rows.name, u.cols.name), u.random, y.random
    (('p', '1'), False, True)
    >>> Vector("w", p, "uniform")
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: vector w: the law is one of det, signs, gaussian, got 'uniform'
    """

    kind = "vector"
    _fields = ("name", "dim", "law")

    def __init__(self, name: str, dim: Dim, law: str = "det"):
        if law not in LAWS:
            raise ModelError(f"vector {name}: the law is one of {', '.join(LAWS)}, got {law!r}")
        if dim == UNIT:
            raise ModelError(f"vector {name}: a vector needs a declared dimension, not 1")
        self.name, self.dim, self.law = name, dim, law
        self.rows, self.cols = dim, UNIT

    @property
    def random(self) -> bool:
        return self.law != "det"


def gram_symbol(a: str, b: str):
    """The real SymPy Symbol ``a.b`` (``= b.a``: the names sorted) of the inner product of two deterministic
    vectors.

    >>> gram_symbol("v", "u"), gram_symbol("u", "v") == gram_symbol("v", "u")
    (u.v, True)
    """
    a, b = sorted((a, b))
    return sp.Symbol(f"{a}.{b}", real=True)


def vectors_of(node) -> dict:
    """A dict name -> :class:`Vector` of every vector in the tree ``node``.

    >>> from symrmt.engine.lang.matrices import Gaussian
    >>> p = Dim("p", sp.Symbol("c"))
    >>> sorted(vectors_of(Vector("u", p).T * Gaussian("M", p, p) * Vector("v", p)))
    ['u', 'v']
    """
    return {x.name: x for x in walk(node) if isinstance(x, Vector)}


def has_vectors(node) -> bool:
    """Whether the tree ``node`` holds a vector.

    >>> from symrmt.engine.lang.matrices import Gaussian
    >>> p = Dim("p", sp.Symbol("c"))
    >>> has_vectors(Gaussian("M", p, p)), has_vectors(Vector("u", p) * Vector("u", p).T)
    (False, True)
    """
    return bool(vectors_of(node))


def gram_values(vectors, values: dict, strict: bool = True) -> dict:
    """The exact inner products of the deterministic ``vectors`` (name -> :class:`Vector`) from ``values``.

    ``values`` maps names to exact numbers; an inner product is the key ``"a.b"`` (or ``"b.a"``); a pair
    not given is 0.  Returns ``{gram_symbol(a, b): Fraction}`` over the pairs of one dimension, after the
    Gram matrix of each dimension passed the PSD test of :func:`symrmt.parsing.psd.project_psd` (the same
    rounding rule and messages as ``--geometry``; a rounding-level violation is projected away).
    Raises :class:`ModelError` for a key that names an undeclared or a random vector, or two vectors of
    different dimensions (with ``strict=False`` a key naming a vector outside ``vectors`` is skipped: a
    tree bound for a simulation holds only its own vectors), or a Gram matrix that is not PSD.

    >>> p = Dim("p", sp.Symbol("c"))
    >>> vs = {"u": Vector("u", p), "v": Vector("v", p)}
    >>> gram_values(vs, {"u.u": 1, "v.v": 4, "u.v": 2})
    {u.u: Fraction(1, 1), u.v: Fraction(2, 1), v.v: Fraction(4, 1)}
    >>> gram_values(vs, {"u.u": 1, "v.v": 1, "u.v": 2})  # |u.v| > |u| |v|
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: the inner products of the vectors u, v (dimension p): the Gram matrix is not positive semi-definite: ...
    """
    given = {}
    for key, v in values.items():
        key = str(key)
        if "." not in key:
            continue
        a, _, b = key.partition(".")
        if not strict and (a not in vectors or b not in vectors):
            continue
        for x in (a, b):
            if x not in vectors:
                raise ModelError(f"{key}: {x!r} is not a declared vector")
            if vectors[x].random:
                raise ModelError(f"{key}: {x} is a random vector ({LAWS[vectors[x].law]}); only deterministic "
                                 "vectors have inner products as parameters")
        if vectors[a].dim != vectors[b].dim:
            raise ModelError(f"{key}: {a} has dimension {vectors[a].dim.name} and {b} has dimension "
                             f"{vectors[b].dim.name}; only vectors of one dimension have an inner product")
        sym = gram_symbol(a, b)
        if sym in given:
            raise ModelError(f"the inner product {a}.{b} is given twice")
        given[sym] = Fraction(v)
    out = {}
    by_dim = {}
    for name in sorted(vectors):
        if not vectors[name].random:
            by_dim.setdefault(vectors[name].dim.name, []).append(name)
    for d, names in by_dim.items():
        G = [[given.get(gram_symbol(a, b), Fraction(0)) for b in names] for a in names]
        try:
            G, _ = project_psd(G)
        except ParameterError as exc:
            raise ModelError(f"the inner products of the vectors {', '.join(names)} (dimension {d}): {exc}") from None
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                out[gram_symbol(a, b)] = G[i][j]
    return out


def frame(vectors, values: dict) -> dict:
    """A dict name -> float coordinates (a tuple) of each deterministic vector of ``vectors`` in an orthonormal frame
    of its dimension (the first coordinates), from the Gram matrix of :func:`gram_values` (``G = C C^T``, rows of
    ``C``), whose errors it raises.  The frame is one of many (signs and rotations are LAPACK's choice): only the
    inner products are fixed.

    >>> p = Dim("p", sp.Symbol("c"))
    >>> C = frame({"u": Vector("u", p), "v": Vector("v", p)}, {"u.u": 1, "v.v": 4, "u.v": 2})
    >>> [round(sum(a * b for a, b in zip(C[x], C[y])), 12) for x, y in (("u", "u"), ("u", "v"), ("v", "v"))]
    [1.0, 2.0, 4.0]
    """
    gram = gram_values(vectors, values, strict=False)
    out = {}
    by_dim = {}
    for name in sorted(vectors):
        if not vectors[name].random:
            by_dim.setdefault(vectors[name].dim.name, []).append(name)
    for names in by_dim.values():
        G = np.array([[float(gram[gram_symbol(a, b)]) for b in names] for a in names])
        w, U = np.linalg.eigh(G)
        C = U * np.sqrt(np.clip(w, 0, None))
        for i, a in enumerate(names):
            out[a] = tuple(float(x) for x in C[i])
    return out
