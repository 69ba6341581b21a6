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
trial of :mod:`symrmt.simulation.trials`; the trace engine's trial of
:mod:`symrmt.simulation.trace_sim`), and the median wall time and the mean
process CPU time per trial are recorded.  The report gives, per shape, the
median over the repeats and the ratio ``default / one thread`` (above 1: one
thread is faster).  The load average of the machine is printed with each
repeat, because the outcome depends on it.
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
shapes, k = json.loads(sys.argv[1]), int(sys.argv[2])
out = {{}}
for label, kind, n, c in shapes:
    if kind == "simulate":
        from symrmt.simulation.trials import SIMULATE_SPEC, simulate_point
        pt = simulate_point(np.tanh, n, c, [1])
        fn, params, ctx = SIMULATE_SPEC.fn, pt.key, pt.context
    else:
        from symrmt.engine import Model, bind
        from symrmt.simulation import trace_trials as trace_sim
        m = Model(); m.dim("p", "c*n"); m.gaussian("Z", "p", "n")
        tree = bind(m.parse("trace(inv(Z.T*Z/n + gamma*I(n)))"), {{"c": c, "gamma": "1/5"}}, n)
        fn, params, ctx = trace_sim.TRACE_SPEC.fn, trace_sim.trace_point(tree).key, None
    fn(params, ctx, 0, 0)  # warm-up
    walls, cpu0 = [], time.process_time()
    for j in range(1, k + 1):
        t0 = time.perf_counter()
        fn(params, ctx, 0, j)
        walls.append(time.perf_counter() - t0)
    out[label] = {{"wall": statistics.median(walls), "cpu": (time.process_time() - cpu0) / k}}
print(json.dumps(out))
"""


def run_child(shapes, k: int, one_thread: bool) -> dict:
    env = {key: v for key, v in os.environ.items() if key not in _VARS}
    if one_thread:
        env.update({key: "1" for key in _VARS})
    code = _CHILD.format(root=ROOT)
    res = subprocess.run([sys.executable, "-c", code, json.dumps(shapes), str(k)], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 128 only, few trials")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trials", type=int, default=None, help="trials per shape and subprocess")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    shapes = SHAPES_QUICK if args.quick else SHAPES_FULL
    k = args.trials or (5 if args.quick else 8)
    runs = {"default": [], "one": []}
    loads = []
    for r in range(args.repeat):
        for setting in (("default", "one") if r % 2 == 0 else ("one", "default")):
            runs[setting].append(run_child(shapes, k, setting == "one"))
        loads.append(os.getloadavg()[0])
        print(f"repeat {r + 1}/{args.repeat} done, load average (1 min) {loads[-1]:.2f}", file=sys.stderr)
    table = {}
    print(f"{os.cpu_count()} CPUs; load average during the runs {min(loads):.1f} to {max(loads):.1f}; "
          f"{k} trials per shape and subprocess, {args.repeat} repeats (median of the per-repeat medians)")
    print("| shape | default threads: wall s / CPU s | one thread: wall s / CPU s | wall ratio default/one |")
    print("|---|---|---|---|")
    for label, *_ in shapes:
        d = {q: statistics.median(run[label][q] for run in runs["default"]) for q in ("wall", "cpu")}
        o = {q: statistics.median(run[label][q] for run in runs["one"]) for q in ("wall", "cpu")}
        table[label] = {"default": d, "one": o, "ratio": d["wall"] / o["wall"]}
        print(f"| {label} | {d['wall']:.4f} / {d['cpu']:.4f} | {o['wall']:.4f} / {o['cpu']:.4f} | "
              f"{d['wall'] / o['wall']:.2f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cpus": os.cpu_count(), "loads": loads, "trials": k, "repeat": args.repeat,
                       "runs": runs, "table": table}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
