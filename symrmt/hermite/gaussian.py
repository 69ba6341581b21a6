r"""Exact Gaussian expectations ``E[g(xi)]``, ``xi ~ N(0, 1)``: the SymPy engine behind the Hermite data.

It does not call :func:`sympy.integrate` for the cases it knows:

* the real line is split at the kinks of ``Max``, ``Min``, ``Abs``, ``sign``,
  ``Heaviside`` and ``Piecewise`` (:func:`smooth_pieces`); on each interval ``g`` is smooth;
* ``sin``, ``cos``, ``sinh``, ``cosh`` are rewritten as exponentials, and every
  term ``t^m exp(alpha t^2 + b t) erf(beta_1 t) ... erf(beta_r t)`` is integrated
  in closed form: by completing the square and the tail recursion
  ``J_j(c) = c^(j-1) phi(c) + (j-1) J_(j-2)(c)`` when ``r = 0`` (any interval),
  by Stein's lemma down to ``E[erf(a xi) erf(b xi)] = (2/pi) asin(2ab / sqrt((1+2a^2)(1+2b^2)))``
  when ``r <= 2`` (whole line);
* any other term goes to ``sympy.integrate(..., heurisch=False, risch=False)``
  under a hard time limit.

Every exact value is checked against an independent 20-digit quadrature before it is accepted.
"""

from __future__ import annotations


import mpmath
import sympy as sp

from symrmt.cache import cached
from symrmt.errors import NotExact  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.parsing import run_limited
from symrmt.hermite.variable import T, hermite_poly  # noqa: F401 - re-exported (T: the variable of f)
from symrmt.hermite.quadrature import QuadratureError, quad_pieces

__all__ = ["T", "NotExact", "with_timeout", "smooth_pieces", "exact_expectation", "hermite_poly"]


def with_timeout(fn, seconds: float):
    """``fn()`` (no arguments) under the package's one time limit of ``seconds`` (:func:`symrmt.parsing.run_limited`);
    returns its value.  Raises :class:`NotExact` when the time runs out.

    >>> with_timeout(lambda: sp.factor(T**2 - 1), 5.0)
    (t - 1)*(t + 1)
    """
    return run_limited(fn, (), seconds, what="symbolic computation", error=NotExact)


# ---------------------------------------------------------------------------
# kinks and smooth pieces
# ---------------------------------------------------------------------------

_KINKY = (sp.Max, sp.Min, sp.Abs, sp.sign, sp.Heaviside, sp.Piecewise)


def _kink_arguments(expr):
    """Expressions whose real zeros are the kinks of ``expr``."""
    out = []
    for node in sp.preorder_traversal(expr):
        if isinstance(node, (sp.Max, sp.Min)):
            args = node.args
            out.extend(a - b for i, a in enumerate(args) for b in args[i + 1 :])
        elif isinstance(node, (sp.Abs, sp.sign, sp.Heaviside)):
            out.append(node.args[0])
        elif isinstance(node, sp.Piecewise):
            for _, cond in node.args:
                for rel in cond.atoms(sp.core.relational.Relational):
                    out.append(rel.lhs - rel.rhs)
    return [a for a in out if a.has(T)]


def _breakpoints(expr):
    """Sorted exact real kink points of ``expr``, or None when they cannot be found."""
    points = set()
    for arg in _kink_arguments(expr):
        try:
            sol = sp.solveset(arg, T, domain=sp.S.Reals)
        except Exception:  # noqa: BLE001 - solveset raises many types
            return None
        if sol is sp.S.EmptySet:
            continue
        if not isinstance(sol, sp.FiniteSet):
            return None
        for p in sol:
            if not p.is_number or not p.is_real:
                return None
            points.add(p)
    return sorted(points, key=lambda p: float(sp.N(p, 30)))


def _resolve(expr, x0):
    """The smooth branch of ``expr`` that holds around the sample point ``x0``."""
    if not expr.args or not expr.has(*_KINKY):
        return expr
    args = [_resolve(a, x0) if isinstance(a, sp.Basic) else a for a in expr.args]

    def val(e):
        v = sp.N(e.subs(T, x0), 30)
        if not v.is_real:
            raise NotExact(f"cannot decide the branch of {expr} at t = {x0}")
        return v

    if isinstance(expr, sp.Max):
        return max(args, key=val)
    if isinstance(expr, sp.Min):
        return min(args, key=val)
    if isinstance(expr, sp.Abs):
        return args[0] if val(args[0]) >= 0 else -args[0]
    if isinstance(expr, sp.sign):
        return sp.Integer(1) if val(args[0]) > 0 else sp.Integer(-1)
    if isinstance(expr, sp.Heaviside):
        return sp.Integer(1) if val(args[0]) > 0 else sp.Integer(0)
    if isinstance(expr, sp.Piecewise):
        for e, cond in expr.args:
            c = cond.subs(T, x0)
            if c is sp.true or c == True:  # noqa: E712 - SymPy booleans
                return _resolve(e, x0)
        raise NotExact(f"no branch of {expr} holds at t = {x0}")
    return expr.func(*args)


def smooth_pieces(expr):
    """The real line cut at the kinks of ``expr`` (an expression in ``t`` with ``Max``, ``Min``, ``Abs``, ``sign``,
    ``Heaviside`` or ``Piecewise``): a tuple of ``(lo, hi, g)``, ``expr`` equal to the smooth ``g`` on ``(lo, hi)``.
    Returns ``None`` when the kinks cannot be located exactly (raises nothing).

    >>> smooth_pieces(sp.Abs(T))
    ((-oo, 0, -t), (0, oo, t))
    >>> smooth_pieces(sp.Max(T, 1))
    ((-oo, 1, 1), (1, oo, t))
    """
    if not expr.has(*_KINKY):
        return ((-sp.oo, sp.oo, expr),)
    pts = _breakpoints(expr)
    if pts is None:
        return None
    edges = [-sp.oo, *pts, sp.oo]
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        if lo == -sp.oo and hi == sp.oo:
            x0 = sp.Integer(0)
        elif lo == -sp.oo:
            x0 = hi - 1
        elif hi == sp.oo:
            x0 = lo + 1
        else:
            x0 = (lo + hi) / 2
        g = _resolve(expr, x0)
        if g.has(*_KINKY):
            return None
        out.append((lo, hi, g))
    return tuple(out)


# ---------------------------------------------------------------------------
# exact Gaussian integrals
# ---------------------------------------------------------------------------

_PHI = sp.exp(-(T**2) / 2) / sp.sqrt(2 * sp.pi)


def _moment(j):
    """E[xi^j]."""
    if j < 0:
        raise ValueError(j)
    return sp.Integer(0) if j % 2 else sp.factorial2(j - 1) if j else sp.Integer(1)


def _tail(j, c):
    """J_j(c) = int_c^oo u^j phi(u) du (c finite or +-oo)."""
    if c == sp.oo:
        return sp.Integer(0)
    if c == -sp.oo:
        return _moment(j)
    phic = sp.exp(-(c**2) / 2) / sp.sqrt(2 * sp.pi)
    if j == 0:
        return sp.erfc(c / sp.sqrt(2)) / 2
    if j == 1:
        return phic
    return c ** (j - 1) * phic + (j - 1) * _tail(j - 2, c)


def _e1(m, beta):
    """E[xi^m erf(beta xi)] (Stein's lemma)."""
    if m % 2 == 0:
        return sp.Integer(0)
    s = 1 + 2 * beta**2
    out = 2 * beta / sp.sqrt(sp.pi) * s ** sp.Rational(-m, 2) * _moment(m - 1)
    if m >= 3:
        out += (m - 1) * _e1(m - 2, beta)
    return out


def _e2(m, beta, gamma):
    """E[xi^m erf(beta xi) erf(gamma xi)] (Stein's lemma down to the arcsine law)."""
    if m % 2:
        return sp.Integer(0)
    if m == 0:
        return 2 / sp.pi * sp.asin(2 * beta * gamma / sp.sqrt((1 + 2 * beta**2) * (1 + 2 * gamma**2)))
    s1, s2 = 1 + 2 * beta**2, 1 + 2 * gamma**2
    out = 2 * beta / sp.sqrt(sp.pi) * s1 ** sp.Rational(-m, 2) * _e1(m - 1, gamma / sp.sqrt(s1))
    out += 2 * gamma / sp.sqrt(sp.pi) * s2 ** sp.Rational(-m, 2) * _e1(m - 1, beta / sp.sqrt(s2))
    return out + (m - 1) * _e2(m - 2, beta, gamma)


def _decompose(term):
    """term = coeff * t^m * exp(expo) * prod erf(beta_i t); None if not of that form."""
    coeff, m, expo, betas = sp.Integer(1), 0, sp.Integer(0), []
    for fac in sp.Mul.make_args(term):
        if not fac.has(T):
            coeff *= fac
            continue
        if isinstance(fac, sp.exp):
            expo += fac.args[0]
            continue
        base, ex = fac.as_base_exp() if fac.is_Pow else (fac, sp.Integer(1))
        if not (ex.is_Integer and ex > 0):
            return None
        n = int(ex)
        if base == T:
            m += n
        elif isinstance(base, sp.exp):
            expo += n * base.args[0]
        elif isinstance(base, sp.erf):
            arg = sp.expand(base.args[0])
            beta = sp.simplify(arg / T)
            if beta.has(T):
                return None
            betas.extend([beta] * n)
        else:
            return None
    try:
        poly = sp.Poly(sp.expand(expo), T)
    except sp.PolificationFailed:
        return None
    if poly.degree() > 2:
        return None
    c2, c1, c0 = (poly.coeff_monomial(T**i) for i in (2, 1, 0))
    return coeff * sp.exp(c0), m, c2, c1, betas


def _term_integral(term, lo, hi):
    """Exact int_lo^hi term(t) phi(t) dt."""
    dec = _decompose(term)
    if dec is not None:
        coeff, m, alpha, b, betas = dec
        s = 1 - 2 * alpha
        if not (s.is_number and s > 0):
            raise NotExact("a Gaussian moment diverges")
        whole = lo == -sp.oo and hi == sp.oo
        rs = sp.sqrt(s)
        bp = b / rs
        scale = coeff * s ** sp.Rational(-(m + 1), 2)
        if not betas and (whole or b.is_real):
            if whole:
                inner = sum(sp.binomial(m, j) * bp ** (m - j) * _moment(j) for j in range(m + 1))
            else:
                lo_c = lo * rs - bp if lo != -sp.oo else -sp.oo
                hi_c = hi * rs - bp if hi != sp.oo else sp.oo
                inner = sum(
                    sp.binomial(m, j) * bp ** (m - j) * (_tail(j, lo_c) - _tail(j, hi_c)) for j in range(m + 1)
                )
            return scale * sp.exp(bp**2 / 2) * inner
        if whole and b == 0 and len(betas) == 1:
            return scale * _e1(m, betas[0] / rs)
        if whole and b == 0 and len(betas) == 2:
            return scale * _e2(m, betas[0] / rs, betas[1] / rs)
        if len(betas) > 1 or (not betas and not b.is_real):
            # sympy.integrate does not finish on these in reasonable time: go numeric at once
            raise NotExact(f"no closed form is attempted for {term} * phi over ({lo}, {hi})")
    res = sp.integrate(term * _PHI, (T, lo, hi), heurisch=False, risch=False)
    if res.has(sp.Integral) or not res.is_number:
        raise NotExact(f"SymPy could not integrate {term} * phi over ({lo}, {hi})")
    return res


def _smooth_integral(g, lo, hi):
    """Exact int_lo^hi g(t) phi(t) dt for a smooth g."""
    g = g.rewrite((sp.sin, sp.cos, sp.sinh, sp.cosh), sp.exp)
    g = g.replace(sp.erfc, lambda x: 1 - sp.erf(x))
    g = sp.expand(g)
    total = sp.Integer(0)
    for term in sp.Add.make_args(g):
        total += _term_integral(term, lo, hi)
    total = sp.expand(total)
    if total.has(sp.I):
        total = sp.expand_complex(total)
        if total.has(sp.I):
            raise NotExact("the closed form did not come out real")
    return total


_EXACT_FUNCS = (sp.exp, sp.sin, sp.cos, sp.sinh, sp.cosh, sp.erf, sp.erfc, *_KINKY)


def _exact_capable(expr):
    """False when expr certainly falls outside the exact engine (tanh, log, 1/(1+e^t), ...)."""
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.Function) and node.has(T) and not isinstance(node, _EXACT_FUNCS):
            return False
        if node.is_Pow and node.base.has(T) and not (node.exp.is_Integer and node.exp > 0):
            return False
        if node.is_Pow and node.exp.has(T):
            return False
    return True


def _gauss_exact(expr, pieces):
    total = sp.Integer(0)
    for lo, hi, g in pieces:
        total += _smooth_integral(g, lo, hi)
    return total


_FAIL = object()

#: seconds allowed to the numeric cross-check of one exact Gaussian expectation
CHECK_SECONDS = 1.0


def exact_expectation(expr, timeout):
    """The exact ``E[expr(xi)]``, ``xi ~ N(0, 1)`` (a SymPy number), for an expression in ``t``, computed within
    ``timeout`` seconds and checked against a 20-digit quadrature; or a :class:`NotExact` instance (returned, not
    raised) saying why there is none.

    The outcome is cached per ``(expr, timeout)``; an unavailable value is cached as its message and returned as
    a fresh exception each time, so that raising it never grows a shared traceback.

    >>> exact_expectation(sp.Max(T, 0) ** 2, 10.0)  # half of E[xi^2]
    1/2
    >>> exact_expectation(sp.gamma(T), 10.0)
    NotExact('no closed form is attempted for E[gamma(t)] (function outside the exact engine)')
    """
    value, message = _exact_outcome(expr, timeout)
    return NotExact(message) if message is not None else value


@cached(maxsize=1024)
def _exact_outcome(expr, timeout):
    """``(value, None)``, or ``(None, message)`` when no exact value is available."""
    res = _exact_expectation(expr, timeout)
    return (None, str(res)) if isinstance(res, NotExact) else (res, None)


def _exact_expectation(expr, timeout):
    if not _exact_capable(expr):
        return NotExact(f"no closed form is attempted for E[{expr}] (function outside the exact engine)")
    try:

        def work():
            pieces = smooth_pieces(expr)
            if pieces is None:
                raise NotExact(f"the kinks of {expr} could not be located exactly")
            return _gauss_exact(expr, pieces)

        value = with_timeout(work, timeout)
    except NotExact as exc:
        return exc
    except (NotImplementedError, ValueError, TypeError, ZeroDivisionError, RecursionError) as exc:
        return NotExact(f"exact integration of E[{expr}] failed: {type(exc).__name__}: {exc}")
    try:
        value = with_timeout(lambda: sp.simplify(value), min(timeout, 10.0))
    except NotExact:
        pass
    # independent check against a 20-digit quadrature, within CHECK_SECONDS: a sharply peaked
    # integrand (exp(50 t)) needs hundreds of thousands of nodes, and then the exact value stands alone

    pieces = smooth_pieces(expr) or ((-sp.oo, sp.oo, expr),)
    try:
        num = with_timeout(lambda: quad_pieces(pieces, 1, 20), CHECK_SECONDS)
    except (QuadratureError, NotExact):
        num = None
    ex = sp.N(value, 25)
    if not ex.is_real:
        return NotExact(f"the closed form of E[{expr}] is not real: {ex}")
    if num is not None and abs(mpmath.mpf(str(ex)) - num) > mpmath.mpf(10) ** -12 * max(1, abs(num)):
        return NotExact(f"the closed form of E[{expr}] failed its numeric check ({ex} vs {num})")
    return value
