"""The NumPy simulation of a trace-engine expression (symrmt.engine.simulate.monte_carlo).

Exact finite-n facts (conventions), exact differentiation against a central difference on
the same draws, seeding, errors, and the simulation against independent closed forms.
Theory-vs-simulation tolerance: ``|mean - limit| <= 3 se + slack``; k = 3 is a two-sided
0.3% false-failure rate per check with fixed seeds (so a passing seed stays passing), and the
slack is the stated finite-size bias at that n.
"""

import subprocess
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from symrmt.engine import Model, bind
from symrmt.errors import ParameterError
from symrmt.engine.simulate.monte_carlo import (
    TraceSimulationError,
    draw_matrices,
    evaluate,
    random_matrices,
    simulate_trace,
)

pytestmark = pytest.mark.montecarlo


def _model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.goe("G", "n")
    m.diag("D", "p", ["1", "4"], ["1/4", "3/4"])
    return m


def test_simulation_layer_does_not_import_sympy_or_mpmath():
    code = (
        "import sys\n"
        "import symrmt.engine.simulate.monte_carlo\n"
        "bad = [m for m in ('sympy', 'mpmath') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_conventions_exact_means():
    """E tr(Z^T Z)/n^2 = p/n, E tr(G^2)/n^2 = (n-1)/n (zero diagonal, unit off-diagonal), tr D exact."""
    m = _model()
    at = {"c": "1/2"}
    n = 40
    r = simulate_trace(bind(m.parse("trace(Z.T*Z/n)"), at, n), trials=400, seed=3)
    assert abs(r["mean"] - 0.5) <= 4 * r["se"]
    r = simulate_trace(bind(m.parse("trace(G*G/n)"), at, n), trials=400, seed=4)
    assert abs(r["mean"] - (n - 1) / n) <= 4 * r["se"]
    # a deterministic trace: no spread, the exact weighted mean of the atoms (counts 5 and 15 of p = 20)
    r = simulate_trace(bind(m.parse("trace(D*D)"), at, n), trials=2, seed=0)
    assert r["se"] == 0 and r["mean"] == pytest.approx((5 * 1 + 15 * 16) / 20, abs=1e-14)
    assert r["params"]["sizes"] == {"p": 20}


def test_diag_counts_and_sizes_follow_the_binding():
    m = _model()
    b = bind(m.parse("trace(Z.T*D*Z/n)"), {"c": "1/3"}, 30)
    specs = random_matrices(b)
    assert specs == {"Z": ("gaussian", 10, 30)}
    r = simulate_trace(b, trials=3, seed=0)
    assert r["params"]["sizes"] == {"n": 30, "p": 10}


def test_a_law_of_more_atoms_than_entries_is_simulated_as_that_law():
    """1000 equal atoms 0.5..2 on p = 128 entries. Rounded one by one, every atom's share 0.128 rounds alike and
    the 128 first atoms took the whole diagonal (the simulation drew the law's lowest eighth, 200 se off the
    limit). The sizes follow the law's distribution function to 1/(2p), and the simulation of
    tau((Z^T D Z/n + g)^{-1}) at n = 256 lies within 3 se + 10 (1 + |limit|)/n (the CLI's finite-size slack)
    of the limit from Silverstein's equation m = 1/(g + c mean(s/(1 + s m))), iterated here in float64."""
    vals = [Fraction(1, 2) + Fraction(3 * i, 1998) for i in range(1000)]  # 0.5 + 1.5 i/999
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.diag("D", "p", [str(v) for v in vals], [Fraction(1, 1000)] * 1000)
    e = "trace(inv(Z.T*D*Z/n + g*I(n)))"
    at, n = {"c": "1/2", "g": "1/5"}, 256
    b = bind(m.parse(e), at, n)
    diag = next(x for x in _nodes(b) if x.kind == "diag")
    counts = np.array(diag.counts)
    assert counts.sum() == 128 and counts.max() <= 1
    cdf = np.cumsum(counts) / 128.0
    assert np.max(np.abs(cdf - np.arange(1, 1001) / 1000)) <= 1 / (2 * 128) + 1e-12
    s, c, g = np.array([float(v) for v in vals]), 0.5, 0.2
    mm = 1 / g
    for _ in range(2000):
        mm = 1 / (g + c * np.mean(s / (1 + s * mm)))
    r = simulate_trace(b, trials=4, seed=2)
    assert abs(r["mean"] - mm) <= 3 * r["se"] + 10 * (1 + mm) / n


def _nodes(tree):
    from symrmt.engine.simulate.evaluate import children

    out, stack = [], [tree]
    while stack:
        x = stack.pop()
        out.append(x)
        stack.extend(children(x))
    return out


def test_same_seed_same_trials_and_child_j():
    m = _model()
    b = bind(m.parse("trace(inv(Z.T*Z/n + G/sqrt(n) + 3*I(n)))"), {"c": "1/2"}, 24)
    r1 = simulate_trace(b, trials=4, seed=11)
    r2 = simulate_trace(b, trials=4, seed=11)
    assert np.array_equal(r1["trials"], r2["trials"])
    child = np.random.SeedSequence(11).spawn(4)[2]
    v = evaluate(b, draw_matrices(random_matrices(b), np.random.default_rng(child)))
    assert v == r1["trials"][2]
    assert not np.array_equal(r1["trials"], simulate_trace(b, trials=4, seed=12)["trials"])


def test_diff_is_exact_against_a_central_difference_on_the_same_draws():
    """diff(., gamma) through the exact tree derivative equals a central difference of the same draws."""
    m = _model()
    base = "trace(inv(Z.T*D*Z/n + G/sqrt(n) + gamma*I(n)))"
    n, seed, trials, g, h = 32, 5, 3, Fraction(2), Fraction(1, 10**4)
    d = simulate_trace(bind(m.parse(f"diff({base}, gamma)"), {"c": "1/2", "gamma": g}, n), trials, seed)
    up = simulate_trace(bind(m.parse(base), {"c": "1/2", "gamma": g + h}, n), trials, seed)
    dn = simulate_trace(bind(m.parse(base), {"c": "1/2", "gamma": g - h}, n), trials, seed)
    fd = (up["trials"] - dn["trials"]) / (2 * float(h))
    # central difference error O(h^2 |f'''|) ~ 1e-8 here
    assert np.allclose(d["trials"], fd, rtol=1e-6, atol=1e-9)
    assert np.all(d["trials"] < 0)


def test_diff_in_a_dimension_ratio_or_an_atom_is_refused_by_the_simulation_not_simulated_as_zero():
    """A derivative in a parameter that only a size or a diagonal law holds is not on the tree: read off it,
    it would be 0 (it was, silently: 0.0 +- 0). The simulation refuses it; the limit still takes it, and
    matches d/dc of the Marchenko-Pastur root m = (-(g+c-1) + sqrt((g+c-1)^2 + 4g))/(2g) (to 18 digits)."""
    from symrmt.errors import ModelError

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    e = "diff(trace(inv(Z.T*Z/n + g*I(n))), c)"
    at = {"c": "7/10", "g": "1/2"}
    with pytest.raises(ModelError, match=r"cannot simulate diff\(\.\.\., c\).*dimension p"):
        simulate_trace(bind(m.parse(e), at, 40), trials=2, seed=0)
    with mpmath.workdps(40):
        g = mpmath.mpf(1) / 2
        mp_root = lambda c: (-(g + c - 1) + mpmath.sqrt((g + c - 1) ** 2 + 4 * g)) / (2 * g)  # noqa: E731
        want = mpmath.diff(mp_root, mpmath.mpf(7) / 10)
        assert abs(m.limit(e, at=at, digits=20).value - want) < mpmath.mpf(10) ** -18
    md = Model()
    md.goe("G", "n")
    md.diag("D", "n", ["a", "2"], ["1/3", "2/3"])
    with pytest.raises(ModelError, match="the law of D depends on it"):
        bind(md.parse("diff(trace(inv(G/sqrt(n) + D + z*I(n))), a)"), {"a": "-1", "z": "21/5"}, 30)


def test_second_derivative_and_powers():
    m = _model()
    e = "diff(diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma), gamma)"
    b = bind(m.parse(e), {"c": "2", "gamma": "1"}, 20)
    r = simulate_trace(b, trials=3, seed=0)
    # d^2/dg^2 tau((S + g)^-1) = 2 tau((S + g)^-3) > 0
    b3 = bind(m.parse("2*trace(inv(Z.T*Z/n + gamma*I(n))**3)"), {"c": "2", "gamma": "1"}, 20)
    assert np.allclose(r["trials"], simulate_trace(b3, trials=3, seed=0)["trials"], rtol=1e-10)


def test_errors_are_clear():
    m = _model()
    with pytest.raises(ParameterError, match="matrix"):
        simulate_trace(bind(m.parse("Z.T*Z/n"), {"c": "1/2"}, 8))
    with pytest.raises(ParameterError, match="trials"):
        simulate_trace(bind(m.parse("trace(Z.T*Z/n)"), {"c": "1/2"}, 8), trials=1)
    # a singular matrix in a draw: Z^T Z (rank p < n) without a ridge
    b = bind(m.parse("trace(inv(Z.T*Z/n))"), {"c": "1/4"}, 16)
    with pytest.raises(TraceSimulationError, match="singular"):
        simulate_trace(b, trials=2)


def _mp_stieltjes(z, c):
    """m(z) = lim tau((Z^T Z/n - z)^-1), the root of -z m^2 + (c - 1 - z) m - 1 = 0 (Marchenko-Pastur)."""
    a, b = -z, c - 1 - z
    disc = mpmath.sqrt(b * b + 4 * a)
    r1, r2 = (-b + disc) / (2 * a), (-b - disc) / (2 * a)
    if mpmath.im(z) != 0:
        return r1 if mpmath.im(r1) * mpmath.im(z) > 0 else r2
    return r1 if r1 > 0 else r2


def test_simulation_against_marchenko_pastur_and_wishart_squared():
    """n = 256, 16 trials: within 3 se + a finite-size slack of 2/n (the O(1/n) bias of these traces)."""
    m = _model()
    at = {"c": "1/2", "gamma": "1/5"}
    with mpmath.workdps(30):
        mp = _mp_stieltjes(-mpmath.mpf(1) / 5, mpmath.mpf(1) / 2)
        sq = mpmath.im(_mp_stieltjes(1j * mpmath.sqrt(mpmath.mpf(1) / 5), mpmath.mpf(1) / 2)) / mpmath.sqrt(
            mpmath.mpf(1) / 5)
    n = 256
    for expr, ref in (("trace(inv(Z.T*Z/n + gamma*I(n)))", mp), ("trace(inv(Z.T*Z*Z.T*Z/n**2 + gamma*I(n)))", sq)):
        r = simulate_trace(bind(m.parse(expr), at, n), trials=16, seed=0)
        assert abs(r["mean"] - float(ref)) <= 3 * r["se"] + 2 / n, (expr, r["mean"], float(ref), r["se"])


def test_gap_shrinks_with_n():
    """The bias of tau((S + gamma)^-1) at c = 1 (the hardest ratio) falls as n grows: n = 16 vs n = 128."""
    m = _model()
    at = {"c": "1", "gamma": "1/20"}
    with mpmath.workdps(30):
        ref = float(_mp_stieltjes(-mpmath.mpf(1) / 20, mpmath.mpf(1)))
    b16 = simulate_trace(bind(m.parse("trace(inv(Z.T*Z/n + gamma*I(n)))"), at, 16), trials=400, seed=1)
    b128 = simulate_trace(bind(m.parse("trace(inv(Z.T*Z/n + gamma*I(n)))"), at, 128), trials=50, seed=1)
    gap16, gap128 = abs(b16["mean"] - ref), abs(b128["mean"] - ref)
    # the n = 16 bias is resolved (> 3 se) and the n = 128 gap is smaller by more than its noise
    assert gap16 > 3 * b16["se"]
    assert gap128 + 3 * b128["se"] < gap16


def test_kernel_expression_simulation_against_the_package_nonlinear_simulation():
    """The kernel() expression of the noise-only Attention error, simulated as an expression (Gaussian
    equivalent: a fresh GOE), against the package's simulation of the nonlinear kernel itself
    (symrmt.models.attention.montecarlo: K = tanh(X^T X/sqrt(p))/sqrt(p), K_ii = 0), n = 192, c = 1/2, 12 trials
    each: |difference| <= 3 se (the two se combined) + 0.01 (finite-size effects of the Gaussian equivalence)."""
    from symrmt.engine import Const, Diff, Identity, Inverse, Trace, kernel
    from symrmt.models.attention.montecarlo import simulate

    m = Model()
    m.dim("p", "c*n")
    Z = m.gaussian("Z", "p", "n")
    g = m.param("gamma")
    K = kernel("tanh", Z, model=m, digits=20)
    nn = Const(m.dims["n"].size)
    E = -g**2 * Diff(Trace(Inverse(K.T * Z.T * Z * K / nn + g * Identity(m.dims["n"]))), g.value)
    n = 192
    eq = simulate_trace(bind(E, {"c": "1/2", "gamma": "1/10"}, n), trials=12, seed=2)
    nl = simulate(np.tanh, n, 0.5, [0.1], trials=12, seed=3)
    mean, se = float(nl["attention"]["mean"][0]), float(nl["attention"]["se"][0])
    assert abs(eq["mean"] - mean) <= 3 * (eq["se"] ** 2 + se**2) ** 0.5 + 0.01, (eq["mean"], eq["se"], mean, se)
