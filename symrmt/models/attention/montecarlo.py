"""Monte-Carlo simulation of the finite model: the driver :func:`simulate` (NumPy only).

:func:`simulate` checks its arguments (symbolic parameters become floats here, at one boundary), builds the
trial point and runs its trials in-process or on Dask, with an optional trial store; it re-exports the
public names of :mod:`symrmt.models.attention.sampling`.  The model and its errors ``E_A``, ``E_RR`` are
those of ``docs/theory.md`` section 1.  It imports NumPy and the standard library, never SymPy or mpmath.

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

import pickle
from decimal import Decimal
from numbers import Integral

import numpy as np

from symrmt.errors import ParameterError
from symrmt.models.attention.params import check_c, check_int
from symrmt.models.attention.sampling import (  # re-exported: one trial's numerics
    attention_errors, draw_tokens, kernel_matrix, resolvent_errors, ridge_errors, simulate_trial, softmax_kernel,
    vectors_from_gram, weights_from_geometry,
)
from symrmt.models.attention.trials import SIMULATE_SPEC, simulate_point, summarize
from symrmt.simulation.executor import make_executor, run_trials
from symrmt.simulation.memory import TRIAL_BOOKKEEPING, check_memory_bytes
from symrmt.simulation.scheduler import check_workers

__all__ = [
    "simulate",
    "check_attention",
    "ATTENTIONS",
    "simulate_trial",
    "vectors_from_gram",
    "weights_from_geometry",
    "draw_tokens",
    "kernel_matrix",
    "softmax_kernel",
    "resolvent_errors",
    "attention_errors",
    "ridge_errors",
]


#: the attention kinds of the simulation: the paper's entry-wise kernel and the row softmax
ATTENTIONS = ("entrywise", "softmax")


def check_attention(attention) -> str:
    """``attention`` as one of :data:`ATTENTIONS`, or a one-line error naming the choices.

    Case and surrounding blanks are ignored; anything else raises :class:`~symrmt.errors.ParameterError`.

    >>> check_attention(" Softmax")
    'softmax'
    >>> check_attention("linear")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: attention must be one of ('entrywise', 'softmax'), got 'linear'
    """
    if not isinstance(attention, str) or attention.strip().lower() not in ATTENTIONS:
        raise ParameterError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    return attention.strip().lower()


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

    shown = p if p < 10**15 else f"{Decimal(p):.3g}"  # c = 1e400: not a 400-digit p
    check_memory_bytes(per_trial * parallel, f"simulate n={n}, p={shown}", f"{parallel} trial(s) at once",
                       "lower n or c")


def _numpy_f(f):
    """``f`` as a vectorized NumPy callable: a NumPy callable as is; a preset name, an expression
    string, a SymPy expression or a Nonlinearity (what :func:`symrmt.limit` takes) as the picklable
    :class:`symrmt.models.attention.kernel_f.SimulationF` of its text (it names itself in a trial store)."""
    if callable(f) and not hasattr(f, "free_symbols"):
        return f
    if not (isinstance(f, str) or hasattr(f, "free_symbols") or hasattr(f, "nu_mpf")):  # nu_mpf: a Nonlinearity
        return f  # refused below, with the message naming f
    # import-time cost: the Monte-Carlo trials load no SymPy or mpmath
    from symrmt.models.attention.kernel_f import as_nonlinearity, simulation_f

    return simulation_f(as_nonlinearity(f))


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
    weights : numpy.ndarray, optional
        An explicit ``p x p`` weight matrix ``W`` (e.g. from a trained model), used as is in
        ``K = f(X^T W X/sqrt(p))/sqrt(p)``; then ``geometry`` must be omitted and the
        signal is given by ``mu``.
    mu : numpy.ndarray, optional
        The signal vector (length ``p``), only together with ``weights`` (default 0).
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
    n_checked = check_int(n, "n", 2)  # the memory estimate comes before any array is allocated
    _check_memory(n_checked, round(check_c(c) * n_checked), weights is not None,
                  min(workers, trials) if isinstance(workers, Integral) and isinstance(trials, Integral) else 1)
    point = simulate_point(f, n, c, gammas, geometry=geometry, diagonal=diagonal, noise=noise, weights=weights,
                           mu=mu, f_key=f_key, need_key=store is not None, attention=attention, mask=mask)
    trials = check_int(trials, "trials", 2, " (a standard error needs at least two trials)")
    check_memory_bytes(trials * TRIAL_BOOKKEEPING, f"simulate {trials} trials", "results and seed sequences",
                       "lower trials")
    seed = check_int(seed, "seed", 0)
    workers = check_workers(check_int(workers, "workers", 1))
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
