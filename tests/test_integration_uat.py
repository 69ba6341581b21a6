"""Acceptance probes of the integrated package (issues 19, 20, 21, 23, 24, 25 together).

Each test is a defect found by using the CLI and the top-level API as a user would; the
expected values are closed forms written here, independent of the engine.
"""

import json

import pytest

from symrmt.cli import main


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_trace_without_parameters_needs_no_at(capsys):
    # tau(G^2/n) = 1 for a GOE matrix of unit off-diagonal variance (the semicircle's variance)
    code, out, err = _run(capsys, ["trace", "trace(G*G/n)", "--matrix", "G=goe(n)", "--json"])
    assert code == 0, err
    assert json.loads(out)["value"] == pytest.approx(1.0, rel=1e-14)
    # a parameter left out is still a one-line error naming it
    code, out, err = _run(capsys, ["trace", "trace(inv(G/sqrt(n) + gamma*I(n)))", "--matrix", "G=goe(n)"])
    assert code == 2 and "gamma" in err
