"""Eigenvalue histograms of a symmetric matrix expression at finite size (``symrmt density --simulate``).

The matrix is bound to numbers and sizes (:func:`symrmt.engine.bind`) and travels to the executor
(:mod:`symrmt.simulation.executor`) as the plain program of the trace simulation
(:func:`symrmt.engine.simulate.trials.program`, of ``trace(M)``: no engine or SymPy on a worker).
Trial ``j`` draws with child ``j`` of ``np.random.SeedSequence(seed)`` (as every trial of the package),
evaluates ``M`` by the trace simulation's evaluator, and returns the counts of its eigenvalues
(``numpy.linalg.eigvalsh``) in the bins of ``[lo, hi]``, and the number outside.  Trials run in this
process, on a local Dask cluster (``workers > 1``) or an existing one (``scheduler``), with the same
numbers on each, and a trial store (``store``) keeps them and reuses them: the store key is the trace
point's (the SHA-256 of the program) plus the bin edges.  Each bin's density is its count over
``N * width``; its error bar is the standard error of that density across the trials.
"""

from __future__ import annotations

import math

import numpy as np

from symrmt.engine.lang.matrices import Trace
from symrmt.engine.lang.tree import bind
from symrmt.engine.reduce.linearize import symmetric_rotation
from symrmt.engine.simulate.evaluate import Evaluator, TraceSimulationError, draw_matrices, random_matrices
from symrmt.engine.simulate.trials import from_program, trace_point
from symrmt.errors import ParameterError
from symrmt.simulation.executor import TrialSpec, make_executor, run_trials, trial_seed
from symrmt.simulation.store import TrialOutOfRange

#: the largest matrix side the histogram draws (the eigenvalue solve is O(N^3) per trial)
MAX_SIDE = 4096
#: version of the numerics of a histogram trial (bump when a seeded trial's counts change)
NUMERICS_VERSION = "1"


def _eigen_trial(params, context, seed, j):
    """Trial ``j``: ``[count of bin 0, ..., count of bin B-1, count outside]`` of the eigenvalues of ``M``."""
    tree = from_program(context["program"]).matrix
    mats = draw_matrices(random_matrices(tree), np.random.default_rng(trial_seed(seed, j)))
    a = Evaluator(mats)(tree)
    a = np.diag(a) if a.ndim == 1 else np.asarray(a)
    if not np.all(np.isfinite(a)):
        raise TraceSimulationError("the matrix has non-finite entries in this draw")
    ev = np.linalg.eigvalsh((a + a.T) / 2)
    edges = np.asarray(params["edges"], dtype=np.float64)
    counts, _ = np.histogram(ev, bins=edges)
    outside = float(np.sum((ev < edges[0]) | (ev > edges[-1])))
    return np.concatenate([counts.astype(np.float64), [outside]])


#: the histogram's trial kind for :func:`symrmt.simulation.executor.run_trials`
EIGEN_SPEC = TrialSpec("eigen-histogram", NUMERICS_VERSION, _eigen_trial,
                       width=lambda params: len(params["edges"]), bounds=(0.0, float(MAX_SIDE)))


def _check_counts(rows, side: int, store) -> None:
    """Every row (fresh or stored) is ``side`` eigenvalues counted: whole numbers >= 0 that sum to ``side``."""
    for j, row in enumerate(rows):
        if np.any(row != np.round(row)) or np.any(row < 0) or row.sum() != side:
            where = f" (stored in the trial store {getattr(store, 'path', store)})" if store is not None else ""
            raise TrialOutOfRange(f"trial {j} of an 'eigen-histogram' point holds counts that are not {side} "
                                  f"eigenvalues counted (whole numbers >= 0 summing to {side}; their sum is "
                                  f"{row.sum():g}){where}; the store was edited or damaged: use a new store file")


def eigen_histogram(model, matrix, at, n, trials, seed, lo, hi, bins, *, store=None, workers=1,
                    scheduler=None) -> dict:
    """``{"edges", "density", "se", "n", "side", "trials", "seed", "outside", "trials_computed",
    "trials_reused"}`` of the eigenvalues (see the module docstring): ``trials`` draws of ``matrix`` at size
    ``n`` and the values ``at``, seeded by ``seed``, binned in ``bins`` bins on ``[lo, hi]``; ``store``,
    ``workers`` and ``scheduler`` as for every simulation.  Raises :class:`ParameterError` for fewer than 2
    trials or a matrix above :data:`MAX_SIDE` rows.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> h = eigen_histogram(m, "G/sqrt(n)", {}, 8, 2, 0, -3, 3, 6)   # two 8 x 8 draws
    >>> width = h["edges"][1] - h["edges"][0]
    >>> len(h["density"]), h["trials"], round(sum(h["density"]) * width + h["outside"], 12)   # mass 1
    (6, 2, 1.0)
    """
    if trials < 2:
        raise ParameterError("--trials: at least 2 (a standard error needs two)")

    node = symmetric_rotation(model.expr(matrix))  # X Y -> Y X when that one is symmetric (same spectrum)
    tree = bind(Trace(node), {k: v for k, v in at.items()}, int(n))
    side = tree.matrix.rows.count
    if side > MAX_SIDE:
        raise ParameterError(f"--n: the matrix would be {side} x {side}, above the limit of {MAX_SIDE} rows "
                             "(MAX_SIDE of symrmt.engine.density.histogram)")
    edges = np.linspace(float(lo), float(hi), int(bins) + 1)
    width = edges[1] - edges[0]
    point = trace_point(tree, {"histogram_edges": [float(e) for e in edges], "n": int(n)})
    key = dict(point.key)
    run = dict(store=store, context=point.context, progress=None, desc="density histogram")
    params = {**key, "edges": [float(e) for e in edges]}
    parallel = workers > 1 and scheduler is None
    with make_executor(workers=workers if parallel else None, scheduler=scheduler) as ex:
        rows, info = run_trials(EIGEN_SPEC, params, int(trials), int(seed), executor=ex, **run)
    _check_counts(rows, side, store)
    dens = rows[:, :-1] / (side * width)
    return {"edges": edges.tolist(), "density": dens.mean(axis=0).tolist(),
            "se": (dens.std(axis=0, ddof=1) / math.sqrt(trials)).tolist(), "n": int(n), "side": int(side),
            "trials": int(trials), "seed": int(seed), "outside": float(rows[:, -1].mean() / side),
            "trials_computed": info.get("trials_computed"), "trials_reused": info.get("trials_reused")}
