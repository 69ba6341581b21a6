"""``check(..., prove=True)`` (``symrmt check --prove``): the package's values as proved balls.

At the worst failing points (and one passing point) the quantities are proved as balls
(:mod:`symrmt.models.attention.prove`) and ``LHS - RHS`` is evaluated in ball arithmetic, the candidate's
compiled code run on balls.  A ball of ``LHS - RHS`` that excludes 0 is a **proved counterexample**: the
candidate differs from the limit of the package's equations there, whatever the rounding.  A ball
that contains 0 proves nothing (the gap may be below its radius).  ``E_A0`` (the ridgeless Attention
limit) has no ball; such points are reported as not proved.
"""

from __future__ import annotations

import inspect
from fractions import Fraction

import mpmath

from symrmt.check.points import point_geometry, hermite_dict, mp_root_value, ridgeless_ridge_exact
from symrmt.check.report import point_json
from symrmt.check.vocabulary import QUANTITIES, VOCABULARY
from symrmt.models.attention import prove as P
from symrmt.models.attention.geometry import Geometry

#: failing points proved (the worst first), and passing points reported
PROVED_FAILS = 3
PROVED_PASSES = 1


def ball_truths(names, pt, digits: int) -> dict:
    """Proved balls of the quantities ``names`` at the exact point ``pt`` (name -> ball; ``digits`` asked), at
    the current working precision; the proofs' :class:`~symrmt.errors.ProofError` when one fails.

    >>> with P.working_bits(P.bits_for(12, 20)):   # m = (sqrt(5) - 1)/2 at c = gamma = 1; E_RR(0+) = 0 for c >= 1
    ...     b = ball_truths(["m", "E_RR0"], {"c": Fraction(1), "gamma": Fraction(1), "snr": Fraction(0)}, 12)
    ...     print(b["m"].mid().str(20, radius=False), b["E_RR0"])
    0.61803398874989484820 0
    """
    out, att = {}, None
    c, g = pt.get("c"), pt.get("gamma")
    for name in names:
        if name == "E_RR":
            out[name] = P.prove_ridge(Fraction(c), [Fraction(g)], Fraction(pt.get("snr", 0)), digits)[0]
        elif name == "m":
            out[name] = P.prove_mp_root(c, g, mp_root_value(c, g, digits), digits)
        elif name == "E_RR0":
            out[name] = P.to_arb(ridgeless_ridge_exact(Fraction(c), Fraction(pt.get("snr", 0))))
        elif name in ("E_A", "m_A"):
            if att is None:
                f, diag = hermite_dict(pt)
                geo = point_geometry(pt) if name == "E_A" or "E_A" in names else Geometry()
                att = P.prove_attention(f, c, [g], geo, diag, digits)[0]
            out[name] = att.error if name == "E_A" else att.block_traces[0]
        else:
            raise P.ProofError(f"no proved ball for {name} (the ridgeless limit)")
    return out


def prove_points(claim, run) -> dict:
    """The ``proved`` record of a check: per point, the balls of ``LHS - RHS`` and whether they exclude 0."""
    digits = run.digits
    fails = sorted(run.fails, key=lambda r: -(r.gap if r.gap is not None else mpmath.mpf(0)))[:PROVED_FAILS]
    chosen = [(r, "fails") for r in fails] + [(r, "passes") for r in run.passes[:PROVED_PASSES]]
    source = inspect.getsource(run.evaluator.fn)
    records = []
    for r, numeric in chosen:
        rec = {"point": point_json(r.point), "numeric": numeric}
        try:
            with P.working_bits(P.bits_for(digits, 20)):
                truths = ball_truths(claim.involved, r.point, digits)
                args = [P.to_arb(Fraction(r.point[n])) if n in r.point else P.to_arb(0) for n in VOCABULARY]
                args += [truths.get(n, P.to_arb(0)) for n in QUANTITIES]
                vals = P.arb_checked(list(P.arb_function(source, "candidate")(*args)), "the candidate")
                diff = vals[0] - vals[1]
                if not diff.is_finite():
                    raise P.ProofError("the candidate is not finite on the balls")
                rec.update(proved=True, excludes=not diff.contains(0), difference=P.ball_json(diff, 3),
                           truths={k: P.ball_json(v, digits) for k, v in truths.items()})
        except (ArithmeticError, ValueError, TypeError, NameError, ZeroDivisionError) as exc:
            rec.update(proved=False, reason=f"{type(exc).__name__}: {exc}"[:200])
        records.append(rec)
    counter = [x for x in records if x.get("excludes")]
    proved = [x for x in records if x.get("proved")]
    summary = (f"{len(proved)} of {len(records)} point(s) proved in ball arithmetic; "
               + (f"{len(counter)} proved counterexample(s)" if counter else "no proved counterexample"))
    return {"points": records, "counterexamples": len(counter), "summary": summary}
