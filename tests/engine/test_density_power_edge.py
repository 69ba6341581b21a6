"""A density edge that is not a square root: the Fuss-Catalan law at 0.

``Z1.T*Z2*Z2.T*Z1/n**2`` with square ``Z1, Z2`` has the spectrum of ``W1 W2`` (two free
Marchenko-Pastur(1) laws): the Fuss-Catalan law of order 2 on ``[0, 27/4]``, whose density diverges like
``x^(-2/3)`` at 0.  Its density is the closed form of Penson and Zyczkowski (Phys. Rev. E 83, 061118,
2011, eq. for s = 2):

    rho(x) = 2^(1/3) sqrt(3) / (12 pi) * (2^(1/3) (27 + 3 sqrt(81 - 12 x))^(2/3) - 6 x^(1/3))
             / (x^(2/3) (27 + 3 sqrt(81 - 12 x))^(1/3)),

evaluated here in mpmath at 40 digits.  At 0 the extended edge system has no regular root
(the solution diverges): the default call (a grid from a negative x, edges and atoms on) reports a
power-law edge there, with its estimated exponent.
"""

from __future__ import annotations

import mpmath
import pytest

from symrmt.cli.app import main
from symrmt.engine import Model


def fuss_catalan(x):
    with mpmath.workdps(40):
        x = mpmath.mpf(x)
        r = 27 + 3 * mpmath.sqrt(81 - 12 * x)
        c = mpmath.cbrt(2)
        return c * mpmath.sqrt(3) / (12 * mpmath.pi) * (c * r ** (mpmath.mpf(2) / 3) - 6 * mpmath.cbrt(x)) / (
            x ** (mpmath.mpf(2) / 3) * mpmath.cbrt(r))


def _model():
    m = Model()
    m.gaussian("Z1", "n", "n")
    m.gaussian("Z2", "n", "n")
    return m


@pytest.mark.slow  # the power-law edge search: seconds, outside the fast tier
def test_fuss_catalan_by_default_with_its_power_law_edge():
    xs = [f"{-0.5 + 0.7 * i:.1f}" for i in range(12)]  # -0.5 .. 7.2: outside, the bulk, outside (exact decimals)
    d = _model().density("Z1.T*Z2*Z2.T*Z1/n**2", x=xs, digits=20)
    assert d.status == ["ok"] * 12
    (lo, hi), = d.support()
    with mpmath.workdps(40):
        assert abs(hi - mpmath.mpf(27) / 4) < mpmath.mpf(10) ** -19  # the square-root edge, certified
        for x, v in zip(xs, d.density):
            if 0 < float(x) < 6.75:
                ref = fuss_catalan(mpmath.mpf(x))
                assert abs(v - ref) <= mpmath.mpf(10) ** -19 * ref, (x, v, ref)
            else:
                assert v == 0
    assert lo == 0 and d.atoms() == []
    (edge,) = d.power_law_edges
    assert edge["kind"] == "power-law" and edge["x"] == 0 and edge["tolerance"] < 1e-3
    assert abs(edge["exponent"] - (-2 / 3)) < 0.05


def test_square_root_edges_are_not_power_laws():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    d = m.density("Z.T*Z/n", x=[-0.5 + 0.25 * i for i in range(17)], at={"c": "1/2"})
    assert d.power_law_edges == [] and len(d.support()) == 1


@pytest.mark.slow  # the power-law edge search: seconds, outside the fast tier
def test_cli_reports_the_power_law_edge(capsys):
    rc = main(["density", "Z1.T*Z2*Z2.T*Z1/n**2", "--matrix", "Z1=gaussian(n,n)", "--matrix", "Z2=gaussian(n,n)",
               "--over", "x=-0.5:7.2:12", "--fast"])
    out = capsys.readouterr().out
    assert rc == 0 and "edge at 0 (+-" in out and "power law" in out


@pytest.mark.slow  # the power-law edge search: seconds, outside the fast tier
def test_the_product_of_two_wisharts_as_written():
    # Z1*Z1.T*Z2*Z2.T is not symmetric, but its rotation Z2.T*Z1*Z1.T*Z2 is, with the same N x N spectrum
    m = _model()
    d = m.density("Z1*Z1.T*Z2*Z2.T/n**2", x=["-0.5", "0.9", "3", "7"], digits=20)
    with mpmath.workdps(40):
        for x, v in zip(("0.9", "3"), d.density[1:3]):
            ref = fuss_catalan(mpmath.mpf(x))
            assert abs(v - ref) <= mpmath.mpf(10) ** -19 * ref
    assert d.density[0] == 0 and d.density[3] == 0 and [e["x"] for e in d.power_law_edges] == [0]
    # rectangular factors: the rotation would change the dimension (and the spectrum's atom at 0): refused
    r = Model()
    r.dim("p", "c*n")
    r.gaussian("Z1", "p", "n")
    r.gaussian("Z2", "p", "n")
    with pytest.raises(Exception, match="symmetric"):
        r.density("Z1*Z1.T*Z2*Z2.T/n**2", x=[1.0], at={"c": "1/2"})
