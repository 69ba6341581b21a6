#!/usr/bin/env python
"""Each documented limit of the Hermite data and of the limit solvers, run at the limit itself.

Usage::

    python benchmarks/limits_at_cap.py [--json FILE]

Every case runs as its own ``python -m symrmt`` subprocess (cold: parsing, the Hermite data and the
solve are all in the time) and its wall time and exit status are printed.  The cases are the caps of
``docs/input.md``: ``digits`` (1000, an f with closed forms), ``trapezoid_digits`` (tanh, smooth on the
whole line: ``limit --digits 370`` needs about 400 working digits), ``hermite_k`` (60, tanh by the
trapezoidal rule), ``quadrature_digits`` and ``quadrature_k`` (a kinked f, by tanh-sinh), and the
refusals just above them (each must be a one-line error, exit 2, within seconds).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CASES = [
    ("digits = 1000, closed-form f", ["limit", "--f", "erf", "--c", "0.5", "--gamma", "1", "--snr", "1",
                                      "--digits", "1000", "--json"], 0),
    ("trapezoid_digits: limit --digits 370 (tanh)", ["limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--snr",
                                                     "1", "--digits", "370", "--json"], 0),
    ("trapezoid_digits: hermite --digits 395 (tanh)", ["hermite", "--f", "tanh", "--digits", "395", "--json"], 0),
    ("hermite_k = 60 (tanh)", ["hermite", "--f", "tanh", "--k", "60", "--json"], 0),
    ("quadrature_digits = 60 (kinked f)", ["hermite", "--f", "Abs(tanh(t)) - 1/2", "--center", "--digits", "55",
                                           "--json"], 0),
    ("quadrature_k = 10 (kinked f)", ["hermite", "--f", "Abs(tanh(t)) - 1/2", "--center", "--k", "10", "--json"], 0),
    ("refused: quadrature_k (kinked f, --k 12)", ["hermite", "--f", "Abs(tanh(t)) - 1/2", "--center", "--k", "12",
                                                  "--json"], 2),
    ("refused: hermite --digits 1000 (tanh)", ["hermite", "--f", "tanh", "--digits", "1000", "--json"], 2),
    ("refused: limit --digits 600 (tanh)", ["limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--snr", "1",
                                            "--digits", "600", "--json"], 2),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="FILE", help="also write the timings as JSON")
    args = ap.parse_args(argv)
    rows = []
    for name, cmd, want in CASES:
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "symrmt", *cmd], capture_output=True, text=True)
        dt = time.perf_counter() - t
        ok = p.returncode == want and (want == 0 or len(p.stderr.strip().splitlines()) == 1)
        rows.append({"case": name, "seconds": round(dt, 2), "exit": p.returncode, "as_documented": ok})
        print(f"{name:50s} {dt:7.2f} s  exit {p.returncode}  {'ok' if ok else 'UNEXPECTED'}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    return 0 if all(r["as_documented"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
