"""The python-flint refinement of a deterministic equivalent with given matrices (above 32 digits).

The float64 fixed point of :mod:`symrmt.engine.solve.given` is refined by Newton steps whose residuals need
the traces of ``G = M^{-1}`` at ``prec`` bits: python-flint ``arb_mat`` midpoints, the float64 inverse refined
by ``X <- X + X (I - M X)``, on the Woodbury reduction's inner matrix where it applies
(``docs/engine.md``, section on given matrices).  A refinement that stalls says how many bits it lacks
(:func:`~symrmt.engine.solve.given_blocks.short_of_bits`).
"""

from __future__ import annotations

import mpmath
import numpy as np

from symrmt.engine.solve.given_blocks import flint_two_blocks, inner_blocks, short_of_bits
from symrmt.engine.solve.given_dd import woodbury_reader
from symrmt.errors import ConvergenceError

__all__ = ["solve_flint", "DENSE_AMPLIFICATION"]

#: the dense refinement has no amplification estimate of its own: a stall there asks for this factor's bits
#: (``log2`` of it plus the margin of :func:`~symrmt.engine.solve.given_blocks.short_of_bits`: 32 bits a try)
DENSE_AMPLIFICATION = 2.0 ** 24


def _mpf(x, mpmath):
    return mpmath.mpf(x.mid().str(radius=False, more=True) if hasattr(x, "mid") else x)


def _eye(K):
    rows = [[0] * K for _ in range(K)]
    for i in range(K):
        rows[i][i] = 1
    return rows


def _woodbury_hp(part, plan, h, det, eta, prec, tol):
    """The traces ``tr(G_kl)/N`` of the inverse of the materialized matrix at ``prec`` bits through the
    Woodbury reduction ``plan`` (:meth:`_Part.woodbury_plan`; python-flint midpoints): ``A`` and its inverse
    (``k x k``), ``N = I + (A^{-1}[C, R] (x) I) B`` (``|C| N`` square), its float64 inverse refined by
    ``X <- X + X (I - N X)`` until the correction of the traces of ``Y = B X`` (mapped through ``A^{-1}``) is
    below ``tol`` after one more step, then ``tr(G_kl)/N = A^{-1}_kl - sum_rc A^{-1}_kr A^{-1}_cl tr(Y_rc)/N``.
    Returns a function ``(k, l) -> arb`` (``k``, ``l`` block indices), or ``None`` when ``A`` is
    ill-conditioned (``cond > 1e8``) or ``N`` singular in float64 (then the dense refinement)."""
    import flint

    N, pos, rows, cols, nz = plan
    nk, nr, nc = len(pos), len(rows), len(cols)
    A = [[flint.arb(0) for _ in range(nk)] for _ in range(nk)]
    groups = {}        # coefficient text -> (coefficient, float64 placement of its given matrices in B)
    for i, j, kind, data, c in det:
        if i not in pos or j not in pos:
            continue
        if kind == "I":
            A[pos[i]][pos[j]] += c
        else:
            key = c.mid().str(radius=False, more=True)
            if key not in groups:
                groups[key] = (c, np.zeros((nr * N, nc * N)))
            r, cc = rows.index(pos[i]), cols.index(pos[j])
            groups[key][1][r * N:(r + 1) * N, cc * N:(cc + 1) * N] += np.asarray(data, dtype=np.float64)
    for a, b, w, m, m2 in eta:
        if a in pos:
            A[pos[a]][pos[b]] -= w * h[part.pos[(m, m2)]]
    A64 = np.array([[float(x.mid()) for x in row] for row in A])
    try:
        if not np.linalg.cond(A64) < 1e8:
            return None
    except np.linalg.LinAlgError:
        return None
    Ainv = flint.arb_mat(A).solve(flint.arb_mat(_eye(nk)), algorithm="approx").mid()
    a64 = np.abs(np.array([[float(Ainv[i, j].mid()) for j in range(nk)] for i in range(nk)]))
    wscale = float(np.max(a64[:, rows].sum(axis=1)) * np.max(a64[cols, :].sum(axis=0)))
    comps = inner_blocks(np.array([[0.0 if Ainv[cols[a], rows[b]] == 0 else 1.0 for b in range(nr)]
                                   for a in range(nc)]), nz)
    if len(comps) == 2:
        terms = [(rows.index(pos[i]), cols.index(pos[j]), data, c) for i, j, kind, data, c in det
                 if kind != "I" and i in pos and j in pos]
        T = flint_two_blocks(N, rows, cols, comps, Ainv, terms, wscale, prec, tol)
        if T is None:
            return None
        return woodbury_reader(Ainv, pos, rows, cols, T)
    B, B64 = None, np.zeros((nr * N, nc * N))
    for c, placed in groups.values():
        Bc = flint.arb_mat(placed.tolist()) * c
        B = Bc if B is None else B + Bc
        B64 += float(c.mid()) * placed
    SI = flint.arb_mat(nc * N, nr * N)
    S64 = np.zeros((nc, nr))
    for a in range(nc):
        for b in range(nr):
            s = Ainv[cols[a], rows[b]]
            S64[a, b] = float(s.mid())
            if S64[a, b] != 0.0 or s != 0:
                for q in range(N):
                    SI[a * N + q, b * N + q] = s
    Nm = (flint.arb_mat(_eye(nc * N)) + SI * B).mid()
    N64 = np.eye(nc * N) + np.kron(S64, np.eye(N)) @ B64
    try:
        X = flint.arb_mat(np.linalg.inv(N64).tolist())
    except np.linalg.LinAlgError:
        return None
    # wscale: how a change of tr(Y_rc)/N moves a trace of G, at most
    E = flint.arb_mat(_eye(nc * N))

    def traces(Y):
        return [[sum((Y[r * N + q, c * N + q] for q in range(N)), flint.arb(0)) / N for c in range(nc)]
                for r in range(nr)]

    T = traces((B * X).mid())
    for _ in range(8):
        D = (X * (E - Nm * X)).mid()
        X = (X + D).mid()
        dT = traces((B * D).mid())
        T = [[T[r][c] + dT[r][c] for c in range(nc)] for r in range(nr)]
        delta = wscale * max(abs(float(x.mid())) for row in dT for x in row)
        if delta * delta * nc * N <= tol * 1e-2:
            break
    else:
        raise short_of_bits(f"the refinement of the deterministic-equivalent inverse (Woodbury form) did not "
                            f"converge at {prec} bits (last correction {delta:.3g})", wscale)

    return woodbury_reader(Ainv, pos, rows, cols, T)


def solve_flint(part, h64, J, coef_hp, prec, digits, extra, watch):
    """Newton refinement with residuals in python-flint ``arb_mat`` at ``prec`` bits; returns
    ``(h, G-reader, residual)``.

    Each residual needs ``G = M^{-1}`` at ``prec`` bits: the float64 inverse ``X`` is refined by
    ``X <- X + X R``, ``R = I - M X`` (``R`` is squared at each step), until the correction of every
    watched block trace (``watch``: the unknowns' and the value's blocks) is below ``10^-(digits+extra)``
    after one more step (its square); the Newton step on ``H`` stops below the same size.  ``part``,
    ``h64``, ``J`` and ``coef_hp`` are the float64 solve's (:func:`symrmt.engine.solve.given.given_limit`
    calls it above 32 digits).  Raises :class:`~symrmt.errors.ConvergenceError` (with the bits it lacks,
    :func:`~symrmt.engine.solve.given_blocks.short_of_bits`) when a refinement stalls.  It sets python-flint's
    global precision ``flint.ctx.prec`` to ``prec`` and leaves it there (the example restores it).

    Examples
    --------
    >>> import flint
    >>> import numpy as np
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.given import given_limit
    >>> prec = flint.ctx.prec
    >>> m = Model()
    >>> m.dim("p", "c*n")
    Dim('p', c)
    >>> _ = m.gaussian("Z", "p", "n")
    >>> _ = m.matrix("S", "p", "p", np.eye(2))   # 40 digits: python-flint at two precisions
    >>> print(given_limit(m, "trace(inv(S*Z*Z.T*S.T/n + gamma*I(p)))", {"c": 1, "gamma": 1}, digits=40))
    0.6180339887498948482045868343656381177203
    >>> flint.ctx.prec = prec
    """
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
        plan = part.woodbury_plan(part._keep(with_vectors)) if not part.unit else None
        if plan is not None:
            Sm = [[flint.arb(0)] * len(part.sca) for _ in part.sca]
            Sm = [list(r) for r in Sm]
            for i, j, kind, _data, c in det:
                if kind == "I" and i in part.sidx:
                    Sm[part.sidx[i]][part.sidx[j]] += c
            for a, b, w, m, m2 in eta:
                if a in part.sidx:
                    Sm[part.sidx[a]][part.sidx[b]] -= w * h[part.pos[(m, m2)]]
            Gs = flint.arb_mat(Sm).solve(flint.arb_mat(_eye(len(part.sca))), algorithm="approx") if part.sca \
                else None
            read = _woodbury_hp(part, plan, h, det, eta, prec, tol)
            if read is not None:
                return read, Gs, where
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
        if with_vectors:
            for u1, u2, v in part.schur(Gs, coef_hp):
                rows[where[u1]][where[u2]] = rows[where[u1]][where[u2]] + v
        if not K:
            return None, Gs, where
        # midpoints only: flint may multiply balls with wide radii at a lower working precision
        Ma = flint.arb_mat(rows).mid()
        hf = np.array([float(x.mid()) for x in h])
        X = flint.arb_mat(part.solve64(hf, 1.0, bases[with_vectors], with_vectors, dense=True)[0].tolist())
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
            raise short_of_bits(f"the refinement of the deterministic-equivalent inverse did not converge at "
                                f"{prec} bits (last correction {delta:.3g})", DENSE_AMPLIFICATION)
        return X, Gs, where

    def tau(G, k, l):
        Gm, Gs, where = G
        if k in part.sidx:
            return Gs[part.sidx[k], part.sidx[l]]
        if callable(Gm):  # the Woodbury form: the traces only
            return Gm(k, l)
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
        for i in part.zero:
            h[i] = flint.arb(0)
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
