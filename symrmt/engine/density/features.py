"""The features of a spectral density between grid points: the edges of its support and its atoms.

:func:`find_edge` brackets an edge between a point inside and one outside the support by bisection on the
float solve and solves the extended system (:class:`symrmt.engine.solve.edge.EdgeSystem`) at two
precisions; :func:`atom_mass` reads the mass of an atom at ``x0`` at two heights; :func:`contour_atom` finds
an atom between two points outside the support by a contour integral.  :func:`classify` tells whether a
real point is inside, outside or at an edge.  See :mod:`symrmt.engine.density.solver`.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from symrmt.core.certify import Disagree, agree, certify
from symrmt.core.continuation import Geometric, follow
from symrmt.core.linalg import solve_dense
from symrmt.core.numbers import MPCOMPLEX
from symrmt.engine.solve.edge import DensityError
from symrmt.engine.density.resolvent import ATOM_TAIL
from symrmt.errors import ConvergenceError, PrecisionError

__all__ = ["classify", "find_edge", "power_law_edge", "atom_mass", "contour_atom", "EDGE_GUARD", "ATOM_STEP",
           "POWER_LAW_DISTANCES"]

#: the relative step of the polish near an atom: ``10^-(digits + ATOM_STEP)`` (see :func:`atom_mass`)
ATOM_STEP = 20
#: the edge system is solved at ``digits + EDGE_GUARD`` and 10 more working digits
EDGE_GUARD = 10


def classify(ds, x):
    """``(kind, h)`` at the real point ``x`` of the :class:`~symrmt.engine.density.resolvent.DensitySolve` ``ds``:
    kind ``"in"`` (inside the support: the root at ``z = x`` is complex), ``"out"`` (real), or ``"edge"`` (the
    float finish failed; ``h`` is then ``None``).

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.density.resolvent import DensitySolve, ResolventSolver
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> plan = m.plan("trace(inv(G/sqrt(n) - z*I(n)))")
    >>> ds = DensitySolve(ResolventSolver(plan, plan.params[0], {}), 3.0)
    >>> [classify(ds, x)[0] for x in (0.0, 3.0)]   # the semicircle's support is [-2, 2]
    ['in', 'out']
    """
    kind, h, _ = ds.float_point(x)
    if kind != "ok":
        return "edge", None
    tau = ds.s.tau(h)
    return ("in" if tau.imag > 1e-9 * (1 + abs(tau)) else "out"), h


def find_edge(ds, edge_sys, x_in, x_out, digits):
    """The edge between ``x_in`` (inside) and ``x_out`` (outside), to ``digits`` (two precisions): a bisection on
    the float solve of ``ds``, then the extended system ``edge_sys``
    (:class:`~symrmt.engine.solve.edge.EdgeSystem`).  Raises :class:`DensityError` when the edge system fails
    and :class:`~symrmt.errors.PrecisionError` when the two precisions disagree.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.density.resolvent import DensitySolve, ResolventSolver
    >>> from symrmt.engine.solve.edge import EdgeSystem
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> plan = m.plan("trace(inv(G/sqrt(n) - z*I(n)))")
    >>> rs = ResolventSolver(plan, plan.params[0], {})
    >>> find_edge(DensitySolve(rs, 3.0), EdgeSystem(rs), 1.0, 3.0, 15)   # the semicircle's edge
    mpf('2.0')
    """
    h_out = None
    for _ in range(60):
        mid = (x_in + x_out) / 2
        kind, h = classify(ds, mid)
        if kind == "in":
            x_in = mid
        elif kind == "out":
            x_out, h_out = mid, h
        else:
            break
        if abs(x_out - x_in) <= 1e-9 * (1 + abs(x_out)):
            break
    if h_out is None:
        kind, h_out = classify(ds, x_out)
        if kind != "out":
            raise DensityError(f"no real fixed point next to the edge near x = {x_out:.6g}")
    ds.last_out = (x_out, ds.s.tau(h_out).real)  # the outside point nearest the edge (for the atom scan)
    hr = [a.real for a in h_out]
    _, J, _ = ds.s._eval(h_out, complex(x_out, 0))
    Jr = np.array(J, dtype=complex).real
    _, _, vt = np.linalg.svd(Jr)
    v = vt[-1]

    def attempt(dps):  # the extended system at dps and dps + 10 working digits
        lo = edge_sys.solve(hr, x_out, v, dps)
        hi = edge_sys.solve(hr, x_out, v, dps + 10)
        with mpmath.workdps(dps + 10):
            if not agree(lo, hi, digits, absolute=1):
                raise Disagree(f"the edge near x = {x_out:.6g}: solves at two precisions disagree")
            if not min(x_in, x_out) - 1e-6 * (1 + abs(x_out)) <= hi <= max(x_in, x_out) + 1e-6 * (1 + abs(x_out)):
                raise DensityError(f"the edge system converged to x = {mpmath.nstr(hi, 8)}, outside its bracket "
                                   f"[{min(x_in, x_out):.8g}, {max(x_in, x_out):.8g}]")
            return +hi, None

    # the core's two-precision certification, one try (no escalation: a disagreement raises PrecisionError;
    # a DensityError of the edge system is not retried)
    try:
        return certify(attempt, digits, EDGE_GUARD, 1, catch=(),
                       fail=lambda failures, dps: PrecisionError(failures[-1])).value
    except (DensityError, PrecisionError):
        # no regular root of the extended system: an edge where tau diverges (a power law, not a square root)?
        found = power_law_edge(ds, x_in, x_out)
        if found is None:
            raise
        if not hasattr(ds, "power_law_edges"):
            ds.power_law_edges = []
        ds.power_law_edges.append(found)
        return found["x"]


#: distances (times ``1 + |x0|``) from a power-law edge at which ``|tau|`` is sampled outside the support
POWER_LAW_DISTANCES = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)
#: the growth of ``|tau|`` per decade of distance must lie in this range, the same within POWER_LAW_SPREAD
POWER_LAW_RANGE = (0.05, 1.0)
POWER_LAW_SPREAD = 0.1


def power_law_edge(ds, x_in, x_out):
    """An edge where ``tau`` diverges like ``|x - x0|^-alpha`` (``0 < alpha < 1``), not a square-root edge:
    ``{"x", "exponent", "tolerance", "kind"}``, or ``None`` when ``|tau|`` does not grow as a power.

    The bisection of :func:`find_edge` has bracketed the edge in ``[x_in, x_out]`` (as far as the float
    finish reaches: it fails near a divergence).  ``|tau|`` is read (float64) outside the support at the
    :data:`POWER_LAW_DISTANCES` from the bracket's midpoint that are at least 10 bracket widths (at least
    three of them, else ``None``); each decade closer must multiply it by
    ``10^alpha`` with ``alpha`` in :data:`POWER_LAW_RANGE`, the same over the decades within
    :data:`POWER_LAW_SPREAD` (a square-root edge, where ``tau`` stays finite, has ``alpha -> 0``).  The
    density then behaves as ``|x - x0|^-alpha`` at the edge (``exponent`` is ``-alpha``, from the closest
    decade: an estimate, to about two decimals).  The location is known to the bracket's width
    (``tolerance``), not certified: it is the bracket's midpoint rounded to the decimal place of the width
    (0 for an edge at 0).

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.density.resolvent import DensitySolve, ResolventSolver
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> plan = m.plan("trace(inv(Z.T*Z/n - z*I(n)))")   # Marchenko-Pastur at c = 1: rho ~ x^(-1/2) at 0
    >>> e = power_law_edge(DensitySolve(ResolventSolver(plan, plan.params[0], {}), 3.0), 1e-9, -1e-9)
    >>> e["x"], round(e["exponent"], 1), e["kind"]
    (mpf('0.0'), -0.5, 'power-law')
    """
    lo, hi = min(x_in, x_out), max(x_in, x_out)
    width = max(hi - lo, 1e-15 * (1 + abs(hi)))
    x0 = (lo + hi) / 2
    side = 1.0 if x_out > x_in else -1.0
    # the distances: decades no closer than 10 bracket widths (the location's error then moves them by
    # at most 5%, about 0.02 on a slope), at least three of them
    dists = [d * (1 + abs(x0)) for d in POWER_LAW_DISTANCES if d * (1 + abs(x0)) >= 10 * width]
    if len(dists) < 3:
        return None
    mags = []
    for d in dists:
        kind, h = classify(ds, x0 + side * d)
        if kind != "out":
            return None
        mags.append(abs(ds.s.tau(h)))
    if not all(m > 0 and math.isfinite(m) for m in mags):
        return None
    slopes = [math.log10(b / a) / math.log10(d0 / d1) for a, b, d0, d1 in zip(mags, mags[1:], dists, dists[1:])]
    if not all(POWER_LAW_RANGE[0] < a < POWER_LAW_RANGE[1] for a in slopes) or \
            max(slopes) - min(slopes) > POWER_LAW_SPREAD:
        return None
    place = math.floor(-math.log10(width))
    x = round(x0, place)
    if not lo <= x <= hi:
        x = x0
    return {"x": mpmath.mpf(x), "exponent": -slopes[-1], "tolerance": width, "kind": "power-law"}


# ---------------------------------------------------------------- atoms

def atom_mass(ds, x0, digits):
    """``lim eta Im tau(x0 + i eta)``, read at two heights ``10^-(digits+4)``, ``10^-(digits+6)``; ``None``
    when the mass is below ``10^-digits``.  The descent in ``eta`` (steps ``eta -> eta/4``, the slope
    ``i dh/dz``, the mpmath polish as corrector) is the core's continuation
    (:func:`symrmt.core.continuation.follow`), every step kept.  ``ds``: the
    :class:`~symrmt.engine.density.resolvent.DensitySolve`.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.density.resolvent import DensitySolve, ResolventSolver
    >>> m = Model()
    >>> _ = m.diag("D", "n", ["0", "2"], ["1/4", "3/4"])
    >>> plan = m.plan("trace(inv(D - z*I(n)))")
    >>> atom_mass(DensitySolve(ResolventSolver(plan, plan.params[0], {}), 3.0), 2.0, 12)
    mpf('0.75')
    """
    s = ds.s
    h, eta = ds.near_axis(x0)
    dps = 2 * digits + 30
    m = s.m
    masses = []
    with mpmath.workdps(dps):
        # the solution grows like 1/eta (up to 10^(digits+6)), so Newton's relative step stops at about
        # 10^-dps |h| (the residual's rounding through the Jacobian): 10^-(digits+24) at the lowest height,
        # not 10^-(dps-4) (at 0 that floor is not reached; off 0, e.g. -2 on the grid, the polish cycled there)
        tol = mpmath.mpf(10) ** (-(digits + ATOM_STEP))
        eta = mpmath.mpf(eta)
        h = [mpmath.mpc(a) for a in h]
        x0m = mpmath.mpf(x0)

        def slope(h, eta):  # dh/d eta = i dh/dz = -i J^{-1} dR/dz at x0 + i eta
            z = mpmath.mpc(x0m, eta)
            v = s.c.fjs(h, s._pv(z, mp=True))
            rhs = s.dz_mp(h, s._pvals(z, mp=True))
            dh = solve_dense([list(v[m + m * i:m + m * (i + 1)]) for i in range(m)], [-r for r in rhs], mpmath.mpc(0))
            return [1j * d for d in dh]

        def correct(pred, eta):
            return s.polish(pred, mpmath.mpc(x0m, eta), dps, steps=30, tol=tol)[0], None

        for k in ATOM_TAIL:
            target = mpmath.mpf(10) ** (-(digits + k))
            if eta > target:  # the core's continuation, steps eta -> eta/4: no trust region, no smaller step
                steps = int(mpmath.ceil(mpmath.log(eta / target, 4))) + 1
                try:
                    h, _ = follow(correct, h, slope(h, eta), eta, target, Geometric(eta, target, 4, 4, 3), MPCOMPLEX,
                                  correction=mpmath.inf, move=None, max_steps=steps, catch=(), finite=None,
                                  derivative=slope)
                except DensityError:
                    raise
                except ConvergenceError as exc:  # only a nan step is refused
                    raise DensityError(f"the descent to the atom at x = {x0} failed: {exc}") from None
                eta = target
            _, tau = s.polish(h, mpmath.mpc(x0m, eta), dps, tol=tol)
            masses.append(eta * tau.imag)
        a, b = masses
        if not agree(a, b, digits, absolute=1):
            raise PrecisionError(f"the atom at x = {x0}: the mass read at two heights disagrees "
                                 f"({mpmath.nstr(a, 8)} and {mpmath.nstr(b, 8)})")
        if b < mpmath.mpf(10) ** (-digits):
            return None
        return +b


def contour_atom(ds, a, b, tau_a, digits):
    """The atom in ``(a, b)`` (both outside the support, ``tau`` dropping between them, ``tau_a`` its value at
    ``a``): a first location by bisection on the real ``tau``; its mass ``m0`` and first moment ``m1``
    (``-(1/2 pi i) oint z tau dz``, so the location is ``m1/m0`` to the digits asked) by the trapezoid rule on
    the circle of radius ``r = min(x0 - a, b - x0)/2`` at ``N`` and ``2N`` points (``N`` from 32, doubled up to
    1024) with each ``tau`` polished at ``digits + 10``; the two must agree to ``digits``.  Returns
    ``{"x", "mass"}``, or ``None`` when the mass is below ``10^-digits`` or a piece of the bulk lies between
    (for the law ``delta_0/4 + 3 delta_2/4`` of ``D`` on ``(-1/2, 1/2)`` it returns ``x = 0``, ``mass = 1/4``,
    in about half a second).  Raises :class:`~symrmt.errors.PrecisionError` when the two rules disagree.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.density.resolvent import DensitySolve, ResolventSolver
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> plan = m.plan("trace(inv(G/sqrt(n) - z*I(n)))")
    >>> rs = ResolventSolver(plan, plan.params[0], {})
    >>> ds = DensitySolve(rs, 3.0)
    >>> contour_atom(ds, -3.0, 3.0, rs.tau(ds.float_point(-3.0)[1]), 12) is None   # the bulk [-2, 2] between
    True
    """
    s = ds.s
    lo, hi = a, b
    for _ in range(60):
        mid = (lo + hi) / 2
        kind, h = classify(ds, mid)
        if kind == "in":
            return None  # a piece of the bulk between the grid points, not an atom
        if kind == "edge":  # the float finish fails this close to the pole: located as well as floats can
            lo = hi = mid
            break
        if s.tau(h).real >= tau_a:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * (1 + abs(hi)):
            break
    x0 = (lo + hi) / 2
    r = min(x0 - a, b - x0) / 2
    if not r > 0:
        return None
    ds.at_top(x0)

    def ring(N):
        with mpmath.workdps(digits + 10):
            m0 = m1 = mpmath.mpf(0)
            for k in range(N // 2):  # the upper half; the lower half is its conjugate
                th = (k + mpmath.mpf(1) / 2) * 2 * mpmath.pi / N
                z = mpmath.mpf(x0) + r * mpmath.expj(th)
                zc = complex(z)
                x_top, h_top = ds._top
                h = s.move(h_top, complex(x_top, ds.Y), zc)
                _, tau = s.polish(h, z, digits + 10)
                m0 += 2 * (tau * mpmath.expj(th)).real
                m1 += 2 * (tau * z * mpmath.expj(th)).real
            return -r * m0 / N, -r * m1 / N

    (prev, prev1) = ring(32)
    N = 64
    while N <= 1024:
        cur, cur1 = ring(N)
        with mpmath.workdps(digits + 10):
            if agree(cur, prev, digits, absolute=1) and agree(cur1, prev1, digits, absolute=1):
                if cur < mpmath.mpf(10) ** (-digits):
                    return None
                # the location: the first moment over the mass, -(1/2 pi i) oint z tau dz = mass * x0
                return {"x": +(cur1 / cur), "mass": +cur}
        prev, prev1, N = cur, cur1, 2 * N
    raise PrecisionError(f"the atom near x = {x0:.10g}: the contour integral did not settle to {digits} digits")

