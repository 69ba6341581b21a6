#!/usr/bin/env python
"""Correct digits against time for symrmt's spectral densities: the certified path and ``--fast``.

Usage::

    python benchmarks/density_digits_time.py [--points K] [--out docs/figures/density_digits_time.png]
        [--json FILE]

Four laws on ``K`` points (default 400), warm (a first call of each path on a few points of the same
model): Marchenko-Pastur ``Z.T*Z/n`` at ``c = 1/2`` on ``[-0.2, 3.2]``, semicircle + MP on ``[-2.5, 5]``,
MP x MP ``Z1.T*Z2*Z2.T*Z1/n**2`` on ``[-0.2, 6]`` and a deformed Wigner matrix ``G/sqrt(n) + D`` on
``[-4, 5]``, values only (``edges=False, atoms=False``).  Each is computed by the float64 path
(``fast=True``, best of three) and by the certified path at 15 and 30 digits; the correct digits of each
run are its fewest over the points against a reference: the closed form at 60 digits for
Marchenko-Pastur, the certified path at 45 digits for the others.  ``numpy.linalg.eigvalsh`` of a
400 x 400 matrix is timed in the same run (the yardstick of the machine's speed).  The figure plots the
correct digits against the time of each run (log scale), one marker per path, one colour per law.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import mpmath

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from symrmt.bench.density import _eigvalsh_s, _laws  # noqa: E402
from symrmt.engine.tree import exact_value  # noqa: E402



def _mp(x):
    c = mpmath.mpf(1) / 2
    a, b = (mpmath.sqrt(c) - 1) ** 2, (mpmath.sqrt(c) + 1) ** 2
    return mpmath.sqrt((b - x) * (x - a)) / (2 * mpmath.pi * x) if a < x < b else mpmath.mpf(0)


def _digits(values, ref) -> float:
    worst = 99.0
    with mpmath.workdps(60):
        for a, b in zip(values, ref):
            if a is None or b is None:
                continue
            err = abs(mpmath.mpf(a) - b)
            if err:
                worst = min(worst, float(-mpmath.log10(err / abs(b))) if b != 0 else float(-mpmath.log10(err)))
    return worst


def measure(k: int) -> dict:
    out = {"points": k, "eigvalsh_400_s": _eigvalsh_s(), "laws": []}
    for name, model, expr, at, (lo, hi) in _laws()[:4]:  # the four laws without the kernel
        xs = [lo + (hi - lo) * i / (k - 1) for i in range(k)]
        if name == "Marchenko-Pastur":  # at the exact point the engine reads (the float's decimal text)
            with mpmath.workdps(60):
                ref = []
                for x in xs:
                    q = exact_value(x, "x")
                    ref.append(_mp(mpmath.mpf(q.numerator) / q.denominator))
        else:
            ref = model.density(expr, x=xs, at=at, digits=45, edges=False, atoms=False).density
        runs = []
        for label, kw, reps in (("fast", {"fast": True}, 3), ("certified 15", {"digits": 15}, 1),
                                ("certified 30", {"digits": 30}, 1)):
            model.density(expr, x=xs[:4], at=at, edges=False, atoms=False, **kw)  # warm
            best, d = float("inf"), None
            for _ in range(reps):
                t = time.perf_counter()
                d = model.density(expr, x=xs, at=at, edges=False, atoms=False, **kw)
                best = min(best, time.perf_counter() - t)
            runs.append({"path": label, "seconds": best, "digits": _digits(d.density, ref)})
            print(f"{name:18s} {label:13s} {best:7.3f} s  {runs[-1]['digits']:5.1f} digits", flush=True)
        out["laws"].append({"law": name, "runs": runs})
    return out


def plot(res: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    markers = {"fast": "o", "certified 15": "s", "certified 30": "D"}
    for i, law in enumerate(res["laws"]):
        for r in law["runs"]:
            ax.scatter(r["seconds"], r["digits"], marker=markers[r["path"]], color=f"C{i}",
                       label=f"{law['law']}" if r["path"] == "fast" else None)
    for p, m in markers.items():
        ax.scatter([], [], marker=m, color="gray", label=p)
    ax.axvline(2 * res["eigvalsh_400_s"], color="k", ls=":", lw=1)
    ax.text(2 * res["eigvalsh_400_s"], 1, " 2 x eigvalsh(400)", rotation=90, va="bottom", fontsize=8)
    ax.axhline(12, color="k", ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel(f"seconds for {res['points']} points (warm)")
    ax.set_ylabel("correct digits (fewest over the points)")
    ax.set_ylim(0, None)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("symrmt densities: correct digits against time")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=400)
    ap.add_argument("--out", default=None, help="the figure (PNG)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    res = measure(args.points)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=1)
    if args.out:
        plot(res, args.out)


if __name__ == "__main__":
    main()
