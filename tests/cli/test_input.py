"""The command line's refusals of bad input: exit code 2 and one line, checked before any work.
"""

import json

import pytest

from symrmt.cli import app as cli
from symrmt.cli.app import main


def _cli(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


MP_EXPR = "trace(inv(Z.T*Z/n + gamma*I(n)))"


MP_DECL = ["--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n"]


@pytest.mark.parametrize("argv, limit", [
    (["limit", "--f", "tanh", "--c", "1e999999999", "--gamma", "1"], "literal"),
    (["hermite", "--f", "tanh", "--digits", "100000"], "limit 1000"),
    (["hermite", "--f", "tanh", "--digits", "5000"], "limit 1000"),
    (["limit", "--f", "tanh", "--c", "1/2", "--gamma", ",".join(["1"] * 10000)], "limit 1000"),
    (["check", "E_RR0", "(1-c)/(1+snr)", "--timeout", "inf", "--points", "1"], "finite"),
])
def test_cli_refusals(argv, limit, capsys):
    code, _, err = _cli(argv, capsys)
    assert code == 2
    assert limit in err and "Traceback" not in err


@pytest.mark.parametrize("verb", [["latex", sorted(cli.LATEX_RESULTS)[0], "--out"], ["bench", "--quick", "--out"]])
def test_unwritable_out_checked_first(verb, capsys, tmp_path):
    code, _, err = _cli(verb + [str(tmp_path / "missing" / "x.tex")], capsys)
    assert code == 2 and "does not exist" in err


def test_figures_out_not_a_folder(capsys, tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    code, _, err = _cli(["figures", "--out", str(f / "sub")], capsys)
    assert code == 2 and "not a writable folder" in err


def test_json_errors_are_json(capsys):
    rc = main(["trace", MP_EXPR, *MP_DECL, "--at", "c=1/2, gamma=x", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 2 and out["exit"] == 2 and "gamma" in out["error"] and out["verb"] == "trace"
    rc = main(["limit", "--f", "tanh", "--c", "0.5", "--json"])  # an argparse error
    out = json.loads(capsys.readouterr().out)
    assert rc == 2 and "--gamma" in out["error"]
