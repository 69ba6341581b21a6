"""``check``'s numeric stage reports its progress: one bar over the points, one step per point drawn, a
skipped point included (auto mode: drawn only when the stage lasts a few seconds)."""

import symrmt
import symrmt.check.core as core
from tests.progress_recorder import Recorder


def test_every_numeric_point_is_one_step(monkeypatch):
    Recorder.reset()
    monkeypatch.setattr(core, "progress_bar", Recorder)
    rep = symrmt.check("E_RR0", "(1-c)/(1+snr)", where="c<1", points=5, region=False)
    assert rep.status in ("proved", "verified")
    assert [(b.total, b.steps) for b in Recorder.bars] == [(5, 5)]
    assert Recorder.bars[0].desc == "check E_RR0: numeric points"
