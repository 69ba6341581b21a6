"""Deterministic matrices and vectors given by their entries (symrmt/engine/laws/given.py).

Every expected number is computed here independently of the engine: the diagonal-law path of the
engine for a rotated spectrum, the Silverstein (Couillet-Liao) equation solved in mpmath with the
eigenvalues of the matrix, the ridge risk of Hastie-Montanari-Rosset-Tibshirani (Theorem 2, in its
effective-regularization form) with the projections of the teacher vector, and a Monte-Carlo check.
The matrices have entries that float64 holds exactly (Hadamard rotations, powers of 1/2), so the
closed forms are those of the very matrix the engine reads.
"""

from __future__ import annotations

import os

import mpmath
import numpy as np
import pytest

from symrmt.engine import Model
from symrmt.engine.lang.node import ModelError
from symrmt.errors import ParameterError

DIGITS = 30


def hadamard(p):
    """An orthogonal p x p matrix with entries +-1/sqrt(p) (p a power of 4: exact in float64)."""
    H = np.array([[1.0]])
    while H.shape[0] < p:
        H = np.block([[H, H], [H, -H]])
    return H / np.sqrt(p)


def agree(a, b, digits=25):
    with mpmath.workdps(digits + 20):  # read both at more than the digits compared
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        return abs(a - b) <= mpmath.mpf(10) ** (-digits) * max(abs(b), 1)


def model(S=None, name="S", p="p"):
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    if S is not None:
        m.matrix(name, p, p, S)
    return m


def mp_eigh(A):
    """Eigenvalues and eigenvectors of the float64 symmetric matrix A (read exactly) at 60 digits."""
    with mpmath.workdps(60):
        M = mpmath.matrix(A.tolist())
        E, Q = mpmath.eigsy(M)
        return [E[i] for i in range(len(A))], Q


def silverstein(eigs, c, gamma):
    """delta and the eigenvalues of Qbar = (Sigma/(1 + delta) + gamma I)^{-1}: delta = tr(Sigma Qbar)/n."""
    p = len(eigs)

    def f(d):
        return d - c * mpmath.fsum(s / (s / (1 + d) + gamma) for s in eigs) / p

    d = mpmath.findroot(f, mpmath.mpf(1) / 2, tol=mpmath.mpf(10) ** (-55))
    return d, [1 / (s / (1 + d) + gamma) for s in eigs]


def test_rotated_spectrum_equals_the_diag_law():
    """Sigma = O D O^T (O a Hadamard rotation, not diagonal) gives the diag-law value of D."""
    p = 16
    O = hadamard(p)
    d = np.array([1.0] * 8 + [3.0] * 8)
    Sig = O @ np.diag(d) @ O.T
    assert np.abs(Sig - np.diag(np.diag(Sig))).max() > 0.5  # genuinely not diagonal
    m = model(Sig)
    got = m.limit("trace(inv(Z.T*S*Z/n + gamma*I(n)))", at={"c": "1/2", "gamma": "1/3"}, digits=DIGITS)
    ref = Model()
    ref.dim("p", "c*n")
    ref.gaussian("Z", "p", "n")
    ref.diag("D", "p", [1, 3], ["1/2", "1/2"])
    want = ref.limit("trace(inv(Z.T*D*Z/n + gamma*I(n)))", at={"c": "1/2", "gamma": "1/3"}, digits=DIGITS)
    assert agree(got.value, want.value, 26)


def test_general_square_root_equals_the_diag_law():
    """A non-symmetric S = O diag(s) P with S S^T = O diag(s^2) O^T: the p-side resolvent of S Z Z^T S^T/n."""
    p = 16
    O, P = hadamard(p), np.eye(p)[np.random.default_rng(3).permutation(p)]
    s = np.array([1.0] * 8 + [2.0] * 8)
    S = O @ np.diag(s) @ P
    assert np.abs(S - S.T).max() > 0.1
    m = model(S)
    got = m.limit("trace(inv(S*Z*Z.T*S.T/n + gamma*I(p)))", at={"c": 2, "gamma": "1/2"}, digits=DIGITS)
    with mpmath.workdps(60):
        _d, q = silverstein([mpmath.mpf(1)] * 8 + [mpmath.mpf(4)] * 8, 2, mpmath.mpf(1) / 2)
        want = mpmath.fsum(q) / p
    assert agree(got.value, want, 26)


def test_ar1_covariance_against_the_silverstein_equation():
    """Sigma_ij = (1/2)^|i-j| (exact in float64): the n-side and p-side traces and a quadratic form
    against Qbar = (Sigma/(1+delta) + gamma I)^{-1} built from the eigenvalues and eigenvectors of Sigma."""
    p = 24
    idx = np.arange(p)
    Sig = 0.5 ** np.abs(idx[:, None] - idx[None, :])
    with mpmath.workdps(60):
        c, gamma = mpmath.mpf(3) / 4, mpmath.mpf(1) / 5
    eigs, Q = mp_eigh(Sig)
    with mpmath.workdps(60):
        delta, q = silverstein(eigs, c, gamma)
        n = p / c
        tr_p = mpmath.fsum(q) / p  # (1/p) tr Qbar
        # Z^T Sigma Z/n and Sigma^(1/2) Z Z^T Sigma^(1/2)/n share their non-zero eigenvalues
        tr_n = (p * tr_p - (p - n) / gamma) / n
        v = np.zeros(p)
        v[0], v[5] = 0.5, -1.0
        proj = [mpmath.fsum(Q[i, k] * mpmath.mpf(v[i]) for i in range(p)) for k in range(p)]
        # v^T Sigma^(1/2) Qt Sigma^(1/2) v with Qt the n-side resolvent: gamma-side identity
        # Sigma^(1/2) Z (Z^T Sigma Z/n + gamma)^{-1} Z^T Sigma^(1/2)/n = I - gamma Q, Q -> Qbar
        qf = 1 - gamma * mpmath.fsum(pr ** 2 * qk for pr, qk in zip(proj, q)) / mpmath.fsum(pr ** 2 for pr in proj)
    m = model(Sig)
    at = {"c": "3/4", "gamma": "1/5"}
    got_n = m.limit("trace(inv(Z.T*S*Z/n + gamma*I(n)))", at=at, digits=DIGITS)
    assert agree(got_n.value, tr_n, 26)
    m.vector_file("v", "p", v)
    got_qf = m.limit("v.T*S*Z*inv(Z.T*S*Z/n + gamma*I(n))*Z.T*v/n", at=at, digits=DIGITS)
    vv = mpmath.mpf(float(v @ v))
    # v^T Sigma Z (.)^{-1} Z^T v/n = v^T Sigma^(1/2) [I - gamma Qbar] Sigma^(-1/2) v: in the eigenbasis
    with mpmath.workdps(60):
        want = vv - gamma * mpmath.fsum(pr ** 2 * qk for pr, qk in zip(proj, q))
    assert agree(got_qf.value, want, 25)
    assert qf < 1


def ridge_parts(eigs, Q, beta, c, lam, sigma2):
    """HMRT Theorem 2 (general covariance), effective-regularization form: kappa solves
    lam = kappa (1 - tr(Sigma (Sigma + kappa)^{-1})/n); df2 = tr(Sigma^2 (Sigma + kappa)^{-2})/n;
    bias = kappa^2 sum_i s_i (v_i.beta)^2/(s_i + kappa)^2 / (1 - df2), variance = sigma2 df2/(1 - df2)."""
    p = len(eigs)
    n = p / c
    proj = [mpmath.fsum(Q[i, k] * mpmath.mpf(beta[i]) for i in range(p)) for k in range(p)]

    def f(k):
        return lam - k * (1 - mpmath.fsum(s / (s + k) for s in eigs) / n)

    kappa = mpmath.findroot(f, lam + 1, tol=mpmath.mpf(10) ** (-55))
    df2 = mpmath.fsum(s ** 2 / (s + kappa) ** 2 for s in eigs) / n
    bias = kappa ** 2 * mpmath.fsum(s * b ** 2 / (s + kappa) ** 2 for s, b in zip(eigs, proj)) / (1 - df2)
    return bias, sigma2 * df2 / (1 - df2)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_ridge_risk_general_covariance_hmrt():
    """Bias and variance of ridge with a general (non-diagonal, non-symmetric square root) covariance and a
    teacher not aligned with its eigenvectors, against HMRT Theorem 2 with the projections of beta."""
    p = 16
    O, P = hadamard(p), np.eye(p)[np.random.default_rng(5).permutation(p)] @ hadamard(p)
    s = np.array([0.5, 1, 1.5, 2] * 4)
    S = O @ np.diag(s) @ P  # Sigma = S S^T = O diag(s^2) O^T
    assert np.abs(S - S.T).max() > 0.1
    Sig = S @ S.T
    beta = np.array([1, -2, 0.5, 0, 3, 1, -1, 0.25, 0, 0, 1, 2, -0.5, 1, 0, 1.5]) / 4
    eigs, Q = mp_eigh(Sig)
    with mpmath.workdps(60):
        bias, var = ridge_parts(eigs, Q, beta, mpmath.mpf(1) / 2, mpmath.mpf(1) / 10, mpmath.mpf(1) / 4)
    m = model(S)
    m.vector_file("b", "p", beta)
    at = {"c": "1/2", "lam": "1/10"}
    R = "inv(S*Z*Z.T*S.T/n + lam*I(p))"
    got_b = m.limit(f"lam**2*b.T*{R}*S*S.T*{R}*b", at=at, digits=DIGITS)
    got_v = m.limit(f"(1/4)*(p/n)*trace(S*Z*Z.T*S.T/n*{R}*{R}*S*S.T)", at=at, digits=DIGITS)
    assert agree(got_b.value, bias, 25)
    assert agree(got_v.value, var, 25)


def test_diff_of_a_given_resolvent():
    """diff() on this path: -gamma^2 d/dgamma of the n-side trace against the Silverstein derivative."""
    p = 16
    O = hadamard(p)
    Sig = O @ np.diag([1.0] * 8 + [3.0] * 8) @ O.T
    m = model(Sig)
    at = {"c": "1/2", "gamma": "1/3"}
    got = m.limit("diff(trace(inv(Z.T*S*Z/n + gamma*I(n))), gamma)", at=at, digits=20)
    eigs = [mpmath.mpf(1)] * 8 + [mpmath.mpf(3)] * 8

    def tr_n(g):
        _d, q = silverstein(eigs, mpmath.mpf(1) / 2, g)
        n = p * 2
        return (p * mpmath.fsum(q) / p - (p - n) / g) / n

    with mpmath.workdps(60):
        want = mpmath.diff(tr_n, mpmath.mpf(1) / 3)
    assert agree(got.value, want, 19)


def test_monte_carlo_given_matrix():
    """The deterministic equivalent of trace(inv(S Z Z^T S^T/n + gamma I)) at p = 96, n = 192 against a
    seeded Monte-Carlo of the same matrices (k = 3 standard errors plus a 2/n finite-size slack)."""
    rng = np.random.default_rng(11)
    p, n, gamma = 96, 192, 0.5
    S = rng.standard_normal((p, p)) / np.sqrt(p) + np.eye(p)
    m = model(S)
    de = float(m.limit("trace(inv(S*Z*Z.T*S.T/n + gamma*I(p)))", at={"c": "1/2", "gamma": "1/2"}, digits=12).value)
    vals = []
    for _ in range(40):
        Z = rng.standard_normal((p, n))
        X = S @ Z
        vals.append(np.trace(np.linalg.inv(X @ X.T / n + gamma * np.eye(p))) / p)
    mean, se = np.mean(vals), np.std(vals, ddof=1) / np.sqrt(len(vals))
    assert abs(mean - de) <= 3 * se + 2 / n


@pytest.mark.slow  # two CLI subprocesses: seconds, outside the fast tier
def test_cli_matrix_and_vector_files(tmp_path):
    import json
    import subprocess
    import sys

    S = tmp_path / "S.npy"
    v = tmp_path / "v.npy"
    np.save(S, np.diag([1.0, 2.0, 1.0, 2.0]))
    np.save(v, np.array([1.0, 0, 0, 0]))
    os.chmod(S, 0o600)
    os.chmod(v, 0o600)
    cmd = [sys.executable, "-m", "symrmt", "trace", "v.T*inv(S*Z*Z.T*S.T/n + gamma*I(p))*v", "--dim", "p=c*n",
           "--matrix", "Z=gaussian(p,n)", "--matrix", f'S=matrix(p, p, "{S}")',
           "--vector", f'v=vector_file(p, "{v}")', "--at", "c=1/2, gamma=1", "--digits", "25", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert out.returncode == 0, out.stderr
    with mpmath.workdps(60):
        d, q = silverstein([mpmath.mpf(1), mpmath.mpf(4)] * 2, mpmath.mpf(1) / 2, 1)
        want = q[0]  # e1^T Qbar e1, Sigma = diag(1, 4, 1, 4)
    assert agree(json.loads(out.stdout)["value"], want, 24)
    os.chmod(S, 0o666)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert out.returncode == 2 and "file-trust" in out.stderr and "Traceback" not in out.stderr


def test_bad_input_is_refused(tmp_path):
    m = model(np.eye(4))
    with pytest.raises(ModelError, match=r"matrix T \(5 x 5\) gives dimension p the size 5, but matrix S"):
        m.matrix("T", "p", "p", np.eye(5))
    with pytest.raises(ParameterError, match="finite"):
        m.matrix("U", "p", "p", np.full((4, 4), np.inf))
    with pytest.raises(ParameterError, match="2-D"):
        m.matrix("U", "p", "p", np.ones(4))
    with pytest.raises(ModelError, match=r"vector w \(length 3\) gives dimension p the size 3, but matrix S"):
        m.vector_file("w", "p", np.ones(3))
    path = tmp_path / "obj.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    os.chmod(path, 0o600)
    with pytest.raises(ParameterError, match="pickles"):
        m.matrix("U", "p", "p", str(path))
    link = tmp_path / "link.npy"
    good = tmp_path / "good.npy"
    np.save(good, np.eye(4))
    os.chmod(good, 0o600)
    link.symlink_to(good)
    with pytest.raises(ParameterError, match="symbolic link"):
        m.matrix("U", "p", "p", str(link))
    # two dimensions whose sizes disagree with their ratios
    m2 = Model()
    m2.dim("p", "c*n")
    m2.gaussian("Z", "p", "n")
    m2.matrix("S", "p", "p", np.eye(4))
    m2.matrix("T", "n", "n", np.eye(4))
    with pytest.raises(ModelError, match="disagree"):
        m2.limit("trace(inv(S*Z*T*Z.T*S.T/n + I(p)))", at={"c": "1/2"})


def test_engine_simulation_reads_the_given_entries():
    """The engine's own simulation (bind, the evaluator) uses the given matrix and vector: a quadratic form
    at p = 64, n = 128 within 3 se + 0.05 (1 + |limit|) (a finite-size slack) of the deterministic equivalent;
    an n whose sizes do not match the files is refused."""
    from symrmt.engine import bind
    from symrmt.engine.simulate.monte_carlo import simulate_trace

    rng = np.random.default_rng(1)
    S = rng.standard_normal((64, 64)) / 8 + np.eye(64)
    m = model(S)
    m.vector_file("v", "p", rng.standard_normal(64) / 8)
    e = "v.T*inv(S*Z*Z.T*S.T/n + gamma*I(p))*v"
    de = float(m.limit(e, at={"c": "1/2", "gamma": "1/2"}, digits=12).value)
    sim = simulate_trace(bind(m.parse(e), {"c": "1/2", "gamma": "1/2"}, 128), trials=30, seed=2, progress=False)
    assert abs(sim["mean"] - de) <= 3 * sim["se"] + 0.05 * (1 + abs(de))
    with pytest.raises(ModelError, match="has 64 entries along p, but p = 50"):
        bind(m.parse(e), {"c": "1/2", "gamma": "1/2"}, 100)


def closed_form_cases(digits):
    """``[(engine value, closed form)]`` at ``digits``: the AR(1) Silverstein trace (Woodbury form) and the HMRT
    ridge bias (a quadratic form in a given vector: the dense refinement), each closed form solved in mpmath
    with the eigenvalues."""
    out = []
    p = 24
    idx = np.arange(p)
    Sig = 0.5 ** np.abs(idx[:, None] - idx[None, :])
    eigs, _Q = mp_eigh(Sig)
    with mpmath.workdps(60):
        c, gamma = mpmath.mpf(3) / 4, mpmath.mpf(1) / 5
        _d, q = silverstein(eigs, c, gamma)
        n = p / c
        tr_n = (mpmath.fsum(q) - (p - n) / gamma) / n
    got = model(Sig).limit("trace(inv(Z.T*S*Z/n + gamma*I(n)))", at={"c": "3/4", "gamma": "1/5"}, digits=digits)
    out.append((got.value, tr_n))
    p = 16
    O, P = hadamard(p), np.eye(p)[np.random.default_rng(5).permutation(p)] @ hadamard(p)
    S = O @ np.diag(np.array([0.5, 1, 1.5, 2] * 4)) @ P
    beta = np.array([1, -2, 0.5, 0, 3, 1, -1, 0.25, 0, 0, 1, 2, -0.5, 1, 0, 1.5]) / 4
    eigs, Q = mp_eigh(S @ S.T)
    with mpmath.workdps(60):
        bias, _var = ridge_parts(eigs, Q, beta, mpmath.mpf(1) / 2, mpmath.mpf(1) / 10, mpmath.mpf(1) / 4)
    m = model(S)
    m.vector_file("b", "p", beta)
    R = "inv(S*Z*Z.T*S.T/n + lam*I(p))"
    got = m.limit(f"lam**2*b.T*{R}*S*S.T*{R}*b", at={"c": "1/2", "lam": "1/10"}, digits=digits)
    out.append((got.value, bias))
    return out


@pytest.mark.parametrize("digits", [15, 22, 28])
def test_double_double_path_against_the_closed_forms(digits):
    """At most 22 digits the residuals are double-double (exact float64 slice products) instead of flint:
    the same AR(1) Silverstein trace and the HMRT ridge bias, to the digits asked."""
    for got, want in closed_form_cases(digits):
        assert agree(got, want, digits - 1)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_the_two_paths_agree_on_a_dense_general_matrix():
    """A dense non-symmetric S (p = 64): the double-double value at 28 digits is the flint value at 34."""
    rng = np.random.default_rng(4)
    S = rng.standard_normal((64, 64)) / 8
    m = model(S)
    m.vector_file("v", "p", rng.standard_normal(64) / 8)
    for e in ("trace(inv(S*Z*Z.T*S.T/n + gamma*I(p)))", "v.T*inv(S*Z*Z.T*S.T/n + gamma*I(p))*v"):
        a = m.limit(e, at={"c": "1/2", "gamma": "1/3"}, digits=28).value
        b = m.limit(e, at={"c": "1/2", "gamma": "1/3"}, digits=34).value
        assert agree(a, b, 27)


def test_inside_the_spectrum_and_singular_points_are_refused():
    """A resolvent asked inside the spectrum of S Z Z^T S^T/n has no real deterministic equivalent: refused,
    not answered; outside it (gamma = -20, beyond the largest eigenvalue, about 11) it is answered and
    agrees with a Monte-Carlo; gamma = 0 (a singular deterministic part) is refused."""
    from symrmt.errors import SolverError

    rng = np.random.default_rng(1)
    S = rng.standard_normal((64, 64)) / 8 + np.eye(64)
    m = model(S)
    e = "trace(inv(S*Z*Z.T*S.T/n + gamma*I(p)))"
    for g in ("-1/2", "-3", "0"):
        with pytest.raises(SolverError):
            m.limit(e, at={"c": "1/2", "gamma": g}, digits=15)
    de = float(m.limit(e, at={"c": "1/2", "gamma": -20}, digits=15).value)
    vals = []
    for _ in range(30):
        X = S @ rng.standard_normal((64, 128))
        vals.append(np.trace(np.linalg.inv(X @ X.T / 128 - 20 * np.eye(64))) / 64)
    assert abs(np.mean(vals) - de) <= 3 * np.std(vals, ddof=1) / np.sqrt(30) + 2 / 128 * abs(de)


def test_woodbury_inverse_against_the_dense_inverse(monkeypatch):
    """The structured float64 inverse (Woodbury on the block columns that hold S, both forms) against
    NumPy's dense inverse of the assembled matrix, at every strength-1 solve of a point whose blocks it
    reduces (the derivative pencil of Z^T S Z: 4 blocks of size p, S in 2 of them)."""
    from symrmt.engine.solve import given as gv

    seen = []
    solve = gv._Part.solve64

    def checked(self, h, t, base, with_vectors=False, side=0, dense=False):
        out = solve(self, h, t, base, with_vectors, side, dense)
        if t == 1.0 and self.structured:
            M = self.matrix64(h, base, with_vectors)
            keep = self._keep(with_vectors)
            for s in (0, 1):
                X = self._woodbury64(h, t, keep, s)
                assert np.abs(X - np.linalg.inv(M)).max() <= 1e-12 * np.abs(np.linalg.inv(M)).max()
            seen.append(len(keep))
        return out

    monkeypatch.setattr(gv._Part, "solve64", checked)  # an internal seam: the structured inverse is never returned
    rng = np.random.default_rng(2)
    S = rng.standard_normal((12, 12)) / np.sqrt(12) + np.eye(12)
    m = model(S @ S.T)
    m.limit("diff(trace(inv(Z.T*S*Z/n + gamma*I(n))), gamma)", at={"c": "1/2", "gamma": "1/3"}, digits=15)
    assert seen and max(seen) == 4


def test_block_triangular_dense_inverse_against_numpy():
    """The dense float64 inverse through the block pattern's components: a derivative-shaped matrix (two equal
    diagonal components, one block above them, rows and columns of the components interleaved) and a matrix
    of one component, against NumPy's inverse of the whole; and the dense path of a derivative pencil (the
    Woodbury reduction refused) gives the Woodbury path's value."""
    from symrmt.engine.solve import given as gv
    from symrmt.engine.solve.given_blocks import block_triangular_inverse

    rng = np.random.default_rng(3)
    sizes = [3, 4, 3, 4]
    L = rng.standard_normal((7, 7)) + 4 * np.eye(7)
    C = rng.standard_normal((7, 7))
    T = np.block([[L, C], [np.zeros((7, 7)), L]])      # blocks (3, 4 | 3, 4)
    perm = np.r_[7:10, 0:7, 10:14]                       # the copy's first block first: components interleaved
    M = T[np.ix_(perm, perm)]
    sizes = [3, 3, 4, 4]
    ref = np.linalg.inv(M)
    assert np.abs(block_triangular_inverse(M, sizes) - ref).max() <= 1e-13 * np.abs(ref).max()
    A = rng.standard_normal((6, 6)) + 3 * np.eye(6)
    assert np.array_equal(block_triangular_inverse(A, [2, 4]), np.linalg.inv(A))
    S = rng.standard_normal((12, 12)) / np.sqrt(12) + np.eye(12)
    e = "diff(trace(inv(Z.T*S*Z/n + gamma*I(n))), gamma)"
    v1 = model(S @ S.T).limit(e, at={"c": "1/2", "gamma": "1/3"}, digits=20).value
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gv, "_small_inverse", lambda A: None)  # the internal seam: the Woodbury reduction refused
        v2 = model(S @ S.T).limit(e, at={"c": "1/2", "gamma": "1/3"}, digits=20).value
    assert agree(v1, v2, 19)


@pytest.mark.slow
def test_random_labels_with_a_given_matrix_against_the_ridge_closed_form():
    """A random vector (signs y) in a dimension without given objects, next to a given matrix and a given
    vector: the ridge error with a signal, -gamma^2 d/dgamma y^T (X^T S X/n + gamma I)^-1 y/n with
    X = mu y^T + Z and S = I given by its entries, mu = sqrt(snr) times a Hadamard column, against the
    closed form of the ridge error (compiled from its SymPy formula, independent of the engine)."""
    from symrmt.models.attention.theory import ridge_limit

    p = 16
    m = model(np.eye(p))
    m.vector_file("mu", "p", hadamard(p)[:, 3] * np.sqrt(2.25))
    m.signs("y", "n")
    m.let("X", m.parse("mu*y.T + Z"))
    e = "-gamma**2*diff(y.T*inv(X.T*S*X/n + gamma*I(n))*y/n, gamma)"
    for c, g in (("1/2", "1/10"), ("2", "1")):
        want = ridge_limit(c, [g], "9/4", DIGITS)[0]
        assert agree(m.limit(e, at={"c": c, "gamma": g}, digits=DIGITS).value, want, 25)


def test_random_vector_in_a_given_dimension_is_refused():
    m = model(np.eye(4))
    m.gaussian_vector("g", "p")
    with pytest.raises(ModelError, match="random vector in the dimension p, which carries the given"):
        m.limit("g.T*inv(S*Z*Z.T*S.T/n + I(p))*g/p", at={"c": "1/2"})


def test_block_triangular_traces_against_the_dense_inverse(monkeypatch):
    """The block traces and the Jacobian that the float64 Newton reads from the Woodbury form, its inner matrix
    inverted block-triangularly, against those of NumPy's dense inverse of the assembled matrix, at every
    strength-1 solve of the derivative pencil of Z^T S Z (S not symmetric: S and S^T in the pencil).  The
    unknowns the pencil keeps at zero are zero blocks of the dense inverse too."""
    from symrmt.engine.solve import given as gv
    from symrmt.engine.solve.given_blocks import WoodburyTraces, inner_blocks

    seen = []
    solve = gv._Part.solve64

    def checked(self, h, t, base, with_vectors=False, side=0, dense=False):
        out = solve(self, h, t, base, with_vectors, side, dense)
        if t == 1.0 and isinstance(out[0], WoodburyTraces):
            G = (np.linalg.inv(self.matrix64(h, base, with_vectors)), out[1], self.layout(with_vectors)[0])
            T = np.array([self.tau(out, m, m2) for m, m2 in self.unknowns])
            Td = np.array([self.tau(G, m, m2) for m, m2 in self.unknowns])
            assert np.abs(T - Td).max() <= 1e-12 * max(1.0, np.abs(Td).max())
            J, Jd = self.jacobian64(out, t), self.jacobian64(G, t)
            assert np.abs(J - Jd).max() <= 1e-12 * np.abs(Jd).max()
            assert len(self.zero) and np.abs(Td[self.zero]).max() <= 1e-14 * np.abs(Td).max()
            _N, _pos, rows, cols, nz = self.woodbury_plan(self._keep(with_vectors))
            seen.append(len(inner_blocks(out[0].Ainv[np.ix_(cols, rows)], nz)))
        return out

    monkeypatch.setattr(gv._Part, "solve64", checked)  # an internal seam: the block traces are never returned
    rng = np.random.default_rng(3)
    S = rng.standard_normal((12, 12)) / np.sqrt(12) + np.eye(12) / 2
    m = model(S)
    m.limit("diff(trace(inv(Z.T*S*Z/n + gamma*I(n))), gamma)", at={"c": "1/2", "gamma": 1}, digits=15)
    assert seen and min(seen) == 2


def test_two_block_double_double_against_one_block():
    """The double-double traces through the inner matrix's two diagonal blocks (the derivative pencil) against
    those through the whole inner matrix (one block: its dense float64 inverse refined), to 25 digits, S not
    symmetric."""
    from symrmt.engine.solve import given_dd

    _two_blocks_against_one(given_dd, "_two_blocks_dd", 4, 25)


def test_two_block_flint_against_one_block():
    """The python-flint traces (above 32 digits) through the inner matrix's two diagonal blocks against those
    through the whole inner matrix, to 35 digits, S not symmetric."""
    pytest.importorskip("flint")
    from symrmt.engine.solve import given_flint

    _two_blocks_against_one(given_flint, "flint_two_blocks", 5, 35)


def _two_blocks_against_one(module, two_blocks, seed, digits):
    """The derivative pencil's traces through the inner matrix's two diagonal blocks (``module.two_blocks``,
    which must be called) against those through the whole inner matrix, to ``digits`` digits, S not symmetric."""
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((12, 12)) / np.sqrt(12) + np.eye(12) / 2
    e = "diff(trace(inv(Z.T*S*Z/n + gamma*I(n))), gamma)"
    calls = []
    two = getattr(module, two_blocks)

    def counted(*a):
        calls.append(1)
        return two(*a)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, two_blocks, counted)
        v2 = model(S).limit(e, at={"c": "1/2", "gamma": 1}, digits=digits).value
    assert calls
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "inner_blocks", lambda S_, nz: [list(range(len(S_)))])
        v1 = model(S).limit(e, at={"c": "1/2", "gamma": 1}, digits=digits).value
    with mpmath.workdps(digits + 15):
        assert agree(v1, v2, digits)
