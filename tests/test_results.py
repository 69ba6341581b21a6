"""symrmt.results holds the result objects and never imports a model: the model builds
them and hands a simulation its own re-run (``SimulationResult.at_size``)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import symrmt
from symrmt.models.attention.geometry import Geometry, LowRankGeometry

ROOT = Path(__file__).resolve().parents[1]


def test_results_imports_no_model():
    tree = ast.parse((ROOT / "symrmt" / "results.py").read_text(encoding="utf-8"))
    mods = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    mods += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in mods if m.startswith("symrmt.models")], mods


@pytest.mark.slow  # a simulation and three limits: seconds, outside the fast tier
def test_compare_reads_a_rank_one_geometry_and_its_low_rank_form_as_the_same_model():
    g = Geometry(snr=1, wk2="1/2")
    th = symrmt.limit("erf", "1/2", [1], LowRankGeometry.from_geometry(g), digits=8)
    sim = symrmt.simulate("erf", "1/2", [1], g, n=32, trials=2, seed=0)
    assert sim.compare(th).attention_gap.shape == (1,)
    other = symrmt.limit("erf", "1/2", [1], LowRankGeometry.from_geometry(g, alpha=2), digits=8)
    with pytest.raises(symrmt.ParameterError, match="geometry"):
        sim.compare(other)
    with pytest.raises(symrmt.ParameterError, match="geometry"):
        sim.compare(symrmt.limit("erf", "1/2", [1], digits=8))  # mu = 0, W = I


def test_at_size_is_the_models_rerun_and_a_hand_built_result_says_so():
    sim = symrmt.simulate("tanh", "1/2", [0.5], Geometry(snr=1), n=32, trials=3, seed=2)
    again = sim.at_size(40)
    direct = symrmt.simulate("tanh", "1/2", [0.5], Geometry(snr=1), n=40, trials=3, seed=2)
    assert again.n == 40 and np.array_equal(again.attention_trials, direct.attention_trials)
    bare = symrmt.SimulationResult(f="tanh", expr="tanh(t)", center=False, c=sim.c, gamma_exact=sim.gamma_exact,
                                   geometry=sim.geometry, diagonal="zero", n=32, p=16, trials=3, seed=2,
                                   noise="gaussian", attention_trials=sim.attention_trials,
                                   ridge_trials=sim.ridge_trials)
    with pytest.raises(symrmt.ParameterError, match="runs="):
        bare.at_size(40)
