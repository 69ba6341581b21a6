"""The float64 density path (``Model.density(..., fast=True)``, ``symrmt density --fast``).

Every float64 point must carry at least 12 correct digits: checked against the Marchenko-Pastur closed
form ``sqrt((b - x)(x - a)) / (2 pi x)`` and, for laws without a closed form at hand (semicircle + MP,
MP x MP as ``Z1.T*Z2*Z2.T*Z1/n**2``, a deformed Wigner matrix ``G/sqrt(n) + D``), against the certified
path at 20 digits (an independent mpmath Newton at two precisions) on grids across edges and outside
the support.  A point on an atom fails the batch's checks and is handed to the certified path.
"""

from __future__ import annotations

import json

import mpmath
import pytest

from symrmt.cli.app import main
from symrmt.engine import Model


def _wishart():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    return m


def _mp(c, x):
    c, x = mpmath.mpf(c), mpmath.mpf(x)
    a, b = (mpmath.sqrt(c) - 1) ** 2, (mpmath.sqrt(c) + 1) ** 2
    return mpmath.sqrt((b - x) * (x - a)) / (2 * mpmath.pi * x) if a < x < b else mpmath.mpf(0)


def _digits(got, ref):
    err = abs(mpmath.mpf(got) - ref)
    if err == 0:
        return 99
    return float(-mpmath.log10(err / abs(ref))) if ref != 0 else float(-mpmath.log10(err))


def test_marchenko_pastur_against_closed_form():
    xs = [-0.2 + 3.4 * i / 59 for i in range(60)]
    d = _wishart().density("Z.T*Z/n", x=xs, at={"c": "1/2"}, fast=True, edges=False, atoms=False)
    assert d.status.count("float") >= 58
    with mpmath.workdps(30):
        for x, v, st in zip(xs, d.density, d.status):
            assert v is not None
            ref = _mp(mpmath.mpf(1) / 2, x)
            if ref == 0:
                assert v == 0, x
            else:
                assert _digits(v, ref) >= 12, (x, v, ref, st)


def _laws():
    wig = Model()
    wig.goe("G", "n")
    wig.diag("D", "n", [-1, 2], ["1/3", "2/3"])
    scmp = _wishart()
    scmp.goe("G", "n")
    mpmp = Model()
    mpmp.dim("p", "c*n")
    mpmp.gaussian("Z1", "p", "n")
    mpmp.gaussian("Z2", "p", "n")
    return [("semicircle + MP", scmp, "G/sqrt(n) + Z.T*Z/n", {"c": "1/2"}, (-2.5, 5.0)),
            ("MP x MP", mpmp, "Z1.T*Z2*Z2.T*Z1/n**2", {"c": "1/2"}, (-0.2, 6.0)),
            ("deformed Wigner", wig, "G/sqrt(n) + D", {}, (-4.0, 5.0))]


@pytest.mark.parametrize("case", range(3))
def test_twelve_digits_against_the_certified_path(case):
    name, model, expr, at, (lo, hi) = _laws()[case]
    xs = [lo + (hi - lo) * i / 40 for i in range(41)]
    fast = model.density(expr, x=xs, at=at, fast=True, edges=False, atoms=False)
    cert = model.density(expr, x=xs, at=at, digits=20, edges=False, atoms=False)
    assert fast.status.count("float") >= 39, (name, fast.status)
    with mpmath.workdps(30):
        for x, a, b in zip(xs, fast.density, cert.density):
            assert (a is None) == (b is None), (name, x)
            if a is not None:
                if b == 0:
                    assert a == 0, (name, x, a)
                else:
                    assert _digits(a, b) >= 12, (name, x, a, b)


@pytest.mark.parametrize("case", ["MP", "MP x MP"])
def test_points_next_to_the_atom_at_zero(case):
    # next to the atom at 0 the fixed point grows like 1/x: the batch's descent must still land on the
    # certified path's root there (tau, real outside the support, not only the density)
    if case == "MP":
        model, expr = _wishart(), "Z.T*Z/n"
    else:
        model, expr = _laws()[1][1], "Z1.T*Z2*Z2.T*Z1/n**2"
    xs = [-0.1, -0.01, -1e-3, -1e-5, 1e-5, 1e-3, 0.01, 0.05]
    fast = model.density(expr, x=xs, at={"c": "1/2"}, fast=True, edges=False, atoms=False)
    cert = model.density(expr, x=xs, at={"c": "1/2"}, digits=20, edges=False, atoms=False)
    assert fast.status == ["float"] * len(xs), fast.status
    with mpmath.workdps(30):
        for x, a, b in zip(xs, fast.tau, cert.tau):
            assert abs(mpmath.mpc(a) - b) <= mpmath.mpf(10) ** -12 * abs(b), (x, a, b)


def test_point_on_the_atom_goes_to_the_certified_path():
    # x = 0 is an atom of MP(1/2): the batch's finish fails there, the certified path reports it singular;
    # support and atoms are those of the certified path
    d = _wishart().density("Z.T*Z/n", x=[0, 0.5, 1, 1.5], at={"c": "1/2"}, fast=True)
    assert d.status == ["singular", "float", "float", "float"] and d.density[0] is None
    (lo, hi), = d.support()
    with mpmath.workdps(30):
        assert abs(lo - (1 - 1 / mpmath.sqrt(2)) ** 2) < mpmath.mpf(10) ** -14
        assert hi is None
    assert len(d.atoms()) == 1 and abs(d.atoms()[0]["mass"] - mpmath.mpf(1) / 2) < mpmath.mpf(10) ** -14


def test_fast_and_certify_are_exclusive(capsys):
    with pytest.raises(ValueError, match="either fast"):
        _wishart().density("Z.T*Z/n", x=[1.0], at={"c": "1/2"}, fast=True, certify=2)
    rc = main(["density", "Z.T*Z/n", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2",
               "--over", "x=0.5:2:4", "--fast", "--certify", "2"])
    assert rc == 2


def test_cli_fast(capsys):
    rc = main(["density", "Z.T*Z/n", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2",
               "--over", "x=0.5:2:4", "--fast", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == ["float"] * 4
    with mpmath.workdps(30):
        for x, v in zip(out["x"], out["density"]):
            assert _digits(v, _mp(mpmath.mpf(1) / 2, x)) >= 12


def test_cli_fast_with_more_than_15_digits_writes_floats(capsys):
    """A float64 point is written as the float it is: ``--digits 20`` does not pad it to a 20-digit string whose
    last digits are float64 noise (the closed form has other digits there)."""
    rc = main(["density", "Z.T*Z/n", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2",
               "--over", "x=0.5:2:4", "--fast", "--digits", "20", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == ["float"] * 4
    with mpmath.workdps(30):
        for x, v in zip(out["x"], out["density"]):
            assert isinstance(v, float) and _digits(v, _mp(mpmath.mpf(1) / 2, x)) >= 12


def test_a_system_the_batch_does_not_take_is_certified(monkeypatch):
    import symrmt.engine.density.solver as solver

    def refuse(*args, **kwargs):
        raise ValueError("not plain arithmetic")

    monkeypatch.setattr(solver, "solve_points", refuse)  # symrmt.engine.density.fast.solve_points, as the solver calls it
    d = _wishart().density("Z.T*Z/n", x=[0.5, 1.0], at={"c": "1/2"}, fast=True, edges=False, atoms=False)
    assert d.status == ["ok", "ok"]
    with mpmath.workdps(30):
        for x, v in zip((0.5, 1.0), d.density):
            assert _digits(v, _mp(mpmath.mpf(1) / 2, x)) >= 14


def test_a_second_density_reuses_the_prepared_system(monkeypatch):
    # the plan of tau((M - z)^{-1}) and its compiled code are kept on the model: a second call on the same
    # matrix plans nothing and adds no spectral parameter, and gives the same values (the closed form's)
    import symrmt.engine.model as model_module

    def refuse(*args, **kwargs):
        raise AssertionError("planned again")

    m = _wishart()
    first = m.density("Z.T*Z/n", x=[0.5, 1.0], at={"c": "1/2"}, fast=True, edges=False, atoms=False)
    names = set(m.symbols)
    monkeypatch.setattr(model_module, "prepare", refuse)  # from here on, building a plan fails
    with pytest.raises(AssertionError, match="planned again"):  # a fresh model must plan: the seam is the one used
        _wishart().density("Z.T*Z/n", x=[1.0], at={"c": "1/2"}, fast=True, edges=False, atoms=False)
    second = m.density("Z.T*Z/n", x=[1.5, 2.0], at={"c": "1/2"}, fast=True, edges=False, atoms=False)
    assert set(m.symbols) == names
    other = m.density("Z.T*Z/n", x=[1.0], at={"c": "1/4"}, fast=True, edges=False, atoms=False)  # new values
    assert set(m.symbols) == names
    with mpmath.workdps(30):
        for x, v in zip((0.5, 1.0, 1.5, 2.0), first.density + second.density):
            assert _digits(v, _mp(mpmath.mpf(1) / 2, x)) >= 12
        assert _digits(other.density[0], _mp(mpmath.mpf(1) / 4, 1.0)) >= 12


def _refined(monkeypatch):
    """Record the points the batch refined (:func:`symrmt.engine.density.fast._refine`) and whether it accepted each
    (an internal seam: the status reads ``float`` for a refined point and for one the guard let through alike)."""
    import symrmt.engine.density.fast as fast

    seen, orig = [], fast._refine

    def spy(solver, x, h, J):
        out = orig(solver, x, h, J)
        seen.append((x, out is not None))
        return out

    monkeypatch.setattr(fast, "_refine", spy)
    return seen


def test_points_next_to_an_edge_refined_in_mpmath_carry_twelve_digits(monkeypatch):
    # next to the upper edge of MP x MP (about 4.41) the float64 root is too ill-conditioned for 12 digits by the
    # conditioning guard; two corrections with the residual at 40 digits make it a float point, checked here
    # against the certified path at 20 digits (an independent Newton at two precisions)
    seen = _refined(monkeypatch)
    model, expr = _laws()[1][1], "Z1.T*Z2*Z2.T*Z1/n**2"
    xs = [-0.2 + 6.2 * i / 399 for i in range(400)][290:297]  # 4.306 ... 4.400, on the grid of symrmt bench
    fast = model.density(expr, x=xs, at={"c": "1/2"}, fast=True, edges=False, atoms=False)
    assert fast.status == ["float"] * len(xs)
    assert len(seen) >= 3 and all(ok for _, ok in seen), seen  # the guard sent them to the refinement
    cert = model.density(expr, x=xs, at={"c": "1/2"}, digits=20, edges=False, atoms=False)
    with mpmath.workdps(30):
        for x, a, b in zip(xs, fast.density, cert.density):
            assert b > 0 and _digits(a, b) >= 12, (x, a, b)


def test_refinement_that_cannot_show_its_digits_goes_to_the_certified_path(monkeypatch):
    import symrmt.engine.density.fast as fast

    seen = _refined(monkeypatch)
    monkeypatch.setattr(fast, "REFINE_DIGITS", 40)  # more than any float64 value carries: every refinement refused
    model, expr = _laws()[1][1], "Z1.T*Z2*Z2.T*Z1/n**2"
    xs = [-0.2 + 6.2 * i / 399 for i in range(400)][290:297]
    d = model.density(expr, x=xs, at={"c": "1/2"}, fast=True, edges=False, atoms=False)
    assert seen and not any(ok for _, ok in seen)
    assert d.status.count("ok") == len(seen) and d.status.count("float") == len(xs) - len(seen)


def test_refined_points_next_to_the_marchenko_pastur_edge_against_closed_form(monkeypatch):
    # closer and closer to the upper edge b = (1 + 1/sqrt 2)^2: refined where the corrections show 14 digits, else
    # certified; every value against the closed form at the float x itself (exact binary value), 30 digits
    seen = _refined(monkeypatch)
    with mpmath.workdps(30):
        b = (1 + 1 / mpmath.sqrt(2)) ** 2
        xs = [float(b - mpmath.mpf(10) ** -k) for k in range(2, 8)]
    d = _wishart().density("Z.T*Z/n", x=xs, at={"c": "1/2"}, fast=True, edges=False, atoms=False)
    assert any(ok for _, ok in seen), seen
    with mpmath.workdps(30):
        for x, v, st in zip(xs, d.density, d.status):
            assert _digits(v, _mp(mpmath.mpf(1) / 2, x)) >= 12, (x, v, st)


def test_sparse_elimination_against_lapack():
    # the batch's sparse elimination (static pivots, threshold test, LAPACK where a pivot is too small) against
    # numpy.linalg.solve on each system: a pencil-like pattern (constants -1 and 0, entries per point), with the
    # first static pivot 1e-14 at some points (there it fails the threshold test and LAPACK pivots)
    import numpy as np

    from symrmt.engine.density.fast import _Sparse

    rng = np.random.default_rng(7)
    m, n = 5, 40
    pattern = np.array([[1, 0, 1, 1, 0], [0, 1, 0, 1, 1], [1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 0, 0, 1, 1]])
    J = []
    for i in range(m):
        for j in range(m):
            if not pattern[i, j]:
                J.append(0j)
            elif i == j == 0:
                J.append(-1 + 0j)
            else:
                J.append(rng.standard_normal(n) + 1j * rng.standard_normal(n))
    J[1 * m + 1][::5] = 1e-14  # the first static pivot (Markowitz), tiny at every fifth point
    b = rng.standard_normal((m, 2, n)) + 1j * rng.standard_normal((m, 2, n))
    sp = _Sparse(J, m)
    x = sp.solve(J, b.copy(), n)
    for k in range(n):
        A = np.array([[J[i * m + j][k] if np.ndim(J[i * m + j]) else J[i * m + j] for j in range(m)] for i in range(m)])
        ref = np.linalg.solve(A, b[:, :, k])
        assert np.allclose(x[:, :, k], ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max()), k


@pytest.mark.parametrize("expr", ["Z1.T*Z2*Z2.T*Z1/n**2", "Z1.T*Z1/n"])
def test_compiled_step_against_the_entries_and_lapack(expr):
    # the Newton step compiled as one function from the symbolic system (residual, Jacobian, dR/ds or dR/dz and
    # the elimination together) against the separately compiled entries solved by numpy.linalg.solve point by
    # point, at random unknowns, z and strengths: MP x MP (4 unknowns, the static-pivot elimination) and MP (2)
    from fractions import Fraction

    import numpy as np

    from symrmt.engine.density.fast import _Batch
    from symrmt.engine.density.resolvent import ResolventSolver

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z1", "p", "n")
    m.gaussian("Z2", "p", "n")
    plan = m.plan(f"trace(inv({expr} - z*I(n)))")
    zsym = next(p for p in plan.params if p.name == "z")
    bt = _Batch(ResolventSolver(plan, zsym, {"c": Fraction(1, 2)}))
    assert set(bt.steps) == {"s", "z"}
    rng = np.random.default_rng(3)
    n = 25
    H = rng.standard_normal((bt.m, n)) + 1j * rng.standard_normal((bt.m, n))
    z = rng.standard_normal(n) + 1j * rng.random(n)
    if bt.m == 4:  # H_2_2 H_4_4 = -1 + 1e-14 at every fifth point: the first static pivot of J (at s = 1), -1 - H_2_2
        # H_4_4, is 1e-14 there, its multiplier fails the threshold test and LAPACK with partial pivoting solves it
        assert [str(x) for x in bt.bs.system.h] == ["H_3_1", "H_3_3", "H_2_2", "H_4_4"]
        H[3, ::5] = (-1 + 1e-14) / H[2, ::5]
    for wrt, s in (("s", rng.random(n)), ("z", 1.0)):
        got = bt.step(H, z, s, wrt)
        R, J, Rs, Rz = bt.entries(H, z, s)
        for k in range(n):
            def at(v, k=k):
                return v[k] if np.ndim(v) else v
            A = np.array([[at(J[i * bt.m + j]) for j in range(bt.m)] for i in range(bt.m)], dtype=complex)
            b = np.array([[at(R[i]), at((Rs if wrt == "s" else Rz)[i])] for i in range(bt.m)], dtype=complex)
            ref = -np.linalg.solve(A, b)
            assert np.allclose(got[:, :, k].T, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max()), (wrt, k)


@pytest.mark.slow
def test_mp_times_mp_on_the_bench_grid_against_the_certified_path():
    # MP x MP (the law of four unknowns, solved by the compiled step with its static-pivot elimination) on the
    # 400 points of the bench's grid: every point a float point with at least 12 correct digits against the
    # certified path at 20 digits
    _, model, expr, at, (lo, hi) = _laws()[1]
    xs = [lo + (hi - lo) * i / 399 for i in range(400)]
    fast = model.density(expr, x=xs, at=at, fast=True, edges=False, atoms=False)
    cert = model.density(expr, x=xs, at=at, digits=20, edges=False, atoms=False)
    assert fast.status == ["float"] * 400, [(x, s) for x, s in zip(xs, fast.status) if s != "float"]
    with mpmath.workdps(30):
        for x, a, b in zip(xs, fast.density, cert.density):
            if b == 0:
                assert a == 0, (x, a)
            else:
                assert _digits(a, b) >= 12, (x, a, b)
