"""symrmt.core: each guard of the one Newton, continuation and certification, driven on purpose.

First on small synthetic problems whose answers are known by construction (the scalar driver and its
batched float64 form, whose step schedules must be the scalar ones row by row), then on each solver
family (attention fixed point in floats and mpmath, the attention float64 batch, the trace engine and its
float64 batch, atom sums, density paths, the noise-only closed form): the guard -- the trust region near
the predictor and near the previous point, the second pass, the polish check, stagnation, the step
limits, the refinement's contraction -- is tightened (or the input spoiled) until it must fire, and the
solver must refuse with the error that names the guard (or, in a batch, mark the point failed) -- never
return a number.
"""

from fractions import Fraction

import mpmath
import pytest

from symrmt.core import FLOAT64, MPMATH, Disagree, Geometric, Linear, NewtonError, certify, check_polish, follow, newton, two_pass
from symrmt.errors import BranchError, ConvergenceError, PrecisionError


# ---------------------------------------------------------------- core, synthetic

def test_newton_tolerance_and_the_message_carries_the_residual():
    # x^2 = 2 from 1: converges; with 2 steps it cannot, and the message names residual and step
    def lin(x):
        return [-(x[0] * x[0] - 2) / (2 * x[0])], None

    x, _, step = newton(lin, [1.0], FLOAT64, 1e-15, 20)
    assert abs(x[0] - 2 ** 0.5) < 1e-15 and step <= 1e-15
    with pytest.raises(NewtonError, match=r"residual max\|R\| = .*after 2 steps") as exc:
        newton(lin, [1.0], FLOAT64, 1e-15, 2, residual=lambda x: abs(x[0] * x[0] - 2), where=" at test")
    assert exc.value.residual > 0 and exc.value.step > 1e-15


def test_newton_stagnation_stops_at_the_floor():
    # steps that no longer shrink (1e-9, 1e-9, ...) below sqrt(tol) = 1e-8: stagnation after the second
    def lin(x):
        return [1e-9], None

    x, _, step = newton(lin, [1.0], FLOAT64, 1e-16, 10)
    assert abs(x[0] - (1.0 + 2e-9)) < 1e-15 and step < 1e-8  # two steps taken, then stopped
    with pytest.raises(NewtonError):  # without the rule the same steps run out of steps
        newton(lin, [1.0], FLOAT64, 1e-16, 10, stagnation=False)


def test_newton_contraction_and_divergence():
    def lin(x):
        return [1e-3], None  # never contracts

    with pytest.raises(ConvergenceError, match="does not contract"):
        newton(lin, [0.0], FLOAT64, 1e-12, 5, contract=True, stagnation=False)
    grow = iter([1e-3, 1e-2])
    with pytest.raises(ConvergenceError, match="diverges"):
        newton(lambda x: ([next(grow)], None), [0.0], FLOAT64, 1e-12, 5, diverge=2)


def _line(jump_at=None):
    """h(t) = t, the exact corrector; ``jump_at``: steps longer than this land 10 away (another branch)."""
    seen = []

    def correct(pred, t):
        seen.append(t)
        return [t + 10 if jump_at is not None and abs(t - seen_prev[0]) > jump_at else t], [1.0]

    seen_prev = [0.0]

    def on_step(t, h, dh):
        seen_prev[0] = t

    return correct, on_step, seen


def test_follow_predictor_guard_rejects_a_jump():
    correct, on_step, seen = _line(jump_at=0.2)
    h, _ = follow(correct, [0.0], [1.0], 0.0, 1.0, Linear(0.0, 1.0), FLOAT64, on_step=on_step)
    assert h == [1.0]
    assert len(seen) > 5  # the first step (1/4) jumped, was refused and halved
    correct, on_step, _ = _line(jump_at=0.0)  # every step jumps: the path stalls, no value
    with pytest.raises(ConvergenceError, match="stalled"):
        follow(correct, [0.0], [1.0], 0.0, 1.0, Linear(0.0, 1.0), FLOAT64, on_step=on_step)


def test_follow_previous_point_guard_rejects_an_overshoot():
    # the corrector "settles" at the predictor whatever it is; the predictor's slope 10 overshoots: only
    # the bound near the previous point (0.25 (1 + |h|)) limits the steps
    moves = []

    def correct(pred, t):
        return list(pred), [10.0]

    last = [0.0]

    def on_step(t, h, dh):
        moves.append(abs(h[0] - last[0]) / (1 + abs(last[0])))
        last[0] = h[0]

    follow(correct, [0.0], [10.0], 0.0, 1.0, Linear(0.0, 1.0), FLOAT64, on_step=on_step)
    assert moves and max(moves) <= 0.25
    moves.clear()
    last[0] = 0.0
    follow(correct, [0.0], [10.0], 0.0, 1.0, Linear(0.0, 1.0), FLOAT64, move=None, on_step=on_step)
    assert max(moves) > 0.25  # the guard was what limited them


def test_geometric_schedule_in_mpmath():
    # h(gamma) = 1/gamma from 1e4 down to 1e-2: the exact corrector, slope -1/gamma^2
    with mpmath.workdps(30):
        def correct(pred, t):
            return [1 / t], [-1 / t**2]

        t0, t1 = mpmath.mpf(10) ** 4, mpmath.mpf(10) ** -2
        h, _ = follow(correct, [1 / t0], [-1 / t0**2], t0, t1, Geometric(t0, t1, mpmath.mpf(4), mpmath.mpf(16),
                                                                             mpmath.mpf(10) ** -6), MPMATH, move=1.0)
        assert h[0] == 1 / t1


def test_two_pass_and_polish_check():
    assert two_pass(lambda fine: [1.0, 2.0]) == [1.0, 2.0]
    with pytest.raises(BranchError, match="different fixed points"):
        two_pass(lambda fine: [1.0, 2.0 + (1e-3 if fine else 0)])
    with pytest.raises(ConvergenceError, match="checking path"):
        two_pass(lambda fine: (_ for _ in ()).throw(ConvergenceError("x")) if fine else [1.0])
    check_polish([1.0 + 1e-9], [1.0], 30)
    with pytest.raises(BranchError, match="moved"):
        check_polish([1.1], [1.0], 30)


def test_certify_escalates_then_reports():
    tried = []

    def attempt(dps):
        tried.append(dps)
        if len(tried) < 3:
            raise Disagree(f"no agreement at {dps}") if len(tried) == 1 else ConvergenceError("stalled")
        return 1, "data"

    r = certify(attempt, 15, 10, 3)
    assert tried == [25, 35, 55] and r.working_digits == 65 and r.value == 1 and r.data == "data"
    tried.clear()
    with pytest.raises(PrecisionError, match="could not certify 15 digits with up to 45 .*no agreement at 25; stalled"):
        certify(lambda d: attempt(d) if len(tried) < 2 else (_ for _ in ()).throw(Disagree("x")), 15, 10, 2)


# ---------------------------------------------------------------- core, batched (float64 rows)

def test_batch_schedules_step_as_the_scalar_ones():
    # one schedule class serves one path and a batch of paths: each row steps as its own scalar schedule
    import numpy as np

    pattern = [True, False, True, True, False, False, True, True, True]
    for make in (lambda a, b: Linear(a, b, first=16, cap=1 / 8), lambda a, b: Linear(a, b),
                 lambda a, b: Geometric(a, b, 4.0, 16.0, 1e-6)):
        t0 = np.array([1e4, 1.0, 3.0])
        t1 = np.array([1e-2, 50.0, -5.0 if isinstance(make(1.0, 2.0), Linear) else 3e-5])
        batch, scalars = make(t0, t1), [make(a, b) for a, b in zip(t0, t1)]
        t, ts = t0.copy(), list(t0)
        for acc in pattern:
            rows = np.arange(3)
            nxt = batch.advance(t[rows], rows)
            for i, sc in enumerate(scalars):
                assert nxt[i] == sc.advance(ts[i])
                if acc:
                    ts[i] = sc.advance(ts[i])
                    sc.grow()
                else:
                    assert bool(batch.shrink(rows[i:i + 1])[0]) == sc.shrink()
            if acc:
                t = nxt
                batch.grow(rows)
            assert list(t) == ts


def test_batch_newton_rules():
    import numpy as np

    from symrmt.core import batch

    def halving(rows, x):  # x <- x/2 towards 0: the relative step shrinks only twofold (no stagnation)
        return -x / 2, x

    x0 = np.array([[1.0], [4.0]])
    _, _, step, ok = batch.newton(halving, x0, 1e-6, 40)
    assert ok.all() and (step <= 1e-6).all()
    _, _, _, ok = batch.newton(halving, x0, 1e-6, 3)  # out of steps: not ok, no error
    assert not ok.any()
    const = lambda rows, x: (np.full_like(x, 1e-12), x)  # noqa: E731 -- steps stuck at 1e-12 < 1e-11
    _, _, step, ok = batch.newton(const, x0, 1e-16, 10)
    assert ok.all() and (step > 1e-16).all()  # stagnation at the float floor
    _, _, _, ok = batch.newton(const, x0, 1e-16, 10, floor=1e-13)
    assert not ok.any()  # the same steps above the floor run out of steps
    _, _, _, ok = batch.newton(lambda rows, x: (np.full_like(x, np.nan), x), x0, 1e-3, 5)
    assert not ok.any()  # a non-finite step stops the row, unconverged
    # the corrector's contraction rule: a row whose step does not shrink contract-fold stops, unconverged
    _, _, _, ok = batch.newton(halving, x0, 1e-6, 40, contract=4)
    assert not ok.any()
    sqrt2 = lambda rows, x: (-(x * x - 2) / (2 * x), x)  # noqa: E731 -- Newton on x^2 = 2: quadratic
    x, _, _, ok = batch.newton(sqrt2, np.array([[1.0], [1.5]]), 1e-15, 20, contract=4)
    assert ok.all() and np.abs(x - np.sqrt(2)).max() <= 4e-16


def test_batch_follow_guards():
    import numpy as np

    from symrmt.core import batch

    def line(jump_at):  # h(t) = t exactly; a step longer than jump_at lands 10 away (another branch)
        last = {}

        def correct(rows, pred, nxt):
            prev = np.array([last.get(r, 0.0) for r in rows])
            hn = nxt[:, None] + 10.0 * (np.abs(nxt - prev) > jump_at)[:, None]
            for r, v, ok in zip(rows, nxt, np.abs(nxt - prev) <= jump_at):
                if ok:
                    last[r] = v
            return hn, np.ones_like(hn), np.zeros(len(rows)), np.ones(len(rows), dtype=bool)
        return correct

    z, o = np.zeros(2), np.ones(2)
    h, _, _, ok = batch.follow(line(0.2), np.zeros((2, 1)), np.ones((2, 1)), z, o, Linear(z, o))
    assert ok.all() and (h[:, 0] == 1).all()  # the first step (1/4) jumped, was refused and halved
    _, _, _, ok = batch.follow(line(-1.0), np.zeros((2, 1)), np.ones((2, 1)), z, o, Linear(z, o))
    assert not ok.any()  # every step jumps: stalled
    _, _, _, ok = batch.follow(line(0.2), np.zeros((2, 1)), np.ones((2, 1)), z, o, Linear(z, o), max_rounds=2)
    assert not ok.any()  # out of rounds

    calls = []

    def settle(rows, pred, nxt):  # settles at the predictor whatever it is; the slope 10 overshoots
        calls.append(len(rows))
        return pred, np.full_like(pred, 10.0), np.zeros(len(rows)), np.ones(len(rows), dtype=bool)

    def run(**kw):
        calls.clear()
        h, _, _, ok = batch.follow(settle, np.zeros((1, 1)), np.full((1, 1), 10.0), np.zeros(1), np.ones(1),
                                   Linear(np.zeros(1), np.ones(1)), **kw)
        return h, ok, len(calls)

    h, ok, guarded = run()
    assert ok.all() and h[0, 0] == 10.0
    h, ok, free = run(move=np.inf)  # without the bound near the previous point: the steps only double
    assert ok.all() and h[0, 0] == 10.0 and free < guarded
    assert not run(max_rounds=free)[1].any()  # the guard is what made the path need more rounds


def test_batch_paths_gap():
    import numpy as np

    from symrmt.core import batch
    from symrmt.core.continuation import paths_gap

    a, b = np.array([[1.0, 2.0], [3.0, -4.0]]), np.array([[1.0, 2.0 + 1e-3], [3.0, -4.0]])
    assert list(batch.paths_gap(a, b)) == [paths_gap(list(a[0]), list(b[0])), 0.0]


# ---------------------------------------------------------------- attention fixed point

def _fp():
    from symrmt.models.attention.solver import FixedPoint

    return FixedPoint(Fraction(1, 2), Fraction(1, 2), Fraction(1, 2), Fraction(0))


def test_attention_continuation_guards(monkeypatch):
    from symrmt.models.attention import solver

    # the float and the mpmath continuations driven alone (internal seams): start() falls back from the one to
    # the other, so a refusal of each shows only here
    g = _fp()._float_continue(0.1)  # the guards let the branch through
    assert 0 < g[0] <= 10
    for name in ("MOVE_FRACTION", "CORRECTION_FRACTION"):
        with monkeypatch.context() as mp:
            mp.setattr(solver, name, -1.0)  # every step now leaves the trust region
            with pytest.raises(ConvergenceError, match="stalled"):
                _fp()._float_continue(0.1)
            with pytest.raises(ConvergenceError, match="stalled"):
                _fp()._continue_to(Fraction(1, 10), 25)


def test_attention_polish_check_and_newton_message():
    fp = _fp()
    start = fp.start(Fraction(1, 10))
    g, _, _ = fp.solve(Fraction(1, 10), 30, start=start)
    bad = [x * 1.001 for x in start]  # Newton comes back to the same root, 1e-3 away from the start
    with pytest.raises(BranchError, match="moved"):
        fp.solve(Fraction(1, 10), 30, start=bad)
    with mpmath.workdps(30):
        with pytest.raises(NewtonError, match=r"at gamma=0\.1: residual max\|R\|"):
            fp.newton(bad, Fraction(1, 10), mpmath.mpf(10) ** -25, 1)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_attention_second_pass_and_stagnation(monkeypatch):
    from symrmt.models.attention import solver

    real = solver.follow

    def shifted(*a, **k):  # the checking pass (tighter trust region) ends 1e-3 away: another branch
        h, dh = real(*a, **k)
        return ([x * (1 + 1e-3) for x in h] if k.get("tighten", 1) > 1 else h), dh

    with monkeypatch.context() as mp:
        mp.setattr(solver, "follow", shifted)
        with pytest.raises(BranchError, match="different fixed points"):
            _fp()._float_continue(0.1)
        with pytest.raises(BranchError, match="different fixed points"):
            _fp().start(Fraction(1, 10))  # the float refusal goes to the mpmath continuation, which refuses too
    fp = _fp()
    start = fp.start(Fraction(1, 10))
    with mpmath.workdps(30):  # a tolerance beyond the working precision: the stagnation rule stops Newton
        _, _, step = fp.newton(start, Fraction(1, 10), mpmath.mpf(10) ** -60, 40)
        assert mpmath.mpf(10) ** -60 < step < mpmath.mpf(10) ** -25


def test_attention_escalation(monkeypatch):
    from symrmt.models.attention import theory

    monkeypatch.setattr(theory, "_agree", lambda x, y, digits: False)  # the internal seam: no two precisions agree
    with pytest.raises(PrecisionError, match="could not reach 15 digits"):
        theory.ridge_limit("1/2", ["0.1"], digits=15)


# ---------------------------------------------------------------- float64 batch

def test_batch_trust_region(monkeypatch):
    import numpy as np

    from symrmt.models.attention import batch

    gam, c = np.array([0.1, 1.0]), np.array([0.5, 2.0])
    assert batch.continuation(gam, c, 0.5, 0.5, 0.0)[3].all()
    for name in ("MOVE_FRACTION", "MAX_JUMP"):
        with monkeypatch.context() as mp:
            mp.setattr(batch, name, -1.0)
            assert not batch.continuation(gam, c, 0.5, 0.5, 0.0)[3].any()


def test_batch_newton_stagnation_and_steps_on_the_attention_system(monkeypatch):
    import numpy as np

    from symrmt.core import batch as core_batch
    from symrmt.models.attention import batch

    gam, c = np.array([0.1, 1.0, 30.0]), np.array([0.5, 2.0, 0.5])
    g, _, _, ok = batch.continuation(gam, c, 0.5, 0.5, 0.0)
    assert ok.all()
    p = batch.param_columns(gam, c, 0.5, 0.5, 0.0)
    assert not batch.newton(g * 1.01, p, maxsteps=1)[3].any()  # out of steps
    monkeypatch.setattr(batch, "NEWTON_TOL", 0.0)  # only the stagnation rule can stop a row now
    assert batch.newton(g * 1.01, p)[3].all()
    monkeypatch.setattr(core_batch, "stagnated", lambda *a: np.zeros(len(a[0]), dtype=bool))
    assert not batch.newton(g * 1.01, p)[3].all()


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_engine_batch_guards(monkeypatch):
    import numpy as np

    from symrmt.engine.solve import batch
    from symrmt.engine.solve.certify import compiled_system

    _, plan = _mp_plan()
    # the last point defeats the homotopy in s: it is continued in gamma (the batched shift continuation)
    cols = {"c": np.array([0.5, 2.0, 0.5]), "gamma": np.array([0.1, 1.0, 1e-12])}
    assert batch.solve_plan(plan, compiled_system, cols, 3)[2].all()
    for name in ("MOVE_FRACTION", "CORRECTION_FRACTION", "PATHS_AGREE", "RESIDUAL_TOL"):
        with monkeypatch.context() as mp:  # trust region, second pass, the polish's long-double check
            mp.setattr(batch, name, -1.0)
            assert not batch.solve_plan(plan, compiled_system, cols, 3)[2].any(), name
    with monkeypatch.context() as mp:
        mp.setattr(batch, "MAX_ROUNDS", 1)
        assert not batch.solve_plan(plan, compiled_system, cols, 3)[2].any()


# ---------------------------------------------------------------- trace engine and atom sums

def _mp_plan(expr="trace(inv(Z.T*Z/n + gamma*I(n)))", diag=False):
    from symrmt.engine import Model

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    if diag:
        m.diag("D", "p", [f"{50 + a}/100" for a in range(20)])
    return m, m.plan(expr)


@pytest.mark.parametrize("atoms", [False, True])
def test_trace_guards(monkeypatch, atoms):
    from symrmt.engine.solve import newton as trace_solver
    from symrmt.engine.solve.certify import compiled_system
    from symrmt.engine.solve.newton import TraceSolver

    expr = "trace(inv(Z.T*D*Z/n + gamma*I(n)))" if atoms else "trace(inv(Z.T*Z/n + gamma*I(n)))"
    _, plan = _mp_plan(expr, diag=atoms)
    values = {"c": Fraction(1, 2), "gamma": Fraction(1, 10)}

    def solver():
        return TraceSolver(compiled_system(plan.traces[0].system), values)

    # the atom sums (a law of 20 atoms) run through the same solver and guards
    assert type(solver().c).__name__ == ("AtomCompiled" if atoms else "CompiledSystem")
    assert solver().solve(30)[3] < 1e-25
    for name in ("MOVE_FRACTION", "CORRECTION_FRACTION"):
        with monkeypatch.context() as mp:
            mp.setattr(trace_solver, name, -1.0)  # no step fits the trust region
            with pytest.raises(ConvergenceError, match="stalled"):
                solver().start()
    real = TraceSolver._path
    with monkeypatch.context() as mp:  # the second pass ends elsewhere: refused
        mp.setattr(TraceSolver, "_path", lambda self, floats, fine=False, **kw:
                   [x * (1 + 1e-3 * fine) for x in real(self, floats, fine=fine, **kw)])
        with pytest.raises(BranchError, match="different fixed points"):
            solver().start()
    with monkeypatch.context() as mp:  # a polish that moves at all is refused when the bound is 0
        mp.setattr(trace_solver, "POLISH_MOVE", -1.0)
        with pytest.raises(BranchError, match="moved"):
            solver().solve(30)


@pytest.mark.parametrize("atoms", [False, True])
def test_trace_steps_stagnation_and_refinement(monkeypatch, atoms):
    import importlib

    from symrmt.core.linalg import lu_factor
    from symrmt.engine.solve import newton as ts

    core_newton = importlib.import_module("symrmt.core.newton")
    from symrmt.engine.solve.certify import compiled_system
    from symrmt.engine.solve.newton import TraceSolver

    expr = "trace(inv(Z.T*D*Z/n + gamma*I(n)))" if atoms else "trace(inv(Z.T*Z/n + gamma*I(n)))"
    _, plan = _mp_plan(expr, diag=atoms)
    c = compiled_system(plan.traces[0].system)
    s = TraceSolver(c, {"c": Fraction(1, 2), "gamma": Fraction(1, 10)})
    with monkeypatch.context() as mp:
        mp.setattr(ts, "MAX_STEPS", 2)
        with pytest.raises(ConvergenceError, match="more than 2 steps"):
            TraceSolver(c, {"c": Fraction(1, 2), "gamma": Fraction(1, 10)}).start()
    start = s.start()
    m = c.m
    # internal seams: the solver's refinement and Newton driven directly with a spoiled factorization, a tolerance
    # below the working precision and a one-step limit, which solve() never passes; each guard must fire
    with mpmath.workdps(40):
        pv = c.pv(s._pvals(), mpmath.mpf(1))
        h0 = [mpmath.mpf(x) for x in start]
        tol = mpmath.mpf(10) ** -35
        out = ts._refine(lambda x: c.res(x, pv), s._lu(h0, pv), h0, tol)
        assert out is not None and out[1] <= tol
        v = c.fjs(h0, pv)
        half = lu_factor([[2 * x for x in v[m + m * i:m + m * (i + 1)]] for i in range(m)])
        # a factorization of 2 J: each step only halves the error; the refinement hands over to Newton
        assert ts._refine(lambda x: c.res(x, pv), half, h0, tol) is None
        tiny = mpmath.mpf(10) ** -80  # beyond the working precision: only the stagnation rule (or an exact
        calls = []  # root, a step of exactly 0) stops Newton; one Jacobian evaluation a step: the count is what the
        # stagnation rule changes (Newton stops sooner), so it is the behaviour checked

        def counted(x, p):
            calls.append(1)
            return c.fjs(x, p)

        _, _, step = ts._newton(counted, h0, pv, m, tiny, 40, mpmath.sqrt, mpmath.eps)
        assert step < mpmath.mpf(10) ** -30
        if step > tiny:  # it was the stagnation rule: without it the same Newton runs on
            stopped, calls[:] = len(calls), []
            with monkeypatch.context() as mp:
                mp.setattr(core_newton, "stagnated", lambda *a, **k: False)
                try:
                    ts._newton(counted, h0, pv, m, tiny, 40, mpmath.sqrt, mpmath.eps)
                except NewtonError:
                    pass
            assert len(calls) > stopped
        with pytest.raises(NewtonError, match=r"residual max\|R\| = .*after 1 steps"):
            ts._newton(c.fjs, [x * (1 + mpmath.mpf(10) ** -3) for x in h0], pv, m, tol, 1, mpmath.sqrt, mpmath.eps)


def test_trace_escalation(monkeypatch):
    from symrmt.engine.solve import certify as trace_certify

    m, _ = _mp_plan()
    monkeypatch.setattr(trace_certify, "agree", lambda x, y, digits: False)
    with pytest.raises(PrecisionError, match="could not certify 20 digits with up to 110 working digits"):
        m.limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"c": "1/2", "gamma": "1/10"}, digits=20)


# ---------------------------------------------------------------- density paths

def test_density_path_trust_region(monkeypatch):
    from symrmt.engine.density import resolvent as density

    m, _ = _mp_plan()
    expr = "trace(inv(Z.T*Z/n - z*I(n)))"
    rs = density.ResolventSolver(m.plan(expr), [p for p in m.plan(expr).params if p.name == "z"][0],
                                 {"c": Fraction(1, 2)}, index=0, branch_sign=None)
    assert abs(rs.start(1 + 1j)[0]) > 0
    monkeypatch.setattr(density, "MOVE", -1.0)
    with pytest.raises(density.DensityError, match="stalled"):
        rs.start(1 + 1j)


def test_density_guards(monkeypatch):
    from symrmt.engine.density import resolvent as density

    m, _ = _mp_plan()
    plan = m.plan("trace(inv(Z.T*Z/n - z*I(n)))")
    rs = density.ResolventSolver(plan, [p for p in plan.params if p.name == "z"][0], {"c": Fraction(1, 2)},
                                 index=0, branch_sign=None)
    h = rs.start(1 + 1j)
    with monkeypatch.context() as mp:
        mp.setattr(density, "CORRECT", -1.0)  # the trust region near the predictor
        with pytest.raises(density.DensityError, match="stalled"):
            rs.start(1 + 1j)
    with pytest.raises(density.DensityError, match="more than 1 steps"):
        rs.move(h, 1 + 1j, 2 + 1j, max_steps=1)
    ds = density.DensitySolve(rs, 1.0)
    near, eta = ds.near_axis(1.0)  # inside the support [0.086, 2.91]
    assert abs(rs.tau(rs.finish(near, 1.0, eta)).imag) > 0.1
    with monkeypatch.context() as mp:
        mp.setattr(density, "FINISH", -1.0)  # the finish at the axis must stay near its predictor
        with pytest.raises(density.DensityError, match="left the path"):
            rs.finish(near, 1.0, eta)
    # the path's complex128 Newton driven directly (an internal seam): one step allowed, a tolerance below the float floor
    with pytest.raises(ZeroDivisionError, match="did not converge"):  # out of steps: a refused step
        rs._newton([x * 1.1 for x in h], 1 + 1j, steps=1)
    assert rs._newton(h, 1 + 1j, tol=1e-30) is not None  # below the float floor: stagnation stops it
    hp, tau = rs.polish(h, mpmath.mpc(1, 1), 30)  # refinement on the float inverse, then the two-precision
    hq, tau2 = rs.polish(hp, mpmath.mpc(1, 1), 40)  # solves agree
    assert abs(tau - tau2) < mpmath.mpf(10) ** -25 * abs(tau2)


def test_density_certification_escalates_once_through_the_core(monkeypatch):
    """A first try whose two solves disagree is redone at 10 more working digits (the core's escalation);
    two disagreeing tries raise the last one's PrecisionError.  Reference: Marchenko-Pastur at c = 1/2,
    x = 1, ``sqrt((b - x)(x - a))/(2 pi x)`` with ``a, b = (1 -+ 1/sqrt 2)^2``."""
    from symrmt.engine.density import resolvent as density

    m, _ = _mp_plan()
    plan = m.plan("trace(inv(Z.T*Z/n - z*I(n)))")
    rs = density.ResolventSolver(plan, [p for p in plan.params if p.name == "z"][0], {"c": Fraction(1, 2)},
                                 index=0, branch_sign=None)
    ds = density.DensitySolve(rs, 1.0)
    kind, h, _ = ds.float_point(1.0)
    assert kind == "ok"
    real = rs.polish

    def off(bad):
        def polish(h, z, dps, steps=None):
            hh, tau = real(h, z, dps, steps)
            return hh, (tau * (1 + mpmath.mpf(10) ** -18) if dps in bad else tau)  # off beyond digit 18
        return polish

    monkeypatch.setattr(rs, "polish", off({30}))
    rho, _ = ds.certified(Fraction(1), h, 20)  # one solve off beyond digit 18: the value below holds 20 digits
    with mpmath.workdps(40):
        a, b = (1 - 1 / mpmath.sqrt(2)) ** 2, (1 + 1 / mpmath.sqrt(2)) ** 2
        ref = mpmath.sqrt((b - 1) * (1 - a)) / (2 * mpmath.pi)
        assert abs(rho - ref) <= ref * mpmath.mpf(10) ** -20
    monkeypatch.setattr(rs, "polish", off({30, 50}))
    with pytest.raises(PrecisionError, match="solves at 40 and 50 digits disagree beyond digit 30"):
        ds.certified(Fraction(1), h, 20)


def test_trust_region_near_the_predictor_only_and_the_singular_tolerance():
    from symrmt.core import in_trust_region, solve_dense
    from symrmt.core.linalg import singular_tolerance

    assert in_trust_region(0.1, None, 1.0, 0.1) and not in_trust_region(0.11, None, 1.0, 0.1)
    assert not in_trust_region(float("nan"), None, 1.0, 0.1)
    assert not in_trust_region(0.01, 0.3, 1.0, 0.1, 0.25)  # with a move: both bounds
    with mpmath.workdps(15):
        near = [[mpmath.mpf(1), mpmath.mpf(1)], [mpmath.mpf(1), 1 + mpmath.mpf(10) ** -14]]  # last pivot 1e-14
        x = solve_dense([list(r) for r in near], [mpmath.mpf(2), mpmath.mpf(2)], mpmath.mpf(0))  # exact zeros only
        assert abs(x[0] - 2) < 1e-10 and abs(x[1]) < 1e-10
        with pytest.raises(ZeroDivisionError, match="numerically"):  # within ||M||_1 1e-13 of zero
            solve_dense([list(r) for r in near], [mpmath.mpf(2), mpmath.mpf(2)], mpmath.mpf(0), "numerically singular",
                        tol=singular_tolerance(near, mpmath.mpf(10) ** -13))
    assert singular_tolerance([[1, -3], [2, 1]], 0.5) == 2.0  # the largest column sum, 4, times eps


# ---------------------------------------------------------------- noise-only closed form

@pytest.mark.slow  # seconds per call: outside the fast tier
def test_noise_only_root_continuation_guards(monkeypatch):
    """At c = 1/2, gamma = 1/100 the Jensen bracket holds several roots, so the root is continued from a
    larger gamma (the core's follow); with no room in either trust region the continuation must refuse."""
    from symrmt.models.attention.closed_forms import noise_only

    real = noise_only.follow
    calls = []
    monkeypatch.setattr(noise_only, "follow", lambda *a, **k: (calls.append(k), real(*a, **k))[1])
    v = noise_only.stieltjes_closed_form_value("1/100", "1/2", 0, "3/4", 0, 20)
    assert calls and 0 < v <= 100  # m(-gamma) of a positive measure lies in (0, 1/gamma]
    # (the predictor bound is the same line of follow(); each refusal costs ~27 polynomial root solves)
    monkeypatch.setattr(noise_only, "follow", lambda *a, **k: real(*a, **{**k, "move": -1.0}))
    with pytest.raises(noise_only.ClosedFormError, match="stalled"):
        noise_only.stieltjes_closed_form_value("1/100", "1/2", 0, "3/4", 0, 20)
