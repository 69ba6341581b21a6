r"""A finite-size prediction of the attention error: the signal kept inside ``f`` (``docs/theory.md``,
section "Finite size: the signal inside f").

With weights and signal along one direction ``e`` (``mu = m e``, ``w_K = w_Q = omega e``, ``W = I + w w^T``),
each token has one low-dimensional coordinate ``u_i = e^T x_i = m y_i + zeta_i`` and the kernel's argument is

.. math::

    t_{ij} = g_{ij} + \kappa\, u_i u_j, \qquad g_{ij} = \bar z_i^\top \bar z_j/\sqrt p, \qquad
    \kappa = (1 + \omega^2)/\sqrt p ,

with ``z̄`` the noise orthogonal to ``e``.  The limit linearizes ``f`` in ``delta_ij = kappa u_i u_j``; this
module keeps it.  Given ``(u_i, u_j)``, ``f(g + delta)`` has the conditional mean ``F(delta) = E f(xi + delta)``,
the linear coefficient ``F'(delta)`` in ``g`` and the remainder variance
``V(delta) = E f(xi + delta)^2 - F(delta)^2 - F'(delta)^2``.  So, for ``i != j``,

.. math::

    \sqrt p\, K_{ij} \simeq F(\delta_{ij}) + F'(\delta_{ij})\, g_{ij} + \sqrt{V(\delta_{ij})}\, G_{ij} .

The tokens are discretized into types (the two labels times ``Q`` Gauss-Hermite nodes in ``zeta``);
``F'`` over pairs of types is split into its best rank-one part ``alpha_a alpha_b`` (a Wishart term
``D_alpha S D_alpha``, correlated with ``X`` exactly) and a remainder, which joins ``V`` as an independent
Gaussian noise with a variance profile ``sigma^2_ab``.  The bulk is an operator-valued fixed point over the
types (one 3x3 block-trace matrix per type); the mean ``F`` and the ``u u^T`` part of ``X^T X`` are a
finite-rank update read out by Woodbury, as in the limit.  As ``n -> oo``, ``F(delta) -> a_1 delta``,
``alpha_a -> sqrt(a_1)``, ``sigma^2 -> nu - a_1^2``, and the prediction tends to the limit.

Covered (checked against simulations of the actual kernel; outside it the prediction is refused):
``f`` in :data:`COVERED_F` (tanh, erf, the centered ReLU), ``diagonal = "zero"``, ``alpha = 1`` and ``mu, w_K, w_Q`` collinear with ``w_K = w_Q``
(either of ``mu`` and ``w`` may be zero), ``n >= MIN_N``.  The ridge error is returned as its limit
(ridge has no kernel; its finite-n correction is ``O(1/n)``).

The values are computed in float64 with two discretizations (:data:`TYPES` and :data:`TYPES_CHECK` nodes per
label); their agreement, at most :data:`DIGITS`, is the number of digits reported for the model's value.  The
model itself is an approximation whose error, measured against simulation, is stated in ``docs/theory.md``.

>>> from symrmt.models.attention.geometry import LowRankGeometry
>>> aligned = LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]])
>>> round(finite_n_attention("tanh", "1/2", [1], aligned, 10**8)[0], 3)
0.157
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from symrmt.cache import cached
from symrmt.errors import ConvergenceError, ParameterError

__all__ = ["MIN_N", "TYPES", "TYPES_CHECK", "DIGITS", "MIN_DIGITS", "check_finite_n", "finite_n_attention",
           "finite_n_values"]

#: the smallest n accepted: the smallest size at which the prediction was checked against simulation
MIN_N = 256
#: Gauss-Hermite nodes per label (the number of token types is ``2 * TYPES``)
TYPES = 40
#: the second discretization every value is recomputed with; the two must agree (:func:`finite_n_values`)
TYPES_CHECK = 56
#: the most significant digits a finite-n value is reported to (float64 arithmetic)
DIGITS = 10
#: fewer digits of agreement between the two discretizations than this is an error
MIN_DIGITS = 4
#: nodes of the Gauss-Hermite rule for the conditional moments ``F, F', E f^2``
_MOMENT_NODES = 120
#: the nonlinearities the prediction covers
COVERED_F = ("tanh", "erf", "relu")


def _moment_rule():
    from numpy.polynomial.hermite_e import hermegauss

    x, w = hermegauss(_MOMENT_NODES)
    return x, w / w.sum()


_ERF = np.vectorize(math.erf, otypes=[float])


def _moments(delta, f_name: str = "tanh"):
    """``(F, F', E f(xi + delta)^2)`` at the array ``delta`` (``xi ~ N(0, 1)``) for a covered ``f``: Gauss-Hermite
    quadrature for the smooth ``tanh`` and ``erf``, closed forms for the centered ReLU
    ``max(0, t) - 1/sqrt(2 pi)`` (``E relu(xi + d) = d Phi(d) + phi(d)``, ``E relu(xi + d)^2 = (d^2 + 1) Phi(d)
    + d phi(d)``, ``d/dd E relu(xi + d) = Phi(d)``)."""
    d = np.asarray(delta, dtype=float)
    if f_name == "relu":
        phi = np.exp(-d * d / 2) / math.sqrt(2 * math.pi)
        Phi = 0.5 * (1 + _ERF(d / math.sqrt(2)))
        a0 = 1 / math.sqrt(2 * math.pi)
        m1 = d * Phi + phi
        m2 = (d * d + 1) * Phi + d * phi
        return m1 - a0, Phi, m2 - 2 * a0 * m1 + a0 * a0
    x, w = _moment_rule()
    z = d[..., None] + x
    if f_name == "tanh":
        t = np.tanh(z)
        return t @ w, (1 - t * t) @ w, (t * t) @ w
    if f_name == "erf":
        t = _ERF(z)
        return t @ w, (2 / math.sqrt(math.pi) * np.exp(-z * z)) @ w, (t * t) @ w
    raise ParameterError(f"no conditional moments for f = {f_name}")


def check_finite_n(f_name: str, geometry, diagonal: str, n) -> tuple:
    """Refuse what the finite-n derivation does not cover; return ``(m^2, omega^2)`` (floats).

    Raises :class:`~symrmt.errors.ParameterError` with the reason (``n`` below :data:`MIN_N`, another
    ``f``, ``diagonal = "keep"``, ``alpha != 1``, weights not collinear with the signal or ``w_K != w_Q``).

    >>> from symrmt.models.attention.geometry import LowRankGeometry
    >>> check_finite_n("tanh", LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]]), "zero", 512)
    (4.0, 4.0)
    """
    from symrmt.models.attention.geometry import as_low_rank

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
    return float(m2), float(k2)


def _types(m: float, q: int):
    from numpy.polynomial.hermite_e import hermegauss

    s, w = hermegauss(q)
    w = w / w.sum()
    u = np.concatenate([m + s, -m + s])
    y = np.concatenate([np.ones(q), -np.ones(q)])
    pi = np.concatenate([w, w]) / 2
    return u, y, pi


def _profile(u, pi, kappa, f_name):
    """``F`` over pairs of types, the rank-one split ``alpha`` of ``F'`` and the noise profile ``sigma^2``."""
    k = len(u)
    iu = np.triu_indices(k)
    tri = _moments(kappa * u[iu[0]] * u[iu[1]], f_name)  # symmetric in the pair: the upper triangle only
    F, F1, F2 = (np.zeros((k, k)) for _ in range(3))
    for full, part in zip((F, F1, F2), tri):
        full[iu] = part
        full.T[iu] = part
    V = np.maximum(F2 - F * F - F1 * F1, 0.0)
    sq = np.sqrt(pi)
    ev, vec = np.linalg.eigh(sq[:, None] * F1 * sq[None, :])
    alpha = math.sqrt(ev[-1]) * vec[:, -1] / sq
    alpha *= np.sign(alpha.sum())
    if not np.all(np.isfinite(alpha)):
        raise ConvergenceError("the rank-one part of F' over the token types is not finite")
    sigma2 = V + (F1 - np.outer(alpha, alpha)) ** 2
    return F, alpha, sigma2


@cached(maxsize=16)
def _pencil_matrices(c: float):
    """``A_S`` (at ``a_1 = 1``: the per-type factors ``alpha`` carry the Wishart coefficient) and ``P`` of the
    noise-only pencil, read from its one SymPy definition
    (:func:`symrmt.models.attention.equations.noise_pencil`)."""
    from symrmt.models.attention import equations as S

    _, A_S, P = S.noise_pencil()
    A = np.array(A_S.subs({S.a1: 1, S.c: c}).tolist(), dtype=float)
    P = np.array(P.tolist(), dtype=float)
    A.flags.writeable = P.flags.writeable = False  # cached: shared by every call
    return A, P


def _noise_fixed_point(gamma: float, c: float, pi, alpha, e, sigma2, tol=1e-13, maxit=50000):
    """``(H, dH/dgamma)``: one 3x3 block-trace matrix per type, by the damped iteration
    ``H <- (H + (L0 + R(-H))^{-1})/2`` run together with its derivative in ``gamma``."""
    k = len(pi)
    A, P = _pencil_matrices(c)
    lam = np.zeros((k, 3, 3))
    lam[:, 0, 0] = lam[:, 1, 1] = alpha
    lam[:, 2, 2] = 1
    L0 = np.zeros((k, 3, 3))
    L0[:, 0, 0] = gamma
    L0[:, 0, 1] = L0[:, 1, 0] = e
    L0[:, 1, 2] = L0[:, 2, 1] = 1
    E11 = np.zeros((3, 3))
    E11[0, 0] = 1
    H = np.zeros((k, 3, 3))
    H[:, 0, 0] = 1 / gamma
    H[:, 1, 2] = H[:, 2, 1] = 1
    H[:, 1, 1] = -c
    dH = np.zeros((k, 3, 3))
    dH[:, 0, 0] = -1 / gamma**2
    I3 = np.eye(3)
    for _ in range(maxit):
        Mb = np.einsum("b,bij,bjk,bkl->il", pi, lam, H, lam)
        dMb = np.einsum("b,bij,bjk,bkl->il", pi, lam, dH, lam)
        Ninv = np.linalg.inv(I3 + Mb @ A / c)
        core = A @ Ninv
        dcore = -A @ Ninv @ (dMb @ A / c) @ Ninv
        RG = -np.einsum("ab,b,bij->aij", sigma2, pi, P @ H @ P) / c
        dRG = -np.einsum("ab,b,bij->aij", sigma2, pi, P @ dH @ P) / c
        Minv = np.linalg.inv(L0 + lam @ core @ lam + RG)
        dM = E11 + lam @ dcore @ lam + dRG
        Hn = Minv
        dHn = -Minv @ dM @ Minv
        diff = max(np.abs(Hn - H).max(), np.abs(dHn - dH).max() * gamma)
        H = (H + Hn) / 2
        dH = (dH + dHn) / 2
        if not np.isfinite(diff):
            break
        if diff < tol * max(1.0, np.abs(H).max(), np.abs(dH).max() * gamma):
            tq = H[:, 0, 0]
            if not np.all((tq > 0) & (tq <= (1 + 1e-9) / gamma)):
                raise ConvergenceError(f"the finite-n fixed point at gamma = {gamma:.6g} is off the physical "
                                       "branch: a type's tau(Q) is outside (0, 1/gamma]")
            return H, dH
    raise ConvergenceError(f"the finite-n fixed point over token types did not converge at gamma = {gamma:.6g} "
                           f"(last change {diff:.3g})")


def _point(n: int, c: float, m2: float, w2: float, gamma: float, q: int, quadratic_form: bool = False,
           f_name: str = "tanh"):
    """``E_A`` at one ``gamma`` (``quadratic_form=True``: ``(y^T Q y/n, E_A)``)."""
    p = round(c * n)
    kappa = (1 + w2) / math.sqrt(p)
    u, y, pi = _types(math.sqrt(m2), q)
    k = len(pi)
    F, alpha, sigma2 = _profile(u, pi, kappa, f_name)
    d = -_moments(kappa * u * u, f_name)[0] / math.sqrt(p)  # the mean part's diagonal, removed (K_ii = 0)
    H, dH = _noise_fixed_point(gamma, c, pi, alpha, d - alpha**2, sigma2)
    Hb = np.zeros((3 * k, 3 * k))
    dHb = np.zeros((3 * k, 3 * k))
    for a in range(3):
        for b in range(3):
            Hb[a * k:(a + 1) * k, b * k:(b + 1) * k] = np.diag(pi * H[:, a, b])
            dHb[a * k:(a + 1) * k, b * k:(b + 1) * k] = np.diag(pi * dH[:, a, b])
    D = np.zeros((3 * k, 3 * k))
    D[k:2 * k, :k] = n / math.sqrt(p) * F
    D[:k, k:2 * k] = D[k:2 * k, :k].T
    D[2 * k:, 2 * k:] = c * n / p * np.outer(u, u)
    e = np.zeros(3 * k)
    e[:k] = y
    x = np.linalg.solve(np.eye(3 * k) + D @ Hb, e)
    err = -gamma**2 * float(x @ dHb @ x)
    if not (np.isfinite(err) and -1e-9 <= err <= 1 + 1e-9):
        raise ConvergenceError(f"the finite-n prediction at gamma = {gamma:.6g} gave E_A = {err!r}, outside [0, 1]")
    return (float(e @ Hb @ x), err) if quadratic_form else err


def finite_n_attention(f_name: str, c, gammas, geometry, n: int, diagonal: str = "zero", types: int = TYPES) -> list:
    """The finite-n prediction of ``E_A(gamma)`` at ``n`` tokens (``p = round(c n)``), one float per gamma.

    ``f_name``: the nonlinearity's name (see :data:`COVERED_F`); ``geometry``: a ``Geometry`` or
    ``LowRankGeometry`` (see :func:`check_finite_n`); ``types``: Gauss-Hermite nodes per label.
    Raises :class:`~symrmt.errors.ParameterError` for a case not covered and
    :class:`~symrmt.errors.ConvergenceError` when the fixed point fails.

    >>> from symrmt.models.attention.geometry import LowRankGeometry
    >>> aligned = LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]])
    >>> round(finite_n_attention("tanh", "1/2", [1], aligned, 512)[0], 2)
    0.08
    """
    m2, w2 = check_finite_n(f_name, geometry, diagonal, n)
    cf = float(Fraction(c)) if not isinstance(c, float) else c
    return [_point(int(n), cf, m2, w2, float(Fraction(g)) if not isinstance(g, float) else g, types, f_name=f_name)
            for g in gammas]


def _agreement(a, b) -> int:
    digits = DIGITS
    for x, y in zip(a, b):
        gap = abs(x - y) / max(abs(y), 1e-300)
        if gap > 0:
            digits = min(digits, int(math.floor(-math.log10(gap))))
    return digits


def finite_n_values(f_name: str, c, gammas, geometry, n: int, diagonal: str = "zero") -> tuple:
    """``(values, digits)``: :func:`finite_n_attention` at :data:`TYPES` nodes per label, and the number of
    significant digits on which it agrees with :data:`TYPES_CHECK` nodes (at most :data:`DIGITS`); below
    :data:`MIN_DIGITS` both counts are doubled once (a strong signal makes ``F`` vary fast over the types).

    Raises :class:`~symrmt.errors.ConvergenceError` when even then they agree to fewer than
    :data:`MIN_DIGITS` digits.

    >>> from symrmt.models.attention.geometry import LowRankGeometry
    >>> vals, digits = finite_n_values("tanh", "1/2", [1], LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]]), 1024)
    >>> round(vals[0], 3), digits >= MIN_DIGITS
    (0.1, True)
    """
    for scale in (1, 2):
        a = finite_n_attention(f_name, c, gammas, geometry, n, diagonal, scale * TYPES)
        b = finite_n_attention(f_name, c, gammas, geometry, n, diagonal, scale * TYPES_CHECK)
        digits = _agreement(a, b)
        if digits >= MIN_DIGITS:
            return b, digits
    raise ConvergenceError(f"the finite-n prediction at n = {n} agrees to only {digits} digits between "
                           f"{2 * TYPES} and {2 * TYPES_CHECK} token types per label")
