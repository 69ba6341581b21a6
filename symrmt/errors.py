"""Every exception and warning class of symrmt, under the one base :class:`SymrmtError`.

Each class also keeps a built-in parent, which the command line maps to its exit code: ``ValueError``
(bad input, exit 2), ``ArithmeticError`` (a number symrmt cannot stand behind, exit 3), ``ImportError``
(an optional extra is missing), ``UserWarning``.  Data an error carries travel as attributes, never in
the message text only.  This module imports nothing from symrmt, so any module may import it.
"""

from __future__ import annotations

__all__ = [
    "SymrmtError",
    "ParameterError",
    "UnknownNameError",
    "NotDerived",
    "SolverError",
    "ConvergenceError",
    "BranchError",
    "PrecisionError",
    "StoreError",
    "ClusterError",
    "NonFiniteTrial",
    "TrialOutOfRange",
    "StaleTrialsWarning",
    "FiniteSizeWarning",
    "ParseLimitError",
    "TimeLimitExceeded",
    "ExtraUnavailable",
    "PretrainedUnavailable",
    "ClosedFormError",
    "QuadratureError",
    "NotTrapezoid",
    "NotCenteredError",
    "NotExact",
    "PencilError",
    "NonNormalError",
    "DensityError",
    "TraceSimulationError",
    "ModelError",
    "NewtonError",
    "Disagree",
    "Unavailable",
    "SymbolicTimeout",
    "ProofError",
    "ProveUnavailable",
    "SolveTimeLimit",
    "InsideSpectrumError",
]


class SymrmtError(Exception):
    """Base of every exception and warning class defined by symrmt.

    >>> import symrmt
    >>> try:
    ...     symrmt.limit("tanh", -1, [1])
    ... except SymrmtError as exc:
    ...     type(exc).__name__
    'ParameterError'
    """


class ParameterError(ValueError, SymrmtError):
    """A parameter is outside the domain of the model, or input that cannot be read; the message names
    it and says what to give instead (exit code 2 on the command line).

    >>> issubclass(ParameterError, ValueError), str(ParameterError("c must be > 0, got -1"))
    (True, 'c must be > 0, got -1')
    """


class UnknownNameError(ParameterError):
    """A name the whitelist does not hold.  Attributes: ``name`` (as typed), ``called`` (whether it was
    called as a function), ``suggestions`` (the closest names a user may type, best first; may be empty)
    and ``plain`` (the message without a caller's hint on how to declare the name).

    >>> err = UnknownNameError("f: unknown name 'p'", "p").with_hint("declare p")
    >>> str(err), err.plain, err.name
    ("f: unknown name 'p'; declare p", "f: unknown name 'p'", 'p')
    """

    def __init__(self, message="", name=None, called=False, suggestions=(), plain=None):
        super().__init__(message)
        self.name, self.called, self.suggestions = name, called, tuple(suggestions)
        self.plain = message if plain is None else plain

    def with_hint(self, hint: str) -> "UnknownNameError":
        """The same error with ``hint`` after its message (``plain`` unchanged).

        >>> UnknownNameError("unknown name 'q'", "q").with_hint("did you mean 'p'?").args[0]
        "unknown name 'q'; did you mean 'p'?"
        """
        return UnknownNameError(f"{self}; {hint}", self.name, self.called, self.suggestions, self.plain)


class SolverError(ArithmeticError, SymrmtError):
    """The theory could not deliver a value it can stand behind (exit code 3 on the command line); the
    message says which step failed and what to try.  Its kinds: :class:`ConvergenceError`,
    :class:`BranchError`, :class:`PrecisionError`.

    >>> issubclass(PrecisionError, SolverError), issubclass(SolverError, ArithmeticError)
    (True, True)
    """


class ConvergenceError(SolverError):
    """Newton's method or the continuation did not converge (the message has the residual).

    >>> isinstance(ConvergenceError("residual 1e-3 after 40 steps"), SolverError)
    True
    """


class BranchError(SolverError):
    """A solution was found but fails a branch check (positivity, bounds): it is not the limit.

    >>> isinstance(BranchError("m = -0.5 is not positive"), SolverError)
    True
    """


class PrecisionError(SolverError):
    """Two solves at different working precisions disagree in the requested digits.

    >>> isinstance(PrecisionError("solves at 40 and 50 digits disagree beyond digit 30"), ArithmeticError)
    True
    """


# ---------------------------------------------------------------------------
# the package's other errors, by the module that raises them
# ---------------------------------------------------------------------------


# symrmt.simulation.store
class StoreError(ParameterError):
    """The store file cannot be used (not a store, damaged, unreadable); it was left untouched.

    >>> issubclass(StoreError, ParameterError), issubclass(StoreError, ValueError)
    (True, True)
    """


# symrmt.simulation.executor
class ClusterError(ArithmeticError, SymrmtError):
    """A Dask cluster cannot finish the trials sent to it (it has had no worker for a minute); the
    trials already stored are kept.  An ``ArithmeticError`` so that the command line reports it as a
    result it could not deliver (exit 3).

    >>> issubclass(ClusterError, ArithmeticError), issubclass(ClusterError, SymrmtError)
    (True, True)
    """


# symrmt.simulation.store
class NonFiniteTrial(FloatingPointError, SymrmtError):
    """A trial (fresh or stored) holds a NaN or an infinity: the Monte-Carlo has no value to report.

    >>> isinstance(NonFiniteTrial("trial 3 holds nan"), ArithmeticError)
    True
    """


# symrmt.simulation.store
class TrialOutOfRange(FloatingPointError, SymrmtError):
    """A trial holds a value outside the range its kind can take (e.g. an error outside [0, 1]).

    >>> isinstance(TrialOutOfRange("an error of 1.5 is outside [0, 1]"), FloatingPointError)
    True
    """


# symrmt.models.attention.finite_size
class FiniteSizeWarning(UserWarning, SymrmtError):
    """The limit linearizes a term that is not small at the sizes a user is likely to simulate.

    >>> issubclass(FiniteSizeWarning, UserWarning), issubclass(FiniteSizeWarning, SymrmtError)
    (True, True)
    """


# symrmt.simulation.executor
class StaleTrialsWarning(UserWarning, SymrmtError):
    """The store holds trials of this point from another numerics version; they were not used.

    >>> issubclass(StaleTrialsWarning, UserWarning)
    True
    """


# symrmt.parsing.limits
class ParseLimitError(ParameterError):
    """A user input was refused by a limit of :data:`LIMITS` (the message names it).

    >>> from symrmt.parsing import check_count
    >>> check_count(2000, "gammas", "gamma values")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParseLimitError: gamma values = 2000 is above the limit 1000 (LIMITS['gammas'])
    """


# symrmt.parsing.limits
class TimeLimitExceeded(SymrmtError):
    """A time-limited computation ran past its limit (see :func:`run_limited`).

    >>> issubclass(TimeLimitExceeded, SymrmtError), issubclass(TimeLimitExceeded, ArithmeticError)
    (True, False)
    """


# symrmt.plotting, symrmt.table, symrmt.figures.draw, symrmt.engine.density.plot
class ExtraUnavailable(ImportError, SymrmtError):
    """An optional extra (matplotlib, pandas, xarray, safetensors) is not installed; the message names the
    ``pip install 'symrmt[...]'`` that brings it.

    >>> issubclass(ExtraUnavailable, ImportError), issubclass(PretrainedUnavailable, ExtraUnavailable)
    (True, True)
    """


# symrmt.models.attention.pretrained
class PretrainedUnavailable(ExtraUnavailable):
    """The optional extra (``safetensors`` or the model package) is not installed.

    >>> issubclass(PretrainedUnavailable, ImportError)
    True
    """


# symrmt.models.attention.closed_forms.noise_only
class ClosedFormError(ArithmeticError, SymrmtError):
    """The closed form cannot deliver a value it can stand behind.

    >>> issubclass(ClosedFormError, ArithmeticError)
    True
    """


# symrmt.hermite.quadrature
class QuadratureError(ArithmeticError, SymrmtError):
    """Numeric quadrature did not reach the requested accuracy.

    >>> issubclass(QuadratureError, ArithmeticError)
    True
    """


# symrmt.hermite.quadrature
class NotTrapezoid(SymrmtError):
    """The trapezoidal rule does not apply or did not converge: use tanh-sinh.

    >>> issubclass(NotTrapezoid, SymrmtError), issubclass(NotTrapezoid, ArithmeticError)
    (True, False)
    """


# symrmt.hermite.nonlinearity
class NotCenteredError(ParameterError):
    """``f`` is not centered under ``N(0, 1)``: ``E[f(xi)] != 0``.

    Attributes: ``a0`` is that mean as shown in the message (``"exact ≈ decimal"`` where it is
    known exactly, else the 15-digit decimal), ``a0_exact`` its exact SymPy text or ``None``, and
    ``a0_value`` its value as a float, for a caller that words its own message.

    >>> err = NotCenteredError("f is not centered", "1/2 ≈ 0.5", "1/2", 0.5)
    >>> isinstance(err, ValueError), err.a0_exact, err.a0_value
    (True, '1/2', 0.5)
    """

    def __init__(self, message: str, a0: str, a0_exact: str | None = None, a0_value: float | None = None):
        super().__init__(message)
        self.a0 = a0
        self.a0_exact = a0_exact
        self.a0_value = a0_value


# symrmt.hermite.gaussian
class NotExact(ArithmeticError, SymrmtError):
    """No exact (symbolic) value is available within the time limit.

    >>> issubclass(NotExact, ArithmeticError)
    True
    """


# symrmt.engine.reduce.pencil_check
class PencilError(AssertionError, ArithmeticError, SymrmtError):
    """A pencil failed its finite-size self-test (a bug in the linearization, or a float64 test too
    ill-conditioned to decide); an ``ArithmeticError`` too, so the command line reports it in one line.

    >>> issubclass(PencilError, AssertionError), issubclass(PencilError, ArithmeticError)
    (True, True)
    """


# symrmt.engine.solve.hermitized
class NonNormalError(BranchError):
    """The trace holds the inverse of a non-normal matrix that is not invertible in the limit, and
    the expression is not a resolvent the Hermitization can read (exit 3).

    >>> issubclass(NonNormalError, BranchError)
    True
    """


# symrmt.engine.solve.spectrum_guard
class InsideSpectrumError(BranchError):
    """A resolvent's trace at a real point inside the spectrum of a symmetric (indefinite) matrix: it has
    no real limit (exit 3).

    >>> issubclass(InsideSpectrumError, BranchError)
    True
    """


# symrmt.engine.solve.edge
class DensityError(ConvergenceError):
    """A point of the density could not be computed (exit 3).

    >>> issubclass(DensityError, ConvergenceError)
    True
    """


# symrmt.engine.simulate.evaluate
class TraceSimulationError(ArithmeticError, SymrmtError):
    """A trial could not be evaluated (a singular matrix, a non-finite value).

    >>> issubclass(TraceSimulationError, ArithmeticError)
    True
    """


# symrmt.engine.lang.node
class ModelError(ParameterError):
    """A model or an expression is not in the grammar (the message says why).

    When the values given do not match the expression's parameters, the message names the Python
    keywords (``at=``, ``grid=``) and the data travel as attributes, so that the command line can say the
    same in its own flags: ``missing`` (parameters with no value), ``unknown`` (given names the expression
    does not have) and ``known`` (the expression's parameters), each a tuple of names (empty otherwise).

    >>> ModelError("no value given for c", missing=["c"]).missing
    ('c',)
    """

    def __init__(self, message="", *, missing=(), unknown=(), known=()):
        super().__init__(message)
        self.missing, self.unknown, self.known = tuple(missing), tuple(unknown), tuple(sorted(known))


# symrmt.core.newton
class NewtonError(ConvergenceError):
    """Newton reached its maximum number of steps; ``residual`` and ``step`` are attributes.

    >>> err = NewtonError("no convergence in 40 steps", residual=1e-3, step=40)
    >>> isinstance(err, ConvergenceError), err.residual, err.step
    (True, 0.001, 40)
    """

    def __init__(self, message, residual=None, step=None):
        super().__init__(message)
        self.residual = residual
        self.step = step


# symrmt.core.certify
class Disagree(SymrmtError):
    """Raised by an attempt whose two solves disagree (the message says how); triggers escalation.

    >>> issubclass(Disagree, SymrmtError), issubclass(Disagree, ArithmeticError)
    (True, False)
    """


# symrmt.cli.common
class Unavailable(ArithmeticError, SymrmtError):
    """The theory cannot be computed in this installation.

    >>> issubclass(Unavailable, ArithmeticError)
    True
    """


# symrmt.models.attention.generalization
class NotDerived(ArithmeticError, SymrmtError):
    """The quantity asked for is not derived for this model (e.g. the softmax's test error): refused, exit 3.

    >>> issubclass(NotDerived, ArithmeticError)
    True
    """


# symrmt.check.prove
class SymbolicTimeout(SymrmtError):
    """A symbolic attempt ran past its time limit (it was killed).

    >>> issubclass(SymbolicTimeout, SymrmtError)
    True
    """


# symrmt.proofs.arb
class ProofError(SolverError):
    """A ball could not be proved (Krawczyk test failed, a ball too wide); the message says which.

    >>> issubclass(ProofError, SolverError)
    True
    """


# symrmt.proofs.arb
class ProveUnavailable(ParameterError):
    """``--prove`` / ``prove=True`` without python-flint installed (exit 2).

    >>> issubclass(ProveUnavailable, ParameterError)
    True
    """


# symrmt.core.budget
class SolveTimeLimit(SolverError):
    """A solve ran past its time limit (:mod:`symrmt.core.budget`); the message names the stage it was in.

    >>> issubclass(SolveTimeLimit, SolverError)
    True
    """
