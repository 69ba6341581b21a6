"""symrmt: exact, high-precision random-matrix limits for nonlinear Attention.

Layers (kept apart on purpose):

* ``symrmt.symbolic.hermite``, ``symrmt.symbolic.attention`` -- SymPy: Hermite data, fixed-point systems, closed forms;
* ``symrmt.numeric.solver``, ``symrmt.numeric.theory`` -- mpmath: compiled solvers at any precision;
* ``symrmt.simulation.montecarlo`` -- NumPy only: Monte-Carlo simulation of the finite model.

Importing ``symrmt`` itself is cheap and imports neither SymPy nor NumPy.
"""

__version__ = "0.1.0"

from symrmt.params import Geometry, ParameterError  # noqa: F401
