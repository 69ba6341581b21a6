"""symrmt: exact, high-precision random-matrix limits for nonlinear Attention.

The public API (everything below is importable from ``symrmt`` itself):

* :func:`limit` -- certified limits of ``E_A(gamma)`` and ``E_RR(gamma)``;
* :func:`simulate` -- the same model sampled at finite ``n`` (Monte-Carlo), at one point or over a grid
  (``grid=``, as :func:`sweep` takes it: a :class:`SimulationSweep`, compared with the limits by
  ``.compare()`` into a :class:`SweepComparison`);
* :func:`sweep` -- limits over a product grid of ``c``, ``gamma``, ``snr``, Gram entries, angles;
* :func:`crossings` -- every point where ``E_A = E_RR`` in an interval;
* :class:`Geometry`, :class:`LowRankGeometry` -- the Gram data of the signal and the weights;
* :class:`Nonlinearity` -- ``f`` with its Hermite data;
* :func:`check`, :class:`CheckReport` -- a formula of your own against the package;
* :func:`icl`, :func:`icl_simulate` -- the ICL error of ridgeless linear attention on in-context linear
  regression (Lu et al. 2025): its ``d -> oo`` limit at any precision, and the model at finite ``d``;
* :func:`latex` -- ``symrmt.latex("theorem1")``: a result's LaTeX (``str()`` is the text; a notebook
  displays it);
* the errors: :class:`ParameterError` (bad input), :class:`SolverError` and its kinds
  :class:`ConvergenceError`, :class:`BranchError`, :class:`PrecisionError`, and
  :class:`NotExact`, :class:`QuadratureError` from the Hermite layer.

Layers (kept apart on purpose):

* ``symrmt.hermite``, ``symrmt.models.attention.equations`` -- SymPy: Hermite data, fixed-point systems, closed forms;
* ``symrmt.models.attention.solver``, ``symrmt.models.attention.theory`` -- mpmath: compiled solvers at any precision;
* ``symrmt.models.attention.montecarlo`` -- NumPy only: Monte-Carlo simulation of the finite model.

Importing ``symrmt`` itself is cheap: it imports neither SymPy, mpmath nor NumPy.
Each name above is loaded on first use (a module-level ``__getattr__``).
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
