"""Diagonal laws with many atoms: the weighted-sum (Silverstein-type) reduction of the trace engine.

* Against the plain splitting (one block per atom) at a few atoms, to 30 digits: the reduction is
  forced by setting the split threshold to 0.
* Against the Silverstein equation of the anisotropic Marchenko-Pastur law, written and solved here
  in mpmath without the engine, for a law of 300 atoms, to 30 digits.
* Against a Monte-Carlo of the same 300-atom expression at n = 300 (each atom one diagonal entry, so
  the sampled law is exactly the declared one): |mean - limit| <= 3 se + 1% (k = 3: a 0.3%
  two-sided false-failure rate at a fixed seed; the 1% covers the O(1/n) finite-size bias).
"""

import mpmath
import pytest

from symrmt.engine import Model, ModelError, bind
from symrmt.engine.simulate.monte_carlo import simulate_trace
from symrmt.engine.lang import node as engine_base
from symrmt.engine.reduce import plan as engine_plan
from symrmt.engine.reduce.atoms import AtomSystem

DIGITS = 30
VALUES_300 = [f"{50 + a}/100" for a in range(300)]  # 1/2, 51/100, ..., 349/100, equal weights


def _model(values=("1/2", "1", "3", "5"), weights=("1/8", "3/8", "1/4", "1/4")):
    m = Model()
    m.dim("p", "c*n")
    m.dim("d", "phi*n")
    m.gaussian("Z", "p", "n")
    m.gaussian("X", "n", "d")
    m.goe("G", "n")
    m.goe("Gp", "p")
    m.diag("D", "p", list(values), None if weights is None else list(weights))
    m.diag("S", "d", ["1", "2", "7/2"], ["1/3", "1/3", "1/3"])
    return m


def _limit(expr, at, force_sums, monkeypatch):
    monkeypatch.setattr(engine_base, "SPLIT_ATOMS", 0 if force_sums else 16)
    engine_plan._PENCILS.clear()
    m = _model()
    out = m.limit(expr, at=at, digits=DIGITS)
    kinds = {type(t.system) for t in m.plan(expr).traces}
    engine_plan._PENCILS.clear()
    return out.value, kinds


@pytest.mark.parametrize("expr,at", [
    ("trace(inv(Z.T*D*Z/n + gamma*I(n)))", {"c": "3/2", "gamma": "1/5"}),
    ("trace(inv(Z.T*D*Z/n + G/sqrt(n) + gamma*I(n)))", {"c": "1/2", "gamma": "3"}),
    ("trace(inv(D*Z*Z.T*D/n + Gp/sqrt(n) + 3*I(p)))", {"c": "3/2"}),
    ("trace(D*inv(Z*Z.T/n + gamma*I(p)))", {"c": "2", "gamma": "1/5"}),
    ("trace(inv(X*S*X.T/n + gamma*I(n)))*trace(inv(S*X.T*X*S/n + gamma*I(d)))", {"phi": "1/2", "gamma": "1/5"}),
])
def test_weighted_sums_agree_with_the_split_atoms(expr, at, monkeypatch):
    split, kinds_split = _limit(expr, at, False, monkeypatch)
    sums, kinds_sums = _limit(expr, at, True, monkeypatch)
    assert AtomSystem not in kinds_split and AtomSystem in kinds_sums
    with mpmath.workdps(DIGITS + 10):
        assert abs(split - sums) <= mpmath.mpf(10) ** -DIGITS * abs(split)


def silverstein(gamma, c, values, weights):
    """``tau_n((Z^T D Z/n + gamma)^{-1})`` for ``Z`` p x n, ``p = c n``, ``D`` with law ``sum w_i delta_{v_i}``:
    the root in ``(0, 1/gamma]`` of ``1/m = gamma + c sum_i w_i v_i/(1 + v_i m)`` (Silverstein and Bai 1995),
    by monotone iteration from ``1/gamma`` and a polish."""
    def rhs(m):
        return 1 / (gamma + c * mpmath.fsum(w * v / (1 + v * m) for v, w in zip(values, weights)))

    m = 1 / gamma
    for _ in range(200):
        m = rhs(m)
    return mpmath.findroot(lambda x: x - rhs(x), m)


def test_three_hundred_atoms_against_the_silverstein_equation():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.diag("D", "p", VALUES_300)
    e = "trace(inv(Z.T*D*Z/n + gamma*I(n)))"
    r = m.limit(e, at={"c": "1/2", "gamma": "1/10"}, digits=DIGITS)
    assert isinstance(m.plan(e).traces[0].system, AtomSystem)
    sizes = {}
    for k in (16, 20):  # 16 atoms are split, 20 reduced
        few = Model()
        few.dim("p", "c*n")
        few.gaussian("Z", "p", "n")
        few.diag("D", "p", VALUES_300[:k])
        sizes[k] = len(few.plan(e).traces[0].system.h)
    # the unknowns do not grow with the atoms (splitting 16 atoms needs more than 16)
    assert len(m.plan(e).traces[0].system.h) == sizes[20] < 16 < sizes[16]
    with mpmath.workdps(DIGITS + 20):
        vs = [mpmath.mpf(50 + a) / 100 for a in range(300)]
        ref = silverstein(mpmath.mpf(1) / 10, mpmath.mpf(1) / 2, vs, [mpmath.mpf(1) / 300] * 300)
        assert abs(r.value - ref) <= mpmath.mpf(10) ** -DIGITS * ref


def test_three_hundred_atoms_against_simulation():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.goe("G", "n")
    m.diag("D", "p", VALUES_300)
    e = m.parse("trace(inv(Z.T*D*Z/n + G/sqrt(n) + gamma*I(n)))")
    at = {"c": "1", "gamma": "3"}
    theory = float(m.limit(e, at=at, digits=15).value)
    sim = simulate_trace(bind(e, at, 300), trials=8, seed=3, progress=None)
    assert sim["params"]["sizes"]["p"] == 300
    assert abs(sim["mean"] - theory) <= 3 * sim["se"] + 0.01 * abs(theory), (sim["mean"], sim["se"], theory)


def test_two_laws_of_one_name_do_not_share_a_compiled_system():
    """Two models whose laws differ only in their atoms (same names, same pencil) give different values."""
    vals = []
    for law in (VALUES_300, VALUES_300[::-1][:150]):
        m = Model()
        m.dim("p", "c*n")
        m.gaussian("Z", "p", "n")
        m.diag("D", "p", law)
        vals.append(m.limit("trace(inv(Z.T*D*Z/n + gamma*I(n)))", at={"c": "1/2", "gamma": "1/10"}, digits=15).value)
    assert abs(vals[0] - vals[1]) > 1e-3


def test_diff_with_many_atoms_is_refused():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.diag("D", "p", VALUES_300[:20])
    with pytest.raises(ModelError, match="diff"):
        m.limit("diff(trace(inv(Z.T*D*Z/n + gamma*I(n))), gamma)", at={"c": "1", "gamma": "1"}, digits=15)
