"""A stand-in for :func:`symrmt.progress.progress_bar` that records each bar's total and steps (the tests of the
progress bars monkeypatch it in place of the real one)."""


class Recorder:
    """A progress bar that draws nothing: ``Recorder.bars`` lists every bar made since the last
    :meth:`reset`, each with its ``total``, ``desc`` and the ``steps`` taken."""

    bars: list = []

    def __init__(self, total, desc="", enabled=None, stream=None):
        self.total, self.desc, self.steps = total, desc, 0
        Recorder.bars.append(self)

    @classmethod
    def reset(cls):
        cls.bars = []
        return cls

    def update(self, k=1):
        self.steps += k

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
