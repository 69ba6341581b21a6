r"""One trial of the ICL model at finite ``d`` (NumPy only): :data:`ICL_SPEC`, for the executor and the trial store.

A trial draws ``k`` tasks ``w_j ~ N(0, I_d)`` and ``n`` pretraining contexts (each of ``ell`` examples and a
query, tokens ``x ~ N(0, I_d/d)``, a task drawn uniformly from the ``k``, label noise of variance ``rho``),
fits the ridgeless readout ``Gamma = [G, g]`` (:func:`train_readout`) and returns the three numbers its exact
test error depends on, ``(tr G, |G|_F^2, |g|^2)`` (:func:`readout_statistics`); the driver
(:mod:`symrmt.models.icl.simulation`) turns them into the error with the coefficients of
:func:`symrmt.models.icl.equations.test_error_coefficients`.  Trial ``j`` draws from
``np.random.default_rng(trial_seed(seed, j))``, so its numbers depend on the parameters, ``seed`` and ``j``
only.  This module loads neither SymPy nor mpmath (a Dask worker imports it).

>>> from symrmt.simulation.executor import run_trials
>>> key = {"alpha": "1", "kappa": "1", "tau": "1/2", "rho": "0", "d": 4, "ell": 4, "k": 4, "n": 8}
>>> rows, info = run_trials(ICL_SPEC, key, 2, seed=0)
>>> rows.shape, info["trials_computed"]
((2, 3), 2)
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from symrmt.errors import SolverError
from symrmt.simulation.executor import TrialSpec, trial_seed

__all__ = ["ICL_SPEC", "NUMERICS_VERSION", "MAX_ENTRIES", "CHUNK", "draw_contexts", "train_readout",
           "readout_statistics"]

#: Version of the sampling numerics of :data:`ICL_SPEC`; the trial store keys its rows by it.  Bump it whenever
#: a change of the code below changes the numbers a seeded trial produces (stored rows of the old version are
#: then reported as stale and never reused).
NUMERICS_VERSION = "1"

#: the largest ``n d(d+1)`` (entries of the feature matrix above the pole; 40e6 doubles = 320 MB)
MAX_ENTRIES = 40_000_000
#: contexts drawn at once
CHUNK = 1024


def draw_contexts(rng, tasks, n: int, ell: int, rho):
    """Queries ``x_q`` (``n x d``), in-context vectors ``v = [(d/ell) sum y_i x_i, (1/ell) sum y_i^2]``
    (``n x (d+1)``) and query labels (``n``) of ``n`` contexts whose tasks are drawn uniformly from the rows of
    ``tasks`` (``k x d``).

    >>> xq, v, yq = draw_contexts(np.random.default_rng(0), np.ones((2, 3)), 5, 4, 0.5)
    >>> xq.shape, v.shape, yq.shape
    ((5, 3), (5, 4), (5,))
    """
    k, d = tasks.shape
    xq, v, yq = np.empty((n, d)), np.empty((n, d + 1)), np.empty(n)
    sd = np.sqrt(float(rho))
    for s in range(0, n, CHUNK):
        c = min(CHUNK, n - s)
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
    ``n > d(d+1)``: least squares (normal equations).  Raises ``SolverError`` if the system is singular.

    >>> rng = np.random.default_rng(1)
    >>> xq, v = rng.standard_normal((3, 2)), rng.standard_normal((3, 3))
    >>> gamma = train_readout(xq, v, np.ones(3))  # 3 contexts < 6 features: interpolates
    >>> bool(np.allclose(np.einsum("nd,de,ne->n", xq, gamma, v), 1))
    True
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


def readout_statistics(gamma):
    """``(tr G, |G|_F^2, |g|^2)`` of a readout ``gamma = [G, g]`` (``d x (d+1)``): what its exact test error
    (:func:`symrmt.models.icl.simulation.test_error`) depends on, as a float64 array.

    >>> readout_statistics(np.array([[1.0, 2.0, 3.0], [0.0, 4.0, 5.0]])).tolist()
    [5.0, 21.0, 34.0]
    """
    d = gamma.shape[0]
    g, h = gamma[:, :d], gamma[:, d]
    return np.array([np.trace(g), np.sum(g * g), np.dot(h, h)], dtype=np.float64)


def _icl_trial(params, context, seed, j):
    """Trial ``j`` of an ICL point: :func:`readout_statistics` of the readout fitted to a fresh pretraining draw."""
    d, ell, k, n = (int(params[name]) for name in ("d", "ell", "k", "n"))
    rng = np.random.default_rng(trial_seed(seed, j))
    tasks = rng.standard_normal((k, d))
    return readout_statistics(train_readout(*draw_contexts(rng, tasks, n, ell, Fraction(params["rho"]))))


def _width(params) -> int:
    return 3


#: the ICL trial: ``(tr G, |G|_F^2, |g|^2)`` of the readout fitted to one pretraining draw
ICL_SPEC = TrialSpec("icl", NUMERICS_VERSION, _icl_trial, width=_width)
