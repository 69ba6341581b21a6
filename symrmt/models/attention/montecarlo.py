"""Monte-Carlo simulation of the finite model (NumPy only).

This module imports NumPy and the standard library, plus :mod:`symrmt.models.attention.params`
and the executor of :mod:`symrmt.simulation` (where the trials run: here or on
Dask, with an optional trial store); never SymPy or mpmath.  Symbolic parameters are
turned into floats here, at one boundary (:func:`simulate`).

The model (``docs/theory.md`` section 1): tokens ``X = mu y^T + Z`` (p x n),
labels ``y_i = +-1`` uniform, ``Z`` i.i.d. standard Gaussian or Rademacher,
``W = I + w_K w_Q^T``, kernel ``K = f(X^T W X / sqrt(p)) / sqrt(p)`` with
``K_ii = 0`` (``diagonal="zero"``) or kept (``"keep"``), and the errors

* Attention: ``E_A(g) = (g^2/n) y^T (K^T X^T X K/n + g I)^{-2} y``;
* ridge:     ``E_RR(g) = (g^2/n) y^T (X^T X/n + g I)^{-2} y``.

Each trial uses one symmetric eigendecomposition per error for all ``g``
(of the smaller of ``A^T A/n`` and ``A A^T/n``, ``A = X K`` or ``X``).

Example
-------
>>> import numpy as np
>>> r = simulate(np.tanh, n=64, c=0.5, gammas=[0.1, 1.0], trials=4, seed=1)
>>> r["attention"]["trials"].shape, r["params"]["p"]
((4, 2), 32)
>>> bool(np.all((0 <= r["ridge"]["trials"]) & (r["ridge"]["trials"] <= 1)))
True
"""

from __future__ import annotations

import math
import pickle
from numbers import Integral

import numpy as np

from symrmt.errors import ParameterError
from symrmt.models.attention.geometry import as_low_rank
from symrmt.models.attention.params import check_c
from symrmt.simulation.executor import make_executor, run_trials
from symrmt.simulation.memory import TRIAL_BOOKKEEPING, check_memory_bytes
from symrmt.simulation.scheduler import check_workers

__all__ = [
    "simulate",
    "simulate_trial",
    "vectors_from_gram",
    "draw_tokens",
    "kernel_matrix",
    "softmax_kernel",
    "resolvent_errors",
    "attention_errors",
    "ridge_errors",
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


def _weights_from_geometry(geometry, p: int):
    """``(mu, W_K, W_Q, alpha)`` with ``W_K, W_Q`` of shape (p, r) for a Geometry or LowRankGeometry."""
    geometry = as_low_rank(geometry)
    r = geometry.r
    vecs = np.array(vectors_from_gram(geometry.gram(), p))
    return vecs[0], vecs[1:1 + r].T, vecs[1 + r:].T, float(geometry.alpha)


# --------------------------------------------------------------------------
# one trial, in small pieces
# --------------------------------------------------------------------------
def draw_tokens(rng: np.random.Generator, n: int, mu: np.ndarray, noise: str = "gaussian"):
    """Draw labels ``y`` (n,) and tokens ``X = mu y^T + Z`` (p x n).

    The labels are drawn first, then the noise, from the same generator.
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
    ``f(M_ii)/sqrt(p)``.
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


#: the attention kinds of the simulation: the paper's entry-wise kernel and the row softmax
ATTENTIONS = ("entrywise", "softmax")


def check_attention(attention) -> str:
    """``attention`` as one of :data:`ATTENTIONS`, or a one-line error naming the choices."""
    if not isinstance(attention, str) or attention.strip().lower() not in ATTENTIONS:
        raise ParameterError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    return attention.strip().lower()


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

    One ``eigh`` of the smaller of ``A^T A/n`` (n x n) and ``A A^T/n`` (m x m).
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
    reusing ``gram = X^T X`` when given (cheaper than ``F^T F`` when p > n).
    """
    p, n = x.shape
    gammas = np.asarray(gammas, dtype=np.float64)
    if p < n:
        return resolvent_errors(x @ k, y, gammas)
    p_mat = _attention_matrix(x, k, gram)
    lam, s, null = _spectrum_full(p_mat, y)
    return _errors_from_spectrum(lam, s, null, n, gammas)


def ridge_errors(x, y, gammas, gram=None) -> np.ndarray:
    """``E_RR(g) = (g^2/n) y^T (X^T X/n + g I)^{-2} y`` for each ``g`` (eigh of the smaller Gram side)."""
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
    :func:`softmax_kernel` (``f`` and ``diagonal`` unused; ``mask`` as there).
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


# --------------------------------------------------------------------------
# validation and the driver
# --------------------------------------------------------------------------
def _check_int(value, name: str, minimum: int, why: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ParameterError(f"{name} must be >= {minimum}{why}, got {value}")
    return value


def _check_picklable(f) -> None:
    try:
        pickle.dumps(f)
    except Exception as exc:  # pickle raises several types (PicklingError, AttributeError, TypeError)
        raise ParameterError(
            f"f = {f!r} cannot be pickled, so it cannot be sent to worker processes ({exc}); "
            "use workers=1, or pass a module-level function or a NumPy ufunc such as np.tanh"
        ) from exc


def _check_vectorized(f) -> None:
    """``f`` must map a float64 array to a finite array of the same shape (``math.tanh`` does not)."""
    probe = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    try:
        out = np.asarray(f(probe), dtype=np.float64)
    except Exception as exc:  # noqa: BLE001 - any failure is reported as a parameter error
        raise ParameterError(f"f must be vectorized, a NumPy function of an array (e.g. np.tanh, not math.tanh); "
                             f"f(array) raised {type(exc).__name__}: {exc}") from None
    if out.shape != probe.shape:
        raise ParameterError(f"f must be vectorized (array in, array of the same shape out); got shape {out.shape} "
                             f"for input {probe.shape}")


def _check_memory(n: int, p: int, explicit_weights: bool, parallel: int) -> None:
    """Refuse a run whose float64 arrays would not fit: about ``6 n^2 + 4 p n`` (+ ``p^2`` for
    explicit weights) doubles per trial in flight (kernel, Gram, eigenvectors, workspace, tokens)."""
    per_trial = 8 * (6 * n * n + 4 * p * n + (p * p if explicit_weights else 0))
    check_memory_bytes(per_trial * parallel, f"simulate n={n}, p={p}", f"{parallel} trial(s) at once", "lower n or c")


def _numpy_f(f):
    """``f`` as a vectorized NumPy callable: a NumPy callable as is; a preset name, an expression
    string, a SymPy expression or a Nonlinearity (what :func:`symrmt.limit` takes) as the picklable
    :class:`symrmt.models.attention.api.SimulationF` of its text (it names itself in a trial store)."""
    if callable(f) and not hasattr(f, "free_symbols"):
        return f
    if not (isinstance(f, str) or hasattr(f, "free_symbols") or hasattr(f, "nu_mpf")):  # nu_mpf: a Nonlinearity
        return f  # refused below, with the message naming f
    from symrmt.models.attention.api import _picklable, as_nonlinearity

    return _picklable(as_nonlinearity(f))


def simulate(
    f,
    n,
    c,
    gammas,
    geometry=None,
    diagonal="zero",
    noise="gaussian",
    trials=10,
    seed=0,
    workers=1,
    progress=None,
    weights=None,
    mu=None,
    *,
    scheduler=None,
    store=None,
    f_key=None,
    executor=None,
    attention="entrywise",
    mask=True,
) -> dict:
    """Monte-Carlo estimate of ``E_A(gamma)`` and ``E_RR(gamma)`` at finite ``n``.

    Parameters
    ----------
    f : callable, str, sympy.Expr, Nonlinearity or None
        Vectorized NumPy function, float64 array -> float64 array of the same shape; or ``f`` as
        :func:`symrmt.limit` takes it (a preset name such as ``"tanh"``, an expression string in
        ``t``, a SymPy expression, a :class:`~symrmt.hermite.Nonlinearity`), which is
        turned into its NumPy function here (SymPy is then imported; a NumPy callable needs none);
        ``None`` with ``attention="softmax"`` (the softmax fixes the kernel).
    n : int
        Number of tokens, ``n >= 2``.  The dimension is ``p = round(c n)``
        (Python's ``round``: ties go to the even integer), ``p >= 1``.
    c : number
        Aspect ratio ``p/n > 0`` (exact input such as ``"1/2"`` is accepted).
    gammas : number or sequence of numbers
        Ridge parameters, each ``> 0``.
    geometry : Geometry, LowRankGeometry or dict, optional
        Gram data of ``(mu, w_K, w_Q)``, or of ``(mu, w_K^1..r, w_Q^1..r)`` with ``alpha``
        (``W = alpha I + sum_j w_K^j (w_Q^j)^T``); default ``Geometry()`` (``mu = 0``,
        ``W = I``); ``None`` means the same; a dict as :func:`symrmt.models.attention.geometry.as_geometry` reads it.
    diagonal : {"zero", "keep"}
    noise : {"gaussian", "rademacher"}
    trials : int
        Number of independent trials, ``>= 2`` (needed for a standard error).
    seed : int
        Root seed; trial ``j`` uses child ``j`` of ``np.random.SeedSequence(seed).spawn(trials)``,
        so the per-trial results do not depend on the executor, the worker count or ``trials``.
    workers : int
        ``1`` (default): the trials run in this process, no Dask needed.  ``> 1``: on a new
        local Dask cluster of that many worker processes with one BLAS thread each
        (needs ``pip install 'symrmt[dask]'``; ``f`` must pickle, and a script needs an
        ``if __name__ == "__main__":`` guard because the workers are spawned).
    progress : bool or None
        Progress bar (tqdm when installed, else a plain bar on stderr): ``None`` auto (TTY or > 2 s),
        ``True`` always, ``False`` never.
    weights : array of shape (p, p), optional
        An explicit weight matrix ``W`` (e.g. from a trained model), used as is in
        ``K = f(X^T W X/sqrt(p))/sqrt(p)``; then ``geometry`` must be omitted and the
        signal is given by ``mu``.
    mu : array of shape (p,), optional
        The signal vector, only together with ``weights`` (default 0).
    scheduler : str or Scheduler, optional (keyword only)
        Address of a running Dask scheduler (``"tcp://127.0.0.1:8786"``): the trials run on its
        workers instead (not together with ``workers > 1``).  A scheduler is trusted code: a
        plain ``tcp://`` address must be loopback; pass a
        :class:`symrmt.simulation.scheduler.Scheduler` for a trusted remote one or for TLS.
    store : str, Path or TrialStore, optional (keyword only)
        A trial store (:mod:`symrmt.simulation.store`, an SQLite file): trials already
        stored for exactly these parameters, seed and numerics version are reused, the
        missing ones computed and committed one by one as they finish.
    f_key : str, optional (keyword only)
        The name of ``f`` in the store key (needed with ``store`` unless ``f`` is a NumPy
        ufunc or has a ``store_key`` attribute).  It must determine ``f`` exactly.
    executor : DaskExecutor, optional (keyword only)
        An already started executor (:func:`symrmt.simulation.executor.make_executor`),
        used instead of ``workers``/``scheduler``, e.g. across many calls.
    attention : {"entrywise", "softmax"} (keyword only)
        ``"softmax"``: ``K = (n/sqrt(p)) row-softmax(X^T W X/sqrt(p))`` (:func:`softmax_kernel`)
        instead of ``f(X^T W X/sqrt(p))/sqrt(p)``; ``f`` must then be ``None`` and
        ``diagonal`` ``"zero"`` (the mask is the softmax's zero diagonal).
    mask : bool (keyword only)
        Softmax only: ``True`` (default) sets ``S_ii = -inf``; ``False`` keeps the self term.

    Returns
    -------
    dict
        ``{"attention": {"mean", "se", "trials"}, "ridge": {...}, "params": {...},
        "trials_computed", "trials_reused", "trials_stale"}``;
        ``trials`` is a ``(trials, len(gammas))`` array, ``mean`` its column mean and
        ``se = std(ddof=1)/sqrt(trials)``.  The counts say how many trials were computed
        now, taken from the store, and found in the store under an older numerics
        version (not used).

    Examples
    --------
    >>> r = simulate(np.tanh, 32, 2, [1.0], trials=3, seed=0)
    >>> r["params"]["p"], r["attention"]["se"].shape
    (64, (1,))
    """
    from symrmt.models.attention.trials import SIMULATE_SPEC, simulate_point, summarize

    attention = check_attention(attention)
    if attention == "softmax":
        if f is not None:
            raise ParameterError("attention='softmax' fixes the kernel (a row softmax), so f must be None; "
                                 "f is for the entry-wise kernel")
        if not isinstance(mask, bool):
            raise ParameterError(f"mask must be True or False, got {mask!r}")
    else:
        if mask is not True:
            raise ParameterError("mask is for attention='softmax' only (the entry-wise kernel uses diagonal)")
        f = _numpy_f(f)
        if not callable(f):
            raise ParameterError(f"f must be a callable (a vectorized NumPy function), got {f!r}")
        _check_vectorized(f)
    if isinstance(workers, Integral) and not isinstance(workers, bool):
        check_workers(int(workers))  # the stated cap (the cores available), before anything else
    n_checked = _check_int(n, "n", 2)  # the memory estimate comes before any array is allocated
    _check_memory(n_checked, round(check_c(c) * n_checked), weights is not None,
                  min(workers, trials) if isinstance(workers, Integral) and isinstance(trials, Integral) else 1)
    point = simulate_point(f, n, c, gammas, geometry=geometry, diagonal=diagonal, noise=noise, weights=weights,
                           mu=mu, f_key=f_key, need_key=store is not None, attention=attention, mask=mask)
    trials = _check_int(trials, "trials", 2, " (a standard error needs at least two trials)")
    check_memory_bytes(trials * TRIAL_BOOKKEEPING, f"simulate {trials} trials", "results and seed sequences",
                       "lower trials")
    seed = _check_int(seed, "seed", 0)
    workers = check_workers(_check_int(workers, "workers", 1))
    if progress not in (None, True, False):
        raise ParameterError(f"progress must be None, True or False, got {progress!r}")
    parallel = workers > 1 or scheduler is not None
    if parallel and f is not None:
        _check_picklable(f)

    desc = f"simulate n={point.n} p={point.p}" + (" softmax" if attention == "softmax" else "")
    if executor is not None:
        rows, info = run_trials(SIMULATE_SPEC, point.key, trials, seed, store=store, executor=executor,
                                context=point.context, progress=progress, desc=desc)
    else:
        with make_executor(workers=workers if parallel and scheduler is None else None, scheduler=scheduler) as ex:
            rows, info = run_trials(SIMULATE_SPEC, point.key, trials, seed, store=store, executor=ex,
                                    context=point.context, progress=progress, desc=desc)
    return summarize(point, rows, seed, info)
