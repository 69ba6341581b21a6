r"""Hermitization of a pencil, for the trace of the inverse of a non-normal matrix (SymPy only).

For a non-normal square matrix ``A`` (a square Gaussian block ``Z/sqrt(n)``, a product of
non-commuting non-symmetric factors) the analytic continuation of ``tau(A^{-1})`` from the
region where the limit operator is invertible is *not* the limit of ``tau(A_n^{-1})`` once 0
lies in the support of the Brown measure of ``A`` (for Ginibre, ``tau((lambda - Z/sqrt(n))^{-1})``
tends to ``conj(lambda)`` for ``|lambda| <= 1`` and to ``1/lambda`` outside).  The limit there is
read from the symmetric 2x2 block matrix (Feinberg and Zee 1997; Janik, Nowak, Papp and Zahed 1997;
Belinschi, Sniady and Speicher 2018 for linearizations)

.. math::  \mathcal H_\varepsilon = \begin{pmatrix} \varepsilon & P \\ P^T & -\varepsilon \end{pmatrix},
   \qquad \mathcal H_\varepsilon^{-1} = \begin{pmatrix} \varepsilon (PP^T+\varepsilon^2)^{-1} &
   P (P^TP+\varepsilon^2)^{-1} \\ P^T (PP^T+\varepsilon^2)^{-1} & -\varepsilon (P^TP+\varepsilon^2)^{-1}
   \end{pmatrix},

where ``P`` is the linear pencil of ``A^{-1} = u P^{-1} v``: every block of the inverse stays bounded
as ``epsilon -> 0``, its lower-left block tends to ``P^{-1}`` where ``P`` is invertible, and
``tau(u [H_eps^{-1}]_{21} v) -> tau(A^{-1})`` in the sense of the Brown measure, inside and outside
the spectrum.  :func:`hermitize` writes ``H_eps`` as a pencil whose shift ``eps`` is
:data:`~symrmt.engine.reduce.linearize.EPS_SHIFT` (0 in the value); a solver takes it at ``eps = 1`` and
follows ``eps -> 0``.
"""

from __future__ import annotations

from symrmt.cache import cached
from symrmt.engine.lang.matrices import Inverse, MatProduct, MatSum, Scaled, Transpose
from symrmt.engine.reduce import linearize as lin
from symrmt.engine.reduce.linearize import EPS_SHIFT, Pencil, add_entry


def hermitize(p: Pencil) -> Pencil:
    """The pencil ``[[eps, P], [P^T, -eps]]`` (twice the blocks of ``p``, ``eps`` = :data:`EPS_SHIFT`) of
    ``M = u P^{-1} v``, read out on its lower-left block (at ``eps = 0`` its Schur complement is ``M`` exactly, so
    the finite-size self-test applies).

    >>> import sympy as sp
    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.gaussian("Z", "n", "n")
    >>> P = lin.linearize(lin.normalize(m.expr("inv(Z/sqrt(n) + 2*I(n))"))[1])  # one block: -(Zh + 2 + eps)
    >>> H = hermitize(P)
    >>> L = H.symbolic_matrix(lambda leaf, block: 1 if leaf == "I" else sp.Symbol("Zt" if leaf[2] else "Zh"))
    >>> L, sum(cu * cv * L.inv()[i, j] for i, cu in H.u.items() for j, cv in H.v.items())  # at eps = 0
    (Matrix([
    [      0, -Zh - 2],
    [-Zt - 2,       0]]), 1/(Zh + 2))
    """
    k = p.size
    Q = {}
    for (i, j), e in p.Q.items():
        for leaf, c in e.items():
            c0 = c.subs(EPS_SHIFT, 0)
            add_entry(Q, i, k + j, leaf, c0)
            flipped = (leaf[0], leaf[1], not leaf[2]) if leaf != "I" and leaf[0] == "Z" else leaf
            add_entry(Q, k + j, i, flipped, c0)
    for i in range(k):
        add_entry(Q, i, i, "I", EPS_SHIFT)
        add_entry(Q, k + i, k + i, "I", -EPS_SHIFT)
    u = {k + i: c for i, c in p.u.items()}
    v = dict(p.v)
    return Pencil(p.blocks + p.blocks, p.ratios, Q, u, v)


def nonnormal_inverses(matrix) -> list:
    """The arguments ``A`` of the ``inv(A)`` nodes of the normalized matrix tree ``matrix`` that are not symmetric
    by structure (their limit operator may be non-normal), innermost last, without repeats.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.gaussian("Z", "n", "n"), m.goe("G", "n")
    >>> A = m.expr("Z/sqrt(n) + 2*I(n)")
    >>> nonnormal_inverses(m.expr("inv(Z/sqrt(n) + 2*I(n)) * inv(G/sqrt(n) + 3*I(n))")) == [A]
    True
    """
    return list(_nonnormal_inverses(matrix))


@cached(maxsize=256)
def _nonnormal_inverses(matrix) -> tuple:
    """:func:`nonnormal_inverses` as a tuple, memoized on the (immutable) matrix: every solve of a plan asks."""
    out = []
    stack = [matrix]
    while stack:
        x = stack.pop()
        if isinstance(x, Inverse) and not lin.is_symmetric(x.matrix) and x.matrix not in out:
            out.append(x.matrix)
        stack.extend(reversed(x.children()))
    return tuple(out)


def bulk_part(matrix):
    """The matrix with every term that holds a vector removed: its bulk, which a finite-rank part does
    not change in the limit (``Z/sqrt(n) + g I + u v^T`` -> ``Z/sqrt(n) + g I``); ``None`` when nothing is
    left (the matrix is of finite rank).

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n"), m.vector("u", "n")
    >>> bulk_part(m.expr("Z + 2*I(n) + u*u.T")) == m.expr("Z + 2*I(n)"), bulk_part(m.expr("u*u.T"))
    (True, None)
    """
    if matrix.kind == "vector":
        return None
    if isinstance(matrix, MatSum):
        terms = [x for x in (bulk_part(t) for t in matrix.terms) if x is not None]
        return None if not terms else terms[0] if len(terms) == 1 else MatSum(terms)
    if isinstance(matrix, MatProduct):
        factors = [bulk_part(f) for f in matrix.factors]
        return None if any(f is None for f in factors) else MatProduct(factors)
    if isinstance(matrix, (Scaled, Transpose, Inverse)):
        inner = bulk_part(matrix.matrix)
        if inner is None:
            return None
        return Scaled(matrix.scalar, inner) if isinstance(matrix, Scaled) else type(matrix)(inner)
    return matrix


def gram_inverse(a):
    """``inv(A^T A)`` of the square matrix node ``a`` (the inverse of a symmetric positive semi-definite matrix).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.gaussian("Z", "n", "n")
    >>> gram_inverse(m.expr("Z")) == m.expr("inv(Z.T*Z)")
    True
    """
    return Inverse(MatProduct((Transpose(a), a)))


def has_inverse(matrix) -> bool:
    """Whether the matrix tree ``matrix`` holds an ``inv()`` node.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.gaussian("Z", "n", "n")
    >>> has_inverse(m.expr("Z*Z.T/n")), has_inverse(m.expr("Z*inv(Z.T*Z/n)"))
    (False, True)
    """
    stack = [matrix]
    while stack:
        x = stack.pop()
        if isinstance(x, Inverse):
            return True
        stack.extend(x.children())
    return False


def resolvent_argument(matrix):
    """``A`` when the traced matrix node ``matrix`` is ``inv(A)`` (up to a scalar factor), else ``None``: the form
    whose Hermitization is the Brown-measure Cauchy transform.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.gaussian("Z", "n", "n")
    >>> resolvent_argument(m.expr("2*inv(Z/sqrt(n) + I(n))")) == m.expr("Z/sqrt(n) + I(n)"), resolvent_argument(m.expr("Z"))
    (True, None)
    """
    m = matrix.matrix if isinstance(matrix, Scaled) else matrix
    return m.matrix if isinstance(m, Inverse) else None


__all__ = ["hermitize", "nonnormal_inverses", "gram_inverse", "resolvent_argument", "has_inverse",
           "bulk_part"]
