"""Errors that help: a typo is named with the closest known spelling, never silently accepted or
misreported, and the command line speaks in its own flags (``--at``, ``--dim 'p=c*n'``), the Python API in
its keywords (``at=``, ``Model.dim``).

Each test drives the CLI in-process (:func:`symrmt.cli.app.main`) and, where the API has the same mistake,
the Python API too.
"""

from __future__ import annotations

import json
import math
import pathlib
import re

import pytest

from symrmt.cli.app import main
from symrmt.errors import ParameterError, UnknownNameError

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIMIT = ["limit", "--f", "tanh", "--c", "0.5", "--gamma", "1"]
MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"
WISHART = ["--dim", "p=c*n", "--matrix", "Z=gaussian(p,n)"]


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def mp_closed(gamma: float, c: float) -> float:
    """``tau((Z^T Z/n + gamma)^{-1})`` for ``p = c n``: the positive root of ``gamma t^2 + (gamma + c - 1) t - 1``."""
    b = gamma + c - 1
    return (math.sqrt(b * b + 4 * gamma) - b) / (2 * gamma)


# ---------------------------------------------------------------- flags


@pytest.mark.parametrize("typo,meant", [("--digit", "--digits"), ("--sn", "--snr")])
def test_abbreviated_flags_are_refused_with_the_flag_meant(capsys, typo, meant):
    code, out, err = run(capsys, LIMIT + [typo, "5"])
    assert code == 2 and out == ""
    assert f"unrecognized argument {typo} (did you mean {meant}?)" in err, err


def test_unknown_flag_is_named_before_a_missing_one(capsys):
    """``--gama 0.1`` is a typo of ``--gamma``: the error says so, not only that ``--gamma`` is required."""
    code, _, err = run(capsys, ["limit", "--f", "tanh", "--c", "0.5", "--gama", "0.1"])
    assert code == 2
    assert "unrecognized argument --gama (did you mean --gamma?)" in err and "required" not in err, err
    code, out, err = run(capsys, ["limit", "--f", "tanh", "--c", "0.5", "--gama", "0.1", "--json"])
    assert code == 2 and json.loads(out)["error"].endswith("unrecognized argument --gama (did you mean --gamma?)")


def test_several_unknown_flags_and_one_without_a_likeness(capsys):
    code, _, err = run(capsys, LIMIT + ["--digit", "4", "--zzzz"])
    assert code == 2
    assert "unrecognized arguments --digit (did you mean --digits?), --zzzz\n" in err, err


def test_a_negative_value_is_not_an_unknown_flag(capsys):
    """The scan for unknown flags leaves values such as ``-3/10`` alone (they reach the value checks)."""
    code, _, err = run(capsys, LIMIT + ["--snr", "1", "--wk2", "1", "--muwk", "-3/10", "--gama", "1"])
    assert code == 2 and "unrecognized argument --gama (did you mean --gamma?)" in err and "-3/10" not in err


def test_verb_and_choice_typos_are_suggested(capsys):
    code, _, err = run(capsys, ["limt"])
    assert code == 2 and "did you mean 'limit'?" in err
    code, _, err = run(capsys, LIMIT + ["--diagonal", "kep"])
    assert code == 2 and "did you mean 'keep'?" in err


def test_every_argument_parser_refuses_abbreviations():
    """Every argparse parser in the package and its benchmarks is built with ``allow_abbrev=False``."""
    sources = [*ROOT.joinpath("symrmt").rglob("*.py"), *ROOT.joinpath("benchmarks").rglob("*.py")]
    found = 0
    for path in sources:
        for call in re.findall(r"ArgumentParser\((.*)", path.read_text()):
            found += 1
            assert call.startswith("allow_abbrev=False"), (path, call)
    assert found >= 8
    from symrmt.cli.app import build_parser

    parser = build_parser()
    assert parser.allow_abbrev is False
    verbs = next(a for a in parser._actions if a.dest == "verb").choices
    assert all(p.allow_abbrev is False for p in verbs.values())


# ---------------------------------------------------------------- names in expressions


def test_f_typo_lists_what_a_user_may_type_and_suggests(capsys):
    code, _, err = run(capsys, ["limit", "--f", "tanhh", "--c", "0.5", "--gamma", "1"])
    assert code == 2
    assert "unknown name 'tanhh'; did you mean 'tanh'" in err, err
    names = re.search(r"known names: ([^;]*);", err).group(1).split(", ")
    assert names == ["E", "pi", "t"], names  # no True, no function listed twice
    presets = re.search(r"presets: ([^)]*)\)", err).group(1).split(", ")
    assert {"gelu", "poly2", "linear", "tanh"} <= set(presets)
    with pytest.raises(UnknownNameError) as info:
        import symrmt

        symrmt.Nonlinearity("gelu2")
    assert info.value.suggestions[0] == "gelu" and "True" not in str(info.value)


def test_a_called_unknown_name_is_not_a_parameter(capsys):
    code, _, err = run(capsys, ["trace", "trace(inve(Z.T*Z/n + gamma*I(n)))", *WISHART, "--at", "c=1/2, gamma=1"])
    assert code == 2
    assert "unknown name 'inve' called as a function; did you mean 'inv'?" in err, err
    assert "inve" not in re.search(r"known names: ([^;]*);", err).group(1)
    from symrmt.engine import Model

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    with pytest.raises(UnknownNameError, match="did you mean 'inv'"):
        m.parse("trace(inve(Z.T*Z/n + gamma*I(n)))")
    assert "inve" not in m.symbols


# ---------------------------------------------------------------- values and dimensions in the CLI's spelling


def test_missing_at_value_is_asked_for_with_at(capsys):
    code, _, err = run(capsys, ["trace", MP, *WISHART, "--at", "c=1/2"])
    assert code == 2
    assert "no value given for gamma: add it to --at, e.g. --at 'c=1/2, gamma=VALUE'" in err, err
    assert "at=" not in err
    code, _, err = run(capsys, ["trace-sweep", MP, *WISHART, "--grid", "gamma=1,2"])
    assert code == 2 and "no value given for c: add it to a --grid axis or --at" in err and "at=" not in err
    code, _, err = run(capsys, ["density", "Z.T*Z/n", "--over", "x=0.5:2:3", *WISHART])
    assert code == 2 and "add it to --at" in err and "at=" not in err
    from symrmt.engine import Model
    from symrmt.engine.lang.node import ModelError

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    with pytest.raises(ModelError, match=r"no value given for gamma \(pass them in at=") as info:
        m.limit(MP, at={"c": "1/2"})
    assert info.value.missing == ("gamma",)


def test_unknown_at_name_is_suggested_in_the_cli_spelling(capsys):
    code, _, err = run(capsys, ["trace", MP, *WISHART, "--at", "c=1/2, gama=1"])
    assert code == 2
    assert "unknown parameter gama in --at; did you mean 'gamma'?" in err and "at=" not in err, err


def test_missing_dimension_is_hinted(capsys):
    code, _, err = run(capsys, ["trace", MP, "--matrix", "Z=gaussian(p,n)", "--at", "c=1/2, gamma=1"])
    assert code == 2
    assert "unknown name 'p'" in err and "--dim 'p=c*n'" in err and "Model.dim" not in err, err
    code, _, err = run(capsys, ["trace", "trace(D)", "--matrix", "D=diag(p, (1, 2))"])
    assert code == 2 and "--dim 'p=c*n'" in err
    # a name close to a declared one is a typo: the suggestion, not a dimension to declare
    code, _, err = run(capsys, ["trace", MP, *WISHART[:2], "--matrix", "Z=gaussian(pp,n)", "--at", "c=1/2, gamma=1"])
    assert code == 2 and "did you mean 'p'?" in err and "--dim 'pp" not in err
    from symrmt.engine import Model

    with pytest.raises(ParameterError, match=r"Model\.dim\('p', 'c\*n'\)"):
        Model().declare("Z=gaussian(p,n)")
    with pytest.raises(ParameterError, match=r"Model\.dim\('p', 'c\*n'\)"):
        Model().gaussian("Z", "p", "n")


def test_a_second_at_is_merged_not_dropped(capsys):
    code, out, err = run(capsys, ["trace", MP, *WISHART, "--at", "c=1/2", "--at", "gamma=1", "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["at"] == {"c": "1/2", "gamma": "1"}
    assert abs(doc["value"] - mp_closed(1.0, 0.5)) <= 1e-14
    code, _, err = run(capsys, ["trace", MP, *WISHART, "--at", "c=1/2, gamma=1", "--at", "c=2"])
    assert code == 2 and "--at: c is given twice" in err
    code, out, err = run(capsys, ["trace-sweep", MP, *WISHART, "--grid", "gamma=1", "--at", "c=1/2", "--at", "c=2"])
    assert code == 2 and "c is given twice" in err


def test_a_value_starting_with_a_minus_is_told_how_to_pass(capsys):
    """``check E_RR0 '-c+1'``: the candidate reads as a flag; the error says how to pass it (and that way works)."""
    code, _, err = run(capsys, ["check", "E_RR0", "-c+1"])
    assert code == 2 and "-c+1 (a value that starts with '-' goes after '--', or as --FLAG=VALUE)" in err, err
    code, out, err = run(capsys, ["check", "E_RR0", "--where", "c<1", "--points", "2", "--", "-c+1"])
    assert code == 1 and "DISPROVED" in out, (out, err)  # E_RR0 = (1 - c)/(1 + snr), not 1 - c


@pytest.mark.slow  # a subprocess that computes a 100 x 100 grid: seconds, outside the fast tier
def test_a_closed_pipe_stops_the_output_quietly():
    """``symrmt trace-sweep ... | head``: the reader goes away before the output is written; the command
    stops without a traceback (exit 0)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "symrmt", "trace-sweep", "trace(inv(Z.T*Z/n + gamma*I(n)))",
                             "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--grid", "gamma=0.1:10:100",
                             "--grid", "c=0.1:2:100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_negative_values_after_an_option(capsys):
    """``--muwq -3/10`` and ``--between -0.5,0.5`` are values (argparse took them for options)."""
    a = ["limit", "--f", "linear", "--c", "1/2", "--gamma", "1", "--snr", "1", "--wk2", "1", "--json"]
    code, out, err = _run(capsys, a + ["--muwk", "-1/2"])
    assert code == 0, err
    code2, out2, err2 = _run(capsys, a + ["--muwk=-1/2"])
    assert code2 == 0 and json.loads(out)["attention"] == json.loads(out2)["attention"]
    code, out, err = _run(capsys, ["crossings", "--f", "tanh", "--over", "muwk", "--between", "-0.5,0.5", "--c", "0.5",
                                   "--gamma", "1", "--snr", "1", "--wk2", "1", "--scan", "4", "--json"])
    assert code == 0, err
    assert json.loads(out)["params"]["between"] == ["-1/2", "1/2"]
    code, out, err = _run(capsys, a + ["-json"])  # a mistyped option is still refused
    assert code == 2
