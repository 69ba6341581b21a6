r"""The Hermitized fixed point at ``eps = 0`` on balls (a non-normal resolvent inside its spectrum).

At ``eps = 0`` the Hermitized residual ``R(H) = 0`` (:mod:`symrmt.engine.reduce.hermitize`) has a continuous family of
roots (``D^{-1} H D^{-1}``, ``D = diag(t I, I/t)``), so its Jacobian is singular there and a Krawczyk test on
``R`` cannot succeed.  The solver (:mod:`symrmt.engine.solve.hermitized`) pins the family with the gauge row
``g(H) = 0`` (the size-weighted traces of the two diagonal quadrants sum to 0, an identity every ``eps > 0``
obeys).  ``[R; g]`` has one equation more than unknowns; it is consistent because of an exact identity

    ``l(H)^T R(H) = 0``  for every ``H``  (a syzygy, polynomial ``l``),

found here by linear algebra on the SymPy residual (an ansatz of degree at most 2 in the unknowns, the
exact parameter values substituted; the identity is then checked by expansion).  The square system ``S`` is
``R`` with one row ``r`` replaced by ``g``.  A Krawczyk box for ``S`` holds exactly one root of ``S``; on the
box ``l_r != 0`` is proved, so ``l_r R_r = -sum_{i != r} l_i R_i = 0`` gives ``R_r = 0`` too: the box holds
exactly one root of ``[R; g]``, the pinned fixed point.  Not covered (``ProofError``, with the reason): pencils
with more families than the scaling (``[J; g]`` rank deficient at the root), no syzygy of degree 2, and
parameter derivatives of a Hermitized trace.  The branch is ``sanity``: that this root is the limit
``eps -> 0+`` of the regularized fixed points (the Brown-measure value) is the solver's continuation, not
proved.
"""

from __future__ import annotations

import inspect
import itertools
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from symrmt.proofs.arb import ProofError, arb_checked, arb_function, krawczyk, require_flint, to_arb
from symrmt.cache import cache_dict
from symrmt.codegen.compile import compile_expr

#: the largest Hermitized system whose syzygy is searched (the ansatz has m * C(m + 2, 2) coefficients; SymPy's
#: null space takes ~1 s at 4 unknowns, ~25 s at 6 and ~3 min at 8 on a shared machine)
MAX_UNKNOWNS = 6
#: what the refusals offer instead
INSTEAD = "; without --prove the value is certified at two precisions"
#: relative size below which a singular value of ``[J; g]`` at the root counts as zero (a further family)
FAMILY_RANK = 1e-10


#: (residual, unknowns) at exact values -> the syzygy (the SymPy linear algebra is the proof's main cost)
_SYZYGIES = cache_dict("symrmt.engine.prove.hermitized._SYZYGIES", 64)


def _exact(values, params):
    return {p: sp.Rational(Fraction(values[p.name]).numerator, Fraction(values[p.name]).denominator) for p in params}


def syzygy(R, hs, h0):
    """``l`` (SymPy polynomials) with ``l . R == 0`` identically and ``l(h0)`` as far from 0 as the null space
    allows (the Koszul syzygies ``R_j e_i - R_i e_j`` vanish at every root and are useless); ``None`` if none.
    ``R``: the residual (SymPy), ``hs``: its unknowns, ``h0``: the root (numbers).

    >>> x, y = sp.symbols("x y")
    >>> syzygy([x - y, y - x], [x, y], [1, 1]), syzygy([x * y - 1, x - 2], [x, y], [2, 0.5])
    ([1, 1], None)
    """
    m = len(R)
    monos = [sp.Integer(1)] + list(hs) + [a * b for a, b in itertools.combinations_with_replacement(hs, 2)]
    coef = [[sp.Dummy(f"c{i}_{k}") for k in range(len(monos))] for i in range(m)]
    ell = [sum(c * mo for c, mo in zip(coef[i], monos)) for i in range(m)]
    total = sp.Poly(sp.expand(sum(e * r for e, r in zip(ell, R))), *hs)
    unknowns = [c for row in coef for c in row]
    A, _ = sp.linear_eq_to_matrix(total.coeffs(), unknowns)
    best, size = None, 0.0
    at = dict(zip(hs, h0))
    for vec in A.nullspace():
        sub = dict(zip(unknowns, vec))
        cand = [sp.expand(e.subs(sub)) for e in ell]
        val = max(abs(float(c.subs(at))) for c in cand)
        if val > size:
            best, size = cand, val
    if best is None or not size > 1e-8:
        return None
    if sp.expand(sum(e * r for e, r in zip(best, R))) != 0:  # the identity, checked exactly
        return None
    return best


def prove_hermitized_fixed_point(t, plan, sol, values: dict, digits: int):
    """``(H, derivs, tau, branch, note)`` of a Hermitized trace (as :func:`symrmt.engine.prove.trace.prove_fixed_point`),
    at the current working precision; ``ProofError`` where the pinned system is not covered (module docstring).
    (``Model.limit("trace(inv(Z/sqrt(n) + gamma*I(n)))", at={"gamma": "1/2"}, prove=True)`` proves the Ginibre
    value ``gamma = 1/2`` this way, in a few seconds: the syzygy's linear algebra.)

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> plan = m.plan("diff(trace(inv(Z/sqrt(n) + gamma*I(n))), gamma)")   # refused before any solve
    >>> prove_hermitized_fixed_point(plan.traces[0], plan, None, {"gamma": Fraction(1, 2)}, 12)
    Traceback (most recent call last):
        ...
    symrmt.errors.ProofError: trace #1 (Hermitized): parameter derivatives of a Hermitized trace are not proved (the implicit system of the pinned fixed point is not built); without --prove the value is certified at two precisions
    """
    flint = require_flint()
    what = f"trace #{t.index + 1} (Hermitized)"
    if any(a for a in plan.needs[t.index]):
        raise ProofError(f"{what}: parameter derivatives of a Hermitized trace are not proved (the implicit system "
                         "of the pinned fixed point is not built)" + INSTEAD)
    system = sol.c.system  # the Hermitized system (the plan's trace may still hold the original one)
    m = len(system.unknowns)
    if m > MAX_UNKNOWNS:
        raise ProofError(f"{what}: {m} unknowns; the syzygy that makes the pinned system square is searched up to "
                         f"{MAX_UNKNOWNS}" + INSTEAD)
    hs = list(system.h)
    subs = _exact(values, plan.params)
    free = [s for s in set().union(*(sp.sympify(r).free_symbols for r in system.residual)) if s not in hs]
    at = dict(subs)
    for s in free:
        if s.name == "s_hom":
            at[s] = 1
        elif s.name == "eps_shift":
            at[s] = 0
    R = [sp.expand(sp.sympify(r).subs(at)) for r in system.residual]
    left = set().union(*(r.free_symbols for r in R)) - set(hs)
    if left:
        raise ProofError(f"{what}: the residual keeps the symbols {sorted(map(str, left))} after the substitution" + INSTEAD)
    gauge = [0] * m
    for pos, w in sol.gauge():
        gauge[pos] += sp.sympify(w).subs(subs)
    g = sum(w * h for w, h in zip(gauge, hs))
    with mpmath.workdps(digits + 20):
        h0, _, _, _ = sol.solve(digits + 20)
    h0f = [float(x) for x in h0]
    Jf = np.array([[float(sp.diff(r, h).subs(dict(zip(hs, h0f)))) for h in hs] for r in R] +
                  [[float(w) for w in gauge]])
    sv = np.linalg.svd(Jf, compute_uv=False)
    if not sv[-1] > FAMILY_RANK * sv[0]:
        raise ProofError(f"{what}: at eps = 0 the fixed point lies on more than the one family that the gauge cuts "
                         "([J; gauge] is rank deficient at the root: the solver pins the others numerically), so "
                         "no square system is proved" + INSTEAD)
    key = (tuple(map(str, R)), tuple(map(str, hs)))
    if key not in _SYZYGIES:
        _SYZYGIES[key] = syzygy(R, hs, h0f)
    ell = _SYZYGIES[key]
    if ell is None:
        raise ProofError(f"{what}: no identity l(H)^T R(H) = 0 of degree <= 2 that is non-zero at the root, so the "
                         "residual with its gauge row cannot be made square" + INSTEAD)
    at0 = dict(zip(hs, h0f))
    r = max(range(m), key=lambda i: abs(float(ell[i].subs(at0))))
    S = R[:r] + [g] + R[r + 1:]
    JS = [[sp.diff(e, h) for h in hs] for e in S]
    fs = arb_function(inspect.getsource(compile_expr([hs], S, cse=False)), "pinned residual")
    fj = arb_function(inspect.getsource(compile_expr([hs], JS, cse=False)), "pinned Jacobian")
    fl = arb_function(inspect.getsource(compile_expr([hs], ell[r], cse=False)), "syzygy entry")

    def F(h):
        return arb_checked(list(fs(h)), "the pinned residual")

    def J(h):
        return [arb_checked(list(row), "the pinned Jacobian") for row in fj(h)]

    H = krawczyk(F, J, list(h0), what)
    lr, = arb_checked([fl(H)], "the syzygy entry")
    if lr.contains(0):
        raise ProofError(f"{what}: the identity's coefficient of the replaced row is not proved non-zero on the box "
                         f"({lr.str(5)}), so the dropped equation is not implied" + INSTEAD)
    tau = flint.arb(0)
    for (i, j), cf in system.readout.items():
        tau += to_arb(sp.sympify(cf).subs(subs)) * H[system.unknowns.index((i, j))]
    note = (f"{what}: the pinned fixed point at eps = 0 proved (the residual with row {r + 1} replaced by the gauge "
            f"row, implied by an identity l(H)^T R(H) = 0 with l_{r + 1} != 0 on the box); that it is the limit "
            "eps -> 0+ (the Brown-measure branch) is the solver's continuation, not proved")
    return H, {}, tau, "sanity", note
