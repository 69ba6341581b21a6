"""symrmt: exact, high-precision random-matrix limits for nonlinear Attention.

Layers (kept apart on purpose):

* ``symrmt.hermite``, ``symrmt.symbolic`` -- SymPy: Hermite data, fixed-point systems, closed forms;
* ``symrmt.numeric``, ``symrmt.theory`` -- mpmath: compiled solvers at any precision;
* ``symrmt.simulate`` -- NumPy only: Monte-Carlo simulation of the finite model.

Importing ``symrmt`` itself is cheap and imports neither SymPy nor NumPy.
"""

__version__ = "0.1.0"

from .params import Geometry, ParameterError  # noqa: F401
