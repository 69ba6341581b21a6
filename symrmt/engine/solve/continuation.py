r"""Points the homotopy in the strength ``s`` cannot reach: a continuation in a parameter from one it can.

The solver's homotopy (:mod:`symrmt.engine.solve.newton`) follows the fixed point from the random part
off (``s = 0``) to on (``s = 1``) at fixed parameter values.  Two kinds of points defeat it although
their limit exists:

- **small shifts**: ``trace(inv(Z.T*Z/n + gamma*I(n)))`` at ``gamma = 1e-12``: the trace runs from
  ``1/gamma`` down over twelve decades of the path, and the steps stall;
- **the far side of a gap**: at ``s = 0`` the spectrum is a point (``0`` for ``Z.T*Z/n``), and as ``s``
  grows it sweeps across the target (``z = +0.1`` for ``c = 2``, below the spectrum
  ``[(sqrt(2) - 1)^2, (sqrt(2) + 1)^2]`` at ``s = 1``): the real path meets the edge on its way.

When the homotopy fails, :class:`ContinuedSolver` solves at ``s = 1`` at another value ``a`` of one
parameter ``theta`` of the pencil's deterministic part (its shifts: ``gamma``, ``z``; never a dimension
ratio), where the homotopy succeeds, and follows the fixed point from ``a`` to the target, at ``s = 1``,
with the same predictor-corrector and trust regions as the homotopy (:meth:`TraceSolver._follow`): in
``log theta`` (``theta = a (v/a)^t``) when ``a`` and the target ``v`` are positive, else on the segment.
The starts tried, in order: ``a = 1`` in ``log theta``; ``a = 1, -1`` on the segment; ``a = 10, -10``.
Along the path, the predictor is ``dh/dt = -J^{-1} dR/d theta * d theta/dt`` (the compiled derivative
of the residual in ``theta``).  A real path of a symmetric matrix breaks only at an edge of the
spectrum, so reaching the target proves the spectrum did not cross it on the way.  The path is
followed twice (the second time with finer steps) and the end points must agree, and the trace's
sanity bounds are checked, as for the homotopy.

The smallest ``gamma`` reached this way on the Marchenko-Pastur resolvent is limited by the trust
region (each step may grow the solution by at most a quarter, so a decade of ``gamma`` costs about 10
steps on the checking path); the log path is cut into legs of :data:`LEG_DECADES` decades, each within
``MAX_STEPS``.  :data:`GAMMA_FLOOR` is the floor the tests and docs state.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from symrmt.core.budget import stage
from symrmt.core.continuation import paths_gap
from symrmt.core.linalg import lu_factor, lu_solve, qr_solve
from symrmt.errors import BranchError, ConvergenceError
from symrmt.core.numbers import mpf_of
from symrmt.engine.solve.edge import DensityError, EdgeSystem
from symrmt.engine.solve.newton import FLOAT_EPS, FLOAT_TOL, PATHS_AGREE, TraceSolver

#: the smallest positive shift the continuation is documented (and tested) to reach
GAMMA_FLOOR = 1e-30
#: a path in log theta is followed in legs of at most this many decades (each within ``MAX_STEPS``)
LEG_DECADES = 6
#: working digits of the mpmath continuation (used where the float64 one fails or its two paths disagree)
MP_DIGITS = 40
#: the starts tried, in order: (kind, a)
STARTS = (("log", 1), ("line", 1), ("line", -1), ("log", 10), ("line", 10), ("line", -10))


#: inside :func:`along_curve`: the last start of each compiled system, ``{key: (raw values, h)}``
_CURVE: contextvars.ContextVar = contextvars.ContextVar("symrmt_curve", default=None)


@contextlib.contextmanager
def along_curve():
    """Solves inside this block continue each fixed point from the previous solve of the same system.

    The start of a point that differs from the previous one in one shift parameter (``gamma``, ``z``) is
    that point's solution followed in the parameter (:meth:`ContinuedSolver.start`); any other point, or a
    continuation that fails or ends off the branch, starts afresh from the homotopy in ``s``.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> with along_curve():   # (sqrt(g^2 + 4g) - g)/(2g) at g = 1, 2
    ...     [str(m.limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"gamma": g}, digits=12)) for g in (1, 2)]
    ['0.61803398875', '0.366025403784']
    """
    token = _CURVE.set({})
    try:
        yield
    finally:
        _CURVE.reset(token)


def shift_params(system):
    """The parameters that enter the deterministic part ``L_0`` and are not dimension ratios (memoized on the
    system): the ones :class:`ContinuedSolver` may continue in.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> m.dim("p", "c*n")
    Dim('p', c)
    >>> _ = m.gaussian("Z", "p", "n")
    >>> system = m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system
    >>> system.params, shift_params(system)
    ([c, gamma], [gamma])
    """
    done = system.__dict__.get("_shift_params")
    if done is None:
        done = system.__dict__["_shift_params"] = _shift_params(system)
    return list(done)


def _shift_params(system):
    free = set()
    for x in system.L0:
        if x != 0:
            free |= sp.sympify(x).free_symbols
    return [p for p in system.params if p in free and not p.is_positive]


class ContinuedSolver(TraceSolver):
    """:class:`TraceSolver` whose start, when the homotopy in ``s`` fails, is continued in a parameter
    (see the module docstring); the reasons of every failed route are kept for the error.

    Takes what :class:`TraceSolver` takes.  ``route`` names the continuation taken (absent when the homotopy
    succeeded); :meth:`start` raises :class:`~symrmt.errors.ConvergenceError` when no route reaches the point,
    listing the reasons, and :class:`~symrmt.errors.BranchError` for an end point off the branch.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> cs = compiled_system(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system)
    >>> ts = ContinuedSolver(cs, {"gamma": Fraction(1, 100)})
    >>> round(-ts.start()[1], 10)   # (sqrt(g^2 + 4g) - g)/(2g) at g = 1/100
    9.5124921973
    """

    def start(self, accept=None):
        if self._start is not None:
            return self._start
        curve = _CURVE.get()
        if curve is None:
            return self._fresh_start(accept)
        h = self._from_previous(curve.get(self.c.name), accept)
        if h is None:
            h = self._fresh_start(accept)
        else:
            self._start = h
            self.route = "continued from the previous point"
        curve[self.c.name] = (list(self.raw), h)
        return h

    def _from_previous(self, previous, accept):
        """``h`` followed from the previous point of a curve (:func:`along_curve`), or ``None`` when that point
        differs in anything but one shift parameter or the continuation fails (the caller then starts afresh)."""
        if previous is None:
            return None
        raw, h0 = previous
        moved = [k for k, (a, b) in enumerate(zip(raw, self.raw)) if a != b]
        if not moved:  # the same system at the same values (a second trace of one plan): the same start
            return None if accept is not None and accept(h0) is not None else h0
        if len(moved) != 1 or self.c.params[moved[0]] not in shift_params(self.c.system):
            return None
        k = moved[0]
        a, v = raw[k], self.raw[k]
        kind = "log" if a > 0 and v > 0 else "line"
        try:
            with stage(f"the continuation in {self.c.params[k]} from the previous point {self.c.params[k]} = {a}"):
                return self._route(k, kind, a, accept, h0=h0)
        except (ConvergenceError, BranchError, ArithmeticError, ValueError, OverflowError):
            return None

    def _fresh_start(self, accept):
        try:
            return super().start(accept)
        except BranchError:
            raise
        except ConvergenceError as exc:
            first = str(exc)
        params = shift_params(self.c.system)
        tried = []
        for theta in params:
            k = self.c.params.index(theta)
            v = self.raw[k]
            for kind, a in STARTS:
                if a == v or (kind == "log" and not (v > 0 and a > 0)):
                    continue
                try:
                    with stage(f"the continuation in {theta} from {theta} = {a}"
                               + (" (log scale)" if kind == "log" else "")):
                        h = self._route(k, kind, a, accept)
                except BranchError:
                    raise
                except (ConvergenceError, ArithmeticError, ValueError, OverflowError) as exc:
                    tried.append(f"from {theta} = {a}{' in log ' + str(theta) if kind == 'log' else ''}: {exc}")
                    continue
                self._start = h
                self.route = f"continued in {theta} from {a}" + (" (log scale)" if kind == "log" else "")
                return h
        if not params:
            raise ConvergenceError(first)
        raise ConvergenceError(f"{first}; no continuation in a parameter reached the point either ("
                               + "; ".join(tried[:3]) + ")")

    def solve(self, dps: int, alphas=()):
        """The polish; at a point where the fixed point's Jacobian is singular (an edge of the spectrum
        reached exactly, e.g. the semicircle resolvent at ``gamma = 2``), where Newton converges only
        linearly, the point is solved with ``J v = 0`` as an edge (:func:`edge_point`)."""
        try:
            return super().solve(dps, alphas)
        except ConvergenceError as exc:
            if alphas or "Newton did not converge" not in str(exc):
                raise
            out = self._edge_point(dps)
            if out is None:
                raise
            return out

    def _edge_point(self, dps):
        """``(h, {}, step, residual)`` when the target is an edge of the spectrum in one shift parameter
        (the extended system ``R = 0, J v = 0, l.v = 1`` in ``(h, theta, v)`` has its root at ``theta`` equal
        to the target to ``dps - 5`` digits), else ``None``."""
        start = self.start()
        m = self.c.m
        for theta in shift_params(self.c.system):
            k = self.c.params.index(theta)
            values = dict(zip((p.name for p in self.c.params), self.raw))
            try:
                es = EdgeSystem(system=self.c.system, values=values, free=theta)
                with mpmath.workdps(20):
                    v = self.c.fjs([mpmath.mpf(x) for x in start], self.c.pv(self._pvals(), mpmath.mpf(1)))
                J = np.array([[float(x) for x in v[m + m * i:m + m * (i + 1)]] for i in range(m)])
                null = np.linalg.svd(J)[2][-1]
                t = es.solve([float(x) for x in start], float(mpf_of(self.raw[k])), null, dps)
            except (DensityError, ZeroDivisionError, ValueError, np.linalg.LinAlgError):
                continue
            with mpmath.workdps(dps):
                target = mpf_of(self.raw[k])
                if abs(t - target) <= mpmath.mpf(10) ** (-(dps - 5)) * (1 + abs(target)):
                    h = es.last[:m]
                    with mpmath.workdps(dps):
                        res = max(abs(x) for x in self.c.fjs(h, self.c.pv(self._pvals(), mpmath.mpf(1)))[:m])
                    self.edge = str(theta)
                    return h, {}, mpmath.mpf(10) ** (-(dps - 5)), res
        return None

    def _route(self, k, kind, a, accept, h0=None):
        """``h`` at the target, continued from ``theta = a`` (where the solution is ``h0``, else the homotopy's):
        two paths (coarse, fine) that must agree."""
        if h0 is None:
            raw = list(self.raw)
            at = dict(zip((p.name for p in self.c.params), raw))
            at[self.c.params[k].name] = Fraction(a)
            base = TraceSolver(self.c, at)
            try:
                h0 = base.start()
            except ConvergenceError as exc:
                raise ConvergenceError(f"the homotopy in s fails at the start too ({exc})") from None
        kinds = (True, False) if self.c.ffjs is not None else (False,)
        for floats in kinds:  # floats first; mpmath at MP_DIGITS where float64 loses the path
            try:
                h, h2 = (self._follow_param(k, kind, a, h0, fine, floats) for fine in (False, True))
            except ConvergenceError:
                if floats:
                    continue
                raise
            gap = paths_gap(h, h2)  # the core's two-pass comparison (floats that disagree: mpmath decides)
            if gap <= PATHS_AGREE:
                break
            if not floats:
                raise BranchError(f"two continuation paths (coarse and fine steps) end at different fixed points "
                                  f"(relative gap {float(gap):.3g}): no value is returned")
        why = accept(h) if accept is not None else None
        if why is not None:
            raise BranchError("the continuation's end point is off the physical branch: " + why)
        return [float(x) for x in h] if self.c.ffjs is not None else h

    def _follow_param(self, k, kind, a, h0, fine, floats):
        c = self.c
        m = c.m
        target = self.raw[k]
        fn, _ = c.derivative_function((c.params[k],))
        with mpmath.workdps(20 if floats else MP_DIGITS):
            pvals = self._pvals()
            va, vt = mpf_of(a), mpf_of(target)

            def theta_of(t):
                if kind == "log":
                    return va * mpmath.exp(t * mpmath.log(vt / va)), mpmath.log(vt / va)
                return va + t * (vt - va), vt - va

            def params_at(t):
                p = list(pvals)
                th, _ = theta_of(t)
                p[k] = th
                return p

            if floats:
                ffn = fn.float_version()  # the derivative in theta on floats, where it is plain arithmetic

                def F(h, t):
                    p = params_at(t)
                    th, rate = theta_of(t)
                    pv = [float(x) for x in c.pv(p, mpmath.mpf(1))]
                    v = c.ffjs(h, pv)[:m + m * m]
                    scale = th * rate if kind == "log" else rate
                    if ffn is not None:
                        d, scale = ffn(list(h), [float(x) for x in p]), float(scale)
                    else:
                        d = fn([mpmath.mpf(x) for x in h], p)
                    return list(v) + [float(x * scale) for x in d]
                num, conv = (math.sqrt, FLOAT_EPS, FLOAT_TOL), float
            else:
                def F(h, t):
                    p = params_at(t)
                    th, rate = theta_of(t)
                    v = c.fjs(h, c.pv(p, mpmath.mpf(1)))[:m + m * m]
                    d = fn(h, p)
                    scale = th * rate if kind == "log" else rate
                    return list(v) + [x * scale for x in d]
                num, conv = (mpmath.sqrt, mpmath.eps, mpmath.mpf(10) ** -20), (lambda x: x)
            h = [conv(x) for x in h0]
            v = F(h, conv(0))
            rows = [v[m + m * i:m + m * (i + 1)] for i in range(m)]
            if floats:
                lu = lu_factor(rows)
                if lu is None:
                    raise ConvergenceError("singular Jacobian at the start of the continuation")
                dh = lu_solve(lu, [-x for x in v[m + m * m:]])
            else:
                dh = qr_solve(rows, [[-x for x in v[m + m * m:]]], mpmath.sqrt, mpmath.eps)[0]
            # in legs of at most LEG_DECADES decades of theta (each leg has its own MAX_STEPS)
            legs = 1
            if kind == "log":
                legs = max(1, math.ceil(abs(float(mpmath.log10(vt / va))) / LEG_DECADES))
            try:
                for i in range(legs):
                    h, dh = self._follow(F, lambda t: t, h, dh, conv(mpmath.mpf(i) / legs),
                                         conv(mpmath.mpf(i + 1) / legs), num, fine)
            except ConvergenceError as exc:
                msg = str(exc)
                if msg.startswith("stalled at "):
                    t = float(msg.split()[2])
                    th, _ = theta_of(mpmath.mpf(t))
                    msg = (f"stalled at {c.params[k]} = {mpmath.nstr(th, 6)} (the fixed point's Jacobian turns "
                           "singular there: an edge of the spectrum lies between the start and the target)")
                raise ConvergenceError(msg) from None
        return h
