"""The symbolic stage of ``symrmt check``: time-limited SymPy proofs and exact counterexamples."""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from symrmt.errors import SymbolicTimeout  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.parsing import run_limited as _run_limited
from symrmt.models.attention import equations as S
from symrmt.check.candidate import WhereBound
from symrmt.check.vocabulary import QUANTITIES, PARAM_SYMBOLS, QUANTITY_SYMBOLS
from symrmt.check.points import ridgeless_ridge_exact

# ---------------------------------------------------------------------------
# time-limited symbolic work
# ---------------------------------------------------------------------------


def run_limited(fn, args, timeout: float):
    """``fn(*args)`` in a forked child, killed after ``timeout`` s (:class:`SymbolicTimeout`).

    The package's one time limit (:func:`symrmt.parsing.run_limited` with ``isolate=True``);
    the result must be picklable, and an error of ``fn`` is reported as an ``ArithmeticError``.

    >>> run_limited(pow, (2, 10), 5)
    1024
    """
    try:
        return _run_limited(fn, args, timeout, what="symbolic attempt", isolate=True, error=SymbolicTimeout)
    except (SymbolicTimeout, ArithmeticError):
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the attempt is reported, not raised
        raise ArithmeticError(f"{type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------------------
# symbolic layer: proofs and exact counterexamples
# ---------------------------------------------------------------------------
def _delta():
    return sp.expand((S.gamma + S.c - 1) ** 2 + 4 * S.gamma)


def _replace_mp_sqrt(expr, csub=None, fixed=None):
    """Replace ``(q Delta)^(k/2)`` (``q`` a positive square of a rational function) by its value
    ``(sqrt(q) (2 gamma m + gamma + c - 1))^k`` at the positive Marchenko-Pastur root.

    ``fixed`` (``{symbol: value}``, the values ``where`` fixes) is substituted into ``Delta`` and the
    root too, so that a candidate written at, say, ``c = 1`` is matched against ``Delta`` at ``c = 1``."""
    delta = _delta()
    root_val = 2 * S.gamma * S.m + S.gamma + S.c - 1
    if fixed:
        delta, root_val = sp.expand(delta.xreplace(fixed)), root_val.xreplace(fixed)
    if csub is not None:
        delta, root_val = delta.subs(S.c, csub), root_val.subs(S.c, csub)
    rep = {}
    for p in expr.atoms(sp.Pow):
        b, e = p.as_base_exp()
        if not (e.is_Rational and e.q == 2):
            continue
        q = sp.factor(sp.cancel(b / delta))
        if q.free_symbols - {S.gamma, S.c, S.snr} - set(PARAM_SYMBOLS.values()):
            continue
        sq = sp.sqrt(q)
        if any(a.exp.is_Rational and not a.exp.is_Integer for a in sq.atoms(sp.Pow)) or sq.has(sp.Abs):
            continue
        if q.free_symbols and not sp.ask(sp.Q.positive(q)):
            continue
        rep[p] = (sq * root_val) ** e.p
    return expr.xreplace(rep) if rep else expr


_KINKS = (sp.Abs, sp.Min, sp.Max, sp.sign, sp.Heaviside, sp.Piecewise)


def _mp_polynomial():
    """:func:`symrmt.models.attention.equations.mp_quadratic` as a polynomial in ``m``: ``gamma m^2 + (gamma + c - 1) m - 1``."""
    num, den = sp.fraction(sp.cancel(sp.together(S.mp_quadratic())))
    return sp.expand(num / den) if den.is_number else sp.expand(num)


def ridgeless_branches(where):
    """``[(label, c substitution, {symbol: value})]`` for the branches ``c < 1``, ``c > 1`` of the ridgeless
    closed forms that ``where`` allows: ``E_RR0`` and, at ``snr = 0``, ``E_A0``.

    >>> from symrmt.check.candidate import parse_where
    >>> [b[0] for b in ridgeless_branches(parse_where("c<1"))], [b[0] for b in ridgeless_branches({})]
    (['c < 1'], ['c < 1', 'c > 1'])
    """
    u = sp.Symbol("u", positive=True)
    b = where.get("c", WhereBound(None, False, None, False, None))
    out = []
    lo, hi = b.low, b.high
    if b.fixed is not None:
        lo = hi = b.fixed
    if lo is None or lo < 1:
        out.append(("c < 1", 1 / (1 + u), {QUANTITY_SYMBOLS["E_RR0"]: (1 - S.c) / (1 + S.snr),
                                            QUANTITY_SYMBOLS["E_A0"]: 1 - S.c}))
    if hi is None or hi > 1:
        out.append(("c > 1", 1 + u, {QUANTITY_SYMBOLS["E_RR0"]: sp.Integer(0),
                                     QUANTITY_SYMBOLS["E_A0"]: sp.Integer(0)}))
    if not out:  # where fixes c = 1: both ridgeless errors are 0 there
        out.append(("c = 1", None, {QUANTITY_SYMBOLS["E_RR0"]: sp.Integer(0), QUANTITY_SYMBOLS["E_A0"]: sp.Integer(0)}))
    return out


def exact_quantities(wh):
    """Quantities with an exact form under the conditions ``wh``: ``E_RR``, ``m``, ``E_RR0``, and ``E_A0`` when
    ``where`` fixes ``snr = 0`` (noise only: ``E_A(0+) = 1 - c`` for ``c < 1``, ``0`` for ``c > 1``, for every
    ``a1, nu, d`` and weights).

    >>> from symrmt.check.candidate import parse_where
    >>> sorted(exact_quantities({})), sorted(exact_quantities(parse_where("snr=0")))
    (['E_RR', 'E_RR0', 'm'], ['E_A0', 'E_RR', 'E_RR0', 'm'])
    """
    out = {q for q, Q in QUANTITIES.items() if Q.exact}
    snr = wh.get("snr")
    if snr is not None and snr.fixed == 0:
        out.add("E_A0")
    return out


def prove_difference(F, fixed, branches, timeout):
    """Try to prove ``F = 0`` (``F`` in the parameters, ``m`` and the exact quantities) at the ``fixed`` values,
    on each of the ``branches`` (as from :func:`ridgeless_branches`, else ``[("", None, None)]``).  Returns
    ``("proved", detail)`` or ``("not proved", reason)``.  Runs in a child (time limit ``timeout`` s per branch).

    >>> from symrmt.check.vocabulary import PARAM_SYMBOLS, QUANTITY_SYMBOLS
    >>> c, g, m = PARAM_SYMBOLS["c"], PARAM_SYMBOLS["gamma"], QUANTITY_SYMBOLS["m"]
    >>> prove_difference(g * m**2 + (g + c - 1) * m - 1, {}, [("", None, None)], 10)   # m's own quadratic
    ('proved', 'reduced to 0 modulo the Marchenko-Pastur quadratic (m irrational over Q(c, gamma))')
    >>> prove_difference(g * m**2 + (g + c - 1) * m - 1 + c / 100, {}, [("", None, None)], 10)
    ('not proved', 'nonzero remainder modulo the Marchenko-Pastur quadratic')
    """
    details = []
    for label, csub, rr0 in branches:
        try:
            res = run_limited(_prove_branch, (F, fixed, csub, rr0), timeout)
        except (SymbolicTimeout, ArithmeticError) as exc:
            return "not proved", (f"{label}: " if label else "") + str(exc)
        if res[0] != "proved":
            return "not proved", (f"{label}: " if label else "") + res[1]
        details.append(f"{label}: {res[1]}" if label else res[1])
    return "proved", "; ".join(details)


def _prove_branch(F, fixed, csub, ridgeless):
    F = F.xreplace({QUANTITY_SYMBOLS["E_RR"]: S.ridge_error_in_m()})
    if ridgeless:
        F = F.xreplace(ridgeless)
    F = F.xreplace(fixed)
    # the quadratic m solves, at the same fixed values as the candidate (a fixed c = 1 enters both)
    P = sp.expand(_mp_polynomial().xreplace(fixed))
    if csub is not None:
        F = F.subs(S.c, csub)
        P = P.subs(S.c, csub)
    F = sp.piecewise_fold(F)
    if F.has(sp.Piecewise):
        Fs = sp.simplify(F)
        if Fs == 0:
            return "proved", "simplify"
        return "not proved", "piecewise candidate did not simplify to 0"
    F = _replace_mp_sqrt(F, csub, fixed)
    if S.m in F.free_symbols and F.has(*_KINKS):
        return "not proved", "Abs/Min/Max/sign/Heaviside with m: no symbolic route (the numeric stage decides)"
    if S.m not in F.free_symbols:
        Fc = sp.cancel(sp.together(F))
        if Fc == 0:
            return "proved", "rational simplification to 0"
        if sp.simplify(Fc) == 0:
            return "proved", "simplify"
        return "not proved", "the difference does not simplify to 0"
    num, den = sp.fraction(sp.together(F))
    num, den = sp.expand(num), sp.expand(den)
    if not (num.is_polynomial(S.m) and den.is_polynomial(S.m)):
        return "not proved", "m enters non-polynomially after clearing denominators"
    rn = sp.prem(num, P, S.m)
    rd = sp.prem(den, P, S.m)
    if sp.expand(rd) == 0:
        return "not proved", "the candidate's denominator vanishes at the true m"
    coeffs = sp.Poly(rn, S.m).all_coeffs() if rn != 0 else []
    for co in coeffs:
        co = sp.cancel(co)
        if co != 0 and sp.simplify(co) != 0:
            return "not proved", "nonzero remainder modulo the Marchenko-Pastur quadratic"
    return "proved", "reduced to 0 modulo the Marchenko-Pastur quadratic (m irrational over Q(c, gamma))"


def exact_at(F, pt):
    """``F`` at the exact point ``pt``, the true values as algebraic numbers: ``(nonzero?, value, how)``
    (``(None, None, reason)`` where it cannot be decided).

    >>> from symrmt.check.vocabulary import PARAM_SYMBOLS, QUANTITY_SYMBOLS
    >>> c, g, m = PARAM_SYMBOLS["c"], PARAM_SYMBOLS["gamma"], QUANTITY_SYMBOLS["m"]
    >>> exact_at(g * m**2 + (g + c - 1) * m - 1, {"c": Fraction(1), "gamma": Fraction(1)})
    (False, '0', 'exact zero')
    >>> nonzero, value, how = exact_at(g * m**2 + (g + c - 1) * m - 1 + c / 100, {"c": Fraction(1), "gamma": Fraction(1)})
    >>> nonzero, value[-20:], how   # c/100 = 1/100 exactly
    (True, '≈ 0.0100000000000000', 'exact: a nonzero algebraic number, minimal polynomial of degree 1')
    """
    subs = {PARAM_SYMBOLS[n]: sp.Rational(v.numerator, v.denominator) for n, v in pt.items()}
    rr0 = ridgeless_ridge_exact(pt["c"], pt.get("snr", Fraction(0))) if "c" in pt else None
    vals = {}
    if "gamma" in pt:
        root = S.mp_root().xreplace(subs)
        vals[S.m] = root
        vals[QUANTITY_SYMBOLS["E_RR"]] = S.ridge_error_in_m().xreplace(subs).xreplace({S.m: root})
    if rr0 is not None:
        vals[QUANTITY_SYMBOLS["E_RR0"]] = sp.Rational(rr0.numerator, rr0.denominator)
        if pt.get("snr", Fraction(0)) == 0:  # noise only: E_A(0+) = 1 - c (c < 1), 0 (c >= 1)
            a0 = 1 - pt["c"] if pt["c"] < 1 else Fraction(0)
            vals[QUANTITY_SYMBOLS["E_A0"]] = sp.Rational(a0.numerator, a0.denominator)
    val = F.xreplace(subs).xreplace(vals)
    if val.free_symbols:
        return None, None, "symbols left"
    if val.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        return None, None, "candidate undefined at the point"
    x = sp.Dummy("x")
    short = len(str(val)) <= 60
    try:
        mp_ = sp.Poly(sp.minimal_polynomial(val, x), x)
    except Exception:  # noqa: BLE001 - transcendental: fall back to error-tracked evalf
        try:
            num = sp.N(val, 30, strict=True)
        except Exception as exc:  # noqa: BLE001
            return None, None, f"cannot evaluate exactly ({type(exc).__name__})"
        if num != 0:
            return True, f"≈ {sp.N(val, 15)}", "nonzero by SymPy's error-tracked evaluation (evalf strict, 30 digits)"
        return None, None, "evalf could not separate the value from 0"
    if mp_ == sp.Poly(x, x):
        return False, "0", "exact zero"
    text = f"= {val}" if val.is_Rational else (f"= {val} ≈ {sp.N(val, 15)}" if short else f"≈ {sp.N(val, 15)}")
    return True, text, f"exact: a nonzero algebraic number, minimal polynomial of degree {mp_.degree()}"
