"""The restricted parser (symrmt.parsing) against hostile and careless text: every refusal is one
ParameterError naming the limit, nothing is evaluated, and the stated limits are the documented ones.
"""

import math
import os
import random
import string
import sys
import time

import pytest
import sympy as sp

from symrmt.errors import ParameterError
from symrmt.hermite import parse_f
from symrmt.models.attention.params import to_fraction
from symrmt.parsing import LIMITS, ParseLimitError, parse_expression, parse_number, run_limited
from symrmt.parsing.psd import project_psd

_T = {"t": sp.Symbol("t")}


_FN = {"exp": sp.exp, "sqrt": sp.sqrt}


PROBES = [
    "__import__('os').system('echo hi')", "t.__class__.__mro__", "().__class__", "t.func", "(lambda: 1)()",
    "[x for x in (1, 2)]", "{1: 2}", "{1, 2}", "t[0]", "t if t else 1", "(t := 1)", "f'{t}'", "*t", "b'x'",
    "exp.__globals__", "open('/etc/passwd')", "getattr(t, 'func')", "eval('1')", "exec('1')", "__builtins__",
    "globals()", "breakpoint()", "t @ t @ exp", "not t", "~t", "t % 2", "t // 2", "t << 1", "exp(t, x=1)",
    "exp(*t)", "1j", "0x10", "'\\x41'", "...", "None", "t;1", "t\n1", "import os", "\u0435xp(t)",
]


@pytest.mark.parametrize("text", ["t**10**10", "10**10**10", "2**2**2**2**2", "(10**999*10**999)**999"])
def test_towers_refused_fast(text):
    with pytest.raises(ParseLimitError, match="limit"):
        parse_f(text)


@pytest.mark.parametrize("text", ["1e999999999", "1e-999999999", "9" * 2000])
def test_huge_literals_refused_fast(text):
    with pytest.raises(ParseLimitError, match="limit"):
        to_fraction(text, "c")


def test_time_limit_helper():
    with pytest.raises(Exception, match="time limit of 0.2 s"):
        run_limited(time.sleep, (5,), 0.2, what="nap")
    with pytest.raises(ParameterError, match="finite"):
        run_limited(time.sleep, (0,), float("inf"))


def test_time_limit_kills_an_isolated_child():
    """``isolate=True`` in a process with one thread forks a child and kills it on time.

    Run in a fresh interpreter: inside the test session other threads are alive (the per-test
    timeout's timer, the shared Dask cluster), so there the call takes the ``SIGALRM`` route."""
    import subprocess

    code = ("import time\nfrom symrmt.parsing import run_limited, TimeLimitExceeded\n"
            "try:\n    run_limited(time.sleep, (30,), 0.5, what='nap', isolate=True)\n"
            "except TimeLimitExceeded as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "nap exceeded its time limit of 0.5 s (killed)"  # (a 30 s nap would print nothing)


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _finalizers_for(seconds):
    """For ``seconds``: spin 2 ms, then drop garbage whose finalizer spins 2 ms. About half of the
    time is spent in a finalizer, where Python cannot propagate an exception. Returns how long it ran."""
    import weakref

    class Box:
        pass

    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        _spin(0.002)
        box = Box()
        weakref.finalize(box, _spin, 0.002)
        del box
    return time.perf_counter() - start


def test_time_limit_alarm_in_a_finalizer_still_stops_the_computation():
    """An alarm that lands in a finalizer is swallowed by Python; the limit raises it again in the
    computation, which stops with the limit's error, and nothing is reported as an unraisable exception (under the
    suite's ``-W error`` one would fail this test)."""
    if not hasattr(__import__("signal"), "setitimer"):
        pytest.skip("no SIGALRM timer on this platform")
    import threading

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("the SIGALRM route runs on the main thread only")
    for _ in range(8):  # each alarm lands in a finalizer with probability about 1/2
        # a lost alarm lets the call run its full 5 s and return: "DID NOT RAISE"
        with pytest.raises(Exception, match="time limit of 0.1 s"):
            run_limited(_finalizers_for, (5.0,), 0.1, what="the finalizers")


@pytest.mark.parametrize("text, value", [("sqrt(2)", math.sqrt(2)), ("3/4", 0.75), ("pi/4", math.pi / 4),
                                         (" -2.5e-3 ", -0.0025), ("2^-3", 0.125)])
def test_numbers_through_the_parser(text, value):
    assert float(to_fraction(text, "x")) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("text", PROBES)
def test_generic_probes_refused(text):
    with pytest.raises(ParameterError):
        parse_expression(text, _T, _FN, what="probe")


def test_random_junk_never_escapes():
    rng = random.Random(0)
    alphabet = string.printable + "^_√π"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        try:
            parse_expression(text, _T, _FN, what="junk")
        except ParameterError:
            pass


def test_limits_are_stated():
    for key in ("chars", "literal_digits", "literal_exponent", "exponent", "digits", "hermite_k", "rank",
                "gammas", "time"):
        assert key in LIMITS
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "input.md"), encoding="utf-8") as fh:
        doc = fh.read()
    for key, value in LIMITS.items():
        assert f"`{key}`" in doc and f"{value:g}" in doc, key


def test_parse_number_refuses_non_numbers():
    for text in ("t", "sqrt(-1)", "1/0", "log(0)", "oo"):
        with pytest.raises(ParameterError):
            parse_number(text, what="x")


def test_project_psd_keeps_exact_psd():
    g, v = project_psd([[1, 0], [0, 1]])
    assert v is None and g == [[1, 0], [0, 1]]
