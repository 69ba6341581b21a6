"""Reproducers of issue 25 (hostile round): wrong numbers, caps that did not hold in time, hangs, tracebacks.

Every reference value here is independent of the code under test: closed forms evaluated by mpmath
(``E[exp(a xi) He_k(xi)] = a^k exp(a^2/2)``), the 30-digit mpmath solver against the float64 path,
or SymPy identities.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import mpmath
import numpy as np
import pytest
import sympy as sp

from symrmt.numeric import fast
from symrmt.numeric.quadrature import QuadratureError, quad_pieces
from symrmt.numeric.theory import ridge_limit
from symrmt.symbolic import attention as S
from symrmt.symbolic.gaussian import T
from symrmt.symbolic.nonlinearity import Nonlinearity


def cli(*args, timeout=60):
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "symrmt", *args], capture_output=True, text=True, timeout=timeout)
    return p, time.perf_counter() - t


def _rel(x, ref):
    with mpmath.workdps(40):
        return float(abs(mpmath.mpf(x) - ref) / abs(ref))


# ---------------------------------------------------------------- 25.1 steep exponentials


@pytest.mark.parametrize("a", [450, 700])
def test_steep_exponential_hermite_data_is_the_closed_form(a):
    f = Nonlinearity(f"exp({a}*t)", center=True)
    with mpmath.workdps(40):
        for k in (1, 2, 3):  # E[exp(a xi) He_k(xi)] = a^k e^(a^2/2); the centering constant has He_0 only
            assert _rel(f.a_mpf(k, 30), mpmath.mpf(a) ** k * mpmath.exp(mpmath.mpf(a) ** 2 / 2)) < 1e-28
        # nu = E[(e^(a xi) - e^(a^2/2))^2] = e^(2 a^2) - e^(a^2)
        assert _rel(f.nu_mpf(30), mpmath.exp(2 * mpmath.mpf(a) ** 2) - mpmath.exp(mpmath.mpf(a) ** 2)) < 1e-28


def test_steep_quadrature_is_certified_or_refused():
    # E[exp(450 xi)] has all its mass near xi = 450: the certified quadrature returns e^101250 or refuses
    pieces = ((-sp.oo, sp.oo, sp.exp(450 * T)),)
    try:
        v = quad_pieces(pieces, 1, 20)
    except QuadratureError as exc:
        assert "not certified" in str(exc) or "did not converge" in str(exc)
    else:
        with mpmath.workdps(40):
            assert _rel(v, mpmath.exp(mpmath.mpf(101250))) < 1e-18


# ---------------------------------------------------------------- 25.2 float64 path at large gamma


def test_stable_root_is_the_root():
    b = S.gamma + S.c - 1
    D = b**2 + 4 * S.gamma
    assert sp.simplify(2 / (b + sp.sqrt(D)) - S.mp_root()) == 0
    assert sp.simplify((sp.sqrt(D) - b) / (2 * S.gamma) - S.mp_root()) == 0


@pytest.mark.parametrize("gammas,cs", [((1e9, 1e10, 3e10), (2, 1000)), ((1e11, 1e12, 2e12), (100, 10000))])
def test_fast_ridge_within_stated_accuracy_at_large_gamma(gammas, cs):
    G, C = np.meshgrid(gammas, cs)
    r = fast.solve_grid("tanh", {"c": C.ravel(), "gamma": G.ravel(), "snr": np.ones(G.size)})
    for g, c, v in zip(G.ravel(), C.ravel(), r.ridge):
        ref = ridge_limit(float(c), [float(g)], 1, 30)[0]
        assert _rel(v, ref) <= 1e-10 * 1e-2, (g, c, v, ref)  # stated 1e-10; the stable form gives ~1e-16


def test_fast_sweep_cli_ridge_matches_30_digits_at_large_gamma():
    # the reproducer (E_RR 0.9999999996 against 0.9999999994 at c = 2, gamma = 1e10), on the CLI
    args = ["sweep", "--f", "tanh", "--grid", "gamma=1e10,1e12", "--grid", "c=2,10000", "--snr", "1", "--json"]
    p, _ = cli(*args, "--fast")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    cols = doc["columns"]
    assert len(doc["rows"]) == 4
    for row in doc["rows"]:
        c, g = row[cols.index("c")], row[cols.index("gamma")]
        ref = ridge_limit(c, [g], 1, 30)[0]
        assert abs(mpmath.mpf(row[cols.index("ridge")]) - ref) <= 1e-10 * ref, (row, ref)
