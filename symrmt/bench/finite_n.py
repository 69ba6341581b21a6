"""The finite-n prediction's entry in ``symrmt bench``: time per point and digits against the mpmath solve.

* time per point, warm, as ``symrmt limit --n`` computes it (both discretizations, 2 x 56 and 2 x 40 token
  types, 15 digits): tanh, ``||mu||^2 = ||w||^2 = 4`` aligned, ``n = 1024``, ``c`` in {1/2, 2}, ``gamma`` in
  {1, 0.1, 0.001}; wall and CPU seconds (target: 2 s);
* the cost against the number of token types ``2 Q`` (one discretization, ``gamma = 0.1``, ``c = 1/2``);
* digits: the extended-precision value of the discretized system against the same system solved in mpmath at
  30 digits (:mod:`symrmt.models.attention.finite_n_reference`; small ``Q``, the mpmath solve taking seconds per
  type pair); target 15.
"""

from __future__ import annotations

import time
from fractions import Fraction

import mpmath

from symrmt.models.attention import finite_n as FN
from symrmt.models.attention.finite_n_reference import reference_point
from symrmt.models.attention.geometry import LowRankGeometry

TARGETS = {"finite_n_point_s": 2.0, "finite_n_digits": 15}


def _digits(fast, ref) -> float:
    with mpmath.workdps(40):
        err = abs(fast - ref)
        return float(-mpmath.log10(err / abs(ref))) if err else 40.0


def measure(quick: bool = False) -> dict:
    """The three measurements of the module docstring (``quick``: one point, two sizes, one check).

    Returns ``{"points", "types", "digits"}`` (seconds, CPU seconds, values and agreeing digits).  (No
    doctest: it runs for seconds.)
    """
    geo = LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]])
    out = {"points": [], "types": [], "digits": []}
    FN.finite_n_values("tanh", "1/2", ["1"], geo, 1024)  # warm: compile the moments' code
    for c in (["1/2"] if quick else ["1/2", "2"]):
        for g in (["1"] if quick else ["1", "1/10", "1/1000"]):
            t, cpu = time.perf_counter(), time.process_time()
            vals, agree, q = FN.finite_n_values("tanh", c, [g], geo, 1024)
            out["points"].append({"c": c, "gamma": g, "s": time.perf_counter() - t, "cpu_s": time.process_time() - cpu,
                                  "value": float(vals[0]), "discretization_digits": agree})
    for q in ([8, 16] if quick else [8, 16, 28, 40, 56, 80, 112]):
        t, cpu = time.perf_counter(), time.process_time()
        FN.finite_n_point(1024, Fraction(1, 2), Fraction(4), Fraction(4), Fraction(1, 10), q)
        out["types"].append({"types": 2 * q, "s": time.perf_counter() - t, "cpu_s": time.process_time() - cpu})
    cases = [("tanh", "1/2", "1", 1024, 4, 4, 3)]
    if not quick:
        cases += [("relu", "2", "1/1000", 256, 8, 8, 3), ("erf", "2", "1/10", 512, 2, 8, 3),
                  ("tanh", "2", "1/1000", 256, 8, 4, 5)]
    for f, c, g, n, m2, w2, q in cases:
        args = (Fraction(c), Fraction(m2), Fraction(w2), Fraction(g))
        t = time.perf_counter()
        ref = reference_point(f, *args, n, q, dps=30)
        ref_s = time.perf_counter() - t
        fast = FN.longdouble_to_mpf(FN.finite_n_point(n, args[0], args[1], args[2], args[3], q, f_name=f))
        out["digits"].append({"f": f, "c": c, "gamma": g, "n": n, "snr": m2, "w2": w2, "types": 2 * q,
                              "digits": _digits(fast, ref), "reference_s": ref_s})
    return out


def verdicts(res: dict, row) -> None:
    """Add the finite-n rows (the worst CPU time per point and the fewest digits, against :data:`TARGETS`) to the
    bench's verdict table through ``row(name, value, target, met, note)``; nothing when not measured.

    >>> fin = {"points": [{"c": "1/2", "gamma": "1", "s": 0.9, "cpu_s": 0.8}], "digits": [{"digits": 15.6}]}
    >>> verdicts({"finite_n": fin}, lambda *r: print(r[1], r[2], r[3]))
    0.8 <= 2.0 s True
    15.6 >= 15 True
    """
    fin = res.get("finite_n")
    if not fin:
        return
    worst = max(fin["points"], key=lambda p: p["cpu_s"])
    row(f"finite-n point (15 digits, 2 discretizations), worst of {len(fin['points'])}: CPU s", worst["cpu_s"],
        f"<= {TARGETS['finite_n_point_s']} s", worst["cpu_s"] <= TARGETS["finite_n_point_s"],
        f"c = {worst['c']}, gamma = {worst['gamma']}; wall {worst['s']:.2f} s")
    least = min(d["digits"] for d in fin["digits"])
    row("finite-n: fewest digits against the mpmath solve of the same system", least,
        f">= {TARGETS['finite_n_digits']}", least >= TARGETS["finite_n_digits"])


def report(res: dict, md) -> str:
    """The finite-n section of the bench report (Markdown tables drawn by ``md(header, rows)``); empty when not
    measured.

    >>> report({}, None)
    ''
    >>> fin = {"points": [{"c": "1/2", "gamma": "1", "s": 0.9, "cpu_s": 0.8, "value": 0.5, "discretization_digits": 16}],
    ...        "types": [{"types": 16, "s": 0.1, "cpu_s": 0.1}],
    ...        "digits": [{"f": "tanh", "c": "1/2", "gamma": "1", "n": 1024, "snr": 4, "w2": 4, "types": 6,
    ...                    "digits": 15.6, "reference_s": 3.0}]}
    >>> report({"finite_n": fin}, lambda header, rows: f"{len(rows)} row(s)").count("row(s)")   # three tables
    3
    """
    fin = res.get("finite_n")
    if not fin:
        return ""
    text = "\n### Finite-n prediction (tanh, aligned 4/4, n = 1024): one point, warm\n\n"
    text += md(["c", "gamma", "wall s", "CPU s", "E_A", "discretization digits"],
               [[p["c"], p["gamma"], p["s"], p["cpu_s"], p["value"], p["discretization_digits"]]
                for p in fin["points"]]) + "\n"
    base = next((t for t in fin["types"] if t["types"] == 112), fin["types"][-1])
    text += "\n### Finite-n: cost against the number of token types (one discretization, gamma = 0.1)\n\n"
    text += md(["token types", "wall s", "CPU s", f"CPU vs {base['types']} types"],
               [[t["types"], t["s"], t["cpu_s"], t["cpu_s"] / base["cpu_s"]] for t in fin["types"]]) + "\n"
    text += "\n### Finite-n: digits against the mpmath solve of the same discretized system (30 digits)\n\n"
    text += md(["f", "c", "gamma", "n", "mu^2", "w^2", "token types", "digits", "mpmath solve s"],
               [[d["f"], d["c"], d["gamma"], d["n"], d["snr"], d["w2"], d["types"], d["digits"], d["reference_s"]]
                for d in fin["digits"]]) + "\n"
    return text
