"""Quadratic forms at complex z, outliers and their eigenvector overlaps (spiked Wigner, spiked covariance).

References, independent of the engine (closed forms at 60 digits):

- spiked Wigner ``M = G/sqrt(n) + theta u u^T`` (``|u| = 1``, semicircle on ``[-2, 2]``):
  ``u^T (M - z)^{-1} u -> m/(1 + theta m)`` with ``m(z) = (-z + sqrt(z - 2) sqrt(z + 2))/2`` (the Stieltjes
  transform of the semicircle, this product of principal square roots is its branch off ``[-2, 2]``); the pole
  ``m = -1/theta`` is at ``theta + 1/theta`` for ``|theta| > 1`` and ``m' = 1/(theta^2 - 1)`` there, so the
  residue is ``-(1 - 1/theta^2)``: the overlap ``|<u, v>|^2 = 1 - 1/theta^2`` (Benaych-Georges and Nadakuditi
  2011);
- spiked covariance ``S = R Z Z^T R/n`` (``Z`` is ``p x n``, ``c = p/n``, ``R = I + k v v^T``, ``|v| = 1``, so
  the population covariance ``R^2`` has the spike ``1 + l = (1 + k)^2``): ``v^T (S - z)^{-1} v ->
  -1/(z (1 + (1 + l) mt))`` with ``mt`` the Stieltjes transform of the companion ``Z^T Z/n``, the root of
  ``z mt^2 + (z - c + 1) mt + 1 = 0`` with ``Im mt`` of the sign of ``Im z``; its pole (BBP) is at
  ``(1 + l)(1 + c/l)`` for ``|l| > sqrt(c)`` with the overlap ``(1 - c/l^2)/(1 + c/l)`` (Paul 2007).

Simulations: NumPy, ``n = 512``, fixed seeds; ``|mean - limit| <= 3 se + 2 (1 + |limit|)/n`` (k = 3, and a
finite-size slack of ``2 (1 + |limit|)/n``: the outlier moves by ``O(1/n)`` in mean).
"""

import json

import mpmath
import numpy as np
import pytest

from symrmt.engine import Model
from symrmt.engine.lang.matrices import ModelError

WIGNER = "u.T*inv(G/sqrt(n) + theta*u*u.T - z*I(n))*u"
BBP = "v.T*inv(R*Z*Z.T*R/n - z*I(p))*v"
DIGITS = 30
AGREE = mpmath.mpf(10) ** -28  # >= 25 digits asked; the engine certifies 30


def wigner():
    m = Model()
    m.goe("G", "n")
    m.vector("u", "n")
    return m


def covariance():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("v", "p")
    m.vector("w", "p")
    m.let("R", m.parse("I(p) + k*v*v.T"))
    return m


def mpq(text):
    num, _, den = str(text).partition("/")
    return mpmath.mpf(num) / (mpmath.mpf(den) if den else 1)


def semicircle(z):
    return (-z + mpmath.sqrt(z - 2) * mpmath.sqrt(z + 2)) / 2


def companion(c, z):
    """The Stieltjes transform of the limit law of ``Z^T Z/n`` (Marchenko-Pastur companion), by its quadratic."""
    roots = mpmath.polyroots([z, z - c + 1, 1], extraprec=200)
    return max(roots, key=lambda r: r.imag * mpmath.sign(z.imag))


def close(got, want, tol=AGREE):
    return abs(got - want) <= tol * max(abs(want), 1e-30)


# ---------------------------------------------------------------- complex z


@pytest.mark.parametrize("theta, z", [("2", "3+1j"), ("2", "1/2+1/100j"), ("-3", "-1+2j"), ("1/2", "1-1/2j"),
                                      ("2", "5/2+1/1000000j")])
def test_spiked_wigner_form_at_complex_z(theta, z):
    r = wigner().limit(WIGNER, at={"theta": theta, "z": z, "u.u": 1}, digits=DIGITS)
    with mpmath.workdps(60):
        re, im = z[:-1].replace("+", " +").replace("-", " -").split()
        zz = mpmath.mpc(mpq(re), mpq(im))
        m = semicircle(zz)
        want = m / (1 + mpq(theta) * m)
        assert close(r.value, want), (r.value, want)
    assert r.branch_checked == [True]  # the Herglotz sign: Im q has the sign of Im z
    assert (r.value.imag > 0) == (not im.startswith("-"))


@pytest.mark.parametrize("c, k, z", [("1/2", "1", "5+1/2j"), ("1/2", "1", "3/10+1/1000j"),
                                     ("2", "-4/5", "2-1j"), ("1/2", "1/5", "14/3+1/10j")])
def test_spiked_covariance_form_at_complex_z(c, k, z):
    r = covariance().limit(BBP, at={"c": c, "k": k, "z": z, "v.v": 1}, digits=DIGITS)
    with mpmath.workdps(60):
        re, im = z[:-1].replace("+", " +").replace("-", " -").split()
        zz = mpmath.mpc(mpq(re), mpq(im))
        spike = (1 + mpq(k)) ** 2
        want = -1 / (zz * (1 + spike * companion(mpq(c), zz)))
        assert close(r.value, want), (r.value, want)
    assert r.branch_checked == [True]


def test_complex_form_is_conjugate_symmetric_and_matches_trace():
    m = covariance()
    up = m.limit(BBP, at={"c": "1/2", "k": 1, "z": "1+1/4j", "v.v": 1}, digits=25)
    down = m.limit(BBP, at={"c": "1/2", "k": 1, "z": "1-1/4j", "v.v": 1}, digits=25)
    with mpmath.workdps(40):
        assert abs(up.value - mpmath.conj(down.value)) <= mpmath.mpf(10) ** -24 * abs(up.value)
    # a vector orthogonal to the spike sees the bulk: w^T (S - z)^{-1} w = tau((Z Z^T/n - z)^{-1})
    w = m.limit("w.T*inv(R*Z*Z.T*R/n - z*I(p))*w", at={"c": "1/2", "k": 1, "z": "1+1/4j", "w.w": 1}, digits=25)
    tr = m.limit("trace(inv(Z*Z.T/n - z*I(p)))", at={"c": "1/2", "z": "1+1/4j"}, digits=25)
    with mpmath.workdps(40):
        assert abs(w.value - tr.value) <= mpmath.mpf(10) ** -24 * abs(tr.value)


def test_complex_form_with_a_trace_and_a_random_vector():
    # y^T (S - z)^{-1} y/n for a sign vector y independent of S: the normalized trace
    m = Model()
    m.goe("G", "n")
    m.signs("y", "n")
    r = m.limit("y.T*inv(G/sqrt(n) - z*I(n))*y/n + trace(inv(G/sqrt(n) - z*I(n)))", at={"z": "1+1j"}, digits=DIGITS)
    with mpmath.workdps(60):
        want = 2 * semicircle(mpmath.mpc(1, 1))
        assert close(r.value, want)


# ---------------------------------------------------------------- outliers


@pytest.mark.parametrize("theta", ["2", "-3", "3/2", "5"])
def test_spiked_wigner_outlier_and_overlap(theta):
    found = wigner().outliers(WIGNER, "z=-8:8:33", at={"theta": theta, "u.u": 1}, digits=DIGITS)
    assert len(found) == 1
    o = found[0]
    with mpmath.workdps(60):
        t = mpq(theta)
        assert close(o.location, t + 1 / t)
        assert close(o.overlap, 1 - 1 / t ** 2)
        assert close(o.residue, -(1 - 1 / t ** 2))


def test_subcritical_spike_has_no_outlier():
    assert wigner().outliers(WIGNER, "z=-8:8:33", at={"theta": "1/2", "u.u": 1}) == []
    assert covariance().outliers(BBP, "z=-1:10:12", at={"c": "1/2", "k": "1/5", "v.v": 1}) == []  # l = 0.44 < 0.71


@pytest.mark.parametrize("c, k", [("1/2", "1"), ("1/2", "-4/5"), ("2", "1"), ("1/4", "1/2")])
def test_bbp_outlier_and_overlap(c, k):
    found = covariance().outliers(BBP, "z=-1:12:14", at={"c": c, "k": k, "v.v": 1}, digits=DIGITS)
    assert len(found) == 1
    o = found[0]
    with mpmath.workdps(60):
        cc, ell = mpq(c), (1 + mpq(k)) ** 2 - 1
        assert abs(ell) > mpmath.sqrt(cc)
        assert close(o.location, (1 + ell) * (1 + cc / ell))
        assert close(o.overlap, (1 - cc / ell ** 2) / (1 + cc / ell))


def test_two_spikes_seen_by_a_combination():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("v", "p")
    m.vector("w", "p")
    m.let("R", m.parse("I(p) + k*v*v.T + j*w*w.T"))
    found = m.outliers("(v.T + w.T)*inv(R*Z*Z.T*R/n - z*I(p))*(v + w)", "z=-1:10:12",
                       at={"c": "1/2", "k": "-4/5", "j": 1, "v.v": 1, "w.w": 1}, digits=DIGITS)
    assert len(found) == 2
    with mpmath.workdps(60):
        c = mpmath.mpf(1) / 2
        for o, ell in zip(found, (mpmath.mpf(1) / 25 - 1, mpmath.mpf(3))):
            assert close(o.location, (1 + ell) * (1 + c / ell))
            # |v + w|^2 = 2: each spike direction carries half of the normalized vector
            assert close(o.overlap, (1 - c / ell ** 2) / (1 + c / ell) / 2)


def test_outlier_on_a_grid_point_and_a_scaled_form():
    # theta = 2: the pole 5/2 is a grid point of -5:5:41; the factor -2 scales the residue, not the overlap
    found = wigner().outliers("-2*" + WIGNER, "z=-5:5:41", at={"theta": 2, "u.u": 1}, digits=DIGITS)
    assert len(found) == 1
    with mpmath.workdps(60):
        assert close(found[0].location, mpmath.mpf(5) / 2)
        assert close(found[0].residue, mpmath.mpf(3) / 2)
        assert close(found[0].overlap, mpmath.mpf(3) / 4)


# ---------------------------------------------------------------- simulations (n = 512)


def _agrees(samples, limit, n):
    x = np.asarray(samples, dtype=float)
    mean, se = x.mean(), x.std(ddof=1) / np.sqrt(len(x))
    return abs(mean - float(limit)) <= 3 * se + 2 * (1 + abs(float(limit))) / n, (mean, se, float(limit))


@pytest.mark.slow  # 24 eigendecompositions at n = 512: seconds, outside the fast tier
def test_spiked_wigner_simulation():
    n, trials, theta = 512, 24, 2.0
    rng = np.random.default_rng(20261202)
    u = rng.standard_normal(n)
    u /= np.linalg.norm(u)
    o = wigner().outliers(WIGNER, "z=-5:5:21", at={"theta": 2, "u.u": 1})[0]
    q = wigner().limit(WIGNER, at={"theta": 2, "z": "3+1j", "u.u": 1}).value
    top, ov, qs = [], [], []
    for _ in range(trials):
        a = rng.standard_normal((n, n))
        M = (a + a.T) / np.sqrt(2 * n) + theta * np.outer(u, u)
        w, V = np.linalg.eigh(M)
        top.append(w[-1])
        ov.append((V[:, -1] @ u) ** 2)
        qs.append(u @ np.linalg.solve(M - (3 + 1j) * np.eye(n), u))
    for samples, limit in ((top, o.location), (ov, o.overlap), (np.real(qs), q.real), (np.imag(qs), q.imag)):
        ok, info = _agrees(samples, limit, n)
        assert ok, info


def test_bbp_simulation():
    n, p, trials = 512, 256, 24
    rng = np.random.default_rng(7)
    o = covariance().outliers(BBP, "z=3:10:8", at={"c": "1/2", "k": 1, "v.v": 1})[0]
    v = rng.standard_normal(p)
    v /= np.linalg.norm(v)
    R = np.eye(p) + np.outer(v, v)
    top, ov = [], []
    for _ in range(trials):
        X = R @ rng.standard_normal((p, n))
        w, V = np.linalg.eigh(X @ X.T / n)
        top.append(w[-1])
        ov.append((V[:, -1] @ v) ** 2)
    for samples, limit in ((top, o.location), (ov, o.overlap)):
        ok, info = _agrees(samples, limit, n)
        assert ok, info


# ---------------------------------------------------------------- refusals


def test_nonnormal_inverse_at_complex_z_is_refused():
    m = Model()
    m.gaussian("Z", "n", "n")
    m.vector("u", "n")
    with pytest.raises(ModelError, match="Brown measure"):
        m.limit("u.T*inv(Z/sqrt(n) - z*I(n))*u", at={"z": "1/2+1/10j", "u.u": 1})
    with pytest.raises(ModelError, match="Brown measure"):
        m.limit("trace(inv(Z/sqrt(n) - z*I(n) + u*u.T))", at={"z": "1/2+1/10j", "u.u": 1})


def test_finite_rank_nonsymmetric_part_is_exact():
    # M = G/sqrt(n) + t w u^T (not symmetric, a symmetric bulk): by Woodbury u^T (M - z)^{-1} w = b/(1 + t b),
    # b = u^T (G/sqrt(n) - z)^{-1} w -> <u, w> m(z)
    m = Model()
    m.goe("G", "n")
    m.vector("u", "n")
    m.vector("w", "n")
    r = m.limit("u.T*inv(G/sqrt(n) + t*w*u.T - z*I(n))*w",
                at={"t": 3, "z": "1+1j", "u.u": 1, "w.w": 1, "u.w": "1/2"}, digits=DIGITS)
    with mpmath.workdps(60):
        b = semicircle(mpmath.mpc(1, 1)) / 2
        assert close(r.value, b / (1 + 3 * b))
    assert r.branch_checked == [False]  # not a Herglotz form: no sign is claimed


def test_diff_and_prove_at_complex_z_are_refused():
    with pytest.raises(ModelError, match="diff"):
        wigner().limit(f"diff({WIGNER}, theta)", at={"theta": 2, "z": "1+1j", "u.u": 1})
    with pytest.raises(ModelError, match="not proved"):
        wigner().limit(WIGNER, at={"theta": 2, "z": "1+1j", "u.u": 1}, prove=True)


def test_outliers_refusals():
    m = wigner()
    m.vector("w", "n")
    with pytest.raises(ModelError, match="x.T\\*inv"):
        m.outliers("u.T*inv(G/sqrt(n) - z*I(n))*w", "z=-5:5:11", at={"u.u": 1, "w.w": 1})
    with pytest.raises(ModelError, match="one quadratic form"):
        m.outliers(WIGNER + " + w.T*inv(G/sqrt(n) - z*I(n))*w", "z=-5:5:11", at={"theta": 2, "u.u": 1, "w.w": 1})
    with pytest.raises(ModelError, match="leave it out"):
        m.outliers(WIGNER, "z=-5:5:11", at={"theta": 2, "z": 1, "u.u": 1})


# ---------------------------------------------------------------- CLI


def test_cli_outliers_and_complex_form(capsys):
    from symrmt.cli.app import main

    decl = ["--matrix", "G=goe(n)", "--vector", "u=vector(n)"]
    assert main(["trace", WIGNER, *decl, "--at", "theta=3, u.u=1", "--outliers", "z=-5:5:21", "--json",
                 "--digits", "25"]) == 0
    out = json.loads(capsys.readouterr().out)
    [o] = out["outliers"]
    with mpmath.workdps(40):
        assert abs(mpmath.mpf(o["location"]) - mpmath.mpf(10) / 3) < mpmath.mpf(10) ** -24
        assert abs(mpmath.mpf(o["overlap"]) - mpmath.mpf(8) / 9) < mpmath.mpf(10) ** -24
    assert main(["trace", WIGNER, *decl, "--at", "theta=3, u.u=1, z=3+1j", "--json"]) == 0
    value = json.loads(capsys.readouterr().out)["value"]
    with mpmath.workdps(40):
        m = semicircle(mpmath.mpc(3, 1))
        assert abs(complex(value["re"], value["im"]) - complex(m / (1 + 3 * m))) < 1e-14
    # bad input: --outliers with --simulate, a complex value in --at; a non-normal inverse at complex z
    assert main(["trace", WIGNER, *decl, "--at", "theta=3, u.u=1", "--outliers", "z=-5:5:21", "--simulate"]) == 2
    assert main(["trace", "u.T*inv(Z/sqrt(n) - z*I(n))*u", "--matrix", "Z=gaussian(n,n)", "--vector", "u=vector(n)",
                 "--at", "u.u=1, z=1/2+1/10j"]) == 2
    assert "Brown measure" in capsys.readouterr().err


def test_rank_two_spike_through_a_random_vector():
    # M = G/sqrt(n) + t (u yh^T + yh u^T), yh = y/sqrt(n) a unit sign vector, orthogonal to u in the limit: by
    # Woodbury on [u, yh], u^T (M - z)^{-1} u -> m/(1 - t^2 m^2); the perturbation has the eigenvalues +-t on
    # (u +- yh)/sqrt(2), so the outliers are +-(t + 1/t) with the overlap (1 - 1/t^2)/2 each
    m = Model()
    m.goe("G", "n")
    m.vector("u", "n")
    m.signs("y", "n")
    e = "u.T*inv(G/sqrt(n) + t*u*y.T/sqrt(n) + t*y*u.T/sqrt(n) - z*I(n))*u"
    r = m.limit(e, at={"z": "-1+1/2j", "u.u": 1, "t": 2}, digits=DIGITS)
    with mpmath.workdps(60):
        s = semicircle(mpmath.mpc(-1, mpmath.mpf(1) / 2))
        assert close(r.value, s / (1 - 4 * s * s))
    assert r.branch_checked == [True]  # symmetric by structure: the sum's transpose lists its terms in another order
    found = m.outliers(e, "z=-5:5:21", at={"u.u": 1, "t": 3}, digits=DIGITS)
    assert len(found) == 2
    with mpmath.workdps(60):
        for o, sign in zip(found, (-1, 1)):
            assert close(o.location, sign * (3 + mpmath.mpf(1) / 3))
            assert close(o.overlap, (1 - mpmath.mpf(1) / 9) / 2)


def test_outlier_next_to_the_edge_and_below_the_resolution():
    # theta = 1 + 1e-6: the outlier 2 + ~1e-12 (the guard doubles: the residue loses digits at the edge)
    found = wigner().outliers(WIGNER, "z=-5:5:21", at={"theta": "1.000001", "u.u": 1}, digits=20)
    assert len(found) == 1
    with mpmath.workdps(60):
        t = mpmath.mpf(1000001) / 1000000
        assert abs(found[0].location - (t + 1 / t)) <= mpmath.mpf(10) ** -20 * 2
        assert abs(found[0].overlap - (1 - 1 / t ** 2)) <= mpmath.mpf(10) ** -20 * (1 - 1 / t ** 2)
    # theta = 1 + 1e-10: the outlier 2 + 1e-20 is closer to the edge than the scan reaches, which it reports
    none = wigner().outliers(WIGNER, "z=-5:5:21", at={"theta": "1.0000000001", "u.u": 1})
    assert none == [] and 0 < none.edge_gap < 1e-11


def test_each_part_certified_next_to_a_pole():
    # z = 5/2 + i eta next to the outlier 5/2 (theta = 2): q = -0.75/(i eta) + O(1); the real part is certified
    # to its own digits (more working digits: the guard doubles), or reported as 0 when it is below 10^-digits
    # of the value; never printed as the noise of the cancellation in 1 + theta m(z)
    m = wigner()
    for eta, zero_re in (("1e-10", False), ("1e-30", True)):
        r = m.limit(WIGNER, at={"theta": 2, "z": f"5/2+{eta}j", "u.u": 1}, digits=20)
        with mpmath.workdps(80):
            s = semicircle(mpmath.mpc(mpmath.mpf(5) / 2, mpmath.mpf(eta)))
            want = s / (1 + 2 * s)
            assert abs(r.value.imag - want.imag) <= mpmath.mpf(10) ** -20 * abs(want.imag)
            if zero_re:
                assert r.value.real == 0
            else:
                assert abs(r.value.real - want.real) <= mpmath.mpf(10) ** -20 * abs(want.real)


def test_a_part_both_precisions_round_away_is_refused():
    # z = 5/2 + 1e-28 i at 30 digits: Re q = -1/6 needs the (Im z)^2 term of 1 + 2 m(z), 1e-56, which the
    # solves at 40 and 50 digits both round away (each gives Re q = 1/2 exactly): the condition number of the
    # Woodbury system (6e28) bounds the first solve's error, and the part is refused, not printed
    from symrmt.errors import PrecisionError

    with pytest.raises(PrecisionError, match="condition number"):
        wigner().limit(WIGNER, at={"theta": 2, "z": "5/2+1e-28j", "u.u": 1}, digits=30)


def test_trace_with_a_spike_and_its_form_at_complex_z():
    # a finite-rank term does not move the normalized trace; the form sees the spike: m + m/(1 + 5 m)
    e = "trace(inv(G/sqrt(n) + 5*u*u.T - z*I(n))) + u.T*inv(G/sqrt(n) + 5*u*u.T - z*I(n))*u"
    r = wigner().limit(e, at={"z": "1+1j", "u.u": 1}, digits=DIGITS)
    with mpmath.workdps(60):
        s = semicircle(mpmath.mpc(1, 1))
        assert close(r.value, s + s / (1 + 5 * s))
    assert r.branch_checked == [True, True]  # the Stieltjes sign of the trace, the Herglotz sign of the form


def marchenko_pastur(c, z):
    """``tau((Z^T Z/n - z)^{-1})`` (``Z`` is ``p x n``, ``c = p/n``): the root of ``-z m^2 + (c - 1 - z) m - 1 = 0``
    with ``Im m`` of the sign of ``Im z``."""
    roots = mpmath.polyroots([-z, c - 1 - z, -1], extraprec=200)
    return max(roots, key=lambda r: r.imag * mpmath.sign(z.imag))


@pytest.mark.parametrize("c, theta", [("1/2", "3"), ("2", "3"), ("1/4", "2"), ("1/4", "5/4")])
def test_additive_spike_on_a_wishart_matrix(c, theta):
    # M = Z^T Z/n + theta u u^T: q = m/(1 + theta m); the pole m = -1/theta is, from the quadratic,
    # z = theta (theta + c - 1)/(theta - 1); with F = -z m^2 + (c - 1 - z) m - 1, m' = -F_z/F_m =
    # (m^2 + m)/(D), D = -2 z m + c - 1 - z, and the overlap -Res = 1/(theta^2 m') = D/(1 - theta).  The pole
    # is an outlier when -1/theta lies in the range of m right of the edge (1 + sqrt c)^2, where the quadratic
    # has the double root m_e = (c - 1 - z)/(2 z): theta > -1/m_e (c = 1/4: theta > 3/2)
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("u", "n")
    e = "u.T*inv(Z.T*Z/n + theta*u*u.T - z*I(n))*u"
    found = m.outliers(e, "z=-1:10:12", at={"c": c, "theta": theta, "u.u": 1}, digits=DIGITS)
    with mpmath.workdps(60):
        cc, t = mpq(c), mpq(theta)
        edge = (1 + mpmath.sqrt(cc)) ** 2
        if not t > -1 / ((cc - 1 - edge) / (2 * edge)):
            assert found == []
            return
        z0 = t * (t + cc - 1) / (t - 1)
        assert len(found) == 1
        assert close(found[0].location, z0)
        D = 2 * z0 / t + cc - 1 - z0
        assert close(found[0].overlap, D / (1 - t))
    r = m.limit(e, at={"c": c, "theta": theta, "u.u": 1, "z": "1/2+1/100j"}, digits=DIGITS)
    with mpmath.workdps(60):
        s = marchenko_pastur(mpq(c), mpmath.mpc(mpmath.mpf(1) / 2, mpmath.mpf(1) / 100))
        assert close(r.value, s / (1 + mpq(theta) * s))
