"""Attention limit ``E_A(gamma)`` against the Monte-Carlo simulator (n <= 512).

Design of the grid
------------------
27 parameter points, each simulated once at ``n = 512`` for all three
``gamma in {0.01, 0.1, 1}`` (81 comparisons).  Not a cartesian product; the
points are chosen so that every value of every factor appears, and so do the
interactions that the theory treats differently:

* ``f``: tanh, erf, sin (odd, smooth), relu (centered, a kink, ``a_2 != 0``,
  ``d = 1``), cos (centered, ``a_1 = 0``), poly2 (``a_2 != 0``), linear (``K`` is
  linear in ``X^T W X``);
* ``c``: 1/2 and 2 for every ``f`` (away from the ``c = 1`` instability);
* geometry (Gram data of ``(mu, w_K, w_Q)``): no signal and no weights;
  signal only (``||mu||^2`` = 1, 2); weights only (``w_K = w_Q``, no signal);
  weights aligned with ``mu`` (``w_K = w_Q = mu``, and ``w_K = -w_Q = mu/2`` with
  ``||mu||^2 = 2``); weights orthogonal to ``mu``; partially aligned (rank-3 Gram,
  and ``w_Q = mu`` with ``w_K`` at 60 degrees);
* ``diagonal``: "zero" everywhere, "keep" for relu and linear (``d = 1``) at
  both ``c`` and with signal, weights or neither, and for tanh (``d = 0``).

Norms are kept moderate (``||mu||^2 <= 2``, ``||w||^2 <= 1``) because the
``a_2`` term leaves a finite-``n`` correction ``~ n/p^{3/2} (||w|| ||mu||)^4``
(``docs/theory.md`` section 2.2); :func:`test_gap_shrinks_with_n` shows that
correction with larger norms.

Tolerance
---------
Each comparison asserts ``|mc - theory| <= K se + SLACK_ABS + SLACK_REL |theory|``:

* ``K = 4``.  ``mc`` is a mean of 32-64 i.i.d. trials, ``(mc - E mc)/se`` is
  Student-t with >= 31 degrees of freedom: two-sided tail ``P(|t| > 4) <= 4e-4``
  (6e-5 for a Gaussian).  Over 81 comparisons the union bound gives a
  family-wise false-failure probability below 3%, and the three ``gamma`` of one
  simulation are strongly correlated (effectively ~27 independent draws, < 1%).
  The seeds are fixed, so the run is deterministic.
* ``SLACK_ABS = 0.008``, ``SLACK_REL = 0.01``: the finite-size bias of ``E_A``
  is ``O(p^{-1/2})`` (kernel corrections; for bounded ``f`` with "keep" the
  diagonal is ``f(~sqrt(p))/sqrt(p) ~ 1/sqrt(p)`` while the limit uses ``d = 0``).
  It was measured on these 27 points at ``n = 512`` with 150 trials per point
  (seed 7, per-trial standard deviation 0.005-0.03): the largest biases were
  ``-0.0100 +- 0.0019`` (tanh, keep, c=1/2, orthogonal weights, gamma=1,
  the ``1/sqrt(p)`` diagonal), ``-0.0062 +- 0.0020`` (tanh, c=1/2, aligned
  weights, gamma=1) and ``+0.0059 +- 0.0021`` (tanh, c=2, partial); every
  other ``|bias|`` was below ``0.0055``.  ``0.008 + 1%`` covers the largest
  measured bias plus one of its standard errors (0.0100 + 0.0019 < 0.0123 at
  ``E_A = 0.43``) and is about a third of the per-trial spread, so a theory
  error of a few percent still fails.

Other tests here: convergence of the gap in ``n`` (where the bias is large), the
``a_1 = 0`` invariance in simulation, universality (Rademacher noise).
"""

from __future__ import annotations


import numpy as np
import pytest

from symrmt.symbolic.hermite import Nonlinearity
from symrmt.params import Geometry
from symrmt.simulation.montecarlo import simulate
from symrmt.numeric.theory import attention_limit

N = 512
K = 4.0
SLACK_ABS = 0.008
SLACK_REL = 0.01
GAMMAS = ["0.01", "0.1", "1"]

GEOMETRIES = {
    "noise": Geometry(),
    "snr1": Geometry(snr=1),
    "snr2": Geometry(snr=2),
    "w-only": Geometry(wk2=1, wq2=1, wkwq=1),
    "aligned": Geometry(snr=1, wk2=1, wq2=1, wkwq=1, muwk=1, muwq=1),  # w_K = w_Q = mu
    "aligned-opp": Geometry(snr=2, wk2="1/2", wq2="1/2", wkwq="-1/2", muwk=1, muwq=-1),  # w_K = -w_Q = mu/2
    "orthogonal": Geometry(snr=1, wk2=1, wq2=1, wkwq="1/2"),
    "partial": Geometry(snr=1, wk2=1, wq2=1, wkwq="1/2", muwk="1/2", muwq="1/4"),  # rank 3
    "partial-q": Geometry(snr=1, wk2=1, wq2=1, wkwq="1/2", muwk="1/2", muwq=1),  # w_Q = mu
}

#: (f, c, geometry, diagonal)
POINTS = [
    ("tanh", "1/2", "noise", "zero"),
    ("tanh", "2", "snr1", "zero"),
    ("tanh", "1/2", "aligned", "zero"),
    ("tanh", "2", "partial", "zero"),
    ("tanh", "1/2", "orthogonal", "keep"),
    ("tanh", "2", "w-only", "zero"),
    ("relu", "1/2", "snr1", "zero"),
    ("relu", "2", "noise", "keep"),
    ("relu", "1/2", "aligned", "keep"),
    ("relu", "2", "orthogonal", "zero"),
    ("relu", "1/2", "partial", "keep"),
    ("erf", "2", "snr2", "zero"),
    ("erf", "1/2", "w-only", "zero"),
    ("erf", "2", "aligned-opp", "zero"),
    ("sin", "1/2", "partial-q", "zero"),
    ("sin", "2", "snr1", "zero"),
    ("sin", "1/2", "orthogonal", "zero"),
    ("cos", "1/2", "snr2", "zero"),
    ("cos", "2", "aligned", "zero"),
    ("cos", "1/2", "noise", "zero"),
    ("poly2", "1/2", "snr1", "zero"),
    ("poly2", "2", "aligned", "zero"),
    ("poly2", "1/2", "orthogonal", "zero"),
    ("poly2", "2", "partial", "zero"),
    ("linear", "1/2", "aligned", "keep"),
    ("linear", "2", "snr2", "keep"),
    ("linear", "1/2", "partial", "zero"),
]

_FUNCS: dict = {}


def numpy_f(name):
    if name not in _FUNCS:
        _FUNCS[name] = Nonlinearity(name).numpy()
    return _FUNCS[name]


def trials_for(c) -> int:
    """64 trials for c < 1 (p = 256), 32 for c > 1 (p = 1024, smaller spread, 3x the cost)."""
    return 64 if c in ("1/2",) else 32


def tolerance(theory, se):
    return K * se + SLACK_ABS + SLACK_REL * abs(theory)


def compare(f, c, geometry, diagonal, seed, n=N, trials=None, noise="gaussian"):
    """Theory, simulated mean, se and gap at the three ``GAMMAS``."""
    theory = np.array([float(v) for v in attention_limit(f, c, GAMMAS, geometry, diagonal, digits=15)])
    sim = simulate(numpy_f(f), n, c, GAMMAS, geometry, diagonal, noise,
                   trials=trials or trials_for(c), seed=seed, progress=False)
    mean, se = sim["attention"]["mean"], sim["attention"]["se"]
    return theory, mean, se, mean - theory


def assert_agree(label, theory, mean, se, n, trials):
    assert np.all((0 <= mean) & (mean <= 1)), f"{label}: simulated E_A outside [0, 1]: {mean}"
    for g, th, m, s in zip(GAMMAS, theory, mean, se):
        d = m - th
        assert abs(d) <= tolerance(th, s), (
            f"{label} gamma={g}: theory {th:.6f}, simulation {m:.6f} +- {s:.6f} (n={n}, {trials} trials), "
            f"gap {d:+.6f} = {d / s:+.2f} se > {K} se + {SLACK_ABS} + {SLACK_REL:.0%}"
        )


@pytest.mark.parametrize(
    "f, c, geo, diagonal, seed",
    [pytest.param(*pt, 3000 + i, id="-".join(pt)) for i, pt in enumerate(POINTS)],
)
def test_attention_grid(f, c, geo, diagonal, seed):
    theory, mean, se, _ = compare(f, c, GEOMETRIES[geo], diagonal, seed)
    assert_agree(f"{f} c={c} {geo} {diagonal}", theory, mean, se, N, trials_for(c))


def test_grid_covers_every_factor():
    fs = {p[0] for p in POINTS}
    assert {"tanh", "relu", "erf", "sin", "cos", "poly2", "linear"} <= fs
    for f in fs:
        assert {p[1] for p in POINTS if p[0] == f} == {"1/2", "2"}, f
    assert set(GEOMETRIES) == {p[2] for p in POINTS}
    assert {p[0] for p in POINTS if p[3] == "keep"} >= {"relu", "linear"}
    for f in ("relu", "linear"):
        assert {p[3] for p in POINTS if p[0] == f} == {"zero", "keep"}
    for name, g in GEOMETRIES.items():  # moderate norms (docs/theory.md section 2.2)
        assert g.snr <= 2 and g.wk2 <= 1 and g.wq2 <= 1, name


def test_gap_shrinks_with_n():
    """The finite-size gap shrinks as n grows: cos (``a_1 = 0``), c = 1/2, ``w_K = w_Q = mu``, ``||mu||^2 = 2``.

    With ``a_1 = 0`` the signal reaches ``K`` only through the second-order
    term ``a_2 delta_ij^2 / 2``, a correction of order ``n/p^{3/2} (||w|| ||mu||)^4
    = 16 * 2^{3/2}/sqrt(n)`` here: large on purpose (norms beyond the grid's), so
    the gap is visible at every ``n``.  Measured (seed 11, 400/200/100 trials):
    ``gap(gamma=1) = -0.050, -0.039, -0.026 (+-0.002)`` at ``n = 128, 256, 512``,
    a ratio ``gap(512)/gap(128) ~ 0.5``, as ``n^{-1/2}`` predicts.

    ``gamma = 1`` carries the test: there the decreases (0.011 and 0.013) are
    4-6 standard errors of the difference, and 0.025 (10 se) from 128 to 512.
    At ``gamma = 0.1`` the decrease is flatter and noisier (measured
    ``0.031 -> 0.027 -> 0.018`` with seed 11, ``0.0275 -> 0.0273 -> 0.0165`` with the
    seeds below; ``se ~ 0.0025``), about 3.5 se from 128 to 512, so only the
    weaker statements are asserted there.

    Asserted at ``gamma = 0.1`` and ``1``: the gap at ``n = 128`` is visible
    (``> 5 se``), ``|gap|`` never grows at a doubling by more than ``2 se`` of the
    difference, and ``|gap(512)| < |gap(128)|``.  At ``gamma = 1`` also: it
    decreases at each doubling by more than ``2 se``, from 128 to 512 by more than
    ``4 se``, and ``|gap(512)| / |gap(128)| <= 0.75`` (measured 0.52, ratio se ~0.05).
    """
    geo = Geometry(snr=2, wk2=2, wq2=2, wkwq=2, muwk=2, muwq=2)
    ns_trials = ((128, 400), (256, 200), (512, 100))
    theory = np.array([float(v) for v in attention_limit("cos", "1/2", GAMMAS, geo, "zero", digits=15)])
    gaps, ses = [], []
    for i, (n, t) in enumerate(ns_trials):
        sim = simulate(numpy_f("cos"), n, "1/2", GAMMAS, geo, "zero", trials=t, seed=4000 + i, progress=False)
        gaps.append(sim["attention"]["mean"] - theory)
        ses.append(sim["attention"]["se"])
    gaps, ses = np.abs(np.array(gaps)), np.array(ses)
    report = "; ".join(f"n={n}: |gap| {g[1]:.4f}/{g[2]:.4f} +- {s[2]:.4f}"
                       for (n, _), g, s in zip(ns_trials, gaps, ses))
    for j in (1, 2):  # gamma = 0.1, 1
        assert gaps[0, j] > 5 * ses[0, j], f"no visible gap at n=128 (gamma={GAMMAS[j]}): {report}"
        assert gaps[2, j] < gaps[0, j], report
        for a, b in ((0, 1), (1, 2)):
            step = gaps[a, j] - gaps[b, j]
            two_se = 2 * np.hypot(ses[a, j], ses[b, j])
            assert step > -two_se, report
            if GAMMAS[j] == "1":
                assert step > two_se, report
    j = 2  # gamma = 1
    assert gaps[0, j] - gaps[2, j] > 4 * np.hypot(ses[0, j], ses[2, j]), report
    assert gaps[2, j] <= 0.75 * gaps[0, j], report


def test_a1_zero_error_does_not_move_with_snr():
    """Centered cos (``a_1 = 0``): ``E_A`` is the same for ``||mu||^2 = 0`` and ``1``.

    Theory: equal to 14 digits.  Simulation: the two runs (independent seeds,
    c = 1/2, no weights) differ by at most ``K sqrt(se_0^2 + se_1^2) + SLACK_ABS``
    (the ``a_2`` correction with ``||mu||^2 = 1`` and ``W = I`` is of order
    ``n/p^{3/2} ~ 0.1`` times a small constant at ``n = 512``; the snr=2 point
    of the grid has measured bias -0.005 at gamma=1), and each agrees with the
    theory within the grid tolerance.
    """
    th0 = attention_limit("cos", "1/2", GAMMAS, Geometry(), "zero", digits=15)
    th1 = attention_limit("cos", "1/2", GAMMAS, Geometry(snr=1), "zero", digits=15)
    for a, b in zip(th0, th1):
        assert abs(a - b) <= 1e-14 * abs(a)
    theory = np.array([float(v) for v in th0])
    runs = []
    for snr, seed in ((0, 5000), (1, 5001)):
        sim = simulate(numpy_f("cos"), N, "1/2", GAMMAS, Geometry(snr=snr), trials=100, seed=seed, progress=False)
        mean, se = sim["attention"]["mean"], sim["attention"]["se"]
        assert_agree(f"cos c=1/2 snr={snr}", theory, mean, se, N, 100)
        runs.append((mean, se))
    (m0, s0), (m1, s1) = runs
    diff, sd = m1 - m0, np.hypot(s0, s1)
    assert np.all(np.abs(diff) <= K * sd + SLACK_ABS), f"snr=1 minus snr=0: {diff} +- {sd}"


def test_universality_rademacher_noise():
    """Rademacher token noise (i.i.d. +-1 entries) gives the same limit as Gaussian noise."""
    theory, mean, se, _ = compare("erf", "1/2", GEOMETRIES["partial"], "zero", 6000, trials=64, noise="rademacher")
    assert_agree("erf c=1/2 partial rademacher", theory, mean, se, N, 64)
