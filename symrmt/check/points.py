"""Drawing seeded points, the package's certified values there, and the candidate's relative gap."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import mpmath
import sympy as sp

from symrmt.codegen.compile import compile_expr
from symrmt.core.numbers import mpf_of
from symrmt.models.attention.geometry import Geometry
from symrmt.errors import ParameterError, PrecisionError
from symrmt.check.vocabulary import DOMAIN, GEOMETRY_NAMES, QUANTITIES, VOCABULARY, PARAM_SYMBOLS, QUANTITY_SYMBOLS
from symrmt.check.candidate import in_bounds
from symrmt.models.attention.closed_forms.ridgeless import general_ridgeless_error, ridgeless_traces
from symrmt.models.attention.theory import attention_limit, ridge_limit


class Evaluation(NamedTuple):
    """The candidate at one point: relative ``gap`` (None where undefined, with the reason ``why``), its two
    sides, and the package's values ``truths`` (quantity name -> mpf).  :meth:`Evaluator.gap` gives the first four.

    >>> Evaluation(None, None, None, "candidate undefined", {})._fields
    ('gap', 'lhs', 'rhs', 'why', 'truths')
    """

    gap: object
    lhs: object
    rhs: object
    why: str | None
    truths: dict


class PointResult(NamedTuple):
    """An :class:`Evaluation` with the ``point`` (parameter name -> Fraction) it was made at.

    >>> r = PointResult({"c": Fraction(1, 2)}, mpmath.mpf(0), mpmath.mpf(1), mpmath.mpf(1), None, {})
    >>> r.point, r.why
    ({'c': Fraction(1, 2)}, None)
    """

    point: dict
    gap: object
    lhs: object
    rhs: object
    why: str | None
    truths: dict


# ---------------------------------------------------------------------------
# drawing points
# ---------------------------------------------------------------------------
def round_sig(x: float, sig: int = 4) -> Fraction:
    """``x`` rounded to ``sig`` significant digits, as the exact rational of that decimal.

    >>> round_sig(2 / 3), round_sig(123456.0, 2)
    (Fraction(6667, 10000), Fraction(120000, 1))
    """
    return Fraction(f"{x:.{sig}g}")


def _interval(name, where, lo, hi):
    """The default range ``[lo, hi]`` intersected with the conditions on ``name``.  Conditions that lie
    outside the default range (``c > 5``, ``gamma < 1e-4``) give a range just inside them."""
    b = where.get(name)
    if b is None:
        return lo, hi
    blo = float(b.low) if b.low is not None else None
    bhi = float(b.high) if b.high is not None else None
    new_lo = max(lo, blo) if blo is not None else lo
    new_hi = min(hi, bhi) if bhi is not None else hi
    if new_lo <= new_hi:
        return new_lo, new_hi
    if blo is not None and blo >= hi:  # above the default range
        return blo, bhi if bhi is not None else blo + 1.0
    # below the default range
    bottom = blo if blo is not None else (bhi / 10 if bhi > 0 else bhi - 1.0)
    return bottom, bhi


def _draw_one(name, rng, where, lo=None, hi=None, scale=None, atom=None):
    b = where.get(name)
    if b is not None and b.fixed is not None:
        return b.fixed
    dlo, dhi, dscale, datom = DOMAIN[name]
    lo = dlo if lo is None else lo
    hi = dhi if hi is None else hi
    scale = dscale if scale is None else scale
    atom = datom if atom is None else atom
    if atom and rng.random() < atom and (b is None or in_bounds(Fraction(0), b)):
        return Fraction(0)
    lo, hi = _interval(name, where, lo, hi)
    for _ in range(100):
        if scale == "log":
            x = math.exp(rng.uniform(math.log(max(lo, 1e-12)), math.log(hi)))
            v = round_sig(x, 3)
        else:
            v = round_sig(rng.uniform(lo, hi))
        if b is None or in_bounds(v, b):
            return v
    raise ParameterError(f"where: could not draw {name} inside the conditions")


def draw_point(params, rng, where, gamma_low):
    """A seeded random point ``{name: Fraction}`` of ``params`` inside the ``where`` bounds (short decimals),
    ``gamma`` not below ``gamma_low``, drawn with the NumPy generator ``rng``; raises ``ParameterError`` when the
    bounds leave no point.

    >>> import numpy as np
    >>> from symrmt.check.candidate import parse_where
    >>> pt = draw_point(["c", "gamma"], np.random.default_rng(0), parse_where("c<1"), 0.01)
    >>> sorted(pt), pt["c"] < 1, pt["gamma"] >= Fraction(1, 100)
    (['c', 'gamma'], True, True)
    """
    pt = {}
    for _ in range(200):
        pt = {}
        for name in params:
            if name == "c":
                for _k in range(20):
                    v = _draw_one("c", rng, where)
                    if abs(v - 1) >= Fraction(1, 50):
                        break
                pt["c"] = v
            elif name == "gamma":
                pt["gamma"] = _draw_one("gamma", rng, where, lo=gamma_low)
            elif name == "nu":
                continue
            elif name in ("wkwq", "muwk", "muwq"):
                continue
            else:
                pt[name] = _draw_one(name, rng, where)
        if "nu" in params:
            a1v = pt.get("a1", Fraction(0))
            b = where.get("nu")
            if b is not None and b.fixed is not None:
                pt["nu"] = b.fixed
            else:
                lo = float(a1v) ** 2
                pt["nu"] = _draw_one("nu", rng, where, lo=lo, hi=lo + 1.0)
                if pt["nu"] < a1v**2:
                    continue
        diag = {"wkwq": ("wk2", "wq2"), "muwk": ("snr", "wk2"), "muwq": ("snr", "wq2")}
        for name in ("wkwq", "muwk", "muwq"):
            if name in params:
                x, y = diag[name]
                r = math.sqrt(float(pt.get(x, 0)) * float(pt.get(y, 0)))
                b = where.get(name)
                if b is not None and b.fixed is not None:
                    pt[name] = b.fixed
                elif r == 0:
                    pt[name] = Fraction(0)
                else:
                    pt[name] = _draw_one(name, rng, where, lo=-r, hi=r)
        if any(n in params for n in GEOMETRY_NAMES[1:]):
            try:
                Geometry(**{n: pt.get(n, 0) for n in GEOMETRY_NAMES})
            except ParameterError:
                continue
        if all(in_bounds(pt[n], where[n]) for n in where if n in pt):
            return pt
    raise ParameterError("where: could not draw points satisfying the conditions (and the Gram condition)")


# ---------------------------------------------------------------------------
# the package's values (numeric layer)
# ---------------------------------------------------------------------------
def hermite_dict(pt):
    """The Hermite data of a point (``a1``, ``nu``, ``d``) and the diagonal it implies (``keep`` when ``d != 0``).

    >>> from fractions import Fraction
    >>> hermite_dict({"a1": Fraction(1, 2), "nu": 1})
    ({'a1': Fraction(1, 2), 'nu': 1, 'd': Fraction(0, 1)}, 'zero')
    """
    d = pt.get("d", Fraction(0))
    return {"a1": pt.get("a1", 0), "nu": pt.get("nu", 0), "d": d}, ("keep" if d != 0 else "zero")


def point_geometry(pt):
    """The :class:`Geometry` of a point's Gram entries (missing ones are 0).

    >>> point_geometry({"snr": 2, "c": 1}).snr
    Fraction(2, 1)
    """
    return Geometry(**{n: pt.get(n, 0) for n in GEOMETRY_NAMES})


def mp_root_value(c, g, dps):
    """The Marchenko-Pastur Stieltjes value ``m(-gamma)`` at ``c``, ``gamma = g``: the positive root of
    ``gamma m^2 + (gamma + c - 1) m - 1 = 0``, to ``dps`` digits (written without cancellation).

    >>> float(mp_root_value(1, 1, 20))   # m^2 + m - 1 = 0
    0.6180339887498949
    """
    with mpmath.workdps(dps + 10):
        c, g = mpf_of(c), mpf_of(g)
        b = g + c - 1
        disc = mpmath.sqrt(b * b + 4 * g)
        # the positive root, written without cancellation: m = 2/(b + disc)
        val = 2 / (b + disc) if b >= 0 else (disc - b) / (2 * g)
    with mpmath.workdps(dps):
        return +val


def ridgeless_ridge_exact(c: Fraction, snr: Fraction):
    """``E_RR(0+)``: ``(1-c)/(1+snr)`` for ``c < 1``, ``0`` for ``c >= 1`` (exact rationals).

    >>> ridgeless_ridge_exact(Fraction(1, 2), Fraction(1)), ridgeless_ridge_exact(Fraction(2), Fraction(1))
    (Fraction(1, 4), Fraction(0, 1))
    """
    return (1 - c) / (1 + snr) if c < 1 else Fraction(0)


def _ridgeless_attention(pt, digits):
    c = pt["c"]
    if c >= 1:
        return mpmath.mpf(0)  # X^T X and K invertible: no kernel, E_A(0+) = 0 for any signal
    if pt.get("snr", 0) == 0:
        with mpmath.workdps(digits + 10):
            return mpf_of(1 - c)  # noise only: E_A(0+) = 1 - c for every (a1, nu, d)

    dps = digits + 10
    with mpmath.workdps(dps + 10):
        cm, a1m, num, dm = (mpf_of(Fraction(x)) for x in (c, pt["a1"], pt["nu"], pt.get("d", 0)))
    traces, res = ridgeless_traces(cm, a1m, num, dm, dps=dps)
    if res > mpmath.mpf(10) ** (-dps + 5):
        raise PrecisionError(f"ridgeless traces: residual {mpmath.nstr(res, 3)}")
    val, err = general_ridgeless_error(traces, cm, a1m, point_geometry(pt), dps=dps)
    if err > abs(val) * mpmath.mpf(10) ** (-digits - 2) and err > mpmath.mpf(10) ** (-digits - 2):
        raise PrecisionError(f"ridgeless Attention limit: epsilon-extrapolation error {mpmath.nstr(err, 3)}")
    return val


def truth_values(names, pt, digits):
    """The package's values of the quantities ``names`` at ``pt`` (mpf, ``digits`` certified digits); the
    solvers' errors when a value cannot be certified.

    >>> tv = truth_values(["m", "E_RR0"], {"c": Fraction(1), "gamma": Fraction(1), "snr": Fraction(0)}, 12)
    >>> mpmath.nstr(tv["m"], 12), tv["E_RR0"]   # (sqrt(5) - 1)/2 at c = gamma = 1, and 0 for c >= 1
    ('0.61803398875', mpf('0.0'))
    """
    out = {}
    att = None
    for name in names:
        if name == "E_RR":
            out[name] = ridge_limit(pt["c"], [pt["gamma"]], pt.get("snr", 0), digits)[0]
        elif name == "m":
            out[name] = mp_root_value(pt["c"], pt["gamma"], digits)
        elif name == "E_RR0":
            with mpmath.workdps(digits + 10):
                out[name] = mpf_of(ridgeless_ridge_exact(pt["c"], pt.get("snr", Fraction(0))))
        elif name in ("E_A", "m_A"):
            if att is None:
                f, diag = hermite_dict(pt)
                geo = point_geometry(pt) if name == "E_A" or "E_A" in names else Geometry()
                att = attention_limit(f, pt["c"], [pt["gamma"]], geo, diag, digits, details=True)[0]
            out[name] = att.error if name == "E_A" else att.stieltjes
        elif name == "E_A0":
            out[name] = _ridgeless_attention(pt, digits)
    return out


# ---------------------------------------------------------------------------
# candidate evaluation and gap
# ---------------------------------------------------------------------------
class Evaluator:
    """Compiled (mpmath) ``lhs``, ``rhs`` and their additive terms; :meth:`gap` evaluates them at a point
    with the package's values.

    >>> from symrmt.check.candidate import parse_candidate
    >>> ev = Evaluator(*parse_candidate("m", "gamma*m^2 + (gamma + c - 1)*m = 1", kind="equation"))
    >>> with mpmath.workdps(30):
    ...     m = (mpmath.sqrt(5) - 1) / 2   # the Marchenko-Pastur root at c = gamma = 1
    >>> gap, lhs, rhs, why = ev.gap({"c": Fraction(1), "gamma": Fraction(1)}, {"m": m}, 30)
    >>> bool(gap < 1e-25), why
    (True, None)
    """

    def __init__(self, lhs, rhs):
        self.syms = [PARAM_SYMBOLS[n] for n in VOCABULARY] + [QUANTITY_SYMBOLS[n] for n in QUANTITIES]
        terms = list(sp.Add.make_args(lhs)) + list(sp.Add.make_args(rhs))
        self.fn = compile_expr(self.syms, [lhs, rhs] + terms, cse=False)

    def gap(self, pt, truths, dps):
        """``(gap, lhs, rhs)`` at working precision ``dps``; ``gap = None`` and a reason when undefined."""
        with mpmath.workdps(dps):
            args = [mpf_of(pt[n]) if n in pt else mpmath.mpf(0) for n in VOCABULARY]
            args += [truths.get(n, mpmath.mpf(0)) for n in QUANTITIES]
            try:
                vals = self.fn(*args)
            except (ZeroDivisionError, ValueError, TypeError, OverflowError) as exc:
                return None, None, None, f"candidate undefined ({type(exc).__name__}: {exc})"
            vals = [mpmath.mpmathify(v) for v in vals]
            if any(isinstance(v, mpmath.mpc) and v.imag != 0 for v in vals):
                return None, None, None, "candidate is not real here"
            vals = [mpmath.re(v) for v in vals]
            if any(not mpmath.isfinite(v) for v in vals):
                return None, None, None, "candidate is not finite here"
            lhs, rhs = vals[0], vals[1]
            scale = max(abs(lhs), abs(rhs), mpmath.fsum(abs(v) for v in vals[2:]))
            g = abs(lhs - rhs) / scale if scale != 0 else mpmath.mpf(0)
            return g, lhs, rhs, None
