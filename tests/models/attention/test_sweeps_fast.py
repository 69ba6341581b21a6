"""``symrmt.sweep(..., fast=True)``, ``symrmt sweep --fast`` and ``symrmt.crossings(..., fast=True)``.

The fast sweep must give the certified path's points and (to float64 accuracy) its values
without building an exact geometry per point, and refuse the same bad input.  Fast crossings
must give the certified crossings to the requested digits.
"""

from __future__ import annotations

import csv
import io
import json
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import symrmt
import symrmt.models.attention.sweeps
from symrmt.cli.app import main
from symrmt.errors import ParameterError


def test_fast_sweep_matches_certified_sweep_with_angles_and_ties():
    # c kept away from 1 (where float64 loses digits); angles, a tied axis and a base geometry
    grid = {"c": [0.5, 2], "gamma": [0.5, 1], "snr": ["1/2", 2], ("cos_muwk", "cos_muwq"): [0, 0.6, 1]}
    base = symrmt.Geometry(wk2=1, wq2=1, wkwq=1)
    fast = symrmt.sweep("tanh", grid, geometry=base, fast=True, certify=2)
    exact = symrmt.sweep("tanh", grid, geometry=base, digits=15, progress=False)
    assert fast.shape == exact.shape == (2, 2, 2, 3) and fast.axes == exact.axes
    assert fast.columns == exact.columns
    # exact grid values are kept as given; inner products from angles agree to float64
    for i in (0, 7, 23):
        pf, pe = fast.points[i], exact.points[i]
        assert all(pf[k] == pe[k] for k in ("c", "gamma", "snr", "cos_muwk", "cos_muwq"))
        assert isinstance(pf["c"], Fraction) and pf["wk2"] == 1  # the certified path may project by ~1e-1000
        for k in ("wk2", "wkwq", "muwk", "muwq"):
            assert float(pf[k]) == pytest.approx(float(pe[k]), rel=1e-15, abs=1e-300)
    np.testing.assert_allclose(fast.to_numpy(), exact.to_numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(fast.attention, exact.attention, rtol=1e-12)
    np.testing.assert_allclose(fast.values("muwq"), exact.values("muwq"), rtol=1e-15)
    assert fast.certified_gap is not None and fast.certified_gap < 1e-10
    assert len(fast.to_pandas(long=True)) == 2 * 24 and "24 points" in str(fast)


def test_fast_sweep_builds_no_geometry_per_point(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the fast path built an exact geometry per point")

    monkeypatch.setattr(symrmt.models.attention.sweeps, "point_geometry", refuse)
    monkeypatch.setattr(symrmt.models.attention.sweeps, "_point_list", refuse)  # the internal seam of the exact path
    s = symrmt.sweep("tanh", {"c": np.linspace(0.2, 3, 30), "gamma": 1, "snr": np.linspace(0, 4, 30)}, fast=True,
                     certify=0)
    assert s.shape == (30, 30) and not any(s.fallback)
    assert s.values("snr")[3, 29] == 4.0 and s.points[29]["snr"] == 4


@pytest.mark.parametrize("grid, match", [
    ({"c": [0.5, 0], "gamma": 1}, "c = p/n must be positive"),
    ({"c": 1, "gamma": [1, -1]}, "gamma must be positive"),
    ({"c": 1, "gamma": 1, "snr": [1, -2]}, "snr is a squared norm"),
    ({"c": 1, "gamma": 1, "snr": 1, "wk2": 1, "cos_muwk": [0, 1.5]}, r"cos_muwk must lie in \[-1, 1\]"),
    ({"c": 1, "gamma": 1, "snr": 1, "wk2": 1, "cos_muwk": [0.5], "muwk": 0.1}, "give either cos_muwk or muwk"),
    ({"c": 1, "gamma": 1, "snr": 1, "muwk": [0, 2], "wk2": 1}, "grid point .*muwk = 2.*not positive semi-definite"),
    # three valid cosines whose correlation matrix is not PSD
    ({"c": 1, "gamma": 1, "snr": 1, "wk2": 1, "wq2": 1, "cos_muwk": 1, "cos_muwq": 1, "cos_wkwq": [1, 0]},
     "cos_wkwq = 0 .*not positive semi-definite"),
])
def test_fast_sweep_refuses_what_the_certified_sweep_refuses(grid, match):
    with pytest.raises(ParameterError, match=match):
        symrmt.sweep("tanh", grid, fast=True, certify=0)
    with pytest.raises(ParameterError):
        symrmt.sweep("tanh", grid, digits=10, progress=False)


def test_fast_sweep_refuses_low_rank_geometries():
    with pytest.raises(ParameterError, match="rank-one"):
        symrmt.sweep("tanh", {"c": [1, 2], "gamma": 1}, geometry=symrmt.LowRankGeometry([[1]]), fast=True)


def test_cli_sweep_fast_csv_matches_python(capsys):
    rc = main(["sweep", "--f", "tanh", "--grid", "c=0.5:2:4", "--grid", "snr=0,1/3,4", "--gamma", "1", "--fast",
               "--certify", "1"])
    out, err = capsys.readouterr()
    assert rc == 0 and "largest relative gap" in err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["c", "gamma", "snr", "wk2", "wq2", "wkwq", "muwk", "muwq", "attention", "ridge"]
    assert len(rows) == 13 and rows[2][:3] == ["0.5", "1", "0.333333333333333"]  # a decimal a CSV reader takes
    ref = symrmt.sweep("tanh", {"c": [0.5, 1, 1.5, 2], "gamma": 1, "snr": [0, Fraction(1, 3), 4]}, fast=True,
                       certify=0)
    got = np.array([[float(r[-2]), float(r[-1])] for r in rows[1:]])
    np.testing.assert_array_equal(got, np.column_stack([ref.attention.ravel(), ref.ridge.ravel()]))


def _agree(fast, slow, digits):
    """Both roots lie in certified brackets of relative width <= 10^-digits: they agree to ``digits``."""
    assert len(fast) == len(slow) and fast.directions == slow.directions
    for rf, rs, (flo, fhi), (slo, shi) in zip(fast.roots, slow.roots, fast.brackets, slow.brackets):
        assert max(flo, slo) <= min(fhi, shi)  # the certified brackets overlap
        assert abs(rf - rs) <= 2 * abs(rs) * mpmath.mpf(10) ** -digits


@pytest.mark.slow  # certified crossings as the reference: seconds, outside the fast tier
@pytest.mark.parametrize("geometry", ["identity", "aligned"])
def test_fast_crossings_agree_with_certified_crossings(geometry):
    # W = I (mu only), or w_K = w_Q = mu/|mu| given by angles; ReLU in c at gamma = 1
    geo = (symrmt.Geometry(snr=1) if geometry == "identity"
           else symrmt.Geometry.from_angles(1, 1, 1, cos_muwk=1, cos_muwq=1, cos_wkwq=1))
    kw = dict(over="c", between=(0.1, 4), gamma=1, geometry=geo, digits=15, progress=False)
    fast = symrmt.crossings("relu", fast=True, **kw)
    slow = symrmt.crossings("relu", scan=10, **kw)
    assert fast.fast and not slow.fast and len(fast.scan_x) == 257 and len(fast) == 1
    _agree(fast, slow, 15)
    assert "float64 scan of 257 points" in str(fast)


@pytest.mark.slow  # certified crossings as the reference: seconds, outside the fast tier
def test_fast_crossings_two_roots_and_none():
    kw = dict(over="snr", between=(0, 10), c=0.4, gamma=1, digits=12, progress=False)
    fast = symrmt.crossings("relu", fast=True, **kw)
    assert len(fast) == 2 and fast.directions == (-1, 1)
    _agree(fast, symrmt.crossings("relu", scan=12, **kw), 12)
    none = symrmt.crossings("tanh", over="gamma", between=(0.01, 10), c=2, snr=1, digits=10, fast=True)
    assert len(none) == 0 and none.fast and len(none.scan_x) == 257
    assert "keeps its sign" in str(none) and "E_A > E_RR at all 257 scan points" in none.summary()


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_fast_crossings_distrust_small_differences_and_wrong_signs(monkeypatch):
    import symrmt.models.attention.boundary as crossings_module  # crossings() calls sweeps_fast.solve_points from here
    import symrmt.models.attention.sweeps_fast as sf

    kw = dict(over="c", between=(0.1, 4), gamma=1, snr=1, digits=12, scan=9, progress=False)
    slow = symrmt.crossings("relu", **kw)
    solve = sf.solve_points

    def unsure(*args, **kwargs):  # every float sign within its error: each scan point is certified instead
        out = solve(*args, **kwargs)
        out.error_estimate[:] = np.inf
        return out

    monkeypatch.setattr(crossings_module, "solve_points", unsure)
    r = symrmt.crossings("relu", fast=True, **kw)
    assert r.fast and r.scan_sign == slow.scan_sign and r.evaluations >= 9
    _agree(r, slow, 12)

    def wrong(*args, **kwargs):  # a confident float sign that is wrong: the certified ends catch it
        out = solve(*args, **kwargs)
        out.attention[-1], out.ridge[-1] = out.ridge[-1], out.attention[-1]
        return out

    monkeypatch.setattr(crossings_module, "solve_points", wrong)
    r = symrmt.crossings("relu", fast=True, **kw)
    assert not r.fast and r.scan_sign == slow.scan_sign
    _agree(r, slow, 12)


def test_fast_crossings_cli_and_bad_input(capsys):
    rc = main(["crossings", "--f", "relu", "--over", "c", "--between", "0.1,4", "--gamma", "1", "--snr", "1",
               "--digits", "12", "--fast", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["found"] == 1 and data["params"]["fast"] is True and data["params"]["scan"] == 257
    assert data["roots"][0] == pytest.approx(0.34255058535, rel=1e-10)
    with pytest.raises(ParameterError, match="rank-one"):
        symrmt.crossings("relu", over="c", between=(0.1, 4), gamma=1, geometry=symrmt.LowRankGeometry([[1]]),
                         fast=True)
    with pytest.raises(ParameterError, match="gamma must be positive"):
        symrmt.crossings("relu", over="gamma", between=(-1, 1), c=1, fast=True, log=False)


@pytest.mark.slow  # a 200 x 200 grid, its CSV and the certified refusal: seconds, outside the fast tier
def test_fast_sweep_takes_a_200_by_200_grid(capsys):
    from symrmt.parsing import LIMITS, ParseLimitError

    assert LIMITS["fast_points"] >= 10**6 and LIMITS["points"] == 10**4
    grid = {"c": np.logspace(-1, 0.5, 200), "gamma": 1, "snr": np.linspace(0, 4, 200)}
    s = symrmt.sweep("tanh", grid, fast=True, certify=0, progress=False)
    assert s.shape == (200, 200) and np.all(np.isfinite(s.attention))
    # the ridge column against its closed form (Marchenko-Pastur root, written here)
    c, g, snr = s.values("c"), s.gamma, s.values("snr")
    m = (1 - c - g + np.sqrt((1 - c - g) ** 2 + 4 * g)) / (2 * g)
    dm = -(m * m + m) / (2 * g * m + g + c - 1)
    dphi = (1 + 2 * m + (1 + snr) * m * m) / (1 + (1 + snr) * m) ** 2 * dm
    assert np.allclose(s.ridge, -g * g * dphi, rtol=1e-10, atol=0)
    # the certified path keeps its cap, and says where the larger grids go
    with pytest.raises(ParseLimitError, match="fast=True"):
        symrmt.sweep("tanh", grid, progress=False)
    rc = main(["sweep", "--f", "tanh", "--grid", "c=0.1:3:200:log", "--grid", "snr=0:4:200", "--gamma", "1",
               "--fast", "--certify", "0"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and len(out) == 1 + 200 * 200 and out[0].startswith("c,")
