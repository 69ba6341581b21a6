"""Noise-only closed form: the Stieltjes polynomial against the general solver."""

import mpmath
import pytest
import sympy as sp

from symrmt.models.attention import equations as S
from symrmt.models.attention.closed_forms import noise_only as N
from symrmt.models.attention.theory import attention_limit


def test_degrees_stated():
    assert N.degree(None, 0) == (7, 4)
    assert N.degree(None, 0, None, 0) == (3, 2)


def test_cubic_and_marchenko_pastur():
    m, g, c, nu = S.m, S.gamma, S.c, S.nu
    cubic = N.a1_zero_d_zero_polynomial().as_expr()
    assert sp.expand(cubic - (nu * g**2 * m**3 + nu * (c - 1) * g * m**2 + c * g * m - c)) == 0
    P0 = N.a1_zero_polynomial().as_expr()
    assert sp.rem(sp.expand(P0.subs({nu: 0, S.d: 1})), sp.cancel(S.mp_quadratic()), m) == 0


@pytest.mark.slow  # seconds per call: outside the fast tier
@pytest.mark.parametrize(("c", "nu", "d", "gamma"), [("1/2", "3/4", 0, "1/3"), ("2", "3/4", 1, "1"), ("3", "1/2", 1, "1/10")])
def test_forty_digits_against_solver(c, nu, d, gamma):
    diag = "keep" if d else "zero"
    sol = attention_limit({"a1": 0, "nu": nu, "d": d}, c, [gamma], diagonal=diag, digits=50, details=True)[0]
    mc = N.stieltjes_closed_form_value(gamma, c, 0, nu, d, dps=50)
    ea = N.noise_only_error(gamma, c, 0, nu, d, dps=50)
    with mpmath.workdps(60):
        assert abs(mc - sol.stieltjes) <= mpmath.mpf(10) ** -40 * abs(sol.stieltjes)
        assert abs(ea - sol.error) <= mpmath.mpf(10) ** -40 * max(1, abs(sol.error))


def test_non_exact_parameters_refused_for_a1_nonzero():
    with pytest.raises(N.ClosedFormError):
        N.stieltjes_closed_form_value(1, "1/2", mpmath.mpf("0.6"), "0.4", 0, dps=20)


def test_no_float_literals_in_compiled_source():
    import inspect

    src = inspect.getsource(N.a1_zero_functions()[1])
    assert "e-" not in src and "." not in src.split("return", 1)[1].replace("mpf(", "")


# The noise-only derivation's quick run (with all its asserts) is tests/derivations/test_derivations.py[noise_only].


def test_symbolic_polynomial_with_a1_nonzero_is_not_derived():
    from symrmt.errors import NotDerived

    with pytest.raises(NotDerived, match="a_1 = 0 only; pass exact c, a_1, nu, d"):
        N.stieltjes_polynomial(a1_="1/2", c_="1/2")
