"""Dense linear algebra written out for any number type (float, long double, mpf, complex).

The solvers' systems are small (a few to a few dozen unknowns) and their unknowns have very
different scales, so the routines here are plain loops with pivoting, over a
:class:`~symrmt.core.numbers.NumberContext` where a square root or a roundoff is needed:

* :func:`qr_solve` -- Householder least squares for consistent ``m x n`` systems (``m >= n``),
  several right-hand sides on one factorization (the Newton step and the implicit derivative);
* :func:`lu_factor` / :func:`lu_solve` -- float LU with partial pivoting (the chord corrector and
  the iterative refinement reuse one factorization);
* :func:`solve_dense` -- Gaussian elimination for one right-hand side (sparse-aware), refusing an
  exactly zero pivot or, with :func:`singular_tolerance`, a numerically singular matrix;
* :func:`inverse` -- Gauss-Jordan inverse of a small block (the same singularity test);
* :func:`solve_numpy` -- one small float64 or complex128 system by LAPACK (the complex density path);
* :func:`inverse_numpy` -- the LAPACK inverse of one small matrix, refused when ill-conditioned (the
  density's iterative refinement).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from mpmath.libmp import from_man_exp

from symrmt.errors import ConvergenceError

__all__ = ["qr_solve", "lu_factor", "lu_solve", "solve_dense", "singular_tolerance", "inverse", "inverse_numpy",
           "solve_numpy"]


def qr_solve(rows, rhss, sqrt, eps):
    """Least-squares solutions of the consistent systems ``A x = b``, one list ``x`` for each ``b`` in ``rhss``.

    ``rows`` are the ``m`` rows of ``A`` (``m >= n``); ``sqrt`` and ``eps`` are the number type's square root
    and unit roundoff.  Householder QR, written out for any number type with ``+ - * /``, ``abs`` and ordering
    (mpf or float), because :func:`mpmath.qr_solve` divides by zero when a pivot is exactly 0 and tests rank
    against an absolute epsilon.  All right-hand sides share one factorization; a square mpmath system is
    solved by python-flint where it is installed and proves the matrix invertible.

    Raises :class:`ConvergenceError` when a column of ``A`` is, to within ``1024 eps`` of its own norm, a
    combination of the previous ones; the test is per column because the unknowns have very different scales.

    >>> x = qr_solve([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [[2.0, 3.0, 4.0]], math.sqrt, 2.0 ** -52)
    >>> [round(v, 12) for v in x[0]]
    [1.0, 3.0]
    >>> qr_solve([[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0]], math.sqrt, 2.0 ** -52)
    Traceback (most recent call last):
    ...
    symrmt.errors.ConvergenceError: singular Jacobian in the fixed-point solve
    """
    m, n, k = len(rows), len(rows[0]), len(rhss)
    if m == n and sqrt is mpmath.sqrt:
        out = _flint_solve(rows, rhss)
        if out is not None:
            return out
    A = [list(rows[i]) + [r[i] for r in rhss] for i in range(m)]
    col_norms = [sqrt(sum(A[i][j] * A[i][j] for i in range(m))) for j in range(n)]
    width = n + k
    for j in range(n):
        norm = sqrt(sum(A[i][j] * A[i][j] for i in range(j, m)))
        if not norm > col_norms[j] * eps * 1024:  # also catches nan
            raise ConvergenceError("singular Jacobian in the fixed-point solve")
        ajj = A[j][j]
        alpha = -norm if ajj >= 0 else norm
        v0 = ajj - alpha
        two_over_vv = 2 / (2 * norm * (norm + abs(ajj)))  # v^T v = 2 |a| (|a| + |a_jj|)
        below = range(j + 1, m)
        for col in range(j + 1, width):
            t = v0 * A[j][col]
            for i in below:
                t += A[i][j] * A[i][col]
            t *= two_over_vv
            A[j][col] -= t * v0
            for i in below:
                A[i][col] -= t * A[i][j]
        A[j][j] = alpha
    out = []
    for r in range(k):
        col = n + r
        x = [None] * n
        for i in range(n - 1, -1, -1):
            acc = A[i][col]
            for q in range(i + 1, n):
                acc -= A[i][q] * x[q]
            x[i] = acc / A[i][i]
        out.append(x)
    return out


def _flint_solve(rows, rhss):
    """The square mpmath system solved in C by python-flint (an arb matrix at the working precision), or
    ``None`` (no flint, a complex entry, or a matrix the ball arithmetic cannot prove invertible: the
    written-out QR then decides, with its own singularity test).  Rows and columns are first scaled by
    powers of 2 (exactly) to unit size, so that unknowns of very different scales do not read as
    singular; the returned solutions are the midpoints of the proved enclosures, unscaled exactly.
    About 70 times faster than the QR for 27 unknowns at 40 digits (the continuation in mpmath)."""
    try:
        import flint  # optional (symrmt[prove])
    except ImportError:
        return None
    n = len(rows)
    try:  # mpf entries only (an int 0 is taken as an mpf; a complex entry sends the system to the QR)
        zero = mpmath.mpf(0)._mpf_
        A = [[v._mpf_ if hasattr(v, "_mpf_") else (zero if v == 0 else mpmath.mpf(v)._mpf_) for v in r]
             for r in rows]
        B = [[v._mpf_ if hasattr(v, "_mpf_") else (zero if v == 0 else mpmath.mpf(v)._mpf_) for v in r]
             for r in zip(*rhss)]
    except (TypeError, ValueError):
        return None
    if any(not v[1] and v != zero for r in A + B for v in r):  # nan or an infinity: the QR decides
        return None

    def expo(v):  # v = f 2^e with 1/2 <= |f| < 1
        return v[2] + v[3]

    rexp = [-max((expo(v) for v in row if v[1]), default=0) for row in A]
    cexp = [-max((expo(A[i][j]) + rexp[i] for i in range(n) if A[i][j][1]), default=0) for j in range(n)]

    twos = {}

    def arb_of(v, e):  # exact: the mantissa times a (cached) power of 2
        sign, man, exp, _ = v
        if not man:
            return flint.arb(0)
        k = exp + e
        p = twos.get(k)
        if p is None:
            p = twos[k] = flint.arb(2) ** k
        return flint.arb(-man if sign else man) * p

    make = mpmath.mp.make_mpf
    prec = flint.ctx.prec
    try:
        flint.ctx.prec = mpmath.mp.prec + 20
        M = flint.arb_mat([[arb_of(A[i][j], rexp[i] + cexp[j]) for j in range(n)] for i in range(n)])
        R = flint.arb_mat([[arb_of(B[i][c], rexp[i]) for c in range(len(rhss))] for i in range(n)])
        X = None
        for algorithm in ("lu", "precond"):  # interval LU (fast), else the preconditioned solve (tighter)
            try:
                X = M.solve(R, algorithm=algorithm)
                break
            except (ZeroDivisionError, ValueError):
                continue
        if X is None:
            return None
        out = []
        for c in range(len(rhss)):
            x = []
            for j in range(n):
                mid = X[j, c].mid()
                if not mid.is_finite():
                    return None
                mm, ee = mid.man_exp()
                x.append(make(from_man_exp(int(mm), int(ee) + cexp[j])) if mm else make(zero))
            out.append(x)
        return out
    finally:
        flint.ctx.prec = prec


#: from this size on, :func:`lu_factor` hands the matrix to LAPACK (NumPy's inverse) instead of the loops
#: below, whose Python cost grows like ``n^3`` (a 19-unknown fixed point: 0.45 ms against 0.03 ms)
LAPACK_FROM = 8


class _Inverse:
    """A float matrix's inverse from LAPACK (:func:`lu_factor` at ``n >= LAPACK_FROM``)."""

    __slots__ = ("inv",)

    def __init__(self, inv):
        self.inv = inv


def lu_factor(rows):
    """A factorization of a float matrix (lists) for :func:`lu_solve`: LU with partial pivoting, or from
    ``LAPACK_FROM`` rows on LAPACK's inverse (the same partial pivoting, in C); ``None`` if singular (an
    exactly zero pivot) or not finite.

    >>> lu = lu_factor([[2.0, 1.0], [1.0, 3.0]])
    >>> [round(x, 12) for x in lu_solve(lu, [3.0, 5.0])]
    [0.8, 1.4]
    >>> lu_factor([[1.0, 2.0], [2.0, 4.0]]) is None
    True
    """
    n = len(rows)
    if n >= LAPACK_FROM:
        A = np.array(rows, dtype=float)
        if not np.isfinite(A).all():
            return None
        try:
            inv = np.linalg.inv(A)
        except np.linalg.LinAlgError:
            return None
        return _Inverse(inv) if np.isfinite(inv).all() else None
    A = [list(map(float, r)) for r in rows]
    piv = list(range(n))
    for k in range(n):  # the unknowns have very different scales: only an exact zero is singular here
        p = max(range(k, n), key=lambda i: abs(A[i][k]))
        if not (abs(A[p][k]) > 0 and math.isfinite(A[p][k])):
            return None
        if p != k:
            A[k], A[p] = A[p], A[k]
            piv[k], piv[p] = piv[p], piv[k]
        inv = 1.0 / A[k][k]
        rk = A[k]
        for i in range(k + 1, n):
            ri = A[i]
            f = ri[k] * inv
            if f:
                ri[k] = f
                for j in range(k + 1, n):
                    ri[j] -= f * rk[j]
            else:
                ri[k] = 0.0
    return A, piv


def lu_solve(lu, b):
    """The solution (a list of floats) of ``A x = b`` with the factorization ``lu`` of ``A`` from :func:`lu_factor`.

    >>> lu_solve(lu_factor([[0.0, 2.0], [1.0, 1.0]]), [2.0, 3.0])
    [2.0, 1.0]
    """
    if isinstance(lu, _Inverse):
        return (lu.inv @ np.array(b, dtype=float)).tolist()
    A, piv = lu
    n = len(A)
    y = [float(b[p]) for p in piv]
    for i in range(n):
        ri = A[i]
        y[i] -= sum(ri[j] * y[j] for j in range(i))
    for i in range(n - 1, -1, -1):
        ri = A[i]
        y[i] = (y[i] - sum(ri[j] * y[j] for j in range(i + 1, n))) / ri[i]
    return y


def solve_dense(M, rhs, zero, singular: str = "singular system", tol=0):
    """The solution of ``M x = rhs`` by Gaussian elimination with partial pivoting on nested lists (``M`` is
    overwritten), in the arithmetic of the entries.

    Zero entries are skipped (the Woodbury systems are sparse); the elimination is :func:`lu_dense` followed by
    :func:`lu_dense_solve`, so the solution's entries come out in the arithmetic of ``M`` and ``rhs`` (``zero``,
    the number type's 0, is accepted for the callers and not needed).  Raises ``ZeroDivisionError(singular)``
    on a pivot of modulus at most ``tol`` (default: an exactly zero pivot; :func:`singular_tolerance` gives the
    tolerance of a numerically singular matrix).

    >>> from fractions import Fraction
    >>> solve_dense([[Fraction(1), Fraction(2)], [Fraction(3), Fraction(4)]], [1, 0], Fraction(0))
    [Fraction(-2, 1), Fraction(3, 2)]
    """
    if not M:
        return []
    return lu_dense_solve(lu_dense(M, singular, tol), list(rhs))


def lu_dense(M, singular: str = "singular system", tol=0):
    """``(LU, perm)`` with ``M[perm] = L U`` (partial pivoting, ``L`` unit lower triangular and stored below the
    diagonal, ``U`` on and above it), for :func:`lu_dense_solve`, on nested lists of any number type (``M``
    is overwritten); a pivot of modulus at most ``tol`` raises ``ZeroDivisionError(singular)``, as in
    :func:`solve_dense`.  One factorization serves ``M x = b`` and ``M^T y = e``.

    >>> lu = lu_dense([[2, 1], [4, 1]])
    >>> lu_dense_solve(lu, [3, 5]), lu_dense_solve(lu, [8, 3], transposed=True)
    ([1.0, 1.0], [2.0, 1.0])
    """
    n = len(M)
    perm = list(range(n))
    for k in range(n):
        piv = max(range(k, n), key=lambda i: abs(M[i][k]))
        if abs(M[piv][k]) <= tol:
            raise ZeroDivisionError(singular)
        if piv != k:
            M[k], M[piv] = M[piv], M[k]
            perm[k], perm[piv] = perm[piv], perm[k]
        rk = M[k]
        inv = 1 / rk[k]
        for i in range(k + 1, n):
            ri = M[i]
            if ri[k] == 0:
                continue
            fct = ri[k] = ri[k] * inv
            for j in range(k + 1, n):
                if rk[j]:
                    ri[j] -= fct * rk[j]
    return M, perm


def lu_dense_solve(lu, b, transposed: bool = False) -> list:
    """``M^{-1} b`` (or ``M^{-T} b``) from :func:`lu_dense`'s factorization ``M[perm] = L U``."""
    M, perm = lu
    n = len(M)
    if not transposed:
        y = [b[p] for p in perm]
        for i in range(n):
            ri = M[i]
            for j in range(i):
                if ri[j]:
                    y[i] -= ri[j] * y[j]
        for i in range(n - 1, -1, -1):
            ri = M[i]
            acc = y[i]
            for j in range(i + 1, n):
                if ri[j]:
                    acc -= ri[j] * y[j]
            y[i] = acc / ri[i]
        return y
    # M^T = U^T L^T P: solve U^T w = b, then L^T v = w, then x = P^T v
    w = list(b)
    for i in range(n):
        acc = w[i]
        for j in range(i):
            if M[j][i]:
                acc -= M[j][i] * w[j]
        w[i] = acc / M[i][i]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            if M[j][i]:
                w[i] -= M[j][i] * w[j]
    x = [None] * n
    for i, p in enumerate(perm):
        x[p] = w[i]
    return x


def singular_tolerance(M, eps):
    """``||M||_1 eps``, the largest column sum of ``|M|`` times the unit roundoff ``eps``: a pivot of
    :func:`solve_dense` at or below it makes ``M`` numerically singular (the test of :func:`mpmath.lu_solve`).

    >>> singular_tolerance([[1, -2], [3, 4]], 0.5)
    3.0
    """
    n = len(M[0]) if M else 0
    return max((sum(abs(r[j]) for r in M) for j in range(n)), default=0) * eps


def inverse(A, k, singular: str = "singular matrix", tol=0):
    """The inverse (a list of rows) of the ``k x k`` matrix ``A`` (a list of rows) by Gauss-Jordan with partial
    pivoting, in the arithmetic of the entries.  Raises ``ZeroDivisionError(singular)`` on a pivot of modulus at
    most ``tol`` (default: exactly zero; see :func:`singular_tolerance`).

    >>> from fractions import Fraction
    >>> inverse([[Fraction(2), 1], [1, 1]], 2)
    [[Fraction(1, 1), Fraction(-1, 1)], [Fraction(-1, 1), Fraction(2, 1)]]
    """
    M = [list(r) + [1 if i == j else 0 for j in range(k)] for i, r in enumerate(A)]
    for c in range(k):
        p = max(range(c, k), key=lambda i: abs(M[i][c]))
        if not abs(M[p][c]) > tol:
            raise ZeroDivisionError(singular)
        M[c], M[p] = M[p], M[c]
        inv = 1 / M[c][c]
        M[c] = [x * inv for x in M[c]]
        for i in range(k):
            if i != c and M[i][c]:
                f = M[i][c]
                M[i] = [a - f * b for a, b in zip(M[i], M[c])]
    return [r[k:] for r in M]


def inverse_numpy(rows, dtype=complex, max_cond=None):
    """The inverse (a NumPy array) of one small matrix in ``dtype`` by :func:`numpy.linalg.inv` (a factorization
    reused by an iterative refinement); ``None`` when it holds a non-finite entry, is singular, or its 2-norm
    condition number exceeds ``max_cond``.

    >>> inverse_numpy([[2, 0], [0, 4]], float).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    >>> print(inverse_numpy([[1, 1], [1, 1 + 1e-12]], float, max_cond=1e8))
    None
    """
    A = np.array(rows, dtype=dtype)
    if not np.all(np.isfinite(A)):
        return None
    try:
        if max_cond is not None and np.linalg.cond(A) > max_cond:
            return None
        return np.linalg.inv(A)
    except np.linalg.LinAlgError:
        return None


def solve_numpy(rows, rhs, dtype=complex, singular: str = "singular Jacobian"):
    """``A^{-1} b`` (a NumPy array) for one small system in ``dtype`` by :func:`numpy.linalg.solve`.  Raises
    ``ZeroDivisionError(singular)`` (a refused step, to the solvers) on a singular system or a non-finite solution.

    >>> solve_numpy([[2, 0], [0, 4j]], [2, 2]).tolist()
    [(1+0j), -0.5j]
    >>> solve_numpy([[1, 2], [2, 4]], [1, 1], float)
    Traceback (most recent call last):
    ...
    ZeroDivisionError: singular Jacobian
    """
    A = np.array(rows, dtype=dtype)
    b = np.array(rhs, dtype=dtype)
    try:
        x = np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        raise ZeroDivisionError(singular) from None
    if not np.all(np.isfinite(x)):
        raise ZeroDivisionError(singular)
    return x
