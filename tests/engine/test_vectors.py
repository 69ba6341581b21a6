"""Vectors, finite-rank matrices and quadratic forms in the trace engine.

References are computed here or in the derivations without the engine: the Marchenko-Pastur
quadratic, the spiked-covariance deterministic equivalent, the Hastie et al. ridge risks, the
package's ridge closed form, and its hand-built Attention solver.  Monte-Carlo checks use
``|mc - limit| <= 3 se + slack`` (k = 3: a 0.3% two-sided false-failure rate at a fixed seed; the
slack covers the O(1/sqrt(n)) finite-size bias of a quadratic form, stated per test).
"""

import json
from fractions import Fraction

import mpmath
import pytest

from symrmt.cli.app import main
from symrmt.engine import Model, ModelError, bind
from symrmt.engine.simulate.monte_carlo import simulate_trace

MPQ = "beta.T*inv(Z*Z.T/n + gamma*I(p))*beta"


def _q(x):
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def mp_m(c, gamma, dps=60):
    """``tau((Z Z^T/n + gamma I_p)^{-1})`` for a ``p x n`` Gaussian ``Z``, ``p = c n``: the positive root of
    ``c gamma m^2 + (1 - c + gamma) m - 1 = 0`` (Marchenko-Pastur of ratio ``c``)."""
    with mpmath.workdps(dps):
        c, g = _q(c), _q(gamma)
        b = 1 - c + g
        return (-b + mpmath.sqrt(b * b + 4 * c * g)) / (2 * c * g)


def _digits(a, b):
    with mpmath.workdps(60):
        return 99.0 if a == b else float(-mpmath.log10(abs(mpmath.mpf(a) - b) / abs(b)))


def _model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("beta", "p")
    m.vector("mu", "p")
    m.signs("y", "n")
    return m


def test_isotropic_quadratic_form_is_the_norm_times_the_trace():
    m = _model()
    for c, g, bb in (("1/2", "1/5", "5/2"), ("2", "1", "1/3")):
        r = m.limit(MPQ, at={"c": c, "gamma": g, "beta.beta": bb}, digits=30)
        with mpmath.workdps(60):
            ref = mp_m(c, g) * _q(bb)
        assert _digits(r.value, ref) >= 30


def test_spiked_covariance_against_the_deterministic_equivalent():
    from symrmt.derivations.engine_spiked import QVV, QWW, closed_forms, model

    m = model()
    at = {"c": "3/4", "gamma": "2/5", "k": "2", "v.v": "1", "w.w": "5/4", "v.w": "2/3"}
    along, ww, _ = closed_forms(at, 60)
    assert _digits(m.limit(QVV, at=at, digits=30).value, along) >= 30
    assert _digits(m.limit(QWW, at=at, digits=30).value, ww) >= 30


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_ridge_teacher_bias_and_variance_against_hastie_et_al():
    from symrmt.derivations.engine_ridge_teacher import BIAS, RISK, VARIANCE, hastie, model

    m = model()
    at = {"phi": "4/5", "lam": "1/4", "beta.beta": "3", "sigma": "2/3"}
    b, v, _ = hastie(at["phi"], at["lam"], at["beta.beta"], at["sigma"], 60)
    assert _digits(m.limit(BIAS, at=at, digits=30).value, b) >= 30
    assert _digits(m.limit(VARIANCE, at=at, digits=30).value, v) >= 30
    with mpmath.workdps(60):
        total = b + v
    assert _digits(m.limit(RISK, at=at, digits=30).value, total) >= 30


def test_e_rr_with_a_signal_equals_the_ridge_closed_form():
    from symrmt.models.attention.theory import ridge_limit

    m = _model()
    m.let("X", m.parse("mu*y.T + Z"))
    e = "-gamma**2*diff(y.T*inv(X.T*X/n + gamma*I(n))*y/n, gamma)"
    for c, g, s in (("1/3", "1/20", "2"), ("5/4", "3/2", "1/2")):
        v = m.limit(e, at={"c": c, "gamma": g, "mu.mu": s}, digits=40).value
        ref = ridge_limit(c, [g], snr=s, digits=45)[0]
        assert _digits(v, ref) >= 40


@pytest.mark.parametrize("f,rank,alpha,diagonal,gram", [
    ("tanh", 1, "1", "zero", [[Fraction(3, 2), Fraction(1, 2), Fraction(1, 3)], [Fraction(1, 2), 1, Fraction(1, 2)],
                              [Fraction(1, 3), Fraction(1, 2), 1]]),
    ("erf", 1, "3/2", "zero", [[2, 1, 0], [1, 1, 0], [0, 0, 1]]),
])
@pytest.mark.slow  # seconds per call: outside the fast tier
def test_e_a_as_an_expression_equals_the_hand_built_solver(f, rank, alpha, diagonal, gram):
    from symrmt.models.attention.geometry import LowRankGeometry
    from symrmt.models.attention import at_from_gram, attention_model
    from symrmt.models.attention.theory import limit

    m, ex = attention_model(f, rank, alpha, diagonal)
    at = {"c": "1/2", "gamma": "1/10", **at_from_gram(gram, rank)}
    v = m.limit(ex["E_A"], at=at, digits=40).value
    ref = limit(f, "1/2", ["1/10"], LowRankGeometry(gram, alpha=Fraction(alpha)), diagonal, 45)["attention"][0]
    assert _digits(v, ref) >= 40


def test_a_quadratic_form_against_simulation():
    # n = 512, 12 trials; slack 2% of the value for the O(1/sqrt(n)) bias of a quadratic form
    m = _model()
    m.let("X", m.parse("mu*y.T + Z"))
    e = "mu.T*inv(X*X.T/n + gamma*I(p))*X*y/n"
    at = {"c": "1/2", "gamma": "1/5", "mu.mu": "3/2", "beta.beta": "1"}
    lim = float(m.limit(e, at=at, digits=15).value)
    sim = simulate_trace(bind(m.expr(e), at, 512), trials=12, seed=3)
    assert abs(sim["mean"] - lim) <= 3 * sim["se"] + 0.02 * abs(lim)


def test_unset_inner_products_are_zero_and_given_ones_are_used():
    m = _model()
    e = "mu.T*inv(Z*Z.T/n + gamma*I(p))*beta"
    at = {"c": "1/2", "gamma": "1/5", "mu.mu": "1", "beta.beta": "1"}
    assert m.limit(e, at=at, digits=20).value == 0
    v = m.limit(e, at=dict(at, **{"beta.mu": "1/2"}), digits=30).value   # either order of the names
    with mpmath.workdps(60):
        ref = mp_m("1/2", "1/5") / 2
    assert _digits(v, ref) >= 30


def test_a_rounding_level_psd_violation_is_projected_a_larger_one_refused():
    m = _model()
    at = {"c": "1/2", "gamma": "1/5", "mu.mu": "1", "beta.beta": "1", "mu.beta": "1"}
    assert m.limit(MPQ, at=dict(at, **{"mu.beta": str(Fraction(1) + Fraction(1, 10**14))}), digits=20)
    with pytest.raises(ModelError, match="not positive semi-definite: its violation is 3 relative"):
        m.limit(MPQ, at=dict(at, **{"mu.beta": "2"}), digits=20)


BAD = [
    (MPQ, "c=1/2, gamma=1/5, beta.beta=1, mu.mu=1, mu.beta=2", "the inner products of the vectors beta, mu"),
    ("beta.T*inv(Z.T*Z/n + gamma*I(n))*beta", "c=1/2, gamma=1/5", "the vector beta.T"),
    ("b.T*inv(Z*Z.T/n + gamma*I(p))*b", "c=1/2, gamma=1/5", "b is not a declared vector"),
    # once but inside an inverse: not linear, so not replaced by its mean (a linear one is: its mean is 0,
    # tests/engine/test_independent_parts.py)
    ("beta.T*inv(I(p) + Z*y*beta.T/n)*beta", "c=1/2, beta.beta=1", "holds the random vector y (signs) once, inside an inverse"),
    ("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n", "c=1/2, gamma=1/5, y.y=1", "y is a random vector"),
    ("y.T*inv(Z.T*Z/n + gamma*I(n))*y", "c=1/2, gamma=1/5", "grows like n^1"),
    (MPQ, "c=1/2, gamma=1/5, nu.beta=1", "'nu' is not a declared vector"),
    (MPQ, "c=1/2, gamma=1/5, beta.y=1", "y is a random vector"),
    ("trace(inv(Z*Z.T/n + gamma*I(p)))*I(p)", "c=1/2, gamma=1/5", ""),
]


@pytest.mark.parametrize("expr,at,msg", BAD)
def test_bad_input_is_one_line_exit_2(capsys, expr, at, msg):
    code = main(["trace", expr, "--dim", "p=c*n", "--matrix", "Z=gaussian(p,n)", "--vector", "beta=vector(p)",
                 "--vector", "mu=vector(p)", "--vector", "y=signs(n)", "--at", at])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and msg in err, err


def test_a_kernel_of_a_random_weight_is_refused():
    from symrmt.engine import kernel

    m = _model()
    X = m.let("X", m.parse("mu*y.T + Z"))
    with pytest.raises(ModelError, match="kernel"):
        kernel("tanh", X, m.parse("I(p) + mu*mu.T + Z*Z.T/n"), model=m)
    with pytest.raises(ModelError, match="positive number"):
        kernel("tanh", X, m.parse("gamma*I(p) + mu*beta.T"), model=m)


def test_cli_json_latex_and_simulation(capsys):
    argv = ["trace", MPQ, "--dim", "p=c*n", "--matrix", "Z=gaussian(p,n)", "--vector", "beta=vector(p)",
            "--at", "c=1/2, gamma=1/5, beta.beta=5/2", "--digits", "30", "--json", "--latex",
            "--simulate", "--n", "256", "--trials", "8", "--seed", "1"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    with mpmath.workdps(60):
        ref = mp_m("1/2", "1/5") * mpmath.mpf(5) / 2
        value = mpmath.mpf(data["value"])
    assert _digits(value, ref) >= 29
    assert "Woodbury system" in data["latex"] and "\\langle \\beta, \\beta \\rangle" in data["latex"]
    s = data["simulation"]
    assert abs(s["mean"] - float(ref)) <= 3 * s["se"] + 0.03 * float(ref)   # n = 256: 3% for the bias


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_let_and_kernel_of_a_signal_on_the_cli(capsys):
    argv = ["trace", "-gamma**2*diff(y.T*inv(K.T*X.T*X*K/n + gamma*I(n))*y/n, gamma)", "--dim", "p=c*n",
            "--matrix", "Z=gaussian(p,n)", "--vector", "mu=vector(p)", "--vector", "y=signs(n)",
            "--let", "X=mu*y.T + Z", "--let", "W=I(p)", "--matrix", "K=kernel(relu, X, W)",
            "--at", "c=1/2, gamma=1/10, mu.mu=3/2", "--digits", "30", "--json"]
    assert main(argv) == 0
    v = json.loads(capsys.readouterr().out)["value"]
    assert main(["limit", "--f", "relu", "--c", "1/2", "--gamma", "0.1", "--snr", "3/2", "--digits", "30",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["attention"][0] == v


def test_outer_products_inside_a_trace_do_not_move_it():
    m = _model()
    a = m.limit("trace(inv(Z*Z.T/n + gamma*I(p) + 3*beta*beta.T))", at={"c": "1/2", "gamma": "1/5",
                                                                          "beta.beta": "1"}, digits=30).value
    assert _digits(a, mp_m("1/2", "1/5")) >= 30


def test_a_random_vector_of_dimension_p_has_squared_norm_p():
    # g ~ N(0, I_p), p = c n: g^T M g / n -> (p/n) tau(M) = c m
    m = _model()
    m.gaussian_vector("g", "p")
    v = m.limit("g.T*inv(Z*Z.T/n + gamma*I(p))*g/n", at={"c": "3/4", "gamma": "1/2"}, digits=30).value
    with mpmath.workdps(60):
        ref = mp_m("3/4", "1/2") * mpmath.mpf(3) / 4
    assert _digits(v, ref) >= 30


def test_an_independent_sign_vector_reads_the_normalized_trace():
    # y independent of M: y^T M y / n -> tau(M) (here the Marchenko-Pastur resolvent on n, ratio 1/c)
    m = _model()
    v = m.limit("y.T*inv(Z.T*Z/n + gamma*I(n))*y/n", at={"c": "1/2", "gamma": "1/5"}, digits=30).value
    t = m.limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"c": "1/2", "gamma": "1/5"}, digits=30).value
    assert _digits(v, t) >= 30


def test_a_norm_not_given_is_named_in_the_notes():
    """An inner product not given is 0: a vector whose squared norm is left out is the zero vector, and its
    form is 0. The result says so in its notes, and says nothing once the norm is given."""
    from symrmt.engine import Model

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("v", "p")
    e = "v.T*inv(Z*Z.T/n + gamma*I(p))*v"
    r = m.limit(e, at={"c": "1/2", "gamma": 1})
    assert r.value == 0 and any("v.v" in note and "zero vector" in note for note in r.notes)
    r = m.limit(e, at={"c": "1/2", "gamma": 1, "v.v": 1})
    assert not any("zero vector" in note for note in r.notes)
