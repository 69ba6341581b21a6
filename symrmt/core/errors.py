"""The numerical core's errors: a number the solvers cannot stand behind (exit code 3).

They are the package's one hierarchy, defined in :mod:`symrmt.errors` (``ArithmeticError`` as a
parent, which the command line maps to exit code 3, and :class:`symrmt.errors.SymrmtError` as the
common base) and re-exported here so the core's modules name them from one place.
"""

from __future__ import annotations

from symrmt.errors import BranchError, ConvergenceError, PrecisionError, SolverError

__all__ = ["SolverError", "ConvergenceError", "BranchError", "PrecisionError"]
