r"""The fixed point of ``tau((M - z)^{-1})`` at complex ``z``: the point solver of the spectral density.

:class:`ResolventSolver` holds the compiled block fixed point of one resolvent trace with a free spectral
parameter ``z`` and solves it in complex128 (the homotopy in ``s`` at ``Im z = O(1)``, moves in ``z`` with
the Stieltjes branch kept at every step, the Newton finish at real ``z``: the core's Newton and
continuation) and in mpmath (the polish: the core's iterative refinement, else its Newton).
:class:`DensitySolve` walks a grid with it: from the top ``x + iY`` down to ``x + i eta`` and along the
axis.  The steps of the whole computation are described in :mod:`symrmt.engine.density.solver`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from symrmt.core.certify import Disagree, agree, certify
from symrmt.core.continuation import Linear, follow, in_trust_region
from symrmt.core.linalg import inverse_numpy, solve_dense, solve_numpy
from symrmt.core.newton import newton, refine
from symrmt.core.numbers import COMPLEX128, MPCOMPLEX
from symrmt.engine.solve.edge import DensityError
from symrmt.errors import BranchError, ConvergenceError, PrecisionError
from symrmt.core.numbers import mpf_of
from symrmt.engine.lang.matrices import ModelError
from symrmt.engine.reduce.pencil_check import checked
from symrmt.engine.solve.certify import compiled_system

__all__ = ["ResolventSolver", "DensitySolve", "DensityError", "START_HEIGHT", "ETA_FLOOR", "MOVE", "CORRECT",
           "FINISH", "MAX_STEPS", "CERTIFY_GUARD", "CERTIFY_TRIES", "HORIZONTAL_STEPS", "ATOM_TAIL", "cstr"]

#: the start height ``Y`` of the descent, in units of ``1 + max(|LO|, |HI|)``
START_HEIGHT = 1
#: the descent in ``log Im z`` stops at this fraction of ``Y`` before the Newton finish at ``Im z = 0``
ETA_FLOOR = 1e-7
#: trust region of a step (fraction of ``1 + |h|``) and of the finish (near its predictor only; all through
#: :func:`symrmt.core.continuation.in_trust_region`)
MOVE = 0.1
CORRECT = 0.01
FINISH = 1e-3
MAX_STEPS = 2000
#: the certification of a point: Newton at ``digits + CERTIFY_GUARD`` and 10 more digits, on a disagreement
#: once more (``CERTIFY_TRIES``) with the guard doubled
CERTIFY_GUARD = 10
CERTIFY_TRIES = 2
#: a horizontal move near the axis that needs more steps than this falls back to the descent
HORIZONTAL_STEPS = 60
#: a mass below ``10^-digits`` is not an atom
ATOM_TAIL = (4, 6)


def _np_solve(rows, rhs):
    """One complex128 system (:func:`symrmt.core.linalg.solve_numpy`); singular: a :class:`ZeroDivisionError`."""
    return solve_numpy(rows, rhs)



#: the shifts of the inverses tried, in order, when the pencil's deterministic part is singular
SHIFTS = (1.0, -1.0, 3.0)


class ResolventSolver:
    """The fixed point of ``tau((M - z)^{-1})`` at complex ``z`` (floats, then mpmath to certify).

    Takes the plan of the resolvent trace ``trace(inv(M - z*I))``, the symbol ``zsym`` of ``z``, the exact
    ``values`` of the other parameters, the trace's ``index`` and the ``branch_sign`` of ``Im tau`` kept while
    ``Im z > 0``.  Raises :class:`DensityError` when the trace does not depend on ``z``; its methods raise
    :class:`DensityError` when a path stalls.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> plan = m.plan("trace(inv(G/sqrt(n) - z*I(n)))")
    >>> rs = ResolventSolver(plan, plan.params[0], {})
    >>> complex(rs.tau(rs.start(1j))).imag.__round__(12)   # (-z + sqrt(z^2 - 4))/2 = i (sqrt(5) - 1)/2 at z = i
    0.61803398875
    """

    #: the sign of ``Im tau`` expected while ``Im z > 0`` (``+1``: ``tau((M - z)^{-1})``; ``None``: not checked)
    branch_sign = 1

    def __init__(self, plan, zsym, values, index=0, branch_sign=1):
        self.branch_sign = branch_sign
        t = plan.traces[index]
        if not getattr(t, "tested", False):  # a quadratic-form plan's pencils are self-tested with their vectors
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
            raise ModelError(f"no value given for {', '.join(missing)} (pass them in at=...)", missing=missing,
                             known=[p.name for p in self.params if p.name != zsym.name])
        _check_float_range({p.name: values[p.name] for p in self.params if p.name != zsym.name})
        self.F = self.c.ffjs
        if self.F is None:
            raise DensityError("the compiled system is not plain arithmetic (no complex float path)")
        dz, _ = self.c.derivative_function((zsym,))
        self.dz_mp = dz
        self.dz = dz.float_version()
        if self.dz is None:  # dR/dz calls sqrt or a power (a coefficient sqrt(gamma)*z): its mpmath code on floats
            self.dz = lambda h, pv, f=dz: [complex(x) for x in f(h, pv)]
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

    def _pv(self, z, s=1.0, mp=False, eps=0.0):
        pv = self._pvals(z, mp)
        if mp:
            aux = self.c.aux_values(pv)
            return pv + [mpmath.mpf(s), mpmath.mpf(eps)] + list(aux)
        return pv + [float(s), float(eps)] + self._aux_float(z, pv)

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

    def residual_mp(self, h, z):
        """The residual ``R(h)`` at ``z`` (an mpmath number) in mpmath at the current precision, the constants
        exact (the compiled residual alone, as the certified path's refinement uses it)."""
        return list(self.c.res([mpmath.mpc(a) for a in h], self._pv(z, mp=True)))[:self.m]

    def tau_mp(self, h):
        """``tau = sum readout * h`` at the current precision, the readout's coefficients exact."""
        return sum(self._coef(c) * h[i] for i, c in self.readout)

    @staticmethod
    def _coef(c):
        """A readout coefficient (an exact SymPy number, such as an atom's weight 1/3) at the working
        precision (not through a float: 1/3 as a float is wrong in the 17th digit)."""
        c = sp.sympify(c)
        if c.is_Rational:
            return mpmath.mpf(int(c.p)) / int(c.q)
        return mpmath.mpmathify(sp.N(c, mpmath.mp.dps + 10))

    # -- float path
    def _eval(self, h, z, s=1.0, eps=0.0):
        m = self.m
        v = self.F(h, self._pv(z, s, eps=eps))
        return v[:m], [v[m + m * i:m + m * (i + 1)] for i in range(m)], v[m + m * m:m + m * m + m]

    def _newton(self, h, z, s=1.0, steps=20, tol=1e-13, eps=0.0):
        """:func:`symrmt.core.newton.newton` in complex128 (stagnation: less than twofold below 1e-8; a step
        more than twice the last one diverges); a failure is a :class:`ZeroDivisionError` (a refused step)."""
        def linear(x):
            R, J, dRs = self._eval(x, z, s, eps)
            return list(_np_solve(J, [-r for r in R])), None

        try:
            return newton(linear, h, COMPLEX128, tol, steps, shrink=2, floor=1e-8, diverge=2)[0]
        except ConvergenceError as exc:
            raise ZeroDivisionError(str(exc)) from None

    def _follow(self, h, point, dhdt, t0, t1, first=1 / 8, max_steps=MAX_STEPS, eps=None):
        """Follow ``h`` along ``t`` (``point(t) -> (z, s)``); ``dhdt(h, t)`` is the predictor; ``eps(t)``: the
        shift of the inverses along the path (default 0)."""
        # the core's continuation (trust region near the predictor and the previous point), in complex128
        def correct(pred, nxt):
            z, s = point(nxt)
            return self._newton(pred, z, s, steps=8, tol=1e-11, eps=0.0 if eps is None else eps(nxt)), None

        def branch(new, _):
            # the Stieltjes branch at every step: Im tau > 0 while Im z > 0 (the resolvent of the
            # symmetric s-scaled matrix, shifted inverses included); a step onto another root is refused
            z, _s = point(t_next[0])
            return z.imag <= 0 or self.branch_sign is None or self.branch_sign * self.tau(new).imag > 0

        class _Schedule(Linear):
            def advance(self, t):
                t_next[0] = super().advance(t)
                return t_next[0]

        def stalled(t):
            z, s = point(t)
            return f"the path stalled at z = {cstr(z)}, s = {s:.6g}"

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
        """``h`` at ``z0`` (``Im z0 > 0``) by the homotopy in ``s``.  Where the deterministic part is singular
        at ``s = 0`` (an inverse of a purely random matrix, such as the F matrix ``Z1.T*inv(Z2*Z2.T/n2)*Z1/n1``),
        the inverses are shifted by ``eps`` (:data:`~symrmt.engine.reduce.linearize.EPS_SHIFT`) for the homotopy, and
        the shift is then removed at ``s = 1`` (the residual is affine in ``eps``, so its derivative is a
        difference of two residuals)."""
        m = self.m
        try:
            h = self._newton([0j] * m, z0, 0.0, steps=3)  # linear at s = 0: L_0^{-1}
        except ZeroDivisionError:
            h = None
        if h is not None:
            def dhdt(h, s):
                R, J, dRs = self._eval(h, z0, s)
                return list(_np_solve(J, [-x for x in dRs]))

            return self._follow(h, lambda s: (z0, s), dhdt, 0.0, 1.0)
        failures = []
        for e0 in SHIFTS:
            try:
                h = self._newton([0j] * m, z0, 0.0, steps=3, eps=e0)
            except ZeroDivisionError as exc:
                failures.append(f"eps = {e0}: {exc}")
                continue

            def dhds(h, s, e0=e0):
                R, J, dRs = self._eval(h, z0, s, e0)
                return list(_np_solve(J, [-x for x in dRs]))

            def dhde(h, t, e0=e0):
                e = e0 * (1 - t)
                R, J, _ = self._eval(h, z0, 1.0, e)
                R1, _, _ = self._eval(h, z0, 1.0, e + 1)
                return list(_np_solve(J, [(a - b) * e0 for a, b in zip(R1, R)]))  # -J^{-1} dR/dt, de/dt = -e0

            try:
                h = self._follow(h, lambda s: (z0, s), dhds, 0.0, 1.0, eps=lambda s, e0=e0: e0)
                return self._follow(h, lambda t: (z0, 1.0), dhde, 0.0, 1.0, eps=lambda t, e0=e0: e0 * (1 - t))
            except (DensityError, ZeroDivisionError) as exc:
                failures.append(f"eps = {e0}: {exc}")
        raise DensityError("the deterministic part of the pencil is singular at s = 0 and no shift of its "
                           "inverses led the homotopy to the point (" + "; ".join(failures[:3]) + ")")

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
        if not in_trust_region(float(np.linalg.norm(np.subtract(new, pred))), None, size, FINISH):
            raise DensityError(f"the Newton finish at z = {x:.6g} left the path")
        t = self.tau(new)
        if self.branch_sign is not None and self.branch_sign * t.imag < -1e-12 * (1 + abs(t)):
            raise DensityError(f"the Newton finish at z = {x:.6g} reached Im tau < 0 (the other branch)")
        return new

    # -- mpmath
    def dh_dz(self, h, z):
        """``dh/dz = -J^{-1} dR/dz`` at the fixed point ``h`` at ``z`` (mpmath, the current precision); a singular
        Jacobian (an edge) raises :class:`ZeroDivisionError`."""
        m, zc = self.m, mpmath.mpc(z)
        h = [mpmath.mpc(x) for x in h]
        v = self.c.fjs(h, self._pv(zc, mp=True))
        rhs = self.dz_mp(h, self._pvals(zc, mp=True))
        return solve_dense([list(v[m + m * i:m + m * (i + 1)]) for i in range(m)], [-r for r in rhs], mpmath.mpc(0))

    def _refine(self, h, pv, zf, tol):
        """Iterative refinement ``h <- h - J^{-1} R(h)`` (:func:`symrmt.core.newton.refine`): the residual at the
        working precision (the compiled residual alone), the Jacobian in float64 (its inverse, NumPy); ``None``
        when the steps do not shrink at least a thousandfold each (then full Newton runs)."""
        m = self.m
        try:
            _, J, _ = self._eval([complex(x) for x in h], zf)
            inv = inverse_numpy(J, complex, max_cond=1e8)  # the core's LAPACK inverse; ill-conditioned: None
        except (ZeroDivisionError, OverflowError, ValueError):
            return None
        if inv is None:
            return None

        def solve(r):
            dx = inv @ np.array([complex(x) for x in r[:m]], dtype=complex)
            return [mpmath.mpc(d.real, d.imag) for d in dx]

        def step_of(dx, x):  # measured in float64, as the tolerance is
            return float(np.linalg.norm([complex(d) for d in dx])) / (1 + max(abs(complex(a)) for a in x))

        out = refine(lambda x: self.c.res(x, pv), solve, h, tol, 12, step_of=step_of)
        return None if out is None else out[0]

    def polish(self, h, z, dps, steps=None, tol=None):
        """Newton at ``dps`` digits from ``h`` at complex ``z``; ``(h, tau)`` (iterative refinement on the
        float64 Jacobian first, full Newton in mpmath when it does not contract).  The relative step
        tolerance is ``10^-(dps - 4)`` unless ``tol`` is given (near an atom the solution grows like
        ``1/eta`` and the step stops at about ``10^-dps |h|``: :func:`symrmt.engine.density.features.atom_mass`)."""
        m = self.m
        with mpmath.workdps(dps):
            zc = mpmath.mpc(z)
            pv = self._pv(zc, mp=True)
            h = [mpmath.mpc(x) for x in h]
            tol = mpmath.mpf(10) ** (-(dps - 4)) if tol is None else mpmath.mpf(tol)
            if steps is None and tol > mpmath.mpf(10) ** -280:  # float64 steps: not below its range
                out = self._refine(h, pv, complex(zc), float(tol))
                if out is not None:
                    tau = sum(self._coef(c) * out[i] for i, c in self.readout)
                    return out, tau
            def linear(x):
                v = self.c.fjs(x, pv)
                try:
                    dx = solve_dense([list(v[m + m * i:m + m * (i + 1)]) for i in range(m)], [-y for y in v[:m]],
                                     mpmath.mpc(0))
                except ZeroDivisionError:
                    raise DensityError(f"singular Jacobian at z = {cstr(complex(z))} (an edge of the support?)") from None
                return list(dx), None

            try:  # the core's Newton in mpmath complex numbers (stagnation: the step stops shrinking)
                h = newton(linear, h, MPCOMPLEX, tol, steps or 10 + dps // 4, shrink=1)[0]
            except DensityError:
                raise
            except ConvergenceError:
                raise DensityError(f"the Newton polish at {dps} digits did not converge at z = {cstr(complex(z))}") from None
            tau = sum(self._coef(c) * h[i] for i, c in self.readout)
            return h, tau


def cstr(z) -> str:
    """A complex number as short text for messages: 6 significant digits of the real part, 3 of the imaginary.

    >>> cstr(0.5 + 1j), cstr(complex(1 / 3, -2e-9))
    ('0.5+1i', '0.333333-2e-09i')
    """
    return f"{z.real:.6g}{z.imag:+.3g}i"


class DensitySolve:
    """The density of one matrix at fixed parameter values, point by point (see the module docstring).

    Takes the :class:`ResolventSolver` and ``scale`` (the grid's largest ``|x|``: the descent starts at height
    ``START_HEIGHT (1 + scale)``).  :meth:`float_point` gives the float64 root at a real point,
    :meth:`certified` the density and ``tau`` certified to ``digits`` (:class:`PrecisionError` when the two
    precisions disagree twice, :class:`BranchError` off the Stieltjes branch).

    >>> from fractions import Fraction
    >>> import mpmath
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> plan = m.plan("trace(inv(G/sqrt(n) - z*I(n)))")
    >>> ds = DensitySolve(ResolventSolver(plan, plan.params[0], {}), 3.0)
    >>> kind, h, _ = ds.float_point(1.0)
    >>> rho, tau = ds.certified(Fraction(1), h, 15)
    >>> kind, mpmath.nstr(rho, 15)   # the semicircle sqrt(4 - x^2)/(2 pi) at x = 1
    ('ok', '0.275664447710896')
    """

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
        """``(rho, tau)`` at ``x`` (exact: a Fraction or an mpf) certified to ``digits``, the branch checked: the
        core's two-precision certification with escalation (:func:`symrmt.core.certify.certify`), Newton at
        ``dps`` and ``dps + 10`` working digits from ``dps = digits + 10``.  A disagreement (at an edge on the grid
        the polish may stop short of quadratic convergence) escalates once, to ``dps = digits + 20``; each try
        certifies its working digits less :data:`CERTIFY_GUARD` (``digits``, then ``digits + 10``: the retry
        is the whole certification at 10 more digits, its agreement and its branch tolerance included).
        A second disagreement raises the last one's :class:`PrecisionError`; a :class:`DensityError` of the
        polish (no quadratic convergence: a point on an edge) is not escalated."""

        def attempt(dps):
            d = dps - CERTIFY_GUARD
            xm = x
            if not isinstance(xm, mpmath.mpf):
                with mpmath.workdps(d + 30):
                    xm = mpmath.mpf(x.numerator) / x.denominator
            lo_h, lo = self.s.polish(h, xm, dps)
            hi_h, hi = self.s.polish(lo_h, xm, dps + 10)
            with mpmath.workdps(dps + 10):
                tol = mpmath.mpf(10) ** (-d)
                if not agree(lo, hi, d):  # the core's two-precision agreement
                    raise Disagree(f"the density at x = {xm}: solves at {dps} and {dps + 10} digits "
                                   f"disagree beyond digit {d}")
                im = hi.imag
                if im < -abs(hi) * tol:
                    raise BranchError(f"Im tau(x + i0) = {mpmath.nstr(im, 5)} < 0 at x = {xm}: the continuation left "
                                      "the Stieltjes branch (Im tau > 0 for Im z > 0); no value is returned")
                rho = max(im, mpmath.mpf(0)) / mpmath.pi if im > abs(hi) * tol else mpmath.mpf(0)
                return (+rho, +hi), None

        return certify(attempt, digits, CERTIFY_GUARD, CERTIFY_TRIES, catch=(),
                       fail=lambda failures, dps: PrecisionError(failures[-1])).value


def _check_float_range(values: dict) -> None:
    """Refuse a parameter value the float64 first stage cannot hold (a :class:`ModelError`, exit 2): a
    magnitude above ``1e300`` or a nonzero one below ``1e-300`` (float64 would make it inf or 0)."""
    for name, v in values.items():
        try:
            q = Fraction(v)
        except (TypeError, ValueError):
            continue
        if abs(q) > Fraction(10) ** 300 or (q != 0 and abs(q) < Fraction(1, 10**300)):
            with mpmath.workdps(20):
                shown = mpmath.nstr(mpmath.mpf(q.numerator) / q.denominator, 3)
            raise ModelError(f"{name} = {shown} is outside the range of the float64 first stage of the density and "
                             "complex-value path (magnitudes 1e-300 to 1e300, or 0)")
