r"""The Gaussian-equivalent kernel with a signal and weights: ``kernel(f, X, W)``.

For ``X = F + Z`` (``Z`` a ``p x n`` Gaussian matrix, ``F`` finite rank, e.g. ``mu*y.T``) and
``W = alpha I_p + L`` (``alpha > 0`` a number, ``L`` finite rank, e.g. ``wk*wq.T``), the kernel
``K = f(X^T W X/sqrt(p))/sqrt(p)`` (entry-wise, the diagonal zero or kept) has, in the limit, the
Gaussian equivalent of ``docs/theory.md`` (sections 2.2 and 2.3):

.. math::

    K \simeq \frac{a_1(\alpha)}{\alpha} \frac{X^T W X}{p} - a_1(\alpha) I_n + b(\alpha)\frac{G}{\sqrt p}
    + d(\alpha) I_n ,

with ``f_alpha(t) = f(alpha t)``, ``a_1(alpha) = E[f_alpha(xi) xi]``, ``b^2 = nu(alpha) - a_1^2``,
``d(alpha) = alpha d`` (kept diagonal) or 0, and ``G`` a fresh ``goe(n)``.  Written out, ``X^T W X``
holds every finite-rank term the signal and the weights contribute: ``Z^T W Z`` (its finite-rank part
``Z^T L Z``), ``F^T W Z + Z^T W F`` and ``F^T W F``.  The signal and the weights act on the kernel
to first order through ``f'``, whose mean is ``a_1``, so only ``a_1``, ``nu`` and ``d`` enter.

This is the model the package's hand-built solver takes (:mod:`symrmt.models.attention.equations`, the
Woodbury update of ``docs/theory.md`` section 5), written as an expression: the engine derives the
pencil, the fixed point and the Woodbury system by itself.
"""

from __future__ import annotations

import sympy as sp

from symrmt.engine.nodes import (
    Const, Gaussian, Identity, MatProduct, MatrixNode, MatSum, ModelError, Scaled, Transpose, walk,
)
from symrmt.engine.vectors import Vector

__all__ = ["kernel_signal", "split_weights", "check_signal_matrix"]


def _finite_rank(m) -> bool:
    """Whether ``m`` is finite rank by structure: a product (possibly scaled) with a vector factor."""
    if isinstance(m, Scaled):
        return _finite_rank(m.matrix)
    if isinstance(m, Transpose):
        return _finite_rank(m.matrix)
    if isinstance(m, MatProduct):
        return any(isinstance(f, Vector) or isinstance(f, Transpose) and isinstance(f.matrix, Vector)
                   for f in m.factors)
    return False


def _deterministic(m) -> bool:
    return not any(x.kind in ("gaussian", "goe") or (isinstance(x, Vector) and x.random) for x in walk(m))


def check_signal_matrix(X) -> Gaussian:
    """The Gaussian ``Z`` of ``X = Z + finite rank`` (raises :class:`ModelError` naming what is wrong)."""
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
        if not _finite_rank(t):
            raise ModelError("kernel(f, X, W): every term of X other than its Gaussian must be finite rank (a "
                             f"product with a vector, such as mu*y.T); got a {t.kind} term")
    return gauss[0]


def split_weights(W, p):
    """``(alpha, L)`` of ``W = alpha I_p + L`` with ``alpha > 0`` a number and ``L`` finite rank (or None)."""
    if not isinstance(W, MatrixNode) or W.rows != p or W.cols != p:
        raise ModelError(f"kernel(f, X, W): W must be a {p.name} x {p.name} matrix (alpha*I({p.name}) + finite rank)")
    terms = W.terms if isinstance(W, MatSum) else (W,)
    alpha, rest = sp.Integer(0), []
    for t in terms:
        if isinstance(t, Identity):
            alpha += 1
        elif isinstance(t, Scaled) and isinstance(t.matrix, Identity):
            alpha += t.scalar.value
        else:
            if not _finite_rank(t):
                raise ModelError(f"kernel(f, X, W): every term of W other than alpha*I({p.name}) must be finite rank "
                                 f"(a product of vectors, such as wk*wq.T); got a {t.kind} term")
            if not _deterministic(t):
                raise ModelError("kernel(f, X, W): the weights must be deterministic; a random vector in W is not "
                                 "in the model")
            rest.append(t)
    alpha = sp.nsimplify(alpha)
    if not alpha.is_number or not alpha.is_Rational or not alpha > 0:
        raise ModelError(f"kernel(f, X, W): the identity part alpha of W must be a positive number (its Hermite "
                         f"data are computed for it), got {alpha}")
    return alpha, rest


def kernel_signal(f, X, W=None, diagonal: str = "zero", *, model=None, name=None, digits: int = 80):
    """The Gaussian-equivalent expression of ``f(X^T W X/sqrt(p))/sqrt(p)`` (module docstring), an
    ``n x n`` matrix node; ``W = None`` is ``I_p``."""
    from fractions import Fraction

    from symrmt.engine.nonlinear_kernel import kernel_coefficients, fresh_goe

    Z = check_signal_matrix(X)
    p, ncols = X.rows, X.cols
    if W is None:
        W = Identity(p)
    alpha, _rest = split_weights(W, p)
    k = kernel_coefficients(f, Fraction(int(alpha.p), int(alpha.q)), diagonal, digits)
    pc = Const(p.size)
    terms = []
    if k["a1"] != 0:
        terms.append(Scaled(Const(k["a1"] / alpha) / pc, X.T * W * X))
    if k["b"] != 0:
        G = fresh_goe(Z, ncols, model, name)
        terms.append(Scaled(Const(k["b"]) * pc ** sp.Rational(-1, 2), G))
    shift = k["d"] - k["a1"]
    if shift != 0:
        terms.append(Scaled(Const(shift), Identity(ncols)))
    if not terms:
        raise ModelError(f"the Gaussian-equivalent kernel of f = {f} is the zero matrix (a1 = b = d = 0)")
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out
