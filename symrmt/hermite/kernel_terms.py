r"""The Gaussian-equivalent kernel with a signal and weights: the one definition of the paper's model.

Everything here is SymPy and takes its symbols (or exact numbers) as arguments: the symbols
``a_1, nu, d, c`` of a solver's equations, or the exact Hermite data of one ``f``.  ``docs/theory.md``
sections 2.2, 2.3 and 5.2 derive it.

The kernel (:func:`gaussian_equivalent`)
----------------------------------------
For ``X = mu y^T + Z`` (``p x n``, ``p = c n``) and ``W = alpha I_p + L`` (``L = sum_j wk_j wq_j^T``),

.. math::

    K = \frac{1}{\sqrt p} f\Big(\frac{X^T W X}{\sqrt p}\Big) \simeq
    \frac{a_1}{\alpha}\,\frac{X^T W X}{p} + b\,\frac{G}{\sqrt p} + (d - a_1)\, I_n ,
    \qquad b^2 = \nu - a_1^2 ,

with ``G`` a fresh ``goe(n)`` and ``(a_1, nu, d)`` the Hermite data of ``f_alpha(t) = f(alpha t)``
(``d = 0`` for a zero diagonal).  :class:`KernelTerms` holds the three coefficients.

Its finite-rank terms in the rotated coordinates (:func:`finite_rank_parts`)
-----------------------------------------------------------------------------
Rotate ``R^p`` so that ``mu`` and the ``wk_j, wq_j`` lie in the first ``k = 2r+1`` coordinates
(``m = (m_1..m_k)``, ``k_j``, ``q_j``, the rows of :func:`frame`).  The first ``k`` rows of ``X`` are
``V^T = sqrt(n) C^T E^T`` with ``E = [y, xi_1..xi_k]/sqrt(n)`` and ``C = [m^T; I_k]``; the other rows
``Z'`` are pure noise, and ``W`` is block diagonal, ``alpha I_k + L_k`` on the first ``k`` coordinates
with ``L_k = sum_j k_j q_j^T``.  Hence ``X^T W X = alpha Z'^T Z' + n E C (alpha I_k + L_k) C^T E^T`` and
``X^T X = Z'^T Z' + n E C C^T E^T``, and with ``n/p = 1/c``

.. math::

    K \simeq K' + E\, M_K\, E^T, \qquad
    M_K = \frac{1}{c}\,\frac{a_1}{\alpha}\; C\,(\alpha I_k + L_k)\,C^T ,
    \qquad K' = a_1 S' + (d - a_1) I_n + b\,\frac{G}{\sqrt p} ,

    \frac{X^T X}{n} = c S' + E\, M_S\, E^T, \qquad M_S = C C^T ,

with ``S' = Z'^T Z'/p`` (the noise-only kernel ``K'`` of section 3, whose coefficient of ``S'`` is
``alpha`` times that of ``X^T W X/p``: :attr:`KernelTerms.wishart`).  ``alpha`` enters only as
``(a_1/alpha)(alpha I + L) = a_1 (I + L/alpha)``: the limit for ``(f, W)`` is the one for
``(f_alpha, I + L/alpha)`` (section 2.3), which is how the hand-built solver takes it (``alpha = 1``
here, the weights divided by ``alpha``).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symrmt.errors import ParameterError

__all__ = ["KernelTerms", "gaussian_equivalent", "b_squared", "frame", "kernel_lowrank",
           "covariance_lowrank", "finite_rank_parts"]


def b_squared(a1, nu):
    """``b^2 = nu - a_1^2``: the variance of the kernel's nonlinear (semicircular) part, from the Hermite data
    ``a1`` and ``nu`` (symbols or numbers).

    >>> b_squared(sp.Rational(1, 2), sp.Rational(1, 2))  # a_1 = 1/2, nu = 1/2
    1/4
    """
    return nu - a1**2


@dataclass(frozen=True)
class KernelTerms:
    """The coefficients of the Gaussian-equivalent kernel (module docstring); built by :func:`gaussian_equivalent`.

    Attributes
    ----------
    xwx
        Coefficient of ``X^T W X / p``: ``a_1 / alpha``.
    b2
        Squared coefficient of ``G / sqrt(p)``: ``nu - a_1^2`` (:attr:`goe` is its square root).
    identity
        Coefficient of ``I_n``: ``d - a_1``.
    alpha
        The identity part of ``W``.

    Examples
    --------
    >>> kt = KernelTerms(xwx=sp.Rational(1, 2), b2=sp.Integer(4), identity=0, alpha=2)
    >>> kt.goe, kt.wishart
    (2, 1)
    """

    xwx: object
    b2: object
    identity: object
    alpha: object

    @property
    def goe(self):
        """``b = sqrt(nu - a_1^2)``, the coefficient of ``G / sqrt(p)``."""
        return sp.sqrt(self.b2)

    @property
    def wishart(self):
        """Coefficient of ``S' = Z'^T Z'/p`` in the noise-only kernel ``K'``: ``alpha * xwx = a_1``."""
        return self.alpha * self.xwx


def gaussian_equivalent(a1, nu, d, alpha=1) -> KernelTerms:
    """The :class:`KernelTerms` of ``f(X^T W X/sqrt(p))/sqrt(p)`` for ``W = alpha I + L``.

    ``a1, nu, d`` are the Hermite data of ``f_alpha(t) = f(alpha t)`` (``d = 0`` for a zero diagonal),
    symbols or exact numbers; ``alpha`` is sympified.

    >>> a1, nu, d = sp.symbols("a_1 nu d")
    >>> kt = gaussian_equivalent(a1, nu, d, alpha=2)
    >>> kt.xwx, kt.b2, kt.identity, kt.wishart
    (a_1/2, -a_1**2 + nu, -a_1 + d, a_1)
    """
    alpha = sp.sympify(alpha)
    return KernelTerms(xwx=a1 / alpha, b2=b_squared(a1, nu), identity=d - a1, alpha=alpha)


def frame(coords, r: int = 1):
    """``(C, A)`` of the rotated coordinates: ``C = [m^T; I_k]`` (``(k+1) x k``) and ``A = I_k + sum_j k_j q_j^T``.

    ``coords`` are the ``k^2`` coordinates (``k = 2r+1``) of ``(mu, wk_1..wk_r, wq_1..wq_r)``, row-major:
    the ``k`` coordinates of ``mu``, then of each ``wk_j``, then of each ``wq_j``.  ``A`` is the weight
    matrix ``W`` restricted to the first ``k`` coordinates, with ``alpha = 1`` (scale ``k_j`` by ``1/alpha``
    otherwise, or use :func:`finite_rank_parts` with ``alpha``).  Raises :class:`ParameterError` when the
    number of coordinates is not ``k^2``.

    >>> C, A = frame([1, 0, 0,  0, 2, 0,  0, 0, 3])  # mu = e_1, wk = 2 e_2, wq = 3 e_3
    >>> C.tolist(), A.tolist()
    ([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], [[1, 0, 0], [0, 1, 6], [0, 0, 1]])
    """
    k = 2 * r + 1
    coords = tuple(coords)
    if len(coords) != k * k:
        raise ParameterError(f"rank {r} needs {k * k} coordinates of (mu, wk, wq), got {len(coords)}")
    rows = [sp.Matrix(coords[i * k:(i + 1) * k]) for i in range(k)]
    mu, ks, qs = rows[0], rows[1:1 + r], rows[1 + r:]
    C = sp.Matrix.vstack(mu.T, sp.eye(k))
    A = sp.eye(k)
    for kj, qj in zip(ks, qs):
        A += kj * qj.T
    return C, A


def kernel_lowrank(kt: KernelTerms, C, A, c):
    """``M_K`` with ``K = K' + E M_K E^T``: ``(xwx / c) C A C^T`` (a SymPy matrix), from the :class:`KernelTerms`
    ``kt``, ``C`` and ``A`` of :func:`frame` (``A``: the weights on the first coordinates, ``alpha I_k + L_k``)
    and the ratio ``c = p/n``.  ``C`` and ``A`` may also be the compressed ``1 x 1`` forms of an aligned geometry.

    >>> C, A = sp.Matrix([[2], [1]]), sp.Matrix([[1]])  # mu = 2 e_1, no low-rank weights
    >>> kernel_lowrank(gaussian_equivalent(sp.Rational(1, 2), 1, 0), C, A, 2).tolist()
    [[1, 1/2], [1/2, 1/4]]
    """
    return kt.xwx / c * (C * A * C.T)


def covariance_lowrank(C):
    """``M_S = C C^T`` (a SymPy matrix) with ``X^T X/n = c S' + E M_S E^T``, ``C`` from :func:`frame`.

    >>> covariance_lowrank(sp.Matrix([[2], [1]])).tolist()
    [[4, 2], [2, 1]]
    """
    return C * C.T


def finite_rank_parts(kt: KernelTerms, coords, r: int, c):
    """``(M_K, M_S)`` of the module docstring for ``W = alpha I + L`` (``alpha = kt.alpha``): ``coords`` and ``r`` as
    in :func:`frame` (whose :class:`ParameterError` it raises), ``c = p/n``.

    >>> M_K, M_S = finite_rank_parts(gaussian_equivalent(1, 2, 0, alpha=3), [1, 0, 0,  0, 2, 0,  0, 0, 3], 1, 1)
    >>> M_K.tolist()  # (1/3) C (3 I + 6 e_2 e_3^T) C^T
    [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 2], [0, 0, 0, 1]]
    >>> M_S == covariance_lowrank(frame([1, 0, 0,  0, 2, 0,  0, 0, 3])[0])
    True
    """
    C, A = frame(coords, r)
    A = A + (kt.alpha - 1) * sp.eye(A.shape[0])
    return kernel_lowrank(kt, C, A, c), covariance_lowrank(C)
