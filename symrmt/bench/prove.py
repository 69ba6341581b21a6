"""The proved digits' entry in ``symrmt bench``: ``prove=True`` against the unproved call.

* The paper's model (tanh, ``c = 1/2``, the aligned geometry of the 200-point curve) at 30 digits,
  three values of ``gamma``: ``symrmt.limit(..., prove=True)`` against ``symrmt.limit(...)``, each in
  its own fresh process (warm disk cache), the first call (with the Hermite data: quadrature, or
  ``acb.integral`` on balls) and a later call at three other values.  Target: ratio <= 3.
* A small engine trace, the Marchenko-Pastur resolvent ``trace(inv(Z.T*Z/n + gamma*I(n)))`` at
  ``c = 1/2``, 15 digits, warm (the same process, after a first call of each), best of seven:
  ``Model.limit(..., prove=True)`` against the unproved call.  Target: ratio <= 2.
* A 98-unknown engine system, the resolvent of ``(Z^T Z/n)^7``: the proof of one 30-digit value
  (Krawczyk on the compiled system, the formula on balls) after its certified solve.  Target: <= 2 s.

Without python-flint the entry says so and measures nothing.
"""

from __future__ import annotations

import time
from fractions import Fraction

import symrmt
from symrmt.bench.curve import CURVE_C, CURVE_F, CURVE_GEOMETRY
from symrmt.engine import Model
from symrmt.engine.prove.trace import prove_trace

DIGITS = 30
FIRST_GAMMAS = ["1/100", "1/10", "1"]
WARM_GAMMAS = ["1/50", "1/5", "2"]
ENGINE_POWER = 7
ENGINE_AT = ({"c": "1/2", "gamma": "1"}, {"c": "1/2", "gamma": "1/2"})
TARGETS = {"prove_ratio": 3.0, "prove_engine_100_s": 2.0, "prove_small_ratio": 2.0}
SMALL_EXPR = "trace(inv(Z.T*Z/n + gamma*I(n)))"


def small_trace(repeats: int = 7) -> dict:
    """Best-of-``repeats`` seconds of the Marchenko-Pastur resolvent trace, unproved and proved, warm.

    Returns ``{"plain_s", "prove_s", "ratio"}``; raises :class:`~symrmt.errors.ProveUnavailable` without
    python-flint.  (No doctest: it times solves for seconds.)
    """
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    for g in ("1", "1/2"):  # warm: compile, code cache, the plan
        m.limit(SMALL_EXPR, at={"c": "1/2", "gamma": g}, digits=15)
        m.limit(SMALL_EXPR, at={"c": "1/2", "gamma": g}, digits=15, prove=True)
    out = {}
    for name, prove in (("plain_s", False), ("prove_s", True)):
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            m.limit(SMALL_EXPR, at={"c": "1/2", "gamma": "3/7"}, digits=15, prove=prove)
            best = min(best, time.perf_counter() - t)
        out[name] = best
    out["ratio"] = out["prove_s"] / out["plain_s"]
    return out
#: powers of the Wishart resolvent whose proof is also timed with the chain (8 and 32 unknowns)
CHAIN_POWERS = (2, 4)


def engine_expr(power: int = ENGINE_POWER) -> str:
    """The trace-engine expression the proof bench times: the resolvent of a product of ``power`` Wisharts.

    >>> engine_expr(2)
    'trace(inv(Z.T*Z*Z.T*Z/n**2 + gamma*I(n)))'
    """
    return "trace(inv(" + "*".join(["Z.T*Z"] * power) + f"/n**{power} + gamma*I(n)))"


def worker(spec: dict) -> dict:
    """Run in a subprocess: ``spec["mode"]`` is ``"plain"`` or ``"prove"`` (the model) or ``"engine"``.

    Takes the spec (``mode`` and, for ``"engine"``, ``power``); returns the mode's timings as a JSON-able dict.
    (No doctest: it is the body of a benchmark subprocess.)
    """
    mode = spec["mode"]
    if mode == "small":
        return small_trace()
    if mode == "engine":
        m = Model()
        m.dim("p", "c*n")
        m.gaussian("Z", "p", "n")
        expr = engine_expr(spec.get("power", ENGINE_POWER))
        plan = m.plan(expr)
        m.limit(expr, at=ENGINE_AT[0], digits=DIGITS)  # compile and warm up
        at = {k: Fraction(v) for k, v in ENGINE_AT[1].items()}
        t = time.perf_counter()
        r = m.limit(expr, at=at, digits=DIGITS)
        solve_s = time.perf_counter() - t
        t = time.perf_counter()
        b = prove_trace(plan, at, DIGITS, r.solvers)
        prove_s = time.perf_counter() - t
        rad = float(b.value.rad()) / abs(float(b.value.mid()))
        chains = []
        for power in CHAIN_POWERS:  # the branch by continuation (docs/prove.md): the proof with and without it
            e2 = engine_expr(power)
            p2 = m.plan(e2)
            r2 = m.limit(e2, at=at, digits=DIGITS)
            t = time.perf_counter()
            prove_trace(p2, at, DIGITS, r2.solvers, chain=False)
            plain_s = time.perf_counter() - t
            t = time.perf_counter()
            b2 = prove_trace(p2, at, DIGITS, r2.solvers, chain=True)
            chains.append({"unknowns": len(p2.traces[0].system.h), "prove_s": plain_s,
                           "chain_s": time.perf_counter() - t, "branch": b2.branch, "notes": b2.notes})
        return {"unknowns": len(plan.traces[0].system.h), "solve_s": solve_s, "prove_s": prove_s,
                "relative_radius": rad, "branch": b.branch, "chains": chains}
    geo = symrmt.Geometry(**CURVE_GEOMETRY)
    prove = mode == "prove"
    t = time.perf_counter()
    r = symrmt.limit(CURVE_F, CURVE_C, FIRST_GAMMAS, geo, digits=DIGITS, prove=prove)
    first = time.perf_counter() - t
    t = time.perf_counter()
    r2 = symrmt.limit(CURVE_F, CURVE_C, WARM_GAMMAS, geo, digits=DIGITS, prove=prove)
    warm = time.perf_counter() - t
    out = {"first_s": first, "warm_s": warm}
    if prove:
        out["relative_radius_max"] = max(float(b.rad()) / abs(float(b.mid()))
                                         for res in (r, r2) for key in ("attention", "ridge") for b in res.balls[key])
    return out


def measure(quick: bool, run_worker) -> dict:
    """Each mode in its own process (``run_worker(kind, spec, env, timeout)``); a ``skipped`` entry without
    python-flint.  Returns the plain and proved model points with their ratios, the engine's and the small
    trace's (``quick``: the cubed Wishart instead of the seventh power).

    >>> def run_worker(kind, spec, env, timeout):   # a proof twice as slow at its first point
    ...     return {"first_s": 2.0 if spec.get("mode") == "prove" else 1.0, "warm_s": 1.0}
    >>> r = measure(True, run_worker)
    >>> r["model"]["ratio_first"], r["model"]["ratio_warm"], r["expression"]
    (2.0, 1.0, 'trace(inv(Z.T*Z*Z.T*Z*Z.T*Z/n**3 + gamma*I(n)))')
    """
    try:
        import flint  # noqa: F401
    except ImportError:
        return {"skipped": "python-flint is not installed (pip install 'symrmt[prove]')"}
    plain = run_worker("prove", {"mode": "plain"}, {}, 900)
    proved = run_worker("prove", {"mode": "prove"}, {}, 900)
    # quick: the cubed Wishart (18 unknowns) instead of the seventh power (98)
    engine = run_worker("prove", {"mode": "engine", "power": 3 if quick else ENGINE_POWER}, {}, 900)
    small = run_worker("prove", {"mode": "small"}, {}, 900)
    return {"digits": DIGITS, "small": small, "expression": engine_expr(3 if quick else ENGINE_POWER), "model": {"plain": plain, "prove": proved,
                                        "ratio_first": proved["first_s"] / plain["first_s"],
                                        "ratio_warm": proved["warm_s"] / plain["warm_s"]},
            "engine": engine}


def verdicts(res: dict, row) -> None:
    """Add the proof rows (``prove=True`` over unproved, model and engine) to the verdict table through ``row``
    (``row(name, value, target, met, note)``); nothing when not measured or skipped.

    >>> pr = {"model": {"ratio_first": 1.5, "ratio_warm": 2.0}, "engine": {"unknowns": 18, "prove_s": 4.0}}
    >>> verdicts({"prove": pr}, lambda *r: print(r[1], r[3]))   # quick: the 18-unknown engine value is not judged
    1.5 True
    2.0 True
    4.0 None
    """
    pr = res.get("prove")
    if not pr or "skipped" in pr:
        return
    mdl, eng = pr["model"], pr["engine"]
    T = TARGETS["prove_ratio"]
    row("prove=True / unproved, paper's model, 30 digits, first call", mdl["ratio_first"], f"<= {T}",
        mdl["ratio_first"] <= T)
    row("prove=True / unproved, paper's model, 30 digits, later call", mdl["ratio_warm"], f"<= {T}",
        mdl["ratio_warm"] <= T)
    sm = pr.get("small")
    if sm:
        T = TARGETS["prove_small_ratio"]
        row("prove=True / unproved, Marchenko-Pastur resolvent trace, 15 digits, warm", sm["ratio"], f"<= {T:.0f}",
            sm["ratio"] <= T, f"{sm['prove_s'] * 1000:.1f} ms against {sm['plain_s'] * 1000:.1f} ms")
    T = TARGETS["prove_engine_100_s"]
    row(f"proof of a {eng['unknowns']}-unknown engine value, 30 digits", eng["prove_s"], f"<= {T} s",
        eng["prove_s"] <= T if eng["unknowns"] >= 98 else None, "" if eng["unknowns"] >= 98 else "quick: 18 unknowns")


def report(res: dict, md) -> str:
    """The proved digits' section of the Markdown report (``md(header, rows)`` makes a table); the reason when
    python-flint is missing, empty when not measured.

    >>> print(report({"prove": {"skipped": "python-flint is not installed"}}, None).strip())
    ### Proved digits
    <BLANKLINE>
    Not measured: python-flint is not installed.
    """
    pr = res.get("prove")
    if not pr:
        return ""
    if "skipped" in pr:
        return f"\n### Proved digits\n\nNot measured: {pr['skipped']}.\n"
    mdl, eng = pr["model"], pr["engine"]
    rows = [
        ["first call (3 gammas, with the Hermite data)", mdl["plain"]["first_s"], mdl["prove"]["first_s"],
         mdl["ratio_first"]],
        ["later call (3 other gammas)", mdl["plain"]["warm_s"], mdl["prove"]["warm_s"], mdl["ratio_warm"]],
    ]
    return (f"\n### Proved digits ({pr['digits']} digits, seconds)\n\n"
            + md(["paper's model: tanh, c = 1/2, aligned geometry", "unproved", "prove=True", "ratio"], rows)
            + f"\n\nLargest relative radius of a ball: {mdl['prove']['relative_radius_max']:.2g}. "
            f"Engine, `{pr['expression']}` ({eng['unknowns']} unknowns): certified solve {eng['solve_s']:.3f} s, "
            f"its proof {eng['prove_s']:.3f} s (relative radius {eng['relative_radius']:.2g}, branch "
            f"{eng['branch']}).\n"
            + "".join(f"With the chain of boxes (branch {c['branch']}), {c['unknowns']} unknowns: {c['chain_s']:.3f} s "
                      f"(without: {c['prove_s']:.3f} s).\n" for c in eng.get("chains", ())))
