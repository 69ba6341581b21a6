"""Float bracketing for ``symrmt check``'s region search, polished by the mpmath values.

The region search locates, along one parameter, where a candidate formula stops
matching the package's values.  Plain bisection costs one certified mpmath solve
per step.  Here the package's values on a whole line of points come from the
float64 path (:func:`symrmt.models.attention.fast.solve_grid`) in one batch; a point counts as
*failing* when the candidate's gap from the float value is far above both the
threshold and the float error estimate, as *passing* when it is far below the
threshold with a float error far below it too.  The first change from failing to
passing brackets the boundary (to 1/128 of the line); both ends of that bracket
are then re-evaluated with the certified mpmath values, and only a bracket that
they confirm is used (the caller bisects inside it with mpmath).
Otherwise (undecided points, a bracket the polish rejects, a parameter that
changes ``f``, a quantity the float path does not give) the caller bisects in
mpmath as before.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from symrmt.models.attention.fast import KEYS, solve_grid

#: quantities whose values the float path gives (the others have exact forms or no float path)
FLOAT_QUANTITIES = {"E_A", "m_A", "E_RR"}
#: parameters along which the line keeps f fixed
LINE_PARAMS = ("c", "gamma", "snr", "wk2", "wq2", "wkwq", "muwk", "muwq")


def _line(a: Fraction, b: Fraction, k: int, log: bool) -> list[Fraction]:
    out = []
    for i in range(k):
        t = i / (k - 1)
        x = math.exp((1 - t) * math.log(a) + t * math.log(b)) if log else (1 - t) * float(a) + t * float(b)
        out.append(Fraction(f"{x:.8g}"))
    out[0], out[-1] = a, b
    return out


def float_values(pts: list[dict], names) -> tuple[list[dict], list[float]] | None:
    """The package's float values of ``names`` at ``pts`` (one ``(a1, nu, d)``), with error estimates;
    ``None`` when the float path does not cover them.

    >>> from fractions import Fraction
    >>> vals, est = float_values([{"c": Fraction(1), "gamma": Fraction(g)} for g in (1, 2)], ["E_RR"])
    >>> [round(float(v["E_RR"]), 12) for v in vals], max(est) < 1e-14   # -gamma^2 m'(gamma): 1/sqrt(5), 1/sqrt(3)
    ([0.4472135955, 0.57735026919], True)
    >>> float_values([{"c": Fraction(1)}], ["E_A0"]) is None
    True
    """
    if not set(names) <= FLOAT_QUANTITIES | {"m", "E_RR0"}:
        return None
    base = pts[0]
    d = base.get("d", Fraction(0))
    herm = {"a1": base.get("a1", 0), "nu": base.get("nu", 0), "d": d}
    cols = {k: np.array([float(pt.get(k, 0)) for pt in pts]) for k in KEYS}
    res = solve_grid(herm, cols, diagonal="keep" if d != 0 else "zero")
    vals = [{"E_A": res.attention[i], "m_A": res.stieltjes[i], "E_RR": res.ridge[i]} for i in range(len(pts))]
    est = [0.0 if res.fallback[i] else float(res.error_estimate[i]) for i in range(len(pts))]
    return vals, est


def bracket(gap_with, status_at, names, pt_fail: dict, p: str, v_pass, thr: float, k: int = 129):
    """``(fail_value, pass_value)`` along ``p`` from ``pt_fail`` towards ``v_pass``, or ``None``.

    ``gap_with(pt, values)`` is the candidate's gap at ``pt`` given float values of the
    quantities ``names`` (``None`` where undefined); ``status_at(pt)`` the certified mpmath
    status (True = passes) used to confirm both ends; ``thr`` the gap threshold, ``k`` the points of the
    line (geometric in ``gamma``, and in ``c`` when both ends are positive).  A point fails where its gap
    exceeds ``10 thr`` and passes below ``thr/10``: the bracket is two neighbouring points, one of each.

    Examples
    --------
    >>> from fractions import Fraction
    >>> def gap_with(pt, values):   # a claim that holds only for gamma <= 1/10
    ...     return 1.0 if pt["gamma"] > Fraction(1, 10) else 0.0
    >>> lo, hi = bracket(gap_with, lambda pt: pt["gamma"] <= Fraction(1, 10), ["E_RR"],
    ...                  {"c": Fraction(1), "gamma": Fraction(1)}, "gamma", Fraction(1, 100), 0.01, k=17)
    >>> float(lo) > 0.1 >= float(hi), float(hi)
    (True, 0.1)
    """
    if p not in LINE_PARAMS:
        return None
    a = pt_fail[p]
    log = p == "gamma" or (p == "c" and a > 0 and v_pass > 0)
    line = _line(a, v_pass, k, log)
    pts = [{**pt_fail, p: v} for v in line]
    got = float_values(pts, names)
    if got is None:
        return None
    vals, est = got
    status = []
    for pt, v, e in zip(pts, vals, est):
        g = gap_with(pt, v)
        if g is None or g > max(thr, 1e3 * e) * 10:
            status.append(False)
        elif g < thr / 10 and e < thr / 100:
            status.append(True)
        else:
            status.append(None)
    first = next((i for i, s in enumerate(status) if s), None)
    if first is None or first == 0 or status[first - 1] is not False:
        return None
    lo, hi = line[first - 1], line[first]
    if status_at({**pt_fail, p: lo}) is False and status_at({**pt_fail, p: hi}) is True:
        return lo, hi
    return None
