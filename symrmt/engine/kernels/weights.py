r"""The Gaussian-equivalent kernel for a general weight matrix ``W`` (no signal).

For ``Z`` a ``p x n`` Gaussian matrix and a deterministic ``p x p`` matrix ``W`` (any real matrix:
not symmetric, not normal, not ``alpha I + finite rank``), the kernel
``K = f(Z^T W Z/sqrt(p))/sqrt(p)`` with ``K_ii = 0`` has, for normalized traces of rational
expressions in ``Z``, ``W`` and ``K``, the Gaussian equivalent (``docs/theory.md``, section 14)

.. math::

    K \simeq \frac{a_1}{s}\Big(\frac{Z^T W Z}{p} - \frac{\operatorname{tr} W}{p} I_n\Big)
    + b\,\frac{A}{\sqrt p},\qquad b^2 = \nu - a_1^2,

where, for ``i != j``, ``t_ij = x_i^T W x_j/sqrt(p)`` has variance ``s^2 = ||W||_F^2/p`` and
``corr(t_ij, t_ji) = rho = tr(W^2)/||W||_F^2``; ``a_k``, ``nu`` are the Hermite data of
``f_s(t) = f(s t)`` (``s`` carried as the Hermite scale, as ``alpha`` is for ``W = alpha I``), and
``A`` is a fresh ``elliptic(n, tau)`` matrix (``N(0, 1)`` entries) with

.. math::

    \tau = \frac{\sum_{k \ge 2} \rho^k a_k^2/k!}{\nu - a_1^2}

(Mehler's formula: ``Cov(f_s(u), f_s(v)) = sum_k rho^k a_k^2/k!`` for standard Gaussians of
correlation ``rho``).  At ``W = alpha I`` this is the package's kernel (``s = alpha``, ``rho = 1``,
``tau = 1``: a GOE).

Several kernels over the same ``Z`` (heads): independent random heads ``W_h = Q_h K_h^T/sqrt(p d)``
with Gaussian ``Q_h, K_h`` (``p x d``) have ``s_h -> 1``, ``rho_h -> 0`` and ``tr(W_h W_g^T)/p -> 0``,
so each remainder is an independent Ginibre matrix (:func:`random_head_kernel`).

A signal, ``X = Z + finite rank`` (``mu*y.T``), changes each ``t_ij`` by ``O(1/sqrt(p))``: to first order it
acts through ``f'``, whose mean is the linear coefficient, so it sits in the linear part, written with ``X`` in
place of ``Z`` (``docs/theory.md``, section 14); the remainder is the same.
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from symrmt.core.numbers import exact_dot
from symrmt.engine.laws.elliptic import elliptic_node
from symrmt.engine.laws.given import GivenMatrix, GivenVector, load_array
from symrmt.engine.lang.matrices import (
    Const, Gaussian, Identity, MatProduct, MatrixNode, MatSum, ModelError, Scaled, Transpose, walk,
)
from symrmt.engine.lang.vectors import Vector
from symrmt.cache import cache_dict
from symrmt.errors import NotDerived, ParameterError, PrecisionError
from symrmt.hermite import PRESETS, Nonlinearity, parse_f
from symrmt.hermite.variable import T
from symrmt.parsing.limits import LIMITS

__all__ = ["weight_statistics", "general_coefficients", "remainder_correlation", "kernel_given",
           "random_head_kernel", "check_weights", "check_signal_matrix", "is_finite_rank", "is_deterministic",
           "signal_size", "SIGNAL_EPS_MAX", "MAX_MEHLER_TERMS"]

#: the most Hermite orders summed in Mehler's series for the remainder's correlation
MAX_MEHLER_TERMS = 60


def check_weights(W, what: str = "W") -> np.ndarray:
    """``W`` as a finite real square float64 array (``ParameterError`` naming what is wrong); the size
    caps and the file-trust rule of :func:`symrmt.engine.laws.given.load_array` apply to a path.

    >>> check_weights([[1.0, 0.0], [0.0, 1.0]]).shape
    (2, 2)
    >>> check_weights([[0.0, 0.0], [0.0, 0.0]])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: W: ||W||_F^2/p = 0: the kernel's argument has no variance (a zero matrix)
    """
    arr = load_array(W, what, 2)
    if arr.shape[0] != arr.shape[1]:
        raise ParameterError(f"{what}: the weights must be a square p x p matrix, got shape {arr.shape}")
    s2 = float(np.einsum("ij,ij->", arr, arr)) / arr.shape[0]
    if not math.isfinite(s2):
        raise ParameterError(f"{what}: ||W||_F^2/p is not finite (overflow in float64)")
    if s2 <= 0:
        raise ParameterError(f"{what}: ||W||_F^2/p = 0: the kernel's argument has no variance (a zero matrix)")
    return arr


def weight_statistics(W, dps: int = 40) -> dict:
    """``{"p", "s2", "s", "rho", "m"}`` of a ``p x p`` array: ``s^2 = ||W||_F^2/p`` (the variance of
    ``t_ij = x_i^T W x_j/sqrt(p)``, ``i != j``), ``rho = tr(W^2)/||W||_F^2 = corr(t_ij, t_ji)`` and
    ``m = tr(W)/p`` (``E t_ii = sqrt(p) m``), as mpmath numbers at ``dps`` digits, summed from the
    float64 entries exactly, with one rounding (:func:`symrmt.core.numbers.exact_dot`).

    >>> st = weight_statistics(np.array([[2.0, 0.0], [0.0, 2.0]]))
    >>> float(st["s"]), float(st["rho"]), float(st["m"])
    (2.0, 1.0, 2.0)
    """
    arr = check_weights(W)
    p = arr.shape[0]
    with mpmath.workdps(dps + 10):
        sq = exact_dot(arr, arr)
        tw2 = exact_dot(arr, arr.T)
        tr = exact_dot(np.diag(arr), np.ones(p))
        s2 = sq / p
        return {"p": p, "s2": +s2, "s": mpmath.sqrt(s2), "rho": tw2 / sq, "m": tr / p}


def _scaled(f, s, center: bool):
    """The :class:`~symrmt.hermite.Nonlinearity` of ``f(s t)`` (``s`` an exact rational)."""
    if isinstance(f, Nonlinearity):
        base = f.expr
        center = center or f.center
    else:
        base = parse_f(PRESETS.get(f.strip(), f.strip())) if isinstance(f, str) else sp.sympify(f)
    expr = base.subs(T, sp.Rational(s.numerator, s.denominator) * T)
    return Nonlinearity(expr, center=center)


def remainder_correlation(nl, rho, a1, nu, dps: int) -> mpmath.mpf:
    """``tau = sum_{k>=2} rho^k a_k^2/k! / (nu - a1^2)`` for the centered ``nl`` (Hermite data
    ``a_k = E[f(xi) He_k(xi)]``), summed until the tail bound ``|rho|^(K+1) (nu - sum_{k<=K} a_k^2/k!)``
    is below ``10^-dps`` times ``nu - a1^2``.  Raises :class:`~symrmt.errors.PrecisionError` when the
    package's highest Hermite order (``LIMITS['hermite_k']``, 60) does not reach it (``|rho|`` too
    close to 1 for this ``f`` and these digits); returns ``None`` at ``rho = -1`` (not computed).

    >>> from symrmt.hermite import Nonlinearity
    >>> nl = Nonlinearity("t**2 - 1")
    >>> float(remainder_correlation(nl, mpmath.mpf("0.5"), 0, 2, 20))
    0.25
    """
    top = min(MAX_MEHLER_TERMS, int(LIMITS["hermite_k"]))
    with mpmath.workdps(dps + 10):
        rho, a1, nu = mpmath.mpf(rho), mpmath.mpf(a1), mpmath.mpf(nu)
        rem = nu - a1 ** 2
        if rem <= 0:
            return mpmath.mpf(0)
        if abs(rho) == 1:  # sum_{k>=2} a_k^2/k! = nu - a1^2 exactly
            return mpmath.mpf(1) if rho > 0 else None
        total, partial = mpmath.mpf(0), a1 ** 2
        fact = mpmath.mpf(1)
        tol = mpmath.mpf(10) ** (-dps) * rem
        bound = rem
        for k in range(2, top + 1):
            fact *= k
            ak = nl.a_mpf(k, dps + 10)
            term = ak ** 2 / fact
            partial += term
            total += rho ** k * term
            bound = abs(rho) ** (k + 1) * max(nu - partial, 0)
            if bound < tol:
                return total / rem
    raise PrecisionError(f"the remainder's correlation tau is known to +-{mpmath.nstr(bound / rem, 3)} only after "
                         f"{top} Hermite orders (rho = {mpmath.nstr(rho, 6)}), not to the {dps} digits asked; "
                         "ask fewer digits")


def general_coefficients(f, W, center: bool = False, digits: int = 30) -> dict:
    """The Gaussian-equivalent data of ``f(Z^T W Z/sqrt(p))/sqrt(p)`` (zero diagonal) for a general
    ``p x p`` array ``W``: ``{"a1", "nu", "b", "tau", "s", "rho", "m", "p"}`` (``a1``, ``nu`` of
    ``f_s(t) = f(s t)``; ``s`` is the exact rational nearest ``sqrt(||W||_F^2/p)`` at ``digits + 10``
    digits; mpmath numbers at ``digits`` digits, ``s`` a ``Fraction``).

    >>> k = general_coefficients("tanh", 2 * np.eye(3), digits=20)
    >>> float(k["s"]), float(k["tau"]), float(k["m"])
    (2.0, 1.0, 2.0)
    """
    key = _coefficients_key(f, W, center, digits)
    if key is not None and key in _COEFFICIENTS:
        return dict(_COEFFICIENTS[key])
    st = weight_statistics(W, digits + 10)
    s = Fraction(mpmath.nstr(st["s"], digits + 10, strip_zeros=False, min_fixed=-mpmath.inf,
                             max_fixed=mpmath.inf))
    nl = _scaled(f, s, center)
    dps = digits + 10
    a1, nu = nl.a_mpf(1, dps), nl.nu_mpf(dps)
    tau = remainder_correlation(nl, st["rho"], a1, nu, digits)
    if tau is None:
        raise ParameterError("W is skew-symmetric (rho = -1): t_ji = -t_ij; the remainder's correlation at "
                             "rho = -1 is not computed here")
    with mpmath.workdps(dps):
        b2 = nu - a1 ** 2
        b = mpmath.sqrt(b2) if b2 > 0 else mpmath.mpf(0)
    out = {"a1": a1, "nu": nu, "b": b, "tau": tau, "s": s, "rho": st["rho"], "m": st["m"], "p": st["p"],
           "nonlinearity": nl}
    if key is not None:
        _COEFFICIENTS[key] = out
    return dict(out)


#: the last few results of :func:`general_coefficients` (the Hermite quadratures and the Mehler sum), keyed by
#: ``f``, the bytes of ``W``, ``center`` and ``digits``
_COEFFICIENTS = cache_dict("engine.kernels.weights.general_coefficients", maxsize=8)


def _coefficients_key(f, W, center, digits):
    """A hashable key of the arguments of :func:`general_coefficients`, or ``None`` (not cached)."""
    if isinstance(f, Nonlinearity):
        fk = ("nl", str(f.expr), bool(f.center))
    elif isinstance(f, str):
        fk = ("str", f.strip())
    else:
        return None
    arr = check_weights(W)
    digest = hashlib.sha256(np.ascontiguousarray(arr, dtype=np.float64).tobytes()).hexdigest()
    return fk, arr.shape, digest, bool(center), int(digits)


def _rational(x, digits):
    """An mpmath number as the exact SymPy rational of its decimal at ``digits + 10`` digits."""
    return sp.Rational(mpmath.nstr(x, digits + 10, strip_zeros=False, min_fixed=-mpmath.inf,
                                   max_fixed=mpmath.inf))


# ---------------------------------------------------------------- a signal: X = Z + finite rank

def is_finite_rank(m) -> bool:
    """Whether the matrix node ``m`` is finite rank by structure: a product (possibly scaled) with a vector factor.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); Z = m.gaussian("Z", "p", "n"); mu = m.vector("mu", "p"); y = m.signs("y", "n")
    >>> is_finite_rank(m.parse("2*mu*y.T")), is_finite_rank(Z)
    (True, False)
    """
    if isinstance(m, Scaled):
        return is_finite_rank(m.matrix)
    if isinstance(m, Transpose):
        return is_finite_rank(m.matrix)
    if isinstance(m, MatProduct):
        return any(isinstance(f, Vector) or isinstance(f, Transpose) and isinstance(f.matrix, Vector)
                   for f in m.factors)
    return False


def is_deterministic(m) -> bool:
    """Whether the matrix node ``m`` holds no random leaf (Gaussian, GOE or random vector).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); Z = m.gaussian("Z", "p", "n"); mu = m.vector("mu", "p")
    >>> is_deterministic(m.parse("mu*mu.T")), is_deterministic(Z)
    (True, False)
    """
    return not any(x.kind in ("gaussian", "goe") or (isinstance(x, Vector) and x.random) for x in walk(m))


def check_signal_matrix(X) -> Gaussian:
    """The Gaussian ``Z`` of ``X = Z + finite rank`` (raises :class:`ModelError` naming what is wrong).

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); Z = m.gaussian("Z", "p", "n"); mu = m.vector("mu", "p"); y = m.signs("y", "n")
    >>> check_signal_matrix(m.parse("mu*y.T + Z")).name
    'Z'
    """
    if not isinstance(X, MatrixNode):
        raise ModelError("kernel(f, X, W): X must be a matrix expression")
    terms = X.terms if isinstance(X, MatSum) else (X,)
    gauss = [t for t in terms if isinstance(t, Gaussian)]
    rest = [t for t in terms if not isinstance(t, Gaussian)]
    if len(gauss) != 1:
        raise ModelError("kernel(f, X, W): X must be one Gaussian matrix (gaussian(p, n), coefficient 1: the "
                         f"kernel's Hermite data are for N(0, 1) entries) plus finite-rank terms; got {len(gauss)} "
                         "Gaussian terms")
    for t in rest:
        if not is_finite_rank(t):
            raise ModelError("kernel(f, X, W): every term of X other than its Gaussian must be finite rank (a "
                             f"product with a vector, such as mu*y.T); got a {t.kind} term")
    return gauss[0]


#: the largest size ``eps = max(||W mu||, ||W^T mu||, |mu^T W mu|)/(s sqrt(p))`` of a signal's terms in the kernel's
#: argument that is answered with a general W (docs/theory.md, section 14: the gap of the equivalent grows like eps^2)
SIGNAL_EPS_MAX = 0.2


def _signal_vectors(X, Z) -> dict:
    """The signal of ``X = Z + sum_k c_k mu_k y_k^T`` grouped by the random vector: ``{y name: sum_k c_k mu_k}``
    (float64 arrays), with each ``mu_k`` given by its entries and each ``c_k`` a number; :class:`ModelError`
    for any other finite-rank term."""
    what = ("with a general W, a signal is a sum of c*mu*y.T terms: mu given by its entries (vector_file), "
            "y a random vector (signs, gaussian_vector) and c a number")
    out = {}
    for term in (X.terms if isinstance(X, MatSum) else (X,)):
        if term is Z:
            continue
        coef, node = sp.Integer(1), term
        if isinstance(node, Scaled):
            coef, node = coef * node.scalar, node.matrix
        factors = node.factors if isinstance(node, MatProduct) else ()
        if len(factors) != 2:
            raise ModelError(what)
        left, right = factors
        if isinstance(left, Scaled):
            coef, left = coef * left.scalar, left.matrix
        if isinstance(right, Scaled):
            coef, right = coef * right.scalar, right.matrix
        coef = sp.sympify(coef)
        ok = isinstance(left, GivenVector) and left.dim == Z.rows and isinstance(right, Transpose) and \
            isinstance(right.matrix, Vector) and right.matrix.random and coef.is_number and coef.is_real
        if not ok:
            raise ModelError(what)
        key = right.matrix.name
        out[key] = out.get(key, 0) + float(coef) * np.asarray(left.data, dtype=np.float64)
    return out


def signal_size(W, mu, s) -> float:
    """``max(||W mu||, ||W^T mu||, |mu^T W mu|)/(s sqrt(p))``: the size of a signal's terms in the kernel's
    argument ``t_ij`` against its standard deviation ``s`` (``docs/theory.md``, section 14).

    >>> round(signal_size(np.eye(4), np.array([1.0, 0, 0, 0]), 1.0), 3)
    0.5
    """
    W = np.asarray(W, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    size = max(np.linalg.norm(W @ mu), np.linalg.norm(W.T @ mu), abs(float(mu @ W @ mu)))
    return float(size / (float(s) * math.sqrt(W.shape[0])))


def kernel_given(f, X, W, diagonal: str = "zero", *, model, name: str | None = None, digits: int = 30,
                 center: bool = False):
    r"""The Gaussian-equivalent expression of ``f(X^T W X/sqrt(p))/sqrt(p)`` (diagonal zero) for a
    matrix ``W`` given by its entries (a ``matrix()`` declaration of ``model``), ``X = Z`` a bare
    Gaussian or ``X = Z + finite rank`` (a signal such as ``mu*y.T``).

    Returns ``(a1/s) (X^T W X/p - (tr W/p) I) + b A/sqrt(p)`` with ``A`` a fresh ``elliptic(n, tau)``
    declared in ``model`` (module docstring); the coefficients are exact rationals of values
    at ``digits + 10`` digits.  Raises :class:`ModelError` for a kept diagonal (not derived) or an ``X``
    that is not a Gaussian plus finite rank, ``ParameterError`` for bad weights.

    >>> from symrmt.engine import Model
    >>> m = Model(); m.dim("p", "c*n"); Z = m.gaussian("Z", "p", "n")
    Dim('p', c)
    >>> W = m.matrix("W", "p", "p", np.array([[1.0, 1.0], [0.0, 1.0]]))
    >>> K = kernel_given("tanh", Z, W, model=m, digits=15)
    >>> (K.rows.name, K.cols.name)
    ('n', 'n')
    """
    if diagonal != "zero":
        raise ModelError("kernel(f, Z, W) with a general W: only diagonal='zero' is derived (the kept diagonal "
                         "f(x_i^T W x_i/sqrt(p))/sqrt(p) has its argument centered at tr(W)/sqrt(p), which grows "
                         "with p unless tr(W)/p -> 0, and fluctuates by O(1): a random diagonal not in the model)")
    Z = X if isinstance(X, Gaussian) else check_signal_matrix(X)
    if not isinstance(W, GivenMatrix) or W.rows != Z.rows or W.cols != Z.rows:
        raise ModelError(f"kernel(f, Z, W): W must be a {Z.rows.name} x {Z.rows.name} matrix given by its entries")
    k = general_coefficients(f, W.data, center, digits)
    if X is not Z:
        for y, mu in _signal_vectors(X, Z).items():
            eps = signal_size(W.data, mu, k["s"])
            if eps > SIGNAL_EPS_MAX:
                raise NotDerived(
                    f"the signal along {y} moves the kernel's argument by eps = max(||W mu||, ||W^T mu||, "
                    f"|mu^T W mu|)/(s sqrt(p)) = {eps:.3g}, above {SIGNAL_EPS_MAX}: the Gaussian equivalent expands in "
                    "eps, and its error grows like eps^2 (measured 0.017-0.025 at eps = 0.26-0.33); not answered. A "
                    "signal less aligned with W's top singular directions, or a smaller ||mu||, is covered")
    pc = Const(Z.rows.size)
    s = sp.Rational(k["s"].numerator, k["s"].denominator)
    a1 = _rational(k["a1"], digits)
    terms = []
    if a1 != 0:
        terms.append(Scaled(Const(a1 / s) / pc, X.T * W * X))
        m_r = _rational(k["m"], digits)
        if m_r != 0:
            terms.append(Scaled(Const(-a1 * m_r / s), Identity(Z.cols)))
    b = _rational(k["b"], digits)
    if b != 0:
        A = _fresh_elliptic(model, Z, name, _rational(k["tau"], digits))
        terms.append(Scaled(Const(b) * pc ** sp.Rational(-1, 2), A))
    if not terms:
        raise ModelError(f"the Gaussian-equivalent kernel of f = {f} is the zero matrix (a1 = b = 0)")
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def _fresh_elliptic(model, Z, name, tau):
    base = name or f"E_{Z.name}"
    gname, j = base, 1
    while gname in model.matrices or gname in model.dims or gname in model.symbols or \
            gname in model.named or f"_{gname}_sym" in model.matrices:
        j += 1
        gname = f"{base}_{j}"
    return elliptic_node(model, gname, Z.cols, tau)


def random_head_kernel(f, X, Q, K, *, model, name: str | None = None, digits: int = 30, center: bool = False):
    r"""The Gaussian-equivalent expression of one random head ``f(X^T W X/sqrt(p))/sqrt(p)`` (diagonal
    zero), ``W = Q K^T/sqrt(p d)`` with ``Q``, ``K`` Gaussian ``p x d`` declared in ``model``, ``X = Z`` a
    Gaussian or ``Z + finite rank`` (a signal).

    In the limit ``s^2 = ||W||_F^2/p -> 1``, ``rho = tr(W^2)/||W||_F^2 = O(1/p) -> 0`` and
    ``tr(W)/p -> 0``, so this is ``a1 X^T W X/p + b G/sqrt(p)`` with ``G`` a fresh ``gaussian(n, n)``
    (a Ginibre matrix: the elliptic law at ``tau = 0``), ``a1``, ``b`` the Hermite data of ``f``.

    >>> from symrmt.engine import Model
    >>> m = Model(); m.dim("p", "c*n"); m.dim("d", "D*c*n"); Z = m.gaussian("Z", "p", "n")
    Dim('p', c)
    Dim('d', D*c)
    >>> Q = m.gaussian("Q1", "p", "d"); K1 = m.gaussian("K1", "p", "d")
    >>> random_head_kernel("tanh", Z, Q, K1, model=m, digits=20).rows.name
    'n'
    """
    nl = _scaled(f, Fraction(1), center)
    dps = digits + 10
    a1, nu = nl.a_mpf(1, dps), nl.nu_mpf(dps)
    with mpmath.workdps(dps):
        b2 = nu - a1 ** 2
        b = mpmath.sqrt(b2) if b2 > 0 else mpmath.mpf(0)
    Z = X if isinstance(X, Gaussian) else check_signal_matrix(X)
    pc, dc = Const(Z.rows.size), Const(Q.cols.size)
    a1r, br = _rational(a1, digits), _rational(b, digits)
    terms = []
    if a1r != 0:
        terms.append(Scaled(Const(a1r) / pc * (pc * dc) ** sp.Rational(-1, 2), X.T * Q * K.T * X))
    if br != 0:
        base = name or f"G_{Q.name}"
        terms.append(Scaled(Const(br) * pc ** sp.Rational(-1, 2), model.gaussian(base, Z.cols.name, Z.cols.name)))
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out
