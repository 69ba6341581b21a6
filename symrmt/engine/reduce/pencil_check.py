"""Finite-size self-test of a pencil: its Schur complement against direct evaluation (numbers, NumPy).

At a small size (``N`` rows per dimension, 30 for a pencil of at most 3 blocks, fewer for more
blocks so that the whole pencil stays under about 90 rows: a larger dense solve starts the BLAS
threads, which costs far more than the solve on a shared machine) the matrices are drawn once, the pencil ``Q`` is formed
and ``u Q^{-1} v`` is compared with the normalized expression evaluated directly
with the same matrices, at random parameter values.  The identity is exact at every
size, so a relative difference above ``1e-10`` means a wrong pencil: it raises
before the pencil is ever used.

The test evaluates numbers, so it lives in the numeric layer; the symbolic layer only
builds pencils.  :func:`checked` runs it once per pencil, before the pencil is shown or compiled.
"""

from __future__ import annotations

import cmath

import numpy as np
import sympy as sp

from symrmt.errors import PencilError  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.engine.lang.matrices import (
    GOE, Const, Diagonal, Gaussian, Identity, Inverse, MatProduct, MatSum, ModelError, Scaled, Transpose, walk,
)
from symrmt.engine.laws.registry import sampler
from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.engine.lang.vectors import Vector

__all__ = [
    "TOL", "PencilError", "checked", "self_test", "coefficient_symbols", "sample_values", "coefficient",
    "draw_leaves", "direct_value", "check_gap",
]

TOL = 1e-10


def _short(c, n: int = 40) -> str:
    text = str(c)
    return text if len(text) <= n else text[: n - 3] + "..."


def checked(pencil, hat):
    """Run :func:`self_test` on ``pencil`` against the normalized tree ``hat`` once per pencil object (the pencil
    remembers ``hat``); returns ``pencil``.  Raises what :func:`self_test` raises.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> hat = lin.normalize(model.expr("inv(Z.T*Z/n + gamma*I(n))"))[1]
    >>> P = lin.linearize(hat)
    >>> checked(P, hat) is P, P.tested_against == hat
    (True, True)
    """
    if getattr(pencil, "tested_against", None) != hat:
        self_test(pencil, hat)
        pencil.tested_against = hat
    return pencil


def coefficient_symbols(pencil, hat) -> set:
    """The free symbols (a set) of the coefficients of ``pencil`` and of the constants of the tree ``hat``.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> hat = lin.normalize(model.expr("inv(Z.T*Z/n + gamma*I(n))"))[1]
    >>> sorted(coefficient_symbols(lin.linearize(hat), hat), key=str)
    [eps_shift, gamma]
    """
    symbols = set()
    for e in pencil.Q.values():
        for c in e.values():
            symbols |= c.free_symbols
    for x in walk(hat):
        if isinstance(x, Const):
            symbols |= x.value.free_symbols
    return symbols


def sample_values(symbols, rng) -> dict:
    """Random test values of the parameters ``symbols`` (a dict symbol -> SymPy rational): rationals in
    ``[1/2, 3/2]`` (tenths) drawn from the NumPy generator ``rng`` in the order of the names, and 0 for the shift
    ``EPS_SHIFT``.

    >>> c, g = sp.symbols("c gamma")
    >>> vals = sample_values({c, g, EPS_SHIFT}, np.random.default_rng(0))
    >>> vals[EPS_SHIFT], all(sp.Rational(1, 2) <= vals[x] <= sp.Rational(3, 2) for x in (c, g))
    (0, True)
    """
    vals = {s: sp.Rational(int(rng.integers(5, 16)), 10) for s in sorted(set(symbols) - {EPS_SHIFT}, key=str)}
    vals[EPS_SHIFT] = 0
    return vals


def coefficient(c, vals) -> complex:
    """The coefficient ``c`` (a SymPy expression) at the test values ``vals``, as a complex float64 (the identity is
    algebraic: a complex value, the square root of a negative, is fine).  Raises :class:`ModelError` outside the
    float64 range (the float64 self-test cannot run, so nothing is certified).

    >>> c = sp.Symbol("c")
    >>> coefficient(sp.sqrt(c), {c: -4}), coefficient(c / 3, {c: sp.Rational(3, 2)})
    (2j, (0.5+0j))
    >>> coefficient(sp.Integer(99) ** 999, {})
    Traceback (most recent call last):
    ...
    symrmt.errors.ModelError: the coefficient 4360732061682651615013417033864620122... of the expression is outside the float64 range (about 1e308) that the pencil self-test needs; rescale the expression
    """
    try:
        z = complex(sp.sympify(c).subs(vals))
    except OverflowError:
        z = complex("inf")
    if not cmath.isfinite(z):  # e.g. 99**999
        raise ModelError(f"the coefficient {_short(c)} of the expression is outside the float64 range "
                         "(about 1e308) that the pencil self-test needs; rescale the expression")
    return z


def draw_leaves(hat, leaves, dims, size, rng, num, atoms=None) -> dict:
    """A dict name -> matrix of each leaf of ``hat`` of the classes ``leaves``, drawn from ``rng`` in the order of
    :func:`walk`: a Gaussian or GOE by its law's sampler over ``sqrt(size)``, a vector of ``N(0, 1)`` entries, a
    diagonal law taking its values (``num`` of them) on the row ranges ``atoms[dim]``.  ``dims``: the rows of each
    dimension.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> hat = lin.normalize(model.expr("Z.T*Z/n"))[1]
    >>> {k: v.shape for k, v in draw_leaves(hat, (Gaussian,), {"p": 3, "n": 2}, 2, np.random.default_rng(0), complex).items()}
    {'Z': (3, 2)}
    """
    mats = {}
    for x in walk(hat):
        if not isinstance(x, leaves) or x.name in mats:
            continue
        if isinstance(x, (Gaussian, GOE)):
            mats[x.name] = sampler(x.kind)(dims[x.rows.name], dims[x.cols.name], rng) / np.sqrt(size)
        elif isinstance(x, Diagonal):
            d = np.empty(dims[x.dim.name], dtype=complex)
            for a, (s, e) in enumerate(atoms[x.dim.name]):
                d[s:e] = num(x.values[a])
            mats[x.name] = np.diag(d)
        elif isinstance(x, Vector):
            mats[x.name] = rng.standard_normal((dims[x.dim.name], 1))
    return mats


def direct_value(m, leaves, mats, dims, num):
    """The matrix tree ``m`` evaluated directly (a NumPy array), its leaves of the classes ``leaves`` taken from
    ``mats`` (:func:`draw_leaves`), ``dims`` the rows of each dimension and its coefficients evaluated by ``num``.
    Raises :class:`PencilError` for another leaf.

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> hat = lin.normalize(model.expr("Z.T*Z/n + 2*I(n)"))[1]  # Zh^T Zh + 2 I
    >>> direct_value(hat, (Gaussian,), {"Z": np.array([[1.0, 2.0], [3.0, 4.0]])}, {"p": 2, "n": 2}, complex).real
    array([[12., 14.],
           [14., 22.]])
    """
    if isinstance(m, leaves):
        return mats[m.name]
    if isinstance(m, Identity):
        return np.eye(dims[m.dim.name])
    if isinstance(m, Scaled):
        return num(m.scalar.value) * direct_value(m.matrix, leaves, mats, dims, num)
    if isinstance(m, MatSum):
        return sum(direct_value(t, leaves, mats, dims, num) for t in m.terms)
    if isinstance(m, MatProduct):
        out = direct_value(m.factors[0], leaves, mats, dims, num)
        for f in m.factors[1:]:
            out = out @ direct_value(f, leaves, mats, dims, num)
        return out
    if isinstance(m, Transpose):
        return direct_value(m.matrix, leaves, mats, dims, num).T
    if isinstance(m, Inverse):
        return np.linalg.inv(direct_value(m.matrix, leaves, mats, dims, num))
    raise PencilError(f"cannot evaluate {m!r}")


def check_gap(got, want, size) -> float:
    """The relative difference (Frobenius norms) of the pencil's ``got`` and the direct ``want`` (arrays).  Raises
    :class:`PencilError`, naming ``size``, above :data:`TOL`.

    >>> float(check_gap(np.eye(2), np.eye(2), 2))
    0.0
    >>> check_gap(2 * np.eye(2), np.eye(2), 2)
    Traceback (most recent call last):
    ...
    symrmt.errors.PencilError: pencil self-test failed: relative difference 1 > 1e-10 at size 2
    """
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
    if not err <= TOL:
        raise PencilError(f"pencil self-test failed: relative difference {err:.3g} > {TOL:g} at size {size}")
    return err


#: rows of the whole test pencil aimed at, and the bounds of the rows per dimension
TARGET_ROWS, MIN_SIZE, MAX_SIZE = 90, 6, 30


def self_test(pencil, hat, size: int | None = None, seed: int = 20260611):
    """Check ``u Q^{-1} v == hat`` for ``pencil`` at random parameter values and matrices of ``size`` rows per
    dimension (default: about 90 rows in all), drawn from ``seed``; returns the relative difference.  A failure is
    retried once at ``seed + 1`` (an ill-conditioned draw passes the second time, a wrong pencil fails again).

    Raises :class:`PencilError` for a wrong pencil and :class:`ModelError` when a matrix under ``inv()`` is
    singular at the generic test point (``inv(c*I(n) - c*I(n))``).

    >>> from symrmt.engine import Model
    >>> from symrmt.engine.reduce import linearize as lin
    >>> model = Model(); _ = model.dim("p", "c*n"); _ = model.gaussian("Z", "p", "n")
    >>> hat = lin.normalize(model.expr("inv(Z.T*Z/n + gamma*I(n))"))[1]
    >>> P = lin.linearize(hat)
    >>> bool(self_test(P, hat) < 1e-12)
    True
    >>> wrong = lin.Pencil(P.blocks, P.ratios, P.Q, {k: 2 * c for k, c in P.u.items()}, P.v)  # twice M
    >>> self_test(wrong, hat)
    Traceback (most recent call last):
    ...
    symrmt.errors.PencilError: pencil self-test failed: relative difference 1 > 1e-10 at size 30
    """
    try:
        try:
            return _self_test(pencil, hat, size, seed)
        except PencilError:
            # a wrong pencil fails at every draw; an ill-conditioned draw (the Gram matrix of a square
            # Gaussian near singular at the test point) does not: one more draw, at another seed
            return _self_test(pencil, hat, size, seed + 1)
    except np.linalg.LinAlgError:
        raise ModelError("a matrix under inv() is singular for generic values of the parameters (at a random "
                         "test point of the pencil self-test): it has no inverse, e.g. inv(c*I(n) - c*I(n))"
                         ) from None


def _self_test(pencil, hat, size: int | None = None, seed: int = 20260611):
    """Check ``u Q^{-1} v == hat`` at size ``size`` (raises :class:`PencilError`).

    ``size``: rows per dimension (default: ``TARGET_ROWS // blocks`` within ``[MIN_SIZE, MAX_SIZE]``).

    ``hat``: the normalized matrix tree the pencil realizes (split or not: blocks with
    an atom index take their rows of the dimension).  Returns the relative difference.
    """
    if size is None:
        size = max(MIN_SIZE, min(MAX_SIZE, TARGET_ROWS // max(1, pencil.size)))
    rng = np.random.default_rng(seed)
    symbols = coefficient_symbols(pencil, hat)
    for c in pencil.ratios.values():
        symbols |= c.free_symbols
    for x in walk(hat):
        if isinstance(x, Diagonal):
            for v in x.values + x.weights:
                symbols |= v.free_symbols
        if isinstance(x, (Gaussian, GOE, Identity, Diagonal)):
            symbols |= x.rows.ratio.free_symbols | x.cols.ratio.free_symbols
    vals = sample_values(symbols, rng)

    def num(c):
        return coefficient(c, vals)

    # sizes: the identity holds at any sizes; every dimension gets ``size`` rows, so that every
    # square matrix of Gaussian products is invertible (almost surely); atoms split it evenly
    dims, laws = {}, {}
    for x in walk(hat):
        for d in ((x.rows, x.cols) if hasattr(x, "rows") else ()):
            dims[d.name] = size
        if isinstance(x, Diagonal):
            laws[x.dim.name] = x
    for (d, _a) in pencil.ratios:
        dims.setdefault(d, size)
    atoms = {}
    for d, D in laws.items():
        split = any(a is not None for (dd, a) in pencil.blocks if dd == d)
        # an unsplit diagonal leaf holds for any values: a few atoms test it as well as all of them
        k = len(D.weights) if split else min(len(D.weights), 4)
        counts = [max(2, size // k)] * k
        dims[d] = sum(counts)
        starts = np.cumsum([0] + counts)
        atoms[d] = [(int(starts[a]), int(starts[a + 1])) for a in range(len(counts))]
    leaves = (Gaussian, GOE, Diagonal)
    mats = draw_leaves(hat, leaves, dims, size, rng, num, atoms)

    def rows_of(key):
        d, a = key
        return (0, dims[d]) if a is None else atoms[d][a]

    spans = [rows_of(k) for k in pencil.blocks]
    offs = np.cumsum([0] + [e - s for s, e in spans])
    total = int(offs[-1])
    L = np.zeros((total, total), dtype=complex)

    def leaf_matrix(leaf, ki, kj):
        if leaf == "I":
            return np.eye(offs[ki + 1] - offs[ki])
        (ri0, ri1), (cj0, cj1) = spans[ki], spans[kj]
        if leaf[0] == "Z":
            base = leaf[1].split("[")[0]
            full = mats[base] if base in mats else None
            if full is None:
                raise PencilError(f"unknown leaf {leaf}")
            if leaf[2]:
                return full.T[ri0:ri1, cj0:cj1]
            return full[ri0:ri1, cj0:cj1]
        base = leaf[1].split("[")[0]
        return mats[base][ri0:ri1, cj0:cj1]

    for (i, j), e in pencil.Q.items():
        for leaf, c in e.items():
            L[offs[i]:offs[i + 1], offs[j]:offs[j + 1]] += num(c) * leaf_matrix(leaf, i, j)
    # only the columns of the blocks in v are needed: one solve instead of a full inverse
    vcols = sorted(pencil.v)
    V = np.zeros((total, sum(offs[j + 1] - offs[j] for j in vcols)), dtype=complex)
    where, at = {}, 0
    for j in vcols:
        w = offs[j + 1] - offs[j]
        V[offs[j]:offs[j + 1], at:at + w] = np.eye(w)
        where[j] = at
        at += w
    X = np.linalg.solve(L, V)
    want = direct_value(hat, leaves, mats, dims, num)
    got = np.zeros(want.shape, dtype=complex)
    for i, cu in pencil.u.items():
        for j, cv in pencil.v.items():
            (r0, r1), (c0, c1) = spans[i], spans[j]
            got[r0:r1, c0:c1] += num(cu) * num(cv) * X[offs[i]:offs[i + 1], where[j]:where[j] + offs[j + 1] - offs[j]]
    return check_gap(got, want, size)
