"""The laws of the trace engine, one module each in symrmt/engine/laws/: every module registers its law,
and every registered keyword parses, samples and solves.

Each case below declares the law by its text keyword, then checks

* the sampler: the Monte-Carlo mean of an expression whose mean at finite size is known exactly
  (a second moment, ``E[Z^T A Z] = tr(A) I``), within ``4 se`` (k = 4: a two-sided normal tail of 6e-5
  per check; the seeds are fixed);
* the solve: the certified limit against a closed form derived here (the semicircle's and the
  elliptic law's Stieltjes transforms, a second moment, Silverstein's equation solved by mpmath).

A new law is a new module in symrmt/engine/laws/ and a new case here
(test_every_law_has_a_case_here fails until it has one).
"""

from __future__ import annotations

import pkgutil

import mpmath
import numpy as np
import pytest

import symrmt.engine.laws as laws_package
from symrmt.engine import Model, bind
from symrmt.engine.laws.registry import Law, laws
from symrmt.engine.simulate.monte_carlo import simulate_trace

def SEMICIRCLE_AT_3():  # (z - sqrt(z^2 - 4))/2 at z = 3
    return (3 - mpmath.sqrt(5)) / 2


def ELLIPTIC_AT_3():  # (z - sqrt(z^2 - 4 tau))/(2 tau) at z = 3, tau = 1/2
    return 3 - mpmath.sqrt(7)


def _silverstein(c, g, values, weights):
    """m = trace(inv(Z.T*D*Z/n + g I(n))) from 1/m = g + c sum_a w_a v_a/(1 + v_a m) (mpmath, at the caller's
    precision)."""
    def f(m):
        return 1 / m - g - c * mpmath.fsum(w * v / (1 + v * m) for v, w in zip(values, weights))
    return mpmath.findroot(f, 1 / g)


def _files(tmp_path):
    np.save(tmp_path / "law.npy", np.array([[1.0, 4.0], [0.25, 0.75]]))
    np.save(tmp_path / "S.npy", np.diag([1.0, 2.0, 1.0, 2.0]))
    np.save(tmp_path / "v.npy", np.array([1.0, 0.0, 0.0, 0.0]))
    return tmp_path


# keyword -> (declarations, (expression, exact finite-size mean, n), (expression, at, closed form at 40 digits))
CASES = {
    "goe": (["G=goe(n)"], ("trace(G*G/n)", lambda n: (n - 1) / n, 40),
            ("trace(inv(3*I(n) - G/sqrt(n)))", {}, SEMICIRCLE_AT_3)),
    "gaussian": (["p=c*n", "Z=gaussian(p,n)"], ("trace(Z.T*Z/n)", lambda n: 0.5, 40),
                 ("trace((Z.T*Z/n)**2)", {"c": "1/2"}, lambda: mpmath.mpf(3) / 4)),  # c^2 + c
    "gaussian_vector": (["G=goe(n)", "g=gaussian_vector(n)"], ("g.T*G*G*g/n**2", lambda n: (n - 1) / n, 40),
                        ("g.T*inv(3*I(n) - G/sqrt(n))*g/n", {}, SEMICIRCLE_AT_3)),
    "signs": (["G=goe(n)", "y=signs(n)"], ("y.T*G*G*y/n**2", lambda n: (n - 1) / n, 40),
              ("y.T*inv(3*I(n) - G/sqrt(n))*y/n", {}, SEMICIRCLE_AT_3)),
    "elliptic": (["A=elliptic(n, 1/2)"], ("trace(A*A/n)", lambda n: (n - 1) / n / 2, 40),
                 ("trace(inv(3*I(n) - A/sqrt(n)))", {}, ELLIPTIC_AT_3)),
    "matrix": (["p=c*n", "Z=gaussian(p,n)", 'S=matrix(p, p, "{dir}/S.npy")'],
               ("trace(Z.T*S.T*S*Z/n)", lambda n: 0.5 * 10 / 4, 8),  # c tr(S^T S)/p; the file fixes n = 8
               ("trace(inv(Z.T*S.T*S*Z/n + I(n)))", {"c": "1/2"},
                lambda: _silverstein(mpmath.mpf(1) / 2, 1, [1, 4], [mpmath.mpf(1) / 2] * 2))),
    "vector_file": (["p=c*n", "Z=gaussian(p,n)", 'S=matrix(p, p, "{dir}/S.npy")', 'v=vector_file(p, "{dir}/v.npy")'],
                    ("v.T*S*Z*Z.T*S.T*v/n", lambda n: 1.0, 8),  # v^T S S^T v
                    ("v.T*inv(S*S.T + I(p))*v", {"c": "1/2"}, lambda: mpmath.mpf(1) / 2)),
    "diag_file": (["p=c*n", "Z=gaussian(p,n)", "D=diag_file(p, {dir}/law.npy)"],
                  ("trace(Z.T*D*Z/n)", lambda n: 0.5 * (0.25 * 1 + 0.75 * 4), 40),  # c E[D]
                  ("trace(inv(Z.T*D*Z/n + gamma*I(n)))", {"c": "1/2", "gamma": "1/10"},
                   lambda: _silverstein(mpmath.mpf(1) / 2, mpmath.mpf(1) / 10, [1, 4],
                                        [mpmath.mpf(1) / 4, mpmath.mpf(3) / 4]))),
}


def _model(decls, files):
    m = Model()
    for text in decls:
        text = text.format(dir=files)
        name, _, rhs = text.partition("=")
        if name in ("p",):
            m.dim(name, rhs)
        elif rhs.split("(")[0] in {k for k, one in laws().items() if one.kind == "vector"} | {"vector"}:
            m.declare_vector(text)
        else:
            m.declare(text)
    return m


def test_every_module_registers_a_law():
    modules = {i.name for i in pkgutil.iter_modules(laws_package.__path__)} - {"registry"}
    import importlib

    for name in sorted(modules):
        entry = getattr(importlib.import_module(f"symrmt.engine.laws.{name}"), "LAW", None)
        entries = entry if isinstance(entry, tuple) else (entry,)
        assert entries and all(isinstance(e, Law) for e in entries), f"symrmt/engine/laws/{name}.py defines no LAW"
        for e in entries:
            assert laws()[e.keyword] is e


def test_every_law_has_a_case_here():
    assert sorted(laws()) == sorted(CASES)


@pytest.mark.parametrize("keyword", sorted(CASES))
def test_the_keyword_parses_samples_and_solves(keyword, tmp_path):
    decls, (sim_expr, exact_mean, n), (expr, at, closed) = CASES[keyword]
    files = _files(tmp_path)
    m = _model(decls, files)
    name = decls[-1].partition("=")[0]
    assert name in m.matrices or name in m.named, f"{decls[-1]} declared nothing"
    # samples: the finite-size mean is exact, so the check is |mc - mean| <= 4 se (k = 4, see the module)
    values = {"c": "1/2"} if "p" in m.dims else {}
    r = simulate_trace(bind(m.parse(sim_expr), values, n), trials=200, seed=7)
    assert abs(r["mean"] - exact_mean(n)) <= 4 * r["se"] + 1e-12, (r["mean"], r["se"], exact_mean(n))
    # solves: the certified limit against the closed form
    got = m.limit(expr, at=at, digits=20)
    with mpmath.workdps(40):
        closed = closed()
        assert abs(mpmath.mpf(str(got)) - closed) <= mpmath.mpf(10) ** -18 * max(1, abs(closed)), (str(got), closed)


def test_a_law_without_its_own_method_is_declared_by_its_keyword():
    """``Model.<keyword>`` reaches every law, those with no method of their own included."""
    m = Model()
    assert m.goe("G", "n").kind == "goe"
    with pytest.raises(AttributeError):
        m.no_such_law("X", "n")
