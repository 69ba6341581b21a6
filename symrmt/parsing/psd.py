"""Exact positive semi-definiteness of a rational Gram matrix: the pivoted ``LDL^T`` (:func:`ldl_pivoted`),
the exact test and rank, and the projection of a matrix that is PSD up to rounding (:func:`project_psd`).

This module imports neither SymPy nor NumPy.
"""

from __future__ import annotations

from fractions import Fraction

from symrmt.errors import ParameterError

__all__ = ["ldl_pivoted", "PSD_ROUNDING", "project_psd", "is_psd", "exact_rank"]


def ldl_pivoted(gram):
    """Exact ``P^T A P = L D L^T`` of a symmetric rational matrix, pivoting on the largest diagonal.

    Returns ``(perm, L, D)`` with ``L`` unit lower triangular (lists of Fractions,
    rows in pivot order), ``D`` the pivots and ``perm[k]`` the original index of
    pivot ``k``.  Raises :class:`ParameterError` when ``A`` is not positive
    semi-definite (a negative pivot, or a zero pivot with a non-zero column).

    >>> perm, L, D = ldl_pivoted([[1, 2], [2, 4]])
    >>> [str(x) for x in D]
    ['4', '0']
    >>> ldl_pivoted([[1, 2], [2, 1]])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: the Gram matrix is not positive semi-definite (pivot 2 is -3)
    """
    A = [[Fraction(x) for x in row] for row in gram]
    n = len(A)
    perm = list(range(n))
    L = [[Fraction(0)] * n for _ in range(n)]
    D = [Fraction(0)] * n
    W = [row[:] for row in A]
    for k in range(n):
        piv = max(range(k, n), key=lambda i: W[perm[i]][perm[i]])
        perm[k], perm[piv] = perm[piv], perm[k]
        L[k][:k], L[piv][:k] = L[piv][:k], L[k][:k]
        L[k][k] = Fraction(1)
        pk = perm[k]
        D[k] = W[pk][pk]
        if D[k] < 0:
            raise ParameterError(f"the Gram matrix is not positive semi-definite (pivot {k + 1} is {D[k]})")
        if D[k] == 0:
            # the largest remaining diagonal is 0: PSD forces the whole remaining block to vanish
            if any(W[perm[i]][perm[j]] != 0 for i in range(k, n) for j in range(k, n)):
                raise ParameterError("the Gram matrix is not positive semi-definite (a zero norm with a non-zero "
                                     "inner product)")
            for i in range(k + 1, n):
                L[i][i] = Fraction(1)
            break
        for i in range(k + 1, n):
            L[i][k] = W[perm[i]][pk] / D[k]
        for i in range(k + 1, n):
            for j in range(k + 1, n):
                W[perm[i]][perm[j]] -= L[i][k] * D[k] * L[j][k]
    return perm, L, D


#: relative size (of the largest diagonal entry) of a PSD violation that counts as rounding
PSD_ROUNDING = Fraction(1, 10**12)


def project_psd(gram, rel_tol=PSD_ROUNDING, always=False):
    """A Gram matrix that is PSD up to rounding, made exactly PSD; ``(gram, violation)``.

    An exactly PSD matrix is returned unchanged with ``violation = None``.  Otherwise the
    pivoted LDL^T is run with the threshold ``tol = PSD_ROUNDING * max diagonal``: it stops
    when the largest remaining diagonal of the Schur complement is at most ``tol``, which
    fixes the numerical rank ``k``.  If that remaining block has every entry within
    ``tol`` in absolute value it is dropped: the result is the exact rank-``k`` Gram matrix
    ``L D L^T``, equal to the input in the rows and columns of the ``k`` pivots and
    changed elsewhere by at most ``tol``; ``violation`` is the largest dropped entry
    relative to the scale.  A larger violation raises :class:`ParameterError` with its size.
    With ``always=True`` the truncation runs on a PSD matrix too (its trailing pivots at
    most ``tol`` are dropped).

    >>> a = Fraction(1.4142135623730951)          # sqrt(2) rounded to a double
    >>> g, v = project_psd([[2, a, a], [a, 1, 1], [a, 1, 1]])
    >>> exact_rank(g), v < 1e-15
    (1, True)
    >>> project_psd([[1, 2], [2, 1]])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: the Gram matrix is not positive semi-definite: its violation is 3 relative to its scale 1 (rounding allows 1e-12)
    """
    A = [[Fraction(x) for x in row] for row in gram]
    if not always and is_psd(A):
        return A, None
    n = len(A)
    scale = max((abs(A[i][i]) for i in range(n)), default=Fraction(0)) or max(
        (abs(x) for row in A for x in row), default=Fraction(1)) or Fraction(1)
    tol = rel_tol * scale
    perm = list(range(n))
    W = [row[:] for row in A]
    L = [[Fraction(0)] * n for _ in range(n)]
    D = []
    k = 0
    while k < n:
        piv = max(range(k, n), key=lambda i: W[perm[i]][perm[i]])
        perm[k], perm[piv] = perm[piv], perm[k]
        L[k][:k], L[piv][:k] = L[piv][:k], L[k][:k]
        pk = perm[k]
        if W[pk][pk] <= tol:
            break
        L[k][k] = Fraction(1)
        D.append(W[pk][pk])
        for i in range(k + 1, n):
            L[i][k] = W[perm[i]][pk] / D[k]
        for i in range(k + 1, n):
            for j in range(k + 1, n):
                W[perm[i]][perm[j]] -= L[i][k] * D[k] * L[j][k]
        k += 1
    worst = max((abs(W[perm[i]][perm[j]]) for i in range(k, n) for j in range(k, n)), default=Fraction(0))
    if worst > tol:
        raise ParameterError(f"the Gram matrix is not positive semi-definite: its violation is {float(worst / scale):.3g} "
                             f"relative to its scale {float(scale):.6g} (rounding allows {float(rel_tol):.0e})")
    out = [[Fraction(0)] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            out[perm[i]][perm[j]] = sum((L[i][q] * D[q] * L[j][q] for q in range(k)), Fraction(0))
    return out, (float(worst / scale) or 1e-300) if worst else 0.0


def is_psd(m) -> bool:
    """Whether the symmetric rational matrix ``m`` (rows of ints, Fractions or exact numbers) is positive
    semi-definite, exactly (through :func:`ldl_pivoted`).  Raises nothing.

    >>> is_psd([[1, 2], [2, 4]]), is_psd([[1, 2], [2, 3]]), is_psd([[0, 1], [1, 0]])
    (True, False, False)
    """
    try:
        ldl_pivoted(m)
    except ParameterError:
        return False
    return True


def exact_rank(m) -> int:
    """Exact rank of a positive semi-definite rational matrix: the number of its non-zero LDL^T pivots.  Raises
    :class:`ParameterError` when ``m`` is not PSD.

    >>> exact_rank([[1, 2], [2, 4]]), exact_rank([[2, 0, 0], [0, 1, 0], [0, 0, 0]])
    (1, 2)
    """
    _, _, D = ldl_pivoted(m)
    return sum(1 for x in D if x != 0)
