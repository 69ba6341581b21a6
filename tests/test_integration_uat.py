"""Acceptance probes of the integrated package (issues 19, 20, 21, 23, 24, 25 together).

Each test is a defect found by using the CLI and the top-level API as a user would; the
expected values are closed forms written here, independent of the engine.
"""

import json

import pytest

from symrmt.cli.app import main


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_trace_without_parameters_needs_no_at(capsys):
    # tau(G^2/n) = 1 for a GOE matrix of unit off-diagonal variance (the semicircle's variance)
    code, out, err = _run(capsys, ["trace", "trace(G*G/n)", "--matrix", "G=goe(n)", "--json"])
    assert code == 0, err
    assert json.loads(out)["value"] == pytest.approx(1.0, rel=1e-14)
    # a parameter left out is still a one-line error naming it
    code, out, err = _run(capsys, ["trace", "trace(inv(G/sqrt(n) + gamma*I(n)))", "--matrix", "G=goe(n)"])
    assert code == 2 and "gamma" in err


def _ridge_form(c, gamma, snr, dps=40):
    """y^T (X^T X/n + gamma)^{-1} y/n for X = mu y^T + Z, written here by Woodbury on the rank-2 update.

    X^T X/n = A + u b^T + b u^T + s u u^T with A = Z^T Z/n, u = y/sqrt(n), b = Z^T mu/sqrt(n),
    s = ||mu||^2; in the limit u^T R u -> m, u^T R b -> 0, b^T R b -> s (1 - gamma mt), with
    R = (A + gamma)^{-1}, mt the Marchenko-Pastur Stieltjes transform of Z Z^T/n at -gamma and
    m = c mt + (1 - c)/gamma its companion.
    """
    import mpmath as mp

    with mp.workdps(dps):
        c, g, s = mp.mpf(c), mp.mpf(gamma), mp.mpf(snr)
        a, b = -c * g, -g - 1 + c  # c z mt^2 + (z - 1 + c) mt + 1 = 0 at z = -gamma
        d = mp.sqrt(b * b - 4 * a)
        mt = [r for r in ((-b + d) / (2 * a), (-b - d) / (2 * a)) if 0 < r < 1 / g][0]
        m = c * mt + (1 - c) / g
        beta = s * (1 - g * mt)
        M = mp.matrix([[m, 1], [1, beta - s]])
        v = mp.matrix([m, 0])
        return m - (v.T * mp.inverse(M) * v)[0]


def test_model_let_takes_text_and_sweep_takes_a_quadratic_form():
    from symrmt.engine import Model

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("mu", "p")
    m.signs("y", "n")
    m.let("X", "mu*y.T + Z")  # text, as the CLI's --let
    e = m.parse("y.T*inv(X.T*X/n + gamma*I(n))*y/n")
    r = m.sweep(e, grid={"gamma": [0.1, 0.4]}, at={"c": "1/2", "mu.mu": 1})
    for g, v in zip(("0.1", "0.4"), r.values):
        assert float(v) == pytest.approx(float(_ridge_form("0.5", g, 1)), rel=1e-10)


def test_trace_sweep_cli_takes_vectors_and_inner_product_axes(capsys):
    argv = ["trace-sweep", "y.T*inv(X.T*X/n + gamma*I(n))*y/n", "--dim", "p=c*n", "--matrix", "Z=gaussian(p,n)",
            "--vector", "mu=vector(p)", "--vector", "y=signs(n)", "--let", "X=mu*y.T + Z",
            "--grid", "mu.mu=0,1", "--at", "c=1/2, gamma=1/10", "--json"]
    code, out, err = _run(capsys, argv)
    assert code == 0, err
    rows = json.loads(out)["rows"]
    for row, s in zip(rows, (0, 1)):
        assert row[1] == pytest.approx(float(_ridge_form("0.5", "0.1", s)), rel=1e-10)


@pytest.mark.parametrize("edit", ["negative", "fraction"])
def test_density_store_with_edited_counts_is_refused(capsys, tmp_path, edit):
    import sqlite3

    import numpy as np

    db = str(tmp_path / "d.db")
    argv = ["density", "Z.T*Z/n", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2",
            "--over", "x=0:3:7", "--simulate", "--n", "32", "--trials", "2", "--store", db, "--json"]
    code, out, err = _run(capsys, argv)
    assert code == 0, err
    con = sqlite3.connect(db)
    pt, j, data = con.execute("SELECT point, j, data FROM trials ORDER BY j LIMIT 1").fetchone()
    row = np.frombuffer(data, dtype="<f8").copy()
    row[1] = -5.0 if edit == "negative" else row[1] + 0.5  # a count below 0, or one that is not whole
    con.execute("UPDATE trials SET data=? WHERE point=? AND j=?", (row.tobytes(), pt, j))
    con.commit()
    con.close()
    code, out, err = _run(capsys, argv)
    assert code == 3, out
    assert json.loads(out)["kind"] == "numerical failure" and "trial 0" in json.loads(out)["error"]


def test_sweep_caption_without_fixed_values_has_no_stray_separator():
    import symrmt

    sw = symrmt.sweep("linear", grid={"gamma": ["1"], "c": ["1/2"]})
    caption = str(sw).splitlines()[0]
    assert ", ;" not in caption and caption.startswith("sweep: f = ")


def test_quadratic_form_latex_fits_the_page(capsys, tmp_path):
    """``trace --latex`` of a quadratic form: each line one display, compiled as test_latex does (no box > 1 pt)."""
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).parent))  # the LaTeX checks of test_latex.py, reused
    from test_latex import compile_tex

    from symrmt.latex import document

    argv = ["trace", "y.T*inv(X.T*X/n + gamma*I(n))*y/n", "--dim", "p=c*n", "--matrix", "Z=gaussian(p,n)",
            "--vector", "mu=vector(p)", "--vector", "y=signs(n)", "--let", "X=mu*y.T + Z",
            "--at", "c=1/2, gamma=1/10, mu.mu=1", "--latex", "--json"]
    code, out, err = _run(capsys, argv)
    assert code == 0, err
    tex = json.loads(out)["latex"]
    displays = ["$$" + line.strip().removeprefix("\\qquad ").rstrip(",") + "$$" for line in tex.splitlines()
                if line.strip() and not line.startswith("%")]
    assert len(displays) >= 4  # pencil, fixed point, Woodbury system, readout
    compile_tex(document("\n\n".join(displays)), tmp_path, "qf")


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


def test_negative_values_after_an_option(capsys):
    """``--muwq -3/10`` and ``--between -0.5,0.5`` are values (argparse took them for options)."""
    a = ["limit", "--f", "linear", "--c", "1/2", "--gamma", "1", "--snr", "1", "--wk2", "1", "--json"]
    code, out, err = _run(capsys, a + ["--muwk", "-1/2"])
    assert code == 0, err
    code2, out2, err2 = _run(capsys, a + ["--muwk=-1/2"])
    assert code2 == 0 and json.loads(out)["attention"] == json.loads(out2)["attention"]
    code, out, err = _run(capsys, ["crossings", "--f", "tanh", "--over", "muwk", "--between", "-0.5,0.5", "--c", "0.5",
                                   "--gamma", "1", "--snr", "1", "--wk2", "1", "--scan", "4", "--json"])
    assert code == 0, err
    assert json.loads(out)["params"]["between"] == ["-1/2", "1/2"]
    code, out, err = _run(capsys, a + ["-json"])  # a mistyped option is still refused
    assert code == 2


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


def test_geometry_repr_is_short_for_irrational_inner_products():
    import symrmt

    g = symrmt.Geometry.from_angles(snr=2, wk2=1, wq2=1, cos_muwk=0.3, cos_muwq=0.3, cos_wkwq=1)
    text = repr(g)
    assert len(text) < 200, len(text)  # was ~4000 characters of Fractions
    assert "muwk≈0.42426406871192851464" in text and "snr=2" in text  # 0.3 * sqrt(2), to 20 digits
    assert g.muwk.denominator > 10**100  # the exact value stays inside


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


def test_sweep_takes_grid_entries_as_keywords():
    """symrmt.sweep takes c=, snr=, gamma= as keywords, as limit() and crossings() do (issue 23 item 8:
    one way, accepted everywhere): the same points as the grid dict, and clear refusals."""
    import pytest

    import symrmt
    from symrmt.errors import ParameterError

    by_dict = symrmt.sweep("erf", {"c": "1/2", "gamma": [1, 2], "snr": 1}, digits=20)
    by_kw = symrmt.sweep("erf", c="1/2", gamma=[1, 2], snr=1, digits=20)
    mixed = symrmt.sweep("erf", {"gamma": [1, 2]}, c="1/2", snr=1, digits=20)
    assert list(by_kw.attention) == list(by_dict.attention) == list(mixed.attention)
    assert list(by_kw.ridge) == list(by_dict.ridge)
    # the ridge column is the closed form E_RR, independent of the sweep's own path
    ref = symrmt.limit("erf", "1/2", [1, 2], snr=1, digits=20)
    assert [float(x) for x in by_kw.ridge] == [float(x) for x in ref.ridge]
    with pytest.raises(ParameterError, match="given twice"):
        symrmt.sweep("erf", {"c": "1/2", "gamma": [1]}, c="1/2")
    with pytest.raises(ParameterError, match="unknown keyword 'snrr'"):
        symrmt.sweep("erf", {"c": "1/2", "gamma": [1]}, snrr=1)


def test_trace_json_echoes_a_tiny_parameter_as_typed(capsys):
    """`--at 'gamma=1e-400'` is echoed as typed in the JSON `at`, not as a 400-digit fraction; every other
    value as typed too (0.5, not 1/2)."""
    import json

    from symrmt.cli.app import main

    code = main(["trace", "gamma*c", "--at", "gamma=1e-400, c=0.5", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["at"] == {"gamma": "1e-400", "c": "0.5"}
    assert out["value"] == "5.0e-401"
