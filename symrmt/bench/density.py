"""The spectral density's entry in ``symrmt bench``: 400 points, warm, at 15 digits.

Two densities on a grid of 400 points, each certified at 15 digits with its edges and atoms
(:mod:`symrmt.engine.density_solver`): the Marchenko-Pastur law of ``Z.T*Z/n`` (``c = 1/2``, on
``[-0.2, 3.2]``: an atom and two edges) and the tanh attention kernel ``K`` of ``kernel(tanh, Z)``
(``c = 1/2``, on ``[-2, 3]``).  Each is timed after a first call on a few points of the same model
(the compile and the code cache are warm), in this process.  Targets: 2 s and 10 s.
"""

from __future__ import annotations

import time

TARGETS = {"density_mp_400_s": 2.0, "density_tanh_400_s": 10.0}


def _wishart():
    from symrmt.engine import Model

    model = Model()
    model.dim("p", "c*n")
    model.declare("Z=gaussian(p,n)")
    return model


def _mp():
    return _wishart(), "Z.T*Z/n", (-0.2, 3.2)


def _tanh():
    from symrmt.engine import kernel

    model = _wishart()
    model.let("K", kernel("tanh", model.matrices["Z"], model=model))
    return model, "K", (-2.0, 3.0)


def measure(quick: bool = False) -> dict:
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
    den = res.get("density")
    if not den:
        return
    for name, key, label in (("mp", "density_mp_400_s", "Marchenko-Pastur"), ("tanh", "density_tanh_400_s", "tanh kernel")):
        r = den[name]
        met = r["seconds"] <= TARGETS[key] if r["points"] == 400 else None
        row(f"density: {label}, {r['points']} points at 15 digits, warm", r["seconds"], f"<= {TARGETS[key]} s (400 points)",
            met)


def report(res: dict, md) -> str:
    den = res.get("density")
    if not den:
        return ""
    rows = [[name, r["points"], r["seconds"], str(r["support"]), str(r["atoms"])] for name, r in den.items()]
    return "\n### Spectral densities (15 digits, warm, seconds)\n\n" + md(["matrix", "points", "s", "support",
                                                                         "atoms"], rows) + "\n"
