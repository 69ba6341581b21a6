"""The finite-n prediction's digits: the extended-precision value of the discretized system against the same
system solved in mpmath at 30 digits (:mod:`symrmt.models.attention.finite_n_reference`: its own Gauss-Hermite
nodes, moments by other rules, Newton with mpmath residuals, ``E_A`` by a central difference in ``gamma``), and
the refusals of ``--n`` / ``--digits`` with their exit codes.

The expected values are the mpmath solves, never the fast path; the claim checked is 15 significant digits
(relative error below ``1e-15``); the float64 path alone gives about ``1e-13``, so the test can fail.
"""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction as Fr

import mpmath
import pytest

import symrmt
from symrmt.errors import PrecisionError
from symrmt.hermite.shifted import erf_longdouble, shifted_moments
from symrmt.models.attention import finite_n as FN
from symrmt.models.attention.finite_n_reference import reference_point

pytestmark = pytest.mark.slow

ALIGNED = dict(snr=4, wk2=4, wq2=4, wkwq=4, muwk=4, muwq=4)


@pytest.mark.parametrize("f, c, gamma, n, m2, w2, q", [
    ("tanh", Fr(1, 2), Fr(1), 1024, 4, 4, 3),
    ("relu", Fr(2), Fr(1, 1000), 256, 8, 8, 3),
    ("erf", Fr(2), Fr(1, 10), 512, 2, 8, 3),
    ("tanh", Fr(1, 2), Fr(1, 1000), 512, 8, 4, 4),
])
def test_fifteen_digits_against_the_mpmath_solve(f, c, gamma, n, m2, w2, q):
    ref = reference_point(f, c, Fr(m2), Fr(w2), gamma, n, q, dps=30)
    fast = FN.longdouble_to_mpf(FN.finite_n_point(n, c, Fr(m2), Fr(w2), gamma, q, f_name=f))
    with mpmath.workdps(40):
        assert abs(fast - ref) <= mpmath.mpf("1e-15") * abs(ref), (fast, ref)
        assert mpmath.nstr(fast, 15) == mpmath.nstr(ref, 15)


def test_shifted_moments_against_mpmath_integrals():
    # F, F', E f^2 of tanh, erf and the centered ReLU at shifts, against mpmath.quad at 30 digits
    import numpy as np

    ds = [0.0, 0.3, -1.7, 4.2, -6.5]
    with mpmath.workdps(30):
        a0 = 1 / mpmath.sqrt(2 * mpmath.pi)
        fs = {"tanh": (mpmath.tanh, lambda t: 1 / mpmath.cosh(t) ** 2),
              "erf": (mpmath.erf, lambda t: 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-t * t)),
              "relu": (lambda t: max(t, 0) - a0, lambda t: 1 if t > 0 else 0)}
        for name, (f, f1) in fs.items():
            got = shifted_moments(name, np.array(ds, dtype=np.longdouble))
            for i, d in enumerate(ds):
                pts = [-mpmath.inf] + sorted({mpmath.mpf(0), -mpmath.mpf(d)}) + [mpmath.inf]
                for j, h in enumerate((f, f1, lambda t, f=f: f(t) ** 2)):
                    ref = mpmath.quad(lambda x, h=h, d=d: h(x + d) * a0 * mpmath.exp(-x * x / 2), pts)
                    assert abs(FN.longdouble_to_mpf(got[j][i]) - ref) < 1e-17, (name, d, j)
        xs = np.array([-7.0, -2.5, 0.125, 1.0, 3.3, 6.0], dtype=np.longdouble)
        for x, v in zip(xs, erf_longdouble(xs)):
            assert abs(FN.longdouble_to_mpf(v) - mpmath.erf(float(x))) < 1e-18


def test_digits_above_what_is_delivered_are_refused():
    with pytest.raises(PrecisionError, match="15 significant digits"):
        symrmt.limit("tanh", "1/2", [1], n=512, digits=16, **ALIGNED)


def _cli(*extra):
    base = [sys.executable, "-m", "symrmt", "limit", "--c", "1/2", "--gamma", "1",
            "--snr", "4", "--wk2", "4", "--wq2", "4", "--wkwq", "4", "--muwk", "4", "--muwq", "4"]
    return subprocess.run(base + list(extra), capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("extra, code, text", [
    (["--f", "tanh", "--n", "512", "--digits", "20"], 3, "15 significant digits"),
    (["--f", "tanh", "--n", "255"], 2, "minimum n = 256"),
    (["--f", "sin(t)", "--n", "512"], 2, "covers f in"),
    (["--f", "tanh", "--n", "512", "--diagonal", "keep"], 2, "diagonal='zero'"),
    (["--f", "tanh", "--n", "512", "--error", "test"], 3, "training error E_A only"),
])
def test_cli_refusals_and_exit_codes(extra, code, text):
    out = _cli(*extra)
    assert out.returncode == code, (out.returncode, out.stderr)
    assert text in out.stderr and "Traceback" not in out.stderr


def test_cli_prints_the_digits_asked():
    import json

    out = _cli("--f", "tanh", "--n", "1024", "--digits", "15", "--json")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["params"]["digits"] == 15 and res["params"]["types"] == 2 * FN.TYPES
    assert res["params"]["discretization_digits"] >= FN.MIN_DIGITS
    # the JSON value is the Python value (the same 15 digits)
    py = symrmt.limit("tanh", "1/2", [1], n=1024, digits=15, **ALIGNED).attention_mp[0]
    assert mpmath.nstr(py, 15) == mpmath.nstr(mpmath.mpf(res["attention"][0]), 15)
