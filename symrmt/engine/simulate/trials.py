"""The trace engine's Monte-Carlo trials for the executor and the trial store (NumPy only).

A bound tree (:func:`symrmt.engine.bind`) is made of the engine's node classes, which
live in the symbolic layer.  A Dask worker should need neither them nor SymPy, so a
trial travels as plain data: :func:`program` writes the tree as lists, strings and
numbers, :func:`from_program` rebuilds it on the worker as plain objects that
:mod:`symrmt.engine.simulate.evaluate` evaluates.  :func:`trace_point` gives the store key,
which names the program exactly by its SHA-256, and the worker context (the program).

>>> from types import SimpleNamespace as NS
>>> n = NS(name="n", count=6)
>>> G = NS(kind="goe", name="G", rows=n, cols=n)
>>> pt = trace_point(NS(kind="trace", matrix=NS(kind="product", factors=(G, G), rows=n, cols=n)))
>>> sorted(pt.key), pt.sizes
(['sizes', 'tree'], {'n': 6})
>>> from symrmt.simulation.executor import run_trials
>>> rows, info = run_trials(TRACE_SPEC, pt.key, 3, 0, context=pt.context)
>>> rows.shape, info["trials_computed"]
((3, 1), 3)
"""

from __future__ import annotations

import hashlib
from types import SimpleNamespace as NS

import numpy as np

from symrmt.errors import ParameterError
from symrmt.simulation.executor import TrialSpec, trial_seed
from symrmt.simulation.store import canonical
from symrmt.engine.simulate.evaluate import RANDOM_KINDS, SCALAR_KINDS, children, draw_matrices, evaluate, random_matrices

__all__ = ["NUMERICS_VERSION", "TRACE_SPEC", "TracePoint", "from_program", "program", "trace_point"]

#: Version of the numerics of a trace trial (the drawing and evaluation of
#: :mod:`symrmt.engine.simulate.evaluate`, the plain form of the tree here).  The trial store keys its
#: rows by it: bump it whenever a change of that code changes the numbers a seeded trial produces, and stored trials of the old version are reported as stale, never reused.
NUMERICS_VERSION = "1"

_MATRIX_FIELDS = {"sum": "terms", "product": "factors", "transpose": "matrix", "inverse": "matrix"}
_SCALAR_FIELDS = {"ssum": "terms", "sproduct": "factors", "trace": "matrix", "power": "base", "qform": "matrix"}


def program(tree) -> dict:
    """A bound scalar tree as plain data (lists, strings, floats, ints): what a trial needs, nothing else.

    ``{"nodes": [[kind, children, dims, extra], ...], "dims": {name: size}}``, nodes in post-order
    (children first, the root last), each distinct subtree once (equal subtrees share one index),
    so two trees of the same structure and numbers give equal programs.  ``children`` are node
    indices, ``dims`` the names of the rows and columns of a matrix node (``[]`` for a scalar),
    ``extra`` the node's own data (``value``, ``name``, ``values`` and ``counts``, ``exponent``).
    A program pickles and travels to a Dask worker as is; :func:`from_program` rebuilds the tree
    there, without the engine.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> n = NS(name="n", count=4)
    >>> G = NS(kind="goe", name="G", rows=n, cols=n)
    >>> t = NS(kind="trace", matrix=NS(kind="product", factors=(G, G), rows=n, cols=n))
    >>> program(t)
    {'nodes': [['goe', [], ['n', 'n'], {'name': 'G'}], ['product', [0, 0], ['n', 'n'], {}], ['trace', [1], [], {}]], 'dims': {'n': 4}}
    >>> float(from_program(program(t)).matrix.factors[1].rows.count)
    4.0
    """
    if getattr(tree, "kind", None) not in SCALAR_KINDS:
        raise ParameterError("the expression is a matrix; simulate a scalar, e.g. trace(...) of it")
    nodes, index, memo, dims = [], {}, {}, {}

    def dim(d):
        count = int(d.count)
        if dims.setdefault(d.name, count) != count:
            raise ParameterError(f"the dimension {d.name} appears with two sizes: {dims[d.name]} and {count}")
        return d.name

    def visit(x):  # recursion depth = tree depth (bounded by the parser's size caps)
        if id(x) in memo:
            return memo[id(x)]
        kind = x.kind
        kids = [visit(c) for c in children(x)]
        shape = [dim(x.rows), dim(x.cols)] if kind not in SCALAR_KINDS else []
        if kind == "const":
            extra = {"value": float(x.value)}
        elif kind in RANDOM_KINDS:
            extra = {"name": x.name}
        elif kind == "diag":
            extra = {"name": x.name, "values": [float(v) for v in x.values], "counts": [int(k) for k in x.counts]}
        elif kind == "power":
            extra = {"exponent": float(x.exponent)}
        elif kind == "given":
            extra = {"name": x.name, "data": np.asarray(x.data).tolist()}
        elif kind == "vector":
            extra = {"name": x.name, "law": x.law}
            if getattr(x, "data", None) is not None:
                extra["data"] = np.asarray(x.data).tolist()
            elif x.law == "det":
                extra["coords"] = [float(c) for c in x.coords]
        else:
            extra = {}
        if kind not in _MATRIX_FIELDS and kind not in _SCALAR_FIELDS and kind not in (
                "const", "scaled", "identity", "diag", "vector", "given", *RANDOM_KINDS):
            raise ParameterError(f"cannot simulate a node of kind {kind!r}")
        entry = [kind, kids, shape, extra]
        sig = repr(entry)
        if sig not in index:
            index[sig] = len(nodes)
            nodes.append(entry)
        memo[id(x)] = index[sig]
        return index[sig]

    visit(tree)
    return {"nodes": nodes, "dims": dict(sorted(dims.items()))}


def from_program(prog: dict):
    """The tree of a :func:`program`, as plain objects with the fields this module reads (its root): what a
    worker evaluates without the engine.

    >>> from symrmt.engine import Model, bind
    >>> from symrmt.engine.simulate.evaluate import evaluate
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> root = from_program(program(bind(m.expr("trace(G*G)/n"), {}, 4)))
    >>> root.kind, evaluate(root, {"G": np.array([[0.0, 1, 0, 0], [1, 0, 2, 0], [0, 2, 0, 0], [0, 0, 0, 0]])})
    ('sproduct', 0.625)
    """
    dims = {name: NS(name=name, count=int(k)) for name, k in prog["dims"].items()}
    built = []
    for kind, kids, shape, extra in prog["nodes"]:
        x = NS(kind=kind, **extra)
        if shape:
            x.rows, x.cols = dims[shape[0]], dims[shape[1]]
        ch = [built[i] for i in kids]
        if kind == "scaled":
            x.scalar, x.matrix = ch
        elif kind in _MATRIX_FIELDS or kind in _SCALAR_FIELDS:
            field = {**_MATRIX_FIELDS, **_SCALAR_FIELDS}[kind]
            setattr(x, field, tuple(ch) if field in ("terms", "factors") else ch[0])
        built.append(x)
    return built[-1]


def _trace_trial(params, context, seed, j):
    """Trial ``j`` of a trace point: ``[value]`` on the draw of child ``j`` of ``SeedSequence(seed)``.

    The tree is rebuilt from its program (``context["program"]``, named exactly by
    ``params["tree"]``); no engine, SymPy or mpmath is needed where this runs.
    """
    tree = from_program(context["program"])
    mats = draw_matrices(random_matrices(tree), np.random.default_rng(trial_seed(seed, j)))
    return np.array([evaluate(tree, mats)], dtype=np.float64)


#: The trace engine's trial kind for :func:`symrmt.simulation.executor.run_trials`.
TRACE_SPEC = TrialSpec("trace", NUMERICS_VERSION, _trace_trial, width=lambda params: 1)


class TracePoint:
    """A trace point for the executor: its store ``key``, worker ``context`` and integer ``sizes``
    (:func:`trace_point` builds one).

    >>> pt = TracePoint({"tree": "sha256:...", "sizes": {"n": 4}}, {"program": {}}, {"n": 4})
    >>> pt.sizes, sorted(pt.key)
    ({'n': 4}, ['sizes', 'tree'])
    """

    def __init__(self, key: dict, context: dict, sizes: dict):
        self.key, self.context, self.sizes = key, context, sizes


def trace_point(tree, label: dict | None = None) -> TracePoint:
    """The store key and worker context of a bound scalar tree.

    The key holds ``tree`` (the SHA-256 of the canonical :func:`program`: every node, size,
    atom count and bound float value, so it determines each trial's numbers exactly),
    ``sizes``, and the entries of ``label`` (JSON-able; ``symrmt trace`` puts the expression
    text, the declarations, the exact parameter values and ``n`` there, so that
    ``symrmt store`` says what the trials are).  The executor adds the seed, the trial index
    and :data:`NUMERICS_VERSION`.  Returns a :class:`TracePoint`; raises
    :class:`~symrmt.errors.ParameterError` for a label with the key ``tree`` or ``sizes`` (or not JSON-able).

    Examples
    --------
    >>> from symrmt.engine import Model, bind
    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> pt = trace_point(bind(m.expr("trace(G*G)/n"), {}, 4), label={"expr": "trace(G*G)/n"})
    >>> sorted(pt.key), pt.sizes, pt.key["tree"].startswith("sha256:")
    (['expr', 'sizes', 'tree'], {'n': 4}, True)
    """
    prog = program(tree)
    digest = "sha256:" + hashlib.sha256(canonical(prog).encode()).hexdigest()
    key = {"tree": digest, "sizes": prog["dims"]}
    if label is not None:
        if not isinstance(label, dict) or set(label) & set(key):
            raise ParameterError(f"label must be a dict without the keys 'tree' and 'sizes', got {label!r}")
        key.update(label)
    canonical(key)  # JSON-able, else a clear error here rather than in the store
    sizes = {k: v for k, v in prog["dims"].items() if k != "1"}  # "1": the unit dimension of a vector
    return TracePoint(key, {"program": prog}, sizes)
