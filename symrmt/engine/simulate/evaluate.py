r"""A bound tree in NumPy: its nodes, its random matrices, one draw and its value (NumPy only).

A *bound* tree is the engine's expression tree at numeric parameter values and integer sizes, in
which every number is a Python float (:func:`symrmt.engine.bind` makes it; it also removes every
``diff`` by exact differentiation of the tree, so a derivative is evaluated exactly).  This module
reads such a tree by ``node.kind`` only and draws each random leaf with its law's sampler
(:func:`symrmt.engine.laws.registry.sampler`, NumPy only), so it imports neither SymPy nor mpmath:
:mod:`symrmt.engine.simulate.monte_carlo` (the Monte-Carlo mean and standard error), the plain trial programs
of :mod:`symrmt.engine.simulate.trials` and the eigenvalue histograms of :mod:`symrmt.engine.density.histogram`
evaluate trees through it.

Conventions (the same as the theory's):

* ``gaussian(a, b)``: iid ``N(0, 1)`` entries, ``a x b``;
* ``goe(a)``: symmetric, ``N(0, 1)`` off the diagonal, zero on it (the
  diagonal does not enter the limit);
* a diagonal matrix with law ``(values, weights)`` takes ``values[i]`` on
  ``counts[i]`` consecutive diagonal entries (the bound tree's integer atom
  sizes, ``weights[i] * N`` rounded so that they sum to ``N``);
* every dimension has the size ``round(ratio * n)``;
* ``trace(M) = tr(M) / N`` for an ``N x N`` matrix.

A draw takes every random matrix of the tree once, in the order of their names (so two
expressions of one model see the same matrices at one seed); the tree is evaluated bottom-up, and
a subtree that occurs several times (as after differentiation) is evaluated once per draw.
"""

from __future__ import annotations

import math

import numpy as np

from symrmt.engine.laws.registry import sampler
from symrmt.errors import ParameterError
from symrmt.errors import TraceSimulationError  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.simulation.memory import check_memory_bytes

__all__ = [
    "RANDOM_KINDS", "SCALAR_KINDS", "MAX_CONDITION", "TraceSimulationError", "children", "random_matrices",
    "draw_matrices", "Evaluator", "evaluate", "check_trace_memory",
]

#: the kinds of the random matrix leaves
RANDOM_KINDS = ("gaussian", "goe")
#: a matrix whose 1-norm condition number reaches this is refused as singular (float64 keeps < 4 digits)
MAX_CONDITION = 1e12
#: the kinds of the scalar nodes
SCALAR_KINDS = ("const", "trace", "ssum", "sproduct", "power", "diff", "qform")
#: the laws of a random vector (kind "vector"): iid signs, iid N(0, 1)
_RANDOM_VECTORS = ("signs", "gaussian")


# --------------------------------------------------------------------------
# the tree
# --------------------------------------------------------------------------
def children(node) -> tuple:
    """The child nodes of a bound node, in order (a ``diff`` node is refused with
    :class:`~symrmt.errors.ParameterError`: bind first); ``()`` for a leaf.

    >>> from symrmt.engine import Model, bind
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> tree = bind(m.expr("trace(G*G)/n"), {}, 4)
    >>> tree.kind, [c.kind for c in children(tree)]
    ('sproduct', ['trace', 'const'])
    """
    kind = node.kind
    if kind in ("sum", "ssum"):
        return tuple(node.terms)
    if kind in ("product", "sproduct"):
        return tuple(node.factors)
    if kind == "scaled":
        return (node.scalar, node.matrix)
    if kind in ("transpose", "inverse", "trace", "qform"):
        return (node.matrix,)
    if kind == "power":
        return (node.base,)
    if kind == "diff":
        raise ParameterError("a bound tree holds no diff node: bind the expression first (it differentiates exactly)")
    return ()


def _walk(node):
    stack = [node]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(children(x))


def random_matrices(tree) -> dict:
    """The random matrices of a bound tree: ``{name: (kind, rows, cols)}`` with integer sizes.

    Raises
    ------
    ParameterError
        One name is used for two matrices of different kinds or sizes.

    Examples
    --------
    >>> from symrmt.engine import Model, bind
    >>> m = Model()
    >>> _ = m.goe("G", "n"), m.gaussian("Z", "n", "n")
    >>> sorted(random_matrices(bind(m.expr("trace(G*inv(Z.T*Z/n + I(n)))"), {}, 3)).items())
    [('G', ('goe', 3, 3)), ('Z', ('gaussian', 3, 3))]
    """
    out = {}
    for x in _walk(tree):
        if x.kind in RANDOM_KINDS or (x.kind == "vector" and x.law in _RANDOM_VECTORS):
            spec = (x.kind if x.kind in RANDOM_KINDS else x.law, int(x.rows.count), int(x.cols.count))
            if out.setdefault(x.name, spec) != spec:
                raise ParameterError(f"the random matrix {x.name} appears with two shapes: {out[x.name]} and {spec}")
    return out


def draw_matrices(specs: dict, rng: np.random.Generator) -> dict:
    """Draw each random matrix of ``specs`` (as from :func:`random_matrices`), in the order of the names.

    Examples
    --------
    >>> m = draw_matrices({"G": ("goe", 3, 3), "Z": ("gaussian", 2, 3)}, np.random.default_rng(0))
    >>> m["Z"].shape, bool(np.allclose(m["G"], m["G"].T)), float(np.abs(np.diag(m["G"])).max())
    ((2, 3), True, 0.0)
    """
    out = {}
    for name in sorted(specs):
        kind, rows, cols = specs[name]
        out[name] = sampler(kind)(rows, cols, rng)  # the law's sampler (symrmt.engine.laws)
    return out


# --------------------------------------------------------------------------
# evaluation: a matrix is a 2-d array, or a 1-d array holding a diagonal
# --------------------------------------------------------------------------
def _add(a, b):
    if a.ndim == 1 and b.ndim == 1:
        return a + b
    if a.ndim == 1:
        a, b = b, a
    if b.ndim == 1:
        out = a.copy()
        out[np.diag_indices_from(out)] += b
        return out
    return a + b


def _mul(a, b):
    if a.ndim == 1 and b.ndim == 1:
        return a * b
    if a.ndim == 1:
        return a[:, None] * b
    if b.ndim == 1:
        return a * b[None, :]
    return a @ b


def _inv(a):
    if a.ndim == 1:
        if np.any(a == 0):
            raise TraceSimulationError("inv() of a diagonal matrix with a zero entry in this draw")
        return 1.0 / a
    try:
        out = np.linalg.inv(a)
    except np.linalg.LinAlgError as exc:
        raise TraceSimulationError(f"inv() of a matrix that is singular in this draw ({exc})") from None
    if not np.all(np.isfinite(out)):
        raise TraceSimulationError("inv() is not finite in this draw (a singular matrix)")
    # np.linalg.inv does not raise on a numerically singular matrix: bound its 1-norm condition number
    cond = np.abs(a).sum(axis=0).max() * np.abs(out).sum(axis=0).max()
    if not cond < MAX_CONDITION:
        raise TraceSimulationError(
            f"inv() of a matrix that is singular in this draw (1-norm condition number {cond:.1e} >= "
            f"{MAX_CONDITION:.0e}); the expression may need a ridge, e.g. + gamma*I"
        )
    return out


def _trace_of_product(factors) -> float:
    """``tr(F_1 ... F_k)`` without forming the last product: ``sum(P * F_k^T)``."""
    head = factors[0]
    for f in factors[1:-1]:
        head = _mul(head, f)
    last = factors[-1]
    if head.ndim == 1 and last.ndim == 1:
        return float(head @ last)
    if head.ndim == 1:
        return float(head @ np.diagonal(last))
    if last.ndim == 1:
        return float(np.diagonal(head) @ last)
    return float(np.einsum("ij,ji->", head, last))


class Evaluator:
    """Evaluates one bound tree on one draw; equal subtrees share one value.

    Takes the drawn matrices ``mats`` (name -> array); calling it on a bound node returns the node's value
    (a float for a scalar, an array for a matrix).

    >>> from symrmt.engine import Model, bind
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> G = np.array([[0.0, 1, 0, 0], [1, 0, 2, 0], [0, 2, 0, 0], [0, 0, 0, 0]])
    >>> float(Evaluator({"G": G})(bind(m.expr("trace(G*G)/n"), {}, 4)))   # tr(G^2)/4/4 = 2 (1 + 4)/16
    0.625
    """

    def __init__(self, mats: dict):
        self.mats = mats
        self.intern: dict = {}
        self.key_of: dict = {}
        self.values: dict = {}

    def key(self, node) -> int:
        """A structural key: equal subtrees (wherever they occur) get the same integer."""
        k = self.key_of.get(id(node))
        if k is not None:
            return k
        kind = node.kind
        if kind == "const":
            sig = (kind, float(node.value))
        elif kind in RANDOM_KINDS:
            sig = (kind, node.name)
        elif kind == "identity":
            sig = (kind, node.rows.count)
        elif kind in ("vector", "given"):
            sig = (kind, node.name)
        elif kind == "diag":
            sig = (kind, node.name, tuple(node.values), tuple(node.counts))
        elif kind == "power":
            sig = (kind, self.key(node.base), float(node.exponent))
        else:
            sig = (kind,) + tuple(self.key(c) for c in children(node))
        k = self.intern.setdefault(sig, len(self.intern))
        self.key_of[id(node)] = k
        return k

    def __call__(self, node):
        k = self.key(node)
        if k not in self.values:
            self.values[k] = self._eval(node)
        return self.values[k]

    def _eval(self, node):  # noqa: PLR0911, PLR0912 - one branch per node kind
        kind = node.kind
        if kind == "const":
            return float(node.value)
        if kind in RANDOM_KINDS:
            return self.mats[node.name]
        if kind == "identity":
            return np.ones(node.rows.count)
        if kind == "given":  # a matrix given by its entries (symrmt.engine.laws.given)
            return np.asarray(node.data, dtype=np.float64)
        if kind == "vector":  # a deterministic vector: its coordinates in the frame; a random one: drawn
            if node.law in _RANDOM_VECTORS:
                return self.mats[node.name]
            if getattr(node, "data", None) is not None:  # given by its entries
                return np.asarray(node.data, dtype=np.float64).reshape(-1, 1)
            out = np.zeros((node.rows.count, 1))
            out[: len(node.coords), 0] = node.coords
            return out
        if kind == "qform":
            v = self(node.matrix)
            return float(v.reshape(-1)[0])
        if kind == "diag":
            if sum(node.counts) != node.rows.count:
                raise ParameterError(f"diag {node.name}: atom sizes {node.counts} do not sum to {node.rows.count}")
            return np.repeat(np.asarray(node.values, dtype=np.float64), node.counts)
        if kind == "sum":
            out = self(node.terms[0])
            for t in node.terms[1:]:
                out = _add(out, self(t))
            return out
        if kind == "product":
            out = self(node.factors[0])
            for f in node.factors[1:]:
                out = _mul(out, self(f))
            return out
        if kind == "scaled":
            return self(node.scalar) * self(node.matrix)
        if kind == "transpose":
            m = self(node.matrix)
            return m if m.ndim == 1 else m.T
        if kind == "inverse":
            return _inv(self(node.matrix))
        if kind == "trace":
            m = node.matrix
            size = m.rows.count
            if m.kind == "product" and self.key(m) not in self.values:
                return _trace_of_product([self(f) for f in m.factors]) / size
            v = self(m)
            return float(np.sum(v) if v.ndim == 1 else np.trace(v)) / size
        if kind == "ssum":
            return float(sum(self(t) for t in node.terms))
        if kind == "sproduct":
            out = 1.0
            for f in node.factors:
                out *= self(f)
            return out
        if kind == "power":
            base, e = self(node.base), float(node.exponent)
            if base < 0 and e != int(e):
                raise TraceSimulationError(f"a negative scalar {base} raised to the power {e} in this draw")
            if base == 0 and e < 0:
                raise TraceSimulationError("division by a scalar that is zero in this draw")
            return base**e
        raise ParameterError(f"cannot simulate a node of kind {kind!r}")


def evaluate(tree, mats: dict) -> float:
    """The value of a bound scalar tree on drawn matrices ``mats`` (name -> array).

    Raises
    ------
    ParameterError
        The tree is a matrix, not a scalar.
    TraceSimulationError
        A singular matrix, or a non-finite value, in this draw.

    Examples
    --------
    >>> from symrmt.engine import Model, bind
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> tree = bind(m.expr("trace(G*G)/n"), {}, 4)
    >>> evaluate(tree, {"G": np.array([[0.0, 1, 0, 0], [1, 0, 2, 0], [0, 2, 0, 0], [0, 0, 0, 0]])})
    0.625
    >>> evaluate(tree, {"G": np.full((4, 4), np.inf)})
    Traceback (most recent call last):
        ...
    symrmt.errors.TraceSimulationError: the expression evaluated to inf in this draw
    """
    if getattr(tree, "kind", None) not in SCALAR_KINDS:
        raise ParameterError("the expression is a matrix; simulate a scalar, e.g. trace(...) of it")
    v = float(Evaluator(mats)(tree))
    if not math.isfinite(v):
        raise TraceSimulationError(f"the expression evaluated to {v} in this draw")
    return v


def check_trace_memory(tree, specs=None, sizes=None) -> None:
    """Refuse, before any draw, a simulation whose float64 arrays would not fit in memory: the random
    matrices plus one dense square of the largest dimension per matrix node of the tree (the
    evaluator may keep each intermediate), an upper estimate stated in the error
    (:class:`~symrmt.errors.ParameterError`).  ``specs``: the tree's :func:`random_matrices`, ``sizes``: its
    dimensions (both read from the tree by default).  Returns ``None``.

    >>> from symrmt.engine import Model, bind
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> check_trace_memory(bind(m.expr("trace(G*G)/n"), {}, 4))
    >>> check_trace_memory(bind(m.expr("trace(G*G)/n"), {}, 10 ** 6))
    Traceback (most recent call last):
        ...
    symrmt.errors.ParameterError: simulate trace n=1000000: needs about 4.47e+4 GiB (1 random matrices and up to 5 intermediates of 1000000 x 1000000), more than 50% of this machine's ... GiB; lower n
    """
    specs = random_matrices(tree) if specs is None else specs
    if sizes is None:
        sizes = {}
        for x in _walk(tree):
            for d in (getattr(x, "rows", None), getattr(x, "cols", None)):
                if d is not None:
                    sizes[d.name] = int(d.count)
    big = max(sizes.values(), default=0)
    nodes = sum(1 for x in _walk(tree) if getattr(x, "rows", None) is not None)
    need = 8 * (sum(r * c for _, r, c in specs.values()) + (nodes + 2) * big * big)
    dims = ", ".join(f"{k}={v}" for k, v in sizes.items())
    check_memory_bytes(need, f"simulate trace {dims}", f"{len(specs)} random matrices and up to {nodes + 2} "
                       f"intermediates of {big} x {big}", "lower n")
