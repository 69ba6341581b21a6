r"""The elliptic law ``elliptic(n, tau)`` of the trace engine.

``A = elliptic(n, tau)`` is an ``n x n`` real matrix with iid centred Gaussian entries of variance 1
(the user writes ``A/sqrt(n)``, as for ``gaussian``) and ``corr(A_ij, A_ji) = tau`` for ``i != j``,
``-1 <= tau <= 1``: Ginibre at ``tau = 0``, GOE at ``tau = 1``, a skew-symmetric Gaussian at
``tau = -1``.  It is declared as the sum of two fresh independent leaves the engine already knows,

    A = sqrt((1 + tau)/2) G + sqrt((1 - tau)/2) (Z - Z^T)/sqrt(2),

``G = goe(n)`` (``N(0, 1)`` off the diagonal) and ``Z = gaussian(n, n)``, so that
``Var A_ij = (1 + tau)/2 + (1 - tau)/2 = 1`` and ``Cov(A_ij, A_ji) = (1 + tau)/2 - (1 - tau)/2 = tau``
for ``i != j``.  The diagonal of this sum is 0 (``goe`` has a zero diagonal, ``Z - Z^T`` has one), where
the ensemble's is ``N(0, 1 + tau)``; the diagonal does not enter the limit.  The second moments are
therefore exactly those of the elliptic ensemble, ``E[A M A] = tau tr(M)``, ``E[A M A^T] = tr(M)``, and
every path of the engine (the fixed point, its certification, the Hermitization of a non-normal
resolvent, ``diff``, ``--simulate``, which draws ``G`` and ``Z``, so its diagonal is 0) reads the law from
those two leaves.  The ``1/n`` term (``Model.limit(..., n=N)``) is refused: the diagonal enters it, and
the sum's ``1/n`` term is not the ensemble's (``tau(A A^T/n + 2/5)^{-1}`` at ``tau = 0``, ``n = 24``:
correction ``0.709`` for the zero diagonal against ``0.305`` for the Ginibre matrix).
The leaves are named ``_A_sym`` and ``_A_skew`` (a leading ``_`` no declaration may use, so no clash).

Its eigenvalues fill the ellipse with semi-axes ``1 + tau`` and ``1 - tau`` uniformly (Girko; Sommers,
Crisanti, Sompolinsky and Stein 1988); outside it
``tau((z - A/sqrt(n))^{-1}) = (z - sqrt(z^2 - 4 tau))/(2 tau)`` on the branch ``~ 1/z`` at infinity,
inside it (Brown measure) ``x/(1 + tau) - i y/(1 - tau)`` at ``z = x + i y``.

Examples
--------
>>> from symrmt.engine import Model
>>> m = Model()
>>> A = m.elliptic("A", "n", "1/2")
>>> r = m.limit("trace(inv(z*I(n) - A/sqrt(n)))", at={"z": 3}, digits=19)
>>> print(r)  # (3 - sqrt(9 - 2)) / 1
0.3542486889354094095
"""

from __future__ import annotations

import sympy as sp

from symrmt.engine.lang.matrices import GOE, Const, Gaussian, MatSum, Scaled, Transpose
from symrmt.engine.lang.node import ModelError
from symrmt.engine.laws.registry import Law

__all__ = ["LAW", "elliptic_node"]


def elliptic_node(model, name: str, dim, tau):
    """Declare the elliptic matrix ``name`` of ``model`` (a square ``dim x dim``, correlation ``tau``:
    a number, a fraction text or a parameter expression) and return its expression node (a
    sum of a GOE and a skew-symmetric Gaussian leaf, see the module docstring), registered as a
    named sub-expression (as :meth:`Model.let` does) so that parsed expressions may use ``name``.  The
    text form ``elliptic(dim, tau)`` is read by :meth:`Model.declare`.

    Raises :class:`ModelError` for a name in use, an undeclared dimension or a numeric ``tau``
    outside ``[-1, 1]``.

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> A = elliptic_node(m, "A", "n", 0)
    >>> sorted(m.matrices)
    ['_A_skew', '_A_sym']
    """
    model._matrix_name(name)
    d = model._dim_of(dim)
    t = model._exact(tau, f"elliptic {name}: tau")
    t = sp.sympify(t)
    if t.is_number:
        if t.is_extended_real is not True or not (-1 <= t <= 1):
            raise ModelError(f"elliptic {name}: tau is a correlation in [-1, 1], got {t}")
    sym, skew = f"_{name}_sym", f"_{name}_skew"
    for leaf in (sym, skew):
        if leaf in model.matrices:
            raise ModelError(f"elliptic {name}: {leaf!r} is already used")
    G = model.matrices[sym] = GOE(sym, d)
    Z = model.matrices[skew] = Gaussian(skew, d, d)
    G.elliptic_of = Z.elliptic_of = name  # read by the 1/n term, which refuses the law (module docstring)
    a = sp.sqrt((1 + t) / 2)
    b = sp.sqrt((1 - t) / 2) / sp.sqrt(2)
    terms = []
    if a != 0:
        terms.append(Scaled(Const(a), G) if a != 1 else G)
    if b != 0:
        terms.append(Scaled(Const(b), MatSum((Z, Scaled(Const(-1), Transpose(Z))))))
    node = terms[0] if len(terms) == 1 else MatSum(tuple(terms))
    model.named[name] = node
    return node


LAW = Law("elliptic", "elliptic(dim, tau)", "matrix", "iid N(0, 1) entries, corr(A_ij, A_ji) = tau; written A/sqrt(n)",
          elliptic_node, params=True, leaves=("goe", "gaussian"))
