r"""Figures: the limits (curves) against the Monte-Carlo simulation (points).

Every figure draws the theory of :mod:`symrmt.models.attention.theory` as lines and the
simulation of :func:`symrmt.models.attention.montecarlo.simulate` as points with error bars
(mean :math:`\pm 2` standard errors over independent trials), and is saved as
PNG and PDF.  matplotlib is needed (``pip install 'symrmt[plot]'``); it is
imported inside the functions, through the object-oriented API only (no
``pyplot``, no GUI backend).

Figures
-------
The paper, figure by figure (:mod:`symrmt.figures.paper`; file names as listed):

:func:`fig1_ridge`, :func:`fig2_attention`, :func:`fig3_nonlinear`, :func:`fig4_alignment`, :func:`fig7_weights`
    the paper's Figures 1-4 and 7 (Figure 1 at the paper's stated parameters; 2-4 reconstructed, the
    parameters said in each figure; 7 on the weights the theory covers, ``I +`` rank 2, since the paper's
    GPT-2 weights have no limit here, plus real MiniLM-L6 weights against their fit when installed);
:func:`mu0_claim`
    the ``mu = 0`` claim tested over ``(c, gamma)`` for several ``f``, with simulations on both sides;
:func:`a1_zero`
    ``a_1 = 0`` (centered cos): ``E_A`` flat against ``||mu||^2``, next to tanh, and against ``c``.

And the package's own:

:func:`ridge_error`
    ``E_RR`` against ``gamma`` (log axis), against ``c = p/n`` at fixed ``n``
    and against ``||mu||^2``.
:func:`random_inputs`
    ``E_A`` against ``E_RR`` on random inputs (random ``c``, ``gamma``,
    ``||mu||^2``, ``(w_K, w_Q)`` and ``f`` from the presets), with the line ``y = x``.
:func:`role_of_a1`
    ``E_A`` against ``gamma`` for tanh, ReLU, erf and cos, and ``E_A`` along
    the family ``f_a(t) = a t + sqrt(nu - a^2) (t^2 - 1)/sqrt(2)`` that moves
    ``a_1 = a`` from 0 to ``sqrt(nu)`` at fixed ``nu``.
:func:`alignment`
    ``E_A`` against the angle ``theta`` between ``w = w_K = w_Q`` and ``mu``.
:func:`phase_diagram`
    Where Attention beats ridge (``E_A < E_RR``), from the limits alone: over
    ``(c, ||mu||^2)`` with ``W = I``, and over ``(cos theta, ||mu||^2)``.
:func:`finite_size`
    ``E_A`` and ``E_RR`` against ``n`` (log axis) in the aligned high-SNR case: simulations, the
    limits and the finite-n prediction (:mod:`symrmt.figures.finite_size`).

Each function takes the output folder, ``full`` (paper sizes: ``n = 2048``,
``p = 512``, ``n = 4096`` for the sweep in ``p``) and ``progress``, plus keyword
overrides of the sizes (``n``, ``trials``, ``points``, ...) so that a tiny
version runs in a test; it returns the list of written paths.  :func:`main`
draws them all.

Quick mode (the default) uses ``n = 512`` (``n = 256`` for the sweep in ``p``)
and takes a few minutes on two cores (about 4.5 minutes on a busy two-core
machine); ``full=True`` takes much longer (tens of minutes or more: the
simulations at ``n = 2048`` with ``p`` up to ``4n`` dominate).

The simulations go through :mod:`symrmt.simulation.executor`, one batch of
trials per figure.  By default they run in this process.  ``workers=N`` starts a
local Dask cluster of ``N`` worker processes with one BLAS thread each (a script
then needs an ``if __name__ == "__main__":`` guard), and ``executor=`` passes one
already started (:func:`main` starts one for all figures, or connects to a
``scheduler``); on Dask the trials run while this process computes the theory.
``store=`` (a path to a trial store, :mod:`symrmt.simulation.store`) keeps every
trial as it finishes and reuses the stored ones, so a rerun after an
interruption continues where it stopped and a finished figure redraws without
simulating.

The values (sizes, grids, theory helpers, simulation jobs, the phase-diagram data) are computed in
:mod:`symrmt.figures.data`, which does not import matplotlib; :mod:`symrmt.figures.draw` lays them
out.  This module gathers the public names and draws them all (:func:`main`).
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
    """
    from symrmt.simulation.executor import make_executor

    matplotlib_figure()  # fail early, with the install hint
    names = list(FIGURES) if only is None else list(only)
    unknown = [k for k in names if k not in FIGURES]
    if unknown:
        raise ParameterError(f"unknown figure(s) {unknown}; choose from {list(FIGURES)}")
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
