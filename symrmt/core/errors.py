"""The numerical core's errors: a number the solvers cannot stand behind (exit code 3).

They keep ``ArithmeticError`` as a parent (the command line maps it to exit code 3) and
:class:`symrmt.errors.SymrmtError` as the package's common base.  The numeric layer
re-exports them (``symrmt.numeric.ConvergenceError`` and friends).
"""

from __future__ import annotations

from symrmt.errors import SymrmtError

__all__ = ["SolverError", "ConvergenceError", "BranchError", "PrecisionError"]


class SolverError(ArithmeticError, SymrmtError):
    """The theory could not deliver a value it can stand behind."""


class ConvergenceError(SolverError):
    """Newton's method or the continuation did not converge (the message has the residual)."""


class BranchError(SolverError):
    """A solution was found but fails a branch check (positivity, bounds)."""


class PrecisionError(SolverError):
    """Two solves at different working precisions disagree in the requested digits."""
