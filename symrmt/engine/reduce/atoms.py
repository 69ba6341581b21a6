r"""Diagonal laws with many atoms: the atom-indexed unknowns reduced to weighted sums (SymPy only).

Splitting a diagonal law of ``K`` atoms (:func:`symrmt.engine.reduce.linearize.split_atoms`) gives
each atom its own copy of the blocks of the law's dimension ``d``, and the fixed point grows
with ``K``.  It need not.  In the pencil *before* splitting the diagonal matrix ``D`` is a
deterministic leaf: it enters ``L_0`` only.  Replace it by one symbolic *template* atom
``v I`` and write the block fixed point of that pencil (:class:`AtomSystem`).  On the split
pencil, the block-trace matrix of atom ``a`` on the blocks of ``d`` is then

.. math::  H^{(a)} = \big(L_{0,d}(v_a) - s\,\eta_d(H_o, S)\big)^{-1},
           \qquad S = \sum_a w_a H^{(a)} ,

because every Gaussian or GOE touching ``d`` splits into independent sub-blocks whose
second moments weigh atom ``b`` by its share ``w_b`` of the dimension: every ``eta`` that
reads a block of ``d`` reads the weighted sum ``S`` (Silverstein and Bai 1995 for the
sample covariance; this is the same reduction for any pencil).  ``eta_d`` does not depend on
the atom, so the per-atom blocks are explicit functions of the sums and the atom value.  The
unknowns are the entries of the other groups ``H_o`` and of ``S``, as many as for a law of
one atom, and the equations are

.. math::  (L_{0,o} - s\,\eta_o(H_o, S)) H_o = I ,\qquad
           S = \sum_a w_a \big(L_{0,d}(v_a) - s\,\eta_d(H_o, S)\big)^{-1} .

This module writes the template system and the pieces a numeric solver sums over the atoms: the
residual rows of the other groups with their Jacobian and ``s``/``eps`` derivatives, ``L_{0,d}(v)`` and
``eta_d`` with its (constant) derivative in the unknowns.  ``tau`` over ``d`` reads ``S``, exactly as it reads ``H_d`` for one atom.
"""

from __future__ import annotations

import sympy as sp

from symrmt.engine.reduce.fixed_point import S_STRENGTH, BlockSystem
from symrmt.engine.lang.node import ModelError
from symrmt.engine.reduce.linearize import EPS_SHIFT, Pencil

#: the template atom value
V_ATOM = sp.Symbol("v_atom", real=True)
#: most atoms of one law (the atoms are summed numerically at every evaluation)
MAX_SUM_ATOMS = 4096


def template_pencil(p: Pencil, law) -> Pencil:
    """The pencil ``p`` with the diagonal leaf of ``law`` (a :class:`~symrmt.engine.lang.matrices.Diagonal`) replaced
    by :data:`V_ATOM` times the identity.  Raises :class:`ModelError` when another diagonal law is left.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n"); D = m.diag("D", "n", [1, 4], ["1/4", "3/4"])
    >>> P = lin.linearize(lin.normalize(m.expr("inv(Z*D*Z.T/n + gamma*I(p))"))[1])
    >>> P.Q[(0, 1)], template_pencil(P, D).Q[(0, 1)]
    ({('D', 'D'): 1}, {'I': v_atom})
    """
    Q = {}
    for ij, e in p.Q.items():
        out = {}
        for leaf, c in e.items():
            key = "I" if leaf != "I" and leaf[0] == "D" and leaf[1] == law.name else leaf
            c = c * V_ATOM if key != leaf else c
            out[key] = sp.expand(out.get(key, 0) + c)
        out = {k: c for k, c in out.items() if c != 0}
        if out:
            Q[ij] = out
    if any(leaf != "I" and leaf[0] == "D" for e in Q.values() for leaf in e):
        raise ModelError("the atom-sum reduction takes one diagonal law per trace")
    return Pencil(p.blocks, p.ratios, Q, p.u, p.v)


class AtomSystem(BlockSystem):
    """The fixed point of a pencil whose dimension ``law.dim`` carries a law of many atoms.

    A :class:`~symrmt.engine.reduce.fixed_point.BlockSystem` of the template pencil in which the unknowns of
    the law's dimension stand for the weighted sums ``S`` (module docstring).  Raises :class:`ModelError` for a
    law with symbolic values or weights, more than :data:`MAX_SUM_ATOMS` atoms, or a dimension with no block in
    the pencil.  Besides the base class's attributes:

    Attributes
    ----------
    law : Diagonal
    values, weights : tuple of SymPy numbers
    dgroup : list of int
        The pencil blocks on the law's dimension, in order (``k_d`` of them).
    d_rows : list of int
        Positions in ``unknowns`` of the entries of ``S`` (row-major over ``dgroup``).

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> m = Model(); _ = m.dim("p", "c*n"); _ = m.gaussian("Z", "p", "n"); D = m.diag("D", "n", [1, 4], ["1/4", "3/4"])
    >>> A = AtomSystem(lin.linearize(lin.normalize(m.expr("inv(Z*D*Z.T/n + gamma*I(p))"))[1]), D)
    >>> A.unknowns, A.dgroup, A.d_rows, A.values  # as many unknowns as for one atom
    ([(0, 0), (0, 1), (1, 0), (1, 1), (2, 2)], [0, 1], [0, 1, 2, 3], (1, 4))
    >>> A.atom_pieces()[0]  # L_{0,d}(v): the atom value enters here only
    [-1, v_atom, 0, -1]
    """

    def __init__(self, pencil: Pencil, law):
        if any(not (x.is_number and x.is_real) for x in law.values + law.weights):
            raise ModelError(f"diag {law.name}: a law of many atoms needs numeric values and weights")
        if len(law.values) > MAX_SUM_ATOMS:
            raise ModelError(f"diag {law.name}: at most {MAX_SUM_ATOMS} atoms, got {len(law.values)}")
        super().__init__(template_pencil(pencil, law), reduce=False)  # d_rows reads every entry of S
        self.law, self.values, self.weights = law, law.values, law.weights
        key = (law.dim.name, None)
        self.dgroup = list(self.groups.get(key, []))
        if not self.dgroup:
            raise ModelError(f"diag {law.name}: its dimension has no block in the pencil")
        pos = {u: r for r, u in enumerate(self.unknowns)}
        self.d_rows = [pos[(i, j)] for i in self.dgroup for j in self.dgroup]
        for i in self.dgroup:
            for j in self.dgroup:
                if self.eta[i, j].has(V_ATOM):
                    raise ModelError("internal: eta depends on the atom")  # cannot happen: D is deterministic
        self.params = [x for x in self.params if x != V_ATOM]

    def other_rows(self):
        """``(R, J, dR/ds, dR/deps)`` rows of the unknowns outside the law's dimension (free of ``V_ATOM``)."""
        keep = [r for r in range(len(self.unknowns)) if r not in set(self.d_rows)]
        J = self.jacobian()
        ds, de = self.d_strength(), self.d_shift()
        return ([self.residual[r] for r in keep], [J[r] for r in keep], [ds[r] for r in keep],
                [de[r] for r in keep], keep)

    def atom_pieces(self):
        """``(L0_d, eta_d, deta_d)``: ``L_{0,d}(v, eps)`` (``k_d^2`` entries, row-major), ``eta_d(h)``
        (``k_d^2``) and ``d eta_d / d h`` (``k_d^2`` rows of ``m`` constants in the parameters)."""
        L0 = [self.L0[i, j] for i in self.dgroup for j in self.dgroup]
        eta = [self.eta[i, j] for i in self.dgroup for j in self.dgroup]
        deta = [[sp.diff(e, x) for x in self.h] for e in eta]
        return L0, eta, deta

    def derivative_rhs(self, alpha):
        raise ModelError(f"diff() of a trace with the {len(self.values)}-atom law {self.law.name} is not supported "
                         "(the atom-sum reduction has no parameter derivatives yet); use fewer atoms")

    def latex(self) -> str:
        return (super().latex() + f",\n\\qquad v \\in \\{{v_a\\}}_{{a=1}}^{{{len(self.values)}}}: "
                "\\text{the entries of } H \\text{ on the blocks of } " + self.law.dim.name
                + " \\text{ are } S = \\sum_a w_a H^{(a)}")


__all__ = ["AtomSystem", "V_ATOM", "MAX_SUM_ATOMS", "template_pencil", "S_STRENGTH", "EPS_SHIFT"]
