"""In-context regression by linear attention (Lu, Letey, Zavatone-Veth, Maiti, Pehlevan, PNAS 2025; ``docs/icl.md``).

Its rooms: :mod:`~symrmt.models.icl.equations` (SymPy: the task-diversity resolvent, the ridgeless limit
of the ICL error -- the paper's Result 1 --, the exact finite-``d`` test error of a readout, and the pieces of
the package's own derivation), :mod:`~symrmt.models.icl.theory` (:func:`icl_limit`: mpmath at any
precision, the resolvents from the trace engine), :mod:`~symrmt.models.icl.trials` (one Monte-Carlo trial,
NumPy only), :mod:`~symrmt.models.icl.simulation` (:func:`icl_simulate`: the model at finite ``d``, its
trials through :mod:`symrmt.simulation`) and :mod:`~symrmt.models.icl.results` (:class:`ICLLimit`,
:class:`ICLSimulation`, table results), with the public call :func:`icl` in :mod:`~symrmt.models.icl.api`.
The names below load when first asked for, so that a trial worker importing
:mod:`~symrmt.models.icl.trials` loads neither SymPy nor mpmath.
"""

from importlib import import_module

_LAZY = {
    "icl": "symrmt.models.icl.api",
    "icl_simulate": "symrmt.models.icl.api",
    "icl_limit": "symrmt.models.icl.theory",
    "ICLLimit": "symrmt.models.icl.results",
    "ICLSimulation": "symrmt.models.icl.results",
    "POLE_REASON": "symrmt.models.icl.params",
}

__all__ = ["icl", "icl_limit", "icl_simulate", "ICLLimit", "ICLSimulation", "POLE_REASON"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # import-time cost: the model's SymPy and engine load when one of its names is first asked for
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
