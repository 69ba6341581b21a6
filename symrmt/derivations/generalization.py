r"""Test errors on a fresh sequence: the paper's readout trained on ``(X, y)`` and tested on new tokens.

Claim (``docs/theory.md`` section 12).  For a readout ``v`` independent of a fresh sequence
``X' = mu y'^T + Z'`` with kernel ``K'``, ``||y' - K'^T X'^T v||^2/n`` tends to

    T(v) = (1 - kappa mu^T W^T h)^2 + kappa^2 ||W^T h||^2 - 2 d s + 2 d kappa h^T W h + (d^2 + nu/c)(s^2 + ||v||^2)

(``s = mu.v``, ``h = v + mu s``, ``kappa = a_1/(alpha c)``), so the test error of the trained readout needs
only ``||w||^2 = phi - E_A/gamma`` and ``u.w`` for ``u`` in ``mu, w_K^j, w_Q^j`` (engine quadratic forms);
ridge has the closed form :func:`~symrmt.models.attention.generalization.ridge_test_formula`.

Checks.
1. Symbolic: the rotated-frame computation (the ``n``-space vectors ``E a + z``, the noise-only kernel
   ``K'`` with free moments ``tau(K'^2)``, ``tau(S' K'^2)``) equals the p-space formula, on exact random
   coordinates (``v`` with a part outside the span); the special cases ridge and no signal.
2. Symbolic: the free-Poisson moments used (``tau(S^k)``, Narayana) and the Marchenko-Pastur root of the
   ridge closed form.
3. High precision: ridge closed form == the engine's forms (``||w_R||^2``, ``mu.w_R``) at random points.
4. Simulation: the fresh-sample formula for a fixed readout (nonlinear kernel); the whole model (train,
   then a fresh sequence) on the routes noise only, signal, aligned and orthogonal weights, ``alpha``,
   the diagonal kept; ``k = 3`` se + 1% + 0.003.
"""

from __future__ import annotations

import math
import random
import sys
import time
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

import symrmt
from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.derivations.engine_attention import random_gram
from symrmt.hermite.kernel_terms import gaussian_equivalent, kernel_lowrank
from symrmt.models.attention.engine_model import at_from_gram, attention_model
from symrmt.models.attention.generalization import fresh_error_formula, ridge_test_formula, training_forms
from symrmt.models.attention.generalization import engine_model, engine_projection, woodbury_projections
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.models.attention.hermite_data import hermite_at_least, hermite_inputs, scaled_nonlinearity
from symrmt.models.attention.sampling import draw_tokens, kernel_matrix, vectors_from_gram
from symrmt.models.attention.theory import attention_limit

NAME = "generalization"
DIGITS = 30


def rotated_frame_error(a1, nu, d, c, m, K, Qw, v_span, v_perp2):
    """``T(v)`` by the rotated-frame route of ``docs/theory.md`` section 12.1 (``alpha = 1``, rank one).

    ``m, K, Qw, v_span`` are the coordinates of ``mu, w_K, w_Q, v`` in an orthonormal basis of their span
    (SymPy column vectors); ``v_perp2`` the squared norm of ``v``'s part outside it.  Returns
    ``||r||^2 - 2 tau(K') r.a + tau(K'^2) ||a||^2 + tau(S' K'^2) ||v_perp||^2`` with ``a = C v_span``,
    ``r = e_0 - M_K^T a``, ``M_K = (a_1/c) C (I + K Qw^T) C^T`` (:func:`symrmt.hermite.kernel_terms.finite_rank_parts`).
    """
    kt = gaussian_equivalent(a1, nu, d)
    k = m.shape[0]
    C = sp.Matrix.vstack(m.T, sp.eye(k))
    A = sp.eye(k) + K * Qw.T
    MK = kernel_lowrank(kt, C, A, c)
    a = C * v_span
    e0 = sp.zeros(k + 1, 1)
    e0[0] = 1
    r = e0 - MK.T * a
    e = kt.identity
    s1, s2, s3 = free_poisson_moments(c, 3)
    tau_K = kt.wishart * s1 + e                       # tau(K'), the GOE part has trace 0
    tau_K2 = kt.wishart**2 * s2 + 2 * kt.wishart * e * s1 + e**2 + kt.b2 / c
    tau_SK2 = kt.wishart**2 * s3 + 2 * kt.wishart * e * s2 + e**2 * s1 + kt.b2 / c
    return ((r.T * r)[0] - 2 * tau_K * (r.T * a)[0] + tau_K2 * (a.T * a)[0] + tau_SK2 * v_perp2)


def free_poisson_moments(c, k: int):
    """``tau(S^j)``, ``j = 1..k``, for ``S = Z^T Z/p`` (``n x n``, ``p = c n``): Narayana polynomials in ``1/c``."""
    lam = 1 / sp.sympify(c)
    return [sum(sp.binomial(j, i) * sp.binomial(j, i - 1) / j * lam ** (i - 1) for i in range(1, j + 1))
            for j in range(1, k + 1)]


def _check_symbolic(ck: CheckList, rng: random.Random) -> None:
    a1, nu, d, c = sp.symbols("a_1 nu d c", positive=True)
    for trial in range(3):
        R = lambda: sp.Rational(rng.randint(-6, 6), rng.randint(1, 4))  # noqa: E731
        m, K, Qw, vs = (sp.Matrix([R() for _ in range(3)]) for _ in range(4))
        vp2 = sp.Rational(rng.randint(0, 9), rng.randint(1, 4))
        if trial == 0:
            m = sp.zeros(3, 1)
        vecs = [m, K, Qw]
        gram = [[(x.T * y)[0] for y in vecs] for x in vecs]
        dots = [(x.T * vs)[0] for x in vecs]
        pspace = fresh_error_formula(a1, nu, d, c, gram, 1, (vs.T * vs)[0] + vp2, dots)
        frame = rotated_frame_error(a1, nu, d, c, m, K, Qw, vs, vp2)
        ck.symbolic(f"rotated frame == p-space formula (exact coordinates, trial {trial + 1})",
                    sp.expand(frame - pspace))
    vv, s = sp.symbols("vv s")
    ck.symbolic("a_1 = nu = 0, d = 1 (ridge): T = (1 - s)^2 + ||v||^2",
                sp.expand(fresh_error_formula(0, 0, 1, c, [[sp.Symbol("M")]], 0, vv, [s]) - (1 - s) ** 2 - vv))
    ck.symbolic("mu = 0, W = I: T = 1 + ((d + a_1/c)^2 + nu/c) ||v||^2",
                fresh_error_formula(a1, nu, d, c, [[0] * 3] * 3, 1, vv, [0] * 3) - 1 - ((d + a1 / c) ** 2 + nu / c) * vv)
    # free Poisson moments against the Marchenko-Pastur equation of S = Z^T Z/p (n x n, ratio n/p = 1/c):
    # g(z) = tau((S - z)^{-1}) solves (1/c) z g^2 + (z - 1 + 1/c) g + 1 = 0, and g = -sum_j tau(S^j) w^{j+1}, w = 1/z
    w = sp.Symbol("w")
    mom = free_poisson_moments(c, 3)
    g_series = -w * (1 + sum(mj * w ** (j + 1) for j, mj in enumerate(mom)))
    eq = sp.expand(g_series**2 / (c * w) + (1 / w - 1 + 1 / c) * g_series + 1)
    ck.symbolic("tau(S^k), k <= 3 (Narayana) solve the Marchenko-Pastur equation to order w^3",
                sp.series(eq, w, 0, 4).removeO())
    g_ = sp.Symbol("gamma", positive=True)
    mroot = (-(g_ + 1 - c) + sp.sqrt((g_ + 1 - c) ** 2 + 4 * c * g_)) / (2 * c * g_)
    ck.symbolic("ridge: m solves c gamma m^2 + (gamma + 1 - c) m - 1 = 0", c * g_ * mroot**2 + (g_ + 1 - c) * mroot - 1)
    # snr = 0 by the n x n route instead: ||w_R||^2 = phi_0 - E_RR/gamma = m_n + gamma m_n', with
    # m_n(gamma) = tau((X^T X/n + gamma)^{-1}) = g_S(-gamma/c)/c and g_S the positive root of the equation above
    A, B = -g_ / c**2, -g_ / c - 1 + 1 / c
    m_n = (-B - sp.sqrt(B**2 - 4 * A)) / (2 * A) / c
    route_n = 1 + m_n + g_ * sp.diff(m_n, g_)
    for cv, gv in ((sp.Rational(1, 2), sp.Rational(1, 10)), (sp.Integer(2), sp.Rational(3, 2)), (sp.Rational(7, 4), 1)):
        ck.close(f"ridge at snr = 0, c = {cv}, gamma = {gv}: Sherman-Morrison (p x p) == push-through (n x n)",
                 sp.N(ridge_test_formula(cv, gv, 0), 50), sp.N(route_n.subs({c: cv, g_: gv}), 50), 40)


def _check_ridge_engine(ck: CheckList, rng: random.Random, digits: int, quick: bool) -> None:
    model, _ = attention_model("t", 0)
    for _ in range(1 if quick else 4):
        c, g, snr = (Fraction(rng.randint(1, 12), 4), Fraction(rng.randint(1, 40), 20), Fraction(rng.randint(0, 12), 4))
        at = {"c": str(c), "gamma": str(g), "mu.mu": str(snr)}
        vv, (s,) = training_forms(model, at, ["mu"], digits + 5, ridge=True, zero={"mu"} if snr == 0 else set())
        with mpmath.workdps(digits + 15):
            eng = fresh_error_formula(0, 0, 1, 1, [[0]], 0, vv, [s])
            closed = mpmath.mpf(str(sp.N(ridge_test_formula(sp.Rational(c), sp.Rational(g), sp.Rational(snr)), digits + 15)))
        ck.close(f"T_RR closed form == engine forms (c={c}, gamma={g}, snr={snr})", eng, closed, digits)


ENGINE_POINTS = (("tanh", 1, "1", "zero", "signal"), ("erf", 1, "1", "zero", "aligned"),
                 ("tanh", 1, "1", "zero", "orthogonal"), ("tanh", 1, "3/2", "zero", "alpha = 3/2"),
                 ("relu", 1, "1", "keep", "diagonal kept"))


def _check_engine_projections(ck: CheckList, rng: random.Random, digits: int, quick: bool) -> None:
    """The projections ``u . w`` from the hand-built Woodbury system (section 12.2) against the trace engine's
    quadratic forms ``u.T*X*K*inv(K.T*X.T*X*K/n + gamma*I(n))*y/n``: two derivations of the same limit."""
    for f, rank, alpha, diagonal, route in (ENGINE_POINTS[1:3] if quick else ENGINE_POINTS):
        gram = random_gram(rng, rank, route if route != "signal" else "signal, W = I")
        c, g = Fraction(rng.randint(1, 12), 4), Fraction(rng.randint(1, 40), 40)
        geo = LowRankGeometry(gram, alpha=Fraction(alpha))
        fs, geo_s = (scaled_nonlinearity(f, geo.alpha), geo.scaled()) if geo.alpha != 1 else (f, geo)
        (pt,) = attention_limit(fs, c, [g], geo_s, diagonal, digits + 5, details=True)
        a1 = hermite_at_least(fs, diagonal, digits + 25)[0]
        with mpmath.workdps(digits + 15):
            _, hand = woodbury_projections(pt.block_traces, geo_s, a1, mpmath.mpf(c.numerator) / c.denominator,
                                           digits + 15)
        model = engine_model(f, rank, alpha, diagonal, digits + 20)
        at = {"c": str(c), "gamma": str(g), **at_from_gram(gram, rank)}
        names = ["mu"] + [f"wk{j}" for j in range(1, rank + 1)] + [f"wq{j}" for j in range(1, rank + 1)]
        for name, h in zip(names, hand):
            if all(x == 0 for x in gram[names.index(name)]):
                continue
            if name.startswith("wk"):  # the scaled geometry carries wk/alpha
                with mpmath.workdps(digits + 15):
                    h = h * mpmath.mpf(Fraction(alpha).numerator) / Fraction(alpha).denominator
            e = engine_projection(model, name, at, digits)
            ck.close(f"{name} . w: Woodbury == engine ({route}, f={f}, c={c}, gamma={g})", h, e, digits - 3)


def _check_fixed_readout(ck: CheckList, quick: bool) -> None:
    n, trials = (256, 8) if quick else (1024, 16)
    for f, c, gram in (("tanh", 2.0, [[2, 1, 0.5], [1, 1, 0.5], [0.5, 0.5, 1]]),
                       ("relu", 0.5, [[2, 0, 0], [0, 1, 0.5], [0, 0.5, 1]]), ("tanh", 0.5, [[0] * 3] * 3)):
        nl = symrmt.Nonlinearity(f)
        p = round(c * n)
        mu, wk, wq = vectors_from_gram(gram, p)
        v = 0.3 * mu + 0.2 * wk - 0.4 * wq
        v[-1] += 0.7
        rng = np.random.default_rng(7)
        vals = []
        for _ in range(trials):
            x, y = draw_tokens(rng, n, mu)
            vals.append(np.mean((y - kernel_matrix(nl.numpy(), x, wk, wq).T @ (x.T @ v)) ** 2))
        a1, nu, d = hermite_inputs(nl, "zero", 20)
        th = float(fresh_error_formula(a1, nu, d, c, gram, 1, float(v @ v), [float(v @ mu), float(v @ wk), float(v @ wq)]))
        mean, se = float(np.mean(vals)), float(np.std(vals, ddof=1) / math.sqrt(trials))
        ck.statistical(f"fixed readout: {f}, c={c}, n={n}: T(v) = {th:.4f} vs {mean:.4f}", mean, se, th, 3,
                       0.01 * th + 0.003)


ROUTES = (("tanh", "1/2", {}, "zero", "noise only"), ("relu", "2", {}, "zero", "noise only"),
          ("tanh", "2", {"snr": 2}, "zero", "signal"),
          ("relu", "1/2", {"snr": "3/2", "wk2": 1, "wq2": 1, "wkwq": "1/2", "muwk": 1, "muwq": "1/2"}, "zero", "aligned"),
          ("tanh", "1/2", {"snr": 2, "wk2": 1, "wq2": 1, "wkwq": "1/2"}, "zero", "orthogonal"),
          ("relu", "2", {}, "keep", "diagonal kept"))


def _check_model(ck: CheckList, quick: bool) -> None:
    n, trials = (256, 6) if quick else (768, 12)
    routes = ROUTES[:2] if quick else ROUTES
    cases = [(f, c, Geometry(**g), diag, route) for f, c, g, diag, route in routes]
    if not quick:
        cases.append(("erf", "2", LowRankGeometry([[1, "1/2", "1/2"], ["1/2", 1, "1/2"], ["1/2", "1/2", 1]], alpha="3/2"),
                      "zero", "alpha = 3/2"))
    for f, c, geo, diag, route in cases:
        L = symrmt.limit(f, c, ["1/10", "1"], geo, diag, digits=15, error="test")
        S = symrmt.simulate(f, c, ["1/10", "1"], geo, diag, n=n, trials=trials, seed=1, error="test")
        for key in ("attention", "ridge"):
            for g, th, mean, se in zip(("0.1", "1"), getattr(L, key), getattr(S, key), getattr(S, key + "_se")):
                ck.statistical(f"{route}, {f}, c={c}, gamma={g}, {key}: {th:.4f} vs n={n}", mean, se, th, 3,
                               0.01 * th + 0.003)


def _timing() -> None:
    for geo in ({}, {"snr": 1}, {"snr": "3/2", "wk2": 1, "wq2": 1, "wkwq": "1/2", "muwk": 1, "muwq": "1/2"}):
        for error in ("train", "test"):
            symrmt.limit("tanh", "1/2", ["1/3"], digits=30, error=error, **geo)  # compile
        t = {}
        for error in ("train", "test"):
            t0 = time.perf_counter()
            symrmt.limit("tanh", "1/2", ["2/7"], digits=30, error=error, **geo)
            t[error] = time.perf_counter() - t0
        print(f"{geo or 'noise only'}: train {t['train']:.3f} s, test {t['test']:.3f} s at 30 digits "
              f"({t['test'] / t['train']:.1f}x)", file=sys.stderr)


def run(quick: bool = False, digits: int = DIGITS, seed: int = 20261202) -> CheckList:

    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    rng = random.Random(seed)
    _check_symbolic(ck, rng)
    _check_ridge_engine(ck, rng, digits, quick)
    _check_engine_projections(ck, rng, digits, quick)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check_fixed_readout(ck, quick)
        _check_model(ck, quick)
        if not quick:
            _timing()
    return ck


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
