"""``Model.sweep`` (``symrmt trace-sweep``) reports the points it solves one by one on the certified path:
one bar over them, one step per point (auto mode: drawn only when they take a few seconds)."""

import symrmt.progress as progress
from symrmt.engine import Model
from tests.progress_recorder import Recorder


def test_points_of_the_certified_path_are_counted(monkeypatch):
    """A non-normal resolvent is not batched: all three points go to the certified path (its value is the
    Ginibre closed form 1/gamma outside the unit disk, written here)."""
    Recorder.reset()
    monkeypatch.setattr(progress, "progress_bar", Recorder)
    m = Model()
    m.gaussian("Z", "n", "n")
    r = m.sweep("trace(inv(Z/sqrt(n) + gamma*I(n)))", grid={"gamma": [2, 3, 4]})
    assert list(r.fallback) == [True, True, True]
    assert [abs(v - 1 / g) < 1e-14 for v, g in zip(r.values, (2, 3, 4))] == [True] * 3
    assert [(b.total, b.steps) for b in Recorder.bars] == [(3, 3)]
