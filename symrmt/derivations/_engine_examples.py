"""Shared steps of the trace-engine derivations (the five examples of auto-fpt, written as expressions).

Each example states a model and an expression, lets :class:`symrmt.engine.Model` derive the pencil
and the fixed point (no pencil is supplied), certifies the limit at two precisions, compares it
with an independent closed form where one exists, and checks it against a Monte-Carlo of the same
expression: ``|mean - limit| <= k se + slack`` with ``k = 3`` (0.3% two-sided false-failure rate
per check; the seeds are fixed, so a passing run stays passing) and ``slack = 1%`` of the limit
at ``n >= 1024`` (full mode), ``6%`` at the quick mode's ``n = 96`` (finite-size bias of order
``1/n`` to ``1/sqrt(n)`` for these traces, measured below 4% at that size).
"""

from __future__ import annotations

import mpmath

from symrmt.engine import bind
from symrmt.engine.simulate.monte_carlo import simulate_trace

K_SE = 3
FULL_N, FULL_SLACK = 1024, 0.01
QUICK_N, QUICK_SLACK = 96, 0.06


def sizes(quick: bool, full_trials: int = 10, quick_trials: int = 6) -> tuple[int, int, float]:
    """``(n, trials, relative slack)`` of the simulation checks."""
    return (QUICK_N, quick_trials, QUICK_SLACK) if quick else (FULL_N, full_trials, FULL_SLACK)


def describe(model, expr) -> str:
    """``"pencil B blocks, U unknowns"`` for each trace of ``expr``."""
    parts = []
    for pen, eqs in zip(model.pencil(expr), model.equations(expr)):
        parts.append(f"{pen.size} blocks, {len(eqs.residual())} equations")
    return "; ".join(parts)


def latex_of(model, expr) -> str:
    """The pencils and fixed-point systems of ``expr`` in LaTeX (one trace after another)."""
    out = []
    for k, (pen, eqs) in enumerate(zip(model.pencil(expr), model.equations(expr))):
        out.append(f"% trace {k + 1}: linear pencil\n{pen.latex()}\n% trace {k + 1}: fixed point\n{eqs.latex()}")
    return "\n".join(out)


def check_pencil(ck, label: str, model, expr) -> None:
    """The engine derives (and self-tests at a finite size) a pencil for every trace of ``expr``."""
    text = describe(model, expr)
    tex = latex_of(model, expr)
    ck.add(f"{label}: pencil derived from the expression and self-tested", "symbolic", bool(text) and bool(tex), text)


def check_simulation(ck, label: str, model, expr, at: dict, value, quick: bool, seed: int,
                     full_trials: int = 10, quick_trials: int = 6) -> dict:
    """Monte-Carlo of the same expression against the limit ``value``; returns the simulation."""
    n, trials, rel = sizes(quick, full_trials, quick_trials)
    sim = simulate_trace(bind(model.expr(expr), at, n), trials=trials, seed=seed, progress=None)
    ck.statistical(f"{label}: limit vs simulation n={n}, {trials} trials", sim["mean"], sim["se"], float(value),
                   k=K_SE, slack=rel * abs(float(value)))
    return sim


def close(ck, label: str, value, ref, digits: int) -> None:
    """``value`` equals the independent reference ``ref`` to ``digits`` digits."""
    with mpmath.workdps(digits + 20):
        ck.close(label, value, ref, digits)
