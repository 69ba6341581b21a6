"""One Monte-Carlo trial of the finite model, in small pieces (NumPy only).

The geometry as vectors (:func:`vectors_from_gram`, :func:`weights_from_geometry`), the tokens
(:func:`draw_tokens`), the kernels (:func:`kernel_matrix`: the entry-wise ``f``; :func:`softmax_kernel`:
the row softmax), the errors ``E_A``, ``E_RR`` of ``docs/theory.md`` section 1 for every ``gamma`` from one
symmetric eigendecomposition (:func:`resolvent_errors`, :func:`attention_errors`, :func:`ridge_errors`) and
the whole trial (:func:`simulate_trial`).  It imports NumPy, the standard library and
:mod:`symrmt.models.attention.geometry`; never SymPy or mpmath.

>>> rng = np.random.default_rng(0)
>>> mu, w_k, w_q, alpha = weights_from_geometry(None, 8)
>>> x, y = draw_tokens(rng, 16, mu)
>>> k = kernel_matrix(np.tanh, x, w_k, w_q)
>>> attention_errors(x, k, y, [1.0]).shape, float(k[0, 0])
((1,), 0.0)
"""

from __future__ import annotations

import math

import numpy as np

from symrmt.errors import ParameterError
from symrmt.models.attention.geometry import as_low_rank

__all__ = [
    "vectors_from_gram",
    "weights_from_geometry",
    "draw_tokens",
    "kernel_matrix",
    "softmax_kernel",
    "resolvent_errors",
    "attention_errors",
    "ridge_errors",
    "simulate_trial",
]


# --------------------------------------------------------------------------
# geometry
# --------------------------------------------------------------------------
def vectors_from_gram(gram, p: int):
    """Vectors in ``R^p`` with the given Gram matrix, one per row of ``gram``.

    For the rank-one geometry (3x3, ``Geometry().gram()``) these are ``(mu, w_K, w_Q)``;
    for a ``(2r+1)``-square ``LowRankGeometry`` they are
    ``(mu, w_K^1..w_K^r, w_Q^1..w_Q^r)``.  The PSD Gram ``G`` is factored as
    ``G = B B^T`` through its symmetric eigendecomposition (tiny negative
    eigenvalues from rounding are clipped); row ``i`` of ``B`` holds the
    coordinates of vector ``i`` in an orthonormal basis of the span.  Directions
    with a numerically zero eigenvalue are dropped, so the vectors occupy the
    first ``rank`` coordinates and ``p >= rank`` is required.

    Parameters
    ----------
    gram : square array-like (floats or Fractions), e.g. ``Geometry().gram()``.
    p : int, the ambient dimension.

    Returns
    -------
    tuple of float64 arrays of shape (p,), one per row of ``gram``.

    Examples
    --------
    >>> mu, wk, wq = vectors_from_gram([[4, 0, 0], [0, 1, 1], [0, 1, 1]], 5)
    >>> float(mu @ mu), float(wk @ wq), float(mu @ wk), int(np.count_nonzero(np.abs(mu) + np.abs(wk) > 1e-12))
    (4.0, 1.0, 0.0, 2)
    """
    g = np.array([[float(x) for x in row] for row in gram], dtype=np.float64)
    if g.ndim != 2 or g.shape[0] != g.shape[1] or g.shape[0] == 0 or not np.all(np.isfinite(g)):
        raise ParameterError(f"geometry: the Gram matrix must be a finite square matrix, got {g.tolist()}")
    size = g.shape[0]
    g = 0.5 * (g + g.T)
    lam, v = np.linalg.eigh(g)
    scale = max(float(np.abs(lam).max()), 0.0)
    if scale > 0 and lam.min() < -1e-10 * scale:
        raise ParameterError(f"geometry: the Gram matrix is not positive semi-definite (eigenvalues {lam.tolist()})")
    keep = lam > 1e-14 * scale if scale > 0 else np.zeros(size, dtype=bool)
    b = v[:, keep] * np.sqrt(lam[keep])  # size x rank, G ~= B B^T
    r = b.shape[1]
    if r > p:
        raise ParameterError(
            f"p = round(c*n) = {p} is smaller than the rank {r} of the geometry (the span of mu and the "
            "weight vectors); increase n or c"
        )
    out = np.zeros((size, p), dtype=np.float64)
    out[:, :r] = b
    return tuple(out)


def weights_from_geometry(geometry, p: int):
    """``(mu, W_K, W_Q, alpha)`` with ``W_K, W_Q`` of shape (p, r) for a Geometry or LowRankGeometry
    (``None``: the default ``Geometry()``, ``mu = 0``, ``W = I``).

    Takes the geometry and the dimension ``p``; the vectors are those of :func:`vectors_from_gram`, whose
    :class:`~symrmt.errors.ParameterError` (``p`` below the rank) it raises.

    >>> from symrmt.models.attention.geometry import Geometry
    >>> mu, w_k, w_q, alpha = weights_from_geometry(Geometry(snr=4, wk2=1, wq2=1, wkwq=1), 5)
    >>> float(mu @ mu), w_k.shape, round(float(w_k[:, 0] @ w_q[:, 0]), 12), alpha
    (4.0, (5, 1), 1.0, 1.0)
    """
    geometry = as_low_rank(geometry)
    r = geometry.r
    vecs = np.array(vectors_from_gram(geometry.gram(), p))
    return vecs[0], vecs[1:1 + r].T, vecs[1 + r:].T, float(geometry.alpha)


# --------------------------------------------------------------------------
# one trial, in small pieces
# --------------------------------------------------------------------------
def draw_tokens(rng: np.random.Generator, n: int, mu: np.ndarray, noise: str = "gaussian"):
    """Draw labels ``y`` (n,) and tokens ``X = mu y^T + Z`` (p x n).

    The labels are drawn first, then the noise, from the same generator.  ``p`` is the length of ``mu``;
    ``noise`` is ``"gaussian"`` or ``"rademacher"`` (entries ``+-1``), anything else a
    :class:`~symrmt.errors.ParameterError`.

    >>> x, y = draw_tokens(np.random.default_rng(1), 6, np.array([2.0, 0, 0]), "rademacher")
    >>> x.shape, sorted(set(np.abs(y).tolist())), sorted(set((x[0] - 2 * y).tolist()))   # X = mu y^T + Z
    ((3, 6), [1.0], [-1.0, 1.0])
    >>> draw_tokens(np.random.default_rng(1), 6, np.zeros(2), "uniform")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: noise must be one of ('gaussian', 'rademacher'), got 'uniform'
    """
    p = mu.shape[0]
    y = 2.0 * rng.integers(0, 2, size=n).astype(np.float64) - 1.0
    if noise == "gaussian":
        x = rng.standard_normal((p, n))
    elif noise == "rademacher":
        x = 2.0 * rng.integers(0, 2, size=(p, n)).astype(np.float64) - 1.0
    else:
        raise ParameterError(f"noise must be one of ('gaussian', 'rademacher'), got {noise!r}")
    if np.any(mu):
        x += np.outer(mu, y)
    return x, y


def _scores(x: np.ndarray, w_k, w_q, gram=None, alpha: float = 1.0, weights=None) -> np.ndarray:
    """``S = X^T W X / sqrt(p)`` with ``W = alpha I + W_K W_Q^T`` (or the explicit ``weights``), a new array."""
    p, n = x.shape
    root_p = math.sqrt(p)
    if weights is not None:
        m = x.T @ (weights @ x)
        m /= root_p
    else:
        g = x.T @ x if gram is None else gram
        m = g * (alpha / root_p)
        if np.any(w_k) and np.any(w_q):
            wk = np.asarray(w_k).reshape(p, -1)
            wq = np.asarray(w_q).reshape(p, -1)
            m += ((x.T @ wk) / root_p) @ (wq.T @ x)
    return m


def kernel_matrix(f, x: np.ndarray, w_k: np.ndarray, w_q: np.ndarray, diagonal: str = "zero", gram=None,
                  alpha: float = 1.0, weights=None):
    """``K = f(X^T W X / sqrt(p)) / sqrt(p)`` with ``W = alpha I + W_K W_Q^T``, without forming ``W``.

    ``w_k`` and ``w_q`` are vectors of length p (rank one) or (p, r) arrays
    whose columns are ``w_K^j`` and ``w_Q^j``.  ``weights``, when given, is an
    explicit p x p matrix ``W`` used instead (``w_k``, ``w_q`` and ``alpha`` are
    then ignored).  ``gram`` may pass a precomputed ``X^T X``.  With
    ``diagonal="zero"`` the diagonal of ``K`` is set to 0; with ``"keep"`` it is
    ``f(M_ii)/sqrt(p)``.  Returns the ``n x n`` float64 array.

    Raises
    ------
    ParameterError
        ``f`` is not vectorized or returns non-finite values, or ``diagonal`` is neither ``"zero"`` nor ``"keep"``.

    Examples
    --------
    ``f(t) = t``, ``p = 2``: ``K = X^T W X/2``; with ``X = [[1, 1], [0, 1]]``, ``X^T X = [[1, 1], [1, 2]]``, and
    ``W = I + e_1 e_1^T`` gives ``X^T W X = [[2, 2], [2, 3]]``:

    >>> x, zero, e1 = np.array([[1.0, 1], [0, 1]]), np.zeros(2), np.array([1.0, 0])
    >>> kernel_matrix(lambda t: t, x, zero, zero).round(12).tolist()
    [[0.0, 0.5], [0.5, 0.0]]
    >>> kernel_matrix(lambda t: t, x, e1, e1, diagonal="keep").round(12).tolist()
    [[1.0, 1.0], [1.0, 1.5]]
    """
    p, n = x.shape
    root_p = math.sqrt(p)
    m = _scores(x, w_k, w_q, gram, alpha, weights)
    k = np.asarray(f(m), dtype=np.float64)
    if k.shape != (n, n):
        raise ParameterError(
            f"f must be vectorized (array in, array of the same shape out); got shape {k.shape} for input {m.shape}"
        )
    if not np.all(np.isfinite(k)):
        raise ParameterError("f returned non-finite values on the simulated kernel arguments")
    k = k / root_p  # a new array: f may have returned its input
    if diagonal == "zero":
        np.fill_diagonal(k, 0.0)
    elif diagonal != "keep":
        raise ParameterError(f"diagonal must be one of ('zero', 'keep'), got {diagonal!r}")
    return k


def softmax_kernel(x: np.ndarray, w_k, w_q, mask: bool = True, gram=None, alpha: float = 1.0, weights=None):
    """Softmax attention ``K = (n/sqrt(p)) A``, ``A = row-softmax(S)``, ``S = X^T W X/sqrt(p)``.

    ``mask=True`` sets ``S_ii = -inf`` (a token does not attend to itself, so ``K_ii = 0``).
    Each row is computed stably: its maximum is subtracted before ``exp`` (a row-wise
    log-sum-exp), so no entry overflows.  Every row of ``A`` sums to 1, so ``K 1 = (n/sqrt(p)) 1``.

    Takes what :func:`kernel_matrix` takes (no ``f``); raises :class:`~symrmt.errors.ParameterError` for
    a masked softmax with ``n < 2`` or non-finite scores.

    >>> x, zero = np.array([[1.0, 0, -1], [0, 1, 0]]), np.zeros(2)
    >>> k = softmax_kernel(x, zero, zero)
    >>> np.diag(k).tolist(), np.allclose(k.sum(axis=1), 3 / np.sqrt(2), rtol=1e-15, atol=0)
    ([0.0, 0.0, 0.0], True)
    >>> softmax_kernel(np.ones((2, 1)), zero, zero)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: the masked softmax needs n >= 2 (a row with only its own token masked is empty)
    """
    p, n = x.shape
    if mask and n < 2:
        raise ParameterError("the masked softmax needs n >= 2 (a row with only its own token masked is empty)")
    m = _scores(x, w_k, w_q, gram, alpha, weights)
    if not np.all(np.isfinite(m)):
        raise ParameterError("the attention scores X^T W X/sqrt(p) are not finite (overflow in float64)")
    if mask:
        np.fill_diagonal(m, -np.inf)
    m -= m.max(axis=1, keepdims=True)
    np.exp(m, out=m)
    m *= (n / math.sqrt(p)) / m.sum(axis=1, keepdims=True)
    return m


def _errors_from_spectrum(lam, s, null, n, gammas):
    """``(1/n) [sum_i s_i g^2/(lam_i+g)^2 + null]`` for each ``g``; shape (len(gammas),)."""
    g = gammas[:, None]
    shrink = (g / (lam[None, :] + g)) ** 2  # in (0, 1], nondecreasing in g
    return (shrink @ s + null) / n


def _spectrum_small_side(a, y):
    """Spectral data of ``P = A^T A/n`` (n x n) through ``A A^T/n`` (m x m), for m < n.

    Returns ``(lam, s, null)`` with ``lam`` the nonzero eigenvalues of ``P``,
    ``s_i = (u_i . y)^2`` for their eigenvectors ``u_i = A^T v_i / sqrt(n lam_i)``,
    and ``null = ||y||^2 - sum s_i`` (clipped at 0), the mass of ``y`` in the
    null space of ``P``.  Eigenvalues ``<= max(m, n) * eps * lam_max`` count as
    zero (numerically indistinguishable from 0), their mass goes to ``null``.
    """
    m, n = a.shape
    lam, v = np.linalg.eigh((a @ a.T) / n)
    lam_max = float(lam[-1]) if lam.size else 0.0
    keep = lam > max(m, n) * np.finfo(np.float64).eps * lam_max
    lam, v = lam[keep], v[:, keep]
    proj = (v.T @ (a @ y)) / np.sqrt(n * lam)
    s = proj * proj
    null = max(float(y @ y) - float(s.sum()), 0.0)
    return lam, s, null


def _spectrum_full(p_mat, y):
    """Spectral data of the n x n PSD matrix ``P`` directly (null part 0)."""
    lam, u = np.linalg.eigh(p_mat)
    lam = np.clip(lam, 0.0, None)
    proj = u.T @ y
    return lam, proj * proj, 0.0


def resolvent_errors(a: np.ndarray, y: np.ndarray, gammas) -> np.ndarray:
    """``(g^2/n) y^T (A^T A/n + g I)^{-2} y`` for each ``g`` in ``gammas``; ``A`` is m x n.

    One ``eigh`` of the smaller of ``A^T A/n`` (n x n) and ``A A^T/n`` (m x m).  Returns a float64 array
    of length ``len(gammas)``.

    Examples
    --------
    ``A = 2 I_2`` (``A^T A/n = 2 I``), ``y = (1, -1)``: ``(g/(2 + g))^2``, ``1/4`` at ``g = 2`` and ``1/9`` at
    ``g = 1``; ``A = [[2, 0]]`` (``m < n``), ``y = (1, 1)``: ``(1/2) (1/4 + 1)`` at ``g = 2``, the null
    direction counting fully:

    >>> resolvent_errors(2 * np.eye(2), np.array([1.0, -1]), [2.0, 1.0]).round(12).tolist()
    [0.25, 0.111111111111]
    >>> resolvent_errors(np.array([[2.0, 0]]), np.array([1.0, 1]), [2.0]).round(12).tolist()
    [0.625]
    """
    gammas = np.asarray(gammas, dtype=np.float64)
    m, n = a.shape
    if m < n:
        lam, s, null = _spectrum_small_side(a, y)
    else:
        lam, s, null = _spectrum_full((a.T @ a) / n, y)
    return _errors_from_spectrum(lam, s, null, n, gammas)


def _attention_matrix(x, k, gram=None):
    """``P = K^T (X^T X) K / n`` (n x n, exactly symmetric), reusing ``gram = X^T X``."""
    n = x.shape[1]
    g = x.T @ x if gram is None else gram
    p_mat = k.T @ (g @ k)
    p_mat += p_mat.T  # exact symmetry; eigh reads one triangle anyway
    p_mat *= 0.5 / n
    return p_mat


def attention_errors(x, k, y, gammas, gram=None) -> np.ndarray:
    """``E_A(g) = (g^2/n) y^T (K^T X^T X K/n + g I)^{-2} y`` for each ``g``.

    For ``p < n`` this is :func:`resolvent_errors` on ``F = X K`` (eigh of
    ``F F^T/n``, p x p); for ``p >= n`` one eigh of ``P = K^T (X^T X) K / n``,
    reusing ``gram = X^T X`` when given (cheaper than ``F^T F`` when p > n).  Returns a float64 array of
    length ``len(gammas)``.

    Examples
    --------
    ``X = I_2``, ``K = 2 I``: ``K^T X^T X K/n = 2 I``, as in :func:`resolvent_errors`; with ``p = 1 < n = 2``
    it is :func:`resolvent_errors` on ``X K``:

    >>> attention_errors(np.eye(2), 2 * np.eye(2), np.array([1.0, -1]), [2.0]).round(12).tolist()
    [0.25]
    >>> attention_errors(np.array([[2.0, 0]]), np.eye(2), np.array([1.0, 1]), [2.0]).round(12).tolist()
    [0.625]
    """
    p, n = x.shape
    gammas = np.asarray(gammas, dtype=np.float64)
    if p < n:
        return resolvent_errors(x @ k, y, gammas)
    p_mat = _attention_matrix(x, k, gram)
    lam, s, null = _spectrum_full(p_mat, y)
    return _errors_from_spectrum(lam, s, null, n, gammas)


def ridge_errors(x, y, gammas, gram=None) -> np.ndarray:
    """``E_RR(g) = (g^2/n) y^T (X^T X/n + g I)^{-2} y`` for each ``g`` (eigh of the smaller Gram side).

    Returns a float64 array of length ``len(gammas)``; ``X = 2 I_2`` gives ``(g/(2 + g))^2``:

    >>> ridge_errors(2 * np.eye(2), np.array([1.0, -1]), [2.0, 1.0]).round(12).tolist()
    [0.25, 0.111111111111]
    """
    p, n = x.shape
    gammas = np.asarray(gammas, dtype=np.float64)
    if p < n:
        return resolvent_errors(x, y, gammas)
    g = x.T @ x if gram is None else gram
    lam, s, null = _spectrum_full(g / n, y)
    return _errors_from_spectrum(lam, s, null, n, gammas)


def simulate_trial(f, n, mu, w_k, w_q, gammas, diagonal, noise, rng, alpha=1.0, weights=None,
                   attention="entrywise", mask=True):
    """One trial: returns ``(E_A, E_RR)``, two float64 arrays of length ``len(gammas)``.

    ``W = alpha I + W_K W_Q^T`` (``w_k``, ``w_q``: vectors or (p, r) arrays), or the
    explicit p x p matrix ``weights`` when given.  ``attention="softmax"`` uses
    :func:`softmax_kernel` (``f`` and ``diagonal`` unused; ``mask`` as there).  Raises what
    :func:`draw_tokens`, :func:`kernel_matrix` and :func:`softmax_kernel` raise.

    Both errors lie in ``[0, ||y||^2/n] = [0, 1]`` and the ridge error does not see the kernel:

    >>> mu, w_k, w_q, alpha = weights_from_geometry(None, 8)
    >>> gammas = np.array([0.1, 1.0])
    >>> e_a, e_rr = simulate_trial(np.tanh, 16, mu, w_k, w_q, gammas, "zero", "gaussian", np.random.default_rng(0))
    >>> s_a, s_rr = simulate_trial(None, 16, mu, w_k, w_q, gammas, "zero", "gaussian", np.random.default_rng(0),
    ...                            attention="softmax")
    >>> e_a.shape, bool(np.all((0 <= e_a) & (e_a <= 1))), bool(np.all(s_rr == e_rr))
    ((2,), True, True)
    """
    x, y = draw_tokens(rng, n, mu, noise)
    p = x.shape[0]
    gram = x.T @ x if p >= n else None  # reused by the kernel, Attention and ridge
    if attention == "softmax":
        k = softmax_kernel(x, w_k, w_q, mask, gram=gram, alpha=alpha, weights=weights)
    else:
        k = kernel_matrix(f, x, w_k, w_q, diagonal, gram=gram, alpha=alpha, weights=weights)
    e_att = attention_errors(x, k, y, gammas, gram=gram)
    e_rr = ridge_errors(x, y, gammas, gram=gram)
    return e_att, e_rr
