"""The vectorised float64 path (symrmt.models.attention.fast.solve_grid): agreement with the mpmath solver at
random points of every route, the fallback of failing points, and that its NumPy code is
printed from the same SymPy systems as the mpmath code.

Tolerance of the agreement tests: 1e-10 relative.  That is the accuracy the float path
promises away from c = 1 and for gamma >= 1e-2 (its fallback threshold on the estimated
float64 error is 1e-11, and the returned values are the long-double-corrected ones);
measured gaps there are about 1e-15 (docs/performance.md), so the test has five orders of
margin against rounding and none against a wrong formula, branch or route, which would show
as gaps of order 1e-3 or more.
"""

import math

import mpmath
import numpy as np
import pytest

from symrmt.codegen import codecache
from symrmt.models.attention import fast as F
from symrmt.models.attention import batch as B
from symrmt.codegen import compile as N
from symrmt.models.attention import compiled as NR
from symrmt.models.attention import equations as S
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.errors import ParameterError
from symrmt.models.attention.theory import attention_limit, ridge_limit

TOL = 1e-10


def _rel(x, exact):
    return float(abs(mpmath.mpf(x) - exact) / abs(exact))


def _random_geometries(rng, n):
    """Random exact geometries from vectors: even k aligned (w_K, w_Q multiples of mu by k/8,
    an exactly rank-one Gram), odd k general (rank three)."""
    out = []
    for k in range(n):
        mu = rng.normal(size=3) * rng.uniform(0.3, 2)
        wk = rng.normal(size=3) * rng.uniform(0.3, 1.5)
        wq = rng.normal(size=3) * rng.uniform(0.3, 1.5)
        if k % 2 == 0:
            wk, wq = mu * rng.integers(-8, 9) / 8, mu * rng.integers(1, 9) / 8
        out.append(LowRankGeometry.from_vectors(mu, wk[:, None], wq[:, None]))
    return out


def _entries(geo):
    """The float Gram entries of a rank-one LowRankGeometry, keyed as solve_grid wants them."""
    g = geo.gram()
    return {"snr": float(g[0][0]), "wk2": float(g[1][1]), "wq2": float(g[2][2]), "wkwq": float(g[1][2]),
            "muwk": float(g[0][1]), "muwq": float(g[0][2])}


@pytest.mark.slow  # seconds per call: outside the fast tier
@pytest.mark.parametrize("f, diagonal", [("erf", "zero"), ("cos", "zero"), ("relu", "keep")])
def test_agrees_with_mpmath_at_random_points(f, diagonal):
    """Random (c, gamma, geometry) with |c - 1| >= 0.02, gamma in [1e-2, 10]: every route.

    erf: noise-only, aligned and general routes; centered cos (a_1 = 0): the a1_zero route;
    relu with the kept diagonal (d = 1).  The float path must not fall back here, so that
    the float values themselves are what is compared.
    """
    rng = np.random.default_rng(7)
    n = 6
    c = np.exp(rng.uniform(math.log(1 / 16), math.log(4), n))
    c = np.where(abs(c - 1) < 0.02, c + 0.05, c)
    gamma = np.exp(rng.uniform(math.log(1e-2), math.log(10), n))
    geos = _random_geometries(rng, n)
    geos[0] = LowRankGeometry([[0, 0, 0], [0, 1, 0], [0, 0, 1]])  # mu = 0: the noise-only route
    rows = [_entries(g) for g in geos]
    pts = {"c": c, "gamma": gamma} | {k: np.array([r[k] for r in rows]) for k in rows[0]}
    fn = "cos(t) - exp(-1/2)" if f == "cos" else f
    res = F.solve_grid(fn, pts, diagonal=diagonal)
    assert not res.fallback.any()
    routes = set(res.route.tolist())
    assert routes >= ({"noise_only", "a1_zero"} if f == "cos" else {"noise_only", "aligned", "general"})
    for i in range(n):
        geo = geos[i]
        a = attention_limit(fn, float(c[i]), [float(gamma[i])], geo, diagonal, digits=20)[0]
        r = ridge_limit(float(c[i]), [float(gamma[i])], geo.snr, digits=20)[0]
        assert _rel(res.attention[i], a) <= TOL, (i, res.attention[i], a)
        assert _rel(res.ridge[i], r) <= TOL, (i, res.ridge[i], r)
        assert res.error_estimate[i] <= F.FALLBACK_TOL


def test_rank_two_weights_through_gram_key():
    """Rank-r weights (r = 2) given as Gram matrices: the general Woodbury route of size 18."""
    g = [[1, 0.2, 0, 0.3, 0.1], [0.2, 1, 0, 0.5, 0], [0, 0, 0.5, 0, 0.25], [0.3, 0.5, 0, 1, 0],
         [0.1, 0, 0.25, 0, 1]]
    res = F.solve_grid("erf", {"c": [0.5, 2.0], "gamma": [1.0, 0.3], "gram": np.array([g, g])})
    assert not res.fallback.any() and res.route.tolist() == ["general", "general"]
    for i, (c, gam) in enumerate([(0.5, 1.0), (2.0, 0.3)]):
        a = attention_limit("erf", c, [gam], LowRankGeometry(g), digits=20)[0]
        assert _rel(res.attention[i], a) <= TOL


def test_failing_point_falls_back_and_is_marked(monkeypatch):
    """A point whose float check fails is recomputed by mpmath, marked, and never dropped."""
    real_refine = B.refine

    def broken_refine(g, dg, *args):  # pretend the residual check failed at the second fixed point
        gl, dgl, resid = real_refine(g, dg, *args)
        resid = resid.copy()
        resid[1] = 1.0
        return gl, dgl, resid

    monkeypatch.setattr(B, "refine", broken_refine)
    c = np.array([0.25, 0.5, 2.0])
    res = F.solve_grid("erf", {"c": c, "gamma": np.ones(3), "snr": np.ones(3)})
    assert res.fallback.tolist() == [False, True, False]
    assert res.timings["fallbacks"] == 1
    exact = attention_limit("erf", 0.5, [1], Geometry(snr=1), digits=15)[0]
    assert res.attention[1] == float(exact)  # the mpmath value, not a float-path value


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_tiny_gamma_falls_back_where_float64_cannot_deliver():
    """gamma = 1e-11 at c = 0.19: the float64 and long-double values disagree beyond the
    threshold (measured about 6e-10), so the point goes to mpmath; gamma = 1 stays float."""
    res = F.solve_grid("erf", {"c": [0.19, 0.19], "gamma": [1e-11, 1.0], "snr": [1.0, 1.0]})
    assert res.fallback.tolist() == [True, False]
    exact = attention_limit("erf", 0.19, [1e-11], Geometry(snr=1), digits=15)[0]
    assert _rel(res.attention[0], exact) <= 1e-14


def test_small_gamma_stays_float_where_float64_delivers():
    """gamma = 1e-9 at c = 0.19: an ill-conditioned fixed point whose float64 Newton steps shrink slowly near
    the rounding floor; the continuation still reaches it (no fallback) and the value matches the 15-digit
    mpmath solve."""
    res = F.solve_grid("erf", {"c": [0.19], "gamma": [1e-9], "snr": [1.0]})
    assert res.fallback.tolist() == [False]
    exact = attention_limit("erf", 0.19, [1e-9], Geometry(snr=1), digits=15)[0]
    assert _rel(res.attention[0], exact) <= 1e-13


def test_certify_reports_the_largest_gap():
    c = np.linspace(0.1, 3.0, 8)
    res = F.solve_grid("erf", {"c": c, "gamma": np.full(8, 0.5), "snr": np.full(8, 2.0)}, certify=2, seed=3)
    assert len(res.certified) == 2 and res.certified_gap == max(g for _, g in res.certified)
    assert res.certified_gap <= TOL


def test_bad_input_is_refused():
    with pytest.raises(ParameterError, match="gamma"):
        F.solve_grid("erf", {"c": [1.5]})
    with pytest.raises(ParameterError, match="positive"):
        F.solve_grid("erf", {"c": [-1.0], "gamma": [1.0]})
    with pytest.raises(ParameterError, match="unknown keys"):
        F.solve_grid("erf", {"c": [1.5], "gamma": [1.0], "alpha": [1.0]})
    with pytest.raises(ParameterError, match="Gram"):
        F.solve_grid("erf", {"c": [1.5], "gamma": [1.0], "snr": [1.0], "wk2": [1.0], "muwk": [2.0]})
    with pytest.raises(ParameterError, match="shape"):
        F.solve_grid("erf", {"c": [1.5, 2.0], "gamma": [1.0]})


# ---------------------------------------------------------------- the same SymPy systems

RECIPES = {
    "fjg": lambda t: NR.fixed_point_fjg(t)[0], "detN": lambda t: NR.fixed_point_fjg(t)[1],
    "ridge": NR.ridge_function, "aligned": lambda t: NR.closed_form_phi("aligned", t),
    "a1_zero": lambda t: NR.closed_form_phi("a1_zero", t), "D": lambda t: NR.woodbury_D_function(1, t),
}


def test_numpy_code_is_compiled_from_the_same_sympy_expressions(monkeypatch):
    """The recipes hand the one compile step the same SymPy expression for both targets:
    recompiled without the disk cache, the expressions recorded per target are equal.
    (The fixed point, D and E_RR; the closed forms of varphi take the same path in
    ``closed_form_phi`` but cost a minute to derive twice.)"""
    monkeypatch.setenv("SYMRMT_NO_CACHE", "1")
    seen = {}
    real = N.compile_expr

    def recording(args, expr, modules="mpmath", cse=True):
        seen.setdefault(modules, []).append(expr)
        return real(args, expr, modules, cse)

    monkeypatch.setattr(N, "compile_expr", recording)
    cached = (NR.fixed_point_fjg, NR.ridge_function, NR.woodbury_D_function)
    for fn in cached:
        fn.cache_clear()
    try:
        for name in ("fjg", "ridge", "D"):
            for target in ("mpmath", "numpy"):
                RECIPES[name](target)
    finally:
        for fn in cached:
            fn.cache_clear()
    assert len(seen["mpmath"]) == len(seen["numpy"]) == 5  # FJG, detN, map, ridge, D
    for a, b in zip(seen["mpmath"], seen["numpy"]):  # a matrix goes to NumPy as its flat list of entries
        assert (list(a) if hasattr(a, "shape") else a) == b


@pytest.mark.parametrize("recipe", ["fjg", "detN", "ridge", "aligned", "a1_zero"])
def test_numpy_code_agrees_with_mpmath_code(recipe):
    """The two printings evaluate to the same numbers (float64 against 30 digits), under
    distinct cache names and keys; the NumPy source holds no mpmath names."""
    mp, npy = RECIPES[recipe]("mpmath"), RECIPES[recipe]("numpy")
    assert npy.target == "numpy" and npy.name == mp.name + "@numpy"
    assert codecache.source_key(npy.name) != codecache.source_key(mp.name)
    assert "mpf" not in npy.source and "mpmath" not in npy.source
    rng = np.random.default_rng(11)
    g, dg = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)
    p = [0.7, 0.4, 0.6, 0.5, 0.2]  # gamma, c, a1, nu, d
    args = {"fjg": (g, p), "detN": (g, p), "ridge": (0.7, 0.4, 1.3),
            "aligned": (g, dg, 0.6, 0.4, 1.3, 0.8), "a1_zero": (g, dg, 0.6, 0.4, 1.3, 0.8)}[recipe]
    got = npy(*[tuple(a) if isinstance(a, np.ndarray) else a for a in args])
    with mpmath.workdps(30):
        ref = mp(*[[mpmath.mpf(float(x)) for x in a] if isinstance(a, (np.ndarray, list)) else mpmath.mpf(a)
                   for a in args])
    got, ref = np.atleast_1d(np.asarray(got, dtype=float)), [ref] if recipe in ("ridge", "detN") else ref
    assert len(got) == len(ref)
    for x, y in zip(got, ref):
        assert abs(x - float(y)) <= 1e-12 * (1 + abs(float(y)))


def test_numpy_woodbury_D_equals_mpmath_D():
    """The matrix recipe (printed as a flat list for NumPy) gives the same entries."""
    rng = np.random.default_rng(0)
    coords = rng.normal(size=9)
    mp = NR.woodbury_D_function(1)
    npy = NR.woodbury_D_function(1, "numpy")
    with mpmath.workdps(30):
        ref = mp([mpmath.mpf(float(x)) for x in coords], mpmath.mpf(0.3), mpmath.mpf(0.7))
    got = npy(tuple(coords), 0.3, 0.7)
    assert len(got) == 144
    for k, v in enumerate(got):
        assert abs(float(v) - float(ref[k // 12, k % 12])) <= 1e-14 * (1 + abs(float(v)))
    assert S.woodbury_D().shape == (12, 12)


def test_compile_target_is_checked():
    with pytest.raises(ValueError, match="target"):
        N.compile_recipe("x", lambda: ([S.c], S.c), target="jax")


def test_unknown_closed_form_kind_is_refused():
    with pytest.raises(ParameterError, match="no closed form of kind 'quadratic'; give 'aligned' or 'a1_zero'"):
        NR.closed_form_phi("quadratic")


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_check_region_search_brackets_on_the_float_path():
    """``symrmt check``'s region search: the boundary c = 1 of a candidate that is right only
    for c <= 1 is bracketed on the float path, both ends confirmed by mpmath."""
    from symrmt.check import check

    where = "a1=1/2, nu=1/2, d=0, wk2=0, wq2=0, wkwq=0, muwk=0, muwq=0, snr=1, c<3"
    rep = check("E_A", "E_A = E_A*(1 + Max(0, c - 1))", kind="identity", where=where, points=8, digits=15)
    (b,) = [b for b in rep.region["boundaries"] if b["parameter"] == "c"]
    assert b["located_by"].startswith("float64 bracket")
    lo, hi = (float(__import__("fractions").Fraction(x)) for x in b["bracket"])
    assert lo <= 1 <= hi and hi - lo < 0.01
