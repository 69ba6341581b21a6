"""Performance machinery: the compiled-code disk cache, the product-form system the solver
evaluates, the precision claims (D digits against D + 30), and ``symrmt bench --quick``."""

import json
import random
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from symrmt.codegen import codecache
from symrmt.core.linalg import qr_solve
from symrmt.core.numbers import FLOAT_EPS
from symrmt.models.attention import compiled as NC
from symrmt.models.attention import solver as N
from symrmt.models.attention import equations as S
from symrmt.models.attention import theory as T
from symrmt.models.attention.geometry import Geometry

pytestmark = pytest.mark.slow  # seconds a test: outside the fast tier (pytest -m "not slow")

GENERAL = Geometry(snr=1, wk2=1, wq2="1/4", wkwq="3/10", muwk="1/2", muwq="-1/10")
ALIGNED = Geometry(snr=1, wk2=1, wq2=1, wkwq=1, muwk=1, muwq=1)


# ---------------------------------------------------------------- the system the solver evaluates

def test_product_form_is_the_expanded_fixed_point_polynomial():
    """The unexpanded (product) form the solver compiles is the same 9 polynomials."""
    prod = S.fixed_point_polynomial(expand=False)
    expd = S.fixed_point_polynomial()
    for a, b in zip(prod, expd):
        assert sp.expand(a - b) == 0


def test_compiled_fjg_matches_exact_jacobian_and_gamma_derivative():
    fjg = N.fixed_point_fjg()[0]
    F, J, Fg = S.fixed_point_system()  # the expanded reference, evaluated exactly by SymPy
    rng = random.Random(3)
    gv = [sp.Rational(rng.randint(-9, 9), rng.randint(1, 9)) for _ in range(6)]
    pv = [sp.Rational(1, 7), sp.Rational(1, 3), sp.Rational(3, 5), sp.Rational(1, 2), sp.Rational(1, 4)]
    sub = dict(zip(S.G_SYMBOLS, gv)) | dict(zip(S.PARAMS, pv))
    exact = [e.subs(sub) for e in list(F) + list(J) + list(Fg)]
    with mpmath.workdps(60):
        got = fjg([mpmath.mpf(x.p) / x.q for x in gv], [mpmath.mpf(x.p) / x.q for x in pv])
        assert len(got) == len(exact) == 72
        for g, e in zip(got, exact):
            assert abs(g - mpmath.mpf(sp.N(e, 80))) <= mpmath.mpf(10) ** -50 * (1 + abs(g))


def test_compiled_tangent_residual_matches_exact_jacobian_times_direction():
    """The fast path's long-double residuals: ``F`` and ``(dF/dG) V + dF/dgamma`` (forward mode on the product
    form) against the expanded system's exact Jacobian and gamma derivative, evaluated by SymPy."""
    tangent = NC.fixed_point_tangent_function("mpmath")
    F, J, Fg = S.fixed_point_system()
    rng = random.Random(5)
    gv = [sp.Rational(rng.randint(-9, 9), rng.randint(1, 9)) for _ in range(6)]
    vv = [sp.Rational(rng.randint(-9, 9), rng.randint(1, 9)) for _ in range(6)]
    pv = [sp.Rational(2, 7), sp.Rational(3, 2), sp.Rational(3, 5), sp.Rational(1, 2), sp.Rational(-1, 4)]
    sub = dict(zip(S.G_SYMBOLS, gv)) | dict(zip(S.PARAMS, pv))
    exact = [e.subs(sub) for e in list(F) + list(J * sp.Matrix(vv) + Fg)]
    assert any(e != 0 for e in exact[9:])  # a direction off the solution: the check is not 0 == 0
    with mpmath.workdps(60):
        got = tangent(*([mpmath.mpf(x.p) / x.q for x in xs] for xs in (gv, pv, vv)))
        assert len(got) == len(exact) == 18
        for g, e in zip(got, exact):
            assert abs(g - mpmath.mpf(sp.N(e, 80))) <= mpmath.mpf(10) ** -50 * (1 + abs(g))


def test_batch_qr_reused_for_a_second_right_hand_side():
    """:func:`symrmt.core.batch.qr_solve` on one factorization: the same least-squares solutions as
    ``numpy.linalg.lstsq`` per system, and ``nan`` in a rank-deficient row only."""
    import numpy as np

    from symrmt.core import batch

    rng = np.random.default_rng(4)
    J = rng.standard_normal((5, 9, 6))
    J[4, :, 5] = J[4, :, 0]  # rank-deficient: refused
    b1, b2 = rng.standard_normal((5, 9)), rng.standard_normal((5, 9))
    factor = batch.qr_columns(J.transpose(2, 1, 0).copy(), 1e12)
    x1 = batch.qr_solve(factor, b1.T[:, None, :])[:, 0, :].T
    x2 = batch.qr_solve(factor, b2.T[:, None, :])[:, 0, :].T
    for i in range(4):
        for x, b in ((x1, b1), (x2, b2)):
            ref = np.linalg.lstsq(J[i], b[i], rcond=None)[0]
            assert np.abs(x[i] - ref).max() <= 1e-12 * (1 + np.abs(ref).max())
    assert np.isnan(x1[4]).all() and np.isnan(x2[4]).all()


def test_qr_solve_two_right_hand_sides_float_and_mpf():
    rows = [[2, 1], [1, 3], [1, -1]]
    x1, x2 = [1, -2], [3, 5]
    b1 = [sum(r[j] * x1[j] for j in range(2)) for r in rows]
    b2 = [sum(r[j] * x2[j] for j in range(2)) for r in rows]
    got = qr_solve([[float(v) for v in r] for r in rows], [b1, b2], __import__("math").sqrt, FLOAT_EPS)
    assert max(abs(a - b) for a, b in zip(got[0] + got[1], x1 + x2)) < 1e-13
    with mpmath.workdps(50):
        got = qr_solve([[mpmath.mpf(v) for v in r] for r in rows], [b1, b2], mpmath.sqrt, mpmath.eps)
        assert max(abs(a - b) for a, b in zip(got[0] + got[1], x1 + x2)) < mpmath.mpf(10) ** -45


# ---------------------------------------------------------------- the disk cache

def _recipe(counter):
    def build():
        counter.append(1)
        x, y = sp.symbols("x y")
        return [x, y], [x**2 * y + sp.Rational(1, 3), (x + y) ** 3]

    return build


def test_cache_roundtrip_corruption_and_unwritable(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMRMT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("SYMRMT_NO_CACHE", raising=False)
    builds = []
    name = "test_recipe_roundtrip"
    f1 = N.compile_recipe(name, _recipe(builds))
    assert len(builds) == 1 and len(list((tmp_path / "c").glob(f"{name}-*.py"))) == 1
    f2 = N.compile_recipe(name, _recipe(builds))
    assert len(builds) == 1  # loaded from disk, not derived again
    with mpmath.workdps(40):
        a, b = f1(mpmath.mpf(2), mpmath.mpf(5)), f2(mpmath.mpf(2), mpmath.mpf(5))
        assert a == b and abs(a[0] - (20 + mpmath.mpf(1) / 3)) < mpmath.mpf(10) ** -38  # 1/3 kept exact
    # a corrupted entry is ignored and rewritten
    (path,) = (tmp_path / "c").glob(f"{name}-*.py")
    path.write_text(path.read_text()[:-20] + "garbage\n")
    f3 = N.compile_recipe(name, _recipe(builds))
    assert len(builds) == 2 and f3(2, 5)[1] == 343
    assert codecache.load(name, codecache.source_key(name)) is not None
    # an unusable cache location (a file where the folder should be) is not an error
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("SYMRMT_CACHE_DIR", str(blocker / "sub"))
    assert N.compile_recipe(name, _recipe(builds))(1, 1)[1] == 8 and len(builds) == 3
    # switched off: nothing is written
    monkeypatch.setenv("SYMRMT_CACHE_DIR", str(tmp_path / "off"))
    monkeypatch.setenv("SYMRMT_NO_CACHE", "1")
    N.compile_recipe(name, _recipe(builds))
    assert len(builds) == 4 and not (tmp_path / "off").exists()


def test_cached_fixed_point_code_equals_fresh_derivation(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMRMT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SYMRMT_NO_CACHE", raising=False)
    NC.fixed_point_fjg.cache_clear()  # the functions in memory: compiled again, through the cache directory
    try:
        fresh = NC.fixed_point_fjg("mpmath")[0]  # cold: derived and written
        NC.fixed_point_fjg.cache_clear()
        loaded = NC.fixed_point_fjg("mpmath")[0]  # warm: read back
    finally:
        NC.fixed_point_fjg.cache_clear()  # nothing compiled from the temporary directory stays in memory
    assert loaded.source == fresh.source and "symrmt-cache" in loaded.fn.__code__.co_filename
    with mpmath.workdps(50):
        g = [mpmath.mpf(k) / 7 for k in range(1, 7)]
        p = [mpmath.mpf(1) / 10, mpmath.mpf(1) / 2, mpmath.mpf(3) / 5, mpmath.mpf(1) / 2, mpmath.mpf(0)]
        assert fresh(g, p) == loaded(g, p)


# ---------------------------------------------------------------- precision claims

def _fresh(f, c, g, geo, digits):
    T._FIXED_POINTS.clear()  # an independent solve: its own continuation
    return T.attention_limit(f, c, [g], geo, digits=digits)[0]


def _agreeing_digits(a, b):
    with mpmath.workdps(200):
        d = abs(mpmath.mpf(a) - mpmath.mpf(b))
        return float("inf") if d == 0 else float(-mpmath.log10(d / abs(mpmath.mpf(b))))


@pytest.mark.parametrize("c, g", [("1/2", "1e-3"), ("0.98", "1e-3"), ("1.02", "1e-3")])
def test_30_digits_agree_with_60_digits(c, g):
    lo = _fresh("tanh", c, g, GENERAL, 30)
    hi = _fresh("tanh", c, g, GENERAL, 60)
    assert _agreeing_digits(lo, hi) >= 29, (mpmath.nstr(lo, 30), mpmath.nstr(hi, 60))


@pytest.mark.parametrize("c", ["0.98", "1.02"])
def test_100_digits_at_gamma_1e_8_near_c_1(c):
    # erf: exact Hermite data, so only the solver is exercised (and it is cheap)
    lo = _fresh("erf", c, "1e-8", GENERAL, 100)
    hi = _fresh("erf", c, "1e-8", GENERAL, 130)
    assert _agreeing_digits(lo, hi) >= 99, (mpmath.nstr(lo, 100), mpmath.nstr(hi, 130))


def test_curve_equals_points_solved_alone():
    gammas = ["100", "3", "0.2", "0.01", "1e-3"]
    curve = T.attention_limit("tanh", "1/2", gammas, ALIGNED, digits=25)
    for g, v in zip(gammas, curve):
        assert _agreeing_digits(v, _fresh("tanh", "1/2", g, ALIGNED, 25)) >= 24


def test_unreachable_digits_raise_and_print_nothing(monkeypatch, capsys):
    from symrmt.cli.app import main

    monkeypatch.setattr(T, "_agree", lambda x, y, digits: False)  # the internal seam: two precisions never agree
    with pytest.raises(T.PrecisionError, match="could not certify 20 digits"):
        T.attention_limit("erf", "1/2", ["0.1"], GENERAL, digits=20)
    code = main(["limit", "--f", "erf", "--c", "1/2", "--gamma", "0.1", "--snr", "1", "--digits", "20"])
    out, err = capsys.readouterr()
    assert code == 3 and out == "" and "PrecisionError" in err


def test_stalled_newton_escalates_then_reports(monkeypatch):
    calls = []
    real = N.FixedPoint.solve

    def stalling(self, gamma, dps, start=None):
        calls.append(dps)
        g, dg, step = real(self, gamma, dps, start)
        return g, dg, (mpmath.mpf(1) if start is None else step)  # the low-precision solve "stalls"

    monkeypatch.setattr(N.FixedPoint, "solve", stalling)
    with pytest.raises(T.PrecisionError, match="stalled"):
        T.attention_limit({"a1": "1/2", "nu": "1/2"}, "1/2", ["0.5"], Geometry(), digits=15)
    # before reporting, the solve was retried at rising precisions above the digits asked
    assert len(calls) >= 2 and calls == sorted(set(calls)) and calls[0] > 15, calls


# ---------------------------------------------------------------- bench

def test_bench_quick_runs_and_reports(capsys):
    from symrmt.cli.app import main

    assert main(["bench", "--quick", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    th, sim = res["theory"], res["simulation"]
    assert th["route"] == "aligned"
    assert th["agreement"][0]["agree"] >= 28
    assert all(s["ratio"] > 0 and s["floor_s"] > 0 for s in sim["sizes"])
    assert sim["parallel"]["identical"] is True
    assert any(v["what"].startswith("one point at 50 digits") for v in res["verdicts"])
    text = __import__("symrmt.bench.run", fromlist=["format_report"]).format_report(res)
    assert "| n | p | trial s | floor s | trial/floor |" in text
    assert res["engine"]["cold_cache"]["blocks"] == [6] and "Trace engine" in text
    fast = res["fast"]  # the float64 grid path, measured against the mpmath solver in the same run
    for kind in ("c_snr", "cos_snr"):
        assert fast[kind]["accuracy"]["max_gap"] <= 1e-10 and fast[kind]["mpmath_per_point_s"] > 0
    assert "### Fast path (float64 grids) against the mpmath solver, same run" in text
    floor = fast["floor"]  # CPU per point against NumPy's Marchenko-Pastur closed form (a ratio; no time asserted)
    assert all(floor[k]["ratio"] > 0 and floor[k]["fallbacks"] == 0 for k in ("c_snr", "c_gamma"))
    assert floor["c_gamma"]["newton_step_ratio"] > 0 and "one Newton step" in text
    assert floor["c_gamma"]["check_ratio"] > 0 and floor["c_gamma"]["phi_ratio"] > 0 and "long-double check" in text
    assert "### Fast grid floor" in text
    dens = res["density_fast"]  # the float64 density path: 12 correct digits at every point of five laws
    assert len(dens["laws"]) == 5 and all(law["min_digits"] >= 12 for law in dens["laws"])
    assert "float64 path (--fast)" in text
    fin = res["finite_n"]  # the finite-n prediction against the mpmath solve of the same discretized system
    assert all(d["digits"] >= 15 for d in fin["digits"]) and all(p["cpu_s"] > 0 for p in fin["points"])
    assert "### Finite-n: digits against the mpmath solve" in text
    if "skipped" not in res["prove"]:
        assert res["prove"]["small"]["ratio"] > 0
        assert any(v["what"].startswith("prove=True / unproved, Marchenko-Pastur") for v in res["verdicts"])


def test_fraction_inputs_still_exact():
    # exact Hermite data as Fractions go through the same cache of Hermite inputs untouched
    v = T.attention_limit({"a1": Fraction(1, 2), "nu": Fraction(1, 2)}, "1/2", ["1"], Geometry(snr=1), digits=20)
    w = T.attention_limit({"a1": "1/2", "nu": "1/2"}, "1/2", ["1"], Geometry(snr=1), digits=20)
    assert v == w


def test_aligned_phi_lu_form_is_the_same_rational_function():
    inv_form, lu_form = S.aligned_phi(), S.aligned_phi(lu=True)
    rng = random.Random(7)
    for _ in range(3):
        syms = list(S.G_SYMBOLS) + [S.a1, S.c, S.snr, S.wkwq]
        sub = {s: sp.Rational(rng.randint(1, 9), rng.randint(1, 9)) for s in syms}
        assert inv_form.subs(sub) == lu_form.subs(sub)  # exact rationals


def test_aligned_phi_in_snr_is_the_same_rational_function():
    """The form in ``||mu||^2`` (Cramer's rule) with its coefficients substituted is the aligned closed form,
    exactly, at random rationals; and its coefficients are free of ``||mu||^2``."""
    coeffs, form = S.aligned_phi_in_snr()
    phi = S.aligned_phi(lu=True)
    assert all(S.snr not in e.free_symbols for e in coeffs)
    rng = random.Random(11)
    for _ in range(3):
        syms = list(S.G_SYMBOLS) + [S.a1, S.c, S.snr, S.wkwq]
        sub = {s: sp.Rational(rng.randint(-9, 9), rng.randint(1, 9)) for s in syms}
        sub[S.c] = sp.Rational(rng.randint(1, 9), rng.randint(1, 9))
        full = form.subs(dict(zip(S.SNR_COEFFS, [e.subs(sub) for e in coeffs]))).subs(sub)
        assert full == phi.subs(sub)  # exact rationals


def test_aligned_phi_from_coefficients_matches_closed_form_and_derivative():
    """The two compiled parts of the rational form (coefficients per fixed point, then the form per point)
    give the compiled aligned closed form's ``varphi`` and ``dvarphi/dgamma`` at 40 digits (mpmath targets)."""
    coef_fn, form_fn = NC.aligned_phi_coefficients("mpmath"), NC.aligned_phi_in_snr_function("mpmath")
    closed = NC.closed_form_phi("aligned")
    rng = random.Random(5)
    with mpmath.workdps(40):
        for _ in range(3):
            g = [mpmath.mpf(rng.uniform(-1, 1)) for _ in range(6)]
            dg = [mpmath.mpf(rng.uniform(-1, 1)) for _ in range(6)]
            a1, c, snr, w = (mpmath.mpf(rng.uniform(0.1, 2)) for _ in range(4))
            v = coef_fn(g, dg, a1, c, w)
            got = form_fn([g[0]] + list(v[:6]), [dg[0]] + list(v[6:]), snr)
            ref = closed(g, dg, a1, c, snr, w)
            for x, y in zip(got, ref):
                assert abs(x - y) <= mpmath.mpf(10) ** -35 * (1 + abs(y))


def test_ridge_in_two_parts_is_the_stable_closed_form():
    """The root once per ``(gamma, c)``, then ``E_RR`` from it: the compiled stable closed form at 40 digits,
    on both sides of its ``gamma + c = 1`` switch."""
    root, rest, whole = NC.mp_root_function("mpmath"), NC.ridge_in_m_function("mpmath"), NC.ridge_function()
    with mpmath.workdps(40):
        for g, c, snr in (("0.01", "0.5", "2"), ("3", "0.25", "0"), ("1e-6", "4", "0.5"), ("1e6", "1", "8")):
            g, c, snr = mpmath.mpf(g), mpmath.mpf(c), mpmath.mpf(snr)
            ref = whole(g, c, snr)
            assert abs(rest(root(g, c), g, c, snr) - ref) <= mpmath.mpf(10) ** -35 * abs(ref)


def test_float_version_runs_the_same_generated_code():
    fjg = N.fixed_point_fjg()[0]
    ffjg = fjg.float_version()
    assert ffjg is not None
    g = [0.3, -0.2, 0.1, -0.4, 0.9, 0.05]
    p = (0.7, 0.5, 0.6, 0.45, 0.0)
    with mpmath.workdps(30):
        ref = fjg([mpmath.mpf(x) for x in g], [mpmath.mpf(x) for x in p])
    got = ffjg(g, p)
    assert all(isinstance(x, (float, int)) for x in got)  # no mpf: plain float arithmetic
    assert max(abs(a - float(b)) for a, b in zip(got, ref)) <= 1e-13 * max(1, max(abs(float(b)) for b in ref))


def test_mpmath_continuation_takes_over_when_floats_fail(monkeypatch):
    args = ({"a1": "1/2", "nu": "1/2"}, "0.98", ["1e-5"], GENERAL)
    T._FIXED_POINTS.clear()
    ref = T.attention_limit(*args, digits=20)[0]

    def no_floats(self, gamma):
        raise N.ConvergenceError("float continuation disabled by the test")

    monkeypatch.setattr(N.FixedPoint, "_float_continue", no_floats)  # the internal seam: the float path fails
    T._FIXED_POINTS.clear()
    # the two paths solve to the same 20 certified digits (each value keeps the bits of its own solve)
    assert str(T.attention_limit(*args, digits=20)[0]) == str(ref)
