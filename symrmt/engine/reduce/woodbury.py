r"""The limit of a quadratic form: the pencil's full deterministic equivalent, finite-rank parts by Woodbury.

A quadratic form ``u.T*M*v`` is a ``1 x 1`` matrix expression, so it has a linear pencil like any
other: ``u^T M v = e^T Q^{-1} f`` (:mod:`symrmt.engine.reduce.linearize`), in which each vector is a
leaf between a block of its dimension and a block of the unit dimension ``1``.  Order the blocks
as the *bulk* ``B`` (dimensions of size ``ratio * n``) and the *unit* blocks ``U`` (size 1):

.. math::  Q = \begin{pmatrix} L_{BB} \otimes I + W & V_{BU} \\ V_{UB} & L_{UU} \end{pmatrix},

where ``W`` holds the Gaussian and GOE leaves, ``V`` the vectors (deterministic, or a random
vector divided by ``sqrt(n)``, conditioned on), and ``L`` the scalar coefficients.  The
deterministic equivalent of ``Q^{-1}`` is ``Qbar = (Lambda - eta(H) (x) I)^{-1}`` with
``Lambda`` the whole deterministic part: the finite-rank parts do not move the normalized block
traces, so ``H`` is the block fixed point ``H = (L_{BB} - eta(H))^{-1}`` of the bulk pencil
alone (:mod:`symrmt.engine.reduce.fixed_point`), and the unit block of ``Qbar`` is, by Schur's complement
(the Woodbury identity on the span of the vectors),

.. math::  \bar Q_{UU} = S^{-1}, \qquad
           S = L_{UU} - V_{UB} (H \otimes I) V_{BU}, \qquad
           S_{rs} = (L_{UU})_{rs} - \sum_{i, j \in B} c_{ri} c_{js} H_{ij} \langle b, a \rangle,

the sum over the vector leaves ``c_{ri} b^T`` at ``(r, i)`` and ``c_{js} a`` at ``(j, s)`` with
``i, j`` blocks of one dimension.  ``<b, a>`` is the parameter ``a.b`` of two deterministic
vectors, ``d/n`` for a random vector of dimension ``d`` with itself (``|y/sqrt(n)|^2 -> d/n``; 1 in
dimension ``n``) and ``0``
for a random vector against any other vector.  The limit is ``e_U^T S^{-1} f_U``: ``S`` is a
small matrix of SymPy expressions in ``H``, the inner products and the parameters (its size is the
number of unit blocks), solved numerically at the working precision.

A sign vector ``y`` that enters the matrix (``X = mu*y.T + Z``) is conditioned on, so it is a
deterministic vector with ``||y||^2 = n``; one that does not gives ``y^T M y / n -> tau(M)``,
which is what the same formula gives (its only inner product is ``<y, y> = 1``).

A random vector that occurs once in a form and *linearly* (reached from the form through sums,
products, scalings and transposes only: ``y.T*M*beta`` with ``y`` nowhere in ``M``) has mean 0 and
is independent of everything else in the form, so the form is affine in it and its mean is the form
with the vector set to 0 (:func:`zero_mean_forms`); the term that held it is ``y^T s`` with ``s``
independent of ``y``, of size ``O(n^{-1/2})`` at the scaling where the form is ``O(1)``, so the form
tends to that value.  The rule is stated, not silent: each use is a note of the plan
(``QFPlan.notes``), printed with the limit and in the equations.  A random vector that occurs once
inside an inverse is not linear (its mean does not pass through the inverse) and is refused.  A vector
on a dimension that carries a diagonal law is refused (its coordinates on the atoms are not given).
"""

from __future__ import annotations

import sympy as sp

from symrmt.engine.reduce import linearize as lin
from symrmt.engine.reduce.fixed_point import S_STRENGTH, BlockSystem
from symrmt.engine.lang.matrices import Diff, ModelError, Trace, walk
from symrmt.engine.lang.algebra import (
    Const, MatProduct, MatrixNode, MatSum, Power, ScalarProduct, ScalarSum, Scaled, Transpose, vector_name,
)
from symrmt.engine.lang.tree import remove_diffs
from symrmt.engine.reduce.plan import (
    TracePlan, check_unknowns, multi_index, normalized, pencil_for, pencil_unknowns, plan_params, scalar_formula,
    trace_bounds,
)
from symrmt.parsing.limits import LIMITS
from symrmt.engine.lang.vectors import LAWS, UNIT, QuadForm, Vector, gram_symbol, vectors_of
from symrmt.engine.reduce.linearize import EPS_SHIFT, Pencil

__all__ = ["QFPlan", "FormPlan", "prepare_qf", "split_pencil", "zero_mean_forms", "PRUNE_FACTOR"]

#: a bulk pencil of more than this many times ``LIMITS["unknowns"]`` unknowns before its structural zeros are
#: pruned is refused before its system is written (pruning removes far fewer in the forms met in practice)
PRUNE_FACTOR = 4


class FormPlan:
    """One quadratic form: its ``index``, normalized ``matrix`` and ``pencil``, the ``bulk`` pencil and its fixed
    point ``system``, the ``units`` blocks, the Woodbury (Schur) system ``S`` with the readout ``u^T M v = e^T S^{-1}
    f``, and the index of its bulk trace; :func:`prepare_qf` builds them.

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n"); _ = model.vector("u", "n")
    >>> form = prepare_qf(model.expr("u.T*inv(Z.T*Z/n + gamma*I(n))*u")).forms[0]
    >>> form.S  # H_22 = -m, m the Marchenko-Pastur resolvent trace
    Matrix([
    [-1, -H_2_2*u.u],
    [ 0,          1]])
    >>> (sp.Matrix([form.e]) * form.S.inv() * sp.Matrix(form.f))[0]  # u^T M u -> m |u|^2
    -H_2_2*u.u
    """

    def __init__(self, index, matrix, pencil, bulk, system, units, S, e, f, trace_index):
        self.index, self.matrix, self.pencil, self.bulk, self.system = index, matrix, pencil, bulk, system
        self.units, self.S, self.e, self.f, self.trace_index = units, S, e, f, trace_index

    def woodbury_latex(self) -> str:
        """The Woodbury system ``S`` and the readout ``u^T M v = e^T S^{-1} f``, in LaTeX."""
        pretty = {}
        if self.system is not None:
            pretty = {x: sp.Symbol(f"H_{{{i + 1},{j + 1}}}") for x, (i, j) in zip(self.system.h, self.system.unknowns)}
        for s in self.S.free_symbols:
            if "." in s.name:
                a, b = s.name.split(".")
                pretty[s] = sp.Symbol(f"\\langle {_tex_name(a)}, {_tex_name(b)} \\rangle")
        S = self.S.xreplace(pretty)
        e = sp.Matrix([self.e])
        f = sp.Matrix(self.f)
        return (f"S = {sp.latex(S)},\n\\qquad \\lim u^T M v = e^T S^{{-1}} f, \\quad e = {sp.latex(e)}, "
                f"\\quad f = {sp.latex(f)}")

    def pencil_matrix(self):
        """The full pencil (bulk blocks and unit blocks) as a SymPy matrix of symbolic blocks."""
        return self.pencil.symbolic_matrix(_leaf_tex)

    def latex(self) -> str:
        """The pencil, the bulk fixed point and the Woodbury system of the form, every symbol defined."""
        k = self.index + 1
        blocks = ", ".join(b[0] for b in self.pencil.blocks)
        out = [f"% quadratic form {k}: linear pencil Q, u^T M v = e^T Q^{{-1}} f (blocks: {blocks}; "
               "1 is the unit dimension of a vector; \\hat{Z} = Z/\\sqrt{n}, a random vector y stands for "
               "y/\\sqrt{n})", sp.latex(self.pencil_matrix())]
        if self.system is not None:
            bulk = ", ".join(b[0] for b in self.bulk.blocks)
            out += [f"% quadratic form {k}: fixed point of the bulk blocks ({bulk}; H_{{i,j}}: the normalized "
                    "block traces of the bulk pencil, which the finite-rank parts do not move)",
                    self.system.latex().split(",\n\\qquad \\tau")[0]]
        out += [f"% quadratic form {k}: Woodbury system on the unit blocks, S = L_UU - V_UB (H (x) I) V_BU "
                "(\\langle a, b\\rangle: the inner product a.b; d/n for y/\\sqrt{n} of dimension d with itself, 0 "
                "for a random vector with any other)", self.woodbury_latex()]
        return "\n".join(out)


def _leaf_tex(leaf, block):
    if leaf == "I":
        return sp.Symbol(f"I_{{{block[0]}}}", commutative=False)
    if leaf[0] == "V":
        return sp.Symbol(_tex_name(leaf[1]) + ("^T" if leaf[2] else ""), commutative=False)
    if leaf[0] == "Z":
        return sp.Symbol(f"\\hat{{{leaf[1]}}}" + ("^T" if leaf[2] else ""), commutative=False)
    return sp.Symbol(f"\\hat{{{leaf[1]}}}", commutative=False)


def _tex_name(a: str) -> str:
    return sp.latex(sp.Symbol(a))


class QFPlan:
    """Everything :func:`prepare_qf` derives for a scalar expression with vectors or quadratic forms: as
    :class:`~symrmt.engine.reduce.plan.Plan`, with the :class:`FormPlan` of each form, the ``vectors`` and the
    ``notes`` (one sentence per random vector replaced by its mean 0).

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n"); _ = model.vector("u", "n")
    >>> q = prepare_qf(model.expr("u.T*inv(Z.T*Z/n + gamma*I(n))*u"))
    >>> q.formula, q.params, q.grams, q.notes
    (QF0, [c, gamma], [u.u], [])
    """

    def __init__(self, expr, hat, traces, forms, formula, symbols, params, vectors, notes=()):
        self.expr, self.hat, self.traces, self.forms = expr, hat, traces, forms
        self.formula, self.symbols, self.params, self.vectors = formula, symbols, params, vectors
        self.needs = {t.index: {()} for t in traces}  # trace index -> multi-indices of derivatives
        #: one sentence per random vector replaced by its mean 0 (:func:`zero_mean_forms`)
        self.notes = list(notes)

    @property
    def grams(self):
        """The inner-product parameters the value depends on (computed once: a plan's forms are fixed)."""
        done = self.__dict__.get("_grams")
        if done is None:
            out = set()
            for f in self.forms:
                out |= {s for s in f.S.free_symbols if "." in s.name}
            done = self.__dict__["_grams"] = tuple(sorted(out, key=lambda s: s.name))
        return list(done)


def split_pencil(p: Pencil):
    """``(bulk, units, where)``: the pencil ``p`` restricted to its bulk blocks (vectors removed; ``u`` and ``v``
    kept where they are bulk), the indices of its unit blocks, and the new index of each bulk block.  Raises
    :class:`ModelError` unless the structure is the one the Schur step needs: vectors only between a bulk and a
    unit block, nothing random on a unit block.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n"); _ = model.vector("u", "n")
    >>> P = lin.linearize(lin.normalize(model.expr("u.T*inv(Z.T*Z/n + gamma*I(n))*u"))[1].matrix)
    >>> P.blocks
    [('1', None), ('p', None), ('n', None), ('1', None)]
    >>> bulk, units, where = split_pencil(P)
    >>> bulk.blocks, units, where
    ([('p', None), ('n', None)], [0, 3], {1: 0, 2: 1})
    """
    units = [k for k, b in enumerate(p.blocks) if b[0] == UNIT.name]
    bulk = [k for k in range(p.size) if k not in units]
    where = {old: new for new, old in enumerate(bulk)}
    Q = {}
    for (i, j), e in p.Q.items():
        iu, ju = i in units, j in units
        for leaf in e:
            is_vec = leaf != "I" and leaf[0] == "V"
            if is_vec and iu == ju or not is_vec and iu != ju or (iu and ju and leaf != "I"):
                raise ModelError(f"internal: the pencil has {leaf} between blocks {p.blocks[i]} and {p.blocks[j]}")
        if not iu and not ju:
            Q[(where[i], where[j])] = dict(e)
    ratios = {k: r for k, r in p.ratios.items() if k[0] != UNIT.name}
    out = Pencil([p.blocks[k] for k in bulk], ratios, Q, {where[i]: c for i, c in p.u.items() if i in where},
                 {where[j]: c for j, c in p.v.items() if j in where})
    return out, units, where


def _inner(a: Vector, b: Vector):
    """``<a, b>`` of two vectors of one dimension in the normalized frame (see the module docstring)."""
    if a.random or b.random:  # |y|^2/n -> (size of its dimension)/n
        return a.dim.ratio if a.name == b.name else sp.Integer(0)
    return gram_symbol(a.name, b.name)


def _woodbury(p: Pencil, units, where, system, vectors):
    """``S`` (a SymPy matrix over the unit blocks) of the module docstring, at ``s = 1``, ``eps = 0``."""
    k = len(units)
    S = sp.zeros(k, k)
    pos = {u: n for n, u in enumerate(units)}
    for (i, j), e in p.Q.items():
        if i in pos and j in pos:
            S[pos[i], pos[j]] += e.get("I", 0)
    h_of = {}
    if system is not None:
        k = system.pencil.size
        h_of = {(i, j): system.H[i, j].subs({S_STRENGTH: 1, EPS_SHIFT: 0}) for i in range(k) for j in range(k)
                if system.H[i, j] != 0}
    rows = {}  # unit r -> [(bulk i, coef, vector)]  (row vectors b^T at (r, i))
    cols = {}  # unit s -> [(bulk j, coef, vector)]  (column vectors a at (j, s))
    for (i, j), e in p.Q.items():
        for leaf, c in e.items():
            if leaf == "I" or leaf[0] != "V":
                continue
            if i in pos:
                rows.setdefault(i, []).append((where[j], c, vectors[leaf[1]]))
            else:
                cols.setdefault(j, []).append((where[i], c, vectors[leaf[1]]))
    for r, rlist in rows.items():
        for s, clist in cols.items():
            acc = sp.Integer(0)
            for bi, c1, b in rlist:
                for bj, c2, a in clist:
                    if b.dim != a.dim:
                        continue
                    h = h_of.get((bi, bj))
                    if h is None:
                        continue
                    g = _inner(b, a)
                    if g != 0:
                        acc += c1 * c2 * h * g
            S[pos[r], pos[s]] -= acc
    return S.subs(EPS_SHIFT, 0)


def _check_vectors(m, vectors, what):
    for v in vectors.values():
        if v.dim.name == UNIT.name:
            raise ModelError(f"vector {v.name}: a vector needs a declared dimension")
    laws = sorted({x.name for x in walk(m) if x.kind == "diag"})
    if laws and vectors:
        raise ModelError(f"{what} holds the vector {sorted(vectors)[0]} and the diagonal law {laws[0]}: vectors "
                         "together with diagonal laws are not supported yet (write the covariance as I + finite rank)")


def _occurrences(m) -> dict:
    out = {}
    for x in walk(m):
        if isinstance(x, Vector):
            out[x.name] = out.get(x.name, 0) + 1
    return out


def _check_split_forms(expr) -> None:
    """Where the order count refuses an expression, say why when a quadratic form's matrix holds a
    deterministic vector ``b`` between random factors (``y.T*Z.T*b*b.T*Z*y/n``): it is a product of
    bilinear forms (``y.T*Z.T*b`` times ``b.T*Z*y``), and one that holds a random vector once is a centred
    Gaussian-like scalar, so the product fluctuates at its own size (``(b.T*Z*y)^2/n`` is ``b.b`` times a
    chi-square: O(1) and random, not "growing like n" as the count of the whole form, which reads it as
    a trace, says)."""
    for node in walk(expr):
        if not isinstance(node, QuadForm):
            continue
        m = node.matrix
        fs = list(m.factors) if m.kind == "product" else [m]
        segments, cur, cut = [], [], None
        for i, f in enumerate(fs):
            cur.append(f)
            if 0 < i < len(fs) - 1 and isinstance(f, Vector) and not f.random:  # a column vector b ends a form
                segments.append(cur)
                cur, cut = [], cut or f.name
        segments.append(cur)
        if cut is None:
            continue
        for seg in segments:
            part = seg[0] if len(seg) == 1 else MatProduct(tuple(seg))
            occ = _occurrences(part)
            lone = sorted(k for k, c in occ.items() if c == 1 and any(isinstance(x, Vector) and x.name == k
                                                                      and x.random for x in walk(part)))
            if lone:
                raise ModelError(
                    f"the quadratic form {_form_text(m)} splits at the deterministic vector {cut} into a product of "
                    f"bilinear forms, and {_form_text(part)} holds the random vector {lone[0]} once: it is a centred "
                    f"Gaussian-like scalar, so the form is random at its own size and has no deterministic limit at "
                    "this scaling (the order count n^e, which reads the form as a trace, is not its size: "
                    "(b.T*Z*y)^2/n is b.b times a chi-square with one degree of freedom, O(1) and random)")


def _form_text(m) -> str:
    while isinstance(m, Scaled):
        m = m.matrix
    fs = m.factors if m.kind == "product" else (m,)
    unwrap = lambda f: f.matrix if isinstance(f, Scaled) else f  # noqa: E731
    left, right = vector_name(unwrap(fs[0])), vector_name(unwrap(fs[-1]))
    return f"{left or '?'}.T*...*{right or '?'}"


#: matrix nodes through which a vector enters linearly
_LINEAR_KINDS = ("sum", "product", "scaled", "transpose")


def _children(m):
    out = []
    for f in m._fields:
        v = getattr(m, f)
        for x in (v if isinstance(v, tuple) else (v,)):
            if isinstance(x, MatrixNode):
                out.append(x)
    return out


def _occurrence_kinds(m, linear: bool = True, out=None) -> dict:
    """Vector name -> one flag per occurrence in ``m``: True when it is reached from ``m`` through sums,
    products, scalings and transposes only (the form is affine in it there)."""
    out = {} if out is None else out
    if isinstance(m, Vector):
        out.setdefault(m.name, []).append(linear)
        return out
    here = linear and m.kind in _LINEAR_KINDS
    for c in _children(m):
        _occurrence_kinds(c, here, out)
    return out


def _drop(m, name):
    """``m`` with the vector ``name`` set to 0 (``None``: all of ``m`` vanishes); ``name`` occurs once in ``m``,
    linearly."""
    if isinstance(m, Vector):
        return None if m.name == name else m
    if name not in _occurrence_kinds(m):
        return m
    if isinstance(m, Transpose):
        inner = _drop(m.matrix, name)
        return None if inner is None else Transpose(inner)
    if isinstance(m, Scaled):
        inner = _drop(m.matrix, name)
        return None if inner is None else Scaled(m.scalar, inner)
    if isinstance(m, MatProduct):
        factors = [_drop(f, name) for f in m.factors]
        return None if any(f is None for f in factors) else MatProduct(tuple(factors))
    if isinstance(m, MatSum):
        terms = [t for t in (_drop(t, name) for t in m.terms) if t is not None]
        return None if not terms else terms[0] if len(terms) == 1 else MatSum(tuple(terms))
    raise ModelError(f"internal: the vector {name} is not linear in {m!r}")


def zero_mean_forms(s, vectors, notes: list):
    """The scalar tree ``s`` with each random vector that occurs once, linearly, in a quadratic form replaced by
    its mean 0 (a form that vanishes becomes the constant 0); one sentence per replacement is appended to
    ``notes``.  A form that tends to 0 under a negative power is refused (its reciprocal has no limit).

    >>> from symrmt.engine import Model
    >>> m = Model()
    >>> _ = m.dim("d", "phi*n"), m.gaussian("Z", "n", "d"), m.vector("beta", "d"), m.gaussian_vector("e", "n")
    >>> notes = []
    >>> zero_mean_forms(m.parse("beta.T*Z.T*e/n + 1"), vectors_of(m.parse("beta.T*Z.T*e/n")), notes)
    ScalarSum(...)
    >>> print(notes[0])
    beta.T*...*e: the random vector e (gaussian_vector) enters it once, linearly, independent of the rest: its mean 0 replaces it, and the form tends to 0
    """
    if isinstance(s, QuadForm):
        m, text = s.matrix, _form_text(s.matrix)
        while True:
            kinds = _occurrence_kinds(m)
            once = sorted(nm for nm, occ in kinds.items() if vectors[nm].random and occ == [True])
            if not once:
                break
            nm = once[0]
            new = _drop(m, nm)
            what = "the form tends to 0" if new is None else "the form tends to its value with " + nm + " = 0"
            notes.append(f"{text}: the random vector {nm} ({LAWS[vectors[nm].law]}) enters it once, linearly, "
                         f"independent of the rest: its mean 0 replaces it, and {what}")
            if new is None:
                return Const(sp.Integer(0))
            m = new
        return s if m is s.matrix else QuadForm(m)
    if isinstance(s, ScalarSum):
        return ScalarSum(tuple(zero_mean_forms(t, vectors, notes) for t in s.terms))
    if isinstance(s, ScalarProduct):
        return ScalarProduct(tuple(zero_mean_forms(t, vectors, notes) for t in s.factors))
    if isinstance(s, Power):
        base = zero_mean_forms(s.base, vectors, notes)
        if base is not s.base and s.exponent < 0 and scalar_formula(base, lambda _x: sp.Dummy()) == 0:
            raise ModelError("a quadratic form that tends to 0 (a random vector in it enters once, linearly, with "
                             "mean 0) is raised to a negative power: its reciprocal has no limit")
        return s if base is s.base else Power(base, s.exponent)
    if isinstance(s, Diff):
        inner = zero_mean_forms(s.scalar, vectors, notes)
        return s if inner is s.scalar else Diff(inner, s.param)
    return s


def prepare_qf(expr, implicit: bool = True) -> QFPlan:
    """The :class:`QFPlan` of a scalar expression holding vectors.

    A ``diff`` is taken implicitly (the parameter derivatives of the fixed point, and
    ``dq = de.x + x_e.(df - dS x)`` for a form ``q = e^T x``, ``S x = f``, ``S^T x_e = e``) when every
    form is differentiated at most once; otherwise (``implicit=False``, or a higher derivative of a
    form) on the tree first, exactly (``d M^{-1} = -M^{-1} dM M^{-1}``).  Raises :class:`ModelError` for a matrix
    (not a scalar), an expression that is not O(1), a vector the module docstring refuses, or a part with too
    many unknowns.

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n"); _ = model.vector("u", "n")
    >>> q = prepare_qf(model.expr("u.T*inv(Z.T*Z/n + gamma*I(n))*u + trace(Z.T*Z/n)"))
    >>> q.formula, len(q.forms), len(q.traces)
    (H1_0_2 + QF0, 1, 2)
    >>> prepare_qf(model.expr("Z.T*Z/n"))
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: the limit needs a scalar expression (a normalized trace or a quadratic form u.T*M*v)
    """
    if not hasattr(expr, "kind") or expr.kind not in ("const", "trace", "ssum", "sproduct", "power", "diff",
                                                      "qform"):
        raise ModelError("the limit needs a scalar expression (a normalized trace or a quadratic form u.T*M*v)")
    original = expr
    if not implicit and any(isinstance(x, Diff) for x in walk(expr)):
        expr = remove_diffs(expr)
    try:
        hat = normalized(expr, "each Gaussian and each random vector counts as sqrt(n): write Z.T*Z/n, y.T*M*y/n")
    except ModelError:
        _check_split_forms(expr)  # a form that does not concentrate: the order count's n^e is not the reason
        raise
    vectors = vectors_of(hat)
    _check_vectors(hat, vectors, "the expression")
    notes = []
    hat = zero_mean_forms(hat, vectors, notes)
    traces, forms, tindex, findex = [], [], {}, {}

    def bulk_plan(matrix, pencil, bulk, readout_matrix):
        raw = pencil_unknowns(bulk)  # read before the system is written in SymPy (minutes for thousands)
        if raw > PRUNE_FACTOR * LIMITS["unknowns"]:
            raise ModelError(
                f"the fixed point of this expression has {raw} unknowns before its structural zeros are removed, "
                f"above {PRUNE_FACTOR} times the limit of {LIMITS['unknowns']} (LIMITS['unknowns']: the solve grows "
                "like its cube); split the expression into smaller traces or forms, or lower a matrix power")
        system = prune(BlockSystem(bulk, reduce=False)).reduce()
        t = TracePlan(len(traces), readout_matrix, bulk, system, trace_bounds(readout_matrix) if readout_matrix is not
                      None and not vectors_of(readout_matrix) else [])
        t.full_pencil, t.full_matrix = pencil, matrix
        traces.append(t)
        return t

    for node in walk(hat):
        if isinstance(node, Trace) and node.matrix not in tindex:
            m = node.matrix
            if vectors_of(m):
                p = lin.linearize(m)
                bulk, _units, _where = split_pencil(p)
                t = bulk_plan(m, p, bulk, m)
            else:
                p, law = pencil_for(m)
                if law is not None:
                    raise ModelError("a diagonal law of more than 16 atoms together with vectors is not supported")
                t = bulk_plan(m, p, p, m)
            tindex[m] = t.index
        if isinstance(node, QuadForm) and node.matrix not in findex:
            m = node.matrix
            occ = _occurrences(m)
            for name, count in occ.items():
                if vectors[name].random and count == 1:  # once, not linearly: zero_mean_forms took the linear ones
                    raise ModelError(
                        f"the quadratic form {_form_text(m)} holds the random vector {name} ({LAWS[vectors[name].law]}) "
                        f"once, inside an inverse: the form is not linear in it, so its mean 0 cannot replace it, "
                        f"and its fluctuation has no deterministic limit here (write {name}.T*M*{name}/n, or let "
                        f"{name} enter the matrix twice)")
            p = lin.linearize(m)
            bulk, units, where = split_pencil(p)
            t = bulk_plan(m, p, bulk, None) if bulk.size else None
            S = _woodbury(p, units, where, t.system if t is not None else None, vectors)
            pos = {u: n for n, u in enumerate(units)}
            ev = [sp.Integer(0)] * len(units)
            fv = [sp.Integer(0)] * len(units)
            for i, c in p.u.items():
                ev[pos[i]] += c
            for j, c in p.v.items():
                fv[pos[j]] += c
            fp = FormPlan(len(forms), m, p, bulk, t.system if t is not None else None, units, S, ev, fv,
                          t.index if t is not None else None)
            forms.append(fp)
            findex[m] = fp.index
    check_unknowns(traces, "split the expression into smaller traces or forms, or lower the rank of the "
                   "finite-rank parts")
    params = plan_params(hat, traces)
    for f in forms:
        hs = set(f.system.h) if f.system is not None else set()
        params |= {s for s in f.S.free_symbols - hs if "." not in s.name}
        for c in f.e + f.f:
            params |= sp.sympify(c).free_symbols
    params = sorted(params, key=lambda s: s.name)
    funcs = {}

    def fn(name):
        if name not in funcs:
            funcs[name] = sp.Function(name)(*params) if params else sp.Symbol(name)
        return funcs[name]

    def leaf(s):
        if isinstance(s, Trace):
            t = traces[tindex[s.matrix]]
            return sum((c * fn(f"H{t.index}_{i}_{j}") for (i, j), c in t.system.readout.items()), sp.Integer(0))
        if isinstance(s, QuadForm):
            return fn(f"QF{findex[s.matrix]}")
        return None

    formula = scalar_formula(hat, leaf)
    symbols, repl = [], {}
    needs = {t.index: {()} for t in traces}
    for d in sorted(formula.atoms(sp.Derivative), key=sp.default_sort_key):
        name = d.expr.func.__name__
        alpha = multi_index(d)
        tag = "_".join(a.name for a in alpha)
        if name.startswith("QF"):
            if len(alpha) > 1:  # a second derivative of a form: differentiate the tree instead
                return prepare_qf(original, implicit=False)
            k = int(name[2:])
            sym = sp.Symbol(f"dQF_{k}_{tag}", real=True)
            symbols.append((sym, ("dform", k, alpha[0])))
            if forms[k].trace_index is not None:
                needs[forms[k].trace_index].add(alpha)
        else:
            k, i, j = (int(x) for x in name[1:].split("_"))
            sym = sp.Symbol(f"dH_{k}_{i}_{j}_{tag}", real=True)
            symbols.append((sym, (k, (i, j), alpha)))
            needs[k].add(alpha)
        repl[d] = sym
    formula = formula.xreplace(repl)
    for name, f in funcs.items():
        sym = sp.Symbol(name, real=True)
        formula = formula.xreplace({f: sym})
        if name.startswith("QF"):
            symbols.append((sym, ("form", int(name[2:]))))
        else:
            k, i, j = (int(x) for x in name[1:].split("_"))
            symbols.append((sym, (k, (i, j), ())))
    for p in params:
        symbols.append((p, ("param", p)))
    plan = QFPlan(expr, hat, traces, forms, formula, symbols, params, vectors, notes)
    plan.needs = needs
    return plan





# ---------------------------------------------------------------- structural zeros of the fixed point

class _PrunedPencil(Pencil):
    """A bulk pencil whose fixed point has its structural zeros removed (a distinct cache key)."""

    def key(self) -> str:
        return "pruned:" + super().key()


def _reach(edges, k):
    """``reach[i]``: the blocks reachable from ``i`` (``i`` included) in the digraph ``edges``."""
    out = []
    for i in range(k):
        seen, stack = {i}, [i]
        while stack:
            a = stack.pop()
            for b in edges.get(a, ()):
                if b not in seen:
                    seen.add(b)
                    stack.append(b)
        out.append(seen)
    return out


def prune(system: BlockSystem) -> BlockSystem:
    """Remove the structural zeros of ``H`` from the :class:`~symrmt.engine.reduce.fixed_point.BlockSystem`
    ``system`` (in place; returns it).

    ``(A^{-1})_{ij} \\ne 0`` needs a path ``i -> j`` in the digraph of ``A`` (``A^{-1}`` is a polynomial
    in ``A``).  Starting from every entry, the pattern ``P <- reach(L0 + eta(P))`` only shrinks and
    always contains the support of the solution on the whole homotopy (``H(s) = (L0 - s eta(H))^{-1}``),
    so the entries outside it are zero exactly; their residual rows vanish identically.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> s = BlockSystem(lin.linearize(lin.normalize(model.expr("Z.T*Z/n"))[1]), reduce=False)
    >>> len(s.unknowns), len(prune(s).unknowns)  # the pencil is upper triangular: H_20 = 0
    (5, 4)
    """
    k = system.pencil.size
    base = {}
    for i in range(k):
        for j in range(k):
            if system.L0[i, j] != 0:
                base.setdefault(i, set()).add(j)
    alive = set(system.unknowns)
    while True:
        edges = {a: set(b) for a, b in base.items()}
        for (kk, ll), d in system.eta_coef.items():
            if any(mm in alive for mm in d):
                edges.setdefault(kk, set()).add(ll)
        reach = _reach(edges, k)
        new = {(i, j) for (i, j) in alive if j in reach[i]}
        if new == alive:
            break
        alive = new
    if len(alive) == len(system.unknowns):
        return system
    zero = {x: 0 for x, u in zip(system.h, system.unknowns) if u not in alive}
    keep = [(u, x) for u, x in zip(system.unknowns, system.h) if u in alive]
    system.unknowns, system.h = [u for u, _ in keep], [x for _, x in keep]
    system.H = system.H.xreplace(zero)
    system.eta_coef = {kl: {mm: c for mm, c in d.items() if mm in alive} for kl, d in system.eta_coef.items()}
    system.eta_coef = {kl: d for kl, d in system.eta_coef.items() if d}
    system.eta = system.eta.xreplace(zero)
    system.lam = {(i, j): system.L0[i, j] - S_STRENGTH * system.eta[i, j] for i in range(k) for j in range(k)
                  if system.L0[i, j] != 0 or system.eta[i, j] != 0}
    system._rows = {}
    for (i, j) in system.lam:
        system._rows.setdefault(i, []).append(j)
    system.residual = [system._times_h(system.lam, i, j) - (1 if i == j else 0) for i, j in system.unknowns]
    system.readout = {ij: c for ij, c in system.readout.items() if ij in alive}
    p = system.pencil
    system.pencil = _PrunedPencil(p.blocks, p.ratios, p.Q, p.u, p.v)
    return system
