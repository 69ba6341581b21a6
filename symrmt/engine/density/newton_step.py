"""The Newton step of a resolvent system as one expression list for the compile step: the residual, the
Jacobian, the derivative in the strength ``s`` or in ``z`` and the solve of both right-hand sides (the explicit
inverse, or Gaussian elimination in a static pivot order with its multipliers), from the symbolic system
(:class:`symrmt.engine.reduce.fixed_point.BlockSystem`); :mod:`symrmt.engine.density.fast` compiles it for NumPy
with :func:`symrmt.codegen.compile.compile_recipe` and runs it on a batch of points.
"""

from __future__ import annotations

import hashlib
import inspect

import sympy as sp

from symrmt.cache import cached
from symrmt.engine.reduce.fixed_point import S_STRENGTH
from symrmt.engine.reduce.linearize import EPS_SHIFT

__all__ = ["pivot_order", "step_sources", "step_digest"]


def pivot_order(nz, const):
    """The static pivot order of an elimination on the columns of a batch for the ``m x m`` sparsity pattern
    ``nz`` (rows of booleans: the entry is not structurally zero) with ``const`` (the entry is a constant): a list
    of ``(row, column, rows below, columns right)``, the diagonal first, then by Markowitz's rule (the fewest
    entries created), an exact constant pivot first among equals.  Raises ``ValueError`` for a structurally
    singular pattern.

    >>> pivot_order([[True, True], [True, False]], [[False, True], [True, True]])
    [(0, 0, [1], [1]), (1, 1, [], [])]
    >>> pivot_order([[True, False], [False, False]], [[True, True], [True, True]])
    Traceback (most recent call last):
    ...
    ValueError: the Jacobian is structurally singular
    """
    m = len(nz)
    nz = [list(row) for row in nz]
    rows, cols, order = list(range(m)), list(range(m)), []
    while rows:
        best = None
        for i in rows:
            ri = sum(nz[i][j] for j in cols)
            for j in cols:
                if nz[i][j]:
                    key = (i != j, (ri - 1) * (sum(nz[r][j] for r in rows) - 1), 0 if const[i][j] else 1, i, j)
                    best = key if best is None or key < best else best
        if best is None:
            raise ValueError("the Jacobian is structurally singular")
        r, c = best[3], best[4]
        below = [i for i in rows if i != r and nz[i][c]]
        right = [j for j in cols if j != c and nz[r][j]]
        for i in below:
            for j in right:
                nz[i][j] = True  # fill
        order.append((r, c, below, right))
        rows.remove(r)
        cols.remove(c)
    return order


def step_sources(system, zsym, wrt, threshold):
    """``(args, exprs)`` of the Newton step of a resolvent system compiled as one function: from the system's
    residual ``R``, its Jacobian ``J`` and ``T = dR/ds`` (``wrt = "s"``, :meth:`d_strength`) or ``T = dR/dz``
    (``wrt = "z"``, differentiated here in SymPy; the strength ``s = 1``), the expressions of ``-J^{-1} R`` and
    ``-J^{-1} T`` (the unknowns' order), then the multipliers of the elimination that are not exact constants of
    size at most ``1 / threshold`` (each checked at each point by the caller).  ``m <= 2``: the explicit
    inverse; else Gaussian elimination in the static pivot order of :func:`pivot_order` on the symbolic pattern,
    the arithmetic of the batch's elimination on the columns (:mod:`symrmt.engine.density.fast`); the common
    subexpressions of ``R``, ``J``, ``T`` and the elimination are shared by the compile step.  The shift ``eps``
    of the inverses is 0.  Arguments: the unknowns, then the parameters (and ``s``, ``wrt = "s"``).

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> plan = m.plan("trace(inv(G/sqrt(n) - z*I(n)))")
    >>> system = plan.traces[0].system
    >>> args, exprs = step_sources(system, plan.params[0], "z", 0.1)
    >>> len(args[0]), len(exprs)   # one unknown: its step and its slope
    (1, 2)
    """
    h = list(system.h)
    at = {EPS_SHIFT: 0} if wrt == "s" else {EPS_SHIFT: 0, S_STRENGTH: 1}
    res = [sp.sympify(r).subs(at) for r in system.residual]
    J = [[sp.sympify(x).subs(at) for x in row] for row in system.jacobian()]
    if wrt == "s":
        t = [sp.sympify(x).subs(at) for x in system.d_strength()]
    else:
        t = [sp.diff(r, zsym) for r in res]
    m = len(h)
    b = [[-r, -d] for r, d in zip(res, t)]
    lams = []
    if m == 1:
        out = [[x / J[0][0] for x in b[0]]]
    elif m == 2:
        (a, c), (d, e) = J
        det = a * e - c * d
        out = [[(e * x - c * y) / det for x, y in zip(*b)], [(a * y - d * x) / det for x, y in zip(*b)]]
    else:
        moving = set(h) | {zsym, S_STRENGTH}
        order = pivot_order([[x != 0 for x in row] for row in J],
                             [[not (x.free_symbols & moving) for x in row] for row in J])
        A = {(i, j): J[i][j] for i in range(m) for j in range(m) if J[i][j] != 0}
        invs = []
        for r, c, below, right in order:
            inv = 1 / A[r, c]
            invs.append(inv)
            for i in below:
                lam = A[i, c] * inv
                lams.append(lam)
                for j in right:
                    A[i, j] = A.get((i, j), 0) - lam * A[r, j]
                b[i] = [x - lam * y for x, y in zip(b[i], b[r])]
        out = [None] * m
        for (r, c, _, right), inv in zip(reversed(order), reversed(invs)):
            acc = b[r]
            for j in right:
                acc = [x - A[r, j] * y for x, y in zip(acc, out[j])]
            out[c] = [x * inv for x in acc]
    lams = [x for x in lams if not (x.is_number and abs(complex(x)) <= 1 / threshold)]
    args = [h, list(system.params) + ([S_STRENGTH] if wrt == "s" else [])]
    return args, [o[0] for o in out] + [o[1] for o in out] + lams


@cached(maxsize=1)
def step_digest() -> str:
    """A digest of the step's derivation (:func:`step_sources`, :func:`pivot_order`): part of the compiled step's
    cache name (with the threshold).

    >>> len(step_digest()), step_digest() == step_digest()
    (8, True)
    """
    text = inspect.getsource(step_sources) + inspect.getsource(pivot_order)
    return hashlib.sha256(text.encode()).hexdigest()[:8]
