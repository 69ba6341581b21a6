"""The trace engine's entry in ``symrmt bench``: a 6-block pencil at 30 digits.

The expression is the resolvent of a cubed Wishart matrix,
``trace(inv(Z.T*Z*Z.T*Z*Z.T*Z/n**3 + gamma*I(n)))`` with ``Z = gaussian(p, n)``, ``p = c n``,
whose reduced pencil has 6 blocks.  Measured, each in a fresh subprocess:

* first compile, cold: a fresh disk cache; the time of the first ``Model.limit`` at 30 digits
  (normalize, linearize, self-test, write the fixed point and its Jacobian in SymPy, compile,
  solve and certify), import excluded;
* first compile, warm disk cache: the same in a second process (the compiled code is read back);
* warm: later 30-digit points of the same model at other parameter values (each a fresh
  homotopy, Newton polish and two-precision certification), median over the points.

The value is also checked against its independent closed form: with ``r_k`` the three cube roots
of ``-gamma``, ``1/(x^3 + gamma) = sum_k 1/(3 r_k^2 (x - r_k))``, so the trace is
``sum_k m(r_k)/(3 r_k^2)`` with ``m`` the Marchenko-Pastur Stieltjes transform (ratio ``c``).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from fractions import Fraction

import mpmath
import numpy as np

from symrmt.bench.curve import CURVE_C, CURVE_F, CURVE_GEOMETRY, CURVE_POINTS, curve_gammas
from symrmt.bench.parts import measure as parts
from symrmt.derivations.engine_ridge_teacher import BIAS, model as teacher
from symrmt.engine import Model
from symrmt.models.attention import attention_model
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.models.attention.sweeps import sweep as attention_sweep
from symrmt.models.attention.theory import limit

EXPR = "trace(inv(Z.T*Z*Z.T*Z*Z.T*Z/n**3 + gamma*I(n)))"
DIGITS = 30
FIRST = {"c": "1/2", "gamma": "1"}
WARM = ({"c": "1/2", "gamma": "1/2"}, {"c": "1/2", "gamma": "1/5"}, {"c": "2", "gamma": "2"},
        {"c": "2", "gamma": "1/10"}, {"c": "1/3", "gamma": "3"})
TARGETS = {"engine_warm_s": 0.2, "engine_first_compile_s": 5.0}


def closed_form(c: str, gamma: str, dps: int = 50):
    """``sum_k m(r_k) / (3 r_k^2)`` over the cube roots ``r_k`` of ``-gamma`` (independent of the engine): the limit
    of :data:`EXPR`, ``tau((W^3 + gamma)^{-1})`` with ``W = Z^T Z/n``, by partial fractions of ``1/(x^3 + gamma)``
    and the Marchenko-Pastur resolvent ``m``, at ``dps`` digits (``c``, ``gamma``: decimal or fraction text).

    >>> mpmath.nstr(closed_form("1/2", "1", 20), 20)
    '0.79250787006294197323'
    """
    def q(text):
        a, _, b = text.partition("/")
        return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)

    with mpmath.workdps(dps + 10):
        cc, g = q(c), q(gamma)
        total = mpmath.mpc(0)
        for k in range(3):
            r = mpmath.cbrt(g) * mpmath.expjpi(mpmath.mpf(2 * k + 1) / 3)
            if abs(mpmath.im(r)) < mpmath.mpf(10) ** -(dps + 5):
                r = mpmath.mpf(mpmath.re(r))
            # m(z) = tau((Z^T Z/n - z)^{-1}): -z m^2 + (c - 1 - z) m - 1 = 0, the root with Im m Im z > 0
            # (for real z < 0: m > 0)
            a, b = -r, cc - 1 - r
            disc = mpmath.sqrt(b * b + 4 * a)
            r1, r2 = (-b + disc) / (2 * a), (-b - disc) / (2 * a)
            if mpmath.im(r) != 0:
                m = r1 if mpmath.im(r1) * mpmath.im(r) > 0 else r2
            else:
                m = r1 if mpmath.re(r1) > 0 else r2
            total += m / (3 * r * r)
        with mpmath.workdps(dps):
            return +mpmath.re(total)


def worker(spec: dict) -> dict:
    """Run in a subprocess (the caller sets the cache folder): first and warm 30-digit points."""
    t0 = time.perf_counter()

    import_s = time.perf_counter() - t0
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    t = time.perf_counter()
    first = m.limit(EXPR, at=FIRST, digits=DIGITS)
    first_s = time.perf_counter() - t
    blocks = [pen.size for pen in m.pencil(EXPR)]
    warm, agree = [], []
    for at in WARM[: spec.get("warm_points", len(WARM))]:
        t = time.perf_counter()
        r = m.limit(EXPR, at=at, digits=DIGITS)
        warm.append(time.perf_counter() - t)
        with mpmath.workdps(DIGITS + 20):
            ref = closed_form(at["c"], at["gamma"], DIGITS + 20)
            err = abs(r.value - ref) / abs(ref)
            agree.append(float(-mpmath.log10(err)) if err else float(DIGITS + 20))
    out = {"import_s": import_s, "first_s": first_s, "blocks": blocks, "warm_s": warm,
           "warm_median_s": statistics.median(warm), "agree_digits_min": min(agree),
           "first_value": mpmath.nstr(first.value, DIGITS)}
    out.update(quadratic_forms(spec.get("warm_points", len(WARM))))

    out["parts"] = parts()
    return out


#: the quadratic-form entries: a ridge bias with a teacher, and the paper's E_A as an engine expression
#: side by side with the hand-built solver (``symrmt limit``), at 30 digits
QF_POINTS = ({"c": "1/2", "gamma": "1/10"}, {"c": "1/2", "gamma": "1/5"}, {"c": "2", "gamma": "1/2"},
             {"c": "3/4", "gamma": "3/10"}, {"c": "1", "gamma": "1"})
QF_GRAM = {"mu.mu": "3/2", "wk1.wk1": "1", "wq1.wq1": "1", "wk1.wq1": "1/2", "mu.wk1": "1/2", "mu.wq1": "1/3"}
TARGETS.update({"qf_warm_s": 0.3, "e_a_ratio": 3.0, "parts_ratio": 1.25, "e_a_curve_ratio": 1.5})


def quadratic_forms(points: int) -> dict:
    """Warm 30-digit times: a quadratic form ``lam^2 beta^T R^2 beta``, and E_A (engine and hand-built)."""
    m = teacher()
    base = {"beta.beta": "5/2", "sigma": "1"}
    m.limit(BIAS, at={"phi": "1/2", "lam": "1/7", **base}, digits=DIGITS)   # compile
    qf = []
    for at in QF_POINTS[:points]:
        t = time.perf_counter()
        m.limit(BIAS, at={"phi": at["c"], "lam": at["gamma"], **base}, digits=DIGITS)
        qf.append(time.perf_counter() - t)
    am, ex = attention_model("tanh", 1)
    q = {k: Fraction(v) for k, v in QF_GRAM.items()}
    gram = [[q["mu.mu"], q["mu.wk1"], q["mu.wq1"]], [q["mu.wk1"], q["wk1.wk1"], q["wk1.wq1"]],
            [q["mu.wq1"], q["wk1.wq1"], q["wq1.wq1"]]]
    geo = LowRankGeometry(gram)
    am.limit(ex["E_A"], at={"c": "1/3", "gamma": "1/7", **QF_GRAM}, digits=DIGITS)   # compile
    limit("tanh", "1/3", ["1/7"], geo, "zero", DIGITS)
    eng, hand, agree = [], [], []
    for at in QF_POINTS[:points]:
        t = time.perf_counter()
        v = am.limit(ex["E_A"], at={**at, **QF_GRAM}, digits=DIGITS).value
        eng.append(time.perf_counter() - t)
        t = time.perf_counter()
        ref = limit("tanh", at["c"], [at["gamma"]], geo, "zero", DIGITS)["attention"][0]
        hand.append(time.perf_counter() - t)
        with mpmath.workdps(DIGITS + 20):
            err = abs(v - ref) / abs(ref)
            agree.append(float(-mpmath.log10(err)) if err else float(DIGITS + 20))
    out = {"qf_warm_median_s": statistics.median(qf), "e_a_engine_median_s": statistics.median(eng),
           "e_a_hand_median_s": statistics.median(hand), "e_a_agree_digits_min": min(agree)}
    out.update(e_a_curve(am, ex["E_A"], geo, 4 * points))
    out.update(batched_form(m, BIAS, base, points))
    out.update(e_a_grid(am, ex["E_A"], q, 20 if points <= 2 else E_A_GRID_SIDE))
    if points > 2:
        out.update(paper_curve(am, ex["E_A"]))
    return out


def e_a_curve(am, e_a: str, geo, points: int) -> dict:
    """CPU seconds per point of a 30-digit ``E_A`` curve over ``gamma = 2^-k`` (``k < points``, down to about
    ``1e-6`` at 20 points), c = 1/2: the engine's :meth:`~symrmt.engine.Model.curve` (each point continued from
    the previous one), the same points one by one, and the hand-built solver's curve; and their worst
    agreement in digits."""
    gammas = [str(Fraction(1, 2 ** k)) for k in range(points)]
    at = {"c": "1/2", **QF_GRAM}
    t = time.process_time()
    curve = am.curve(e_a, over={"gamma": gammas}, at=at, digits=DIGITS, progress=False)
    t_curve = (time.process_time() - t) / points
    t = time.process_time()
    for g in gammas:
        am.limit(e_a, at={**at, "gamma": g}, digits=DIGITS)
    t_points = (time.process_time() - t) / points
    t = time.process_time()
    ref = limit("tanh", "1/2", gammas, geo, "zero", DIGITS)["attention"]
    t_hand = (time.process_time() - t) / points
    with mpmath.workdps(DIGITS + 20):
        errs = [abs(r.value - h) / abs(h) for r, h in zip(curve, ref)]
        agree = min(float(-mpmath.log10(e)) if e else float(DIGITS + 20) for e in errs)
    return {"e_a_curve": {"points": points, "curve_cpu_s": t_curve, "points_cpu_s": t_points,
                          "hand_cpu_s": t_hand, "agree_digits_min": agree}}


def paper_curve(am, e_a: str) -> dict:
    """CPU seconds of the paper's 200-point curve at 30 digits (tanh, ``c = 1/2``, ``w_K = w_Q = mu`` of norm 1,
    ``gamma`` from 1e-3 to 1e2: :mod:`symrmt.bench.curve`) through the engine's ``Model.curve`` and through the
    hand-built solver (``symrmt.limit``'s solver, the aligned closed form), best of two warm runs; and their worst
    agreement in digits."""
    gammas = curve_gammas(CURVE_POINTS)
    at = {"c": CURVE_C, **{k: "1" for k in ("mu.mu", "wk1.wk1", "wq1.wq1", "wk1.wq1", "mu.wk1", "mu.wq1")}}
    geo = Geometry(**CURVE_GEOMETRY)
    am.limit(e_a, at={**at, "gamma": "3/10"}, digits=DIGITS)   # compile
    limit(CURVE_F, CURVE_C, ["3/10"], geo, "zero", DIGITS)
    eng, hand = [], []
    for _ in range(2):
        t = time.process_time()
        curve = am.curve(e_a, over={"gamma": gammas}, at=at, digits=DIGITS, progress=False)
        eng.append(time.process_time() - t)
        t = time.process_time()
        ref = limit(CURVE_F, CURVE_C, gammas, geo, "zero", DIGITS)["attention"]
        hand.append(time.process_time() - t)
    with mpmath.workdps(DIGITS + 20):
        agree = min(float(-mpmath.log10(abs(r.value - h) / abs(h))) if r.value != h else float(DIGITS + 20)
                    for r, h in zip(curve, ref))
    return {"paper_curve": {"points": len(gammas), "engine_cpu_s": min(eng), "hand_cpu_s": min(hand),
                            "agree_digits_min": agree}}


#: points of the batched quadratic-form sweep (a ridge bias with a teacher, in ``lam``)
QF_SWEEP_POINTS = 200
TARGETS["qf_batch_speedup"] = 10.0


def batched_form(m, expr, base: dict, points: int) -> dict:
    """Warm time per point of a quadratic form on the float64 batch (``Model.sweep`` of ``QF_SWEEP_POINTS``
    values of ``lam``, :mod:`symrmt.engine.solve.batch_qf`) and on the certified path (``Model.limit`` at 15 digits, the
    sweep's fallback, median over ``points`` values)."""
    lams = np.geomspace(0.02, 50, QF_SWEEP_POINTS)
    at = {"phi": "1/2", **base}
    m.sweep(expr, grid={"lam": lams[:2]}, at=at)  # compile
    t = time.perf_counter()
    r = m.sweep(expr, grid={"lam": lams}, at=at)
    batch = (time.perf_counter() - t) / lams.size
    cert = []
    for lam in lams[::QF_SWEEP_POINTS // max(1, points)][:points]:
        t = time.perf_counter()
        m.limit(expr, at={"lam": float(lam), **at}, digits=15)
        cert.append(time.perf_counter() - t)
    return {"qf_batch_s_per_point": batch, "qf_certified_s_per_point": statistics.median(cert),
            "qf_batch_fallbacks": int(r.fallback.sum())}


#: the side of the E_A grid over (c, gamma) on the float64 batch (continued along its axes) and the hand-built fast grid
E_A_GRID_SIDE = 200
TARGETS["e_a_grid_ratio"] = 1.5


def e_a_grid(am, e_a: str, gram: dict, side: int) -> dict:
    """CPU seconds per point of ``E_A`` (tanh, rank 1, the Gram matrix ``gram``) on a ``side x side`` grid of ``c`` in
    ``[0.1, 4]`` and ``gamma`` in ``[0.01, 10]`` (both log-spaced): the engine's ``Model.sweep`` (the float64 batch,
    :mod:`symrmt.engine.solve.batch_axis`) and the hand-built fast grid (``symrmt.sweep(..., fast=True)``), each the
    best of two warm runs; their worst relative gap, the engine's largest error estimate and its fallbacks."""

    cs, gs = np.geomspace(0.1, 4.0, side), np.geomspace(0.01, 10.0, side)
    geo = Geometry(snr=gram["mu.mu"], wk2=gram["wk1.wk1"], wq2=gram["wq1.wq1"], wkwq=gram["wk1.wq1"],
                   muwk=gram["mu.wk1"], muwq=gram["mu.wq1"])
    at = {k: str(v) for k, v in gram.items()}
    am.sweep(e_a, grid={"c": cs[:6], "gamma": gs[:6]}, at=at)  # compile
    attention_sweep("tanh", grid={"c": list(cs[:3]), "gamma": list(gs[:3])}, geometry=geo, fast=True, certify=0,
                    progress=False)
    eng, hand = [], []
    for _ in range(2):
        t = time.process_time()
        r = am.sweep(e_a, grid={"c": cs, "gamma": gs}, at=at)
        eng.append(time.process_time() - t)
        t = time.process_time()
        fast = attention_sweep("tanh", grid={"c": list(cs), "gamma": list(gs)}, geometry=geo, fast=True, certify=0,
                               progress=False)
        hand.append(time.process_time() - t)
    ref = np.asarray(fast.attention, dtype=float).reshape(r.values.shape)
    gap = float(np.max(np.abs(r.values - ref) / np.abs(ref)))
    return {"e_a_grid": {"points": side * side, "engine_cpu_s": min(eng) / side ** 2,
                         "hand_cpu_s": min(hand) / side ** 2, "gap_max": gap,
                         "estimate_max": float(np.max(r.error_estimate)), "fallbacks": int(r.fallback.sum())}}


def measure(quick: bool, run_worker) -> dict:
    """Cold (fresh cache folder) and warm-cache processes; ``run_worker(kind, spec, env, timeout)`` runs one
    (``quick``: two warm points).  Returns ``{"expression", "digits", "cold_cache", "warm_cache"}``.

    >>> r = measure(True, lambda kind, spec, env, timeout: (kind, spec["warm_points"], sorted(env)))
    >>> r["cold_cache"], r["digits"]
    (('engine', 2, ['SYMRMT_CACHE_DIR', 'SYMRMT_NO_CACHE']), 30)
    """
    spec = {"warm_points": 2 if quick else len(WARM)}
    with tempfile.TemporaryDirectory(prefix="symrmt-bench-engine-") as fresh:
        cold = run_worker("engine", spec, {"SYMRMT_CACHE_DIR": fresh, "SYMRMT_NO_CACHE": "0"}, 900)
        warm_cache = run_worker("engine", spec, {"SYMRMT_CACHE_DIR": fresh, "SYMRMT_NO_CACHE": "0"}, 900)
    return {"expression": EXPR, "digits": DIGITS, "cold_cache": cold, "warm_cache": warm_cache}


def verdicts(res: dict, row) -> None:
    """Add the engine's rows to the targets table (``row(name, value, target, met, note)``); the quadratic-form,
    ``E_A``, curve, batch and parts rows only where they were measured.

    >>> cold = {"blocks": [2, 2], "warm_median_s": 0.05, "first_s": 3.0, "agree_digits_min": 31.2}
    >>> verdicts({"engine": {"cold_cache": cold, "warm_cache": {"first_s": 0.4}}}, lambda *r: print(r[1], r[2], r[3]))
    0.05 <= 0.2 s True
    3.0 <= 5.0 s True
    0.4  None
    31.2 >= 30 True
    """
    eng = res.get("engine")
    if not eng:
        return
    cold, wc = eng["cold_cache"], eng["warm_cache"]
    b = "+".join(map(str, cold["blocks"]))
    row(f"engine: {b}-block pencil, one 30-digit point after the first compile (median)", cold["warm_median_s"],
        f"<= {TARGETS['engine_warm_s']} s", cold["warm_median_s"] <= TARGETS["engine_warm_s"])
    row("engine: first compile and first 30-digit point, fresh disk cache", cold["first_s"],
        f"<= {TARGETS['engine_first_compile_s']} s", cold["first_s"] <= TARGETS["engine_first_compile_s"])
    row("  the same, warm disk cache (second process)", wc["first_s"], "", None)
    row("engine: 30-digit values against the closed form (worst, digits)", cold["agree_digits_min"], ">= 30",
        cold["agree_digits_min"] >= 30)
    if "qf_warm_median_s" in cold:
        row("engine: a quadratic form lam^2 beta^T R^2 beta at 30 digits, warm (median)", cold["qf_warm_median_s"],
            f"<= {TARGETS['qf_warm_s']} s", cold["qf_warm_median_s"] <= TARGETS["qf_warm_s"])
        ratio = cold["e_a_engine_median_s"] / cold["e_a_hand_median_s"]
        row(f"engine: E_A (tanh, rank 1) as an expression / hand-built solver, 30 digits warm "
            f"({cold['e_a_engine_median_s']:.3f} s / {cold['e_a_hand_median_s']:.3f} s)", ratio,
            f"<= {TARGETS['e_a_ratio']}", ratio <= TARGETS["e_a_ratio"])
        row("  the two E_A values agree (worst, digits)", cold["e_a_agree_digits_min"], ">= 30",
            cold["e_a_agree_digits_min"] >= 30)
    if "e_a_curve" in cold:
        cv = cold["e_a_curve"]
        ratio = cv["curve_cpu_s"] / cv["hand_cpu_s"]
        row(f"engine: a {cv['points']}-point E_A curve (gamma = 2^-k, 30 digits), Model.curve / the hand-built "
            f"solver's curve, CPU per point ({1e3 * cv['curve_cpu_s']:.1f} ms / {1e3 * cv['hand_cpu_s']:.1f} ms)",
            ratio, f"<= {TARGETS['e_a_curve_ratio']}", ratio <= TARGETS["e_a_curve_ratio"])
        row(f"  the same points one by one / Model.curve ({1e3 * cv['points_cpu_s']:.1f} ms per point)",
            cv["points_cpu_s"] / cv["curve_cpu_s"], "", None)
        row("  the engine's curve and the hand-built one agree (worst, digits)", cv["agree_digits_min"], ">= 30",
            cv["agree_digits_min"] >= 30)
    if "paper_curve" in cold:
        pc = cold["paper_curve"]
        ratio = pc["engine_cpu_s"] / pc["hand_cpu_s"]
        row(f"engine: the paper's {pc['points']}-point E_A curve at 30 digits, Model.curve / the hand-built solver "
            f"(aligned closed form), CPU ({pc['engine_cpu_s']:.2f} s / {pc['hand_cpu_s']:.2f} s)", ratio,
            f"<= {TARGETS['e_a_curve_ratio']}", ratio <= TARGETS["e_a_curve_ratio"])
        row("  the two curves agree (worst, digits)", pc["agree_digits_min"], ">= 30", pc["agree_digits_min"] >= 30)
    if "qf_batch_s_per_point" in cold:
        speedup = cold["qf_certified_s_per_point"] / cold["qf_batch_s_per_point"]
        row(f"engine: a quadratic form on the float64 batch ({QF_SWEEP_POINTS} points, "
            f"{cold['qf_batch_fallbacks']} fallbacks), certified path / batch per point "
            f"({1e3 * cold['qf_certified_s_per_point']:.1f} ms / {1e3 * cold['qf_batch_s_per_point']:.2f} ms)", speedup,
            f">= {TARGETS['qf_batch_speedup']}", speedup >= TARGETS["qf_batch_speedup"] and
            cold["qf_batch_fallbacks"] == 0)
    if "e_a_grid" in cold:
        eg = cold["e_a_grid"]
        ratio = eg["engine_cpu_s"] / eg["hand_cpu_s"]
        row(f"engine: E_A (tanh, rank 1) on a {eg['points']}-point c x gamma grid, Model.sweep / the hand-built fast "
            f"grid, CPU per point ({1e6 * eg['engine_cpu_s']:.0f} us / {1e6 * eg['hand_cpu_s']:.0f} us, "
            f"{eg['fallbacks']} fallbacks)", ratio, f"<= {TARGETS['e_a_grid_ratio']}", ratio <= TARGETS["e_a_grid_ratio"])
        row("  the two grids agree: worst relative gap (the engine's largest error estimate "
            f"{eg['estimate_max']:.1e})", eg["gap_max"], "<= 1e-12", eg["gap_max"] <= 1e-12)
    if "parts" in cold:
        p = cold["parts"]
        row(f"engine: a sum of two independent forms / the sum of their times, a later 30-digit point "
            f"({p['sum']['later_s']:.2f} s / {p['A']['later_s']:.2f} s + {p['A2']['later_s']:.2f} s)",
            p["ratio_later"], f"<= {TARGETS['parts_ratio']}", p["ratio_later"] <= TARGETS["parts_ratio"])


def report(res: dict, md) -> str:
    """The engine's section of the Markdown report (``md(header, rows)`` makes a table); empty when not measured.

    >>> run = {"import_s": 0.5, "first_s": 3.0, "warm_median_s": 0.05, "warm_s": [0.05, 0.06], "blocks": [2, 2],
    ...        "agree_digits_min": 31.2}
    >>> eng = {"expression": EXPR, "digits": 30, "cold_cache": run, "warm_cache": run}
    >>> report({"engine": eng}, lambda header, rows: f"{len(rows)} rows").splitlines()[-1]
    'Worst agreement with the closed form over the later points: 31.2 digits.'
    """
    eng = res.get("engine")
    if not eng:
        return ""
    cold, wc = eng["cold_cache"], eng["warm_cache"]
    rows = [
        ["import symrmt.engine", cold["import_s"], wc["import_s"]],
        ["first 30-digit point (derive, self-test, compile, solve, certify)", cold["first_s"], wc["first_s"]],
        ["later 30-digit points, median", cold["warm_median_s"], wc["warm_median_s"]],
        ["later 30-digit points, each", ", ".join(f"{t:.3f}" for t in cold["warm_s"]),
         ", ".join(f"{t:.3f}" for t in wc["warm_s"])],
    ]
    return (f"\n### Trace engine: `{eng['expression']}` ({'+'.join(map(str, cold['blocks']))} blocks, "
            f"{eng['digits']} digits, seconds)\n\n" + md(["step", "fresh disk cache", "warm disk cache"], rows)
            + f"\n\nWorst agreement with the closed form over the later points: {cold['agree_digits_min']:.1f} digits.\n")
