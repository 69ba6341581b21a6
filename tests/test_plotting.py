"""``.plot()``, ``.to_xarray()`` and the one ``to_pandas()`` default (wide; ``long=True``) of every result.

The plots are checked through what they drew (the data of the lines, error bars and images), not by
looking at pixels: each must carry the result's own numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

import symrmt

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")
pytest.importorskip("xarray")
pytest.importorskip("pandas")

GEO = symrmt.Geometry(snr=1)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_limit_and_simulation_plots_carry_their_values():
    th = symrmt.limit("tanh", 0.5, [0.01, 0.1, 1], GEO, digits=12)
    ax = th.plot()
    lines = ax.get_lines()
    assert np.allclose(lines[0].get_ydata(), th.attention) and np.allclose(lines[1].get_ydata(), th.ridge)
    assert ax.get_xscale() == "log"
    sim = symrmt.simulate("tanh", 0.5, [0.01, 0.1, 1], GEO, n=64, trials=3, seed=1)
    ax = sim.compare(th).plot(k=2)
    assert len(ax.get_lines()) >= 2 and len(ax.containers) == 2  # the two limit curves, two error-bar sets
    bars = ax.containers[0]
    assert np.allclose(bars.lines[0].get_ydata(), sim.attention)
    seg = bars.lines[2][0].get_segments()  # vertical bars: mean -+ 2 se
    assert np.allclose([s[1][1] - s[0][1] for s in seg], 4 * sim.attention_se)
    ds, dsim = th.to_xarray(), sim.to_xarray()
    assert np.allclose(ds["attention"].sel(gamma=0.1), th.attention[1])
    assert dsim["attention_trials"].shape == (3, 3) and np.allclose(dsim["ridge_se"], sim.ridge_se)
    assert sim.compare(th).to_xarray()["attention_gap"].shape == (3,)


def test_to_pandas_default_is_wide_everywhere():
    th = symrmt.limit("tanh", 0.5, [0.1, 1], GEO, digits=10)
    sim = symrmt.simulate("tanh", 0.5, [0.1, 1], GEO, n=64, trials=3, seed=0)
    sw = symrmt.sweep("tanh", {"c": [0.5, 2], "gamma": 1}, digits=10, progress=False)
    for obj in (th, sim, sim.compare(th), sw):
        wide, long = obj.to_pandas(), obj.to_pandas(long=True)
        assert len(wide) == 2 and len(long) == 4, type(obj).__name__
        assert "error" in long.columns and "error" not in wide.columns
    assert list(th.to_pandas(long=True).columns) == ["gamma", "error", "value"]
    assert set(sim.to_pandas(long=True)["error"]) == {"attention", "ridge"}


def test_sweep_heat_map_and_sign_map():
    sw = symrmt.sweep("tanh", {"c": [0.5, 1, 2], "gamma": [0.1, 1], "snr": 1}, digits=8, progress=False)
    ax = sw.plot()
    img = ax.collections[0].get_array().reshape(2, 3)  # rows: gamma; columns: c
    assert np.allclose(img, (sw.attention - sw.ridge).T)
    ax = sw.plot(kind="sign")
    assert set(np.unique(ax.collections[0].get_array())) <= {-1.0, 0.0, 1.0}
    assert np.array_equal(ax.collections[0].get_array().reshape(2, 3), np.sign(sw.attention - sw.ridge).T)
    line = symrmt.sweep("tanh", {"c": [0.5, 1, 2], "gamma": 1}, digits=8, progress=False).plot(kind="attention")
    assert len(line.get_lines()) == 2
    with pytest.raises(symrmt.ParameterError, match="kind"):
        sw.plot(kind="nonsense")


def test_crossings_plot_and_xarray():
    cr = symrmt.crossings("Max(t, 0)", over="c", between=(0.2, 0.5), gamma=1, snr=1, center=True, digits=10,
                          scan=3, progress=False)
    ax = cr.plot()
    vlines = [ln for ln in ax.get_lines() if np.ptp(ln.get_xdata()) == 0 and len(ln.get_xdata()) == 2]
    assert [float(v.get_xdata()[0]) for v in vlines] == pytest.approx([float(r) for r in cr.roots])
    ds = cr.to_xarray()
    assert ds["c"].shape == (1,) and float(ds["c"][0]) == pytest.approx(float(cr.roots[0]))
    assert list(ds["scan_sign"].values) == list(cr.scan_sign)
