"""Certification of a trace limit: two working precisions, escalation, sanity bounds.

The value is computed at ``digits + guard`` and ``digits + guard + 10`` working digits
(each solve polished by Newton from the homotopy's start); it is returned only when the
Newton steps reached beyond the digits asked for and the two values agree to ``digits``
significant digits (``certificate = "relative"``), or, for a limit that is 0, when both lie within
``10^-(digits+1)`` of each other and within ``10^-digits`` of 0: the value is then 0 with an
absolute error below ``10^-digits`` (``certificate = "absolute"``).  Otherwise the guard doubles, up to ``ESCALATIONS + 1`` tries (one more than the
core's default, :mod:`symrmt.core.certify`); then :class:`~symrmt.errors.PrecisionError` says what happened.

The result is a :class:`TraceLimit` (re-exported as ``symrmt.engine.TraceLimit``); it lives here, below
the solvers that build one (:mod:`~symrmt.engine.solve.quadratic_forms`, :mod:`~symrmt.engine.routes.complex_limit`) and the
facade.  The branch check of a start (:func:`branch_acceptor`), the sanity bounds (:func:`check_bounds`,
:func:`holds`), the reality check (:func:`check_real`) and the compiled outer formula
(:func:`formula_function`) are shared with them.
"""

from __future__ import annotations


import mpmath
import sympy as sp

from symrmt.engine.reduce.plan import formula_args
from symrmt.errors import ParameterError
from symrmt.cache import cache_dict, cached
from symrmt.engine.reduce.pencil_check import checked
from symrmt.errors import BranchError, ConvergenceError
from symrmt.codegen.compile import compile_expr
from symrmt.core.numbers import mpf_of
from symrmt.core.certify import Disagree, agree, certify
from symrmt.core.certify import ESCALATIONS, GUARD
from symrmt.core.budget import stage
from symrmt.engine.lang.matrices import Const, Diagonal, walk
from symrmt.engine.reduce.atoms import AtomSystem
from symrmt.engine.solve.atoms import AtomCompiled
from symrmt.engine.solve.continuation import ContinuedSolver
from symrmt.engine.solve.hermitized import guard
from symrmt.engine.solve.newton import CompiledSystem

__all__ = ["TraceLimit", "admitted", "certified_limit", "compiled_system", "formula_function", "branch_acceptor", "holds",
           "check_bounds", "check_real"]

_COMPILED = cache_dict("symrmt.engine.solve.certify._COMPILED", 256)


class TraceLimit:
    """A certified large-n limit: ``value`` (mpf, correct to ``digits`` significant digits).

    Takes ``value``, ``digits``, ``working_digits`` (of the two agreeing solves), ``residual`` (largest
    fixed-point residual at the higher precision), ``at`` (the values) and ``traces`` (the limit of each
    normalized trace in the expression, in order); :func:`certified_limit` computes them.  Also
    ``certificate`` (``"relative"``: ``digits`` significant digits; ``"absolute"``: the limit is 0 to
    ``10^-digits``); with ``prove=True`` also ``ball``, ``balls`` and ``branch``
    (:mod:`symrmt.engine.prove`).  ``str`` prints ``digits`` significant digits.

    Examples
    --------
    >>> import mpmath
    >>> lim = TraceLimit(mpmath.mpf(1) / 3, 5, 30, mpmath.mpf(0), {}, [])
    >>> str(lim), repr(lim), float(lim) == 1 / 3
    ('0.33333', 'TraceLimit(0.33333, digits=5)', True)
    """

    #: ``"relative"`` (``digits`` significant digits) or ``"absolute"`` (a limit 0, within ``10^-digits``)
    certificate = "relative"
    #: indices of the traces solved by Hermitization (a non-normal resolvent inside its spectrum)
    hermitized = ()
    #: sentences stating each random vector of a quadratic form replaced by its mean 0
    #: (:func:`symrmt.engine.reduce.woodbury.zero_mean_forms`)
    notes = ()

    def __init__(self, value, digits, working_digits, residual, at, traces):
        self.value, self.digits, self.working_digits = value, digits, working_digits
        self.residual, self.at, self.traces = residual, at, traces
        self.ball = self.balls = self.branch = None  # set by Model.limit(..., prove=True)

    def __float__(self):
        return float(self.value)

    def __str__(self):
        return mpmath.nstr(self.value, self.digits)

    def __repr__(self):
        return f"TraceLimit({self}, digits={self.digits})"


def compiled_system(system):
    """The :class:`CompiledSystem` of a block system (memoized on its pencil, and on the system object); an
    :class:`~symrmt.engine.reduce.atoms.AtomSystem` gives an :class:`AtomCompiled`.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> system = m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system
    >>> cs = compiled_system(system)
    >>> type(cs).__name__, cs.m, cs.params, compiled_system(system) is cs
    ('CompiledSystem', 2, [gamma], True)
    """
    done = system.__dict__.get("_compiled_system")
    if done is not None:
        return done
    out = _compiled_system(system)
    system.__dict__["_compiled_system"] = out
    return out


def _compiled_system(system):
    key = system.pencil.key() + ("" if system.full_unknowns is None else f":reduced{system.unknowns}")
    if isinstance(system, AtomSystem):
        # the compiled pieces do not hold the atoms, but the object carries its system's law
        key = f"atoms:{system.law.name}:{system.values}:{system.weights}:{key}"
        if key not in _COMPILED:
            _COMPILED[key] = AtomCompiled(system, key)
        return _COMPILED[key]
    if key not in _COMPILED:
        _COMPILED[key] = CompiledSystem(system, key)
    return _COMPILED[key]


@cached(maxsize=256)
def formula_function(formula, symbols):
    """The plan's outer formula in its symbols, compiled once (the package's compile step); the function
    takes the list of the symbols' values.

    >>> import sympy as sp
    >>> a, b = sp.symbols("a b")
    >>> formula_function(2 * a + b ** 2, (a, b))([1, 3])
    11
    """
    return compile_expr([list(symbols)], formula)


def _evaluate(plan, solvers, dps):
    """``(value, traces, step, residual)`` at ``dps`` working digits."""
    with mpmath.workdps(dps):
        results, worst_step, worst_res = {}, mpmath.mpf(0), mpmath.mpf(0)
        for t in plan.traces:
            alphas = tuple(a for a in plan.needs[t.index] if a)
            h, derivs, step, res = solvers[t.index].solve(dps, alphas)
            results[t.index] = (h, derivs)
            worst_step, worst_res = max(worst_step, step), max(worst_res, res)
        pvals = {p: mpf_of(solvers["values"][p.name]) for p in plan.params}
        args = formula_args(plan, pvals.__getitem__,
                            lambda k, pos, alpha: results[k][0][pos] if not alpha else results[k][1][alpha][pos])
        fn = formula_function(plan.formula, tuple(s for s, _ in plan.symbols))
        value = fn(args)
        taus = []
        for t in plan.traces:
            h = results[t.index][0]
            subs = {p: solvers["values"][p.name] for p in plan.params}
            tau = mpmath.mpf(0)
            for (i, j), c in t.system.readout.items():
                tau += mpf_of(sp.sympify(c).subs(subs)) * h[t.system.unknowns.index((i, j))]
            taus.append(tau)
        return value, taus, worst_step, worst_res


def holds(cond, subs) -> bool:
    """``cond >= 0`` at the values ``subs`` (symbol -> number; a number is compared directly: a law of many
    atoms has many).

    >>> import sympy as sp
    >>> g = sp.Symbol("gamma", positive=True)
    >>> holds(g - 1, {g: 2}), holds(g - 1, {g: sp.Rational(1, 2)}), holds(sp.Integer(-1), {})
    (True, False, False)
    """
    cond = sp.sympify(cond)
    return bool((cond if cond.is_number else cond.subs(subs)) >= 0)


def branch_acceptor(t, values):
    """Branch check of a start point: the sanity bounds of the trace ``t`` at ``values`` (name -> exact
    number), to a loose tolerance.  Returns ``accept(h) -> None`` (accepted) or the reason the fixed point
    ``h`` fails, or ``None`` when no bound applies.

    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> t = m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0]   # 0 < tau <= 1/gamma, tau = -H[1]
    >>> accept = branch_acceptor(t, {"gamma": Fraction(1)})
    >>> accept([-0.618, -0.618]), accept([-2.0, -2.0])
    (None, 'trace #1 = 2 fails its bound (upper 1)')
    """
    subs = {sp.Symbol(k, real=True): sp.Rational(v) for k, v in values.items()}
    subs.update({sp.Symbol(k, positive=True): sp.Rational(v) for k, v in values.items()})
    checks = []
    for kind, bound, conds in t.bounds:
        if all(holds(c, subs) for c in set(conds)):
            b = sp.sympify(bound).subs(subs)
            if b.is_extended_real and b.is_finite:  # an infinite bound (1/gamma at gamma = 0) bounds nothing
                checks.append((kind, float(b)))
    readout = [(t.system.unknowns.index(ij), float(sp.sympify(c).subs(subs))) for ij, c in t.system.readout.items()]
    if not checks:
        return None

    def accept(h):
        tau = sum(c * float(h[i]) for i, c in readout)
        slack = 1e-8 * (1 + abs(tau))
        for kind, b in checks:
            if (kind == "pos" and not tau > -slack) or (kind == "nonneg" and not tau >= -slack) or \
                    (kind == "upper" and not tau <= b + slack):
                return f"trace #{t.index + 1} = {tau:.6g} fails its bound ({kind} {b:.6g})"
        return None

    return accept


def check_bounds(plan, values, taus, digits):
    """The sanity bounds of each trace (``> 0``, ``>= 0``, ``<= b``: a positive semi-definite structure) at
    the certified values ``taus`` (one per trace of ``plan``, at ``values``, to ``digits`` digits); returns
    ``None``.

    Raises
    ------
    BranchError
        When a bound fails (the fixed point is off the branch).

    Examples
    --------
    >>> from fractions import Fraction
    >>> import mpmath
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> plan = m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))")
    >>> check_bounds(plan, {"gamma": Fraction(1)}, [mpmath.mpf("0.618")], 12)
    >>> check_bounds(plan, {"gamma": Fraction(1)}, [mpmath.mpf(2)], 12)
    Traceback (most recent call last):
        ...
    symrmt.errors.BranchError: the limit of trace #1 is 2.0, but it must be <= 1.0 (a positive semi-definite structure): the fixed point is off the physical branch
    """
    subs = {p: sp.Rational(values[p.name]) for p in plan.params}
    slack = mpmath.mpf(10) ** (-digits)
    for t, tau in zip(plan.traces, taus):
        for kind, bound, conds in t.bounds:
            if not all(holds(c, subs) for c in set(conds)):
                continue
            b = sp.sympify(bound).subs(subs)
            if not (b.is_extended_real and b.is_finite):
                continue
            b = mpf_of(b)
            bad = (kind == "pos" and not tau > 0) or (kind == "nonneg" and not tau >= -slack) or \
                  (kind == "upper" and not tau <= b * (1 + slack))
            if bad:
                what = {"pos": "> 0", "nonneg": ">= 0", "upper": f"<= {mpmath.nstr(b, 10)}"}[kind]
                raise BranchError(
                    f"the limit of trace #{t.index + 1} is {mpmath.nstr(tau, 12)}, but it must be {what} "
                    "(a positive semi-definite structure): the fixed point is off the physical branch"
                )


#: at most this many checked coefficients are remembered per plan (a long sweep starts the memo again)
_REAL_PASSED_MAX = 4096


def _check_real_inputs(plan, values, free=None):
    """Every coefficient of every matrix and every atom of a diagonal law must be finite and real at the
    values (``sqrt(gamma - 2)`` at ``gamma = 1`` is refused here, in one line); ``free``: the name of a
    parameter given a complex value, read as a positive real there (the coefficients must be real functions
    of it: the complex path conjugates the solution at ``conj(z)``)."""
    subs = {}
    if free is not None:
        zr = sp.Symbol(free + "_", positive=True)
        subs[sp.Symbol(free, real=True)] = subs[sp.Symbol(free, positive=True)] = zr
    for k, v in values.items():
        r = sp.Rational(v)
        subs[sp.Symbol(k, real=True)] = r
        subs[sp.Symbol(k, positive=True)] = r
    subs[sp.Symbol("n", positive=True)] = sp.Integer(1)  # n only scales; its sign is all that matters here
    items = plan.__dict__.get("_real_items")
    if items is None:  # the coefficients of the plan's matrices, with the names they depend on (once per plan)
        parts = [(f"trace #{t.index + 1}", t.matrix) for t in plan.traces if t.matrix is not None]
        parts += [(f"quadratic form #{f.index + 1}", f.matrix) for f in getattr(plan, "forms", ())]
        items = []
        for what, matrix in parts:
            for x in walk(matrix):
                cs = [x.value] if isinstance(x, Const) else x.values + x.weights if isinstance(x, Diagonal) else []
                for c in cs:
                    sc = sp.sympify(c)
                    items.append((what, c, sc, tuple(sorted({str(y) for y in sc.free_symbols}))))
        plan.__dict__["_real_items"] = items
    passed = plan.__dict__.setdefault("_real_passed", set())  # (coefficient, the values it depends on) checked
    if len(passed) > _REAL_PASSED_MAX:
        passed.clear()
    for what, c, sc, names in items:
        key = (c, free, tuple(values.get(nm) for nm in names))
        if key in passed:
            continue
        v = sc.subs(subs) if not sc.is_number else sc
        if v.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
            raise BranchError(f"a coefficient {c} in {what} divides by zero at these values; "
                              "no value is returned")
        if v.is_extended_real is False or (v.is_number and v.is_extended_real is None
                                           and abs(sp.im(sp.N(v, 30))) > 0):
            raise BranchError(f"a coefficient {c} in {what} is not real at these values "
                              f"({sp.N(v, 8)}): a square root or a fractional power of a negative quantity")
        passed.add(key)


def check_real(value, digits):
    """Refuse a complex limit (``sqrt`` of a negative trace, a negative power of one): returns the real
    ``value`` (the real part of an mpc whose imaginary part is below ``10^-(digits+2)`` relative);
    :class:`BranchError` for a complex or non-finite value.

    >>> import mpmath
    >>> check_real(mpmath.mpc(2, 1e-30), 12)
    mpf('2.0')
    >>> check_real(mpmath.mpc(0, 1), 12)
    Traceback (most recent call last):
        ...
    symrmt.errors.BranchError: the limit is not real ((0.0 + 1.0j)): the expression takes a square root or a fractional power of a negative quantity at these values
    """
    if isinstance(value, complex):  # a compiled constant such as sqrt(-1) evaluates to a Python complex
        value = mpmath.mpc(value)
    if isinstance(value, mpmath.mpc):
        if abs(value.imag) > abs(value.real) * mpmath.mpf(10) ** (-digits - 2):
            raise BranchError(f"the limit is not real ({mpmath.nstr(value, 8)}): the expression takes a square "
                              "root or a fractional power of a negative quantity at these values")
        value = value.real
    if not mpmath.isfinite(value):
        raise BranchError(f"the limit is {value}, not a finite number (a division by a zero limit?)")
    return value


def _absolute_zero(lo, hi, digits) -> bool:
    """Both solves within ``10^-(digits+1)`` of each other and ``10^-digits`` of 0 (an absolute certificate)."""
    tol = mpmath.mpf(10) ** (-digits)
    return all(mpmath.isfinite(abs(x)) for x in (lo, hi)) and abs(lo - hi) <= tol / 10 and abs(hi) <= tol


def admitted(plan, values: dict, complex_at=None):
    """The plan to solve at exact real ``values``, after the checks every real-valued route passes (traces,
    quadratic forms, their sums, sweeps, proofs: :meth:`symrmt.engine.Model.limit` calls it before it
    dispatches, and :func:`certified_limit` and :func:`symrmt.engine.solve.quadratic_forms.certified_qf_limit` again):
    every coefficient real and finite (else :class:`BranchError`), and every non-symmetric inverse tested
    for invertibility in the limit, a non-normal resolvent's trace Hermitized and anything else refused
    (:func:`symrmt.engine.solve.hermitized.guard`, :class:`~symrmt.engine.solve.hermitized.NonNormalError`).
    ``complex_at``: the name of a parameter given a complex value (not in ``values``); the coefficients
    are then checked as real functions of it, and the plan is returned as it is (the complex path,
    :func:`symrmt.engine.routes.complex_limit.complex_limit`, refuses a non-symmetric inverse).

    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> plan = admitted(m.plan("trace(inv(Z/sqrt(n) + gamma*I(n)))"), {"gamma": Fraction(1, 2)})
    >>> [getattr(t, "hermitized", False) for t in plan.traces]
    [True]
    """
    memo = plan.__dict__.get("_admitted_at")
    if memo is not None and memo[0] is values and memo[1] == complex_at:
        return memo[2]   # the same call's values object, admitted already (Model.limit, then the solver)
    _check_real_inputs(plan, values, complex_at)
    if complex_at is not None:
        return plan
    with stage("the non-normality check"):
        out = guard(plan, values, compiled_system)
    out.__dict__["_admitted_at"] = (values, complex_at, out)
    return out


def certified_limit(plan, values: dict, digits: int) -> dict:
    """The certified limit of a plan at exact ``values`` (name -> Fraction) to ``digits`` significant digits.

    Returns the keyword arguments of :class:`TraceLimit` (``value``, ``digits``, ``working_digits``,
    ``residual``, ``at``, ``traces``, ``certificate``, ``hermitized``) and ``solvers``, which
    :meth:`symrmt.engine.Model.limit` builds it from.

    Raises
    ------
    ParameterError
        ``digits < 1``, or a value missing.
    BranchError
        A coefficient not real or finite, or a fixed point off the branch.
    symrmt.errors.ConvergenceError, symrmt.errors.PrecisionError
        The homotopy fails, or the two precisions never agree.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import mpmath
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> out = certified_limit(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))"), {"gamma": Fraction(1)}, 12)
    >>> mpmath.nstr(out["value"], 12), out["certificate"]   # (sqrt(5) - 1)/2
    ('0.61803398875', 'relative')
    """
    if digits < 1:
        raise ParameterError("digits must be >= 1")
    plan = admitted(plan, values)  # a no-op on a plan Model.limit admitted at these values
    solvers = {"values": values}
    with stage("the pencil self-test and compilation"):
        for t in plan.traces:
            checked(t.pencil, t.matrix)  # a pencil that fails its finite-size self-test is never solved
            solvers[t.index] = getattr(t, "solver", ContinuedSolver)(compiled_system(t.system), values)
    for t in plan.traces:  # the homotopy: a failure here is not a precision problem, so it is not retried
        with stage(f"the homotopy of trace #{t.index + 1} ({len(t.system.unknowns)} unknowns)"):
            solvers[t.index].start(branch_acceptor(t, values))

    def attempt(dps):
        with stage(f"the Newton polish and certification at {dps} and {dps + 10} working digits"):
            return _attempt(dps)

    def _attempt(dps):
        try:
            lo, taus_lo, step_lo, res_lo = _evaluate(plan, solvers, dps)
            if step_lo > mpmath.mpf(10) ** -(digits + 2):
                raise ConvergenceError(f"Newton at {dps} digits stalled at a relative step {mpmath.nstr(step_lo, 3)} "
                                       f"(fixed-point residual max|R| = {mpmath.nstr(res_lo, 3)})")
            hi, taus, _, res = _evaluate(plan, solvers, dps + 10)
        except ZeroDivisionError as exc:
            raise Disagree(f"division by zero ({exc})") from None
        if not res <= mpmath.mpf(10) ** -(digits + 2):  # two solves that stall alike must not certify
            raise ConvergenceError(f"the fixed-point residual at {dps + 10} digits is {mpmath.nstr(res, 3)}, "
                                   f"not below 1e-{digits + 2}")
        with mpmath.workdps(dps + 10):
            try:
                relative = agree(lo, hi, digits)
                # a limit that is 0: both solves within 10^-(D+1) of each other and 10^-D of 0 (absolute)
                absolute = not relative and _absolute_zero(lo, hi, digits)
                if (relative or absolute) and all(agree(a, b, digits) for a, b in zip(taus_lo, taus)):
                    hi = check_real(hi, digits) if relative else mpmath.mpf(0)
                    check_bounds(plan, values, taus, digits)
                    # kept at the working precision: rounding to ``digits`` is done once, in decimal, when
                    # the value is printed (a binary rounding at ``digits`` first could round twice:
                    # 3.108... at one digit would read 3.09375); ``solvers``: the checked homotopy starts
                    # (symrmt.engine.prove.trace reuses them)
                    return +hi, {"value": +hi, "digits": digits, "working_digits": dps + 10, "residual": res,
                                 "at": dict(values), "traces": [+x for x in taus], "solvers": solvers,
                                 "certificate": "relative" if relative else "absolute",
                                 "hermitized": [t.index for t in plan.traces if getattr(t, "hermitized", False)]}
            except ZeroDivisionError as exc:
                raise Disagree(f"division by zero ({exc})") from None
        raise Disagree(f"solves at {dps} and {dps + 10} digits disagree beyond digit {digits} "
                       f"(fixed-point residual max|R| = {mpmath.nstr(res, 3)})")

    # the one two-precision certification (symrmt.core.certify): the guard doubles on each failure, once more
    # than the core's default (a guard of 80 digits): a fixed point whose Jacobian's condition grows like
    # lam^-2 (the ridgeless variance at lam = 1e-20) loses about 40 digits to it
    return certify(attempt, digits, GUARD, ESCALATIONS + 1).data
