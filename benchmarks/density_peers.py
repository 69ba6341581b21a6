#!/usr/bin/env python
"""The Marchenko-Pastur density by other packages, timed, for the digits-against-time figure.

Run it with an interpreter that has the peers installed (they are not dependencies of symrmt; it
imports nothing from symrmt)::

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install freealg scikit-rmt rmtool
    /tmp/peers/bin/python benchmarks/density_peers.py --json /tmp/peers.json

The law is that of the ``p x p`` matrix ``Z Z^T / n`` with ``p / n = 1/2`` (ratio 1/2 in each package's
convention), on the ``K`` points (default 400) of ``[-0.2, 3.2]`` that ``density_digits_time.py`` uses
for symrmt's ``Z.T*Z/n`` (whose continuous part is half of it).  Each package's call is timed warm, best
of three, together with ``numpy.linalg.eigvalsh`` of a 400 x 400 matrix in the same run; the values are
written to the JSON file, and ``density_digits_time.py --peers FILE`` counts their correct digits against
the closed form at 60 digits:

* ``rmtool``: the polynomial method (``Lmz2pdf`` of ``wishartpol(1/2)``: the roots of the algebraic
  equation of the Stieltjes transform at each point);
* ``freealg``: its closed-form distribution ``distributions.MarchenkoPastur(lam=1/2).density``, and its own
  method, ``FreeForm(eig).fit()`` at its defaults on the eigenvalues of one sampled matrix (``p = 1000``,
  ``n = 2000``, seed 0; the fit not timed) evaluated by ``density``;
* ``scikit-rmt``: its closed form ``MarchenkoPasturDistribution(ratio=1/2).pdf``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np


def _best(f, reps=3):
    f()  # warm
    best, out = float("inf"), None
    for _ in range(reps):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def _eigvalsh_s(k=400):
    a = np.random.default_rng(0).standard_normal((k, k))
    a = a + a.T
    return min(_best(lambda: np.linalg.eigvalsh(a), 1)[0] for _ in range(15))


def measure(k: int) -> dict:
    xs = np.array([-0.2 + 3.4 * i / (k - 1) for i in range(k)])
    out = {"points": k, "x": xs.tolist(), "eigvalsh_400_s": _eigvalsh_s(), "peers": []}

    def add(name, method, f):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s, v = _best(f)
        except Exception as exc:  # a package that fails here is reported, not fatal
            out["peers"].append({"package": name, "method": method, "error": f"{type(exc).__name__}: {exc}"})
            print(f"{name:11s} failed: {exc}", flush=True)
            return
        v = np.asarray(v, dtype=float)
        out["peers"].append({"package": name, "method": method, "seconds": s,
                             "values": [None if not np.isfinite(a) else float(a) for a in v]})
        print(f"{name:11s} {method:32s} {s * 1e3:9.3f} ms", flush=True)

    try:
        import rmtool
        from rmtool.density import Lmz2pdf
        from rmtool.ensembles import wishartpol

        add("rmtool", "polynomial method (Lmz2pdf)", lambda: Lmz2pdf(wishartpol(0.5), xx=xs).density)
        out["rmtool_version"] = getattr(rmtool, "__version__", "?")
    except ImportError as exc:
        print("rmtool not installed:", exc)
    try:
        import freealg

        fa = freealg.distributions.MarchenkoPastur(lam=0.5)
        add("freealg", "closed form (distributions)", lambda: fa.density(xs))
        # its own method: a free-form fit to the eigenvalues of one sampled matrix (p = 1000, n = 2000, seed 0;
        # the fit, at its defaults, is not timed: the density from the fitted form is)
        z = np.random.default_rng(0).standard_normal((1000, 2000))
        eig = np.linalg.eigvalsh(z @ z.T / 2000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ff = freealg.FreeForm(eig, support=((1 - 0.5 ** 0.5) ** 2, (1 + 0.5 ** 0.5) ** 2))
            ff.fit()
        add("freealg", "FreeForm fit, defaults (1000 eigs)", lambda: ff.density(xs))
        out["freealg_version"] = freealg.__version__
    except ImportError as exc:
        print("freealg not installed:", exc)
    try:
        import skrmt
        from skrmt.ensemble.spectral_law import MarchenkoPasturDistribution

        mp = MarchenkoPasturDistribution(ratio=0.5)
        add("scikit-rmt", "closed form (pdf)", lambda: mp.pdf(xs))
        out["scikit_rmt_version"] = getattr(skrmt, "__version__", "?")
    except ImportError as exc:
        print("scikit-rmt not installed:", exc)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=400)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    res = measure(args.points)
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
