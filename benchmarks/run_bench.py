#!/usr/bin/env python
"""Run ``symrmt bench`` and keep both forms of its result.

Usage::

    python benchmarks/run_bench.py [--quick] [--out-dir DIR]

writes ``DIR/bench.json`` (all measurements) and ``DIR/bench.md`` (the tables that
``docs/performance.md`` quotes); ``DIR`` defaults to ``benchmarks/results``.
Everything is measured in one run, side by side, and reported as ratios where a
reference exists (see :mod:`symrmt.bench.run`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from symrmt.bench.run import format_report, run  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args(argv)
    res = run(quick=args.quick, progress=lambda msg: print(f"bench: {msg}", file=sys.stderr, flush=True))
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "bench.json"), "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=1)
    text = format_report(res)
    with open(os.path.join(args.out_dir, "bench.md"), "w", encoding="utf-8") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
