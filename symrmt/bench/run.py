"""``symrmt bench``: the speed and precision of symrmt, measured side by side in one run.

Absolute times on a shared machine are noisy, so every figure that has a
natural reference is given as a ratio to a reference measured in the same run:

* theory -- start-up (import, compiling the SymPy systems from a cold and from a
  warm disk cache, the Hermite data of ``f``, the first call), one point at 15,
  50 and 100 digits, a 200-point ``gamma`` curve of the aligned-signal geometry
  both inside one process and end to end (a fresh ``symrmt limit`` process with
  200 gammas, cold and warm cache), and how the time of one point grows with the
  digits asked for (ratio to 15 digits);
* precision -- a 50-digit answer against an 80-digit one (agreeing digits) at
  small ``gamma`` and at ``c`` near 1;
* simulation -- one trial (``n``, ``c = 2``, one BLAS thread, as in the worker
  processes) against the *floor* of the same trial measured in the same
  process on arrays of the same shapes: the GEMMs that build the Gram matrix
  ``X^T X`` and the Attention matrix ``K^T (X^T X) K``, and one symmetric
  eigendecomposition each for Attention and for ridge; how the trial time grows
  with ``n``; several trials on 1 and 2 worker processes (identical results).

The fast path (200 x 200 float64 grids against the mpmath solver) is measured by
:mod:`symrmt.bench.fast`; the finite-n prediction (time per point, cost against the token types, digits
against an mpmath solve) by :mod:`symrmt.bench.finite_n`; one deterministic-equivalent point of ``E_A`` with a
general ``p x p`` weight matrix (``p = 96, 192, 384``) by :mod:`symrmt.bench.weights`.

Every measurement runs in a subprocess with its own environment, so the
cache state and the BLAS thread count are the ones stated.  ``--quick`` runs
small sizes (seconds; used by the tests); the default is what
``docs/performance.md`` reports.
"""

from __future__ import annotations

import importlib.util
import json
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import mpmath
import numpy as np

from symrmt.bench import (
    fast as bench_fast,
    engine as bench_engine,
    weights as bench_weights,
    prove as bench_prove,
    density as bench_density,
    finite_n as bench_finite_n,
)
from symrmt.bench.curve import CURVE_C, CURVE_F, CURVE_GEOMETRY, CURVE_POINTS, curve_gammas  # noqa: F401 (the reference point, also bench.prove's)
from symrmt.bench.density import verdicts as density_verdicts, report as density_report
from symrmt.bench.engine import worker, verdicts as engine_verdicts, report as engine_report
from symrmt.bench.finite_n import verdicts as finite_n_verdicts, report as finite_n_report
from symrmt.bench.parts import report as parts_report
from symrmt.bench.prove import worker as prove_worker, verdicts as prove_verdicts, report as prove_report
from symrmt.bench.weights import worker as weights_worker, verdicts as weights_verdicts
from symrmt.errors import ParameterError
from symrmt.models.attention import solver as N, theory as T
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import simulate, simulate_trial, vectors_from_gram

__all__ = ["run", "format_report", "main", "simulation_spec", "TARGETS"]


TARGETS = {
    "curve_end_to_end_s": 5.0,  # a 200-point aligned curve, whole process including start-up
    "point_50_s": 1.0,  # one point at 50 digits after warm-up
    "sim_ratio_2048": 1.3,  # trial / floor at n = 2048, c = 2
    "agree_50_80": 48,  # digits shared by a 50-digit and an 80-digit answer
}


# ---------------------------------------------------------------------------
# subprocess workers (each prints one JSON object on its last stdout line)
# ---------------------------------------------------------------------------
def _theory_worker(spec: dict) -> dict:
    t0 = time.perf_counter()

    out = {"import_s": time.perf_counter() - t0}
    t = time.perf_counter()
    N.fixed_point_fjg()
    N.closed_form_phi("aligned")
    N.ridge_function()
    out["compile_s"] = time.perf_counter() - t
    if spec.get("compile_only"):
        return out
    geo = Geometry(**CURVE_GEOMETRY)
    out["route"] = T.route_for(T.hermite_inputs(CURVE_F, "zero", 20)[0], geo)
    t = time.perf_counter()
    T.hermite_at_least(CURVE_F, "zero", 15 + T.guard_digits(1e-3) + 10 + T.HERMITE_EXTRA)
    out["hermite_s"] = time.perf_counter() - t
    t = time.perf_counter()
    T.attention_limit(CURVE_F, CURVE_C, ["1"], geo, digits=15)
    out["warmup_s"] = time.perf_counter() - t
    gammas = curve_gammas(spec["curve_points"])
    t = time.perf_counter()
    T.attention_limit(CURVE_F, CURVE_C, gammas, geo, digits=15)
    out["curve_s"] = time.perf_counter() - t
    out["curve_points"] = len(gammas)

    # one point: a fresh continuation (the solver's memory of earlier points is dropped)
    out["point"] = {}
    for D in spec["point_digits"]:
        T._FIXED_POINTS.clear()
        t = time.perf_counter()
        T.attention_limit(CURVE_F, CURVE_C, ["0.0123"], geo, digits=D)  # includes the Hermite data at D digits
        first = time.perf_counter() - t
        T._FIXED_POINTS.clear()
        t = time.perf_counter()
        T.attention_limit(CURVE_F, CURVE_C, ["0.0234"], geo, digits=D)
        out["point"][str(D)] = {"first_s": first, "s": time.perf_counter() - t}

    # growth with the digits: erf (exact Hermite data, so only the solver is timed)
    out["digits_growth"] = {}
    for D in spec["growth_digits"]:
        T.attention_limit("erf", CURVE_C, ["0.5"], geo, digits=D)  # Hermite data at D digits
        T._FIXED_POINTS.clear()
        t = time.perf_counter()
        T.attention_limit("erf", CURVE_C, ["0.0345"], geo, digits=D)
        out["digits_growth"][str(D)] = time.perf_counter() - t

    # precision: D-digit answer against a (D + 30)-digit one, a fresh solve each
    lo_d, hi_d = spec["agree_digits"]
    out["agreement"] = []
    for c, g in spec["agree_points"]:
        vals = []
        times = []
        for D in (lo_d, hi_d):
            T._FIXED_POINTS.clear()
            t = time.perf_counter()
            vals.append(T.attention_limit(CURVE_F, c, [g], geo, digits=D)[0])
            times.append(time.perf_counter() - t)
        with mpmath.workdps(hi_d + 10):
            diff = abs(vals[0] - vals[1])
            agree = float(-mpmath.log10(diff / abs(vals[1]))) if diff else float(hi_d)
        out["agreement"].append({"c": c, "gamma": g, "digits": [lo_d, hi_d], "agree": agree, "s": times,
                                 "value": mpmath.nstr(vals[1], lo_d)})
    return out


def _sim_worker(spec: dict) -> dict:
    out = {"sizes": []}
    gammas = np.logspace(-3, 2, 200)
    for n in spec["ns"]:
        p = 2 * n
        mu, wk, wq = vectors_from_gram(Geometry(snr=1).gram(), p)
        trial, floor, parts = [], [], []
        rng = np.random.default_rng(0)
        for _ in range(spec["reps"]):
            t = time.perf_counter()
            simulate_trial(np.tanh, n, mu, wk, wq, gammas, "zero", "gaussian", rng)
            trial.append(time.perf_counter() - t)
            x = rng.standard_normal((p, n))
            k = rng.standard_normal((n, n)) / np.sqrt(p)
            ts = []
            t = time.perf_counter()
            g = x.T @ x
            ts.append(time.perf_counter() - t)
            t = time.perf_counter()
            gk = g @ k
            ts.append(time.perf_counter() - t)
            t = time.perf_counter()
            pm = k.T @ gk
            ts.append(time.perf_counter() - t)
            pm /= n
            t = time.perf_counter()
            np.linalg.eigh(pm)
            ts.append(time.perf_counter() - t)
            g /= n
            t = time.perf_counter()
            np.linalg.eigh(g)
            ts.append(time.perf_counter() - t)
            floor.append(sum(ts))
            parts.append(ts)
            del x, k, g, gk, pm
        best = min(range(len(floor)), key=lambda i: floor[i])
        out["sizes"].append({
            "n": n, "p": p, "trial_s": min(trial), "floor_s": floor[best],
            "ratio": min(trial) / floor[best],
            "floor_parts_s": dict(zip(("gram", "gram_k", "kt_gram_k", "eigh_attention", "eigh_ridge"), parts[best])),
        })
    par = spec.get("parallel")
    if par:
        res = {}
        for w in (1, 2):
            t = time.perf_counter()
            r = simulate(np.tanh, par["n"], 2, list(gammas[::20]), Geometry(snr=1), trials=par["trials"],
                         seed=1, workers=w, progress=False)
            res[w] = (time.perf_counter() - t, r["attention"]["trials"], r["ridge"]["trials"])
        out["parallel"] = {
            "n": par["n"], "trials": par["trials"], "workers_1_s": res[1][0], "workers_2_s": res[2][0],
            "speedup": res[1][0] / res[2][0],
            "identical": bool(np.array_equal(res[1][1], res[2][1]) and np.array_equal(res[1][2], res[2][2])),
            "machine_ceiling": _parallel_ceiling(par["trials"]),
        }
    return out


def _burn(loops: int) -> float:
    """A pure-Python CPU-bound task (no memory traffic): the control for the parallel speed-up."""
    t = time.perf_counter()
    s = 0
    for i in range(loops):
        s += i
    return time.perf_counter() - t


def _parallel_ceiling(tasks: int, loops: int = 3_000_000) -> float:
    """Speed-up of ``tasks`` copies of :func:`_burn` on 2 spawned processes over one process:
    what this machine gives two processes at all (1.0 on 2 vCPUs that share one core's time)."""
    t = time.perf_counter()
    for _ in range(tasks):
        _burn(loops)
    serial = time.perf_counter() - t
    with ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("spawn")) as pool:
        list(pool.map(_burn, [1000, 1000]))  # start the processes first
        t = time.perf_counter()
        list(pool.map(_burn, [loops] * tasks))
        parallel = time.perf_counter() - t
    return serial / parallel


def _worker_main(kind: str, spec_json: str) -> None:
    spec = json.loads(spec_json)
    if kind == "engine":
        out = worker(spec)
    elif kind == "prove":
        out = prove_worker(spec)
    elif kind == "weights":
        out = weights_worker(spec)
    else:
        out = _theory_worker(spec) if kind == "theory" else _sim_worker(spec)
    print(json.dumps(out, allow_nan=False))


def _run_sub(args, env_extra: dict, timeout: float):
    env = dict(os.environ)
    env.update(env_extra)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this symrmt, installed or not
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark subprocess {args[:2]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, proc.stdout


def _worker(kind: str, spec: dict, env_extra: dict, timeout: float) -> dict:
    code = f"from symrmt.bench.run import _worker_main; _worker_main({kind!r}, {json.dumps(json.dumps(spec))})"
    _, stdout = _run_sub(["-c", code], env_extra, timeout)
    return json.loads(stdout.strip().splitlines()[-1])


def _cli_limit_args(gammas) -> list[str]:
    args = ["-m", "symrmt", "limit", "--f", CURVE_F, "--c", CURVE_C, "--gamma", ",".join(gammas)]
    for k, v in CURVE_GEOMETRY.items():
        args += [f"--{k}", v]
    return args


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------
def run(quick: bool = False, progress=None) -> dict:
    """Run the benchmarks and return the results (a JSON-able dict).

    Takes ``quick`` (smaller sizes) and ``progress`` (a function of one
    message); returns ``{"quick", "machine", "theory", "simulation", "verdicts", ...}``.  Raises
    ``RuntimeError`` when a benchmark subprocess fails (its stderr is in the message).  (No doctest: it runs
    for minutes.)
    """
    say = progress or (lambda msg: None)
    blas1 = {v: "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    spec = {
        "curve_points": 20 if quick else CURVE_POINTS,
        "point_digits": [15, 50] if quick else [15, 50, 100],
        "growth_digits": [15, 30] if quick else [15, 30, 50, 100, 200],
        "agree_digits": [30, 60] if quick else [50, 80],
        "agree_points": [["1/2", "1e-3"]] if quick else [["1/2", "1e-3"], ["0.98", "1e-3"], ["1.02", "1e-3"],
                                                          ["0.98", "1e-8"], ["1.02", "1e-8"]],
    }
    out = {
        "quick": quick,
        "machine": {
            "python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        },
        "targets": TARGETS,
    }
    npts = spec["curve_points"]
    with tempfile.TemporaryDirectory(prefix="symrmt-bench-cache-") as cache:
        # full run: a fresh cache folder, so that "cold" is a first run; quick: the caller's cache
        env = {} if quick else {"SYMRMT_CACHE_DIR": cache, "SYMRMT_NO_CACHE": "0"}
        cold = nocache = None
        if not quick:
            say(f"theory: {npts}-point curve end to end, cold cache")
            cold, _ = _run_sub(_cli_limit_args(curve_gammas(npts)), env, 900)
            say("theory: start-up with no cache at all")
            nocache = _worker("theory", {"compile_only": True}, {"SYMRMT_NO_CACHE": "1"}, 900)["compile_s"]
        say(f"theory: {npts}-point curve end to end, warm cache")
        _run_sub(_cli_limit_args(curve_gammas(2)), env, 900)  # makes sure the cache is filled
        warm, _ = _run_sub(_cli_limit_args(curve_gammas(npts)), env, 900)
        say("theory: phases, points, digits, precision")
        th = _worker("theory", spec, env, 3600)

        out["fast"] = bench_fast.run(quick, env, _run_sub, say)
    th["compile_cold_s"] = nocache
    th["compile_warm_s"] = th.pop("compile_s")
    th["curve_end_to_end_cold_s"] = cold
    th["curve_end_to_end_warm_s"] = warm
    base = th["digits_growth"]["15"]
    th["digits_growth_ratio"] = {D: t / base for D, t in th["digits_growth"].items()}
    out["theory"] = th

    say("engine: a 6-block pencil at 30 digits, fresh and warm disk cache")
    out["engine"] = bench_engine.measure(quick, _worker)

    say("weights: E_A with a general p x p W (p = 96, 192, 384 at 15 digits; p = 96, 384 at 30; p = 48 at 30 and 34)")
    out["weights"] = bench_weights.measure(quick, _worker)

    say("proved digits: prove=True against the unproved call, and a 98-unknown engine proof")
    out["prove"] = bench_prove.measure(quick, _worker)

    say("density: Marchenko-Pastur and the tanh kernel on 400 points, warm")
    out["density"] = bench_density.measure(quick)
    say("density: the float64 path (--fast) on five laws against eigvalsh 400 x 400")
    out["density_fast"] = bench_density.measure_fast(quick)

    say("finite-n prediction: time per point, cost against the token types, digits against the mpmath solve")
    out["finite_n"] = bench_finite_n.measure(quick)
    say("simulation: trial against floor" + (" (n up to 2048: minutes)" if not quick else ""))
    sim_spec = simulation_spec(quick)
    if "parallel" not in sim_spec:
        say("simulation: the 2-worker run is skipped (it needs Dask: pip install 'symrmt[dask]')")
    sim = _worker("sim", sim_spec, blas1, 3600)
    sizes = sim["sizes"]
    for a, b in zip(sizes, sizes[1:]):
        b["growth_vs_half_n"] = b["trial_s"] / a["trial_s"]
    out["simulation"] = sim
    out["verdicts"] = _verdicts(out)
    return out


def simulation_spec(quick: bool) -> dict:
    """The sizes of the simulation benchmark: ``ns`` (trial against floor), ``reps``, and ``parallel`` (1 against
    2 Dask workers) only where Dask is installed, so that ``symrmt bench`` runs without the extra.

    >>> spec = simulation_spec(quick=True)
    >>> spec["ns"], spec["reps"], set(spec) <= {"ns", "reps", "parallel"}
    ([128, 256], 1, True)
    """
    spec = {"ns": [128, 256] if quick else [256, 512, 1024, 2048], "reps": 1 if quick else 2}
    if importlib.util.find_spec("distributed") is not None:
        spec["parallel"] = {"n": 128 if quick else 1024, "trials": 4}
    return spec


def _verdicts(res: dict) -> list[dict]:
    th, sim = res["theory"], res["simulation"]
    full = not res["quick"]
    rows = []

    def row(name, value, target, met, note=""):
        rows.append({"what": name, "value": value, "target": target, "met": met, "note": note})

    T = TARGETS["curve_end_to_end_s"]
    for which in ("warm", "cold"):
        v = th[f"curve_end_to_end_{which}_s"]
        if v is None:
            continue
        row(f"{th['curve_points']}-point aligned curve, whole process, {which} cache", v, f"<= {T} s",
            (v <= T) if full else None, "" if full else "quick: fewer points")
    p50 = th["point"].get("50")
    if p50:
        row("one point at 50 digits after warm-up", p50["s"], f"<= {TARGETS['point_50_s']} s",
            p50["s"] <= TARGETS["point_50_s"])
        row("  the same, first 50-digit call (with the tanh quadrature)", p50["first_s"], "", None)
    big = [s for s in sim["sizes"] if s["n"] == 2048]
    if big:
        r = big[0]["ratio"]
        row("simulation trial / floor, n = 2048, c = 2", r, f"<= {TARGETS['sim_ratio_2048']}",
            r <= TARGETS["sim_ratio_2048"])
    else:
        s = sim["sizes"][-1]
        row(f"simulation trial / floor, n = {s['n']}, c = 2", s["ratio"], f"<= {TARGETS['sim_ratio_2048']} at n=2048",
            None, "quick: n = 2048 not run")
    for a in th["agreement"]:
        need = a["digits"][0] - 2
        row(f"{a['digits'][0]} vs {a['digits'][1]} digits, c = {a['c']}, gamma = {a['gamma']}", a["agree"],
            f">= {need} digits", a["agree"] >= need)
    par = sim.get("parallel")
    if par:
        row(f"{par['trials']} trials on 2 workers: identical to 1 worker", par["identical"], "True", par["identical"])

    engine_verdicts(res, row)

    weights_verdicts(res, row)

    prove_verdicts(res, row)

    density_verdicts(res, row)

    finite_n_verdicts(res, row)
    if "fast" in res:
        bench_fast.verdicts(res, row)
    return rows


def _fmt(x, nd=3):
    if isinstance(x, bool) or x is None:
        return {True: "yes", False: "**no**", None: "-"}[x]
    if isinstance(x, float):
        return f"{x:.{nd}g}" if abs(x) < 1000 else f"{x:.0f}"
    return str(x)


def _md(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def format_report(res: dict) -> str:
    """Markdown tables of :func:`run`'s results.

    Takes the dict :func:`run` returns; returns the Markdown report.  (No doctest: its input is a whole
    bench run; ``tests/models/attention/test_solver_performance.py`` runs ``symrmt bench --quick``.)
    """
    th, sim = res["theory"], res["simulation"]
    m = res["machine"]
    parts = [f"symrmt bench{' --quick' if res['quick'] else ''}: Python {m['python']}, {m['cpus']} CPUs, "
             f"{m['platform']}"]
    parts.append("\n### Targets\n")
    parts.append(_md(["what", "measured", "target", "met", "note"],
                     [[v["what"], v["value"], v["target"], v["met"], v["note"]] for v in res["verdicts"]]))
    parts.append("\n### Theory: start-up and one curve (seconds)\n")
    curve = th["curve_s"]
    cold, nocache = th["curve_end_to_end_cold_s"], th["compile_cold_s"]
    rows = [
        ["import symrmt.models.attention.theory (SymPy, mpmath)", th["import_s"], ""],
        ["compile the systems, no disk cache (derive + lambdify)", nocache, ""],
        ["compile the systems, warm disk cache", th["compile_warm_s"],
         f"{nocache / th['compile_warm_s']:.0f}x faster than no cache" if nocache else ""],
        ["Hermite data of tanh for 15 digits (quadrature at 43 digits)", th["hermite_s"], ""],
        ["warm-up: first point (continuation from gamma = oo)", th["warmup_s"], ""],
        [f"{th['curve_points']}-point curve in the warm process", curve,
         f"{1000 * curve / th['curve_points']:.1f} ms per point"],
        [f"{th['curve_points']}-point curve, `symrmt limit` process, cold cache", cold,
         f"{cold / curve:.2f}x the in-process curve" if cold else "not run (--quick)"],
        [f"{th['curve_points']}-point curve, `symrmt limit` process, warm cache", th["curve_end_to_end_warm_s"],
         f"{th['curve_end_to_end_warm_s'] / curve:.2f}x the in-process curve"],
    ]
    parts.append(_md(["step", "s", "ratio"], rows))
    parts.append("\n### Theory: one point (tanh, aligned geometry, c = 1/2, fresh continuation)\n")
    base = th["point"]["15"]["s"]
    parts.append(_md(["digits", "s", "vs 15 digits", "first call at these digits (with Hermite data), s"],
                     [[D, v["s"], v["s"] / base, v["first_s"]] for D, v in th["point"].items()]))
    parts.append("\n### Theory: growth with the digits (erf, exact Hermite data, gamma = 0.0345)\n")
    parts.append(_md(["digits", "s", "vs 15 digits"],
                     [[D, th["digits_growth"][D], r] for D, r in th["digits_growth_ratio"].items()]))
    parts.append("\n### Precision: a D-digit answer against a fresh (D + 30)-digit one\n")
    parts.append(_md(["c", "gamma", "digits", "agreeing digits", "s (lo, hi)", "value"],
                     [[a["c"], a["gamma"], f"{a['digits'][0]} vs {a['digits'][1]}", a["agree"],
                       ", ".join(f"{t:.2f}" for t in a["s"]), a["value"]] for a in th["agreement"]]))
    parts.append("\n### Simulation: one trial against its floor (c = 2, one BLAS thread, min over repeats)\n")
    rows = []
    for s in sim["sizes"]:
        fp = s["floor_parts_s"]
        rows.append([s["n"], s["p"], s["trial_s"], s["floor_s"], s["ratio"],
                     fp["gram"] + fp["gram_k"] + fp["kt_gram_k"], fp["eigh_attention"] + fp["eigh_ridge"],
                     s.get("growth_vs_half_n")])
    parts.append(_md(["n", "p", "trial s", "floor s", "trial/floor", "floor: GEMMs s", "floor: 2 eigh s",
                      "trial vs n/2"], rows))
    par = sim.get("parallel")
    if par:
        parts.append(f"\n{par['trials']} trials at n = {par['n']}: 1 worker {par['workers_1_s']:.2f} s, "
                     f"2 workers {par['workers_2_s']:.2f} s (speed-up {par['speedup']:.2f}, including process "
                     f"start-up); per-trial results identical: {par['identical']}. Control: {par['trials']} "
                     f"pure-Python CPU-bound tasks on 2 processes run {par['machine_ceiling']:.2f}x as fast as "
                     "on one (the most this machine gives two processes).")

    parts.append(engine_report(res, _md))

    parts.append(parts_report(res, _md))

    parts.append(prove_report(res, _md))

    parts.append(density_report(res, _md))

    parts.append(finite_n_report(res, _md))
    if "fast" in res:
        parts.append(bench_fast.format_section(res, _md))
    return "\n".join(parts) + "\n"


def main(quick: bool = False, as_json: bool = False, out=None) -> dict:
    """Run the bench (``quick``: smaller sizes), print or write (``out``) its report as text or JSON, and
    return the measurements.

    (No doctest: it runs for minutes; ``symrmt bench`` calls it.)
    """
    res = run(quick=quick, progress=lambda msg: print(f"symrmt bench: {msg}", file=sys.stderr, flush=True))
    text = json.dumps(res, indent=1, allow_nan=False) if as_json else format_report(res)
    if out:
        try:
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:  # a full disk, an I/O error: the file named, no traceback
            raise ParameterError(f"--out {out}: cannot write it ({exc.strerror or exc})") from None
    else:
        print(text)
    return res
