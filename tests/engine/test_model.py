"""The trace engine against closed forms, the package's own limits, and its own refusals.

Every reference value here is computed independently of the engine: a closed form
(quadratic roots, a subordination or Silverstein equation solved by ``mpmath.findroot``
at high precision), or the package's separately derived ridge and attention limits.
"""

from fractions import Fraction

import mpmath
import pytest

from symrmt.engine import Model, ModelError
from symrmt.errors import SolverError

DIGITS = 32


def _close(value, ref, digits):
    with mpmath.workdps(digits + 10):
        assert abs(value - ref) <= abs(ref) * mpmath.mpf(10) ** (-digits), (value, ref)


def _mp_stieltjes(x, c):
    """``tau((W + x)^{-1})`` for ``W = Z^T Z / n``, ``Z`` of size ``c n x n``: the positive root of
    ``x m^2 + (x + c - 1) m - 1 = 0``."""
    b = x + c - 1
    return (-b + mpmath.sqrt(b * b + 4 * x)) / (2 * x)


@pytest.fixture(scope="module")
def model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.goe("G", "n")
    m.diag("D", "p", ["1/2", "3"], ["1/3", "2/3"])
    return m


@pytest.mark.parametrize("c,gamma", [("1/2", "1/5"), ("2", "1/10"), ("1/2", "7")])
def test_marchenko_pastur(model, c, gamma):
    r = model.limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"c": c, "gamma": gamma}, digits=DIGITS)
    with mpmath.workdps(60):
        ref = _mp_stieltjes(mpmath.mpf(Fraction(gamma).numerator) / Fraction(gamma).denominator,
                            mpmath.mpf(Fraction(c).numerator) / Fraction(c).denominator)
    _close(r.value, ref, DIGITS)


def test_semicircle_plus_mp(model):
    """Free additive convolution: with ``A = W + G/sqrt(n)``, ``m = tau((A + g)^{-1})`` solves the
    subordination equation ``m = m_W(g - m)`` (semicircle of variance 1: ``R(m) = m``)."""
    c, g = mpmath.mpf(1) / 2, mpmath.mpf(3)
    r = model.limit("trace(inv(Z.T*Z/n + G/sqrt(n) + gamma*I(n)))", at={"c": "1/2", "gamma": 3}, digits=DIGITS)
    with mpmath.workdps(60):
        ref = mpmath.findroot(lambda m: m - _mp_stieltjes(g - m, c), 1 / g, tol=mpmath.mpf(10) ** -55)
    _close(r.value, ref, DIGITS)


@pytest.mark.parametrize("c", ["1/2", "2"])
def test_square_of_wishart(model, c):
    """``1/(x^2 + g) = Im(1/(x - i sqrt g)) / sqrt g``: the MP Stieltjes transform at ``i sqrt g``."""
    r = model.limit("trace(inv((Z.T*Z/n)**2 + gamma*I(n)))", at={"c": c, "gamma": "1/4"}, digits=DIGITS)
    with mpmath.workdps(60):
        cc = mpmath.mpf(Fraction(c).numerator) / Fraction(c).denominator
        z = 1j * mpmath.sqrt(mpmath.mpf(1) / 4)
        # G(z) = int dmu(x)/(z - x) solves z G^2 - (z - c + 1) G + 1 = 0, Im G < 0 for Im z > 0
        b = z - cc + 1
        roots = [(b + s * mpmath.sqrt(b * b - 4 * z)) / (2 * z) for s in (1, -1)]
        G = [g for g in roots if mpmath.im(g) < 0]
        assert len(G) == 1
        ref = mpmath.im(-G[0]) / mpmath.sqrt(mpmath.mpf(1) / 4)
    _close(r.value, ref, DIGITS)


def test_two_atom_covariance(model):
    """Anisotropic MP: ``m = 1/(g + c sum_a w_a d_a / (1 + d_a m))`` (Silverstein-Bai)."""
    r = model.limit("trace(inv(Z.T*D*Z/n + gamma*I(n)))", at={"c": "3/2", "gamma": "1/5"}, digits=DIGITS)
    with mpmath.workdps(60):
        c, g = mpmath.mpf(3) / 2, mpmath.mpf(1) / 5
        atoms = [(mpmath.mpf(1) / 2, mpmath.mpf(1) / 3), (mpmath.mpf(3), mpmath.mpf(2) / 3)]

        def eq(m):
            return m * (g + c * sum(w * d / (1 + d * m) for d, w in atoms)) - 1

        # eq(0) = -1 < 0 < eq(1/g): the physical root is the one in (0, 1/g]
        ref = mpmath.findroot(eq, (mpmath.mpf(0), 1 / g), solver="anderson", tol=mpmath.mpf(10) ** -55)
        assert 0 < ref <= 1 / g
    _close(r.value, ref, DIGITS)


@pytest.mark.parametrize("c", ["1/2", "2"])
def test_ridge_error_without_signal(model, c):
    from symrmt.models.attention.theory import ridge_limit

    expr = "-gamma**2*diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)"
    for gamma in ("1/10", "2"):
        r = model.limit(expr, at={"c": c, "gamma": gamma}, digits=42)
        ref = ridge_limit(c, [gamma], snr=0, digits=45)[0]
        _close(r.value, ref, 40)


@pytest.mark.parametrize("c", ["1/2", "2"])
def test_noise_only_attention_error(model, c):
    """The Gaussian-equivalent kernel ``K = a1 (Z^T Z/p - I) + sqrt(nu - a1^2) G/sqrt(p)`` written by hand;
    ``E_A = -gamma^2 d/dgamma tau((K Z^T Z K / n + gamma)^{-1})`` against the package's attention limit."""
    from symrmt.models.attention.theory import attention_limit

    K = "(a1*(Z.T*Z/p - I(n)) + sqrt(nu - a1**2)*G/sqrt(p))"
    expr = f"-gamma**2*diff(trace(inv({K}*Z.T*Z*{K}/n + gamma*I(n))), gamma)"
    hermite = {"a1": Fraction(3, 5), "nu": Fraction(1, 2)}
    r = model.limit(expr, at={"c": c, "gamma": "1/5", **hermite}, digits=42)
    ref = attention_limit(hermite, c, ["1/5"], digits=45)[0]
    _close(r.value, ref, 40)


def test_diff_matches_tree_derivative(model):
    """Implicit differentiation of the fixed point equals the limit of the exactly differentiated tree."""
    from symrmt.engine import differentiate

    e = model.parse("trace(inv(Z.T*D*Z/n + G/sqrt(n) + gamma*I(n)))")
    at = {"c": "1/2", "gamma": 4}
    via_fp = model.limit(model.parse("diff(trace(inv(Z.T*D*Z/n + G/sqrt(n) + gamma*I(n))), gamma)"), at, 30)
    via_tree = model.limit(differentiate(e, model.symbols["gamma"]), at, 30)
    _close(via_fp.value, via_tree.value, 28)


@pytest.mark.parametrize("text,why", [
    ("trace(inv(Z.T*Z + gamma*I(n)))", "different orders"),
    ("trace(Z.T*Z)", "grows like n"),
    ("trace(Z)", "non-square"),
    ("trace(G*Z)", "size mismatch"),
    ("inv(Z)", "non-square"),
    ("trace(sqrt(Z.T*Z))", r"sqrt\(\) of a matrix"),
    ("trace(Z.T*Z/n)*Z", "deterministic scalar"),
    ("__import__('os')", "unknown|not a valid"),
])
def test_refusals(model, text, why):
    with pytest.raises(ValueError, match=why):
        model.limit(text, at={"c": "1/2", "gamma": 1}, digits=15)


def test_inside_the_spectrum_is_refused(model):
    """``W + G/sqrt(n)`` has negative eigenvalues: at ``-gamma = -1/5`` the resolvent has no real limit."""
    with pytest.raises(SolverError, match=r"lies inside the spectrum of Z.T\*Z/n \+ G/sqrt\(n\).*no real limit"):
        model.limit("trace(inv(Z.T*Z/n + G/sqrt(n) + gamma*I(n)))", at={"c": "1/2", "gamma": "1/5"}, digits=20)


def test_missing_value_is_refused(model):
    with pytest.raises(ModelError, match="no value given for gamma"):
        model.limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"c": "1/2"}, digits=15)


def test_pencil_and_equations_print(model):
    e = "trace(inv(Z.T*Z/n + gamma*I(n)))"
    (pencil,) = model.pencil(e)
    (eqs,) = model.equations(e)
    assert pencil.size == 2
    assert "\\hat{Z}" in pencil.latex()
    assert "H_{2,2}" in eqs.latex() and "gamma" in eqs.latex()


def test_singular_deterministic_part(model):
    """``tau((Z Z^T/n)^{-1}) = 1/(1 - c)`` for ``c < 1``: ``L_0`` is singular, the solver goes through a shift."""
    r = model.limit("trace(inv(Z*Z.T/n))", at={"c": "1/3"}, digits=30)
    _close(r.value, mpmath.mpf(3) / 2, 30)
    with pytest.raises(SolverError, match="may not exist"):
        model.limit("trace(inv(Z.T*Z/n))", at={"c": "1/3"}, digits=15)


def test_second_derivative_and_c_derivative_closed_form(model):
    """``diff`` twice in gamma and once in the dimension ratio c, against SymPy's derivatives of the
    explicit MP root."""
    import sympy as sp

    g, c = sp.symbols("g c", positive=True)
    b = g + c - 1
    mroot = (-b + sp.sqrt(b**2 + 4 * g)) / (2 * g)
    at = {"c": "1/2", "gamma": "1/5"}
    vals = {c: sp.Rational(1, 2), g: sp.Rational(1, 5)}
    with mpmath.workdps(60):
        ref2 = mpmath.mpf(str(sp.N(sp.diff(mroot, g, 2).subs(vals), 55)))
        refc = mpmath.mpf(str(sp.N(sp.diff(mroot, c).subs(vals), 55)))
    r2 = model.limit("diff(diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma), gamma)", at=at, digits=30)
    _close(r2.value, ref2, 30)
    rc = model.limit("diff(trace(inv(Z.T*Z/n + gamma*I(n))), c)", at=at, digits=30)
    _close(rc.value, refc, 30)


def _simulate(model, text, at, n, trials, seed):
    """Monte-Carlo mean and standard error of the expression (NumPy, the bound tree)."""
    import numpy as np

    from symrmt.engine import bind

    tree = bind(model.parse(text), at, n)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(trials):
        mats = {}

        def ev(x, mats=mats):
            k = x.kind
            if k == "gaussian":
                if x.name not in mats:
                    mats[x.name] = rng.standard_normal((x.rows.count, x.cols.count))
                return mats[x.name]
            if k == "goe":
                if x.name not in mats:
                    a = rng.standard_normal((x.dim.count,) * 2)
                    mats[x.name] = (a + a.T) / np.sqrt(2)
                return mats[x.name]
            if k == "identity":
                return np.eye(x.dim.count)
            if k == "diag":
                return np.diag(np.repeat(x.values, x.counts))
            if k == "sum":
                return sum(ev(t) for t in x.terms)
            if k == "product":
                acc = ev(x.factors[0])
                for f in x.factors[1:]:
                    acc = acc @ ev(f)
                return acc
            if k == "scaled":
                return ev(x.scalar) * ev(x.matrix)
            if k == "transpose":
                return ev(x.matrix).T
            if k == "inverse":
                return np.linalg.inv(ev(x.matrix))
            if k == "trace":
                M = ev(x.matrix)
                return np.trace(M) / M.shape[0]
            if k == "const":
                return x.value
            if k == "sproduct":
                acc = 1.0
                for f in x.factors:
                    acc = acc * ev(f)
                return acc
            if k == "ssum":
                return sum(ev(t) for t in x.terms)
            if k == "power":
                return ev(x.base) ** x.exponent
            raise AssertionError(k)

        out.append(ev(tree))
    out = np.array(out)
    return out.mean(), out.std(ddof=1) / np.sqrt(trials)


@pytest.mark.parametrize("text", [
    "trace(inv(Z.T*D*Z/n + G/sqrt(n) + gamma*I(n)))",
    "trace(Z.T*Z/n * inv(Z.T*Z/n + gamma*I(n)) * G*G/n * inv(Z.T*Z/n + gamma*I(n)))",
    "trace(inv((Z.T*Z/n)**2 + gamma*I(n))) / trace(inv(Z*Z.T/n + gamma*I(p)))",
])
def test_against_simulation(model, text):
    """Theory vs Monte-Carlo at n = 256 over 10 trials: within 3 se plus 1% (finite-size bias O(1/n));
    3 se alone would fail about 0.3% of the time for an unbiased estimate, the seeds are fixed."""
    at = {"c": "1/2", "gamma": 3}
    theory = float(model.limit(text, at=at, digits=15).value)
    mean, se = _simulate(model, text, at, 256, 10, seed=7)
    assert abs(mean - theory) <= 3 * se + 0.01 * abs(theory), (mean, se, theory)


@pytest.mark.parametrize("gamma", ["1e-8", "1e6"])
def test_ridge_error_at_extreme_gamma(model, gamma):
    """Far from gamma ~ 1 (stiff at small gamma: tau falls from 1/gamma at the start of the homotopy)."""
    from symrmt.models.attention.theory import ridge_limit

    expr = "-gamma**2*diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)"
    for c in ("1/2", "2"):
        r = model.limit(expr, at={"c": c, "gamma": gamma}, digits=30)
        _close(r.value, ridge_limit(c, [gamma], snr=0, digits=35)[0], 30)


def test_pencil_and_equations_of_the_whole_expression(model):
    e = "trace(inv(Z.T*Z/n + gamma*I(n)))"
    assert model.pencil(e).latex() == model.pencil(e)[0].latex()
    assert model.pencil(e).matrix().shape == (2, 2)
    assert "\\gamma" in model.equations(e).latex()
    two = "trace(inv(Z.T*Z/n + gamma*I(n))) * trace(inv(Z*Z.T/n + gamma*I(p)))"
    assert len(model.pencil(two)) == 2
    with pytest.raises(ModelError, match="2 traces"):
        model.pencil(two).matrix()


@pytest.mark.slow  # 42-digit limits against the paper's solver: seconds, outside the fast tier
@pytest.mark.parametrize("f", ["tanh", "relu", "cos"])
def test_noise_only_attention_error_for_presets(model, f):
    """The preset nonlinearities (tanh by quadrature, ReLU and centered cos in closed form): their Hermite
    data enter the hand-written Gaussian-equivalent expression as exact rationals of 70-digit values."""
    from symrmt.models.attention.theory import attention_limit
    from symrmt.models.attention.params import to_fraction
    from symrmt.hermite import Nonlinearity

    nl = Nonlinearity(f)
    with mpmath.workdps(70):
        hermite = {"a1": to_fraction(nl.a_mpf(1, 70), "a1"), "nu": to_fraction(nl.nu_mpf(70), "nu")}
    K = "(a1*(Z.T*Z/p - I(n)) + sqrt(nu - a1**2)*G/sqrt(p))"
    expr = f"-gamma**2*diff(trace(inv({K}*Z.T*Z*{K}/n + gamma*I(n))), gamma)"
    for c in ("1/2", "2"):
        r = model.limit(expr, at={"c": c, "gamma": "1/10", **hermite}, digits=42)
        _close(r.value, attention_limit(f, c, ["1/10"], digits=45)[0], 40)


def test_let_names_a_sub_expression():
    """``Model.let``: a named matrix sub-expression is substituted by the parser; names are checked."""
    m = Model()
    m.dim("p", "c*n")
    Z = m.gaussian("Z", "p", "n")
    W = m.let("W", Z.T * Z / m.size("n"))
    assert m.parse("trace(inv(W + gamma*I(n)))") == m.parse("trace(inv(Z.T*Z/n + gamma*I(n)))")
    assert "W" not in m.matrices
    with pytest.raises(ModelError, match="already used"):
        m.let("W", W)
    with pytest.raises(ModelError, match="already used"):
        m.goe("W", "n")
    other = Model()
    other.dim("p", "c*n")
    with pytest.raises(ModelError, match="not declared"):
        other.let("V", Z.T * Z)
    with pytest.raises(ModelError, match="matrix expression"):
        m.let("s", m.param("gamma"))
