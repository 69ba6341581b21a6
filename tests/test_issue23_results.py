"""Issue 23, items 1-10: the reproducers of what researchers hit in real use, each a test.

Reference values are computed here independently of the code under test: the ridge error from
its closed form derived with SymPy, the crossing from a separate high-precision evaluation, the
simulated geometry from its Gram matrix.
"""

import json
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp

import symrmt
from symrmt.cli.app import main


def _cli_json(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out)


# ---------------------------------------------------------------- 1. crossings carry their digits
@pytest.fixture(scope="module")
def crossing30():
    return symrmt.crossings("tanh", over="c", between=(0.1, 1), gamma=1, geometry=symrmt.Geometry(snr=1),
                            digits=30, scan=6, progress=False)


def test_crossing_root_carries_30_digits(crossing30):
    (root,) = crossing30.roots
    # the root prints every digit asked for, at the default mpmath precision
    assert mpmath.mp.dps == 15
    text = repr(root)
    assert text.startswith("mpf('0.") and len(text.split("'")[1]) - 2 >= 29, text
    assert str(root) == mpmath.nstr(root, 30)
    # E_A - E_RR at the root, evaluated independently at 45 digits, is ~1e-30 (a 53-bit root gives ~3e-18)
    lim = symrmt.limit("tanh", root, 1, symrmt.Geometry(snr=1), digits=45)
    gap = abs(lim.attention_mp[0] - lim.ridge_mp[0])
    assert gap < mpmath.mpf("1e-29"), gap
    lim53 = symrmt.limit("tanh", float(root), 1, symrmt.Geometry(snr=1), digits=45)
    assert abs(lim53.attention_mp[0] - lim53.ridge_mp[0]) > mpmath.mpf("1e-20")  # the test can fail


def test_crossing_root_digits_in_pandas_and_json(crossing30, capsys):
    df = crossing30.to_pandas()
    assert df["c"].dtype == np.float64
    (root,) = df["root"]  # every digit, as a decimal string (a typed column)
    assert str(df["root"].dtype) == "string" and root == mpmath.nstr(crossing30.roots[0], 30)
    assert mpmath.mpf(root) == +crossing30.roots[0] or abs(mpmath.mpf(root) - crossing30.roots[0]) < 1e-29
    rc, out = _cli_json(capsys, ["crossings", "--f", "tanh", "--over", "c", "--between", "0.1,1", "--gamma", "1",
                                 "--snr", "1", "--digits", "30", "--scan", "6", "--json"])
    assert rc == 0
    (text,) = out["roots"]
    assert text == str(crossing30.roots[0]) and len(text) >= 31


# ---------------------------------------------------------------- 2. check --where c=1 proves E_RR
def _ridge_closed_form():
    c, g, s = sp.symbols("c gamma snr", positive=True)
    root = (1 - c - g + sp.sqrt((1 - c - g) ** 2 + 4 * g)) / (2 * g)
    phi = root * (1 + root) / (1 + (1 + s) * root)
    return c, -g**2 * sp.diff(phi, g)


@pytest.mark.parametrize("value", ["1", "1/2", "2"])
def test_check_where_fixed_c_proves_the_ridge_error(value):
    from symrmt.check.core import check

    c, expr = _ridge_closed_form()
    for cand in (expr, expr.subs(c, sp.Rational(value))):
        rep = check("E_RR", str(cand), where=f"c={value}", points=4, region=False)
        assert rep.status == "proved", rep.text()
        assert rep.symbolic["status"] == "proved"


def test_check_where_fixed_c_still_disproves_a_wrong_formula():
    from symrmt.check.core import check

    _c, expr = _ridge_closed_form()
    rep = check("E_RR", str(expr * sp.Rational(1000001, 1000000)), where="c=1", points=4, region=False)
    assert rep.status == "disproved", rep.text()


# ---------------------------------------------------------------- 3. exact sub-varieties in the region report
E_IN_M = "gamma**2*(m**2 + m)*(1 + 2*m + (1 + snr)*m**2)/((1 + (1 + snr)*m)**2*(2*gamma*m + gamma + c - 1))"


def test_region_reports_the_line_where_a_wrong_formula_holds_exactly():
    from symrmt.check.core import check

    # the ridge error times c (a lost factor 1/c): wrong everywhere except exactly on c = 1
    rep = check("E_RR", f"c*({E_IN_M})", points=12)
    assert rep.status == "disproved"
    exact = rep.region["exact"]
    assert [(x["parameter"], x["value"]) for x in exact] == [("c", "1")], rep.region
    assert "holds exactly on c = 1" in rep.text()
    # a boundary is not an isolated line: (1-c)/(1+snr) for E_RR0 holds for all c <= 1
    rep2 = check("E_RR0", "(1 - c)/(1 + snr)", points=10)
    assert rep2.region["exact"] == [] and rep2.region["boundaries"]


# ---------------------------------------------------------------- 4. irrational geometry reaches simulate
def test_simulate_with_irrational_angles():
    g = symrmt.Geometry.from_angles(snr=3, wk2=1, wq2=1, cos_muwk=1, cos_muwq=1, cos_wkwq=1)
    assert max(len(str(x)) for row in g.gram() for x in row) > 4000  # entries no parser would read
    s = symrmt.simulate("tanh", 0.5, [1], g, n=64, trials=2, seed=0, progress=False)
    assert np.all(np.isfinite(s.attention)) and np.all(np.isfinite(s.ridge))
    # the same model with mu, w_K, w_Q given as the float vectors of that Gram matrix: the same draws
    mu = np.sqrt(3.0)
    g2 = symrmt.Geometry(snr=3, wk2=1, wq2=1, wkwq=1, muwk=float(mu), muwq=float(mu))
    s2 = symrmt.simulate("tanh", 0.5, [1], g2, n=64, trials=2, seed=0, progress=False)
    assert np.allclose(s.attention_trials, s2.attention_trials, rtol=1e-9, atol=0)


# ---------------------------------------------------------------- 5. sweep caps per path
def test_fast_sweep_takes_a_200_by_200_grid(capsys):
    from symrmt.parsing import LIMITS, ParseLimitError

    assert LIMITS["fast_points"] >= 10**6 and LIMITS["points"] == 10**4
    grid = {"c": np.logspace(-1, 0.5, 200), "gamma": 1, "snr": np.linspace(0, 4, 200)}
    s = symrmt.sweep("tanh", grid, fast=True, certify=0, progress=False)
    assert s.shape == (200, 200) and np.all(np.isfinite(s.attention))
    # the ridge column against its closed form (Marchenko-Pastur root, written here)
    c, g, snr = s.values("c"), s.gamma, s.values("snr")
    m = (1 - c - g + np.sqrt((1 - c - g) ** 2 + 4 * g)) / (2 * g)
    dm = -(m * m + m) / (2 * g * m + g + c - 1)
    dphi = (1 + 2 * m + (1 + snr) * m * m) / (1 + (1 + snr) * m) ** 2 * dm
    assert np.allclose(s.ridge, -g * g * dphi, rtol=1e-10, atol=0)
    # the certified path keeps its cap, and says where the larger grids go
    with pytest.raises(ParseLimitError, match="fast=True"):
        symrmt.sweep("tanh", grid, progress=False)
    rc = main(["sweep", "--f", "tanh", "--grid", "c=0.1:3:200:log", "--grid", "snr=0:4:200", "--gamma", "1",
               "--fast", "--certify", "0"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and len(out) == 1 + 200 * 200 and out[0].startswith("c,")


# ---------------------------------------------------------------- 6. crossings over tied parameters
def test_crossings_over_tied_angles(capsys):
    fixed = dict(c=2, gamma=10, snr=1, wk2=4, wq2=4, wkwq=4)
    r = symrmt.crossings("tanh", over=("cos_muwk", "cos_muwq"), between=(0, 1), digits=20, scan=6, progress=False,
                         **fixed)
    assert r.over == "cos_muwk=cos_muwq" and len(r) == 1
    x = r.roots[0]
    # independently: the limits at w_K = w_Q with both cosines x, E_A = E_RR there and the sign changes
    def diff(cos):
        geo = symrmt.Geometry.from_angles(snr=1, wk2=4, wq2=4, cos_muwk=cos, cos_muwq=cos, wkwq=4)
        lim = symrmt.limit("tanh", 2, 10, geo, digits=30)
        return lim.attention_mp[0] - lim.ridge_mp[0]

    assert abs(diff(x)) < mpmath.mpf("1e-19")
    assert diff(x - mpmath.mpf("1e-3")) > 0 > diff(x + mpmath.mpf("1e-3"))  # direction -1: E_A < E_RR above
    assert r.directions == (-1,)
    for over in ("cos_muwk=cos_muwq", "cos_muwk,cos_muwq"):
        rc, out = _cli_json(capsys, ["crossings", "--f", "tanh", "--over", over, "--between", "0,1", "--c", "2",
                                     "--gamma", "10", "--snr", "1", "--wk2", "4", "--wq2", "4", "--wkwq", "4",
                                     "--digits", "20", "--scan", "6", "--json"])
        assert rc == 0 and out["roots"] == [str(x)]
    with pytest.raises(symrmt.ParameterError, match="do not also fix"):
        symrmt.crossings("tanh", over=("cos_muwk", "cos_muwq"), between=(0, 1), cos_muwk=0.5, **fixed)


# ---------------------------------------------------------------- 7. engine input
MP_EXPR = "trace(inv(Z.T*Z/n + gamma*I(n)))"
MP_DECL = ["--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n"]


def _mp_root(c, g):
    """The Marchenko-Pastur Stieltjes transform: the positive root of g m^2 + (g + c - 1) m - 1 (here, in mpmath)."""
    b = g + c - 1
    return (-b + mpmath.sqrt(b * b + 4 * g)) / (2 * g)


@pytest.mark.parametrize("text, value", [("sqrt(2)", lambda: mpmath.sqrt(2)), ("pi", lambda: mpmath.pi),
                                         ("E", lambda: mpmath.e), ("E-2", lambda: mpmath.e - 2),
                                         ("E - 2", lambda: mpmath.e - 2)])
def test_trace_at_takes_exact_irrationals(capsys, text, value):
    rc, out = _cli_json(capsys, ["trace", MP_EXPR, *MP_DECL, "--at", f"c=1/2, gamma={text}", "--digits", "30",
                                 "--json"])
    assert rc == 0, out
    assert out["at"]["gamma"] == text  # shown as typed, not as a 1000-digit rounding
    with mpmath.workdps(50):
        ref = _mp_root(mpmath.mpf(1) / 2, value())
        assert abs(mpmath.mpf(out["value"]) - ref) <= abs(ref) * mpmath.mpf("1e-29")


def test_e_minus_2_parses_as_euler_minus_2():
    from symrmt.parsing import parse_number

    assert sp.simplify(parse_number("E-2", what="x") - (sp.E - 2)) == 0
    assert sp.simplify(parse_number("E+1", what="x") - (sp.E + 1)) == 0
    assert parse_number("1E-2", what="x") == sp.Rational(1, 100)  # a literal keeps its exponent


def test_bind_and_simulate_take_what_limit_takes():
    from symrmt.engine import Model, bind
    from symrmt.engine.simulate import simulate_trace

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    e = m.parse(MP_EXPR)
    for g in ("sqrt(2)", sp.sqrt(2)):
        lim = m.limit(e, at={"c": "1/2", "gamma": g}, digits=20)
        sim = simulate_trace(bind(e, {"c": "1/2", "gamma": g}, 128), trials=4, seed=0, progress=False)
        # 4 se + 2% covers the finite-n bias of a resolvent trace at n = 128
        assert abs(sim["mean"] - float(lim.value)) <= 4 * sim["se"] + 0.02 * float(lim.value)
    with pytest.raises(symrmt.ParameterError, match="gamma"):
        bind(e, {"c": "1/2", "gamma": "x"}, 64)


def _silverstein(c, g, values, weights):
    """m = trace(inv(Z.T D Z/n + g I)) from 1/m = g + c sum_a w_a v_a/(1 + v_a m), solved here."""
    def f(m):
        return 1 / m - g - c * mpmath.fsum(w * v / (1 + v * m) for v, w in zip(values, weights))
    return mpmath.findroot(f, 1 / g)


def test_trace_diag_file_300_atoms(tmp_path, capsys):
    path = tmp_path / "law.npy"
    np.save(path, np.array([(50 + a) / 100 for a in range(300)]))
    rc, out = _cli_json(capsys, ["trace", "trace(inv(Z.T*D*Z/n + gamma*I(n)))", "--matrix", "Z=gaussian(p,n)",
                                 "--matrix", f"D=diag_file(p, {path})", "--dim", "p=c*n", "--at",
                                 "c=1/2, gamma=1/10", "--digits", "30", "--json"])
    assert rc == 0, out
    with mpmath.workdps(50):
        vals = [mpmath.mpf(50 + a) / 100 for a in range(300)]
        ref = _silverstein(mpmath.mpf(1) / 2, mpmath.mpf(1) / 10, vals, [mpmath.mpf(1) / 300] * 300)
        assert abs(mpmath.mpf(out["value"]) - ref) <= abs(ref) * mpmath.mpf("1e-29")


def test_diag_file_is_validated(tmp_path):
    from symrmt.engine.io import load_law

    def saved(name, arr, **kw):
        p = tmp_path / name
        np.save(p, arr, **kw)
        return p

    vals, ws = load_law(saved("ok.npy", np.array([[1.0, 2.0, 3.0], [0.5, 0.25, 0.25]])))
    assert sum(ws) == 1 and vals[0] == 1
    bad = [
        (saved("obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True), "without pickles"),
        (saved("shape.npy", np.ones((3, 3))), "shape"),
        (saved("sum.npy", np.array([[1.0, 2.0], [0.5, 0.6]])), "sum to"),
        (saved("neg.npy", np.array([[1.0, 2.0], [1.5, -0.5]])), "positive"),
        (saved("nan.npy", np.array([1.0, np.nan])), "finite"),
        (saved("many.npy", np.ones(4097)), "4096"),
        (saved("str.npy", np.array(["1", "2"])), "real numbers"),
    ]
    for path, msg in bad:
        with pytest.raises(symrmt.ParameterError, match=msg):
            load_law(path)
    with pytest.raises(symrmt.ParameterError, match="cannot read"):
        load_law(tmp_path / "missing.npy")


def test_json_errors_are_json(capsys):
    rc = main(["trace", MP_EXPR, *MP_DECL, "--at", "c=1/2, gamma=x", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 2 and out["exit"] == 2 and "gamma" in out["error"] and out["verb"] == "trace"
    rc = main(["limit", "--f", "tanh", "--c", "0.5", "--json"])  # an argparse error
    out = json.loads(capsys.readouterr().out)
    assert rc == 2 and "--gamma" in out["error"]


# ---------------------------------------------------------------- 8. one way to give the geometry and f
def test_geometry_keywords_and_dicts_everywhere():
    ref = symrmt.limit("tanh", 0.5, [0.1, 1], symrmt.Geometry(snr=1, wk2=1), digits=20)
    for kwargs in ({"snr": 1, "wk2": 1}, {"geometry": {"snr": 1, "wk2": 1}}, {"geometry": {"snr": 1}, "wk2": 1},
                   {"geometry": {"gram": [[1, 0, 0], [0, 1, 0], [0, 0, 0]]}}):
        r = symrmt.limit("tanh", 0.5, [0.1, 1], digits=20, **kwargs)
        assert r.attention_mp == ref.attention_mp and r.ridge_mp == ref.ridge_mp, kwargs
    sim_ref = symrmt.simulate("tanh", 0.5, [1], symrmt.Geometry(snr=1), n=64, trials=3, seed=2, progress=False)
    for kwargs in ({"snr": 1}, {"geometry": {"snr": 1}}):
        sim = symrmt.simulate("tanh", 0.5, [1], n=64, trials=3, seed=2, progress=False, **kwargs)
        assert np.array_equal(sim.attention_trials, sim_ref.attention_trials)
    s = symrmt.sweep("tanh", {"c": [0.5], "gamma": [0.1, 1]}, geometry={"snr": 1, "wk2": 1}, digits=20,
                     progress=False)
    assert tuple(s.attention_mp) == ref.attention_mp
    with pytest.raises(symrmt.ParameterError, match="given twice"):
        symrmt.limit("tanh", 0.5, 1, {"snr": 1}, snr=2)
    with pytest.raises(symrmt.ParameterError, match="unknown geometry entry"):
        symrmt.limit("tanh", 0.5, 1, snrr=1)
    with pytest.raises(symrmt.ParameterError, match="unknown entry"):
        symrmt.limit("tanh", 0.5, 1, {"snrr": 1})


def test_one_public_path_for_the_geometry_classes():
    import symrmt.models.attention.geometry
    import symrmt.models.attention.params

    assert symrmt.LowRankGeometry is symrmt.models.attention.geometry.LowRankGeometry
    assert not hasattr(symrmt.models.attention.params, "LowRankGeometry")  # one path: no alias left in params
    assert symrmt.Geometry is symrmt.models.attention.geometry.Geometry
    assert symrmt.LowRankGeometry.__module__ == "symrmt.models.attention.geometry"


def test_low_level_simulate_takes_the_same_f():
    from symrmt.models.attention.montecarlo import simulate
    from symrmt.hermite import Nonlinearity

    ref = simulate(np.tanh, 64, 0.5, [1], trials=3, seed=1)["attention"]["trials"]
    t = sp.Symbol("t")
    for f in ("tanh", "tanh(t)", Nonlinearity("tanh"), sp.tanh(t)):
        got = simulate(f, 64, 0.5, [1], trials=3, seed=1, geometry={"snr": 0})["attention"]["trials"]
        assert np.allclose(got, ref, rtol=1e-12, atol=0), f
    with pytest.raises(symrmt.ParameterError):
        simulate(3, 64, 0.5, [1], trials=3)


# ---------------------------------------------------------------- 9. irrational inner products print short
def _alignment_sweep(k=5):
    cosines = [i / (k - 1) for i in range(k)]
    return symrmt.sweep("tanh", {"c": 0.5, "gamma": 1, "snr": 2, "wk2": 1, "wq2": 1, "wkwq": 1,
                                 ("cos_muwk", "cos_muwq"): cosines}, digits=15, progress=False)


def test_irrational_inner_products_print_as_decimals():
    s = _alignment_sweep()
    muwk = [p["muwk"] for p in s.points]
    assert max(len(str(v)) for v in muwk) > 1000  # kept exactly inside
    text, html = str(s), s._repr_html_()
    assert max(len(line) for line in text.splitlines()) < 200 and len(html) < 4000
    # the decimals shown are the exact values rounded to the 15 digits asked (checked here in mpmath)
    with mpmath.workdps(40):
        for v, row in zip(muwk, s._rows()):
            shown = row[list(s.columns).index("muwk")]
            exact = mpmath.mpf(v.numerator) / v.denominator
            assert abs(mpmath.mpf(shown) - exact) <= abs(exact) * mpmath.mpf("1e-14") + mpmath.mpf("1e-40"), shown
    assert any(len(row[6]) > 1000 for row in s._rows(exact=True))  # the exact form on request
    geo = symrmt.Geometry.from_angles(snr=2, wk2=1, wq2=1, cos_muwk=0.3)
    lim = symrmt.limit("tanh", 0.5, 1, geo, digits=20)
    with mpmath.workdps(40):
        ref = mpmath.nstr(mpmath.sqrt(2) * 3 / 10, 20, strip_zeros=False)
    assert lim.params()["geometry"]["muwk"] == ref
    assert len(lim.params(exact=True)["geometry"]["muwk"]) > 1000
    assert "muwk = 0.42426406871192851464" in str(lim) and len(lim._repr_html_()) < 2000


def test_cli_params_print_decimals_unless_exact(capsys):
    base = ["limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--snr", "2", "--wk2", "1", "--wq2", "1",
            "--cos-muwk", "0.3", "--json"]
    rc, out = _cli_json(capsys, base)
    assert rc == 0 and out["params"]["geometry"]["muwk"] == "0.424264068711929"
    rc, out = _cli_json(capsys, base + ["--exact-params"])
    assert rc == 0 and len(out["params"]["geometry"]["muwk"]) > 1000
    rc = main(["sweep", "--f", "tanh", "--grid", "cos_muwk=0.3,0.5", "--c", "0.5", "--gamma", "1", "--snr", "2",
               "--wk2", "1", "--wq2", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0 and max(len(line) for line in lines) < 200 and lines[1].split(",")[6] == "0.424264068711929"


# ---------------------------------------------------------------- 10. float gammas print short
def test_logspace_gammas_print_short():
    gammas = np.logspace(-2, 0, 5)
    lim = symrmt.limit("tanh", 0.5, gammas, digits=12)
    col = [line.split()[0] for line in str(lim).splitlines()[3:]]
    assert col == ["0.01", "0.0316228", "0.1", "0.316228", "1"]
    assert lim.gamma_exact[1] == Fraction(repr(float(gammas[1])))  # the value used is the float given
    sim = symrmt.simulate("tanh", 0.5, gammas, n=32, trials=2, progress=False)
    assert [line.split()[0] for line in str(sim).splitlines()[3:]] == col
    # values that agree to 6 digits get the digits that tell them apart
    close = [1.0, 1.0000001, 1.0000002]
    assert [line.split()[0] for line in str(symrmt.limit("tanh", 0.5, close, digits=8)).splitlines()[3:]] == \
        ["1", "1.0000001", "1.0000002"]
