#!/usr/bin/env python
"""In-process Monte-Carlo trials with one BLAS thread against OpenBLAS's default thread count.

Usage::

    python benchmarks/blas_threads.py [--quick] [--repeat R] [--json FILE]

Each measurement runs in a fresh subprocess, with ``OPENBLAS_NUM_THREADS`` (and
``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``) either unset (OpenBLAS's default: one
thread per CPU) or set to ``1`` before NumPy is imported, so the thread count is
the one stated whatever this process has loaded.  The two settings alternate,
``R`` times (default 3), so that a change of the machine's load hits both alike.

In each subprocess, after one warm-up trial, ``K`` trials of each shape run one
after another through the trial functions the executor uses (the ``simulate``
trial of :mod:`symrmt.models.attention.trials`; the trace engine's trial of
:mod:`symrmt.engine.simulate.monte_carlo`), and the median wall time and the mean
process CPU time per trial are recorded.  The report gives, per shape, the
median over the repeats and the ratio ``default / one thread`` (above 1: one
thread is faster).  The load average of the machine is printed with each
repeat, because the outcome depends on it.  ``--runtime`` adds a third setting:
OpenBLAS starts with its default thread count and each trial runs inside
:func:`symrmt.simulation.blas_threads.one_blas_thread` (threadpoolctl), as the executor runs
in-process trials in a Python session where NumPy was loaded first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

#: (label, kind, n, c); kind "simulate" (tanh, one gamma) or "trace" (the MP resolvent at gamma = 1/5)
SHAPES_FULL = [("simulate n=128 c=2", "simulate", 128, "2"), ("simulate n=512 c=1/2", "simulate", 512, "1/2"),
               ("simulate n=1024 c=1/2", "simulate", 1024, "1/2"), ("trace n=128 c=2", "trace", 128, "2"),
               ("trace n=512 c=1/2", "trace", 512, "1/2"), ("trace n=1024 c=1/2", "trace", 1024, "1/2")]
SHAPES_QUICK = [("simulate n=128 c=2", "simulate", 128, "2"), ("trace n=128 c=2", "trace", 128, "2")]

_CHILD = r"""
import json, os, statistics, sys, time
import numpy as np
sys.path.insert(0, {root!r})
shapes, k, runtime = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "runtime"
from symrmt.simulation.blas_threads import one_blas_thread
out = {{}}
for label, kind, n, c in shapes:
    if kind == "simulate":
        from symrmt.models.attention.trials import SIMULATE_SPEC, simulate_point
        pt = simulate_point(np.tanh, n, c, [1])
        fn, params, ctx = SIMULATE_SPEC.fn, pt.key, pt.context
    else:
        from symrmt.engine import Model, bind
        from symrmt.simulation import trace_trials as trace_sim
        m = Model(); m.dim("p", "c*n"); m.gaussian("Z", "p", "n")
        tree = bind(m.parse("trace(inv(Z.T*Z/n + gamma*I(n)))"), {{"c": c, "gamma": "1/5"}}, n)
        pt = trace_sim.trace_point(tree)
        fn, params, ctx = trace_sim.TRACE_SPEC.fn, pt.key, pt.context
    fn(params, ctx, 0, 0)  # warm-up
    limit = one_blas_thread() if runtime else None
    if runtime and limit._controller is None:
        raise SystemExit("the runtime setting needs threadpoolctl")
    walls, cpu0 = [], time.process_time()
    for j in range(1, k + 1):
        t0 = time.perf_counter()
        if limit is None:
            fn(params, ctx, 0, j)
        else:
            with limit:
                fn(params, ctx, 0, j)
        walls.append(time.perf_counter() - t0)
    out[label] = {{"wall": statistics.median(walls), "cpu": (time.process_time() - cpu0) / k}}
print(json.dumps(out))
"""


def run_child(shapes, k: int, setting: str) -> dict:
    env = {key: v for key, v in os.environ.items() if key not in _VARS}
    if setting == "one":
        env.update({key: "1" for key in _VARS})
    code = _CHILD.format(root=ROOT)
    res = subprocess.run([sys.executable, "-c", code, json.dumps(shapes), str(k), setting], env=env,
                         capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"the measuring subprocess failed:\n{res.stderr}")
    return json.loads(res.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 128 only, few trials")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trials", type=int, default=None, help="trials per shape and subprocess")
    ap.add_argument("--runtime", action="store_true",
                    help="also a third setting: default threads at start, each trial inside "
                    "symrmt.simulation.blas_threads.one_blas_thread() (needs threadpoolctl)")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    shapes = SHAPES_QUICK if args.quick else SHAPES_FULL
    k = args.trials or (5 if args.quick else 8)
    settings = ("default", "one", "runtime") if args.runtime else ("default", "one")
    runs = {s: [] for s in settings}
    loads = []
    for r in range(args.repeat):
        for setting in (settings if r % 2 == 0 else settings[::-1]):
            runs[setting].append(run_child(shapes, k, setting))
        loads.append(os.getloadavg()[0])
        print(f"repeat {r + 1}/{args.repeat} done, load average (1 min) {loads[-1]:.2f}", file=sys.stderr)
    table = {}
    print(f"{os.cpu_count()} CPUs; load average during the runs {min(loads):.1f} to {max(loads):.1f}; "
          f"{k} trials per shape and subprocess, {args.repeat} repeats (median of the per-repeat medians)")
    extra = " one_blas_thread() at run time: wall s / CPU s |" if args.runtime else ""
    print("| shape | default threads: wall s / CPU s | one thread: wall s / CPU s | wall ratio default/one |"
          + extra)
    print("|---|---|---|---|" + ("---|" if args.runtime else ""))
    for label, *_ in shapes:
        med = {st: {q: statistics.median(run[label][q] for run in runs[st]) for q in ("wall", "cpu")}
               for st in settings}
        d, o = med["default"], med["one"]
        table[label] = dict(med, ratio=d["wall"] / o["wall"])
        row = f"| {label} | {d['wall']:.4f} / {d['cpu']:.4f} | {o['wall']:.4f} / {o['cpu']:.4f} | " \
              f"{d['wall'] / o['wall']:.2f} |"
        if args.runtime:
            row += f" {med['runtime']['wall']:.4f} / {med['runtime']['cpu']:.4f} |"
        print(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cpus": os.cpu_count(), "loads": loads, "trials": k, "repeat": args.repeat,
                       "runs": runs, "table": table}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
