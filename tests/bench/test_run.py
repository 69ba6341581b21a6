"""``symrmt bench`` without the Dask extra: the 2-worker simulation run is left out of the plan (it was a
traceback a minute into the run), and kept where Dask is installed."""

import importlib.util

import symrmt.bench.run as run


def _find_spec_without(missing):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == missing else real(name, *args, **kwargs)

    return find_spec


def test_no_parallel_run_without_dask(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", _find_spec_without("distributed"))
    for quick in (True, False):
        assert "parallel" not in run.simulation_spec(quick)
        assert run.simulation_spec(quick)["ns"]


def test_parallel_run_with_dask(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: object())
    assert run.simulation_spec(True)["parallel"] == {"n": 128, "trials": 4}
    assert run.simulation_spec(False)["parallel"] == {"n": 1024, "trials": 4}

