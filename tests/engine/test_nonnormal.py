"""Non-normal matrices in the trace engine: never a wrong value inside the spectrum.

References, none from the engine:

- Ginibre ``Z/sqrt(n)`` (square): its Brown measure is uniform on the unit disk, so
  ``tau((lambda - Z/sqrt(n))^{-1}) -> conj(lambda)`` for ``|lambda| <= 1`` and ``1/lambda`` outside.
  Hence ``tau((gamma + Z/sqrt(n))^{-1}) = gamma`` (``|gamma| <= 1``), ``1/gamma`` outside, and
  ``tau((I - g Z/sqrt(n))^{-1}) = 1/g^2`` (``|g| >= 1``), ``1`` for ``|g| < 1``.
- The product of two independent Ginibres ``Z Y/n``: its Brown measure is radial with
  ``mu(|w| <= r) = r`` on the unit disk (Burda, Janik and Waclaw 2010), so for real ``gamma``
  ``tau((gamma + ZY/n)^{-1}) = mu(|w| <= gamma)/gamma = 1`` for ``0 < gamma < 1`` and ``1/gamma`` outside.
- Powers of one Ginibre ``X = Z/sqrt(n)``: the eigenvalues of ``X^k + gamma`` are ``w^k + gamma`` over those
  of ``X``, so ``tau((X^k + gamma)^{-1})`` is the mean of ``1/(w^k + gamma)`` over the uniform disk.  By
  partial fractions over the roots ``a_j`` of ``w^k = -gamma`` and the Ginibre transform above (the mean of
  ``1/(w - a)`` is ``-conj(a)`` inside, ``-1/a`` outside), for real ``gamma > 0`` it is ``gamma^(-1/k)``
  when ``gamma < 1`` and ``1/gamma`` when ``gamma > 1``: ``1`` for ``Z*Z/n`` inside; the same sum for
  ``w^2 + w + 1/2`` (roots ``(-1 +- i)/2``, both inside) is ``1``.  (At ``eps = 0`` their Hermitized
  fixed points form a family beyond the scaling gauge; the trace is constant along it.)
- Non-symmetric matrices with a real spectrum keep their values: ``G D/sqrt(n)`` is similar to the
  symmetric ``E G E/sqrt(n)`` with ``E = D^{1/2}``, and ``(Z^T Z/n)(Y^T Y/n)`` has the spectrum of the
  symmetric ``Z (Y^T Y/n) Z^T/n``; the engine solves those symmetric forms on its usual path.
- A Monte-Carlo of the Ginibre resolvent inside the disk through ``log|det|`` (n = 256, 12 trials, seed
  fixed): ``|mc - 1/2| <= 5 se + 10 (1 + 1/2)/n``, the rule ``symrmt trace --simulate`` states; the old
  wrong value 2 is excluded by the same rule.
"""

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from symrmt.engine import Model
from symrmt.errors import SolverError
from symrmt.engine.solve.hermitized import NonNormalError

pytestmark = pytest.mark.slow  # seconds a test: outside the fast tier (pytest -m "not slow")

F = Fraction
GINIBRE = "trace(inv(Z/sqrt(n) + gamma*I(n)))"


def ginibre():
    m = Model()
    m.gaussian("Z", "n", "n")
    return m


def _exact(r, value, digits):
    with mpmath.workdps(digits + 10):
        target = mpmath.mpf(value.numerator) / value.denominator
        assert abs(r.value - target) <= abs(target) * mpmath.mpf(10) ** (1 - digits), (r.value, value)


@pytest.mark.parametrize("gamma, truth", [(F(1, 2), F(1, 2)), (F(1, 10), F(1, 10)), (F(-3, 4), F(-3, 4)),
                                          (F(2), F(1, 2)), (F(-5, 4), F(-4, 5))])
def test_ginibre_resolvent_inside_and_outside(gamma, truth):
    _exact(ginibre().limit(GINIBRE, at={"gamma": gamma}, digits=25), truth, 25)


@pytest.mark.parametrize("g, truth", [(F(2), F(1, 4)), (F(3), F(1, 9)), (F(1, 2), F(1))])
def test_ginibre_one_minus_gz(g, truth):
    _exact(ginibre().limit("trace(inv(I(n) - g*Z/sqrt(n)))", at={"g": g}, digits=20), truth, 20)


def test_derivative_inside_the_disk():
    # d/dgamma tau((gamma + Z)^{-1}) = d/dgamma gamma = 1 inside (the continuation would give -1/gamma^2 = -9)
    _exact(ginibre().limit(f"diff({GINIBRE}, gamma)", at={"gamma": F(1, 3)}, digits=20), F(1), 20)


@pytest.mark.parametrize("gamma, truth", [(F(1, 2), F(1)), (F(3, 4), F(1)), (F(2), F(1, 2))])
def test_product_of_two_ginibres(gamma, truth):
    m = Model()
    m.gaussian("Z", "n", "n")
    m.gaussian("Y", "n", "n")
    _exact(m.limit("trace(inv(Z*Y/n + gamma*I(n)))", at={"gamma": gamma}, digits=20), truth, 20)


@pytest.mark.parametrize("expr, gamma, truth", [
    ("trace(inv(Z*Z/n + gamma*I(n)))", F(1, 2), F(1)), ("trace(inv(Z*Z/n + gamma*I(n)))", F(1, 5), F(1)),
    ("trace(inv(Z*Z/n + gamma*I(n)))", F(2), F(1, 2)),
    ("diff(trace(inv(Z*Z/n + gamma*I(n))), gamma)", F(1, 2), F(0)),
    ("trace(inv(Z*Z/n + Z/sqrt(n) + gamma*I(n)))", F(1, 2), F(1)),
])
def test_powers_of_one_ginibre(expr, gamma, truth):
    r = ginibre().limit(expr, at={"gamma": gamma}, digits=20)
    if truth == 0:  # d/dgamma 1 = 0 inside: a limit 0, certified absolutely
        assert r.certificate == "absolute" and abs(r.value) <= mpmath.mpf(10) ** -20
    else:
        _exact(r, truth, 20)
    assert r.hermitized == ([0] if gamma < 1 else [])


def test_square_of_a_ginibre_on_the_boundary_is_refused():
    with pytest.raises(SolverError):
        ginibre().limit("trace(inv(Z*Z/n + gamma*I(n)))", at={"gamma": 1})


def test_boundary_of_the_disk_is_refused():
    with pytest.raises(SolverError, match="boundary"):
        ginibre().limit(GINIBRE, at={"gamma": 1})


def test_other_traces_of_a_non_invertible_non_normal_inverse_are_refused():
    expr = "trace(inv(Z/sqrt(n) + gamma*I(n))*inv(Z.T/sqrt(n) + gamma*I(n)))"
    with pytest.raises(NonNormalError, match="Brown measure"):
        ginibre().limit(expr, at={"gamma": F(1, 2)})
    assert issubclass(NonNormalError, ArithmeticError)  # exit 3 on the command line
    # outside the disk it is a plain value: tau(((gamma + Z)(gamma + Z)^T)^{-1}) = 1/(gamma^2 - 1)
    _exact(ginibre().limit(expr, at={"gamma": F(2)}, digits=20), F(1, 3), 20)


def test_real_spectrum_non_symmetric_keeps_its_value():
    m, m2 = Model(), Model()
    m.goe("G", "n")
    m2.goe("G", "n")
    m.diag("D", "n", [1, 2], ["1/2", "1/2"])
    m2.diag("E", "n", [1, "sqrt(2)"], ["1/2", "1/2"])
    a = m.limit("trace(inv(G*D/sqrt(n) + gamma*I(n)))", at={"gamma": 5}, digits=20)
    b = m2.limit("trace(inv(E*G*E/sqrt(n) + gamma*I(n)))", at={"gamma": 5}, digits=20)
    assert mpmath.nstr(a.value, 20) == mpmath.nstr(b.value, 20)


def test_wishart_product_keeps_its_value():
    m = Model()
    m.gaussian("Z", "n", "n")
    m.gaussian("Y", "n", "n")
    a = m.limit("trace(inv(Z.T*Z*Y.T*Y/n**2 + gamma*I(n)))", at={"gamma": F(1, 2)}, digits=20)
    b = m.limit("trace(inv(Z*Y.T*Y*Z.T/n**2 + gamma*I(n)))", at={"gamma": F(1, 2)}, digits=20)
    assert mpmath.nstr(a.value, 20) == mpmath.nstr(b.value, 20)


def test_ginibre_monte_carlo_inside():
    # tau(inv(gamma + Z)) has heavy tails inside the disk (the smallest singular value is ~1/n), so the
    # Monte-Carlo reads it as d/dgamma of (1/n) log|det(gamma + Z/sqrt(n))|, a central difference with step h:
    # the limit (gamma^2 - 1)/2 is quadratic inside the disk, so the difference has no O(h^2) bias
    rng = np.random.default_rng(20)
    n, trials, gamma, h = 256, 12, 0.5, 0.1
    vals = []
    for _ in range(trials):
        z = rng.standard_normal((n, n)) / np.sqrt(n)
        hi, lo = np.linalg.slogdet(z + (gamma + h) * np.eye(n))[1], np.linalg.slogdet(z + (gamma - h) * np.eye(n))[1]
        vals.append((hi - lo) / (2 * h * n))
    mc, se = np.mean(vals), np.std(vals, ddof=1) / np.sqrt(trials)
    value = float(ginibre().limit(GINIBRE, at={"gamma": F(1, 2)}).value)
    assert abs(mc - value) <= 5 * se + 10 * (1 + value) / n
    assert abs(mc - 2.0) > 5 * se + 10 * 3 / n  # the analytic continuation's value is excluded


def test_simulate_gap_warns_and_exits_1(capsys, monkeypatch):
    from symrmt import engine
    from symrmt.cli.app import main

    real = engine.Model.limit

    def wrong(self, *a, **k):  # a wrong limit, to see the check fire
        r = real(self, *a, **k)
        r.value = r.value + 1
        return r

    monkeypatch.setattr(engine.Model, "limit", wrong)
    code = main(["trace", "trace(inv(Z.T*Z/n + gamma*I(n)))", "--matrix", "Z=gaussian(n,n)", "--at", "gamma=1",
                 "--simulate", "--n", "64", "--trials", "3"])
    err = capsys.readouterr().err
    assert code == 1 and "disagrees" in err
    monkeypatch.setattr(engine.Model, "limit", real)
    code = main(["trace", "trace(inv(Z.T*Z/n + gamma*I(n)))", "--matrix", "Z=gaussian(n,n)", "--at", "gamma=1",
                 "--simulate", "--n", "64", "--trials", "3"])
    assert code == 0
