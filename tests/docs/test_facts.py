"""Statements of the README and docs/ that are facts about the code, checked against the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from symrmt.cli.app import main

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parents[2]


def _read(name):
    return (ROOT / name).read_text()


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_gelu_is_exact_and_the_docs_say_so(capsys):
    assert main(["hermite", "--f", "gelu", "--k", "1"]) == 0
    assert "exact = True" in capsys.readouterr().out
    for name in ("docs/guide.md", "docs/theory.md", "docs/performance.md", "docs/engine.md"):
        for line in _read(name).splitlines():
            if "quadrature" in line.lower() or "Otherwise (" in line:
                assert "GELU" not in line, (name, line)


def test_parse_time_limit_is_the_one_of_limits():
    from symrmt.parsing.limits import LIMITS

    check = _read("docs/check.md")
    assert f"{LIMITS['time']:g} s time limit of every input" in check and "10 s time limit" not in check
    assert f"| `time` | {LIMITS['time']:g} |" in _read("docs/input.md")


def test_input_md_names_the_functions_of_f():
    from symrmt.hermite.parser import _FUNCTIONS

    row = next(line for line in _read("docs/input.md").splitlines() if line.startswith("| `--f`"))
    listed = re.search(r"the functions `([^`]+)`", row).group(1).split()
    assert listed == list(_FUNCTIONS)


def test_angles_avoid_the_rounding_note_and_sqrt_does_not(capsys):
    args = ["limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--snr", "1", "--wk2", "2"]
    assert main([*args, "--cos-muwk", "1"]) == 0
    assert "note" not in capsys.readouterr().err
    assert main([*args, "--muwk", "sqrt(2)"]) == 0
    assert "note" in capsys.readouterr().err
    assert "`--muwk 'sqrt(2)'` is read exactly but" in _read("docs/input.md")


def test_tiny_gamma_is_named_as_given(capsys):
    assert main(["limit", "--f", "tanh", "--c", "0.5", "--gamma", "1e-400", "--snr", "1"]) == 3
    err = capsys.readouterr().err
    assert "gamma=1.0e-400" in err and "gamma=0:" not in err


def test_readme_cli_table_has_the_flags():
    readme = _read("README.md")
    table = "\n".join(line for line in readme.splitlines() if line.startswith("| `"))
    for flag in ("--timeout", "--no-region", "--fast", "--certify", "--store PATH] [--workers W"):
        assert flag in table, flag
    assert "--cos-muwk" in readme and 'needs the Dask extra\n(`pip install ".[dask]"`)' in readme
    assert "symrmt.limit(" in readme and "sim.compare(th)" in readme
    from symrmt.derivations import DERIVATIONS

    verify_row = next(line for line in table.splitlines() if line.startswith("| `verify`"))
    assert all(name in verify_row for name in DERIVATIONS)


def _readme_row(verb):
    return next(line for line in _read("README.md").splitlines() if line.startswith(f"| `{verb}` |"))


def test_readme_check_row_names_every_json_key():
    from symrmt.check.report import CheckReport

    rep = CheckReport("E_RR", "value", "1", "verified", "numeric", {}, {}, proved={})
    documented = set(re.findall(r"`(\w+)`", _readme_row("check").split(" | ")[2]))
    assert set(rep.as_dict()) <= documented, set(rep.as_dict()) - documented


def test_readme_density_row_names_every_flag():
    from symrmt.cli.app import build_parser

    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and isinstance(a.choices, dict))
    flags = {o for a in sub.choices["density"]._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
    row = _readme_row("density")
    assert not [f for f in flags if f not in row], [f for f in flags if f not in row]


@pytest.mark.parametrize("cmd", [["verify", "--help"]])
def test_verify_help_lists_the_derivations(cmd, capsys):
    from symrmt.derivations import DERIVATIONS

    try:
        main(cmd)
    except SystemExit:
        pass
    out = " ".join(capsys.readouterr().out.split())
    assert all(name in out for name in DERIVATIONS)
