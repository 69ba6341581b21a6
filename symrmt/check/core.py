r"""``symrmt check``: test a formula of your own against the package's limits.

A *candidate* is an expression in the named parameters

    ``c, gamma, snr, a1, nu, d, wk2, wq2, wkwq, muwk, muwq``

(``snr = ||mu||^2``; the geometry names are the Gram entries of :class:`symrmt.models.attention.geometry.Geometry`)
and, where they make sense, the *quantities*

=========  =====================================================  ==========================================
name       meaning                                                parameters
=========  =====================================================  ==========================================
``E_RR``   ridge error ``E_RR(gamma)``                             ``c, gamma, snr``
``m``      Marchenko-Pastur Stieltjes transform                    ``c, gamma``
           ``m = lim tr (X^T X/n + gamma I)^{-1}/n`` at
           ``mu = 0``, the positive root of
           ``gamma m^2 + (gamma+c-1) m - 1``
``E_RR0``  ridgeless ridge error ``E_RR(0+)``                      ``c, snr``
``E_A``    Attention error ``E_A(gamma)``                          all eleven
``m_A``    Attention Stieltjes transform                           ``c, gamma, a1, nu, d``
           ``m_A = lim tr (K^T X^T X K/n + gamma I)^{-1}/n``
           (low-rank signal and weights do not move it)
``E_A0``   ridgeless Attention error ``E_A(0+)``                   all but ``gamma``
=========  =====================================================  ==========================================

``d`` is ``lim f(t)/t`` for the kept diagonal: ``d = 0`` is ``diagonal="zero"``, ``d != 0``
is ``diagonal="keep"`` with that ``d``.

Three kinds of claim (:func:`check`, ``kind=``):

* ``value``    -- ``EXPR`` (or ``QUANTITY = EXPR``) is the value of the quantity; ``EXPR`` may
  use ``m`` for the quantities ``E_RR`` and ``E_RR0`` (the Marchenko-Pastur ``m`` above);
* ``equation`` -- ``LHS = RHS`` (or ``EXPR``, meaning ``EXPR = 0``) holds when the quantity's
  name is replaced by its true value (e.g. a polynomial in ``m``);
* ``identity`` -- ``LHS = RHS`` between expressions that may use any quantity names.

All three reduce to ``F = LHS - RHS = 0`` with every quantity replaced by the package's value.

Symbolic stage (SymPy).  For ``E_RR``, ``m`` and ``E_RR0`` the package has exact forms:
``E_RR`` as a rational function of ``m`` (:func:`symrmt.models.attention.equations.ridge_error_in_m`), ``m`` as
the positive root of :func:`symrmt.models.attention.equations.mp_quadratic` (irreducible over ``Q(c, gamma)``),
and ``E_RR0 = (1-c)/(1+snr)`` for ``c < 1``, ``0`` for ``c > 1`` (proved from the closed form
in ``symrmt/derivations/ridge.py``).  ``F`` is brought to ``N(m)/D(m)``; a square root of the
discriminant ``Delta = (gamma+c-1)^2 + 4 gamma`` is replaced by ``2 gamma m + gamma + c - 1``
(its value at the positive root); ``N`` is reduced modulo the quadratic (pseudo-remainder).
``F`` is *proved* zero when the remainder cancels to 0 and ``D`` does not; ``E_RR0`` is
handled branch by branch (``c = 1/(1+u)`` and ``c = 1 + u``, ``u > 0``).  Values fixed by
``where`` (``snr = 0``) are substituted first.  Each attempt runs in a forked child process
that is killed after ``timeout`` seconds (where ``fork`` is unavailable, the package's
SIGALRM limit is used).  *Disproved* needs a counterexample at an exact rational point:
``F`` evaluated exactly there (the true values as algebraic numbers) and shown nonzero by its
minimal polynomial (``sympy.minimal_polynomial``), or, for transcendental candidates, by
SymPy's error-tracked ``evalf(strict=True)``.  For ``E_A``, ``m_A`` and ``E_A0`` the package
has no closed form: the symbolic stage is *undecided* and the numeric stage decides.

Numeric stage (mpmath).  Points are drawn with a seeded generator (:data:`DOMAIN`; ``where``
restricts it) as short decimals (exact rationals).  The package's value is computed to
``digits + 5`` certified digits, the candidate at ``digits + 20`` working digits.  The gap is

.. math::

    \mathrm{gap} = |\mathrm{LHS} - \mathrm{RHS}| / \max(|\mathrm{LHS}|, |\mathrm{RHS}|,
    \textstyle\sum |\text{terms of LHS}|, \sum |\text{terms of RHS}|)

and a point *fails* when ``gap > 10^{-(digits-5)}``.  A candidate that agrees at every point is
*verified*: strong evidence, not a proof.

Where it fails.  For each parameter whose value separates the failing from the passing points
of the sample, the boundary is located by bisection along that parameter (the others held at
a failing point).  When every point fails, the gap is followed as ``gamma -> 0``: a gap that
shrinks like a power of ``gamma`` means the candidate holds only in the ridgeless limit.
``mc=True`` adds a Monte-Carlo run (:func:`symrmt.models.attention.montecarlo.simulate`) at the worst failing point.

Overall status: ``proved`` (symbolic proof), ``verified`` (numeric agreement everywhere),
``disproved`` (a counterexample: exact, or certified to the stated digits for the quantities
without a closed form), ``undecided`` (neither).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import NamedTuple

import mpmath
import sympy as sp

from symrmt.check import bracket as checkfast
from symrmt.check.balls import prove_points
from symrmt.errors import ParameterError
from symrmt.parsing import TimeLimitExceeded, check_digits
from symrmt.parsing import run_limited as limited

from symrmt.check.vocabulary import (
    VOCABULARY, ATTENTION_GAMMA_LOW, DEFAULT_DIGITS, DEFAULT_SEED, DEFAULT_TIMEOUT, DOMAIN, QUANTITIES,
    PARAM_SYMBOLS,
)
from symrmt.check.candidate import (
    check_where_domain, params_of, quantities_in, where_str, parse_candidate, parse_where,
)
from symrmt.check.points import Evaluation, PointResult, Evaluator, draw_point, truth_values
from symrmt.check.prove import (
    SymbolicTimeout, exact_at, exact_quantities, prove_difference, ridgeless_branches, run_limited,
)
from symrmt.check.report import CheckReport, claim_str, claim_tex, point_str, point_json
from symrmt.check.region import find_region, mc_at
from symrmt.proofs.arb import require_flint
from symrmt.progress import progress_bar

__all__ = ["CheckReport", "QUANTITIES", "VOCABULARY", "DOMAIN", "check", "parse_candidate", "parse_where"]


def check(quantity: str, expr, kind: str = "value", where=None, points: int | None = None,
          digits: int = DEFAULT_DIGITS, seed: int = DEFAULT_SEED, mc: bool = False,
          timeout: float = DEFAULT_TIMEOUT, syntax: str = "auto", region: bool = True,
          prove: bool = False) -> CheckReport:
    """Check a candidate formula against the package (see the module docstring).

    Parameters
    ----------
    quantity : str
        ``E_RR``, ``m``, ``E_RR0``, ``E_A``, ``m_A`` or ``E_A0``.
    expr : str or sympy expression
        The candidate: SymPy syntax, LaTeX (needs ``symrmt[latex]``) or a path to a ``.py`` file.
    kind : {"value", "equation", "identity"}
    where : str, optional
        Conditions on the parameters, e.g. ``"c<1, snr>0"`` or ``"snr=0"``.
    points : int, optional
        Numeric points (default: 24 for the ridge quantities, 12 for ``E_A``/``m_A``, 6 for ``E_A0``).
    digits : int
        Digits of the numeric comparison (>= 15); a point fails when the relative gap exceeds
        ``10^-(digits-5)``.
    seed : int
        Seed of the point generator.
    mc : bool
        Add a Monte-Carlo simulation at the worst failing point.
    timeout : float
        Time limit (s) of each symbolic attempt.
    region : bool
        Locate the boundary of the failing region by bisection.
    prove : bool
        Prove the package's values as balls at the worst failing points and one passing point
        (:mod:`symrmt.check.balls`; needs python-flint): a ball of ``LHS - RHS`` that excludes 0 is a
        proved counterexample; the report's ``proved`` record says which points were proved.

    Returns
    -------
    CheckReport

    Examples
    --------
    >>> r = check("E_RR0", "(1 - c)/(1 + snr)", where="c<1", points=4)
    >>> r.status
    'proved'
    >>> check("m", "gamma*m^2 + (gamma+c-1)*m - 1", kind="equation", points=4).status
    'proved'
    """
    t0 = time.monotonic()
    _check_options(digits, points, timeout)
    if prove:
        require_flint()
    lhs, rhs = parse_candidate(quantity, expr, kind, syntax)
    _check_candidate_size(lhs, rhs)
    wh = parse_where(where)
    params = params_of(quantity, lhs, rhs)
    check_where_domain(wh)
    extra = sorted(set(wh) - set(params))
    if extra:
        raise ParameterError(f"where names {', '.join(extra)}, which the claim does not depend on "
                             f"(its parameters: {', '.join(params)})")
    claim = _Claim(quantity, kind, lhs, rhs, params, wh,
                   sorted(set(quantities_in(lhs) + quantities_in(rhs)), key=list(QUANTITIES).index),
                   exact_quantities(wh))
    notes = []
    symbolic, sym_detail = _symbolic_stage(claim, timeout)
    run = _numeric_stage(claim, points, digits, seed)
    exact_zero = _exact_counterexample(claim, run, symbolic, sym_detail, timeout, notes)
    reg = _region_stage(claim, run) if run.fails and region else None
    mc_out = _mc_stage(claim, run, seed) if mc and run.fails else None
    status, evidence = _verdict(symbolic, run, exact_zero)
    balls = None
    if prove:
        balls = prove_points(claim, run)
        first = next((x for x in balls["points"] if x.get("excludes")), None)
        if first is not None and status == "disproved" and symbolic["status"] != "disproved":
            evidence = (f"proved counterexample (ball arithmetic) at {point_str(first['point'])}: LHS - RHS in "
                        f"[{first['difference']['mid']} ± {first['difference']['rad']}], which excludes 0; " + evidence)
    if run.skipped:
        notes.append(f"{len(run.skipped)} point(s) skipped: the package could not deliver there")
    return CheckReport(quantity=quantity, kind=kind, candidate=claim_str(lhs, rhs), status=status, evidence=evidence,
                       symbolic=symbolic, numeric=run.summary(claim), region=reg, mc=mc_out, notes=notes,
                       seconds=time.monotonic() - t0, proved=balls, claim_tex=claim_tex(lhs, rhs))


class _Claim(NamedTuple):
    """A parsed claim ``lhs = rhs`` about ``quantity`` with its parameters and ``where`` bounds."""

    quantity: str
    kind: str
    lhs: sp.Expr
    rhs: sp.Expr
    params: list
    where: dict
    involved: list  # the quantities it names, in the order of QUANTITIES
    exact: set  # the quantities with a closed form under ``where``

    @property
    def exact_only(self) -> bool:
        return all(q in self.exact for q in self.involved)

    @property
    def attention(self) -> bool:
        return any(q not in self.exact for q in self.involved)


@dataclass
class _NumericRun:
    """The numeric stage: the evaluated points and how they split at the threshold."""

    digits: int
    seed: int
    threshold: mpmath.mpf
    evaluator: Evaluator
    evaluate: object  # point -> Evaluation
    results: list  # of PointResult
    skipped: list

    @property
    def fails(self) -> list:
        return [r for r in self.results if r.gap is None or r.gap > self.threshold]

    @property
    def passes(self) -> list:
        return [r for r in self.results if r.gap is not None and r.gap <= self.threshold]

    @property
    def worst(self):
        gaps = [r for r in self.results if r.gap is not None]
        return max(gaps, key=lambda r: r.gap) if gaps else None

    def summary(self, claim) -> dict:
        fails, worst, digits = self.fails, self.worst, self.digits
        return {
            "points": len(self.results), "skipped": len(self.skipped), "skipped_points": self.skipped,
            "digits": digits, "seed": self.seed, "where": where_str(claim.where),
            "threshold": mpmath.nstr(self.threshold, 3), "passed": len(self.passes), "failed": len(fails),
            "max_gap": mpmath.nstr(worst.gap, 3) if worst else None,
            "max_gap_at": point_json(worst.point) if worst else None,
            "worst": {"lhs": mpmath.nstr(worst.lhs, digits), "rhs": mpmath.nstr(worst.rhs, digits)} if worst else None,
            "undefined_at": [{"point": point_json(r.point), "reason": r.why}
                             for r in self.results if r.gap is None][:5],
            "failing_points": [point_json(r.point) for r in fails][:10],
        }


#: most numeric points of one check (``points=``); each costs one high-precision evaluation of every
#: quantity named (about 1 ms for a closed form, 0.5 s for E_A at 30 digits)
MAX_POINTS = 1000
#: the largest integer exponent of a power in a candidate (``m**1000`` is refused before any work)
MAX_DEGREE = 100
#: the deepest tower of exponentials / powers with non-constant exponents (``exp(exp(exp(c)))`` is 3)
MAX_TOWER = 3
#: seconds allowed to the evaluation of the candidate at one point (beyond: refused)
POINT_SECONDS = 2.0


def _tower(e) -> int:
    if not isinstance(e, sp.Basic) or not e.args:
        return 0
    inner = max(_tower(a) for a in e.args)
    if isinstance(e, sp.exp) or (e.is_Pow and not e.exp.is_number):
        return inner + 1
    return inner


def _check_candidate_size(lhs, rhs) -> None:
    """Refuse, before any work, a candidate whose evaluation or proof would not finish: powers above
    :data:`MAX_DEGREE`, towers of exponentials deeper than :data:`MAX_TOWER`."""
    for side in (lhs, rhs):
        for node in sp.preorder_traversal(side):
            if node.is_Pow and node.exp.is_Integer and abs(int(node.exp)) > MAX_DEGREE and not node.base.is_number:
                raise ParameterError(f"the candidate holds the power {node.base}**{node.exp}; check takes integer "
                                     f"exponents up to {MAX_DEGREE} (MAX_DEGREE) on non-constant bases")
        if _tower(side) > MAX_TOWER:
            raise ParameterError(f"the candidate nests exponentials or powers with variable exponents "
                                 f"{_tower(side)} deep; check takes at most {MAX_TOWER} (MAX_TOWER): beyond, "
                                 "its values leave any precision (exp(exp(exp(exp(c)))))")


def _check_options(digits, points, timeout) -> None:
    if not isinstance(digits, int) or digits < 15:
        raise ParameterError(f"digits must be an integer >= 15, got {digits!r}")
    check_digits(digits)
    if points is not None and (not isinstance(points, int) or points < 1):
        raise ParameterError(f"points must be a positive integer, got {points!r}")
    if points is not None and points > MAX_POINTS:
        raise ParameterError(f"points = {points} is above the limit {MAX_POINTS} of one check (MAX_POINTS)")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ParameterError(f"timeout must be a positive, finite number of seconds (the symbolic stage runs "
                             f"under it), got {timeout!r}")


def _symbolic_stage(claim, timeout):
    """``(symbolic record, detail of the proof attempt)``."""
    involved, exact = claim.involved, claim.exact
    fixed = {PARAM_SYMBOLS[n]: sp.Rational(b.fixed.numerator, b.fixed.denominator) for n, b in claim.where.items()
             if b.fixed is not None}
    if claim.exact_only:
        ridgeless = {"E_RR0", "E_A0"} & set(involved)
        branches = ridgeless_branches(claim.where) if ridgeless else [("", None, None)]
        sym_status, sym_detail = prove_difference(claim.lhs - claim.rhs, fixed, branches, timeout)
    else:
        sym_status, sym_detail = "undecided", ("no closed form for " + ", ".join(q for q in involved
                                               if q not in exact) + " in the package"
                                               + (" (E_A0 has one at snr = 0)" if "E_A0" in involved else "")
                                               + ": the numeric stage decides")
    symbolic = {"status": "proved" if sym_status == "proved" else "undecided", "detail": sym_detail,
                "counterexample": None}
    return symbolic, sym_detail


def _numeric_stage(claim, points, digits, seed) -> _NumericRun:
    involved = claim.involved
    npts = points if points is not None else min(QUANTITIES[q].points for q in involved + [claim.quantity])
    gamma_low = max(DOMAIN["gamma"][0], ATTENTION_GAMMA_LOW) if claim.attention else DOMAIN["gamma"][0]
    rng = random.Random(seed)
    ev = Evaluator(claim.lhs, claim.rhs)

    def evaluate(pt) -> Evaluation:
        truths = truth_values(involved, pt, digits + 5)
        try:
            g, lv, rv, why = limited(ev.gap, (pt, truths, digits + 20), POINT_SECONDS, what="candidate evaluation")
        except TimeLimitExceeded:
            raise ParameterError(f"the candidate took more than {POINT_SECONDS:g} s to evaluate at one point "
                                 f"({point_str(pt)}) at {digits + 20} digits (POINT_SECONDS): its values are too "
                                 "large or too costly for a check") from None
        return Evaluation(g, lv, rv, why, truths)

    results, skipped = [], []
    with progress_bar(npts, f"check {claim.quantity}: numeric points") as bar:  # drawn once it runs 2 s
        for _ in range(npts):
            pt = draw_point(claim.params, rng, claim.where, gamma_low)
            try:
                e = evaluate(pt)
            except (ArithmeticError, ValueError) as exc:  # the package could not deliver here
                skipped.append({"point": point_json(pt), "reason": f"{type(exc).__name__}: {exc}"[:200]})
                continue
            finally:
                bar.update()
            results.append(PointResult(pt, *e))
    return _NumericRun(digits, seed, mpmath.mpf(10) ** (-(digits - 5)), ev, evaluate, results, skipped)


def _exact_counterexample(claim, run, symbolic, sym_detail, timeout, notes) -> list:
    """Exact difference at the worst failing points (claims whose quantities have exact forms): marks
    ``symbolic`` disproved on a non-zero one; returns the points where it is exactly zero."""
    exact_zero = []
    fails = run.fails
    if fails and claim.exact_only:
        ordered = sorted(fails, key=lambda r: -(r.gap if r.gap is not None else mpmath.mpf(0)))
        for r in ordered[:3]:
            try:
                nz, val, how = run_limited(exact_at, (claim.lhs - claim.rhs, r.point), timeout)
            except (SymbolicTimeout, ArithmeticError) as exc:
                notes.append(f"exact evaluation at a failing point: {exc}")
                continue
            if nz:
                symbolic["status"] = "disproved"
                symbolic["detail"] = f"the proof attempt failed ({sym_detail}); exact counterexample below"
                symbolic["counterexample"] = {"point": point_json(r.point), "difference": val, "how": how}
                break
            if nz is False:
                exact_zero.append(r.point)
                notes.append(f"at {point_str(r.point)} the exact difference is 0 although the numeric gap is "
                             f"{mpmath.nstr(r.gap, 3)}: a precision problem in the candidate's evaluation")
    if symbolic["status"] == "undecided" and claim.exact_only:
        symbolic["detail"] = f"no proof ({sym_detail}) and no exact counterexample"
    return exact_zero


def _region_stage(claim, run):
    involved, ev, digits = claim.involved, run.evaluator, run.digits
    fast = None
    if claim.attention and set(involved) <= checkfast.FLOAT_QUANTITIES | {"m", "E_RR0"}:
        def gap_with(pt, fvals):
            truths = {n: mpmath.mpf(float(fvals[n])) for n in involved if n in checkfast.FLOAT_QUANTITIES}
            truths.update(truth_values([n for n in involved if n not in truths], pt, digits + 5))
            return ev.gap(pt, truths, digits + 20)[0]

        def fast(status_at, pt_fail, p, v_pass):
            return checkfast.bracket(gap_with, status_at, involved, pt_fail, p, v_pass, float(run.threshold))

    return find_region(claim.params, run.fails, run.passes, run.evaluate, run.threshold, claim.where,
                        claim.attention, fast)


def _mc_stage(claim, run, seed):
    worst = run.worst
    r = worst if worst is not None and worst.gap > run.threshold else None
    if r is None:
        return {"summary": "skipped: the failing points have no candidate value"}
    if claim.kind != "value":
        return {"summary": "skipped: Monte-Carlo compares values (kind=value) only"}
    return mc_at(claim.quantity, r.point, r.lhs, r.truths[claim.quantity], seed=seed)


def _verdict(symbolic, run, exact_zero):
    """``(status, evidence)`` from the symbolic record and the numeric run."""
    fails, worst, thr, results, digits = run.fails, run.worst, run.threshold, run.results, run.digits
    if symbolic["status"] == "proved" and fails:
        return "undecided", "the symbolic proof and the numeric check disagree; please report this"
    if symbolic["status"] == "proved":
        evidence = "symbolic proof (" + symbolic["detail"] + ")"
        if results:
            evidence += f"; also zero to working precision at {len(results)} points, {digits} digits"
        return "proved", evidence
    if symbolic["status"] == "disproved":
        return "disproved", "exact counterexample at " + point_str(symbolic["counterexample"]["point"])
    if fails and worst is not None and worst.gap > thr and worst.point in exact_zero:
        return "undecided", (f"numeric gaps, but the exact difference is 0 at the worst point "
                             f"{point_str(worst.point)}: the candidate loses precision in evaluation")
    if fails:
        r = worst if worst is not None and worst.gap > thr else fails[0]
        if r.gap is None:
            return "disproved", f"the candidate is undefined at {point_str(r.point)} ({r.why})"
        return "disproved", (f"numeric counterexample at {point_str(r.point)}: relative gap {mpmath.nstr(r.gap, 3)}, "
                             f"with the package's value certified to {digits + 5} digits")
    if results:
        return "verified", (f"zero to working precision at all {len(results)} points ({digits} digits): strong "
                            "evidence, not a proof")
    return "undecided", "no point could be evaluated"
