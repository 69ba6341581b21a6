"""A density on a grid of certified points reports its progress: one bar over the grid, one step per point
(auto mode: it is drawn only when the run lasts a few seconds, :func:`symrmt.progress.progress_bar`)."""

import symrmt.progress as progress
from symrmt.engine import Model
from tests.progress_recorder import Recorder


def test_every_grid_point_is_one_step_of_the_bar(monkeypatch):
    Recorder.reset()
    monkeypatch.setattr(progress, "progress_bar", Recorder)
    m = Model()
    m.goe("G", "n")
    d = m.density("G/sqrt(n)", x=[-3, -1, 0, 1, 3], digits=10)
    assert len(d.density) == 5
    assert [(b.total, b.steps) for b in Recorder.bars] == [(5, 5)]
    assert Recorder.bars[0].desc == "density of G/sqrt(n)"
