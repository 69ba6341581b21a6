"""The simulation layer (NumPy only, never SymPy): Monte-Carlo of the finite model.

``symrmt.simulation.montecarlo`` draws the tokens, builds the kernel and evaluates both errors
per trial (re-exported here).
"""

from symrmt.simulation.montecarlo import *  # noqa: F401,F403
