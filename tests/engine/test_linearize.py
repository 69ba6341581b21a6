"""The model language and the linearization: sizes, orders in n, pencils (self-tested) and trees.

The pencil checks are exact identities at a finite size: a pencil ``u Q^{-1} v`` must equal the
expression evaluated directly with the same matrices, to 1e-10.
"""

import numpy as np
import pytest
import sympy as sp

from symrmt.engine import Model, ModelError, bind, differentiate, walk
from symrmt.engine.reduce import linearize as lin
from symrmt.engine.reduce.pencil_check import PencilError, self_test


@pytest.fixture(scope="module")
def model():
    m = Model()
    m.dim("p", "c*n")
    m.dim("q", "2*d*n")
    m.gaussian("Z", "p", "n")
    m.gaussian("Y", "q", "n")
    m.gaussian("W", "q", "p")
    m.goe("G", "n")
    m.diag("D", "p", [1, "a"], ["1/4", "3/4"])
    return m


EXPRESSIONS = [
    "Z.T*Z/n + gamma*I(n)",
    "inv(Z.T*Z/n + gamma*I(n))",
    "inv((Z.T*Z/n)**3 + gamma*I(n))",
    "inv(Z.T*D*Z/n + Y.T*Y/n + G/sqrt(n) + gamma*I(n))",
    "Z.T*W.T*W*Z/(n*p) * inv(Z.T*Z/n + gamma*I(n))",
    "inv(inv(Z.T*Z/n + gamma*I(n)) + G/sqrt(n) + 3*I(n)) * Y.T*Y/n",
    "inv(Z*Z.T/n + gamma*I(p)) * D",
    "(a*(Z.T*Z/p - I(n)) + b*G/sqrt(p))*Z.T*Z*(a*(Z.T*Z/p - I(n)) + b*G/sqrt(p))/n",
]


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_pencils_pass_their_self_test(model, text):
    e = model.parse(text)
    order, hat = lin.normalize(e)
    assert order == 0
    p = lin.linearize(hat)
    assert self_test(p, hat) <= 1e-10
    diags = lin.diagonals_of(hat)
    if diags:
        split = lin.reduce(lin.split_atoms(p, diags))
        assert self_test(split, hat) <= 1e-10
        assert all(leaf == "I" or leaf[0] != "D" for e in split.Q.values() for leaf in e)


def test_a_wrong_pencil_fails_its_self_test(model):
    hat = lin.normalize(model.parse("inv(Z.T*Z/n + gamma*I(n))"))[1]
    p = lin.linearize(hat)
    (i, j), entry = next((k, e) for k, e in p.Q.items() if any(leaf != "I" for leaf in e))
    leaf = next(leaf for leaf in entry if leaf != "I")
    entry[leaf] = entry[leaf] * 2  # corrupt one coefficient
    with pytest.raises(PencilError, match="self-test failed"):
        self_test(p, hat)


def test_reduction_gives_the_two_block_mp_pencil(model):
    hat = lin.normalize(model.parse("inv(Z.T*Z/n + gamma*I(n))"))[1]
    p = lin.linearize(hat)
    assert [b[0] for b in p.blocks] == ["p", "n"]


def test_orders_in_n(model):
    assert lin.normalize(model.parse("trace(Z.T*Z)/n"))[0] == 0
    assert lin.normalize(model.parse("trace(Z.T*Z)"))[0] == 1
    assert lin.normalize(model.parse("trace(inv(Z.T*Z + n*gamma*I(n)))*n"))[0] == 0
    assert lin.normalize(model.parse("trace(G*G)/n"))[0] == 0
    with pytest.raises(ModelError, match="different orders"):
        lin.normalize(model.parse("Z.T*Z/sqrt(n) + I(n)"))


def test_parse_refusals(model):
    for text, why in [("Z.__class__", "(?i)attribute"), ("open('x')", "unknown|not a valid"), ("Z + 1", "scalar"),
                      ("inv(Z)", "non-square"), ("W*Y", "size mismatch"), ("Z**2", "square")]:
        with pytest.raises(ValueError, match=why):
            model.parse(text)


def test_dims_and_declarations():
    m = Model()
    assert m.dim("p", "c*n").ratio == sp.Symbol("c", positive=True)
    m.declare("Z=gaussian(p, n)")
    m.declare("G=goe(n)")
    with pytest.raises(ModelError, match="already used"):
        m.declare("Z=goe(n)")
    with pytest.raises(ModelError):
        m.diag("D", "n", [1, 2], ["1/2", "1/3"])  # weights do not sum to 1


def test_bind_gives_numbers_and_sizes(model):
    b = bind(model.parse("trace(inv(Z.T*D*Z/n + gamma*I(n)))"), {"c": "1/2", "d": 1, "a": 3, "gamma": "1/5"}, 64)
    for x in walk(b):
        if x.kind == "const":
            assert isinstance(x.value, float)
        if x.kind == "diag":
            assert x.counts == (8, 24) and x.values == (1.0, 3.0)
        if x.kind == "gaussian":
            assert (x.rows.count, x.cols.count) == (32, 64)


def test_differentiate_matches_finite_differences(model):
    """d/dgamma tr((A + gamma)^{-1}) = -tr((A + gamma)^{-2}), checked on one draw."""
    e = model.parse("trace(inv(Z.T*Z/n + gamma*I(n)))")
    d = differentiate(e, model.symbols["gamma"])
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((32, 64))
    A = Z.T @ Z / 64
    vals = {"c": "1/2", "gamma": "1/3"}
    bd = bind(d, vals, 64)

    def ev(x):
        k = x.kind
        if k == "gaussian":
            return Z
        if k == "identity":
            return np.eye(x.dim.count)
        if k == "scaled":
            return ev(x.scalar) * ev(x.matrix)
        if k == "sum":
            return sum(ev(t) for t in x.terms)
        if k == "product":
            out = ev(x.factors[0])
            for f in x.factors[1:]:
                out = out @ ev(f)
            return out
        if k == "transpose":
            return ev(x.matrix).T
        if k == "inverse":
            return np.linalg.inv(ev(x.matrix))
        if k == "trace":
            M = ev(x.matrix)
            return np.trace(M) / M.shape[0]
        if k == "const":
            return x.value
        raise AssertionError(k)

    R = np.linalg.inv(A + np.eye(64) / 3)
    assert abs(ev(bd) + np.trace(R @ R) / 64) < 1e-12


@pytest.mark.parametrize("text", ["inv(Z.T*Z/n + gamma*I(n))",
                                  "(a*(Z.T*Z/p - I(n)) + b*G/sqrt(p))*Z.T*Z*(a*(Z.T*Z/p - I(n)) + b*G/sqrt(p))/n",
                                  "inv(Z.T*D*Z/n + G/sqrt(n) + gamma*I(n))"])
def test_symmetric_realization(model, text):
    """``[[0, Q], [Q^T, 0]]`` with ``u = v^T/2`` realizes a symmetric expression (self-test), and its
    blocks are transposes of each other."""
    hat = lin.normalize(model.parse(text))[1]
    assert lin.is_symmetric(hat)
    sym = lin.symmetrize(lin.linearize(hat))
    assert self_test(sym, hat) <= 1e-10
    for (i, j), e in sym.Q.items():
        back = {(leaf if leaf == "I" or leaf[0] != "Z" else (leaf[0], leaf[1], not leaf[2])): c
                for leaf, c in sym.Q[(j, i)].items()}
        assert back == e
    assert {i: 2 * c for i, c in sym.u.items()} == sym.v


def test_symmetric_realization_of_a_non_symmetric_expression_fails(model):
    hat = lin.normalize(model.parse("Z.T*Z/n*G/sqrt(n)"))[1]
    assert not lin.is_symmetric(hat)
    with pytest.raises(PencilError):
        self_test(lin.symmetrize(lin.linearize(hat)), hat)


def test_symbolic_engine_modules_do_not_import_numpy():
    """The engine's symbolic layer derives with SymPy and never samples: no NumPy (the pencil self-test,
    which evaluates numbers, is the numeric layer's); only the kernel helper's Hermite quadrature uses
    mpmath."""
    import ast
    import pathlib

    import symrmt.engine as pkg

    root = pathlib.Path(pkg.__file__).parent
    names = ["lang/node", "lang/matrices", "lang/algebra", "declarations", "lang/tree", "reduce/plan",
             "kernels/inner_product", "reduce/linearize", "reduce/fixed_point"]
    for name in names:
        tree = ast.parse((root / f"{name}.py").read_text())
        for node in ast.walk(tree):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            banned = ("numpy",) if name == "kernels/inner_product" else ("numpy", "mpmath")
            assert not any(m.split(".")[0] in banned for m in mods), f"{name} imports {mods}"


def test_the_solver_refuses_a_pencil_that_fails_its_self_test():
    """A plan whose pencil was corrupted after it was built never reaches the solver."""
    from symrmt.engine import Model as Facade
    from symrmt.engine.solve.certify import certified_limit
    from symrmt.engine.reduce.plan import prepare

    m = Facade()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    plan = prepare(m.parse("trace(inv(Z.T*Z/n + g3*I(n) + Z.T*Z*Z.T*Z/n**2))"))
    pen = plan.traces[0].pencil
    (i, j), entry = next((k, e) for k, e in pen.Q.items() if any(leaf != "I" for leaf in e))
    leaf = next(leaf for leaf in entry if leaf != "I")
    entry[leaf] = entry[leaf] * 2
    try:
        with pytest.raises(PencilError):
            certified_limit(plan, {"c": 1, "g3": 1}, 15)
    finally:
        entry[leaf] = entry[leaf] / 2
        from symrmt.engine.reduce import plan as engine_plan

        engine_plan._PENCILS.clear()
