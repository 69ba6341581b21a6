r"""Theory against simulation on a representative set of points (large ``n``).

Claim.  At every point below, the limits :func:`symrmt.models.attention.theory.attention_limit`
and :func:`symrmt.models.attention.theory.ridge_limit` agree with the Monte-Carlo means of the
finite model (:func:`symrmt.models.attention.montecarlo.simulate`, ``docs/theory.md`` section 1) within

.. math::

    |\,\mathrm{mc} - \mathrm{theory}\,| \le 3\,\mathrm{se} + 0.01\,|\mathrm{theory}| + 0.002 ,

the acceptance rule of the project's checks.  ``3 se`` is the statistical part
(two-sided Gaussian tail 2.7e-3 per comparison; with ``trials`` i.i.d. trials
``(mc - E mc)/se`` is Student-t, so with the default 10 trials the tail is
about 1.5e-2 per comparison, which is why the rule carries the fixed terms);
``1% + 0.002`` is the allowance for the finite-size bias, which is
``O(1/sqrt(n))`` for Attention (``docs/theory.md`` section 2.2: the ``a_2`` term gives
``n/p^{3/2} (||w|| ||mu||)^4``) and ``O(1/n)`` for ridge.

The points cover every preset family the theory distinguishes (odd smooth
``tanh``/``erf``/``sin``, kinked ``relu`` with ``d = 1``, ``a_1 = 0`` ``cos``,
``a_2 != 0`` ``poly2``, quadrature-only ``gelu``, linear), ``c < 1`` and
``c > 1``, ``||mu||^2 = 0`` and ``> 0``, weights absent / aligned with ``mu`` /
orthogonal / partially aligned, both diagonal conventions, and Rademacher
noise (universality).  Each point is evaluated at ``gamma in {0.01, 0.1, 1}``
for Attention and for ridge (the simulation computes both from the same draws).

Run ``python -m symrmt.derivations.simulation_agreement`` (default ``n = 2048``,
10 trials) or ``--quick`` (``n = 256``, 4 trials, every third point); ``--n``, ``--trials``,
``--workers`` override.  :func:`run` returns the rows as dicts.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import mpmath

from symrmt.derivations.checklist import CheckList
from symrmt.hermite import Nonlinearity
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.theory import attention_limit, ridge_limit

NAME = "simulation_agreement"

#: acceptance rule: |gap| <= K_SE * se + REL * |theory| + ABS
K_SE = 3.0
REL = 0.01
ABS = 0.002

GAMMAS = ("0.01", "0.1", "1")

#: named geometries: Gram data of (mu, w_K, w_Q)
GEOMETRIES = {
    "noise": Geometry(),
    "snr1": Geometry(snr=1),
    "snr2": Geometry(snr=2),
    "w-only": Geometry(wk2=1, wq2=1, wkwq=1),
    "aligned": Geometry(snr=1, wk2=1, wq2=1, wkwq=1, muwk=1, muwq=1),
    "orthogonal": Geometry(snr=1, wk2=1, wq2=1, wkwq="1/2"),
    "partial": Geometry(snr=1, wk2=1, wq2=1, wkwq="1/2", muwk="1/2", muwq="1/4"),
}

#: (f preset, c, geometry name, diagonal, noise)
POINTS = (
    ("tanh", "1/2", "noise", "zero", "gaussian"),
    ("tanh", "2", "snr1", "zero", "gaussian"),
    ("tanh", "1/2", "snr1", "zero", "rademacher"),
    ("relu", "1/2", "aligned", "keep", "gaussian"),
    ("relu", "2", "snr1", "zero", "gaussian"),
    ("erf", "1/2", "partial", "zero", "gaussian"),
    ("sin", "2", "orthogonal", "zero", "gaussian"),
    ("cos", "1/2", "snr2", "zero", "gaussian"),
    ("poly2", "1/2", "aligned", "zero", "gaussian"),
    ("gelu", "1/2", "w-only", "zero", "gaussian"),
    ("linear", "2", "partial", "keep", "gaussian"),
)

#: the subset run by ``--quick`` (the theory solves dominate its time)
QUICK_POINTS = POINTS[::3]

QUICK = {"n": 256, "trials": 4}
FULL = {"n": 2048, "trials": 10}


class PresetF:
    """Picklable NumPy callable of a preset nonlinearity (for ``simulate(workers > 1)``).

    It pickles as its preset name; each process builds the NumPy function once.
    """

    _cache: dict = {}

    def __init__(self, name: str):
        self.name = name

    def _fn(self):
        fn = PresetF._cache.get(self.name)
        if fn is None:
            fn = PresetF._cache[self.name] = Nonlinearity(self.name).numpy()
        return fn

    def __call__(self, x):
        return self._fn()(x)

    def __reduce__(self):
        return (PresetF, (self.name,))

    def __repr__(self):
        return f"PresetF({self.name!r})"


def tolerance(theory: float, se: float) -> float:
    """The acceptance bound ``K_SE se + REL |theory| + ABS``."""
    return K_SE * se + REL * abs(theory) + ABS


def run(quick: bool = False, n: int | None = None, trials: int | None = None, workers: int = 1,
        digits: int = 15, seed: int = 20250, points=POINTS, progress=None) -> list:
    """Evaluate theory and simulation at every point; return one dict per (point, quantity, gamma).

    Row keys: ``point``, ``f``, ``c``, ``geometry``, ``diagonal``, ``noise``,
    ``quantity`` (``"attention"`` or ``"ridge"``), ``gamma``, ``theory`` (mpf string
    with ``digits`` digits), ``mean``, ``se``, ``gap`` (mean - theory), ``z`` (gap/se),
    ``tol``, ``ok``, ``n``, ``trials``, ``seconds`` (simulation time of the point).
    """
    base = QUICK if quick else FULL
    if quick and points is POINTS:
        points = QUICK_POINTS
    n = base["n"] if n is None else int(n)
    trials = base["trials"] if trials is None else int(trials)
    rows = []
    for i, (f, c, gname, diagonal, noise) in enumerate(points):
        geo = GEOMETRIES[gname]
        label = f"{f} c={c} {gname} {diagonal}" + ("" if noise == "gaussian" else f" {noise}")
        th = {
            "attention": attention_limit(f, c, list(GAMMAS), geo, diagonal, digits=digits),
            "ridge": ridge_limit(c, list(GAMMAS), snr=geo.snr, digits=digits),
        }
        t0 = time.perf_counter()
        sim = simulate(PresetF(f), n, c, list(GAMMAS), geo, diagonal, noise, trials=trials,
                       seed=seed + i, workers=workers, progress=progress)
        secs = time.perf_counter() - t0
        for quantity in ("attention", "ridge"):
            for j, g in enumerate(GAMMAS):
                t = float(th[quantity][j])
                mean = float(sim[quantity]["mean"][j])
                se = float(sim[quantity]["se"][j])
                gap = mean - t
                tol = tolerance(t, se)
                rows.append({
                    "point": label, "f": f, "c": c, "geometry": gname, "diagonal": diagonal, "noise": noise,
                    "quantity": quantity, "gamma": g, "theory": mpmath.nstr(th[quantity][j], digits),
                    "mean": mean, "se": se, "gap": gap, "z": gap / se if se > 0 else math.copysign(math.inf, gap),
                    "tol": tol, "ok": abs(gap) <= tol, "n": n, "trials": trials, "seconds": secs,
                })
    return rows


def table(rows) -> str:
    """The rows as a fixed-width text table."""
    head = (f"{'point':<34} {'qty':<4} {'gamma':>5}  {'theory (15 digits)':<19} "
            f"{'mc mean':>9} {'+- se':>8} {'gap/se':>7} {'|gap|/tol':>9}  ok")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['point']:<34} {r['quantity'][:4]:<4} {r['gamma']:>5}  {r['theory']:<19} "
            f"{r['mean']:9.6f} {r['se']:8.6f} {r['z']:+7.2f} {abs(r['gap']) / r['tol']:9.2f}  "
            f"{'ok' if r['ok'] else 'FAIL'}"
        )
    return "\n".join(lines)


def check_list(rows):
    """The rows as a :class:`symrmt.derivations.checklist.CheckList` (kind ``simulation``)."""
    ck = CheckList(NAME)
    for r in rows:
        ck.statistical(f"{r['quantity']} {r['point']} gamma={r['gamma']} (n={r['n']}, {r['trials']} trials)",
                       r["mean"], r["se"], r["theory"], K_SE, REL * abs(float(r["theory"])) + ABS)
    return ck


def main(argv=None) -> int:
    """``python -m symrmt.derivations.simulation_agreement [--quick] [--n N] [--trials T]``: compare the
    limits with simulations at every point, print the table; returns 0, and raises ``AssertionError`` when a
    comparison is outside ``3 se + 1% + 0.002``."""
    ap = argparse.ArgumentParser(allow_abbrev=False, prog=f"symrmt.derivations.{NAME}",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"n={QUICK['n']}, {QUICK['trials']} trials")
    ap.add_argument("--n", type=int, default=None, help=f"tokens per trial (default {FULL['n']})")
    ap.add_argument("--trials", type=int, default=None, help=f"trials per point (default {FULL['trials']})")
    ap.add_argument("--workers", type=int, default=1, help="simulation processes (default 1)")
    ap.add_argument("--digits", type=int, default=15, help="digits of the theory values (default 15)")
    ap.add_argument("--seed", type=int, default=20250, help="root seed; point i uses seed + i")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = run(quick=args.quick, n=args.n, trials=args.trials, workers=args.workers,
               digits=args.digits, seed=args.seed, progress=False if args.quick else None)
    print(table(rows))
    worst = max(rows, key=lambda r: abs(r["z"]))
    worst_tol = max(rows, key=lambda r: abs(r["gap"]) / r["tol"])
    print(f"\nn = {rows[0]['n']}, {rows[0]['trials']} trials, {len(rows)} comparisons, "
          f"{time.perf_counter() - t0:.0f} s")
    print(f"largest |gap|/se: {abs(worst['z']):.2f} ({worst['quantity']} {worst['point']} gamma={worst['gamma']})")
    print(f"largest |gap|/tol: {abs(worst_tol['gap']) / worst_tol['tol']:.2f} "
          f"({worst_tol['quantity']} {worst_tol['point']} gamma={worst_tol['gamma']}); "
          f"tol = {K_SE} se + {REL:.0%} |theory| + {ABS}")
    failed = [r for r in rows if not r["ok"]]
    for r in failed:
        print(f"FAIL: {r['quantity']} {r['point']} gamma={r['gamma']}: theory {r['theory']}, "
              f"mc {r['mean']:.6f} +- {r['se']:.6f}, gap {r['gap']:+.6f} > tol {r['tol']:.6f}", file=sys.stderr)
    assert all(0 <= r["mean"] <= 1 for r in rows), "a simulated error is outside [0, 1]"
    assert not failed, f"{len(failed)} of {len(rows)} comparisons outside 3 se + 1% + 0.002"
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
