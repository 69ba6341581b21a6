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
correct digits against the time of each run divided by that yardstick (log scale), one marker per path,
one colour per law.

``--peers FILE``: the JSON of ``benchmarks/density_peers.py`` (other packages on Marchenko-Pastur, run in
their own environment), drawn as crosses with their correct digits counted here; the ranges the issue
reported for rmtool and freealg over the four laws are drawn as hatched boxes (``ISSUE_PEERS``).
``--replot FILE``: redraw from a JSON this script wrote (``--json``) without measuring.
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
from symrmt.engine.lang.tree import exact_value  # noqa: E402



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


#: the peers' figures of the issue that asked for this comparison (same four laws, measured on this machine
#: by its author): ``(package, (seconds lo, hi), (digits lo, hi))``
ISSUE_PEERS = [("rmtool", (0.07, 0.24), (11.9, 13.5)), ("freealg", (0.006, 0.042), (2.4, 3.1))]
#: the issue's yardstick: "numpy.linalg.eigvalsh of a 400 x 400 matrix ... about 20-40 ms here" (its middle)
ISSUE_EIGVALSH_S = 0.030


def peer_digits(peers: dict) -> list:
    """The correct digits of each peer run of ``density_peers.py`` (its JSON), fewest over the points, against
    the Marchenko-Pastur closed form of ``Z Z^T / n`` (``p / n = 1/2``) at 60 digits; a point without a value
    counts 0 digits."""
    out = []
    with mpmath.workdps(60):
        ref = [2 * _mp(mpmath.mpf(x)) for x in peers["x"]]  # Z Z^T/n: twice the continuous part of Z^T Z/n
        for p in peers["peers"]:
            if "values" not in p:
                continue
            worst = 99.0
            for v, r in zip(p["values"], ref):
                if v is None:
                    worst = 0.0
                    continue
                err = abs(mpmath.mpf(v) - r)
                if err:
                    worst = min(worst, max(0.0, float(-mpmath.log10(err / abs(r))) if r != 0
                                           else float(-mpmath.log10(err))))
            out.append({"package": p["package"], "method": p["method"], "seconds": p["seconds"], "digits": worst,
                        "eigvalsh_400_s": peers["eigvalsh_400_s"]})
            print(f"{p['package']:11s} {p['method']:36s} {p['seconds']:9.5f} s  {worst:5.1f} digits", flush=True)
    return out


def plot(res: dict, path: str) -> None:
    """Correct digits against time in units of the same run's ``eigvalsh`` (400 x 400): a load on the machine
    slows both alike, so runs measured at different moments compare."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patches
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.6, 4.4))
    yard = res["eigvalsh_400_s"]
    markers = {"fast": "o", "certified 15": "s", "certified 30": "D"}
    for i, law in enumerate(res["laws"]):
        for r in law["runs"]:
            ax.scatter(r["seconds"] / yard, r["digits"], marker=markers[r["path"]], color=f"C{i}",
                       label=f"symrmt: {law['law']}" if r["path"] == "fast" else None)
    for p, m in markers.items():
        ax.scatter([], [], marker=m, color="gray", label=f"symrmt {p}")
    for k, p in enumerate(res.get("peers", [])):  # measured here, Marchenko-Pastur only, against their run's eigvalsh
        ax.scatter(p["seconds"] / p["eigvalsh_400_s"], p["digits"], marker="x", s=50, color=f"C{4 + k}",
                   label=f"{p['package']}: {p['method']} (MP)")
    issue_yard = ISSUE_EIGVALSH_S
    for name, (t0, t1), (d0, d1) in ISSUE_PEERS:  # the issue's ranges over the four laws
        ax.add_patch(matplotlib.patches.Rectangle((t0 / issue_yard, d0), (t1 - t0) / issue_yard, max(d1 - d0, 0.3),
                                                  fill=False, hatch="//", color="gray", lw=0.8))
        ax.text(t1 / issue_yard, d1, f" {name} (issue)", fontsize=7, va="bottom", color="gray")
    ax.axvline(2, color="k", ls=":", lw=1)
    ax.text(2, 1, " target: 2 x eigvalsh", rotation=90, va="bottom", fontsize=8)
    ax.axhline(12, color="k", ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel(f"time for {res['points']} points / eigvalsh(400 x 400) in the same run (warm)")
    ax.set_ylabel("correct digits (fewest over the points)")
    ax.set_ylim(0, None)
    ax.legend(fontsize=6.5, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title("densities on 400 points: correct digits against time")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=400)
    ap.add_argument("--out", default=None, help="the figure (PNG)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--peers", default=None, help="the JSON of density_peers.py (run in the peers' environment)")
    ap.add_argument("--replot", default=None, help="plot a JSON this script wrote, measuring nothing")
    args = ap.parse_args()
    if args.replot:
        with open(args.replot, encoding="utf-8") as fh:
            res = json.load(fh)
    else:
        res = measure(args.points)
    if args.peers:
        with open(args.peers, encoding="utf-8") as fh:
            res["peers"] = peer_digits(json.load(fh))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=1)
    if args.out:
        plot(res, args.out)


if __name__ == "__main__":
    main()
