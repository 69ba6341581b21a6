r"""Figures: the limits (lines) against the Monte-Carlo simulation (points, mean ± 2 standard errors),
saved as PNG and PDF (matplotlib, ``pip install 'symrmt[plot]'``, without ``pyplot``).

The paper's figures (:func:`fig1_ridge` ... :func:`fig7_weights`, :func:`mu0_claim`, :func:`a1_zero`) and
the package's own (:func:`ridge_error`, :func:`random_inputs`, :func:`role_of_a1`, :func:`alignment`,
:func:`phase_diagram`, :func:`finite_size`).  Each takes the output folder, ``full`` (the paper's sizes;
the default is a quick version), ``progress``, size overrides (``n``, ``trials``, ``points``) and the
simulation's ``workers``/``executor``/``store``, and returns the paths it wrote; :func:`main` draws them all.
"""

from __future__ import annotations

import sys
import time

from symrmt.errors import ParameterError
from symrmt.figures.data import attention_over_geometries, phase_diagram_data, simulate_ridge
from symrmt.figures.draw import alignment, matplotlib_figure, phase_diagram, random_inputs, ridge_error, role_of_a1
from symrmt.figures.paper import (
    PAPER_FIGURES, a1_zero, fig1_ridge, fig2_attention, fig3_nonlinear, fig4_alignment, fig7_weights, mu0_claim,
)
from symrmt.figures.finite_size import finite_size
from symrmt.simulation.executor import make_executor

__all__ = [
    "FIGURES",
    "PAPER_FIGURES",
    "a1_zero",
    "fig1_ridge",
    "fig2_attention",
    "fig3_nonlinear",
    "fig4_alignment",
    "fig7_weights",
    "mu0_claim",
    "alignment",
    "attention_over_geometries",
    "finite_size",
    "phase_diagram_data",
    "main",
    "phase_diagram",
    "random_inputs",
    "ridge_error",
    "role_of_a1",
    "simulate_ridge",
]


#: name -> figure function, in drawing order: the paper's figures first (symrmt.figures.paper), then the others
FIGURES = {
    **PAPER_FIGURES,
    "ridge_error": ridge_error,
    "random_inputs": random_inputs,
    "role_of_a1": role_of_a1,
    "alignment": alignment,
    "phase_diagram": phase_diagram,
    "finite_size": finite_size,
}


def main(out, full: bool = False, progress: bool = True, *, store=None, workers=None, scheduler=None,
         only=None) -> list[str]:
    """Draw every figure into ``out`` (PNG and PDF); return the written paths.

    ``full=True`` uses the paper's sizes (``n = 2048``, ``p = 512``; ``n = 4096``
    for the sweep in ``p``) and finer grids, and takes far longer.  With
    ``progress`` each figure shows a progress bar over its theory steps and its
    trials (on a terminal, or once it has run for a few seconds) and a line with
    its time on stderr.  ``store`` (a trial-store path) keeps every finished
    trial, so an interrupted run continues where it stopped; ``workers`` (a
    local Dask cluster) or ``scheduler`` (an existing one) run the trials, one
    cluster for all figures.  ``only``: a list of figure names (default all).

    Raises :class:`~symrmt.errors.ParameterError` for an unknown name (before any work),
    :class:`~symrmt.errors.ExtraUnavailable` without matplotlib, and the solver's errors:

    >>> main("out", only=["fig1_ridge", "fig5"])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: unknown figure(s) ['fig5']; choose from ['fig1_ridge', ...]
    """
    names = list(FIGURES) if only is None else list(only)
    unknown = [k for k in names if k not in FIGURES]
    if unknown:
        raise ParameterError(f"unknown figure(s) {unknown}; choose from {list(FIGURES)}")
    matplotlib_figure()  # fail early, with the install hint
    paths = []
    with make_executor(workers=workers, scheduler=scheduler) as ex:
        for name in names:
            fn = FIGURES[name]
            t0 = time.monotonic()
            kw = {} if name == "phase_diagram" else {"store": store, "executor": ex}
            written = fn(out, full=full, progress=progress, **kw)
            paths.extend(written)
            if progress:
                print(f"figures: {name} written in {time.monotonic() - t0:.1f} s: {', '.join(written)}",
                      file=sys.stderr)
    return paths
