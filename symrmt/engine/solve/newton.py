"""Numeric solve of a block fixed point: homotopy from ``L_0^{-1}``, Newton polish, implicit derivatives.

The SymPy system of :class:`symrmt.engine.reduce.fixed_point.BlockSystem` is compiled through the
package's compile step and code cache (:func:`symrmt.codegen.compile.compile_recipe`); the linear
algebra, Newton and continuation are the numerical core's (:mod:`symrmt.core`) and the
errors are its :class:`~symrmt.errors.ConvergenceError` and friends.

Homotopy: the random part of the pencil is scaled by ``sqrt(s)``; at ``s = 0`` the residual
is linear and its root is ``L_0^{-1}``; the solution is followed to ``s = 1`` by a
predictor (the implicit derivative ``dH/ds = -J^{-1} dR/ds``) and a Newton corrector, halving
the step on trouble.  Each step has a trust region: the corrected point must stay close to the
predictor *and* to the previous point.  The second bound is what keeps a steep start (the
Marchenko-Pastur resolvent with ``c < 1`` at ``gamma = 1/100``: ``tau`` runs from ``1/gamma`` down)
from letting Newton settle on the other root near an overshooting predictor.  The path is then
followed a second time with steps at most ``1/8`` and a trust region twice as tight; the two
end points must agree (a jump to another branch depends on the steps, the branch does not), and
the Newton polish at the working precision must stay at that point.
The path runs on Python floats through the same generated code where it only uses
arithmetic, else in mpmath at 20 digits; only the final Newton polish runs at the
requested precision.
"""

from __future__ import annotations

import hashlib
from fractions import Fraction
import inspect
import math

import mpmath
import sympy as sp

from symrmt.errors import ParameterError
from symrmt.cache import cached
from symrmt.engine.reduce import fixed_point as blockfp, linearize, merge
from symrmt.engine.reduce.fixed_point import S_STRENGTH
from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.core import continuation as _cc
from symrmt.core.continuation import Linear, check_polish, follow, in_trust_region, two_pass
from symrmt.core.linalg import lu_factor, lu_solve, qr_solve
from symrmt.core.newton import newton, refine
from symrmt.core.numbers import FLOAT64, MPMATH
from symrmt.core.numbers import FLOAT_EPS, mpf_of
from symrmt.errors import BranchError, ConvergenceError
from symrmt.codegen.compile import compile_recipe

FLOAT_TOL = 1e-12
#: most accepted-or-rejected steps of one leg of a path
MAX_STEPS = 600
#: the shift is removed down to ``eps = e0 * 8**-UNSHIFT_DECADES8`` before the path gives up
UNSHIFT_STEPS = 48
#: the finish at ``eps = 0`` from the predictor of the shifted path may move at most this fraction of
#: ``1 + |h|`` from it (the core's trust region near the predictor)
UNSHIFT_FINISH = 0.1
NEWTON_SLACK = 5
#: trust region of a continuation step: the corrected point may move at most this fraction of ``1 + |h|``
#: from the previous point, and the Newton correction at most ``CORRECTION_FRACTION`` from the predictor
#: (the values of :mod:`symrmt.core.continuation`; module attributes here, read at each call)
MOVE_FRACTION = _cc.MOVE_FRACTION
CORRECTION_FRACTION = _cc.CORRECTION_FRACTION
#: the checking path: largest step (a fraction of the leg) and the factor on the trust region
CHECK_MAX_STEP = _cc.CHECK_MAX_STEP
CHECK_TIGHTEN = _cc.CHECK_TIGHTEN
#: relative agreement of the two paths' end points, and the largest relative move of the polish
PATHS_AGREE = _cc.PATHS_AGREE
POLISH_MOVE = _cc.POLISH_MOVE


@cached(maxsize=1)
def source_digest() -> str:
    """Digest of the modules that derive the compiled systems (part of every cache name): 16 hex digits,
    which change when :mod:`~symrmt.engine.reduce.fixed_point`, :mod:`~symrmt.engine.reduce.linearize` or
    :mod:`~symrmt.engine.reduce.merge` change.

    >>> d = source_digest()
    >>> len(d), int(d, 16) >= 0, source_digest() is d
    (16, True, True)
    """
    h = hashlib.sha256()
    for mod in (blockfp, linearize, merge):
        h.update(inspect.getsource(mod).encode())
    return h.hexdigest()[:16]


def aux_split(exprs, params):
    """Replace non-polynomial parameter subexpressions (``sqrt(c)``, ``1/c``) by auxiliary symbols.

    Takes expressions and the parameter symbols.  Returns ``(exprs', aux_symbols, aux_exprs)``: the
    generated code of ``exprs'`` is plain arithmetic in the unknowns, the parameters and the auxiliaries,
    so it also runs on floats.

    >>> import sympy as sp
    >>> g, x = sp.Symbol("g", positive=True), sp.Symbol("x")
    >>> aux_split([x * sp.sqrt(g) + x ** 2 / g + g ** 2], [g])
    ([aux_0*x + aux_1*x**2 + g**2], [aux_0, aux_1], [sqrt(g), 1/g])
    """
    pset = set(params)
    aux = {}

    def visit(e):
        if not e.free_symbols or e.free_symbols <= pset:
            if e.is_Symbol or e.is_Number:
                return e
            if e.is_Pow and e.exp.is_Integer and e.exp > 0:
                return visit(e.base) ** e.exp
            if e.is_Add or e.is_Mul:
                return e.func(*[visit(a) for a in e.args])
            if e not in aux:
                aux[e] = sp.Symbol(f"aux_{len(aux)}", real=True)
            return aux[e]
        if e.is_Atom:
            return e
        return e.func(*[visit(a) for a in e.args])

    out = [visit(sp.sympify(x)) for x in exprs]
    return out, list(aux.values()), list(aux.keys())


class CompiledSystem:
    """A :class:`~symrmt.engine.reduce.fixed_point.BlockSystem` compiled to mpmath (and floats where possible).

    Takes the block system and its cache key (:func:`symrmt.engine.solve.certify.compiled_system` builds
    both and memoizes); holds ``m`` (the number of unknowns), ``params``, the compiled ``[R, J, dR/ds]``
    (``fjs``, and ``ffjs`` on floats, ``None`` where the code needs mpmath) and the residual ``res``.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> cs = compiled_system(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system)
    >>> cs.m, cs.params, cs.ffjs is not None
    (2, [gamma], True)
    >>> h = [-(5 ** 0.5 - 1) / 2] * 2   # the Marchenko-Pastur fixed point at gamma = 1, s = 1
    >>> max(abs(r) for r in cs.ffjs(h, cs.pv([1.0], 1.0))[:2]) < 1e-15
    True
    """

    def __init__(self, system, key: str):
        self.system = system
        self.m = len(system.h)
        self.params = list(system.params)
        self.name = "trace_" + hashlib.sha256((key + source_digest()).encode()).hexdigest()[:24]
        m = self.m

        memo = {}

        def flat():
            if "flat" not in memo:
                J = system.jacobian()
                fl = list(system.residual) + [x for row in J for x in row] + system.d_strength() + system.d_shift()
                memo["flat"] = fl
                memo["split"] = aux_split(fl, self.params)
            return memo["flat"]

        def split():
            flat()
            return memo["split"]

        def args(aux_syms):
            return [list(system.h), self.params + [S_STRENGTH, EPS_SHIFT] + aux_syms]

        def build_fjs():  # R, J, dR/ds
            out, aux_syms, _ = split()
            return args(aux_syms), out[:m + m * m + m]

        def build_fje():  # R, J, dR/d eps
            out, aux_syms, _ = split()
            return args(aux_syms), out[:m + m * m] + out[m + m * m + m:]

        def build_res():
            out, aux_syms, _ = split()
            return args(aux_syms), out[:m]

        def build_aux():
            _, _, aux_exprs = split()
            return [self.params], aux_exprs + [sp.Integer(0)]

        self.aux = compile_recipe(self.name + "_aux", build_aux)
        self.fjs = compile_recipe(self.name + "_fjs", build_fjs)
        self.res = compile_recipe(self.name + "_res", build_res)
        self.ffjs = self.fjs.float_version()
        self._build_fje = build_fje
        self._fje = None
        self._deriv = {}
        assert m > 0

    def aux_values(self, pvals):
        return list(self.aux(pvals))[:-1]

    def pv(self, pvals, s, e=0):
        """The argument list ``params + [s, eps] + aux`` at the current precision."""
        return list(pvals) + [s, e] + self.aux_values(pvals)

    def fje(self, floats: bool):
        """Compiled ``[R, J, dR/d eps]`` (the shift path), on floats when possible."""
        if self._fje is None:
            c = compile_recipe(self.name + "_fje", self._build_fje)
            self._fje = (c, c.float_version())
        return self._fje[1] if floats else self._fje[0]

    def derivative_function(self, alpha):
        """Compiled ``rhs`` of the multi-index ``alpha`` and its ``lower`` multi-indices."""
        alpha = blockfp._canon(alpha)
        if alpha not in self._deriv:
            tag = "_".join(x.name for x in alpha)
            lower = [b for b in blockfp._submultisets(alpha) if b and b != alpha]

            def build():
                rhs, _ = self.system.derivative_rhs(alpha)
                args = [list(self.system.h)] + [self.system.derivative_symbols(b) for b in lower] + [self.params]
                return args, rhs

            fn = compile_recipe(f"{self.name}_d_{tag}", build)
            self._deriv[alpha] = (fn, lower)
        return self._deriv[alpha]


def _newton(F, h, pv, m, tol, maxsteps, sqrt, eps, chord=False):
    """Newton on ``R(h) = 0`` with the compiled flat ``[R, J, dR/ds]``; returns ``(h, dh/ds, step)``.

    The iteration and its stopping rules are :func:`symrmt.core.newton.newton`'s.  On floats the
    linear systems go through a float LU, in mpmath through the core's QR.  ``chord`` (floats only,
    the continuation's corrector): the Jacobian is factored once, at the start point, and its steps
    must contract at least twofold, else :class:`ConvergenceError` (the caller then takes a smaller step).
    """
    floats = sqrt is math.sqrt
    ctx = FLOAT64 if floats else MPMATH
    residual_only = getattr(F, "residual", None) if chord else None  # R alone is cheaper where offered
    state = {"lu": None, "dhs": None}

    def linear(x):
        lu = state["lu"]
        v = residual_only(x, pv) if residual_only is not None and lu is not None and floats else F(x, pv)
        if floats:
            if lu is None or not chord:
                lu = state["lu"] = lu_factor([v[m + m * i:m + m * (i + 1)] for i in range(m)])
                if lu is None:
                    raise ConvergenceError("singular Jacobian in the fixed-point solve")
                state["dhs"] = lu_solve(lu, [-x for x in v[m + m * m:]])
            return lu_solve(lu, [-x for x in v[:m]]), state["dhs"]
        rows = [v[m + m * i:m + m * (i + 1)] for i in range(m)]
        dx, dhs = qr_solve(rows, [[-x for x in v[:m]], [-x for x in v[m + m * m:]]], sqrt, eps)
        return dx, dhs

    return newton(linear, h, ctx, tol, maxsteps, stagnation=not chord, contract=chord and floats,
                  residual=lambda x: max(abs(r) for r in F(x, pv)[:m]))


def _float_lu(rows):
    """LU factorization with partial pivoting of a float matrix (lists); ``None`` if singular
    (:func:`symrmt.core.linalg.lu_factor`)."""
    return lu_factor(rows)


def _lu_solve(lu, b):
    """Solve with a :func:`_float_lu` factorization (:func:`symrmt.core.linalg.lu_solve`)."""
    return lu_solve(lu, b)


def _refine(apply_residual, lu, x, tol, maxsteps=60):
    """Iterative refinement (:func:`symrmt.core.newton.refine`): ``x <- x - LU^{-1} r(x)`` with the float
    factorization ``lu`` of the Jacobian and the residual ``r`` at the working precision; returns
    ``(x, step)`` or ``None`` when the steps stop shrinking fast (then the caller falls back to full Newton)."""
    def solve(r):
        # the float solve sees the residual scaled to max |r| = 1, and the step is measured in mpmath: a
        # residual or a step below the float range (1e-308; its square below 1e-154) must not read as 0
        scale = max(abs(v) for v in r)
        if scale == 0:
            return [mpmath.mpf(0)] * len(x)
        return [scale * mpmath.mpf(b) for b in _lu_solve(lu, [v / scale for v in r])]

    return refine(apply_residual, solve, x, tol, maxsteps, ctx=MPMATH, contraction=mpmath.mpf("1e-3"))


#: the certification's second working precision is this many digits above its first one
SECOND_PRECISION = 10


class TraceSolver:
    """Solves one compiled system at given parameter values (exact inputs), at any precision.

    Takes the :class:`CompiledSystem` and ``values`` (parameter name -> exact number);
    :meth:`start` follows the homotopy to about 12 digits, :meth:`solve` polishes at ``dps`` digits with the
    derivatives asked.  Raises :class:`~symrmt.errors.ParameterError` when a parameter has no value, and
    from :meth:`start` :class:`~symrmt.errors.ConvergenceError` or :class:`~symrmt.errors.BranchError`.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import mpmath
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> cs = compiled_system(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system)
    >>> ts = TraceSolver(cs, {"gamma": Fraction(1)})
    >>> [round(x, 12) for x in ts.start()]   # tau = -H[1] = (sqrt(5) - 1)/2
    [-0.61803398875, -0.61803398875]
    >>> h, d, step, res = ts.solve(30, [(cs.params[0],)])
    >>> with mpmath.workdps(30):   # d tau/d gamma = -1/sqrt(5)
    ...     mpmath.nstr(-h[1], 25), mpmath.nstr(-d[(cs.params[0],)][1], 12)
    ('0.6180339887498948482045868', '-0.4472135955')
    >>> TraceSolver(cs, {})
    Traceback (most recent call last):
        ...
    symrmt.errors.ParameterError: no value given for gamma
    """

    def __init__(self, compiled: CompiledSystem, values: dict):
        self.c = compiled
        missing = [p.name for p in compiled.params if p.name not in values]
        if missing:
            raise ParameterError(f"no value given for {', '.join(missing)}")
        self.raw = [values[p.name] for p in compiled.params]
        self._start = None
        self._lu_cache = None
        self._solved = {}  # dps -> (alphas, (h, derivs, step, residual)) of the last polish at that precision

    def _pvals(self):
        return [mpf_of(x) for x in self.raw]

    def _follow(self, F, pv_at, h, dh, t0, t1, num, fine=False):
        """Follow the solution from ``t0`` to ``t1`` (:func:`symrmt.core.continuation.follow`: predictor ``dh``,
        Newton corrector, the trust region near the predictor and near the previous point); ``fine``: the
        checking path (steps at most ``CHECK_MAX_STEP`` of the leg, trust region ``CHECK_TIGHTEN`` times tighter)."""
        sqrt, eps, tol = num
        m = self.c.m
        ctx = FLOAT64 if sqrt is math.sqrt else MPMATH

        def correct(pred, nxt):
            # intermediate points to about half the digits (they only seed the next predictor); the end
            # point then gets a full Newton polish
            new, ndh, _ = _newton(F, pred, pv_at(nxt), m, sqrt(tol), 12, sqrt, eps, chord=True)
            if nxt == t1:
                new, ndh, _ = _newton(F, new, pv_at(nxt), m, tol, 12, sqrt, eps)
            return new, ndh

        schedule = Linear(t0, t1, first=16 if fine else 4, cap=CHECK_MAX_STEP if fine else 1)
        # the trust region near the previous point: a predictor that overshoots (a steep start, e.g. the
        # atom at 0 of a rank-deficient Wishart at small gamma) must not let Newton settle on the
        # other branch near the overshoot
        return follow(correct, h, dh, t0, t1, schedule, ctx, correction=CORRECTION_FRACTION, move=MOVE_FRACTION,
                      tighten=CHECK_TIGHTEN if fine else 1, max_steps=MAX_STEPS,
                      catch=(ConvergenceError, ArithmeticError, ValueError, OverflowError))

    def _path(self, floats: bool, shifts=(0, 1, 3, Fraction(1, 3)), fine: bool = False):
        """``h`` at ``s = 1``: from ``L_0^{-1}`` at ``s = 0`` along ``s``; if ``L_0`` is singular, along ``s`` at
        the first shift ``eps`` of the inverses that makes it regular, then along ``eps`` back to 0 at ``s = 1``.
        ``fine``: the checking path (see :meth:`_follow`)."""
        if floats:
            num, F, conv = (math.sqrt, FLOAT_EPS, FLOAT_TOL), self.c.ffjs, float
        else:
            num, F, conv = (mpmath.sqrt, mpmath.eps, mpmath.mpf(10) ** -15), self.c.fjs, (lambda x: x)
        one, zero = conv(1), conv(0)
        pvals = self._pvals()
        m = self.c.m
        for e0 in shifts:
            e0 = conv(mpf_of(e0))
            try:  # linear at s = 0: one Newton step gives L0^{-1}
                h, dh, _ = _newton(F, [zero] * m, [conv(x) for x in self.c.pv(pvals, zero, e0)], m, num[2], 4, *num[:2])
                break
            except (ConvergenceError, ArithmeticError, ValueError):
                continue
        else:
            raise ConvergenceError("the deterministic part L_0 of the pencil is singular, even with shifted inverses")
        try:
            h, _ = self._follow(F, lambda t: [conv(x) for x in self.c.pv(pvals, t, e0)], h, dh, zero, one, num, fine)
        except ConvergenceError as exc:
            raise ConvergenceError(
                f"the homotopy in the strength s of the random part {exc} (the pencil turns singular on the "
                "way: the expression may have no real limit at these values, e.g. a resolvent evaluated inside "
                "the spectrum)"
            ) from None
        if e0 != 0:
            Fe = self.c.fje(floats)
            if Fe is None:
                raise ConvergenceError("no float version of the shift path")
            pv_at = (lambda t: [conv(x) for x in self.c.pv(pvals, one, t)])
            _, dh, _ = _newton(Fe, h, pv_at(e0), m, num[2], 12, *num[:2])
            try:
                h = self._unshift(Fe, pv_at, h, dh, e0, num, fine)
            except ConvergenceError as exc:
                raise ConvergenceError(
                    f"the deterministic part of the pencil is singular, and the path that removes the shift eps "
                    f"of the inverses {exc} (an inverse may not exist in the limit at these values)"
                ) from None
        return h

    def _unshift(self, Fe, pv_at, h, dh, e0, num, fine=False):
        """From the shift ``e0`` to 0: geometric steps ``eps -> eps/8`` (the scale of the solution may be
        far below ``e0``), trying at each point to finish at ``eps = 0`` from the predictor."""
        sqrt, eps, tol = num
        m = self.c.m
        e = e0
        zero = e0 * 0
        scale = 1 + sqrt(sum(x * x for x in h))
        for _ in range(UNSHIFT_STEPS):
            if sqrt(sum(x * x for x in h)) > 1e30 * scale:
                raise ConvergenceError(f"diverges as eps -> 0 (|H| = {float(sqrt(sum(x * x for x in h))):.3g})")
            pred = [a - b * e for a, b in zip(h, dh)]
            try:
                new, _, _ = _newton(Fe, pred, pv_at(zero), m, tol, 12, sqrt, eps)
                size = 1 + sqrt(sum(x * x for x in h))
                jump = sqrt(sum((a - b) ** 2 for a, b in zip(new, pred)))
                if in_trust_region(jump, None, size, UNSHIFT_FINISH) and all(x == x for x in new):
                    return new
            except (ConvergenceError, ArithmeticError, ValueError, OverflowError):
                pass
            h, dh = self._follow(Fe, pv_at, h, dh, e, e / 8, num, fine)
            e = e / 8
        raise ConvergenceError(f"stalled at {float(e):.3g}")

    def start(self, accept=None):
        """``h`` at ``s = 1`` to about 12 digits (floats, else mpmath at 20 digits), checked.

        The path is followed twice (the second time with finer steps and a tighter trust region) and
        the two end points must agree to ``PATHS_AGREE``; then ``accept(h) -> str or None``, a branch
        check (the sanity bounds of the trace; ``None``: accepted), must pass.  A disagreement or a
        failed check raises :class:`BranchError`; nothing else is tried, so no other root can be
        picked up on the way.
        """
        if self._start is not None:
            return self._start
        errors = []
        with mpmath.workdps(20):
            kinds = (True, False) if self.c.ffjs is not None else (False,)
            for floats in kinds:  # floats first; mpmath at 20 digits when a float path fails
                try:
                    h = self._path(floats)
                except (ConvergenceError, ArithmeticError, ValueError, OverflowError) as exc:
                    errors.append(str(exc))
                    if "diverges" in str(exc):  # the inverse does not exist in the limit: mpmath will not help
                        break
                    continue
                # the second pass (finer steps, tighter trust region) must end at the same point
                two_pass(lambda fine, floats=floats: self._path(floats, fine=fine), first=h, agree=PATHS_AGREE)
                why = accept(h) if accept is not None else None
                if why is not None:
                    raise BranchError("the homotopy's end point is off the physical branch: " + why)
                self._start = [float(x) for x in h] if self.c.ffjs is not None else h
                return self._start
        raise ConvergenceError(errors[0])

    def solve(self, dps: int, alphas=()):
        """``(h, {alpha: H_alpha}, step, residual)`` at ``s = 1``, polished at ``dps`` digits.

        ``alphas``: the multi-indices of parameter derivatives wanted (implicit differentiation).  A second
        call at the same ``dps`` (the proof's centre at the certified solve's upper precision) returns the
        first one's polish (with its derivatives) when it computed all of ``alphas``.
        """
        want = {blockfp._canon(a) for a in alphas}
        done = self._solved.get(dps)
        if done is not None and want <= done[0]:
            h, derivs, step, res = done[1]
            return list(h), {a: list(v) for a, v in derivs.items()}, step, res
        out = self._solve(dps, alphas)
        self._solved[dps] = (set(out[1]), (list(out[0]), {a: list(v) for a, v in out[1].items()}, out[2], out[3]))
        return out

    def _solve(self, dps: int, alphas=()):
        start = self.start()
        m = self.c.m
        # the certification's second precision (``dps``) starts from its first one's polish (``dps - 10``) and
        # refines it (a step or two) instead of repeating the whole polish; a new attempt at a larger guard
        # starts from the float start again, so that a polish that stalls cannot carry over to it
        lower = dps - SECOND_PRECISION if dps - SECOND_PRECISION in self._solved else None
        with mpmath.workdps(dps):
            pvals = self._pvals()
            pv = self.c.pv(pvals, mpmath.mpf(1))
            tol = mpmath.mpf(10) ** (-(dps - NEWTON_SLACK))
            h0 = [mpmath.mpf(x) for x in start]
            lu = self._lu(h0, pv)
            if lower is not None:
                h0 = [+x for x in self._solved[lower][1][0]]
            out = None
            if lu is not None:
                out = _refine(lambda x: self.c.res(x, pv), lu, h0, tol)
            if out is not None:
                h, step = out
            else:
                h, _, step = _newton(self.c.fjs, h0, pv, m, tol, 8 + dps // 5, mpmath.sqrt, mpmath.eps)
            check_polish(h, h0, dps, POLISH_MOVE, nstr=lambda v: mpmath.nstr(v, 3))
            v = self.c.fjs(h, pv)
            res = max(abs(x) for x in v[:m])
            derivs = {}
            if alphas:
                rows = [v[m + m * i:m + m * (i + 1)] for i in range(m)]
                starts = self._solved[lower][1][1] if lower is not None else {}
                for alpha in sorted({blockfp._canon(a) for a in alphas}, key=len):
                    self._derivative(alpha, h, rows, pvals, derivs, lu, tol, starts.get(alpha))
            return h, derivs, step, res

    def _lu(self, h, pv):
        """Float LU of the Jacobian at ``h`` (cached per start point)."""
        if self._lu_cache is None:
            m = self.c.m
            v = None
            if self.c.ffjs is not None:  # the Jacobian on floats where the compiled code is plain arithmetic
                try:
                    v = self.c.ffjs([float(x) for x in h], [float(x) for x in pv])
                except (ArithmeticError, ValueError, OverflowError):
                    v = None
                if v is not None and not all(math.isfinite(x) for x in v[m:m + m * m]):
                    v = None
            if v is None:
                with mpmath.workdps(20):
                    v = self.c.fjs(h, pv)
            self._lu_cache = (_float_lu([v[m + m * i:m + m * (i + 1)] for i in range(m)]),)
        return self._lu_cache[0]

    def _derivative(self, alpha, h, rows, pvals, derivs, lu=None, tol=None, start=None):
        """``H_alpha`` from ``J H_alpha = -rhs`` (iterative refinement on the float LU from ``start``, the same
        derivative at a lower precision, or 0; else QR)."""
        if alpha in derivs:
            return derivs[alpha]
        if not set(alpha) <= set(self.c.params):
            derivs[alpha] = [mpmath.mpf(0)] * self.c.m
            return derivs[alpha]
        fn, lower = self.c.derivative_function(alpha)
        lows = [self._derivative(b, h, rows, pvals, derivs, lu, tol) for b in lower]
        rhs = fn(h, *lows, pvals)
        out = None
        if lu is not None:
            def apply(x):
                return [sum(r[j] * x[j] for j in range(len(x)) if r[j]) + b for r, b in zip(rows, rhs)]
            x0 = [+x for x in start] if start is not None else [mpmath.mpf(0)] * self.c.m
            out = _refine(apply, lu, x0, tol)
        derivs[alpha] = out[0] if out is not None else qr_solve(rows, [[-x for x in rhs]], mpmath.sqrt,
                                                                 mpmath.eps)[0]
        return derivs[alpha]
