"""The reduced fixed point: the unknowns it drops are exact functions of those it keeps.

Each test solves the reduced system, expands the solution through ``entries`` and evaluates the
residual of the full system (written without the reduction) at the expanded values: it is at the working
precision's noise at random parameter points, or the reduction is wrong.  A reduction fed false candidates
must refuse them (its symbolic proof is what makes it exact), and the named models keep their counts.
"""

from __future__ import annotations

import random

import mpmath
import pytest
import sympy as sp

from symrmt.engine import Model
from symrmt.engine.reduce import merge
from symrmt.engine.reduce.fixed_point import S_STRENGTH, BlockSystem
from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.engine.solve.certify import compiled_system
from symrmt.engine.solve.continuation import ContinuedSolver
from symrmt.models.attention.engine_model import attention_model

DPS = 40


def _full_residual(system, full, values, h):
    """``max |R_full|`` at ``s = 1``, ``eps = 0`` at the reduced solution ``h`` expanded through the system's map."""
    at = {p: mpmath.mpf(sp.Rational(values[p.name]).p) / sp.Rational(values[p.name]).q for p in full.params}
    expanded = dict(zip(system.all_unknowns, system.expand(h, mpmath.mpf(1), {p.name: v for p, v in at.items()})))
    # entries the bulk of a quadratic form pruned as structural zeros are 0 (checked here with the rest)
    hv = [expanded.get(ij, mpmath.mpf(0)) for ij in full.unknowns]
    f = sp.lambdify([list(full.h), list(at), [S_STRENGTH, EPS_SHIFT]], full.residual, "mpmath")
    return max(abs(r) for r in f(hv, list(at.values()), [1, 0]))


def _check(plan_system, pencil, values):
    full = BlockSystem(pencil, reduce=False)
    solver = ContinuedSolver(compiled_system(plan_system), values)
    with mpmath.workdps(DPS):
        h, _d, _step, _res = solver.solve(DPS)
        return _full_residual(plan_system, full, values, h)


@pytest.mark.parametrize("rank, counts", [(0, (47, 19)), (1, (55, 19))])
def test_the_papers_model_bulk_is_exact_at_random_points(rank, counts):
    m, ex = attention_model("tanh", rank)
    plan = m.plan(ex["E_A"])
    f = plan.forms[0]
    assert (len(f.system.full_unknowns), len(f.system.unknowns)) == counts
    rng = random.Random(rank)
    for _ in range(2):
        at = {"c": f"{rng.randint(1, 30)}/10", "gamma": f"{rng.randint(1, 30)}/10"}
        assert _check(f.system, f.bulk, at) < mpmath.mpf(10) ** (5 - DPS)


MP_MP = "trace(inv(Z1.T*Z2*Z2.T*Z1/n**2 + gamma*I(n)))"


def _mp_mp():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z1", "p", "n")
    m.gaussian("Z2", "p", "n")
    return m.plan(MP_MP).traces[0]


def test_mp_times_mp_is_exact_at_random_points():
    t = _mp_mp()
    # two entries (pairing the blocks of Z1 with those of Z2) are zero, two are explicit in the others
    assert (len(t.system.full_unknowns), len(t.system.unknowns)) == (8, 4)
    assert t.system.explicit
    rng = random.Random(5)
    for _ in range(3):
        at = {"c": f"{rng.randint(1, 30)}/10", "gamma": f"{rng.randint(1, 30)}/10"}
        assert _check(t.system, t.pencil, at) < mpmath.mpf(10) ** (5 - DPS)


def test_false_candidates_are_refused(monkeypatch):
    """Numbers that make every unknown equal propose relations that are false (the constant 1, equalities); the
    symbolic proof must refuse them, and what it keeps must still solve the full system."""
    t = _mp_mp()
    k = len(t.system.full_unknowns)
    fake = [[1.0] * k for _ in range(3)]
    monkeypatch.setattr(merge, "_points", lambda system, strength: fake)  # the internal seam: lying sample points
    lied = BlockSystem(t.pencil)
    proposed = merge._candidates(fake, set(), set())  # the internal seam: what the lying points propose (a control)
    refused = [u for u, (c0, c1, r) in proposed.items()
               if sp.sympify(lied.entries[lied.full_unknowns[u]]) != (
                   sp.Rational(c0.numerator, c0.denominator)
                   + (c1 * lied.entries[lied.full_unknowns[r]] if r is not None else 0))]
    assert refused, "the fake numbers proposed no false relation: the test would not test the proof"
    rng = random.Random(7)
    for _ in range(2):
        at = {"c": f"{rng.randint(1, 30)}/10", "gamma": f"{rng.randint(1, 30)}/10"}
        assert _check(lied, t.pencil, at) < mpmath.mpf(10) ** (5 - DPS)
