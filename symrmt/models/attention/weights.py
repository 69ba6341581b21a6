r"""Attention with a general weight matrix and with several random heads, with or without a signal.

:func:`weights_limit`: ``E_A`` at size ``n = p/c`` for ``K = f(X^T W X/sqrt(p))/sqrt(p)`` with ``W`` given by its
entries and an optional signal ``mu``, through the trace engine's Gaussian equivalent
(:mod:`symrmt.engine.kernels.weights`).  :func:`heads_limit`: ``H`` independent random heads
``W_h = Q_h K_h^T/sqrt(p d)``, features concatenated, signal ``snr = ||mu||^2``, as ``n -> oo``
(``attention="softmax"``: each head's masked row softmax); :func:`heads_simulate`: the same model sampled.
The derivation is in ``docs/theory.md`` section 14.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from symrmt.engine import Model, diff, inv, trace
from symrmt.engine.laws.given import load_array
from symrmt.engine.kernels.weights import (
    check_weights, general_coefficients, kernel_given, random_head_kernel, signal_size,
)
from symrmt.errors import NotDerived, ParameterError
from symrmt.hermite import Nonlinearity
from symrmt.models.attention.geometry import as_geometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.params import check_c, check_gammas, check_noise, to_fraction
from symrmt.models.attention.sampling import draw_tokens, ridge_errors, softmax_kernel
from symrmt.models.attention.softmax_kernel import check_softmax_f
from symrmt.models.attention.theory import ridge_limit
from symrmt.parsing.limits import LIMITS

__all__ = ["NotDerived", "WeightsResult", "weights_limit", "heads_limit", "heads_simulate", "check_heads", "check_snr",
           "signal_vector", "signal_snr", "limit_with_weights", "simulate_with_weights", "MAX_HEADS"]

#: the most heads (each adds three random leaves to the engine's pencil)
MAX_HEADS = 8
#: the fixed point's unknowns allowed per pair of heads (H heads: about 40 H^2; the engine's general cap is LIMITS["unknowns"])
HEAD_UNKNOWNS = 60
#: the same with a signal (the error is then a quadratic form in the labels: about 255 H^2 unknowns)
HEAD_UNKNOWNS_SIGNAL = 300
#: the time limit of one solve for heads with a signal (seconds; the default of LIMITS["solve_seconds"] is lower)
HEAD_SIGNAL_SECONDS = 900




def signal_vector(mu, p=None):
    """``mu`` (an array, a ``.npy`` path through the file-trust rule, or ``None``) as a finite float64 vector
    of length ``p`` (when given), or ``None`` for no signal or an all-zero one.

    >>> signal_vector([0.0, 0.0]) is None, signal_vector([1.0, 0.0], 2).tolist()
    (True, [1.0, 0.0])
    """
    if mu is None:
        return None
    arr = load_array(mu, "mu", 1)
    if p is not None and arr.shape != (p,):
        raise ParameterError(f"mu: a vector of length p = {p} is needed, got shape {arr.shape}")
    return arr if np.any(arr) else None


def signal_snr(mu) -> Fraction:
    """``||mu||^2`` exactly (the float64 entries as exact binary fractions).

    >>> signal_snr([0.5, 0.5])
    Fraction(1, 2)
    """
    return sum((Fraction(float(x)) ** 2 for x in mu), Fraction(0))


def _gamma_values(gammas):
    return check_gammas(gammas)


def _frac_text(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _ea_expression(kernels, y=None):
    """``-gamma^2 d/dgamma tau((sum_h K_h^T X^T X K_h/n + gamma I)^{-1})`` = ``gamma^2 tau(Q^2)`` without a
    signal; with one (``y`` the labels), the quadratic form ``-gamma^2 d/dgamma y^T Q y/n``."""
    gram = None
    for K, X, m in kernels:
        term = K.T * X.T * X * K / m.size("n")
        gram = term if gram is None else gram + term
    g = m.param("gamma")
    Q = inv(gram + g * m.identity("n"))
    return -g ** 2 * diff(trace(Q) if y is None else y.T * Q * y / m.size("n"), g)


def _tokens(m, mu_decl):
    """``(X, y)``: ``X = Z`` and ``y = None`` without a signal, else ``X = mu*y.T + Z`` with the labels ``y``
    (``mu_decl(m)`` declares ``mu``)."""
    Z = m.gaussian("Z", "p", "n")
    if mu_decl is None:
        return Z, None
    mu = mu_decl(m)
    y = m.signs("y", "n")
    return mu * y.T + Z, y


def weights_limit(f, c, gammas, weights, mu=None, digits: int = 15, center: bool = False) -> dict:
    """``{"attention", "ridge", "p", "n", "stats"}``: ``E_A`` (the deterministic equivalent at
    ``p`` from ``weights``, ``n = p/c``) and ``E_RR`` (its limit at ``snr = ||mu||^2``) for each ``gamma``.

    ``weights``: a ``p x p`` array or a ``.npy`` path (file-trust rule, 32 MiB, 2048 rows); ``mu``: the
    signal, a vector of length ``p`` in the basis of ``W`` (array or ``.npy`` path; ``None`` or zero: no
    signal); ``stats``: ``s``, ``rho``, ``m = tr(W)/p``, ``a1``, ``b``, ``tau``, ``snr``.  Raises
    ``ParameterError`` (bad weights or ``mu``), ``SolverError`` (no certified value).

    >>> r = weights_limit("tanh", "1/2", [1], np.eye(4), digits=15)
    >>> r["attention"][0] > 0, int(r["n"])
    (True, 8)
    """

    W = check_weights(weights)
    p = W.shape[0]
    mu = signal_vector(mu, p)
    c_frac = check_c(c)
    gam = _gamma_values(gammas)
    m = Model()
    m.dim("p", "c*n")
    X, y = _tokens(m, None if mu is None else lambda m: m.vector_file("mu", "p", mu))
    Wm = m.matrix("W", "p", "p", W)
    K = kernel_given(f, X, Wm, model=m, digits=digits, center=center)
    expr = _ea_expression([(K, X, m)], y)
    att = []
    for g in gam:
        att.append(m.limit(expr, at={"c": _frac_text(c_frac), "gamma": _frac_text(g)}, digits=digits).value)
    snr = Fraction(0) if mu is None else signal_snr(mu)
    ridge = ridge_limit(c_frac, list(gam), snr, digits)
    k = general_coefficients(f, W, center, digits)
    stats = {key: k[key] for key in ("rho", "m", "a1", "b", "tau")}
    stats["s"] = k["s"]
    stats["snr"] = snr
    stats["signal_eps"] = 0.0 if mu is None else signal_size(W, mu, k["s"])
    return {"attention": att, "ridge": list(ridge), "p": p, "n": p / c_frac, "stats": stats}


def check_heads(heads, head_width):
    """``(H, D)``: ``1 <= H <= MAX_HEADS`` an integer, ``0 < D <= 64`` an exact fraction.

    Takes the number of heads and the head width ``d/p`` (a number or exact text); raises
    :class:`~symrmt.errors.ParameterError` when either is out of range (a bool is not a number of heads).

    >>> check_heads(4, "1/4")
    (4, Fraction(1, 4))
    >>> check_heads(True, 1)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: heads must be an integer in [1, 8], got True
    >>> check_heads(2, 0)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: head_width (d/p) must be in (0, 64], got 0
    """
    if isinstance(heads, bool) or not isinstance(heads, (int, np.integer)) or not 1 <= int(heads) <= MAX_HEADS:
        raise ParameterError(f"heads must be an integer in [1, {MAX_HEADS}], got {heads!r}")
    D = to_fraction(head_width, "head_width")
    if not 0 < D <= 64:
        raise ParameterError(f"head_width (d/p) must be in (0, 64], got {head_width}")
    return int(heads), D


#: the entry-wise kernel of one masked softmax head at the scale s_h = 1 of a random head
SOFTMAX_HEAD_F = "exp(t - 1/2) - 1"


def _head_f(f, attention):
    """``f`` for an entry-wise head, :data:`SOFTMAX_HEAD_F` for a softmax one (``f`` must then be absent)."""
    if attention == "entrywise":
        return f
    if attention != "softmax":
        raise ParameterError(f"attention must be 'entrywise' or 'softmax', got {attention!r}")

    check_softmax_f(f)
    return SOFTMAX_HEAD_F


def heads_limit(f, c, gammas, heads: int, head_width, digits: int = 15, center: bool = False,
                attention: str = "entrywise", snr=0) -> dict:
    """``{"attention", "ridge"}``: the limits of ``E_A`` with ``heads`` independent random heads
    ``W_h = Q_h K_h^T/sqrt(p d)``, ``d = head_width * p``, features concatenated, and of ``E_RR``,
    with a signal of strength ``snr = ||mu||^2`` (the heads' law is invariant under rotations, so the
    direction of ``mu`` does not enter).  Each head's kernel is
    :func:`symrmt.engine.kernels.weights.random_head_kernel`; ``attention="softmax"`` (``f`` then
    ``None``, ``snr`` 0 only): masked softmax heads, the entry-wise limit of :data:`SOFTMAX_HEAD_F`.

    >>> r = heads_limit("tanh", "1/2", [1], 1, 1)
    >>> 0 < r["attention"][0] < 1
    True
    """

    H, D = check_heads(heads, head_width)
    snr = check_snr(snr)
    if snr and attention == "softmax":
        raise NotDerived("a signal with softmax heads is not derived (the row normalization's spikes along 1 "
                         "then meet the signal's); entry-wise heads take snr")
    f = _head_f(f, attention)
    c_frac = check_c(c)
    gam = _gamma_values(gammas)
    m = Model()
    m.dim("p", "c*n")
    m.dim("d", "D*c*n")
    X, y = _tokens(m, None if not snr else lambda m: m.vector("mu", "p"))
    ks = []
    for h in range(1, H + 1):
        Q = m.gaussian(f"Q{h}", "p", "d")
        Kw = m.gaussian(f"K{h}", "p", "d")
        ks.append((random_head_kernel(f, X, Q, Kw, model=m, name=f"G{h}", digits=digits + 5, center=center), X, m))
    expr = _ea_expression(ks, y)
    at = {"c": _frac_text(c_frac), "D": _frac_text(D)}
    if snr:
        at["mu.mu"] = _frac_text(snr)
    saved = LIMITS["unknowns"], LIMITS["solve_seconds"]
    # the pencil couples every pair of heads: about 40 H^2 unknowns (255 H^2 with a signal)
    LIMITS["unknowns"] = max(saved[0], (HEAD_UNKNOWNS_SIGNAL if snr else HEAD_UNKNOWNS) * H * H)
    if snr:  # H = 4 with a signal: about 90 s of CPU a value
        LIMITS["solve_seconds"] = max(saved[1], HEAD_SIGNAL_SECONDS)
    try:
        att = [m.limit(expr, at={**at, "gamma": _frac_text(g)}, digits=digits).value for g in gam]
    finally:
        LIMITS["unknowns"], LIMITS["solve_seconds"] = saved
    return {"attention": att, "ridge": list(ridge_limit(c_frac, list(gam), snr, digits))}


def check_snr(snr) -> Fraction:
    """``snr = ||mu||^2`` as an exact fraction ``>= 0`` (``ParameterError`` otherwise).

    >>> check_snr("1/2")
    Fraction(1, 2)
    """
    s = to_fraction(snr, "snr")
    if s < 0:
        raise ParameterError(f"snr = ||mu||^2 must be >= 0, got {snr}")
    return s


def heads_simulate(f, n: int, c, gammas, heads: int, head_width, trials: int = 10, seed: int = 0,
                   noise: str = "gaussian", center: bool = False, attention: str = "entrywise", snr=0) -> dict:
    """Monte-Carlo ``{"attention": {"mean", "se"}, "ridge": {...}, "params"}`` of ``heads`` independent
    random heads (fresh ``Q_h, K_h`` each trial), ``K_h = f(X^T W_h X/sqrt(p))/sqrt(p)`` with zero
    diagonal, ``E_A = (gamma^2/n) y^T (sum_h K_h^T X^T X K_h/n + gamma I)^{-2} y``, ``X = mu y^T + Z`` with
    ``mu = sqrt(snr) e_1`` (the heads' law is invariant under rotations: only ``||mu||^2`` matters),
    ``p = round(c n)``, ``d = round(head_width p)``; ``f`` is applied centered as the theory takes it.
    ``attention="softmax"`` (``f`` then ``None``): ``K_h = (n/sqrt(p)) row-softmax(X^T W_h X/sqrt(p))``
    with ``S_ii = -inf``.

    >>> r = heads_simulate("tanh", 32, 1, [1.0], 2, "1/2", trials=2)
    >>> len(r["attention"]["mean"])
    1
    """

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
    snr = check_snr(snr)
    mu = np.zeros(p)
    mu[0] = math.sqrt(snr)
    gam = np.array([float(g) for g in _gamma_values(gammas)])
    _head_f(f, attention)
    softmax = attention == "softmax"
    if softmax:
        pass
    else:
        fn = Nonlinearity(f, center=center).numpy() if not isinstance(f, Nonlinearity) else f.numpy()
    rng = np.random.default_rng(seed)
    rows_a, rows_r = [], []
    rp = math.sqrt(p)
    for _ in range(trials):
        x, y = draw_tokens(rng, n, mu, noise)
        gram = x.T @ x
        P = np.zeros((n, n))
        for _h in range(H):
            Qh = rng.standard_normal((p, d))
            Kh = rng.standard_normal((p, d))
            if softmax:
                P += _softmax_head(softmax_kernel, x, Qh, Kh, p, d, gram)
                continue
            S = ((x.T @ Qh) @ (Kh.T @ x)) / (math.sqrt(p * d) * rp)
            k = np.asarray(fn(S), dtype=np.float64) / rp
            if not np.all(np.isfinite(k)):
                raise ParameterError("f returned non-finite values on the simulated kernel arguments")
            np.fill_diagonal(k, 0.0)
            P += k.T @ (gram @ k)
        P = 0.5 * (P + P.T) / n
        lam, u = np.linalg.eigh(P)
        proj2 = (u.T @ y) ** 2
        lam = np.clip(lam, 0.0, None)
        rows_a.append(((gam[:, None] / (lam[None, :] + gam[:, None])) ** 2 @ proj2) / n)
        rows_r.append(ridge_errors(x, y, gam, gram=gram))
    out = {}
    for key, rows in (("attention", rows_a), ("ridge", rows_r)):
        a = np.array(rows)
        out[key] = {"mean": a.mean(axis=0), "se": a.std(axis=0, ddof=1) / math.sqrt(trials)}
    out["params"] = {"n": n, "p": p, "d": d, "heads": H, "snr": str(snr), "trials": trials, "seed": seed, "noise": noise,
                     "attention": "softmax" if softmax else "entrywise"}
    return out


def _softmax_head(softmax_kernel, x, Qh, Kh, p, d, gram):
    """``K_h^T X^T X K_h`` of one masked softmax head ``W_h = Q_h K_h^T/sqrt(p d)``."""
    k = softmax_kernel(x, None, None, weights=(Qh @ Kh.T) / math.sqrt(p * d))
    return k.T @ (gram @ k)


class WeightsResult:
    """The values of :func:`symrmt.limit` / :func:`symrmt.simulate` with ``weights=`` or ``heads=``.

    ``gamma`` (exact fractions), ``attention`` and ``ridge`` (float64 arrays: the values, or the
    Monte-Carlo means), ``attention_mp``/``ridge_mp`` (mpmath values of a limit; ``None`` for a
    simulation), ``attention_se``/``ridge_se`` (standard errors of a simulation; ``None`` for a
    limit) and ``params`` (a dict).

    ``mp=False`` (a simulation) keeps ``attention``/``ridge`` as floats only.

    >>> import mpmath
    >>> from fractions import Fraction as F
    >>> r = WeightsResult([F(1), F(1, 10)], [mpmath.mpf("0.5"), mpmath.mpf("0.25")],
    ...                   [mpmath.mpf("0.4"), mpmath.mpf("0.2")], {"c": 0.5})
    >>> r, r.ridge.tolist()
    (WeightsResult(limit, gamma=['1', '1/10'], attention=[0.5, 0.25]), [0.4, 0.2])
    >>> s = WeightsResult([F(1)], [0.5], [0.4], {}, attention_se=[0.01], ridge_se=[0.02], mp=False)
    >>> s, s.attention_mp, s.attention_se.tolist()
    (WeightsResult(simulation, gamma=['1'], attention=[0.5]), None, [0.01])
    """

    def __init__(self, gamma, attention, ridge, params, attention_se=None, ridge_se=None, mp=True):
        self.gamma = tuple(gamma)
        self.attention_mp = tuple(attention) if mp else None
        self.ridge_mp = tuple(ridge) if mp else None
        self.attention = np.array([float(x) for x in attention])
        self.ridge = np.array([float(x) for x in ridge])
        self.attention_se = None if attention_se is None else np.asarray(attention_se, dtype=float)
        self.ridge_se = None if ridge_se is None else np.asarray(ridge_se, dtype=float)
        self.params = params

    def __repr__(self):
        kind = "limit" if self.attention_se is None else "simulation"
        return f"WeightsResult({kind}, gamma={[str(g) for g in self.gamma]}, attention={self.attention.tolist()})"


def _no_other(other, simulate: bool):
    diagonal = other[2]
    if diagonal != "zero":
        raise ParameterError("diagonal='keep' with weights=/heads= is not derived (the diagonal is zero)")
    if simulate:
        attention, workers = other[3], other[4]
        if workers != 1:
            raise ParameterError("workers > 1 is not available with weights=/heads=")
    else:
        prove, attention = other[3], other[4]
        if prove:
            raise ParameterError("prove is not available with weights=/heads=")
    if attention not in ("entrywise", "softmax"):
        raise ParameterError(f"attention must be 'entrywise' or 'softmax', got {attention!r}")
    return attention


def _signal(weights, mu, other) -> Fraction:
    """The heads' ``snr`` from ``mu=`` (its norm) or a geometry that holds only ``snr``; with ``weights=`` the
    signal is ``mu=`` alone (its direction in the basis of ``W`` matters), so a geometry is refused."""
    geometry, values = other[0], other[1]
    if geometry is None and not values:
        if weights is None and mu is not None:
            v = signal_vector(mu)
            return Fraction(0) if v is None else signal_snr(v)
        return Fraction(0)
    if weights is not None:
        raise ParameterError("weights= takes no geometry: the signal is mu= (a vector in the basis of W)")
    if mu is not None:
        raise ParameterError("heads=: give the signal as mu= or as snr, not both")
    g = as_geometry(geometry, **values)
    if getattr(g, "r", 1) != 1 or any(v != 0 for k, v in g.as_dict().items() if k != "snr"):
        raise ParameterError("heads= takes only snr = ||mu||^2 from a geometry (the heads are the weights)")
    return g.snr


def _softmax_for_heads_only(attention, weights):
    if attention == "softmax" and weights is not None:
        raise NotDerived("attention='softmax' with weights= (a given W) is not derived: the softmax's entry-wise "
                         "kernel exp(t - s^2/2) - 1 is the general-W kernel only once its diagonal and row "
                         "normalization are redone for that W; it is derived for random heads (heads=)")


def _which(weights, heads, head_width, mu):
    if weights is not None and heads is not None:
        raise ParameterError("give either weights= or heads=, not both")
    if weights is None and heads is None:
        raise ParameterError("mu= and head_width= need weights= or heads=")
    if heads is not None and head_width is None:
        raise ParameterError("heads= needs head_width= (d = head_width * p)")
    if weights is not None and head_width is not None:
        raise ParameterError("head_width= is for heads=")


def limit_with_weights(f, c, gamma, *, weights=None, mu=None, heads=None, head_width=None, digits=15,
                       center=False, other=(None, {}, "zero", False, "entrywise")) -> WeightsResult:
    """:func:`symrmt.limit` with ``weights=`` (:func:`weights_limit`) or ``heads=`` (:func:`heads_limit`).

    >>> r = limit_with_weights("tanh", "1/2", [1], heads=1, head_width=1)
    >>> bool(0 < r.attention[0] < r.ridge[0] + 1)
    True
    """
    attention = _no_other(other, simulate=False)
    _which(weights, heads, head_width, mu)
    _softmax_for_heads_only(attention, weights)
    gam = _gamma_values(gamma if isinstance(gamma, (list, tuple, np.ndarray)) else [gamma])
    if weights is not None:
        _signal(weights, mu, other)
        r = weights_limit(f, c, gam, weights, mu=mu, digits=digits, center=center)
        params = {"p": r["p"], "n": r["n"], "stats": r["stats"], "value": "deterministic equivalent at p"}
    else:
        snr = _signal(weights, mu, other)
        r = heads_limit(f, c, gam, heads, head_width, digits=digits, center=center, attention=attention, snr=snr)
        params = {"heads": heads, "head_width": head_width, "attention": attention, "snr": snr, "value": "limit"}
    return WeightsResult(gam, r["attention"], r["ridge"], params)


def simulate_with_weights(f, c, gamma, *, weights=None, mu=None, heads=None, head_width=None, n=512, trials=10,
                          seed=0, noise="gaussian", center=False,
                          other=(None, {}, "zero", "entrywise", 1)) -> WeightsResult:
    """:func:`symrmt.simulate` with ``weights=`` (the actual ``W``, ``n = round(p/c)``) or ``heads=``.

    >>> r = simulate_with_weights("tanh", "1/2", [1], weights=np.eye(8), trials=2)
    >>> r.params["n"], r.attention_se.shape
    (16, (1,))
    """

    attention = _no_other(other, simulate=True)
    _which(weights, heads, head_width, mu)
    _softmax_for_heads_only(attention, weights)
    gam = _gamma_values(gamma if isinstance(gamma, (list, tuple, np.ndarray)) else [gamma])
    c_frac = check_c(c)
    if weights is not None:
        _signal(weights, mu, other)
        W = check_weights(weights)
        p = W.shape[0]
        mu_arr = signal_vector(mu, p)
        n_w = round(p / c_frac)
        if round(c_frac * n_w) != p:
            raise ParameterError(f"no n gives round(c n) = p = {p} at c = {c}")
        if callable(f) and not isinstance(f, (str, Nonlinearity)) and not hasattr(f, "free_symbols"):
            raise ParameterError("f: with weights=, give f by name or as an expression ('tanh', 'exp(t) - 1'), "
                                 "not as a Python function: the simulation uses f's Hermite data (its centering "
                                 "and scale), which a callable does not carry")
        nl = f if isinstance(f, Nonlinearity) else Nonlinearity(f, center=center)
        raw = simulate(nl.numpy(), n_w, c_frac, list(gam), weights=W, mu=mu_arr, noise=noise, trials=trials,
                       seed=seed)
        params = {"n": n_w, "p": p, "trials": trials, "seed": seed, "noise": noise}
    else:
        raw = heads_simulate(f, n, c_frac, list(gam), heads, head_width, trials=trials, seed=seed, noise=noise,
                             center=center, attention=attention, snr=_signal(weights, mu, other))
        params = raw["params"]
    return WeightsResult(gam, raw["attention"]["mean"], raw["ridge"]["mean"], params,
                         raw["attention"]["se"], raw["ridge"]["se"], mp=False)
