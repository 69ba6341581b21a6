"""Numeric layer: the SymPy systems of :mod:`symrmt.models.attention.equations`, compiled to mpmath.

The one bridge between the layers is :func:`compile_expr` (``sympy.lambdify``
with ``modules="mpmath"`` and common-subexpression elimination).  Nothing here
retypes a formula; the solvers only drive Newton's method, continuation and
the linear algebra that the symbolic identities call for.

Precision: every function takes ``dps`` and works inside ``mpmath.workdps``;
the global ``mpmath.mp.dps`` is never changed.
"""

from __future__ import annotations

import math

import mpmath

from symrmt.errors import BranchError, ConvergenceError, PrecisionError, SolverError  # noqa: F401 (re-exported)
from symrmt.models.attention import equations as S
from symrmt.errors import ParameterError
from symrmt.models.attention.geometry import as_low_rank, ldl_pivoted
from symrmt.core.continuation import CHECK_TIGHTEN, PATHS_AGREE, POLISH_MOVE, Geometric, check_polish, follow, two_pass
from symrmt.core.linalg import qr_solve, solve_dense
from symrmt.core.newton import newton
from symrmt.core.numbers import FLOAT64, FLOAT_EPS, MPMATH, context_of, mpf_of


# the compile step (symrmt.codegen.compile) and the model's recipes (compiled.py) are re-exported here
from symrmt.codegen.compile import SAFE_BUILTINS, TARGETS, Compiled, compile_expr, compile_recipe  # noqa: E402,F401
from symrmt.models.attention.compiled import (  # noqa: E402,F401
    closed_form_phi,
    fixed_point_fjg,
    fixed_point_functions,
    ridge_function,
    woodbury_D_function,
)


# ---------------------------------------------------------------- helpers

def gram_factor(gram, dps: int):
    """Rows of a square factor ``B`` with ``B B^T = gram`` (the vectors in an orthonormal basis).

    The LDL^T factorization with symmetric pivoting
    (:func:`symrmt.models.attention.geometry.ldl_pivoted`) is done exactly in rational arithmetic;
    only the final square roots are taken in mpmath at ``dps`` digits.  Takes a square PSD matrix of
    exact entries; returns a list of rows of mpf; raises :class:`~symrmt.errors.ParameterError` when
    the matrix is not PSD.

    >>> gram_factor([[4, 2], [2, 2]], 20)   # rows (2, 0) and (1, 1)
    [[mpf('2.0'), mpf('0.0')], [mpf('1.0'), mpf('1.0')]]
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



NEQ, NUNK = 9, 6  # the fixed point: 9 polynomial equations in the 6 entries of the symmetric Gm


def _newton(fjg, g, params, tol, maxsteps, sqrt, eps):
    """Newton's method on the fixed point, for mpf or float numbers.

    ``fjg(g, params)`` is the compiled flat list ``F (9), dF/dG (54, row-major), dF/dgamma (9)``.
    Each step solves the least-squares system ``J dx = -F`` and, with the same
    factorization, ``J dG/dgamma = -dF/dgamma`` (the implicit derivative), so the
    last evaluation also yields ``dGm/dgamma``.  Stops when the step is below
    ``tol`` (relative to ``1 + |g|``), or when it stops shrinking below ``sqrt(tol)``
    (the attainable accuracy at this precision).  Returns ``(g, dg, step)`` with
    ``step`` the last relative step: the accuracy the caller may check.
    Raises :class:`ConvergenceError` (with the residual and the last step) otherwise.
    The iteration is :func:`symrmt.core.newton.newton`.
    """
    def linear(x):
        v = fjg(x, params)
        rows = [v[NEQ + NUNK * i:NEQ + NUNK * (i + 1)] for i in range(NEQ)]
        dx, dg = qr_solve(rows, [[-y for y in v[:NEQ]], [-y for y in v[NEQ + NEQ * NUNK:]]], sqrt, eps)
        return dx, dg

    return newton(linear, g, context_of(sqrt), tol, maxsteps,
                  residual=lambda x: max(abs(y) for y in fjg(x, params)[:NEQ]),
                  where=f" at gamma={float(params[0]):.8g}",
                  hint="; try more digits or a gamma farther from the spectrum's edge")


def lowrank_D(geometry, a1, c, dps: int):
    """``D`` of the low-rank part for a geometry (``Geometry`` or ``LowRankGeometry`` with ``alpha = 1``).

    The vectors are placed by the exact factorization :func:`gram_factor` and fed to
    the compiled :func:`woodbury_D_function` of the geometry's rank, at ``dps`` digits.  Returns an
    mpmath matrix; raises :class:`~symrmt.errors.ParameterError` for ``alpha != 1``.

    Examples
    --------
    ``mu`` of norm 1, ``W = I``, ``a_1 = c = 1/2``: the ``K`` block holds ``(a_1/c) C C^T = C C^T``:

    >>> from fractions import Fraction
    >>> from symrmt.models.attention.geometry import Geometry, LowRankGeometry
    >>> D = lowrank_D(Geometry(snr=1), Fraction(1, 2), Fraction(1, 2), 20)
    >>> D.rows, float(D[0, 4]), float(D[8, 9]), float(D[2, 4])   # C C^T = [[1, 1], [1, 1]] + I_2
    (12, 1.0, 1.0, 0.0)
    >>> lowrank_D(LowRankGeometry([[1]], alpha=2), 1, 1, 15)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: lowrank_D needs alpha = 1; rescale with LowRankGeometry.scaled() and f(alpha t) first
    """
    geometry = as_low_rank(geometry)
    if geometry.alpha != 1:
        raise ParameterError("lowrank_D needs alpha = 1; rescale with LowRankGeometry.scaled() and f(alpha t) first")
    Dfun = woodbury_D_function(geometry.r)
    B = gram_factor(geometry.gram(), dps)
    with mpmath.workdps(dps):
        return Dfun([x for row in B for x in row], mpf_of(a1), mpf_of(c))


# ---------------------------------------------------------------- noise-only fixed point

def asymptotic_start(gamma, c) -> tuple:
    """``Gm`` for ``gamma -> oo``: ``L^{-1} -> diag(1/gamma, [[0, I], [I, c S]]^{-1})`` (at the working
    precision; not cached: the value depends on it).

    Returns the six entries ``(G11, G12, G13, G22, G23, G33) = (1/gamma, 0, 0, -c, 1, 0)``.

    >>> asymptotic_start(mpmath.mpf(4), mpmath.mpf("0.5"))
    (mpf('0.25'), mpf('0.0'), mpf('0.0'), mpf('-0.5'), mpf('1.0'), mpf('0.0'))
    """
    return (1 / gamma, mpmath.mpf(0), mpmath.mpf(0), -c, mpmath.mpf(1), mpmath.mpf(0))


def _path_digits(gamma) -> int:
    """Working digits of the mpmath continuation: 20, plus two per decade of ``gamma`` below 1e-3
    (``tau(Q)`` grows like ``1/gamma`` there and the system gets stiff)."""
    lg = float(mpmath.log10(mpf_of(gamma)))
    return 20 + max(0, int(2 * (-lg - 3)))


#: relative Newton tolerance of the float continuation (its results are only starting points)
FLOAT_TOL = 1e-12
#: the continuation's trust region near the predictor, as a fraction of ``1 + |Gm|``
CORRECTION_FRACTION = 0.1
#: the continuation's trust region near the previous point, as a fraction of ``1 + |Gm|`` (the steps
#: are geometric in gamma, ratio up to 16): the largest accepted move measured on c in {1/10, 1/2, 2, 5},
#: f in {erf, tanh, relu}, gamma from 1e-9 to 1e8 is 0.36; a corrector that lands farther has left the branch
MOVE_FRACTION = 1.0
#: the checking pass of the continuation: ratio steps at most this (the first pass: up to 16), and the
#: trust region ``CHECK_TIGHTEN`` times tighter; its end point must agree with the first pass's to
#: ``PATHS_AGREE`` (:func:`symrmt.core.continuation.two_pass`)
CHECK_RATIO = 4.0
#: the polish at ``dps`` digits stops at a relative step of ``10**-(dps - NEWTON_SLACK)``
NEWTON_SLACK = 5


class FixedPoint:
    """Newton + continuation solver for the noise-only block-trace matrix ``Gm(gamma)``.

    Parameters are ``(c, a_1, nu, d)`` as exact inputs or mpf (an mpf must carry at
    least the working precision of every later solve); ``solve(gamma, dps)``
    returns ``(g, dg, step)``: the six entries of ``Gm``, of ``dGm/dgamma`` and the
    last relative Newton step (the accuracy reached).

    The branch is the one connected to the ``gamma -> oo`` solution
    ``diag(1/gamma, [[-c, 1], [1, 0]])``: the solver starts there and follows the
    solution in ``gamma`` (predictor from the implicit derivative, Newton
    corrector, step halving on trouble, the core's trust region near the predictor and near the
    previous point); each leg is followed twice, the second time with ratio steps at most
    :data:`CHECK_RATIO` and a tighter trust region, and the two end points must agree
    (:func:`symrmt.core.continuation.two_pass`); the polish must stay at that point
    (:func:`symrmt.core.continuation.check_polish`).  The continuation runs on Python floats
    (the same compiled code) and remembers every point it reached, so a curve is
    followed point to point; only the final Newton polish runs at ``dps`` digits.
    Where the float continuation fails (stiff systems), an mpmath continuation at
    :func:`_path_digits` digits takes over.

    Raises :class:`~symrmt.errors.ConvergenceError` or :class:`~symrmt.errors.BranchError` (from :meth:`solve`)
    when no point on the physical branch can be certified.  (No doctest: it compiles the fixed point's code and solves; :func:`symrmt.models.attention.theory.attention_limit`'s
    example runs it.)
    """

    def __init__(self, c, a1, nu, d):
        self.raw = (c, a1, nu, d)
        self.fjg, self.detN, self.Mmap = fixed_point_fjg()
        self._ffjg = self.fjg.float_version()
        self._path = []  # (gamma, g) pairs of the mpmath continuation, largest gamma first
        self._fpath = []  # (gamma, g, dg) floats of the float continuation
        self._mp_params = {}

    # -- parameters
    def _params(self, gamma):
        prec = mpmath.mp.prec
        fixed = self._mp_params.get(prec)
        if fixed is None:
            fixed = self._mp_params[prec] = tuple(mpf_of(x) for x in self.raw)
        return (mpf_of(gamma),) + fixed

    def _fparams(self, gamma: float):
        if not hasattr(self, "_float_fixed"):
            with mpmath.workdps(20):
                self._float_fixed = tuple(float(mpf_of(x)) for x in self.raw)
        return (gamma,) + self._float_fixed

    def newton(self, g, gamma, tol, maxsteps):
        """Newton's method (:func:`_newton`) on the fixed point at ``gamma`` from ``g``, at the working precision.

        Takes the six entries ``g``, ``gamma`` (exact or mpf), the relative step ``tol`` to reach and ``maxsteps``;
        returns ``(g, dg, step)``.  Raises :class:`~symrmt.errors.NewtonError` (a
        :class:`~symrmt.errors.ConvergenceError`) naming ``gamma``, the residual and the last step when it does
        not converge in ``maxsteps`` steps.  (No doctest: it compiles the fixed point's code; :meth:`solve` runs it.)
        """
        return _newton(self.fjg, [mpmath.mpf(x) for x in g], self._params(gamma), tol, maxsteps, mpmath.sqrt, mpmath.eps)

    # -- start at large gamma
    def _damped(self, g, gamma, iterations=400):
        """Damped iteration ``Gm <- (Gm + (L_0 + R(-Gm))^{-1}) / 2``: robust far from the solution."""
        params = self._params(gamma)
        for _ in range(iterations):
            # mpmath's inverse (LU with scaled partial pivoting at 20 more bits): its singularity test is the one
            # that stops a hopeless start early (c far outside ATTENTION_C_RANGE), which the core's Gauss-Jordan
            # with plain partial pivoting does not reproduce
            inv = mpmath.inverse(self.Mmap(g, params))
            new = [inv[i, j] for i, j in S.G_INDEX]
            change = _norm([a - b for a, b in zip(new, g)])
            g = [(a + b) / 2 for a, b in zip(new, g)]
            if change < mpmath.mpf(10) ** (-8) * (1 + _norm(g)):
                break
        return g

    def _large_gamma(self, gamma):
        """``(start, g, dg)`` at 20 digits at a gamma far above the spectrum (and above ``gamma``)."""
        with mpmath.workdps(20):
            gamma = mpf_of(gamma)
            c = mpf_of(self.raw[0])
            scale = 1 + abs(mpf_of(self.raw[1])) + abs(mpf_of(self.raw[3])) + mpmath.sqrt(abs(mpf_of(self.raw[2])))
            start = max(gamma, mpmath.mpf(10) ** 4 * scale**2 * (1 + c) * (1 + 1 / c))
            g0 = self._damped(asymptotic_start(start, c), start)
            g0, dg0, _ = self.newton(g0, start, mpmath.mpf(10) ** -15, 50)
            return start, g0, dg0

    # -- float continuation
    def _float_continue(self, gamma: float):
        """Follow the branch on floats to ``gamma``; returns the float ``g``. Raises :class:`ConvergenceError`
        (or :class:`BranchError` when the checking pass ends elsewhere: the caller then tries mpmath)."""
        if self._ffjg is None:
            raise ConvergenceError("no float version of the compiled system")
        if not self._fpath:
            start, g0, dg0 = self._large_gamma(gamma)
            self._fpath.append((float(start), [float(x) for x in g0], [float(x) for x in dg0]))
        cur, g, dg = min(self._fpath, key=lambda t: abs(math.log(t[0] / gamma)))
        if cur != gamma:
            g0, dg0 = g, dg
            g, dg = self._float_follow(g0, dg0, cur, gamma, False)
            # the second pass (smaller steps, tighter trust region) must end at the same point
            two_pass(lambda fine: self._float_follow(g0, dg0, cur, gamma, fine)[0], first=g, agree=PATHS_AGREE)
        self._fpath.append((gamma, g, dg))
        if len(self._fpath) > 4096:  # keep memory bounded in long-lived processes
            self._fpath = self._fpath[:1] + self._fpath[-2048:]
        return g

    def _float_follow(self, g, dg, cur, gamma, fine):
        """The float continuation from ``cur`` to ``gamma`` (:func:`symrmt.core.continuation.follow`); ``fine``:
        the checking pass (ratio steps at most :data:`CHECK_RATIO`, the trust region ``CHECK_TIGHTEN`` times
        tighter)."""
        def correct(pred, nxt):
            new, ndg, _ = _newton(self._ffjg, pred, self._fparams(nxt), FLOAT_TOL, 12, math.sqrt, FLOAT_EPS)
            return new, ndg

        schedule = Geometric(cur, gamma, CHECK_RATIO, CHECK_RATIO, 1e-6) if fine else Geometric(cur, gamma, 4.0, 16.0,
                                                                                                1e-6)
        # the trust region: near the predictor (no jump to another branch) and near the previous point
        return follow(correct, g, dg, cur, gamma, schedule, FLOAT64,
                      correction=CORRECTION_FRACTION, move=MOVE_FRACTION, tighten=CHECK_TIGHTEN if fine else 1,
                      max_steps=2000, catch=(ConvergenceError, ArithmeticError, ValueError),
                      finite=lambda new, ndg: all(map(math.isfinite, new + ndg)),
                      stalled=lambda t: f"float continuation stalled at gamma={t:.8g}",
                      too_many=lambda: f"float continuation to gamma={gamma:.8g} took too many steps")

    # -- mpmath continuation (fallback for stiff systems)
    def _continue_to(self, gamma, dps_path):
        """Follow the branch from large gamma down (or up) to ``gamma`` at ``dps_path`` digits, twice (the
        second pass with smaller steps and a tighter trust region must end at the same point)."""
        with mpmath.workdps(dps_path):
            gamma = mpf_of(gamma)
            tol = mpmath.mpf(10) ** (-(dps_path - 5))
            # nearest stored point in log-gamma, of this continuation or of the float one
            known = [(gm, gg) for gm, gg in self._path] + [(mpf_of(gm), gg) for gm, gg, _ in self._fpath]
            if known:
                start, g0 = min(known, key=lambda t: abs(mpmath.log(t[0] / gamma)))
                g0, dg0, _ = self.newton(g0, start, tol, 50)
            else:
                start, g0, dg0 = self._large_gamma(gamma)
                g0, dg0, _ = self.newton(g0, start, tol, 50)
                self._path.append((start, g0))

            def correct(pred, nxt):
                new, ndg, _ = self.newton(pred, nxt, tol, 12)
                return new, ndg

            def path(fine):
                # the same continuation as the float one, at dps_path digits
                first, largest = (CHECK_RATIO, CHECK_RATIO) if fine else (4, 16)
                schedule = Geometric(start, gamma, mpmath.mpf(first), mpmath.mpf(largest), mpmath.mpf(10) ** -6)
                return follow(correct, g0, dg0, start, gamma, schedule, MPMATH,
                              correction=mpmath.mpf(str(CORRECTION_FRACTION)), move=MOVE_FRACTION,
                              tighten=CHECK_TIGHTEN if fine else 1, max_steps=4000,
                              catch=(ConvergenceError, ZeroDivisionError), finite=None,
                              stalled=lambda t: (f"continuation stalled at gamma={mpmath.nstr(t, 8)} on the way "
                                                 f"to {mpmath.nstr(gamma, 8)}"),
                              too_many=lambda: f"continuation to gamma={mpmath.nstr(gamma, 8)} took too many steps")[0]

            g = g0
            if start != gamma:
                g = two_pass(path, first=path(False), agree=PATHS_AGREE)
            self._path.append((gamma, g))
            if len(self._path) > 4096:  # keep memory bounded in long-lived processes
                self._path = self._path[:1] + self._path[-2048:]
            return g

    def derivative(self, g, gamma):
        """``dGm/dgamma = -(dF/dG)^+ dF/dgamma`` (implicit differentiation) at the current precision.

        Takes the six entries ``g`` and ``gamma`` (mpf); returns the six entries of ``dGm/dgamma``.  (No doctest: it compiles the fixed point's code and solves; :func:`symrmt.models.attention.theory.attention_limit`'s
        example runs it.)
        """
        v = self.fjg(g, self._params(gamma))
        rows = [v[NEQ + NUNK * i:NEQ + NUNK * (i + 1)] for i in range(NEQ)]
        return qr_solve(rows, [[-x for x in v[NEQ + NEQ * NUNK:]]], mpmath.sqrt, mpmath.eps)[0]

    def start(self, gamma):
        """A starting point for the polish at ``gamma``: float continuation, else the mpmath one.

        Takes ``gamma``; returns the six entries (floats or mpf); raises
        :class:`~symrmt.errors.ConvergenceError` when neither continuation reaches ``gamma``.  (No doctest: it compiles the fixed point's code and solves; :func:`symrmt.models.attention.theory.attention_limit`'s
        example runs it.)
        """
        try:
            return self._float_continue(float(mpf_of(gamma)))
        except (ConvergenceError, ArithmeticError, ValueError):
            return self._continue_to(gamma, dps_path=_path_digits(gamma))

    def solve(self, gamma, dps: int, start=None):
        """``(g, dg, step)`` at ``gamma``: Newton polish at ``dps`` digits from ``start``
        (default :meth:`start`), branch-checked; ``step`` is the last relative Newton step.

        Raises :class:`~symrmt.errors.ConvergenceError` when Newton does not converge and
        :class:`~symrmt.errors.BranchError` when the point is off the physical branch.  (No doctest: it compiles the fixed point's code and solves; :func:`symrmt.models.attention.theory.attention_limit`'s
        example runs it.)
        """
        if start is None:
            start = self.start(gamma)
        with mpmath.workdps(dps):
            gam = mpf_of(gamma)
            tol = mpmath.mpf(10) ** (-(dps - NEWTON_SLACK))
            g, dg, step = self.newton(start, gam, tol, 8 + dps // 5)
            # the polish must stay at the continuation's point (else it found another root)
            check_polish(g, [mpmath.mpf(x) for x in start], dps, POLISH_MOVE, nstr=lambda v: mpmath.nstr(v, 3))
            params = self._params(gam)
            dN = self.detN(g, params)
            slack = mpmath.mpf(10) ** (-dps)
            if dN == 0 or not (0 < g[0] <= 1 / gam * (1 + slack)):
                raise BranchError(
                    f"fixed point at gamma={mpmath.nstr(gam, 8)} is off the physical branch: "
                    f"tau(Q) = {mpmath.nstr(g[0], 8)} must lie in (0, 1/gamma], det N = {mpmath.nstr(dN, 5)}"
                )
            noise_err = -gam**2 * dg[0]
            if not (-slack * 100 <= noise_err <= 1 + slack * 100):
                raise BranchError(
                    f"at gamma={mpmath.nstr(gam, 8)} the noise-only error {mpmath.nstr(noise_err, 8)} "
                    "is outside [0, 1]: wrong branch"
                )
            return g, dg, step


# ---------------------------------------------------------------- low-rank (Woodbury) part

def _symmetric(g):
    """The 3x3 symmetric matrix (nested lists) from its six entries in ``S.G_INDEX`` order."""
    out = [[None] * 3 for _ in range(3)]
    for (i, j), v in zip(S.G_INDEX, g):
        out[i][j] = out[j][i] = v
    return out


def _solve_dense(M, rhs):
    """Gaussian elimination with partial pivoting on nested lists of mpf (``M`` is overwritten)."""
    return solve_dense(M, rhs, mpmath.mpf(0), "singular Woodbury system I + D H")


def woodbury_value(g, dg, Dm):
    """``(varphi, dvarphi/dgamma)`` from ``Gm``, ``dGm`` and ``D`` (see :mod:`symrmt.models.attention.equations`).

    ``D`` is ``3 s x 3 s`` with ``s = k + 1`` (12x12 for rank one);
    ``x = (I + D H)^{-1} e``, ``varphi = e^T H x``, ``varphi' = x^T (Gm' (x) I_s) x``.
    ``H = Gm (x) I_s`` has three non-zeros per column, so ``D H`` costs ``O(n^2)``.  ``g`` and ``dg`` are
    the six entries of ``Gm`` and ``dGm/dgamma``; returns two mpf.

    Examples
    --------
    Without a low-rank part (``D = 0``) it is ``(G_11, dG_11/dgamma)``:

    >>> g = [mpmath.mpf(x) for x in ("0.5", "0.1", "0.2", "1", "0.3", "2")]
    >>> dg = [mpmath.mpf(x) for x in ("-0.25", "0", "0", "0", "0", "0")]
    >>> woodbury_value(g, dg, mpmath.zeros(12, 12))
    (mpf('0.5'), mpf('-0.25'))
    """
    gm = _symmetric(g)
    dgm = _symmetric(dg)
    D = Dm.tolist() if hasattr(Dm, "tolist") else [list(row) for row in Dm]
    n = len(D)
    size = n // 3
    one = mpmath.mpf(1)
    M = []
    for r, Drow in enumerate(D):
        row = [None] * n
        for b in range(3):
            for i in range(size):
                row[b * size + i] = sum(Drow[a * size + i] * gm[a][b] for a in range(3))
        row[r] += one
        M.append(row)
    e = [mpmath.mpf(0)] * n
    e[0] = one
    x = _solve_dense(M, e)
    phi = sum(gm[0][b] * x[b * size] for b in range(3))
    dphi = mpmath.mpf(0)
    for a in range(3):
        for b in range(3):
            dphi += dgm[a][b] * sum(x[a * size + i] * x[b * size + i] for i in range(size))
    return phi, dphi
