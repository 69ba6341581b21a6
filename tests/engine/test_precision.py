"""The trace engine delivers the digits asked, against closed forms independent of the engine:

* Marchenko-Pastur: ``tau = tr(Z^T Z/n + gamma I)^{-1}/n`` with ``Z`` p x n, ``p = c n``, is the root
  in ``(0, 1/gamma)`` of ``gamma tau^2 + (gamma + c - 1) tau - 1 = 0``;
* semicircle: ``tr(G/sqrt(n) + gamma I)^{-1}/n = (gamma - sqrt(gamma^2 - 4))/2`` for ``gamma > 2``.
"""

import json

import mpmath
import pytest

from symrmt.cli.app import main
from symrmt.engine import Model

MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"


SC = "trace(inv(G/sqrt(n) + gamma*I(n)))"


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _trace(capsys, expr, matrices, at, dims=("p=c*n",), extra=()):
    argv = ["trace", expr, "--at", at, *extra]
    for m in matrices:
        argv += ["--matrix", m]
    for d in dims:
        argv += ["--dim", d]
    return _run(capsys, argv)


def mp_closed(c, g, dps):
    with mpmath.workdps(dps + 20):
        c, g = mpmath.mpf(c), mpmath.mpf(g)
        return (-(g + c - 1) + mpmath.sqrt((g + c - 1) ** 2 + 4 * g)) / (2 * g)


def model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.goe("G", "n")
    return m


@pytest.mark.parametrize("digits", [100, 300, 1000])
def test_marchenko_pastur_to_the_digits_asked(digits):
    r = model().limit(MP, at={"c": "1/2", "gamma": "1/5"}, digits=digits)
    ref = mp_closed("0.5", "0.2", digits)
    with mpmath.workdps(digits + 20):
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** (-digits)
    assert mpmath.nstr(r.value, digits) == mpmath.nstr(ref, digits)


@pytest.mark.parametrize("digits", [100, 300, 1000])
def test_semicircle_to_the_digits_asked(digits):
    r = model().limit(SC, at={"gamma": 3}, digits=digits)
    with mpmath.workdps(digits + 20):
        ref = (3 - mpmath.sqrt(5)) / 2
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** (-digits)
    assert mpmath.nstr(r.value, digits) == mpmath.nstr(ref, digits)


def test_a_derivative_to_300_digits():
    # E = -gamma^2 d tau/d gamma; implicit differentiation of the quadratic: d tau/d gamma =
    # -(tau^2 + tau)/(2 gamma tau + gamma + c - 1)
    digits = 300
    r = model().limit("-gamma**2*diff(" + MP + ", gamma)", at={"c": "1/2", "gamma": "1/5"}, digits=digits)
    with mpmath.workdps(digits + 20):
        c, g = mpmath.mpf(1) / 2, mpmath.mpf(1) / 5
        t = mp_closed(c, g, digits)
        ref = g ** 2 * (t ** 2 + t) / (2 * g * t + g + c - 1)
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** (-digits)


def test_cli_250_digits_agree_with_the_closed_form(capsys):
    code, out, err = _trace(capsys, MP, ["Z=gaussian(p,n)"], "c=1/2, gamma=1/5", extra=["--digits", "250", "--json"])
    assert code == 0, err
    got = json.loads(out)["value"]
    assert got == mpmath.nstr(mp_closed("0.5", "0.2", 250), 250)


def test_two_solves_that_stall_alike_cannot_certify(monkeypatch):
    """The old refinement measured its step in float64, so both solves stopped at the same ~1e-190
    iterate and agreed with each other; the residual check must refuse that instead of printing it."""
    import math

    import symrmt.engine.solve.newton as ts
    from symrmt.core.linalg import lu_solve
    from symrmt.errors import PrecisionError

    def float_step_refine(apply_residual, lu, x, tol, maxsteps=60):
        prev = None
        for _ in range(maxsteps):
            dx = lu_solve(lu, apply_residual(x))
            x = [a - mpmath.mpf(b) for a, b in zip(x, dx)]
            step = mpmath.mpf(math.sqrt(sum(d * d for d in dx))) / (1 + mpmath.sqrt(sum(a * a for a in x)))
            if step <= tol:
                return x, step
            if prev is not None and step > prev * mpmath.mpf("1e-3"):
                return None
            prev = step
        return None

    monkeypatch.setattr(ts, "_refine", float_step_refine)  # the internal seam: a refinement that stalls like that
    with pytest.raises(PrecisionError, match="residual"):
        model().limit(MP, at={"c": "1/2", "gamma": "1/5"}, digits=250)
