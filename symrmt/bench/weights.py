"""The general-``W`` kernel's entry in ``symrmt bench``: one deterministic-equivalent point of ``E_A``.

``symrmt limit --f tanh --c 1/2 --gamma G --weights W.npy`` with ``W`` a seeded Gaussian ``p x p`` matrix
(entries of variance ``1/p``: not symmetric, not normal), measured in a subprocess:

* first point: the Hermite data of ``f(s t)`` and the Mehler sum for ``tau`` (both depend on ``W``), the
  pencil, the float64 homotopy and Newton, and the certification (two evaluations that must agree);
* warm: a second point of the same ``W`` at another ``gamma`` (the Hermite data are reused).

Sizes: ``p = 96`` and ``384`` at 15 and 30 digits, ``p = 192`` at 15 (how the time grows with ``p``), and
``p = 48`` at 30 and 34 digits (``--quick``: ``p = 12`` and ``16``).  Up to 28 digits the refinement is
double-double, from 29 to 32 triple-double (three float64 components), above python-flint ``arb_mat``.
Digits: at ``p = 96`` and ``384`` the 15-digit value against the 30-digit one, at ``p = 48`` the 30-digit
value against python-flint's at 34 digits (another arithmetic); the agreement is reported in digits.
"""

from __future__ import annotations

import time

import mpmath
import numpy as np

from symrmt.models.attention.weights import weights_limit

TARGETS = {"weights_384_15_s": 2.0, "weights_384_30_s": 20.0}
FULL = {"sizes": [[96, [15, 30]], [192, [15]], [384, [15, 30]], [48, [30, 34]]], "gammas": ["1", "1/2"]}
QUICK = {"sizes": [[12, [15, 30]], [16, [15]]], "gammas": ["1", "1/2"]}


def worker(spec: dict) -> dict:
    """Run in a subprocess: for each ``(p, digits)``, the first and the warm point, their values; for a
    ``p`` with two digit counts, their agreement in digits.

    >>> out = worker({"sizes": [[4, [15]]], "gammas": ["1", "1/2"]})
    >>> [sorted(pt) for pt in out["points"]]
    [['digits', 'first_s', 'p', 'value', 'warm_s']]
    """
    out = []
    for p, digit_list in spec["sizes"]:
        W = np.random.default_rng(p).standard_normal((p, p)) / np.sqrt(p)
        values = {}
        for d in digit_list:
            times, vals = [], []
            for g in spec["gammas"]:
                t = time.perf_counter()
                vals.append(weights_limit("tanh", "1/2", [g], W, digits=d)["attention"][0])
                times.append(time.perf_counter() - t)
            values[d] = vals
            out.append({"p": p, "digits": d, "first_s": times[0], "warm_s": times[1],
                        "value": mpmath.nstr(vals[0], d)})
        if len(values) > 1:
            lo, hi = min(values), max(values)
            with mpmath.workdps(hi + 10):
                err = max(abs(a - b) / abs(b) for a, b in zip(values[lo], values[hi]))
            out.append({"p": p, "agree": float(-mpmath.log10(err)) if err else float(hi), "digits": [lo, hi]})
    return {"points": out}


def measure(quick: bool, run_worker) -> dict:
    """One subprocess (``run_worker(kind, spec, env, timeout)``); the caller's disk cache.

    >>> measure(True, lambda kind, spec, env, timeout: (kind, spec["sizes"][0][0]))
    ('weights', 12)
    """
    return run_worker("weights", QUICK if quick else FULL, {}, 3600)


def verdicts(res: dict, row) -> None:
    """Add the rows of the targets table (``row(name, value, target, met, note)``).

    >>> pts = [{"p": 384, "digits": 15, "first_s": 9.0, "warm_s": 3.0}, {"p": 384, "agree": 16.2, "digits": [15, 30]}]
    >>> verdicts({"weights": {"points": pts}}, lambda *r: print(r[0], r[2], r[3]))
    weights: E_A with a 384 x 384 W at 15 digits, warm <= 2.0 s False
      the first point (Hermite data of f(s t) included)  None
    weights: p = 384, the 15-digit E_A against the 30-digit one (digits) >= 15 True
    """
    w = res.get("weights")
    if not w:
        return
    quick = res.get("quick", False)
    for pt in w["points"]:
        if "agree" in pt:
            lo, hi = pt["digits"]
            row(f"weights: p = {pt['p']}, the {lo}-digit E_A against the {hi}-digit one (digits)", pt["agree"],
                f">= {lo}", pt["agree"] >= lo)
            continue
        key = f"weights_{pt['p']}_{pt['digits']}_s"
        target = TARGETS.get(key)
        met = None if (target is None or quick) else pt["warm_s"] <= target
        note = "quick: small p" if quick else (f"{pt['warm_s'] / target:.1f} x the target" if target else "")
        row(f"weights: E_A with a {pt['p']} x {pt['p']} W at {pt['digits']} digits, warm", pt["warm_s"],
            f"<= {target} s" if target else "", met, note)
        row("  the first point (Hermite data of f(s t) included)", pt["first_s"], "", None)
