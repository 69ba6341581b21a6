"""Limits at a complex parameter value: the Marchenko-Pastur resolvent off the real axis.

Reference (independent of the engine): ``m(z) = tau((Z^T Z/n - z)^{-1})`` is the root of
``-z m^2 + (c - 1 - z) m - 1 = 0`` with ``Im m > 0`` for ``Im z > 0`` (the Stieltjes branch), at 60 digits.
"""

import json

import mpmath
import pytest

from symrmt.engine import Model
from symrmt.engine.lang.matrices import ModelError

MP = "trace(inv(Z.T*Z/n - z*I(n)))"


def wishart():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    return m


def stieltjes(c, z):
    with mpmath.workdps(60):
        c, z = mpmath.mpf(c), mpmath.mpc(z)  # exact inputs
        g = -z
        b = g + c - 1
        roots = [(-b + s * mpmath.sqrt(b * b + 4 * g)) / (2 * g) for s in (1, -1)]
        return max(roots, key=lambda r: r.imag * mpmath.sign(z.imag))


@pytest.mark.parametrize("c, re, im", [("2", "0.5", "0.01"), ("1/2", "1.3", "0.001"), ("2", "7", "2"),
                                       ("2", "0.5", "-0.01")])
def test_marchenko_pastur_at_complex_z(c, re, im):
    z = f"{re}{'' if im.startswith('-') else '+'}{im}j"
    r = wishart().limit(MP, at={"c": c, "z": z}, digits=25)
    with mpmath.workdps(60):
        num, _, den = c.partition("/")
        cc = mpmath.mpf(num) / (mpmath.mpf(den) if den else 1)
        ref = stieltjes(cc, mpmath.mpc(re, im))
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** -24
    assert r.branch_checked == [True]
    assert (r.value.imag > 0) == (not im.startswith("-"))


def test_python_complex_and_gamma_form():
    # tau((W + gamma)^{-1}) at gamma = -z: Im tau < 0 for Im gamma > 0
    r = wishart().limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"c": 2, "gamma": complex(-0.5, 0.25)}, digits=20)
    ref = stieltjes(2, mpmath.mpc(0.5, -0.25))  # 0.25 and 0.5 are exact binary fractions
    with mpmath.workdps(40):
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** -19
    assert r.value.imag < 0


def test_diff_at_complex_is_refused():
    with pytest.raises(ModelError, match="diff"):
        wishart().limit(f"diff({MP}, z)", at={"c": 2, "z": "0.5+0.01j"})


def test_cli_json_complex(capsys):
    from symrmt.cli.app import main

    code = main(["trace", MP, "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=2, z=0.5+0.01j", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and set(data["value"]) == {"re", "im"}
    ref = stieltjes(2, complex(0.5, 0.01))
    assert data["value"]["re"] == pytest.approx(float(ref.real), rel=1e-14)
    assert data["value"]["im"] == pytest.approx(float(ref.imag), rel=1e-14)


def test_cli_complex_literal_goes_through_the_parser(capsys):
    from symrmt.cli.app import main

    assert main(["trace", MP, "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=2, z=0.5+__x__j"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_a_point_too_close_to_the_axis_says_why_and_what_to_try(capsys):
    """At the atom z = 0 of the Marchenko-Pastur law (c = 1/2: Z^T Z/n has rank n/2), ``Im z = 1e-30`` is
    beyond the float64 continuation: the refusal (exit 3, as before) says the point is too close to the real
    axis and what to try, not only that the path "took more than 2000 steps"; the point it suggests works."""
    from symrmt.cli.app import main

    code = main(["trace", MP, "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2, z=1e-30j"])
    err = capsys.readouterr().err
    assert code == 3
    assert "too close to the real axis" in err and "larger imaginary part" in err and "symrmt density" in err
    assert "z = 1e-8j" in err
    r = wishart().limit(MP, at={"c": "1/2", "z": "1e-8j"}, digits=15)
    ref = stieltjes(mpmath.mpf(1) / 2, mpmath.mpc(0, "1e-8"))
    assert abs(complex(r.value) - complex(ref)) <= 1e-13 * abs(complex(ref))
