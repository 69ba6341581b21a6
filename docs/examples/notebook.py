"""symrmt in a notebook: one model, from the limit curves to the crossings and a simulation.

The model: ReLU Attention with ``||mu||^2 = 1`` and weights ``W = I + w w^T`` with
``w = w_K = w_Q`` of unit norm, aligned with ``mu`` -- given by norms and angles
(all three cosines 1).  Each cell of a notebook is one step below; run the file as
a script (``python docs/examples/notebook.py``, add ``--plot FILE.png`` to draw the
curves with matplotlib).  It ends in asserts, and ``tests/docs/test_notebook.py`` runs it.

Only ``import symrmt`` and NumPy are needed (matplotlib for ``--plot``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import symrmt

F = "relu"
C = 0.5


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description="symrmt notebook example")
    parser.add_argument("--plot", metavar="FILE", help="draw E_A and E_RR against gamma into FILE (matplotlib)")
    parser.add_argument("--n", type=int, default=512, help="tokens in the simulation (default 512)")
    parser.add_argument("--trials", type=int, default=8, help="simulation trials (default 8)")
    args = parser.parse_args(argv)
    timings = {}

    # -- cell 1: the model, by norms and angles ---------------------------------------------
    geo = symrmt.Geometry.from_angles(snr=1, wk2=1, wq2=1, cos_muwk=1, cos_muwq=1, cos_wkwq=1)
    print(geo)

    # -- cell 2: E_A and E_RR over 50 values of gamma ----------------------------------------
    gammas = np.logspace(-2, 1, 50)
    t0 = time.perf_counter()
    curve = symrmt.limit(F, C, gammas, geo, digits=15)
    timings["limit_50_gammas_s"] = time.perf_counter() - t0
    print(curve)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.semilogx(curve.gamma, curve.attention, label="$E_A$ (Attention)")
        ax.semilogx(curve.gamma, curve.ridge, "--", label="$E_{RR}$ (ridge)")
        ax.set_xlabel(r"$\gamma$")
        ax.set_ylabel("interpolation error (limit)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot)
        plt.close(fig)

    # -- cell 3: where in c do Attention and ridge tie (gamma = 1)? --------------------------
    t0 = time.perf_counter()
    ties = symrmt.crossings(F, over="c", between=(0.1, 8), gamma=1, geometry=geo, digits=12, scan=12)
    timings["crossings_relu_s"] = time.perf_counter() - t0
    print(ties)

    # -- cell 4: simulate the same model and compare -----------------------------------------
    few = gammas[::10]
    t0 = time.perf_counter()
    sim = symrmt.simulate(F, C, few, geo, n=args.n, trials=args.trials, seed=0)
    timings["simulate_s"] = time.perf_counter() - t0
    theory = symrmt.limit(F, C, few, geo, digits=15)
    cmp = sim.compare(theory)
    print(cmp)

    # -- checks -------------------------------------------------------------------------------
    assert curve.attention.shape == (50,) and np.all((0 <= curve.attention) & (curve.attention <= 1))
    assert np.all(np.diff(curve.attention) >= 0) and np.all(np.diff(curve.ridge) >= 0)  # non-decreasing in gamma
    assert len(ties) >= 1, ties.summary()
    for root, (lo, hi) in zip(ties.roots, ties.brackets):
        below = symrmt.limit(F, lo, [1], geo, digits=20)
        above = symrmt.limit(F, hi, [1], geo, digits=20)
        d_lo = below.attention_mp[0] - below.ridge_mp[0]
        d_hi = above.attention_mp[0] - above.ridge_mp[0]
        assert d_lo * d_hi < 0, (root, d_lo, d_hi)
    # k = 3 standard errors (about 0.3% two-sided per value if the gaps were independent normals) plus a
    # finite-size slack of 0.01 at n = 256 (0.005 at n = 512) for the O(n^-1/2) corrections to the limit
    slack = 0.01 if args.n < 512 else 0.005
    assert cmp.within(k=3, slack=slack), str(cmp)
    return {"curve": curve, "crossings": ties, "simulation": sim, "comparison": cmp, "timings": timings}


if __name__ == "__main__":
    main()
