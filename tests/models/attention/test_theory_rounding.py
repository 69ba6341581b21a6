"""The limits print the digits asked for rounded once from the solved value (no double rounding).

At a low ``digits`` the returned value must not first be cut to a binary precision of ``digits``
decimal digits: that rounds twice, and near a decimal midpoint it changes the last printed digit
(E_RR = 0.5635093 printed as 0.563 at three digits).  The references are independent of the
package's solver: the ridge closed form retyped here from docs/theory.md section 6 (Marchenko-Pastur
root and Sherman-Morrison), and E_A from the trace engine's own linearization of the model
(``attention_model``, a different solver from the hand-built one).
"""

import mpmath
import pytest

import symrmt
from symrmt.models.attention.engine_model import attention_model

C, SNR = mpmath.mpf(5) / 7, mpmath.mpf(13) / 10


def ridge_reference(gamma: str) -> mpmath.mpf:
    """E_RR = -gamma^2 d/dgamma [m(1 + m)/(1 + (1 + snr) m)], m the positive root of
    gamma m^2 + (gamma + c - 1) m - 1 = 0 (docs/theory.md section 6), at 50 digits."""
    with mpmath.workdps(50):
        def phi0(g):
            b = g + C - 1
            m = (-b + mpmath.sqrt(b * b + 4 * g)) / (2 * g)
            return m * (1 + m) / (1 + (1 + SNR) * m)

        g = mpmath.mpf(mpmath.mpmathify(gamma))
        return -g ** 2 * mpmath.diff(phi0, g)


def rounded(x, digits: int) -> str:
    with mpmath.workdps(60):
        return mpmath.nstr(x, digits)   # trailing zeros dropped, as the package prints


@pytest.mark.parametrize("gamma, digits", [("46/10", 3), ("57/10", 3), ("43/10", 4), ("48/10", 4)])
def test_ridge_prints_the_correctly_rounded_digits(gamma, digits):
    ref = ridge_reference(gamma)
    th = symrmt.limit("erf", "5/7", [gamma], {"snr": "13/10"}, digits=digits, progress=False)
    value = th.ridge_mp[0]
    assert str(value) == rounded(ref, digits)          # 0.564 at 46/10 (rounding twice gave 0.563)
    assert abs(float(th.ridge[0]) - float(ref)) <= 1e-12 * float(ref)   # the float is the solved value


def test_attention_prints_the_correctly_rounded_digits():
    m, exprs = attention_model("erf", rank=1)
    ref = m.limit(exprs["E_A"], {"c": "5/7", "gamma": 3, "mu.mu": "13/10"}, digits=20).value
    th = symrmt.limit("erf", "5/7", [3], {"snr": "13/10"}, digits=3, progress=False)
    assert str(th.attention_mp[0]) == rounded(ref, 3) == "0.437"   # rounding twice gave 0.438
    assert "0.437" in str(th)
    assert abs(float(th.attention[0]) - float(ref)) <= 1e-12 * float(ref)
