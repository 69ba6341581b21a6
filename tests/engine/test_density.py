"""Spectral densities of the trace engine against closed forms, an independent subordination solve and
eigenvalue histograms.

References, none from the engine:

- Marchenko-Pastur, ``Z.T*Z/n`` with ``p = c n``: ``rho(x) = sqrt((b - x)(x - a))/(2 pi x)`` on
  ``[a, b] = [(sqrt c - 1)^2, (sqrt c + 1)^2]``, an atom ``1 - c`` at 0 when ``c < 1``;
- the semicircle, ``G/sqrt(n)`` (off-diagonal variance 1): ``sqrt(4 - x^2)/(2 pi)`` on ``[-2, 2]``;
- their free convolution ``G/sqrt(n) + Z.T*Z/n``: the subordination ``G(z) = G_W(z - G(z))`` (the
  R-transform of the semicircle is ``g``), with the Marchenko-Pastur Cauchy transform ``G_W`` the root of
  ``w G^2 - (w - c + 1) G + 1 = 0`` with ``Im G < 0``, solved here by mpmath (a damped iteration at
  ``Im z = 1/100``, then ``findroot`` at ``Im z = 0``); ``rho = -Im G/pi``.

The points checked are not the grid's: each is asked alone, at 25 digits (>= 20 required).
The histogram: n = 200, 6 trials (seed fixed); a bin inside the bulk agrees with the closed form's bin
average within 5 se + 0.02 (k = 5 as ``trace --simulate``; 0.02 the O(1/n) finite-size bias of a bin).
"""

import json

import mpmath
import pytest

from symrmt.cli.app import main
from symrmt.engine import Model

DIG = 25


def wishart():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    return m


def mp_density(c, x):
    c, x = mpmath.mpf(c), mpmath.mpf(x)
    a, b = (mpmath.sqrt(c) - 1) ** 2, (mpmath.sqrt(c) + 1) ** 2
    return mpmath.sqrt((b - x) * (x - a)) / (2 * mpmath.pi * x)


def _close(got, ref, digits=DIG):
    assert abs(got - ref) <= abs(ref) * mpmath.mpf(10) ** (1 - digits), (got, ref)


@pytest.mark.parametrize("c, x", [("1/2", "0.7313"), ("1/2", "2.2"), ("2", "0.4321"), ("2", "4.9"), ("1", "0.05")])
def test_marchenko_pastur(c, x):
    d = wishart().density("Z.T*Z/n", x=[x], at={"c": c}, digits=DIG, edges=False, atoms=False)
    with mpmath.workdps(40):
        _close(d.density[0], mp_density(eval_fraction(c), mpmath.mpf(x)))


def eval_fraction(text):
    num, _, den = text.partition("/")
    return mpmath.mpf(num) / (mpmath.mpf(den) if den else 1)


def test_marchenko_pastur_edges_and_atom():
    d = wishart().density("Z.T*Z/n", x=[i / 10 for i in range(0, 36)], at={"c": "1/2"}, digits=DIG)
    (lo, hi), = d.support()
    with mpmath.workdps(40):
        _close(lo, (1 - 1 / mpmath.sqrt(2)) ** 2)
        _close(hi, (1 + 1 / mpmath.sqrt(2)) ** 2)
    (atom,) = d.atoms()
    assert atom["x"] == 0
    with mpmath.workdps(40):
        _close(atom["mass"], mpmath.mpf(1) / 2, DIG)
    assert d.status[0] == "singular" and d.density[0] is None  # the atom's point has no density value
    assert all(v == 0 for x, v in zip(d.x, d.density) if x > 3)


def test_no_atom_for_c_above_1():
    d = wishart().density("Z.T*Z/n", x=[0, 1, 2], at={"c": 2}, digits=15, edges=False)
    assert d.atoms() == [] and d.density[0] == 0


@pytest.mark.parametrize("x", ["0.3", "-1.77", "1.9"])
def test_semicircle(x):
    m = Model()
    m.goe("G", "n")
    d = m.density("G/sqrt(n)", x=[x], digits=DIG, edges=False, atoms=False)
    with mpmath.workdps(40):
        xm = mpmath.mpf(x)
        _close(d.density[0], mpmath.sqrt(4 - xm * xm) / (2 * mpmath.pi))


def test_semicircle_edges():
    m = Model()
    m.goe("G", "n")
    d = m.density("G/sqrt(n)", x=[-3 + i * 0.25 for i in range(25)], digits=DIG)
    (lo, hi), = d.support()
    with mpmath.workdps(40):
        _close(lo, mpmath.mpf(-2))
        _close(hi, mpmath.mpf(2))
    assert d.atoms() == []


def subordination_density(c, x, dps=60):
    """``-Im G(x + i0)/pi`` of semicircle + MP(c) by the subordination equation (independent of the engine)."""
    with mpmath.workdps(dps):
        c = mpmath.mpf(c)

        def g_w(w):
            disc = mpmath.sqrt((w - c + 1) ** 2 - 4 * w)
            roots = [((w - c + 1) + s * disc) / (2 * w) for s in (1, -1)]
            return min(roots, key=lambda r: r.imag)  # Im G_W < 0 for Im w > 0

        z = mpmath.mpc(x, mpmath.mpf(1) / 100)
        g = 1 / z
        for _ in range(3000):
            g = (g + g_w(z - g)) / 2
        for eta in (mpmath.mpf(10) ** -4, mpmath.mpf(10) ** -8, 0):
            z = mpmath.mpc(x, eta)
            g = mpmath.findroot(lambda u, z=z: u - g_w(z - u), g)
        return -g.imag / mpmath.pi


@pytest.mark.parametrize("x", ["0.37", "2.61", "-1.2"])
def test_free_convolution_semicircle_plus_mp(x):
    m = wishart()
    m.goe("G", "n")
    d = m.density("G/sqrt(n) + Z.T*Z/n", x=[x], at={"c": "1/2"}, digits=DIG, edges=False, atoms=False)
    with mpmath.workdps(40):
        _close(d.density[0], subordination_density(mpmath.mpf(1) / 2, mpmath.mpf(x)))


@pytest.mark.parametrize("tau, x", [("0", "0.41"), ("-3/10", "-1.5"), ("7/10", "2.2")])
def test_symmetric_part_of_an_elliptic_matrix_is_a_semicircle(tau, x):
    """(A + A^T)/sqrt(n) of elliptic(n, tau): its entries off the diagonal have variance 2 (1 + tau), so its
    density is the semicircle of radius 2 sqrt(2 (1 + tau)). The sum is symmetric whatever the order of its terms
    (it was refused: A + A^T was compared with A^T + A term by term)."""
    m = Model()
    m.elliptic("A", "n", tau)
    d = m.density("(A + A.T)/sqrt(n)", x=[x], digits=DIG, edges=False, atoms=False)
    with mpmath.workdps(40):
        xm, s2 = mpmath.mpf(x), 2 * (1 + _rational(tau))
        _close(d.density[0], mpmath.sqrt(4 * s2 - xm * xm) / (2 * mpmath.pi * s2))


def _rational(text):
    from fractions import Fraction

    f = Fraction(text)
    return mpmath.mpf(f.numerator) / f.denominator


def test_non_symmetric_is_refused():
    from symrmt.engine.lang.matrices import ModelError

    m = Model()
    m.gaussian("Z", "n", "n")
    with pytest.raises(ModelError, match="symmetric"):
        m.density("Z/sqrt(n)", x=[0.1])


def test_histogram_agrees_and_result_object():
    d = wishart().density("Z.T*Z/n", x=[0.3 + 0.05 * i for i in range(41)], at={"c": 2}, digits=10)
    h = d.simulate(wishart(), "Z.T*Z/n", n=200, trials=6, seed=3)
    with mpmath.workdps(20):
        for a, b, v, se in zip(h["edges"], h["edges"][1:], h["density"], h["se"]):
            if a > 0.5 and b < 5.5:
                ref = mpmath.quad(lambda t: mp_density(2, t), [a, b]) / (b - a)
                assert abs(v - float(ref)) <= 5 * se + 0.02, (a, b, v, float(ref), se)
    df = d.to_pandas()
    assert list(df.columns) == ["x", "density", "status"] and len(df) == 41


def test_cli_json(capsys):
    from symrmt.cli.app import main

    code = main(["density", "Z.T*Z/n", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2",
                 "--over", "x=0:3:31", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {"x", "density", "support", "atoms", "digits", "expression", "at"} <= set(data)
    assert data["atoms"] == [{"x": 0.0, "mass": 0.5}] and data["density"][0] is None
    assert data["support"][0][0] == pytest.approx(float((1 - 1 / mpmath.sqrt(2)) ** 2), rel=1e-14)


def test_cli_over_is_checked(capsys):
    from symrmt.cli.app import main

    assert main(["density", "Z.T*Z/n", "--matrix", "Z=gaussian(n,n)", "--over", "x=0:1:99999"]) == 2
    assert "4000" in capsys.readouterr().err


def test_cli_let_names_a_sub_expression(capsys):
    """--let and --vector as in symrmt trace: M written with a --let name is the Marchenko-Pastur matrix."""
    from symrmt.cli.app import main

    code = main(["density", "W", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--let", "W=Z.T*Z/n",
                 "--vector", "y=signs(n)", "--at", "c=1/2", "--over", "x=1/2:5/2:3", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["expression"] == "W" and data["status"] == ["ok"] * 3
    with mpmath.workdps(40):
        for x, v in zip(data["x"], data["density"]):
            assert abs(v - mp_density(mpmath.mpf(1) / 2, x)) <= 1e-13 * mp_density(mpmath.mpf(1) / 2, x), (x, v)


@pytest.mark.parametrize("vector", ["y=bogus(n)", "y", "1y=signs(n)"])
def test_cli_bad_vector_is_refused_as_trace_refuses_it(capsys, vector):
    from symrmt.cli.app import main

    decl = ["--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--vector", vector, "--at", "c=1/2"]
    assert main(["density", "Z.T*Z/n", *decl, "--over", "x=0:1:3"]) == 2
    err = capsys.readouterr().err
    assert main(["trace", "trace(Z.T*Z/n)", *decl]) == 2
    ref = capsys.readouterr().err
    assert err.startswith("symrmt density: error: ") and ref.startswith("symrmt trace: error: ")
    assert err.split("error: ", 1)[1] == ref.split("error: ", 1)[1]


def test_cli_vector_in_the_matrix_is_refused(capsys):
    from symrmt.cli.app import main

    assert main(["density", "Z.T*Z/n + y*y.T", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n",
                 "--vector", "y=vector(n)", "--at", "c=1/2", "--over", "x=0:1:3"]) == 2
    assert "without vectors" in capsys.readouterr().err


def test_certify_every_kth_point():
    xs = [0.2 + 0.05 * i for i in range(50)]
    d = wishart().density("Z.T*Z/n", x=xs, at={"c": 2}, digits=15, certify=7, edges=False, atoms=False)
    assert d.status.count("ok") == 8 and d.status.count("float") == 42
    for x, v, s in zip(d.x, d.density, d.status):
        ref = mp_density(2, x) if (mpmath.sqrt(2) - 1) ** 2 < x < (mpmath.sqrt(2) + 1) ** 2 else 0
        assert abs(v - ref) <= (1e-14 if s == "ok" else 1e-9) * (1 + abs(ref)), (x, v, ref, s)


def test_histogram_trials_are_stored_and_reused(tmp_path):
    store = str(tmp_path / "trials.sqlite")
    d = wishart().density("Z.T*Z/n", x=[0.5, 3.0], at={"c": 2}, digits=10, edges=False, atoms=False)
    a = d.simulate(wishart(), "Z.T*Z/n", n=64, trials=3, seed=1, bins=8, store=store)
    b = d.simulate(wishart(), "Z.T*Z/n", n=64, trials=3, seed=1, bins=8, store=store)
    assert (a["trials_computed"], b["trials_reused"]) == (3, 3) and a["density"] == b["density"]


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_atom_off_the_grid_and_away_from_0():
    # Z.T*Z/n - 2 I, c = 1/3: the atom of mass 1 - c = 2/3 sits at -2, between grid points; found by the drop
    # of the real tau, its mass and location by contour integrals around it
    d = wishart().density("Z.T*Z/n - 2*I(n)", x=[-3 + 0.37 * i for i in range(15)], at={"c": "1/3"}, digits=20)
    (atom,) = d.atoms()
    with mpmath.workdps(40):
        _close(atom["mass"], mpmath.mpf(2) / 3, 20)
        assert abs(atom["x"] + 2) <= mpmath.mpf(10) ** -19
        (lo, hi), = d.support()
        _close(lo, (1 - mpmath.sqrt(mpmath.mpf(1) / 3)) ** 2 - 2, 20)
        _close(hi, (1 + mpmath.sqrt(mpmath.mpf(1) / 3)) ** 2 - 2, 20)


@pytest.mark.parametrize("matrix, c, x0, grid", [
    ("Z.T*Z/n - 2*I(n)", "1/3", -2, [-3 + 0.5 * i for i in range(7)]),  # -2 is the grid's third point
    ("Z.T*Z/n + I(n)", "1/2", 1, [0.5 * i for i in range(5)]),  # 1.0 is the grid's third point
])
def test_atom_on_a_grid_point(matrix, c, x0, grid):
    # the atom 1 - c of Z.T*Z/n at 0, moved to x0 by the shift, lies exactly on a grid point: its mass is read
    # at two heights (the solution near it grows like 1/eta), and the point itself is singular (no density)
    d = wishart().density(matrix, x=grid, at={"c": c}, digits=20)
    (atom,) = d.atoms()
    assert atom["x"] == x0
    with mpmath.workdps(40):
        _close(atom["mass"], 1 - eval_fraction(c), 20)
    i = grid.index(x0)
    assert d.status[i] == "singular" and d.density[i] is None
    assert all(s == "ok" for k, s in enumerate(d.status) if k != i)


@pytest.mark.parametrize("over, on_grid", [("x=-3:0:7", True), ("x=-3:0:8", False)])
def test_cli_json_atom_on_and_off_the_grid(capsys, over, on_grid):
    # the same atom at -2 (mass 2/3) whether the grid hits it (a singular point) or misses it (the contour)
    from symrmt.cli.app import main

    code = main(["density", "Z.T*Z/n - 2*I(n)", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/3",
                 "--over", over, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    (atom,) = data["atoms"]
    assert atom["x"] == pytest.approx(-2, abs=1e-14) and atom["mass"] == pytest.approx(2 / 3, rel=1e-14)
    singular = [x for x, s in zip(data["x"], data["status"]) if s == "singular"]
    assert singular == ([-2.0] if on_grid else [])
    assert [x for x, v in zip(data["x"], data["density"]) if v is None] == singular


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_model_density_takes_the_cli_grid_text():
    """``Model.density(M, x="LO:HI:K")`` reads the grid as ``--over`` does (it was iterated character by character)."""
    import math

    from symrmt.engine import Model

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    d = m.density("Z.T*Z/n", x="0.5:1.5:3", at={"c": "1/2"}, edges=False, atoms=False)
    a, b = (1 - math.sqrt(0.5)) ** 2, (1 + math.sqrt(0.5)) ** 2
    for x, v in zip((0.5, 1.0, 1.5), d.to_pandas()["density"]):  # Marchenko-Pastur, the n x n side
        assert float(v) == pytest.approx(math.sqrt((b - x) * (x - a)) / (2 * math.pi * x), rel=1e-12)
    with pytest.raises(ValueError, match="--over"):
        m.density("Z.T*Z/n", x="1:0:3", at={"c": "1/2"})


def test_semicircle_density_with_its_edges_on_the_grid(capsys):
    """``x=-3:3:7`` puts the edges +-2 on grid points: they are reported (singular), not an exit-3 failure."""
    import math

    code, out, err = _run(capsys, ["density", "G/sqrt(n)", "--matrix", "G=goe(n)", "--over", "x=-3:3:7", "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert [s for x, s in zip(d["x"], d["status"]) if s == "singular"] == ["singular"] * 2
    assert d["support"] == [[-2.0, 2.0]]
    for x, v in zip(d["x"], d["density"]):
        if abs(x) < 2:
            assert v == pytest.approx(math.sqrt(4 - x * x) / (2 * math.pi), rel=1e-14)
        elif abs(x) > 2:
            assert v == 0.0


def test_density_grid_beyond_the_float_range_is_bad_input(capsys):
    code, out, err = _run(capsys, ["density", "G/sqrt(n)", "--matrix", "G=goe(n)", "--over", "x=-1e400:1e400:3",
                                   "--json"])
    assert code == 2 and "1e300" in json.loads(out)["error"]


def test_density_with_a_finite_rank_term_says_why_it_is_refused():
    """``Z.T*Z/n + 5*v*v.T`` is symmetric; it was refused as "a non-symmetric matrix"."""
    from symrmt.engine import Model
    from symrmt.errors import ParameterError

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("v", "n")
    with pytest.raises(ParameterError, match="without vectors") as err:
        m.density("Z.T*Z/n + 5*v*v.T", x="0.5:1.5:3", at={"c": "1/2", "v.v": 1})
    assert "non-symmetric" not in str(err.value)


def test_a_wide_density_grid_keeps_the_support():
    """A grid of +-1e10 around the semicircle: the point at 0 is solved near the axis (the height there does
    not grow with the grid's width), so the density at 0 is 1/pi and the support is [-2, 2], not empty."""
    import mpmath

    from symrmt.engine import Model

    m = Model()
    m.goe("G", "n")
    d = m.density("G/sqrt(n)", x=[-10**10, 0, 10**10])
    assert abs(d.density[1] - 1 / mpmath.pi) < 1e-14 and d.status[1] == "ok"
    (lo, hi), = d.support()
    assert abs(lo + 2) < 1e-12 and abs(hi - 2) < 1e-12


@pytest.mark.parametrize("fast", [False, True])
def test_a_constant_outside_float64_is_a_density_error(fast):
    """``G/sqrt(n)*1e200``: the float stage cannot hold the constant's square; the error says so and what to do
    (a DensityError, exit 3), never a bare OverflowError."""
    from symrmt.errors import DensityError

    m = Model()
    m.goe("G", "n")
    with pytest.raises(DensityError, match="outside the float64 range"):
        m.density("G/sqrt(n)*1e200", x=[0.0], fast=fast)
