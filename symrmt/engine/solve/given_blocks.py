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

import math

import numpy as np

from symrmt.errors import ConvergenceError

__all__ = ["inner_blocks", "WoodburyTraces", "inner_inverse_product", "block_triangular_inverse", "same_matrix",
           "flint_two_blocks", "short_of_bits"]


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
    return _ordered_components((((S != 0).astype(np.int64) @ Bp) > 0) | np.eye(nc, dtype=bool))


def _ordered_components(pattern):
    """The strongly connected components of the boolean square ``pattern`` (``pattern[i, j]``: ``i`` reaches
    ``j``), ordered so that a component that reaches another comes first (it reaches strictly more): the order
    that makes the block matrix of that pattern block upper triangular."""
    kr = _closure(pattern)
    comps, seen = [], set()
    for a in range(len(pattern)):
        if a in seen:
            continue
        comp = [c for c in range(len(pattern)) if kr[a, c] and kr[c, a]]
        seen.update(comp)
        comps.append(comp)
    comps.sort(key=lambda comp: (-int(kr[comp[0]].sum()), comp[0]))
    return comps


def _shared_inverse(K, inverses):
    """The float64 inverse of ``K``: that of an earlier block in ``inverses`` (a list of ``(K, X)``, extended)
    when the two differ by less than the backward error of a float64 inverse, ``size u max|K|`` with
    ``u = 2^-53`` (the two copies of a derivative pencil), else a new one.  Raises
    ``numpy.linalg.LinAlgError`` for a singular ``K``."""
    for K2, X2 in inverses:
        if K2.shape == K.shape and np.max(np.abs(K - K2)) <= K.shape[0] * 2.0 ** -53 * np.max(np.abs(K2)):
            return X2
    X = np.linalg.inv(K)
    inverses.append((K, X))
    return X


def block_triangular_inverse(M, sizes):
    """The float64 inverse of ``M`` (square, cut into blocks of ``sizes`` along both axes) through the
    block-triangular form that ordering its blocks by the strongly connected components of its block pattern
    gives (as :func:`inner_blocks` orders the inner matrix): one inverse per diagonal component, shared by two
    that differ by less than the backward error of a float64 inverse (the two copies of a derivative pencil),
    and the blocks above the diagonal by back substitution, ``V_ij = -X_i sum_{i<l<=j} U_il V_lj``.  One
    component: ``numpy.linalg.inv``.  Raises ``numpy.linalg.LinAlgError`` for a singular diagonal component.

    >>> M = np.array([[2.0, 1.0, 5.0], [0.0, 2.0, 0.0], [0.0, 3.0, 4.0]])
    >>> bool(np.allclose(block_triangular_inverse(M, [1, 1, 1]), np.linalg.inv(M), rtol=1e-15, atol=1e-16))
    True
    """
    k = len(sizes)
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    sl = [slice(off[i], off[i + 1]) for i in range(k)]
    pattern = np.array([[i != j and bool(np.any(M[sl[i], sl[j]])) for j in range(k)] for i in range(k)], dtype=bool)
    comps = _ordered_components(pattern)
    if len(comps) == 1:
        return np.linalg.inv(M)
    idx = [np.concatenate([np.arange(off[b], off[b + 1]) for b in comp]) for comp in comps]
    nb = len(comps)
    U = {(i, j): M[np.ix_(idx[i], idx[j])] for i in range(nb) for j in range(i, nb)}
    X, inverses = [], []
    for i in range(nb):
        X.append(_shared_inverse(U[(i, i)], inverses))
    G = np.zeros_like(M)
    for j in range(nb):
        V = {j: X[j]}
        for i in range(j - 1, -1, -1):
            acc = None
            for m in range(i + 1, j + 1):
                if V[m] is not None and np.any(U[(i, m)]):
                    t = U[(i, m)] @ V[m]
                    acc = t if acc is None else acc + t
            V[i] = None if acc is None else -(X[i] @ acc)
        for i, Vi in V.items():
            if Vi is not None:
                G[np.ix_(idx[i], idx[j])] = Vi
    return G


class WoodburyTraces:
    """The float64 inverse of the materialized matrix in its Woodbury form, kept as block traces only:
    ``g[k, l] = tau(G_kl)`` and the means ``tau(G_ma G_bn)`` (:meth:`product_traces`) from ``A^{-1}``,
    ``t[r, c] = tau(Y_rc)`` and ``P[r, c, r', c'] = tau(Y_rc Y_r'c')``.  ``index``: kept block -> row of ``A``.

    >>> G = WoodburyTraces({"a": 0, "b": 1}, np.eye(2), [0], [1], np.array([[0.5]]), 1)
    >>> G.tau("a", "b"), G.tau("b", "b")
    (-0.5, 1.0)
    """

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
        # two diagonal blocks equal up to rounding share their inverse, and a given block its product with it
        X = _shared_inverse(K, inverses)
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


def short_of_bits(message, amp):
    """The ``ConvergenceError`` of a refinement that stalled: its corrections, amplified by ``amp`` (how an error
    of the inner inverse moves a trace), stay above the tolerance at the working precision.  Its ``more_bits``
    (``log2 amp`` and a margin) tells :func:`~symrmt.engine.solve.given.given_limit` how far to raise both
    precisions before it tries again.

    >>> short_of_bits("stalled", 2.0 ** 40).more_bits
    48
    """
    err = ConvergenceError(message)
    err.more_bits = max(16, int(math.ceil(math.log2(max(amp, 1.0)))) + 8)
    return err


def _ones(K):
    """The identity as a list of rows of integers (for ``flint.arb_mat``)."""
    return [[int(i == j) for j in range(K)] for i in range(K)]


def flint_two_blocks(N, rows, cols, comps, Ainv, terms, wscale, prec, tol):
    """``T[r][c] = tr(Y_rc)/N`` (python-flint midpoints at ``prec`` bits) of ``Y = B K^{-1}`` when the inner
    matrix ``K`` is block upper triangular with the two diagonal blocks ``comps``
    (:mod:`symrmt.engine.solve.given_blocks`): ``D_i = B[., C_i] K_ii^{-1}``, each ``K_ii^{-1}`` refined from a
    float64 inverse (the second from the first's refined one when the blocks have one size) by
    ``X <- X + X (I - K_ii X)`` as in :func:`symrmt.engine.solve.given_flint._woodbury_hp`, then ``Y[., C_1] = D_1 - D_0 (S[C_0, R] (x) I) D_1``,
    ``Y[., C_0] = D_0``.  ``terms``: ``(r, c, given matrix, coefficient)`` (indices into ``rows``, ``cols``).
    Returns ``None`` when a diagonal block is singular in float64; raises ``ConvergenceError`` when a
    refinement does not converge.

    ``N = 1``, ``B = diag(2, 3)``, ``S = [[1/2, 1/4], [0, 1/2]]``: ``Y = B (I + S B)^{-1} = [[1, -0.3], [0, 1.2]]``

    >>> import flint
    >>> Ainv = flint.arb_mat([[1, 0, 0.5, 0.25], [0, 1, 0, 0.5], [0, 0, 1, 0], [0, 0, 0, 1]])
    >>> terms = [(0, 0, np.array([[2.0]]), flint.arb(1)), (1, 1, np.array([[3.0]]), flint.arb(1))]
    >>> T = flint_two_blocks(1, [2, 3], [0, 1], [[0], [1]], Ainv, terms, 1.0, 100, 1e-20)
    >>> [[round(float(x.mid()), 12) for x in row] for row in T]
    [[1.0, -0.3], [0.0, 1.2]]"""
    # optional dependency (flint)
    import flint

    nr, nc = len(rows), len(cols)
    S = [[Ainv[cols[a], rows[b]] for b in range(nr)] for a in range(nc)]
    s_norm = max(sum(abs(float(S[a][r].mid())) for r in range(nr)) for a in range(nc))
    blocks = []
    for comp in comps:
        m = len(comp)
        mine = [(r, comp.index(cc), data, c) for r, cc, data, c in terms if cc in comp]
        live = sorted({r for r, *_x in mine})
        groups = {}
        for r, ci, data, c in mine:
            key = c.mid().str(radius=False, more=True)
            if key not in groups:
                groups[key] = (c, np.zeros((len(live) * N, m * N)))
            k = live.index(r)
            groups[key][1][k * N:(k + 1) * N, ci * N:(ci + 1) * N] += np.asarray(data, dtype=np.float64)
        B, B64 = None, np.zeros((len(live) * N, m * N))
        for c, placed in groups.values():
            Bc = flint.arb_mat(placed.tolist()) * c
            B = Bc if B is None else B + Bc
            B64 += float(c.mid()) * placed
        SI = flint.arb_mat(m * N, len(live) * N)
        S64 = np.zeros((m, len(live)))
        for a_i, a in enumerate(comp):
            for k, r in enumerate(live):
                S64[a_i, k] = float(S[a][r].mid())
                if S[a][r] != 0:
                    for q in range(N):
                        SI[a_i * N + q, k * N + q] = S[a][r]
        Nm = (flint.arb_mat(_ones(m * N)) + SI * B).mid()
        blocks.append({"comp": comp, "live": live, "B": B, "Nm": Nm, "B64": B64,
                       "N64": np.eye(m * N) + np.kron(S64, np.eye(N)) @ B64})
    y_norm = 1.0   # the size of D_i = B X_i (float64): how an error of D_1 moves D_0 (S (x) I) D_1, and back
    for b in blocks:
        try:
            b["X64"] = np.linalg.inv(b["N64"])
        except np.linalg.LinAlgError:
            return None
        y_norm = max(y_norm, float(np.max(np.abs(b["B64"] @ b["X64"]).sum(axis=1))))
    amp = wscale * (1.0 + s_norm * y_norm)
    for i, b in enumerate(blocks):
        m = len(b["comp"])
        prev = blocks[i - 1] if i else None
        # the second block from the first's refined inverse (they differ by rounding for a derivative pencil)
        X = prev["X"] if prev is not None and prev["N64"].shape == b["N64"].shape \
            else flint.arb_mat(b["X64"].tolist())
        E = flint.arb_mat(_ones(m * N))
        for _ in range(8):
            D = (X * (E - b["Nm"] * X)).mid()
            X = (X + D).mid()
            BD = (b["B"] * D).mid()
            delta = amp * max(abs(float(BD[k * N + q, a_i * N + q].mid())) for k in range(len(b["live"]))
                              for a_i in range(m) for q in range(N))
            if delta * delta * m * N <= tol * 1e-2:
                break
        else:
            raise short_of_bits(f"the refinement of the deterministic-equivalent inverse (Woodbury form, two "
                                f"blocks) did not converge at {prec} bits (last correction {delta:.3g})", amp)
        b["X"] = X
        b["Y"] = (b["B"] * X).mid()
    T = [[flint.arb(0)] * nc for _ in range(nr)]
    for b in blocks:
        for k, r in enumerate(b["live"]):
            for a_i, a in enumerate(b["comp"]):
                T[r][a] += sum((b["Y"][k * N + q, a_i * N + q] for q in range(N)), flint.arb(0)) / N
    b0, b1 = blocks
    SI = flint.arb_mat(len(b0["comp"]) * N, len(b1["live"]) * N)
    for a_i, a in enumerate(b0["comp"]):
        for k, r in enumerate(b1["live"]):
            if S[a][r] != 0:
                for q in range(N):
                    SI[a_i * N + q, k * N + q] = S[a][r]
    Z = (b0["Y"] * (SI * b1["Y"]).mid()).mid()       # D_0 (S[C_0, R] (x) I) D_1
    for k, r in enumerate(b0["live"]):
        for c_i, c in enumerate(b1["comp"]):
            T[r][c] -= sum((Z[k * N + q, c_i * N + q] for q in range(N)), flint.arb(0)) / N
    return T
