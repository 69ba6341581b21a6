"""Numeric layer: the SymPy systems of :mod:`symrmt.symbolic`, compiled to mpmath.

The one bridge between the layers is :func:`compile_expr` (``sympy.lambdify``
with ``modules="mpmath"`` and common-subexpression elimination).  Nothing here
retypes a formula; the solvers only drive Newton's method, continuation and
the linear algebra that the symbolic identities call for.

Precision: every function takes ``dps`` and works inside ``mpmath.workdps``;
the global ``mpmath.mp.dps`` is never changed.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath
import sympy as sp

from . import symbolic as S
from .params import ldl_pivoted


class SolverError(ArithmeticError):
    """The theory could not deliver a value it can stand behind."""


class ConvergenceError(SolverError):
    """Newton's method or the continuation did not converge (the message has the residual)."""


class BranchError(SolverError):
    """A solution was found but fails a branch check (positivity, bounds)."""


class PrecisionError(SolverError):
    """Two solves at different working precisions disagree in the requested digits."""


# ---------------------------------------------------------------- compile step

def _check_no_floats(expr) -> None:
    """Refuse expressions holding 53-bit Float literals: they would silently cap precision."""
    floats = expr.atoms(sp.Float) if hasattr(expr, "atoms") else set()
    if floats:
        raise ValueError(f"expression holds float literals {sorted(map(str, floats))[:3]}; use Rational")


def compile_expr(args, expr):
    """``sympy.lambdify(args, expr, modules="mpmath", cse=True)`` after a float-literal check."""
    _check_no_floats(sp.sympify(expr) if not isinstance(expr, sp.MatrixBase) else expr)
    return sp.lambdify(args, expr, modules="mpmath", cse=True)


@functools.lru_cache(maxsize=None)
def fixed_point_functions():
    """Compiled ``(F, dF/dG, dF/dgamma, det N)`` of the noise-only fixed point (cached)."""
    F, J, Fg = S.fixed_point_system()
    args = [S.G_SYMBOLS, S.PARAMS]
    return (
        compile_expr(args, F),
        compile_expr(args, J),
        compile_expr(args, Fg),
        compile_expr(args, S.det_N()),
        compile_expr(args, S.pencil_map()),
    )


@functools.lru_cache(maxsize=None)
def woodbury_D_function(r: int = 1):
    """Compiled ``D(coords; a_1, c)`` of the rank-``r`` low-rank part, ``3(2r+2)`` square (cached per ``r``)."""
    return compile_expr([S.lowrank_coords(r), S.a1, S.c], S.woodbury_D(r=r))


@functools.lru_cache(maxsize=None)
def closed_form_phi(kind: str):
    """Compiled ``(varphi, dvarphi/dgamma)`` of a special-case closed form of :mod:`symrmt.symbolic`.

    ``kind`` is ``"aligned"`` (:func:`symrmt.symbolic.aligned_phi`) or ``"a1_zero"``
    (:func:`symrmt.symbolic.a1_zero_phi`).  Arguments: ``(G, dG, a_1, c, snr, w_K^T w_Q)``.
    """
    phi = {"aligned": S.aligned_phi, "a1_zero": S.a1_zero_phi}[kind]()
    dphi, dsyms = S.phi_derivative(phi)
    return compile_expr([S.G_SYMBOLS, dsyms, S.a1, S.c, S.snr, S.wkwq], [phi, dphi])


@functools.lru_cache(maxsize=None)
def ridge_function():
    """Compiled closed form ``E_RR(gamma, c, snr)`` (cached)."""
    return compile_expr([S.gamma, S.c, S.snr], S.ridge_error_closed_form())


# ---------------------------------------------------------------- helpers

def mpf_of(value):
    """An exact input (Fraction, int, str, SymPy number) as an mpf at the current precision."""
    if isinstance(value, mpmath.mpf):
        return +value
    if isinstance(value, Fraction):
        return mpmath.mpf(value.numerator) / value.denominator
    if isinstance(value, sp.Basic):
        return mpmath.mpf(sp.N(value, mpmath.mp.dps + 5))
    return mpmath.mpf(value)


def gram_factor(gram, dps: int):
    """Rows of a square factor ``B`` with ``B B^T = gram`` (the vectors in an orthonormal basis).

    The LDL^T factorization with symmetric pivoting
    (:func:`symrmt.params.ldl_pivoted`) is done exactly in rational arithmetic;
    only the final square roots are taken in mpmath at ``dps`` digits.
    """
    perm, L, Dg = ldl_pivoted(gram)
    n = len(Dg)
    with mpmath.workdps(dps):
        B = [[mpmath.mpf(0)] * n for _ in range(n)]
        roots = [mpmath.sqrt(mpf_of(x)) for x in Dg]
        for i in range(n):
            for k in range(i + 1):
                if roots[k] != 0:
                    B[perm[i]][k] = mpf_of(L[i][k]) * roots[k]
        return B


def _norm(v):
    return mpmath.sqrt(sum(x * x for x in v))


def _lstsq(J, rhs):
    """Least-squares solve of the consistent ``m x n`` system ``J x = rhs`` (Householder QR).

    Written out because :func:`mpmath.qr_solve` divides by zero when a pivot is
    exactly 0 and tests rank against an absolute epsilon.  Raises
    :class:`ConvergenceError` when ``J`` is singular relative to its own scale.
    """
    m, n = J.rows, J.cols
    A = [[J[i, j] for j in range(n)] + [rhs[i]] for i in range(m)]
    scale = max(abs(x) for row in A for x in row[:n]) or mpmath.mpf(1)
    for j in range(n):
        s = mpmath.fsum(A[i][j] ** 2 for i in range(j, m))
        norm = mpmath.sqrt(s)
        if norm <= scale * mpmath.eps * 2 ** 10:
            raise ConvergenceError("singular Jacobian in the fixed-point solve")
        alpha = -norm if A[j][j] >= 0 else norm
        v = [mpmath.mpf(0)] * j + [A[j][j] - alpha] + [A[i][j] for i in range(j + 1, m)]
        vv = mpmath.fsum(x * x for x in v[j:])
        for k in range(j, n + 1):
            t = 2 * mpmath.fsum(v[i] * A[i][k] for i in range(j, m)) / vv
            for i in range(j, m):
                A[i][k] -= t * v[i]
    x = [mpmath.mpf(0)] * n
    for i in range(n - 1, -1, -1):
        x[i] = (A[i][n] - mpmath.fsum(A[i][k] * x[k] for k in range(i + 1, n))) / A[i][i]
    return x


# ---------------------------------------------------------------- noise-only fixed point

def asymptotic_start(gamma, c):
    """``Gm`` for ``gamma -> oo``: ``L^{-1} -> diag(1/gamma, [[0, I], [I, c S]]^{-1})``."""
    return [1 / gamma, mpmath.mpf(0), mpmath.mpf(0), -c, mpmath.mpf(1), mpmath.mpf(0)]


def _path_digits(gamma) -> int:
    """Working digits of the continuation: 20, plus two per decade of ``gamma`` below 1e-3
    (``tau(Q)`` grows like ``1/gamma`` there and the system gets stiff)."""
    lg = float(mpmath.log10(mpf_of(gamma)))
    return 20 + max(0, int(2 * (-lg - 3)))


class FixedPoint:
    """Newton + continuation solver for the noise-only block-trace matrix ``Gm(gamma)``.

    Parameters are ``(c, a_1, nu, d)`` as exact inputs; ``solve(gamma, dps)``
    returns ``(g, dg)``: the six entries of ``Gm`` and of ``dGm/dgamma``.
    The branch is the one connected to the ``gamma -> oo`` solution
    ``diag(1/gamma, [[-c, 1], [1, 0]])``: the solver starts there and follows the
    solution down in ``gamma`` (predictor from the implicit derivative, Newton
    corrector, step halving on trouble).
    """

    def __init__(self, c, a1, nu, d):
        self.raw = (c, a1, nu, d)
        self.F, self.J, self.Fg, self.detN, self.Mmap = fixed_point_functions()
        self._path = []  # (gamma, g) pairs at working precision, largest gamma first

    def _params(self, gamma):
        c, a1, nu, d = (mpf_of(x) for x in self.raw)
        return (mpf_of(gamma), c, a1, nu, d)

    def _damped(self, g, gamma, iterations=400):
        """Damped iteration ``Gm <- (Gm + (L_0 + R(-Gm))^{-1}) / 2``: robust far from the solution."""
        params = self._params(gamma)
        for _ in range(iterations):
            inv = mpmath.inverse(self.Mmap(g, params))
            new = [inv[i, j] for i, j in S.G_INDEX]
            change = _norm([a - b for a, b in zip(new, g)])
            g = [(a + b) / 2 for a, b in zip(new, g)]
            if change < mpmath.mpf(10) ** (-8) * (1 + _norm(g)):
                break
        return g

    def _newton(self, g, gamma, tol, maxsteps):
        """Newton's method on the 9 polynomial equations (least-squares steps, exact Jacobian).

        Stops when the step is below ``tol`` (relative), or when it stops shrinking
        (the attainable accuracy at this precision is reached; the caller's
        two-precision comparison then decides how many digits are right).
        """
        params = self._params(gamma)
        g = [mpmath.mpf(x) for x in g]
        step = None
        prev = None
        for _ in range(maxsteps):
            Fv = self.F(g, params)
            Jv = self.J(g, params)
            try:
                dx = _lstsq(Jv, -Fv)
            except (ValueError, ZeroDivisionError) as exc:
                raise ConvergenceError(
                    f"singular Jacobian at gamma={mpmath.nstr(params[0], 8)} ({exc})"
                ) from exc
            g = [gi + dxi for gi, dxi in zip(g, dx)]
            step = _norm(dx)
            size = 1 + _norm(g)
            if step <= tol * size:
                return g, step
            if prev is not None and step > prev / 4 and step <= mpmath.sqrt(tol) * size:
                return g, step  # stagnation at the precision floor
            prev = step
        raise ConvergenceError(
            f"Newton did not converge at gamma={mpmath.nstr(params[0], 8)}: last step {mpmath.nstr(step, 3)} "
            f"> tolerance {mpmath.nstr(tol, 3)} after {maxsteps} steps; "
            "try more digits or a gamma farther from the spectrum's edge"
        )

    def derivative(self, g, gamma):
        """``dGm/dgamma = -(dF/dG)^+ dF/dgamma`` (implicit differentiation)."""
        params = self._params(gamma)
        return list(_lstsq(self.J(g, params), -self.Fg(g, params)))

    def _continue_to(self, gamma, dps_path):
        """Follow the branch from large gamma down (or up) to ``gamma`` at ``dps_path`` digits."""
        with mpmath.workdps(dps_path):
            gamma = mpf_of(gamma)
            tol = mpmath.mpf(10) ** (-(dps_path - 5))
            if self._path:
                # nearest stored point in log-gamma
                g0, start = min(((gg, gm) for gm, gg in self._path), key=lambda t: abs(mpmath.log(t[1] / gamma)))
                g0 = [mpmath.mpf(x) for x in g0]
            else:
                c = mpf_of(self.raw[0])
                scale = 1 + abs(mpf_of(self.raw[1])) + abs(mpf_of(self.raw[3])) + mpmath.sqrt(abs(mpf_of(self.raw[2])))
                start = max(gamma, mpmath.mpf(10) ** 4 * scale**2 * (1 + c) * (1 + 1 / c))
                g0 = self._damped(asymptotic_start(start, c), start)
                g0, _ = self._newton(g0, start, tol, 50)
                self._path.append((start, g0))
            cur, g = start, g0
            ratio = mpmath.mpf(4)
            steps = 0
            while cur != gamma:
                steps += 1
                if steps > 4000:
                    raise ConvergenceError(f"continuation to gamma={mpmath.nstr(gamma, 8)} took too many steps")
                nxt = cur / ratio if gamma < cur else cur * ratio
                if (gamma < cur and nxt < gamma) or (gamma > cur and nxt > gamma):
                    nxt = gamma
                dg = self.derivative(g, cur)
                pred = [gi + dgi * (nxt - cur) for gi, dgi in zip(g, dg)]
                try:
                    new, _ = self._newton(pred, nxt, tol, 12)
                except (ConvergenceError, ZeroDivisionError):
                    new = None
                # the corrector must stay close to the predictor: no jump to another branch
                if new is None or _norm([a - b for a, b in zip(new, pred)]) > mpmath.mpf("0.1") * (1 + _norm(g)):
                    ratio = 1 + (ratio - 1) / 2
                    if ratio < 1 + mpmath.mpf(10) ** -6:
                        raise ConvergenceError(
                            f"continuation stalled at gamma={mpmath.nstr(cur, 8)} on the way to {mpmath.nstr(gamma, 8)}"
                        )
                    continue
                cur, g = nxt, new
                ratio = min(ratio * 2, mpmath.mpf(16))
            self._path.append((gamma, g))
            if len(self._path) > 4096:  # keep memory bounded in long-lived processes
                self._path = self._path[:1] + self._path[-2048:]
            return g

    def solve(self, gamma, dps: int):
        """``(g, dg)`` at ``gamma`` with a Newton polish at ``dps`` digits; branch-checked."""
        g = self._continue_to(gamma, dps_path=_path_digits(gamma))
        with mpmath.workdps(dps):
            gam = mpf_of(gamma)
            tol = mpmath.mpf(10) ** (-dps)
            g, step = self._newton(g, gam, tol, 8 + dps // 5)
            params = self._params(gam)
            res = _norm(self.F(g, params))
            dN = self.detN(g, params)
            if dN == 0 or not (0 < g[0] <= 1 / gam * (1 + tol)):
                raise BranchError(
                    f"fixed point at gamma={mpmath.nstr(gam, 8)} is off the physical branch: "
                    f"tau(Q) = {mpmath.nstr(g[0], 8)} must lie in (0, 1/gamma], det N = {mpmath.nstr(dN, 5)}"
                )
            dg = self.derivative(g, gam)
            noise_err = -gam**2 * dg[0]
            if not (-tol * 100 <= noise_err <= 1 + tol * 100):
                raise BranchError(
                    f"at gamma={mpmath.nstr(gam, 8)} the noise-only error {mpmath.nstr(noise_err, 8)} "
                    "is outside [0, 1]: wrong branch"
                )
            return g, dg, res


# ---------------------------------------------------------------- low-rank (Woodbury) part

def _symmetric(g):
    """The 3x3 symmetric matrix (nested lists) from its six entries in ``S.G_INDEX`` order."""
    out = [[None] * 3 for _ in range(3)]
    for (i, j), v in zip(S.G_INDEX, g):
        out[i][j] = out[j][i] = v
    return out


def woodbury_value(g, dg, Dm):
    """``(varphi, dvarphi/dgamma)`` from ``Gm``, ``dGm`` and ``D`` (see :mod:`symrmt.symbolic`).

    ``D`` is ``3 s x 3 s`` with ``s = k + 1`` (12x12 for rank one);
    ``x = (I + D H)^{-1} e``, ``varphi = e^T H x``, ``varphi' = x^T (Gm' (x) I_s) x``.
    """
    gm = _symmetric(g)
    dgm = _symmetric(dg)
    n = Dm.rows
    size = n // 3
    Hm = mpmath.matrix(n, n)
    for a in range(3):
        for b in range(3):
            for i in range(size):
                Hm[a * size + i, b * size + i] = gm[a][b]
    M = mpmath.eye(n) + Dm * Hm
    e = mpmath.matrix(n, 1)
    e[0] = 1
    x = mpmath.lu_solve(M, e)
    phi = (Hm * x)[0]
    dphi = mpmath.mpf(0)
    for a in range(3):
        for b in range(3):
            dphi += dgm[a][b] * sum(x[a * size + i] * x[b * size + i] for i in range(size))
    return phi, dphi
