"""``limit``/``simulate`` with ``--heads``/``--weights`` record the f they use as the verbs without weights do:
``--center`` shows in the ``expr`` key and in the header (``exp(t) - exp(1/2)``, a_0 = E[e^xi] = e^{1/2})."""

import json

import numpy as np
import pytest

from symrmt.cli.app import main

CENTERED = "exp(t) - exp(1/2)"


def run(capsys, argv):
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("verb", ["simulate", "limit"])
def test_heads_record_the_centered_f(capsys, verb):
    argv = [verb, "--f", "exp(t)", "--center", "--c", "1/2", "--gamma", "1", "--heads", "2", "--head-width", "1/2"]
    argv += ["--n", "32", "--trials", "2"] if verb == "simulate" else ["--digits", "5"]
    params = json.loads(run(capsys, argv + ["--json"]))["params"]
    assert params["f"] == "exp(t)" and params["expr"] == CENTERED
    assert f"expr = {CENTERED}" in run(capsys, argv).splitlines()[0]


def test_simulate_weights_record_the_centered_f(capsys, tmp_path):
    path = tmp_path / "W.npy"
    np.save(path, np.eye(16))
    argv = ["simulate", "--f", "exp(t)", "--center", "--c", "1/2", "--gamma", "1", "--weights", str(path),
            "--trials", "2"]
    assert json.loads(run(capsys, argv + ["--json"]))["params"]["expr"] == CENTERED
    assert f"expr = {CENTERED}" in run(capsys, argv).splitlines()[0]


def test_plain_f_records_itself(capsys):
    argv = ["simulate", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--heads", "1", "--head-width", "1",
            "--n", "32", "--trials", "2", "--json"]
    params = json.loads(run(capsys, argv))["params"]
    assert params["f"] == "tanh" and params["expr"] == "tanh(t)"
