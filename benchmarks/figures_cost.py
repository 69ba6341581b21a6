#!/usr/bin/env python
"""What ``symrmt figures --full`` costs in simulation, measured per trial shape and extrapolated.

Usage::

    python benchmarks/figures_cost.py [--full | --quick] [--repeat R] [--json FILE]

1. Lists every simulated point of every figure (without running anything: the
   figure functions are stopped at the moment their batch of trials would start)
   and groups the trials by shape ``(kind, n, p)``.
2. Times ``R`` trials (default 2) of each shape at that size, through the same
   trial functions the figures use, in this process with whatever BLAS threads the
   environment gives (set ``OPENBLAS_NUM_THREADS=1`` to match a Dask worker).
   The process CPU time is what is extrapolated: with one BLAS thread it is the
   wall time of the trial on a core of its own, whatever else loads the machine
   (the wall time is printed too).
3. Prints the trial counts, the measured CPU seconds per trial and the extrapolated
   total: ``sum over shapes of count x seconds per trial``.  This is an
   *extrapolation* of the simulation part only (the theory curves are not in it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from symrmt import figures  # noqa: E402
from symrmt.simulation import executor  # noqa: E402


class _Stop(Exception):
    pass


def plan(full: bool) -> dict:
    """``{figure: [(spec, params, n_trials, seed, context), ...]}`` of every simulated point."""
    out = {}
    real_start = executor.TrialBatch.start

    def capture(self):
        out[current] = [(p.spec, p.params, p.n_trials, p.seed, p.context) for p in self.points]
        raise _Stop

    executor.TrialBatch.start = capture
    try:
        for current in ("ridge_error", "random_inputs", "role_of_a1", "alignment"):
            try:
                figures.FIGURES[current]("/nonexistent", full=full, progress=False)
            except _Stop:
                pass
    finally:
        executor.TrialBatch.start = real_start
    return out


def shape(params) -> tuple:
    n = params["n"]
    return n, round(Fraction(params["c"]) * n)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the default (quick) sizes instead of --full")
    ap.add_argument("--repeat", type=int, default=2, help="trials timed per shape (default 2)")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    args = ap.parse_args(argv)
    full = not args.quick
    pts = plan(full)
    counts = Counter()
    example = {}
    per_fig = {}
    for fig, items in pts.items():
        c = Counter()
        for spec, params, n_trials, _seed, ctx in items:
            key = (spec.name, *shape(params))
            c[key] += n_trials
            example.setdefault(key, (spec, params, ctx))
        per_fig[fig] = c
        counts.update(c)
    timing, wall = {}, {}
    for key in sorted(counts, key=lambda k: (k[1] * k[2], k)):
        spec, params, ctx = example[key]
        if ctx and ctx.get("f") is not None:
            ctx["f"](np.zeros(4))  # build f (parse, compile) outside the timing, as a worker does once
        ts, walls = [], []
        for j in range(args.repeat):
            t, w = time.process_time(), time.perf_counter()
            spec.fn(params, ctx, 0, j)
            ts.append(time.process_time() - t)
            walls.append(time.perf_counter() - w)
        timing[key] = min(ts)
        wall[key] = min(walls)
        print(f"{key[0]:9s} n={key[1]:5d} p={key[2]:5d}: {counts[key]:5d} trials x {timing[key]:7.3f} s CPU "
              f"= {counts[key] * timing[key]:8.1f} s  (wall {wall[key]:.3f} s per trial)", flush=True)
    rows = []
    for fig, c in per_fig.items():
        secs = sum(k * timing[key] for key, k in c.items())
        rows.append({"figure": fig, "trials": sum(c.values()), "seconds": secs})
        print(f"{fig:14s} {sum(c.values()):6d} trials  ~{secs / 60:7.1f} min of trial CPU time")
    total = sum(r["seconds"] for r in rows)
    print(f"{'total':14s} {sum(r['trials'] for r in rows):6d} trials  ~{total / 3600:7.2f} h of trial CPU time")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"full": full, "figures": rows, "shapes": [
                {"kind": k[0], "n": k[1], "p": k[2], "trials": counts[k], "cpu_s_per_trial": timing[k],
                 "wall_s_per_trial": wall[k]}
                for k in timing]}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
