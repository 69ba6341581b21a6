"""symrmt: exact, high-precision random-matrix limits for nonlinear Attention.

The public API: :func:`limit`, :func:`simulate`, :func:`sweep` and :func:`crossings` (the paper's model:
certified limits of ``E_A`` and ``E_RR``, Monte-Carlo, grids, the points where they tie) with their
results; :class:`Geometry`, :class:`LowRankGeometry`, :class:`Nonlinearity` (the inputs); :func:`check`
(a formula of your own against the package); :func:`icl`, :func:`icl_simulate` (in-context regression);
:func:`latex`; and the errors, all under :class:`symrmt.errors.SymrmtError`.  ``import symrmt`` imports
neither SymPy, mpmath nor NumPy: each name is loaded on first use.

>>> import symrmt
>>> sorted(symrmt.__all__)[:3]
['BranchError', 'CheckReport', 'Comparison']
"""

from importlib import import_module

__version__ = "0.1.0"

#: public name -> module that defines it (imported on first access)
_LAZY = {
    "limit": "symrmt.models.attention.api",
    "simulate": "symrmt.models.attention.api",
    "sweep": "symrmt.models.attention.sweeps",
    "crossings": "symrmt.models.attention.boundary",
    "LimitResult": "symrmt.results",
    "SimulationResult": "symrmt.results",
    "Comparison": "symrmt.comparison",
    "SweepResult": "symrmt.models.attention.grid_results",
    "SimulationSweep": "symrmt.models.attention.sim_sweep",
    "SweepComparison": "symrmt.models.attention.sim_sweep",
    "CrossingsResult": "symrmt.models.attention.grid_results",
    "Geometry": "symrmt.models.attention.geometry",
    "LowRankGeometry": "symrmt.models.attention.geometry",
    "ParameterError": "symrmt.errors",
    "Nonlinearity": "symrmt.hermite",
    "NotExact": "symrmt.hermite",
    "QuadratureError": "symrmt.hermite",
    "SolverError": "symrmt.errors",
    "ConvergenceError": "symrmt.errors",
    "BranchError": "symrmt.errors",
    "PrecisionError": "symrmt.errors",
    "check": "symrmt.check",
    "icl": "symrmt.models.icl.api",
    "icl_simulate": "symrmt.models.icl.api",
    "CheckReport": "symrmt.check",
}

#: public names that are modules (``symrmt.latex`` is callable: :mod:`symrmt.latex`)
_MODULES = {"latex": "symrmt.latex"}

__all__ = [
    "BranchError", "CheckReport", "Comparison", "ConvergenceError", "CrossingsResult", "Geometry", "LimitResult",
    "LowRankGeometry", "Nonlinearity", "NotExact", "ParameterError", "PrecisionError", "QuadratureError",
    "SimulationResult", "SimulationSweep", "SolverError", "SweepComparison", "SweepResult", "check", "crossings", "icl",
    "icl_simulate", "latex", "limit", "simulate", "sweep",
]
assert sorted(__all__) == sorted([*_LAZY, *_MODULES])  # one list of public names, kept with the table above


def __getattr__(name):
    if name in _MODULES:
        return import_module(_MODULES[name])
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'symrmt' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_MODULES))
