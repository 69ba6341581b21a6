"""Points at the edge of the trace engine's reach whose limits exist, each checked against a
closed form or an equation solved here independently of the engine (mpmath, SymPy):

- ridgeless quadratic forms: the ridge bias and variance with a teacher vector (Hastie, Montanari,
  Rosset and Tibshirani 2019) at lambda = 1e-12 and 1e-20, phi > 1 (continuation in log lambda);
- Fuss-Catalan moments of a product of two Wishart matrices, whose fixed point passes the unknowns
  cap (a finite series: no fixed point);
- the density of the F matrix (an inverse of a purely random matrix: a singular start);
- the density of a 20-atom covariance (Silverstein's equation), and the real reason for a 100-atom one.
"""

from math import comb

import mpmath
import pytest
import sympy as sp

from symrmt.cli.app import main
from symrmt.engine import Model
from symrmt.engine.lang.matrices import ModelError

pytestmark = pytest.mark.slow  # seconds a test: outside the fast tier (pytest -m "not slow")

R = "inv(Z.T*Z/n + lam*I(d))"
BIAS = f"lam**2*beta.T*{R}*{R}*beta"
VARIANCE = f"sigma**2*e.T*Z*{R}*{R}*Z.T*e/n**2"


def hastie(phi, lam, r2, sigma, dps=80):
    """Bias ``r2 lam^2 m'(-lam)`` and variance ``sigma^2 phi (m - lam m')`` with ``m`` the Marchenko-Pastur
    Stieltjes transform of ratio ``phi`` at ``-lam`` (Hastie et al. 2019, Theorem 1, isotropic)."""
    with mpmath.workdps(dps):
        phi, lam, r2, sigma = (mpmath.mpf(sp.Rational(x).p) / sp.Rational(x).q for x in (phi, lam, r2, sigma))
        b = 1 - phi + lam
        m = 2 / (b + mpmath.sqrt(b * b + 4 * phi * lam))  # the positive root of phi lam m^2 + b m - 1 = 0
        mprime = (phi * m * m + m) / (2 * phi * lam * m + b)
        return r2 * lam**2 * mprime, sigma**2 * phi * (m - lam * mprime)


def teacher_model():
    m = Model()
    m.dim("d", "phi*n")
    m.gaussian("Z", "n", "d")
    m.vector("beta", "d")
    m.gaussian_vector("e", "n")
    return m


def rel(a, b):
    with mpmath.workdps(60):
        return abs(mpmath.mpf(a) - b) / abs(b)


@pytest.mark.parametrize("phi, lam", [("2", "1e-12"), ("3/2", "1e-16"), ("2", "1e-20")])
def test_ridgeless_teacher_bias_as_a_quadratic_form(phi, lam):
    r = teacher_model().limit(BIAS, at={"phi": phi, "lam": lam, "beta.beta": "1"}, digits=30)
    ref, _ = hastie(phi, lam, "1", "1")
    assert rel(r.value, ref) < mpmath.mpf(10) ** -29  # ridgeless: r2 (1 - 1/phi) + O(lam)


def test_ridgeless_teacher_variance_as_a_quadratic_form():
    r = teacher_model().limit(VARIANCE, at={"phi": "2", "lam": "1e-12", "sigma": "1"}, digits=30)
    _, ref = hastie("2", "1e-12", "1", "1")
    assert rel(r.value, ref) < mpmath.mpf(10) ** -29  # sigma^2/(phi - 1) - O(lam)


def test_ridgeless_teacher_bias_on_the_command_line(capsys):
    rc = main(["trace", BIAS, "--matrix", "Z=gaussian(n,d)", "--vector", "beta=vector(d)", "--dim", "d=phi*n",
               "--at", "phi=2, lam=1e-12, beta.beta=5/2", "--digits", "25", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    import json

    ref, _ = hastie("2", "1e-12", "5/2", "1")
    with mpmath.workdps(60):
        value = mpmath.mpf(json.loads(out)["value"])  # printed to 25 digits: within half a unit of the 25th
    assert rel(value, ref) < mpmath.mpf(10) ** -24


def _fuss_catalan(k, y):
    """``tau((W1 W2)^k)`` for free Marchenko-Pastur ``W1, W2`` of ratio ``y`` (variance 1): the moment
    series inverse of ``chi(z) = z / ((1 + z)(1 + y z)^2)`` (S-transform ``1/(1 + y z)^2``), by Lagrange:
    ``m_k = (1/k) [z^(k-1)] ((1 + z)(1 + y z)^2)^k``; at ``y = 1`` the Fuss-Catalan number
    ``binomial(3k, k)/(2k + 1)``."""
    z = sp.Symbol("z")
    return sp.expand(((1 + z) * (1 + y * z) ** 2) ** k).coeff(z, k - 1) / k


@pytest.mark.parametrize("k", [3, 4])
def test_fuss_catalan_moments_past_the_unknowns_cap(k, capsys):
    assert _fuss_catalan(k, 1) == comb(3 * k, k) // (2 * k + 1) == {3: 12, 4: 55}[k]
    rc = main(["trace", f"trace((Z1*Z1.T*Z2*Z2.T/n**2)**{k})", "--matrix", "Z1=gaussian(n,n)",
               "--matrix", "Z2=gaussian(n,n)", "--digits", "40", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    import json

    assert mpmath.mpf(json.loads(out)["value"]) == {3: 12, 4: 55}[k]


def test_rectangular_fuss_catalan_moment_is_exact():
    # W_i = Z_i Z_i^T/p (n x n, Z_i n x p, p = n/2: ratio y = 2); the expression is (p/n)^4 tau((W1 W2)^4)
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z1", "n", "p")
    m.gaussian("Z2", "n", "p")
    r = m.limit("trace((Z1*Z1.T*Z2*Z2.T/(p*n))**4)", at={"c": "1/2"}, digits=40)
    ref = sp.Rational(1, 2) ** 4 * _fuss_catalan(4, 2)
    assert ref == sp.Rational(249, 16)
    assert r.value == mpmath.mpf(249) / 16
    with pytest.raises(ModelError, match="prove is not available"):
        m.limit("trace((Z1*Z1.T*Z2*Z2.T/(p*n))**4)", at={"c": "1/2"}, prove=True)


def test_moment_series_with_an_irrational_coefficient_is_certified_at_two_precisions():
    m = Model()
    m.gaussian("Z1", "n", "n")
    m.gaussian("Z2", "n", "n")
    r = m.limit("trace((sqrt(2)*Z1*Z1.T*Z2*Z2.T/n**2)**3)", at={}, digits=30)
    with mpmath.workdps(50):
        assert rel(r.value, 12 * mpmath.sqrt(2) ** 3) < mpmath.mpf(10) ** -29


def _f_matrix_density(x, c, d, dps=40):
    """The density of ``F = Z1.T inv(Z2 Z2.T/n2) Z1/n`` (Z1 n x p, p = c n; Z2 n x n2, n2 = d n) from Silverstein's
    equation for ``B = X^T T X/p`` with ``T = W2^{-1}``: ``z = -1/m + (n/p) g(-m)``, ``g`` the Marchenko-Pastur
    Stieltjes transform of ratio ``y = 1/d`` (``y w g^2 + (w + y - 1) g + 1 = 0``); ``F = c B``."""
    with mpmath.workdps(dps):
        y, ratio, a = 1 / mpmath.mpf(d), 1 / mpmath.mpf(c), mpmath.mpf(c)
        X = mpmath.mpf(x) / a
        z = mpmath.mpc(X, 10)
        m = -1 / z
        g = mpmath.findroot(lambda g: y * (-m) * g**2 + (-m + y - 1) * g + 1, mpmath.mpc(1, 0))
        for eta in [10 * 10.0 ** (-j / 4) for j in range(160)] + [0]:
            z = mpmath.mpc(X, eta)
            m, g = mpmath.findroot(lambda m, g, z=z: [z + 1 / m - ratio * g,
                                                      y * (-m) * g**2 + (-m + y - 1) * g + 1], (m, g))
        return m.imag / mpmath.pi / a


def test_f_matrix_density():
    m = Model()
    m.dim("p", "c*n")
    m.dim("n2", "d*n")
    m.gaussian("Z1", "n", "p")
    m.gaussian("Z2", "n", "n2")
    r = m.density("Z1.T*inv(Z2*Z2.T/n2)*Z1/n", x=["1/2", 1, 2], at={"c": "1/2", "d": 2}, digits=25, edges=False)
    assert r.status == ["ok", "ok", "ok"]
    for x, v in zip(("0.5", "1", "2"), r.density):
        assert rel(v, _f_matrix_density(x, "0.5", 2)) < mpmath.mpf(10) ** -24


def test_f_matrix_density_on_the_command_line(capsys):
    rc = main(["density", "Z1.T*inv(Z2*Z2.T/n2)*Z1/n1", "--matrix", "Z1=gaussian(n,p)", "--matrix",
               "Z2=gaussian(n,n2)", "--dim", "p=c*n", "--dim", "n1=n", "--dim", "n2=d*n", "--at", "c=1/2, d=2",
               "--over", "x=1:2:2", "--json"])
    captured = capsys.readouterr()
    assert rc == 0 and "ZeroDivisionError" not in captured.err
    import json

    out = json.loads(captured.out)
    assert abs(out["density"][1] - float(_f_matrix_density(2, "0.5", 2))) < 1e-13


def _silverstein_density(x, atoms, dps=40):
    """The density of ``Z.T D Z/n`` (Z n x n, D of law ``atoms`` with equal weights) from Silverstein's
    equation at ratio 1: ``m = sum_a w_a / (t_a (-z m) - z)``."""
    with mpmath.workdps(dps):
        w = mpmath.mpf(1) / len(atoms)
        m = mpmath.mpc(0, 0.1)
        for eta in [10.0 ** (-j / 2) for j in range(60)] + [0]:
            z = mpmath.mpc(x, eta)
            m = mpmath.findroot(lambda m, z=z: m - sum(w / (t * (-z * m) - z) for t in atoms), m)
        return m.imag / mpmath.pi


@pytest.mark.parametrize("k", [3, 10])
def test_density_of_a_law_with_non_dyadic_weights_holds_its_digits(k):
    # the readout weights 1/3, 1/10 reached the Newton polish as float64 (wrong in the 17th digit)
    m = Model()
    m.gaussian("Z", "n", "n")
    m.diag("D", "n", [str(i + 1) for i in range(k)], [f"1/{k}"] * k)
    r = m.density("Z.T*D*Z/n", x=[f"{k}/2"], digits=30, edges=False)
    ref = _silverstein_density(mpmath.mpf(k) / 2, [mpmath.mpf(i + 1) for i in range(k)], dps=50)
    assert r.status == ["ok"] and rel(r.density[0], ref) < mpmath.mpf(10) ** -29


def test_density_of_a_20_atom_law():
    m = Model()
    m.gaussian("Z", "n", "n")
    m.diag("D", "n", [str(i + 1) for i in range(20)], ["1/20"] * 20)
    r = m.density("Z.T*D*Z/n", x=["21/2"], digits=25, edges=False)
    assert r.status == ["ok"]
    assert rel(r.density[0], _silverstein_density(mpmath.mpf(21) / 2, [mpmath.mpf(i + 1) for i in range(20)])) \
        < mpmath.mpf(10) ** -24


def test_density_of_a_100_atom_law_is_refused_with_its_reason(capsys):
    values = ",".join(str(i + 1) for i in range(100))
    weights = ",".join(["1/100"] * 100)
    rc = main(["density", "Z.T*D*Z/n", "--matrix", "Z=gaussian(n,n)", "--matrix", f"D=diag(n, ({values}), ({weights}))",
               "--over", "x=1:20:3"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "100-atom law D" in err and "z-derivative" in err and "diff()" not in err


# ---------------------------------------------------------------- a real point inside an indefinite spectrum

WGW = "trace(inv(Z.T*Z/n*G/sqrt(n)*Z.T*Z/n + gamma*I(n)))"


def wgw_model():
    m = Model()
    m.gaussian("Z", "n", "n")
    m.goe("G", "n")
    return m


def wgw_resolvent(gamma, dps=40):
    """``tau((W s W + gamma)^{-1})`` with ``W`` Marchenko-Pastur (ratio 1) and ``s`` a semicircular free from it,
    by the operator-valued semicircle: ``W s W`` has covariance ``b -> W^2 tau(W^2 b)`` over the algebra of
    ``W``, so ``tau((z - W s W)^{-1}) = E[(z - q x^2)^{-1}]`` with ``q = E[x^2 (z - q x^2)^{-1}]``, ``x`` of the
    Marchenko-Pastur law, at ``z = -gamma`` (quadrature in ``x = 4 sin^2(t/2)``, ``rho dx = (2/pi) cos^2(t/2) dt``)."""
    with mpmath.workdps(dps):
        z = -mpmath.mpf(gamma)

        def E(f):
            return mpmath.quad(lambda t: f(4 * mpmath.sin(t / 2) ** 2) * 2 * mpmath.cos(t / 2) ** 2 / mpmath.pi,
                               [0, mpmath.pi])

        def rhs(q):
            return E(lambda x: x * x / (z - q * x * x))

        q = mpmath.mpf(0)
        for _ in range(30):  # a contraction for |gamma| well past the spectrum's edge (about 8.38)
            q = rhs(q)
        q = mpmath.findroot(lambda q: q - rhs(q), q)
        return -E(lambda x: 1 / (z - q * x * x))


@pytest.mark.parametrize("gamma", ["1/10", "1e-400", "-1/2"])
def test_real_point_inside_an_indefinite_spectrum_is_refused_at_once_with_the_reason(gamma):
    from symrmt.engine.solve.spectrum_guard import InsideSpectrumError

    with pytest.raises(InsideSpectrumError, match=r"-gamma = .* lies inside the spectrum of "
                                                  r"Z\.T\*Z/n\*G/sqrt\(n\)\*Z\.T\*Z/n \(.*density.*no real limit.*"
                                                  r"complex point \(gamma=\.\.\.\+\.\.\.j\) or symrmt density"):
        wgw_model().limit(WGW, at={"gamma": gamma})


def test_inside_spectrum_refusal_on_the_command_line(capsys):
    rc = main(["trace", WGW, "--matrix", "Z=gaussian(n,n)", "--matrix", "G=goe(n)", "--at", "gamma=1/10"])
    err = capsys.readouterr().err
    assert rc == 3
    assert "InsideSpectrumError" in err and "lies inside the spectrum" in err and "Traceback" not in err
    assert "time limit" not in err


def test_inside_spectrum_claim_against_eigenvalues():
    # the refusal's reason, checked on a draw: eigenvalues of W G W on both sides of -1/10, near it
    import numpy as np

    rng = np.random.default_rng(3)
    n = 300
    Z = rng.standard_normal((n, n))
    W = Z.T @ Z / n
    A = rng.standard_normal((n, n))
    ev = np.linalg.eigvalsh(W @ ((A + A.T) / np.sqrt(2) / np.sqrt(n)) @ W)
    assert ((ev > -0.3) & (ev < -0.1)).sum() > 10 and ((ev > -0.1) & (ev < 0.1)).sum() > 10


@pytest.mark.parametrize("gamma", ["10", "-10", "30"])
def test_points_outside_an_indefinite_spectrum_are_answered(gamma):
    r = wgw_model().limit(WGW, at={"gamma": gamma}, digits=30)
    assert rel(r.value, wgw_resolvent(gamma)) < mpmath.mpf(10) ** -25


def test_psd_matrix_pays_no_density_for_the_spectrum_check(monkeypatch):
    from symrmt.engine.solve import spectrum_guard

    def fail(*args):
        raise AssertionError("the density was computed for a matrix positive semi-definite by structure")

    monkeypatch.setattr(spectrum_guard, "_density", fail)  # the internal seam: nothing public shows it was skipped
    m = Model()
    m.gaussian("Z", "n", "n")
    r = m.limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"gamma": "1/10"}, digits=20)
    with mpmath.workdps(40):  # Marchenko-Pastur, ratio 1: tau((W + g)^{-1}) = (sqrt(g^2 + 4g) - g)/(2g)
        g = mpmath.mpf(1) / 10
        assert rel(r.value, (mpmath.sqrt(g * g + 4 * g) - g) / (2 * g)) < mpmath.mpf(10) ** -19


# ---------------------------------------------------------------- the ridgeless variance, two-atom covariance

S_R = "inv(S*Z.T*Z*S/n + lam*I(d))"
TWO_ATOM_VARIANCE = f"trace({S_R}*S*Z.T*Z*S/n*{S_R}*S*S)"


def two_atom_model():
    m = Model()
    m.dim("d", "phi*n")
    m.gaussian("Z", "n", "d")
    m.diag("S", "d", ["1", "2"], ["1/2", "1/2"])  # Sigma = S^2: atoms 1 and 4, weight 1/2 each
    return m


def ridge_variance(phi, lam, dps=100):
    """``V = tau(R Sigma_hat R Sigma) = (delta + lam delta')/phi`` (Dobriban and Wager 2018; Hastie et al. 2019,
    anisotropic), ``delta`` the root of ``delta = phi sum_a w_a s_a/(s_a/(1 + delta) + lam)`` for ``Sigma`` with
    atoms ``s = 1, 4`` of weight 1/2, found from its ridgeless scale: for ``phi > 1``, ``delta ~ kappa/lam`` with
    ``1 = phi sum_a w_a s_a/(s_a + kappa)`` (bisection), then Newton on ``u = 1/(1 + delta)`` in units of
    ``lam``; ``delta'`` by implicit differentiation."""
    with mpmath.workdps(dps):
        phi, lam = (mpmath.mpf(sp.Rational(x).p) / sp.Rational(x).q for x in (phi, lam))
        ss, ws = (mpmath.mpf(1), mpmath.mpf(4)), (mpmath.mpf(1) / 2, mpmath.mpf(1) / 2)
        lo, hi = mpmath.mpf(0), mpmath.mpf(400)
        for _ in range(400):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if phi * sum(w * s / (s + mid) for s, w in zip(ss, ws)) > 1 else (lo, mid)
        kappa = (lo + hi) / 2

        def f(v):  # lam (1/u - 1 - phi sum w s/(s u + lam)) at u = v lam
            u = v * lam
            return lam * (1 / u - 1 - phi * sum(w * s / (s * u + lam) for s, w in zip(ss, ws)))

        delta = 1 / (mpmath.findroot(f, 1 / kappa) * lam) - 1
        f_delta = 1 - phi * sum(w * s * s / (1 + delta) ** 2 / (s / (1 + delta) + lam) ** 2 for s, w in zip(ss, ws))
        f_lam = phi * sum(w * s / (s / (1 + delta) + lam) ** 2 for s, w in zip(ss, ws))
        return (delta - lam * f_lam / f_delta) / phi


@pytest.mark.parametrize("phi, lam", [("2", "1e-12"), ("2", "1e-16"), ("2", "1e-20"), ("3/2", "1e-20")])
def test_ridgeless_two_atom_variance(phi, lam):
    pytest.importorskip("flint")  # the mpmath path's linear solves in C: without it the QR takes minutes
    r = two_atom_model().limit(TWO_ATOM_VARIANCE, at={"phi": phi, "lam": lam}, digits=30)
    ref = ridge_variance(phi, lam)
    assert rel(r.value, ref) < mpmath.mpf(10) ** -29
    if phi == "2":
        with mpmath.workdps(60):  # the ridgeless limit: kappa = 2, V -> 5/8
            assert abs(ref - mpmath.mpf(5) / 8) < mpmath.mpf(10) ** -10


def test_ridgeless_two_atom_variance_on_the_command_line(capsys):
    pytest.importorskip("flint")
    rc = main(["trace", TWO_ATOM_VARIANCE, "--matrix", "Z=gaussian(n,d)", "--matrix", "S=diag(d, (1, 2), (1/2, 1/2))",
               "--dim", "d=phi*n", "--at", "phi=2, lam=1e-20", "--digits", "25", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    import json

    with mpmath.workdps(60):
        assert rel(mpmath.mpf(json.loads(out)["value"]), ridge_variance("2", "1e-20")) < mpmath.mpf(10) ** -24


def test_diff_with_an_order_says_how_to_write_a_second_derivative(capsys):
    """``diff(E, lam, 2)`` is refused with the way to write it (exit 2), and the nested form gives the second
    derivative of the Marchenko-Pastur resolvent trace (its closed form differentiated by mpmath)."""
    argv = ["--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2, lam=1/5"]
    assert main(["trace", "diff(trace(inv(Z.T*Z/n + lam*I(n))), lam, 2)", *argv]) == 2
    assert "diff(diff(E, gamma), gamma)" in capsys.readouterr().err
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    value = m.limit("diff(diff(trace(inv(Z.T*Z/n + lam*I(n))), lam), lam)", at={"c": "1/2", "lam": "1/5"}).value
    with mpmath.workdps(30):
        closed = mpmath.diff(lambda lam: (-(lam - mpmath.mpf(1) / 2) + mpmath.sqrt((lam - mpmath.mpf(1) / 2) ** 2
                                                                                   + 4 * lam)) / (2 * lam),
                             mpmath.mpf(1) / 5, 2)
        assert abs(value - closed) <= 1e-13 * closed
