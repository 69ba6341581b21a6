"""The spectral density's entry in ``symrmt bench``: 400 points, warm, at 15 digits.

Two densities on a grid of 400 points, each certified at 15 digits with its edges and atoms
(:mod:`symrmt.engine.density.solver`): the Marchenko-Pastur law of ``Z.T*Z/n`` (``c = 1/2``, on
``[-0.2, 3.2]``: an atom and two edges) and the tanh attention kernel ``K`` of ``kernel(tanh, Z)``
(``c = 1/2``, on ``[-2, 3]``).  Each is timed after a first call on a few points of the same model
(the compile and the code cache are warm), in this process.  Targets: 2 s and 10 s.

The float64 path (``fast=True``, :mod:`symrmt.engine.density.fast`) on 400 points of five laws
(Marchenko-Pastur, semicircle + MP, MP x MP as ``Z1.T*Z2*Z2.T*Z1/n**2``, a deformed Wigner matrix
``G/sqrt(n) + D``, the tanh kernel ``K``), values only (``edges=False, atoms=False``), warm, best of
:data:`FAST_REPEATS` calls (a call takes about 10-50 ms: on a loaded machine the best of a few is the one
that ran undisturbed, as for the yardstick), against ``numpy.linalg.eigvalsh`` of a 400 x 400 symmetric
matrix timed in the same run (best of 2 x 15 calls; the yardstick of this machine's speed): the ratio and
its target (2); and the fewest correct digits over the 400 points against the certified path at 20 digits
(target 12).
"""

from __future__ import annotations

import time

import mpmath
import numpy as np

from symrmt.engine import Model, kernel

TARGETS = {"density_mp_400_s": 2.0, "density_tanh_400_s": 10.0, "fast_ratio": 2.0, "fast_digits": 12}
#: calls of the float64 path per law in :func:`measure_fast`, the best one timed
FAST_REPEATS = 7


def _laws():
    """``(name, model, expression, at, (lo, hi))`` of the five laws of :func:`measure_fast` (declared
    through the engine's own API)."""
    def wishart(*names):
        m = Model()
        m.dim("p", "c*n")
        for name in names:
            m.gaussian(name, "p", "n")
        return m

    scmp = wishart("Z")
    scmp.goe("G", "n")
    wig = Model()
    wig.goe("G", "n")
    wig.diag("D", "n", [-1, 2], ["1/3", "2/3"])
    tanh = wishart("Z")
    tanh.let("K", kernel("tanh", tanh.matrices["Z"], model=tanh))
    return [("Marchenko-Pastur", wishart("Z"), "Z.T*Z/n", {"c": "1/2"}, (-0.2, 3.2)),
            ("semicircle + MP", scmp, "G/sqrt(n) + Z.T*Z/n", {"c": "1/2"}, (-2.5, 5.0)),
            ("MP x MP", wishart("Z1", "Z2"), "Z1.T*Z2*Z2.T*Z1/n**2", {"c": "1/2"}, (-0.2, 6.0)),
            ("deformed Wigner", wig, "G/sqrt(n) + D", {}, (-4.0, 5.0)),
            ("tanh kernel K", tanh, "K", {"c": "1/2"}, (-2.0, 3.0))]


def _eigvalsh_s(k: int = 400) -> float:
    """Best time of ``numpy.linalg.eigvalsh`` on a ``k x k`` symmetric matrix (the yardstick)."""
    a = np.random.default_rng(0).standard_normal((k, k))
    a = a + a.T
    best = float("inf")
    for _ in range(15):
        t = time.perf_counter()
        np.linalg.eigvalsh(a)
        best = min(best, time.perf_counter() - t)
    return best


def _correct_digits(fast, cert) -> float:
    """The fewest correct digits of ``fast`` against ``cert`` over the points both give (99: exact)."""
    worst = 99.0
    with mpmath.workdps(30):
        for a, b in zip(fast.density, cert.density):
            if a is None or b is None:
                continue
            err = abs(mpmath.mpf(a) - b)
            if err:
                worst = min(worst, float(-mpmath.log10(err / abs(b))) if b != 0 else float(-mpmath.log10(err)))
    return worst


def measure_fast(quick: bool = False) -> dict:
    """The float64 density path on the five laws (see the module docstring)."""
    k = 40 if quick else 400
    yard = _eigvalsh_s()
    repeats = 1 if quick else FAST_REPEATS
    out = {"points": k, "repeats": repeats, "eigvalsh_400_s": yard, "laws": []}
    for name, model, expr, at, (lo, hi) in _laws():
        xs = [lo + (hi - lo) * i / (k - 1) for i in range(k)]
        model.density(expr, x=xs[:5], at=at, fast=True, edges=False, atoms=False)  # warm
        best, d = float("inf"), None
        for _ in range(repeats):
            t = time.perf_counter()
            d = model.density(expr, x=xs, at=at, fast=True, edges=False, atoms=False)
            best = min(best, time.perf_counter() - t)
        t = time.perf_counter()
        cert = model.density(expr, x=xs, at=at, digits=20, edges=False, atoms=False)
        cert_s = time.perf_counter() - t
        out["laws"].append({"law": name, "seconds": best, "ratio": best / yard, "certified_20_s": cert_s,
                            "float_points": d.status.count("float"), "min_digits": _correct_digits(d, cert)})
    out["eigvalsh_400_s"] = min(yard, _eigvalsh_s())
    for law in out["laws"]:
        law["ratio"] = law["seconds"] / out["eigvalsh_400_s"]
    return out


def _wishart():
    model = Model()
    model.dim("p", "c*n")
    model.declare("Z=gaussian(p,n)")
    return model


def _mp():
    return _wishart(), "Z.T*Z/n", (-0.2, 3.2)


def _tanh():
    model = _wishart()
    model.let("K", kernel("tanh", model.matrices["Z"], model=model))
    return model, "K", (-2.0, 3.0)


def measure(quick: bool = False) -> dict:
    """Time the engine's densities (Marchenko-Pastur and a tanh kernel matrix) on a grid of 100 (``quick``) or
    400 points, certified and float64, warm; returns ``{"density": ..., "density_fast": ...}`` for the report."""
    out = {}
    k = 100 if quick else 400
    for name, make in (("mp", _mp), ("tanh", _tanh)):
        model, expr, (lo, hi) = make()
        model.density(expr, x=[lo, (lo + hi) / 2, hi], at={"c": "1/2"})  # warm: compile and code cache
        xs = [lo + (hi - lo) * i / (k - 1) for i in range(k)]
        t = time.perf_counter()
        d = model.density(expr, x=xs, at={"c": "1/2"}, digits=15)
        out[name] = {"points": k, "seconds": time.perf_counter() - t, "support": [[float(a) if a is not None else None,
                     float(b) if b is not None else None] for a, b in d.support()],
                     "atoms": [{"x": float(a["x"]), "mass": float(a["mass"])} for a in d.atoms()]}
    return out


def verdicts(res: dict, row) -> None:
    """Add the density rows (measured ratio against its target) to the bench's verdict table through ``row``
    (``row(name, value, target, met, note)``; ``met`` is ``None`` for a quick run, judged at 400 points only).

    >>> den = {"mp": {"points": 400, "seconds": 1.5}, "tanh": {"points": 400, "seconds": 12.0}}
    >>> verdicts({"density": den}, lambda *r: print(r[1], r[2], r[3]))
    1.5 <= 2.0 s (400 points) True
    12.0 <= 10.0 s (400 points) False
    """
    den = res.get("density")
    if not den:
        return
    fast = res.get("density_fast")
    if fast:
        full = fast["points"] == 400
        for law in fast["laws"]:
            row(f"density --fast: {law['law']}, {fast['points']} points / eigvalsh 400x400", law["ratio"],
                f"<= {TARGETS['fast_ratio']:.0f}", (law["ratio"] <= TARGETS["fast_ratio"]) if full else None,
                f"{law['seconds']:.3f} s against {fast['eigvalsh_400_s'] * 1000:.1f} ms; "
                f"{law['float_points']} float points" + ("" if full else "; quick: judged at 400 points"))
            row("  fewest correct digits vs the certified path (20 digits)", law["min_digits"],
                f">= {TARGETS['fast_digits']}", law["min_digits"] >= TARGETS["fast_digits"])
    for name, key, label in (("mp", "density_mp_400_s", "Marchenko-Pastur"), ("tanh", "density_tanh_400_s", "tanh kernel")):
        r = den[name]
        met = r["seconds"] <= TARGETS[key] if r["points"] == 400 else None
        row(f"density: {label}, {r['points']} points at 15 digits, warm", r["seconds"], f"<= {TARGETS[key]} s (400 points)",
            met)


def report(res: dict, md) -> str:
    """The density section of the bench report (Markdown tables drawn by ``md``); empty when not measured.

    >>> den = {"mp": {"points": 400, "seconds": 1.5, "support": [[0.09, 2.9]], "atoms": [{"x": 0.0, "mass": 0.5}]}}
    >>> print(report({"density": den}, lambda header, rows: f"{header[0]}: {rows[0][0]}, {rows[0][2]} s").strip())
    ### Spectral densities (15 digits, warm, seconds)
    <BLANKLINE>
    matrix: mp, 1.5 s
    """
    den = res.get("density")
    if not den:
        return ""
    rows = [[name, r["points"], r["seconds"], str(r["support"]), str(r["atoms"])] for name, r in den.items()]
    text = "\n### Spectral densities (15 digits, warm, seconds)\n\n" + md(["matrix", "points", "s", "support",
                                                                         "atoms"], rows) + "\n"
    fast = res.get("density_fast")
    if fast:
        text += (f"\n### Spectral densities, float64 path (--fast), {fast['points']} points, values only, warm, "
                 f"best of {fast.get('repeats', FAST_REPEATS)}; eigvalsh 400x400: {fast['eigvalsh_400_s'] * 1000:.1f} ms\n\n")
        text += md(["law", "s", "/ eigvalsh", "target", "certified (20 digits) s", "float points",
                    "fewest correct digits"],
                   [[f["law"], f["seconds"], f["ratio"], f"<= {TARGETS['fast_ratio']:.0f}", f["certified_20_s"],
                     f["float_points"], f["min_digits"]] for f in fast["laws"]]) + "\n"
    return text
