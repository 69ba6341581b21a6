"""The engine on a sum of independent parts: two random-features forms of independent samples and their sum.

``A`` is the random-features ridge readout ``inv(F*F.T/n + lam*I(N))*F*(X.T*beta + sigma*e)/n`` with
``F = mu1*W*X/sqrt(d) + mus*Th`` (86 unknowns after pruning), ``A2`` the same over an independent copy
``(X2, W2, Th2, e2)``.  The sum ``A.T*A + A2.T*A2`` is planned as two independently solved parts, so its
time should be the sum of the parts' times.  Each expression gets a fresh :class:`~symrmt.engine.Model`
(no plans shared); the sum is measured first, so its parts do not find the sum's compiled code.
Printed: the first 30-digit point of each and a later one (another ``lam``), and the ratios
``time(sum) / (time(A) + time(A2))``.  The later point is the one to read: at the first point the
parts find the code compiled for the sum (the compile cache is keyed by structure), so that ratio
overstates the sum's cost.
"""

from __future__ import annotations

import time

import mpmath

from symrmt.engine import Model

DIGITS = 30
AT = {"phi": "1/2", "psi": "3/2", "mu1": "1/2", "mus": "1/2", "lam": "1/10", "sigma": "1/2", "beta.beta": "1"}
EXPRS = {"sum": "A.T*A + A2.T*A2", "A": "A.T*A", "A2": "A2.T*A2"}


def model():
    """The model with the two independent samples (``--dim d=phi*n, N=psi*n``): the random-features forms
    ``A`` and ``A2`` of :data:`EXPRS`, one per sample.

    >>> sorted(model().vectors())   # beta and the noise of each sample
    ['beta', 'e', 'e2']
    """
    m = Model()
    m.dim("d", "phi*n")
    m.dim("N", "psi*n")
    m.vector("beta", "d")
    for s in ("", "2"):
        m.gaussian(f"X{s}", "d", "n")
        m.gaussian(f"W{s}", "N", "d")
        m.gaussian(f"Th{s}", "N", "n")
        m.gaussian_vector(f"e{s}", "n")
        m.let(f"F{s}", m.parse(f"mu1*W{s}*X{s}/sqrt(d) + mus*Th{s}"))
        m.let(f"A{s}", m.parse(f"inv(F{s}*F{s}.T/n + lam*I(N))*F{s}*(X{s}.T*beta + sigma*e{s})/n"))
    return m


def measure(quick: bool = False) -> dict:
    """``{name: {"first_s", "later_s", "unknowns", "value"}}`` for the sum and each part, and the ratios.

    Takes ``quick`` (unused: the measurement is already small).  (No doctest: it runs the engine for
    seconds.)
    """
    out = {}
    for name in ("sum", "A", "A2"):
        m = model()
        t = time.perf_counter()
        r = m.limit(EXPRS[name], at=AT, digits=DIGITS)
        first = time.perf_counter() - t
        t = time.perf_counter()
        m.limit(EXPRS[name], at={**AT, "lam": "1/5"}, digits=DIGITS)
        later = time.perf_counter() - t
        sizes = [len(tr.system.unknowns) for tr in m.plan(EXPRS[name]).traces]
        out[name] = {"first_s": first, "later_s": later, "unknowns": sizes, "value": mpmath.nstr(r.value, DIGITS)}
    for k in ("first_s", "later_s"):
        out[f"ratio_{k[:-2]}"] = out["sum"][k] / (out["A"][k] + out["A2"][k])
    return out


def report(res: dict, md) -> str:
    """The section of the Markdown report (drawn by ``md(header, rows)``); empty when the parts were not measured.

    >>> parts = {k: {"unknowns": [3], "first_s": 1.0, "later_s": 0.5} for k in ("sum", "A", "A2")}
    >>> parts.update(ratio_first=0.5, ratio_later=0.5)
    >>> text = report({"engine": {"cold_cache": {"parts": parts}}}, lambda header, rows: f"{len(rows)} rows")
    >>> text.splitlines()[-1]
    'sum / (A + A2): first point 0.50, later point 0.50.'
    >>> report({}, None)
    ''
    """
    p = res.get("engine", {}).get("cold_cache", {}).get("parts")
    if not p:
        return ""
    rows = [[k, "+".join(map(str, p[k]["unknowns"])), p[k]["first_s"], p[k]["later_s"]] for k in ("sum", "A", "A2")]
    return ("\n### Trace engine: a sum of two independent forms (`A.T*A + A2.T*A2`, 30 digits, seconds)\n\n"
            + md(["expression", "unknowns per part", "first point", "later point"], rows)
            + f"\n\nsum / (A + A2): first point {p['ratio_first']:.2f}, later point {p['ratio_later']:.2f}.\n")


if __name__ == "__main__":  # pragma: no cover - a one-off measurement
    r = measure()
    for k in ("sum", "A", "A2"):
        print(k, r[k])
    print("ratio (sum / sum of parts): first", round(r["ratio_first"], 3), "later", round(r["ratio_later"], 3))
