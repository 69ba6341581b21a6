"""The extended system of a spectral edge, and the density's error.

At an edge ``x`` of the support of a spectral density the fixed point ``R(h, x) = 0`` has a singular
Jacobian: :class:`EdgeSystem` solves ``R(h, x) = 0``, ``J(h, x) v = 0``, ``l . v = 1`` in the unknowns
``(h, x, v)`` (a regular root) by the core's Newton in mpmath at a given precision.  It serves the density's
edges (:mod:`symrmt.engine.density.features`) and the trace solver at a point that is an edge in one
shift parameter (:meth:`symrmt.engine.solve.continuation.ContinuedSolver.solve`).  It imports no solver of the
engine, so both can use it.
"""

from __future__ import annotations

import mpmath
import sympy as sp

from symrmt.core.linalg import solve_dense
from symrmt.core.newton import newton
from symrmt.core.numbers import MPMATH
from symrmt.engine.reduce.fixed_point import S_STRENGTH
from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.errors import ConvergenceError
from symrmt.errors import DensityError  # noqa: F401  (defined in symrmt.errors, importable here)

__all__ = ["DensityError", "EdgeSystem"]


class EdgeSystem:
    """``R(h, x) = 0``, ``J(h, x) v = 0``, ``l . v = 1`` in the unknowns ``(h, x, v)`` (SymPy, then mpmath).

    Takes a density solver (its system, values and spectral variable), or ``system``, ``values`` (the other
    parameters) and ``free`` (the parameter that moves to the edge).  :meth:`solve` takes a start ``(h, x, v)``
    and ``dps``, and returns the edge ``x`` (the whole root in ``last``); it raises :class:`DensityError`
    when the system is singular or Newton does not converge.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> system = m.plan("trace(inv(G/sqrt(n) + gamma*I(n)))").traces[0].system
    >>> es = EdgeSystem(system=system, values={}, free=system.params[0])
    >>> es.solve([-1.1], 2.1, [1.0], 30)   # the semicircle's edge: gamma = 2, where tau = -H = 1
    mpf('2.0')
    """

    def __init__(self, solver=None, *, system=None, values=None, free=None):
        if solver is not None:
            system, values, free = solver.system, solver.values, solver.zsym
        sysm = system
        subs = {S_STRENGTH: 1, EPS_SHIFT: 0}
        subs.update({p: sp.Rational(values[p.name]) for p in sysm.params if p.name != free.name})
        R = [sp.sympify(r).subs(subs) for r in sysm.residual]
        J = [[sp.sympify(x).subs(subs) for x in row] for row in sysm.jacobian()]
        m = len(R)
        v = sp.symbols(f"v_0:{m}", real=True)
        l_ = sp.symbols(f"l_0:{m}", real=True)
        Jv = [sp.expand(sum(J[i][j] * v[j] for j in range(m))) for i in range(m)]
        F = R + Jv + [sum(a * b for a, b in zip(l_, v)) - 1]
        unknowns = list(sysm.h) + [free] + list(v)
        DF = sp.Matrix(F).jacobian(unknowns)
        self.m = m
        self.f = sp.lambdify([unknowns, l_], F, modules="mpmath")
        self.df = sp.lambdify([unknowns, l_], DF, modules="mpmath")

    def solve(self, h, x, v, dps, steps=60):
        m = self.m
        with mpmath.workdps(dps):
            u = [mpmath.mpf(float(a)) for a in h] + [mpmath.mpf(x)] + [mpmath.mpf(float(a)) for a in v]
            lv = [mpmath.mpf(float(a)) for a in v]
            nrm = sum(a * a for a in lv)
            lv = [a / nrm for a in lv]
            tol = mpmath.mpf(10) ** (-(dps - 4))
            def linear(u):
                D = mpmath.matrix(self.df(u, lv))
                try:
                    du = solve_dense(D.tolist(), [-y for y in self.f(u, lv)], mpmath.mpf(0))
                except ZeroDivisionError:
                    raise DensityError("the edge system is singular (a higher-order edge?)") from None
                return du, None

            try:  # the core's Newton (stagnation: the step stops shrinking below sqrt(tol))
                u = newton(linear, u, MPMATH, tol, steps, shrink=1)[0]
            except DensityError:
                raise
            except ConvergenceError:
                raise DensityError(f"Newton on the edge system did not converge at {dps} digits") from None
            self.last = u
            return u[m]

