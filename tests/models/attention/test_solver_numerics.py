"""Numeric layer: the exact Gram factorization, the least-squares step, compiled code precision."""

import random
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from symrmt.core.linalg import qr_solve
from symrmt.errors import ConvergenceError
from symrmt.models.attention import solver as N
from symrmt.models.attention import equations as S


@pytest.mark.parametrize("seed", range(5))
def test_gram_factor_reproduces_gram(seed):
    rng = random.Random(seed)
    for _ in range(40):
        r = rng.choice([1, 2, 3])
        V = [[Fraction(rng.randint(-3, 3), rng.randint(1, 3)) for _ in range(r)] for _ in range(3)]
        G = [[sum(a * b for a, b in zip(V[i], V[j])) for j in range(3)] for i in range(3)]
        B = N.gram_factor(G, 40)
        with mpmath.workdps(40):
            err = max(abs(mpmath.fsum(B[i][k] * B[j][k] for k in range(3)) - N.mpf_of(G[i][j]))
                      for i in range(3) for j in range(3))
        assert err < mpmath.mpf(10) ** -35, (G, err)


def test_gram_factor_zero_mu_row_is_zero():
    # mu = 0 must map to zero coordinates whatever the pivoting order
    G = [[0, 0, 0], [0, 1, Fraction(3, 10)], [0, Fraction(3, 10), 1]]
    B = N.gram_factor(G, 30)
    assert all(x == 0 for x in B[0])


def test_qr_solve_consistent_system_with_zero_pivot():
    # the fixed point's least squares (the core's Householder QR): an exactly zero first pivot is no division by 0
    rows = [[mpmath.mpf(v) for v in r] for r in ([0, 1], [1, 0], [1, 1])]
    x_true = [mpmath.mpf(2), mpmath.mpf(-3)]
    b = [sum(a * t for a, t in zip(r, x_true)) for r in rows]
    x = qr_solve(rows, [b], mpmath.sqrt, mpmath.eps)[0]
    assert max(abs(a - t) for a, t in zip(x, x_true)) < mpmath.mpf(10) ** -14


def test_qr_solve_singular_raises():
    rows = [[mpmath.mpf(v) for v in r] for r in ([1, 2], [2, 4], [3, 6])]
    with pytest.raises(ConvergenceError, match="singular"):
        qr_solve(rows, [[mpmath.mpf(v) for v in (1, 2, 3)]], mpmath.sqrt, mpmath.eps)


def test_compiled_code_has_no_double_precision_constants():
    with pytest.raises(ValueError, match="float literals"):
        N.compile_expr([S.gamma], S.gamma * sp.Float(0.1))


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_compiled_fixed_point_keeps_precision():
    F = N.fixed_point_functions()[0]
    with mpmath.workdps(60):
        g = [mpmath.mpf(1) / 3] * 6
        params = (mpmath.mpf(1) / 7, mpmath.mpf(1) / 3, mpmath.mpf(1) / 5, mpmath.mpf(1) / 2, mpmath.mpf(0))
        hi = F([+x for x in g], params)
        exact = S.fixed_point_polynomial().subs(dict(zip(S.G_SYMBOLS, [sp.Rational(1, 3)] * 6)))
        exact = exact.subs({S.gamma: sp.Rational(1, 7), S.c: sp.Rational(1, 3), S.a1: sp.Rational(1, 5),
                            S.nu: sp.Rational(1, 2), S.d: 0})
        for i in range(9):
            assert abs(hi[i] - mpmath.mpf(sp.N(exact[i], 70))) < mpmath.mpf(10) ** -55
