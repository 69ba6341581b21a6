"""The continuation of the float64 batch along a grid axis (:mod:`symrmt.engine.solve.batch_axis`).

References are independent of the engine: the Marchenko-Pastur and semicircle Stieltjes transforms in closed
form (mpmath, 30 digits), the per-point homotopy in ``s`` of the same batch (the route the continuation
replaces), and for the paper's ``E_A`` the package's hand-built fast grid and the certified mpmath path.
A value agrees when its relative gap is at most twice the batch's own error estimate plus an ulp.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from symrmt.engine import Model
from symrmt.engine.solve import batch_axis
from symrmt.engine.solve.batch import solve_plan
from symrmt.engine.solve.batch_axis import AxisSolver
from symrmt.engine.solve.certify import compiled_system

ULP = 2.2e-16
MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"


def _mp_model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    return m


def _mp_closed(c, g):
    """``tau = tr (Z^T Z/n + g I)^{-1}/n`` for ``Z`` of ``c n x n``: the root of ``g t^2 + (g + c - 1) t - 1 = 0`` in
    ``(0, 1/g]``."""
    with mpmath.workdps(30):
        c, g = mpmath.mpf(Fraction(c).numerator) / Fraction(c).denominator, mpmath.mpf(g)
        b = g + c - 1
        return (-b + mpmath.sqrt(b * b + 4 * g)) / (2 * g)


def _rel(v, ref):
    with mpmath.workdps(30):
        return float(abs(mpmath.mpf(v) - ref) / abs(ref))


def _grid(cs, gs):
    cc, gg = np.meshgrid(cs, gs, indexing="ij")
    return {"c": cc.ravel(), "gamma": gg.ravel()}


def test_the_axis_continued_grid_equals_the_per_point_homotopy_and_the_closed_form():
    m = _mp_model()
    plan = m.plan(MP)
    cs, gs = np.linspace(0.25, 3.0, 8), np.geomspace(0.02, 20.0, 12)
    cols = _grid(cs, gs)
    solver = AxisSolver((8, 12), ["c", "gamma"])
    v, est, ok, _ = solve_plan(plan, compiled_system, cols, 96, solver=solver)
    v0, est0, ok0, _ = solve_plan(plan, compiled_system, cols, 96)
    assert ok.all() and ok0.all()
    assert solver.stats["sent_back"] == 0 and solver.stats["continued"] == 95  # all but the corner
    assert np.all(np.abs(v - v0) <= (est + est0 + ULP) * np.abs(v0))
    for x, e, c, g in zip(v, est, cols["c"], cols["gamma"]):
        assert _rel(x, _mp_closed(Fraction(float(c)), g)) <= 2 * e + ULP


def test_a_sweep_continues_along_its_axes_without_fallbacks():
    m = _mp_model()
    cs, gs = np.linspace(0.5, 2.0, 6), np.geomspace(0.05, 5.0, 9)
    r = m.sweep(MP, grid={"c": cs, "gamma": gs}, certify=2)
    assert not r.fallback.any()
    assert r.certified_gap <= 2 * r.error_estimate.max() + ULP
    for i, c in enumerate(cs):
        for j, g in enumerate(gs):
            assert _rel(r.values[i, j], _mp_closed(Fraction(float(c)), g)) <= 2 * r.error_estimate[i, j] + ULP


def test_three_axes_one_outside_the_fixed_point_and_chunks_of_whole_lines(monkeypatch):
    # k enters the formula only (not continued along); chunks of whole (c, gamma) sub-grids give the same values
    from symrmt.engine.routes import sweep as sweep_route

    m = _mp_model()
    ks, cs, gs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.linspace(0.5, 2.0, 8), np.geomspace(0.05, 5.0, 8)
    whole = m.sweep("k*" + MP, grid={"k": ks, "c": cs, "gamma": gs})
    monkeypatch.setattr(sweep_route, "CHUNK_ENTRIES", 1)  # chunks of 256 points: 4 whole c x gamma grids, then 2
    made = []  # the solvers built are the chunks: their shapes are the behaviour checked

    class Recorded(AxisSolver):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(sweep_route, "AxisSolver", Recorded)
    parts = m.sweep("k*" + MP, grid={"k": ks, "c": cs, "gamma": gs})
    assert [s.shape for s in made] == [(4, 8, 8), (2, 8, 8)]
    assert [s.stats["sent_back"] for s in made] == [0, 0] and sum(s.stats["continued"] for s in made) > 300
    assert not whole.fallback.any() and not parts.fallback.any()
    assert np.array_equal(whole.values, parts.values)
    for a, k in enumerate(ks):
        for i, c in enumerate(cs):
            for j, g in enumerate(gs):
                ref = k * _mp_closed(Fraction(float(c)), g)
                assert _rel(whole.values[a, i, j], ref) <= 2 * whole.error_estimate[a, i, j] + ULP


def _semicircle(g):
    """``tr (W/sqrt(n) + g I)^{-1}/n`` for the GOE, ``|g| > 2``: ``(g - sign(g) sqrt(g^2 - 4))/2``."""
    with mpmath.workdps(30):
        g = mpmath.mpf(g)
        return (g - mpmath.sign(g) * mpmath.sqrt(g * g - 4)) / 2


def test_an_axis_across_the_spectrum_stops_there_and_the_rest_goes_back_to_the_homotopy(monkeypatch):
    # from g = 4 down, the real fixed point ends at the edge g = 2: the continuation stops, the points below go
    # back to the homotopy in s, which solves g < -2 and fails inside the bulk (no real limit there: the
    # certified path refuses it too, marked)
    from symrmt.engine.routes import sweep as sweep_route

    made = []

    class Recorded(AxisSolver):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(sweep_route, "AxisSolver", Recorded)
    m = Model()
    m.goe("W", "n")
    gs = np.array([-4.0, -3.5, -3.0, -2.5, 0.5, 2.5, 3.0, 3.5, 4.0])
    r = m.sweep("trace(inv(W/sqrt(n) + g*I(n)))", grid={"g": gs}, on_error="mark")
    outside = np.abs(gs) > 2
    assert sorted(r.errors) == [4] and list(r.fallback) == list(~outside)
    assert made[0].stats["continued"] == 3 and made[0].stats["sent_back"] == 5  # 3.5, 3, 2.5 continued from 4
    for x, e, g in zip(r.values[outside], r.error_estimate[outside], gs[outside]):
        assert _rel(x, _semicircle(g)) <= 2 * e + ULP


def test_line_ends_the_homotopy_cannot_reach_are_checked_by_the_continuation_from_its_starts():
    # c = 2, z = -gamma in the gap (0, (sqrt 2 - 1)^2) below the spectrum: the homotopy in s fails there (the
    # growing spectrum crosses z), the start and the check come from the continuation in gamma of solve_system
    m = _mp_model()
    gs = np.linspace(-0.17, -0.01, 9)
    solver = AxisSolver((9,), ["gamma"])
    v, est, ok, _ = solve_plan(m.plan(MP), compiled_system, {"gamma": gs, "c": np.full(9, 2.0)}, 9, solver=solver)
    assert ok.all() and solver.stats["continued"] == 8 and solver.stats["sent_back"] == 0
    for x, e, g in zip(v, est, gs):
        assert _rel(x, _mp_closed(Fraction(2), g)) <= 2 * e + ULP


def test_a_check_that_disagrees_sends_every_line_back(monkeypatch):
    # the homotopy in s of the line ends, perturbed: the continued lines are not trusted and every point is
    # solved again by the homotopy (the values stay right)
    real = batch_axis.path

    def off(bs, p, fine=False):
        h, ok = real(bs, p, fine)
        return h * (1 + 1e-4), ok

    monkeypatch.setattr(batch_axis, "path", off)
    m = _mp_model()
    cs, gs = np.linspace(0.5, 2.0, 6), np.geomspace(0.1, 10.0, 7)
    cols = _grid(cs, gs)
    solver = AxisSolver((6, 7), ["c", "gamma"])
    v, est, ok, _ = solve_plan(m.plan(MP), compiled_system, cols, 42, solver=solver)
    assert ok.all() and solver.stats["continued"] == 0 and solver.stats["sent_back"] == 41  # all but the corner
    for x, e, c, g in zip(v, est, cols["c"], cols["gamma"]):
        assert _rel(x, _mp_closed(Fraction(float(c)), g)) <= 2 * e + ULP


def test_short_axes_and_scattered_points_take_the_per_point_homotopy():
    m = _mp_model()
    cols = {"c": np.array([0.5, 1.5, 0.7, 2.0]), "gamma": np.array([0.1, 1.0, 3.0, 0.4])}
    solver = AxisSolver((2, 2), ["c", "gamma"])  # fewer than AXIS_MIN values per axis
    v, est, ok, _ = solve_plan(m.plan(MP), compiled_system, cols, 4, solver=solver)
    assert ok.all() and solver.stats["continued"] == 0 and solver.stats["homotopy"] == 4
    for x, e, c, g in zip(v, est, cols["c"], cols["gamma"]):
        assert _rel(x, _mp_closed(Fraction(float(c)), g)) <= 2 * e + ULP


@pytest.mark.slow
def test_the_papers_attention_error_on_a_continued_grid():
    # E_A (tanh, rank 1, with a signal) on a c x gamma grid: against the hand-built fast grid (an independent
    # solver of the same limit) and the certified 30-digit path at a few points
    import symrmt
    from symrmt.models.attention import at_from_gram, attention_model
    from symrmt.models.attention.geometry import Geometry

    g = dict(snr=Fraction(3, 2), wk2=Fraction(1), wq2=Fraction(1), wkwq=Fraction(1, 2), muwk=Fraction(1, 2),
             muwq=Fraction(1, 3))
    gram = [[g["snr"], g["muwk"], g["muwq"]], [g["muwk"], g["wk2"], g["wkwq"]], [g["muwq"], g["wkwq"], g["wq2"]]]
    m, ex = attention_model("tanh", 1)
    cs, gs = np.geomspace(0.1, 4.0, 8), np.geomspace(0.01, 10.0, 10)
    r = m.sweep(ex["E_A"], grid={"c": cs, "gamma": gs}, at=at_from_gram(gram, 1), certify=3)
    assert not r.fallback.any()
    assert r.error_estimate.max() <= 1e-12
    assert r.certified_gap <= 2 * r.error_estimate.max() + ULP
    fast = symrmt.sweep("tanh", grid={"c": list(cs), "gamma": list(gs)}, geometry=Geometry(**g), fast=True,
                        certify=0, progress=False)
    hand = np.asarray(fast.attention, float).reshape(r.values.shape)
    assert np.all(np.abs(r.values - hand) <= (2 * r.error_estimate + 1e-14) * np.abs(hand))
