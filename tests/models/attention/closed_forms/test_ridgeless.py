"""Ridgeless limit gamma -> 0+ of E_A (symrmt.models.attention.closed_forms.ridgeless); fast checks."""

import mpmath
import pytest
import sympy as sp

from symrmt.errors import ParameterError
from symrmt.models.attention import equations as S
from symrmt.models.attention.closed_forms import ridgeless as R
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.theory import attention_limit


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_reduced_system_gives_one_minus_c():
    M = R.reduced_system_below()
    assert sp.simplify(M[2, 2] - (S.c + R.omega - 1)) == 0
    assert R.noise_only_error() == 1 - S.c


def test_a1_zero_closed_form_is_consistent():
    sub = dict(zip(R.BELOW, R.a1_zero_traces()))
    assert sp.simplify(R.a1_zero_ridgeless_error_in_traces().subs(sub) - R.a1_zero_error()) == 0
    # d = 0: rho = 0 is the root and the signal drops out
    assert R.a1_zero_cubic().subs({S.d: 0, R.rho: 0}) == 0
    assert sp.simplify(R.a1_zero_error().subs({R.rho: 0}) - (1 - S.c)) == 0


def test_scaled_limit_refuses_a_diverging_phi():
    assert R.scaled_limit(S.G_SYMBOLS[2]) == R.sigma  # gamma G_13 = gamma sigma/gamma
    with pytest.raises(ParameterError, match=r"diverges like gamma\^-2 .* give a phi that is O\(1/gamma\)"):
        R.scaled_limit(S.G_SYMBOLS[0] / S.gamma**2)


def test_noise_only_and_a1_zero_against_solver():
    g = "1e-8"
    e = attention_limit({"a1": "0.6057", "nu": "0.3943"}, "1/2", [g], Geometry(), digits=12)[0]
    assert abs(e - mpmath.mpf("0.5")) < 1e-10
    with mpmath.workdps(30):
        nu = 1 - 2 / mpmath.pi
        cub = sp.lambdify([R.rho, S.c, S.nu, S.d], R.a1_zero_cubic(), "mpmath")
        r = mpmath.findroot(lambda x: cub(x, mpmath.mpf(1) / 2, nu, 1), mpmath.mpf("0.3"))
        e0 = sp.lambdify([R.rho, S.c, S.nu, S.d, S.snr], R.a1_zero_error(), "mpmath")(r, mpmath.mpf(1) / 2, nu, 1, 1)
    e = attention_limit({"a1": 0, "nu": nu, "d": 1}, "1/2", [g], Geometry(snr=1), diagonal="keep", digits=12)[0]
    assert abs(e - e0) < 1e-9


def test_c_above_one_vanishes_like_sqrt_gamma():
    cosf = {"a1": 0, "nu": (1 + mpmath.e**-2) / 2 - mpmath.e**-1}
    g = mpmath.mpf("1e-10")
    e = attention_limit(cosf, "2", [g], Geometry(), digits=10)[0]
    rate = sp.lambdify([S.c, S.nu], R.rate_above_a1_d_zero(), "mpmath")(2, cosf["nu"])
    assert abs(e / mpmath.sqrt(g) - rate) < 1e-3 * rate
