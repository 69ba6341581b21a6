"""``check``'s numeric stage reports its progress: one bar over the points, one step per point drawn, a
skipped point included (auto mode: drawn only when the stage lasts a few seconds)."""

import symrmt
import symrmt.check.core as core


class _Recorder:
    bars: list = []

    def __init__(self, total, desc="", enabled=None, stream=None):
        self.total, self.desc, self.steps = total, desc, 0
        _Recorder.bars.append(self)

    def update(self, k=1):
        self.steps += k

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_every_numeric_point_is_one_step(monkeypatch):
    _Recorder.bars = []
    monkeypatch.setattr(core, "progress_bar", _Recorder)
    rep = symrmt.check("E_RR0", "(1-c)/(1+snr)", where="c<1", points=5, region=False)
    assert rep.status in ("proved", "verified")
    assert [(b.total, b.steps) for b in _Recorder.bars] == [(5, 5)]
    assert _Recorder.bars[0].desc == "check E_RR0: numeric points"
