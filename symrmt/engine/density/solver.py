r"""Limiting spectral densities of symmetric matrix expressions: continuation toward the real axis.

For a symmetric matrix expression ``M`` (square, ``N x N``) the engine builds the pencil of
``tau((M - z)^{-1})`` with a fresh spectral parameter ``z`` (:meth:`symrmt.engine.Model.plan`, self-tested
like every pencil), and solves its block fixed point at complex ``z``:

1. **start** at ``z = x + iY`` with ``Y = O(1)`` (:data:`START_HEIGHT` times the scale of the grid): the
   homotopy in the strength ``s`` of the random part from ``H = L_0^{-1}`` (``s = 0``) to ``s = 1``,
   in complex arithmetic (off the real axis the resolvent is analytic in ``s``, no spectrum is crossed);
2. **descend** in ``log Im z`` from ``Y`` to :data:`ETA_FLOOR` ``* (1 + |x|)`` at fixed ``Re z = x``, with the predictor
   ``dh/dt = -J^{-1} dR/dz dz/dt`` and a Newton corrector inside a trust region (each step may move the
   solution by at most :data:`MOVE` of its size, the corrector :data:`CORRECT` from the predictor) that also
   keeps the Stieltjes branch, ``Im tau > 0`` at every point with ``Im z > 0``, then a Newton **finish** at ``z = x`` itself: inside the
   bulk the root at real ``z`` is a regular complex root, outside it is real; at an edge (the Jacobian is
   singular) or an atom (the solution diverges) the finish fails and the point is reported as such;
3. **certify** by Newton at two working precisions (``digits + 10`` and ``digits + 20``) from that root:
   ``tau`` must agree to ``digits`` significant digits, and the Stieltjes branch is checked at the
   solution, ``Im tau >= 0`` (the limit from ``Im z > 0``), else :class:`~symrmt.errors.BranchError`.
   A disagreement is escalated once by the core's certification (:func:`symrmt.core.certify.certify`): the
   whole check at 10 more digits (at an edge on the grid the polish may stop short of quadratic convergence).

``rho(x) = Im tau(x + i0) / pi``.  A density that is 0 (outside the support) is certified in absolute
terms: ``|Im tau| <= 10^-digits |tau|`` at both precisions.

**float64 points** (``certify=k``): every ``k``-th point is certified as above, and its float64 value must
agree with the certified one to :data:`FLOAT_AGREE`; the others keep their float64 root when its residual
at ``z = x`` is below :data:`FLOAT_RESIDUAL` and ``Im tau >= 0`` (status ``"float"``, about 10 digits, not
certified), else they are recomputed in mpmath (status ``"ok"``).

**Edges** are the real points where the real fixed point stops existing: the Jacobian ``J`` of the
residual is singular there.  Between two grid points, one inside and one outside the support, the edge
is bracketed by bisection on the float solve, then solved together with ``J v = 0``, ``l . v = 1``
(unknowns ``h, x, v``; a regular root of this extended system) by Newton at two precisions.

**Atoms**: the mass at ``x0`` is ``lim_{eta -> 0} eta Im tau(x0 + i eta)``; it is read at
``eta = 10^-(digits+4)`` and ``10^-(digits+6)`` (the solution grows like ``1/eta``; the descent is
continued in ``log eta`` at ``2 digits + 30`` working digits, where Newton's relative step can reach about
``10^-(2 digits + 30) |h|``, so each polish asks ``10^-(digits + 20)``), and the two must agree to ``digits``.  The
candidates are ``x0 = 0`` when it is in the grid's range, and every grid point whose finish diverged.
Between two grid points outside the support, a decrease of the real ``tau`` (increasing on every
interval of the resolvent set) is a pole: its mass is the contour integral ``-(1/2 pi i) oint tau dz`` on a
circle around it, and its location the first moment over the mass (:func:`contour_atom`, exponentially
convergent trapezoid rule, ``N`` and ``2N`` points agreeing to ``digits``).
"""


from __future__ import annotations

from fractions import Fraction

import math

import mpmath
import numpy as np
from mpmath.libmp import MPZ, fzero

from symrmt.engine.density.features import atom_mass, classify, contour_atom, find_edge
from symrmt.engine.solve.edge import DensityError, EdgeSystem
from symrmt.engine.density.resolvent import DensitySolve, ResolventSolver
from symrmt.errors import PrecisionError
from symrmt.core.budget import solve_budget
from symrmt.engine.density.fast import density_values, solve_points
from symrmt.engine.density.result import Density, check_points
from symrmt.engine.lang.matrices import MatrixNode, ModelError, Trace, Inverse
from symrmt.engine.lang.node import MAX_SPLIT_ATOMS
from symrmt.engine.lang.tree import exact_value
from symrmt.engine.lang.vectors import has_vectors
from symrmt.engine.reduce import linearize as lin
from symrmt.engine.solve.certify import admitted
from symrmt.parsing.limits import LIMITS
from symrmt.progress import counted

__all__ = ["compute", "DensityError", "DensitySolve", "ResolventSolver", "FLOAT_RESIDUAL", "FLOAT_AGREE"]


# ---------------------------------------------------------------- the whole computation

def _fresh_name(model) -> str:
    for k in range(100):
        name = "zeta" if k == 0 else f"zeta{k}"
        if name not in model.symbols and name not in model.matrices and name not in model.dims:
            return name
    raise DensityError("no free name for the spectral parameter")


#: a float64 point (``certify=k``) is kept when its fixed-point residual is below this (relative to ``1 + |h|``)
FLOAT_RESIDUAL = 1e-10
#: and when it agrees with the certified value of each k-th point to this relative difference
FLOAT_AGREE = 1e-8


def compute(model, matrix, xs, at, digits=15, edges=True, atoms=True, label=None, certify=None, fast=False):
    """The :class:`~symrmt.engine.density.result.Density` of ``matrix`` on the points ``xs`` at the values ``at``
    (``fast``: the grid as one float64 batch, :mod:`symrmt.engine.density.fast`; the points it cannot
    check are certified here); :meth:`symrmt.engine.Model.density` documents the other arguments.  Raises
    :class:`ModelError` for a scalar, a non-square or non-symmetric matrix, vectors, a law of too many atoms
    or an unknown parameter, and the point solver's errors.

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> d = compute(m, "G/sqrt(n)", [0, 1], {}, digits=12, edges=False, atoms=False)
    >>> [mpmath.nstr(v, 12) for v in d.density]   # 1/pi and sqrt(3)/(2 pi)
    ['0.318309886184', '0.275664447711']
    >>> compute(m, "trace(G/sqrt(n))", [0], {})
    Traceback (most recent call last):
        ...
    symrmt.errors.ModelError: density() takes a matrix expression (the M of rho_M), not a scalar
    """
    node = model.expr(matrix)
    if not isinstance(node, MatrixNode):
        raise ModelError("density() takes a matrix expression (the M of rho_M), not a scalar")
    if node.rows != node.cols:
        raise ModelError(f"density() needs a square matrix, got {node.rows.name} x {node.cols.name}")

    if has_vectors(node):
        raise ModelError("density() takes matrices without vectors: a finite-rank term such as k*v*v.T does not "
                         "move the limiting density (it adds finitely many eigenvalues, of mass 0): drop it")
    if not lin.is_symmetric(node):
        node = lin.symmetric_rotation(node)  # X Y with Y X symmetric (both N x N): the same spectrum
    if not lin.is_symmetric(node):
        raise ModelError("density() needs a symmetric matrix by structure (M == M.T after pushing transposes: "
                         "write Z.T*Z/n, K.T*K, G/sqrt(n) + ...); a non-symmetric matrix has no real spectral "
                         "density (see the Brown measure, docs/engine.md)")

    laws = lin.diagonals_of(node)
    big = sorted(name for name, D in laws.items() if len(D.values) > MAX_SPLIT_ATOMS)
    if big:
        D = laws[big[0]]
        raise ModelError(
            f"density() of the {len(D.values)}-atom law {D.name}: the density follows the resolvent along z, which "
            f"needs the z-derivative of the fixed point; a law of at most {MAX_SPLIT_ATOMS} atoms is split into "
            "one block per atom for that, and the weighted-sum reduction of a larger law has no derivatives yet "
            f"(its traces and sweeps work: symrmt trace); merge its atoms to at most {MAX_SPLIT_ATOMS}")
    values = {str(k): exact_value(v, str(k)) for k, v in (at or {}).items()}
    plan, zsym, solver = _prepared(model, node, values)
    exact = _exact_points(xs)
    xs = [float(x) for x in exact]
    scale = max(abs(x) for x in xs) if xs else 1.0
    ds = DensitySolve(solver, scale)
    dens, taus, status, kinds = [], [], [], []
    batch = _fast_points(solver, xs, scale) if fast and xs else None  # None: no batch, all certified
    points = enumerate(zip(xs, exact))
    if batch is not None and all(type(b) is tuple for b in batch):  # every point a checked float64 point
        dens, taus, status, kinds = (list(v) for v in zip(*batch))
        points = ()
    for i, (x, xe) in counted(points, len(xs), f"density of {label}" if label else "density"):
        if batch is not None and isinstance(batch[i], tuple):  # a checked float64 point of the batch
            for out, v in zip((dens, taus, status, kinds), batch[i]):
                out.append(v)
            continue
        xe = exact_value(xe, "x") if not isinstance(xe, (Fraction, mpmath.mpf)) else xe
        with solve_budget(LIMITS["solve_seconds"], f"the density at x = {x:.6g}"):  # one point, one budget
            if batch is not None and batch[i] is not None:  # the batch's root, too ill-conditioned for float64
                kind, h = "ok", batch[i]
            else:
                kind, h, _ = ds.float_point(x)
            if kind != "ok":
                dens.append(None)
                taus.append(None)
                status.append("singular")
                kinds.append("edge")
                continue
            if certify is not None and i % certify != 0:
                # float64 only: checked (the residual at z = x, the Stieltjes sign), else recomputed in mpmath
                R, _, _ = solver._eval(h, complex(x, 0.0))
                t = solver.tau(h)
                if max(abs(r) for r in R) <= FLOAT_RESIDUAL * (1 + max(abs(a) for a in h)) and \
                        t.imag >= -1e-12 * (1 + abs(t)):
                    rho = mpmath.mpf(max(t.imag, 0.0) / math.pi) if t.imag > 1e-9 * (1 + abs(t)) else mpmath.mpf(0)
                    dens.append(rho)
                    taus.append(mpmath.mpc(t))
                    status.append("float")
                    kinds.append("in" if rho > 0 else "out")
                    continue
            try:  # certified with the core's escalation (at an edge on the grid: once more at 10 more digits)
                rho, tau = ds.certified(xe, h, digits)
            except DensityError:  # Newton does not converge quadratically: the point is on an edge (singular J)
                dens.append(None)
                taus.append(None)
                status.append("singular")
                kinds.append("edge")
                continue
            if certify is not None and i % certify == 0:
                t = solver.tau(h)  # the float value of a certified point must agree with it
                ft = mpmath.mpf(max(t.imag, 0.0) / math.pi) if t.imag > 1e-9 * (1 + abs(t)) else mpmath.mpf(0)
                if abs(ft - rho) > FLOAT_AGREE * (abs(rho) + 1e-12 * (1 + abs(t))):
                    raise PrecisionError(f"the float64 density at x = {x:.6g} ({float(ft):.10g}) disagrees with its "
                                         f"certified value {mpmath.nstr(rho, 12)}: rerun without certify=")
            dens.append(rho)
            taus.append(tau)
            status.append("ok")
            kinds.append("in" if rho > 0 else "out")
    # the samples seen: the grid, plus probes next to a singular grid point (an atom or an edge on the grid)
    samples = [(x, k) for x, k in zip(xs, kinds)]
    if edges:
        for i in range(len(xs) - 1):
            pair = (kinds[i], kinds[i + 1])
            if "edge" in pair and pair != ("edge", "edge"):
                sing, other = (xs[i], xs[i + 1]) if pair[0] == "edge" else (xs[i + 1], xs[i])
                for k in range(1, 30):
                    probe = sing + (other - sing) * 2.0 ** -k
                    kind, _ = classify(ds, probe)
                    if kind != "edge":
                        samples.append((probe, kind))
                        if kind != kinds[i if pair[0] != "edge" else i + 1]:
                            break
        samples.sort()
    seen = [(x, k) for x, k in samples if k != "edge"]
    edge_list, out_pairs = [], []
    if edges and len(seen) > 1:
        edge_sys = None
        for (xa, a), (xb, b) in zip(seen, seen[1:]):
            if a != b:
                if edge_sys is None:
                    edge_sys = EdgeSystem(solver)
                x_in, x_out = (xa, xb) if a == "in" else (xb, xa)
                edge_list.append((find_edge(ds, edge_sys, x_in, x_out, digits), "lower" if a == "out" else "upper"))
                kind, h = classify(ds, x_out)
                if kind == "out":  # the stretch between the grid's outside point and the edge, for the atom scan
                    pair = ((x_out, ds.s.tau(h).real), ds.last_out)
                    out_pairs.append(tuple(sorted(pair)))
    atom_list = []
    if atoms and xs:
        cands = []
        if min(xs) <= 0 <= max(xs):
            cands.append(0.0)
        cands += [x for x, k in zip(xs, kinds) if k == "edge" and x not in cands]
        for x0 in cands:
            try:
                mass = atom_mass(ds, x0, digits)
            except (DensityError, ZeroDivisionError, PrecisionError):
                continue
            if mass is not None:
                atom_list.append({"x": mpmath.mpf(x0), "mass": mass})
        # an atom between two grid points outside the support: tau(x + i0) is real and increasing on every
        # interval of the resolvent set, so a decrease between neighbours is a pole; its mass is the contour
        # integral -(1/2 pi i) oint tau dz around it (no exact location needed)
        for i in range(len(xs) - 1):
            if kinds[i] == kinds[i + 1] == "out" and taus[i] is not None and taus[i + 1] is not None:
                out_pairs.append(((xs[i], float(taus[i].real)), (xs[i + 1], float(taus[i + 1].real))))
        for (xa, ta), (xb, tb) in out_pairs:
            if any(xa < float(a["x"]) < xb for a in atom_list):
                continue  # the drop is an atom already found (at 0, or on the grid)
            if xb > xa and tb < ta:
                found = contour_atom(ds, xa, xb, ta, digits)
                if found is not None and not any(abs(float(a["x"]) - float(found["x"])) < 1e-9 for a in atom_list):
                    atom_list.append(found)
    support = _support([x for x, _ in seen], [k for _, k in seen], edge_list)
    out = Density(xs, dens, taus, status, support, atom_list, digits, label or str(matrix), dict(values))
    # edges where tau diverges as a power (not a square root): located to the bisection, not certified
    out.power_law_edges = list(getattr(ds, "power_law_edges", []))
    return out


#: most prepared resolvent systems a model keeps for its densities (the oldest dropped first)
PREPARED_CACHE = 32


def _prepared(model, node, values):
    """``(plan, z, solver)`` of the resolvent trace ``tau((M - z)^{-1})`` of the symmetric matrix ``node``
    at ``values``, kept on the model (keyed by the matrix and the values), so that a second density of the
    same matrix does no symbolic work: the spectral parameter keeps its name, the plan its pencils."""
    cache = model.__dict__.setdefault("_density_prepared", {})
    key = (node, tuple(sorted(values.items())))
    if key in cache:
        return cache[key]
    names = model.__dict__.setdefault("_density_z", {})
    if node not in names:  # one spectral parameter per matrix, named once
        names[node] = _fresh_name(model)
    zname = names[node]
    z = model.param(zname)
    expr = Trace(_inverse(node - z * model.identity(node.rows.name)))
    laws = lin.diagonals_of(node)
    try:  # every law split into blocks (the derivative in z needs the block system)
        plan = model.plan(expr, split_atoms=MAX_SPLIT_ATOMS)
    except ModelError as exc:
        if laws and "unknowns" in str(exc):
            raise ModelError(f"{exc}; density() splits every diagonal law into one block per atom "
                             f"({', '.join(f'{D.name}: {len(D.values)} atoms' for D in laws.values())}), so "
                             "fewer atoms give fewer unknowns") from None
        raise
    zsym = next(p for p in plan.params if p.name == zname)
    known = {p.name for p in plan.params if p.name != zname}
    extra = sorted(k for k in values if k not in known)
    if extra:
        raise ModelError(f"unknown parameter {', '.join(extra)} in at= (the matrix's parameters: "
                         f"{', '.join(sorted(known)) or 'none'})", unknown=extra, known=known)
    model.check_ratios(values)  # the checks every route passes: sizes, and real, finite coefficients
    admitted(plan, values, complex_at=zname)
    out = (plan, zsym, ResolventSolver(plan, zsym, values))
    if len(cache) >= PREPARED_CACHE:
        cache.pop(next(iter(cache)))
    cache[key] = out
    return out


def _exact_points(xs):
    """The points as given, checked (:func:`~symrmt.engine.density.result.check_points`): a float (NumPy's too) or
    an integer plainly inside the float64 range kept as it is (made exact only where a point is certified),
    any other point made an exact rational first.

    >>> _exact_points([0.5, 2, "1/3"])
    [0.5, 2, Fraction(1, 3)]
    """
    if all(type(x) is float for x in xs):  # the usual grid: Python floats, checked at once
        a = np.abs(np.asarray(xs, dtype=float))
        if ((a == 0) | ((a > 1e-299) & (a < 1e299))).all():
            return list(xs)
    out, rest = [], []
    for x in xs:
        if isinstance(x, (float, int)) and not isinstance(x, bool) and (x == 0 or 1e-299 < abs(x) < 1e299):
            out.append(x)
        else:
            out.append(exact_value(x, "x") if not isinstance(x, mpmath.mpf) else x)
            rest.append(out[-1])
    check_points([x if not isinstance(x, mpmath.mpf) else Fraction(*x.as_integer_ratio()) for x in rest])
    return out


def _fast_points(solver, xs, scale):
    """Per point ``(rho, tau, "float", kind)`` from the float64 batch; where only the conditioning check
    failed, the root ``h`` (a list: the start of the point's certification); ``None`` where another check
    failed."""
    try:
        root, tau, good, rooted = solve_points(solver, xs, scale)
    except (DensityError, ModelError, NameError, TypeError, ValueError, ArithmeticError):
        return None  # a system the float64 batch does not take (not plain arithmetic): every point certified
    rho, inside = density_values(tau)
    make_mpf, make_mpc = mpmath.mp.make_mpf, mpmath.mp.make_mpc
    n = len(rho)
    raw = _raw_floats(np.concatenate((rho, tau.real, tau.imag)))
    rr, tr, ti = raw[:n], raw[n:2 * n], raw[2 * n:]
    if good.all():  # every point a checked float64 point
        kinds = ["in" if k else "out" for k in inside.tolist()]
        return list(zip(map(make_mpf, rr), map(make_mpc, zip(tr, ti)), ["float"] * len(rr), kinds))
    return [(make_mpf(rr[i]), make_mpc((tr[i], ti[i])), "float", "in" if k else "out") if g
            else ([complex(v) for v in root[i]] if f else None)
            for i, (g, k, f) in enumerate(zip(good.tolist(), inside.tolist(), rooted.tolist()))]


def _raw_floats(values):
    """mpmath's raw ``(sign, man, exp, bc)`` of each float of an array, exactly (as ``mpmath.libmp.from_float``,
    computed on the whole array: the 53-bit mantissa with its trailing zero bits removed); a value that is not
    finite gives mpmath's zero (it is not read: such a point failed its checks).

    >>> import numpy as np
    >>> from mpmath.libmp import from_float
    >>> vals = [0.0, 1.0, -2.5, 0.1, 5e-324, -1e308, 3.0 * 2.0**-1030, 1 / 3]
    >>> _raw_floats(np.array(vals)) == [from_float(v) for v in vals]
    True
    """
    v = np.asarray(values, dtype=float)
    v = np.where(np.isfinite(v), v, 0.0)
    frac, e = np.frexp(v)
    man = (np.abs(frac) * 9007199254740992.0).astype(np.int64)  # 2**53 |frac|: an integer below 2**53, exactly
    nz = man > 0
    tz = np.where(nz, np.frexp((man & -man).astype(float))[1] - 1, 0)  # trailing zero bits
    man = np.right_shift(man, tz)
    bc = np.frexp(man.astype(float))[1]  # bit length (exact below 2**53)
    ex = e - 53 + tz
    return [(s, MPZ(m), x, b) if m else fzero
            for s, m, x, b in zip((frac < 0).astype(int).tolist(), man.tolist(), ex.tolist(), bc.tolist())]


def _inverse(m):
    return Inverse(m)


def _support(xs, kinds, edges):
    """Intervals ``[lo, hi]`` of the support seen on the grid: refined edges where found, else ``None``."""
    out, lo = [], None
    inside = bool(kinds) and kinds[0] == "in"
    pending = iter(sorted(edges, key=lambda e: e[0]))
    edge_list = list(pending)
    k = 0
    for i in range(len(xs) - 1):
        a, b = kinds[i], kinds[i + 1]
        if {a, b} == {"in", "out"}:
            e = edge_list[k][0] if k < len(edge_list) else None
            k += 1
            if a == "out":
                lo, inside = e, True
            else:
                out.append([lo, e])
                lo, inside = None, False
    if inside:
        out.append([lo, None])
    return out
