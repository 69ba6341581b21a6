r"""The ICL model at finite ``d`` (NumPy only): :func:`icl_simulate`.

One trial draws ``k = round(kappa d)`` tasks ``w_j ~ N(0, I_d)`` and ``n = round(tau d^2)`` pretraining
contexts (each of ``ell = round(alpha d)`` examples and a query, tokens ``x ~ N(0, I_d/d)``, a task drawn
uniformly from the ``k``, label noise of variance ``rho``), builds the ``d(d+1)`` features
``H = x_q [ (d/ell) sum y_i x_i^T, (1/ell) sum y_i^2 ]``, fits ``Gamma`` without ridge (the minimum-norm
interpolator through the ``n x n`` Gram matrix ``(X_q X_q^T) * (V V^T)`` when ``n < d(d+1)``, least squares
through the normal equations when ``n > d(d+1)``) and scores it by its exact test error on fresh contexts
with fresh tasks (:func:`symrmt.models.icl.equations.test_error_coefficients`: no test sample is drawn, so
only the pretraining draw is random).  At finite ``d`` the interpolation threshold is ``n = d(d+1)``, i.e.
``tau = 1 + 1/d``; ``n = d(d+1)`` itself is refused.

>>> s = icl_simulate(1, 1, "0.5", 0, d=8, trials=3, seed=0)
>>> s.trials, s.d, s.ell, s.k, s.n
(3, 8, 8, 8, 32)
>>> 0 < s.mean < 3
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from symrmt.cache import cached

import numpy as np
import sympy as sp

from symrmt.errors import ParameterError, SolverError
from symrmt.models.icl import equations as icl_equations
from symrmt.models.icl.params import check_icl

__all__ = ["ICLSimulation", "icl_simulate", "train_readout", "test_error", "MAX_ENTRIES"]

#: the largest ``n d(d+1)`` (entries of the feature matrix above the pole; 40e6 doubles = 320 MB)
MAX_ENTRIES = 40_000_000
#: contexts drawn at once
_CHUNK = 1024


@dataclass(frozen=True)
class ICLSimulation:
    """Monte-Carlo ICL error: ``mean`` and ``se`` (standard error) over ``trials`` pretraining draws.

    Also ``errors`` (one exact test error per trial), the sizes ``d, ell, k, n`` (and ``p = d(d+1)``
    features), ``alpha, kappa, tau, rho`` (exact) and ``seed``.
    """

    mean: float
    se: float
    trials: int
    d: int
    ell: int
    k: int
    n: int
    alpha: Fraction
    kappa: Fraction
    tau: Fraction
    rho: Fraction
    seed: int
    errors: tuple = field(repr=False)

    @property
    def p(self) -> int:
        """The number of features ``d(d+1)`` (the finite-``d`` pole is ``n = p``)."""
        return self.d * (self.d + 1)

    def to_dict(self) -> dict:
        """The JSON record: ``error`` (the mean), ``se``, ``trials``, sizes, parameters, ``errors``."""
        return {"error": self.mean, "se": self.se, "trials": self.trials, "d": self.d, "ell": self.ell,
                "k": self.k, "n": self.n, "features": self.p, "alpha": str(self.alpha), "kappa": str(self.kappa),
                "tau": str(self.tau), "rho": str(self.rho), "seed": self.seed, "errors": list(self.errors)}


def _contexts(rng, tasks, n, ell, rho):
    """Queries ``x_q`` (``n x d``), in-context vectors ``v`` (``n x (d+1)``) and query labels (``n``)."""
    k, d = tasks.shape
    xq, v, yq = np.empty((n, d)), np.empty((n, d + 1)), np.empty(n)
    sd = np.sqrt(float(rho))
    for s in range(0, n, _CHUNK):
        c = min(_CHUNK, n - s)
        w = tasks[rng.integers(0, k, size=c)]
        x = rng.standard_normal((c, ell + 1, d)) / np.sqrt(d)
        y = np.einsum("cid,cd->ci", x, w) + sd * rng.standard_normal((c, ell + 1))
        xq[s:s + c] = x[:, ell]
        yq[s:s + c] = y[:, ell]
        v[s:s + c, :d] = (d / ell) * np.einsum("ci,cid->cd", y[:, :ell], x[:, :ell])
        v[s:s + c, d] = np.sum(y[:, :ell] ** 2, axis=1) / ell
    return xq, v, yq


def train_readout(xq, v, yq):
    """The ridgeless readout ``Gamma`` (``d x (d+1)``) fitted to ``y_q ~ x_q^T Gamma v``.

    ``n < d(d+1)``: the minimum-norm interpolator ``Gamma = X_q^T diag(c) V``, ``((X_q X_q^T) * (V V^T)) c = y``;
    ``n > d(d+1)``: least squares (normal equations).  ``SolverError`` if the system is singular.
    """
    n, d = xq.shape
    p = d * (d + 1)
    try:
        if n < p:
            gram = (xq @ xq.T) * (v @ v.T)
            c = np.linalg.solve(gram, yq)
            return xq.T @ (c[:, None] * v)
        h = (xq[:, :, None] * v[:, None, :]).reshape(n, p)
        return np.linalg.solve(h.T @ h, h.T @ yq).reshape(d, d + 1)
    except np.linalg.LinAlgError as exc:
        raise SolverError(f"the ridgeless fit is singular at n = {n}, d(d+1) = {p} ({exc})") from None


def test_error(gamma, ell: int, rho) -> float:
    """The exact ICL error of ``gamma`` (``d x (d+1)``) on fresh contexts of ``ell`` examples with fresh tasks."""
    d = gamma.shape[0]
    b1, b2 = _coefficients(d, ell, Fraction(rho))
    g, h = gamma[:, :d], gamma[:, d]
    return float(float(rho) + 1 - 2 * np.trace(g) / d + (b1 * np.sum(g * g) + b2 * np.dot(h, h)) / d)


@cached(maxsize=64)
def _coefficients(d: int, ell: int, rho: Fraction):
    """``(b1, b2)`` of :func:`symrmt.models.icl.equations.test_error_coefficients` as floats (the one formula)."""
    return tuple(float(b) for b in icl_equations.test_error_coefficients(d, ell, sp.Rational(rho.numerator, rho.denominator)))


def icl_simulate(alpha, kappa, tau, rho, d: int, trials: int = 10, seed: int = 0) -> ICLSimulation:
    """Monte-Carlo ICL error of ridgeless linear attention at finite ``d``.

    Takes the parameters of :func:`symrmt.models.icl.theory.icl_limit` (``tau = 1`` allowed: the finite-``d``
    pole is ``n = d(d+1)``), the token dimension ``d >= 2``, ``trials >= 2`` independent pretraining draws
    and a ``seed`` (trial ``t`` uses ``numpy.random.default_rng([seed, t])``).  Returns an
    :class:`ICLSimulation`.  Raises ``ParameterError`` for bad parameters, sizes that round to 0, ``n = d(d+1)``
    or more than :data:`MAX_ENTRIES` feature entries; ``SolverError`` if a fit is singular.

    >>> icl_simulate(1, 1, "4/3", 0, d=3, trials=2)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: n = round(tau d^2) = 12 contexts: the finite-d pole n = 12 = d(d+1) ...
    """
    a, k, t, r = check_icl(alpha, kappa, tau, rho, pole=False)
    for name, value, low in (("d", d, 2), ("trials", trials, 2), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ParameterError(f"{name} must be an integer >= {low}, got {value!r}")
    ell, ntasks, n = round(a * d), round(k * d), round(t * d * d)
    for name, value, rule in (("ell", ell, "round(alpha d)"), ("k", ntasks, "round(kappa d)"),
                              ("n", n, "round(tau d^2)")):
        if value < 1:
            raise ParameterError(f"{name} = {rule} = {value}: give a larger d or {name} parameter")
    p = d * (d + 1)
    if n == p:
        raise ParameterError(f"n = round(tau d^2) = {n} contexts: the finite-d pole n = {p} = d(d+1) "
                             "(as many contexts as features); change tau or d")
    if n * p > MAX_ENTRIES or ell * d * min(n, _CHUNK) > MAX_ENTRIES:
        raise ParameterError(f"d = {d}, n = {n}, ell = {ell}: above the size limit MAX_ENTRIES = {MAX_ENTRIES} "
                             "(entries of the feature matrix); give a smaller d or tau")
    errors = []
    for trial in range(trials):
        rng = np.random.default_rng([seed, trial])
        tasks = rng.standard_normal((ntasks, d))
        gamma = train_readout(*_contexts(rng, tasks, n, ell, r))
        e = test_error(gamma, ell, r)
        if not np.isfinite(e):
            raise SolverError(f"trial {trial}: the test error is not finite ({e})")
        errors.append(e)
    arr = np.array(errors)
    return ICLSimulation(float(arr.mean()), float(arr.std(ddof=1) / np.sqrt(trials)), trials, d, ell, ntasks, n,
                         a, k, t, r, seed, tuple(errors))
