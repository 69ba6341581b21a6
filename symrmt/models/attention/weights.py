r"""Attention with a general weight matrix and with several random heads, at ``mu = 0``.

* :func:`weights_limit`: ``E_A`` for ``K = f(X^T W X/sqrt(p))/sqrt(p)`` (diagonal zero) with ``W`` a
  ``p x p`` matrix given by its entries, ``X = Z`` (no signal), ``n = p/c``: the deterministic
  equivalent at that size of ``gamma^2 tau(Q^2)``, ``Q = (K^T Z^T Z K/n + gamma I)^{-1}``, with ``K``
  the Gaussian equivalent of :mod:`symrmt.engine.kernel_weights` (the given matrix and the
  elliptic law in the trace engine).  With ``y`` independent of ``X``,
  ``(gamma^2/n) y^T Q^2 y`` concentrates on ``gamma^2 tau(Q^2)``.
* :func:`heads_limit`: ``H`` independent random heads ``W_h = Q_h K_h^T/sqrt(p d)`` (Gaussian
  ``Q_h, K_h`` of shape ``p x d``, ``d = D p``), features concatenated, so
  ``E_A = gamma^2 tau((sum_h K_h^T Z^T Z K_h/n + gamma I)^{-2})``: a limit (``n -> oo``).
* :func:`heads_simulate`: the same model sampled.

A signal (``mu != 0``) is not derived for a general ``W`` or for random heads: it is refused
(:class:`NotDerivedError`, exit 3), never answered.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from symrmt.errors import ParameterError, SolverError

__all__ = ["NotDerivedError", "weights_limit", "heads_limit", "heads_simulate", "check_heads", "MAX_HEADS"]

#: the most heads (each adds three random leaves to the engine's pencil)
MAX_HEADS = 8
#: the fixed point's unknowns allowed per pair of heads (H heads: about 40 H^2; the engine's general cap is LIMITS["unknowns"])
HEAD_UNKNOWNS = 60


class NotDerivedError(SolverError):
    """A case the Gaussian-equivalent derivation does not cover (refused, never answered)."""


def _refuse_signal(mu, what):
    if mu is None:
        return
    arr = np.asarray(mu, dtype=np.float64) if not isinstance(mu, str) else None
    if arr is None:
        from symrmt.engine.given import load_array

        arr = load_array(mu, "mu", 1)
    if arr.ndim != 1 or not np.all(np.isfinite(arr)):
        raise ParameterError(f"mu must be a finite vector, got shape {arr.shape}")
    if np.any(arr):
        raise NotDerivedError(f"a signal mu != 0 with {what} is not derived (the signal's terms of the kernel are "
                              "derived only for W = alpha I + finite rank); only mu = 0 is answered")
    return arr


def _gamma_values(gammas):
    from symrmt.models.attention.params import check_gammas

    return check_gammas(gammas)


def _frac_text(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _ea_expression(kernels):
    """``-gamma^2 d/dgamma tau((sum_h K_h^T Z^T Z K_h/n + gamma I)^{-1})`` = ``gamma^2 tau(Q^2)``."""
    from symrmt.engine import diff, inv, trace

    gram = None
    for K, Z, m in kernels:
        term = K.T * Z.T * Z * K / m.size("n")
        gram = term if gram is None else gram + term
    g = m.param("gamma")
    return -g ** 2 * diff(trace(inv(gram + g * m.identity("n"))), g)


def weights_limit(f, c, gammas, weights, mu=None, digits: int = 15, center: bool = False) -> dict:
    """``{"attention", "ridge", "p", "n", "stats"}``: ``E_A`` (the deterministic equivalent at
    ``p`` from ``weights``, ``n = p/c``) and ``E_RR`` (its limit) for each ``gamma``, ``mu = 0``.

    ``weights``: a ``p x p`` array or a ``.npy`` path (file-trust rule, 32 MiB, 2048 rows);
    ``stats``: ``s``, ``rho``, ``m = tr(W)/p``, ``a1``, ``b``, ``tau``.  Raises ``ParameterError``
    (bad weights), :class:`NotDerivedError` (``mu != 0``), ``SolverError`` (no certified value).

    >>> r = weights_limit("tanh", "1/2", [1], np.eye(4), digits=15)
    >>> r["attention"][0] > 0, r["n"]
    (True, 8)
    """
    from symrmt.engine import Model
    from symrmt.engine.kernel_weights import check_weights, kernel_given
    from symrmt.models.attention.params import check_c
    from symrmt.models.attention.theory import ridge_limit

    W = check_weights(weights)
    _refuse_signal(mu, "a general W")
    p = W.shape[0]
    c_frac = check_c(c)
    gam = _gamma_values(gammas)
    m = Model()
    m.dim("p", "c*n")
    Z = m.gaussian("Z", "p", "n")
    Wm = m.matrix("W", "p", "p", W)
    K = kernel_given(f, Z, Wm, model=m, digits=digits, center=center)
    expr = _ea_expression([(K, Z, m)])
    att = []
    for g in gam:
        att.append(m.limit(expr, at={"c": _frac_text(c_frac), "gamma": _frac_text(g)}, digits=digits).value)
    ridge = ridge_limit(c_frac, list(gam), 0, digits)
    from symrmt.engine.kernel_weights import general_coefficients

    k = general_coefficients(f, W, center, digits)
    stats = {key: k[key] for key in ("rho", "m", "a1", "b", "tau")}
    stats["s"] = k["s"]
    return {"attention": att, "ridge": list(ridge), "p": p, "n": p / c_frac, "stats": stats}


def check_heads(heads, head_width):
    """``(H, D)``: ``1 <= H <= MAX_HEADS`` an integer, ``0 < D <= 64`` an exact fraction."""
    from symrmt.models.attention.params import to_fraction

    if isinstance(heads, bool) or not isinstance(heads, (int, np.integer)) or not 1 <= int(heads) <= MAX_HEADS:
        raise ParameterError(f"heads must be an integer in [1, {MAX_HEADS}], got {heads!r}")
    D = to_fraction(head_width, "head_width")
    if not 0 < D <= 64:
        raise ParameterError(f"head_width (d/p) must be in (0, 64], got {head_width}")
    return int(heads), D


def heads_limit(f, c, gammas, heads: int, head_width, digits: int = 15, center: bool = False) -> dict:
    """``{"attention", "ridge"}``: the limits of ``E_A`` with ``heads`` independent random heads
    ``W_h = Q_h K_h^T/sqrt(p d)``, ``d = head_width * p``, features concatenated, and of ``E_RR``
    (``mu = 0``).  Each head's kernel is :func:`symrmt.engine.kernel_weights.random_head_kernel`.

    >>> r = heads_limit("tanh", "1/2", [1], 1, 1)
    >>> 0 < r["attention"][0] < 1
    True
    """
    from symrmt.engine import Model
    from symrmt.engine.kernel_weights import random_head_kernel
    from symrmt.models.attention.params import check_c
    from symrmt.models.attention.theory import ridge_limit

    H, D = check_heads(heads, head_width)
    c_frac = check_c(c)
    gam = _gamma_values(gammas)
    m = Model()
    m.dim("p", "c*n")
    m.dim("d", "D*c*n")
    Z = m.gaussian("Z", "p", "n")
    ks = []
    for h in range(1, H + 1):
        Q = m.gaussian(f"Q{h}", "p", "d")
        Kw = m.gaussian(f"K{h}", "p", "d")
        ks.append((random_head_kernel(f, Z, Q, Kw, model=m, name=f"G{h}", digits=digits + 5, center=center), Z, m))
    expr = _ea_expression(ks)
    from symrmt.parsing.limits import LIMITS

    saved = LIMITS["unknowns"]
    LIMITS["unknowns"] = max(saved, HEAD_UNKNOWNS * H * H)  # the pencil couples every pair of heads: about 40 H^2 unknowns
    try:
        att = [m.limit(expr, at={"c": _frac_text(c_frac), "D": _frac_text(D), "gamma": _frac_text(g)},
                       digits=digits).value for g in gam]
    finally:
        LIMITS["unknowns"] = saved
    return {"attention": att, "ridge": list(ridge_limit(c_frac, list(gam), 0, digits))}


def heads_simulate(f, n: int, c, gammas, heads: int, head_width, trials: int = 10, seed: int = 0,
                   noise: str = "gaussian", center: bool = False) -> dict:
    """Monte-Carlo ``{"attention": {"mean", "se"}, "ridge": {...}, "params"}`` of ``heads`` independent
    random heads (fresh ``Q_h, K_h`` each trial), ``K_h = f(X^T W_h X/sqrt(p))/sqrt(p)`` with zero
    diagonal, ``E_A = (gamma^2/n) y^T (sum_h K_h^T X^T X K_h/n + gamma I)^{-2} y``, ``mu = 0``,
    ``p = round(c n)``, ``d = round(head_width p)``; ``f`` is applied centered as the theory takes it.

    >>> r = heads_simulate("tanh", 32, 1, [1.0], 2, "1/2", trials=2)
    >>> len(r["attention"]["mean"])
    1
    """
    from symrmt.hermite import Nonlinearity
    from symrmt.models.attention.params import check_c, check_noise
    from symrmt.models.attention.sampling import draw_tokens, ridge_errors, _errors_from_spectrum, _spectrum_full

    H, D = check_heads(heads, head_width)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ParameterError(f"n must be an integer >= 2, got {n!r}")
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 2:
        raise ParameterError(f"trials must be an integer >= 2, got {trials!r}")
    n = int(n)
    c_frac = check_c(c)
    p = round(c_frac * n)
    d = round(D * p)
    if p < 1 or d < 1:
        raise ParameterError(f"p = round(c n) = {p} and d = round(head_width p) = {d} must be >= 1")
    if n * n * 8 * (H + 3) > (1 << 31):
        raise ParameterError(f"n = {n}: the simulation would hold {H + 3} n x n matrices above 2 GiB")
    noise = check_noise(noise)
    gam = np.array([float(g) for g in _gamma_values(gammas)])
    fn = Nonlinearity(f, center=center).numpy() if not isinstance(f, Nonlinearity) else f.numpy()
    rng = np.random.default_rng(seed)
    rows_a, rows_r = [], []
    rp = math.sqrt(p)
    for _ in range(trials):
        x, y = draw_tokens(rng, n, np.zeros(p), noise)
        gram = x.T @ x
        P = np.zeros((n, n))
        for _h in range(H):
            Qh = rng.standard_normal((p, d))
            Kh = rng.standard_normal((p, d))
            S = ((x.T @ Qh) @ (Kh.T @ x)) / (math.sqrt(p * d) * rp)
            k = np.asarray(fn(S), dtype=np.float64) / rp
            if not np.all(np.isfinite(k)):
                raise ParameterError("f returned non-finite values on the simulated kernel arguments")
            np.fill_diagonal(k, 0.0)
            P += k.T @ (gram @ k)
        P = 0.5 * (P + P.T) / n
        lam, s, null = _spectrum_full(P, y)
        rows_a.append(_errors_from_spectrum(lam, s, null, n, gam))
        rows_r.append(ridge_errors(x, y, gam, gram=gram))
    out = {}
    for key, rows in (("attention", rows_a), ("ridge", rows_r)):
        a = np.array(rows)
        out[key] = {"mean": a.mean(axis=0), "se": a.std(axis=0, ddof=1) / math.sqrt(trials)}
    out["params"] = {"n": n, "p": p, "d": d, "heads": H, "trials": trials, "seed": seed, "noise": noise}
    return out
