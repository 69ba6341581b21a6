"""A density on a grid of certified points reports its progress: one bar over the grid, one step per point
(auto mode: it is drawn only when the run lasts a few seconds, :func:`symrmt.progress.progress_bar`)."""

import symrmt.progress as progress
from symrmt.engine import Model


class _Recorder:
    def __init__(self, total, desc="", enabled=None, stream=None):
        self.total, self.desc, self.steps = total, desc, 0
        BARS.append(self)

    def update(self, k=1):
        self.steps += k

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


BARS: list = []


def test_every_grid_point_is_one_step_of_the_bar(monkeypatch):
    BARS.clear()
    monkeypatch.setattr(progress, "progress_bar", _Recorder)
    m = Model()
    m.goe("G", "n")
    d = m.density("G/sqrt(n)", x=[-3, -1, 0, 1, 3], digits=10)
    assert len(d.density) == 5
    assert [(b.total, b.steps) for b in BARS] == [(5, 5)]
    assert BARS[0].desc == "density of G/sqrt(n)"
