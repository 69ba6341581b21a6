"""Eigenvalue histograms of a symmetric matrix expression at finite size (for ``symrmt density --simulate``).

The matrix is bound to numbers and sizes (:func:`symrmt.engine.bind`), drawn with the same generator as
the trace simulation (:func:`symrmt.simulation.trace_sim.draw_matrices`; trial ``j`` uses child ``j`` of
``np.random.SeedSequence(seed)``), evaluated by the trace simulation's evaluator, and its eigenvalues
(``numpy.linalg.eigvalsh``) are binned on ``[lo, hi]``.  Each bin's density is its count over
``N * width``; its error bar is the standard error of that density across the trials.  The trials run in
this process.
"""

from __future__ import annotations

import math

import numpy as np

from symrmt.params import ParameterError

#: the largest matrix side the histogram draws (the eigenvalue solve is O(N^3) per trial)
MAX_SIDE = 4096


def eigen_histogram(model, matrix, at, n, trials, seed, lo, hi, bins) -> dict:
    """``{"edges", "density", "se", "n", "trials", "seed", "outside"}`` of the eigenvalues (see the module)."""
    from symrmt.engine import bind
    from symrmt.simulation.trace_sim import TraceSimulationError, _Evaluator, draw_matrices, random_matrices

    if trials < 2:
        raise ParameterError("--trials: at least 2 (a standard error needs two)")
    node = model.expr(matrix)
    tree = bind(node, {k: v for k, v in at.items()}, int(n))
    side = tree.rows.count
    if side > MAX_SIDE:
        raise ParameterError(f"--n: the matrix would be {side} x {side}, above the limit of {MAX_SIDE} rows "
                             "(MAX_SIDE of symrmt.simulation.density_sim)")
    specs = random_matrices(tree)
    edges = np.linspace(float(lo), float(hi), int(bins) + 1)
    width = edges[1] - edges[0]
    rows, outside = [], 0.0
    for child in np.random.SeedSequence(int(seed)).spawn(int(trials)):
        mats = draw_matrices(specs, np.random.default_rng(child))
        a = _Evaluator(mats)(tree)
        a = np.diag(a) if a.ndim == 1 else np.asarray(a)
        if not np.all(np.isfinite(a)):
            raise TraceSimulationError("the matrix has non-finite entries in this draw")
        ev = np.linalg.eigvalsh((a + a.T) / 2)
        counts, _ = np.histogram(ev, bins=edges)
        rows.append(counts / (side * width))
        outside += float(np.sum((ev < edges[0]) | (ev > edges[-1]))) / side
    rows = np.array(rows)
    return {"edges": edges.tolist(), "density": rows.mean(axis=0).tolist(),
            "se": (rows.std(axis=0, ddof=1) / math.sqrt(trials)).tolist(), "n": int(n), "side": int(side),
            "trials": int(trials), "seed": int(seed), "outside": outside / trials}
