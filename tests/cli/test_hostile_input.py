"""Input a careless or hostile user types: each is a one-line error with its exit code, before any work,
never a traceback, a silently ignored flag or a claim about work that was not done.  In process
(``main(argv)``); every case runs in well under a second.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import symrmt.cli.app as app
from symrmt.cli.app import main
from symrmt.errors import ExtraUnavailable

WISHART = ["--dim", "p=c*n", "--matrix", "Z=gaussian(p,n)", "--at", "c=1/2"]
MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _line(err):
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[-1]


@pytest.mark.parametrize("expr", ["sqrt(-1)", "sqrt(2-3)", "1/sqrt(-1)", "sqrt(-1) + trace(Z.T*Z/n)"])
def test_a_complex_constant_is_refused_not_a_traceback(capsys, expr):
    """``sqrt(-1)`` compiles to the Python complex ``1j``: it must meet the same reality check as a complex
    trace (exit 3, BranchError), not crash the printer."""
    code, out, err = _run(capsys, ["trace", expr, *WISHART])
    assert code == 3 and out == ""
    assert "BranchError" in _line(err) and "not real" in err


def test_a_zero_times_a_complex_constant_is_the_real_zero(capsys):
    code, out, _ = _run(capsys, ["trace", "sqrt(-4)*0", *WISHART, "--json"])
    assert code == 0 and '"value": 0' in out


@pytest.mark.parametrize("verb,argv", [
    ("trace", ["trace", MP, *WISHART, "--at", "gamma=1"]),
    ("density", ["density", "Z.T*Z/n", *WISHART, "--over", "x=0.5:1.5:3"]),
    ("icl", ["icl", "--alpha", "1", "--kappa", "1", "--tau", "2", "--rho", "1/10"]),
])
@pytest.mark.parametrize("flag", [["--trials", "3"], ["--seed", "7"]])
def test_simulation_flags_without_simulate_are_refused(capsys, verb, argv, flag):
    code, out, err = _run(capsys, argv + flag)
    assert code == 2 and out == ""
    assert f"{flag[0]} applies to the simulation: add --simulate" in _line(err)


@pytest.mark.parametrize("flag", [["--n", "100"], ["--store", "trials.db"], ["--workers", "2"]])
def test_density_simulation_flags_without_simulate_are_refused(capsys, flag):
    code, _, err = _run(capsys, ["density", "Z.T*Z/n", *WISHART, "--over", "x=0.5:1.5:3", *flag])
    assert code == 2 and f"{flag[0]} applies to the simulation" in _line(err)


def test_simulate_plot_checks_axis_and_matplotlib_before_any_trial(capsys, monkeypatch):
    import symrmt.models.attention.api as api

    def no_trials(*a, **k):
        raise AssertionError("simulated before the --plot checks")

    monkeypatch.setattr(api, "simulate", no_trials)
    base = ["simulate", "--f", "tanh", "--gamma", "1", "--n", "16", "--trials", "2", "--grid", "c=1/4,1/2"]
    code, _, err = _run(capsys, base + ["--over", "gamma", "--plot", "fig.png"])
    assert code == 2 and "--over must be one of the grid's axes ['c'], got 'gamma'" in _line(err)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code, _, err = _run(capsys, base + ["--plot", "fig.png"])
    assert code == 2 and "--plot needs matplotlib: pip install 'symrmt[plot]'" in _line(err)


def test_simulate_plot_file_checked_before_any_trial(capsys, monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    import symrmt.models.attention.api as api

    monkeypatch.setattr(api, "simulate", lambda *a, **k: pytest.fail("simulated before the --plot file check"))
    code, _, err = _run(capsys, ["simulate", "--f", "tanh", "--gamma", "1", "--n", "16", "--trials", "2",
                                 "--grid", "c=1/4,1/2", "--plot", str(tmp_path / "fig.txt")])
    assert code == 2 and "matplotlib cannot write a .txt figure" in _line(err)


def test_a_missing_extra_anywhere_is_one_line_exit_2(capsys, monkeypatch):
    def needs_extra(args):
        raise ExtraUnavailable("plot() needs matplotlib: pip install 'symrmt[plot]'")

    monkeypatch.setattr(app, "cmd_bench", needs_extra)
    code, out, err = _run(capsys, ["bench", "--quick", "--json"])
    assert code == 2 and "symrmt bench: error: plot() needs matplotlib" in _line(err)
    assert '"exit": 2' in out


def _private(path):
    os.chmod(path, 0o600)
    return path


@pytest.fixture
def law(tmp_path):
    path = tmp_path / "law.npy"
    np.save(path, np.array([1.0, 3.0]))
    return _private(path)


@pytest.fixture
def gram(tmp_path):
    path = tmp_path / "gram.json"
    path.write_text('{"gram": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}', encoding="utf-8")
    return _private(path)


@pytest.fixture
def candidate(tmp_path):
    path = tmp_path / "cand.py"
    path.write_text("E_RR = 1\n", encoding="utf-8")
    return _private(path)


def _argv(kind, path):
    return {"law": ["trace", "trace(D)", "--matrix", f"D=diag_file(n, {path})"],
            "gram": ["limit", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--geometry", str(path)],
            "candidate": ["check", "E_RR", str(path), "--points", "2", "--no-region"]}[kind]


@pytest.mark.parametrize("kind", ["law", "gram", "candidate"])
@pytest.mark.parametrize("how", ["group-writable", "symlink"])
def test_input_files_pass_the_file_trust_rule(capsys, request, tmp_path, kind, how):
    path = request.getfixturevalue(kind)
    if how == "group-writable":
        os.chmod(path, 0o664)
        why = "is writable by group or others (mode 664)"
    else:
        link = tmp_path / ("link" + path.suffix)
        os.symlink(path, link)
        path, why = link, "is a symbolic link"
    code, out, err = _run(capsys, _argv(kind, path))
    assert code == 2 and "Traceback" not in err
    assert "refused by the file-trust rule" in _line(err) and why in err


@pytest.mark.parametrize("kind", ["law", "gram"])
def test_a_private_input_file_is_read(capsys, request, kind):
    code, out, err = _run(capsys, _argv(kind, request.getfixturevalue(kind)))
    assert code == 0, err
    if kind == "law":
        assert "limit (15 digits): 2.0" in out  # the mean of the atoms 1 and 3 with equal weights


@pytest.mark.parametrize("argv", [
    ["sweep", "--f", "tanh", "--gamma", "1", "--grid", "c=1/4:1/2:3.5"],
    ["trace-sweep", MP, *WISHART, "--grid", "gamma=1:2:3.5"],
])
def test_a_fractional_point_count_is_named(capsys, argv):
    code, _, err = _run(capsys, argv)  # an argparse error: the usage, then the one error line
    assert code == 2 and "Traceback" not in err and "int()" not in err
    assert "K must be an integer, got '3.5'" in err.strip().splitlines()[-1]


def test_trace_sweep_reports_the_points_it_rechecked(capsys):
    """``--certify 50`` on a grid of 3 points re-checks 3 points, and says 3."""
    code, _, err = _run(capsys, ["trace-sweep", MP, *WISHART, "--grid", "gamma=1/2,1,2", "--certify", "50"])
    assert code == 0 and "largest relative gap of 3 re-checked points" in err, err


def test_fast_sweep_reports_the_points_it_rechecked(capsys):
    code, _, err = _run(capsys, ["sweep", "--f", "tanh", "--gamma", "1", "--grid", "c=1/2", "--fast"])
    assert code == 0 and "largest relative gap of 1 re-checked points" in err, err


def test_a_candidate_file_too_deep_for_pythons_parser_is_one_line(capsys, tmp_path):
    """A chain of 3000 additions overflows ``ast.parse``'s recursion: exit 2 in one line, no RecursionError."""
    path = tmp_path / "deep.py"
    path.write_text("E_RR = " + "+".join(["c"] * 3000) + "\n", encoding="utf-8")
    code, _, err = _run(capsys, ["check", "E_RR", str(_private(path)), "--points", "2", "--no-region"])
    assert code == 2 and "nests or chains too deeply" in _line(err)


def test_a_large_candidate_file_is_refused_before_it_is_read(capsys, tmp_path):
    from symrmt.check.candidate import MAX_FILE_BYTES

    path = tmp_path / "big.py"
    path.write_text("E_RR = 1\n" + "# padding\n" * (MAX_FILE_BYTES // 10 + 1), encoding="utf-8")
    code, _, err = _run(capsys, ["check", "E_RR", str(_private(path)), "--points", "2", "--no-region"])
    assert code == 2 and f"above the limit {MAX_FILE_BYTES} of a candidate file" in _line(err)


@pytest.mark.parametrize("gamma", ["1e-310", "1e305", "1e-400"])
def test_simulate_refuses_a_gamma_outside_its_stated_range(capsys, gamma):
    """The message and docs/input.md say 1e-300 <= gamma <= 1e300: a subnormal 1e-310 and 1e305 are refused too."""
    code, out, err = _run(capsys, ["simulate", "--f", "tanh", "--c", "1/2", "--gamma", gamma, "--n", "16",
                                   "--trials", "2"])
    assert code == 2 and out == "" and "the simulation needs 1e-300 <= gamma <= 1e300" in _line(err)


@pytest.mark.parametrize("gamma", ["1e-300", "1e300"])
def test_simulate_takes_the_ends_of_its_gamma_range(capsys, gamma):
    code, out, err = _run(capsys, ["simulate", "--f", "tanh", "--c", "1/2", "--gamma", gamma, "--n", "16",
                                   "--trials", "2", "--json"])
    assert code == 0, err


@pytest.mark.parametrize("only", ["", ","])
def test_figures_only_without_a_name_says_so(capsys, only):
    pytest.importorskip("matplotlib")  # figures checks for matplotlib first
    code, _, err = _run(capsys, ["figures", "--only", only, "--out", "figs"])
    assert code == 2 and "--only: give at least one figure name" in _line(err)


def test_sweep_certify_without_fast_is_refused(capsys):
    """``--certify K`` re-checks the float64 path; without ``--fast`` it was silently ignored."""
    code, out, err = _run(capsys, ["sweep", "--f", "tanh", "--gamma", "1", "--grid", "c=1/2", "--certify", "3"])
    assert code == 2 and out == "" and "add --fast" in _line(err)


def test_trace_sweep_seed_without_certify_is_refused(capsys):
    code, out, err = _run(capsys, ["trace-sweep", MP, *WISHART, "--grid", "gamma=1,2", "--seed", "3"])
    assert code == 2 and out == "" and "add --certify K" in _line(err)


def test_an_out_file_that_cannot_be_written_is_one_line(capsys, monkeypatch, tmp_path):
    """A full disk (ENOSPC) while writing ``--out``: the file named, exit 2, no traceback."""
    import builtins
    import errno

    real_open = builtins.open

    class Full:
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    target = str(tmp_path / "out.tex")
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: Full() if str(f) == target else real_open(f, *a, **k))
    code, _, err = _run(capsys, ["latex", "ridge", "--out", target])
    assert code == 2 and f"--out {target}: cannot write it (No space left on device)" in _line(err)


def test_an_os_error_on_stdout_is_one_line(capsys, monkeypatch):
    import errno

    def full(args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(app, "cmd_bench", full)
    code, _, err = _run(capsys, ["bench", "--quick"])
    assert code == 2 and "symrmt bench: error: the output (stdout): No space left on device" in _line(err)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_stdout_on_a_full_device_is_one_line():
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "symrmt", "latex", "ridge"], stdout=full, stderr=subprocess.PIPE,
                           text=True, cwd=root, timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, p.stderr
    assert p.stderr.strip() == "symrmt latex: error: the output (stdout): No space left on device"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv, prefix", [(["--version"], "symrmt"), (["--help"], "symrmt"),
                                          (["limit", "--help"], "symrmt limit")])
def test_version_and_help_on_a_full_device_are_one_line(argv, prefix):
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "symrmt", *argv], stdout=full, stderr=subprocess.PIPE,
                           text=True, cwd=root, timeout=300)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip() == f"{prefix}: error: the output (stdout): No space left on device"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", ["weights", "law", "matrix", "gram", "candidate", "store"])
def test_a_fifo_is_refused_not_read_forever(capsys, tmp_path, kind):
    """A named pipe passes a size cap (its size is 0) and blocks its reader: the file-trust rule refuses it."""
    suffix = {"gram": ".json", "candidate": ".py", "store": ".db"}.get(kind, ".npy")
    path = tmp_path / ("pipe" + suffix)
    os.mkfifo(path, 0o600)
    argv = {"weights": ["limit", "--f", "tanh", "--c", "2", "--gamma", "1", "--weights", str(path)],
            "matrix": ["trace", "trace(S)", "--matrix", f'S=matrix(n, n, "{path}")'],
            "store": ["simulate", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--n", "16", "--trials", "2",
                      "--store", str(path)]}.get(kind) or _argv(kind, path)
    code, out, err = _run(capsys, argv)
    assert code == 2 and "is not a regular file" in _line(err)
