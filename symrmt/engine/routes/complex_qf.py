r"""Quadratic forms at a complex value of one parameter (``--at 'z=3+0.5j, u.u=1'``).

A quadratic form ``u^T M v`` reads the unit blocks of its pencil's deterministic equivalent
``Qbar = (Lambda - eta(H) (x) I)^{-1}`` (:mod:`symrmt.engine.reduce.woodbury`): ``H`` is the block fixed point of
the bulk pencil, which the finite-rank parts do not move, and the form is ``e^T S^{-1} f`` with the small
Woodbury matrix ``S`` in ``H``, the inner products and the parameters.  The anisotropic law
(``u^T (M - z)^{-1} v`` concentrates around ``u^T Qbar(z) v``: Knowles and Yin 2017) holds at every ``z`` off
the spectrum, so at a complex ``z = x + iy``:

1. each bulk fixed point is solved at ``z`` exactly as a trace is (:func:`symrmt.engine.routes.complex_limit.descend`:
   the homotopy in ``s`` at ``x + iY``, the path in ``log Im z`` down to ``|y|``; a bulk that does not depend
   on ``z`` is solved on the real path);
2. Newton at ``digits + 10`` and ``digits + 20`` working digits, ``S x = f`` solved at each in complex mpmath,
   and the value, each form and each trace must agree to ``digits`` significant digits, each part (real,
   imaginary) too unless it is below ``10^-digits`` of the value (then it is reported as 0), and the error
   bound of the first solve (``10^-(dps - 4)`` times the condition number of the Woodbury systems) must lie
   below ``10^-digits`` of each part reported (:func:`certified_parts`, :func:`resolved`); on a disagreement the
   guard doubles, up to three tries (the core's :func:`~symrmt.core.certify.certify`: next to a pole of a form
   ``1 + theta m(z)`` cancels), then :class:`~symrmt.errors.PrecisionError`;
3. ``y < 0``: the point ``conj(z)``, then the complex conjugate (every other value is real, so the system
   has real coefficients).

**Branch checks.** A trace ``tau((B + a z I)^{-1})`` with ``B`` symmetric keeps the Stieltjes sign along the
path and at the solution, as in :mod:`symrmt.engine.routes.complex_limit`.  A form ``x^T (A + a z I)^{-1} x`` with
``A`` symmetric by structure (finite-rank parts included) and ``a`` a real number is a Herglotz function:
``Im q`` has the sign of ``-a Im z`` (``<x, x> > 0``); it is checked at the solution
(:class:`~symrmt.errors.BranchError`).

**Refused** (:class:`~symrmt.engine.lang.matrices.ModelError`): ``diff()`` at a complex value, and an ``inv()``
whose argument, finite-rank terms dropped, is not symmetric by structure: for a non-normal matrix the
analytic continuation of the fixed point from large ``|z|`` is the limit only outside the spectrum, and
inside it the limit is the Brown measure's, which the engine reaches by Hermitization at real points only.
A finite-rank non-symmetric part (``G/sqrt(n) + t*u*v.T``) is accepted: the Woodbury step is exact.
"""

from __future__ import annotations

import mpmath
import sympy as sp

from symrmt.core.certify import ESCALATIONS, GUARD, Disagree, agree, certify
from symrmt.core.numbers import mpf_of
from symrmt.engine.density.solver import ResolventSolver
from symrmt.engine.lang.algebra import identity_part
from symrmt.engine.lang.matrices import Const, Inverse, MatProduct, MatSum, ModelError, Scaled, Transpose, walk
from symrmt.engine.lang.vectors import Vector, gram_values, gram_symbol
from symrmt.engine.reduce import linearize as lin
from symrmt.engine.reduce.plan import formula_args
from symrmt.engine.routes.complex_limit import descend, Complex
from symrmt.engine.solve.certify import branch_acceptor, compiled_system, TraceLimit
from symrmt.engine.solve.newton import TraceSolver
from symrmt.engine.solve.quadratic_forms import form_function, woodbury_solve, compile_cached, self_test_plan
from symrmt.errors import BranchError, ConvergenceError, PrecisionError

__all__ = ["complex_qf_limit", "nonnormal_bulk", "herglotz_form", "form_params"]


def _without_vectors(m):
    """``m`` with every vector set to 0 (its bulk: the finite-rank parts dropped), or ``None`` when nothing
    is left."""
    if isinstance(m, Vector):
        return None
    if isinstance(m, MatSum):
        terms = [t for t in (_without_vectors(x) for x in m.terms) if t is not None]
        return None if not terms else terms[0] if len(terms) == 1 else MatSum(terms)
    if isinstance(m, MatProduct):
        fs = [_without_vectors(x) for x in m.factors]
        return None if any(x is None for x in fs) else MatProduct(fs)
    if isinstance(m, (Scaled, Transpose, Inverse)):
        inner = _without_vectors(m.matrix)
        if inner is None:
            return None
        return Scaled(m.scalar, inner) if isinstance(m, Scaled) else type(m)(inner)
    return m


def _canon(m):
    """``m`` with the scalar factors of every product collected in front (``(k*v)*v.T`` and ``v*(k*v.T)`` are
    one tree) and the terms of every sum sorted, for a structural comparison."""
    if isinstance(m, Scaled):
        inner = _canon(m.matrix)
        if isinstance(inner, Scaled) and isinstance(inner.scalar, Const) and isinstance(m.scalar, Const):
            return Scaled(Const(m.scalar.value * inner.scalar.value), inner.matrix)
        return Scaled(m.scalar, inner)
    if isinstance(m, MatSum):  # in a fixed order: a sum's transpose lists its terms in another
        return MatSum(sorted((_canon(t) for t in m.terms), key=_text))
    if isinstance(m, MatProduct):
        coef, fs = sp.Integer(1), []
        for x in (_canon(f) for f in m.factors):
            if isinstance(x, Scaled) and isinstance(x.scalar, Const):
                coef, x = coef * x.scalar.value, x.matrix
            fs.append(x)
        prod = fs[0] if len(fs) == 1 else MatProduct(fs)
        return prod if coef == 1 else Scaled(Const(coef), prod)
    if isinstance(m, (Transpose, Inverse)):
        return type(m)(_canon(m.matrix))
    return m


def _text(m) -> str:
    """A structural text of a tree (a sort key)."""
    head = f"{type(m).__name__}:{getattr(m, 'name', '')}:{getattr(m, 'value', '')}"
    kids = m.children() if hasattr(m, "children") else ()
    return head + "(" + ",".join(_text(k) for k in kids) + ")"


def symmetric(m) -> bool:
    """Whether ``m^T == m`` by structure: transposes pushed to the leaves and the scalar factors of each product
    collected (:func:`symrmt.engine.reduce.linearize.push_transposes`), so ``I + k*v*v.T`` is symmetric.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n"), m.gaussian("Z", "n", "n"), m.vector("u", "n")
    >>> [symmetric(m.expr(e)) for e in ("G/sqrt(n) + 5*u*u.T", "Z.T*Z/n", "Z/sqrt(n)")]
    [True, True, False]
    """
    return _canon(lin.push_transposes(Transpose(m))) == _canon(lin.push_transposes(m))


def nonnormal_bulk(matrix) -> list:
    """The arguments of the ``inv()`` nodes of ``matrix`` whose bulk (every vector set to 0: the finite-rank
    parts dropped) is not symmetric by structure: the inverses whose limit operator may be non-normal
    (innermost last, without repeats).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.goe("G", "n"); _ = m.vector("u", "n"); _ = m.vector("v", "n")
    >>> nonnormal_bulk(m.parse("u.T*inv(G/sqrt(n) + t*u*v.T - z*I(n))*u").matrix)
    []
    """
    out, stack = [], [matrix]
    while stack:
        x = stack.pop()
        if isinstance(x, Inverse):
            bulk = _without_vectors(x.matrix)
            if bulk is not None and not symmetric(bulk) and x.matrix not in out:
                out.append(x.matrix)
        stack.extend(reversed(x.children()))
    return out


def herglotz_form(f, zsym):
    """``(a, x, c)`` when the form ``f`` (a form of a plan) is ``c x^T (A + a z I)^{-1} x`` with ``A`` symmetric by
    structure and free of ``z`` (``zsym``; finite-rank terms included), ``a`` a nonzero real number and ``c`` a
    scalar free of ``z`` (a SymPy expression in the parameters), else ``None``: then
    ``q(z) = c sum_i |<x, v_i>|^2 / (mu_i + a z)`` over the eigenpairs of ``A``.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n"), m.vector("u", "n"), m.vector("v", "n")
    >>> plan = m.plan("2*u.T*inv(G/sqrt(n) - z*I(n))*u")
    >>> herglotz_form(plan.forms[0], plan.params[0])
    (-1, Vector('u', 'n', 'det'), 2)
    >>> herglotz_form(m.plan("u.T*inv(G/sqrt(n) - z*I(n))*v").forms[0], plan.params[0]) is None   # u != v
    True
    """
    m, c = _canon(f.matrix), sp.Integer(1)
    if isinstance(m, Scaled) and isinstance(m.scalar, Const):
        m, c = m.matrix, sp.sympify(m.scalar.value)

    fs = m.factors if isinstance(m, MatProduct) else ()
    if len(fs) != 3 or not isinstance(fs[1], Inverse):
        return None
    if _canon(lin.push_transposes(Transpose(fs[0]))) != _canon(lin.push_transposes(fs[2])):
        return None
    if zsym in c.free_symbols or c == 0:
        return None
    g, rest = identity_part(fs[1].matrix)
    coef = sp.diff(g, zsym)
    if coef == 0 or coef.free_symbols or sp.diff(g, zsym, 2) != 0 or not coef.is_real or not symmetric(fs[1].matrix):
        return None
    if any(isinstance(x, Const) and zsym in sp.sympify(x.value).free_symbols for t in rest for x in walk(t)):
        return None
    return coef, fs[2], c


def stieltjes_sign(matrix, zsym):
    """``-sign(a)`` for a trace's matrix ``inv(B + a z I)`` with ``B`` symmetric by structure (:func:`symmetric`:
    finite-rank terms such as ``5*u*u.T`` included) and free of ``z`` (``zsym``), ``a`` a nonzero real number;
    else ``None`` (as :func:`symrmt.engine.routes.complex_limit.branch_sign` for traces without vectors).

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> t = m.plan("trace(inv(G/sqrt(n) - z*I(n)))").traces[0]
    >>> stieltjes_sign(t.matrix, t.system.params[0])
    1
    """
    if not isinstance(matrix, Inverse):
        return None
    g, rest = identity_part(matrix.matrix)
    coef = sp.diff(g, zsym)
    if coef == 0 or coef.free_symbols or sp.diff(g, zsym, 2) != 0 or not coef.is_real:
        return None
    if not all(symmetric(t) for t in rest) or any(isinstance(x, Const) and zsym in sp.sympify(x.value).free_symbols
                                                  for t in rest for x in walk(t)):
        return None
    return -1 if coef > 0 else 1


def form_params(plan):
    """Set each form's ``params`` (the plan's parameters in its ``S``, ``e``, ``f``), as the real path does;
    returns ``None``.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n"), m.vector("u", "n")
    >>> plan = m.plan("u.T*inv(G/sqrt(n) + t*u*u.T - z*I(n))*u")   # z enters through the bulk only
    >>> form_params(plan)
    >>> plan.forms[0].params
    [t]
    """
    for f in plan.forms:
        f.params = sorted({p for p in plan.params if p in (f.S.free_symbols | set().union(
            *[sp.sympify(c).free_symbols for c in f.e + f.f]))}, key=lambda s: s.name)


def check_normal(plan, what: str):
    """:class:`ModelError` when an ``inv()`` of the plan's traces or forms is non-normal (:func:`nonnormal_bulk`);
    ``what`` opens the message.  Returns ``None`` otherwise.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n"), m.gaussian("Z", "n", "n"), m.vector("u", "n")
    >>> check_normal(m.plan("u.T*inv(G/sqrt(n) - z*I(n))*u"), "the form")
    >>> check_normal(m.plan("u.T*inv(Z/sqrt(n) - z*I(n))*u"), "the form")
    Traceback (most recent call last):
        ...
    symrmt.errors.ModelError: the form: an inv() holds a matrix that is not symmetric by structure (apart from
    finite-rank terms), so its limit operator may be non-normal; the fixed point continued from large |z| is the
    limit only outside the spectrum (which the engine does not locate at a complex point), and inside it the limit
    is governed by the Brown measure, which the engine reaches by Hermitization at real parameter values only
    (docs/engine.md, non-normal matrices)
    """
    mats = [t.matrix if t.matrix is not None else t.full_matrix for t in plan.traces]
    mats += [f.matrix for f in getattr(plan, "forms", [])]
    for m in mats:
        if m is not None and nonnormal_bulk(m):
            raise ModelError(
                f"{what}: an inv() holds a matrix that is not symmetric by structure (apart from finite-rank "
                "terms), so its limit operator may be non-normal; the fixed point continued from large |z| is the "
                "limit only outside the spectrum (which the engine does not locate at a complex point), and inside "
                "it the limit is governed by the Brown measure, which the engine reaches by Hermitization at real "
                "parameter values only (docs/engine.md, non-normal matrices)")


class _BulkSolve:
    """The bulk fixed point of one trace plan at complex ``z`` (or on the real path when it is free of ``z``)."""

    def __init__(self, plan, t, zsym, zname, zval, real_values, sign):
        self.t, self.sign = t, sign
        c = compiled_system(t.system)
        if any(p.name == zsym.name for p in c.params):
            self.rs = ResolventSolver(plan, zsym, real_values, index=t.index, branch_sign=sign)
            self.h = descend(self.rs, zname, zval)
            self.real = None
        else:
            self.rs = None
            self.real = TraceSolver(c, real_values)
            self.real.start(branch_acceptor(t, real_values) if t.system.readout else None)

    def polish(self, z, dps):
        """``(h, tau)`` at ``dps`` working digits (``tau``: ``None`` without a readout)."""
        if self.rs is not None:
            h, tau = self.rs.polish(self.h, z, dps)
            return h, (tau if self.rs.readout else None)
        h = self.real.solve(dps, ())[0]
        return [mpmath.mpc(x) for x in h], None


def _evaluate(plan, bulks, values, grams, zsym, z, dps):
    """``(value, forms, taus, kappa)`` at ``dps`` working digits at the complex point ``z``; ``kappa``: the largest
    1-norm condition number of the forms' Woodbury systems (1 without forms)."""
    hs, taus = {}, {}
    for b in bulks:
        hs[b.t.index], taus[b.t.index] = b.polish(z, dps)
    with mpmath.workdps(dps):
        pv = {p: (z if p.name == zsym.name else mpf_of(values[p.name])) for p in plan.params}
        gv = [mpf_of(grams[g]) for g in plan.grams]
        qs, kappa = [], mpmath.mpf(1)
        for f in plan.forms:
            fn = form_function(f, plan.grams)
            h = hs[f.trace_index] if f.trace_index is not None else []
            vals = fn(list(h) + [pv[p] for p in f.params] + gv)
            k = len(f.units)
            S = [[mpmath.mpc(vals[r * k + c]) for c in range(k)] for r in range(k)]
            e = vals[k * k:k * k + k]
            try:
                x = woodbury_solve(S, [mpmath.mpc(v) for v in vals[k * k + k:]])
            except ConvergenceError:
                raise ConvergenceError(f"the Woodbury system of quadratic form #{f.index + 1} is singular to {dps} "
                                       f"working digits at {zsym.name} = {mpmath.nstr(z, 8)}: the point is this close "
                                       "to a pole of the form (an outlier of the spectrum: --outliers, "
                                       "Model.outliers)") from None
            qs.append(sum((e[i] * x[i] for i in range(k)), mpmath.mpc(0)))
            kappa = max(kappa, condition(S))
        args = formula_args(plan, pv.__getitem__, lambda k, pos, _alpha: hs[k][pos], qs.__getitem__)
        value = mpmath.mpc(compile_cached(plan)(args))
    return value, qs, taus, kappa


def condition(S) -> mpmath.mpf:
    """``||S||_1 ||S^{-1}||_1`` of a small nonsingular matrix (lists of rows; the current precision).

    >>> condition([[2, 0], [0, mpmath.mpf(1) / 2]])
    mpf('4.0')
    """
    M = mpmath.matrix(S)
    return mpmath.mnorm(M, 1) * mpmath.mnorm(mpmath.inverse(M), 1)


def certified_parts(a, b, digits: int, error) -> bool:
    """The solve ``b`` is certified by the solve ``a`` of fewer working digits, whose error is at most ``error |a|``
    (the working precision times the forms' condition: :func:`condition`): ``a`` and ``b`` agree to ``digits``
    significant digits, and so does each part (real, imaginary) of at least ``10^-digits |b|``, whose bound
    ``error |a|`` must also be below ``10^-digits`` of it.  A smaller part is reported as 0 (:func:`resolved`):
    next to a pole both solves can round the same low-order term away and agree on a wrong part.

    >>> certified_parts(mpmath.mpc(1, 1e-30), mpmath.mpc(1, 2e-30), 20, 1e-40)
    True
    >>> certified_parts(mpmath.mpc(1, 1e-3), mpmath.mpc(1, 1e-3), 20, 1e-21)  # the bound 1e-21 > 1e-23
    False
    """
    if not agree(a, b, digits) or error > mpmath.mpf(10) ** -digits:
        return False
    res = abs(b) * mpmath.mpf(10) ** -digits
    for pa, pb in ((mpmath.re(a), mpmath.re(b)), (mpmath.im(a), mpmath.im(b))):
        if abs(pb) >= res and (not agree(pa, pb, digits) or error * abs(a) > abs(pb) * mpmath.mpf(10) ** -digits):
            return False
    return True


def resolved(v, digits: int):
    """``v`` with a part below ``10^-digits |v|`` set to 0: under the resolution of the certificate, where two
    solves can agree and both be wrong (next to a pole, ``1 + theta m(z)`` loses the same low-order term at
    both precisions).

    >>> resolved(mpmath.mpc(1, 1e-30), 20), resolved(mpmath.mpc(1, 1e-3), 20)
    (mpc(real='1.0', imag='0.0'), mpc(real='1.0', imag='0.001'))
    """
    res = abs(v) * mpmath.mpf(10) ** -digits
    re, im = mpmath.re(v), mpmath.im(v)
    return mpmath.mpc(0 if abs(re) < res else re, 0 if abs(im) < res else im)


def complex_qf_limit(plan, values: dict, zname: str, zval, digits: int, vectors=None):
    """The :class:`~symrmt.engine.solve.certify.TraceLimit` (complex ``value``; ``.forms``: the forms' complex limits)
    of a quadratic-form plan (:func:`symrmt.engine.reduce.woodbury.prepare_qf`) at ``zname = zval`` (a
    :class:`~symrmt.engine.routes.complex_limit.Complex` with a nonzero imaginary part), the other values exact in
    ``values`` (inner products as ``"a.b"``); ``vectors``: the model's declared vectors.

    Raises :class:`ModelError` (``diff()``, a non-normal inverse, a real ``zval``),
    :class:`~symrmt.errors.PrecisionError` (the two precisions disagree),
    :class:`~symrmt.errors.BranchError` (a Stieltjes or Herglotz sign fails) and the path's
    :class:`~symrmt.engine.density.solver.DensityError`.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.goe("G", "n"); _ = m.vector("u", "n")
    >>> r = m.limit("u.T*inv(G/sqrt(n) - z*I(n))*u", at={"z": "2j", "u.u": 1}, digits=20)
    >>> print(r)  # the semicircle's Stieltjes transform (-z + sqrt(z^2 - 4))/2 at z = 2i: i (sqrt(2) - 1)
    (0.0 + 0.4142135623730950488j)
    """
    if any(what[0] == "dform" for _, what in plan.symbols) or any(a for t in plan.traces for a in plan.needs[t.index]
                                                                   if a):
        raise ModelError("diff() at a complex parameter value is not supported")
    zsyms = [p for p in plan.params if p.name == zname]
    if not zsyms:
        raise ModelError(f"the expression does not depend on {zname}")
    zsym = zsyms[0]
    if zval.im == 0:
        raise ModelError(f"{zname} = {zval} is real: give it as a real number")
    check_normal(plan, f"{zname} = {zval}")
    conj = zval.im < 0
    y = abs(zval.im)
    real_values = {k: v for k, v in values.items() if k != zname}
    grams = gram_values({**plan.vectors, **(vectors or {})}, real_values)
    form_params(plan)
    self_test_plan(plan)
    bulks = []
    for t in plan.traces:
        sign = stieltjes_sign(t.matrix, zsym) if t.matrix is not None and t.system.readout else None
        bulks.append(_BulkSolve(plan, t, zsym, zname, zval, real_values, sign))
    def solve(dps):
        with mpmath.workdps(dps + 10):
            z = mpmath.mpc(mpf_of(zval.re), mpf_of(y))
        return _evaluate(plan, bulks, real_values, grams, zsym, z, dps)

    def attempt(dps):
        (lo, qlo, tlo, kappa), (hi, qhi, thi, _) = solve(dps), solve(dps + 10)
        with mpmath.workdps(dps + 10):
            error = kappa * mpmath.mpf(10) ** -(dps - 4)  # the polish's relative step, amplified by S^-1
            plain = mpmath.mpf(10) ** -(dps - 4)
            pairs = [(lo, hi, error)] + [(a, b, error) for a, b in zip(qlo, qhi)]
            pairs += [(tlo[k], thi[k], plain) for k in tlo if tlo[k] is not None]
            if not all(certified_parts(a, b, digits, err) for a, b, err in pairs):
                note = "" if kappa < 1e6 else (f"; the Woodbury system's condition number is {mpmath.nstr(kappa, 2)}: "
                                               f"{zname} is next to a pole of a form")
                raise Disagree(f"solves at {dps} and {dps + 10} digits do not certify {digits} digits at "
                               f"{zname} = {zval}{note}")
        return (hi, qhi, thi), None

    # the core's two-precision certification, the guard doubling on a disagreement (next to a pole of a form,
    # 1 + theta m(z) cancels: more working digits)
    cert = certify(attempt, digits, GUARD, ESCALATIONS, fail=lambda failures, dps: PrecisionError(
        f"{failures[-1]} (up to {dps + 10} working digits)"))
    hi, qhi, thi = cert.value
    with mpmath.workdps(digits + 20):
        checked = []
        for b in bulks:
            tau = thi[b.t.index]
            if b.sign is not None and tau is not None:
                if not b.sign * tau.imag > 0:
                    raise BranchError(f"trace #{b.t.index + 1} = {mpmath.nstr(tau, 10)} at {zname} = {zval}: its "
                                      f"imaginary part must have the sign {'+' if b.sign > 0 else '-'} (the Stieltjes "
                                      "branch of a symmetric resolvent); no value is returned")
        for f, q in zip(plan.forms, qhi):
            hf = herglotz_form(f, zsym)
            ok = hf is not None and _norm2(hf[1], {**plan.vectors, **(vectors or {})}, grams, real_values) != 0
            sign = 0 if not ok else -sp.sign(hf[0]) * sp.sign(hf[2].subs({p: sp.Rational(values[p.name])
                                                                            for p in hf[2].free_symbols}))
            ok = ok and sign != 0
            if ok and not sign * q.imag > 0:
                raise BranchError(f"quadratic form #{f.index + 1} = {mpmath.nstr(q, 10)} at {zname} = {zval}: c x^T (A "
                                  f"+ a z I)^-1 x with A symmetric has Im q of the sign of -a c Im z (a Herglotz "
                                  "function); the fixed point is off the physical branch, no value is returned")
            checked.append(ok)
        hi, qhi = resolved(hi, digits), [resolved(q, digits) for q in qhi]
        thi = {k: (None if v is None else resolved(v, digits)) for k, v in thi.items()}
        if conj:
            hi, qhi = mpmath.conj(hi), [mpmath.conj(q) for q in qhi]
            thi = {k: (None if v is None else mpmath.conj(v)) for k, v in thi.items()}
    at = dict(values)
    at[zname] = Complex(zval.re, zval.im)
    with mpmath.workdps(cert.working_digits):  # the working precision: one decimal rounding when printed
        taus = [+thi[b.t.index] for b in bulks if thi[b.t.index] is not None]
        r = TraceLimit(+hi, digits, cert.working_digits, mpmath.mpf(0), at, taus)
        r.forms = [+q for q in qhi]
    r.certificate = "relative"
    r.branch_checked = [b.sign is not None for b in bulks if thi[b.t.index] is not None] + checked
    return r


def vector_combination(x):
    """``{vector name: coefficient}`` when ``x`` is a linear combination of vectors with number or parameter
    coefficients (``u``, ``2*u - v``), else ``None``.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n"), m.vector("u", "n"), m.vector("v", "n")
    >>> vector_combination(m.expr("2*u - v")), vector_combination(m.expr("G*u"))
    ({'u': 2, 'v': -1}, None)
    """
    if isinstance(x, Vector):
        return {x.name: sp.Integer(1)}
    if isinstance(x, Scaled) and isinstance(x.scalar, Const):
        inner = vector_combination(x.matrix)
        return None if inner is None else {k: sp.sympify(x.scalar.value) * c for k, c in inner.items()}
    if isinstance(x, MatSum):
        out = {}
        for t in x.terms:
            inner = vector_combination(t)
            if inner is None:
                return None
            for k, c in inner.items():
                out[k] = out.get(k, 0) + c
        return out
    return None


def norm2(x, vectors, grams, values):
    """``<x, x>`` (exact) of a combination of deterministic vectors (:func:`vector_combination`), ``None`` when
    ``x`` is not one or holds a random vector; ``vectors``: name -> Vector, ``grams``: the inner products
    (:func:`~symrmt.engine.lang.vectors.gram_values`), ``values``: the parameters of the coefficients.

    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.lang.vectors import gram_values
    >>> m = Model()
    >>> _ = m.vector("u", "n"), m.vector("v", "n")
    >>> values = {"u.u": Fraction(1), "v.v": Fraction(4)}
    >>> norm2(m.expr("2*u - v"), m.vectors(), gram_values(m.vectors(), values), values)   # 4 |u|^2 + |v|^2
    8
    """
    combo = vector_combination(x)
    if combo is None or any(vectors[k].random for k in combo):
        return None
    subs = {p: sp.Rational(values[p.name]) for c in combo.values() for p in sp.sympify(c).free_symbols}
    out = sp.Integer(0)
    for a, ca in combo.items():
        for b, cb in combo.items():
            out += sp.sympify(ca).subs(subs) * sp.sympify(cb).subs(subs) * sp.Rational(grams.get(gram_symbol(a, b), 0))
    return out


def _norm2(x, vectors, grams, values):
    """``<x, x>`` for the Herglotz check: 1 stands for a lone random vector (``|y/sqrt(n)|^2 -> d/n > 0``)."""
    if isinstance(x, Vector) and x.random:
        return 1
    out = norm2(x, vectors, grams, values)
    return 0 if out is None else out
