"""The condition guard of the float64 batch (:class:`symrmt.engine.solve.batch.ScaledInverse`): an upper bound of
the 2-norm condition number of the column-scaled Jacobian, at most ``m`` times it, checked against singular values
from ``numpy.linalg.svd`` (an independent computation), and its wiring into ``solve_plan``'s refusal."""

from __future__ import annotations

import numpy as np
import pytest

from symrmt.engine import Model
from symrmt.engine.solve import batch
from symrmt.engine.solve.batch import MAX_COND, ScaledInverse, solve_plan
from symrmt.engine.solve.certify import compiled_system


def _matrices(conds, m=19, seed=0):
    """Random ``m x m`` matrices with the given 2-norm condition numbers after their columns are scaled to unit norm
    (built by SVD, then measured again after scaling: the scaling moves the condition number)."""
    rng = np.random.default_rng(seed)
    out = []
    for c in conds:
        u, _, vt = np.linalg.svd(rng.standard_normal((m, m)))
        J = (u * np.geomspace(1, 1 / c, m)) @ vt * rng.lognormal(0, 2, m)  # columns of very different sizes
        out.append(J)
    return np.array(out)


def _cond2(J):
    A = J / np.linalg.norm(J, axis=1)[:, None, :]
    return np.linalg.cond(A)


def test_the_estimate_bounds_the_2_norm_condition_within_the_dimension():
    J = _matrices(np.geomspace(1, 1e9, 40))
    c2, est = _cond2(J), ScaledInverse(J).cond
    m = J.shape[1]
    # the inverse of a matrix of condition c carries a relative error about c * 1e-16: 1e-6 slack at c <= 1e10
    assert np.all(est >= c2 * (1 - 1e-6)) and np.all(est <= m * c2 * (1 + 1e-6))


def test_nearly_singular_and_non_finite_jacobians_are_refused_and_the_solve_matches_lapack():
    J = _matrices([1e13, 1e14, 1e9, 10.0])
    J = np.concatenate([J, np.zeros((2, 19, 19))])
    J[-1] = np.nan
    inv = ScaledInverse(J)
    c2 = _cond2(J[:4])
    assert np.all(c2[:2] > MAX_COND) and np.all(c2[2:] * 19 < MAX_COND)  # the test's own premise
    assert (inv.cond > MAX_COND).tolist() == [True, True, False, False, True, True]
    b = np.random.default_rng(1).standard_normal((6, 19, 2))
    x = inv.solve(b)
    ref = np.linalg.solve(J[2:4], b[2:4])
    assert np.abs(x[2:4] - ref).max() <= 1e-6 * np.abs(ref).max()  # cond 1e9: about 1e-7 relative
    assert np.isnan(x[4:]).all()
    xt = inv.solve_t(b)
    ref_t = np.linalg.solve(np.swapaxes(J[3:4], 1, 2), b[3:4])
    assert np.abs(xt[3:4] - ref_t).max() <= 1e-12 * np.abs(ref_t).max()


@pytest.mark.parametrize("factor,refused", [(0.99, True), (1.01 * 2, False)])
def test_solve_plan_refuses_a_jacobian_above_the_threshold(monkeypatch, factor, refused):
    # the Marchenko-Pastur system at gamma = 1/100: its column-scaled Jacobian's condition from numpy's SVD; a
    # threshold just below it refuses the point (the estimate is at least cond_2), one at m cond_2 passes (m = 2)
    m = Model()
    m.gaussian("Z", "n", "n")
    plan = m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))")
    cols = {"gamma": np.array([0.01])}
    v, _, ok, _ = solve_plan(plan, compiled_system, cols, 1)
    assert ok[0]
    bs = batch.batch_system(compiled_system(plan.traces[0].system))
    g = 0.01
    t = (np.sqrt(g * g + 4 * g) - g) / (2 * g)  # the closed form; the engine's unknowns are (-tau, ...) here
    h, okh = batch.solve_system(bs, np.array([[g]]))
    assert okh[0] and abs(-h[0, 1] - t) < 1e-13 * t
    _, J, _ = bs.evaluate(h, np.array([[g]]), np.ones(1))
    c2 = float(_cond2(J)[0])
    monkeypatch.setattr(batch, "MAX_COND", factor * c2)
    _, _, ok, _ = solve_plan(plan, compiled_system, cols, 1)
    assert bool(ok[0]) is not refused
