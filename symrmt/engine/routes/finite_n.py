r"""The ``1/n`` term of a trace limit with real Gaussian and GOE matrices.

For a pencil ``L = L_0 (x) I + sum_o c_o E_{i_o j_o} (x) X_o`` (each occurrence ``o`` a real Gaussian
``Zh``, its transpose, or a GOE ``Gh``, entries of variance ``1/n``, the GOE with a zero diagonal as the
package samples it), Gaussian integration by parts of ``L G = I`` (``G = L^{-1}``) gives, block by block
and with ``H_n = (id (x) tau) E[G]``,

.. math::  (L_0 - \eta(H_n)) H_n - I = \tfrac1n\,(T - D) + O(n^{-2}),

where the covariance of two normalized traces (``O(n^{-2})``) is dropped, and

* ``T_kl = sum c_o c_o' tau(G_{m m'}^T G_{l' l})`` over the ordered pairs of occurrences of one matrix,
  ``o`` at ``(k, m)`` and ``o'`` at ``(m', l')``, with the *same* orientation (``Zh, Zh`` or ``Zh^T, Zh^T``;
  every pair of a GOE): the pairings ``E[Zh_ab Zh_ab]`` that a complex Gaussian does not have;
* ``D_kl = sum 2 c_o c_o' H_{m m'} H_{l' l}`` over the pairs of a GOE: its zero diagonal removes the
  terms ``gamma = alpha`` of both pairings (the diagonal entries of ``G`` concentrate at ``H``).

So ``H_n = H + delta/n + O(n^{-2})`` with ``J delta = T - D``, ``J`` the Jacobian of the fixed point at
``H``.  The traces ``tau(G_{xq}^T G_{ys})`` are read at their limit from the doubled pencil
``[[L^T, E_xy (x) I], [0, L]]``, whose inverse holds ``-G^T (E_xy (x) I) G`` in its corner: with
``K = -tau(G^T E_xy G)``, its fixed point is the linear system

.. math::  K - H^T \eta_\times(K) H = -H^T E_{xy} H,

``eta_x(K)_{j j'} = sum c c' (N_i/n) K_{i i'}`` over the pairs of occurrences ``(i, j)`` (of ``L``, read
transposed) and ``(i', j')`` with the same orientation.  For the GOE resolvent this is the correction of
Khorunzhy, Khoruzhenko and Pastur (1996); for a real Wishart matrix it gives the exact ``1/n`` terms of
its moments, ``E tr S^2/p = 1 + c + 1/n`` (``S = Z Z^T/n``, ``c = p/n``).  A scalar expression
``f(tau_1, tau_2, ...)`` gets ``sum_k (df/d tau_k) delta_k``; products of traces add only the covariance,
``O(n^{-2})``.

Covered: real Gaussian, GOE and diagonal matrices of a few atoms (split into blocks) in traces of rational
expressions, real parameter values, no ``diff``.  Refused, with the reason: vectors and quadratic forms,
kernels (their finite-size terms are not those of the Gaussian equivalent), non-normal matrices solved by
Hermitization, diagonal laws summed as weighted sums (many atoms), polynomials summed as a series,
complex values, ``n`` below :data:`MIN_N`, and a size ``ratio * n`` that is not an integer (rounding a
size moves the value by ``O(1/n)`` too).  ``value = limit + correction/n`` is an asymptotic statement: at
a real point outside the spectrum of a matrix that is not positive semi-definite, the finite-``n``
expectation includes exponentially rare eigenvalues near the point, which it does not describe.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import sympy as sp

from symrmt.core.certify import ESCALATIONS, GUARD, Disagree, agree, certify
from symrmt.core.linalg import inverse, singular_tolerance
from symrmt.core.numbers import mpf_of
from symrmt.engine.solve.certify import formula_function
from symrmt.engine.reduce.hermitize import nonnormal_inverses
from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.engine.lang.matrices import GOE, Gaussian, ModelError, walk
from symrmt.engine.reduce.plan import formula_args
from symrmt.engine.lang.vectors import Vector
from symrmt.errors import BranchError

__all__ = ["MIN_N", "finite_size", "check_covered", "correction_system"]

#: the smallest ``n`` a finite-size value is given for (below it the ``O(1/n^2)`` remainder is not small)
MIN_N = 8


def check_covered(model, expr, n) -> None:
    """Refuse (:class:`ModelError`) what the ``1/n`` term does not cover before any solve: ``n`` below
    :data:`MIN_N` or not an integer, a kernel, a matrix not declared in ``model``, vectors.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.goe("G", "n")
    >>> check_covered(m, m.parse("trace(G*G/n)"), 4)
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: n = 4 is below the smallest size of the 1/n expansion, 8 (its O(1/n^2) remainder
    is not small there): simulate at that size instead
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise ModelError(f"n must be an integer, got {n!r}")
    if n < MIN_N:
        raise ModelError(f"n = {n} is below the smallest size of the 1/n expansion, {MIN_N} (its O(1/n^2) "
                         "remainder is not small there): simulate at that size instead")
    kernels = set(getattr(model, "kernel_names", ()))
    for node in walk(expr):
        if isinstance(node, Vector):
            raise ModelError("the 1/n term covers traces of Gaussian, GOE and diagonal matrices; an expression "
                             "with vectors or quadratic forms is not covered")
        if isinstance(node, (Gaussian, GOE)):
            if getattr(node, "elliptic_of", None):
                raise ModelError(f"the elliptic matrix {node.elliptic_of} is not covered by the 1/n term: the engine "
                                 "writes it as a zero-diagonal sum of a GOE and a skew part, whose 1/n term is not "
                                 "that of the elliptic ensemble (its diagonal N(0, 1 + tau)); simulate at that size")
            if node.name in kernels:
                raise ModelError(f"{node.name} enters a kernel: the 1/n term of a kernel matrix is not that of "
                                 "its Gaussian equivalent, so it is not covered (simulate at that size)")
            if model.matrices.get(node.name) is not node:
                raise ModelError(f"the matrix {node.name} is not declared in this model (a kernel built without "
                                 "model=?): the 1/n term needs every random matrix's law")


def _num(e, subs):
    e = sp.sympify(e).subs(EPS_SHIFT, 0)
    if e.free_symbols:
        e = e.subs(subs)
    if e.free_symbols:
        raise ModelError(f"a coefficient of the pencil has no value: {e}")
    return mpf_of(e if not e.is_Rational else Fraction(int(e.p), int(e.q)))


def correction_system(system, h, values: dict):
    """``delta`` (the ``1/n`` coefficients of every unknown of ``system``, in the order of ``all_unknowns``) at the
    fixed point ``h`` (mpf, the current precision) and the exact parameter ``values`` (see the module docstring).
    Raises :class:`ModelError` for a diagonal law of many atoms.

    >>> import mpmath
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> from symrmt.engine.solve.newton import TraceSolver
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> s = m.plan("trace((Z*Z.T/n)**2)").traces[0].system   # E tr S^2/p = 1 + c + 1/n, c = 1
    >>> with mpmath.workdps(20):
    ...     delta = correction_system(s, TraceSolver(compiled_system(s), {}).solve(20)[0], {})
    ...     print(mpmath.nstr(sum(c * delta[s.all_unknowns.index(ij)] for ij, c in s.readout.items()), 15))
    1.0
    """
    pencil = system.pencil
    k = pencil.size
    blocks = pencil.blocks
    subs = {s: sp.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else v
            for s in system.params for v in [values[s.name]]}
    ratio = {b: _num(r, subs) for b, r in pencil.ratios.items()}
    zero = mpmath.mpf(0)
    L0 = [[zero] * k for _ in range(k)]
    occ = {}
    for (i, j), e in pencil.Q.items():
        for leaf, c in e.items():
            if leaf == "I":
                L0[i][j] += _num(c, subs)
            elif leaf[0] in ("Z", "G"):
                occ.setdefault(leaf[1], []).append((leaf[0], leaf[2] if leaf[0] == "Z" else None, i, j,
                                                    _num(c, subs)))
            else:
                raise ModelError("a diagonal law that is not split into blocks (many atoms) is not covered by the "
                                 "1/n term")
    unknowns = list(system.all_unknowns)  # the 1/n term is written on every entry of H, before the reduction
    h = system.expand(h, mpmath.mpf(1), {s.name: _num(v, subs) for s, v in subs.items()})
    col = {u: a for a, u in enumerate(unknowns)}
    m = len(unknowns)
    H = [[zero] * k for _ in range(k)]
    for (i, j), x in zip(unknowns, h):
        H[i][j] = x
    pairs = [(o1, o2) for items in occ.values() for o1 in items for o2 in items]
    usual = [(o1, o2) for o1, o2 in pairs if o1[0] == "G" or o1[1] != o2[1]]   # eta: Zh Zh^T, Zh^T Zh, Gh Gh
    same = [(o1, o2) for o1, o2 in pairs if o1[0] == "G" or o1[1] == o2[1]]    # the real case's pairings

    def eta(X):
        out = [[zero] * k for _ in range(k)]
        for (_, _, kk, mm, c1), (_, _, m2, ll, c2) in usual:
            if blocks[mm] == blocks[m2] and blocks[kk] == blocks[ll]:
                out[kk][ll] += c1 * c2 * ratio[blocks[mm]] * X[mm][m2]
        return out

    def eta_cross(X):  # the doubled pencil's corner: L^T's occurrence (i1, j1) read as (j1, i1)
        out = [[zero] * k for _ in range(k)]
        for (_, _, i1, j1, c1), (_, _, i2, j2, c2) in same:
            if blocks[i1] == blocks[i2] and blocks[j1] == blocks[j2]:
                out[j1][j2] += c1 * c2 * ratio[blocks[i1]] * X[i1][i2]
        return out

    def as_matrix(vec):
        X = [[zero] * k for _ in range(k)]
        for (i, j), x in zip(unknowns, vec):
            X[i][j] = x
        return X

    def matmul(A, B):
        return [[mpmath.fsum(A[i][a] * B[a][j] for a in range(k) if A[i][a] and B[a][j]) for j in range(k)]
                for i in range(k)]

    E = eta(H)
    Lam = [[L0[i][j] - E[i][j] for j in range(k)] for i in range(k)]
    HT = [[H[j][i] for j in range(k)] for i in range(k)]
    jac = [[zero] * m for _ in range(m)]
    cross = [[zero] * m for _ in range(m)]
    for a in range(m):
        unit = [zero] * m
        unit[a] = mpmath.mpf(1)
        D = as_matrix(unit)
        jd = matmul(Lam, D)
        ed = matmul(eta(D), H)
        cd = matmul(matmul(HT, eta_cross(D)), H)
        for b, (i, j) in enumerate(unknowns):
            jac[b][a] = jd[i][j] - ed[i][j]
            cross[b][a] = D[i][j] - cd[i][j]
    jac_inv = _inverse(jac, "the Jacobian of the fixed point")
    cross_inv = _inverse(cross, "the system of the transposed pairings")
    psi = {}

    def tau_tt(x, q, y, s):
        """``tau(G_{xq}^T G_{ys})`` at its limit."""
        if (x, y) not in psi:
            rhs = [-H[x][qq] * H[y][ss] for (qq, ss) in unknowns]
            psi[(x, y)] = [mpmath.fsum(r * v for r, v in zip(row, rhs) if r and v) for row in cross_inv]
        return -psi[(x, y)][col[(q, s)]]

    rhs = [zero] * m
    for (_, _, kk, mm, c1), (kind, _, m2, l2, c2) in same:
        for b, (i, ll) in enumerate(unknowns):
            if i != kk:
                continue
            if blocks[mm] == blocks[l2] and blocks[m2] == blocks[ll]:
                rhs[b] += c1 * c2 * tau_tt(mm, m2, l2, ll)
            if kind == "G":
                rhs[b] -= 2 * c1 * c2 * H[mm][m2] * H[l2][ll]
    return [mpmath.fsum(r * v for r, v in zip(row, rhs) if r and v) for row in jac_inv]


def _inverse(A, what):
    """The inverse of the square matrix ``A`` (lists of mpf), refused (:class:`BranchError`) when it is singular
    or so ill-conditioned that half the working digits would be lost (an edge of the spectrum)."""
    m = len(A)
    if m == 0:
        return []
    try:
        inv = inverse(A, m, singular=what, tol=singular_tolerance(A, mpmath.eps))
    except ZeroDivisionError:
        raise BranchError(f"{what} is singular at the fixed point (an edge of the spectrum?): no 1/n term") from None

    def norm(M):
        return max(mpmath.fsum(abs(x) for x in row) for row in M)

    cond = norm(A) * norm(inv)
    if not cond < mpmath.mpf(10) ** (mpmath.mp.dps // 2):
        raise BranchError(f"{what} is nearly singular at the fixed point (condition {mpmath.nstr(cond, 3)}, an "
                          "edge of the spectrum?): its 1/n term would lose its digits")
    return inv


def _sizes(plan, values, n):
    """Every block's size ``ratio * n`` must be an integer at ``n``."""
    for t in plan.traces:
        subs = {s: values[s.name] for s in t.system.params if s.name in values}
        for b, r in t.system.pencil.ratios.items():
            r = sp.sympify(r).subs({s: sp.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else v
                                    for s, v in subs.items()})
            size = r * n
            if not size.is_Rational or not size.is_integer:
                what = b[0] if isinstance(b, tuple) else b
                part = f" (the atom {b[1]} of a diagonal law)" if isinstance(b, tuple) and b[1] is not None else ""
                raise ModelError(f"at n = {n} the size of {what}{part} is {size} = {float(size):.6g}, not an integer; "
                                 "the 1/n term is for exact sizes (rounding one moves the value by O(1/n) too): "
                                 "choose n so that every size ratio * n is an integer")


def finite_size(plan, result, n: int, digits: int):
    """The limit of ``result`` (a :class:`~symrmt.engine.solve.certify.TraceLimit` of ``plan``, with its solvers)
    and its ``1/n`` term: sets ``result.limit`` (the limit), ``result.correction`` (the coefficient of ``1/n``),
    ``result.n`` and ``result.value = limit + correction/n`` (certified to ``digits`` at two precisions, as
    the limit is), and returns it.  Raises :class:`ModelError` on what is not covered (module docstring).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.goe("G", "n")
    >>> r = m.limit("trace(G*G)/n", at={}, digits=20, n=64)
    >>> print(r.limit, r.correction, r.value)
    1.0 -1.0 0.984375
    """
    if isinstance(result.value, mpmath.mpc):
        raise ModelError("the 1/n term is for real parameter values")
    if hasattr(plan, "forms"):
        raise ModelError("the 1/n term covers traces; an expression with vectors or quadratic forms is not covered")
    if getattr(result, "hermitized", ()):
        raise ModelError("a non-normal matrix solved by Hermitization (its Brown measure) has no 1/n term here")
    if not hasattr(result, "solvers"):
        raise ModelError("a polynomial moment summed as a series (too many unknowns for the fixed point) has no "
                         "1/n term here")
    for t in plan.traces:
        if nonnormal_inverses(t.matrix):
            raise ModelError("the inverse of a matrix that is not symmetric by structure (a non-normal matrix) is not "
                             "covered by the 1/n term")
        if type(t.system).__name__ == "AtomSystem":
            raise ModelError("a diagonal law of many atoms (solved as weighted sums) is not covered by the 1/n term; "
                             "use a law of a few atoms")
        if any(plan.needs[t.index] - {()}):
            raise ModelError("diff() is not covered by the 1/n term")
    values = result.at
    _sizes(plan, values, n)
    solvers = result.solvers
    syms = tuple(s for s, _ in plan.symbols)
    grads = {s: sp.diff(plan.formula, s) for s, what in plan.symbols if what[0] != "param"}

    def evaluate(dps):
        with mpmath.workdps(dps):
            hs, deltas = {}, {}
            for t in plan.traces:
                system = solvers[t.index].c.system
                h, _, _, _ = solvers[t.index].solve(dps)
                hs[t.index] = h
                deltas[t.index] = correction_system(system, h, values)
            pvals = {p: mpf_of(values[p.name]) for p in plan.params}
            args = formula_args(plan, pvals.__getitem__, lambda k, pos, alpha: hs[k][pos])
            limit = formula_function(plan.formula, syms)(args)
            corr = mpmath.mpf(0)
            for s, what in plan.symbols:
                if what[0] == "param":
                    continue
                kk, ij, _ = what
                g = formula_function(grads[s], syms)(args)
                corr += g * deltas[kk][plan.traces[kk].system.all_unknowns.index(ij)]
            return limit, corr, limit + corr / n

    def attempt(dps):
        lo = evaluate(dps)
        hi = evaluate(dps + 10)
        with mpmath.workdps(dps + 10):
            tiny = mpmath.mpf(10) ** -(digits + 2)
            # each agrees to ``digits`` significant digits, or both are 0 to 10^-(digits+2) (absolute)
            ok = [agree(a, b, digits) or (abs(a) < tiny and abs(b) < tiny) for a, b in zip(lo, hi)]
            if not all(ok):
                raise Disagree(f"the limit and its 1/n term at {dps} and {dps + 10} digits disagree beyond digit "
                               f"{digits}")
            return hi, (hi, agree(lo[2], hi[2], digits))

    (limit, corr, value), relative = certify(attempt, digits, max(GUARD, result.working_digits - 10 - digits),
                                             ESCALATIONS).data
    with mpmath.workdps(mpmath.mp.dps + digits + 20):
        if abs(corr) < mpmath.mpf(10) ** -(digits + 2):
            corr = mpmath.mpf(0)
        result.limit, result.correction, result.n = +limit, +corr, n
        result.value = +value if relative else mpmath.mpf(0)
        result.certificate = "relative" if relative else "absolute"
    return result
