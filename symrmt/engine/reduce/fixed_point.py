r"""The block-variance fixed point of a pencil, in SymPy.

For a pencil ``L = L_0 + sum_j (C_j (x) Zh_j + C_j' (x) Zh_j^T) + sum_g D_g (x) Gh_g``
(Gaussian blocks of entry variance ``1/n``), the block-trace matrix
``H = (id (x) tau)(L^{-1})`` solves, as ``n -> oo``,

.. math::  H = (L_0 - \eta(H))^{-1},

``H_{kl}`` defined where blocks ``k`` and ``l`` have the same dimension.  The map
``eta`` is linear and comes from the second moments (``Zh`` is ``a x b``)::

    E[Zh M Zh^T] = (b/n) tau(M) I_a,   E[Zh^T M Zh] = (a/n) tau(M) I_b,
    E[Gh M Gh]   = (a/n) tau(M) I_a,   E[Zh M Zh] = E[Zh^T M Zh^T] = o(1),

so ``eta(H)_{kl}`` sums, over every ordered pair of occurrences of one matrix, the first
at ``(k, m)`` and the second at ``(m', l)``, whose product has a moment above, the term
``coef * coef' * (N_m / n) * H_{m m'}`` (Far, Oraby, Bryc and Speicher 2008; Mingo and
Speicher, chapter 9).

The homotopy strength ``s`` scales the random part of the pencil by ``sqrt(s)``, hence
``eta`` by ``s``; the residual is ``R(H; s) = (L_0 - s eta(H)) H - I`` on the defined
entries.  At ``s = 0`` the solution is ``L_0^{-1}``, at ``s = 1`` the limit.  The
Jacobian ``dR/dH``, ``dR/ds`` and the derivatives in every parameter are SymPy
expressions; :meth:`BlockSystem.derivative_rhs` writes, for a multi-index of
parameters, the right-hand side of the linear system ``J H_alpha = -rhs`` that
implicit differentiation of ``R(H(theta), theta) = 0`` gives.

The examples take the resolvent trace ``tau((Z^T Z/n + gamma)^{-1})`` of a ``p x n`` Gaussian ``Z``,
``p = c n``, whose limit ``m`` is the Marchenko-Pastur root of ``gamma m^2 + (gamma + c - 1) m - 1 = 0``:

>>> from symrmt.engine import Model
>>> from symrmt.engine.reduce import linearize as lin
>>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
>>> P = lin.linearize(lin.normalize(model.expr("inv(Z.T*Z/n + gamma*I(n))"))[1])
>>> P.blocks
[('p', None), ('n', None)]
"""

from __future__ import annotations

import re
from itertools import combinations

import sympy as sp

from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.engine.reduce.merge import reduce_system

S_STRENGTH = sp.Symbol("s_hom", positive=True)


def pencil_parts(pencil):
    """``(L0, eta_coef)`` of a pencil: ``L_0`` as a SymPy matrix and ``eta`` as sparse coefficients,
    ``eta(H)_kl = sum_{(m, m')} eta_coef[k, l][m, m'] H_{m m'}`` (the module docstring).  Raises ``ValueError``
    for an entry that is neither constant nor random (a diagonal law not split into atoms).

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> P = lin.linearize(lin.normalize(model.expr("inv(Z.T*Z/n + gamma*I(n))"))[1])
    >>> L0, eta = pencil_parts(P)
    >>> L0.subs(EPS_SHIFT, 0), eta  # eta(H)_00 = -H_11 (E[Zh Zh^T] = I), eta(H)_11 = -c H_00
    (Matrix([
    [-1,      0],
    [ 0, -gamma]]), {(1, 1): {(0, 0): -c}, (0, 0): {(1, 1): -1}})
    """
    k = pencil.size
    L0 = sp.zeros(k, k)
    occ = {}
    for (i, j), e in pencil.Q.items():
        for leaf, c in e.items():
            if leaf == "I":
                L0[i, j] += c
            elif leaf[0] in ("Z", "G"):
                occ.setdefault(leaf[1], []).append((leaf, i, j, c))
            else:
                raise ValueError(f"pencil entry {leaf} is neither constant nor random; split the atoms first")
    eta_c = {}
    for items in occ.values():
        for leaf1, kk, m, c1 in items:
            for leaf2, m2, ll, c2 in items:
                if leaf1[0] == "G" or leaf1[2] != leaf2[2]:  # G G, Z Z^T, Z^T Z
                    if pencil.blocks[m] != pencil.blocks[m2] or pencil.blocks[kk] != pencil.blocks[ll]:
                        continue
                    d = eta_c.setdefault((kk, ll), {})
                    d[(m, m2)] = d.get((m, m2), 0) + c1 * c2 * pencil.ratios[pencil.blocks[m]]
    return L0, {kl: {mm: sp.expand(c) for mm, c in d.items()} for kl, d in eta_c.items()}


def pencil_readout(pencil) -> dict:
    """The readout of a pencil, ``tau(M) = sum readout[k, l] * H_kl``: a dict ``(k, l) -> coefficient`` over the
    pairs of ``u`` and ``v`` on the same block (an atom's block weighted by its share of the dimension).

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> pencil_readout(lin.linearize(lin.normalize(model.expr("inv(Z.T*Z/n + gamma*I(n))"))[1]))  # tau = -H_11
    {(1, 1): -1}
    """
    readout = {}
    for i, cu in pencil.u.items():
        for j, cv in pencil.v.items():
            bi, bj = pencil.blocks[i], pencil.blocks[j]
            if bi != bj:
                continue
            w = pencil.ratios[bi] / pencil.ratios[(bi[0], None)] if bi[1] is not None else 1
            readout[(i, j)] = readout.get((i, j), 0) + cu * cv * w
    return {k2: sp.cancel(v) for k2, v in readout.items() if sp.cancel(v) != 0}


class BlockSystem:
    """The fixed-point system of one pencil (see the module docstring); ``reduce=False`` keeps every entry of
    ``H`` as an unknown (:meth:`reduce` otherwise drops those that are explicit in the others).

    Attributes
    ----------
    unknowns : list of (k, l)
        The defined entries of ``H``, in the order of ``h``.
    h : list of Symbol
    params : list of Symbol
        The model parameters the system depends on (sorted by name); ``S_STRENGTH`` is not among them.
    L0, eta : sympy.Matrix
        ``L_0`` and ``eta(H)`` (zero where undefined).
    residual : list of Expr
    readout : dict (k, l) -> Expr
        ``tau(M) = sum readout[k, l] * H_kl``.

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> s = BlockSystem(lin.linearize(lin.normalize(model.expr("inv(Z.T*Z/n + gamma*I(n))"))[1]))
    >>> s.unknowns, s.params, s.readout
    ([(0, 0), (1, 1)], [c, gamma], {(1, 1): -1})
    >>> c, gamma = s.params
    >>> m = (sp.sqrt(5) - 1) / 2  # the Marchenko-Pastur root at c = gamma = 1: m^2 + m - 1 = 0
    >>> at = {S_STRENGTH: 1, EPS_SHIFT: 0, c: 1, gamma: 1, s.h[0]: -1 / (1 + m), s.h[1]: -m}
    >>> [sp.simplify(r.subs(at)) for r in s.residual]
    [0, 0]
    """

    def __init__(self, pencil, reduce: bool = True):
        self.pencil = pencil
        self.full_unknowns, self.entries, self._columns, self.explicit = None, None, None, False
        k = pencil.size
        groups = {}
        for i, b in enumerate(pencil.blocks):
            groups.setdefault(b, []).append(i)
        self.groups = groups
        self.unknowns = [(i, j) for g in groups.values() for i in g for j in g]
        self.h = [sp.Symbol(f"H_{i + 1}_{j + 1}", real=True) for i, j in self.unknowns]
        index = dict(zip(self.unknowns, self.h))
        Hm = sp.zeros(k, k)
        for (i, j), sym in index.items():
            Hm[i, j] = sym
        self.H = Hm
        L0, self.eta_coef = pencil_parts(pencil)
        eta = sp.zeros(k, k)
        for (kk, ll), d in self.eta_coef.items():
            eta[kk, ll] = sp.Add(*[c * Hm[m, m2] for (m, m2), c in d.items()])
        self.L0, self.eta = L0, eta
        self.lam = {(i, j): L0[i, j] - S_STRENGTH * eta[i, j] for i in range(k) for j in range(k)
                    if L0[i, j] != 0 or eta[i, j] != 0}
        self._rows = {}
        for (i, j) in self.lam:
            self._rows.setdefault(i, []).append(j)
        self.residual = [self._times_h(self.lam, i, j) - (1 if i == j else 0) for i, j in self.unknowns]
        self.readout = pencil_readout(pencil)
        free = set()
        for x in self.residual + list(self.readout.values()):
            free |= x.free_symbols
        self.params = sorted(free - set(self.h) - {S_STRENGTH, EPS_SHIFT}, key=lambda s: s.name)
        if reduce:
            self.reduce()

    def reduce(self, keep=()):
        """Remove the unknowns the system fixes exactly (in place; returns the system): see :mod:`symrmt.engine.reduce.merge`.

        An unknown that equals a rational constant, or ``c0 + c1 * x`` (``c1 = +-1``, ``c0`` rational) for another
        unknown ``x``, on the whole solution set is replaced by that expression, and its residual row dropped.
        The readout's entries and ``keep`` stay unknowns.  Afterwards ``unknowns``/``h`` are the kept unknowns,
        ``H`` holds the substituted expressions, ``full_unknowns`` the unknowns before, and ``entries`` maps
        every one of them to its expression in the kept ``h``.
        """
        return reduce_system(self, set(keep) | set(self.readout), S_STRENGTH)

    @property
    def all_unknowns(self) -> list:
        """The unknowns before the reduction (``unknowns`` when nothing was reduced)."""
        return self.full_unknowns if self.full_unknowns is not None else self.unknowns

    def expand(self, h, one=1, at=None) -> list:
        """The values of :attr:`all_unknowns` from the values ``h`` of the kept unknowns at ``s = 1``, ``eps = 0``
        (any number type; ``one``: the unit of that type, so that a rational constant ``p/q`` is ``one * p / q``;
        ``at``: the parameters' values, name -> number, needed when an entry was solved for explicitly).

        >>> from symrmt.engine.lang.matrices import Gaussian, Dim, N
        >>> from symrmt.engine.reduce import linearize as lin
        >>> s = BlockSystem(lin.linearize(Gaussian("Z", Dim("n", sp.Integer(1)), Dim("n", sp.Integer(1))).T
        ...                 * Gaussian("Z", Dim("n", sp.Integer(1)), Dim("n", sp.Integer(1))) / N))
        >>> len(s.all_unknowns), len(s.unknowns)
        (9, 1)
        >>> s.expand([sp.Symbol("x")], sp.Integer(1))
        [-1, 0, x, 0, -1, 0, 0, 0, 1]
        """
        if self.explicit:
            if at is None:
                raise ValueError("the parameter values are needed to expand a system with explicit entries")
            fn = self._expand_function()
            return list(fn(list(h), [at[p.name] for p in self.params]))
        if self._columns is None:
            return list(h)
        out = []
        for ij in self.full_unknowns:
            e = self.entries[ij]
            col = self._columns.get(ij)
            c0 = sp.Rational(e - (self.h[col[0]] * col[1] if col else 0))
            v = one * int(c0.p) / int(c0.q) if c0 != 0 else None
            if col is not None:
                x = h[col[0]] if col[1] == 1 else -h[col[0]]
                v = x if v is None else x + v
            out.append(v if v is not None else one * 0)
        return out

    def _expand_function(self):
        if getattr(self, "_expander", None) is None:
            at = {S_STRENGTH: 1, EPS_SHIFT: 0}
            exprs = [sp.sympify(self.entries[ij]).subs(at) for ij in self.full_unknowns]
            self._expander = sp.lambdify([list(self.h), list(self.params)], exprs, "mpmath")
        return self._expander

    def _set_h_matrix(self, Hm):
        """Rebuild ``H``, ``eta``, ``Lambda`` and the residual rows of ``unknowns`` from the matrix ``Hm``."""
        k = self.pencil.size
        self.H = Hm
        eta = sp.zeros(k, k)
        for (kk, ll), d in self.eta_coef.items():
            eta[kk, ll] = sp.Add(*[c * Hm[m, m2] for (m, m2), c in d.items()])
        self.eta = eta
        self.lam = {(i, j): self.L0[i, j] - S_STRENGTH * eta[i, j] for i in range(k) for j in range(k)
                    if self.L0[i, j] != 0 or eta[i, j] != 0}
        self._rows = {}
        for (i, j) in self.lam:
            self._rows.setdefault(i, []).append(j)
        self.residual = [self.residual_entry(i, j) for i, j in self.unknowns]

    def residual_entry(self, i, j):
        """``(Lambda H - I)_ij`` in the current unknowns (a row of the residual when ``(i, j)`` is an unknown)."""
        return self._times_h(self.lam, i, j) - (1 if i == j else 0)

    def column(self, ij):
        """``(position, coefficient)``: ``d H_ij / d h[position] = coefficient`` (``None`` when ``H_ij`` is a constant)."""
        if self._columns is None:
            return (self.unknowns.index(ij), 1) if ij in self.unknowns else None
        return self._columns.get(ij)

    # -- derived expressions
    def _times_h(self, mat: dict, i, j):
        """``(mat H)_ij`` for a sparse ``mat`` (dict ``(i, m) -> expr``)."""
        return sp.Add(*[mat[(i, m)] * self.H[m, j] for m in self._rows.get(i, ()) if (i, m) in mat
                        and self.H[m, j] != 0])

    def jacobian(self):
        """``dR/dh`` as a list of rows: ``dR = Lambda dH - s eta(dH) H`` (written from the structure; differentiated
        in SymPy where an entry was solved for explicitly)."""
        if self.explicit:
            return [[sp.diff(r, x) for x in self.h] for r in self.residual]
        if self._columns is None:
            col = {u: (n, 1) for n, u in enumerate(self.unknowns)}
        else:
            col = self._columns
        rows = []
        for (k, l) in self.unknowns:
            row = [sp.Integer(0)] * len(self.unknowns)
            for a in self._rows.get(k, ()):
                if (a, l) in col:
                    n, w = col[(a, l)]
                    row[n] += w * self.lam[(k, a)]
                for (m, m2), c in self.eta_coef.get((k, a), {}).items():
                    if self.H[a, l] != 0 and (m, m2) in col:
                        n, w = col[(m, m2)]
                        row[n] += -S_STRENGTH * w * c * self.H[a, l]
            rows.append(row)
        return rows

    def d_strength(self):
        """``dR/ds = -eta(H) H``."""
        if self.explicit:
            return [sp.diff(r, S_STRENGTH) for r in self.residual]
        mat = {ij: -self.eta[ij] for ij in self.lam if self.eta[ij] != 0}
        return [self._times_h(mat, i, j) for i, j in self.unknowns]

    def d_shift(self):
        """``dR/d eps`` (the shift of the inverses, see :data:`~symrmt.engine.reduce.linearize.EPS_SHIFT`)."""
        if self.explicit:
            return [sp.diff(r, EPS_SHIFT) for r in self.residual]
        mat = {ij: sp.diff(self.L0[ij], EPS_SHIFT) for ij in self.lam}
        return [self._times_h(mat, i, j) for i, j in self.unknowns]

    def d_param(self, theta):
        """``dR/d theta`` at fixed ``H``, ``s = 1``, ``eps = 0``: ``(d Lambda / d theta) H``."""
        if self.explicit:
            return [sp.diff(r, theta).subs({S_STRENGTH: 1, EPS_SHIFT: 0}) for r in self.residual]
        mat = {ij: sp.diff(v, theta).subs({S_STRENGTH: 1, EPS_SHIFT: 0}) for ij, v in self.lam.items()}
        return [self._times_h(mat, i, j) for i, j in self.unknowns]

    def derivative_rhs(self, alpha):
        """``(rhs, lower)`` for the multi-index ``alpha`` (a tuple of parameters, sorted by name).

        Differentiating ``R(H(theta), theta) = 0`` along ``alpha`` gives ``J H_alpha + rhs = 0``,
        where ``rhs`` depends on ``h``, the parameters and the vectors ``H_beta`` of the
        multi-indices ``lower`` (proper, non-empty sub-multisets of ``alpha``).
        """
        alpha = _canon(alpha)
        if len(alpha) == 1:
            return self.d_param(alpha[0]), []
        expr = [r.subs({S_STRENGTH: 1, EPS_SHIFT: 0}) for r in self.residual]
        prefix = ()
        for theta in alpha:
            subs = _submultisets(prefix)
            new = []
            for e in expr:
                d = sp.diff(e, theta)
                for beta in subs:
                    for x, xu in zip(self.derivative_symbols(beta), self.derivative_symbols(_canon(beta + (theta,)))):
                        if e.has(x):
                            d += sp.diff(e, x) * xu
                new.append(sp.expand(d))
            expr, prefix = new, _canon(prefix + (theta,))
        rhs = [e.subs({x: 0 for x in self.derivative_symbols(alpha)}) for e in expr]
        lower = [b for b in _submultisets(alpha) if b and b != alpha]
        return rhs, lower

    def derivative_symbols(self, beta):
        """Symbols of ``H_beta`` (``beta = ()``: ``h`` itself)."""
        if not beta:
            return self.h
        tag = "_".join(s.name for s in beta)
        return [sp.Symbol(f"{x.name}__{tag}", real=True) for x in self.h]

    # -- printing
    def matrices(self):
        """``(L0, eta(H), H)`` as SymPy matrices."""
        return self.L0.subs(EPS_SHIFT, 0), self.eta, self.H

    def latex(self) -> str:
        """LaTeX of ``H = (L_0 - \\eta(H))^{-1}`` with its matrices and the readout."""
        pretty = {x: sp.Symbol(f"H_{{{i + 1},{j + 1}}}") for x, (i, j) in zip(self.h, self.unknowns)}
        params = set().union(*(e.free_symbols for e in (self.H, self.L0, self.eta))) - set(self.h)
        pretty.update({s: sp.Symbol(tex_name(s.name)) for s in params if s.name != tex_name(s.name)})
        lhs = sp.latex(self.H.subs({S_STRENGTH: 1, EPS_SHIFT: 0}).xreplace(pretty))
        rhs = sp.latex((self.L0 - self.eta).subs({S_STRENGTH: 1, EPS_SHIFT: 0}).xreplace(pretty))
        out = sp.latex(sum((c * self.H[i, j] for (i, j), c in self.readout.items()), sp.Integer(0)).xreplace(pretty))
        return (f"H = \\left({rhs}\\right)^{{-1}},\n\\qquad H = {lhs},\n"
                f"\\qquad \\tau(M) = {out}")


_LAMBDA = {"lam", "lamda", "lmbda"}


def tex_name(name: str, hat: bool = False, transposed: bool = False) -> str:
    r"""LaTeX of an engine name: ``lam`` is ``\lambda``, another multi-letter name upright
    (``\mathrm{Th}``), trailing digits a subscript, and a block ``Z[,0]`` of a split matrix
    a superscript; ``hat`` puts a hat on it (a Gaussian normalized by ``sqrt(n)``).

    >>> tex_name("lam"), tex_name("Th", hat=True), tex_name("Z1[,0]", hat=True, transposed=True)
    ('\\lambda', '\\widehat{\\mathrm{Th}}', '\\hat{Z}_{1}^{(\\cdot,0)\\top}')
    >>> tex_name("phi"), tex_name("n2"), tex_name("G[0,1]", hat=True)
    ('\\phi', 'n_{2}', '\\hat{G}^{(0,1)}')
    """
    m = re.fullmatch(r"([A-Za-z]+)(\d*)(?:\[(\d*),(\d*)\])?", name)
    if m is None:
        return name
    letters, digits, i, j = m.groups()
    if letters in _LAMBDA:
        base = r"\lambda"
    else:
        base = sp.latex(sp.Symbol(letters))
        if base == letters and len(letters) > 1:
            base = rf"\mathrm{{{letters}}}"
    if hat:
        base = rf"\hat{{{base}}}" if len(letters) == 1 else rf"\widehat{{{base}}}"
    sub = f"_{{{digits}}}" if digits else ""
    sup = ""
    if i is not None:
        sup = f"({i if i else chr(92) + 'cdot'},{j if j else chr(92) + 'cdot'})"
    if transposed:
        sup += r"\top"
    return base + sub + (f"^{{{sup}}}" if sup else "")


def tex_symbols(M):
    """The SymPy matrix (or expression) ``M`` with every commutative symbol renamed by :func:`tex_name` (for
    printing only).

    >>> tex_symbols(sp.Matrix([[sp.Symbol("c2"), sp.Symbol("x")]]))
    Matrix([[c_{2}, x]])
    """
    return M.xreplace({s: sp.Symbol(tex_name(s.name), **s.assumptions0) for s in M.free_symbols
                       if s.is_commutative and tex_name(s.name) != s.name})


def _canon(beta) -> tuple:
    return tuple(sorted(beta, key=lambda x: x.name))


def _submultisets(alpha) -> list:
    """Every sub-multiset of ``alpha`` (canonical tuples, shortest first)."""
    out = {_canon(c) for r in range(len(alpha) + 1) for c in combinations(alpha, r)}
    return sorted(out, key=lambda b: (len(b), [x.name for x in b]))
