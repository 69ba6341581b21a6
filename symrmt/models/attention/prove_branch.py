r"""The attention fixed point's square system on balls, and its branch proved by continuation.

* :func:`square_system`: the nine-equation residual ``R(G)`` of
  :func:`symrmt.models.attention.equations.fixed_point_polynomial` turned into the six equations of the
  symmetric ``G R(G)`` (upper entries), with its Jacobian (product rule on the compiled ``dR/dG``).
* :func:`attention_chain`: a chain of Krawczyk boxes (:func:`symrmt.engine.prove.chain.continuation_chain`)
  from ``L_0^{-1}`` at kernel strength 0 to the proved root: along the strength ``t`` of
  :func:`symrmt.models.attention.equations.fixed_point_homotopy` at ``gamma_0 = max(gamma, 1)``, then at
  full strength along ``log gamma`` from ``gamma_0`` down to ``gamma``.  Each box's contraction
  ``I - Y J`` is enclosed by its centred form with the second derivatives of ``G R(G)``
  (:func:`square_hessian`, compiled from the same SymPy residual), which keeps the cancellations that the
  interval Jacobian of the product-form residual loses: at ``gamma = 1/100`` about ten times fewer boxes.
"""

from __future__ import annotations

import hashlib
import inspect
from fractions import Fraction

import sympy as sp

from symrmt.proofs.arb import ProofError, arb_checked, arb_function, require_flint, to_arb, working_bits
from symrmt.cache import cached
from symrmt.codegen.compile import compile_recipe
from symrmt.engine.prove.chain import CHAIN_BITS, continuation_chain
from symrmt.models.attention import equations as S
from symrmt.models.attention.compiled import fixed_point_fjg, fixed_point_homotopy_fjt, noise_L0_function
from symrmt.models.attention.equations import G_INDEX

__all__ = ["symmetric_matrix", "square_system", "square_hessian", "attention_chain", "ATTENTION_MAX_BOXES",
           "GAMMA_START"]

#: most boxes (tried) of one leg of an attention chain
ATTENTION_MAX_BOXES = 5000
#: the kernel-strength leg runs at ``gamma_0 = max(gamma, GAMMA_START)`` (the path is steep near zero
#: strength at small gamma); the ``gamma`` leg then runs from ``gamma_0`` down at full strength
GAMMA_START = Fraction(1)


def symmetric_matrix(g):
    """The 3x3 rows of the symmetric matrix whose upper entries (``G_INDEX`` order) are ``g``.

    >>> symmetric_matrix([1, 2, 3, 4, 5, 6])
    [[1, 2, 3], [2, 4, 5], [3, 5, 6]]
    """
    out = [[None] * 3 for _ in range(3)]
    for (i, j), v in zip(G_INDEX, g):
        out[i][j] = out[j][i] = v
    return out


def square_system(fjg, params):
    """``(F, J, F_gamma)`` of the square system ``G R(G)`` (upper entries), ``R`` the 3x3 residual.

    ``fjg`` is the arb version of the compiled flat ``[F (9), dF/dG (54), dF/dgamma (9)]`` of
    :func:`symrmt.models.attention.compiled.fixed_point_fjg`: the square system and its Jacobian
    ``d(G R)/dG_k = E_k R + G dR/dG_k`` are assembled from it, nothing is retyped.

    ``params`` is handed to ``fjg`` as it is; returns three functions of the six upper entries ``xs``.

    Examples
    --------
    With a stand-in ``fjg`` whose residual is ``R = I`` (and no derivatives), ``G R`` is ``G`` itself
    and its Jacobian the identity:

    >>> def fjg(xs, params):
    ...     return [1, 0, 0, 0, 1, 0, 0, 0, 1] + [0] * 54 + [0] * 9
    >>> F, J, Fg = square_system(fjg, None)
    >>> xs = [1, 2, 3, 4, 5, 6]
    >>> F(xs), J(xs) == [[int(i == k) for k in range(6)] for i in range(6)], Fg(xs)
    ([1, 2, 3, 4, 5, 6], True, [0, 0, 0, 0, 0, 0])
    """
    def parts(xs):
        v = fjg(xs, params)
        R = [[v[3 * i + j] for j in range(3)] for i in range(3)]
        dR = [[[v[9 + 6 * (3 * i + j) + k] for k in range(6)] for j in range(3)] for i in range(3)]
        Rg = [[v[63 + 3 * i + j] for j in range(3)] for i in range(3)]
        G = symmetric_matrix(xs)
        return R, dR, Rg, G

    def F(xs):
        R, _, _, G = parts(xs)
        return [sum(G[i][l] * R[l][j] for l in range(3)) for i, j in G_INDEX]

    def J(xs):
        R, dR, _, G = parts(xs)
        rows = []
        for i, j in G_INDEX:
            row = []
            for k, (a, b) in enumerate(G_INDEX):
                val = sum(G[i][l] * dR[l][j][k] for l in range(3))
                # E_k = e_a e_b^T + e_b e_a^T (once on the diagonal): (E_k R)_ij
                if i == a:
                    val += R[b][j]
                if i == b and a != b:
                    val += R[a][j]
                row.append(val)
            rows.append(row)
        return rows

    def Fg(xs):
        _, _, Rg, G = parts(xs)
        return [sum(G[i][l] * Rg[l][j] for l in range(3)) for i, j in G_INDEX]

    return F, J, Fg


@cached(maxsize=1)
def square_hessian():
    """Compiled second derivatives of the square system ``G R_t(G)`` of
    :func:`symrmt.models.attention.equations.fixed_point_homotopy` (arguments ``(G, params + [t])``): the flat
    list of ``d^2 S_i / dG_j dG_k`` (``k``-major: six 6x6 matrices ``dJ/dG_k``), then ``dJ/dt`` and
    ``dJ/dgamma`` (6x6 each, row-major), then ``d^2 S/dt^2``, ``dS/dgamma`` and ``d^2 S/dgamma^2`` (6 each).  At ``t = 1`` it is the fixed point's own square system.

    Takes nothing; returns the compiled function.  (No doctest: deriving and compiling it takes seconds.)
    """
    def build():
        R = S.fixed_point_homotopy()
        G = S.block_trace_matrix()
        x = S.G_SYMBOLS
        dR = [R.diff(xk) for xk in x]  # 3x3 each
        d2R = {}
        for j in range(6):
            for k in range(j, 6):
                d2R[j, k] = d2R[k, j] = dR[j].diff(x[k])

        def E(k):
            a, b = S.G_INDEX[k]
            out = sp.zeros(3, 3)
            out[a, b] = out[b, a] = 1
            return out

        def upper(M):
            return [M[i, j] for i, j in S.G_INDEX]

        # S = G R: dS/dG_j = E_j R + G dR_j; d2S/dG_j dG_k = E_j dR_k + E_k dR_j + G d2R_jk
        hess = {}
        for j in range(6):
            for k in range(j, 6):
                hess[j, k] = hess[k, j] = upper(E(j) * dR[k] + E(k) * dR[j] + G * d2R[j, k])
        flat = [hess[j, k][i] for k in range(6) for i in range(6) for j in range(6)]
        for sym in (S.T_STRENGTH, S.gamma):
            Rs = R.diff(sym)
            dRs = [d.diff(sym) for d in dR]
            cols = [upper(E(j) * Rs + G * dRs[j]) for j in range(6)]
            flat += [cols[j][i] for i in range(6) for j in range(6)]
        # d^2 S/dt^2, dS/dgamma, d^2 S/dgamma^2 (the tube's curvature along the path)
        Rg = R.diff(S.gamma)
        flat += upper(G * R.diff(S.T_STRENGTH, 2)) + upper(G * Rg) + upper(G * Rg.diff(S.gamma))
        return [S.G_SYMBOLS, list(S.PARAMS) + [S.T_STRENGTH]], flat

    # the disk cache's key covers the symbolic layer's files, not this one: the recipe's name carries the
    # digest of its own build, so that a change here is never answered by a stale entry
    digest = hashlib.sha256(inspect.getsource(build).encode()).hexdigest()[:12]
    return compile_recipe(f"attention_square_hessian_{digest}", build)


def _hessian_parts(v):
    """``(dJ/dG_k for k < 6, dJ/dt, dJ/dgamma, S_tt, S_gamma, S_gammagamma)`` of the flat output of
    :func:`square_hessian` (6x6 row lists, then 6-vectors)."""
    dJ = [[list(v[36 * k + 6 * i:36 * k + 6 * i + 6]) for i in range(6)] for k in range(6)]
    Jt = [list(v[216 + 6 * i:216 + 6 * i + 6]) for i in range(6)]
    Jg = [list(v[252 + 6 * i:252 + 6 * i + 6]) for i in range(6)]
    return dJ, Jt, Jg, list(v[288:294]), list(v[294:300]), list(v[300:306])


def attention_chain(params, G, what, start=None):
    """Boxes of the chain that connects the proved ``G`` to ``L_0^{-1}``: at ``gamma_0 = max(gamma, 1)``
    along the kernel strength ``t`` from 0 to 1 (:func:`symrmt.models.attention.equations.fixed_point_homotopy`,
    its square system ``G F_t(G)``), then at ``t = 1`` along ``log gamma`` from ``gamma_0`` down to ``gamma``
    (``gamma(u) = gamma_0 (gamma/gamma_0)^u``, ``u`` in ``[0, 1]``, each interval of ``u`` a ball of
    ``gamma``; the square system of :func:`symrmt.models.attention.compiled.fixed_point_fjg`).  On each box
    ``det G != 0`` is proved, so its root is a fixed point.  ``ProofError`` when it cannot be made;
    :class:`~symrmt.errors.BranchError` when ``G`` is a proved box of another root.

    Returns ``(boxes, enclosure)``: the enclosure of the continued root at ``gamma`` (balls), which may start
    the chain of a smaller ``gamma``: ``start = (gamma_s, enclosure)`` with ``gamma < gamma_s < gamma_0`` (a ball, the
    same other parameters) runs only the ``gamma`` leg, from ``gamma_s``.

    (No doctest: the chain takes seconds; ``tests/models/attention/test_prove.py`` runs it through
    ``prove_attention(..., chain=True)``.)
    """
    flint = require_flint()
    gamma = params[0]
    rest = list(params[1:])
    with working_bits(CHAIN_BITS):
        g0 = to_arb(GAMMA_START) if gamma < to_arb(GAMMA_START) else gamma
        if start is not None and gamma < start[0] and start[0] < g0:
            g0 = start[0]
        else:
            start = None
        p0 = [g0] + rest
        fjt = arb_function(fixed_point_homotopy_fjt())
        fjg = arb_function(fixed_point_fjg()[0])
        hess = arb_function(square_hessian())
        L0 = flint.arb_mat(arb_function(noise_L0_function())(p0))
        try:
            inv = L0.inv()
        except ZeroDivisionError:
            raise ProofError(f"{what}: L_0 is not proved regular") from None
        first = [inv[i, j] for i, j in G_INDEX]

    def det_free(x):
        # a root of G F is a fixed point only where det G != 0: a box where it is not proved is refused
        return not flint.arb_mat(symmetric_matrix(x)).det().contains(0)

    def guarded(rows, x):
        if not det_free(x):
            return [[flint.arb(0, flint.arb("inf"))] * len(x) for _ in x]
        return [arb_checked(r, "the Jacobian") for r in rows]

    def leg(fn, fn_float, pv_at, dp, which, d2p=None):
        """``(F, J, Ft, H, approx)`` of one leg: ``pv_at(tt)`` the parameters (balls) at the leg's
        parameter, ``dp(tt)`` (``d2p(tt)``) the first (second) derivative of the moving parameter
        (``t`` or ``gamma``) in it."""
        def F(x, tt):
            return arb_checked(square_system(fn, pv_at(tt))[0](x), "the residual")

        def J(x, tt):
            return guarded(square_system(fn, pv_at(tt))[1](x), x)

        def Ft(x, tt):
            return [v * dp(tt) for v in arb_checked(square_system(fn, pv_at(tt))[2](x), "dF/dt")]

        def H(x, tt):
            if not det_free(x):
                return None
            pv = pv_at(tt)
            args = (pv + [flint.arb(1)]) if which == "gamma" else pv
            dJ, Jt, Jg, Stt, Sg, Sgg = _hessian_parts(arb_checked(list(hess(x, args)), "the second derivatives"))
            scale = dp(tt)
            if which == "gamma":  # F(u) = S(gamma(u)): F_uu = S_gg gamma'^2 + S_g gamma''
                s2 = d2p(tt)
                return dJ, [[v * scale for v in row] for row in Jg], [a * scale * scale + b * s2
                                                                     for a, b in zip(Sgg, Sg)]
            return dJ, Jt, Stt

        def approx(x, tt):  # float64 points and tangents (the same recipe printed for NumPy)
            pv = [float(v.mid()) if hasattr(v, "mid") else float(v) for v in pv_at(flint.arb(tt))]
            Fs, Js, Fts = square_system(lambda xs, p: [float(v) for v in fn_float(xs, p)], pv)
            s = float(dp(flint.arb(tt)).mid())
            return Fs(x), Js(x), [v * s for v in Fts(x)]

        return F, J, Ft, H, approx

    same = not (gamma < g0) and not (gamma > g0)
    if start is not None:
        n1, enc = 0, list(start[1])
    else:
        F, J, Ft, H, approx = leg(fjt, fixed_point_homotopy_fjt("numpy"), lambda tt: p0 + [tt],
                                  lambda tt: flint.arb(1), "t")
        n1, enc = continuation_chain(F, J, first, list(G) if same else None, what, Ft=Ft, approx=approx,
                                     max_boxes=ATTENTION_MAX_BOXES, H=H)
        if same:
            return n1, enc
    # gamma(u) = g0 exp(u log(gamma/g0)), u from 0 to 1 (dgamma/du = gamma(u) log(gamma/g0))
    with working_bits(CHAIN_BITS):
        lg = (gamma / g0).log()

    def gamma_at(u):
        return g0 * (u * lg).exp()

    F, J, Ft, H, approx = leg(fjg, fixed_point_fjg("numpy")[0], lambda u: [gamma_at(u)] + rest,
                              lambda u: gamma_at(u) * lg, "gamma", lambda u: gamma_at(u) * lg * lg)
    n2, enc = continuation_chain(F, J, enc, list(G), what + " (the gamma leg)", Ft=Ft, approx=approx,
                                 max_boxes=ATTENTION_MAX_BOXES, H=H)
    return n1 + n2, enc
