r"""Unknowns of a block fixed point that the system fixes exactly, found once and substituted.

The unknowns ``H_kl`` of a pencil's fixed point (:class:`~symrmt.engine.reduce.fixed_point.BlockSystem`) are
often not independent: the linearization repeats a block in symmetric positions, so that one normalized
trace appears several times, some entries are constants (``H_kk = -1`` on a block that only carries
``-I``), and others differ from one another by a constant (``H_kl = H_ll + 1``).  Solving for all of them
costs the cube of their number at every Newton step.

:func:`reduce_system` finds these relations and substitutes them, exactly:

1. *Candidates*, from numbers.  The fixed point ``H = (L_0 - s\,\eta(H))^{-1}`` is iterated in float64 at
   three random points (random parameters, ``s`` small so that the iteration contracts).  An unknown whose
   value is the same small-denominator rational at every point is a candidate constant; one whose
   difference (or sum) with an earlier kept unknown is such a rational is a candidate ``c_0 + c_1 x``
   (``c_1 = \pm 1``).
2. *Proof*, in SymPy.  With every candidate substituted, each dropped residual row must be identically zero
   or identically (plus or minus) a kept row, as polynomials in the kept unknowns, the parameters, ``s``
   and the shift ``eps``.  A dropped row that is not becomes an unknown again, and the candidates are
   redrawn without the relations that failed, until every dropped row passes.

3. *Explicit unknowns*, in SymPy alone.  An unknown whose own row reads ``a x + f`` with ``a`` a nonzero rational
   and ``f`` free of ``x`` is ``x = -f/a`` on the whole solution set; when ``f`` has at most
   :data:`EXPLICIT_TERMS` terms, it is substituted into the other rows and its row dropped (the system is then
   no longer affine in the entries of ``H``, and its Jacobian and derivatives are differentiated in SymPy).

Then every solution of the kept rows, expanded by the substitution, solves every row of the full system,
at every parameter value, ``s`` and ``eps``: the reduced system's solutions are full solutions (the
homotopy starts at the unique ``L_0^{-1}`` and the checks downstream run on the same numbers).  The readout's
entries always stay unknowns, so every trace, and every parameter derivative of one, is read as before; the
bulk of a quadratic form enters its Woodbury system through the substituted entries.  The numbers only
propose; nothing they say is used unproved.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import sympy as sp

from symrmt.engine.reduce.linearize import EPS_SHIFT

#: float64 agreement that makes two values a candidate relation (the proof is symbolic)
_TOL = 1e-9
#: the largest denominator of a candidate constant
_DENOMINATOR = 64
#: the most terms of an explicit solution ``x = -f/a`` that is substituted (a longer one grows every row it enters)
EXPLICIT_TERMS = 2


def _points(system, strength, count=3, seed=20260):
    """The float64 fixed point of ``system`` at ``count`` random points (a list of value lists), or ``None``
    (``strength``: the homotopy symbol ``s``)."""
    rng = random.Random(seed)
    free = set().union(*(sp.sympify(e).free_symbols for e in system.L0)) | set().union(
        *(sp.sympify(c).free_symbols for d in system.eta_coef.values() for c in d.values()))
    free = sorted(free - {strength}, key=lambda x: x.name)
    with np.errstate(all="ignore"):
        return _iterate(system, free, rng, count)


def _iterate(system, free, rng, count):
    """:func:`_points` once the symbols are known (floating-point warnings off: a failure returns ``None``)."""
    k = system.pencil.size
    unknowns = list(system.unknowns)
    out = []
    for _ in range(count):
        vals = {x: sp.Rational(rng.randint(500, 1500), 1000) for x in free}
        vals[EPS_SHIFT] = sp.Rational(rng.randint(50, 150), 1000)
        try:
            L0 = np.array(system.L0.subs(vals).evalf(), dtype=float)
            eta = [(kk, ll, [(m, m2, float(sp.sympify(c).subs(vals))) for (m, m2), c in d.items()])
                   for (kk, ll), d in system.eta_coef.items()]
        except (TypeError, ValueError, OverflowError):
            return None
        if not (np.all(np.isfinite(L0)) and all(np.isfinite(c) for *_x, terms in eta for *_y, c in terms)):
            return None  # constants outside float64: no candidates
        s = 0.05 + 0.1 * rng.random()
        for _attempt in range(6):
            H = np.zeros((k, k))
            ok = False
            for _it in range(500):
                E = np.zeros((k, k))
                for kk, ll, terms in eta:
                    E[kk, ll] = sum(c * H[m, m2] for m, m2, c in terms)
                try:
                    inv = np.linalg.inv(L0 - s * E)
                except np.linalg.LinAlgError:
                    return None
                Hn = np.zeros((k, k))
                for i, j in unknowns:
                    Hn[i, j] = inv[i, j]
                if not np.all(np.isfinite(Hn)):
                    break
                d = np.max(np.abs(Hn - H)) if k else 0.0
                H = Hn
                if d < 1e-14 * max(1.0, np.max(np.abs(H))):
                    ok = True
                    break
            if ok:
                out.append([H[i, j] for i, j in unknowns])
                break
            s /= 3
        else:
            return None
    return out


def _rational(x):
    q = Fraction(x).limit_denominator(_DENOMINATOR)
    return q if abs(float(q) - x) < _TOL else None


def _candidates(values, keep_pos, banned):
    """``{position: (c0, c1, rep position or None)}`` for the unknowns the numbers fix (module docstring);
    ``banned``: pairs ``(position, rep position or None)`` whose relation failed its proof."""
    m = len(values[0])
    reps, out = [], {}
    for u in range(m):
        vals = [v[u] for v in values]
        found = None
        if u not in keep_pos:
            if max(vals) - min(vals) < _TOL and (u, None) not in banned:
                q = _rational(vals[0])
                if q is not None:
                    found = (q, 0, None)
            for r in reps if found is None else ():
                if (u, r) in banned:
                    continue
                for c1 in (1, -1):
                    diffs = [v[u] - c1 * v[r] for v in values]
                    if max(diffs) - min(diffs) < _TOL * max(1.0, max(abs(x) for x in vals)):
                        q = _rational(diffs[0])
                        if q is not None:
                            found = (q, c1, r)
                            break
                if found is not None:
                    break
        if found is None:
            reps.append(u)
        else:
            out[u] = found
    return out


def _explicit(system, keep):
    """Solve for the unknowns whose own row is ``a x + f`` with ``a`` a nonzero rational and ``f`` free of ``x`` (of
    at most :data:`EXPLICIT_TERMS` terms): ``x = -f/a`` exactly, substituted into the other rows (in place)."""
    while len(system.h) > 1:
        found = None
        for n, (x, ij) in enumerate(zip(system.h, system.unknowns)):
            if ij in keep:
                continue
            r = sp.expand(system.residual[n])
            a = r.coeff(x)
            rest = sp.expand(r - a * x)
            if a.is_Rational and a != 0 and not rest.has(x):
                e = sp.expand(-rest / a)
                if len(sp.Add.make_args(e)) <= EXPLICIT_TERMS:
                    found = (n, x, e)
                    break
        if found is None:
            return
        n, x, e = found
        system.unknowns = system.unknowns[:n] + system.unknowns[n + 1:]  # new lists: full_unknowns may share one
        system.h = system.h[:n] + system.h[n + 1:]
        system.entries = {ij: sp.expand(sp.sympify(v).xreplace({x: e})) for ij, v in system.entries.items()}
        system._set_h_matrix(system.H.xreplace({x: e}))
        system.explicit, system._columns = True, None


def reduce_system(system, keep, strength):
    """Substitute the unknowns of the :class:`~symrmt.engine.reduce.fixed_point.BlockSystem` ``system`` that it fixes
    exactly (module docstring); in place, returns it (a system reduced before is returned as it is).

    ``keep``: entries ``(k, l)`` that must stay unknowns (the readout's); ``strength``: the homotopy symbol ``s``.
    First the affine relations (:func:`_affine`), then the explicit ones (:func:`_explicit`).  Raises nothing of
    its own: a system whose numbers cannot be computed is left whole.

    >>> from symrmt.engine.lang.matrices import Gaussian, Dim, N
    >>> from symrmt.engine.reduce import linearize as lin
    >>> from symrmt.engine.reduce.fixed_point import BlockSystem, S_STRENGTH
    >>> Z = Gaussian("Z", Dim("n", sp.Integer(1)), Dim("n", sp.Integer(1)))
    >>> s = BlockSystem(lin.linearize(Z.T * Z / N), reduce=False)
    >>> len(s.unknowns), reduce_system(s, list(s.readout), S_STRENGTH) is s, len(s.unknowns), s.unknowns
    (9, True, 1, [(0, 2)])
    """
    if system.full_unknowns is not None:
        return system
    _affine(system, keep, strength)
    _explicit(system, keep)
    return system


def _affine(system, keep, strength):
    """The constants and the relations ``c0 + c1 x`` (steps 1 and 2 of the module docstring), in place.  A system
    whose numbers cannot be computed (a singular ``L_0`` at the random points, an iteration that does not
    settle) is left whole."""
    unknowns, h = list(system.unknowns), list(system.h)
    system.full_unknowns = unknowns
    system.entries = dict(zip(unknowns, h))
    values = _points(system, strength) if unknowns else None
    if values is None:
        return system
    keep_pos = {n for n, u in enumerate(unknowns) if u in keep}
    banned = set()
    H0 = system.H
    for _round in range(len(unknowns) ** 2 + 1):
        cand = _candidates(values, keep_pos, banned)
        if not cand:
            system.unknowns, system.h = unknowns, h
            system._set_h_matrix(H0)
            return system
        sub = {h[u]: sp.Rational(c0.numerator, c0.denominator) + (c1 * h[r] if r is not None else 0)
               for u, (c0, c1, r) in cand.items()}
        kept = [n for n in range(len(unknowns)) if n not in cand]
        if not kept:  # the solvers take one unknown at least: the first stays
            keep_pos.add(0)
            continue
        system.unknowns = [unknowns[n] for n in kept]
        system.h = [h[n] for n in kept]
        system._set_h_matrix(H0.xreplace(sub))
        rows = {sp.expand(r) for r in system.residual}
        bad = set()
        for u in cand:
            r = sp.expand(system.residual_entry(*unknowns[u]))
            if r != 0 and r not in rows and sp.expand(-r) not in rows:
                bad.add(u)
        if not bad:
            pos = {x: n for n, x in enumerate(system.h)}
            system.entries = {unknowns[n]: sub.get(h[n], h[n]) for n in range(len(unknowns))}
            system._columns = {}
            for ij, e in system.entries.items():
                for x in e.free_symbols & set(pos):
                    system._columns[ij] = (pos[x], e.coeff(x) if e != x else 1)
            return system
        banned |= {(u, cand[u][2]) for u in bad}
    raise AssertionError("internal: the reduction of the fixed point did not settle")  # pragma: no cover
