"""The one base of every exception and warning symrmt defines.

``except symrmt.errors.SymrmtError`` catches anything symrmt raises on purpose. Each class
keeps a built-in parent as well, because the command line maps the built-in ones to its exit
codes (``symrmt.cli.app``):

* ``ValueError`` -- bad input, exit 2: :class:`ParameterError` (defined here) and its subclasses
  (:class:`symrmt.hermite.nonlinearity.NotCenteredError`,
  :class:`symrmt.engine.base.ModelError`, :class:`symrmt.parsing.ParseLimitError`,
  :class:`symrmt.simulation.store.StoreError`);
* ``ArithmeticError`` -- a number symrmt cannot stand behind, exit 3:
  :class:`SolverError` (defined here, with ``ConvergenceError``, ``BranchError``,
  ``PrecisionError``), :class:`symrmt.hermite.quadrature.QuadratureError`,
  :class:`symrmt.hermite.gaussian.NotExact`,
  :class:`symrmt.models.attention.closed_forms.noise_only.ClosedFormError`,
  :class:`symrmt.engine.bound_tree.TraceSimulationError`,
  :class:`symrmt.engine.pencil_check.PencilError`, :class:`symrmt.cli.common.Unavailable`;
* ``ImportError`` -- :class:`symrmt.models.attention.pretrained.PretrainedUnavailable` (an optional extra is missing);
* ``Exception`` -- the time limits :class:`symrmt.parsing.TimeLimitExceeded` and
  :class:`symrmt.check.prove.SymbolicTimeout`;
* ``UserWarning`` -- :class:`symrmt.simulation.executor.StaleTrialsWarning`.

Data an error carries travel as attributes (for example ``NotCenteredError.a0``), never
inside the message text only. The classes stay importable from the modules named above (``ParameterError`` also from
:mod:`symrmt.models.attention.params`, the solver errors from :mod:`symrmt.models.attention.solver`);
this module imports nothing from symrmt, so any module may import it.
"""

from __future__ import annotations

__all__ = ["SymrmtError", "ParameterError", "SolverError", "ConvergenceError", "BranchError", "PrecisionError",
           "NotDerivedError"]


class SymrmtError(Exception):
    """Base of every exception and warning class defined by symrmt."""


class ParameterError(ValueError, SymrmtError):
    """A parameter is outside the domain of the model; the message names it."""


class SolverError(ArithmeticError, SymrmtError):
    """The theory could not deliver a value it can stand behind."""


class ConvergenceError(SolverError):
    """Newton's method or the continuation did not converge (the message has the residual)."""


class BranchError(SolverError):
    """A solution was found but fails a branch check (positivity, bounds)."""


class PrecisionError(SolverError):
    """Two solves at different working precisions disagree in the requested digits."""


class NotDerivedError(SolverError):
    """A case the derivation does not cover (e.g. a signal with a general weight matrix): refused, never
    answered (CLI exit 3)."""
