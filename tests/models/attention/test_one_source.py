"""One source of truth for the paper's model.

The Gaussian-equivalent kernel with its finite-rank signal and weight terms is defined once, in
:mod:`symrmt.hermite.kernel_terms`.  These tests check that

* the hand-built solver's symbolic layer (:mod:`symrmt.models.attention.equations`: the 3-block pencil
  ``L_0, A_S, P`` and the Woodbury matrix ``D``) is an exact linearization of that kernel: reassembled on
  an explicit finite instance (exact rationals, symbolic ``a_1, d, gamma``) it gives the pencil
  ``[[gamma I, K^T, 0], [K, 0, I], [0, I, X^T X/n]]`` of the kernel, entry by entry, for ranks 1 and 2 and
  ``alpha != 1`` (weights divided by ``alpha`` as :meth:`LowRankGeometry.scaled` does, Hermite data of
  ``f(alpha t)``, as the solver takes it), and that pencil's inverse holds the resolvent of ``E_A``;
* the trace engine's ``kernel(f, X, W)`` / ``kernel(f, Z, alpha)`` build exactly the terms of the same
  definition, with the Hermite data of ``f(alpha t)`` computed independently here;
* the ``alpha`` bookkeeping of the definition is the scaled identity of ``docs/theory.md`` section 2.3
  (symbolically).
"""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from symrmt.models.attention import equations as S
from symrmt.hermite import kernel_terms as KT


def _rq(rng, lo=-3, hi=3):
    return sp.Rational(rng.randint(lo, hi), rng.randint(1, 4))


def _instance(seed: int, r: int, n: int, p: int, alpha):
    """An explicit finite instance in the rotated frame: the coordinates, ``E``, ``Z'``, ``X``, ``W``."""
    rng = random.Random(seed)
    k = 2 * r + 1
    coords = [_rq(rng) for _ in range(k * k)]           # rows: mu, wk_1..r, wq_1..r (first k coordinates)
    xi = sp.Matrix(k, n, lambda i, j: _rq(rng))         # noise of the first k rows of X
    Zp = sp.Matrix(p - k, n, lambda i, j: _rq(rng))     # the other p - k rows
    y = sp.Matrix(n, 1, lambda i, j: rng.choice((-1, 1)))
    rows = [sp.Matrix(coords[i * k:(i + 1) * k]) for i in range(k)]
    pad = lambda v: sp.Matrix.vstack(v, sp.zeros(p - k, 1))  # noqa: E731
    mu = pad(rows[0])
    X = mu * y.T + sp.Matrix.vstack(xi, Zp)
    W = alpha * sp.eye(p)
    for wk, wq in zip(rows[1:1 + r], rows[1 + r:]):
        W += pad(wk) * pad(wq).T
    E = sp.Matrix.hstack(y, xi.T) / sp.sqrt(n)
    return coords, E, Zp, X, W


@pytest.mark.parametrize("r, n, p, alpha, seed", [(1, 4, 6, 1, 1), (1, 4, 5, sp.Rational(3, 2), 2),
                                                  (2, 4, 8, 1, 3), (2, 9, 7, sp.Rational(2, 3), 4)])
def test_hand_built_pencil_linearizes_the_kernel(r, n, p, alpha, seed):
    """``L_0 (x) I + A_S (x) S' + b P (x) G + U D U^T`` (equations.py) is the pencil of the kernel, exactly."""
    coords, E, Zp, X, W = _instance(seed, r, n, p, alpha)
    rng = random.Random(seed + 100)
    G = sp.Matrix(n, n, lambda i, j: 0)
    for i in range(n):
        for j in range(i + 1, n):
            G[i, j] = G[j, i] = _rq(rng)
    cval = sp.Rational(p, n)
    a1, d, gamma = S.a1, S.d, S.gamma
    # the kernel of the one definition, for W = alpha I + L (a_1, nu, d: the Hermite data of f(alpha t))
    kt = KT.gaussian_equivalent(a1, S.nu, d, alpha)
    K = kt.xwx * X.T * W * X / p + kt.goe * G / sp.sqrt(p) + kt.identity * sp.eye(n)
    I, O = sp.eye(n), sp.zeros(n, n)
    L = sp.Matrix(sp.BlockMatrix([[gamma * I, K.T, O], [K, O, I], [O, I, X.T * X / n]]))
    # the hand-built pencil: noise part from Z' plus the Woodbury part, the weights divided by alpha
    k = 2 * r + 1
    scaled = list(coords)
    for j in range(k, k + r * k):                       # the wk_j coordinates
        scaled[j] = scaled[j] / alpha
    L0, A_S, P = S.noise_pencil()
    Sp = Zp.T * Zp / p
    noise = (sp.kronecker_product(L0, I) + sp.kronecker_product(A_S, Sp)
             + sp.sqrt(S.b_squared()) * sp.kronecker_product(P, G / sp.sqrt(p)))   # Gt = G/sqrt(p)
    U = sp.kronecker_product(sp.eye(3), E)
    D = S.woodbury_D(scaled, r=r)
    diff = (noise + U * D * U.T - L).subs(S.c, cval)
    bad = [(i, j) for i in range(3 * n) for j in range(3 * n) if sp.expand(diff[i, j]) != 0]
    assert not bad, f"{len(bad)} entries differ, first {bad[0]}: {sp.expand(diff[bad[0]])}"
    # the weights divided by alpha are the solver's (LowRankGeometry.scaled), Gram for Gram
    from symrmt.models.attention.geometry import LowRankGeometry

    def gram(cs):
        rows = [cs[i * k:(i + 1) * k] for i in range(k)]
        return [[sum(a * b for a, b in zip(u, v)) for v in rows] for u in rows]

    geo = LowRankGeometry([[Fraction(int(x.p), int(x.q)) for x in row] for row in gram(coords)],
                          alpha=Fraction(int(sp.Rational(alpha).p), int(sp.Rational(alpha).q)))
    assert [[sp.Rational(x.numerator, x.denominator) for x in row] for row in geo.scaled().gram_entries] == gram(scaled)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_the_pencil_holds_the_resolvent_of_e_a():
    """The top-left block of ``L^{-1}`` is ``(K^T X^T X K/n + gamma I)^{-1}`` (the resolvent of ``E_A``), for the
    kernel of the one definition at numbers (``a_1 = 1/2``, ``b = 3/4``, ``d = 1/3``, ``gamma = 1/5``)."""
    coords, E, Zp, X, W = _instance(5, 1, 4, 6, 1)
    n, p = 4, 6
    rng = random.Random(7)
    G = sp.zeros(n, n)
    for i in range(n):
        for j in range(i + 1, n):
            G[i, j] = G[j, i] = _rq(rng)
    kt = KT.gaussian_equivalent(sp.Rational(1, 2), sp.Rational(1, 4) + sp.Rational(9, 16), sp.Rational(1, 3))
    assert kt.goe == sp.Rational(3, 4)
    gamma = sp.Rational(1, 5)
    K = kt.xwx * X.T * W * X / p + kt.goe * G / sp.sqrt(p) + kt.identity * sp.eye(n)
    I, O = sp.eye(n), sp.zeros(n, n)
    L = sp.Matrix(sp.BlockMatrix([[gamma * I, K.T, O], [K, O, I], [O, I, X.T * X / n]]))
    Q = (K.T * X.T * X * K / n + gamma * I).inv()
    assert (L.inv()[:n, :n] - Q).applyfunc(sp.radsimp).applyfunc(sp.expand) == sp.zeros(n, n)


def test_pencil_reads_kernel_coefficients():
    """Changing the kernel's coefficients moves the pencil: its entries are the definition's, not copies."""
    L0, A_S, P = S.noise_pencil()
    kt = S.kernel_terms()
    assert L0[0, 1] == L0[1, 0] == kt.identity == S.d - S.a1
    assert A_S[0, 1] == A_S[1, 0] == kt.wishart == S.a1
    assert S.b_squared() == kt.b2 == S.nu - S.a1**2


def test_alpha_is_the_scaled_identity():
    """``(a_1/alpha)(alpha I + L) = a_1 (I + L/alpha)``: the definition at ``alpha`` is the one at 1 with
    ``wk/alpha`` (the route of the hand-built solver, ``docs/theory.md`` section 2.3), symbolically."""
    al = sp.Symbol("alpha", positive=True)
    for r in (1, 2):
        k = 2 * r + 1
        coords = S.lowrank_coords(r)
        kt = KT.gaussian_equivalent(S.a1, S.nu, S.d, al)
        assert sp.simplify(kt.wishart - S.a1) == 0
        MK, MS = KT.finite_rank_parts(kt, coords, r, S.c)
        scaled = [x / al if k <= i < k + r * k else x for i, x in enumerate(coords)]
        MK1, MS1 = KT.finite_rank_parts(KT.gaussian_equivalent(S.a1, S.nu, S.d), scaled, r, S.c)
        assert (MK - MK1).applyfunc(sp.simplify) == sp.zeros(k + 1, k + 1)
        assert MS == MS1


def _hermite(f, alpha, diagonal, dps=100):
    """``(a_1, nu, d)`` of ``f(alpha t)`` from :mod:`symrmt.hermite` (exact where it can)."""
    from symrmt.hermite import NotExact
    from symrmt.models.attention.theory import scaled_nonlinearity

    nl = scaled_nonlinearity(f, Fraction(alpha))
    d = sp.sympify(nl.d) if diagonal == "keep" else sp.Integer(0)
    try:
        return nl.a(1), nl.nu, d, True
    except NotExact:
        return sp.Float(nl.a_mpf(1, dps), dps), sp.Float(nl.nu_mpf(dps), dps), d, False


def _same(x, y, exact: bool) -> bool:
    if exact:
        return sp.simplify(x - y) == 0
    # quadrature data (tanh): compare at a point of the free symbols (c, n), to 75 digits
    e = sp.sympify(x - y)
    at = {s: sp.Rational(7 + i, 3) for i, s in enumerate(sorted(e.free_symbols | sp.sympify(y).free_symbols, key=str))}
    with mpmath.workdps(90):
        return abs(sp.N(e.subs(at), 90)) <= sp.Float(10) ** -75 * max(1, abs(sp.N(sp.sympify(y).subs(at), 30)))


CASES = [("relu", "1", "zero", 1), ("relu", "1", "keep", 2), ("erf", "3/2", "keep", 1), ("erf", "1/2", "zero", 2),
         ("tanh", "1", "zero", 1), ("tanh", "3/2", "keep", 1), ("t**3 - 3*t", "2/3", "zero", 1)]


@pytest.mark.slow  # seconds per call: outside the fast tier
@pytest.mark.parametrize("f, alpha, diagonal, rank", CASES)
def test_engine_kernel_is_the_one_definition(f, alpha, diagonal, rank):
    """The engine's ``kernel(f, X, W)`` (the attention engine model's ``K``) and ``kernel(f, Z, alpha)``
    are the terms of :func:`kernel_terms.gaussian_equivalent`, coefficient by coefficient."""
    from symrmt.engine import kernel
    from symrmt.engine.lang.matrices import Identity
    from symrmt.models.attention import attention_model

    m, _ = attention_model(f, rank=rank, alpha=alpha, diagonal=diagonal)
    X, W, K = m.parse("X"), m.parse("W"), m.parse("K")
    a1, nu, d, exact = _hermite(f, alpha, diagonal)
    kt = KT.gaussian_equivalent(a1, nu, d, sp.Rational(alpha))
    p = X.rows.size
    n = X.cols
    want = [(kt.xwx / p, X.T * W * X), (kt.goe / sp.sqrt(p), "goe"), (kt.identity, Identity(n))]
    want = [w for w in want if not _same(w[0], 0, exact)]
    assert len(K.terms) == len(want)
    for term, (coef, mat) in zip(K.terms, want):
        assert _same(term.scalar.value, coef, exact), (term.scalar.value, coef)
        assert (term.matrix.kind == "goe" and term.matrix.cols == n) if mat == "goe" else term.matrix == mat
    # the noise-only path: W = alpha I folded into the Hermite data, coefficient of Z^T Z/p = wishart
    Z = m.matrices["Z"]
    K0 = kernel(f, Z, alpha, diagonal, model=m)
    want0 = [(kt.wishart / p, Z.T * Z), (kt.goe / sp.sqrt(p), "goe"), (kt.identity, Identity(n))]
    want0 = [w for w in want0 if not _same(w[0], 0, exact)]
    assert len(K0.terms) == len(want0)
    for term, (coef, mat) in zip(K0.terms, want0):
        assert _same(term.scalar.value, coef, exact), (term.scalar.value, coef)
        assert (term.matrix.kind == "goe") if mat == "goe" else term.matrix == mat
