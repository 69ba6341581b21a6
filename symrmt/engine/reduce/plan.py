"""From a scalar expression to its pencils, fixed-point systems and final formula (SymPy only).

:func:`prepare` normalizes the expression (powers of ``n`` must cancel), linearizes every
trace in it, splits the atoms of diagonal laws, writes each block fixed point, and writes the expression as a SymPy formula in the
block-trace entries ``H_kl``, their parameter derivatives (for ``diff``) and the parameters.
It also records the sanity bounds that hold by structure: ``0 < tau(A^{-1}) <= 1/g`` when
``A`` is a positive semi-definite expression plus ``g I`` with ``g > 0``, and
``tau(P) >= 0`` for a positive semi-definite ``P``.

Every pencil is checked at a finite size before it is used or shown; that check evaluates
numbers, so it is not here: this module stays SymPy-only.

The examples plan the resolvent trace of the Marchenko-Pastur matrix ``Z^T Z/n`` (``Z`` a ``p x n``
Gaussian, ``p = c n``), whose limit is read as ``-H_11`` of its one fixed point:

>>> from symrmt.engine import Model
>>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
>>> plan = prepare(model.expr("trace(inv(Z.T*Z/n + gamma*I(n)))"))
>>> plan.formula, plan.params
(-H_0_1_1, [c, gamma])
"""

from __future__ import annotations

import sympy as sp

from symrmt.cache import cache_dict
from symrmt.engine.lang import node as engine_base
from symrmt.engine.reduce import linearize as lin
from symrmt.engine.reduce.atoms import AtomSystem
from symrmt.engine.reduce.fixed_point import BlockSystem
from symrmt.parsing.limits import LIMITS
from symrmt.engine.lang.matrices import (
    GOE, Const, Diagonal, Diff, Gaussian, Identity, Inverse, MatProduct, MatSum, ModelError, Power, ScalarProduct,
    ScalarSum, Scaled, Trace, Transpose, walk,
)
from symrmt.engine.lang.algebra import identity_part

__all__ = [
    "TracePlan", "Plan", "pencil_for", "prepare", "psd_conditions", "trace_bounds", "normalized", "check_unknowns",
    "check_unknown_count", "pencil_unknowns",
    "plan_params", "scalar_formula", "multi_index",
]


class TracePlan:
    """One trace of the expression: its ``index``, its normalized ``matrix``, its ``pencil``, its fixed-point
    ``system`` (a :class:`~symrmt.engine.reduce.fixed_point.BlockSystem`) and its sanity ``bounds``
    (:func:`trace_bounds`); :func:`prepare` builds them.

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> t = prepare(model.expr("trace(inv(Z.T*Z/n + gamma*I(n)))")).traces[0]
    >>> t.index, t.pencil.blocks, t.bounds  # 0 < tau <= 1/gamma for gamma > 0
    (0, [('p', None), ('n', None)], [('pos', 0, [gamma]), ('upper', 1/gamma, [gamma])])
    """

    def __init__(self, index, matrix, pencil, system, bounds):
        self.index, self.matrix, self.pencil, self.system, self.bounds = index, matrix, pencil, system, bounds


class Plan:
    """Everything :func:`prepare` derives for one scalar expression: the expression and its normalized tree
    ``hat``, the :class:`TracePlan` of each trace, the SymPy ``formula`` of the value in ``symbols`` (a list of
    ``(Symbol, what)``: ``(trace index, (i, j), alpha)`` for an entry of a fixed point or its derivative in the
    parameters ``alpha``, ``("param", Symbol)`` for a parameter), ``needs`` (trace index -> the multi-indices
    needed) and ``params``.

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> plan = prepare(model.expr("diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)"))
    >>> plan.formula, plan.symbols[0], sorted(plan.needs[0], key=len)
    (-dH_0_1_1_gamma, (dH_0_1_1_gamma, (0, (1, 1), (gamma,))), [(), (gamma,)])
    """

    def __init__(self, expr, hat, traces, formula, symbols, needs, params):
        self.expr, self.hat, self.traces = expr, hat, traces
        self.formula = formula      # SymPy expression in `symbols`
        self.symbols = symbols      # list of (Symbol, (trace index, (i, j), alpha) or ("param", Symbol))
        self.needs = needs          # trace index -> set of multi-indices alpha (() included)
        self.params = params        # every parameter the value depends on


_PENCILS = cache_dict("symrmt.engine.reduce.plan._PENCILS", 256)


def pencil_for(matrix, split_atoms=None):
    """``(pencil, law)``: the reduced pencil of a normalized square matrix (memoized; not yet self-tested), and the
    diagonal law reduced to weighted sums (or ``None``).

    A law of at most ``split_atoms`` atoms (default ``SPLIT_ATOMS``) is split into one block per atom;
    a larger one (one per trace) keeps its diagonal leaf, and its fixed point is an
    :class:`~symrmt.engine.reduce.atoms.AtomSystem`.  Raises :class:`ModelError` for two laws of more than
    ``MAX_SPLIT_ATOMS`` atoms in one trace.

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n"); _ = model.diag("D", "n", [1, 4], ["1/4", "3/4"])
    >>> M = normalized(model.expr("trace(Z*D*Z.T/n)"), "").matrix
    >>> pencil_for(M)[0].blocks  # two atoms: split
    [('p', None), ('n', 0), ('n', 1), ('p', None)]
    >>> pencil_for(M, split_atoms=1)[1]  # more atoms than split_atoms: summed
    Diagonal('D', 'n', (1, 4), (1/4, 3/4))
    """
    split = engine_base.SPLIT_ATOMS if split_atoms is None else split_atoms
    key = matrix if split_atoms is None else (matrix, split)
    if key not in _PENCILS:
        p = lin.linearize(matrix)
        diags = lin.diagonals_of(matrix)
        big = [D for D in diags.values() if len(D.values) > split]
        if big and len(diags) == 1:
            p = (p, big[0])
        elif any(len(D.values) > engine_base.MAX_SPLIT_ATOMS for D in diags.values()):
            raise ModelError(f"a trace with two diagonal laws splits their atoms, at most {engine_base.MAX_SPLIT_ATOMS} "
                             "each (the weighted-sum reduction of a larger law takes one law per trace)")
        elif diags:
            p = (lin.reduce(lin.split_atoms(p, diags)), None)
        else:
            p = (p, None)
        _PENCILS[key] = p
    return _PENCILS[key]


def prepare(expr, split_atoms=None) -> Plan:
    """The :class:`Plan` of a scalar expression; ``split_atoms``: split diagonal laws of up to that many atoms into
    blocks (:func:`pencil_for`).  Raises :class:`ModelError` for a matrix (not a scalar), an expression that is
    not O(1), a part with more unknowns than ``LIMITS["unknowns"]``, or a division by zero.

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> plan = prepare(model.expr("2*trace(inv(Z.T*Z/n + gamma*I(n))) + 1"))
    >>> plan.formula, len(plan.traces)
    (1 - 2*H_0_1_1, 1)
    >>> prepare(model.expr("Z.T*Z/n"))
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: the limit needs a scalar expression (take a normalized trace: trace(M))
    """
    if not hasattr(expr, "kind") or expr.kind in ("gaussian", "goe", "identity", "diag", "sum", "product",
                                                 "scaled", "transpose", "inverse"):
        raise ModelError("the limit needs a scalar expression (take a normalized trace: trace(M))")
    hat = normalized(expr, "each Gaussian counts as sqrt(n): write Z.T*Z/n, G/sqrt(n)")
    advice = "split the expression into smaller traces, or lower a matrix power"
    pencils, index = [], {}
    for node in walk(hat):
        if isinstance(node, Trace) and node.matrix not in index:
            index[node.matrix] = len(pencils)
            pencils.append((node.matrix, *pencil_for(node.matrix, split_atoms)))
    # the count is read from the pencils before any fixed point is written (writing one of
    # thousands of unknowns in SymPy would take minutes before the refusal)
    check_unknown_count([pencil_unknowns(p) for _m, p, _law in pencils], advice)
    traces = []
    for m, p, law in pencils:
        system = BlockSystem(p) if law is None else AtomSystem(p, law)
        traces.append(TracePlan(len(traces), m, p, system, trace_bounds(m)))
    check_unknowns(traces, advice)
    params = sorted(plan_params(hat, traces), key=lambda s: s.name)
    funcs = {}

    def hfun(k, i, j):
        key = (k, i, j)
        if key not in funcs:
            funcs[key] = sp.Function(f"H{k}_{i}_{j}")(*params) if params else sp.Symbol(f"H{k}_{i}_{j}")
        return funcs[key]

    def leaf(s):
        if isinstance(s, Trace):
            t = traces[index[s.matrix]]
            return sum((c * hfun(t.index, i, j) for (i, j), c in t.system.readout.items()), sp.Integer(0))
        return None

    formula = scalar_formula(hat, leaf)
    if formula.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        raise ModelError(f"the expression divides by zero (its formula reads {formula})")
    symbols, repl, needs = [], {}, {t.index: set() for t in traces}
    derivs = sorted(formula.atoms(sp.Derivative), key=sp.default_sort_key)
    for d in derivs:
        f = d.expr
        k, i, j = _parse_fname(f)
        alpha = multi_index(d)
        sym = sp.Symbol(f"dH_{k}_{i}_{j}_{'_'.join(a.name for a in alpha)}", real=True)
        repl[d] = sym
        symbols.append((sym, (k, (i, j), alpha)))
        needs[k].add(alpha)
    formula = formula.xreplace(repl)
    for (k, i, j), f in funcs.items():
        sym = sp.Symbol(f"H_{k}_{i}_{j}", real=True)
        formula = formula.xreplace({f: sym})
        symbols.append((sym, (k, (i, j), ())))
        needs[k].add(())
    for p in params:
        symbols.append((p, ("param", p)))
    for t in traces:
        if isinstance(t.system, AtomSystem) and any(needs[t.index]):
            t.system.derivative_rhs(())  # raises: diff() is not supported with the weighted sums
    return Plan(expr, hat, traces, formula, symbols, needs, params)


def normalized(expr, scalings: str):
    """The normalized tree of a scalar expression (:func:`symrmt.engine.reduce.linearize.normalize`), which must be of
    order ``n^0``.  Raises :class:`ModelError` when it is identically zero or grows or vanishes with ``n``
    (``scalings`` says how each random object counts, for the message).

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> normalized(model.expr("trace(Z.T*Z/n)"), "").kind
    'trace'
    >>> normalized(model.expr("trace(Z.T*Z)"), "each Gaussian counts as sqrt(n)")
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: the expression grows like n^1 as n -> oo, so its limit is not O(1); check the scalings (each Gaussian counts as sqrt(n))
    """
    e, hat = lin.normalize(expr)
    if hat is None:
        raise ModelError("the expression is identically zero")
    if e != 0:
        how = "grows" if e > 0 else "vanishes"
        raise ModelError(
            f"the expression {how} like n^{e} as n -> oo, so its limit is not O(1); "
            f"check the scalings ({scalings})"
        )
    return hat


def pencil_unknowns(pencil) -> int:
    """The number of unknowns ``H_kl`` of the block fixed point of ``pencil`` (one for every pair of
    blocks of the same dimension), read from its block sizes before any SymPy work.

    >>> from symrmt.engine.lang.matrices import Gaussian, Dim, N
    >>> import sympy as sp
    >>> Z = Gaussian("Z", Dim("n", sp.Integer(1)), Dim("n", sp.Integer(1)))
    >>> p = lin.linearize(Z.T * Z / N)
    >>> pencil_unknowns(p), len(BlockSystem(p, reduce=False).unknowns), len(BlockSystem(p).unknowns)
    (9, 9, 1)
    """
    counts = {}
    for b in pencil.blocks:
        counts[b] = counts.get(b, 0) + 1
    return sum(c * c for c in counts.values())


def check_unknown_count(sizes, advice: str) -> None:
    """Refuse fixed points when a part has more unknowns than ``LIMITS["unknowns"]`` (``sizes``: the unknowns
    of each independently solved part, or one count; ``advice``: what to write instead, for the message);
    returns ``None``, raises :class:`ModelError` naming the largest part.

    Each trace of an expression, and the bulk of each quadratic form, is an independent part: its fixed point
    is solved on its own (one solver per part), so the time is the sum over the parts of about the cube of
    their unknowns.  The cap therefore applies to each part, and a sum of parts is limited by its largest
    part, not by the total.

    >>> check_unknown_count([60, 60], "split the trace") is None  # 120 in all, but 60 per part
    True
    >>> check_unknown_count(10 ** 6, "split the trace")
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: the fixed point of this expression has 1000000 unknowns, above the limit of ...; split the trace
    """
    sizes = [sizes] if isinstance(sizes, int) else list(sizes)
    if not sizes:
        return
    k = max(range(len(sizes)), key=sizes.__getitem__)
    if sizes[k] > LIMITS["unknowns"]:
        where = "the fixed point of this expression" if len(sizes) == 1 else (
            f"the largest of the {len(sizes)} independently solved parts of this expression (part {k + 1}, a trace "
            f"or a quadratic form; {sum(sizes)} unknowns in all, but each part is solved on its own)")
        raise ModelError(
            f"{where} has {sizes[k]} unknowns, above the limit of {LIMITS['unknowns']} (LIMITS['unknowns'], which "
            f"applies to each part solved on its own: its solve grows like the cube of its unknowns); {advice}"
        )


def check_unknowns(traces, advice: str) -> None:
    """:func:`check_unknown_count` for the fixed points of the :class:`TracePlan` list ``traces`` (one part each).

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> check_unknowns(prepare(model.expr("trace(inv(Z.T*Z/n + gamma*I(n)))")).traces, "") is None
    True
    """
    check_unknown_count([len(t.system.unknowns) for t in traces], advice)


def plan_params(hat, traces) -> set:
    """The parameters (a set of Symbols) of a normalized tree: those of its constants, those it differentiates in,
    and those of the fixed points of its ``traces``.

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> plan = prepare(model.expr("trace(inv(Z.T*Z/n + gamma*I(n)))"))
    >>> sorted(plan_params(plan.hat, plan.traces), key=str)
    [c, gamma]
    """
    params = set()
    for node in walk(hat):
        if isinstance(node, Const):
            params |= node.value.free_symbols
        if isinstance(node, Diff):
            params.add(node.param)
    for t in traces:
        params |= set(t.system.params)
    return params


def scalar_formula(s, leaf):
    """The SymPy formula of the scalar tree ``s``; ``leaf(node)`` gives that of a trace or a quadratic form.  Raises
    :class:`ModelError` for a node that ``leaf`` does not know (``None``).

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> scalar_formula(normalized(model.expr("2*trace(Z.T*Z/n) + 1"), ""), lambda node: sp.Symbol("T"))
    2*T + 1
    """
    if isinstance(s, Const):
        return s.value
    if isinstance(s, ScalarSum):
        return sp.Add(*[scalar_formula(x, leaf) for x in s.terms])
    if isinstance(s, ScalarProduct):
        return sp.Mul(*[scalar_formula(x, leaf) for x in s.factors])
    if isinstance(s, Power):
        return scalar_formula(s.base, leaf) ** s.exponent
    if isinstance(s, Diff):
        return sp.diff(scalar_formula(s.scalar, leaf), s.param)
    out = leaf(s)
    if out is None:
        raise ModelError(f"not a scalar expression: {s!r}")
    return out


def formula_args(plan, param, trace, form=None, dform=None) -> list:
    """The arguments of ``plan``'s compiled formula, in the order of ``plan.symbols``, in whatever number type
    the callbacks return: ``param(p)`` for a parameter ``p``, ``trace(k, pos, alpha)`` for entry ``pos`` of
    trace ``k``'s unknowns (``alpha``: a derivative's multi-index, empty for the value), ``form(i)`` and
    ``dform(i, theta)`` for quadratic form ``i`` and its derivative (the certified, proved and complex
    evaluations of a plan all read their arguments through this one function).

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> plan = prepare(model.expr("trace(inv(Z.T*Z/n + gamma*I(n)))"))
    >>> formula_args(plan, lambda p: {"c": 1, "gamma": 2}[p.name], lambda k, pos, alpha: ("H", k, pos, alpha))
    [('H', 0, 1, ()), 1, 2]
    """
    out = []
    for _sym, what in plan.symbols:
        if what[0] == "param":
            out.append(param(what[1]))
        elif what[0] == "form":
            out.append(form(what[1]))
        elif what[0] == "dform":
            out.append(dform(what[1], what[2]))
        else:
            k, (i, j), alpha = what
            out.append(trace(k, plan.traces[k].system.unknowns.index((i, j)), alpha))
    return out


def multi_index(d) -> tuple:
    """The parameters of a SymPy ``Derivative``, each repeated by its order, sorted by name (a tuple).

    >>> g, c = sp.symbols("gamma c")
    >>> multi_index(sp.Derivative(sp.Function("F")(g, c), g, 2, c))
    (c, gamma, gamma)
    """
    alpha = []
    for var, count in d.variable_count:
        alpha += [var] * int(count)
    return tuple(sorted(alpha, key=lambda x: x.name))


def _parse_fname(f):
    name = f.func.__name__ if hasattr(f, "func") and f.args else str(f)
    k, i, j = name[1:].split("_")
    return int(k), int(i), int(j)


# ---------------------------------------------------------------- sanity bounds

def _transpose_equal(a, b) -> bool:
    return lin.push_transposes(Transpose(a)) == lin.push_transposes(b)


def psd_conditions(m):
    """``None`` if the matrix node ``m`` is not positive semi-definite by structure, else the list of scalar
    expressions that must be ``>= 0`` for it to be (a diagonal's values, the scalars of sums, the middle of a
    product ``A M A^T``).

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n"); _ = model.diag("D", "n", [1, 4], ["1/4", "3/4"])
    >>> psd_conditions(model.expr("Z*D*Z.T/n")), psd_conditions(model.expr("Z.T*Z/n + gamma*I(n)"))
    ([1, 4, 1/n], [1/n, gamma])
    >>> print(psd_conditions(model.expr("Z/sqrt(n)")))
    None
    """
    if isinstance(m, Identity):
        return []
    if isinstance(m, Diagonal):
        return list(m.values)
    if isinstance(m, (Gaussian, GOE, Transpose)):
        return None
    if isinstance(m, Scaled):
        inner = psd_conditions(m.matrix)
        return None if inner is None else inner + [m.scalar.value]
    if isinstance(m, MatSum):
        out = []
        for t in m.terms:
            c = psd_conditions(t)
            if c is None:
                return None
            out += c
        return out
    if isinstance(m, Inverse):
        return psd_conditions(m.matrix)
    if isinstance(m, MatProduct):
        fs = m.factors
        k = len(fs)
        for a in range(k // 2):
            if not _transpose_equal(fs[a], fs[k - 1 - a]):
                return None
        if k % 2:
            return psd_conditions(fs[k // 2])
        return []
    return None


def trace_bounds(m):
    """Sanity bounds of ``tau(m)``: a list of ``(kind, expr, conditions)`` with kind ``"pos"`` (``tau > 0``),
    ``"nonneg"`` or ``"upper"`` (``tau <= expr``), valid when every condition is ``>= 0``: ``0 < tau(A^{-1}) <= 1/g``
    for ``A`` positive semi-definite plus ``g I``, ``tau(P) >= 0`` for ``P`` positive semi-definite.

    >>> from symrmt.engine import Model
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> trace_bounds(model.expr("inv(Z.T*Z/n + gamma*I(n))"))
    [('pos', 0, [1/n, gamma]), ('upper', 1/gamma, [1/n, gamma])]
    >>> trace_bounds(model.expr("Z.T*Z/n")), trace_bounds(model.expr("Z/sqrt(n)"))
    ([('nonneg', 0, [1/n])], [])
    """
    out = []
    if isinstance(m, Inverse):
        g, rest = identity_part(m.matrix)
        conds = []
        ok = True
        for t in rest:
            c = psd_conditions(t)
            if c is None:
                ok = False
                break
            conds += c
        if ok and g != 0:
            out.append(("pos", sp.Integer(0), conds + [g]))
            out.append(("upper", 1 / g, conds + [g]))
    else:
        c = psd_conditions(m)
        if c is not None:
            out.append(("nonneg", sp.Integer(0), c))
    return out
