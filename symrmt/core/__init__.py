"""symrmt's numerical core: the machinery every solver shares, written once.

This room owns the algorithms, not the models: one Newton driver and its iterative refinement
(:mod:`.newton`), one continuation with its trust-region guards, second pass and polish check
(:mod:`.continuation`), one two-precision certification with escalation (:mod:`.certify`) and the
dense linear algebra (:mod:`.linalg`), all over a number context (:mod:`.numbers`: float64, long
double, complex, or mpmath at the current precision) so the float and the mpmath paths are one
algorithm; and the batched float64 forms of the Newton driver and the continuation (:mod:`.batch`,
the same rules and step schedules row by row).  The attention solver, the float64 batches, the trace
engine, the density paths, the atom solver and the noise-only closed form call into it; it imports
nothing from the rest of symrmt except :mod:`symrmt.errors`.
"""

from __future__ import annotations

from symrmt.core.certify import Certified, Disagree, agree, certify
from symrmt.core.continuation import Geometric, Linear, check_polish, follow, in_trust_region, paths_gap, two_pass
from symrmt.errors import BranchError, ConvergenceError, PrecisionError, SolverError
from symrmt.core.linalg import inverse, lu_factor, lu_solve, qr_solve, solve_dense, solve_numpy
from symrmt.core.newton import NewtonError, newton, refine, stagnated
from symrmt.core.numbers import FLOAT64, LONGDOUBLE, MPMATH, NumberContext

__all__ = [
    "BranchError", "Certified", "ConvergenceError", "Disagree", "FLOAT64", "Geometric", "LONGDOUBLE",
    "Linear", "MPMATH", "NewtonError", "NumberContext", "PrecisionError", "SolverError", "agree",
    "certify", "check_polish", "follow", "in_trust_region", "inverse", "lu_factor", "lu_solve", "newton", "paths_gap",
    "qr_solve", "refine", "solve_dense", "solve_numpy", "stagnated", "two_pass",
]
