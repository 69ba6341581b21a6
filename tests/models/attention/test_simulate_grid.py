"""Simulations over a grid (symrmt.simulate(grid=...), symrmt simulate --grid) and the plot defaults.

The agreement test: every point of a small grid at n = 256 against the certified limits of the same
grid (symrmt.sweep), |mean - limit| <= k se + slack with k = 3 and slack = 0.02 (the finite-n bias of
E_A with a signal is about 0.01 at n = 256, measured: E_A at ||mu||^2 = 4, gamma = 0.1 sits 0.009 below
its limit).  Seeds are fixed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import symrmt
from symrmt.cli.app import main as cli_main

pytestmark = pytest.mark.montecarlo

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

K, SLACK = 3.0, 0.02


@pytest.fixture(scope="module")
def grid_sim():
    return symrmt.simulate("tanh", grid={"c": 0.5, "gamma": [0.1, 1], "snr": [0, 1, 4]}, n=256, trials=8, seed=3)


def test_grid_shape_and_axes(grid_sim):
    assert grid_sim.axes == ("gamma", "snr")
    assert grid_sim.shape == (2, 3)
    assert grid_sim.attention.shape == grid_sim.ridge_se.shape == (2, 3)
    assert np.all(grid_sim.attention_se > 0) and np.all(grid_sim.ridge_se > 0)
    assert grid_sim.p == (128,) * 6


def test_grid_agrees_with_the_limits(grid_sim):
    cmp = grid_sim.compare()
    assert cmp.limits.shape == grid_sim.shape
    gap_a = np.abs(grid_sim.attention - cmp.limits.attention)
    gap_r = np.abs(grid_sim.ridge - cmp.limits.ridge)
    assert np.all(gap_a <= K * grid_sim.attention_se + SLACK), gap_a
    assert np.all(gap_r <= K * grid_sim.ridge_se + SLACK), gap_r
    assert cmp.within(K, SLACK)


def test_grid_point_is_the_single_point_simulation(grid_sim):
    """The grid runs the same trials as simulate() at one point (same seed): equal to the last bit."""
    one = symrmt.simulate("tanh", 0.5, [0.1, 1], n=256, trials=8, seed=3, snr=1)
    np.testing.assert_array_equal(grid_sim.attention[:, 1], one.attention)
    np.testing.assert_array_equal(grid_sim.ridge_se[:, 1], one.ridge_se)


def test_grid_uses_the_store(tmp_path):
    store = tmp_path / "trials.sqlite"
    a = symrmt.simulate("relu", grid={"c": [0.5, 1], "gamma": 1}, n=32, trials=3, store=str(store))
    b = symrmt.simulate("relu", grid={"c": [0.5, 1], "gamma": 1}, n=32, trials=3, store=str(store))
    np.testing.assert_array_equal(a.attention, b.attention)
    from symrmt.simulation.store import TrialStore

    with TrialStore.open_existing(str(store)) as st:
        assert sum(r["trials"] for r in st.summary()) == 6


def test_grid_refuses_bad_input():
    with pytest.raises(symrmt.ParameterError, match="twice"):
        symrmt.simulate("tanh", 0.5, grid={"c": [0.5], "gamma": 1}, n=32, trials=2)
    with pytest.raises(symrmt.ParameterError, match="unknown grid key"):
        symrmt.simulate("tanh", grid={"c": 0.5, "gamma": 1, "snrr": [1]}, n=32, trials=2)
    with pytest.raises(symrmt.ParameterError, match="c and gamma"):
        symrmt.simulate("tanh", n=32, trials=2)


@pytest.mark.slow  # a fine grid of limits drawn: seconds, outside the fast tier
def test_comparison_plot_draws_both_on_a_fine_grid(grid_sim, tmp_path):
    cmp = grid_sim.compare()
    ax = cmp.plot(over="snr")
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    lines = [ln for ln in ax.get_lines() if ln.get_linestyle() in ("-", "--") and len(ln.get_xdata()) > 3]
    assert len(lines) == 4  # E_A and E_RR, one per gamma
    assert all(len(ln.get_xdata()) > 3 * 3 for ln in lines)  # a fine grid, not the 3 simulated points
    labels = ax.get_legend_handles_labels()[1]
    assert sum("simulation" in t for t in labels) == 4 and sum("limit" in t for t in labels) == 4
    # the limit of each series has the colour of its points
    for err, sym in (("E_A", "E_A"), ("E_{RR}", "E_{RR}")):
        for g in ("0.1", "1"):
            handles, labs = ax.get_legend_handles_labels()
            line = handles[labs.index(f"${err}$ limit, $\\gamma$ = {g}")]
            pts = handles[labs.index(f"${sym}$ simulation, $\\gamma$ = {g}")]
            assert matplotlib.colors.same_color(line.get_color(), pts[0].get_color())
    ax.figure.savefig(tmp_path / "cmp.png", bbox_inches="tight")
    assert (tmp_path / "cmp.png").stat().st_size > 10_000


def test_fine_curves_pass_through_the_limits(grid_sim):
    """The fine curve drawn (float64 path) at a simulated abscissa equals the certified limit there."""
    import matplotlib.pyplot as plt

    cmp = grid_sim.compare()
    ax = cmp.plot(over="snr", fine=21, digits=10)
    handles, labels = ax.get_legend_handles_labels()
    for j, g in enumerate(("0.1", "1")):
        for err, limit in (("E_A", cmp.limits.attention), ("E_{RR}", cmp.limits.ridge)):
            line = handles[labels.index(f"${err}$ limit, $\\gamma$ = {g}")]
            x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
            assert len(x) >= 21  # the fine grid, not the 3 simulated points
            for i, s in enumerate((0, 1, 4)):
                k = int(np.argmin(np.abs(x - s)))
                assert x[k] == s
                assert abs(y[k] - limit[j, i]) < 1e-9
    plt.close(ax.figure)


def test_simulation_result_plot_is_smooth_and_matched():
    th = symrmt.limit("tanh", 0.5, [0.01, 1, 10], snr=1, digits=10)
    sim = symrmt.simulate("tanh", 0.5, [0.01, 1, 10], n=64, trials=3, snr=1)
    ax = sim.compare(th).plot()
    lines = ax.get_lines()
    att = next(ln for ln in lines if ln.get_label() == "$E_A$ limit")
    assert len(att.get_xdata()) > 20
    # the fine curve passes through the certified limit at the simulated gamma
    x = np.asarray(att.get_xdata())
    for g, v in zip(th.gamma, th.attention):
        k = int(np.argmin(np.abs(x - g)))
        assert abs(att.get_ydata()[k] - v) < 1e-8
    handles, labels = ax.get_legend_handles_labels()
    pts = handles[next(i for i, t in enumerate(labels) if t.startswith("$E_A$ simulation"))]
    assert matplotlib.colors.same_color(att.get_color(), pts[0].get_color())


def test_sweep_plot_default_shows_both_errors():
    sw = symrmt.sweep("tanh", {"c": 0.5, "gamma": [0.1, 1, 10]}, digits=8)
    ax = sw.plot()
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert "$E_A$ limit" in labels and "$E_{RR}$ limit" in labels
    assert ax.get_xlabel() and ax.get_ylabel()
    ax = sw.plot(kind="difference")
    assert [ln.get_label() for ln in ax.get_lines()][0] == "$E_A - E_{RR}$"


def _overlap(boxes):
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            if boxes[i].overlaps(boxes[j]):
                return True
    return False


@pytest.mark.slow  # crossings and a drawn figure: seconds, outside the fast tier
@pytest.mark.parametrize("between", [(0.3, 4), (0.0625, 8)])
def test_crossings_plot_tick_labels_do_not_overlap(between):
    """A log axis over about one decade: matplotlib labels the minor ticks too (3x10^-1 ran into 4x10^-1)."""
    cr = symrmt.crossings("tanh", over="c", between=between, gamma=8 if between[0] < 0.1 else 1, digits=8,
                          progress=False)
    ax = cr.plot()
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    xlabels = ax.get_xticklabels() + ax.get_xticklabels(minor=True)
    for labels in (ax.get_yticklabels(), xlabels):
        boxes = [t.get_window_extent(renderer) for t in labels if t.get_visible() and t.get_text()]
        assert boxes and not _overlap(boxes)


def test_cli_simulate_grid_json(capsys, tmp_path):
    out = tmp_path / "sim.png"
    rc = cli_main(["simulate", "--f", "tanh", "--n", "64", "--trials", "3", "--c", "1/2", "--gamma", "1",
                   "--grid", "snr=0,2", "--compare", "--plot", str(out), "--json"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["columns"][:2] == ["snr", "p"]
    assert "attention_limit" in data["columns"] and len(data["rows"]) == 2
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_simulate_names_what_is_missing(capsys):
    assert cli_main(["simulate", "--f", "tanh", "--n", "64", "--gamma", "1"]) == 2
    assert "--c" in capsys.readouterr().err
    assert cli_main(["simulate", "--f", "tanh", "--n", "64", "--c", "1", "--gamma", "1", "--compare"]) == 2
    assert "--grid" in capsys.readouterr().err


def test_fine_curve_failure_is_said_and_falls_back_to_the_certified_points(monkeypatch):
    import symrmt.plotting as plotting

    def refuse(*args, **kwargs):
        raise symrmt.ConvergenceError("no fixed point here")

    monkeypatch.setattr(plotting, "fine_limit", refuse)
    th = symrmt.limit("tanh", 0.5, [0.1, 1], digits=10)
    sim = symrmt.simulate("tanh", 0.5, [0.1, 1], n=32, trials=2)
    with pytest.warns(UserWarning, match="certified values at the simulated gamma only"):
        ax = sim.compare(th).plot()
    att = next(ln for ln in ax.get_lines() if ln.get_label() == "$E_A$ limit")
    np.testing.assert_allclose(att.get_ydata(), th.attention)


def test_one_axis_grid_plot_colours():
    g = symrmt.simulate("relu", grid={"c": [0.5, 1, 2], "gamma": 1}, n=32, trials=2)
    ax = g.plot()
    handles, labels = ax.get_legend_handles_labels()
    col = {t: (h[0] if isinstance(h, tuple) or hasattr(h, "lines") else h).get_color() for h, t in zip(handles, labels)}
    assert matplotlib.colors.same_color(col["$E_A$ limit"], col["$E_A$ simulation"])
    assert matplotlib.colors.same_color(col["$E_{RR}$ limit"], col["$E_{RR}$ simulation"])
    assert not matplotlib.colors.same_color(col["$E_A$ limit"], col["$E_{RR}$ limit"])
    assert len(next(ln for ln in ax.get_lines() if ln.get_label() == "$E_A$ limit").get_xdata()) > 20


def test_single_point_simulate_takes_a_store(tmp_path):
    store = str(tmp_path / "one.sqlite")
    a = symrmt.simulate("tanh", 0.5, [0.1, 1], n=32, trials=3, store=store)
    b = symrmt.simulate("tanh", 0.5, [0.1, 1], n=32, trials=3, store=store)
    np.testing.assert_array_equal(a.attention_trials, b.attention_trials)
    from symrmt.simulation.store import TrialStore

    with TrialStore.open_existing(store) as st:
        assert sum(r["trials"] for r in st.summary()) == 3
