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
then refined by Newton steps whose residual is evaluated in double-double up to 28 digits and in
triple-double (three float64 components) up to 32 (:mod:`symrmt.engine.solve.given_dd`, two evaluations
that round differently) and with python-flint ``arb_mat`` at two working precisions above (:mod:`symrmt.engine.solve.given_flint`); the value is returned when both agree to the digits asked
(:class:`~symrmt.errors.PrecisionError` otherwise).  Each step costs one inverse of the materialized
matrix (``k p x k p`` for ``k`` blocks of size ``p``): when the given matrices occupy at most half of the
block columns, through the Woodbury identity on those columns (``c p x c p`` for ``c`` such columns; the
``number x I`` blocks are eliminated exactly), else dense.

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

import contextlib
import sys

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
from symrmt.engine.solve.given_blocks import (WoodburyTraces, block_triangular_inverse, inner_blocks,
                                               inner_inverse_product, same_matrix)
from symrmt.engine.solve.given_dd import solve_dd
from symrmt.engine.solve.given_flint import solve_flint
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
        self.rvec = ([], [])  # a random vector's rows (1 x 1 block, scalar block, name, c) and columns (scalar, 1 x 1, ...)
        random = {}
        for (i, j), e in pencil.Q.items():
            for leaf, c in e.items():
                c = coef(c)
                if leaf == "I":
                    self.det.append((i, j, "I", None, c))
                elif leaf[0] in ("Z", "G"):
                    random.setdefault(leaf[1], []).append((i, j, leaf, c))
                elif leaf[0] == "V" and leaf[1] not in objects:   # a random vector: between a 1 x 1 block
                    self._random_vector(i, j, leaf[1], c)           # and a scalar one (given_limit checks)
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
        self.zero = self._zero_unknowns()

    def _zero_unknowns(self):
        """The positions of the unknowns that are zero at every point: the largest set ``Z`` such that with
        ``H_Z = 0`` the blocks ``G_Z`` are zero whatever the other unknowns (they lie outside the
        reflexive-transitive closure of the block pattern of the matrix, which then has no second-moment term
        from ``Z``), as for the blocks below the diagonal of a derivative pencil.  The fixed point keeps them
        exactly zero, so the Woodbury inner matrix keeps its exact block-triangular zeros
        (:mod:`symrmt.engine.solve.given_blocks`)."""
        nb = len(self.pencil.blocks)
        base = np.zeros((nb, nb), dtype=bool)
        for i, j, *_x in self.det:
            base[i, j] = True
        zero = set(self.unknowns)
        while True:
            pat = base.copy()
            for a, b, w, m, m2 in self.eta:
                if (m, m2) not in zero and w != 0:
                    pat[a, b] = True
            reach = pat | np.eye(nb, dtype=bool)
            while True:
                nxt = (reach.astype(np.int64) @ reach.astype(np.int64)) > 0
                if np.array_equal(nxt, reach):
                    break
                reach = nxt
            new = {u for u in zero if not reach[u[0], u[1]]}
            if new == zero:
                return np.array(sorted(self.pos[u] for u in zero), dtype=int)
            zero = new

    # -- float64
    def base(self, with_vectors: bool):
        """``(M, S)``: the float64 deterministic part of the materialized and of the scalar blocks, ``M``
        assembled when first read (the Woodbury form does not need it)."""
        return _Base(self, with_vectors)

    def _base_parts(self, with_vectors, materialized):
        M = np.zeros((self.K, self.K)) if materialized else None
        S = np.zeros((len(self.sca), len(self.sca)))
        for (i, j, kind, data, _c), c in zip(self.det, self.det64):
            if kind == "I":
                if i in self.off:
                    if materialized:
                        o1, o2, N = self.off[i], self.off[j], self.size[i]
                        M[o1:o1 + N, o2:o2 + N] += c * np.eye(N)
                else:
                    S[self.sidx[i], self.sidx[j]] += c
            elif materialized:
                if not with_vectors and (i in self.unit or j in self.unit):
                    continue
                o1, o2 = self.off[i], self.off[j]
                M[o1:o1 + data.shape[0], o2:o2 + data.shape[1]] += c * data
        return M, S

    def _random_vector(self, i, j, name, c):
        if i in self.unit and j in self.sidx:
            self.rvec[0].append((i, j, name, c))
        elif i in self.sidx and j in self.unit:
            self.rvec[1].append((i, j, name, c))
        else:
            raise ModelError(f"vector {name}: a random vector in a dimension that carries a given matrix is not "
                             "supported (only where every block of its dimension is a number times I)")

    def schur(self, Gs, scale=lambda c: c):
        r"""The random vectors' part of the ``1 x 1`` blocks: ``[(u1, u2, value)]``, to be added to the matrix.

        A random vector ``y`` (``||y||^2/n = 1``, independent of everything else) lives in a dimension whose
        blocks are all numbers times ``I`` (the scalar blocks, inverse ``Gs``); there it couples only to the
        ``1 x 1`` blocks (``c1 y^T`` in row ``u1``, ``c2 y`` in column ``u2``).  Eliminating that dimension (a
        Schur complement, exact because its blocks act as numbers on ``y`` and on ``y``'s complement alike)
        leaves ``-c1 c2 Gs[n1, n2] y^T y/n`` on the block ``(u1, u2)``; two independent random vectors are
        orthogonal in the limit (no term).  ``scale`` converts a coefficient to ``Gs``'s number type."""
        out = []
        for u1, n1, name, c1 in self.rvec[0]:
            for n2, u2, name2, c2 in self.rvec[1]:
                if name == name2:
                    out.append((u1, u2, -scale(c1) * scale(c2) * Gs[self.sidx[n1], self.sidx[n2]]))
        return out

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
        if with_vectors:
            self._add_schur64(M, self.scalar64(h, 1.0, base))
        keep = self._keep(with_vectors)
        idx = np.concatenate([np.arange(self.off[k], self.off[k] + self.size[k]) for k in keep])
        return M[np.ix_(idx, idx)]

    def scalar64(self, h, t, base):
        """The float64 matrix of the scalar blocks at unknowns ``h``, strength ``t``."""
        S = base[1].copy()
        for (a, b, _w, m, m2), w in zip(self.eta, self.eta64):
            if a not in self.off:
                S[self.sidx[a], self.sidx[b]] -= t * w * h[self.pos[(m, m2)]]
        return S

    def _add_schur64(self, M, S):
        """Add the random vectors' part (:meth:`schur`) to the float64 matrix ``M`` (all blocks, in place)."""
        if self.rvec[0]:
            for u1, u2, v in self.schur(np.linalg.inv(S), float):
                M[self.off[u1], self.off[u2]] += v

    def solve64(self, h, t, base, with_vectors=False, side=0, dense=False):
        """``(G_mat, G_sca, idx)``: the float64 inverse at unknowns ``h``, strength ``t``; where the Woodbury
        reduction applies (``self.structured`` is then true), its block traces only
        (:class:`~symrmt.engine.solve.given_blocks.WoodburyTraces`, what :meth:`tau` and :meth:`jacobian64`
        read) or, with ``dense``, the whole inverse through :meth:`_woodbury64` (``side``: which of its two
        forms); a dense inverse otherwise (always with the random vectors' part, which the Woodbury forms
        do not carry)."""
        S = self.scalar64(h, t, base)
        keep = self._keep(with_vectors)
        vectors = with_vectors and self.rvec[0]
        if not keep:
            Gm = np.zeros((0, 0))
        elif vectors:
            Gm = None
        elif dense:
            Gm = self._woodbury64(h, t, keep, side)
        else:
            Gm = self._woodbury_traces64(h, t, keep)
        self.structured = Gm is not None and len(keep) > 0
        if Gm is None:
            M = base[0].copy()
            for (a, b, _w, m, m2), w in zip(self.eta, self.eta64):
                if a in self.off:
                    _add_diagonal(M, self.off[a], self.off[b], self.size[a], -t * w * h[self.pos[(m, m2)]])
            if vectors:
                self._add_schur64(M, S)
            idx = np.concatenate([np.arange(self.off[k], self.off[k] + self.size[k]) for k in keep])
            Gm = block_triangular_inverse(M[np.ix_(idx, idx)], [self.size[k] for k in keep])
        Gs = np.linalg.inv(S) if len(self.sca) else S
        return Gm, Gs, self.layout(with_vectors)[0]

    def woodbury_plan(self, keep):
        """``(N, pos, rows, cols, nz)`` of the Woodbury reduction over the blocks ``keep`` (their size, their
        positions, the block rows and columns that hold given matrices, the pairs of indices into ``rows`` and
        ``cols`` that do), or ``None`` when it does not apply (sizes that differ, given blocks that are not
        ``N x N``, or in more than half of the block columns)."""
        sizes = {self.size[k] for k in keep}
        if len(sizes) != 1 or len(keep) < 2:
            return None
        N = sizes.pop()
        pos = {k: i for i, k in enumerate(keep)}
        given = set()
        for i, j, kind, data, _c in self.det:
            if kind == "I" or i not in pos or j not in pos:
                continue
            if data.shape != (N, N):
                return None
            given.add((pos[i], pos[j]))
        rows = sorted({r for r, _c in given})
        cols = sorted({c for _r, c in given})
        if not given or 2 * len(cols) > len(pos):
            return None
        nz = {(a, b) for a in range(len(rows)) for b in range(len(cols)) if (rows[a], cols[b]) in given}
        return N, pos, rows, cols, nz

    def _woodbury_parts64(self, h, t, keep):
        """``(plan, A, blocks)`` of the Woodbury reduction at ``h``, ``t`` (float64): ``A`` the ``k x k`` matrix
        of the multiples of ``I``, ``blocks`` ``{(r, c): N x N}`` the given matrices (indices into the plan's
        rows and columns; equal coefficients times the same matrix are one array), or ``None``."""
        plan = self.woodbury_plan(keep)
        if plan is None:
            return None
        N, pos, rows, cols, nz = plan
        nk = len(pos)
        A = np.zeros((nk, nk))
        cache = self.__dict__.setdefault("_given64", {})
        blocks = {}
        for (i, j, kind, data, _c), c in zip(self.det, self.det64):
            if i not in pos or j not in pos:
                continue
            if kind == "I":
                A[pos[i], pos[j]] += c
            else:
                key = (same_matrix(data), c)
                if key not in cache:
                    cache[key] = (data, c * data)        # data held, so that its id is not reused
                rc = (rows.index(pos[i]), cols.index(pos[j]))
                blocks[rc] = blocks[rc] + cache[key][1] if rc in blocks else cache[key][1]
        for (a, b, _w, m, m2), w in zip(self.eta, self.eta64):
            if a in pos:
                A[pos[a], pos[b]] -= t * w * h[self.pos[(m, m2)]]
        return plan, A, blocks

    def _woodbury_traces64(self, h, t, keep):
        """The block traces of the float64 inverse over the blocks ``keep`` through the Woodbury reduction
        (:meth:`_woodbury64`), its inner matrix inverted block-triangularly
        (:mod:`symrmt.engine.solve.given_blocks`): a
        :class:`~symrmt.engine.solve.given_blocks.WoodburyTraces`, or ``None`` where :meth:`_woodbury64` is."""
        parts = self._woodbury_parts64(h, t, keep)
        Ainv = None if parts is None else _small_inverse(parts[1])
        if Ainv is None:
            return None
        (N, pos, rows, cols, nz), _A, blocks = parts
        try:
            S = Ainv[np.ix_(cols, rows)]
            Y = inner_inverse_product(S, blocks, len(rows), len(cols), inner_blocks(S, nz), N)
        except np.linalg.LinAlgError:
            return None
        return WoodburyTraces(pos, Ainv, rows, cols, Y, N)

    def _woodbury64(self, h, t, keep, side=0):
        """The float64 inverse of the materialized matrix over the blocks ``keep`` through its structure, or
        ``None`` (then a dense inverse): when every kept block has one size ``N``, the matrix is
        ``A (x) I_N + P_R B P_C^T``, ``A`` the small matrix of the multiples of ``I`` and ``B`` the given
        matrices on the block rows ``R`` and columns ``C`` they occupy, so (Woodbury)

            M^{-1} = A^{-1} (x) I - (A^{-1}[:, R] (x) I) B (I + (A^{-1}[C, R] (x) I) B)^{-1} (A^{-1}[C, :] (x) I),

        one dense inverse of size ``|C| N`` instead of ``len(keep) N`` (``side`` 1: the same through
        ``(I + B (A^{-1}[C, R] (x) I))^{-1} B``, of size ``|R| N``, which rounds differently).  ``None`` when the
        sizes differ, when
        ``A`` is ill-conditioned (``cond > 1e8``: the reduction would lose digits) or when the given blocks
        fill most block columns (no saving)."""
        parts = self._woodbury_parts64(h, t, keep)
        Ainv = None if parts is None else _small_inverse(parts[1])
        if Ainv is None:
            return None
        (N, pos, rows, cols, nz), _A, blocks = parts
        nk, nr, nc = len(pos), len(rows), len(cols)
        B = np.zeros((nr, N, nc, N))
        for (r, c), D in blocks.items():
            B[r, :, c, :] = D
        S = Ainv[np.ix_(cols, rows)]
        try:
            if side == 0:
                Ninv = np.linalg.inv(np.tensordot(S, B, axes=(1, 0)).reshape(nc * N, nc * N) + np.eye(nc * N))
            else:
                Ninv = np.linalg.inv(np.tensordot(B, S, axes=(2, 0)).transpose(0, 1, 3, 2).reshape(nr * N, nr * N)
                                     + np.eye(nr * N))
        except np.linalg.LinAlgError:
            return None
        if side == 0:   # B (I + (S (x) I) B)^{-1}, B's zero blocks skipped
            Ninv = Ninv.reshape(nc, N, nc * N)
            Y = np.zeros((nr, N, nc * N))
            for r, c in nz:
                Y[r] += B[r, :, c, :] @ Ninv[c]
        else:           # (I + B (S (x) I))^{-1} B
            Ninv = Ninv.reshape(nr * N, nr, N)
            Y = np.zeros((nr * N, nc, N))
            for r, c in nz:
                Y[:, c, :] += Ninv[:, r, :] @ B[r, :, c, :]
        Y = Y.reshape(nr, N, nc, N)
        T = np.tensordot(Ainv[:, rows], Y, axes=(1, 0))          # (nk, N, nc, N)
        G = np.tensordot(T, Ainv[cols, :], axes=(2, 0))          # (nk, N, N, nk)
        G = -G.transpose(0, 1, 3, 2)
        for k in range(nk):
            for l in range(nk):
                if Ainv[k, l] != 0:
                    _add_diagonal_4(G, k, l, N, Ainv[k, l])
        return G.reshape(nk * N, nk * N)

    def block(self, G, k, l):
        Gm, Gs, where = G
        if k in self.sidx:
            return Gs[self.sidx[k], self.sidx[l]]
        return Gm[where[k]:where[k] + self.size[k], where[l]:where[l] + self.size[l]]

    def tau(self, G, k, l):
        if k in self.sidx:
            return self.block(G, k, l)
        if isinstance(G[0], WoodburyTraces):
            return G[0].tau(k, l)
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
            if isinstance(G[0], WoodburyTraces):
                np.add.at(J, (rows, cols), -t * w * G[0].product_traces(lefts, rights)[li, ri])
                continue
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


class _Base:
    """``base[0]``, ``base[1]`` of :meth:`_Part.base`, each assembled when first read."""

    def __init__(self, part, with_vectors):
        self.part, self.with_vectors, self.parts = part, with_vectors, {}

    def __getitem__(self, k):
        if k not in self.parts:
            self.parts[k] = self.part._base_parts(self.with_vectors, k == 0)[k]
        return self.parts[k]


def _small_inverse(A):
    """The float64 inverse of the Woodbury reduction's small matrix ``A``, or ``None`` when ``A`` is singular or
    ill-conditioned (``cond > 1e8``: the reduction would lose digits; the dense inverse is used instead)."""
    try:
        if not np.linalg.cond(A) < 1e8:
            return None
        return np.linalg.inv(A)
    except np.linalg.LinAlgError:
        return None


def _add_diagonal_4(G, k, l, N, v):
    """``G[k, :, l, :] += v I`` in place (``G`` of shape ``(nk, N, nk, N)``)."""
    idx = np.arange(N)
    G[k, idx, l, idx] += v


def _add_diagonal(M, o1, o2, N, v):
    """``M[o1:o1+N, o2:o2+N] += v I`` in place."""
    idx = np.arange(N)
    M[o1 + idx, o2 + idx] += v


def _newton64(part, h, t, base, tol=1e-13, maxit=40):
    """Newton's method for the float64 fixed point at strength ``t``, until a step is below ``tol`` (relative to
    ``max(1, |h|)``) or, once the steps converge quadratically (below ``1e-4``), until the error the last step
    leaves, ``s_k^3/s_(k-1)^2`` (``e_(k+1) = C e_k^2`` with ``C = s_k/s_(k-1)^2``), is; returns ``(h, J)``."""
    prev = None
    for _ in range(maxit):
        F, G = part.residual64(h, t, base)
        J = part.jacobian64(G, t)
        step = np.linalg.solve(J, F)
        h = h - step
        h[part.zero] = 0.0
        size = float(np.max(np.abs(step)))
        scale = max(1.0, float(np.max(np.abs(h))))
        if size <= tol * scale:
            return h, J
        if prev is not None and size <= 1e-4 * scale and size < prev and size ** 3 <= tol * scale * prev ** 2:
            return h, J
        prev = size
        if not np.all(np.isfinite(h)):
            break
    raise ConvergenceError("the deterministic-equivalent fixed point did not converge in float64")


#: the relative Newton step below which a stage of the float64 homotopy before the end is accepted: the point only
#: seeds the next stage's tangent predictor, whose own Newton corrects it (after a step of 1e-2 the error is about
#: 1e-5, by Newton's quadratic convergence)
STAGE_TOL = 1e-2
#: the most Newton steps of a stage of the float64 homotopy before the end (quadratic convergence from the tangent
#: predictor takes 3 to 5 to reach 1e-6; more means the stage is too long, and it is shortened)
INNER_NEWTON = 10


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
    h[part.zero] = 0.0
    t, dt = 0.0, 0.25
    # the tangent of the path: F(h, t) = h - T(t h), so dh/dt = T'(t h) h J^{-1} = (J^{-1} - I) h / t, and
    # T'(0) = I - J(t = 1) read at t = 0
    J, sign = None, None
    slope = h - part.jacobian64(G, 1.0) @ h
    slope[part.zero] = 0.0
    while t < 1:
        t1 = min(1.0, t + dt)
        try:
            with np.errstate(all="raise"):  # the tangent predictor, then Newton (loosely between the ends)
                # between the ends a Newton that needs more than INNER_NEWTON steps from the predictor means a
                # step too long: it is halved at once instead of after the full count
                h1, J1 = _newton64(part, h + slope * (t1 - t), t1, base, tol=1e-13 if t1 == 1 else STAGE_TOL,
                                   maxit=40 if t1 == 1 else INNER_NEWTON)
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
        slope = (np.linalg.solve(J1, h1) - h1) / t1
        slope[part.zero] = 0.0
        h, t, J = h1, t1, J1
        dt = min(2 * dt, 0.25)
    return h, J


#: at most this many digits are certified by the double-double path (above: triple-double)
DD_DIGITS = 28
#: at most this many digits are certified by the triple-double path (above: python-flint at two precisions)
TD_DIGITS = 32
#: the most bits by which :func:`given_limit` raises both python-flint precisions when a refinement stalls
MAX_EXTRA_BITS = 192
def given_limit(model, expr, at, digits: int = 15):
    """The deterministic equivalent of a scalar expression with given matrices or vectors at the
    parameter values ``at`` (a :class:`~symrmt.engine.solve.certify.TraceLimit`; see the module docstring).

    Raises :class:`ModelError` for an expression outside what this path solves (a random vector, a
    vector whose inner products are parameters, a diagonal law, a complex value), sizes that
    disagree with the dimension ratios, and :class:`~symrmt.errors.SolverError` subclasses when the
    fixed point does not converge or the two precisions disagree.

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> m.dim("p", "c*n")
    Dim('p', c)
    >>> _ = m.gaussian("Z", "p", "n")
    >>> _ = m.matrix("S", "p", "p", np.eye(2))   # S = I: the Marchenko-Pastur resolvent, (sqrt(5) - 1)/2
    >>> print(given_limit(m, "trace(inv(S*Z*Z.T*S.T/n + gamma*I(p)))", {"c": 1, "gamma": 1}, digits=15))
    0.618033988749895
    >>> given_limit(m, "trace(inv(S*Z*Z.T*S.T/n + gamma*I(p)))", {"c": 1, "gamma": 1j})
    Traceback (most recent call last):
        ...
    symrmt.errors.ModelError: a complex parameter value is not supported with given matrices yet
    """
    with _flint_precision_kept():  # the python-flint path sets the library's global working precision
        return _given_limit(model, expr, at, digits)


@contextlib.contextmanager
def _flint_precision_kept():
    """python-flint's global working precision (``flint.ctx.prec``) as it was before the block, after it;
    nothing without python-flint."""
    flint = sys.modules.get("flint")
    if flint is None:
        try:
            # optional dependency (flint): imported here only to remember its precision
            import flint
        except ImportError:
            yield
            return
    prec = flint.ctx.prec
    try:
        yield
    finally:
        flint.ctx.prec = prec


def _given_limit(model, expr, at, digits):
    digits = check_digits(digits)
    expr = model.expr(expr)
    random_vectors = {}
    for x in walk(expr):
        if isinstance(x, Vector) and not isinstance(x, GivenVector):
            if not x.random:
                raise ModelError(f"vector {x.name}: with a given matrix, deterministic vectors are given by their "
                                 "entries (vector_file(dim, FILE.npy)); inner-product parameters are not supported "
                                 "on this path")
            random_vectors[x.name] = x
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
    for x in random_vectors.values():
        if x.dim.name in size_of:
            raise ModelError(f"vector {x.name}: a random vector in the dimension {x.dim.name}, which carries the given "
                             f"{sizes[x.dim.name][1]}, is not supported (only in a dimension without given objects)")

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
        """``prec``: bits of a flint evaluation, or ``"dd0"``/``"dd1"`` for the double-double ones (``"td0"``,
        ``"td1"``: triple-double)."""
        dps = int(prec / 3.33) if isinstance(prec, int) else (40 if prec[0] == "d" else 58)
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
                h, read, r = solve_dd(part, starts[q], J, coef_mp, digits, prec[2] == "1", 2 if prec[0] == "d" else 3,
                                      presolve=prec == "td0")
            else:
                h, read, r = solve_flint(part, starts[q], J, coef_hp, prec, digits, 6 if prec == p1 else 18, watch)
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
    if digits <= TD_DIGITS:  # two double-double (triple-double) evaluations that round differently
        kind, dps = ("dd", 45) if digits <= DD_DIGITS else ("td", 60)
        try:
            with mpmath.workdps(dps):
                v1, _t1, _r1 = evaluate(kind + "0")
                v2, t2, r2 = evaluate(kind + "1")
            p1, p2, done = kind + "0", kind + "1", True
        except ConvergenceError:  # the float64 inverse too poor for the series: python-flint below
            starts = [h for h, _J in sols64]
    if not done:
        # python-flint at two precisions; a refinement that stalls because its corrections are amplified
        # beyond the working precision (a nearly singular pencil, small gamma) says how many bits it lacks,
        # and both precisions rise by that much, up to MAX_EXTRA_BITS in all
        extra = 0
        while True:
            try:
                with mpmath.workdps(int(p2 / 3.3) + 10):
                    v1, _t1, _r1 = evaluate(p1)
                    v2, t2, r2 = evaluate(p2)
                break
            except ConvergenceError as err:
                more = getattr(err, "more_bits", 0)
                if not more or extra + more > MAX_EXTRA_BITS:
                    if extra:
                        raise ConvergenceError(f"{err} (after raising both working precisions by {extra} bits; "
                                               f"at most {MAX_EXTRA_BITS} more are tried)") from err
                    raise
                extra += more
                p1, p2 = p1 + more, p2 + more
                starts = [h for h, _J in sols64]
    with mpmath.workdps(int(p2 / 3.3) + 10 if isinstance(p2, int) else 60):
        gap = abs(v1 - v2)
        scale = abs(v2)
        if gap > scale * mpmath.mpf(10) ** (-digits - 2) and gap > mpmath.mpf(10) ** (-digits - 30):
            raise PrecisionError(f"the deterministic equivalent is not certified to {digits} digits: the solves "
                                 f"{p1} and {p2} differ by {mpmath.nstr(gap, 3)}")
    certificate = "relative" if scale > mpmath.mpf(10) ** (-digits - 20) else "absolute"
    with mpmath.workdps(digits + 5):
        value = +v2
        traces = [+t for t in t2]
    out = TraceLimit(value, digits, int(p2 / 3.32) if isinstance(p2, int) else {"d": 32, "t": 48}[p2[0]], r2,
                     dict(values), traces)
    out.certificate = certificate
    out.deterministic_equivalent = {"n": n_eff[0] if n_eff else None, "sizes": dict(size_of)}
    return out
