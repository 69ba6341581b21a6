r"""Limiting spectral densities of symmetric matrix expressions: continuation toward the real axis.

For a symmetric matrix expression ``M`` (square, ``N x N``) the engine builds the pencil of
``tau((M - z)^{-1})`` with a fresh spectral parameter ``z`` (:meth:`symrmt.engine.Model.plan`, self-tested
like every pencil), and solves its block fixed point at complex ``z``:

1. **start** at ``z = x + iY`` with ``Y = O(1)`` (:data:`START_HEIGHT` times the scale of the grid): the
   homotopy in the strength ``s`` of the random part from ``H = L_0^{-1}`` (``s = 0``) to ``s = 1``,
   in complex arithmetic (off the real axis the resolvent is analytic in ``s``, no spectrum is crossed);
2. **descend** in ``log Im z`` from ``Y`` to :data:`ETA_FLOOR` ``* (1 + |x|)`` at fixed ``Re z = x``, with the predictor
   ``dh/dt = -J^{-1} dR/dz dz/dt`` and a Newton corrector inside a trust region (each step may move the
   solution by at most :data:`MOVE` of its size, the corrector :data:`CORRECT` from the predictor) that also
   keeps the Stieltjes branch, ``Im tau > 0`` at every point with ``Im z > 0``, then a Newton **finish** at ``z = x`` itself: inside the
   bulk the root at real ``z`` is a regular complex root, outside it is real; at an edge (the Jacobian is
   singular) or an atom (the solution diverges) the finish fails and the point is reported as such;
3. **certify** by Newton at two working precisions (``digits + 10`` and ``digits + 20``) from that root:
   ``tau`` must agree to ``digits`` significant digits, and the Stieltjes branch is checked at the
   solution, ``Im tau >= 0`` (the limit from ``Im z > 0``), else :class:`~symrmt.models.attention.solver.BranchError`.

``rho(x) = Im tau(x + i0) / pi``.  A density that is 0 (outside the support) is certified in absolute
terms: ``|Im tau| <= 10^-digits |tau|`` at both precisions.

**float64 points** (``certify=k``): every ``k``-th point is certified as above, and its float64 value must
agree with the certified one to :data:`FLOAT_AGREE`; the others keep their float64 root when its residual
at ``z = x`` is below :data:`FLOAT_RESIDUAL` and ``Im tau >= 0`` (status ``"float"``, about 10 digits, not
certified), else they are recomputed in mpmath (status ``"ok"``).

**Edges** are the real points where the real fixed point stops existing: the Jacobian ``J`` of the
residual is singular there.  Between two grid points, one inside and one outside the support, the edge
is bracketed by bisection on the float solve, then solved together with ``J v = 0``, ``l . v = 1``
(unknowns ``h, x, v``; a regular root of this extended system) by Newton at two precisions.

**Atoms**: the mass at ``x0`` is ``lim_{eta -> 0} eta Im tau(x0 + i eta)``; it is read at
``eta = 10^-(digits+4)`` and ``10^-(digits+6)`` (the solution grows like ``1/eta``; the descent is
continued in ``log eta`` at ``digits + 20`` working digits), and the two must agree to ``digits``.  The
candidates are ``x0 = 0`` when it is in the grid's range, and every grid point whose finish diverged.
Between two grid points outside the support, a decrease of the real ``tau`` (increasing on every
interval of the resolvent set) is a pole: its mass is the contour integral ``-(1/2 pi i) oint tau dz`` on a
circle around it, and its location the first moment over the mass (:func:`contour_atom`, exponentially
convergent trapezoid rule, ``N`` and ``2N`` points agreeing to ``digits``).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from symrmt.core.continuation import Linear, follow
from symrmt.core.linalg import solve_dense, solve_numpy
from symrmt.core.newton import newton, refine
from symrmt.core.numbers import COMPLEX128, MPCOMPLEX, MPMATH
from symrmt.errors import BranchError, ConvergenceError, PrecisionError
from symrmt.models.attention.solver import mpf_of

#: the start height ``Y`` of the descent, in units of ``1 + max(|LO|, |HI|)``
START_HEIGHT = 1
#: the descent in ``log Im z`` stops at this fraction of ``Y`` before the Newton finish at ``Im z = 0``
ETA_FLOOR = 1e-7
#: trust region of a step (fraction of ``1 + |h|``) and of the finish
MOVE = 0.1
CORRECT = 0.01
FINISH = 1e-3
MAX_STEPS = 2000
#: a horizontal move near the axis that needs more steps than this falls back to the descent
HORIZONTAL_STEPS = 60
#: a mass below ``10^-digits`` is not an atom
ATOM_TAIL = (4, 6)


class DensityError(ConvergenceError):
    """A point of the density could not be computed (exit 3)."""


def _np_solve(rows, rhs):
    """One complex128 system (:func:`symrmt.core.linalg.solve_numpy`); singular: a :class:`ZeroDivisionError`."""
    return solve_numpy(rows, rhs)


class ResolventSolver:
    """The fixed point of ``tau((M - z)^{-1})`` at complex ``z`` (floats, then mpmath to certify)."""

    #: the sign of ``Im tau`` expected while ``Im z > 0`` (``+1``: ``tau((M - z)^{-1})``; ``None``: not checked)
    branch_sign = 1

    def __init__(self, plan, zsym, values, index=0, branch_sign=1):
        from symrmt.engine.pencil_check import checked
        from symrmt.engine.certify import compiled_system

        self.branch_sign = branch_sign
        t = plan.traces[index]
        checked(t.pencil, t.matrix)
        self.plan, self.trace, self.system = plan, t, t.system
        self.c = compiled_system(t.system)
        self.m = self.c.m
        self.zsym = zsym
        self.params = list(self.c.params)
        if zsym not in self.params:
            raise DensityError("the resolvent does not depend on z (a constant matrix?)")
        self.kz = self.params.index(zsym)
        # the compiled system's own symbol object (an equal one from a cached system need not be the same object)
        zsym = self.zsym = self.params[self.kz]
        self.values = values
        missing = [p.name for p in self.params if p.name != zsym.name and p.name not in values]
        if missing:
            from symrmt.engine.nodes import ModelError

            raise ModelError(f"no value given for {', '.join(missing)} (pass them in at=...)")
        self.F = self.c.ffjs
        if self.F is None:
            raise DensityError("the compiled system is not plain arithmetic (no complex float path)")
        dz, _ = self.c.derivative_function((zsym,))
        self.dz_mp = dz
        self.dz = dz.float_version()
        readout = t.system.readout
        subs = {p: sp.Rational(values[p.name]) for p in self.params if p.name != zsym.name}
        self.readout = [(t.system.unknowns.index(ij), sp.sympify(c).subs(subs)) for ij, c in readout.items()]
        if any(c.free_symbols for _, c in self.readout):
            if branch_sign is not None:
                raise DensityError("the readout of the trace depends on z")
            self.readout, self.readout_f = [], []  # the branch is not checked: tau is not needed
        else:
            self.readout_f = [(i, complex(c)) for i, c in self.readout]

    # -- arguments
    def _pvals(self, z, mp=False):
        if not mp:
            if not hasattr(self, "_fixed"):
                self._fixed = [None if p.name == self.zsym.name else float(self.values[p.name]) for p in self.params]
            out = list(self._fixed)
            out[self.kz] = z
            return out
        out = []
        for p in self.params:
            if p.name == self.zsym.name:
                out.append(mpmath.mpc(z) if mp else z)
            else:
                v = self.values[p.name]
                out.append(mpf_of(v) if mp else float(v))
        return out

    def _pv(self, z, s=1.0, mp=False):
        pv = self._pvals(z, mp)
        if mp:
            aux = self.c.aux_values(pv)
            return pv + [mpmath.mpf(s), mpmath.mpf(0)] + list(aux)
        return pv + [float(s), 0.0] + self._aux_float(z, pv)

    def _aux_float(self, z, pv):
        """The auxiliary values (``sqrt(c)``, ``1/c``, ...) as complex floats; computed once when they do not
        depend on ``z`` (tested at two points of the upper half-plane), else at each ``z``."""
        if not hasattr(self, "_aux_const"):
            with mpmath.workdps(20):
                a = self.c.aux_values([mpmath.mpc(x) for x in self._pvals(complex(0.37, 1.3))])
                b = self.c.aux_values([mpmath.mpc(x) for x in self._pvals(complex(-1.9, 0.21))])
            self._aux_const = [complex(x) for x in a] if all(x == y for x, y in zip(a, b)) else None
        if self._aux_const is not None:
            return self._aux_const
        return [complex(a) for a in self.c.aux_values([mpmath.mpc(x) for x in pv])]

    def tau(self, h):
        return sum(c * h[i] for i, c in self.readout_f)

    # -- float path
    def _eval(self, h, z, s=1.0):
        m = self.m
        v = self.F(h, self._pv(z, s))
        return v[:m], [v[m + m * i:m + m * (i + 1)] for i in range(m)], v[m + m * m:m + m * m + m]

    def _newton(self, h, z, s=1.0, steps=20, tol=1e-13):
        """:func:`symrmt.core.newton.newton` in complex128 (stagnation: less than twofold below 1e-8; a step
        more than twice the last one diverges); a failure is a :class:`ZeroDivisionError` (a refused step)."""
        def linear(x):
            R, J, dRs = self._eval(x, z, s)
            return list(_np_solve(J, [-r for r in R])), None

        try:
            return newton(linear, h, COMPLEX128, tol, steps, shrink=2, floor=1e-8, diverge=2)[0]
        except ConvergenceError as exc:
            raise ZeroDivisionError(str(exc)) from None

    def _follow(self, h, point, dhdt, t0, t1, first=1 / 8, max_steps=MAX_STEPS):
        """Follow ``h`` along ``t`` (``point(t) -> (z, s)``); ``dhdt(h, t)`` is the predictor."""
        # the core's continuation (trust region near the predictor and the previous point), in complex128
        def correct(pred, nxt):
            z, s = point(nxt)
            return self._newton(pred, z, s, steps=8, tol=1e-11), None

        def branch(new, _):
            # the Stieltjes branch at every step: Im tau > 0 while Im z > 0 (the resolvent of the
            # symmetric s-scaled matrix); a step onto another root of the system is refused
            z, _s = point(t_next[0])
            return z.imag <= 0 or self.branch_sign is None or self.branch_sign * self.tau(new).imag > 0

        class _Schedule(Linear):
            def advance(self, t):
                t_next[0] = super().advance(t)
                return t_next[0]

        def stalled(t):
            z, s = point(t)
            return f"the path stalled at z = {_cstr(z)}, s = {s:.6g}"

        t_next = [t0]
        try:
            h, _ = follow(correct, h, dhdt(h, t0), t0, t1, _Schedule(t0, t1, cap=None, step=(t1 - t0) * first),
                          COMPLEX128, correction=CORRECT, move=MOVE, max_steps=max_steps,
                          catch=(ZeroDivisionError, OverflowError, ValueError), finite=branch, derivative=dhdt,
                          stalled=stalled, too_many=lambda: f"the path took more than {max_steps} steps")
        except ConvergenceError as exc:
            raise DensityError(str(exc)) from None
        return h

    def start(self, z0):
        """``h`` at ``z0`` (``Im z0 > 0``) by the homotopy in ``s``."""
        m = self.m
        h = self._newton([0j] * m, z0, 0.0, steps=3)  # linear at s = 0: L_0^{-1}

        def dhdt(h, s):
            R, J, dRs = self._eval(h, z0, s)
            return list(_np_solve(J, [-x for x in dRs]))

        return self._follow(h, lambda s: (z0, s), dhdt, 0.0, 1.0)

    def dz_rhs(self, h, z):
        pv = self._pvals(z)
        return self.dz(h, pv)

    def move(self, h, za, zb, log_eta=False, max_steps=MAX_STEPS):
        """Follow from ``za`` to ``zb``: a segment, or (``log_eta``) at fixed ``Re z`` in ``log Im z``."""
        if log_eta:
            x, ya, yb = za.real, za.imag, zb.imag
            lr = math.log(yb / ya)

            def z_of(t):
                return complex(x, ya * math.exp(t * lr))

            def dzdt(t):
                return 1j * ya * math.exp(t * lr) * lr
        else:
            def z_of(t):
                return za + t * (zb - za)

            def dzdt(t):
                return zb - za

        def dhdt(h, t):
            z = z_of(t)
            R, J, _ = self._eval(h, z)
            rhs = self.dz_rhs(h, z)
            return list(_np_solve(J, [-r * dzdt(t) for r in rhs]))

        return self._follow(h, lambda t: (z_of(t), 1.0), dhdt, 0.0, 1.0, first=1 / 8 if log_eta else 1.0,
                            max_steps=max_steps)

    def finish(self, h, x, eta):
        """Newton at ``z = x`` from ``h`` at ``x + i eta`` (predictor ``h - i eta dh/dz``)."""
        z = complex(x, eta)
        R, J, _ = self._eval(h, z)
        dh = _np_solve(J, [-r for r in self.dz_rhs(h, z)])
        pred = [a - 1j * eta * b for a, b in zip(h, dh)]
        new = self._newton(pred, complex(x, 0.0), 1.0, steps=30)
        size = 1 + float(np.linalg.norm(h))
        if not float(np.linalg.norm(np.subtract(new, pred))) <= FINISH * size:
            raise DensityError(f"the Newton finish at z = {x:.6g} left the path")
        t = self.tau(new)
        if self.branch_sign is not None and self.branch_sign * t.imag < -1e-12 * (1 + abs(t)):
            raise DensityError(f"the Newton finish at z = {x:.6g} reached Im tau < 0 (the other branch)")
        return new

    # -- mpmath
    def _refine(self, h, pv, zf, tol):
        """Iterative refinement ``h <- h - J^{-1} R(h)`` (:func:`symrmt.core.newton.refine`): the residual at the
        working precision (the compiled residual alone), the Jacobian in float64 (its inverse, NumPy); ``None``
        when the steps do not shrink at least a thousandfold each (then full Newton runs)."""
        m = self.m
        try:
            _, J, _ = self._eval([complex(x) for x in h], zf)
            A = np.array(J, dtype=complex)
            if not np.all(np.isfinite(A)) or np.linalg.cond(A) > 1e8:
                return None
            inv = np.linalg.inv(A)
        except (ZeroDivisionError, OverflowError, ValueError, np.linalg.LinAlgError):
            return None

        def solve(r):
            dx = inv @ np.array([complex(x) for x in r[:m]], dtype=complex)
            return [mpmath.mpc(d.real, d.imag) for d in dx]

        def step_of(dx, x):  # measured in float64, as the tolerance is
            return float(np.linalg.norm([complex(d) for d in dx])) / (1 + max(abs(complex(a)) for a in x))

        out = refine(lambda x: self.c.res(x, pv), solve, h, tol, 12, step_of=step_of)
        return None if out is None else out[0]

    def polish(self, h, z, dps, steps=None):
        """Newton at ``dps`` digits from ``h`` at complex ``z``; ``(h, tau)`` (iterative refinement on the
        float64 Jacobian first, full Newton in mpmath when it does not contract)."""
        m = self.m
        with mpmath.workdps(dps):
            zc = mpmath.mpc(z)
            pv = self._pv(zc, mp=True)
            h = [mpmath.mpc(x) for x in h]
            tol = mpmath.mpf(10) ** (-(dps - 4))
            if steps is None and tol > mpmath.mpf(10) ** -280:  # float64 steps: not below its range
                out = self._refine(h, pv, complex(zc), float(tol))
                if out is not None:
                    tau = sum(mpmath.mpmathify(c) * out[i] for i, c in ((i, complex(c)) for i, c in self.readout))
                    return out, tau
            def linear(x):
                v = self.c.fjs(x, pv)
                try:
                    dx = solve_dense([list(v[m + m * i:m + m * (i + 1)]) for i in range(m)], [-y for y in v[:m]],
                                     mpmath.mpc(0))
                except ZeroDivisionError:
                    raise DensityError(f"singular Jacobian at z = {_cstr(complex(z))} (an edge of the support?)") from None
                return list(dx), None

            try:  # the core's Newton in mpmath complex numbers (stagnation: the step stops shrinking)
                h = newton(linear, h, MPCOMPLEX, tol, steps or 10 + dps // 4, shrink=1)[0]
            except DensityError:
                raise
            except ConvergenceError:
                raise DensityError(f"the Newton polish at {dps} digits did not converge at z = {_cstr(complex(z))}") from None
            tau = sum(mpmath.mpmathify(c) * h[i] for i, c in ((i, complex(c)) for i, c in self.readout))
            return h, tau


def _cstr(z) -> str:
    return f"{z.real:.6g}{z.imag:+.3g}i"


class DensitySolve:
    """The density of one matrix at fixed parameter values, point by point (see the module docstring)."""

    def __init__(self, solver: ResolventSolver, scale: float):
        self.s = solver
        self.Y = START_HEIGHT * (1 + scale)
        self._top = None  # (x, h) at height Y
        self._low = None  # (x, eta, h) near the axis, eta = ETA_FLOOR * START_HEIGHT * (1 + |x|)

    def at_top(self, x):
        z = complex(x, self.Y)
        if self._top is None:
            h = self.s.start(z)
        else:
            x0, h0 = self._top
            h = self.s.move(h0, complex(x0, self.Y), z)
        self._top = (x, h)
        return h

    def near_axis(self, x):
        """``(h, eta)``: ``h`` at ``x + i eta``, ``eta = ETA_FLOOR * START_HEIGHT * (1 + |x|)``: from the previous
        point near the axis by a move in the upper half-plane (the Stieltjes branch kept at every step), or,
        when that fails or is the first point, by the descent from ``x + iY``."""
        # the height near the axis is set by the point itself, not by the width of the grid: a grid that
        # spans +-1e10 must not finish from 1e3 above the axis (the descent from Y costs only log steps)
        eta = ETA_FLOOR * START_HEIGHT * (1 + abs(x))
        if self._low is not None:
            x0, eta0, h0 = self._low
            try:
                h = self.s.move(h0, complex(x0, eta0), complex(x, eta), max_steps=HORIZONTAL_STEPS)
                self._low = (x, eta, h)
                return h, eta
            except (DensityError, ZeroDivisionError, OverflowError, ValueError):
                pass
        h = self.at_top(x)
        h = self.s.move(h, complex(x, self.Y), complex(x, eta), log_eta=True)
        self._low = (x, eta, h)
        return h, eta

    def float_point(self, x):
        """``(kind, h)`` at the real point ``x``: kind ``"ok"`` (the root at ``z = x``) or ``"edge"`` (the
        finish failed: an edge, an atom, or a point too close to one for float64)."""
        h, eta = self.near_axis(x)
        try:
            return "ok", self.s.finish(h, x, eta), h
        except (DensityError, ZeroDivisionError, OverflowError, ValueError):
            return "edge", None, h

    def certified(self, x, h, digits):
        """``(rho, tau)`` at ``x`` (exact: a Fraction or an mpf) certified to ``digits`` (two precisions),
        the branch checked."""
        if not isinstance(x, mpmath.mpf):
            with mpmath.workdps(digits + 30):
                x = mpmath.mpf(x.numerator) / x.denominator
        lo_h, lo = self.s.polish(h, x, digits + 10)
        hi_h, hi = self.s.polish(lo_h, x, digits + 20)
        with mpmath.workdps(digits + 20):
            tol = mpmath.mpf(10) ** (-digits)
            if not abs(lo - hi) <= abs(hi) * tol / 10:
                raise PrecisionError(f"the density at x = {x}: solves at {digits + 10} and {digits + 20} digits "
                                     f"disagree beyond digit {digits}")
            im = hi.imag
            if im < -abs(hi) * tol:
                raise BranchError(f"Im tau(x + i0) = {mpmath.nstr(im, 5)} < 0 at x = {x}: the continuation left the "
                                  "Stieltjes branch (Im tau > 0 for Im z > 0); no value is returned")
            rho = max(im, mpmath.mpf(0)) / mpmath.pi if im > abs(hi) * tol else mpmath.mpf(0)
            return +rho, +hi


# ---------------------------------------------------------------- edges

class _EdgeSystem:
    """``R(h, x) = 0``, ``J(h, x) v = 0``, ``l . v = 1`` in the unknowns ``(h, x, v)`` (SymPy, then mpmath)."""

    def __init__(self, solver=None, *, system=None, values=None, free=None):
        from symrmt.engine.blockfp import S_STRENGTH
        from symrmt.engine.linearize import EPS_SHIFT

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


def _classify(ds, x):
    """``"in"`` (inside the support: the root at ``z = x`` is complex), ``"out"`` (real), or ``"edge"``."""
    kind, h, _ = ds.float_point(x)
    if kind != "ok":
        return "edge", None
    tau = ds.s.tau(h)
    return ("in" if tau.imag > 1e-9 * (1 + abs(tau)) else "out"), h


def find_edge(ds, edge_sys, x_in, x_out, digits):
    """The edge between ``x_in`` (inside) and ``x_out`` (outside), to ``digits`` (two precisions)."""
    h_out = None
    for _ in range(60):
        mid = (x_in + x_out) / 2
        kind, h = _classify(ds, mid)
        if kind == "in":
            x_in = mid
        elif kind == "out":
            x_out, h_out = mid, h
        else:
            break
        if abs(x_out - x_in) <= 1e-9 * (1 + abs(x_out)):
            break
    if h_out is None:
        kind, h_out = _classify(ds, x_out)
        if kind != "out":
            raise DensityError(f"no real fixed point next to the edge near x = {x_out:.6g}")
    ds.last_out = (x_out, ds.s.tau(h_out).real)  # the outside point nearest the edge (for the atom scan)
    hr = [a.real for a in h_out]
    _, J, _ = ds.s._eval(h_out, complex(x_out, 0))
    Jr = np.array(J, dtype=complex).real
    _, _, vt = np.linalg.svd(Jr)
    v = vt[-1]
    lo = edge_sys.solve(hr, x_out, v, digits + 10)
    hi = edge_sys.solve(hr, x_out, v, digits + 20)
    with mpmath.workdps(digits + 20):
        if not abs(lo - hi) <= abs(hi) * mpmath.mpf(10) ** (-digits - 1) + mpmath.mpf(10) ** (-digits - 1):
            raise PrecisionError(f"the edge near x = {x_out:.6g}: solves at two precisions disagree")
        if not min(x_in, x_out) - 1e-6 * (1 + abs(x_out)) <= hi <= max(x_in, x_out) + 1e-6 * (1 + abs(x_out)):
            raise DensityError(f"the edge system converged to x = {mpmath.nstr(hi, 8)}, outside its bracket "
                               f"[{min(x_in, x_out):.8g}, {max(x_in, x_out):.8g}]")
        return +hi


# ---------------------------------------------------------------- atoms

def atom_mass(ds, x0, digits):
    """``lim eta Im tau(x0 + i eta)``, read at two heights ``10^-(digits+4)``, ``10^-(digits+6)``; ``None``
    when the mass is below ``10^-digits``."""
    s = ds.s
    h, eta = ds.near_axis(x0)
    dps = 2 * digits + 30
    m = s.m
    masses = []
    with mpmath.workdps(dps):
        eta = mpmath.mpf(eta)
        h = [mpmath.mpc(a) for a in h]
        x0m = mpmath.mpf(x0)
        for k in ATOM_TAIL:
            target = mpmath.mpf(10) ** (-(digits + k))
            while eta > target:
                new_eta = max(eta / 4, target)
                z = mpmath.mpc(x0m, eta)
                pv = s._pv(z, mp=True)
                v = s.c.fjs(h, pv)
                rhs = s.dz_mp(h, s._pvals(z, mp=True))
                dh = solve_dense([list(v[m + m * i:m + m * (i + 1)]) for i in range(m)], [-r for r in rhs],
                                 mpmath.mpc(0))
                pred = [a + 1j * (new_eta - eta) * dh[i] for i, a in enumerate(h)]
                h, _ = s.polish(pred, mpmath.mpc(x0m, new_eta), dps, steps=30)
                eta = new_eta
            _, tau = s.polish(h, mpmath.mpc(x0m, eta), dps)
            masses.append(eta * tau.imag)
        a, b = masses
        if not abs(a - b) <= mpmath.mpf(10) ** (-digits - 1) * (1 + abs(b)):
            raise PrecisionError(f"the atom at x = {x0}: the mass read at two heights disagrees "
                                 f"({mpmath.nstr(a, 8)} and {mpmath.nstr(b, 8)})")
        if b < mpmath.mpf(10) ** (-digits):
            return None
        return +b


def contour_atom(ds, a, b, tau_a, digits):
    """The atom in ``(a, b)`` (both outside the support, ``tau`` dropping between them): a first location by
    bisection on the real ``tau``; its mass ``m0`` and first moment ``m1`` (``-(1/2 pi i) oint z tau dz``,
    so the location is ``m1/m0`` to the digits asked) by the trapezoid rule on the circle of
    radius ``r = min(x0 - a, b - x0)/2`` at ``N`` and ``2N`` points (``N`` from 32, doubled up to 1024) with
    each ``tau`` polished at ``digits + 10``; the two must agree to ``digits``.  ``None`` when the mass
    is below ``10^-digits``."""
    s = ds.s
    lo, hi = a, b
    for _ in range(60):
        mid = (lo + hi) / 2
        kind, h = _classify(ds, mid)
        if kind == "in":
            return None  # a piece of the bulk between the grid points, not an atom
        if kind == "edge":  # the float finish fails this close to the pole: located as well as floats can
            lo = hi = mid
            break
        if s.tau(h).real >= tau_a:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * (1 + abs(hi)):
            break
    x0 = (lo + hi) / 2
    r = min(x0 - a, b - x0) / 2
    if not r > 0:
        return None
    ds.at_top(x0)

    def ring(N):
        with mpmath.workdps(digits + 10):
            m0 = m1 = mpmath.mpf(0)
            for k in range(N // 2):  # the upper half; the lower half is its conjugate
                th = (k + mpmath.mpf(1) / 2) * 2 * mpmath.pi / N
                z = mpmath.mpf(x0) + r * mpmath.expj(th)
                zc = complex(z)
                x_top, h_top = ds._top
                h = s.move(h_top, complex(x_top, ds.Y), zc)
                _, tau = s.polish(h, z, digits + 10)
                m0 += 2 * (tau * mpmath.expj(th)).real
                m1 += 2 * (tau * z * mpmath.expj(th)).real
            return -r * m0 / N, -r * m1 / N

    (prev, prev1) = ring(32)
    N = 64
    while N <= 1024:
        cur, cur1 = ring(N)
        with mpmath.workdps(digits + 10):
            tol = mpmath.mpf(10) ** (-digits - 1)
            if abs(cur - prev) <= tol * (1 + abs(cur)) and abs(cur1 - prev1) <= tol * (1 + abs(cur1)):
                if cur < mpmath.mpf(10) ** (-digits):
                    return None
                # the location: the first moment over the mass, -(1/2 pi i) oint z tau dz = mass * x0
                return {"x": +(cur1 / cur), "mass": +cur}
        prev, prev1, N = cur, cur1, 2 * N
    raise PrecisionError(f"the atom near x = {x0:.10g}: the contour integral did not settle to {digits} digits")


# ---------------------------------------------------------------- the whole computation

def _fresh_name(model) -> str:
    for k in range(100):
        name = "zeta" if k == 0 else f"zeta{k}"
        if name not in model.symbols and name not in model.matrices and name not in model.dims:
            return name
    raise DensityError("no free name for the spectral parameter")


#: a float64 point (``certify=k``) is kept when its fixed-point residual is below this (relative to ``1 + |h|``)
FLOAT_RESIDUAL = 1e-10
#: and when it agrees with the certified value of each k-th point to this relative difference
FLOAT_AGREE = 1e-8


def compute(model, matrix, xs, at, digits=15, edges=True, atoms=True, label=None, certify=None):
    """The :class:`~symrmt.engine.density.Density` of ``matrix`` on the points ``xs`` at the values ``at``."""
    from symrmt.engine.model import _exact_value
    from symrmt.engine import linearize as lin
    from symrmt.engine.nodes import MatrixNode, ModelError, Trace
    from symrmt.engine.density import Density

    node = model.expr(matrix)
    if not isinstance(node, MatrixNode):
        raise ModelError("density() takes a matrix expression (the M of rho_M), not a scalar")
    if node.rows != node.cols:
        raise ModelError(f"density() needs a square matrix, got {node.rows.name} x {node.cols.name}")
    from symrmt.engine.vectors import has_vectors

    if has_vectors(node):
        raise ModelError("density() takes matrices without vectors: a finite-rank term such as k*v*v.T does not "
                         "move the limiting density (it adds finitely many eigenvalues, of mass 0): drop it")
    if not lin.is_symmetric(node):
        raise ModelError("density() needs a symmetric matrix by structure (M == M.T after pushing transposes: "
                         "write Z.T*Z/n, K.T*K, G/sqrt(n) + ...); a non-symmetric matrix has no real spectral "
                         "density (see the Brown measure, docs/engine.md)")
    zname = _fresh_name(model)
    z = model.param(zname)
    expr = Trace(_inverse(node - z * model.identity(node.rows.name)))
    plan = model.plan(expr)
    zsym = next(p for p in plan.params if p.name == zname)
    values = {str(k): _exact_value(v, str(k)) for k, v in (at or {}).items()}
    known = {p.name for p in plan.params if p.name != zname}
    extra = sorted(k for k in values if k not in known)
    if extra:
        raise ModelError(f"unknown parameter {', '.join(extra)} in at= (the matrix's parameters: "
                         f"{', '.join(sorted(known)) or 'none'})")
    solver = ResolventSolver(plan, zsym, values)
    exact = [_exact_value(x, "x") if not isinstance(x, mpmath.mpf) else x for x in xs]
    xs = [float(x) for x in exact]
    scale = max(abs(x) for x in xs) if xs else 1.0
    ds = DensitySolve(solver, scale)
    dens, taus, status, kinds = [], [], [], []
    for i, (x, xe) in enumerate(zip(xs, exact)):
        kind, h, _ = ds.float_point(x)
        if kind != "ok":
            dens.append(None)
            taus.append(None)
            status.append("singular")
            kinds.append("edge")
            continue
        if certify is not None and i % certify != 0:
            # float64 only: checked (the residual at z = x, the Stieltjes sign), else recomputed in mpmath
            R, _, _ = solver._eval(h, complex(x, 0.0))
            t = solver.tau(h)
            if max(abs(r) for r in R) <= FLOAT_RESIDUAL * (1 + max(abs(a) for a in h)) and \
                    t.imag >= -1e-12 * (1 + abs(t)):
                rho = mpmath.mpf(max(t.imag, 0.0) / math.pi) if t.imag > 1e-9 * (1 + abs(t)) else mpmath.mpf(0)
                dens.append(rho)
                taus.append(mpmath.mpc(t))
                status.append("float")
                kinds.append("in" if rho > 0 else "out")
                continue
        try:
            try:
                rho, tau = ds.certified(xe, h, digits)
            except PrecisionError:  # at an edge on the grid the polish may stop short of quadratic
                rho, tau = ds.certified(xe, h, digits + 10)  # convergence: 10 more digits tell (or fail again)
        except DensityError:  # Newton does not converge quadratically: the point is on an edge (singular J)
            dens.append(None)
            taus.append(None)
            status.append("singular")
            kinds.append("edge")
            continue
        if certify is not None and i % certify == 0:
            t = solver.tau(h)  # the float value of a certified point must agree with it
            ft = mpmath.mpf(max(t.imag, 0.0) / math.pi) if t.imag > 1e-9 * (1 + abs(t)) else mpmath.mpf(0)
            if abs(ft - rho) > FLOAT_AGREE * (abs(rho) + 1e-12 * (1 + abs(t))):
                raise PrecisionError(f"the float64 density at x = {x:.6g} ({float(ft):.10g}) disagrees with its "
                                     f"certified value {mpmath.nstr(rho, 12)}: rerun without certify=")
        dens.append(rho)
        taus.append(tau)
        status.append("ok")
        kinds.append("in" if rho > 0 else "out")
    # the samples seen: the grid, plus probes next to a singular grid point (an atom or an edge on the grid)
    samples = [(x, k) for x, k in zip(xs, kinds)]
    if edges:
        for i in range(len(xs) - 1):
            pair = (kinds[i], kinds[i + 1])
            if "edge" in pair and pair != ("edge", "edge"):
                sing, other = (xs[i], xs[i + 1]) if pair[0] == "edge" else (xs[i + 1], xs[i])
                for k in range(1, 30):
                    probe = sing + (other - sing) * 2.0 ** -k
                    kind, _ = _classify(ds, probe)
                    if kind != "edge":
                        samples.append((probe, kind))
                        if kind != kinds[i if pair[0] != "edge" else i + 1]:
                            break
        samples.sort()
    seen = [(x, k) for x, k in samples if k != "edge"]
    edge_list, out_pairs = [], []
    if edges and len(seen) > 1:
        edge_sys = None
        for (xa, a), (xb, b) in zip(seen, seen[1:]):
            if a != b:
                if edge_sys is None:
                    edge_sys = _EdgeSystem(solver)
                x_in, x_out = (xa, xb) if a == "in" else (xb, xa)
                edge_list.append((find_edge(ds, edge_sys, x_in, x_out, digits), "lower" if a == "out" else "upper"))
                kind, h = _classify(ds, x_out)
                if kind == "out":  # the stretch between the grid's outside point and the edge, for the atom scan
                    pair = ((x_out, ds.s.tau(h).real), ds.last_out)
                    out_pairs.append(tuple(sorted(pair)))
    atom_list = []
    if atoms and xs:
        cands = []
        if min(xs) <= 0 <= max(xs):
            cands.append(0.0)
        cands += [x for x, k in zip(xs, kinds) if k == "edge" and x not in cands]
        for x0 in cands:
            try:
                mass = atom_mass(ds, x0, digits)
            except (DensityError, ZeroDivisionError, PrecisionError):
                continue
            if mass is not None:
                atom_list.append({"x": mpmath.mpf(x0), "mass": mass})
        # an atom between two grid points outside the support: tau(x + i0) is real and increasing on every
        # interval of the resolvent set, so a decrease between neighbours is a pole; its mass is the contour
        # integral -(1/2 pi i) oint tau dz around it (no exact location needed)
        for i in range(len(xs) - 1):
            if kinds[i] == kinds[i + 1] == "out" and taus[i] is not None and taus[i + 1] is not None:
                out_pairs.append(((xs[i], float(taus[i].real)), (xs[i + 1], float(taus[i + 1].real))))
        for (xa, ta), (xb, tb) in out_pairs:
            if any(xa < float(a["x"]) < xb for a in atom_list):
                continue  # the drop is an atom already found (at 0, or on the grid)
            if xb > xa and tb < ta:
                found = contour_atom(ds, xa, xb, ta, digits)
                if found is not None and not any(abs(float(a["x"]) - float(found["x"])) < 1e-9 for a in atom_list):
                    atom_list.append(found)
    support = _support([x for x, _ in seen], [k for _, k in seen], edge_list)
    return Density(xs, dens, taus, status, support, atom_list, digits, label or str(matrix), dict(values))


def _inverse(m):
    from symrmt.engine.nodes import Inverse

    return Inverse(m)


def _support(xs, kinds, edges):
    """Intervals ``[lo, hi]`` of the support seen on the grid: refined edges where found, else ``None``."""
    out, lo = [], None
    inside = bool(kinds) and kinds[0] == "in"
    pending = iter(sorted(edges, key=lambda e: e[0]))
    edge_list = list(pending)
    k = 0
    for i in range(len(xs) - 1):
        a, b = kinds[i], kinds[i + 1]
        if {a, b} == {"in", "out"}:
            e = edge_list[k][0] if k < len(edge_list) else None
            k += 1
            if a == "out":
                lo, inside = e, True
            else:
                out.append([lo, e])
                lo, inside = None, False
    if inside:
        out.append([lo, None])
    return out
