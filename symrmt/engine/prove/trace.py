r"""Proved digits of the trace engine: an expression's limit as a ball (:func:`prove_trace`).

The fixed point of the engine's compiled system is proved by Krawczyk's test on balls
(:mod:`symrmt.proofs.arb`); one-unknown polynomial systems have all their real roots isolated exactly, larger
systems (by default up to :data:`CHAIN_DEFAULT_UNKNOWNS` unknowns) have their branch proved by a chain of
Krawczyk boxes along the homotopy (:mod:`symrmt.engine.prove.chain`), else their sanity bounds proved on
the ball (``branch`` says which).  :func:`prove_complex_trace`: the ball at a complex parameter value.
"""

from __future__ import annotations

import inspect
from fractions import Fraction

import mpmath
import sympy as sp

from symrmt.codegen.compile import compile_expr
from symrmt.engine.prove.chain import CHAIN_BITS, continuation_chain
from symrmt.engine.prove.hermitized import prove_hermitized_fixed_point
from symrmt.engine.reduce import fixed_point as blockfp
from symrmt.engine.reduce.fixed_point import S_STRENGTH
from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.engine.reduce.plan import formula_args
from symrmt.engine.solve.atoms import AtomCompiled
from symrmt.engine.solve.certify import holds, certified_limit, compiled_system
from symrmt.errors import BranchError


from symrmt.proofs.arb import (
    ESCALATIONS, ProofError, arb_checked, arb_function, bits_for, check_radius, complex_ok, isolate_real_roots, krawczyk,
    mat_solve, relative_ok, require_flint, sympy_ball, to_arb, working_bits,
)

__all__ = ["TraceBall", "prove_trace", "prove_fixed_point", "trace_system_functions", "prove_complex_trace",
           "CHAIN_DEFAULT_UNKNOWNS"]
# ---------------------------------------------------------------- engine traces

class TraceBall:
    """A proved trace limit: ``value`` (a ball), ``traces`` (the balls of each normalized trace),
    ``branch`` (``"isolated"``: every real solution's trace was isolated exactly and one lies in the
    sanity region; ``"continued"``: a chain of Krawczyk boxes along the homotopy in ``s`` connects it to
    the root at ``s = 0``; ``"sanity"``: the sanity bounds hold on the ball, other roots there not
    excluded), ``notes`` (why a chain did not close, or its number of boxes).  :func:`prove_trace` builds one.

    >>> import flint
    >>> TraceBall(flint.arb(1) / 4, [flint.arb(1) / 4], "sanity", [])
    TraceBall(0.250000000000000, branch='sanity')
    """

    def __init__(self, value, traces, branch, notes):
        self.value, self.traces, self.branch, self.notes = value, traces, branch, notes

    def __repr__(self):
        return f"TraceBall({self.value}, branch={self.branch!r})"




def trace_system_functions(cs, values):
    """``(F, J, pvals, pv)`` of a compiled engine system ``cs`` at ``s = 1``, ``eps = 0``, on balls, at the
    exact ``values``: the residual ``F(h)`` and Jacobian ``J(h)`` of a list of balls, the parameters' balls and
    the full argument list.  Raises :class:`ProofError` when a value is not finite on the balls.

    >>> from fractions import Fraction
    >>> import flint
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> cs = compiled_system(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))").traces[0].system)
    >>> F, J, pvals, pv = trace_system_functions(cs, {"gamma": Fraction(1)})
    >>> [r.contains(0) for r in F([flint.arb(-0.6180339887498949)] * 2)]   # the Marchenko-Pastur root
    [True, True]
    """
    m = cs.m
    pvals = [to_arb(Fraction(values[p.name])) for p in cs.params]
    if isinstance(cs, AtomCompiled):
        flat = _atom_flat(cs)
        aux = arb_checked(list(arb_function(cs._aux)(pvals))[:-1], "the auxiliary parameters")
    else:
        fjs = arb_function(cs.fjs)
        flat = (lambda h, pv: fjs(h, pv))
        aux = arb_checked(list(arb_function(cs.aux)(pvals))[:-1], "the auxiliary parameters")
    pv = pvals + [to_arb(1), to_arb(0)] + aux

    def F(h):
        return arb_checked(list(flat(h, pv)[:m]), "the residual")

    def J(h):
        v = arb_checked(list(flat(h, pv)[m:m + m * m]), "the Jacobian")
        return [v[m * i:m * (i + 1)] for i in range(m)]

    return F, J, pvals, pv


def _atom_flat(cs):
    """The atom sums of :class:`~symrmt.engine.solve.atoms.AtomCompiled` run on balls (its own code,
    with its compiled pieces on balls and each atom's exact value and weight as balls)."""
    class _Proxy:
        pass

    px = _Proxy()
    for name in ("m", "k", "params", "keep", "d_rows", "system"):
        setattr(px, name, getattr(cs, name))
    other, eta, l0 = arb_function(cs._other), arb_function(cs._eta), arb_function(cs._l0)

    class _Fn:
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, *a):
            return self.fn(*a)

        def float_version(self):
            return None

    px._other, px._eta = _Fn(other), _Fn(eta)

    def atom_data(pvals, floats):
        data = []
        k = cs.k
        for v, w in zip(cs.system.values, cs.system.weights):
            vals = l0(list(pvals), [to_arb(sp.sympify(v)), to_arb(0)])
            data.append((to_arb(sp.sympify(w)), list(vals[:k * k]), list(vals[k * k:])))
        return data

    px._atom_data = atom_data
    return lambda h, pv: AtomCompiled._flat(px, h, pv, "s")


def _readout_unknown(t):
    items = list(t.system.readout.items())
    if len(items) != 1:
        return None
    (ij, coef), = items
    return t.system.unknowns.index(ij), coef


def _monomial(vals, exps) -> Fraction:
    out = Fraction(1)
    for v, e in zip(vals, exps):
        if e:
            out *= v ** e
    return out


def _elimination(system, pos):
    """The univariate polynomial of :func:`_isolate_trace_branch` in the readout unknown with the parameters
    as symbols: its coefficients (highest degree first), each a list of ``(Fraction, exponents)`` over
    ``system.params``; ``None`` when a coefficient is not a polynomial with rational coefficients in the
    parameters (then the elimination runs at the values).  Computed once per system (kept on it)."""
    cache = system.__dict__.setdefault("_trace_elimination", {})
    if pos in cache:
        return cache[pos]

    out = None
    try:
        params = list(system.params)
        polys = []
        for r in system.residual:
            num, _den = sp.fraction(sp.cancel(sp.together(sp.sympify(r).subs({S_STRENGTH: 1, EPS_SHIFT: 0}))))
            polys.append(sp.expand(num))
        x = system.h[pos]
        uni = sp.resultant(polys[0], polys[1], system.h[1 - pos]) if len(polys) == 2 else polys[0]
        uni = sp.expand(uni)
        if uni != 0 and not (uni.free_symbols - {x} - set(params)):
            coeffs = []
            for c in sp.Poly(uni, x).all_coeffs():
                pc = sp.Poly(c, *params, domain="QQ") if params else None
                if pc is None:
                    coeffs.append([(Fraction(int(sp.Rational(c).p), int(sp.Rational(c).q)), ())])
                else:
                    coeffs.append([(Fraction(int(q.p), int(q.q)), e) for e, q in pc.terms()])
            out = coeffs
    except (sp.PolynomialError, TypeError, ValueError):  # not polynomial in the parameters
        out = None
    cache[pos] = out
    return out


def _isolate_trace_branch(t, values, tau_ball, checks):
    """``True`` when exact elimination isolates every real solution's trace and exactly one (the ball's)
    lies in the sanity region; ``False`` when the system is beyond it (more than 2 unknowns,
    irrational coefficients); :class:`BranchError` when the ball's root is not the one."""
    system = t.system
    m = len(system.h)
    ro = _readout_unknown(t)
    if m > 2 or ro is None:
        return False
    pos, coef = ro
    subs = {S_STRENGTH: 1, EPS_SHIFT: 0}
    for p in system.params:
        subs[p] = sp.Rational(Fraction(values[p.name]).numerator, Fraction(values[p.name]).denominator)
    elim = _elimination(system, pos)
    if elim is not None:
        # the eliminated polynomial with the parameters kept as symbols, computed once per system: here
        # only its coefficients are evaluated at the values, exactly (a common factor of a numerator and
        # its denominator at these values only adds a root, which can only make the isolation refuse)
        vals = [Fraction(values[p.name]) for p in system.params]
        coeffs = [sum((c * _monomial(vals, e) for c, e in terms), Fraction(0)) for terms in elim]
        if not any(coeffs):
            return False
        cf = [sp.Rational(q.numerator, q.denominator) for q in coeffs]
    else:
        polys = []
        for r in system.residual:
            num, _den = sp.fraction(sp.cancel(sp.together(sp.sympify(r).subs(subs))))
            polys.append(sp.expand(num))
        x = system.h[pos]
        if m == 2:
            other = system.h[1 - pos]
            uni = sp.resultant(polys[0], polys[1], other)
        else:
            uni = polys[0]
        uni = sp.expand(uni)
        if uni == 0 or uni.free_symbols - {x}:
            return False
        poly = sp.Poly(uni, x)
        cf = poly.all_coeffs()
        if not all(c.is_Rational for c in cf):
            return False
    flint = require_flint()
    fp = flint.fmpq_poly([flint.fmpq(int(c.p), int(c.q)) for c in reversed(cf)])
    if fp.degree() < 1 or fp.gcd(fp.derivative()).degree() > 0:
        return False  # a multiple root: the isolation below needs simple roots
    roots = isolate_real_roots(fp)
    cf_ball = to_arb(sp.sympify(coef).subs(subs))
    inside = [r for r in roots if all(bd.holds(cf_ball * r) for bd in checks)]
    undecided = [r for r in roots if not all(bd.holds(cf_ball * r) for bd in checks)
                 and not any(bd.fails(cf_ball * r) for bd in checks)]
    if undecided or len(inside) != 1 or not checks:
        return False
    if not (cf_ball * inside[0]).overlaps(tau_ball):
        raise BranchError(f"trace #{t.index + 1}: the proved root {tau_ball.str(10)} is not the only real solution in "
                          f"the sanity region ({(cf_ball * inside[0]).str(10)}); a box around another root is refused")
    return True


class _Bound:
    def __init__(self, kind, b):
        self.kind, self.b = kind, b

    def holds(self, v):
        """Proved: the ball satisfies the bound."""
        if self.kind == "pos":
            return v > 0
        if self.kind == "nonneg":
            return v >= 0
        return v <= self.b

    def fails(self, v):
        """Proved: the ball violates it."""
        if self.kind == "pos":
            return v <= 0
        if self.kind == "nonneg":
            return v < 0
        return v > self.b


def _bounds(t, plan, values):
    subs = {p: sp.Rational(Fraction(values[p.name]).numerator, Fraction(values[p.name]).denominator)
            for p in plan.params}
    out = []
    for kind, bound, conds in t.bounds:
        if not all(holds(c, subs) for c in set(conds)):
            continue
        b = sp.sympify(bound).subs(subs)
        if not (b.is_extended_real and b.is_finite):
            continue
        out.append(_Bound(kind, to_arb(b) if b.is_Rational else sympy_ball(b)))
    return out


def _trace_chain(t, cs, values, H):
    """Number of boxes of the chain from the root at ``s = 0`` (``L_0 H = I`` on the defined entries) to the
    proved ``H`` at ``s = 1``
    (:func:`symrmt.engine.prove.chain.continuation_chain`); ``ProofError`` when it cannot be made.

    A law of many atoms is chained too: its weighted-sum rows ``R_S = S - sum_a w_a (L0_d(v_a) - s E)^{-1}``
    are at ``s = 0`` ``S`` minus a constant (the atoms' exact values and weights as balls), so the whole
    residual is affine in ``H`` there, as for the other systems."""
    flint = require_flint()
    with working_bits(CHAIN_BITS):
        _F0, _J0, pvals, pv = trace_system_functions(cs, values)
    m = cs.m
    k = len(pvals)
    fjs = _atom_flat(cs) if isinstance(cs, AtomCompiled) else arb_function(cs.fjs)

    def at(tt):
        return pv[:k] + [tt, to_arb(0)] + pv[k + 2:]

    def F(h, tt):
        return arb_checked(list(fjs(h, at(tt))[:m]), "the residual")

    def J(h, tt):
        v = arb_checked(list(fjs(h, at(tt))[m:m + m * m]), "the Jacobian")
        return [v[m * i:m * (i + 1)] for i in range(m)]

    approx = None
    if cs.ffjs is not None:
        pf = [float(x.mid()) for x in pv]

        def approx(h, tt):
            v = cs.ffjs(h, pf[:k] + [tt, 0.0] + pf[k + 2:])
            return v[:m], [v[m + m * i:m + m * (i + 1)] for i in range(m)], v[m + m * m:m + m * m + m]

    def Ft(h, tt):
        return arb_checked(list(fjs(h, at(tt))[m + m * m:m + m * m + m]), "dR/ds")

    # the start: at s = 0 the residual L_0 H - I (on the defined entries) is affine in H, so its root is the
    # solution of one linear system, unique where the Jacobian is regular (which the first box proves)
    with working_bits(CHAIN_BITS):
        zero = [flint.arb(0)] * m
        try:
            sol = flint.arb_mat(J(zero, flint.arb(0))).solve(flint.arb_mat([[-x] for x in F(zero, flint.arb(0))]))
        except ZeroDivisionError:
            raise ProofError(f"trace #{t.index + 1}: L_0 is singular (the shift of the inverses is not chained)") from None
        start = [sol[i, 0] for i in range(m)]
        # a guard of that structure: the Jacobian at s = 0 on a wide box is the same point matrix (a residual
        # that were not affine in H at s = 0 would widen it, and its start would not be the only root)
        wide = [flint.arb(0, 1 + abs(x.mid())) for x in start]
        for a, b in zip(J(wide, flint.arb(0)), J(zero, flint.arb(0))):
            if any(not (u - v).contains(0) or (u - v).rad() > flint.arb(2) ** -60 * (1 + abs(v.mid()))
                   for u, v in zip(a, b)):
                raise ProofError(f"trace #{t.index + 1}: the residual is not affine in H at s = 0 (no exact start)")

    return continuation_chain(F, J, start, H, f"trace #{t.index + 1}", approx=approx, Ft=Ft)[0]


#: engine systems up to this many unknowns get the chain by default (``prove=True``); larger ones only
#: with ``prove="branch"`` (``--prove-branch``): ``trace(inv((Z^T Z/n)^k + gamma I))`` measured (on a loaded
#: machine) 0.12 s at 8 unknowns, 0.4 s at 18, 1.2 s at 32, 5 s at 50, 42 s at 98 (docs/prove.md)
CHAIN_DEFAULT_UNKNOWNS = 32


def prove_fixed_point(t, plan, sol, values: dict, digits: int, chain=None, chained=None):
    """``(H, derivs, tau, branch, note)`` of one trace's fixed point, at the current working precision.

    ``t``: the plan's trace, ``sol``: its solver from the certified solve (the centre of the box, at
    ``digits + 20``); ``H``: the Krawczyk box, ``derivs``: the balls of the parameter derivatives that
    ``plan.needs`` asks for (the implicit linear system on the box), ``tau``: the trace's ball (0 without a
    readout), its sanity bounds proved; ``branch``: ``"isolated"``, ``"continued"`` or ``"sanity"`` (``chain``
    as in :func:`prove_trace`; ``chained``: a dict that keeps each trace's chain result across precision
    escalations); ``note``: the chain's boxes or why it did not close (else ``None``).  Raises
    :class:`ProofError` when the box is not proved and :class:`BranchError` when a bound fails on it.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> from symrmt.proofs.arb import bits_for
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> plan = m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))")
    >>> sol = certified_limit(plan, {"gamma": Fraction(1)}, 12)["solvers"][0]
    >>> with working_bits(bits_for(12, 20)):   # (sqrt(5) - 1)/2 = 0.6180339887498948482045868...
    ...     H, derivs, tau, branch, note = prove_fixed_point(plan.traces[0], plan, sol, {"gamma": Fraction(1)}, 12)
    ...     print(tau.mid().str(25, radius=False), float(tau.rad()) < 1e-40, branch)
    0.6180339887498948482045868 True isolated
    """
    flint = require_flint()
    if getattr(t, "hermitized", False) or hasattr(sol, "gauge"):  # non-normal, Hermitized: pinned at eps = 0
        return prove_hermitized_fixed_point(t, plan, sol, values, digits)
    chained = {} if chained is None else chained
    cs = sol.c
    with mpmath.workdps(digits + 20):
        h0, _, _, _ = sol.solve(digits + 20)
    F, J, pvals, _pv = trace_system_functions(cs, values)
    H = krawczyk(F, J, h0, f"trace #{t.index + 1}")
    derivs = {}
    alphas = sorted({blockfp._canon(a) for a in plan.needs[t.index] if a}, key=len)
    if alphas:
        JH = flint.arb_mat(J(H))
        for alpha in alphas:
            if not set(alpha) <= set(cs.params):
                derivs[alpha] = [flint.arb(0)] * cs.m
                continue
            fn, lower = cs.derivative_function(alpha)
            rhs = arb_checked(list(arb_function(fn)(H, *[derivs[b] for b in lower], pvals)),
                              "a derivative's right-hand side")
            sol_ = mat_solve(JH, flint.arb_mat([[-x] for x in rhs]))
            derivs[alpha] = [sol_[i, 0] for i in range(cs.m)]
    subs = {p: sp.Rational(Fraction(values[p.name]).numerator, Fraction(values[p.name]).denominator)
            for p in plan.params}
    tau = flint.arb(0)
    for (i, j), cf in t.system.readout.items():
        tau += to_arb(sp.sympify(cf).subs(subs)) * H[t.system.unknowns.index((i, j))]
    checks = _bounds(t, plan, values) if t.system.readout else []
    for bd in checks:
        if bd.fails(tau):
            raise BranchError(f"trace #{t.index + 1}: the proved root gives the trace {tau.str(10)}, which "
                              f"violates its bound ({bd.kind} {bd.b.str(10)}): off the physical branch")
        if not bd.holds(tau):
            raise ProofError(f"trace #{t.index + 1}: the bound ({bd.kind}) is not decided on the ball "
                             f"{tau.str(10)}; ask for more digits")
    try:
        iso = bool(t.system.readout) and _isolate_trace_branch(t, values, tau, checks)
    except ProofError:
        iso = False
    if iso:
        return H, derivs, tau, "isolated", None
    if chain or (chain is None and cs.m <= CHAIN_DEFAULT_UNKNOWNS):
        if t.index not in chained:
            try:
                chained[t.index] = _trace_chain(t, cs, values, H)
            except ProofError as exc:
                chained[t.index] = str(exc)
        if isinstance(chained[t.index], str):
            return H, derivs, tau, "sanity", f"branch not continued: {chained[t.index]}"
        return H, derivs, tau, "continued", f"trace #{t.index + 1}: continued from L_0^-1 at s = 0 by " \
            f"{chained[t.index]} boxes"
    if not t.system.readout:  # a bulk fixed point read out only through a quadratic form: no bound to prove
        return H, derivs, tau, "sanity", (f"trace #{t.index + 1}: no sanity bound applies to this fixed point (it is "
                                          "read out only through a quadratic form); its branch is the certified "
                                          "solve's")
    return H, derivs, tau, "sanity", None


def prove_trace(plan, values: dict, digits: int, solvers=None, chain: bool | None = None):
    """The :class:`TraceBall` of an engine plan at exact ``values`` (name -> Fraction), to ``digits``.

    ``solvers``: the solver of each trace from the certified solve (their homotopy start points are
    reused), else :func:`~symrmt.engine.solve.certify.certified_limit` makes them here.
    ``chain``: where exact isolation does not apply, prove the branch by a chain of Krawczyk boxes
    along the homotopy in ``s`` (branch ``"continued"``); when the chain cannot be made, the
    branch stays ``"sanity"`` and ``notes`` says why.  ``None``: only for systems of at most
    :data:`CHAIN_DEFAULT_UNKNOWNS` unknowns.  Raises :class:`ProofError` (python-flint missing, a box not
    proved, a radius above ``10^-digits``) and :class:`BranchError` (a limit not real or not finite).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> prove_trace(m.plan("trace(inv(Z.T*Z/n + gamma*I(n)))"), {"gamma": Fraction(1)}, 12)   # (sqrt(5) - 1)/2
    TraceBall([0.618033988749895 +/- 1.52e-16], branch='isolated')
    """
    flint = require_flint()
    if solvers is None:  # the certified solve's checked homotopy starts
        solvers = certified_limit(plan, values, digits)["solvers"]
    bits = bits_for(digits, 20)
    formula_src = plan.__dict__.get("_proof_formula_source")  # compiled once per plan
    if formula_src is None:
        formula_src = inspect.getsource(compile_expr([list(s for s, _ in plan.symbols)], plan.formula))
        plan.__dict__["_proof_formula_source"] = formula_src
    chained = {}  # trace index -> boxes of its chain, or the reason it failed (once per trace)
    for _ in range(ESCALATIONS):
        with working_bits(bits):
            results, taus, branches, notes = {}, [], [], []
            for t in plan.traces:
                H, derivs, tau, branch, note = prove_fixed_point(t, plan, solvers[t.index], values, digits, chain,
                                                                 chained)
                results[t.index] = (H, derivs)
                taus.append(tau)
                branches.append(branch)
                if note:
                    notes.append(note)
            pballs = {p: to_arb(Fraction(values[p.name])) for p in plan.params}
            args = formula_args(plan, pballs.__getitem__,
                                lambda k, pos, alpha, r=results: r[k][0][pos] if not alpha else r[k][1][alpha][pos])
            value, = arb_checked([arb_function(formula_src, "formula")(args)], "the expression")
            if isinstance(value, flint.acb):
                if not value.imag.contains(0) or value.imag.rad() > 0:
                    raise BranchError(f"the limit is not proved real ({value})")
                value = value.real
            if not value.is_finite():
                raise BranchError(f"the limit is not a finite number on the proved box ({value}): a square root of a "
                                  "negative quantity or a division by a zero limit")
            if relative_ok(value, digits):
                break
        bits *= 2
    check_radius(value, digits, "the trace limit")
    branch = ("isolated" if all(b == "isolated" for b in branches) else
              "continued" if all(b in ("isolated", "continued") for b in branches) else "sanity")
    return TraceBall(value, taus, branch, notes)


# ---------------------------------------------------------------- a complex parameter value

def prove_complex_trace(plan, values: dict, zname: str, zre: Fraction, zim: Fraction, digits: int, hs: dict,
                        signs: dict, conjugate: bool = False):
    """``(value, taus)`` as ``acb`` balls at the complex point ``zname = zre + i zim`` (``zim > 0``); with
    ``conjugate``, the balls at ``zre - i zim`` (real coefficients: ``tau(conj z) = conj tau(z)``), conjugated at
    the working precision (python-flint rounds a conjugate to the context's precision: outside it, to 53 bits).

    ``hs``: the certified solution of each trace (mpc lists), the centres.  The complex system is the
    real one's compiled code run on ``acb`` balls; the Krawczyk test runs on its realification
    (``x = (Re h, Im h)``, ``J_R = [[Re J, -Im J], [Im J, Re J]]``, the residual being polynomial in ``h``,
    hence holomorphic), so the box holds exactly one complex root.  ``signs``: the expected sign of
    ``Im tau`` of each trace (``None``: not checked), proved on the ball, else :class:`BranchError`.
    The branch is ``"sanity"``: that no other solution has this sign is not proved.  Raises
    :class:`ProofError` when a box is not proved.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> plan = m.plan("trace(inv(G/sqrt(n) - z*I(n)))")   # the semicircle at z = i: i (sqrt(5) - 1)/2
    >>> with mpmath.workdps(40):
    ...     hs = {0: [mpmath.mpc(0, -(mpmath.sqrt(5) - 1) / 2)]}
    >>> value, taus = prove_complex_trace(plan, {}, "z", Fraction(0), Fraction(1), 12, hs, {0: 1})
    >>> value.real.contains(0), str(value.imag)
    (True, '[0.618033988749895 +/- 1.52e-16]')
    """
    flint = require_flint()
    acb = flint.acb
    bits = bits_for(digits, 20)
    formula_src = inspect.getsource(compile_expr([list(s for s, _ in plan.symbols)], plan.formula))
    for _ in range(ESCALATIONS):
        with working_bits(bits):
            zb = acb(to_arb(zre), to_arb(zim))
            results, taus = {}, []
            for t in plan.traces:
                cs = compiled_system(t.system)
                m = cs.m
                pvals = [zb if p.name == zname else to_arb(Fraction(values[p.name])) for p in cs.params]
                fjs = arb_function(cs.fjs, complex_=True)
                aux = arb_checked(list(arb_function(cs.aux, complex_=True)(pvals))[:-1], "the auxiliary parameters")
                pv = pvals + [acb(1), acb(0)] + aux

                def flat(x, fjs=fjs, pv=pv, m=m):
                    return arb_checked([acb(v) for v in fjs([acb(x[i], x[m + i]) for i in range(m)], pv)],
                                       "the complex system")

                def FR(x, flat=flat, m=m):
                    v = flat(x)[:m]
                    return [a.real for a in v] + [a.imag for a in v]

                def JR(x, flat=flat, m=m):
                    v = flat(x)
                    Jc = [v[m + m * i:m + m * (i + 1)] for i in range(m)]
                    top = [[a.real for a in row] + [-a.imag for a in row] for row in Jc]
                    bot = [[a.imag for a in row] + [a.real for a in row] for row in Jc]
                    return top + bot

                h0 = hs[t.index]
                x0 = [mpmath.mpf(mpmath.mpmathify(v).real) for v in h0] + [mpmath.mpf(mpmath.mpmathify(v).imag) for v in h0]
                X = krawczyk(FR, JR, x0, f"trace #{t.index + 1} at {zname} = {zre} + {zim}i")
                H = [acb(X[i], X[m + i]) for i in range(m)]
                results[t.index] = H
                subs = {p: sp.Rational(Fraction(values[p.name]).numerator, Fraction(values[p.name]).denominator)
                        for p in plan.params if p.name != zname}
                tau = acb(0)
                for (i, j), cf in t.system.readout.items():
                    cfv = sp.sympify(cf).subs(subs)
                    if cfv.free_symbols:
                        tau = None
                        break
                    tau += to_arb(cfv) * H[t.system.unknowns.index((i, j))]
                sign = signs.get(t.index)
                if sign is not None:
                    if tau is None or not (sign * tau.imag > 0):
                        raise BranchError(f"trace #{t.index + 1}: Im tau = {tau.imag.str(10) if tau is not None else '?'} "
                                          f"is not proved to have the sign {'+' if sign > 0 else '-'} of the Stieltjes "
                                          "branch on the box; no ball is returned")
                taus.append(tau)
            args = formula_args(plan, lambda p, zb=zb: zb if p.name == zname else to_arb(Fraction(values[p.name])),
                                lambda k, pos, _alpha, r=results: r[k][pos])
            value, = arb_checked([acb(arb_function(formula_src, "formula", True)(args))], "the expression")
            if conjugate:
                value, taus = value.conjugate(), [None if x is None else x.conjugate() for x in taus]
            if complex_ok(value, digits):
                break
        bits *= 2
    if not complex_ok(value, digits):
        raise ProofError(f"the complex limit's ball {value.str(10)} is wider than 1e-{digits} of its modulus")
    return value, taus
