r"""The ICL model at finite ``d``: :func:`icl_simulate`, its trials run by the package's executor.

One trial (:data:`symrmt.models.icl.trials.ICL_SPEC`, NumPy only) draws ``k = round(kappa d)`` tasks
``w_j ~ N(0, I_d)`` and ``n = round(tau d^2)`` pretraining contexts (each of ``ell = round(alpha d)`` examples and
a query, tokens ``x ~ N(0, I_d/d)``, a task drawn uniformly from the ``k``, label noise of variance ``rho``),
builds the ``d(d+1)`` features ``H = x_q [ (d/ell) sum y_i x_i^T, (1/ell) sum y_i^2 ]``, fits ``Gamma`` without
ridge (the minimum-norm interpolator through the ``n x n`` Gram matrix ``(X_q X_q^T) * (V V^T)`` when
``n < d(d+1)``, least squares through the normal equations when ``n > d(d+1)``).  Here the fitted ``Gamma`` is
scored by its exact test error on fresh contexts with fresh tasks (:func:`test_error`, the coefficients of
:func:`symrmt.models.icl.equations.test_error_coefficients`: no test sample is drawn, so only the pretraining
draw is random).  The trials go through :func:`symrmt.simulation.executor.run_trials`: in this process, on a
local Dask cluster (``workers``) or an existing one (``scheduler``), with an optional trial store (``store``).
At finite ``d`` the interpolation threshold is ``n = d(d+1)``, i.e. ``tau = 1 + 1/d``; ``n = d(d+1)`` itself
is refused.  SymPy is imported only to evaluate the coefficients, never by a trial.

>>> s = icl_simulate(1, 1, "0.5", 0, d=8, trials=3, seed=0)
>>> s.trials, s.d, s.ell, s.k, s.n
(3, 8, 8, 8, 32)
>>> 0 < s.mean < 3
True
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from symrmt.cache import cached
from symrmt.errors import ParameterError, SolverError
from symrmt.models.icl.params import check_icl
from symrmt.models.icl.results import ICLSimulation
from symrmt.models.icl.trials import CHUNK, ICL_SPEC, MAX_ENTRIES, readout_statistics, train_readout
from symrmt.simulation.executor import make_executor, run_trials
from symrmt.simulation.scheduler import check_workers

__all__ = ["ICLSimulation", "icl_simulate", "train_readout", "test_error", "error_of_statistics", "MAX_ENTRIES"]


def test_error(gamma, ell: int, rho) -> float:
    """The exact ICL error of ``gamma`` (``d x (d+1)``) on fresh contexts of ``ell`` examples with fresh tasks.

    >>> test_error(np.zeros((3, 4)), 3, "1/2")  # the zero readout: the label variance 1 + rho
    1.5
    """
    return error_of_statistics(readout_statistics(gamma), gamma.shape[0], ell, rho)


def error_of_statistics(stats, d: int, ell: int, rho) -> float:
    r"""The exact ICL error of a readout from its statistics ``stats = (tr G, |G|_F^2, |g|^2)``
    (:func:`symrmt.models.icl.trials.readout_statistics`): the expression
    :func:`symrmt.models.icl.equations.test_error_expression` at ``d``, ``ell``, ``rho``, linear in ``stats``.

    >>> error_of_statistics([0.0, 0.0, 0.0], 3, 3, "1/2")
    1.5
    """
    const, *slopes = _coefficients(d, ell, Fraction(rho))
    return float(const + sum(a * x for a, x in zip(slopes, stats)))


@cached(maxsize=64)
def _coefficients(d: int, ell: int, rho: Fraction):
    """The constant and the three slopes of :func:`symrmt.models.icl.equations.test_error_expression` in the
    readout's statistics, as floats (read from the one formula)."""
    # import-time cost: the formula is SymPy, loaded when a simulation is scored (never by a trial)
    import sympy as sp

    from symrmt.models.icl import equations as icl_equations

    stats = icl_equations.READOUT_STATISTICS
    e = sp.expand(icl_equations.test_error_expression(d, ell, sp.Rational(rho.numerator, rho.denominator)))
    const = e.subs({x: 0 for x in stats})
    return (float(const),) + tuple(float(e.coeff(x)) for x in stats)


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ParameterError(f"{name} must be an integer >= {low}, got {value!r}")
    return value


def icl_simulate(alpha, kappa, tau, rho, d: int, trials: int = 10, seed: int = 0, *, workers: int = 1,
                 scheduler=None, store=None, executor=None, progress=False) -> ICLSimulation:
    """Monte-Carlo ICL error of ridgeless linear attention at finite ``d``.

    Takes the parameters of :func:`symrmt.models.icl.theory.icl_limit` (``tau = 1`` allowed: the finite-``d``
    pole is ``n = d(d+1)``), the token dimension ``d >= 2``, ``trials >= 2`` independent pretraining draws
    and a root ``seed`` (trial ``t`` draws from child ``t`` of ``numpy.random.SeedSequence(seed)``,
    :func:`symrmt.simulation.executor.trial_seed`, so its numbers do not depend on where it runs).  Keyword
    only, as for :func:`symrmt.simulate`: ``workers`` (``> 1``: a local Dask cluster of that many processes),
    ``scheduler`` (a running Dask scheduler's address), ``store`` (a trial store: stored trials of the same
    point, seed and numerics version are reused), ``executor`` (an already started one, instead of
    ``workers``/``scheduler``), ``progress`` (``None``: a bar when on a terminal or longer than 2 s).

    Returns an :class:`ICLSimulation`.  Raises ``ParameterError`` for bad parameters, sizes that round to 0,
    ``n = d(d+1)`` or more than :data:`~symrmt.models.icl.trials.MAX_ENTRIES` feature entries;
    ``SolverError`` if a fit is singular or a test error is not finite.

    >>> icl_simulate(1, 1, "4/3", 0, d=3, trials=2)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: n = round(tau d^2) = 12 contexts: the finite-d pole n = 12 = d(d+1) ...
    """
    a, k, t, r = check_icl(alpha, kappa, tau, rho, pole=False)
    for name, value, low in (("d", d, 2), ("trials", trials, 2), ("seed", seed, 0)):
        _check_int(name, value, low)
    workers = check_workers(_check_int("workers", workers, 1))
    if progress not in (None, True, False):
        raise ParameterError(f"progress must be None, True or False, got {progress!r}")
    ell, ntasks, n = round(a * d), round(k * d), round(t * d * d)
    for name, value, rule in (("ell", ell, "round(alpha d)"), ("k", ntasks, "round(kappa d)"),
                              ("n", n, "round(tau d^2)")):
        if value < 1:
            raise ParameterError(f"{name} = {rule} = {value}: give a larger d or {name} parameter")
    p = d * (d + 1)
    if n == p:
        raise ParameterError(f"n = round(tau d^2) = {n} contexts: the finite-d pole n = {p} = d(d+1) "
                             "(as many contexts as features); change tau or d")
    if n * p > MAX_ENTRIES or ell * d * min(n, CHUNK) > MAX_ENTRIES:
        raise ParameterError(f"d = {d}, n = {n}, ell = {ell}: above the size limit MAX_ENTRIES = {MAX_ENTRIES} "
                             "(entries of the feature matrix); give a smaller d or tau")
    key = {"alpha": str(a), "kappa": str(k), "tau": str(t), "rho": str(r), "d": d, "ell": ell, "k": ntasks, "n": n}
    desc = f"icl d={d} n={n}"
    if executor is not None:
        rows, info = run_trials(ICL_SPEC, key, trials, seed, store=store, executor=executor, progress=progress,
                                desc=desc)
    else:
        parallel = workers > 1 or scheduler is not None
        with make_executor(workers=workers if parallel and scheduler is None else None, scheduler=scheduler) as ex:
            rows, info = run_trials(ICL_SPEC, key, trials, seed, store=store, executor=ex, progress=progress,
                                    desc=desc)
    errors = []
    for trial, stats in enumerate(rows):
        e = error_of_statistics(stats, d, ell, r)
        if not np.isfinite(e):
            raise SolverError(f"trial {trial}: the test error is not finite ({e})")
        errors.append(e)
    arr = np.array(errors)
    return ICLSimulation(float(arr.mean()), float(arr.std(ddof=1) / np.sqrt(trials)), trials, d, ell, ntasks, n,
                         a, k, t, r, seed, tuple(errors), trials_computed=info["trials_computed"],
                         trials_reused=info["trials_reused"], trials_stale=info["trials_stale"])
