"""The fast grid with a ``gamma`` axis, and its batched linear algebra.

A grid over ``c x gamma`` solves one noise-only fixed point per ``(gamma, c)`` pair; they are
found by continuation along the ``gamma`` values of each ``c``
(:func:`symrmt.models.attention.batch.continuation_tree`).  The values must be those of the
certified (mpmath) path at 20 digits, to the fast path's accuracy, at random points, in every
route (noise-only, aligned, general geometry).  The batched least squares
(:func:`symrmt.core.batch.lstsq`) is checked against LAPACK's, and the distinct rows of a grid
against ``numpy.unique``.
"""

from __future__ import annotations

import numpy as np
import pytest

import symrmt
from symrmt.core import batch as core_batch
from symrmt.models.attention.fast import distinct_rows, solve_grid
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.theory import attention_limit, ridge_limit


def _certified(c, gamma, geometry):
    a = attention_limit("tanh", c, [gamma], geometry, "zero", 20)[0]
    r = ridge_limit(c, [gamma], geometry.snr, 20)[0]
    return float(a), float(r)


@pytest.mark.parametrize("geometry", [
    {"snr": 1},  # aligned route
    {"snr": 0},  # noise only
    {"snr": 2, "wk2": 1, "wq2": 1, "wkwq": "1/2", "muwk": "7/10", "muwq": "-3/10"},  # general
])
def test_c_gamma_grid_matches_certified_path_at_random_points(geometry):
    cs = [0.25, 0.5, 0.8, 1.5, 3.0]
    gammas = [0.05, 0.1, 0.3, 0.5, 1.0, 2.0, 5.0, 20.0]
    s = symrmt.sweep("tanh", grid={"c": cs, "gamma": gammas, **geometry}, fast=True, certify=0)
    assert s.shape == (5, 8) and not any(s.fallback)
    geo = Geometry(**geometry)
    rng = np.random.default_rng(11)
    for flat in rng.choice(40, size=6, replace=False):
        i, j = divmod(int(flat), 8)
        a, r = _certified(symrmt.models.attention.params.to_fraction(cs[i], "c"),
                          symrmt.models.attention.params.to_fraction(gammas[j], "gamma"), geo)
        assert abs(s.attention[i, j] - a) <= 1e-11 * abs(a)
        assert abs(s.ridge[i, j] - r) <= 1e-11 * abs(r)


def test_gamma_axis_unsorted_and_repeated_values():
    # the tree walks each c's gammas in decreasing order, whatever the order given; a repeated value
    # takes its twin's solution
    gammas = np.array([1.0, 0.2, 5.0, 0.2, 0.7])
    c = np.array([0.5, 2.0])
    C, G = np.meshgrid(c, gammas, indexing="ij")
    r = solve_grid("tanh", {"c": C, "gamma": G, "snr": np.ones_like(C)})
    assert not r.fallback.any()
    assert r.attention[0, 1] == r.attention[0, 3] and r.attention[1, 1] == r.attention[1, 3]
    for i, j in ((0, 2), (1, 1), (1, 4)):
        a, rr = _certified(symrmt.models.attention.params.to_fraction(float(C[i, j]), "c"),
                           symrmt.models.attention.params.to_fraction(float(G[i, j]), "gamma"), Geometry(snr=1))
        assert abs(r.attention[i, j] - a) <= 1e-11 * a and abs(r.ridge[i, j] - rr) <= 1e-11 * rr


def test_batched_least_squares_matches_lapack():
    rng = np.random.default_rng(0)
    J = rng.standard_normal((300, 9, 6))
    J[:, :, 0] *= 1e-4  # unknowns of different scales (the column scaling)
    b = rng.standard_normal((300, 9, 2))
    x, cond = core_batch.lstsq(J, b, 1e12)
    for n in range(0, 300, 37):
        ref = np.linalg.lstsq(J[n], b[n], rcond=None)[0]
        np.testing.assert_allclose(x[n], ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())
        R = np.linalg.qr(J[n] / np.linalg.norm(J[n], axis=0), mode="r")
        d = np.abs(np.diag(R))
        assert cond[n] == pytest.approx(d.max() / d.min(), rel=1e-8)


def test_batched_least_squares_refuses_singular_rows_only():
    rng = np.random.default_rng(1)
    J = rng.standard_normal((4, 5, 3))
    J[1, :, 2] = J[1, :, 1]  # rank deficient
    J[2, 0, 0] = np.nan
    b = rng.standard_normal((4, 5, 1))
    x, cond = core_batch.lstsq(J, b, 1e12)
    assert np.isnan(x[1]).all() and np.isnan(x[2]).all() and cond[1] > 1e12
    assert np.isfinite(x[0]).all() and np.isfinite(x[3]).all()
    np.testing.assert_allclose(x[3], np.linalg.lstsq(J[3], b[3], rcond=None)[0], rtol=1e-12)


def testdistinct_rows_as_numpy_unique():
    rng = np.random.default_rng(2)
    cols = [rng.integers(0, 3, 500).astype(float), np.full(500, 0.5), rng.integers(0, 4, 500) / 7]
    first, inv = distinct_rows(cols)
    rows = np.column_stack(cols)
    u = np.unique(rows, axis=0)
    assert len(first) == len(u)
    np.testing.assert_array_equal(rows[first][inv], rows)  # every row maps to a row equal to it
    f1, i1 = distinct_rows([np.full(7, 2.0)])
    assert f1.tolist() == [0] and i1.tolist() == [0] * 7


def test_c_gamma_grid_of_2500_points_matches_symrmt_limit():
    # a grid larger than one block of rows (core.batch.BLOCK): random points against the certified
    # symrmt.limit at 20 digits, to the fast path's claimed 1e-11 (FALLBACK_TOL)
    assert 50 * 50 > core_batch.BLOCK
    cs = np.exp(np.linspace(np.log(1 / 16), np.log(4), 50))
    gammas = np.exp(np.linspace(np.log(0.05), np.log(20), 50))
    s = symrmt.sweep("tanh", grid={"c": cs, "gamma": gammas, "snr": [1]}, fast=True, certify=0)
    rng = np.random.default_rng(35)
    for flat in rng.choice(2500, size=5, replace=False):
        i, j = divmod(int(flat), 50)
        exact = symrmt.limit("tanh", c=float(cs[i]), gamma=float(gammas[j]), snr=1, digits=20)
        a, r = float(exact.attention_mp[0]), float(exact.ridge_mp[0])
        assert abs(s.attention[i, j, 0] - a) <= 1e-11 * abs(a), (cs[i], gammas[j])
        assert abs(s.ridge[i, j, 0] - r) <= 1e-11 * abs(r), (cs[i], gammas[j])


def test_blocks_give_the_values_of_one_batch(monkeypatch):
    # every row is computed by itself: cutting the batch into blocks changes the values at most by the
    # rounding of the stacked LAPACK/BLAS kernels, whose summation order may depend on the batch size
    c = np.exp(np.linspace(np.log(0.1), np.log(3), 7))
    C, G = np.meshgrid(c, [0.1, 0.4, 1.0, 3.0], indexing="ij")
    pts = {"c": C, "gamma": G, "snr": 2 * np.ones_like(C), "wk2": np.ones_like(C), "wq2": np.ones_like(C),
           "wkwq": 0.5 * np.ones_like(C), "muwk": 0.7 * np.ones_like(C), "muwq": -0.3 * np.ones_like(C)}
    whole = solve_grid("tanh", pts)
    monkeypatch.setattr(core_batch, "BLOCK", 3)
    monkeypatch.setattr(core_batch.blockwise, "__defaults__", None)
    monkeypatch.setattr(core_batch.blockwise, "__kwdefaults__", {"block": 3})
    cut = solve_grid("tanh", pts)
    assert (whole.route == "general").all()
    assert np.allclose(whole.attention, cut.attention, rtol=1e-14, atol=0)
    assert np.allclose(whole.ridge, cut.ridge, rtol=1e-14, atol=0)
    assert np.array_equal(whole.fallback, cut.fallback) and not cut.fallback.any()
