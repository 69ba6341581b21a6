"""Tree utilities: exact differentiation (``Diff`` removal), exact parameter values, and binding to numbers
and sizes."""

from __future__ import annotations

import math
from fractions import Fraction

import sympy as sp

from symrmt.engine.lang.matrices import (
    GOE, N, Const, Diagonal, Diff, Dim, Gaussian, Identity, Inverse, MatProduct, MatrixNode, MatSum, ModelError,
    Node, Power, ScalarNode, ScalarProduct, ScalarSum, Scaled, Trace, Transpose, walk,
)

from symrmt.engine.lang.vectors import QuadForm, Vector, frame
from symrmt.parsing import number_to_fraction, parse_number
from symrmt.parsing.numbers import to_fraction

__all__ = ["differentiate", "remove_diffs", "bind", "walk", "check_ratios", "exact_value"]

# ---------------------------------------------------------------- tree utilities

def _zero():
    return Const(sp.Integer(0))


def _is_zero(x) -> bool:
    return x is None or (isinstance(x, Const) and x.value == 0)


def differentiate(node, param):
    """Exact derivative of a scalar tree in the parameter ``param`` (a SymPy Symbol or its name's
    :class:`Const`), with ``d M^{-1} = -M^{-1} dM M^{-1}``; ``Diff`` nodes inside are eliminated
    first, so the result holds none.  A parameter that a dimension ratio or a diagonal law depends
    on is refused (the sizes or the atoms would move).

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model(); Z = m.gaussian("Z", "n", "n")
    >>> differentiate(m.parse("trace(inv(Z.T*Z/n + g*I(n)))"), m.symbols["g"])
    Trace(Scaled(Const(-1), MatProduct(...)))
    """
    if isinstance(param, Const):
        param = param.value
    _check_tree_derivative(node, param, "cannot differentiate the tree in {param}")
    if not isinstance(node, ScalarNode):
        raise ModelError("differentiate() takes a scalar expression")
    out = _dscalar(remove_diffs(node), param)
    return out if out is not None else _zero()


def _check_tree_derivative(node, param, what: str) -> None:
    """Refuse a derivative in ``param`` that the tree cannot take: one in a parameter that a dimension
    ratio or a diagonal law depends on, which the tree holds as sizes and atoms, not as coefficients
    (its derivative read off the tree would be 0)."""
    def has(expr) -> bool:
        return any(str(s) == str(param) for s in sp.sympify(expr).free_symbols)

    for x in walk(node):
        dims = [x.rows, x.cols] if isinstance(x, MatrixNode) else []
        for dm in dims:
            if has(dm.ratio):
                raise ModelError(what.format(param=param) + f": the dimension {dm.name} = ({dm.ratio})*n depends on it")
        if isinstance(x, Diagonal) and any(has(v) for v in x.values + x.weights):
            raise ModelError(what.format(param=param) + f": the law of {x.name} depends on it")


def remove_diffs(s):
    """The scalar tree ``s`` with every :class:`Diff` replaced by its exact derivative (``d M^{-1} = -M^{-1} dM
    M^{-1}``; a derivative that vanishes is ``Const(0)``).

    >>> n, g = Dim("n", sp.Integer(1)), sp.Symbol("gamma")
    >>> remove_diffs(Diff(Const(g ** 2), Const(g)))
    Const(2*gamma)
    >>> d = remove_diffs(Diff(Trace(Inverse(GOE("G", n) + Scaled(Const(g), Identity(n)))), Const(g)))
    >>> d.matrix.scalar, [f.kind for f in d.matrix.matrix.factors]  # -R (dM/dgamma) R, R the inverse, dM = 1*I
    (Const(-1), ['inverse', 'scaled', 'inverse'])
    """
    if isinstance(s, Diff):
        d = _dscalar(remove_diffs(s.scalar), s.param)
        return d if d is not None else _zero()
    if isinstance(s, ScalarSum):
        return ScalarSum(tuple(remove_diffs(t) for t in s.terms))
    if isinstance(s, ScalarProduct):
        return ScalarProduct(tuple(remove_diffs(t) for t in s.factors))
    if isinstance(s, Power):
        return Power(remove_diffs(s.base), s.exponent)
    return s


def _dscalar(s, x):
    """``ds/dx`` (None when it is zero) of a Diff-free scalar."""
    if isinstance(s, Const):
        v = sp.diff(s.value, x)
        return None if v == 0 else Const(v)
    if isinstance(s, Trace):
        dm = _dmatrix(s.matrix, x)
        return None if dm is None else Trace(dm)
    if isinstance(s, QuadForm):
        dm = _dmatrix(s.matrix, x)
        return None if dm is None else QuadForm(dm)
    if isinstance(s, ScalarSum):
        parts = [p for p in (_dscalar(t, x) for t in s.terms) if p is not None]
        return None if not parts else parts[0] if len(parts) == 1 else ScalarSum(tuple(parts))
    if isinstance(s, ScalarProduct):
        parts = []
        for i, f in enumerate(s.factors):
            df = _dscalar(f, x)
            if df is not None:
                parts.append(ScalarProduct(s.factors[:i] + (df,) + s.factors[i + 1:]))
        return None if not parts else parts[0] if len(parts) == 1 else ScalarSum(tuple(parts))
    if isinstance(s, Power):
        db = _dscalar(s.base, x)
        if db is None:
            return None
        return Const(s.exponent) * Power(s.base, s.exponent - 1) * db
    raise ModelError(f"cannot differentiate {s!r}")


def _dmatrix(m, x):
    """``dM/dx`` (None when it is zero)."""
    if isinstance(m, (Gaussian, GOE, Identity, Diagonal, Vector)) or getattr(m, "constant_leaf", False):
        return None
    if isinstance(m, Scaled):
        ds = _dscalar(m.scalar, x)
        dm = _dmatrix(m.matrix, x)
        parts = ([Scaled(ds, m.matrix)] if ds is not None else []) + ([Scaled(m.scalar, dm)] if dm is not None else [])
        return None if not parts else parts[0] if len(parts) == 1 else MatSum(tuple(parts))
    if isinstance(m, MatSum):
        parts = [p for p in (_dmatrix(t, x) for t in m.terms) if p is not None]
        return None if not parts else parts[0] if len(parts) == 1 else MatSum(tuple(parts))
    if isinstance(m, MatProduct):
        parts = []
        for i, f in enumerate(m.factors):
            df = _dmatrix(f, x)
            if df is not None:
                parts.append(MatProduct(m.factors[:i] + (df,) + m.factors[i + 1:]))
        return None if not parts else parts[0] if len(parts) == 1 else MatSum(tuple(parts))
    if isinstance(m, Transpose):
        dm = _dmatrix(m.matrix, x)
        return None if dm is None else Transpose(dm)
    if isinstance(m, Inverse):
        dm = _dmatrix(m.matrix, x)
        return None if dm is None else -MatProduct((m, dm, m))
    raise ModelError(f"cannot differentiate {m!r}")


def _make(cls, **fields):
    obj = object.__new__(cls)
    for k, v in fields.items():
        setattr(obj, k, v)
    return obj


def _counts(values, weights, size: int) -> tuple:
    """Integer atom sizes summing to ``size``: the cumulative weights, atoms in increasing value, rounded to
    multiples of ``1/size``.  Each size is within 1 of ``w_i size``, and the empirical distribution function
    of the diagonal is within ``1/(2 size)`` of the law's at every value, so the simulated law is the law up
    to O(1/size) however many atoms it has (rounding each size on its own skews a law of more atoms than
    entries: 1000 atoms on 256 entries would keep the 256 first).

    >>> _counts((1.0, 4.0), (0.25, 0.75), 30)
    (8, 22)
    >>> sum(_counts(tuple(range(1000)), (0.001,) * 1000, 256)[:500])  # half the law below its median
    128
    """
    order = sorted(range(len(values)), key=lambda i: values[i])
    counts, total, prev = [0] * len(values), 0.0, 0
    for i in order:
        total += weights[i]
        cur = min(size, int(round(total * size)))
        counts[i], prev = cur - prev, cur
    counts[order[-1]] += size - prev
    return tuple(counts)


#: (ratio, the values it depends on) already found positive by :func:`check_ratios`
_RATIOS_PASSED: set = set()


def check_ratios(dims, values) -> None:
    """Refuse a dimension of ``dims`` whose ratio to ``n`` is not a positive real number at ``values`` (parameter
    name -> exact number or its text); returns ``None``.  A ratio with a parameter not in ``values`` is left to
    the caller.  Raises :class:`ModelError` naming the dimension, its ratio and the values.

    >>> c = sp.Symbol("c", positive=True)
    >>> check_ratios([Dim("p", c)], {"c": "1/2"}) is None
    True
    >>> check_ratios([Dim("q", c - 1)], {"c": "1/2"})
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: the size of q is (c - 1)*n, and its ratio c - 1 = -1/2 at c = 1/2 is not a positive real number; every dimension ratio must be > 0
    """
    subs = None
    for d in dims:
        names = tuple(sorted(str(x) for x in sp.sympify(d.ratio).free_symbols))
        key = (d.ratio, tuple((nm, str(values[nm]) if nm in values else None) for nm in names))
        if key in _RATIOS_PASSED:
            continue
        if subs is None:
            subs = {}
            for name, v in values.items():
                q = v if isinstance(v, Fraction) else Fraction(str(v))
                r = sp.Rational(q.numerator, q.denominator)
                subs[sp.Symbol(name, real=True)] = r
                subs[sp.Symbol(name, positive=True)] = r
        r = sp.sympify(d.ratio).subs(subs)
        if r.free_symbols:
            continue
        ok = r.is_extended_real and r.is_positive and r.is_finite
        if not ok:
            shown = {str(k): str(v) for k, v in values.items() if sp.Symbol(str(k), positive=True) in d.ratio.free_symbols
                     or sp.Symbol(str(k), real=True) in d.ratio.free_symbols}
            at = ", ".join(f"{k} = {v}" for k, v in shown.items())
            raise ModelError(f"the size of {d.name} is ({d.ratio})*n, and its ratio {d.ratio} = {_show_number(r)} at "
                             f"{at or 'these values'} is not a positive real number; every dimension ratio must be > 0")
        if len(_RATIOS_PASSED) > 4096:
            _RATIOS_PASSED.clear()
        _RATIOS_PASSED.add(key)


def _show_number(r) -> str:
    if r.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        return "infinite (a division by zero)"
    try:
        return str(r) if r.is_Rational else f"{r} ~ {sp.N(r, 8)}"
    except (TypeError, ValueError):
        return str(r)

def exact_value(v, name) -> Fraction:
    """A parameter value as :meth:`symrmt.engine.Model.limit` reads it: an exact Fraction from a number (a float as
    the shortest decimal that prints it) or a text (``"1/5"``, ``"0.2"``, ``"sqrt(2)/2"``, ``"pi"``: the
    restricted parser; an irrational is rounded to more digits than any precision the engine certifies).  Raises
    :class:`~symrmt.errors.ParameterError` naming the parameter ``name`` for a bad value.

    >>> exact_value("1/5", "c"), exact_value(0.2, "c"), float(exact_value("sqrt(2)/2", "c")) == 0.5 ** 0.5
    (Fraction(1, 5), Fraction(1, 5), True)
    """
    if isinstance(v, str):
        return number_to_fraction(parse_number(v, what=name), what=name)
    if hasattr(v, "is_number") and not isinstance(v, (int, float)):
        return number_to_fraction(v, what=name)
    return to_fraction(v, name)


def bind(node, values: dict, n: int):
    """The tree at numeric parameter values and size ``n``: the same classes, with floats and sizes.

    ``Diff`` nodes are first removed by :func:`differentiate`.  In the result every ``Dim``
    has ``ratio`` a float and ``count`` its integer size ``round(ratio * n)`` (at least 1),
    ``Const.value`` and ``Power.exponent`` are floats, and a ``Diagonal`` has float ``values``,
    float ``weights`` and integer ``counts`` (atom sizes summing to its dimension).  This is
    the boundary a NumPy simulation reads; nothing in a bound tree is a SymPy object.

    Parameters
    ----------
    node : ScalarNode or MatrixNode
    values : dict
        Parameter name -> number (int, Fraction, a SymPy number, or text such as ``"1/5"`` or
        ``"sqrt(2)"``, read as :meth:`Model.limit` reads it); every free parameter needed.
    n : int
        The reference dimension.

    Examples
    --------
    >>> from symrmt.engine import Model
    >>> m = Model(); m.dim("p", "c*n"); Z = m.gaussian("Z", "p", "n")
    Dim('p', c)
    >>> b = bind(m.parse("trace(Z*Z.T/n)"), {"c": "1/2"}, 64)
    >>> b.matrix.kind, b.matrix.matrix.factors[0].rows.count, b.matrix.scalar.value
    ('scaled', 32, 0.015625)
    """
    n = int(n)
    exact = {str(k): v if isinstance(v, Fraction) else exact_value(v, str(k)) for k, v in values.items()}
    subs = {}
    for name, v in exact.items():
        subs[sp.Symbol(name, real=True)] = sp.Rational(v)
        subs[sp.Symbol(name, positive=True)] = sp.Rational(v)
    subs[N] = sp.Integer(n)

    def num(expr):
        v = sp.sympify(expr).subs(subs)
        if v.free_symbols:
            raise ModelError(f"no value given for {', '.join(sorted(map(str, v.free_symbols)))}")
        if v.has(sp.zoo, sp.oo, -sp.oo, sp.nan) or v.is_extended_real is False:
            raise ModelError(f"{expr} = {v} at these values is not a finite real number")
        try:
            out = float(sp.N(v, 20))
        except (TypeError, ValueError):
            raise ModelError(f"{expr} = {v} at these values is not a finite real number") from None
        if not math.isfinite(out) or (out == 0) != (v == 0):
            raise ModelError(f"{expr} = {sp.N(v, 6)} at these values is outside the float range (the simulation's "
                             "numbers: 1e-308 to 1e308)")
        return out

    dims = {}
    vecs = {x.name: x for x in walk(node) if isinstance(x, Vector) and not getattr(x, "constant_leaf", False)}
    coords = frame(vecs, values) if vecs else {}

    def dim(d):
        if d.name not in dims:
            check_ratios([d], exact)
            ratio = num(d.ratio)
            dims[d.name] = _make(Dim, name=d.name, ratio=ratio, count=max(1, int(round(ratio * n))))
        return dims[d.name]

    def go(x):
        if isinstance(x, Const):
            return _make(Const, value=num(x.value))
        if isinstance(x, Gaussian):
            return _make(Gaussian, name=x.name, rows=dim(x.rows), cols=dim(x.cols))
        if isinstance(x, GOE):
            d = dim(x.dim)
            return _make(GOE, name=x.name, dim=d, rows=d, cols=d)
        if isinstance(x, Identity):
            d = dim(x.dim)
            return _make(Identity, dim=d, rows=d, cols=d)
        if isinstance(x, Diagonal):
            d = dim(x.dim)
            ws = tuple(num(w) for w in x.weights)
            vs = tuple(num(v) for v in x.values)
            return _make(Diagonal, name=x.name, dim=d, rows=d, cols=d, values=vs, weights=ws,
                         counts=_counts(vs, ws, d.count))
        if getattr(x, "constant_leaf", False):  # entries given (symrmt.engine.laws.given): the sizes must match
            ds = [dim(x.rows), dim(x.cols)] if x.kind == "given" else [dim(x.dim)]
            for d, s in zip(ds, x.data.shape):
                if d.count != s:
                    raise ModelError(f"{x.name} has {s} entries along {d.name}, but {d.name} = {d.count} at n = {n} "
                                     f"(choose n so that the dimensions have the sizes of the given matrices)")
            if x.kind == "given":
                return _make(type(x), name=x.name, rows=ds[0], cols=ds[1], data=x.data, digest=x.digest)
            return _make(type(x), name=x.name, dim=ds[0], law="det", rows=ds[0], cols=dim(x.cols), data=x.data,
                         digest=x.digest)
        if isinstance(x, Vector):
            d = dim(x.dim)
            out = _make(Vector, name=x.name, dim=d, law=x.law, rows=d, cols=dim(x.cols))
            if not x.random:
                if len(coords[x.name]) > d.count:
                    raise ModelError(f"vector {x.name}: its frame needs {len(coords[x.name])} coordinates, but "
                                     f"{d.name} has {d.count} at n = {n}")
                out.coords = coords[x.name]
            return out
        if isinstance(x, Power):
            return _make(Power, base=go(x.base), exponent=float(x.exponent))
        fields = {}
        for f in x._fields:
            v = getattr(x, f)
            fields[f] = tuple(go(t) for t in v) if isinstance(v, tuple) else go(v) if isinstance(v, Node) else v
        out = _make(type(x), **fields)
        if isinstance(x, MatrixNode):
            out.rows, out.cols = dim(x.rows), dim(x.cols)
        return out

    if isinstance(node, ScalarNode) and any(isinstance(x, Diff) for x in walk(node)):
        for d in [x for x in walk(node) if isinstance(x, Diff)]:
            _check_tree_derivative(
                d.scalar, d.param,
                "cannot simulate diff(..., {param}) at finite n (the simulation differentiates the tree, and there "
                "{param} enters no coefficient; the limit takes this derivative, a simulation would need finite "
                "differences at two values of {param})")
        node = remove_diffs(node)
    return go(node)
