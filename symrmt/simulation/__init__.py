"""The simulation layer (NumPy only, never SymPy): Monte-Carlo of the finite model.

``symrmt.simulation.montecarlo`` draws the tokens, builds the kernel and evaluates both errors
per trial (re-exported here); ``symrmt.simulation.trace_sim`` samples an expression of the
trace engine (``symrmt.engine``) at a finite size.
"""

from symrmt.simulation.montecarlo import *  # noqa: F401,F403
