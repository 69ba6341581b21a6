r"""The deterministic equivalent of an expression with matrices or vectors given by their entries.

The objects are declared in :mod:`symrmt.engine.laws.given`.

The value
---------
With Gaussian or GOE blocks ``Zh`` (entries of variance ``1/n``) and deterministic blocks ``A`` in a
linear pencil ``L = L_A + sum_j C_j (x) Zh_j`` (``L_A`` holds the identities, the given matrices and
vectors in their blocks), the expected inverse has the deterministic equivalent

    E[L^{-1}] ~ G = (L_A - eta(H))^{-1},     H_kl = tr(G_kl)/N_k,

``eta`` the same second-moment map as for the block fixed point of :mod:`symrmt.engine.reduce.fixed_point`
(``E[Zh M Zh^T] = (b/n) tau(M) I`` for ``Zh`` of size ``a x b``, ...), now acting on block traces of a
matrix that is not block-scalar.  The blocks of a dimension that carries a given object are
materialized at their size; the others stay scalar (their blocks are a number times ``I``).  This is
the deterministic equivalent *at the given size* (Couillet and Liao 2022, ch. 2; Knowles and Yin 2017
for the quadratic forms): it is not a limit of a sequence of matrices that was never specified.
Traces read ``tau`` of the blocks of ``G``; a quadratic form ``u^T M v`` reads the entries of ``G`` on
the pencil's ``1 x 1`` blocks (``G`` with the vectors included; ``H`` is solved with them left out,
as a finite-rank part does not move the traces).

The fixed point is solved in float64 by Newton on the entries of ``H`` (the Jacobian
``dtau(G_mn)/dH = tau(G_ma G_bn)`` exactly), along a homotopy in the strength of the random part,
then refined by Newton steps whose residual is evaluated with python-flint ``arb_mat`` at two
working precisions; the value is returned when both agree to the digits asked
(:class:`~symrmt.errors.PrecisionError` otherwise).  Each step costs one dense inverse of the
materialized matrix (``k p x k p`` for ``k`` blocks of size ``p``).

Examples
--------
>>> import numpy as np
>>> from symrmt.engine import Model
>>> m = Model()
>>> m.dim("p", "c*n")
Dim('p', c)
>>> Z = m.gaussian("Z", "p", "n")
>>> S = m.matrix("S", "p", "p", np.diag([1.0, 2.0, 1.0, 2.0]))
>>> print(given_limit(m, "trace(inv(S*Z*Z.T*S.T/n + gamma*I(p)))", {"c": "1/2", "gamma": 1}, digits=20))
0.42225983872393900285
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from symrmt.engine.lang.algebra import QuadForm
from symrmt.engine.lang.matrices import Trace
from symrmt.engine.lang.node import ModelError, walk
from symrmt.engine.lang.tree import exact_value, remove_diffs
from symrmt.engine.laws.given import GivenMatrix, GivenVector
from symrmt.engine.lang.vectors import Vector
from symrmt.engine.reduce import linearize as lin
from symrmt.engine.reduce.plan import normalized, scalar_formula
from symrmt.engine.solve.certify import TraceLimit
from symrmt.errors import BranchError, ConvergenceError, PrecisionError
from symrmt.parsing import check_digits

__all__ = ["given_limit"]


# ---------------------------------------------------------------- the deterministic equivalent

class _Part:
    """The numbers of one pencil at one point: its materialized and scalar blocks, the deterministic
    matrix, the second-moment terms and the unknowns."""

    def __init__(self, pencil, objects, sizes, ratio, coef):
        self.pencil = pencil
        blocks = pencil.blocks
        self.mat, self.sca = [], []          # block indices, materialized / scalar
        self.size = {}
        for k, (d, _atom) in enumerate(blocks):
            if d == "1" or d in sizes:
                self.mat.append(k)
                self.size[k] = 1 if d == "1" else sizes[d]
            else:
                self.sca.append(k)
        self.unit = [k for k in self.mat if blocks[k][0] == "1"]
        self.off, at = {}, 0
        for k in self.mat:
            self.off[k] = at
            at += self.size[k]
        self.K = at
        self.sidx = {k: i for i, k in enumerate(self.sca)}
        self.det = []      # (i, j, kind, payload, coefficient)
        random = {}
        for (i, j), e in pencil.Q.items():
            for leaf, c in e.items():
                c = coef(c)
                if leaf == "I":
                    self.det.append((i, j, "I", None, c))
                elif leaf[0] in ("Z", "G"):
                    random.setdefault(leaf[1], []).append((i, j, leaf, c))
                elif leaf[0] in ("A", "V"):
                    if i not in self.off or j not in self.off:
                        raise ModelError("internal: a given object in a scalar block")
                    data = objects[leaf[1]].data
                    if leaf[0] == "V":
                        data = data.reshape(-1, 1)
                    self.det.append((i, j, "M", data.T if leaf[2] else data, c))
                else:
                    raise ModelError(f"{leaf[1]}: a diagonal law together with a given matrix is not supported "
                                     "(declare the diagonal with matrix(...) from its entries)")
        self.eta = []      # (a, b, weight, m, m2): eta_ab += weight * H[m, m2]
        for _name, occ in random.items():
            for (a, m, l1, c1) in occ:
                for (m2, b, l2, c2) in occ:
                    if l1[0] == "Z" and l1[2] == l2[2]:
                        continue
                    if blocks[m][0] != blocks[m2][0]:
                        continue
                    self.eta.append((a, b, c1 * c2 * ratio(blocks[m][0]), m, m2))
        self.unknowns = sorted({(m, m2) for *_x, m, m2 in self.eta})
        self.pos = {u: i for i, u in enumerate(self.unknowns)}
        self.eta64 = [float(w) for _a, _b, w, _m, _m2 in self.eta]   # the float64 weights, converted once
        self.det64 = [float(c) for *_x, c in self.det]
        if any(a in self.unit or b in self.unit for a, b, *_x in self.eta):
            raise ModelError("internal: a random leaf on a 1 x 1 block")

    # -- float64
    def base(self, with_vectors: bool):
        M = np.zeros((self.K, self.K))
        S = np.zeros((len(self.sca), len(self.sca)))
        for (i, j, kind, data, _c), c in zip(self.det, self.det64):
            if kind == "I":
                if i in self.off:
                    o1, o2, N = self.off[i], self.off[j], self.size[i]
                    M[o1:o1 + N, o2:o2 + N] += c * np.eye(N)
                else:
                    S[self.sidx[i], self.sidx[j]] += c
            else:
                if not with_vectors and (i in self.unit or j in self.unit):
                    continue
                o1, o2 = self.off[i], self.off[j]
                M[o1:o1 + data.shape[0], o2:o2 + data.shape[1]] += c * data
        return M, S

    def _keep(self, with_vectors):
        return [k for k in self.mat if with_vectors or k not in self.unit]

    def layout(self, with_vectors):
        """``(where, K)``: the offset of each kept block in the materialized matrix, and its size."""
        where, at = {}, 0
        for k in self._keep(with_vectors):
            where[k] = at
            at += self.size[k]
        return where, at

    def matrix64(self, h, base, with_vectors=False):
        """The float64 materialized matrix at unknowns ``h`` (strength 1), over the blocks kept."""
        M = base[0].copy()
        for (a, b, _w, m, m2), w in zip(self.eta, self.eta64):
            if a in self.off:
                o1, o2, N = self.off[a], self.off[b], self.size[a]
                _add_diagonal(M, o1, o2, N, -w * h[self.pos[(m, m2)]])
        keep = self._keep(with_vectors)
        idx = np.concatenate([np.arange(self.off[k], self.off[k] + self.size[k]) for k in keep])
        return M[np.ix_(idx, idx)]

    def solve64(self, h, t, base, with_vectors=False):
        """``(G_mat, G_sca, idx)``: the float64 inverse at unknowns ``h``, strength ``t``."""
        M, S = base[0].copy(), base[1].copy()
        for (a, b, _w, m, m2), w in zip(self.eta, self.eta64):
            v = t * w * h[self.pos[(m, m2)]]
            if a in self.off:
                _add_diagonal(M, self.off[a], self.off[b], self.size[a], -v)
            else:
                S[self.sidx[a], self.sidx[b]] -= v
        keep = self._keep(with_vectors)
        idx = np.concatenate([np.arange(self.off[k], self.off[k] + self.size[k]) for k in keep]) if keep else \
            np.zeros(0, dtype=int)
        Gm = np.linalg.inv(M[np.ix_(idx, idx)]) if len(idx) else np.zeros((0, 0))
        Gs = np.linalg.inv(S) if len(self.sca) else S
        return Gm, Gs, self.layout(with_vectors)[0]

    def block(self, G, k, l):
        Gm, Gs, where = G
        if k in self.sidx:
            return Gs[self.sidx[k], self.sidx[l]]
        return Gm[where[k]:where[k] + self.size[k], where[l]:where[l] + self.size[l]]

    def tau(self, G, k, l):
        if k in self.sidx:
            return self.block(G, k, l)
        return float(np.trace(self.block(G, k, l))) / self.size[k]

    def residual64(self, h, t, base):
        G = self.solve64(h, t, base)
        T = np.array([self.tau(G, m, m2) for m, m2 in self.unknowns])
        return h - T, G

    def jacobian64(self, G, t):
        """``dF/dH`` at the inverse ``G``: ``J = I - t eta'``, with ``dtau(G_mn)/dH = tau(G_ma G_bn)``; the
        traces of products of materialized blocks are the entries of one matrix product per block shape
        (``tr(X Y) = vec(X) . vec(Y^T)``)."""
        n = len(self.unknowns)
        J = np.eye(n)
        scalar, groups = self._jacobian_plan()
        if scalar is not None:
            rows, cols, w, im, ia, ib, in2 = scalar
            Gs = np.asarray(G[1], dtype=np.float64)
            np.add.at(J, (rows, cols), -t * w * Gs[im, ia] * Gs[ib, in2])
        for lefts, rights, rows, cols, w, li, ri in groups:
            D = np.empty((len(lefts), len(rights)))
            R = np.stack([self.block(G, b, m2).T.ravel() for (b, m2) in rights])
            for at in range(0, len(lefts), 16):  # at most 16 blocks held at once
                L = np.stack([self.block(G, m, a).ravel() for (m, a) in lefts[at:at + 16]])
                D[at:at + len(L)] = L @ R.T
            np.add.at(J, (rows, cols), -t * w * D[li, ri])
        return J

    def _jacobian_plan(self):
        """The index structure of :meth:`jacobian64` (it does not depend on ``G``), built once."""
        if getattr(self, "_plan", None) is None:
            scalar, left, right, items = [], {}, {}, {}
            for r, (m, m2) in enumerate(self.unknowns):
                for (a, b, _w, p, p2), w in zip(self.eta, self.eta64):
                    if (m in self.sidx) != (a in self.sidx):
                        continue
                    col = self.pos[(p, p2)]
                    if m in self.sidx:
                        scalar.append((r, col, w, self.sidx[m], self.sidx[a], self.sidx[b], self.sidx[m2]))
                        continue
                    shape = (self.size[m], self.size[a])
                    li = left.setdefault(shape, {}).setdefault((m, a), len(left[shape]))
                    ri = right.setdefault(shape, {}).setdefault((b, m2), len(right[shape]))
                    items.setdefault(shape, []).append((r, col, w / self.size[m], li, ri))
            groups = []
            for shape, its in items.items():
                arr = np.array(its)
                groups.append((list(left[shape]), list(right[shape]), arr[:, 0].astype(int), arr[:, 1].astype(int),
                               arr[:, 2], arr[:, 3].astype(int), arr[:, 4].astype(int)))
            if scalar:
                arr = np.array(scalar)
                scalar = tuple(arr[:, k].astype(int) if k != 2 else arr[:, k] for k in range(7))
            self._plan = (scalar or None, groups)
        return self._plan


def _add_diagonal(M, o1, o2, N, v):
    """``M[o1:o1+N, o2:o2+N] += v I`` in place."""
    idx = np.arange(N)
    M[o1 + idx, o2 + idx] += v


def _newton64(part, h, t, base, tol=1e-13, maxit=40):
    for _ in range(maxit):
        F, G = part.residual64(h, t, base)
        J = part.jacobian64(G, t)
        step = np.linalg.solve(J, F)
        h = h - step
        if np.max(np.abs(step)) <= tol * max(1.0, np.max(np.abs(h))):
            return h, J
        if not np.all(np.isfinite(h)):
            break
    raise ConvergenceError("the deterministic-equivalent fixed point did not converge in float64")


def _solve64(part, base):
    """The fixed point at strength 1 by a homotopy from the random part off.

    Steps of at most 1/4 with a trust region (a step may move ``H`` by at most a third of its size);
    the sign of ``det J`` is followed: a change means the real path went through a singular point (an
    edge of a spectrum: a resolvent asked inside its spectrum has no real fixed point), a
    :class:`~symrmt.errors.BranchError`."""
    if not part.unknowns:
        return np.zeros(0), np.zeros((0, 0))
    h = np.zeros(len(part.unknowns))
    try:
        G = part.solve64(h, 0.0, base)
    except np.linalg.LinAlgError:
        raise ConvergenceError("the deterministic part of the pencil is singular (an inverse of a matrix that is "
                               "singular without its random part, e.g. at gamma = 0): not solved with given "
                               "matrices") from None
    h = np.array([part.tau(G, m, m2) for m, m2 in part.unknowns])
    t, dt = 0.0, 0.25
    J, sign, slope = None, None, np.zeros_like(h)
    while t < 1:
        t1 = min(1.0, t + dt)
        try:
            with np.errstate(all="raise"):  # the secant predictor, then Newton (loosely between the ends)
                h1, J1 = _newton64(part, h + slope * (t1 - t), t1, base, tol=1e-13 if t1 == 1 else 1e-6)
            if np.max(np.abs(h1 - h)) > max(1.0, np.max(np.abs(h))) / 3:
                raise ConvergenceError("trust region")
        except (ConvergenceError, np.linalg.LinAlgError, FloatingPointError):
            dt /= 4
            if dt < 1e-6:
                raise ConvergenceError("the homotopy of the deterministic equivalent stalled at strength "
                                       f"{t:.6g} (a resolvent inside its spectrum, or a singular matrix)") from None
            continue
        s1 = np.sign(np.linalg.det(J1))
        if sign is not None and s1 != sign:
            raise BranchError(f"the real fixed point meets a singular point between strengths {t:.4g} and {t1:.4g}: "
                              "the point is inside a spectrum (no real deterministic equivalent there)")
        sign = s1
        slope = (h1 - h) / (t1 - t)
        h, t, J = h1, t1, J1
        dt = min(2 * dt, 0.25)
    return h, J


def _solve_hp(part, h64, J, coef_hp, prec, digits, extra, watch):
    """Newton refinement with residuals in python-flint ``arb_mat`` at ``prec`` bits; returns
    ``(h, G-reader, residual)``.

    Each residual needs ``G = M^{-1}`` at ``prec`` bits: the float64 inverse ``X`` is refined by
    ``X <- X + X R``, ``R = I - M X`` (``R`` is squared at each step), until the correction of every
    watched block trace (``watch``: the unknowns' and the value's blocks) is below ``10^-(digits+extra)``
    after one more step (its square); the Newton step on ``H`` stops below the same size."""
    # optional dependency (flint)
    import flint

    flint.ctx.prec = prec
    tol = 10.0 ** (-(digits + extra))
    bases = {False: part.base(False), True: part.base(True)}
    Jinv = np.linalg.inv(J) if len(h64) else np.zeros((0, 0))
    h = [flint.arb(x) if isinstance(x, flint.arb) else flint.arb(repr(float(x))) for x in h64]
    det = [(i, j, kind, data, coef_hp(c)) for i, j, kind, data, c in part.det]
    eta = [(a, b, coef_hp(w), m, m2) for a, b, w, m, m2 in part.eta]

    def inverse(h, with_vectors):
        where, K = part.layout(with_vectors)
        rows = [[0] * K for _ in range(K)]
        Sm = [[flint.arb(0)] * len(part.sca) for _ in part.sca]
        Sm = [list(r) for r in Sm]
        for i, j, kind, data, c in det:
            if kind == "I":
                if i in part.sidx:
                    Sm[part.sidx[i]][part.sidx[j]] += c
                    continue
                if i not in where:
                    continue
                o1, o2 = where[i], where[j]
                for r in range(part.size[i]):
                    rows[o1 + r][o2 + r] = rows[o1 + r][o2 + r] + c
            else:
                if i not in where or j not in where:
                    continue
                o1, o2 = where[i], where[j]
                for r in range(data.shape[0]):
                    row = rows[o1 + r]
                    for q, x in enumerate(data[r].tolist()):
                        if x != 0.0:
                            row[o2 + q] = row[o2 + q] + c * flint.arb(x)
        for a, b, w, m, m2 in eta:
            v = w * h[part.pos[(m, m2)]]
            if a in part.sidx:
                Sm[part.sidx[a]][part.sidx[b]] -= v
                continue
            o1, o2 = where[a], where[b]
            for r in range(part.size[a]):
                rows[o1 + r][o2 + r] = rows[o1 + r][o2 + r] - v
        Gs = flint.arb_mat(Sm).solve(flint.arb_mat(_eye(len(part.sca))), algorithm="approx") if part.sca else None
        if not K:
            return None, Gs, where
        # midpoints only: flint may multiply balls with wide radii at a lower working precision
        Ma = flint.arb_mat(rows).mid()
        hf = np.array([float(x.mid()) for x in h])
        X = flint.arb_mat(part.solve64(hf, 1.0, bases[with_vectors], with_vectors)[0].tolist())
        E = flint.arb_mat(_eye(K))
        for _ in range(8):
            D = (X * (E - Ma * X)).mid()
            X = (X + D).mid()
            delta = 0.0
            for k, l in watch:
                if k in part.sidx or k not in where or l not in where:
                    continue
                o1, o2 = where[k], where[l]
                if part.size[k] == 1 and part.size[l] == 1:
                    d, x = abs(float(D[o1, o2].mid())), abs(float(X[o1, o2].mid()))
                else:  # the largest correction of an entry on the block's diagonal (not their mean)
                    d = max(abs(float(D[o1 + r, o2 + r].mid())) for r in range(part.size[k]))
                    x = max(abs(float(X[o1 + r, o2 + r].mid())) for r in range(part.size[k]))
                delta = max(delta, d / max(x, 1.0))
            if delta * delta * K <= tol * 1e-2:
                break
        else:
            raise ConvergenceError(f"the refinement of the deterministic-equivalent inverse did not converge at "
                                   f"{prec} bits (last correction {delta:.3g})")
        return X, Gs, where

    def tau(G, k, l):
        Gm, Gs, where = G
        if k in part.sidx:
            return Gs[part.sidx[k], part.sidx[l]]
        o1, o2 = where[k], where[l]
        s = flint.arb(0)
        for r in range(part.size[k]):
            s += Gm[o1 + r, o2 + r]
        return s / part.size[k]

    resid = 0.0
    G = None
    for _ in range(12):
        if not part.unknowns:
            break
        G = inverse(h, False)
        F = [h[i] - tau(G, m, m2) for i, (m, m2) in enumerate(part.unknowns)]
        step = [sum((Jinv[i, j] * F[j] for j in range(len(F))), flint.arb(0)) for i in range(len(F))]
        h = [x - s for x, s in zip(h, step)]
        resid = max(abs(float(f.mid())) for f in F)
        size = max(abs(float(s.mid())) for s in step)
        scale = max(1.0, max(abs(float(x.mid())) for x in h))
        if size <= scale * tol or size <= 2.0 ** (-prec + 8) * scale:
            break
    else:
        raise ConvergenceError(f"the deterministic-equivalent refinement did not converge at {prec} bits "
                               f"(residual {resid:.3g})")
    if G is None or part.unit:  # the last inverse (at the previous H, within tol of this one) serves unless
        G = inverse(h, True)    # the vectors' blocks are needed
    return h, (lambda k, l, unit=False: _mpf(G[0][G[2][k], G[2][l]] if unit else tau(G, k, l), mpmath)), resid


#: at most this many digits are certified by the double-double path (above: python-flint at two precisions)
DD_DIGITS = 28


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _dd_add(x, y):
    """Double-double sum of ``x = (hi, lo)`` and ``y = (hi, lo)`` (arrays)."""
    s, e = _two_sum(x[0], y[0])
    e = e + x[1] + y[1]
    hi = s + e
    return hi, e - (hi - s)


def _dekker(a):
    c = 134217729.0 * a
    hi = c - (c - a)
    return hi, a - hi


def _dd_scale(c, x):
    """Double-double product of the double-double scalar ``c`` and the double-double array ``x``."""
    p = c[0] * x[0]
    ah, al = _dekker(np.asarray(c[0], dtype=np.float64))
    bh, bl = _dekker(x[0])
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    e = e + c[0] * x[1] + c[1] * x[0]
    hi = p + e
    return hi, e - (hi - p)


def _sum_dd(x):
    """The sum of the float64 array ``x`` as an mpmath number, to about ``(log2 N eps)^2 sum|x|``: a pairwise
    tree of error-free two-sums (Knuth), whose rounding errors are summed in float64 at the end."""
    x = np.asarray(x, dtype=np.float64).ravel()
    errs = []
    while len(x) > 1:
        if len(x) % 2:
            x = np.append(x, 0.0)
        a, b = x[0::2], x[1::2]
        s = a + b
        bb = s - a
        errs.append(float(np.sum((a - (s - bb)) + (b - bb))))
        x = s
    hi = float(x[0]) if len(x) else 0.0
    return mpmath.mpf(hi) + mpmath.mpf(math.fsum(errs))


def _slices(M, axis, w, count):
    """``M`` as a sum of ``count`` slices, each of at most ``w`` bits on the grid of its row (``axis=1``) or
    column (``axis=0``) scale (every subtraction exact)."""
    amax = np.max(np.abs(M), axis=axis, keepdims=True)
    amax[amax == 0] = 1.0
    unit = np.exp2(np.ceil(np.log2(amax)))
    out, R = [], M.copy()
    for _ in range(count):
        unit = unit * 2.0 ** -w
        S = np.round(R / unit) * unit
        out.append(S)
        R = R - S
    return out


def _exact_dot(A, B):
    """``A @ B`` as a double-double ``(hi, lo)`` to about ``2^-110`` of the row and column scales: the
    slices' products are exact in float64 (Ozaki, Ogita and Oishi 2012), summed error-free."""
    K = A.shape[1]
    w = (53 - int(np.ceil(np.log2(max(K, 2))))) // 2
    count = -(-112 // w)
    As, Bs = _slices(A, 1, w, count), _slices(B, 0, w, count)
    acc = (np.zeros((A.shape[0], B.shape[1])), np.zeros((A.shape[0], B.shape[1])))
    for a in range(count):
        for b in range(count - a):
            acc = _dd_add(acc, (As[a] @ Bs[b], 0.0))
    return acc


def _solve_dd(part, h_start, J, coef_mp, digits, variant):
    """As :func:`_solve_hp`, with each residual from a double-double evaluation of ``R = I - M X`` (``X`` the
    float64 inverse; ``variant`` 1 refines ``X`` once in float64 first, so that the two evaluations round
    differently) and ``G = X (I + R + R^2)``; refuses (``ConvergenceError``) when ``R`` is too large for
    that series to reach the digits."""

    Jinv = np.linalg.inv(J) if len(part.unknowns) else np.zeros((0, 0))
    h = [mpmath.mpf(x) for x in h_start]
    det = [(i, j, kind, data, coef_mp(c)) for i, j, kind, data, c in part.det]
    eta = [(a, b, coef_mp(w), m, m2) for a, b, w, m, m2 in part.eta]
    bases = {False: part.base(False), True: part.base(True)}

    def dd(x):
        hi = float(x)
        return (hi, float(x - hi))

    def inverse(h, with_vectors):
        keep = part._keep(with_vectors)
        where, K = part.layout(with_vectors)
        Sm = mpmath.zeros(len(part.sca), len(part.sca))
        for i, j, kind, _data, c in det:
            if kind == "I" and i in part.sidx:
                Sm[part.sidx[i], part.sidx[j]] += c
        for a, b, w, m, m2 in eta:
            if a in part.sidx:
                Sm[part.sidx[a], part.sidx[b]] -= w * h[part.pos[(m, m2)]]
        Gs = Sm ** -1 if part.sca else None
        if not K:
            return None, Gs, where
        hf = np.array([float(x) for x in h])
        X = part.solve64(hf, 1.0, bases[with_vectors], with_vectors)[0]
        if variant:  # one float64 Newton-Schulz step: another approximate inverse, rounded differently
            M64 = part.matrix64(hf, bases[with_vectors], with_vectors)
            X = X + X @ (np.eye(K) - M64 @ X)
        rows = {k: slice(where[k], where[k] + part.size[k]) for k in keep}
        acc = {k: (np.zeros((part.size[k], K)), np.zeros((part.size[k], K))) for k in keep}
        for k in keep:
            acc[k] = _dd_add(acc[k], (-X[rows[k]] * 0.0 + np.eye(K)[rows[k]], 0.0))
        for i, j, kind, data, c in det:
            if i not in where or j not in where:
                continue
            if kind == "I":
                prod = (X[rows[j]], np.zeros_like(X[rows[j]]))
            else:
                prod = _exact_dot(np.asarray(data, dtype=np.float64), X[rows[j]])
            t = _dd_scale(dd(-c), prod)
            acc[i] = _dd_add(acc[i], t)
        for a, b, w, m, m2 in eta:
            if a not in where:
                continue
            t = _dd_scale(dd(w * h[part.pos[(m, m2)]]), (X[rows[b]], np.zeros_like(X[rows[b]])))
            acc[a] = _dd_add(acc[a], t)
        Rh = np.vstack([acc[k][0] for k in keep])
        Rl = np.vstack([acc[k][1] for k in keep])
        r = float(np.max(np.sum(np.abs(Rh), axis=1)))  # ||R||_inf bounds the terms left out
        if not r < 1e-6:
            raise ConvergenceError(f"the float64 inverse is too far from the inverse (residual {r:.3g}) for the "
                                   "double-double refinement")
        R = (Rh, Rl)
        RR = Rh @ Rh if r ** 2 > 10.0 ** (-(digits + 8)) else None
        if r ** 3 > 10.0 ** (-(digits + 8)):
            raise ConvergenceError(f"the float64 inverse is too far from the inverse (residual {r:.3g}) for "
                                   f"{digits} digits on the double-double path")
        return (X, R, RR, rows), Gs, where

    def read_entry(G, k, l, unit):
        Gm, Gs, where = G
        if k in part.sidx:
            return Gs[part.sidx[k], part.sidx[l]]
        X, R, RR, rows = Gm
        rk, rl = rows[k], rows[l]
        n = 1 if unit else part.size[k]
        base = _sum_dd(np.diagonal(X[rk, rl]))
        # tr(X_k. R_.l): every product split exactly (Dekker), the terms summed by a two-sum tree
        A, B, Bl = X[rk], R[0][:, rl].T, R[1][:, rl].T
        prod = A * B
        ah, al = _dekker(A)
        bh, bl = _dekker(B)
        err = ((ah * bh - prod) + ah * bl + al * bh) + al * bl
        d = _sum_dd(np.concatenate([prod.ravel(), err.ravel(), (A * Bl).ravel()]))
        if RR is not None:
            d += mpmath.mpf(float(np.sum(X[rk] * RR[:, rl].T)))
        return (base + d) / n

    tol = mpmath.mpf(10) ** (-(digits + 6))
    G, resid = None, 0.0
    for _ in range(12):
        if not part.unknowns:
            break
        G = inverse(h, False)
        F = [h[i] - read_entry(G, m, m2, False) for i, (m, m2) in enumerate(part.unknowns)]
        # the step in float64: Jinv is a float64 inverse Jacobian, so each step is exact only to its relative
        # error (about 1e-13) anyway; the next residual, in double-double, corrects both
        step = [mpmath.mpf(x) for x in Jinv @ np.array([float(f) for f in F])]
        h = [x - st for x, st in zip(h, step)]
        resid = max(abs(float(f)) for f in F)
        scale = max(1, max(abs(x) for x in h))
        if max(abs(st) for st in step) <= scale * max(tol, mpmath.mpf(10) ** -31):  # -31: the double-double floor
            break
    else:
        raise ConvergenceError(f"the double-double refinement of the deterministic equivalent did not converge "
                               f"(residual {resid:.3g})")
    if G is None or part.unit:
        G = inverse(h, True)
    return h, (lambda k, l, unit=False: read_entry(G, k, l, unit)), resid


def _mpf(x, mpmath):
    return mpmath.mpf(x.mid().str(radius=False, more=True) if hasattr(x, "mid") else x)


def _eye(K):
    rows = [[0] * K for _ in range(K)]
    for i in range(K):
        rows[i][i] = 1
    return rows


def given_limit(model, expr, at, digits: int = 15):
    """The deterministic equivalent of a scalar expression with given matrices or vectors at the
    parameter values ``at`` (a :class:`~symrmt.engine.solve.certify.TraceLimit`; see the module docstring).

    Raises :class:`ModelError` for an expression outside what this path solves (a random vector, a
    vector whose inner products are parameters, a diagonal law, a complex value), sizes that
    disagree with the dimension ratios, and :class:`~symrmt.errors.SolverError` subclasses when the
    fixed point does not converge or the two precisions disagree.
    """
    digits = check_digits(digits)
    expr = model.expr(expr)
    for x in walk(expr):
        if isinstance(x, Vector) and not isinstance(x, GivenVector):
            raise ModelError(f"vector {x.name}: with a given matrix, vectors are given by their entries "
                             "(vector_file(dim, FILE.npy)); random vectors and inner-product parameters are not "
                             "supported on this path yet")
    values = {}
    for k, v in (at or {}).items():
        if isinstance(v, complex) or hasattr(v, "im") or (isinstance(v, str) and v.strip().endswith("j")):
            raise ModelError("a complex parameter value is not supported with given matrices yet")
        values[str(k)] = exact_value(v, str(k))
    expr = remove_diffs(expr)
    hat = normalized(expr, "each Gaussian counts as sqrt(n): write Z.T*Z/n, G/sqrt(n)")
    leaves, syms = [], {}

    def leaf(s):
        if isinstance(s, (Trace, QuadForm)):
            if s not in syms:
                syms[s] = sp.Symbol(f"T{len(leaves)}", real=True)
                leaves.append(s)
            return syms[s]
        return None

    formula = scalar_formula(hat, leaf)
    params = sorted(formula.free_symbols - set(syms.values()), key=lambda s: s.name)
    objects = {x.name: x for x in walk(hat) if getattr(x, "constant_leaf", False)}
    pencils = [lin.linearize(s.matrix) for s in leaves]
    for p in pencils:
        for d, _a in p.blocks:
            if d != "1" and d in model.dims:
                for s in model.dims[d].ratio.free_symbols:
                    params.append(s)
    missing = sorted({s.name for s in params if s.name not in values})
    if missing:
        raise ModelError(f"no value given for {', '.join(missing)} (pass them in at=...)")
    unknown = sorted(k for k in values if k not in model.symbols or k == "n")
    if unknown:
        raise ModelError(f"unknown parameter {', '.join(unknown)} in at=")
    subs = {model.symbols[k]: sp.Rational(v.numerator, v.denominator) for k, v in values.items()}
    subs[lin.EPS_SHIFT] = 0
    model.check_ratios(values)

    # sizes: every dimension carrying a given object, and n from them
    sizes = {}
    for o in objects.values():
        dims = (o.rows, o.cols) if isinstance(o, GivenMatrix) else (o.dim,)
        for d, s in zip(dims, o.data.shape if isinstance(o, GivenMatrix) else o.data.shape):
            sizes[d.name] = (s, o.name)
    n_eff = None
    for d, (s, who) in sizes.items():
        r = sp.nsimplify(model.dims[d].ratio.xreplace(subs))
        nd = sp.Rational(s) / r
        if n_eff is None:
            n_eff = (nd, d, who, s, r)
        elif nd != n_eff[0]:
            raise ModelError(f"the sizes disagree with the dimension ratios: {who} gives {d} = {s} "
                             f"(n = {d}/({r}) = {nd}), but {n_eff[2]} gives {n_eff[1]} = {n_eff[3]} "
                             f"(n = {n_eff[0]})")
    size_of = {d: s for d, (s, _w) in sizes.items()}

    ratios = {}

    def ratio(d):
        if d not in ratios:
            ratios[d] = sp.nsimplify(model.dims[d].ratio.xreplace(subs))
        return ratios[d]

    def coef(c):
        return sp.sympify(c).xreplace(subs)

    parts = [_Part(p, objects, size_of, ratio, coef) for p in pencils]
    sols64 = []
    for part in parts:
        base = part.base(False)
        sols64.append(_solve64(part, base))

    p1 = int(3.33 * digits) + 24
    p2 = p1 + 48

    starts = [h for h, _J in sols64]

    def evaluate(prec):
        """``prec``: bits of a flint evaluation, or ``"dd0"``/``"dd1"`` for the double-double ones."""
        dps = int(prec / 3.33) if isinstance(prec, int) else 40
        if isinstance(prec, int):
            # optional dependency (flint)
            import flint

            flint.ctx.prec = prec

        def coef_hp(c):
            return flint.arb(sp.N(c, dps + 10).__str__()) if not c.is_Integer else flint.arb(int(c))

        def coef_mp(c):
            return mpmath.mpf(sp.N(c, dps + 10).__str__())

        vals, res = [], 0.0
        for q, (s, part, (_h64, J)) in enumerate(zip(leaves, parts, sols64)):
            watch = list(part.unknowns) + [(i, j) for i in part.pencil.u for j in part.pencil.v]
            if isinstance(prec, str):
                h, read, r = _solve_dd(part, starts[q], J, coef_mp, digits, prec == "dd1")
            else:
                h, read, r = _solve_hp(part, starts[q], J, coef_hp, prec, digits, 6 if prec == p1 else 18, watch)
            starts[q] = h  # the second precision starts where the first ended
            res = max(res, r)
            p = part.pencil
            total = mpmath.mpf(0)
            unit = isinstance(s, QuadForm)
            for i, cu in p.u.items():
                for j, cv in p.v.items():
                    c = coef(cu * cv)
                    if c == 0:
                        continue
                    total += mpmath.mpf(sp.N(c, dps + 10).__str__()) * read(i, j, unit)
            vals.append(total)
        f = sp.lambdify(list(syms.values()), formula.xreplace(subs), "mpmath")
        return mpmath.mpf(f(*vals)), vals, res

    done = False
    if digits <= DD_DIGITS:  # two double-double evaluations that round differently
        try:
            with mpmath.workdps(45):
                v1, _t1, _r1 = evaluate("dd0")
                v2, t2, r2 = evaluate("dd1")
            p1, p2, done = "dd0", "dd1", True
        except ConvergenceError:  # the float64 inverse too poor for the series: python-flint below
            starts = [h for h, _J in sols64]
    with mpmath.workdps(int(p2 / 3.3) + 10 if isinstance(p2, int) else 45):
        if not done:
            v1, _t1, _r1 = evaluate(p1)
            v2, t2, r2 = evaluate(p2)
        gap = abs(v1 - v2)
        scale = abs(v2)
        if gap > scale * mpmath.mpf(10) ** (-digits - 2) and gap > mpmath.mpf(10) ** (-digits - 30):
            raise PrecisionError(f"the deterministic equivalent is not certified to {digits} digits: the solves "
                                 f"{p1} and {p2} differ by {mpmath.nstr(gap, 3)}")
    certificate = "relative" if scale > mpmath.mpf(10) ** (-digits - 20) else "absolute"
    with mpmath.workdps(digits + 5):
        value = +v2
        traces = [+t for t in t2]
    out = TraceLimit(value, digits, int(p2 / 3.32) if isinstance(p2, int) else 32, r2, dict(values), traces)
    out.certificate = certificate
    out.deterministic_equivalent = {"n": n_eff[0] if n_eff else None, "sizes": dict(size_of)}
    return out
