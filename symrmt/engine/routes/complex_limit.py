r"""Limits at a complex value of one parameter (``--at 'z=0.5+0.01j'``, ``Model.limit(..., at={"z": 0.5+0.01j})``).

Each trace's fixed point is solved at the complex point ``z = x + iy`` by the density machinery
(:mod:`symrmt.engine.density.solver`): the homotopy in ``s`` at ``x + iY`` (``Y = max(1 + |x|, 2|y|)``), then
the path in ``log Im z`` down to ``y``, in the upper half-plane (``y < 0``: the point ``conj(z)``, then the
complex conjugate, the system having real coefficients).  Then Newton at ``digits + 10`` and
``digits + 20`` working digits; the value (the expression's formula in the block traces) must agree to
``digits`` significant digits (real and imaginary parts together).

**The Stieltjes branch.** When a trace is the resolvent of a symmetric matrix in ``z``,
``tau((B + a z I)^{-1})`` with ``B`` symmetric by structure, free of ``z``, and ``a`` a real number,
``Im tau`` has the sign of ``-a Im z``.  It is kept at every step of the path, and checked at the
certified solution (``BranchError`` otherwise).  For other traces the path stays in the upper half-plane,
but no sign is claimed.  Not supported (a :class:`~symrmt.engine.lang.matrices.ModelError`): ``diff()``,
complex values of two parameters, a non-symmetric inverse, diagonal laws of many atoms.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import sympy as sp

from symrmt.engine.reduce.plan import formula_args
from symrmt.core.certify import agree
from symrmt.engine.density.solver import DensityError, DensitySolve, ResolventSolver
from symrmt.engine.lang.algebra import identity_part
from symrmt.engine.lang.matrices import ModelError, Const, Inverse, walk
from symrmt.engine.prove.trace import prove_complex_trace
from symrmt.engine.reduce import linearize as lin, hermitize as herm
from symrmt.engine.solve.certify import TraceLimit, formula_function
from symrmt.errors import BranchError, PrecisionError
from symrmt.parsing.complex_literal import parse_complex
from symrmt.parsing.numbers import to_fraction


class Complex:
    """An exact complex value ``re + im j`` (Fractions), as :func:`symrmt.cli.trace.parse_at` reads it.

    Takes the real and imaginary parts (anything :class:`~fractions.Fraction` takes); prints as ``re+imj``.

    >>> Complex("1/3", -2), Complex(0, 1).im
    ((1/3)-2j, Fraction(1, 1))
    """

    def __init__(self, re, im):
        self.re, self.im = Fraction(re), Fraction(im)

    def __str__(self):
        def part(q):
            return str(q) if q.denominator == 1 else f"({q})"

        return f"{part(self.re)}{'+' if self.im >= 0 else '-'}{part(abs(self.im))}j"

    __repr__ = __str__


def as_complex(v, name):
    """``Complex`` for a complex input (a Python ``complex``, a ``Complex``, a text ending in ``j``), else ``None``;
    ``name``: the parameter's name in the errors of the number parsers.

    >>> as_complex(0.5 + 0.25j, "z"), as_complex("1/2-3j", "z"), as_complex("0.5", "z")
    ((1/2)+(1/4)j, (1/2)-3j, None)
    """
    if isinstance(v, Complex):
        return v
    if isinstance(v, complex):
        return Complex(to_fraction(v.real, name), to_fraction(v.imag, name))
    if isinstance(v, str):
        parts = parse_complex(v, name)
        return None if parts is None else Complex(*parts)
    return None


#: the smallest ``|Im z|`` the float64 stage of the path goes down to (below it the mpmath polish takes over)
FLOAT_IM_FLOOR = 1e-300


def _float_part(q: Fraction) -> float:
    """``q`` as a float, with a magnitude outside the float64 range clamped (``1e-400`` -> ``0.0`` is
    never used as the target: see :data:`FLOAT_IM_FLOOR`; ``1e400`` -> a refusal)."""
    if abs(q) > Fraction(10) ** 300:
        raise ModelError(f"a complex value with a part of magnitude above 1e300 ({_short(q)}) is outside the range "
                         "of the complex path (its first stage is float64)")
    return float(q)


def _short(q: Fraction) -> str:
    """``q`` in a message: a few significant digits, at any exponent (never ``0`` for ``1e-400``)."""
    with mpmath.workdps(20):
        return mpmath.nstr(mpmath.mpf(q.numerator) / q.denominator, 3)


def _with_im(zval, im: str) -> str:
    """``zval`` with its imaginary part's magnitude replaced by the text ``im`` (for a suggestion)."""
    re = "" if zval.re == 0 else _short(zval.re) if abs(zval.re) > Fraction(10) ** 300 or \
        0 < abs(zval.re) < Fraction(1, 10**300) else f"{float(zval.re):.12g}"
    return f"{re}{'-' if zval.im < 0 else '+' if re else ''}{im}j"


def branch_sign(matrix, zsym):
    """``-sign(a)`` for ``inv(B + a z I)`` with ``B`` symmetric and free of ``z``, else ``None``: the sign of
    ``Im tau`` in the upper half-plane (``matrix``: a trace's matrix, ``zsym``: the symbol of ``z``).

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> t = m.plan("trace(inv(G/sqrt(n) - z*I(n)))").traces[0]
    >>> z = t.system.params[0]
    >>> branch_sign(t.matrix, z), branch_sign(m.plan("trace(inv(G/sqrt(n) + 2*z*I(n)))").traces[0].matrix, z)
    (1, -1)
    """
    if not isinstance(matrix, Inverse):
        return None
    g, rest = identity_part(matrix.matrix)
    for t in rest:
        if not lin.is_symmetric(t) or any(isinstance(x, Const) and zsym in sp.sympify(x.value).free_symbols
                                           for x in walk(t)):
            return None
    coef = sp.diff(g, zsym)
    if coef.free_symbols or sp.diff(g, zsym, 2) != 0 or coef == 0 or not coef.is_real:
        return None
    return -1 if coef > 0 else 1


def descend(rs, zname: str, zval: Complex):
    """The float64 fixed point of the :class:`~symrmt.engine.density.resolvent.ResolventSolver` ``rs`` at
    ``x + i|y|`` (``zval = x + iy``, ``zname`` its name in messages): the homotopy in ``s`` at ``x + iY``,
    ``Y = max(1 + |x|, 2|y|)``, then the path in ``log Im z`` down to ``|y|`` (:class:`DensityError` naming the
    point and what to try).

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.density.solver import ResolventSolver
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> plan = m.plan("trace(inv(G/sqrt(n) - z*I(n)))")
    >>> rs = ResolventSolver(plan, plan.params[0], {}, branch_sign=1)
    >>> h = descend(rs, "z", Complex(0, 1))   # tau = -H = (-z + sqrt(z^2 - 4))/2 = i (sqrt(5) - 1)/2
    >>> complex(-h[0]).imag.__round__(14)
    0.61803398874989
    """
    x, y = _float_part(zval.re), _float_part(abs(zval.im))
    # an |Im z| below the float64 range (1e-400) is reached by the float path at FLOAT_IM_FLOOR; the mpmath
    # polish after it moves to the exact value (and the two precisions must agree)
    y = max(y, FLOAT_IM_FLOOR)
    ds = DensitySolve(rs, abs(x))
    ds.Y = max(ds.Y, 2 * y)
    h = ds.at_top(x)
    try:
        return rs.move(h, complex(x, ds.Y), complex(x, y), log_eta=True)
    except DensityError as exc:  # say what happened, and what to try (a bare "more than N steps" does not)
        raise DensityError(
            f"{zname} = {_with_im(zval, _short(abs(zval.im)))}: the continuation in |Im {zname}| from {ds.Y:.3g} "
            f"down to {y:.3g} "
            f"failed ({exc}): the point is too close to the real axis for the float64 path, likely at a "
            f"point of the spectrum (an edge or an atom, where the trace grows like a negative power of "
            f"Im {zname}); try a larger imaginary part (e.g. {zname} = {_with_im(zval, '1e-8')}), or the "
            "spectral density on the real axis (symrmt density, Model.density)") from None


def complex_limit(plan, values: dict, zname: str, zval: Complex, digits: int, prove: bool = False):
    """The :class:`~symrmt.engine.solve.certify.TraceLimit` (complex ``value``) of ``plan`` at ``zname = zval`` (a
    :class:`Complex`), the other parameters exact in ``values``, to ``digits`` significant digits; ``prove``: also
    ``.ball`` (an ``acb`` ball, :func:`symrmt.engine.prove.trace.prove_complex_trace`), ``.branch`` ``"sanity"``.

    Raises :class:`ModelError` (``diff()``, a real ``zval``, an expression free of ``zname``, a diagonal law of
    many atoms, a non-symmetric inverse), :class:`~symrmt.errors.PrecisionError` (the two precisions disagree),
    :class:`~symrmt.errors.BranchError` (the Stieltjes sign fails) and the path's :class:`DensityError`.

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> plan = m.plan("trace(inv(G/sqrt(n) - z*I(n)))")   # the semicircle: (-z + sqrt(z^2 - 4))/2
    >>> print(complex_limit(plan, {}, "z", Complex(0, 1), 12), complex_limit(plan, {}, "z", Complex(0, -1), 12))
    (0.0 + 0.61803398875j) (0.0 - 0.61803398875j)
    >>> complex_limit(plan, {}, "z", Complex(1, 0), 12)
    Traceback (most recent call last):
        ...
    symrmt.errors.ModelError: z = 1+0j is real: give it as a real number
    """
    if any(a for t in plan.traces for a in plan.needs[t.index] if a):
        raise ModelError("diff() at a complex parameter value is not supported")
    zsyms = [p for p in plan.params if p.name == zname]
    if not zsyms:
        raise ModelError(f"the expression does not depend on {zname}")
    zsym = zsyms[0]
    x, y = zval.re, zval.im
    conj = y < 0
    y = abs(y)
    if y == 0:
        raise ModelError(f"{zname} = {zval} is real: give it as a real number")
    real_values = {k: v for k, v in values.items() if k != zname}
    solves = []
    for t in plan.traces:
        if isinstance(t.pencil, tuple):
            raise ModelError("a complex parameter value is not solved for a diagonal law of many atoms (its weighted "
                             "sums are real-only)")
        if herm.nonnormal_inverses(t.matrix):
            raise ModelError("a complex parameter value needs every inverse to be of a matrix symmetric by structure; "
                             "one here is not (its transpose differs, as for a square Gaussian Z/sqrt(n)), so its "
                             "limit operator may be non-normal: give the parameter a real value")
        sign = branch_sign(t.matrix, zsym)
        rs = ResolventSolver(plan, zsym, real_values, index=t.index, branch_sign=sign)
        solves.append((t, rs, sign, descend(rs, zname, zval)))
    results = []
    for dps in (digits + 10, digits + 20):
        with mpmath.workdps(dps + 10):
            z = mpmath.mpc(mpmath.mpf(x.numerator) / x.denominator, mpmath.mpf(y.numerator) / y.denominator)
        hs, taus = {}, []
        for t, rs, sign, h in solves:
            hh, tau = rs.polish(h, z, dps)
            hs[t.index] = hh
            taus.append((t, sign, tau))
        with mpmath.workdps(dps):
            args = formula_args(plan, lambda p, z=z: z if p is zsym else mpmath.mpf(values[p.name].numerator)
                                / values[p.name].denominator, lambda k, pos, _alpha, hs=hs: hs[k][pos])
            value = formula_function(plan.formula, tuple(s for s, _ in plan.symbols))(args)
            results.append((value, taus, hs))
    (lo, _, _), (hi, taus, hs_hi) = results
    ball = None
    if prove:
        ball, _ = prove_complex_trace(plan, values, zname, x, y, digits, hs_hi,
                                      {t.index: s for t, s, _ in taus}, conjugate=conj)
    with mpmath.workdps(digits + 20):
        if not agree(lo, hi, digits):  # the core's two-precision test (symrmt.core.certify.agree)
            raise PrecisionError(f"solves at {digits + 10} and {digits + 20} digits disagree beyond digit {digits} "
                                 f"at {zname} = {zval}")
        for t, sign, tau in taus:
            if sign is not None and not sign * tau.imag > 0:
                raise BranchError(f"trace #{t.index + 1} = {mpmath.nstr(tau, 10)} at {zname} = {zval}: its imaginary "
                                  f"part must have the sign {'+' if sign > 0 else '-'} (the Stieltjes branch of a "
                                  "symmetric resolvent); no value is returned")
        if conj:
            hi = mpmath.conj(hi)
            taus = [(t, s, mpmath.conj(tau)) for t, s, tau in taus]
    at = dict(values)
    at[zname] = Complex(zval.re, zval.im)
    with mpmath.workdps(digits + 20):  # the working precision: one decimal rounding when printed
        r = TraceLimit(+hi, digits, digits + 20, mpmath.mpf(0), at, [+tau for _, _, tau in taus])
    r.certificate = "relative"
    r.branch_checked = [s is not None for _, s, _ in taus]
    if prove:
        r.ball, r.branch = ball, "sanity"
        r.balls = {"value": ball}
        r.branch_notes = ["a complex point: the Stieltjes sign of Im tau is proved on the box where the trace is a "
                          "symmetric resolvent; that no other solution has it is not proved"]
    return r
