r"""The Gaussian-equivalent expression of a nonlinear inner-product kernel.

For ``Z`` a ``p x n`` Gaussian matrix (iid ``N(0, 1)`` entries) and a centered
nonlinearity ``f``, the kernel matrix

.. math::

    K = \frac{1}{\sqrt p} f\!\left(\alpha \frac{Z^T Z}{\sqrt p}\right)
    \quad (\text{entry-wise } f,\ K_{ii} = 0 \text{ or kept})

has, in the proportional limit ``p/n -> c``, the same normalized traces in any
rational expression as

.. math::

    a_1(\alpha) \left(\frac{Z^T Z}{p} - I_n\right) + b(\alpha) \frac{G}{\sqrt p} + d(\alpha) I_n,

where ``G`` is a fresh ``goe(n)`` (symmetric, ``N(0, 1)`` off the diagonal)
independent of everything else, and, with ``f_alpha(t) = f(alpha t)`` and
``xi ~ N(0, 1)``:

* ``a_1(alpha) = E[f_alpha(xi) xi]``,
* ``b(alpha)^2 = nu(alpha) - a_1(alpha)^2`` with ``nu(alpha) = E[f_alpha(xi)^2]``,
* ``d(alpha) = lim_{t -> oo} f_alpha(t)/t = alpha d`` for ``diagonal="keep"``, ``0`` for ``"zero"``.

These are the Hermite data of :mod:`symrmt.hermite` for ``f(alpha t)``, taken
the way the package's attention theory takes them for ``W = alpha I``
(:func:`symrmt.hermite.scaled.scaled_nonlinearity`).  Only ``a_1``, ``nu`` and ``d``
enter the limit.

Exactness: when ``a_1`` and ``nu`` have closed forms (ReLU, erf, sin, centered
cos, polynomials, ...) the coefficients in the expression are exact SymPy
numbers.  Otherwise (tanh, sigmoid, GELU, ...) they come from the package's
high-precision quadrature at ``digits`` significant digits and enter the tree
as the exact rationals of those binary values, so a limit computed from the
expression is right to about ``digits`` digits and no further.

With a signal and weights: ``kernel(f, X, W)``
----------------------------------------------

For ``X = F + Z`` (``Z`` a ``p x n`` Gaussian matrix, ``F`` finite rank, e.g. ``mu*y.T``) and
``W = alpha I_p + L`` (``alpha > 0`` a number, ``L`` finite rank, e.g. ``wk*wq.T``), the kernel
``K = f(X^T W X/sqrt(p))/sqrt(p)`` (entry-wise, the diagonal zero or kept) has, in the limit, the
Gaussian equivalent of ``docs/theory.md`` (sections 2.2 and 2.3):

.. math::

    K \simeq \frac{a_1(\alpha)}{\alpha} \frac{X^T W X}{p} - a_1(\alpha) I_n + b(\alpha)\frac{G}{\sqrt p}
    + d(\alpha) I_n ,

with the same ``a_1``, ``b`` and ``d`` and ``G`` a fresh ``goe(n)`` (:func:`kernel_signal`).  Written
out, ``X^T W X`` holds every finite-rank term the signal and the weights contribute: ``Z^T W Z`` (its
finite-rank part ``Z^T L Z``), ``F^T W Z + Z^T W F`` and ``F^T W F``.  The signal and the weights act
on the kernel to first order through ``f'``, whose mean is ``a_1``, so only ``a_1``, ``nu`` and ``d``
enter.

This is the paper's model (the Woodbury update of ``docs/theory.md`` section 5) written as an expression:
the engine derives the pencil, the fixed point and the Woodbury system by itself.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import sympy as sp

from symrmt import hermite
from symrmt.engine.kernels.weights import check_signal_matrix, is_deterministic, is_finite_rank, kernel_given
from symrmt.engine.lang.matrices import (
    GOE, Const, Gaussian, Identity, MatrixNode, ModelError, Scaled,
)
from symrmt.engine.lang.algebra import identity_part
from symrmt.errors import ParameterError
from symrmt.hermite.kernel_terms import b_squared, gaussian_equivalent
from symrmt.hermite.scaled import scaled_nonlinearity
from symrmt.parsing.choices import check_diagonal
from symrmt.parsing.numbers import to_fraction

__all__ = ["kernel", "kernel_coefficients", "kernel_signal", "split_weights", "check_signal_matrix"]

#: default digits of coefficients that have no closed form
KERNEL_DIGITS = 80

_FRESH = itertools.count(1)


def _exact_mpf(x) -> sp.Rational:
    """The exact rational value of an mpmath ``mpf`` (its binary mantissa and exponent)."""
    if not isinstance(x, mpmath.mpf):  # mpf(x) would round to the context precision
        raise TypeError(f"expected an mpf, got {type(x).__name__}")
    man, exp = x.man_exp
    return sp.Integer(man) * sp.Integer(2) ** exp if man else sp.Integer(0)


def kernel_coefficients(f, alpha=1, diagonal: str = "zero", digits: int = KERNEL_DIGITS) -> dict:
    """``{"a1", "nu", "b", "d", "exact"}``: the coefficients of the Gaussian-equivalent kernel.

    Parameters
    ----------
    f : str, sympy expression or Nonlinearity
        A preset name (``"tanh"``, ``"relu"``, ``"cos"``, ...) or an expression in ``t``;
        ``f(alpha t)`` must be centered (``E f(alpha xi) = 0``).
    alpha : number
        Scale of the kernel's argument (``W = alpha I``); exact input such as ``"1/2"``.
    diagonal : {"zero", "keep"}
    digits : int
        Significant digits of the coefficients that have no closed form.

    Returns
    -------
    dict
        ``a1``, ``nu``, ``b`` and ``d`` as exact SymPy numbers (``b >= 0``, ``d = 0`` for
        ``"zero"``), and ``exact``: whether ``a1`` and ``b`` are closed forms.

    Examples
    --------
    >>> k = kernel_coefficients("relu", diagonal="keep")
    >>> k["a1"], k["d"], sp.simplify(k["b"] ** 2)
    (1/2, 1, (-2 + pi)/(4*pi))
    >>> k = kernel_coefficients("tanh", digits=30)
    >>> k["exact"], sp.N(k["a1"], 20)
    (False, 0.60570550960215882558)
    """
    diagonal = check_diagonal(diagonal)
    alpha_q = to_fraction(alpha, "alpha")
    if alpha_q <= 0:
        raise ParameterError(f"alpha must be > 0, got {alpha}")
    if not isinstance(digits, int) or isinstance(digits, bool) or digits < 15:
        raise ParameterError(f"digits must be an integer >= 15, got {digits!r}")
    nl = scaled_nonlinearity(f, alpha_q)
    try:
        a1 = sp.nsimplify(nl.a(1)) if nl.a(1).is_Rational else nl.a(1)
        nu = nl.nu
        exact = True
    except hermite.NotExact:
        dps = digits + 10
        a1 = _exact_mpf(nl.a_mpf(1, dps))
        nu = _exact_mpf(nl.nu_mpf(dps))
        exact = False
    b2 = sp.simplify(b_squared(a1, nu)) if exact else b_squared(a1, nu)
    if sp.N(b2, 30) < -sp.Float(10) ** -(digits - 5):
        raise ParameterError(f"nu - a1^2 = {sp.N(b2, 15)} < 0 for f = {nl.expr} (Cauchy-Schwarz fails; not a centered f)")
    b = sp.sqrt(b2) if sp.N(b2, 30) > 0 else sp.Integer(0)
    d = sp.sympify(nl.d) if diagonal == "keep" else sp.Integer(0)
    return {"a1": a1, "nu": nu, "b": b, "d": d, "exact": exact}


def fresh_goe(Z, ncols, model=None, name=None):
    """A fresh ``goe(n)`` node (``ncols``: the dimension ``n``) for the kernel of the Gaussian ``Z``: declared in
    ``model`` as ``name`` (default ``G_<Z>``, or the next free ``G_<Z>_<k>``), else an undeclared node with a
    unique name.  Raises what ``model.goe`` raises for a taken ``name``.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); Z = m.gaussian("Z", "p", "n")
    >>> fresh_goe(Z, m.dims["n"], m), fresh_goe(Z, m.dims["n"], m)
    (GOE('G_Z', 'n'), GOE('G_Z_2', 'n'))
    >>> fresh_goe(Z, m.dims["n"]).name.startswith("G_Z_")  # no model: a unique undeclared name
    True
    """
    if model is not None:
        gname = name or f"G_{Z.name}"
        base, j = gname, 1
        while name is None and (gname in model.matrices or gname in model.dims or gname in model.symbols):
            j += 1
            gname = f"{base}_{j}"
        return model.goe(gname, ncols)
    return GOE(name or f"G_{Z.name}_{next(_FRESH)}", ncols)


def kernel(f, Z, alpha=1, diagonal: str = "zero", *, model=None, name: str | None = None,
           digits: int = KERNEL_DIGITS):
    r"""The Gaussian-equivalent expression of ``f(alpha Z^T Z / sqrt(p)) / sqrt(p)`` (an ``n x n`` matrix node).

    ``kernel(f, X, W[, diagonal])``, with ``X = Z + finite rank`` (a matrix expression, not a bare
    Gaussian) or ``W = alpha I + finite rank`` a matrix in place of ``alpha``, is the kernel
    ``f(X^T W X/sqrt(p))/sqrt(p)`` with a signal and weights
    (:func:`kernel_signal`).

    Returns ``a1 (Z^T Z/p - I) + b G/sqrt(p) + d I`` (module docstring) with ``G`` a
    fresh ``goe(n)``; terms whose coefficient is zero are left out (no ``G`` for a
    linear ``f``).

    Parameters
    ----------
    f : str, sympy expression or Nonlinearity
        The nonlinearity (see :func:`kernel_coefficients`).
    Z : Gaussian node
        A ``p x n`` matrix declared with ``gaussian(p, n)``.
    alpha : number
        Scale of the kernel's argument.
    diagonal : {"zero", "keep"}
        ``K_ii = 0``, or kept (its limit ``d`` is added; refused when ``f(t)/t`` has no finite limit).
    model : Model, optional
        When given, ``G`` is declared in it (under ``name``, default ``G_<Z>``, or the
        next free ``G_<Z>_<k>``), so the model knows every matrix of the expression.
    name : str, optional
        Name of the fresh ``goe(n)``.
    digits : int
        Digits of coefficients without a closed form (tanh, ...).

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model(); m.dim("p", "c*n"); Z = m.gaussian("Z", "p", "n")
    Dim('p', c)
    >>> K = kernel("relu", Z, model=m)
    >>> sorted(m.matrices), (K.rows.name, K.cols.name)
    (['G_Z', 'Z'], ('n', 'n'))
    >>> K.kind, [t.kind for t in K.terms]
    ('sum', ['scaled', 'scaled', 'scaled'])
    """
    if getattr(alpha, "kind", None) == "given":
        # a general W given by its entries (symrmt.engine.kernels.weights): no signal, diagonal zero
        if model is None:
            raise ModelError("kernel(f, Z, W) with W given by its entries needs model= (its elliptic remainder "
                             "is declared there)")
        # the Mehler series of the remainder's correlation reaches about 15 digits at |rho| ~ 0.6: the default
        # coefficient digits are 15 for a general W (digits= asks more, or a PrecisionError)
        return kernel_given(f, Z, alpha, diagonal, model=model, name=name,
                            digits=15 if digits == KERNEL_DIGITS else digits)
    if isinstance(alpha, MatrixNode) or not isinstance(Z, Gaussian) and isinstance(Z, MatrixNode):
        # kernel(f, X, W): a signal (X = Z + finite rank) and weights (W = alpha I + finite rank)
        return kernel_signal(f, Z, alpha if isinstance(alpha, MatrixNode) else None, diagonal, model=model,
                             name=name, digits=digits)
    if not isinstance(Z, Gaussian):
        raise ModelError(
            "kernel() takes a Gaussian matrix Z (declared with gaussian(p, n)): the Gaussian-equivalent "
            f"kernel holds for iid entries, got {type(Z).__name__}"
        )
    k = kernel_coefficients(f, alpha, diagonal, digits)
    kt = gaussian_equivalent(k["a1"], k["nu"], k["d"])  # W = alpha I is in the Hermite data of f(alpha t)
    p = Const(Z.rows.size)
    linear = Scaled(Const(kt.wishart) / p, Z.T * Z) if kt.wishart != 0 else None
    return _equivalent(f, k, kt, linear, Z, Z.cols, p, model, name)


def _equivalent(f, k, kt, linear, Z, ncols, p, model, name):
    """``linear + b G/sqrt(p) + (d - a1) I``: the Gaussian-equivalent expression from the coefficients
    ``k`` of :func:`kernel_coefficients` and ``kt`` of :func:`~symrmt.hermite.kernel_terms.gaussian_equivalent`, its linear part ``linear`` (``None`` when ``a1 = 0``) and ``p``
    (a :class:`Const`); ``G`` is :func:`fresh_goe` of ``Z``, made only when ``b != 0``.  Terms whose
    coefficient is zero are left out; all of them zero is refused."""
    terms = [] if linear is None else [linear]
    if model is not None and hasattr(model, "kernel_names"):
        model.kernel_names.add(Z.name)
    if k["b"] != 0:
        G = fresh_goe(Z, ncols, model, name)
        if model is not None and hasattr(model, "kernel_names"):
            model.kernel_names.add(G.name)
        terms.append(Scaled(Const(k["b"]) * p ** sp.Rational(-1, 2), G))
    shift = kt.identity
    if shift != 0:
        terms.append(Scaled(Const(shift), Identity(ncols)))
    if not terms:
        raise ModelError(f"the Gaussian-equivalent kernel of f = {f} is the zero matrix (a1 = b = d = 0)")
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


# ---------------------------------------------------------------- a signal and weights

def split_weights(W, p):
    """``(alpha, L)`` of the weights ``W = alpha I_p + L`` (a ``p x p`` matrix node, ``p`` its
    :class:`~symrmt.engine.lang.node.Dim`): ``alpha > 0`` an exact SymPy rational and ``L`` the list of the other
    terms, each finite rank and deterministic.  Raises :class:`ModelError` otherwise.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.lang.matrices import Identity
    >>> m = Model(); p = m.dim("p", "c*n"); wk, wq = m.vector("wk", "p"), m.vector("wq", "p")
    >>> alpha, L = split_weights(2 * Identity(p) + wk * wq.T, p)
    >>> alpha, [t.kind for t in L]
    (2, ['product'])
    >>> Z = m.gaussian("Z", "p", "n")
    >>> split_weights(Identity(p) + Z * Z.T, p)
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: kernel(f, X, W): every term of W other than alpha*I(p) must be finite rank (a product of vectors, such as wk*wq.T); got a product term
    """
    if not isinstance(W, MatrixNode) or W.rows != p or W.cols != p:
        raise ModelError(f"kernel(f, X, W): W must be a {p.name} x {p.name} matrix (alpha*I({p.name}) + finite rank)")
    alpha, rest = identity_part(W)
    for t in rest:
        if not is_finite_rank(t):
            raise ModelError(f"kernel(f, X, W): every term of W other than alpha*I({p.name}) must be finite rank "
                             f"(a product of vectors, such as wk*wq.T); got a {t.kind} term")
        if not is_deterministic(t):
            raise ModelError("kernel(f, X, W): the weights must be deterministic; a random vector in W is not "
                             "in the model")
    alpha = sp.nsimplify(alpha)
    if not alpha.is_number or not alpha.is_Rational or not alpha > 0:
        raise ModelError(f"kernel(f, X, W): the identity part alpha of W must be a positive number (its Hermite "
                         f"data are computed for it), got {alpha}")
    return alpha, rest


def kernel_signal(f, X, W=None, diagonal: str = "zero", *, model=None, name=None, digits: int = KERNEL_DIGITS):
    """The Gaussian-equivalent expression of ``f(X^T W X/sqrt(p))/sqrt(p)`` (the module docstring's section on a
    signal and weights), an ``n x n`` matrix node: ``(a1/alpha) X^T W X/p + b G/sqrt(p) + (d - a1) I_n`` with
    ``G`` a fresh ``goe(n)`` (:func:`fresh_goe`, declared in ``model`` when given) and the terms of zero
    coefficient left out.

    ``X = Z + finite rank`` (``Z`` Gaussian), ``W = alpha I_p + finite rank`` (``None``: ``I_p``); ``f``,
    ``diagonal``, ``name`` and ``digits`` as in :func:`kernel`.  Raises :class:`ModelError` for a signal or
    weights outside the model (checked before any Hermite data is computed) and what :func:`kernel_coefficients`
    raises.

    >>> from symrmt.engine import Model
    >>> m = Model(); _ = m.dim("p", "c*n"); Z = m.gaussian("Z", "p", "n")
    >>> mu, y = m.vector("mu", "p"), m.vector("y", "n")
    >>> kernel_signal("relu", Z + mu * y.T, Z * Z.T, model=m)
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: kernel(f, X, W): every term of W other than alpha*I(p) must be finite rank ...
    """
    Z = check_signal_matrix(X)
    p = X.rows
    if W is None:
        W = Identity(p)
    alpha, _rest = split_weights(W, p)
    k = kernel_coefficients(f, Fraction(int(alpha.p), int(alpha.q)), diagonal, digits)
    kt = gaussian_equivalent(k["a1"], k["nu"], k["d"], alpha)  # the one definition of the model
    pc = Const(p.size)
    linear = Scaled(Const(kt.xwx) / pc, X.T * W * X) if kt.xwx != 0 else None
    return _equivalent(f, k, kt, linear, Z, X.cols, pc, model, name)
