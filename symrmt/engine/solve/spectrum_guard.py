r"""A resolvent asked for at a real point inside the spectrum of a symmetric matrix: refused at once.

For a symmetric ``A = M + g I`` whose ``M`` is *indefinite* (a GOE, or any symmetric factor that is not
a Gram product, entering linearly, as in ``Z.T*Z/n*G/sqrt(n)*Z.T*Z/n``), the real point ``-g`` may lie
inside the spectrum of ``M``.  There ``tau((M + g I)^{-1})`` has no real limit (its boundary values from
above and below the real axis differ by ``2 pi i rho_M(-g)``), the real fixed point has no solution, and
the homotopy and every continuation only stall until the time limit.  :func:`check` decides it before any
solve: for each ``inv(A)`` with ``A`` symmetric by structure and not positive semi-definite by structure
(:func:`symrmt.engine.reduce.plan.psd_conditions`; a sum of Gram products plus ``g I``, ``g >= 0``, never pays
for it), it computes the limiting density of ``M`` at ``-g`` (:meth:`symrmt.engine.Model.density`, one
point, a fraction of a second); a positive density is refused with :class:`InsideSpectrumError`, which
names the point, the density and the way out (a complex point, or ``symrmt density``).  Where ``-g`` is
too close to 0 for the density's float64 stage or the density is singular there, the two points
``-g -+ delta`` (``delta = 1e-4, 1e-3, 1e-2`` times ``1 + |g|``) are used, and the message says so.
"""

from __future__ import annotations

import mpmath
import sympy as sp

from symrmt.cache import cached
from symrmt.engine.reduce import linearize as lin
from symrmt.engine.reduce.hermitize import bulk_part
from symrmt.engine.lang.algebra import Identity, Inverse, MatProduct, MatSum, Scaled, Transpose, identity_part
from symrmt.engine.lang.matrices import ModelError
from symrmt.engine.reduce.plan import psd_conditions
from symrmt.errors import InsideSpectrumError

__all__ = ["check", "InsideSpectrumError"]

#: the offsets tried, in order, around a point where the density itself cannot be evaluated (0, a
#: singular density): the first at which both sides are evaluated decides
DELTAS = ("1/10000", "1/1000", "1/100")


def _text(m) -> str:
    """The matrix ``m`` in the input grammar, for the message (``Z.T*Z/n*G/sqrt(n)*Z.T*Z/n``)."""
    if isinstance(m, Scaled):
        c = getattr(m.scalar, "value", None)
        inner = _text(m.matrix)
        if c is not None:
            c = sp.sympify(c)
            num, den = sp.fraction(c)
            body = inner if num == 1 else f"{sp.sstr(num)}*{inner}"
            if den == 1:
                return body
            return f"{body}/{sp.sstr(den) if (den.is_Atom or den.is_Pow) else '(' + sp.sstr(den) + ')'}"
        return f"({repr(m.scalar)})*{inner}"
    if isinstance(m, MatProduct):
        return "*".join(f"({_text(f)})" if isinstance(f, MatSum) else _text(f) for f in m.factors)
    if isinstance(m, MatSum):
        return " + ".join(_text(t) for t in m.terms)
    if isinstance(m, Transpose):
        inner = _text(m.matrix)
        return f"{inner}.T" if getattr(m.matrix, "name", None) else f"({inner}).T"
    if isinstance(m, Inverse):
        return f"inv({_text(m.matrix)})"
    if isinstance(m, Identity):
        return f"I({m.dim.name})"
    return getattr(m, "name", None) or repr(m)


def _symmetric_inverses(expr):
    return list(_symmetric_inverses_of(expr))


@cached(maxsize=256)
def _symmetric_inverses_of(expr) -> tuple:
    """The arguments of the symmetric ``inv`` nodes of ``expr`` (memoized: the tree is immutable)."""
    out, stack = [], [expr]
    while stack:
        x = stack.pop()
        if isinstance(x, Inverse) and x.matrix not in out and lin.is_symmetric(x.matrix):
            out.append(x.matrix)
        stack.extend(reversed(x.children()))
    return tuple(out)


def _value(e, values):
    e = sp.sympify(e)
    subs = {s: sp.Rational(str(values[s.name])) if s.name in values else None for s in e.free_symbols}
    if any(v is None for v in subs.values()):
        return None
    v = e.subs(subs)
    return v if v.is_number and v.is_real else None


def _psd(terms, values) -> bool:
    """Whether the sum of ``terms`` is positive semi-definite by structure at ``values``."""
    for t in terms:
        conds = psd_conditions(t)
        if conds is None:
            return False
        for c in conds:
            if sp.sympify(c).is_nonnegative:  # 1/n, a dimension ratio
                continue
            v = _value(c, values)
            if v is None or v < 0:
                return False
    return True


def _density(model, matrix, x, values):
    """``(rho, ok)`` of ``matrix`` at ``x`` (``ok`` False: not evaluated there)."""
    at = {k: v for k, v in values.items() if "." not in k}
    for _ in range(2):
        try:
            d = model.density(matrix, [x], at=at, digits=15, edges=False, atoms=False)
        except ModelError as exc:
            extra = [k for k in exc.unknown if k in at]  # values of parameters outside this matrix
            if not extra:
                return None, False
            at = {k: v for k, v in at.items() if k not in extra}
            continue
        except (ArithmeticError, ValueError, ZeroDivisionError):
            return None, False
        if d.status[0] != "ok" or d.density[0] is None:
            return None, False
        return d.density[0], True
    return None, False


def check(model, expr, values: dict) -> None:
    """Refuse (:class:`InsideSpectrumError`) an expression holding ``inv(M + g I)``, ``M`` symmetric and not
    positive semi-definite by structure, whose ``-g`` lies inside the spectrum of ``M`` at the real
    ``values``; return ``None`` otherwise (including when the density cannot be evaluated: the solve then
    runs as before).

    >>> from fractions import Fraction
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> check(m, m.expr("trace(inv(G/sqrt(n) + gamma*I(n)))"), {"gamma": Fraction(3)}) is None
    True
    >>> try:
    ...     check(m, m.expr("trace(inv(G/sqrt(n) + gamma*I(n)))"), {"gamma": Fraction(1, 2)})
    ... except InsideSpectrumError as exc:
    ...     print(str(exc)[:60])
    -gamma = -0.5 lies inside the spectrum of G/sqrt(n) (its lim
    """
    for a in _symmetric_inverses(expr):
        bulk = bulk_part(a)
        if bulk is None:
            continue
        g, rest = identity_part(bulk)
        if not rest:
            continue
        gv = _value(g, values)
        if gv is None or _psd(rest, values):
            continue  # PSD by structure (a Gram product and the like): nothing to pay
        matrix = rest[0] if len(rest) == 1 else MatSum(tuple(rest))
        x = -gv
        rho, ok = (None, False)
        if abs(x) >= sp.Rational(1, 10**200):
            rho, ok = _density(model, matrix, sp.Rational(x) if x.is_Rational else x, values)
        where = None
        if ok:
            if rho > 0:
                where = f"its limiting density there is {mpmath.nstr(rho, 6)}"
        else:
            for delta in DELTAS:  # the density at 0 may be singular (it is for W G W), and near it ill-conditioned
                delta = sp.Rational(delta) * (1 + abs(gv))
                sides = [_density(model, matrix, x + s * delta, values) for s in (-1, 1)]
                if all(o for _, o in sides):
                    break
            if all(o and r > 0 for r, o in sides):
                lo, hi = (mpmath.nstr(mpmath.mpf(sp.Float(x + s * delta, 30)), 6) for s in (-1, 1))
                where = (f"its limiting density is {mpmath.nstr(sides[0][0], 6)} at {lo} and "
                         f"{mpmath.nstr(sides[1][0], 6)} at {hi}, on both sides")
        if where is None:
            continue
        names = sorted(s.name for s in sp.sympify(g).free_symbols)
        point = f"-{g}" if sp.sympify(g).is_Symbol else (f"-({g})" if g != 0 else "the point 0 (no multiple of I)")
        hint = f"{names[0]}=...+...j" if names else "a complex shift"
        raise InsideSpectrumError(
            f"{point} = {mpmath.nstr(mpmath.mpf(sp.Float(x, 30)) if x != 0 else 0, 10)} lies inside the spectrum of "
            f"{_text(matrix)} ({where}; the matrix is symmetric but not positive semi-definite by structure); "
            "a resolvent trace at a real point inside the spectrum has no real limit (its "
            f"values above and below the real axis differ by 2 pi i times the density): use a complex point "
            f"({hint}) or symrmt density")
