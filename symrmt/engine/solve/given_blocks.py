r"""The block-triangular structure of the Woodbury inner matrix of a pencil with given matrices, and the
float64 traces read through it.

With the scalar blocks eliminated (:meth:`symrmt.engine.solve.given._Part.woodbury_plan`), the materialized
matrix is ``A (x) I_N + P_R B P_C^T`` and its inverse needs ``Y = B K^{-1}``, ``K = I + (S (x) I) B``,
``S = A^{-1}[C, R]``.  Where entries of ``S`` are exactly zero (as for a derivative pencil, whose matrix is
block upper triangular: its blocks below the diagonal stay zero at every step), ordering the block columns
``C`` by the strongly connected components of the pattern of ``K`` makes it block upper triangular,
``K_ij = 0`` for ``i > j``; then (back substitution, ``X_i = K_ii^{-1}``)

    K^{-1}_ij = -X_i sum_{i<k<=j} K_ik K^{-1}_kj,        K_ik = (S[C_i, R] (x) I) B[R, C_k]  (i != k),

so with ``D_i = B[R, C_i] X_i`` the block column ``j`` of ``Y`` is ``sum_{i<=j} Z_i``, ``Z_j = D_j`` and
``Z_i = -D_i (S[C_i, R] (x) I) sum_{i<k<=j} Z_k``: one dense inverse per diagonal block and one product per
pair of blocks, instead of one dense inverse of ``K``.  Two diagonal blocks that differ by less than the
backward error of a float64 inverse (the two copies of a derivative pencil, equal up to rounding) share one.
"""

from __future__ import annotations

import numpy as np

__all__ = ["inner_blocks", "WoodburyTraces", "inner_inverse_product", "same_matrix"]


def same_matrix(data):
    """A key equal for two arrays that view the same entries the same way (two ``W.T`` views of ``W``).

    >>> W = np.eye(2); same_matrix(W.T) == same_matrix(W.T), same_matrix(W) == same_matrix(W.T)
    (True, False)
    """
    return (data.__array_interface__["data"][0], data.strides, data.shape, data.dtype.str)


def _closure(P):
    """The reflexive-transitive closure of the boolean square matrix ``P``."""
    R = P | np.eye(len(P), dtype=bool)
    while True:
        R2 = (R.astype(np.int64) @ R.astype(np.int64)) > 0
        if np.array_equal(R2, R):
            return R
        R = R2


def inner_blocks(S, nz):
    """The diagonal blocks of the inner matrix ``K = I + (S (x) I) B`` in an order that makes it block upper
    triangular: a list of lists of indices into the block columns.  ``S``: ``A^{-1}[C, R]`` (``nc x nr``; its
    entries that are exactly zero decide), ``nz``: the pairs ``(r, c)`` of the given blocks of ``B``.

    >>> S = np.array([[1.0, 0.0], [2.0, 1.0]])
    >>> inner_blocks(S, {(0, 0), (1, 1)})
    [[1], [0]]
    """
    nc, nr = S.shape
    Bp = np.zeros((nr, nc), dtype=np.int64)
    for r, c in nz:
        Bp[r, c] = 1
    kr = _closure((((S != 0).astype(np.int64) @ Bp) > 0) | np.eye(nc, dtype=bool))
    comps, seen = [], set()
    for a in range(nc):
        if a in seen:
            continue
        comp = [c for c in range(nc) if kr[a, c] and kr[c, a]]
        seen.update(comp)
        comps.append(comp)
    # a component that reaches another comes first (it reaches strictly more)
    comps.sort(key=lambda comp: (-int(kr[comp[0]].sum()), comp[0]))
    return comps


class WoodburyTraces:
    """The float64 inverse of the materialized matrix in its Woodbury form, kept as block traces only:
    ``g[k, l] = tau(G_kl)`` and the means ``tau(G_ma G_bn)`` (:meth:`product_traces`) from ``A^{-1}``,
    ``t[r, c] = tau(Y_rc)`` and ``P[r, c, r', c'] = tau(Y_rc Y_r'c')``.  ``index``: kept block -> row of ``A``."""

    def __init__(self, index, Ainv, rows, cols, Y, N):
        nr, nc = len(rows), len(cols)
        Yb = Y.reshape(nr, N, nc, N)
        self.index, self.Ainv, self.N = index, Ainv, N
        self.t = np.einsum("rici->rc", Yb) / N
        L = np.ascontiguousarray(Yb.transpose(0, 2, 1, 3)).reshape(nr * nc, N * N)
        R = np.ascontiguousarray(Yb.transpose(0, 2, 3, 1)).reshape(nr * nc, N * N)
        self.P = (L @ R.T) / N
        self.u = Ainv[:, rows]
        self.v = Ainv[cols, :]
        self.g = Ainv - self.u @ self.t @ self.v

    def tau(self, k, l):
        """``tau(G_kl)`` (``k``, ``l`` kept blocks)."""
        return float(self.g[self.index[k], self.index[l]])

    def product_traces(self, lefts, rights):
        """``D[i, j] = tr(G_{m a} G_{b n}) = N tau(G_{m a} G_{b n})`` for ``lefts[i] = (m, a)`` and ``rights[j] = (b, n)``:
        ``N (-A_ma A_bn + A_ma g_bn + g_ma A_bn + sum u_mr v_ca P[r, c, r', c'] u_br' v_c'n)`` with
        ``G_kl = A^{-1}_kl I - sum_rc u_kr v_cl Y_rc`` (``u = A^{-1}[:, R]``, ``v = A^{-1}[C, :]``)."""
        ix = self.index
        lm = np.array([ix[m] for m, _a in lefts], dtype=int)
        la = np.array([ix[a] for _m, a in lefts], dtype=int)
        rb = np.array([ix[b] for b, _n in rights], dtype=int)
        rn = np.array([ix[n] for _b, n in rights], dtype=int)
        A, g = self.Ainv, self.g
        aL, gL, aR, gR = A[lm, la], g[lm, la], A[rb, rn], g[rb, rn]
        nr, nc = self.u.shape[1], self.v.shape[0]
        ZL = (self.u[lm][:, :, None] * self.v[:, la].T[:, None, :]).reshape(len(lefts), nr * nc)
        ZR = (self.u[rb][:, :, None] * self.v[:, rn].T[:, None, :]).reshape(len(rights), nr * nc)
        Q = ZL @ self.P.reshape(nr * nc, nr * nc) @ ZR.T
        return (-np.outer(aL, aR) + np.outer(aL, gR) + np.outer(gL, aR) + Q) * self.N


def inner_inverse_product(S, Bblocks, rows_n, cols_n, comps, N):
    """``Y = B K^{-1}`` (``nr N x nc N``, float64) by the block back substitution of the module docstring.
    ``S``: ``A^{-1}[C, R]`` (``nc x nr``); ``Bblocks``: ``{(r, c): N x N}`` (indices into ``R`` and ``C``);
    ``comps``: :func:`inner_blocks`.  Raises ``numpy.linalg.LinAlgError`` for a singular diagonal block.

    >>> S = np.array([[0.5]]); B = {(0, 0): np.eye(2)}
    >>> inner_inverse_product(S, B, 1, 1, [[0]], 2).round(6).tolist()
    [[0.666667, 0.0], [0.0, 0.666667]]
    """
    nr, nc = rows_n, cols_n
    Y = np.zeros((nr * N, nc * N))
    by_col = {}
    for (r, c), D in Bblocks.items():
        by_col.setdefault(c, []).append((r, D))
    diag, inverses, products = [], [], {}
    for comp in comps:
        m = len(comp)
        K = np.eye(m * N)
        for a_i, a in enumerate(comp):
            for c_i, c in enumerate(comp):
                for r, D in by_col.get(c, ()):
                    if S[a, r] != 0.0:
                        K[a_i * N:(a_i + 1) * N, c_i * N:(c_i + 1) * N] += S[a, r] * D
        # two diagonal blocks that differ by less than the backward error of a float64 inverse
        # (m N u max|K|, u = 2^-53: the two copies of a derivative pencil) share their inverse, and a given
        # block its product with it
        X = None
        for K2, X2 in inverses:
            if K2.shape == K.shape and np.max(np.abs(K - K2)) <= m * N * 2.0 ** -53 * np.max(np.abs(K2)):
                X = X2
                break
        if X is None:
            X = np.linalg.inv(K)
            inverses.append((K, X))
        live = sorted({r for c in comp for r, _D in by_col.get(c, ())})   # the block rows of D_i not zero
        Dm = np.zeros((len(live), N, m * N))
        for c_i, c in enumerate(comp):
            for r, D in by_col.get(c, ()):
                pk = (id(D), id(X), c_i)
                if pk not in products:
                    products[pk] = D @ X[c_i * N:(c_i + 1) * N]
                Dm[live.index(r)] += products[pk]
        diag.append((live, Dm.reshape(len(live) * N, m * N)))
    for j, comp_j in enumerate(comps):
        acc = np.zeros((nr, N, len(comp_j) * N))
        live_j, Dj = diag[j]
        acc[live_j] = Dj.reshape(len(live_j), N, -1)
        rows_acc = set(live_j)
        for i in range(j - 1, -1, -1):
            live_i, Di = diag[i]
            on = sorted(rows_acc)
            Si = S[np.ix_(comps[i], on)]
            if not np.any(Si):
                continue
            T = np.tensordot(Si, acc[on], axes=(1, 0)).reshape(len(comps[i]) * N, -1)
            acc[live_i] -= (Di @ T).reshape(len(live_i), N, -1)
            rows_acc.update(live_i)
        acc = acc.reshape(nr * N, -1)
        for c_i, c in enumerate(comp_j):
            Y[:, c * N:(c + 1) * N] = acc[:, c_i * N:(c_i + 1) * N]
    return Y
