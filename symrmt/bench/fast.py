"""``symrmt bench``, fast-path section: the float64 grid solver against the mpmath solver, same run.

* end to end -- a fresh Python process that imports symrmt, solves a 200 x 200 grid
  with :func:`symrmt.models.attention.fast.solve_grid` and exits: (a) tanh, ``W = I``, ``gamma = 1``
  over ``(c, ||mu||^2)``; (b) the aligned-weights grid at ``c = 1/2``,
  ``w_K = w_Q = w`` (``||w||^2 = 4``) at angle ``theta`` to ``mu``, over
  ``(cos theta, ||mu||^2)``.  The mpmath solver is timed in the same run on a
  sample of the same grid (:func:`symrmt.models.attention.theory.attention_limit` and
  :func:`~symrmt.models.attention.theory.ridge_limit` per point, 15 digits) and its per-point time is
  scaled to the grid;
* accuracy -- random points of both grids with ``|c - 1| >= 0.02`` certified at 30
  digits (``certify``); near ``c = 1`` and at small ``gamma``: the fraction of points
  that fall back and the largest gap of the float values that did not;
* the floor -- ``symrmt.sweep("tanh", fast=True, certify=0)`` over ``c x snr`` (``gamma = 1``) and over
  ``c x gamma`` (``snr = 1``), in this process after a warm-up, as CPU time per point against the NumPy
  cost of the package's own ridge closed form ``E_RR(gamma, c, snr)`` (built on the Marchenko--Pastur
  ``m(-gamma)``, ``m'(-gamma)``) at the same points, measured in the same run; the ratio and its target
  are printed, with its parts against the same reference: at the ``c x snr`` points the continuation of the
  grid's 200 distinct fixed points from the large-``gamma`` start (a cost per batched call, not per point) and the
  values at every point (``varphi`` from its per-fixed-point coefficients and ``E_RR`` from the root, in float64
  and long double); at the ``c x gamma`` points one float64 evaluation of the fixed point's residual and
  Jacobian (the arithmetic below any Newton step), one batched Newton step (the arithmetic such a grid repeats
  two to three times a point), the long-double check of the solved fixed points, and the aligned ``varphi``
  closed form in float64 and long double;
* the phase-diagram figure in full mode (200 x 200 per panel), a whole process
  (not in ``--quick``, whose sizes are a few points each).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time

import numpy as np

import symrmt
from symrmt import figures
from symrmt.models.attention import batch as B
from symrmt.models.attention.batch import ridge
from symrmt.models.attention.fast import solve_grid
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.hermite_data import hermite_at_least
from symrmt.models.attention.theory import attention_limit, ridge_limit

TARGETS = {"grid_end_to_end_s": 5.0, "grid_gap": 1e-10, "figure_full_s": 30.0, "floor_ratio": 40.0}


def _reference_s(gamma, c, snr) -> float:
    """Best CPU seconds of the package's ridge closed form ``E_RR(gamma, c, snr)`` (the Marchenko-Pastur
    ``m(-gamma)`` and ``m'(-gamma)`` in their stable form, printed for NumPy from the same SymPy expression as
    the mpmath code: :func:`symrmt.models.attention.batch.ridge`) at the points, 7 x 20 evaluations."""
    ridge(gamma, c, snr)  # the compiled code loaded
    best = math.inf
    for _ in range(7):
        t = time.process_time()
        for _ in range(20):
            ridge(gamma, c, snr)
        best = min(best, (time.process_time() - t) / 20)
    return best


def floor(k: int, repeats: int = 3) -> dict:
    """CPU seconds per point of ``symrmt.sweep(..., fast=True, certify=0)`` on ``k x k`` grids over
    ``c x snr`` and ``c x gamma`` (best of ``repeats``), against the package's ridge closed form at the same
    points (best of many, :func:`_reference_s`), in this process after a warm-up.

    Takes the grid side ``k`` and the repeats; returns ``{"grid", "c_snr", "c_gamma"}`` with the CPU seconds, the
    reference and their ratio per grid.  (No doctest: it times sweeps for seconds.)
    """
    cs = np.exp(np.linspace(math.log(1 / 16), math.log(4), k))
    grids = {"c_snr": {"c": cs, "snr": np.linspace(0, 8, k), "gamma": 1},
             "c_gamma": {"c": cs, "gamma": np.exp(np.linspace(math.log(0.05), math.log(20), k)), "snr": [1]}}
    symrmt.sweep("tanh", grid={"c": [0.5, 2.0], "gamma": [0.5, 1.0], "snr": [1]}, fast=True, certify=0)  # warm
    out = {"grid": k}
    for name, grid in grids.items():
        second = "snr" if name == "c_snr" else "gamma"
        C, X = np.meshgrid(cs, np.asarray(grid[second], dtype=float), indexing="ij")
        G = X if second == "gamma" else np.ones_like(C)
        R = X if second == "snr" else np.ones_like(C)
        C, G, R = C.ravel(), G.ravel(), R.ravel()
        ref = _reference_s(G, C, R)
        best, fallbacks = math.inf, None
        for _ in range(repeats):
            t = time.process_time()
            res = symrmt.sweep("tanh", grid=grid, fast=True, certify=0)
            best = min(best, time.process_time() - t)
            fallbacks = int(sum(res.fallback))
        ref = min(ref, _reference_s(G, C, R))  # before and after: the machine's quietest moment
        n = C.size
        out[name] = {"points": n, "cpu_s": best, "us_per_point": 1e6 * best / n, "reference_s": ref,
                     "reference_us_per_point": 1e6 * ref / n, "ratio": best / ref if ref > 0 else math.inf,
                     "fallbacks": fallbacks}
        parts = _snr_components_s(C, R, repeats) if name == "c_snr" else _components_s(G, C, repeats)
        for key, sec in parts.items():  # what the parts cost at the same points, same run
            out[name].update({f"{key}_us_per_point": 1e6 * sec / n, f"{key}_ratio": sec / ref if ref > 0 else math.inf})
    return out


def _best_s(parts: dict, repeats: int) -> dict:
    """Best CPU seconds of each callable of ``parts`` over ``repeats`` calls."""
    best = {}
    for key, part in parts.items():
        b = math.inf
        for _ in range(repeats):
            t = time.process_time()
            part()
            b = min(b, time.process_time() - t)
        best[key] = b
    return best


def _components_s(gamma, c, repeats: int) -> dict:
    """Best CPU seconds, at the points, of four parts of a ``c x gamma`` fast grid (tanh, noise-only fixed
    point): one float64 evaluation of the compiled ``F``, ``dF/dG``, ``dF/dgamma``
    (:func:`symrmt.models.attention.batch.fjg`), the arithmetic below any Newton step; one batched Newton step
    (that evaluation and the stacked least squares, :func:`symrmt.models.attention.batch.newton` with one
    step), the arithmetic each point repeats a few times; the long-double check of the solved fixed points
    (:func:`symrmt.models.attention.batch.refine`); and the aligned closed form of ``varphi`` in float64 and in
    long double (:func:`symrmt.models.attention.batch.phi_closed`, ``snr = 1``)."""
    a1, nu, d = (float(x) for x in hermite_at_least("tanh", "zero", 20))
    zero = np.zeros_like(c)
    start = np.column_stack([1 / gamma, zero, zero, -c, zero + 1, zero])  # the large-gamma start's shape
    p = B.param_columns(gamma, c, a1, nu, d)
    g, dg, _, _ = B.continuation_tree(gamma, c, a1, nu, d)
    gl, dgl, _ = B.refine(g, dg, gamma, c, a1, nu, d)
    one = np.ones_like(c)
    return _best_s({"fjg": lambda: B.fjg(start, p), "newton_step": lambda: B.newton(start, p, maxsteps=1),
                    "check": lambda: B.refine(g, dg, gamma, c, a1, nu, d),
                    "phi": lambda: (B.phi_closed("aligned", g, dg, a1, c, one, zero),
                                    B.phi_closed("aligned", gl, dgl, a1, c, one, zero))}, repeats)


def _snr_components_s(c, snr, repeats: int) -> dict:
    """Best CPU seconds, at the points of a ``c x snr`` fast grid (tanh, ``gamma = 1``, ``W = I``), of its two
    parts: the noise-only fixed points of its distinct ``c`` by the continuation from the large-``gamma`` start
    (:func:`symrmt.models.attention.batch.continuation_tree`: batched calls on as many rows as distinct ``c``,
    whose cost is the calls' and not the grid's points), and the values at every point: ``varphi`` from the
    coefficients of its rational form in ``||mu||^2`` (:func:`symrmt.models.attention.batch.aligned_coefficients`
    once per fixed point, :func:`~symrmt.models.attention.batch.phi_from_coefficients` per point) and ``E_RR``
    from the Marchenko-Pastur root, each in float64 and in long double (the solve's own gathers included)."""
    a1, nu, d = (float(x) for x in hermite_at_least("tanh", "zero", 20))
    cu, per = np.unique(c, return_inverse=True)
    gu = np.ones_like(cu)
    one, zero = np.ones_like(c), np.zeros_like(cu)
    g, dg, _, _ = B.continuation_tree(gu, cu, a1, nu, d)
    gl, dgl, _ = B.refine(g, dg, gu, cu, a1, nu, d)

    def values():
        for gg, dgg, dt in ((g, dg, float), (gl, dgl, B.LD)):
            B.phi_from_coefficients(*B.aligned_coefficients(gg, dgg, a1, cu, zero), snr, per)
            B.ridge_from_root(B.ridge_parts(gu, cu, dt)[per], one, c, snr, dt)

    return _best_s({"fixed_points": lambda: B.continuation_tree(gu, cu, a1, nu, d), "values": values}, repeats)


def grid_points(kind: str, k: int):
    """The ``k x k`` grid ``kind`` ("c_snr" or "cos_snr") as the dict :func:`solve_grid` takes: ``c`` log-spaced
    from 1/16 to 4 (or ``1/2`` with the cosine of the signal and the weights from 0 to 1), ``snr`` from 0 to 8.

    >>> g = grid_points("c_snr", 3)
    >>> sorted(g), g["c"].shape, g["snr"][:, 0].tolist(), g["c"][0].round(6).tolist()
    (['c', 'gamma', 'snr'], (3, 3), [0.0, 4.0, 8.0], [0.0625, 0.5, 4.0])
    """
    s = np.linspace(0, 8, k)
    if kind == "c_snr":
        c = np.exp(np.linspace(math.log(1 / 16), math.log(4), k))
        S, C = np.meshgrid(s, c, indexing="ij")
        return {"c": C, "gamma": np.ones_like(S), "snr": S}
    S, COS = np.meshgrid(s, np.linspace(0, 1, k), indexing="ij")
    one = np.ones_like(S)
    m = np.sqrt(4 * S) * COS
    return {"c": one / 2, "gamma": one, "snr": S, "wk2": 4 * one, "wq2": 4 * one, "wkwq": 4 * one,
            "muwk": m, "muwq": m}


def _grid_main(kind: str, k: int) -> None:
    """Process body of the end-to-end measurement (prints one JSON line)."""
    t0 = time.perf_counter()

    r = solve_grid("tanh", grid_points(kind, k))
    # process CPU time since start-up (interpreter and imports included): less sensitive to a loaded machine
    print(json.dumps({"s": time.perf_counter() - t0, "cpu_s": time.process_time(), "timings": r.timings}))


def _figure_main(full: bool) -> None:
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        figures.phase_diagram(out, full=full, progress=False, grid=None if full else 11, certify=None if full else 1)
        print(json.dumps({"s": time.perf_counter() - t, "cpu_s": time.process_time()}))


def _sub(run_sub, code: str, env: dict) -> tuple[float, dict]:
    wall, stdout = run_sub(["-c", code], env, 900)
    return wall, json.loads(stdout.strip().splitlines()[-1])


def _mpmath_per_point(kind: str, k: int, sample: int) -> float:
    """Seconds per grid point of the mpmath solver (15 digits, both limits), on ``sample`` points."""
    pts = grid_points(kind, k)
    rng = np.random.default_rng(5)
    idx = rng.choice(k * k, size=sample, replace=False)
    flat = {key: np.ravel(v) for key, v in pts.items()}
    attention_limit("tanh", 0.5, [1], Geometry(snr=1))  # Hermite data and compiled code: not timed
    t = time.perf_counter()
    for i in idx:
        geo = {key: float(flat[key][i]) for key in ("snr", "wk2", "wq2", "wkwq", "muwk", "muwq") if key in flat}
        try:
            g = Geometry(**geo)
        except ValueError:  # rounding at cos theta = 1: skip the point (the timing is per point)
            continue
        attention_limit("tanh", float(flat["c"][i]), [1], g, digits=15)
        ridge_limit(float(flat["c"][i]), [1], g.snr, digits=15)
    return (time.perf_counter() - t) / sample


def _accuracy(kind: str, k: int, sample: int) -> dict:
    """Certified gaps at ``sample`` random grid points with ``|c - 1| >= 0.02``."""
    pts = grid_points(kind, k)
    flat = {key: np.ravel(v) for key, v in pts.items()}
    keep = np.flatnonzero(np.abs(flat["c"] - 1) >= 0.02)
    idx = np.random.default_rng(9).choice(keep, size=min(sample, keep.size), replace=False)
    r = solve_grid("tanh", {key: v[idx] for key, v in flat.items()}, certify=idx.size, seed=0)
    return {"points": int(idx.size), "max_gap": r.certified_gap, "fallbacks": r.timings["fallbacks"]}


def _hard(sample: int, quick: bool = False) -> list[dict]:
    """Near ``c = 1`` and small ``gamma`` (tanh, general geometry): fallbacks and float gaps."""
    cases = [("c = 1 +- 1e-2", 1e-2, 1e-2), ("c = 1 +- 1e-4", 1e-4, 1e-2), ("c = 1 +- 1e-6", 1e-6, 1e-3),
             ("c in [1/16, 4], gamma = 1e-4", None, 1e-4), ("c in [1/16, 4], gamma = 1e-6", None, 1e-6),
             ("c in [1/16, 4], gamma = 1e-8", None, 1e-8)]
    if quick:
        cases = [cases[1]]
    rows = []
    rng = np.random.default_rng(3)
    for name, dc, gam in cases:
        if dc is None:
            c = np.exp(rng.uniform(math.log(1 / 16), math.log(4), sample))
        else:
            c = 1 + dc * rng.choice([-1, 1], sample)
        pts = {"c": c, "gamma": np.full(sample, gam), "snr": np.full(sample, 2.0), "wk2": np.ones(sample),
               "wq2": np.ones(sample), "wkwq": np.full(sample, 0.5), "muwk": np.full(sample, 0.7),
               "muwq": np.full(sample, -0.3)}
        t = time.perf_counter()
        r = solve_grid("tanh", pts, certify=sample, seed=1)
        floats = [g for i, g in r.certified if not r.fallback.ravel()[i]]
        rows.append({"case": name, "points": sample, "fallbacks": int(r.fallback.sum()),
                     "max_gap_float": max(floats) if floats else None, "max_gap_all": r.certified_gap,
                     "max_estimate": float(np.max(r.error_estimate)), "s": time.perf_counter() - t})
    return rows


def run(quick: bool, env: dict, run_sub, say) -> dict:
    """The fast-path measurements (see the module docstring); ``run_sub`` is bench's subprocess runner.

    Takes ``quick``, the subprocesses' environment ``env``, the runner ``run_sub`` and the progress callback
    ``say``; returns the section's measurements (a JSON-able dict).  (No doctest: it runs for minutes.)
    """
    k = 30 if quick else 200
    out = {"grid": k}
    for kind in ("c_snr", "cos_snr"):
        if quick:  # in this process (quick checks that the measurements run; its times are not the targets')
            t = time.perf_counter()
            r = solve_grid("tanh", grid_points(kind, k))
            wall = time.perf_counter() - t
            inner = {"s": wall, "cpu_s": None, "timings": r.timings}
        else:
            say(f"fast: {k}x{k} {kind} grid end to end")
            _sub(run_sub, f"from symrmt.bench.fast import _grid_main; _grid_main({kind!r}, 8)", env)  # fill cache
            wall, inner = _sub(run_sub, f"from symrmt.bench.fast import _grid_main; _grid_main({kind!r}, {k})", env)
        say(f"fast: mpmath solver on a sample of the {kind} grid")
        per = _mpmath_per_point(kind, k, 2 if quick else 40)
        say(f"fast: certified accuracy on the {kind} grid")
        acc = _accuracy(kind, k, 2 if quick else 200)
        out[kind] = {"end_to_end_s": wall, "cpu_s": inner["cpu_s"], "in_process_s": inner["s"],
                     "timings": inner["timings"], "load": os.getloadavg()[0],
                     "mpmath_per_point_s": per, "mpmath_grid_s": per * k * k, "speedup": per * k * k / wall,
                     "accuracy": acc}
    say("fast: the grid's floor (CPU per point against NumPy's Marchenko-Pastur closed form)")
    out["floor"] = floor(30 if quick else 200)
    say("fast: near c = 1 and small gamma")
    out["hard"] = _hard(2 if quick else 24, quick)
    out["figure_full"] = not quick
    out["figure_s"] = out["figure_cpu_s"] = None
    if not quick:  # quick: the figure's own test draws it
        say("fast: phase-diagram figure (full)")
        out["figure_s"], fig = _sub(run_sub, "from symrmt.bench.fast import _figure_main; _figure_main(True)", env)
        out["figure_cpu_s"] = fig["cpu_s"]
    return out


def verdicts(res: dict, row) -> None:
    """Add the fast path's target rows through ``row(what, value, target, met, note)`` (``met`` is ``None`` for a
    quick run: the times are judged on the full one).

    >>> v = {"end_to_end_s": 2.0, "mpmath_grid_s": 900.0, "speedup": 450.0,
    ...      "accuracy": {"points": 20, "max_gap": 1e-13, "fallbacks": 0}}
    >>> res = {"quick": True, "fast": {"grid": 200, "c_snr": v, "cos_snr": v, "figure_s": None}}
    >>> verdicts(res, lambda *r: print(r[1], r[3]))
    2.0 None
    1e-13 True
    2.0 None
    1e-13 True
    """
    fast = res["fast"]
    full = not res["quick"]
    k = fast["grid"]
    for kind, what in (("c_snr", "(c, ||mu||^2), W = I"), ("cos_snr", "(cos theta, ||mu||^2), aligned weights")):
        v = fast[kind]
        row(f"{k}x{k} grid {what}, whole process, float64 path", v["end_to_end_s"],
            f"<= {TARGETS['grid_end_to_end_s']} s", (v["end_to_end_s"] <= TARGETS["grid_end_to_end_s"]) if full
            else None, (f"process CPU {v['cpu_s']:.1f} s at load {v['load']:.1f}; " if full else "quick: in-process; ")
            + "mpmath solver: "
            f"{v['mpmath_grid_s']:.0f} s for the grid (scaled), {v['speedup']:.0f}x")
        a = v["accuracy"]
        row(f"  largest gap to 30 digits at {a['points']} random points, |c-1| >= 0.02", a["max_gap"],
            f"<= {TARGETS['grid_gap']}", a["max_gap"] <= TARGETS["grid_gap"], f"{a['fallbacks']} fallbacks")
    fl = fast.get("floor")
    if fl:
        for kind, what in (("c_snr", "c x snr, gamma = 1"), ("c_gamma", "c x gamma, snr = 1")):
            v = fl[kind]
            row(f"fast grid floor {fl['grid']}x{fl['grid']} {what}: CPU per point / NumPy ridge closed form",
                v["ratio"], f"<= {TARGETS['floor_ratio']:.0f}", (v["ratio"] <= TARGETS["floor_ratio"]) if full else None,
                f"{v['us_per_point']:.2f} us against {v['reference_us_per_point']:.3f} us per point; "
                f"{v['fallbacks']} fallbacks" + ("" if full else "; quick: small grid"))
            if "fixed_points_ratio" in v:
                row(f"  the continuation of its {fl['grid']} distinct fixed points from the large-gamma start / NumPy "
                    "ridge closed form", v["fixed_points_ratio"], "", None, f"{v['fixed_points_us_per_point']:.2f} us "
                    f"per point: tens of batched Newton steps on {fl['grid']} rows, the cost of NumPy's calls, not of "
                    "the points")
                row("  the values at every point, float64 and long double / NumPy ridge closed form", v["values_ratio"],
                    "", None, f"{v['values_us_per_point']:.2f} us per point: varphi from its coefficients in "
                    "||mu||^2 and E_RR from the root")
            if "fjg_ratio" in v:
                row("  one float64 evaluation of the fixed point's F, dF/dG, dF/dgamma / NumPy ridge closed form",
                    v["fjg_ratio"], "", None, f"{v['fjg_us_per_point']:.2f} us per point: the arithmetic below any "
                    "Newton step, every point of a c x gamma grid pays it at least twice")
            if "newton_step_ratio" in v:
                row("  one batched Newton step of the fixed point at the same points / NumPy ridge closed form",
                    v["newton_step_ratio"], "", None, f"{v['newton_step_us_per_point']:.2f} us per point: the "
                    "arithmetic each point of a c x gamma grid repeats two to three times")
            if "check_ratio" in v:
                row("  the long-double check of the fixed point at the same points / NumPy ridge closed form",
                    v["check_ratio"], "", None, f"{v['check_us_per_point']:.2f} us per point: every distinct "
                    "(gamma, c) pays it once")
                row("  the aligned varphi closed form, float64 and long double / NumPy ridge closed form",
                    v["phi_ratio"], "", None, f"{v['phi_us_per_point']:.2f} us per point: every point pays it once")
    if fast["figure_s"] is not None:
        row("phase-diagram figure, full (200x200 per panel)", fast["figure_s"], f"< {TARGETS['figure_full_s']} s",
            fast["figure_s"] < TARGETS["figure_full_s"], f"whole process; CPU {fast['figure_cpu_s']:.1f} s")


def format_section(res: dict, md) -> str:
    """The fast-path section of the bench report: float64 grids against the mpmath solver, same run.

    Takes :func:`run`'s results (under ``res["fast"]``) and the Markdown table writer ``md``; returns the
    section's Markdown.  (No doctest: its input is a whole bench run.)
    """
    fast = res["fast"]
    parts = ["\n### Fast path (float64 grids) against the mpmath solver, same run\n"]
    rows = []
    for kind in ("c_snr", "cos_snr"):
        v = fast[kind]
        t = v["timings"]
        rows.append([kind, v["end_to_end_s"], v["cpu_s"], v["in_process_s"], t["hermite"], t["fixed_point"], t["values"],
                     t["fixed_points"], t["fallbacks"], v["mpmath_per_point_s"] * 1000, v["mpmath_grid_s"],
                     v["speedup"], v["accuracy"]["max_gap"]])
    parts.append(md(["grid", "process s", "process CPU s", "in-process s", "Hermite s", "fixed points s", "values s",
                     "distinct fixed points", "fallbacks", "mpmath ms/point", "mpmath grid s (scaled)",
                     "speed-up", "max gap (30 digits)"], rows))
    fl = fast.get("floor")
    if fl:
        parts.append(f"\n### Fast grid floor ({fl['grid']} x {fl['grid']}, certify = 0, warm, CPU time)\n")
        def part(v, key):
            return f"{v[key + '_us_per_point']:.2f} ({v[key + '_ratio']:.0f})" if key + "_ratio" in v else "-"

        parts.append(md(["grid", "points", "CPU s", "us per point", "NumPy ridge closed form, us per point",
                         "ratio", "target", "distinct fixed points' continuation, us per point (ratio)",
                         "values float64 + long double (ratio)", "F, dF/dG, dF/dgamma once (ratio)",
                         "one Newton step, us per point (ratio)",
                         "long-double check, us per point (ratio)", "varphi float64 + long double (ratio)"],
                        [[kind, fl[kind]["points"], fl[kind]["cpu_s"], fl[kind]["us_per_point"],
                          fl[kind]["reference_us_per_point"], fl[kind]["ratio"], f"<= {TARGETS['floor_ratio']:.0f}"]
                         + [part(fl[kind], key) for key in ("fixed_points", "values", "fjg", "newton_step", "check", "phi")]
                         for kind in ("c_snr", "c_gamma")]))
    parts.append("\n### Fast path near c = 1 and at small gamma (tanh, rank-two geometry)\n")
    parts.append(md(["case", "points", "fallbacks to mpmath", "max gap, float points", "max gap, all",
                     "max float64 error estimate", "s"],
                    [[h["case"], h["points"], h["fallbacks"], h["max_gap_float"], h["max_gap_all"],
                      h["max_estimate"], h["s"]] for h in fast["hard"]]))
    return "\n".join(parts)
