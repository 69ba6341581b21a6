r"""The paper's E_A and E_RR written as engine expressions agree with the hand-built solver.

Claim.  For ``X = mu y^T + Z`` and ``W = alpha I + sum_j wk_j wq_j^T`` the engine's limits of

    E_A  = -gamma**2*diff(y.T*inv(K.T*X.T*X*K/n + gamma*I(n))*y/n, gamma)
    E_RR = -gamma**2*diff(y.T*inv(X.T*X/n + gamma*I(n))*y/n, gamma)

with ``K = kernel(f, X, W[, zero|keep])`` (:mod:`symrmt.models.attention`) equal the package's
hand-built solver (:func:`symrmt.models.attention.theory.limit`, the 3-block pencil with its own Woodbury,
Newton and continuation, ``docs/theory.md`` sections 3-7) to 40 digits, on every route: noise only
(``mu = 0``), a signal with ``W = I``, weights aligned with the signal, weights orthogonal to it,
rank 2, ``alpha != 1`` and the diagonal kept.  The points are random (fixed seed): rational Gram
matrices ``B B^T`` of random rational coordinates ``B`` (so positive semi-definite exactly), ``c`` and
``gamma`` random rationals.  The engine derives its pencil, fixed point and Woodbury system from the
expression; the two computations share only the Hermite data ``a_1, nu, d`` and the definition of the
Gaussian-equivalent kernel (:mod:`symrmt.hermite.kernel_terms`), which the engine writes as an
expression and from which the hand-built solver reads its pencil and Woodbury matrix.
"""

from __future__ import annotations

import random
import sys
import time
from fractions import Fraction

import mpmath

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.models.attention import at_from_gram, attention_model
from symrmt.models.attention.geometry import LowRankGeometry
from symrmt.models.attention.theory import limit

NAME = "engine_attention"
#: (f, rank, alpha, diagonal, route) and the random points per route (full mode; quick: 1 on 3 routes)
ROUTES = (("tanh", 0, "1", "zero", "noise only"), ("tanh", 0, "1", "zero", "signal, W = I"),
          ("erf", 1, "1", "zero", "aligned weights"), ("tanh", 1, "1", "zero", "orthogonal weights"),
          ("relu", 2, "1", "zero", "rank 2"), ("tanh", 1, "3/2", "zero", "alpha = 3/2"),
          ("relu", 1, "1", "keep", "diagonal kept"))
POINTS_PER_ROUTE = 5
QUICK_ROUTES = (4, 6)
DIGITS = 40


def random_gram(rng, rank: int, route: str):
    """An exact PSD Gram matrix of ``(mu, wk1..r, wq1..r)`` for the route."""
    k = 2 * rank + 1
    B = [[Fraction(rng.randint(-4, 4), rng.randint(2, 5)) for _ in range(k)] for _ in range(k)]
    if route == "noise only":
        B[0] = [Fraction(0)] * k
    if route == "aligned weights":
        B[1] = [2 * x for x in B[0]]
        B[2] = [x / 3 for x in B[0]]
    if route == "orthogonal weights":
        B[0] = [B[0][0] or Fraction(1)] + [Fraction(0)] * (k - 1)
        for i in range(1, k):
            B[i][0] = Fraction(0)
    if route == "signal, W = I" and not any(B[0]):
        B[0][0] = Fraction(1)
    return [[sum(a * b for a, b in zip(B[i], B[j])) for j in range(k)] for i in range(k)]


def _digits(a, b) -> float:
    with mpmath.workdps(DIGITS + 20):
        return 99.0 if a == b else float(-mpmath.log10(abs(a - b) / abs(b)))


def run(quick: bool = False, digits: int = DIGITS, seed: int = 20261201) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    rng = random.Random(seed)
    routes = [ROUTES[i] for i in QUICK_ROUTES] if quick else ROUTES
    per = 1 if quick else POINTS_PER_ROUTE
    times = {"engine": [], "hand": []}
    for f, rank, alpha, diagonal, route in routes:
        m, ex = attention_model(f, rank, alpha, diagonal)
        for _ in range(per):
            gram = random_gram(rng, rank, route)
            c, g = Fraction(rng.randint(1, 12), 4), Fraction(rng.randint(1, 40), 40)
            at = {"c": str(c), "gamma": str(g), **at_from_gram(gram, rank)}
            t0 = time.perf_counter()
            ea = m.limit(ex["E_A"], at=at, digits=digits).value
            t1 = time.perf_counter()
            er = m.limit(ex["E_RR"], at=at, digits=digits).value
            geo = LowRankGeometry(gram if rank else [[gram[0][0]]], alpha=Fraction(alpha))
            t2 = time.perf_counter()
            ref = limit(f, str(c), [str(g)], geo, diagonal, digits + 5)
            t3 = time.perf_counter()
            times["engine"].append(t1 - t0)
            times["hand"].append(t3 - t2)
            tag = f"{route}: f={f}, c={c}, gamma={g}, alpha={alpha}, {diagonal}"
            ck.add(f"E_A engine == hand-built solver ({tag})", "precision", _digits(ea, ref["attention"][0]) >= digits,
                   f"{_digits(ea, ref['attention'][0]):.1f} digits")
            ck.add(f"E_RR engine == hand-built solver ({tag})", "precision", _digits(er, ref["ridge"][0]) >= digits,
                   f"{_digits(er, ref['ridge'][0]):.1f} digits")
    n = len(times["engine"])

    print(f"{n} random points; E_A engine {sorted(times['engine'])[n // 2]:.2f} s median (the first point of a route "
          f"compiles), hand-built solver {sorted(times['hand'])[n // 2]:.2f} s median", file=sys.stderr)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    m, ex = attention_model("relu", 1)
    return m.woodbury(ex["E_A"]).latex()


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
