r"""Outliers of a spiked model: the real poles of a quadratic form and their residues.

For ``q(z) = x^T (A + a z I)^{-1} x`` with ``A`` symmetric (a bulk plus finite-rank parts, e.g. ``A = M`` and
``a = -1`` for ``x^T (M - z)^{-1} x``) and ``a`` a real number,

.. math::  q(z) = \sum_i \frac{|\langle x, v_i\rangle|^2}{\mu_i + a z}

over the eigenpairs ``(mu_i, v_i)`` of ``A``.  Its limit ``e^T S(z)^{-1} f`` (the Woodbury system of
:mod:`symrmt.engine.reduce.woodbury`) is analytic off the bulk's support, and its poles outside the support are the
outliers: the eigenvalues of ``A`` that the finite-rank parts pull out of the bulk and that ``x`` sees.  At a
pole ``z0`` the residue is ``Res = |<x, v>|^2 / a``, so the eigenvector overlap of Benaych-Georges and
Nadakuditi (2011) is ``|<x/|x|, v>|^2 = a Res / <x, x>`` (``-Res / <x, x>`` for ``(M - z)^{-1}``).

The search (:func:`outliers`), on a grid ``LO:HI:K`` of the real parameter ``z``:

1. at each grid point the bulk fixed point is solved as for a density (:mod:`symrmt.engine.density.solver`:
   the descent from ``x + iY``, the Newton finish at real ``x``); a point where ``H`` is real (``|Im H|``
   below ``1e-9 (1 + |H|)``) is outside the bulk, and ``q`` is evaluated there;
2. ``-sign(a) q`` increases on every interval between poles outside the bulk (its derivative is
   ``|a| sum |<x, v_i>|^2 / (mu_i + a z)^2 > 0``), so a decrease between two neighbouring outside points
   brackets a pole; bisection keeps a bracket of one (the half where ``q`` decreases) until ``q`` changes sign
   across it and it is narrower than :data:`BRACKET` ``(1 + |z|)``, and then ``1/q``, continuous there with a simple zero at the pole, is solved by the Illinois
   method at ``digits + 10`` and ``digits + 20`` working digits (each evaluation: ``H`` polished at that
   real point, from the float64 root at the bracket's end; at the pole it must be the root the scan
   follows, else :class:`~symrmt.errors.BranchError`); the two roots must agree to ``digits`` digits, else
   the guard doubles (the core's :func:`~symrmt.core.certify.certify`: next to a bulk edge the Jacobian is
   nearly singular);
3. the residue of the form is read from the Woodbury system at the pole (Keldysh's formula for a simple pole
   of ``S^{-1}``): ``Res q = e^T R (L S'(z0) R)^{-1} L f`` with ``R``, ``L`` the right and left null spaces of
   ``S(z0)`` (an SVD) and ``S' = dS/dz`` the total derivative (``dH/dz`` implicit); certified at the same
   two precisions.  ``a Res`` must lie in ``(0, <x, x>]`` (a spectral weight), else
   :class:`~symrmt.errors.BranchError`.

The expression must be one such form times a factor of the parameters (``theta*u.T*inv(M - z*I(n))*u``); the
residue returned is the expression's.  Two poles between neighbouring grid points count as one (or none):
a finer grid separates them.  An outlier orthogonal to ``x`` is not a pole of ``q`` and is not seen, nor is
one closer to a bulk edge than the float64 scan reaches (``Outliers.edge_gap``, about ``1e-12`` times the
grid step: a spike just above its threshold).
"""

from __future__ import annotations

import mpmath
import sympy as sp

from symrmt.core.certify import ESCALATIONS, GUARD, Disagree, agree, certify
from symrmt.core.numbers import mpf_of
from symrmt.engine.density.result import grid_points
from symrmt.engine.density.solver import ResolventSolver, DensitySolve
from symrmt.engine.lang.matrices import ModelError
from symrmt.engine.lang.tree import exact_value
from symrmt.engine.lang.vectors import gram_values
from symrmt.engine.routes.complex_qf import check_normal, form_params, herglotz_form, norm2
from symrmt.engine.solve.quadratic_forms import self_test_plan, form_function, woodbury_solve, form_derivative_function
from symrmt.errors import BranchError, ConvergenceError, PrecisionError

__all__ = ["Outlier", "Outliers", "outliers", "OUT_OF_BULK", "BISECTIONS", "EDGE_BISECTIONS"]

#: a grid point is outside the bulk when every ``|Im H|`` is below this times ``1 + max |H|``
OUT_OF_BULK = 1e-9
#: most bisections of a bracket before its ends change sign and it is narrower than BRACKET (1 + |z|)
BISECTIONS = 60
BRACKET = 1e-3
#: bisections toward the bulk's edge from the last outside grid point (a relative width of about 2^-40)
EDGE_BISECTIONS = 40


class Outlier:
    """One outlier: ``location`` (the pole ``z0``), ``residue`` (of the expression at ``z0``), ``overlap``
    (``a Res q / <x, x>`` for a deterministic ``x``, else ``None``), all ``mpf`` certified to ``digits``
    (:func:`outliers` builds them; ``repr`` prints ``digits`` digits).

    >>> Outlier(mpmath.mpf(5) / 2, -mpmath.mpf(3) / 4, mpmath.mpf(3) / 4, 10)
    Outlier(location=2.5, residue=-0.75, overlap=0.75)
    """

    def __init__(self, location, residue, overlap, digits):
        self.location, self.residue, self.overlap, self.digits = location, residue, overlap, digits

    def __repr__(self):
        d = self.digits
        ov = "" if self.overlap is None else f", overlap={mpmath.nstr(self.overlap, d)}"
        return f"Outlier(location={mpmath.nstr(self.location, d)}, residue={mpmath.nstr(self.residue, d)}{ov})"


class _Form:
    """The one form of the expression, its bulk solver and its evaluations at a real ``z``."""

    def __init__(self, model, plan, zsym, values):
        forms = getattr(plan, "forms", [])
        qsyms = {s for s, what in plan.symbols if what[0] != "param"}
        if len(forms) != 1 or not qsyms <= {s for s, what in plan.symbols if what == ("form", 0)}:
            raise ModelError("outliers are read from one quadratic form x.T*inv(A + a*z*I)*x times a factor of the "
                             "parameters (e.g. u.T*inv(M - z*I(n))*u): the expression holds "
                             f"{len(forms)} form(s) and {len(plan.traces) - len(forms)} trace(s)")
        self.qsym = next(s for s, what in plan.symbols if what == ("form", 0))
        self.factor = sp.simplify(plan.formula / self.qsym)
        if self.qsym in self.factor.free_symbols:
            raise ModelError("outliers: the expression must be linear in its quadratic form (a factor of the "
                             "parameters times the form)")
        f = self.f = forms[0]
        hf = herglotz_form(f, zsym)
        if hf is None:
            raise ModelError(f"outliers: the form must be x.T*inv(A + a*{zsym.name}*I)*x with A symmetric by structure "
                             f"(finite-rank parts included), free of {zsym.name}, and a a nonzero real number: then its "
                             "poles are real and its residues spectral weights")
        check_normal(plan, "outliers")
        self.a, self.x, c = hf
        self.c = c.subs({p: sp.Rational(values[p.name]) for p in c.free_symbols})  # exact
        if not self.c.is_real or self.c == 0:
            raise ModelError(f"outliers: the form's factor {c} is {self.c} at these values (a nonzero real needed)")
        self.plan, self.zsym, self.values = plan, zsym, values
        self.vectors = model.vectors()
        self.grams = gram_values({**plan.vectors, **self.vectors}, values)
        form_params(plan)
        self_test_plan(plan)
        if f.trace_index is None:
            raise ModelError("outliers: the form has no random bulk (a deterministic matrix: its poles are exact "
                             "eigenvalues, not a large-n limit)")
        self.rs = ResolventSolver(plan, zsym, values, index=f.trace_index, branch_sign=None)
        self.sgn = (-1 if self.a > 0 else 1) * (1 if self.c > 0 else -1)  # sgn * q increases between poles

    # -- float64 scan
    def scan_point(self, ds, x):
        """``("out", h, q)`` at the real point ``x`` outside the bulk (``q`` at 20 digits), ``("pole", h, None)``
        when the Woodbury system is singular there, ``("bulk", None, None)`` in the bulk (or at a singular point
        of the bulk's fixed point)."""
        kind, h, _ = ds.float_point(x)
        if kind != "ok":
            return "bulk", None, None
        size = 1 + max((abs(v) for v in h), default=0)
        if any(abs(v.imag) > OUT_OF_BULK * size for v in h):
            return "bulk", None, None
        h = [complex(v.real) for v in h]
        try:
            return "out", h, self.q(mpmath.mpf(x), h, 20)
        except ConvergenceError:  # on a pole: its neighbours bracket it
            return "pole", h, None

    # -- mpmath
    def h_at(self, x, h0, dps):
        """The real fixed point at the real ``x`` (``dps`` digits), polished from the float ``h0``."""
        h, _ = self.rs.polish(h0, mpmath.mpc(x), dps)
        return [mpmath.mpf(v.real) for v in h]

    def _pv(self, z):
        return {p: (z if p.name == self.zsym.name else mpf_of(self.values[p.name])) for p in self.plan.params}

    def system(self, z, h):
        """``(S, e, f)`` (mpmath matrices) at the real ``z`` with the bulk ``h`` (current precision)."""
        f, pv = self.f, self._pv(z)
        vals = form_function(f, self.plan.grams)(list(h) + [pv[p] for p in f.params] +
                                                  [mpf_of(self.grams[g]) for g in self.plan.grams])
        k = len(f.units)
        S = mpmath.matrix([[vals[r * k + c] for c in range(k)] for r in range(k)])
        return S, mpmath.matrix(vals[k * k:k * k + k]), mpmath.matrix(vals[k * k + k:])

    def q(self, z, h0, dps):
        with mpmath.workdps(dps):
            h = self.h_at(z, h0, dps)
            S, e, f = self.system(z, h)
            k = S.rows
            x = woodbury_solve([[S[r, c] for c in range(k)] for r in range(k)], list(f))
            return sum((e[i] * x[i] for i in range(k)), mpmath.mpf(0))

    def dS(self, z, h):
        """``dS/dz`` (total: ``dH/dz = -J^{-1} dR/dz``) at the real ``z`` with the bulk ``h``."""
        f = self.f
        try:
            dh = [mpmath.re(x) for x in self.rs.dh_dz(h, z)]
        except ZeroDivisionError:
            raise ConvergenceError(f"the bulk's Jacobian is singular at {self.zsym.name} = {mpmath.nstr(z, 10)} "
                                   "(an edge of the bulk)") from None
        pv = self._pv(z)
        dv = form_derivative_function(f, self.plan.grams, self.zsym)(
            list(h) + list(dh) + [pv[p] for p in f.params] + [mpf_of(self.grams[g]) for g in self.plan.grams])
        k = len(f.units)
        return mpmath.matrix([[dv[r * k + c] for c in range(k)] for r in range(k)])


def _illinois(g, a, b, ga, gb, tol, steps=400):
    """A root of ``g`` in ``[a, b]`` (``ga``, ``gb`` of opposite signs) by the Illinois method, to ``|b - a| <=
    tol (1 + |a|)``."""
    side = 0
    for _ in range(steps):
        c = (a * gb - b * ga) / (gb - ga)
        if not a < c < b if a < b else not b < c < a:
            c = (a + b) / 2
        gc = g(c)
        if gc == 0:
            return c
        if (gc > 0) == (gb > 0):
            b, gb = c, gc
            if side == -1:
                ga /= 2
            side = -1
        else:
            a, ga = c, gc
            if side == 1:
                gb /= 2
            side = 1
        if abs(b - a) <= tol * (1 + abs(a)):
            return (a * gb - b * ga) / (gb - ga)
    raise ConvergenceError(f"the Illinois iteration on 1/q did not converge in {steps} steps")


def _residue(form, z, h):
    """``Res q`` at the pole ``z`` (Keldysh: ``e^T R (L S' R)^{-1} L f``, ``R``, ``L`` the null spaces of ``S``)."""
    S, e, f = form.system(z, h)
    U, sig, V = mpmath.svd_r(S)
    k = S.rows
    tol = max(sig) * mpmath.mpf(10) ** (-(mpmath.mp.dps // 2))
    null = [i for i in range(k) if sig[i] <= tol]
    if not null:
        raise ConvergenceError(f"the Woodbury system is not singular at the root {mpmath.nstr(z, 10)}")
    R = mpmath.matrix([[V[i, r] for i in null] for r in range(k)])
    L = mpmath.matrix([[U[r, i] for r in range(k)] for i in null])
    M = L * form.dS(z, h) * R
    try:
        return (e.T * R * mpmath.inverse(M) * L * f)[0, 0]
    except ZeroDivisionError:
        raise ConvergenceError(f"the pole at {mpmath.nstr(z, 10)} is not simple (L S' R is singular)") from None


def outliers(model, expr, over: str, at=None, digits: int = 15) -> list:
    """The outliers (:class:`Outlier`) of the quadratic form ``expr`` in the real parameter named in ``over``
    (``"z=LO:HI:K"``: the grid scanned, :func:`symrmt.engine.density.result.grid_points`), at the values ``at`` of the
    other parameters (inner products as ``"a.b"``), certified to ``digits`` (see the module docstring).

    Raises :class:`ModelError` (an expression that is not one Herglotz form, a bad grid),
    :class:`~symrmt.errors.PrecisionError` (two precisions disagree), :class:`~symrmt.errors.BranchError`
    (a residue that is not a spectral weight).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.goe("G", "n"); _ = m.vector("u", "n")
    >>> [o] = m.outliers("u.T*inv(G/sqrt(n) + 2*u*u.T - z*I(n))*u", "z=2.1:4:20", at={"u.u": 1}, digits=20)
    >>> print(mpmath.nstr(o.location, 20), mpmath.nstr(o.overlap, 20))  # theta + 1/theta, 1 - 1/theta^2
    2.5 0.75
    """
    if not isinstance(over, str) or "=" not in over:
        raise ModelError(f"outliers: over is 'z=LO:HI:K' (the parameter and its grid), got {over!r}")
    zname, _, spec = over.partition("=")
    zname = zname.strip()
    xs = grid_points(spec, "--outliers", zname)
    if len(xs) < 2:
        raise ModelError("outliers: the grid needs at least 2 points")
    plan = model.plan(expr)
    zs = [p for p in plan.params if p.name == zname]
    if not zs:
        raise ModelError(f"outliers: the expression does not depend on {zname}")
    zsym = zs[0]
    if zsym.is_positive:
        raise ModelError(f"outliers: {zname} is a dimension ratio, not a spectral parameter")
    values = {str(k): exact_value(v, str(k)) for k, v in (at or {}).items()}
    if zname in values:
        raise ModelError(f"outliers: {zname} is the scanned parameter; leave it out of at=")
    known = {p.name for p in plan.params} - {zname}
    extra = sorted(k for k in values if k not in known and "." not in k)
    if extra:
        raise ModelError(f"unknown parameter {', '.join(extra)} in at= (the expression's parameters: "
                         f"{', '.join(sorted(known)) or 'none'})")
    missing = sorted(k for k in known if k not in values)
    if missing:
        raise ModelError(f"no value given for {', '.join(missing)} (pass them in at=...)")
    for p in plan.params:
        if p.is_positive and not values[p.name] > 0:
            raise ModelError(f"{p.name} is a dimension ratio and must be positive, got {values[p.name]}")
    form = _Form(model, plan, zsym, values)
    ds = DensitySolve(form.rs, max(abs(float(x)) for x in xs))
    pts = []  # (x, h, q) outside the bulk, (x, None, None) in it; a pole on the grid is left out (its
    for x in xs:  # neighbours bracket it)
        kind, h, q = form.scan_point(ds, float(x))
        if kind != "pole":
            pts.append((float(x), h, q))
    # between an outside grid point and a bulk one, the outside stretch reaches the bulk's edge: a point next
    # to the edge (bisection on the float classification) joins the scan, so a pole between them is bracketed
    scan, prev, gaps = [], None, [0.0]  # the outside points in order, None between two outside stretches
    for p in pts:
        if prev is not None and (p[1] is None) != (prev[1] is None):
            out, bulk = (prev, p) if p[1] is None else (p, prev)
            near, gap = _near_edge(form, ds, out, bulk[0])
            gaps.append(gap)
            scan += [near, None] if p[1] is None else [near]
        elif p[1] is None and (not scan or scan[-1] is not None):
            scan.append(None)
        if p[1] is not None:
            scan.append(p)
        prev = p
    found = Outliers()
    for left, right in zip(scan, scan[1:]):
        if left is None or right is None or not form.sgn * right[2] < form.sgn * left[2]:
            continue
        found.append(_certify_pole(form, ds, left, right, digits))
    found.edge_gap = max(gaps)
    return found


class Outliers(list):
    """The list of :class:`Outlier` found, with ``edge_gap``: the largest distance between a bulk edge met on the
    grid and the outside point next to it that the scan reached (a pole closer than that to an edge is not
    resolved; 0 when the grid meets no edge).  :func:`outliers` returns one.

    >>> found = Outliers([Outlier(mpmath.mpf(5) / 2, -mpmath.mpf(3) / 4, mpmath.mpf(3) / 4, 10)])
    >>> len(found), found.edge_gap
    (1, 0.0)
    """

    edge_gap = 0.0


#: the fractions of an interval tried in turn for a probe point (off a pole that lies on the midpoint)
PROBES = (0.5, 0.4142135623730951, 0.6180339887498949)


def _probe(form, ds, a, b):
    """``(m, kind, h, q)`` at the first point ``m = a + (b - a) f`` (``f`` in :data:`PROBES`) that is not a pole."""
    for frac in PROBES:
        m = a + (b - a) * frac
        kind, h, q = form.scan_point(ds, m)
        if kind != "pole":
            break
    return m, kind, h, q


def _near_edge(form, ds, out, x_in):
    """``(point, gap)``: the outside point ``(x, h, q)`` closest to the bulk found by :data:`EDGE_BISECTIONS`
    bisections between the outside point ``out`` and the point ``x_in`` (in the bulk, or singular), and its
    distance to the nearest point known to be in the bulk (a pole within it of the edge is not resolved)."""
    best = out
    a, b = out[0], x_in
    for _ in range(EDGE_BISECTIONS):
        m, kind, h, q = _probe(form, ds, a, b)
        if m in (a, b) or kind == "pole":
            break
        if kind == "bulk":
            b = m
        else:
            a, best = m, (m, h, q)
    return best, abs(b - best[0])


def _certify_pole(form, ds, left, right, digits):
    """The :class:`Outlier` in the bracket ``(x, h, q)`` ``left``, ``right`` (``sgn q`` decreases across it)."""
    sgn = form.sgn
    a, ha, qa = float(left[0]), left[1], sgn * float(left[2])
    b, qb = float(right[0]), sgn * float(right[2])
    for _ in range(BISECTIONS):
        if qa > 0 > qb and b - a <= BRACKET * (1 + abs(a)):
            break
        m, kind, hm, qm = _probe(form, ds, a, b)
        if kind != "out":
            raise ConvergenceError(f"outliers: the bracket [{a:.6g}, {b:.6g}] of a pole meets the bulk or a "
                                   "singular point; give a grid that avoids it")
        qm = sgn * float(qm)
        if qm < qa:
            b, qb = m, qm
        else:
            a, ha, qa = m, hm, qm
    else:
        raise ConvergenceError(f"outliers: no sign change of q near {a:.6g} after {BISECTIONS} bisections")
    h0 = [complex(v) for v in ha]  # the polish at every point of the narrow bracket starts here

    def solve(dps):
        """``(z0, Res q, Res expr)`` at ``dps`` working digits."""
        with mpmath.workdps(dps):
            def r(z):
                try:
                    return 1 / (sgn * form.q(z, h0, dps))
                except ConvergenceError:  # S singular to the working precision: the pole itself
                    return mpmath.mpf(0)

            za, zb = mpmath.mpf(a), mpmath.mpf(b)
            z0 = _illinois(r, za, zb, r(za), r(zb), mpmath.mpf(10) ** (-(dps - 3)))
            h = form.h_at(z0, h0, dps)
            _, hf, _ = form.scan_point(ds, float(z0))  # the polished root is the scan's (the physical branch)
            if hf is None or any(abs(complex(x) - y) > 1e-6 * (1 + max(abs(v) for v in hf)) for x, y in zip(h, hf)):
                raise BranchError(f"outlier near {mpmath.nstr(z0, 10)}: the polished fixed point is not the one the "
                                  "scan follows from the upper half-plane; no value is returned")
            res_q = _residue(form, z0, h)
            factor = mpmath.mpf(sp.N(form.factor.subs({p: (sp.Float(str(z0), dps) if p.name == form.zsym.name
                                                            else sp.Rational(form.values[p.name]))
                                                       for p in form.factor.free_symbols}), dps))
            return z0, res_q, factor * res_q

    def attempt(dps):
        (z_lo, q_lo, r_lo), (z_hi, q_hi, r_hi) = solve(dps), solve(dps + 10)
        with mpmath.workdps(dps + 10):
            if not (agree(z_lo, z_hi, digits, absolute=1) and agree(r_lo, r_hi, digits) and agree(q_lo, q_hi, digits)):
                raise Disagree(f"outlier near {mpmath.nstr(z_hi, 10)}: the solves at {dps} and {dps + 10} digits "
                               f"disagree beyond digit {digits}")
        return (z_hi, q_hi, r_hi), None

    # the core's two-precision certification, the guard doubling on a disagreement (next to the bulk's edge the
    # fixed point's Jacobian is nearly singular and the residue loses digits)
    z_hi, q_hi, r_hi = certify(attempt, digits, GUARD, ESCALATIONS, fail=lambda failures, dps: PrecisionError(
        f"{failures[-1]} (up to {dps + 10} working digits; an outlier this close to the bulk's edge, where the "
        "fixed point's Jacobian is nearly singular, loses digits: ask fewer)")).value
    with mpmath.workdps(digits + 20):
        a_coef = mpf_of(sp.Rational(form.a)) if form.a.is_rational else mpmath.mpf(sp.N(form.a, digits + 20))
        weight = a_coef * q_hi / mpmath.mpf(sp.N(form.c, digits + 30))
        xx = _norm(form)
        if not weight > 0 or (xx is not None and weight > xx * (1 + mpmath.mpf(10) ** -digits)):
            raise BranchError(f"outlier at {mpmath.nstr(z_hi, 10)}: the spectral weight a*Res = {mpmath.nstr(weight, 10)} "
                              f"must lie in (0, <x, x>]; no value is returned")
        overlap = None if xx is None or xx == 0 else weight / xx
    with mpmath.workdps(digits):
        return Outlier(+z_hi, +r_hi, None if overlap is None else +overlap, digits)


def _norm(form):
    """``<x, x>`` of the form's vector (a combination of deterministic vectors; ``None`` otherwise)."""
    out = norm2(form.x, {**form.plan.vectors, **form.vectors}, form.grams, form.values)
    return None if out is None else mpmath.mpf(sp.N(out, mpmath.mp.dps + 10))
