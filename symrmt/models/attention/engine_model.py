r"""The paper's model as an engine model: nonlinear Attention and ridge regression with a signal.

:func:`attention_model` writes tokens ``X = mu y^T + Z``, weights ``W = alpha I_p + sum_j wk_j wq_j^T``, the
Gaussian-equivalent kernel of ``f(X^T W X/sqrt(p))/sqrt(p)`` (diagonal zero or kept) and the two errors

.. math::

    E_A = -\gamma^2 \partial_\gamma\, y^T (K^T X^T X K/n + \gamma I_n)^{-1} y/n, \qquad
    E_{RR} = -\gamma^2 \partial_\gamma\, y^T (X^T X/n + \gamma I_n)^{-1} y/n

as engine expressions; the inner products of ``mu, wk1, ..., wq1, ...`` are its parameters ``mu.mu``,
``mu.wk1``, ... (0 when not given).  The engine derives the pencil, fixed point and Woodbury system from these
expressions alone: the same numbers as the hand-built solver, from the same kernel definition.

>>> m, exprs = attention_model("relu", rank=1)
>>> sorted(exprs), sorted(m.vectors())
(['E_A', 'E_RR'], ['mu', 'wk1', 'wq1', 'y'])
"""

from __future__ import annotations

import numbers

from symrmt.engine import Model, kernel
from symrmt.errors import ParameterError

__all__ = ["attention_model", "fresh_sample_model", "E_A", "E_RR", "T_A", "T_RR", "at_from_gram"]

E_A = "-gamma**2*diff(y.T*inv(K.T*X.T*X*K/n + gamma*I(n))*y/n, gamma)"
E_RR = "-gamma**2*diff(y.T*inv(X.T*X/n + gamma*I(n))*y/n, gamma)"
#: the test errors on the fresh sequence ``X2 = mu*y2.T + Z2`` of :func:`fresh_sample_model`, one expression each
T_A = "(y2 - K2.T*X2.T*w).T*(y2 - K2.T*X2.T*w)/n"
T_RR = "(y2 - X2.T*wR).T*(y2 - X2.T*wR)/n"


def attention_model(f, rank: int = 1, alpha=1, diagonal: str = "zero", digits: int = 80):
    """``(model, {"E_A": text, "E_RR": text})`` for the nonlinearity ``f`` and weights of rank ``rank``.

    ``alpha`` scales ``W``'s identity part; ``diagonal`` and ``digits`` go to the kernel's definition.  Raises
    :class:`~symrmt.errors.ParameterError` for a ``rank`` that is not a whole number ``>= 0``.

    >>> m, exprs = attention_model("tanh", rank=1)
    >>> sorted(m.vectors()), exprs["E_RR"]
    (['mu', 'wk1', 'wq1', 'y'], '-gamma**2*diff(y.T*inv(X.T*X/n + gamma*I(n))*y/n, gamma)')
    >>> attention_model("tanh", rank=-1)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: rank must be a whole number >= 0 (the number of terms wk_j wq_j^T of W), got -1
    """
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or rank < 0:
        raise ParameterError(f"rank must be a whole number >= 0 (the number of terms wk_j wq_j^T of W), got {rank!r}")
    rank = int(rank)
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("mu", "p")
    m.signs("y", "n")
    for j in range(1, rank + 1):
        m.vector(f"wk{j}", "p")
        m.vector(f"wq{j}", "p")
    X = m.let("X", m.parse("mu*y.T + Z"))
    W = m.let("W", m.parse(f"({alpha})*I(p)" + "".join(f" + wk{j}*wq{j}.T" for j in range(1, rank + 1))))
    m.let("K", kernel(f, X, W, diagonal, model=m, digits=digits))
    return m, {"E_A": E_A, "E_RR": E_RR}


def at_from_gram(gram, rank: int) -> dict:
    """The ``--at`` inner products from the ``(2r+1) x (2r+1)`` Gram matrix of ``(mu, wk1..r, wq1..r)``
    (the order of :class:`symrmt.models.attention.geometry.LowRankGeometry`); zero entries are left out (0 by default).

    Returns a dict from ``"a.b"`` to the entry's exact text (upper triangle only).

    >>> from fractions import Fraction
    >>> at_from_gram([[1, 0, 0], [0, 1, Fraction(1, 2)], [0, Fraction(1, 2), 1]], 1)
    {'mu.mu': '1', 'wk1.wk1': '1', 'wk1.wq1': '1/2', 'wq1.wq1': '1'}
    """
    names = ["mu"] + [f"wk{j}" for j in range(1, rank + 1)] + [f"wq{j}" for j in range(1, rank + 1)]
    out = {}
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if j >= i and gram[i][j] != 0:
                out[f"{a}.{b}"] = str(gram[i][j])
    return out


def fresh_sample_model(f, rank: int = 1, alpha=1, diagonal: str = "zero", digits: int = 80):
    """``(model, {"T_A": text, "T_RR": text})``: :func:`attention_model` with a fresh, independent copy of the
    sequence (``Z2``, ``y2``, ``X2 = mu*y2.T + Z2`` and its own kernel ``K2 = kernel(f, X2, W)``) and the
    trained readouts ``w = X*K*inv(K.T*X.T*X*K/n + gamma*I(n))*y/n``, ``wR = X*inv(X.T*X/n + gamma*I(n))*y/n``
    as names, so that the test errors ``T_A`` and ``T_RR`` (``docs/theory.md`` section 12) are one engine
    expression each (the engine splits them across the two samples: :mod:`symrmt.engine.reduce.independence`).

    >>> m, exprs = fresh_sample_model("tanh", rank=0)
    >>> sorted(m.vectors()), exprs["T_RR"]
    (['mu', 'y', 'y2'], '(y2 - X2.T*wR).T*(y2 - X2.T*wR)/n')
    """
    m, _ = attention_model(f, rank, alpha, diagonal, digits)
    m.gaussian("Z2", "p", "n")
    m.signs("y2", "n")
    X2 = m.let("X2", m.parse("mu*y2.T + Z2"))
    m.let("K2", kernel(f, X2, m.parse("W"), diagonal, model=m, digits=digits))
    m.let("w", m.parse("X*K*inv(K.T*X.T*X*K/n + gamma*I(n))*y/n"))
    m.let("wR", m.parse("X*inv(X.T*X/n + gamma*I(n))*y/n"))
    return m, {"T_A": T_A, "T_RR": T_RR}
