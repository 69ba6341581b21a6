r"""Test errors on a fresh sequence: the paper's readout, trained on ``(X, y)``, tested on new tokens.

Training (``docs/theory.md`` section 1.4): ``w = (Phi Phi^T/n + gamma I_p)^{-1} Phi y/n`` with ``Phi = X K``;
ridge ``w_R = (X X^T/n + gamma I_p)^{-1} X y/n``.  Test on an independent sequence
``X' = mu y'^T + Z'`` of ``n`` tokens with its own kernel ``K' = f(X'^T W X'/sqrt(p))/sqrt(p)``:

.. math::

    T_A = \|y' - (X'K')^T w\|^2/n, \qquad T_{RR} = \|y' - X'^T w_R\|^2/n .

For a readout ``v`` independent of the fresh sequence, with ``s = mu . v``, ``h = v + mu s``
(``h = Sigma v``, ``Sigma = I + mu mu^T`` the token covariance) and ``kappa = a_1/(alpha c)``,
the limit of the fresh-sample error is (``docs/theory.md`` section 12)

.. math::

    T(v) = \big(1 - \kappa\,\mu^T W^T h\big)^2 + \kappa^2 \|W^T h\|^2 - 2 d s
           + 2 d \kappa\, h^T W h + (d^2 + \nu/c)\,(s^2 + \|v\|^2),

with ``(a_1, nu, d)`` the Hermite data of ``f_alpha`` (``d = 0`` for a zero diagonal).  Ridge is
``a_1 = 0, nu = 0, d = 1``: ``T_RR = (1 - s)^2 + ||v||^2``.  The readout enters only through
``||v||^2`` and its inner products with ``mu, w_K^j, w_Q^j``: the training side's quadratic forms
(:func:`training_forms`).

>>> import sympy as sp
>>> a1, nu, d, c = sp.symbols("a_1 nu d c")
>>> sp.factor(fresh_error_formula(a1, nu, d, c, [[0]], r=0, vv=sp.Symbol("v2"), dots=[0]) - 1)
v2*(a_1**2 + 2*a_1*c*d + c**2*d**2 + c*nu)/c**2
"""

from __future__ import annotations

import sympy as sp

__all__ = ["fresh_error_formula"]


def fresh_error_formula(a1, nu, d, c, gram, r: int, vv, dots, alpha=1):
    """The limit ``T(v)`` of the module docstring as a SymPy expression.

    ``gram`` is the ``(2r+1)``-square Gram matrix of ``(mu, wk_1..r, wq_1..r)`` (``[[mu.mu]]`` when
    ``r = 0``: ``W = alpha I``); ``vv = ||v||^2``; ``dots`` the ``2r+1`` inner products of ``v`` with
    ``(mu, wk_1..r, wq_1..r)``.  ``(a1, nu, d)`` are the Hermite data of ``f_alpha``.
    """
    k = 2 * r + 1
    G = sp.zeros(k + 1, k + 1)   # basis (v, mu, wk.., wq..)
    G[0, 0] = vv
    for i in range(k):
        G[0, i + 1] = G[i + 1, 0] = dots[i]
        for j in range(k):
            G[i + 1, j + 1] = gram[i][j]

    def e(i):
        x = sp.zeros(k + 1, 1)
        x[i] = 1
        return x

    def dot(x, y):
        return (x.T * G * y)[0, 0]

    def Wt(x):  # W^T x = alpha x + sum_j wq_j (wk_j . x)
        out = alpha * x
        for j in range(r):
            out += e(2 + r + j) * dot(e(2 + j), x)
        return out

    def W(x):  # W x = alpha x + sum_j wk_j (wq_j . x)
        out = alpha * x
        for j in range(r):
            out += e(2 + j) * dot(e(2 + r + j), x)
        return out

    v, mu = e(0), e(1)
    s = dot(mu, v)
    h = v + mu * s
    kappa = a1 / (alpha * c)
    wth = Wt(h)
    return ((1 - kappa * dot(mu, wth)) ** 2 + kappa**2 * dot(wth, wth) - 2 * d * s
            + 2 * d * kappa * dot(h, W(h)) + (d**2 + nu / c) * (s**2 + vv))


#: the training side as engine expressions (``Q`` the training resolvent of the Attention readout)
_Q = "inv(K.T*X.T*X*K/n + gamma*I(n))"
_Q0 = "inv(X.T*X/n + gamma*I(n))"
PHI_A = f"y.T*{_Q}*y/n"
PHI_RR = f"y.T*{_Q0}*y/n"


def projection_expr(u: str, ridge: bool = False) -> str:
    """The engine expression of ``u . w`` for the trained readout ``w = X K Q y/n`` (or ``w_R = X Q_0 y/n``)."""
    return f"{u}.T*X*{_Q0}*y/n" if ridge else f"{u}.T*X*K*{_Q}*y/n"


def training_forms(model, at: dict, names, digits: int, ridge: bool = False, zero=()):
    """``(||w||^2, [u . w for u in names])`` of the trained readout, as engine limits at ``at``.

    ``||w||^2 = phi - E/gamma`` with ``phi = y^T Q y/n`` and ``E = gamma^2 y^T Q^2 y/n`` the training
    error (push-through: ``w = X K Q y/n``, so ``||w||^2 = y^T Q (Q^{-1} - gamma) Q y/n``).  Names in
    ``zero`` (vectors that are 0) give 0 without a solve.
    """
    import mpmath

    from symrmt.models.attention.engine_model import E_A, E_RR

    phi = model.limit(PHI_RR if ridge else PHI_A, at=at, digits=digits).value
    err = model.limit(E_RR if ridge else E_A, at=at, digits=digits).value
    with mpmath.workdps(digits + 10):
        g = mpmath.mpf(sp.Rational(at["gamma"]).p) / sp.Rational(at["gamma"]).q
        vv = phi - err / g
    dots = [mpmath.mpf(0) if u in zero else model.limit(projection_expr(u, ridge), at=at, digits=digits).value
            for u in names]
    return vv, dots
