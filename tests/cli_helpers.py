"""Helpers shared by the command-line tests: run the CLI in-process or as a subprocess, and read a refusal."""

import json
import subprocess
import sys

from symrmt.cli.app import main


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _no_result(out):
    """Nothing on stdout, or (with --json) only the error object: no value was printed."""
    if out == "":
        return True
    obj = json.loads(out)
    return isinstance(obj, dict) and set(obj) >= {"error", "exit"} and "value" not in obj


def _one_line(err):
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def cli(*args, timeout=300):
    """The completed ``python -m symrmt ARGS`` (the timeout only stops a hang: no test asserts a time)."""
    return subprocess.run([sys.executable, "-m", "symrmt", *args], capture_output=True, text=True, timeout=timeout)


def _one_line_refusal(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stdout[-300:], p.stderr[-300:])
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for n in needles:
        assert n in lines[0], lines[0]
