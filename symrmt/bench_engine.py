"""The trace engine's entry in ``symrmt bench``: a 6-block pencil at 30 digits.

The expression is the resolvent of a cubed Wishart matrix,
``trace(inv(Z.T*Z*Z.T*Z*Z.T*Z/n**3 + gamma*I(n)))`` with ``Z = gaussian(p, n)``, ``p = c n``,
whose reduced pencil has 6 blocks.  Measured, each in a fresh subprocess:

* first compile, cold: a fresh disk cache; the time of the first ``Model.limit`` at 30 digits
  (normalize, linearize, self-test, write the fixed point and its Jacobian in SymPy, compile,
  solve and certify), import excluded;
* first compile, warm disk cache: the same in a second process (the compiled code is read back);
* warm: later 30-digit points of the same model at other parameter values (each a fresh
  homotopy, Newton polish and two-precision certification), median over the points.

The value is also checked against its independent closed form: with ``r_k`` the three cube roots
of ``-gamma``, ``1/(x^3 + gamma) = sum_k 1/(3 r_k^2 (x - r_k))``, so the trace is
``sum_k m(r_k)/(3 r_k^2)`` with ``m`` the Marchenko-Pastur Stieltjes transform (ratio ``c``).
"""

from __future__ import annotations

import statistics
import time

EXPR = "trace(inv(Z.T*Z*Z.T*Z*Z.T*Z/n**3 + gamma*I(n)))"
DIGITS = 30
FIRST = {"c": "1/2", "gamma": "1"}
WARM = ({"c": "1/2", "gamma": "1/2"}, {"c": "1/2", "gamma": "1/5"}, {"c": "2", "gamma": "2"},
        {"c": "2", "gamma": "1/10"}, {"c": "1/3", "gamma": "3"})
TARGETS = {"engine_warm_s": 0.2, "engine_first_compile_s": 5.0}


def closed_form(c: str, gamma: str, dps: int = 50):
    """``sum_k m(r_k) / (3 r_k^2)`` over the cube roots ``r_k`` of ``-gamma`` (independent of the engine)."""
    import mpmath

    def q(text):
        a, _, b = text.partition("/")
        return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)

    with mpmath.workdps(dps + 10):
        cc, g = q(c), q(gamma)
        total = mpmath.mpc(0)
        for k in range(3):
            r = mpmath.cbrt(g) * mpmath.expjpi(mpmath.mpf(2 * k + 1) / 3)
            if abs(mpmath.im(r)) < mpmath.mpf(10) ** -(dps + 5):
                r = mpmath.mpf(mpmath.re(r))
            # m(z) = tau((Z^T Z/n - z)^{-1}): -z m^2 + (c - 1 - z) m - 1 = 0, the root with Im m Im z > 0
            # (for real z < 0: m > 0)
            a, b = -r, cc - 1 - r
            disc = mpmath.sqrt(b * b + 4 * a)
            r1, r2 = (-b + disc) / (2 * a), (-b - disc) / (2 * a)
            if mpmath.im(r) != 0:
                m = r1 if mpmath.im(r1) * mpmath.im(r) > 0 else r2
            else:
                m = r1 if mpmath.re(r1) > 0 else r2
            total += m / (3 * r * r)
        with mpmath.workdps(dps):
            return +mpmath.re(total)


def worker(spec: dict) -> dict:
    """Run in a subprocess (the caller sets the cache folder): first and warm 30-digit points."""
    import mpmath

    t0 = time.perf_counter()
    from symrmt.engine import Model

    import_s = time.perf_counter() - t0
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    t = time.perf_counter()
    first = m.limit(EXPR, at=FIRST, digits=DIGITS)
    first_s = time.perf_counter() - t
    blocks = [pen.size for pen in m.pencil(EXPR)]
    warm, agree = [], []
    for at in WARM[: spec.get("warm_points", len(WARM))]:
        t = time.perf_counter()
        r = m.limit(EXPR, at=at, digits=DIGITS)
        warm.append(time.perf_counter() - t)
        with mpmath.workdps(DIGITS + 20):
            ref = closed_form(at["c"], at["gamma"], DIGITS + 20)
            err = abs(r.value - ref) / abs(ref)
            agree.append(float(-mpmath.log10(err)) if err else float(DIGITS + 20))
    return {"import_s": import_s, "first_s": first_s, "blocks": blocks, "warm_s": warm,
            "warm_median_s": statistics.median(warm), "agree_digits_min": min(agree),
            "first_value": mpmath.nstr(first.value, DIGITS)}


def measure(quick: bool, run_worker) -> dict:
    """Cold (fresh cache folder) and warm-cache processes; ``run_worker(kind, spec, env, timeout)``."""
    import tempfile

    spec = {"warm_points": 2 if quick else len(WARM)}
    with tempfile.TemporaryDirectory(prefix="symrmt-bench-engine-") as fresh:
        cold = run_worker("engine", spec, {"SYMRMT_CACHE_DIR": fresh, "SYMRMT_NO_CACHE": "0"}, 900)
        warm_cache = run_worker("engine", spec, {"SYMRMT_CACHE_DIR": fresh, "SYMRMT_NO_CACHE": "0"}, 900)
    return {"expression": EXPR, "digits": DIGITS, "cold_cache": cold, "warm_cache": warm_cache}


def verdicts(res: dict, row) -> None:
    """Add the engine's rows to the targets table (``row(name, value, target, met, note)``)."""
    eng = res.get("engine")
    if not eng:
        return
    cold, wc = eng["cold_cache"], eng["warm_cache"]
    b = "+".join(map(str, cold["blocks"]))
    row(f"engine: {b}-block pencil, one 30-digit point after the first compile (median)", cold["warm_median_s"],
        f"<= {TARGETS['engine_warm_s']} s", cold["warm_median_s"] <= TARGETS["engine_warm_s"])
    row("engine: first compile and first 30-digit point, fresh disk cache", cold["first_s"],
        f"<= {TARGETS['engine_first_compile_s']} s", cold["first_s"] <= TARGETS["engine_first_compile_s"])
    row("  the same, warm disk cache (second process)", wc["first_s"], "", None)
    row("engine: 30-digit values against the closed form (worst, digits)", cold["agree_digits_min"], ">= 30",
        cold["agree_digits_min"] >= 30)


def report(res: dict, md) -> str:
    """The engine's section of the Markdown report (``md(header, rows)`` makes a table)."""
    eng = res.get("engine")
    if not eng:
        return ""
    cold, wc = eng["cold_cache"], eng["warm_cache"]
    rows = [
        ["import symrmt.engine", cold["import_s"], wc["import_s"]],
        ["first 30-digit point (derive, self-test, compile, solve, certify)", cold["first_s"], wc["first_s"]],
        ["later 30-digit points, median", cold["warm_median_s"], wc["warm_median_s"]],
        ["later 30-digit points, each", ", ".join(f"{t:.3f}" for t in cold["warm_s"]),
         ", ".join(f"{t:.3f}" for t in wc["warm_s"])],
    ]
    return (f"\n### Trace engine: `{eng['expression']}` ({'+'.join(map(str, cold['blocks']))} blocks, "
            f"{eng['digits']} digits, seconds)\n\n" + md(["step", "fresh disk cache", "warm disk cache"], rows)
            + f"\n\nWorst agreement with the closed form over the later points: {cold['agree_digits_min']:.1f} digits.\n")
