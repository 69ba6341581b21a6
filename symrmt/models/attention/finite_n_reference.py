r"""The finite-n prediction's discretized system solved in mpmath: the check of its digits.

:func:`reference_point` computes the value :func:`symrmt.models.attention.finite_n.finite_n_attention` defines at
``dps`` digits, independently of its extended-precision path: its own Gauss-Hermite nodes, the moments by mpmath
integration, Newton steps with mpmath residuals, and ``E_A`` by a central difference in ``gamma``
(``docs/theory.md`` section 13.3).  It is slow (minutes at the production ``Q``): for tests and ``symrmt bench``.

>>> from fractions import Fraction as Fr
>>> v = reference_point("tanh", Fr(1, 2), Fr(4), Fr(4), Fr(1), 1024, 3, dps=20)
>>> 0 < v < 1
True
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
from numpy.polynomial.hermite_e import hermegauss

from symrmt.errors import ConvergenceError
from symrmt.models.attention import finite_n as FN

__all__ = ["reference_point"]


def _mp(x):
    fr = Fraction(x)
    return mpmath.mpf(fr.numerator) / fr.denominator


def _nodes(q):
    def he(x):
        h0, h1 = mpmath.mpf(1), x
        for k in range(1, q):
            h0, h1 = h1, x * h1 - k * h0
        return h1, h0

    s = []
    for x0 in hermegauss(q)[0]:
        x = mpmath.mpf(x0)
        for _ in range(100):
            hq, hq1 = he(x)
            step = hq / (q * hq1)
            x -= step
            if abs(step) < mpmath.eps * 4:
                break
        s.append(x)
    w = [1 / he(x)[1] ** 2 for x in s]
    tot = mpmath.fsum(w)
    return s, [x / tot for x in w]


def _moments_mp(f_name, delta):
    """``(F, F', E f^2)`` at ``delta`` in mpmath: for tanh and erf the trapezoidal rule of step ``1/16`` on
    ``|x| <= 14`` (its error, ``exp(-2 pi d/h)`` for a strip of half-width ``d``, is below ``1e-60`` for tanh's
    ``d`` near ``pi/2``); for the ReLU ``mpmath.quad`` on ``[-delta, oo)``, where it is a polynomial times the
    Gaussian."""
    g = 1 / mpmath.sqrt(2 * mpmath.pi)
    if f_name == "relu":
        a0 = g
        m = [mpmath.quad(lambda x, i=i: (x + delta) ** i * g * mpmath.exp(-x * x / 2), [-delta, mpmath.inf])
             for i in range(3)]
        return m[1] - a0, m[0], m[2] - 2 * a0 * m[1] + a0 * a0
    h = mpmath.mpf(1) / 16
    xs = [j * h for j in range(-14 * 16, 14 * 16 + 1)]
    ws = [h * g * mpmath.exp(-x * x / 2) for x in xs]
    if f_name == "tanh":
        fv = [mpmath.tanh(x + delta) for x in xs]
        dv = [1 - v * v for v in fv]
    else:
        fv = [mpmath.erf(x + delta) for x in xs]
        dv = [2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-(x + delta) ** 2) for x in xs]
    return mpmath.fdot(ws, fv), mpmath.fdot(ws, dv), mpmath.fdot(ws, [v * v for v in fv])


def _newton(residual, x, pre, tol, what, maxit=30):
    """``x -= pre @ residual(x)`` (``pre`` a float64 approximate inverse Jacobian) until ``|residual| < tol |x|``
    (max norms, ``|x|`` at least 1)."""
    for _ in range(maxit):
        r = residual(x)
        size = max(abs(v) for v in r)
        if size < tol * max(1, max(abs(v) for v in x)):
            return x
        step = pre @ np.array([float(v) for v in r])
        x = [xi - mpmath.mpf(float(si)) for xi, si in zip(x, step)]
    raise ConvergenceError(f"the mpmath reference: {what} did not converge (residual {mpmath.nstr(size, 3)})")


def reference_point(f_name: str, c, m2, w2, gamma, n: int, q: int, dps: int = 30):
    """``E_A`` of the finite-n model at ``n`` with ``q`` types per label, solved in mpmath to ``dps`` digits.

    ``f_name`` one of ``"tanh"``, ``"erf"``, ``"relu"``; ``c``, ``m2`` (``||mu||^2``), ``w2`` (``||w||^2``),
    ``gamma`` exact rationals.  Returns an ``mpf``; raises :class:`~symrmt.errors.ConvergenceError` when a Newton
    solve does not reach its tolerance.

    >>> from fractions import Fraction as Fr
    >>> round(float(reference_point("relu", Fr(2), Fr(4), Fr(4), Fr(1), 1024, 3, dps=20)), 2) > 0
    True
    """
    wdps = dps + 10
    with mpmath.workdps(wdps):
        tol = mpmath.mpf(10) ** -(dps + 5)
        p = round(Fraction(c) * n)
        kappa = (1 + _mp(w2)) / mpmath.sqrt(p)
        m = mpmath.sqrt(_mp(m2))
        s, w = _nodes(q)
        u = [m + x for x in s] + [-m + x for x in s]
        y = [1] * q + [-1] * q
        pi = [x / 2 for x in w] * 2
        k = 2 * q
        memo = {}

        def moments(a, b):
            delta = kappa * u[a] * u[b]
            key = mpmath.nstr(delta, wdps - 5)
            if key not in memo:
                memo[key] = _moments_mp(f_name, delta)
            return memo[key]

        F = [[None] * k for _ in range(k)]
        F1 = [[None] * k for _ in range(k)]
        F2 = [[None] * k for _ in range(k)]
        for a in range(k):
            for b in range(a, k):
                F[a][b], F1[a][b], F2[a][b] = F[b][a], F1[b][a], F2[b][a] = moments(a, b)
        # the top eigenpair of S = sqrt(pi) F' sqrt(pi)
        sq = [mpmath.sqrt(x) for x in pi]
        S = [[sq[a] * F1[a][b] * sq[b] for b in range(k)] for a in range(k)]
        Sf = np.array([[float(v) for v in row] for row in S])
        ev, vec = np.linalg.eigh(Sf)
        jac = np.zeros((k + 1, k + 1))
        jac[:k, :k] = Sf - ev[-1] * np.eye(k)
        jac[:k, k] = -vec[:, -1]
        jac[k, :k] = 2 * vec[:, -1]

        def eig_residual(x):
            v, lam = x[:k], x[k]
            return [mpmath.fdot(S[a], v) - lam * v[a] for a in range(k)] + [mpmath.fdot(v, v) - 1]

        x = _newton(eig_residual, [mpmath.mpf(float(v)) for v in vec[:, -1]] + [mpmath.mpf(ev[-1])],
                    np.linalg.inv(jac), tol, "the eigenpair")
        lam, v = x[k], x[:k]
        alpha = [mpmath.sqrt(lam) * v[a] / sq[a] for a in range(k)]
        if mpmath.fsum(alpha) < 0:
            alpha = [-x for x in alpha]
        sigma2 = [[max(F2[a][b] - F[a][b] ** 2 - F1[a][b] ** 2, 0) + (F1[a][b] - alpha[a] * alpha[b]) ** 2
                   for b in range(k)] for a in range(k)]
        e = [-F[a][a] / mpmath.sqrt(p) - alpha[a] ** 2 for a in range(k)]
        cm = _mp(c)
        A = mpmath.matrix([[0, 1, 0], [1, 0, 0], [0, 0, cm]])

        def unpack(x):  # 6 numbers per type: H00, H01, H02, H11, H12, H22
            return [mpmath.matrix([[x[6 * a], x[6 * a + 1], x[6 * a + 2]], [x[6 * a + 1], x[6 * a + 3], x[6 * a + 4]],
                                   [x[6 * a + 2], x[6 * a + 4], x[6 * a + 5]]]) for a in range(k)]

        def pack(H):
            return [h for M in H for h in (M[0, 0], M[0, 1], M[0, 2], M[1, 1], M[1, 2], M[2, 2])]

        def phi(H, g):
            lam_ = [mpmath.diag([alpha[b], alpha[b], 1]) for b in range(k)]
            Mb = mpmath.zeros(3, 3)
            for b in range(k):
                Mb += pi[b] * lam_[b] * H[b] * lam_[b]
            core = A * mpmath.inverse(mpmath.eye(3) + Mb * A / cm)
            h00 = [H[b][1, 1] for b in range(k)]  # P H P = [[H11, H10, 0], [H01, H00, 0], [0, 0, 0]]
            h01 = [H[b][1, 0] for b in range(k)]
            h11 = [H[b][0, 0] for b in range(k)]
            out = []
            for a in range(k):
                wts = [sigma2[a][b] * pi[b] / cm for b in range(k)]
                r00, r01, r11 = mpmath.fdot(wts, h00), mpmath.fdot(wts, h01), mpmath.fdot(wts, h11)
                M = mpmath.matrix([[g, e[a], 0], [e[a], 0, 1], [0, 1, 0]]) + lam_[a] * core * lam_[a]
                M[0, 0] -= r00
                M[0, 1] -= r01
                M[1, 0] -= r01
                M[1, 1] -= r11
                out.append(mpmath.inverse(M))
            return out

        # the float64 solution of the fast path as the start, its Jacobian as the preconditioner
        u_ld, _, pi_ld, j_ld, sg_ld, v_ld = FN._types(np.sqrt(FN._ld(m2)), q)
        kap_ld = (1 + FN._ld(w2)) / np.sqrt(FN.LD(p))
        F_ld, al_ld, s2_ld = FN._profile(u_ld, pi_ld, kap_ld, f_name, j_ld, sg_ld, v_ld)
        e_ld = -np.diagonal(F_ld) / np.sqrt(FN.LD(p)) - al_ld**2
        H0, _ = FN._noise_fixed_point(gamma, c, pi_ld, al_ld, e_ld, s2_ld)
        bm = FN._BlockMap(float(gamma), float(Fraction(c)), pi_ld, al_ld, e_ld, s2_ld, float)
        bm(H0.astype(float))
        J9 = bm.jacobian().reshape(k, 9, k, 9)
        sel = [0, 1, 2, 4, 5, 8]  # the upper triangle of a row-major 3x3
        dup = np.zeros((9, 6))
        for col, (i, j) in enumerate([(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]):
            dup[3 * i + j, col] = dup[3 * j + i, col] = 1
        J6 = np.einsum("aibj,jm->aibm", J9[:, sel], dup).reshape(6 * k, 6 * k)
        pre = np.linalg.inv(np.eye(6 * k) - J6)

        def solve_at(g, start):
            x = _newton(lambda z: [-r for r in np.subtract(pack(phi(unpack(z), g)), z)], start, pre, tol,
                        "the block fixed point")
            return unpack(x)

        def readout(H):
            # phi = e^T Hb (I + D Hb)^{-1} e in the type basis (3k unknowns)
            D = mpmath.zeros(3 * k, 3 * k)
            for a in range(k):
                for b in range(k):
                    D[k + a, b] = D[b, k + a] = n / mpmath.sqrt(p) * F[a][b]
                    D[2 * k + a, 2 * k + b] = cm * n / p * u[a] * u[b]
            Hb = mpmath.zeros(3 * k, 3 * k)
            for a in range(k):
                for i in range(3):
                    for j in range(3):
                        Hb[i * k + a, j * k + a] = pi[a] * H[a][i, j]
            Mt = mpmath.eye(3 * k) + D * Hb
            rhs = [mpmath.mpf(y[a]) for a in range(k)] + [mpmath.mpf(0)] * (2 * k)
            Mf = np.array(Mt.tolist(), dtype=float)
            xs = _newton(lambda z: [ri - bi for ri, bi in zip(Mt * mpmath.matrix(z), rhs)],
                         list(np.linalg.solve(Mf, np.array([float(v) for v in rhs]))), np.linalg.inv(Mf),
                         tol, "the read-out")
            hx = Hb * mpmath.matrix(xs)
            return mpmath.fsum(rhs[i] * hx[i] for i in range(3 * k))

        g = _mp(gamma)
        start = [mpmath.mpf(float(H0[a][i, j])) for a in range(k) for i, j in ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))]
        h = g * mpmath.mpf(10) ** -((wdps) // 3)
        H_plus = solve_at(g + h, start)
        H_minus = solve_at(g - h, start)
        dphi = (readout(H_plus) - readout(H_minus)) / (2 * h)
        return +(-(g ** 2) * dphi)
