r"""Moments of polynomial expressions without a fixed-point solve: the block fixed point as a finite
series in the strength of the random part.

For a trace of a polynomial in the matrices (no inverse), the pencil ``L = L_0 + (random part)`` has
an inverse whose entries are polynomials in the random blocks, so the solution of the block fixed
point ``H(s) = (L_0 - s eta(H(s)))^{-1}`` (:mod:`symrmt.engine.reduce.fixed_point`, ``s`` the strength of the
random part) is a polynomial in ``s``.  Its coefficients ``H = sum_k s^k H^(k)`` follow from
``(L_0 - s eta(H)) H = I`` degree by degree:

.. math::  H^{(0)} = L_0^{-1}, \qquad H^{(k)} = L_0^{-1} \sum_{a + b = k - 1} \eta(H^{(a)}) H^{(b)},

and the limit is ``sum_k H^(k)`` read out at ``s = 1``: a finite sum of products, with no Newton
solve and no unknown count to cap (the moments of a polynomial are polynomials in the free
cumulants).  The series must end: every coefficient from degree ``D + 1`` to ``2 D + 1`` must vanish,
where ``D`` bounds the degree by the pencil size (``L_0^{-1}`` times the random part is nilpotent
for a polynomial).  Otherwise the expression is refused.  The sum is computed at two working
precisions that must agree, like every certified value of the engine.

Used by :meth:`symrmt.engine.Model.limit` for an expression whose fixed point has more unknowns
than ``LIMITS["unknowns"]`` and whose traces hold no inverse (such as the Fuss-Catalan moments
``trace((Z1*Z1.T*Z2*Z2.T/n**2)**k)``).

>>> from symrmt.engine import Model
>>> m = Model(); m.gaussian("Z1", "n", "n"); m.gaussian("Z2", "n", "n")
Gaussian('Z1', 'n', 'n')
Gaussian('Z2', 'n', 'n')
>>> r = polynomial_limit(m.parse("trace((Z1*Z1.T*Z2*Z2.T/n**2)**2)"), {}, 20)
>>> str(r)   # the Fuss-Catalan number 3 = binomial(6, 2)/5
'3.0'
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from symrmt.core.budget import check as check_budget
from symrmt.core.certify import agree
from symrmt.errors import PrecisionError
from symrmt.engine.reduce.fixed_point import pencil_parts, pencil_readout
from symrmt.engine.lang.matrices import Diff, Inverse, ModelError, Trace, walk
from symrmt.engine.reduce.plan import normalized, pencil_for, pencil_unknowns, scalar_formula
from symrmt.engine.solve.certify import TraceLimit, check_real
from symrmt.parsing.limits import LIMITS

__all__ = ["is_polynomial", "polynomial_limit", "over_cap_polynomial"]


def is_polynomial(expr) -> bool:
    """True when ``expr`` is a scalar expression whose traces hold no inverse (and no ``diff``, no vector).

    >>> from symrmt.engine import Model
    >>> m = Model(); Z = m.gaussian("Z", "n", "n")
    >>> is_polynomial(m.parse("trace(Z.T*Z/n)**2")), is_polynomial(m.parse("trace(inv(Z.T*Z/n + I(n)))"))
    (True, False)
    """
    if not hasattr(expr, "kind"):
        return False
    saw = False
    for node in walk(expr):
        if isinstance(node, (Inverse, Diff)) or node.kind in ("vector", "qform"):
            return False
        saw = saw or isinstance(node, Trace)
    return saw


def over_cap_polynomial(expr) -> bool:
    """True when ``expr`` (a parsed expression) is polynomial (:func:`is_polynomial`) and its block fixed point
    would have more unknowns than ``LIMITS["unknowns"]``, at most ``LIMITS["series_unknowns"]``:
    :meth:`symrmt.engine.Model.limit` then sums its series instead (above that, the plan refuses it by the
    unknowns limit).  An expression the plan would refuse gives False (the plan then says why).

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.gaussian("Z1", "n", "n"), m.gaussian("Z2", "n", "n")
    >>> [over_cap_polynomial(m.parse(f"trace((Z1*Z1.T*Z2*Z2.T/n**2)**{k})")) for k in (2, 3)]
    [False, True]
    >>> over_cap_polynomial(m.parse("trace(inv(Z1*Z1.T/n + I(n)))"))
    False
    """
    if not is_polynomial(expr):
        return False
    try:
        hat = normalized(expr, "each Gaussian counts as sqrt(n): write Z.T*Z/n, G/sqrt(n)")
    except ModelError:
        return False  # refused with its reason by the plan
    seen, total = set(), 0
    for node in walk(hat):
        if isinstance(node, Trace) and node.matrix not in seen:
            seen.add(node.matrix)
            try:
                p, law = pencil_for(node.matrix)
            except ModelError:
                return False
            if law is not None:
                return False
            total += pencil_unknowns(p)
    return LIMITS["unknowns"] < total <= LIMITS["series_unknowns"]


def _series_trace(pencil, values: dict, dps):
    """``tau`` of one polynomial trace at ``values`` (SymPy symbol -> exact number): exact (a
    ``Fraction``) with ``dps=None`` (``None`` when a number of the pencil is irrational there), else an
    ``mpf`` at ``dps`` digits."""
    L0s, eta_c = pencil_parts(pencil)
    readout = pencil_readout(pencil)
    k = pencil.size

    def exact(x):
        v = sp.sympify(x).xreplace(values)
        if v.free_symbols:
            raise ModelError(f"no value given for {', '.join(sorted(map(str, v.free_symbols)))}")
        return v

    if dps is None and not all(exact(x).is_Rational for x in list(L0s) + list(readout.values()) +
                               [c for d in eta_c.values() for c in d.values()]):
        return None  # an irrational number at the point: the caller sums in mpmath

    def num(x):
        v = exact(x)
        if dps is None:
            return Fraction(int(v.p), int(v.q))
        return mpmath.mpmathify(sp.N(v, dps + 10))

    zero = Fraction(0) if dps is None else mpmath.mpf(0)
    with mpmath.workdps(dps or 15):
        L0 = np.full((k, k), zero, dtype=object)
        for i in range(k):
            for j in range(k):
                if L0s[i, j] != 0:
                    L0[i, j] = num(L0s[i, j])
        L0inv = _sparse(_inverse(L0, zero))
        eta = {kl: [(mm, num(c)) for mm, c in d.items()] for kl, d in eta_c.items()}
        # the random part of L_0^{-1} L is nilpotent of order <= k (a polynomial): H(s) has degree <= k/2
        bound = k // 2
        coeffs, etas = [L0inv], []
        for deg in range(1, 2 * bound + 2):
            check_budget()
            H = coeffs[-1]
            E = {}
            for (kk, ll), terms in eta.items():
                v = sum((c * H[m].get(m2, 0) for (m, m2), c in terms if m in H), zero)
                if v != 0:
                    E.setdefault(kk, {})[ll] = v
            etas.append(E)
            acc = {}
            for a in range(deg):
                _add_product(acc, etas[a], coeffs[deg - 1 - a])
            out = {}
            _add_product(out, L0inv, acc)
            coeffs.append(out)
        if any(coeffs[d] for d in range(bound + 1, 2 * bound + 2)):
            raise ModelError("the fixed point of this expression is not a finite series in the strength of the "
                             "random part (not a polynomial), and it has more unknowns than LIMITS['unknowns']")
        total = zero
        for (i, j), w in readout.items():
            total += num(w) * sum((c.get(i, {}).get(j, 0) for c in coeffs), zero)
        return total


def _sparse(A) -> dict:
    """A dense object array as rows ``{i: {j: value}}`` of its non-zero entries."""
    out = {}
    for (i, j), v in np.ndenumerate(A):
        if v != 0:
            out.setdefault(i, {})[j] = v
    return out


def _add_product(acc: dict, A: dict, B: dict) -> None:
    """``acc += A B`` for sparse rows (zeros dropped)."""
    for i, row in A.items():
        target = acc.setdefault(i, {})
        for m, a in row.items():
            for j, b in B.get(m, {}).items():
                target[j] = target.get(j, 0) + a * b
        for j in [j for j, v in target.items() if v == 0]:
            del target[j]
        if not target:
            del acc[i]


def _inverse(A, zero):
    """The inverse of a square object array (Gauss-Jordan with the first non-zero pivot: exact for
    ``Fraction`` entries)."""
    k = A.shape[0]
    M = np.concatenate([A.copy(), np.full((k, k), zero, dtype=object)], axis=1)
    for i in range(k):
        M[i, k + i] = zero + 1
    for col in range(k):
        piv = max(range(col, k), key=lambda r: abs(M[r, col]))
        if M[piv, col] == 0:
            raise ModelError("the pencil's deterministic part is singular at these values: the series of a "
                             "polynomial expression has no start")
        if piv != col:
            M[[col, piv]] = M[[piv, col]]
        M[col] = M[col] / M[col, col]
        for r in range(k):
            if r != col and M[r, col] != 0:
                M[r] = M[r] - M[r, col] * M[col]
    return M[:, k:]


def polynomial_limit(expr, values: dict, digits: int):
    """The certified limit of a polynomial scalar expression (:func:`is_polynomial`) at exact
    ``values`` (name -> Fraction or number) by the finite series of the module docstring: a
    :class:`~symrmt.engine.solve.certify.TraceLimit` (``residual`` 0: there is no fixed-point solve).

    Raises :class:`ModelError` when the expression is not polynomial or not O(1), and
    :class:`~symrmt.errors.PrecisionError` when the two working precisions disagree.

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> str(polynomial_limit(m.parse("trace((G/sqrt(n))**4)"), {}, 20))   # the Catalan number 2
    '2.0'
    >>> polynomial_limit(m.parse("trace(inv(G/sqrt(n) + 3*I(n)))"), {}, 20)
    Traceback (most recent call last):
        ...
    symrmt.errors.ModelError: the moment series takes a polynomial expression (no inverse, diff or vector)
    """
    if not is_polynomial(expr):
        raise ModelError("the moment series takes a polynomial expression (no inverse, diff or vector)")
    hat = normalized(expr, "each Gaussian counts as sqrt(n): write Z.T*Z/n, G/sqrt(n)")
    traces = []
    for node in walk(hat):
        if isinstance(node, Trace) and node.matrix not in traces:
            traces.append(node.matrix)
    pencils = []
    for m in traces:
        p, law = pencil_for(m)
        if law is not None:
            raise ModelError("the moment series splits a diagonal law into blocks: at most 16 atoms")
        pencils.append(p)
    syms = {}
    free = set()
    for p in pencils:
        for e in p.Q.values():
            for c in e.values():
                free |= sp.sympify(c).free_symbols
        free |= {x for r in p.ratios.values() for x in sp.sympify(r).free_symbols}
    tsyms = [sp.Symbol(f"T_{i}") for i in range(len(traces))]
    formula = scalar_formula(hat, lambda s: tsyms[traces.index(s.matrix)] if isinstance(s, Trace) else None)
    free |= formula.free_symbols - set(tsyms)
    for x in free:
        if x.name not in values:
            raise ModelError(f"no value given for {x.name} (pass it in at=...)")
        v = values[x.name]
        syms[x] = sp.Rational(v.numerator, v.denominator) if hasattr(v, "numerator") else sp.nsimplify(v)
        if x.is_positive and not syms[x] > 0:
            raise ModelError(f"{x.name} is a dimension ratio and must be positive, got {v}")
    taus = [_series_trace(p, syms, None) for p in pencils]
    if all(t is not None for t in taus):  # exact: every number of the pencils rational at the point
        subs = dict(syms)
        subs.update({t: sp.Rational(v.numerator, v.denominator) for t, v in zip(tsyms, taus)})
        exact = formula.xreplace(subs)
        with mpmath.workdps(digits + 30):
            hi = mpmath.mpmathify(sp.N(exact, digits + 30))
            taus = [mpmath.mpf(v.numerator) / v.denominator for v in taus]
            hi = check_real(hi, digits)
    else:
        out = []
        for dps in (digits + 20, digits + 30):
            taus = [_series_trace(p, syms, dps) for p in pencils]
            with mpmath.workdps(dps):
                subs = dict(syms)
                subs.update({t: sp.Float(mpmath.nstr(v, dps + 5, strip_zeros=False), dps + 5)
                             for t, v in zip(tsyms, taus)})
                value = mpmath.mpmathify(sp.N(formula.xreplace(subs), dps))
            out.append((value, taus))
        (lo, _), (hi, taus) = out
        with mpmath.workdps(digits + 30):
            if not (agree(lo, hi, digits) or abs(hi - lo) <= mpmath.mpf(10) ** (-digits - 1) and
                    abs(hi) <= mpmath.mpf(10) ** (-digits)):
                raise PrecisionError(f"the moment series at {digits + 20} and {digits + 30} digits disagree "
                                     f"beyond digit {digits}")
            hi = check_real(hi, digits)
    result = TraceLimit(hi, digits, digits + 30, mpmath.mpf(0), dict(values), list(taus))
    result.route = "moment series (a polynomial: no fixed-point solve)"
    return result
