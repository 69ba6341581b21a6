"""The compiled fixed point of a law of many atoms: the atoms summed numerically (mpmath or floats).

:class:`AtomCompiled` offers the interface of :class:`symrmt.engine.solve.newton.CompiledSystem`
(``fjs``, ``ffjs``, ``res``, ``fje``, ``pv``) for an :class:`symrmt.engine.reduce.atoms.AtomSystem`, so
the same homotopy, checks, polish and certification solve it.  The rows of the unknowns outside the
law's dimension are compiled from SymPy as usual.  The rows of the weighted sums ``S`` are

    R_S = S - sum_a w_a X_a,   X_a = (L0_d(v_a) - s E)^{-1},   E = eta_d(h),

with ``dR_S/dh = delta - s sum_ij T[., ij] dE_ij/dh``, ``dR_S/ds = -sum_ij T[., ij] E_ij`` and
``dR_S/deps = sum_ij T[., ij] dL0_ij/deps``, where ``T[kl, ij] = sum_a w_a X_a[k, i] X_a[j, l]``
(from ``dX = -X dA X``).  ``L0_d(v)``, ``E`` and ``dE/dh`` are compiled from SymPy; each ``X_a`` is a
``k_d x k_d`` inverse by Gauss-Jordan elimination in the arithmetic of the inputs.
"""

from __future__ import annotations

import hashlib

import mpmath
import sympy as sp

from symrmt.engine.reduce.atoms import V_ATOM
from symrmt.engine.reduce.fixed_point import S_STRENGTH
from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.core.linalg import inverse
from symrmt.codegen.compile import compile_recipe
from symrmt.core.numbers import mpf_of
from symrmt.engine.solve.newton import aux_split, source_digest


def _inverse(A, k):
    """Inverse of a ``k x k`` matrix (list of rows) by Gauss-Jordan with partial pivoting
    (:func:`symrmt.core.linalg.inverse`)."""
    return inverse(A, k, "singular atom block")


class AtomCompiled:
    """An :class:`~symrmt.engine.reduce.atoms.AtomSystem` compiled; the atoms are summed at each call.

    Takes the system and its cache key (:func:`symrmt.engine.solve.certify.compiled_system` builds both) and
    offers the interface of :class:`~symrmt.engine.solve.newton.CompiledSystem`.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.certify import compiled_system
    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> _ = m.diag("D", "n", ["1"] * 20)   # twenty atoms at 1: D = I, the Marchenko-Pastur law at c = 1
    >>> e = "trace(inv(Z.T*D*Z/n + gamma*I(n)))"
    >>> type(compiled_system(m.plan(e).traces[0].system)).__name__
    'AtomCompiled'
    >>> print(m.limit(e, at={"gamma": 1}, digits=12))   # (sqrt(5) - 1)/2
    0.61803398875
    """

    def __init__(self, system, key: str):
        self.system = system
        self.m = len(system.h)
        self.params = list(system.params)
        self.k = len(system.dgroup)
        self.name = "atoms_" + hashlib.sha256((key + source_digest()).encode()).hexdigest()[:24]
        R, J, ds, de, keep = system.other_rows()
        self.keep, self.d_rows = keep, system.d_rows
        L0, eta, deta = system.atom_pieces()
        flat = R + [x for row in J for x in row] + ds + de
        out, aux_syms, aux_exprs = aux_split(flat, self.params)
        args = [list(system.h), self.params + [S_STRENGTH, EPS_SHIFT] + aux_syms]
        self._other = compile_recipe(self.name + "_other", lambda: (args, out))
        self._aux = compile_recipe(self.name + "_aux", lambda: ([self.params], aux_exprs + [sp.Integer(0)]))
        dl0 = [sp.diff(x, EPS_SHIFT) for x in L0]
        self._l0 = compile_recipe(self.name + "_l0", lambda: ([self.params, [V_ATOM, EPS_SHIFT]], L0 + dl0))
        self._eta = compile_recipe(self.name + "_eta", lambda: ([list(system.h), self.params],
                                                                eta + [x for row in deta for x in row]))
        self.ffjs = self if all(c.float_version() is not None for c in (self._other, self._eta)) else None
        self._atoms = {}

    # -- the interface of CompiledSystem
    def aux_values(self, pvals):
        return list(self._aux(pvals))[:-1]

    def pv(self, pvals, s, e=0):
        return list(pvals) + [s, e] + self.aux_values(pvals)

    def fjs(self, h, pv):
        return self._flat(h, pv, "s")

    def res(self, h, pv):
        return self._flat(h, pv, "r")

    def fje(self, floats: bool):
        return _Shift(self)

    def derivative_function(self, alpha):
        return self.system.derivative_rhs(alpha)  # raises: no derivatives with the atom sums

    # -- the sums over the atoms
    def _atom_data(self, pvals, floats: bool):
        """Per atom: ``(w_a, L0_d(v_a, eps = 0) rows, dL0_d/deps rows)`` at the current precision."""
        key = (floats, mpmath.mp.prec, tuple(float(x) if floats else x for x in pvals))
        if key not in self._atoms:
            if len(self._atoms) > 8:
                self._atoms.clear()
            conv = float if floats else (lambda x: x)
            k = self.k
            data = []
            for v, w in zip(self.system.values, self.system.weights):
                vals = self._l0([mpf_of(x) for x in pvals], [mpf_of(v), mpmath.mpf(0)])
                L = [conv(x) for x in vals[:k * k]]
                dL = [conv(x) for x in vals[k * k:]]
                data.append((conv(mpf_of(w)), L, dL))
            self._atoms[key] = data
        return self._atoms[key]

    def _flat(self, h, pv, which: str):
        m, k = self.m, self.k
        floats = isinstance(h[0], float)
        np_ = len(self.params)
        pvals, s, e = pv[:np_], pv[np_], pv[np_ + 1]
        other = (self._other.float_version() if floats else self._other)(h, pv)
        no = len(self.keep)
        R = [0] * m
        J = [[0] * m for _ in range(m)]
        D = [0] * m
        for r_i, r in enumerate(self.keep):
            R[r] = other[r_i]
            if which == "r":
                continue
            J[r] = list(other[no + r_i * m:no + (r_i + 1) * m])
            D[r] = other[no + no * m + r_i] if which == "s" else other[no + no * m + no + r_i]
        ev = (self._eta.float_version() if floats else self._eta)(h, pvals)
        kk = k * k
        E, dE = ev[:kk], [ev[kk + q * m:kk + (q + 1) * m] for q in range(kk)]
        zero = 0.0 if floats else h[0] * 0  # the number type of h (mpf, or a ball when proving)
        Ssum = [zero] * kk
        T = [[zero] * kk for _ in range(kk)]
        Te = [zero] * kk  # sum_a w_a X_a dL_a X_a: dR_S/d eps (dL_a = dL0_d(v_a)/d eps)
        shift = which == "e"
        jac = which != "r"
        sE = [s * x for x in E]
        data = self._atom_data(pvals, floats)
        if k == 1:  # the common case (one block on the law's dimension), without lists
            sE0, t = sE[0], zero
            for w, L, dL in data:
                x = 1 / (L[0] + e * dL[0] - sE0)
                wx = w * x
                Ssum[0] += wx
                t += wx * x
                if shift:
                    Te[0] += wx * x * dL[0]
            T[0][0] = t
        elif k == 2:  # 2 x 2 blocks in closed form: X = adj(A)/det(A)
            e00, e01, e10, e11 = sE
            acc = [zero] * 16
            for w, L, dL in data:
                a00, a01 = L[0] + e * dL[0] - e00, L[1] + e * dL[1] - e01
                a10, a11 = L[2] + e * dL[2] - e10, L[3] + e * dL[3] - e11
                det = a00 * a11 - a01 * a10
                if not det:
                    raise ZeroDivisionError("singular atom block")
                r = 1 / det
                X = (a11 * r, -a01 * r, -a10 * r, a00 * r)
                Ssum[0] += w * X[0]
                Ssum[1] += w * X[1]
                Ssum[2] += w * X[2]
                Ssum[3] += w * X[3]
                if jac:
                    wX = [w * x for x in X]
                    for a in range(2):
                        for b in range(2):
                            q = 2 * a + b
                            for i in range(2):
                                wxa = wX[2 * a + i]
                                for j in range(2):
                                    acc[4 * q + 2 * i + j] += wxa * X[2 * j + b]
                                    if shift:
                                        Te[q] += wxa * dL[2 * i + j] * X[2 * j + b]
            for q in range(4):
                T[q] = acc[4 * q:4 * q + 4]
        else:
            for w, L, dL in data:
                A = [[L[i * k + j] + e * dL[i * k + j] - sE[i * k + j] for j in range(k)] for i in range(k)]
                X = _inverse(A, k)
                for a in range(k):
                    Xa = X[a]
                    for b in range(k):
                        Ssum[a * k + b] += w * Xa[b]
                        if jac:
                            row = T[a * k + b]
                            for i in range(k):
                                wx = w * Xa[i]
                                for j in range(k):
                                    row[i * k + j] += wx * X[j][b]
                                    if shift:
                                        Te[a * k + b] += wx * dL[i * k + j] * X[j][b]
        if not jac:
            for q, r in enumerate(self.d_rows):
                R[r] = h[r] - Ssum[q]
            return R
        for q, r in enumerate(self.d_rows):
            R[r] = h[r] - Ssum[q]
            row = [-s * sum(T[q][ij] * dE[ij][c] for ij in range(kk)) for c in range(m)]
            row[r] += 1
            J[r] = row
            if which == "s":
                D[r] = -sum(T[q][ij] * E[ij] for ij in range(kk))
            else:
                D[r] = Te[q]
        return R + [x for row in J for x in row] + D

    # the float path calls the same object (``ffjs is self``)
    def __call__(self, h, pv):
        return self._flat(h, pv, "s")

    def residual(self, h, pv):
        """``R`` alone (the chord corrector's later iterations)."""
        return self._flat(h, pv, "r")


class _Shift:
    """``[R, J, dR/d eps]`` of an :class:`AtomCompiled` (the shift path)."""

    def __init__(self, c):
        self.c = c

    def __call__(self, h, pv):
        return self.c._flat(h, pv, "e")

    def residual(self, h, pv):
        return self.c._flat(h, pv, "r")
