"""The public calls of the ICL model: ``symrmt.icl`` (the limit, or with ``simulate=True`` the simulation)
and ``symrmt.icl_simulate`` (the simulation), taking the same parameters.

>>> print(icl(1, "1/2", 2, "1/10", digits=12))
1.47104594562
"""

from __future__ import annotations

from symrmt.errors import ParameterError
from symrmt.models.icl.simulation import icl_simulate as run
from symrmt.models.icl.theory import icl_limit

__all__ = ["icl", "icl_simulate"]


def icl(alpha, kappa, tau, rho, digits: int = 15, simulate: bool = False, d: int | None = None, trials: int = 10,
        seed: int = 0, *, workers: int = 1, scheduler=None, store=None, executor=None, progress=False):
    """The ICL error of ridgeless linear attention on in-context linear regression.

    Without ``simulate``: the ``d -> oo`` limit (:func:`symrmt.models.icl.theory.icl_limit`, an
    :class:`~symrmt.models.icl.results.ICLLimit` correct to ``digits`` digits).  With ``simulate=True``: the
    model at finite ``d`` over ``trials`` pretraining draws (:func:`icl_simulate`, an
    :class:`~symrmt.models.icl.results.ICLSimulation`; ``d`` required, ``digits`` unused; the keywords of
    :func:`icl_simulate` -- ``workers``, ``scheduler``, ``store``, ``executor``, ``progress`` -- pass through;
    without ``simulate`` they are refused).

    ``alpha, kappa, tau > 0``, ``rho >= 0`` (``ParameterError`` otherwise, and for ``tau = 1`` in the limit).

    >>> icl(1, 1, 1, 0)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: tau = 1 is the pole of the ridgeless limit ...
    """
    if simulate:
        if d is None:
            raise ParameterError("simulate=True needs the token dimension d")
        return icl_simulate(alpha, kappa, tau, rho, d=d, trials=trials, seed=seed, workers=workers,
                            scheduler=scheduler, store=store, executor=executor, progress=progress)
    if workers != 1 or scheduler is not None or store is not None or executor is not None:
        raise ParameterError("workers, scheduler, store and executor apply to the simulation: give simulate=True")
    return icl_limit(alpha, kappa, tau, rho, digits=digits)


def icl_simulate(alpha, kappa, tau, rho, d: int, trials: int = 10, seed: int = 0, *, workers: int = 1,
                 scheduler=None, store=None, executor=None, progress=False):
    """The ICL error of ridgeless linear attention simulated at finite token dimension ``d``.

    Takes the parameters of :func:`icl` (``alpha, kappa, tau, rho``), ``d >= 2``, ``trials >= 2``
    independent pretraining draws and a root ``seed``; keyword only, where the trials run: ``workers``
    (``> 1``: a local Dask cluster), ``scheduler`` (a running one), ``store`` (a trial store, reused and
    extended), ``executor``, ``progress`` (:func:`symrmt.models.icl.simulation.icl_simulate`).  Returns an
    :class:`~symrmt.models.icl.results.ICLSimulation` (``mean``, its standard error ``se``, the sizes).
    Raises ``ParameterError`` for bad parameters or sizes (the finite-``d`` pole ``n = d(d+1)``
    included), ``SolverError`` when a fit is singular.

    >>> r = icl_simulate(1, 1, "1/2", 0, d=4, trials=2, seed=0)
    >>> (r.d, r.ell, r.k, r.n, r.trials), r.se > 0
    ((4, 4, 4, 8, 2), True)
    """
    return run(alpha, kappa, tau, rho, d=d, trials=trials, seed=seed, workers=workers, scheduler=scheduler,
               store=store, executor=executor, progress=progress)
