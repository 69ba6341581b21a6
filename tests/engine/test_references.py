"""The trace engine against independent references, from the expression alone.

Every reference here is computed without the engine:

* closed forms written in this file in mpmath (Marchenko-Pastur's quadratic, the
  subordination equation of a semicircle plus MP, the MP Stieltjes transform at ``i sqrt(gamma)``
  for a squared Wishart matrix, the Silverstein equation of a two-atom covariance);
* the package's own limits of the ridge error and of the noise-only Attention error
  (``symrmt.models.attention.theory``: a closed form and a hand-built 3-block pencil with its own solver),
  reached through the kernel helper's Gaussian-equivalent expression.

Tolerances: closed forms to 30 digits (``10**-30`` relative), the package's errors to 40 digits.
"""

import json

import mpmath
import pytest

from symrmt.engine import Const, Diff, Identity, Inverse, Model, Trace, kernel
from symrmt.models.attention.geometry import LowRankGeometry

DIGITS = 30
WORK = 60  # working digits of the references


def _q(text):
    a, _, b = text.partition("/")
    return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)


def _close(value, ref, digits):
    with mpmath.workdps(WORK):
        err = abs(mpmath.mpf(value) - ref) / max(1, abs(ref))
    assert err <= mpmath.mpf(10) ** (-digits), f"{mpmath.nstr(value, digits + 3)} vs {mpmath.nstr(ref, digits + 3)}"


# ---------------------------------------------------------------- references (mpmath, no engine)

def mp_stieltjes(z, c):
    """``m(z) = lim tau((Z^T Z/n - z)^{-1})`` for ``Z`` p x n, ``c = p/n``: the root of
    ``-z m^2 + (c - 1 - z) m - 1 = 0`` with ``Im m Im z > 0`` (or ``m > 0`` at ``z < 0``)."""
    a, b = -z, c - 1 - z
    disc = mpmath.sqrt(b * b + 4 * a)
    r1, r2 = (-b + disc) / (2 * a), (-b - disc) / (2 * a)
    if mpmath.im(z) != 0:
        return r1 if mpmath.im(r1) * mpmath.im(z) > 0 else r2
    return r1 if r1 > 0 else r2


def semicircle_plus_mp(gamma, c, s):
    """``tau((Z^T Z/n + s G/sqrt(n) + gamma)^{-1})``: free additive convolution by subordination,
    ``m(z) = m_MP(z + s^2 m(z))`` at ``z = -gamma`` (the semicircle of variance ``s^2`` has
    R-transform ``s^2 w``; with ``B = 0`` this is the semicircle's ``m = 1/(gamma - s^2 m)``)."""
    m = 1 / gamma
    for _ in range(60):  # the map is a contraction near the physical root; then polish
        m = mp_stieltjes(-gamma + s**2 * m, c)
    return mpmath.findroot(lambda x: x - mp_stieltjes(-gamma + s**2 * x, c), m)


def wishart_squared(gamma, c):
    """``tau((W^2 + gamma)^{-1})``, ``W = Z^T Z/n``: ``1/(x^2 + gamma) = Im(1/(x - i sqrt(gamma)))/sqrt(gamma)``."""
    r = mpmath.sqrt(gamma)
    return mpmath.im(mp_stieltjes(mpmath.mpc(0, r), c)) / r


def anisotropic_plus_semicircle(gamma, c, values, weights, s):
    """``tau((Z^T D Z/n + s G/sqrt(n) + gamma)^{-1})``: subordination over the Silverstein resolvent,
    ``m = m_D(-gamma + s^2 m)``."""
    m = 1 / gamma
    for _ in range(100):
        m = anisotropic_mp(gamma - s**2 * m, c, values, weights)
    return mpmath.findroot(lambda x: x - anisotropic_mp(gamma - s**2 * x, c, values, weights), m)


def anisotropic_mp(gamma, c, values, weights):
    """``tau_n((Z^T D Z/n + gamma)^{-1})``, ``D`` with law ``sum_i w_i delta_{v_i}`` on ``p = c n``:
    Silverstein's equation ``1/m = gamma + c sum_i w_i v_i/(1 + v_i m)``, root in ``(0, 1/gamma]``."""
    def rhs(m):
        return 1 / (gamma + c * sum(w * v / (1 + v * m) for v, w in zip(values, weights)))

    m = 1 / gamma
    for _ in range(400):  # the map is increasing and bounded: monotone convergence from 1/gamma; then polish
        m = rhs(m)
    return mpmath.findroot(lambda x: x - rhs(x), m)


# ---------------------------------------------------------------- closed forms, 30 digits

@pytest.mark.parametrize("c,gamma", [("1/2", "1/5"), ("2", "1/1000"), ("1", "1/10"), ("1/4", "10")])
def test_marchenko_pastur(c, gamma):
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    r = m.limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"c": c, "gamma": gamma}, digits=DIGITS)
    with mpmath.workdps(WORK):
        _close(r.value, mp_stieltjes(-_q(gamma), _q(c)), DIGITS)


@pytest.mark.parametrize("c,gamma", [("1/2", "1/100"), ("1/2", "1/50"), ("1/4", "1/1000")])
def test_marchenko_pastur_small_gamma_below_c_1(c, gamma):
    """Rank-deficient Z^T Z/n (c < 1, an atom of mass 1 - c at 0) at small gamma: the steep start of the
    homotopy once led Newton onto the negative root (then refused by the branch check)."""
    test_marchenko_pastur(c, gamma)


def test_marchenko_pastur_wide_trace_over_the_larger_dimension():
    """tau_d((Z^T Z/n + lam)^{-1}) for Z n x d with d = 2n (the trace over the larger side), lam = 1/100."""
    m = Model()
    m.dim("d", "phi*n")
    m.gaussian("Z", "n", "d")
    r = m.limit("trace(inv(Z.T*Z/n + lam*I(d)))", at={"phi": "2", "lam": "1/100"}, digits=DIGITS)
    with mpmath.workdps(WORK):
        # Z^T Z/n = phi (Z^T Z/d): (1/phi) m_{c = 1/phi}(-lam/phi)
        _close(r.value, mp_stieltjes(-_q("1/100") / 2, _q("1/2")) / 2, DIGITS)


@pytest.mark.parametrize("c,gamma,s", [("1/2", "3", "1"), ("2", "1", "1/2"), ("1/3", "1/2", "1/4")])
def test_semicircle_plus_marchenko_pastur(c, gamma, s):
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.goe("G", "n")
    r = m.limit("trace(inv(Z.T*Z/n + s*G/sqrt(n) + gamma*I(n)))", at={"c": c, "gamma": gamma, "s": s},
                digits=DIGITS)
    with mpmath.workdps(WORK):
        _close(r.value, semicircle_plus_mp(_q(gamma), _q(c), _q(s)), DIGITS)


@pytest.mark.parametrize("c,gamma", [("1/2", "1/5"), ("3", "1/100")])
def test_wishart_squared(c, gamma):
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    r = m.limit("trace(inv(Z.T*Z*Z.T*Z/n**2 + gamma*I(n)))", at={"c": c, "gamma": gamma}, digits=DIGITS)
    with mpmath.workdps(WORK):
        _close(r.value, wishart_squared(_q(gamma), _q(c)), DIGITS)


@pytest.mark.parametrize("c,gamma,values,weights", [
    ("1/2", "1/5", ("1", "4"), ("1/4", "3/4")),
    ("2", "1/20", ("1/2", "3"), ("2/3", "1/3")),
])
def test_anisotropic_two_atoms(c, gamma, values, weights):
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.diag("D", "p", list(values), list(weights))
    r = m.limit("trace(inv(Z.T*D*Z/n + gamma*I(n)))", at={"c": c, "gamma": gamma}, digits=DIGITS)
    with mpmath.workdps(WORK):
        ref = anisotropic_mp(_q(gamma), _q(c), [_q(v) for v in values], [_q(w) for w in weights])
        _close(r.value, ref, DIGITS)


def test_anisotropic_plus_semicircle():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.goe("G", "n")
    m.diag("D", "p", ["1", "4"], ["1/4", "3/4"])
    r = m.limit("trace(inv(Z.T*D*Z/n + s*G/sqrt(n) + gamma*I(n)))", at={"c": "1/2", "gamma": "3", "s": "1/2"},
                digits=DIGITS)
    with mpmath.workdps(WORK):
        ref = anisotropic_plus_semicircle(_q("3"), _q("1/2"), [_q("1"), _q("4")], [_q("1/4"), _q("3/4")], _q("1/2"))
        _close(r.value, ref, DIGITS)


# ---------------------------------------------------------------- the package's errors, 40 digits

@pytest.mark.parametrize("c", ["1/2", "2"])
@pytest.mark.parametrize("gamma", ["1/10", "3"])
def test_ridge_error_without_signal(c, gamma):
    from symrmt.models.attention.theory import ridge_limit

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    r = m.limit("-gamma**2*diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)", at={"c": c, "gamma": gamma}, digits=42)
    ref = ridge_limit(c, [gamma], snr=0, digits=45)[0]
    _close(r.value, ref, 40)


def attention_expression(f, alpha=1, diagonal="zero"):
    """The noise-only Attention error ``-gamma^2 d/dgamma tau((K^T X^T X K/n + gamma)^{-1})`` with ``X = Z``
    (``mu = 0``) and ``K`` the kernel helper's Gaussian equivalent of ``f(alpha Z^T Z/sqrt(p))/sqrt(p)``."""
    m = Model()
    m.dim("p", "c*n")
    Z = m.gaussian("Z", "p", "n")
    g = m.param("gamma")
    K = kernel(f, Z, alpha=alpha, diagonal=diagonal, model=m)
    n = Const(m.dims["n"].size)
    Q = Inverse(K.T * Z.T * Z * K / n + g * Identity(m.dims["n"]))
    return m, -g**2 * Diff(Trace(Q), g.value)


@pytest.mark.slow
@pytest.mark.parametrize("f", ["tanh", "relu", "cos"])
@pytest.mark.parametrize("c", ["1/2", "2"])
def test_noise_only_attention_equals_the_package(f, c):
    from symrmt.models.attention.theory import attention_limit

    m, E = attention_expression(f)
    r = m.limit(E, at={"c": c, "gamma": "1/10"}, digits=42)
    ref = attention_limit(f, c, ["1/10"], digits=45)[0]
    _close(r.value, ref, 40)


@pytest.mark.slow
def test_noise_only_attention_alpha_and_kept_diagonal():
    """``W = 2 I`` with the diagonal kept: the kernel helper rescales f like the package (``f(2 t)``, ``d -> 2 d``).

    ``f(t) = max(t, 0) - sqrt(2/pi)`` is centered at the scale 2 (``E max(2 xi, 0) = sqrt(2/pi)``)."""
    from symrmt.models.attention.theory import attention_limit

    f = "Max(t, 0) - sqrt(2/pi)"
    m, E = attention_expression(f, alpha=2, diagonal="keep")
    r = m.limit(E, at={"c": "1/2", "gamma": "1"}, digits=42)
    ref = attention_limit(f, "1/2", ["1"], LowRankGeometry([[0]], alpha=2), diagonal="keep", digits=45)[0]
    _close(r.value, ref, 40)


@pytest.mark.slow
def test_noise_only_attention_equals_symrmt_limit_snr_0(capsys):
    """The same comparison against the CLI itself: ``symrmt limit --snr 0 --digits 45 --json``."""
    from symrmt.cli.app import main

    assert main(["limit", "--f", "cos", "--c", "2", "--gamma", "0.5", "--snr", "0", "--digits", "45", "--json"]) == 0
    text = json.loads(capsys.readouterr().out)["attention"][0]
    assert isinstance(text, str) and len(text) > 40
    m, E = attention_expression("cos")
    r = m.limit(E, at={"c": "2", "gamma": "1/2"}, digits=42)
    with mpmath.workdps(WORK):
        _close(r.value, mpmath.mpf(text), 40)


# ---------------------------------------------------------------- branch safety at small gamma

def _mp_model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    return m


@pytest.mark.parametrize("gamma", ["1/100", "1/50"])
def test_without_the_trust_region_the_wrong_root_is_refused_not_returned(monkeypatch, gamma):
    """At c = 1/2 the homotopy without its trust region lands on the negative root of the MP quadratic
    (tau = -1.96 at gamma = 1/100, against the true 50.96). That point must never come back: the second,
    finer path disagrees with it, even when no sanity bound applies (the bounds are switched off here)."""
    from symrmt.engine.solve import certify as trace_certify, newton as trace_solver
    from symrmt.errors import BranchError

    monkeypatch.setattr(trace_solver, "MOVE_FRACTION", 1e300)
    monkeypatch.setattr(trace_certify, "branch_acceptor", lambda t, values: None)
    with pytest.raises(BranchError, match="different fixed points"):
        _mp_model().limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"c": "1/2", "gamma": gamma}, digits=DIGITS)


def test_a_polish_that_leaves_the_homotopy_point_is_refused():
    """A start point 10% off (as if the path had stopped near another root): Newton converges, but away
    from the checked point, and the solver refuses instead of returning that root."""
    from fractions import Fraction

    from symrmt.errors import BranchError
    from symrmt.engine.solve.certify import compiled_system
    from symrmt.engine.solve.newton import TraceSolver

    plan = _mp_model().plan("trace(inv(Z.T*Z/n + gamma*I(n)))")

    def solver_at():
        return TraceSolver(compiled_system(plan.traces[0].system), {"c": Fraction(1, 2), "gamma": Fraction(1, 100)})

    solver = solver_at()
    good = solver.start()
    solver._start = [x * 1.1 for x in good]  # the internal seam: the start the path hands to the polish, spoiled
    with pytest.raises(BranchError, match="moved"):
        solver.solve(40)
    solver = solver_at()  # the path's own start: the same polish converges to the checked root
    with mpmath.workdps(WORK):
        h = solver.solve(40)[0]
        tau = sum(h[plan.traces[0].system.unknowns.index(ij)] * float(c)
                  for ij, c in plan.traces[0].system.readout.items())
        _close(tau, mp_stieltjes(-_q("1/100"), _q("1/2")), 35)
