"""Hostile and careless inputs to the surfaces added after the first hardening: the trace engine
(``Model`` and ``symrmt trace``), sweeps and crossings.  Each must refuse in one line, fast."""

from decimal import Decimal

import numpy as np
import pytest

from symrmt.cli.app import main
from symrmt.engine import Model
from symrmt.errors import BranchError
from symrmt.errors import ParameterError
from symrmt.parsing import ParseLimitError

E = "trace(inv(Z.T*Z/n + gamma*I(n)))"
AT = {"c": "1/2", "gamma": "1/5"}


def model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    return m


@pytest.mark.parametrize("expr", ["trace(inv(Z.T*Z/n + gamma**10**10*I(n)))",
                                  "trace(inv(Z.T*Z/n + 10**10**10*I(n)))",
                                  "trace(inv(Z.T*Z/n + gamma**(2**600)*I(n)))"])
def test_exponent_towers_on_engine_constants_refused_by_the_exponent_limit(expr):
    # the engine wraps numbers in its own constant nodes; the power limits must still see them
    with pytest.raises(ParseLimitError, match="exponent tower"):
        model().parse(expr)


def test_constant_beyond_float64_refused_before_the_pencil_self_test():
    with pytest.raises(ParameterError, match="float64 range"):
        model().limit("trace(inv(Z.T*Z/n + 99**999*I(n)))", at={"c": "1/2"})


def test_complex_limit_is_refused_not_printed():
    with pytest.raises(BranchError, match="not real"):
        model().limit("sqrt(-trace(Z.T*Z/n))", at={"c": "1/2"})


def test_gamma_zero_infinite_bound_is_vacuous():
    # tr (Z^T Z/n)^{-1} with p = 2n tends to 1/(c - 1) = 1 (Marchenko-Pastur); the upper bound
    # 1/gamma is infinite at gamma = 0 and must not crash the branch check
    assert abs(float(model().limit(E, at={"c": 2, "gamma": 0}).value) - 1.0) < 1e-13


@pytest.mark.parametrize("at, match", [([1, 2], "dict"), ({"c": "1/2", "gamma": 1, "gama": 1}, "unknown parameter gama"),
                                       ({"c": float("nan"), "gamma": 1}, "finite"), ({"c": True, "gamma": 1}, "bool")])
def test_bad_at_values(at, match):
    with pytest.raises(ParameterError, match=match):
        model().limit(E, at=at)


def test_numpy_and_decimal_values_and_digits_are_read_exactly():
    m = model()
    ref = m.limit(E, at={"c": Decimal("0.5"), "gamma": np.float64(0.2)}, digits=np.int64(20))
    assert str(ref) == str(m.limit(E, at=AT, digits=20))
    m.diag("D", "n", [Decimal("0.5"), np.int64(1)])


@pytest.mark.parametrize("values, match", [(range(10**6), r"at most \d+ atoms"), ([float("nan"), 1], "finite"),
                                           ([10**10000, 1], "digits")])
def test_diag_values(values, match):
    with pytest.raises(ParameterError, match=match):
        model().diag("D", "n", values)


def test_trace_simulation_memory_is_refused_before_the_limit(capsys):
    rc = main(["trace", E, "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2, gamma=1/5",
               "--simulate", "--n", "100000000"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "GiB" in err and "\n" not in err


@pytest.mark.parametrize("fast", [False, True])
def test_sweep_grid_points_capped(fast):
    # each path its cap (issue 23): the certified path 10^4 points, the float64 path 10^6
    from symrmt import sweep

    k, name = (1001, "fast_points") if fast else (200, "points")
    with pytest.raises(ParseLimitError, match=f"LIMITS\\['{name}'\\]"):
        sweep("tanh", center=True, fast=fast,
              grid={"c": np.linspace(0.1, 0.9, k), "gamma": np.linspace(0.1, 1, 1000 if fast else 200)})


def test_crossings_scan_capped():
    from symrmt import crossings

    with pytest.raises(ParseLimitError, match="scan points"):
        crossings("tanh", center=True, over="gamma", between=(0.1, 1), c=0.5, scan=10**8)


def test_store_trust_rule_and_parameterized_queries(tmp_path):
    import os

    from symrmt.simulation.store import StoreError, TrialStore

    path = tmp_path / "a.sqlite"
    with TrialStore(path) as st:
        st.add(st.point("demo", "1", {"n": 8, "seed": 0}), 0, [1.0], 0.1)
    assert os.stat(path).st_mode & 0o077 == 0
    (tmp_path / "link.sqlite").symlink_to(path)
    with pytest.raises(StoreError, match="symbolic link"):
        TrialStore(tmp_path / "link.sqlite")
    os.chmod(path, 0o666)
    with pytest.raises(StoreError, match="writable by group or others"):
        TrialStore(path)
    os.chmod(path, 0o600)
    if hasattr(os, "getuid") and os.getuid() == 0:  # only root can give a file away
        os.chown(path, 12345, -1)
        with pytest.raises(StoreError, match="owned by uid 12345"):
            TrialStore(path)
        os.chown(path, 0, -1)
    with TrialStore(path) as st:
        evil = "x' OR '1'='1"
        assert st.point(evil, "1); DROP TABLE trials; --", {"n": evil}, create=False) is None
        assert [r["trials"] for r in st.summary()] == [1]


def test_public_api_reads_numpy_digits_and_refuses_huge_trials():
    import symrmt

    r = symrmt.limit("tanh", c=np.float32(0.5), gamma=np.float64(1), center=True, digits=np.int64(10))
    assert r.digits == 10
    with pytest.raises(ParseLimitError, match="LIMITS\\['digits'\\]"):
        symrmt.limit("tanh", c=0.5, gamma=1, center=True, digits=10**6)
    with pytest.raises(ParameterError, match="GiB.*lower trials"):
        symrmt.simulate(np.tanh, n=8, c=0.5, gamma=[1.0], trials=10**12)
    with pytest.raises(ParseLimitError, match="digits"):
        symrmt.limit("tanh", c=10**100000, gamma=1, center=True)


def test_declared_but_unused_parameter_is_not_an_unknown_key():
    # c is declared by the dimension p even when the expression does not use p
    assert float(model().limit("trace(inv(gamma*I(n)))", at={"c": "1/2", "gamma": 2}).value) == 0.5


def test_engine_fixed_point_size_is_capped():
    """A matrix power whose pencil has 512 unknowns is refused before compiling, naming the limit."""
    from symrmt.engine.base import ModelError

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    with pytest.raises(ModelError, match="512 unknowns, above the limit of 100"):
        m.limit(m.parse("trace(inv((Z.T*Z/n)**16 + I(n)))"), at={"c": "1/2"}, digits=15)
