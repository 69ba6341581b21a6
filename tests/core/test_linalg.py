"""The core's dense linear algebra against NumPy's LAPACK solves and exact rational arithmetic."""

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from symrmt.core.linalg import LAPACK_FROM, lu_dense, lu_dense_solve, lu_factor, lu_solve, singular_tolerance


@pytest.mark.parametrize("n", [1, 2, 5, LAPACK_FROM - 1, LAPACK_FROM, 19])
def test_float_factorization_both_sides_of_the_lapack_switch(n):
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n)) + 3 * np.eye(n)
    b = rng.standard_normal(n)
    x = lu_solve(lu_factor(A.tolist()), b.tolist())
    assert np.allclose(x, np.linalg.solve(A, b), rtol=1e-13, atol=1e-13)
    S = A.copy()
    S[-1] = S[0] * 2 if n > 1 else 0.0  # exactly singular
    assert lu_factor(S.tolist()) is None
    A[0, 0] = np.nan
    assert lu_factor(A.tolist()) is None


def test_lu_dense_solves_both_sides_exactly_on_rationals():
    """Sparse rows (zero entries are skipped), pivoting needed (a zero leading entry): on Fractions the
    two solves are exact."""
    rng = np.random.default_rng(3)
    n = 7
    M = [[Fraction(int(v)) if abs(v) > 2 else Fraction(0) for v in rng.integers(-6, 7, n)] for _ in range(n)]
    M[0][0] = Fraction(0)
    for i in range(n):
        M[i][i] += 9 if i else 0
    b = [Fraction(int(v), 3) for v in rng.integers(-5, 6, n)]
    lu = lu_dense([list(r) for r in M])
    x = lu_dense_solve(lu, b)
    y = lu_dense_solve(lu, b, transposed=True)
    assert [sum(M[i][j] * x[j] for j in range(n)) for i in range(n)] == b
    assert [sum(M[j][i] * y[j] for j in range(n)) for i in range(n)] == b


def test_lu_dense_refuses_a_numerically_singular_matrix():
    with mpmath.workdps(30):
        e = mpmath.mpf(10) ** -40
        M = [[mpmath.mpf(1), mpmath.mpf(2)], [mpmath.mpf(2), 4 + e]]
        with pytest.raises(ZeroDivisionError, match="singular"):
            lu_dense([list(r) for r in M], tol=singular_tolerance(M, mpmath.eps))
