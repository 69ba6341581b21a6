"""The paper's figures (symrmt.figures.paper): tiny versions write their own PNG and PDF, every data axis is
labelled and titled, and the claims they show hold in simulation.

The simulations run in this process at n <= 128 with 2-3 trials (the figures' own defaults are larger);
the claim test uses n = 256 (k = 3 standard errors, stated below).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.montecarlo]  # seconds a test: outside the fast tier (pytest -m "not slow")

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from symrmt import figures  # noqa: E402
from symrmt.figures import paper  # noqa: E402

TINY = {"trials": 2, "workers": 1}


@pytest.fixture
def drawn(monkeypatch):
    """Every Figure handed to save_figure, so that its axes can be inspected."""
    figs = []
    real = paper.save_figure

    def keep(fig, out, name):
        figs.append(fig)
        return real(fig, out, name)

    monkeypatch.setattr(paper, "save_figure", keep)
    return figs


def _check(paths, tmp_path, name, figs):
    assert sorted(paths) == sorted([str(tmp_path / f"{name}.png"), str(tmp_path / f"{name}.pdf")])
    png, pdf = (tmp_path / f"{name}.{ext}" for ext in ("png", "pdf"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000
    (fig,) = figs
    assert fig._suptitle is not None and fig._suptitle.get_text()
    data_axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert data_axes
    for ax in data_axes:
        assert ax.get_xlabel(), f"{name}: an axis without an x label"
        assert ax.get_ylabel(), f"{name}: an axis without a y label"
        assert ax.get_title(), f"{name}: an axis without a title"
    # no label is cut off: every text of the figure lies inside the saved canvas
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    r = canvas.get_renderer()
    box = fig.bbox
    for ax in data_axes:
        for t in (ax.xaxis.label, ax.yaxis.label, ax.title, fig._suptitle):
            b = t.get_window_extent(r)
            assert b.x0 >= box.x0 - 1 and b.x1 <= box.x1 + 1 and b.y0 >= box.y0 - 1 and b.y1 <= box.y1 + 1, \
                f"{name}: {t.get_text()!r} is clipped"


def test_fig1_ridge(tmp_path, drawn):
    paths = paper.fig1_ridge(tmp_path, progress=False, scale=32, points=9, **TINY)
    _check(paths, tmp_path, "fig1_ridge", drawn)


def test_fig2_attention(tmp_path, drawn):
    _check(paper.fig2_attention(tmp_path, progress=False, n=32, points=5, **TINY), tmp_path, "fig2_attention", drawn)


def test_fig3_nonlinear(tmp_path, drawn):
    paths = paper.fig3_nonlinear(tmp_path, progress=False, n=64, points=5, fs=("tanh", "relu"), **TINY)
    _check(paths, tmp_path, "fig3_nonlinear", drawn)


def test_fig4_alignment_marks_the_certified_crossing(tmp_path, drawn):
    paths = paper.fig4_alignment(tmp_path, progress=False, n=32, points=9, w2s=(4,), **TINY)
    _check(paths, tmp_path, "fig4_alignment", drawn)
    ax_a = drawn[0].axes[0]
    xs = [ln.get_xdata()[0] for ln in ax_a.get_lines() if ln.get_marker() == "X" and len(ln.get_xdata())]
    assert len(xs) == 1 and 0 < xs[0] < 1


def test_fig7_weights(tmp_path, drawn):
    _check(paper.fig7_weights(tmp_path, progress=False, n=32, points=5, **TINY), tmp_path, "fig7_weights", drawn)


def test_mu0_claim(tmp_path, drawn):
    _check(paper.mu0_claim(tmp_path, progress=False, n=32, grid=9, **TINY), tmp_path, "mu0_claim", drawn)


def test_a1_zero(tmp_path, drawn):
    _check(paper.a1_zero(tmp_path, progress=False, n=32, points=5, **TINY), tmp_path, "a1_zero", drawn)


def test_every_paper_figure_is_drawn_by_main():
    assert list(figures.FIGURES)[:7] == ["fig1_ridge", "fig2_attention", "fig3_nonlinear", "fig4_alignment",
                                         "fig7_weights", "mu0_claim", "a1_zero"]
    with pytest.raises(figures.ParameterError if hasattr(figures, "ParameterError") else Exception,
                       match="unknown figure"):
        figures.main("unused", only=["fig5"])


def test_cli_only_refuses_an_unknown_figure(capsys, tmp_path):
    from symrmt.cli.app import main as cli_main

    assert cli_main(["figures", "--out", str(tmp_path), "--only", "fig5_nothing"]) == 2
    assert "fig1_ridge" in capsys.readouterr().err


def test_mu0_claim_holds_in_simulation():
    """At mu = 0 Attention beats ridge at tanh, c = 1/8, gamma = 8 (limits and simulation, n = 256, 3 se),
    and loses at c = 2, gamma = 1: the claim 'E_A > E_RR at mu = 0' fails on part of the plane."""
    import symrmt

    th = symrmt.limit("tanh", Fraction(1, 8), [8], digits=10)
    assert th.attention[0] < th.ridge[0] - 0.05
    sim = symrmt.simulate("tanh", Fraction(1, 8), [8], n=256, trials=8, seed=1)
    diff = sim.attention[0] - sim.ridge[0]
    se = math.hypot(sim.attention_se[0], sim.ridge_se[0])
    assert diff + 3 * se < 0, (diff, se)
    th2 = symrmt.limit("tanh", 2, [1], digits=10)
    assert th2.attention[0] > th2.ridge[0] + 0.3


def test_mu0_fractions_sign_agrees_with_certified_limits():
    """The float64 maps of mu0_claim have the sign of the certified limits at a few of their points."""
    import symrmt

    maps = paper.mu0_fractions(("tanh",), grid=5)
    cs, gs, d, share = maps["tanh"]
    assert 0 < share < 1
    for i in (0, 2, 4):
        for j in (0, 2, 4):
            r = symrmt.limit("tanh", cs[j], [gs[i]], digits=10)
            ref = float(r.attention[0] - r.ridge[0])
            assert abs(d[i, j] - ref) < 1e-8 * max(1.0, abs(ref))


def test_fig7_with_real_weights_file(tmp_path, drawn):
    """With a safetensors file of query/key weights (here planted: W = 0.5 I + rank 2 + noise, p = 48), fig7
    adds the real-weights panel: actual W and its fit simulated, the fit's limit drawn."""
    import numpy as np

    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(0)
    p = 48
    u = np.linalg.qr(rng.standard_normal((p, 2)))[0]
    target = 0.5 * np.eye(p) + 3 * u @ u.T + 0.05 * rng.standard_normal((p, p))
    w_q = np.eye(p)
    w_k = target.T.copy()  # W = W_K^T W_Q = target
    path = tmp_path / "model.safetensors"
    safetensors_numpy.save_file({"encoder.layer.0.attention.self.query.weight": w_q,
                                 "encoder.layer.0.attention.self.key.weight": w_k}, str(path))
    data = paper.real_weights_data(path, cs=("1/2", "2"), trials=2, points=3)
    assert data["p"] == p and data["alpha"] > 0 and data["theory"] is not None
    assert [s["n"] for s in data["sims"]] == [96, 24]
    out = tmp_path / "out"
    paths = paper.fig7_weights(out, progress=False, n=32, points=5, weights_path=path, **TINY)
    _check(paths, out, "fig7_weights", drawn)
    assert len([ax for ax in drawn[0].axes if ax.get_label() != "<colorbar>"]) == 2
