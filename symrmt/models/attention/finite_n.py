r"""A finite-size prediction of the attention error: the signal kept inside ``f``.

With ``mu``, ``w_K = w_Q`` along one direction, the kernel's argument is ``t_ij = g_ij + delta_ij``,
``delta_ij = kappa u_i u_j``; the limit linearizes ``f`` in ``delta``, this module keeps it: the conditional
mean ``F(delta)``, the slope ``F'(delta)`` and the remainder variance ``V(delta)`` over token types (Gauss-Hermite
nodes times the two labels), a block fixed point over the types and a Woodbury read-out, computed to
:data:`DIGITS` digits of the discretized model (checked against :mod:`symrmt.models.attention.finite_n_reference`).
Covered: ``f`` in :data:`COVERED_F`, ``diagonal = "zero"``, ``alpha = 1``, collinear ``mu, w_K = w_Q``,
``n >= MIN_N``; the ridge error is its limit.  The derivation, precision and measured gaps to simulation are in
``docs/theory.md`` section 13.

>>> from symrmt.models.attention.geometry import LowRankGeometry
>>> aligned = LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]])
>>> round(float(finite_n_attention("tanh", "1/2", [1], aligned, 10**8)[0]), 3)
0.157
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp
from numpy.polynomial.hermite_e import hermegauss

from symrmt.cache import cached
from symrmt.errors import ConvergenceError, ParameterError, PrecisionError
from symrmt.hermite.shifted import shifted_moments
from symrmt.models.attention import equations as S
from symrmt.models.attention.geometry import as_low_rank

__all__ = ["MIN_N", "TYPES", "TYPES_CHECK", "DIGITS", "MIN_DIGITS", "check_finite_n", "finite_n_attention",
           "finite_n_point", "finite_n_values", "longdouble_to_mpf"]

LD = np.longdouble

#: the smallest n accepted: the smallest size at which the prediction was checked against simulation
MIN_N = 256
#: Gauss-Hermite nodes per label of the discretization that defines the value (``2 * TYPES`` token types)
TYPES = 56
#: the coarser discretization every value is checked against; the two must agree to :data:`MIN_DIGITS`
TYPES_CHECK = 40
#: the most significant digits of the defined value delivered (extended precision, checked against an mpmath
#: solve of the same discretized system: :mod:`symrmt.models.attention.finite_n_reference`)
DIGITS = 15
#: fewer digits of agreement between the two discretizations than this is an error
MIN_DIGITS = 4
#: the nonlinearities the prediction covers
COVERED_F = ("tanh", "erf", "relu")


def check_finite_n(f_name: str, geometry, diagonal: str, n) -> tuple:
    """Refuse what the finite-n derivation does not cover; return ``(m^2, omega^2)`` (floats).

    Raises :class:`~symrmt.errors.ParameterError` with the reason (``n`` below :data:`MIN_N`, another
    ``f``, ``diagonal = "keep"``, ``alpha != 1``, weights not collinear with the signal or ``w_K != w_Q``).

    >>> from symrmt.models.attention.geometry import LowRankGeometry
    >>> check_finite_n("tanh", LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]]), "zero", 512)
    (Fraction(4, 1), Fraction(4, 1))
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ParameterError(f"n must be an integer, got {n!r}")
    if n < MIN_N:
        raise ParameterError(f"n = {n} is below the finite-n prediction's minimum n = {MIN_N} "
                             "(the smallest size at which it was checked against simulation); simulate instead")
    if f_name not in COVERED_F:
        raise ParameterError(f"the finite-n prediction covers f in {COVERED_F} only (it was checked against "
                             f"simulation for those); got f = {f_name}")
    if diagonal != "zero":
        raise ParameterError("the finite-n prediction covers diagonal='zero' only")
    geo = as_low_rank(geometry)
    if Fraction(geo.alpha) != 1:
        raise ParameterError("the finite-n prediction covers W = I + w_K w_Q^T (alpha = 1) only")
    g = [[Fraction(x) for x in row] for row in geo.gram()]
    r = geo.r
    if r != 1:
        raise ParameterError("the finite-n prediction covers one weight pair (rank one) only")
    m2, k2, q2, kq, mk = g[0][0], g[1][1], g[2][2], g[1][2], g[0][1]
    if not (k2 == q2 == kq):
        raise ParameterError("the finite-n prediction covers w_K = w_Q only (a symmetric W)")
    if mk * mk != m2 * k2:
        raise ParameterError("the finite-n prediction covers mu collinear with the weights only "
                             "(mu . w_K)^2 = ||mu||^2 ||w_K||^2")
    return m2, k2


@cached(maxsize=8)
def _hermite_rule(q: int):
    """Gauss-Hermite nodes and weights (normalized to sum 1) for ``N(0, 1)`` in longdouble: NumPy's float64
    rule, symmetrized, its nodes Newton-refined on ``He_q`` and the weights ``1/He_{q-1}(s)^2`` normalized."""
    s = hermegauss(q)[0].astype(LD)
    s = (s - s[::-1]) / 2

    def he(x):
        h0, h1 = np.ones_like(x), x.copy()
        for k in range(1, q):
            h0, h1 = h1, x * h1 - k * h0
        return h1, h0  # He_q, He_{q-1}

    for _ in range(3):
        hq, hq1 = he(s)
        s = s - hq / (q * hq1)
        s = (s - s[::-1]) / 2
    w = 1 / he(s)[1] ** 2
    w = (w + w[::-1]) / 2
    w /= w.sum()
    s.flags.writeable = w.flags.writeable = False
    return s, w


def _types(m, q: int):
    """Token types in longdouble: ``u`` (``m y + s_k``), labels ``y``, weights ``pi``; and the index ``j`` and
    sign ``sg`` with ``u_a = sg_a (m + s_{j_a})`` (the rule is symmetric), so that every product ``u_a u_b``
    is ``sg_a sg_b`` times a product of two of the ``q`` values ``m + s_j``."""
    s, w = _hermite_rule(q)
    m = LD(m)
    u = np.concatenate([m + s, -(m + s[::-1])])
    y = np.concatenate([np.ones(q), -np.ones(q)]).astype(LD)
    pi = np.concatenate([w, w]) / 2
    j = np.concatenate([np.arange(q), np.arange(q)[::-1]])
    return u, y, pi, j, y.copy(), m + s


def _pair_moments(v, j, sg, kappa, f_name):
    """``F``, ``F'``, ``E f^2`` over pairs of types (longdouble), from the ``q (q + 1)/2`` distinct products
    ``kappa v_i v_l`` (and their negatives unless ``f`` is odd)."""
    q = len(v)
    iu = np.triu_indices(q)
    base = kappa * v[iu[0]] * v[iu[1]]
    odd = f_name in ("tanh", "erf")
    tabs = []
    for sign in ((1,) if odd else (1, -1)):
        tri = shifted_moments(f_name, sign * base)
        tab = np.zeros((3, q, q), dtype=LD)
        for t, part in zip(tab, tri):
            t[iu] = part
            t.T[iu] = part
        tabs.append(tab)
    ss = np.outer(sg, sg)
    plus = tabs[0][:, j][:, :, j]
    if odd:
        return plus[0] * ss, plus[1], plus[2]
    minus = tabs[1][:, j][:, :, j]
    pos = ss > 0
    return tuple(np.where(pos, plus[i], minus[i]) for i in range(3))


def _top_eigenpair(S):
    """The top eigenpair of the symmetric longdouble matrix ``S``: float64 ``eigh``, then Newton steps on
    ``(S - lambda) v = 0, v.v = 1`` with the residual in longdouble."""
    ev, vec = np.linalg.eigh(S.astype(float))
    lam, v = LD(ev[-1]), vec[:, -1].astype(LD)
    k = len(v)
    for _ in range(3):
        r = S @ v - lam * v
        J = np.zeros((k + 1, k + 1))
        J[:k, :k] = (S - lam * np.eye(k, dtype=LD)).astype(float)
        J[:k, k] = -v.astype(float)
        J[k, :k] = 2 * v.astype(float)
        rhs = np.concatenate([-r, [1 - v @ v]]).astype(float)
        step = np.linalg.solve(J, rhs)
        v = v + step[:k].astype(LD)
        lam = lam + LD(step[k])
    return lam, v


def _profile(u, pi, kappa, f_name, j, sg, v):
    """``F`` over pairs of types, the rank-one split ``alpha`` of ``F'`` and the noise profile ``sigma^2``
    (longdouble); ``j, sg, v`` as :func:`_types` gives them."""
    F, F1, F2 = _pair_moments(v, j, sg, kappa, f_name)
    V = np.maximum(F2 - F * F - F1 * F1, 0)
    sq = np.sqrt(pi)
    lam, vec = _top_eigenpair(sq[:, None] * F1 * sq[None, :])
    alpha = np.sqrt(lam) * vec / sq
    alpha *= np.sign(alpha.sum())
    if not np.all(np.isfinite(alpha)):
        raise ConvergenceError("the rank-one part of F' over the token types is not finite")
    sigma2 = V + (F1 - np.outer(alpha, alpha)) ** 2
    return F, alpha, sigma2


def _ld(x):
    """An exact rational or float as longdouble (a rational's numerator and denominator divided in longdouble)."""
    fr = Fraction(x)
    return LD(fr.numerator) / LD(fr.denominator)


@cached(maxsize=16)
def _pencil_matrices(c):
    """``A_S`` (at ``a_1 = 1``: the per-type factors ``alpha`` carry the Wishart coefficient) and ``P`` of the
    noise-only pencil, read from its one SymPy definition
    (:func:`symrmt.models.attention.equations.noise_pencil`), in longdouble."""
    _, A_S, P = S.noise_pencil()
    cs = sp.Rational(Fraction(c).numerator, Fraction(c).denominator)
    A = np.array([[_ld(Fraction(str(v))) for v in row] for row in A_S.subs({S.a1: 1, S.c: cs}).tolist()], dtype=LD)
    P = np.array([[_ld(Fraction(str(v))) for v in row] for row in P.tolist()], dtype=LD)
    A.flags.writeable = P.flags.writeable = False  # cached: shared by every call
    return A, P


def _inv3(M):
    """Inverses of a stack of 3x3 matrices by the adjugate (any float dtype, longdouble included)."""
    a, b, c = M[..., 0, 0], M[..., 0, 1], M[..., 0, 2]
    d, e, f = M[..., 1, 0], M[..., 1, 1], M[..., 1, 2]
    g, h, i = M[..., 2, 0], M[..., 2, 1], M[..., 2, 2]
    adj = np.stack([np.stack([e * i - f * h, c * h - b * i, b * f - c * e], -1),
                    np.stack([f * g - d * i, a * i - c * g, c * d - a * f], -1),
                    np.stack([d * h - e * g, b * g - a * h, a * e - b * d], -1)], -2)
    det = a * adj[..., 0, 0] + b * adj[..., 1, 0] + c * adj[..., 2, 0]
    return adj / det[..., None, None]


class _BlockMap:
    r"""The block fixed-point map ``Phi`` of ``docs/theory.md`` 13.3 over the types, its derivative (applied and as a
    matrix) and its derivative in ``gamma``; ``dtype`` float64 or longdouble."""

    def __init__(self, gamma, c, pi, alpha, e, sigma2, dtype):
        A, P = _pencil_matrices(c)
        self.A, self.P = A.astype(dtype), P.astype(dtype)
        self.c = _ld(c).astype(dtype) if dtype is LD else float(c)
        self.pi, self.sigma2 = pi.astype(dtype), sigma2.astype(dtype)
        k = len(pi)
        self.l = np.ones((k, 3), dtype=dtype)
        self.l[:, 0] = self.l[:, 1] = alpha.astype(dtype)
        self.L0 = np.zeros((k, 3, 3), dtype=dtype)
        self.L0[:, 0, 0] = gamma if dtype is not LD else _ld(gamma)
        self.L0[:, 0, 1] = self.L0[:, 1, 0] = e.astype(dtype)
        self.L0[:, 1, 2] = self.L0[:, 2, 1] = 1
        self.dtype = dtype

    def _parts(self, H):
        l, pi = self.l, self.pi
        Mb = np.einsum("b,bi,bij,bj->ij", pi, l, H, l)
        self.Ninv = _inv3(np.eye(3, dtype=self.dtype) + Mb @ self.A / self.c)
        core = self.A @ self.Ninv
        RG = -np.einsum("ab,b,bij->aij", self.sigma2, pi, self.P @ H @ self.P) / self.c
        return self.L0 + l[:, :, None] * core * l[:, None, :] + RG

    def __call__(self, H):
        self.Phi = _inv3(self._parts(H))
        return self.Phi

    def apply_derivative(self, X):
        """``DPhi(H)[X]`` at the ``H`` of the last call."""
        l, pi = self.l, self.pi
        dMb = np.einsum("b,bi,bij,bj->ij", pi, l, X, l)
        dcore = -self.A @ self.Ninv @ (dMb @ self.A / self.c) @ self.Ninv
        dRG = -np.einsum("ab,b,bij->aij", self.sigma2, pi, self.P @ X @ self.P) / self.c
        dM = l[:, :, None] * dcore * l[:, None, :] + dRG
        return -self.Phi @ dM @ self.Phi

    def d_gamma(self):
        """``dPhi/dgamma`` at the ``H`` of the last call (``gamma`` enters ``L0``'s (0, 0) entry)."""
        return -self.Phi[:, :, :1] @ self.Phi[:, :1, :]

    def jacobian(self):
        """``DPhi(H)`` as a ``9k x 9k`` float64 matrix (row-major vec of each 3x3 block)."""
        Phi, A, Ninv = (x.astype(float) for x in (self.Phi, self.A, self.Ninv))
        l, pi, s2, P, c = (x.astype(float) for x in (self.l, self.pi, self.sigma2, self.P, np.asarray(self.c)))
        k = len(pi)
        La = Phi @ (l[:, :, None] * (A @ Ninv)[None])  # Phi_a diag(l_a) A Ninv
        Ra = ((A @ Ninv)[None] * l[:, None, :]) @ Phi  # A Ninv diag(l_a) Phi_a
        J1 = np.einsum("aik,b,bk,bl,alj->aijbkl", La, pi / c, l, l, Ra)
        PL, PR = Phi @ P, P @ Phi
        J2 = np.einsum("ab,b,aik,alj->aijbkl", s2, pi / c, PL, PR)
        return (J1 + J2).reshape(9 * k, 9 * k)
def _start(gamma, c, k):
    """The ``gamma -> oo`` point the damped iteration starts from."""
    H = np.zeros((k, 3, 3))
    H[:, 0, 0] = 1 / gamma
    H[:, 1, 2] = H[:, 2, 1] = 1
    H[:, 1, 1] = -c
    return H


#: the upper triangle of a row-major 3x3 block, and the map from those 6 entries back to the 9
_UPPER = [0, 1, 2, 4, 5, 8]
_DUPLICATE = np.zeros((9, 6))
for _col, (_i, _j) in enumerate([(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]):
    _DUPLICATE[3 * _i + _j, _col] = _DUPLICATE[3 * _j + _i, _col] = 1


def _symmetric_jacobian(J9, k):
    """``I - J`` restricted to symmetric blocks (``6k`` unknowns; ``Phi`` maps symmetric blocks to symmetric
    blocks: ``A_S`` and ``P`` are symmetric, and so is ``A_S (I + M A_S/c)^{-1} = (A_S^{-1} + M/c)^{-1}``)."""
    J6 = np.einsum("aibj,jm->aibm", J9.reshape(k, 9, k, 9)[:, _UPPER], _DUPLICATE).reshape(6 * k, 6 * k)
    return np.eye(6 * k) - J6


def _refine(residual, X, lu, what, gamma, maxit=12):
    """Solve ``residual(X) = 0`` for a stack ``X`` of symmetric 3x3 blocks by steps ``X += (I - J)^{-1} residual(X)``
    with a float64 LU of ``I - J`` over the blocks' upper triangles (:func:`_symmetric_jacobian`) and the
    residual in longdouble, until the residual reaches the rounding level of longdouble (it stops decreasing).

    Raises :class:`~symrmt.errors.ConvergenceError` when it stalls above ``1e-17`` of ``|X|``."""
    # optional dependency (scipy)
    import scipy.linalg

    shape = X.shape
    X = (X + X.swapaxes(1, 2)) / 2
    best = math.inf
    for _ in range(maxit):
        r = residual(X)
        r = (r + r.swapaxes(1, 2)) / 2
        size = float(np.abs(r).max())
        scale = float(np.abs(X).max()) or 1.0
        if not math.isfinite(size):
            break
        if size == 0 or (size > best / 4 and size <= 1e-17 * scale):
            return X
        best = min(best, size)
        step = scipy.linalg.lu_solve(lu, r.astype(float).reshape(shape[0], 9)[:, _UPPER].reshape(-1))
        X = X + (step.reshape(shape[0], 6) @ _DUPLICATE.T).reshape(shape).astype(LD)
    raise ConvergenceError(f"{what} of the finite-n prediction at gamma = {gamma:.6g}: the extended-precision "
                           f"refinement did not settle (last residual {size:.3g}); simulate at this n instead")


def _noise_fixed_point(gamma, c, pi, alpha, e, sigma2, tol=1e-7, maxit=50000):
    """``(H, dH/dgamma)`` (longdouble): one 3x3 block-trace matrix per type.  The damped iteration
    ``H <- (H + Phi(H))/2`` from the ``gamma -> oo`` point (which selects the physical branch) to a relative
    change ``tol``; then Newton (chord) steps with the float64 LU of ``I - DPhi`` there (the analytic Jacobian)
    and the residual ``Phi(H) - H`` in longdouble (:func:`_refine`).  ``dH/dgamma`` solves
    ``(I - DPhi) dH = dPhi/dgamma``, the same way."""
    k = len(pi)
    gf = float(gamma)
    cf = float(Fraction(c))
    phi64 = _BlockMap(gf, cf, pi, alpha, e, sigma2, float)
    H = _start(gf, cf, k)
    diff = math.inf
    for _ in range(maxit):
        Hn = phi64(H)
        diff = np.abs(Hn - H).max()
        H = (H + Hn) / 2
        if not np.isfinite(diff):
            break
        if diff < tol * max(1.0, np.abs(H).max()):
            break
    else:
        raise ConvergenceError(f"the finite-n fixed point over token types did not converge at gamma = {gf:.6g} "
                               f"(last change {diff:.3g})")
    if not np.isfinite(diff):
        raise ConvergenceError(f"the finite-n fixed point at gamma = {gf:.6g} diverged")
    # optional dependency (scipy)
    import scipy.linalg

    phi64(H)
    lu = scipy.linalg.lu_factor(_symmetric_jacobian(phi64.jacobian(), k))
    philD = _BlockMap(gamma, c, pi, alpha, e, sigma2, LD)
    H0 = H
    H = _refine(lambda X: philD(X) - X, H.astype(LD), lu, "the fixed point", gf)
    if np.abs(H.astype(float) - H0).max() > 1e-4 * max(1.0, np.abs(H0).max()):
        raise ConvergenceError(f"the finite-n fixed point at gamma = {gf:.6g}: the refinement moved away from the "
                               "damped iteration's point (another branch)")
    philD(H)
    rhs = philD.d_gamma()
    dH = _refine(lambda X: philD.apply_derivative(X) + rhs - X, rhs, lu, "the fixed point's derivative in gamma", gf)
    if not (np.all(np.isfinite(H)) and np.all(np.isfinite(dH))):
        raise ConvergenceError(f"the finite-n fixed point at gamma = {gf:.6g} is not finite")
    tq = H[:, 0, 0].astype(float)
    if not np.all((tq > 0) & (tq <= (1 + 1e-9) / gf)):
        raise ConvergenceError(f"the finite-n fixed point at gamma = {gf:.6g} is off the physical "
                               "branch: a type's tau(Q) is outside (0, 1/gamma]")
    return H, dH


def _refined_solve(M, b):
    """``M^{-1} b`` for a longdouble ``M``: float64 LU, then refinement steps with the residual in longdouble."""
    # optional dependency (scipy)
    import scipy.linalg

    lu = scipy.linalg.lu_factor(M.astype(float))
    x = scipy.linalg.lu_solve(lu, b.astype(float)).astype(LD)
    for _ in range(4):
        r = b - M @ x
        x = x + scipy.linalg.lu_solve(lu, r.astype(float)).astype(LD)
        if np.abs(r).max() <= 1e-21 * max(np.abs(b).max(), 1e-300):
            break
    return x


def finite_n_point(n: int, c, m2, w2, gamma, q: int, quadratic_form: bool = False, f_name: str = "tanh"):
    """The finite-n prediction at one ``gamma`` with ``q`` Gauss-Hermite nodes per label, in extended precision,
    without the checks of :func:`finite_n_attention`: any ``m2 = ||mu||^2`` and ``w2 = ||w_K||^2`` (an
    irrational ``mu . w_K`` too).

    Takes ``n`` tokens (``p = round(c n)``), ``c``, ``m2``, ``w2``, ``gamma`` (exact rationals or floats), ``q``
    and ``f_name`` (see :data:`COVERED_F`); returns ``E_A`` as a ``numpy.longdouble`` (``quadratic_form=True``:
    the pair ``(y^T Q y/n, E_A)``).  Raises :class:`~symrmt.errors.ConvergenceError` when the fixed point or
    its refinement fails or ``E_A`` falls outside ``[0, 1]``.

    >>> from fractions import Fraction
    >>> round(float(finite_n_point(512, Fraction(1, 2), 4, 4, 1, TYPES)), 2)
    0.08
    """
    p = round(Fraction(c) * n)
    sp_ = np.sqrt(LD(p))
    kappa = (1 + _ld(w2)) / sp_
    m = np.sqrt(_ld(m2))
    u, y, pi, j, sg, v = _types(m, q)
    k = len(pi)
    F, alpha, sigma2 = _profile(u, pi, kappa, f_name, j, sg, v)
    d = -np.diagonal(F) / sp_  # the mean part's diagonal, removed (K_ii = 0): F(kappa u_a^2)
    H, dH = _noise_fixed_point(gamma, c, pi, alpha, d - alpha**2, sigma2)
    Hb = np.zeros((3 * k, 3 * k), dtype=LD)
    dHb = np.zeros((3 * k, 3 * k), dtype=LD)
    for a in range(3):
        for b in range(3):
            Hb[a * k:(a + 1) * k, b * k:(b + 1) * k] = np.diag(pi * H[:, a, b])
            dHb[a * k:(a + 1) * k, b * k:(b + 1) * k] = np.diag(pi * dH[:, a, b])
    D = np.zeros((3 * k, 3 * k), dtype=LD)
    D[k:2 * k, :k] = LD(n) / sp_ * F
    D[:k, k:2 * k] = D[k:2 * k, :k].T
    D[2 * k:, 2 * k:] = _ld(Fraction(c) * n / p) * np.outer(u, u)
    e = np.zeros(3 * k, dtype=LD)
    e[:k] = y
    DHb = np.zeros_like(D)
    for a in range(3):  # D @ Hb with Hb's blocks diagonal: column scalings
        for b in range(3):
            DHb[:, b * k:(b + 1) * k] += D[:, a * k:(a + 1) * k] * (pi * H[:, a, b])[None, :]
    x = _refined_solve(np.eye(3 * k, dtype=LD) + DHb, e)
    err = -_ld(gamma) ** 2 * (x @ (dHb @ x))
    if not (np.isfinite(err) and -1e-9 <= err <= 1 + 1e-9):
        raise ConvergenceError(f"the finite-n prediction at gamma = {float(gamma):.6g} gave E_A = {err!r}, "
                               "outside [0, 1]")
    return (e @ (Hb @ x), err) if quadratic_form else err


def longdouble_to_mpf(x):
    """A ``numpy.longdouble`` (or a float) as the mpmath number of the same value, exact whatever the working
    precision (80 bits hold its 64-bit mantissa).

    >>> import mpmath
    >>> x = np.longdouble(1) + np.longdouble(2) ** -60  # below float64's resolution, kept by the 64-bit mantissa
    >>> longdouble_to_mpf(x) - 1 == mpmath.mpf(2) ** -60
    True
    """
    num, den = x.as_integer_ratio()
    with mpmath.workprec(80):
        return mpmath.mpf(num) / den


def finite_n_attention(f_name: str, c, gammas, geometry, n: int, diagonal: str = "zero", types: int = TYPES) -> list:
    """The finite-n prediction of ``E_A(gamma)`` at ``n`` tokens (``p = round(c n)``) with ``types`` Gauss-Hermite
    nodes per label, one mpmath number per gamma, correct to :data:`DIGITS` significant digits of the value of
    that discretization.

    ``f_name``: the nonlinearity's name (see :data:`COVERED_F`); ``geometry``: a ``Geometry`` or
    ``LowRankGeometry`` (see :func:`check_finite_n`); ``c`` and each ``gamma``: numbers or rational text.
    Raises :class:`~symrmt.errors.ParameterError` for a case not covered and
    :class:`~symrmt.errors.ConvergenceError` when the fixed point or its refinement fails.

    >>> from symrmt.models.attention.geometry import LowRankGeometry
    >>> aligned = LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]])
    >>> round(float(finite_n_attention("tanh", "1/2", [1], aligned, 512)[0]), 2)
    0.08
    """
    m2, w2 = check_finite_n(f_name, geometry, diagonal, n)
    cf = Fraction(c)
    return [longdouble_to_mpf(finite_n_point(int(n), cf, m2, w2, Fraction(g), types, f_name=f_name))
            for g in gammas]


def _agreement(a, b) -> int:
    digits = DIGITS
    for x, y in zip(a, b):
        gap = float(abs(x - y) / max(abs(y), 1e-300))
        if gap > 0:
            digits = min(digits, int(math.floor(-math.log10(gap))))
    return digits


def finite_n_values(f_name: str, c, gammas, geometry, n: int, diagonal: str = "zero", digits: int = DIGITS) -> tuple:
    """``(values, agreement, types)``: :func:`finite_n_attention` at :data:`TYPES` nodes per label (the value,
    to ``digits`` significant digits), the number of significant digits on which it agrees with
    :data:`TYPES_CHECK` nodes (a check of the discretization, at most :data:`DIGITS`), and the nodes per label
    used.  Below :data:`MIN_DIGITS` of agreement both counts are doubled once (a strong signal makes ``F`` vary
    fast over the types).

    Raises :class:`~symrmt.errors.PrecisionError` for ``digits`` above :data:`DIGITS` (before any work) or where
    ``numpy.longdouble`` is not the 80-bit extended type (its 15 digits rest on it), and
    :class:`~symrmt.errors.ConvergenceError` when the discretizations agree to fewer than :data:`MIN_DIGITS`
    digits even after doubling.

    >>> from symrmt.models.attention.geometry import LowRankGeometry
    >>> vals, agree, q = finite_n_values("tanh", "1/2", [1], LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]]), 1024)
    >>> round(float(vals[0]), 3), agree >= MIN_DIGITS, q
    (0.1, True, 56)
    """
    if np.finfo(LD).nmant < 63:
        raise PrecisionError(f"the finite-n prediction needs numpy.longdouble with a 64-bit mantissa (x86 extended "
                             f"precision); on this platform it has {np.finfo(LD).nmant + 1} bits: simulate at this n")
    if digits > DIGITS:
        raise PrecisionError(f"the finite-n prediction is computed to {DIGITS} significant digits (extended precision, "
                             f"checked against an mpmath solve of the same discretized system); {digits} were asked: "
                             f"ask for {DIGITS} or fewer")
    for scale in (1, 2):
        a = finite_n_attention(f_name, c, gammas, geometry, n, diagonal, scale * TYPES_CHECK)
        b = finite_n_attention(f_name, c, gammas, geometry, n, diagonal, scale * TYPES)
        agree = _agreement(a, b)
        if agree >= MIN_DIGITS:
            return b, agree, scale * TYPES
    raise ConvergenceError(f"the finite-n prediction at n = {n} agrees to only {agree} digits between "
                           f"{2 * TYPES_CHECK} and {2 * TYPES} Gauss-Hermite nodes per label")
