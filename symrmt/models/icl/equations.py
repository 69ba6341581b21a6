r"""In-context regression by linear attention, symbolically (SymPy): the model's formulas, each written once.

The model (Lu, Letey, Zavatone-Veth, Maiti, Pehlevan, "Asymptotic theory of in-context learning by linear
attention", PNAS 2025; ``docs/icl.md``).  A context holds ``ell`` examples ``(x_i, y_i)`` and a query ``x_q``:
``x ~ N(0, I_d/d)``, ``y = w^T x + eps`` with ``eps ~ N(0, rho)``.  The linear-attention readout, reduced as in
the paper, predicts ``y_hat = <Gamma, H_Z>`` with ``Gamma`` a ``d x (d+1)`` matrix and

    H_Z = x_q [ (d/ell) sum_i y_i x_i^T ,  (1/ell) sum_i y_i^2 ]   (``d(d+1)`` features).

``Gamma`` is fitted by least squares (ridgeless: the minimum-norm solution) on ``n = tau d^2`` pretraining
contexts whose tasks ``w`` are drawn from ``k = kappa d`` fixed tasks ``w_j ~ N(0, I_d)``; ``ell = alpha d``.
The ICL error is the test error on fresh contexts with fresh tasks ``w ~ N(0, I_d)``.

What lives here:

* :func:`mp_resolvent_equation`, :func:`mp_resolvent`: the task-diversity resolvent
  ``M_kappa(u) = lim tr((W + u I)^{-1})/d``, ``W = (1/k) sum_j w_j w_j^T``, a Marchenko-Pastur
  Stieltjes transform (ratio ``d/k = 1/kappa``) at ``-u``: the positive root of
  ``(u/kappa) M^2 + (u + 1 - 1/kappa) M - 1 = 0``.  The numeric layer takes its values from the trace
  engine (:data:`RESOLVENT_EXPR`); the closed form is the derivation's check of the engine.
* :func:`result1`: the ridgeless limit of the ICL error (the paper's Result 1), both branches, in terms
  of ``x = (1 + rho)/alpha``, ``m = M_kappa(x)`` and ``mu = x M_{kappa/tau}(x)``.
* :func:`test_error_coefficients`: the exact finite-``d`` test error of a given ``Gamma`` (used by the
  simulation, so that only the pretraining draw is random).
* :func:`infinite_pretraining_error`, :func:`ols_variance`, :func:`min_norm_error`: the pieces of the
  package's own derivation of both branches (``derivations/icl.py``), checked against :func:`result1`.

>>> import sympy as sp
>>> e = result1("above")
>>> sorted(map(str, e.free_symbols))
['kappa', 'm', 'rho', 'tau', 'x']
>>> sp.simplify(mp_resolvent_equation(mp_resolvent(U, KAPPA), U, KAPPA).subs({U: 2, KAPPA: 3}))
0
"""

from __future__ import annotations

import sympy as sp

from symrmt.errors import ParameterError

__all__ = [
    "ALPHA", "KAPPA", "TAU", "RHO", "X", "M", "MU", "U", "RESOLVENT_EXPR", "x_star", "mp_resolvent_equation",
    "mp_resolvent", "result1", "test_error_coefficients", "READOUT_STATISTICS", "test_error_expression",
    "infinite_pretraining_error", "ols_variance",
    "min_norm_error", "residual_variance",
]

ALPHA, KAPPA, TAU = sp.symbols("alpha kappa tau", positive=True)
RHO = sp.Symbol("rho", nonnegative=True)
#: x = (1 + rho)/alpha, m = M_kappa(x), mu = x M_{kappa/tau}(x), u: the resolvent's argument
X, M, MU, U = sp.symbols("x m mu u", positive=True)

#: the task-diversity resolvent as a trace-engine expression: ``Z`` is ``n x d`` Gaussian (``n`` plays
#: the number of tasks ``k``), ``d = phi n`` with ``phi = 1/kappa``: ``tr((Z^T Z/n + u I)^{-1})/d -> M_kappa(u)``
RESOLVENT_EXPR = "trace(inv(Z.T*Z/n + u*I(d)))"


def x_star(alpha=ALPHA, rho=RHO):
    """``x = (1 + rho)/alpha``: the per-context noise of the in-context estimate ``(d/ell) sum y_i x_i``."""
    return (1 + rho) / alpha


def mp_resolvent_equation(m, u, kappa):
    """``(u/kappa) m^2 + (u + 1 - 1/kappa) m - 1``: zero at ``m = M_kappa(u)`` (Marchenko-Pastur, ratio ``1/kappa``)."""
    return u / kappa * m**2 + (u + 1 - 1 / kappa) * m - 1


def mp_resolvent(u, kappa):
    """``M_kappa(u)``, the positive root of :func:`mp_resolvent_equation` (written without cancellation)."""
    b = u + 1 - 1 / kappa
    return 2 / (b + sp.sqrt(b**2 + 4 * u / kappa))


def result1(branch: str):
    r"""The ridgeless limit of the ICL error (Result 1 of Lu et al.), on one side of the pole ``tau = 1``.

    ``branch="below"`` (``tau < 1``, fewer contexts than features: the minimum-norm interpolator), in terms
    of ``x``, ``rho``, ``tau`` and ``mu = x M_{kappa/tau}(x)``:

    .. math:: e = \frac{\tau(1+x)}{1-\tau}\Big(1 - \tau(1-\mu)^2 - \frac{x-\rho}{x}\mu\Big) - 2\tau(1-\mu) + 1 + \rho;

    ``branch="above"`` (``tau > 1``, least squares), in terms of ``x``, ``rho``, ``tau``, ``kappa`` and
    ``m = M_kappa(x)``, with ``k^* = (1 - \kappa m^2/(\kappa + m)^2)^{-1}``:

    .. math:: e = \Big(k^* - \frac1{\tau-1}\Big)(1+x)(xm)^2 + \frac{3-2\tau}{\tau-1} m x^2
              + \Big(\frac{1+\rho}{\tau-1} m + 1\Big) x + \frac{\rho m}{\tau-1} + \rho .

    >>> result1("below").subs({TAU: 0})
    rho + 1
    """
    if branch == "below":
        return (TAU * (1 + X) / (1 - TAU) * (1 - TAU * (1 - MU) ** 2 - (X - RHO) / X * MU)
                - 2 * TAU * (1 - MU) + RHO + 1)
    if branch == "above":
        k_star = 1 / (1 - KAPPA * (M / (KAPPA + M)) ** 2)
        return ((k_star - 1 / (TAU - 1)) * (1 + X) * (X * M) ** 2 + (3 - 2 * TAU) / (TAU - 1) * M * X**2
                + ((1 + RHO) / (TAU - 1) * M + 1) * X + RHO * M / (TAU - 1) + RHO)
    raise ParameterError(f"branch must be 'below' or 'above', got {branch!r}")


def test_error_coefficients(d, ell, rho=RHO):
    r"""``(b1, b2)`` of the exact test error of a readout ``Gamma = [G, g]`` (``G``: ``d x d``, ``g``: ``d``):

    .. math:: e(\Gamma) = 1 + \rho - \frac2d \operatorname{tr} G + \frac1d\big(b_1 \|G\|_F^2 + b_2 \|g\|^2\big),

    the expectation over a fresh context (``ell`` examples and a query, ``x ~ N(0, I_d/d)``, noise of variance
    ``rho``) and a fresh task ``w ~ N(0, I_d)``, exact at every ``d`` and ``ell``.  With
    ``v = [(d/ell) sum y_i x_i, (1/ell) sum y_i^2]``, ``E[v w^T] = [I_d; 0]`` and ``E[v v^T] = diag(b1 I_d, b2)``:
    ``b1 = 1 + (d(1 + rho) + 1)/ell`` (Isserlis: ``E[(w^T x)^2 x x^T] = (|w|^2 I + 2 w w^T)/d^2``) and
    ``b2 = (1 + 2/ell) E[(|w|^2/d + rho)^2] = (1 + 2/ell)(1 + 2/d + 2 rho + rho^2)``; the cross moments
    vanish by the symmetry ``(w, eps) -> (-w, -eps)``.

    >>> test_error_coefficients(10, 20, sp.Rational(1, 2))
    (9/5, 539/200)
    """
    d, ell = sp.sympify(d), sp.sympify(ell)
    b1 = 1 + (d * (1 + rho) + 1) / ell
    b2 = (1 + 2 / ell) * (1 + 2 / d + 2 * rho + rho**2)
    return b1, b2


#: the statistics of a readout ``Gamma = [G, g]`` its test error depends on: ``tr G``, ``|G|_F^2``, ``|g|^2``
READOUT_STATISTICS = sp.symbols("trG fro_G g2", real=True)


def test_error_expression(d, ell, rho=RHO):
    r"""The exact test error of a readout as a SymPy expression, linear in its statistics
    ``(tr G, |G|_F^2, |g|^2)`` (the symbols :data:`READOUT_STATISTICS`), with the coefficients of
    :func:`test_error_coefficients`.

    >>> tr, fro, g2 = READOUT_STATISTICS
    >>> test_error_expression(10, 20, sp.Rational(1, 2)).subs({tr: 0, fro: 0, g2: 0})
    3/2
    """
    tr, fro, g2 = READOUT_STATISTICS
    b1, b2 = test_error_coefficients(d, ell, rho)
    d = sp.sympify(d)
    return 1 + rho - 2 * tr / d + (b1 * fro + b2 * g2) / d


# ---------------------------------------------------------------- the package's own derivation of Result 1
# Spectral functionals of the task covariance W enter through M(u) = tr((W + u)^{-1})/d and
# Q(u) = -M'(u) = tr((W + u)^{-2})/d; ``m_x, q_x`` are M, Q at x and ``m_u, q_u`` at u = x + z.

def residual_variance(x, rho, m_x):
    """``sigma_r^2 = rho + x - x^2 M(x)``: the error of the best readout on the pretraining distribution
    (``tau -> oo``); ``E[y_q^2] = 1 + rho`` minus ``tr(W^2 (W + x)^{-1})/d = 1 - x + x^2 M(x)``."""
    return rho + x - x**2 * m_x


def infinite_pretraining_error(x, rho, m_x, q_x):
    r"""The ICL error of the population readout ``G = W (W + x)^{-1}`` (``tau -> oo``; ridgeless, every ``kappa``):
    ``1 + rho - 2 tr(G)/d + (1 + x) tr(G^2)/d = rho + x - 2 x^2 M(x) + (1 + x) x^2 Q(x)``."""
    return rho + x - 2 * x**2 * m_x + (1 + x) * x**2 * q_x


def ols_variance(x, rho, tau, m_x):
    r"""What ``n = tau d^2`` contexts add to :func:`infinite_pretraining_error` when ``tau > 1`` (least squares in
    ``d^2`` features, Gaussian-equivalent): ``sigma_r^2 tr(Sigma_test Sigma_train^{-1})/(n - p) =
    sigma_r^2 (1 + x) M(x)/(tau - 1)``."""
    return residual_variance(x, rho, m_x) * (1 + x) * m_x / (tau - 1)


def min_norm_error(x, rho, tau, z, m_x, m_u, q_u):
    r"""The ICL error of the minimum-norm readout when ``tau < 1`` (Gaussian-equivalent ridgeless theory).

    The effective ridge ``z`` solves ``z M(x + z) = 1 - tau``; with ``u = x + z`` the mean readout is
    ``W (W + u)^{-1}``, whose ICL error is ``1 + rho - 2(1 - u M(u)) + (1 + x)(1 - 2 u M(u) + u^2 Q(u))``; the
    fluctuation adds ``(B + sigma_r^2)(1 + x) S_1/(tau - S_2)`` with the training bias
    ``B = z^2 tr(W^2 (W + x)^{-1} (W + u)^{-2})/d``, ``S_1 = tr((W + x)(W + u)^{-2})/d = M(u) - z Q(u)`` and
    ``S_2 = tr((W + x)^2 (W + u)^{-2})/d = 1 - 2 z M(u) + z^2 Q(u)``.  ``B`` by partial fractions in the eigenvalue:
    ``l^2/((l + x)(l + u)^2) = A/(l + x) + (1 - A)/(l + u) + C/(l + u)^2``, ``A = x^2/(u - x)^2``,
    ``C = u^2/(x - u)``.
    """
    u = x + z
    mean_part = 1 + rho - 2 * (1 - u * m_u) + (1 + x) * (1 - 2 * u * m_u + u**2 * q_u)
    a = x**2 / (u - x) ** 2
    c = u**2 / (x - u)
    bias = z**2 * (a * m_x + (1 - a) * m_u + c * q_u)
    s1 = m_u - z * q_u
    s2 = 1 - 2 * z * m_u + z**2 * q_u
    return mean_part + (bias + residual_variance(x, rho, m_x)) * (1 + x) * s1 / (tau - s2)
