"""The paper's model written as one engine expression gives the numbers of ``symrmt.limit``.

``symrmt.limit`` computes ``E_A`` with the hand-built solver (3-block pencil, its own Newton, continuation and
Woodbury system) and picks a closed form for ``varphi`` whenever one applies (``mu = 0``, ``a_1 = 0``,
weights aligned with the signal; :func:`symrmt.models.attention.theory.route_for`), and ``E_RR`` from the
ridge closed form.  The engine derives its pencil, fixed point and Woodbury system from the expressions
:data:`~symrmt.models.attention.engine_model.E_A` and ``E_RR`` of
:func:`~symrmt.models.attention.engine_model.attention_model` alone.  The two share only the Hermite data and
the definition of the Gaussian-equivalent kernel, so agreement to 40 digits at 50 certified digits checks
each against the other.

The points are random with a fixed seed: exact rational Gram matrices ``B B^T`` (PSD by construction) shaped
per route, ``c`` on both sides of 1, ``gamma`` in ``[1/40, 2]`` plus small ``gamma`` (``10^-3 .. 10^-5``,
toward the ridgeless limit), over every route of ``symrmt.limit``: noise only (with and without weights),
``a_1 = 0`` (a polynomial and ``|t|``), aligned (rank one and ``W = I``), general low rank (ranks 1 and 2),
``alpha != 1``, the diagonal kept, and the softmax; nonlinearities tanh, erf, ReLU, an exponential
``e^t - e^{1/2}``, the polynomials ``t^2 - 1`` and ``t^2 + t - 1``.
"""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import pytest

import symrmt
from symrmt.models.attention import at_from_gram, attention_model
from symrmt.models.attention.geometry import LowRankGeometry
from symrmt.models.attention.softmax_kernel import softmax_nonlinearity
from symrmt.models.attention.theory import route_for
from symrmt.engine import kernel_coefficients

pytestmark = pytest.mark.slow

#: working (certified) digits of both sides, and the digits they must share
DIGITS, AGREE = 50, 40
SEED = 20261202
EXP = "exp(t) - exp(1/2)"

#: (f, rank, alpha, diagonal, shape of the Gram matrix, gamma range, points); f None is the softmax
SPECS = (
    ("tanh", 0, "1", "zero", "noise", "moderate", 3),
    ("relu", 1, "1", "zero", "noise", "moderate", 2),
    ("t**2 - 1", 0, "1", "zero", "signal", "moderate", 3),
    ("abs", 1, "1", "zero", "general", "moderate", 2),
    ("tanh", 1, "1", "zero", "aligned", "moderate", 3),
    (EXP, 1, "1", "zero", "aligned", "moderate", 2),
    ("erf", 0, "1", "zero", "signal", "moderate", 3),
    ("relu", 1, "1", "zero", "general", "moderate", 3),
    ("poly2", 2, "1", "zero", "general", "moderate", 2),
    (EXP, 1, "1", "zero", "general", "moderate", 2),
    ("tanh", 1, "3/2", "zero", "general", "moderate", 2),
    ("relu", 1, "1", "keep", "general", "moderate", 2),
    ("relu", 0, "1", "zero", "signal", "small", 2),
    ("tanh", 1, "1", "zero", "general", "small", 2),
    (None, 1, "1", "zero", "general", "moderate", 2),
    (None, 0, "1/2", "zero", "signal", "moderate", 1),
)


def _rational(rng, lo=-4, hi=4):
    return Fraction(rng.randint(lo, hi), rng.randint(2, 5))


def _gram(rng, rank: int, shape: str):
    """An exact PSD Gram matrix of ``(mu, wk1..r, wq1..r)``: ``B B^T`` with rows shaped per route."""
    k = 2 * rank + 1
    B = [[_rational(rng) for _ in range(k)] for _ in range(k)]
    if shape == "noise":
        B[0] = [Fraction(0)] * k
    elif shape == "aligned":  # every weight a multiple of mu (Gram of rank one)
        scales = [Fraction(1)] + [_rational(rng, 1, 4) for _ in range(k - 1)]
        B = [[s * x for x in B[0]] for s in scales]
    if shape != "noise" and not any(B[0]):
        B[0][0] = Fraction(1)
    return [[sum(a * b for a, b in zip(B[i], B[j])) for j in range(k)] for i in range(k)]


def _points():
    rng = random.Random(SEED)
    out = []
    for f, rank, alpha, diagonal, shape, grange, count in SPECS:
        for _ in range(count):
            gram = _gram(rng, rank, shape)
            c = Fraction(rng.randint(1, 12), 4)
            if grange == "small":
                g = Fraction(1, 10 ** rng.randint(3, 5))
            else:
                g = Fraction(rng.randint(1, 80), 40)
            out.append((f, rank, alpha, diagonal, shape, grange, c, g, gram))
    return out


POINTS = _points()
_MODELS: dict = {}


def _solver_f(f, alpha: str):
    """The nonlinearity both sides take: ``f`` as given, or the softmax's entry-wise limit ``h``."""
    return softmax_nonlinearity(Fraction(alpha)) if f is None else f


def _engine(f, rank: int, alpha: str, diagonal: str):
    key = (f, rank, alpha, diagonal)
    if key not in _MODELS:
        _MODELS[key] = attention_model(_solver_f(f, alpha), rank, alpha, diagonal)
    return _MODELS[key]


def _geometry(gram, rank: int, alpha: str) -> LowRankGeometry:
    return LowRankGeometry(gram if rank else [[gram[0][0]]], alpha=Fraction(alpha))


def _digits(a, b) -> float:
    """Shared significant digits of ``a`` and ``b`` (99 when equal)."""
    with mpmath.workdps(DIGITS + 30):
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        return 99.0 if a == b else float(-mpmath.log10(abs(a - b) / abs(b)))


def _route(f, rank, alpha, diagonal, gram) -> str:
    """The route ``symrmt.limit`` takes: chosen on ``f(alpha t)`` and the geometry scaled to ``alpha = 1``."""
    geo = _geometry(gram, rank, alpha)
    a1 = kernel_coefficients(_solver_f(f, alpha), alpha, diagonal)["a1"]
    return route_for(a1, geo.scaled() if geo.alpha != 1 else geo)


def test_the_points_cover_every_route():
    """At least 30 points, and each route of ``symrmt.limit`` (closed forms and the general Woodbury
    system), small ``gamma``, ``alpha != 1``, the kept diagonal and the softmax among them."""
    assert len(POINTS) >= 30
    routes = [_route(f, rank, alpha, d, gram) for f, rank, alpha, d, _s, _g, _c, _gm, gram in POINTS]
    assert all(routes.count(r) >= 5 for r in ("noise_only", "a1_zero", "aligned", "general")), routes
    assert any(p[5] == "small" for p in POINTS) and any(p[6] > 1 for p in POINTS) and any(p[6] < 1 for p in POINTS)
    assert any(p[2] != "1" for p in POINTS) and any(p[3] == "keep" for p in POINTS)
    assert any(p[0] is None for p in POINTS)


@pytest.mark.parametrize("point", POINTS, ids=[f"{p[0] or 'softmax'}-r{p[1]}-a{p[2]}-{p[3]}-{p[4]}-{p[5]}-{i}"
                                               for i, p in enumerate(POINTS)])
def test_engine_expression_matches_limit(point):
    """``E_A`` and ``E_RR`` of the engine expression equal ``symrmt.limit``'s to 40 digits (50 certified)."""
    f, rank, alpha, diagonal, _shape, _grange, c, g, gram = point
    model, exprs = _engine(f, rank, alpha, diagonal)
    at = {"c": str(c), "gamma": str(g), **at_from_gram(gram, rank)}
    ea = model.limit(exprs["E_A"], at=at, digits=DIGITS).value
    er = model.limit(exprs["E_RR"], at=at, digits=DIGITS).value
    geo = _geometry(gram, rank, alpha)
    if f is None:
        ref = symrmt.limit(None, str(c), [str(g)], geo, digits=DIGITS, attention="softmax")
    else:
        ref = symrmt.limit(f, str(c), [str(g)], geo, diagonal, digits=DIGITS)
    tag = f"c={c}, gamma={g}, gram={[[str(x) for x in row] for row in gram]}"
    assert _digits(ea, ref.attention_mp[0]) >= AGREE, (tag, mpmath.nstr(ea, 55), mpmath.nstr(ref.attention_mp[0], 55))
    assert _digits(er, ref.ridge_mp[0]) >= AGREE, (tag, mpmath.nstr(er, 55), mpmath.nstr(ref.ridge_mp[0], 55))


@pytest.mark.parametrize("f, rank, shape", [("tanh", 1, "general"), ("relu", 0, "signal")])
def test_engine_curve_matches_the_curve_of_limit(f, rank, shape):
    """A curve of ``E_A`` over six decades of ``gamma`` (each point continued from the previous one,
    :meth:`symrmt.engine.Model.curve`) against ``symrmt.limit`` on the same curve, 40 of 50 digits."""
    rng = random.Random(SEED + rank)
    gram = _gram(rng, rank, shape)
    gammas = [Fraction(1, 2)] + [Fraction(1, 10 ** k) for k in range(1, 7)]
    model, exprs = _engine(f, rank, "1", "zero")
    at = {"c": "3/4", **at_from_gram(gram, rank)}
    got = model.curve(exprs["E_A"], over={"gamma": [str(g) for g in gammas]}, at=at, digits=DIGITS, progress=False)
    ref = symrmt.limit(f, "3/4", [str(g) for g in gammas], _geometry(gram, rank, "1"), "zero", digits=DIGITS)
    for g, r, want in zip(gammas, got, ref.attention_mp):
        assert _digits(r.value, want) >= AGREE, (g, mpmath.nstr(r.value, 55), mpmath.nstr(want, 55))
