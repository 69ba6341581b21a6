"""The 1/n term of the trace engine (``Model.limit(..., n=N)``, ``symrmt trace ... --n N``) for real Gaussian
and GOE matrices (symrmt/engine/routes/finite_n.py).

The expected numbers are computed here, independently of the engine: exact finite-n moments by Wick's
theorem, summed over the set partitions of the trace's indices (every entry an independent real N(0, 1),
a GOE symmetric with a zero diagonal, as the package samples it), as polynomials in the sizes; and the
slope in 1/n of simulated resolvent traces (NumPy draws made here, a weighted least-squares fit).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections import Counter

import mpmath
import numpy as np
import pytest
import sympy as sp

from symrmt.engine import Model, ModelError, kernel

pytestmark = pytest.mark.slow  # seconds a test: outside the fast tier (pytest -m "not slow")

N_SYM, P_SYM, C_SYM = sp.symbols("n p c", positive=True)


# ---------------------------------------------------------------- exact moments by Wick's theorem

def _partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _partitions(rest):
        for k in range(len(part)):
            yield part[:k] + [[first] + part[k]] + part[k + 1:]
        yield [[first]] + part


def _double_factorial_odd(m):  # E g^m for g ~ N(0, 1)
    return 0 if m % 2 else int(np.prod(range(m - 1, 0, -2))) if m else 1


def wick_trace(word, dims, goe=()):
    """``E tr(X_1 ... X_L)`` (not normalized) as a SymPy polynomial in the sizes: ``word`` a list of
    ``(name, transposed)``, ``dims[name] = (rows, cols)`` (SymPy sizes), ``goe``: names of symmetric matrices
    with a zero diagonal (the others have iid entries)."""
    L = len(word)
    var_dim = [None] * L
    for t, (name, tr) in enumerate(word):
        r, c = dims[name]
        if tr:
            r, c = c, r
        for v, d in ((t, r), ((t + 1) % L, c)):
            assert var_dim[v] in (None, d), "inconsistent sizes in the word"
            var_dim[v] = d
    by_dim = {}
    for v, d in enumerate(var_dim):
        by_dim.setdefault(d, []).append(v)
    total = sp.Integer(0)
    dims_list = list(by_dim)
    for parts in itertools.product(*[list(_partitions(by_dim[d])) for d in dims_list]):
        label = {}
        for d, part in zip(dims_list, parts):
            for b, block in enumerate(part):
                for v in block:
                    label[v] = (d, b)
        keys = Counter()
        zero = False
        for t, (name, tr) in enumerate(word):
            a, b = label[t], label[(t + 1) % L]
            if tr:
                a, b = b, a
            if name in goe:
                if a == b:
                    zero = True
                    break
                keys[(name, frozenset((a, b)))] += 1
            else:
                keys[(name, a, b)] += 1
        if zero:
            continue
        e = 1
        for mult in keys.values():
            e *= _double_factorial_odd(mult)
            if e == 0:
                break
        if e:
            count = sp.Integer(1)
            for d, part in zip(dims_list, parts):
                count *= sp.ff(d, len(part))
            total += e * count
    return sp.expand(total)


def laurent(expr, ratio_subs):
    """``(n^0 coefficient, n^-1 coefficient, the exact expression)`` after the sizes are set to ratios of n."""
    e = sp.expand(sp.sympify(expr).subs(ratio_subs))
    return e.coeff(N_SYM, 0), e.coeff(N_SYM, -1), e


def close(x, exact, digits=22):
    """``x`` (mpf) equals the rational ``exact`` to ``digits`` digits (compared at 60 digits)."""
    with mpmath.workdps(60):
        exact = mpmath.mpf(sp.Rational(exact).p) / sp.Rational(exact).q
        return abs(x - exact) <= mpmath.mpf(10) ** -digits * max(1, abs(exact))


def wishart_model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    return m


def test_wick_counter_reproduces_the_known_real_wishart_moments():
    # the counter itself against the classical real-Wishart moments (E tr (Z Z^T)^2 = p n (n + p + 1))
    dims = {"Z": (P_SYM, N_SYM)}
    assert wick_trace([("Z", False), ("Z", True)] * 2, dims) == sp.expand(P_SYM * N_SYM * (N_SYM + P_SYM + 1))
    assert wick_trace([("Z", False), ("Z", True)] * 3, dims) == sp.expand(
        P_SYM * N_SYM * (N_SYM**2 + P_SYM**2 + 3 * N_SYM * P_SYM + 3 * N_SYM + 3 * P_SYM + 4))
    # a GOE with a zero diagonal: E tr W^2 = n (n - 1)
    assert wick_trace([("G", False)] * 2, {"G": (N_SYM, N_SYM)}, goe={"G"}) == sp.expand(N_SYM * (N_SYM - 1))


@pytest.mark.parametrize("c", ["1/2", "3"])
@pytest.mark.parametrize("k", [2, 3])
def test_real_wishart_moments_limit_and_one_over_n_term(k, c):
    """S = Z Z^T/n (p x n): E tr S^2/p = 1 + c + 1/n; E tr S^3/p = 1 + 3c + c^2 + 3(1+c)/n + 4/n^2."""
    m = wishart_model()
    expr = f"trace({'*'.join(['Z*Z.T'] * k)})/n**{k}"
    cq = sp.Rational(c)
    exact = wick_trace([("Z", False), ("Z", True)] * k, {"Z": (P_SYM, N_SYM)}) / (P_SYM * N_SYM**k)
    lim, corr, full = laurent(exact, {P_SYM: cq * N_SYM})
    n = 64 if cq.q == 2 else 16
    r = m.limit(expr, at={"c": c}, digits=25, n=n)
    assert close(r.limit, lim) and close(r.correction, corr)
    if k == 2:
        assert corr == 1
    else:
        assert corr == 3 * (1 + cq)
    # the value is limit + correction/n; the exact moment differs from it by the n^-2 terms only
    assert close(r.value, lim + corr / sp.Integer(n))
    assert close(r.value + (full.subs(N_SYM, n) - lim - corr / sp.Integer(n)), full.subs(N_SYM, n))


def test_goe_zero_diagonal_moments():
    """The package's GOE has a zero diagonal: E tr W^2/n = 1 - 1/n (a variance-2/n diagonal would give 1 + 1/n);
    E tr W^4/n^3 from Wick's theorem."""
    m = Model()
    m.goe("G", "n")
    r2 = m.limit("trace(G*G)/n", at={}, digits=25, n=64)
    assert close(r2.limit, 1) and close(r2.correction, -1) and close(r2.value, sp.Rational(63, 64))
    exact = wick_trace([("G", False)] * 4, {"G": (N_SYM, N_SYM)}, goe={"G"}) / N_SYM**3
    lim, corr, _ = laurent(exact, {})
    r4 = m.limit("trace(G**4)/n**2", at={}, digits=25, n=64)
    assert lim == 2 and close(r4.limit, lim) and close(r4.correction, corr)


def test_wigner_plus_wishart_third_moment():
    """A = Z^T Z/n + G/sqrt(n): E tr A^3/n from the words of the expanded cube."""
    m = wishart_model()
    m.goe("G", "n")
    dims = {"Z": (P_SYM, N_SYM), "G": (N_SYM, N_SYM)}
    terms = [([("Z", True), ("Z", False)], 1 / N_SYM), ([("G", False)], 1 / sp.sqrt(N_SYM))]
    exact = sp.Integer(0)
    for choice in itertools.product(terms, repeat=3):
        word = [x for w, _ in choice for x in w]
        exact += sp.Mul(*[s for _, s in choice]) * wick_trace(word, dims, goe={"G"})
    lim, corr, _ = laurent(exact / N_SYM, {P_SYM: N_SYM / 2})
    r = m.limit("trace((Z.T*Z/n + G/sqrt(n))**3)", at={"c": "1/2"}, digits=25, n=64)
    assert close(r.limit, lim) and close(r.correction, corr) and corr != 0


def test_diagonal_law_of_two_atoms():
    """S = Z^T D Z/n with D = diag(1, 4) on halves of p: E tr S^2/n, Z split into its two row blocks."""
    m = wishart_model()
    m.diag("D", "p", ["1", "4"])
    p1 = sp.Symbol("p1", positive=True)
    dims = {"Z1": (p1, N_SYM), "Z2": (p1, N_SYM)}
    exact = sp.Integer(0)
    for (a, wa), (b, wb) in itertools.product([("Z1", 1), ("Z2", 4)], repeat=2):
        exact += wa * wb * wick_trace([(a, True), (a, False), (b, True), (b, False)], dims)
    lim, corr, _ = laurent(exact / N_SYM**3, {p1: N_SYM / 4})
    r = m.limit("trace(Z.T*D*Z*Z.T*D*Z)/n**2", at={"c": "1/2"}, digits=25, n=64)
    assert close(r.limit, lim) and close(r.correction, corr)
    # E tr S^2/n = c^2 m1^2 + c m2 + c m2/n (m1, m2: the law's first two moments): the real-case term c m2
    assert corr == sp.Rational(1, 2) * sp.Rational(17, 2)


@pytest.mark.parametrize("expr, word", [
    ("trace(Z*Z)/n", "ZZ"), ("trace(Z**4)/n**2", "ZZZZ"), ("trace(Z*Z*Z.T*Z.T)/n**2", "ZZtt"),
])
def test_square_gaussian_polynomials(expr, word):
    """A square Gaussian (non-normal) in a polynomial, without an inverse, is covered: E tr Z^2/n^2 = 1/n."""
    m = Model()
    m.gaussian("Z", "n", "n")
    w = [("Z", False)] * len(word) if "t" not in word else [("Z", False)] * 2 + [("Z", True)] * 2
    exact = wick_trace(w, {"Z": (N_SYM, N_SYM)}) / N_SYM ** (len(w) // 2 + 1)
    lim, corr, _ = laurent(exact, {})
    r = m.limit(expr, at={}, digits=25, n=64)
    assert close(r.limit, lim) and close(r.correction, corr)


def test_goe_split_by_a_diagonal_law():
    """tau(G D G D)/n with D = diag(1, 2) on halves of n: the GOE splits into zero-diagonal GOE blocks on the
    diagonal and a Gaussian block off it (W21 = W12^T); E tr(W D W D) from those blocks' words."""
    m = Model()
    m.goe("G", "n")
    m.diag("D", "n", ["1", "2"])
    h = sp.Symbol("h", positive=True)
    dims = {"W11": (h, h), "W22": (h, h), "W12": (h, h)}
    words = [([("W11", False)] * 2, 1), ([("W12", False), ("W12", True)], 2), ([("W12", True), ("W12", False)], 2),
             ([("W22", False)] * 2, 4)]
    exact = sum(w * wick_trace(word, dims, goe={"W11", "W22"}) for word, w in words)
    lim, corr, _ = laurent(exact / N_SYM**2, {h: N_SYM / 2})  # tau = tr/n, and the /n of the expression
    r = m.limit("trace(G*D*G*D)/n", at={}, digits=25, n=64)
    assert close(r.limit, lim) and close(r.correction, corr)
    assert (lim, corr) == (sp.Rational(9, 4), -sp.Rational(5, 2))  # m1^2 - m2/n: the zero diagonal's term


def test_a_function_of_traces_gets_the_chain_rule():
    # 1/(E tr S^2/p): the 1/n term is -(1/n)/(1 + c)^2; a product of traces only adds their covariance, O(1/n^2)
    m = wishart_model()
    r = m.limit("1/(trace(Z*Z.T*Z*Z.T)/n**2)", at={"c": "1/2"}, digits=25, n=64)
    assert close(r.limit, sp.Rational(2, 3)) and close(r.correction, -sp.Rational(4, 9))


# ---------------------------------------------------------------- simulated slopes in 1/n

def _slope_fit(sizes, means, ses, limit):
    """Weighted least squares of ``mean - limit = b/n + d/n^2``: ``(b, se(b))``."""
    x = 1 / np.asarray(sizes, float)
    A = np.stack([x, x**2], axis=1) / np.asarray(ses)[:, None]
    y = (np.asarray(means) - limit) / np.asarray(ses)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    cov = np.linalg.inv(A.T @ A)
    return coef[0], np.sqrt(cov[0, 0])


def _simulate(draw, sizes, trials, seed):
    means, ses = [], []
    for k, n in enumerate(sizes):
        rng = np.random.default_rng([seed, k])
        vals = np.array([draw(rng, n) for _ in range(trials[k])])
        means.append(vals.mean())
        ses.append(vals.std(ddof=1) / np.sqrt(len(vals)))
    return means, ses


def test_wishart_resolvent_slope_matches_simulation():
    """E tr (S + gamma)^{-1}/p, S = Z Z^T/n, c = 1/2, gamma = 1, n = 64..512: the fitted slope in 1/n is within
    3 se of the 1/n term (and the term is far from 0 at that se)."""
    m = wishart_model()
    r = m.limit("trace(inv(Z*Z.T/n + gamma*I(p)))", at={"c": "1/2", "gamma": "1"}, digits=20, n=64)

    def draw(rng, n):
        Z = rng.standard_normal((n // 2, n))
        ev = np.linalg.eigvalsh(Z @ Z.T / n)
        return np.mean(1 / (ev + 1))

    sizes = [64, 128, 256, 512]
    means, ses = _simulate(draw, sizes, [6000, 3000, 1200, 400], seed=1)
    b, se = _slope_fit(sizes, means, ses, float(r.limit))
    assert abs(b - float(r.correction)) <= 3 * se, (b, se, float(r.correction))
    assert float(r.correction) > 6 * se  # the check can tell the term from no term (k = 3 above)


def test_goe_resolvent_slope_matches_simulation():
    """E tr (z - W/sqrt(n))^{-1}/n at z = 3, W symmetric with N(0, 1) off the diagonal and a zero diagonal."""
    m = Model()
    m.goe("G", "n")
    r = m.limit("trace(inv(3*I(n) - G/sqrt(n)))", at={}, digits=20, n=64)
    g = (3 - np.sqrt(5)) / 2
    assert abs(float(r.limit) - g) < 1e-14
    # the closed form of this term (Khorunzhy-Khoruzhenko-Pastur with the zero diagonal): g^3/(1-g^2)^2 - 2g^3/(1-g^2)
    assert abs(float(r.correction) - (g**3 / (1 - g**2) ** 2 - 2 * g**3 / (1 - g**2))) < 1e-14

    def draw(rng, n):
        A = rng.standard_normal((n, n))
        W = (A + A.T) / np.sqrt(2)
        np.fill_diagonal(W, 0)
        ev = np.linalg.eigvalsh(W / np.sqrt(n))
        return np.mean(1 / (3 - ev))

    sizes = [64, 128, 256, 512]
    means, ses = _simulate(draw, sizes, [2000, 1000, 400, 120], seed=2)
    b, se = _slope_fit(sizes, means, ses, float(r.limit))
    assert abs(b - float(r.correction)) <= 3 * se, (b, se, float(r.correction))
    assert abs(float(r.correction)) > 6 * se


# ---------------------------------------------------------------- refusals

@pytest.mark.parametrize("setup, expr, at, n, match", [
    ("wishart", "trace(Z*Z.T*Z*Z.T)/n**2", {"c": "1/2"}, 4, "below the smallest size"),
    ("wishart", "trace(Z*Z.T*Z*Z.T)/n**2", {"c": "1/3"}, 64, "not an integer"),
    ("ginibre", "trace(inv(Z/sqrt(n) + gamma*I(n)))", {"gamma": "3"}, 64, "non-normal"),
    ("ginibre", "trace(inv(Z/sqrt(n) + gamma*I(n)))", {"gamma": "1/2"}, 64, "non-normal"),
    ("wishart", "diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)", {"c": "1/2", "gamma": "1"}, 64, "diff"),
    ("vectors", "b.T*inv(Z*Z.T/n + gamma*I(p))*b", {"c": "1/2", "gamma": "1", "b.b": "1"}, 64, "vectors"),
    ("kernel", "trace(K*K)", {"c": "1/2"}, 64, "kernel"),
])
def test_refused_with_the_reason(setup, expr, at, n, match):
    m = Model()
    if setup == "ginibre":
        m.gaussian("Z", "n", "n")
    else:
        m.dim("p", "c*n")
        Z = m.gaussian("Z", "p", "n")
    if setup == "vectors":
        m.vector("b", "p")
    if setup == "kernel":
        m.let("K", kernel("tanh", Z, model=m))
    with pytest.raises(ModelError, match=match):
        m.limit(expr, at=at, digits=15, n=n)


def test_complex_value_and_prove_refused():
    m = wishart_model()
    with pytest.raises(ModelError, match="prove"):
        m.limit("trace(inv(Z*Z.T/n + gamma*I(p)))", at={"c": "1/2", "gamma": "1"}, prove=True, n=64)
    with pytest.raises(ModelError, match="real"):
        m.limit("trace(inv(Z*Z.T/n + gamma*I(p)))", at={"c": "1/2", "gamma": "1+1j"}, n=64)


def test_without_n_the_limit_is_unchanged():
    m = wishart_model()
    r = m.limit("trace(Z*Z.T*Z*Z.T)/n**2", at={"c": "1/2"}, digits=20)
    assert close(r.value, sp.Rational(3, 2), 19) and not hasattr(r, "correction")


# ---------------------------------------------------------------- the CLI

def _cli(*args):
    return subprocess.run([sys.executable, "-m", "symrmt", "trace", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_json_keys_and_refusal_exit_codes():
    base = ["trace(Z*Z.T*Z*Z.T*Z*Z.T)/n**3", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2"]
    p = _cli(*base, "--n", "64", "--digits", "25", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["n"] == 64
    assert mpmath.mpf(out["limit"]) == mpmath.mpf("2.75") and mpmath.mpf(out["correction"]) == mpmath.mpf("4.5")
    assert abs(mpmath.mpf(out["value"]) - (mpmath.mpf("2.75") + mpmath.mpf("4.5") / 64)) < mpmath.mpf(10) ** -24
    text = _cli(*base, "--n", "64")
    assert text.returncode == 0 and "1/n term" in text.stdout and "2.8203125" in text.stdout
    low = _cli(*base, "--n", "4")
    assert low.returncode == 2 and "smallest size" in low.stderr and "Traceback" not in low.stderr
    nn = _cli("trace(inv(Z/sqrt(n) + gamma*I(n)))", "--matrix", "Z=gaussian(n,n)", "--at", "gamma=3", "--n", "64")
    assert nn.returncode == 2 and "non-normal" in nn.stderr
    # with --simulate, --n stays the simulation's size and the value the limit
    sim = _cli(*base, "--simulate", "--n", "32", "--trials", "3", "--json")
    assert sim.returncode in (0, 1), sim.stderr
    assert "correction" not in json.loads(sim.stdout) and json.loads(sim.stdout)["simulation"]["n"] == 32
