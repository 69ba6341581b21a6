"""Where a candidate fails: the boundary by bisection (float64 bracket first where it can), the gap's
limits, and a Monte-Carlo run at the worst point."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

from symrmt.check.points import point_geometry, round_sig
from symrmt.check.report import point_str
from symrmt.check.vocabulary import DOMAIN
from symrmt.models.attention.montecarlo import simulate

# ---------------------------------------------------------------------------
# region finding
# ---------------------------------------------------------------------------
def _separating(params, fails, passes):
    """Parameters whose sampled values put every failing point on one side of every passing point."""
    out = []
    for p in params:
        fv = [pt[p] for pt in fails]
        pv = [pt[p] for pt in passes]
        if not fv or not pv or len(set(fv + pv)) < 2:
            continue
        if min(fv) > max(pv):
            out.append((p, "above"))
        elif max(fv) < min(pv):
            out.append((p, "below"))
    return out


def _bisect(status_at, pt_fail, p, v_pass, steps):
    """Bisection along ``p`` between a failing and a passing value; ``(fail_value, pass_value)``."""
    a, b = pt_fail[p], v_pass  # a fails, b passes
    log = p == "gamma"
    for _ in range(steps):
        if log:
            mid = round_sig(math.sqrt(float(a) * float(b)), 8)
        else:
            mid = round_sig(float(a + b) / 2, 8)
        if mid in (a, b):
            break
        st = status_at({**pt_fail, p: mid})
        if st is None:
            break
        if st:
            b = mid
        else:
            a = mid
        if abs(float(a - b)) <= 1e-4 * max(abs(float(a)), abs(float(b)), 1e-3):
            break
    return a, b


# ---------------------------------------------------------------------------
# Monte-Carlo
# ---------------------------------------------------------------------------
def mc_at(quantity, pt, cand_value, truth_value, n=256, trials=8, seed=0):
    """A Monte-Carlo run of ``quantity`` at the point ``pt`` (``n`` tokens, ``trials`` trials, ``seed``), as a
    dict: the mean, its standard error, the candidate's and the package's values and a summary; only a
    ``summary`` saying why when the quantity or point has no simulation."""
    if quantity in ("E_RR", "E_RR0"):
        g = float(pt.get("gamma", Fraction(1, 10**4)))
        res = simulate(np.tanh, n, pt["c"], [g], point_geometry(pt), trials=trials, seed=seed, progress=False)
        mean, se = float(res["ridge"]["mean"][0]), float(res["ridge"]["se"][0])
    elif quantity in ("E_A", "E_A0"):
        if pt.get("d", 0) != 0:
            return {"summary": "skipped: a simulated f with the given d != 0 is not built (needs d = 0)"}
        a1, nu = float(pt["a1"]), float(pt["nu"])
        b = math.sqrt(max(nu - a1 * a1, 0.0) / 2)

        def f(t):
            return a1 * t + b * (t * t - 1)

        g = float(pt.get("gamma", Fraction(1, 10**4)))
        res = simulate(f, n, pt["c"], [g], point_geometry(pt), trials=trials, seed=seed, progress=False)
        mean, se = float(res["attention"]["mean"][0]), float(res["attention"]["se"][0])
    else:
        return {"summary": f"skipped: no simulation for {quantity}"}
    se = max(se, 1e-12)
    dc, dt = abs(mean - float(cand_value)) / se, abs(mean - float(truth_value)) / se
    side = "the package's limit" if dt < dc else "the candidate"
    gam = f", gamma = {pt['gamma']}" if "gamma" in pt else ", gamma = 1e-4 standing in for gamma -> 0+"
    point = ", ".join(f"{k} = {v}" for k, v in pt.items() if k != "gamma")
    return {"n": n, "trials": trials, "mean": mean, "se": se, "candidate": float(cand_value),
            "theory": float(truth_value), "candidate_gap_over_se": dc, "theory_gap_over_se": dt,
            "summary": f"n = {n}, {trials} trials{gam}, {point}: simulation {mean:.5f} ± {se:.1e}; candidate "
                       f"{float(cand_value):.5f} ({dc:.3g} se away), package {float(truth_value):.5f} ({dt:.3g} se "
                       f"away; finite n and gamma leave a bias): the simulation sides with {side}"}




def find_region(params, fails, passes, evaluate, thr, wh, attention, fast=None):
    """Boundaries of the failing region (see the module docstring): ``params`` drawn, the failing and passing
    :class:`~symrmt.check.points.PointResult` lists, ``evaluate(pt)`` (an object with the ``gap``), the gap
    threshold ``thr``, the ``where`` bounds ``wh`` and ``attention`` (fewer bisection steps).  Returns
    ``{"summary", "boundaries", "limits", "exact"}``.

    ``fast(status_at, pt_fail, p, v_pass)``, when given, brackets the boundary on the float64
    path first (:func:`symrmt.check.bracket.bracket`, both ends confirmed by mpmath, then
    bisected in mpmath inside the bracket); where it returns ``None`` the mpmath bisection
    runs as before.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from symrmt.check.points import PointResult
    >>> def evaluate(pt):   # a claim that holds only for gamma <= 1/10
    ...     return SimpleNamespace(gap=1.0 if pt["gamma"] > Fraction(1, 10) else 0.0)
    >>> fails = [PointResult({"gamma": Fraction(1)}, 1.0, None, None, None, {})]
    >>> passes = [PointResult({"gamma": Fraction(1, 100)}, 0.0, None, None, None, {})]
    >>> r = find_region(["gamma"], fails, passes, evaluate, 1e-10, {}, False)
    >>> r["summary"], r["boundaries"][0]["bracket"]
    ('the candidate holds only in part of the domain; it fails for gamma > 0.1000', ['1/10', '5000351/50000000'])
    """
    steps = 10 if attention else 16

    def status_at(pt):
        try:
            g = evaluate(pt).gap
        except (ArithmeticError, ValueError):
            return None
        return g is not None and g <= thr

    fail_pts = [r.point for r in fails]
    pass_pts = [r.point for r in passes]
    exact = _exact_sets(params, fails, status_at, wh)
    if not pass_pts:
        lims = _edge_limits(params, fails, evaluate, thr, attention, wh)
        if any("holds at snr = 0" in x["summary"] for x in lims):  # already said by the snr -> 0 limit
            exact = [x for x in exact if (x["parameter"], x["value"]) != ("snr", "0")]
    exact_text = "".join("; " + x["summary"] for x in exact)
    if not pass_pts:
        summary = "the candidate fails at every point drawn"
        if lims:
            summary += "; " + "; ".join(x["summary"] for x in lims)
        return {"summary": summary + exact_text, "boundaries": [], "limits": lims, "exact": exact}
    worst = max(fails, key=lambda r: r.gap if r.gap is not None else mpmath.mpf(0)).point
    boundaries = []
    for p, _side in _separating([q for q in params if q not in wh or wh[q].fixed is None], fail_pts, pass_pts):
        cands = sorted({pt[p] for pt in pass_pts}, key=lambda v: abs(float(v - worst[p])))[:3]
        for v in cands:
            if status_at({**worst, p: v}):
                ab = fast(status_at, worst, p, v) if fast is not None else None
                if ab is not None:  # a bracket 1/128 of the way, confirmed by mpmath: polish it by bisection
                    a, b = _bisect(status_at, {**worst, p: ab[0]}, p, ab[1], max(1, steps - 7))
                else:
                    a, b = _bisect(status_at, worst, p, v, steps)
                lo_, hi_ = sorted((a, b))
                bnd = (float(a) + float(b)) / 2
                sig = max(2, int(-math.log10(max(abs(float(a - b)) / max(abs(bnd), 1e-300), 1e-15))))
                shown = f"{bnd:#.{sig}g}"
                fail_side = ">" if a > b else "<"
                others = ", ".join(f"{k} = {worst[k]}" for k in params if k != p)
                boundaries.append({
                    "parameter": p, "fails": f"{p} {fail_side} {shown}", "boundary": shown,
                    "bracket": [str(lo_), str(hi_)],
                    "located_by": ("float64 bracket, ends confirmed and bisected by mpmath" if ab is not None
                                   else "mpmath bisection"),
                    "summary": f"fails for {p} {fail_side} {shown} ({'float64 bracket confirmed by mpmath' if ab else 'bisection'} along {p}: passes at "
                               f"{p} = {float(b):.{sig + 2}g}, fails at {p} = {float(a):.{sig + 2}g}; other parameters at the "
                               f"worst failing point: {others})",
                })
                break
    if boundaries:
        summary = "the candidate holds only in part of the domain; it fails for " + " and for ".join(
            b["fails"] for b in boundaries)
    else:
        summary = ("failing and passing points are not separated by a single parameter; failing points: "
                   + "; ".join(point_str(p) for p in fail_pts[:3]))
    return {"summary": summary + exact_text, "boundaries": boundaries, "limits": [], "exact": exact}


#: values tried for each free parameter when looking for a line on which a failing candidate holds exactly
SPECIAL_VALUES = (Fraction(1), Fraction(0), Fraction(2), Fraction(1, 2), Fraction(-1))
#: failing points moved onto each such line (all must then agree)
EXACT_POINTS = 4


def _allowed(v, b) -> bool:
    """``v`` satisfies the ``where`` conditions ``b`` on its parameter (``None``: no condition)."""
    if b is None:
        return True
    if b.fixed is not None:
        return v == b.fixed
    if b.low is not None and (v < b.low or (b.low_strict and v == b.low)):
        return False
    if b.high is not None and (v > b.high or (b.high_strict and v == b.high)):
        return False
    return True


def _in_domain(p, v, pt) -> bool:
    """``v`` is a value of ``p`` inside the model's domain (:data:`~symrmt.check.vocabulary.DOMAIN`):
    positive for ``c`` and ``gamma``, non-negative for the squared norms and ``d``, ``nu >= a1^2``."""
    lo, _hi, scale, _atom = DOMAIN[p]
    if scale == "log":
        return v > 0
    if p == "nu":
        return v >= pt.get("a1", 0) ** 2
    if p == "a1":
        return pt.get("nu", v * v) >= v * v
    return v >= lo if lo >= 0 else True


def _exact_sets(params, fails, status_at, wh):
    """Lines ``p = v`` (``v`` in :data:`SPECIAL_VALUES`, inside ``where`` and the domain) on which a
    failing candidate holds exactly: every one of up to :data:`EXACT_POINTS` failing points moved onto
    the line agrees to working precision, while the worst of them, moved just off the line on either
    side (``v (1 -+ 10^-3)``, or ``-+ 10^-3`` at ``v = 0``), still fails.  A formula that lost a factor
    ``1/c`` holds exactly on ``c = 1``; a line at the edge of a passing region is a boundary (reported as
    such), not an isolated line, and is left out."""
    pts = [r.point for r in sorted(fails, key=lambda r: -(r.gap if r.gap is not None else mpmath.mpf(0)))]
    pts = pts[:EXACT_POINTS]
    found = []
    for p in params:
        if p in wh and wh[p].fixed is not None:
            continue
        for v in SPECIAL_VALUES:
            if not _allowed(v, wh.get(p)):
                continue
            moved = [{**pt, p: v} for pt in pts if pt.get(p) != v and _in_domain(p, v, pt)]
            if not moved:
                continue
            ok = 0
            for pt in moved:
                if status_at(pt) is not True:  # fails, or the point is outside the domain (None)
                    break
                ok += 1
            if ok < len(moved):
                continue
            h = abs(v) / 1000 if v != 0 else Fraction(1, 1000)
            sides = [{**moved[0], p: v + s * h} for s in (-1, 1)]
            sides = [pt for pt in sides if _allowed(pt[p], wh.get(p)) and _in_domain(p, pt[p], pt)]
            if sides and all(status_at(pt) is False for pt in sides):
                found.append({"parameter": p, "value": str(v), "points": ok,
                              "summary": f"it holds exactly on {p} = {v} ({ok} of {ok} failing points moved to "
                                         f"{p} = {v} agree to working precision)"})
    return found


def _edge_limits(params, fails, evaluate, thr, attention, wh):
    """The gap as ``gamma -> 0+`` and as ``snr -> 0`` (from the worst failing point): a gap that shrinks
    like a power means the candidate holds only in that limit."""
    pt = max(fails, key=lambda r: r.gap if r.gap is not None else mpmath.mpf(0)).point
    found = []
    for p in ("gamma", "snr"):
        if p not in params or (p in wh and wh[p].fixed is not None):
            continue
        ks = ((2, 3, 4) if attention else (4, 6, 8, 10)) if p == "gamma" else (2, 4, 6)
        gaps = []
        for k in ks:
            try:
                g = evaluate({**pt, p: Fraction(1, 10**k)}).gap
            except (ArithmeticError, ValueError):
                break
            if g is None:
                break
            gaps.append((k, g))
        if len(gaps) < 2 or not all(b[1] < a[1] for a, b in zip(gaps, gaps[1:])) or gaps[-1][1] == 0:
            continue
        (k1, g1), (k2, g2) = gaps[-2], gaps[-1]
        order = float(mpmath.log10(g1 / g2)) / (k2 - k1)
        if order < 0.3:
            continue
        at_zero = ""
        if p == "snr":
            try:
                g0 = evaluate({**pt, p: Fraction(0)}).gap
                at_zero = "; it holds at snr = 0" if g0 is not None and g0 <= thr else ""
            except (ArithmeticError, ValueError):
                pass
        others = ", ".join(f"{k} = {pt[k]}" for k in params if k != p)
        table = ", ".join(f"{p} = 1e-{k}: {mpmath.nstr(g, 3)}" for k, g in gaps)
        where_lim = "the ridgeless limit gamma -> 0+" if p == "gamma" else "the limit snr -> 0"
        found.append({"parameter": p, "order": round(order, 2), "gaps": {f"1e-{k}": mpmath.nstr(g, 3) for k, g in gaps},
                      "summary": f"the gap vanishes as {p} -> 0 (like {p}^{order:.2f}; {table}; at {others}){at_zero}:"
                                 f" the candidate holds only in {where_lim}"})
    return found
