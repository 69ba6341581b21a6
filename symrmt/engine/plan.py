"""From a scalar expression to its pencils, fixed-point systems and final formula (SymPy only).

:func:`prepare` normalizes the expression (powers of ``n`` must cancel), linearizes every
trace in it, splits the atoms of diagonal laws, writes each block fixed point, and writes the expression as a SymPy formula in the
block-trace entries ``H_kl``, their parameter derivatives (for ``diff``) and the parameters.
It also records the sanity bounds that hold by structure: ``0 < tau(A^{-1}) <= 1/g`` when
``A`` is a positive semi-definite expression plus ``g I`` with ``g > 0``, and
``tau(P) >= 0`` for a positive semi-definite ``P``.

Every pencil is checked at a finite size before it is used or shown; that check evaluates
numbers, so it is the numeric layer's (:mod:`symrmt.engine.pencil_check`, run by the facade
:class:`symrmt.engine.Model` and by the solver); this module stays SymPy-only.
"""

from __future__ import annotations

import sympy as sp

from symrmt.cache import cache_dict
from symrmt.engine import base as engine_base
from symrmt.engine import linearize as lin
from symrmt.engine.atomsums import AtomSystem
from symrmt.engine.blockfp import BlockSystem
from symrmt.parsing.limits import LIMITS
from symrmt.engine.nodes import (
    GOE, Const, Diagonal, Diff, Gaussian, Identity, Inverse, MatProduct, MatSum, ModelError, Power, ScalarProduct,
    ScalarSum, Scaled, Trace, Transpose, walk,
)



class TracePlan:
    """One trace of the expression: its normalized matrix, pencil, system and sanity bounds."""

    def __init__(self, index, matrix, pencil, system, bounds):
        self.index, self.matrix, self.pencil, self.system, self.bounds = index, matrix, pencil, system, bounds


class Plan:
    """Everything :func:`prepare` derives for one scalar expression."""

    def __init__(self, expr, hat, traces, formula, symbols, needs, params):
        self.expr, self.hat, self.traces = expr, hat, traces
        self.formula = formula      # SymPy expression in `symbols`
        self.symbols = symbols      # list of (Symbol, (trace index, (i, j), alpha) or ("param", Symbol))
        self.needs = needs          # trace index -> set of multi-indices alpha (() included)
        self.params = params        # every parameter the value depends on


_PENCILS = cache_dict("symrmt.engine.plan._PENCILS", 256)


def pencil_for(matrix):
    """The reduced pencil of a normalized square matrix (memoized; not yet self-tested), and the
    diagonal law reduced to weighted sums (or ``None``).

    A law of at most ``SPLIT_ATOMS`` atoms is split into one block per atom; a larger one (one per
    trace) keeps its diagonal leaf, and its fixed point is an :class:`~symrmt.engine.atomsums.AtomSystem`.
    """
    key = matrix
    if key not in _PENCILS:
        p = lin.linearize(matrix)
        diags = lin.diagonals_of(matrix)
        big = [D for D in diags.values() if len(D.values) > engine_base.SPLIT_ATOMS]
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


def prepare(expr) -> Plan:
    """The :class:`Plan` of a scalar expression (raises :class:`ModelError` when it is not O(1))."""
    if not hasattr(expr, "kind") or expr.kind in ("gaussian", "goe", "identity", "diag", "sum", "product",
                                                 "scaled", "transpose", "inverse"):
        raise ModelError("the limit needs a scalar expression (take a normalized trace: trace(M))")
    e, hat = lin.normalize(expr)
    if hat is None:
        raise ModelError("the expression is identically zero")
    if e != 0:
        how = "grows" if e > 0 else "vanishes"
        raise ModelError(
            f"the expression {how} like n^{e} as n -> oo, so its limit is not O(1); "
            "check the scalings (each Gaussian counts as sqrt(n): write Z.T*Z/n, G/sqrt(n))"
        )
    traces, index = [], {}
    for node in walk(hat):
        if isinstance(node, Trace) and node.matrix not in index:
            m = node.matrix
            index[m] = len(traces)
            p, law = pencil_for(m)
            system = BlockSystem(p) if law is None else AtomSystem(p, law)
            traces.append(TracePlan(len(traces), m, p, system, _bounds(m)))
    unknowns = sum(len(t.system.unknowns) for t in traces)
    if unknowns > LIMITS["unknowns"]:
        raise ModelError(
            f"the fixed point of this expression has {unknowns} unknowns, above the limit of {LIMITS['unknowns']} "
            "(LIMITS['unknowns']: the solve grows like its cube); split the expression into smaller traces, "
            "or lower a matrix power"
        )
    params = set()
    for node in walk(hat):
        if isinstance(node, Const):
            params |= node.value.free_symbols
        if isinstance(node, Diff):
            params.add(node.param)
    for t in traces:
        params |= set(t.system.params)
    params = sorted(params, key=lambda s: s.name)
    funcs = {}

    def hfun(k, i, j):
        key = (k, i, j)
        if key not in funcs:
            funcs[key] = sp.Function(f"H{k}_{i}_{j}")(*params) if params else sp.Symbol(f"H{k}_{i}_{j}")
        return funcs[key]

    def to_sympy(s):
        if isinstance(s, Const):
            return s.value
        if isinstance(s, Trace):
            t = traces[index[s.matrix]]
            return sum((c * hfun(t.index, i, j) for (i, j), c in t.system.readout.items()), sp.Integer(0))
        if isinstance(s, ScalarSum):
            return sp.Add(*[to_sympy(x) for x in s.terms])
        if isinstance(s, ScalarProduct):
            return sp.Mul(*[to_sympy(x) for x in s.factors])
        if isinstance(s, Power):
            return to_sympy(s.base) ** s.exponent
        if isinstance(s, Diff):
            return sp.diff(to_sympy(s.scalar), s.param)
        raise ModelError(f"not a scalar expression: {s!r}")

    formula = to_sympy(hat)
    if formula.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        raise ModelError(f"the expression divides by zero (its formula reads {formula})")
    symbols, repl, needs = [], {}, {t.index: set() for t in traces}
    derivs = sorted(formula.atoms(sp.Derivative), key=sp.default_sort_key)
    for d in derivs:
        f = d.expr
        k, i, j = _parse_fname(f)
        alpha = []
        for var, count in d.variable_count:
            alpha += [var] * int(count)
        alpha = tuple(sorted(alpha, key=lambda x: x.name))
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


def _parse_fname(f):
    name = f.func.__name__ if hasattr(f, "func") and f.args else str(f)
    k, i, j = name[1:].split("_")
    return int(k), int(i), int(j)


# ---------------------------------------------------------------- sanity bounds

def _transpose_equal(a, b) -> bool:
    return lin.push_transposes(Transpose(a)) == lin.push_transposes(b)


def psd_conditions(m):
    """``None`` if ``m`` is not positive semi-definite by structure, else the list of scalar
    expressions that must be ``>= 0`` for it to be."""
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


def _bounds(m):
    """Sanity bounds of ``tau(m)``: a list of ``(kind, expr, conditions)`` with kind ``"pos"``
    (``tau > 0``), ``"nonneg"`` or ``"upper"`` (``tau <= expr``), valid when every condition is ``>= 0``."""
    out = []
    if isinstance(m, Inverse):
        a = m.matrix
        terms = a.terms if isinstance(a, MatSum) else (a,)
        g, rest, conds = sp.Integer(0), [], []
        for t in terms:
            if isinstance(t, Identity):
                g += 1
            elif isinstance(t, Scaled) and isinstance(t.matrix, Identity):
                g += t.scalar.value
            else:
                rest.append(t)
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
