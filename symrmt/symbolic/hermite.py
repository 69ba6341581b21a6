r"""Hermite data of the nonlinearity ``f``: the symbolic layer (SymPy + mpmath).

Conventions (``docs/theory.md`` section 2): probabilists' Hermite polynomials
``He_k`` (:func:`sympy.hermite_prob`), ``xi ~ N(0, 1)``,

* ``a_k = E[f(xi) He_k(xi)]``, so that ``f = sum_k a_k He_k / k!``;
* ``nu  = E[f(xi)^2]``;
* ``d   = lim_{t -> +oo} f(t) / t`` (the limit of the kept diagonal of ``K``).

The theory needs ``a_0 = 0``.  Only ``a_1``, ``nu`` and ``d`` enter the limit.

Exact values come from a small Gaussian-integral engine written for this
module (it does not call :func:`sympy.integrate` for the cases it knows):

* the real line is split at the kinks of ``Max``, ``Min``, ``Abs``, ``sign``,
  ``Heaviside`` and ``Piecewise``; on each interval ``f`` is a smooth expression;
* ``sin``, ``cos``, ``sinh``, ``cosh`` are rewritten as exponentials, and every
  term ``t^m exp(alpha t^2 + b t) erf(beta_1 t) ... erf(beta_r t)`` is integrated
  in closed form: by completing the square and the tail recursion
  ``J_j(c) = c^(j-1) phi(c) + (j-1) J_(j-2)(c)`` when ``r = 0`` (any interval),
  by Stein's lemma down to ``E[erf(a xi) erf(b xi)] = (2/pi) asin(2ab / sqrt((1+2a^2)(1+2b^2)))``
  when ``r <= 2`` (whole line);
* any other term goes to ``sympy.integrate(..., heurisch=False, risch=False)``
  under a hard time limit.

Every exact value is checked against an independent 20-digit quadrature before
it is accepted.  When no exact value exists (``tanh``, ``sigmoid``, ``softplus``,
...) the coefficients come from :func:`mpmath.quad` at the requested precision
plus guard digits, split at the kinks, with its error estimate checked.

Examples
--------
>>> import mpmath
>>> tanh = Nonlinearity("tanh")
>>> mpmath.nstr(tanh.a_mpf(1, 30), 30)
'0.605705509602158825583540227556'
>>> erf = Nonlinearity("erf")
>>> erf.a(1), erf.nu
(2*sqrt(3)/(3*sqrt(pi)), 2*asin(2/3)/pi)
"""

from __future__ import annotations

import functools
import math

import mpmath
import sympy as sp

from symrmt.params import ParameterError
from symrmt.parsing import check_count, check_digits, parse_expression, run_limited

__all__ = [
    "T",
    "PRESETS",
    "NotExact",
    "QuadratureError",
    "Nonlinearity",
    "parse_f",
    "hermite_data",
    "hermite_report",
]

#: The variable of ``f``.
T = sp.Symbol("t", real=True)

#: Guard digits used inside every numeric evaluation.
GUARD_DPS = 15

#: Presets: name -> expression text.  All are centered (``a_0 = 0``) except
#: ``softplus``, whose Gaussian mean has no closed form: a
#: :class:`Nonlinearity` built from the preset name ``"softplus"`` is always
#: centered numerically (``center=True`` is forced and ``a_0`` is computed by
#: quadrature at the working precision).
PRESETS: dict[str, str] = {
    "tanh": "tanh(t)",
    "relu": "Max(t, 0) - 1/sqrt(2*pi)",
    "erf": "erf(t)",
    "sin": "sin(t)",
    "cos": "cos(t) - exp(-1/2)",
    # E[xi Phi(xi)] = phi(0) * E[...]: E[gelu(xi)] = 1/(2 sqrt(pi))
    "gelu": "t*(1 + erf(t/sqrt(2)))/2 - 1/(2*sqrt(pi))",
    "sigmoid": "1/(1 + exp(-t)) - 1/2",
    "softplus": "log(1 + exp(t))",
    "linear": "t",
    "abs": "Abs(t) - sqrt(2/pi)",
    "sign": "sign(t)",
    "poly2": "t**2 - 1 + t",
}

#: Presets centered by quadrature when built by name.
CENTER_NUMERICALLY = frozenset({"softplus"})


class NotExact(ArithmeticError):
    """No exact (symbolic) value is available within the time limit."""


class QuadratureError(ArithmeticError):
    """Numeric quadrature did not reach the requested accuracy."""


# ---------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------


def _sigmoid(x):
    return 1 / (1 + sp.exp(-x))


def _softplus(x):
    return sp.log(1 + sp.exp(x))


def _relu(x):
    return sp.Max(x, 0)


_FUNCTIONS = {
    "sin": sp.sin,
    "cos": sp.cos,
    "tan": sp.tan,
    "tanh": sp.tanh,
    "sinh": sp.sinh,
    "cosh": sp.cosh,
    "atan": sp.atan,
    "asinh": sp.asinh,
    "exp": sp.exp,
    "log": sp.log,
    "sqrt": sp.sqrt,
    "erf": sp.erf,
    "erfc": sp.erfc,
    "Abs": sp.Abs,
    "abs": sp.Abs,
    "sign": sp.sign,
    "Max": sp.Max,
    "Min": sp.Min,
    "max": sp.Max,
    "min": sp.Min,
    "Heaviside": sp.Heaviside,
    "Piecewise": sp.Piecewise,
    "sigmoid": _sigmoid,
    "softplus": _softplus,
    "relu": _relu,
}
_CONSTANTS = {"pi": sp.pi, "E": sp.E, "True": sp.true}


def _local_namespace():
    ns = {"t": T}
    ns.update(_FUNCTIONS)
    ns.update(_CONSTANTS)
    return ns


def _rationalize_floats(expr: sp.Expr) -> sp.Expr:
    """Replace every Float by the rational of its decimal representation."""
    floats = expr.atoms(sp.Float)
    if not floats:
        return expr
    return expr.xreplace({fl: sp.Rational(str(fl)) for fl in floats})


def _check_expr(expr, text) -> sp.Expr:
    if (
        isinstance(expr, bool)
        or not isinstance(expr, sp.Expr)
        or isinstance(expr, (sp.core.relational.Relational, sp.logic.boolalg.BooleanFunction))
    ):
        raise ParameterError(f"f: {text!r} is not a real-valued expression in t (got {type(expr).__name__})")
    expr = _rationalize_floats(sp.sympify(expr))
    # accept any Symbol named t (e.g. sympy.Symbol('t') without assumptions)
    subs = {s: T for s in expr.free_symbols if s.name == "t" and s != T}
    if subs:
        expr = expr.xreplace(subs)
    others = expr.free_symbols - {T}
    if others:
        names = ", ".join(sorted(str(s) for s in others))
        raise ParameterError(
            f"f: {text!r} has free symbols other than t ({names}); f must be a function of t only, "
            "give numeric values for every other parameter"
        )
    if expr.has(sp.I) or expr.has(sp.zoo) or expr.has(sp.nan) or expr.has(sp.oo) or expr.has(-sp.oo):
        raise ParameterError(f"f: {text!r} contains I, oo or nan; f must be a finite real function of t")
    return expr


def parse_f(text: str) -> sp.Expr:
    """Parse the text of ``f`` into a SymPy expression in :data:`T`.

    Only ``t``, numbers, ``pi``, ``E`` (Euler's number), the operators
    ``+ - * / ** ^`` (``^`` is a power) and the functions ``sin cos tan tanh
    sinh cosh atan asinh exp log sqrt erf erfc Abs abs sign Max max Min min
    Heaviside Piecewise sigmoid softplus relu`` are accepted, read by the package's one
    restricted parser (:func:`symrmt.parsing.parse_expression`, whose size limits
    apply: see :data:`symrmt.parsing.LIMITS`).  Names such as
    ``gamma``, ``I``, ``S``, ``N``, ``O``, ``Q`` are rejected rather than
    silently read as SymPy objects.  Decimal literals become exact rationals
    (``0.3`` is ``3/10``).

    Parameters
    ----------
    text : str
        The expression, e.g. ``"tanh(t)"`` or ``"Max(t, 0.3) - 0.5"``.

    Returns
    -------
    sympy.Expr
        The expression in the real symbol :data:`T`.

    Raises
    ------
    ParameterError
        The text is not a whitelisted expression in ``t``; the message says why.

    Examples
    --------
    >>> parse_f("Max(t, 0.3) - 1/2")
    Max(3/10, t) - 1/2
    >>> parse_f("t^2 - 1")
    t**2 - 1
    >>> parse_f("gamma*t")
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: f: unknown name 'gamma' ...
    >>> parse_f("__import__('os')")
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: f: unknown name '__import__' called as a function ...
    >>> parse_f("t**10**10")
    Traceback (most recent call last):
    ...
    symrmt.parsing.ParseLimitError: f: exponent tower: the exponent 10000000000 is above the limit 1000 ...
    """
    if not isinstance(text, str):
        raise ParameterError(f"f: expected a string, got {type(text).__name__}")
    text = text.strip()
    if not text:
        raise ParameterError("f: empty expression; give f in t, e.g. 'tanh(t)'")
    expr = parse_expression(text, _local_namespace(), _FUNCTIONS, what="f", relations=True)
    return _check_expr(expr, text)


def _with_timeout(fn, seconds: float):
    """``fn()`` under the package's one time limit (:func:`symrmt.parsing.run_limited`);
    :class:`NotExact` on time."""
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


def _pieces(expr):
    """Tuple of ``(lo, hi, g)``: ``expr`` equals the smooth ``g`` on ``(lo, hi)``.

    Returns None when the kinks cannot be located exactly.
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


@functools.lru_cache(maxsize=1024)
def _exact_expectation(expr, timeout):
    """Exact E[expr(xi)], or an exception instance (cached as such)."""
    if not _exact_capable(expr):
        return NotExact(f"no closed form is attempted for E[{expr}] (function outside the exact engine)")
    try:

        def work():
            pieces = _pieces(expr)
            if pieces is None:
                raise NotExact(f"the kinks of {expr} could not be located exactly")
            return _gauss_exact(expr, pieces)

        value = _with_timeout(work, timeout)
    except NotExact as exc:
        return exc
    except (NotImplementedError, ValueError, TypeError, ZeroDivisionError, RecursionError) as exc:
        return NotExact(f"exact integration of E[{expr}] failed: {type(exc).__name__}: {exc}")
    try:
        value = _with_timeout(lambda: sp.simplify(value), min(timeout, 10.0))
    except NotExact:
        pass
    # independent check against a 20-digit quadrature
    pieces = _pieces(expr) or ((-sp.oo, sp.oo, expr),)
    try:
        num = _quad_pieces(pieces, 1, 20)
    except QuadratureError:
        num = None
    ex = sp.N(value, 25)
    if not ex.is_real:
        return NotExact(f"the closed form of E[{expr}] is not real: {ex}")
    if num is not None and abs(mpmath.mpf(str(ex)) - num) > mpmath.mpf(10) ** -12 * max(1, abs(num)):
        return NotExact(f"the closed form of E[{expr}] failed its numeric check ({ex} vs {num})")
    return value


def _hermite(k):
    return sp.hermite_prob(k, T)


# ---------------------------------------------------------------------------
# numeric Gaussian integrals
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _mp_function(g):
    from symrmt.numeric import compile_expr

    return compile_expr(T, g, floats_ok=True)


def _to_mpf(value, dps):
    """A SymPy number (or +-oo) as an mpf at the current working precision."""
    if value == sp.oo:
        return mpmath.inf
    if value == -sp.oo:
        return -mpmath.inf
    v = sp.N(value, dps + 5)
    if not v.is_real:
        raise ValueError(f"not a real number: {value}")
    return mpmath.mpf(str(v))


def _peak_points(fn, a, b):
    """Points around the largest value of ``|fn|`` on a grid of step 1/2 over ``[a, b] & [-300, 300]``.

    A Gaussian-weighted integrand such as ``exp(50 t) exp(-t^2/2)`` has all its mass near ``t = 50``;
    quadrature nodes placed only around 0 miss it and the error estimate does not see it."""
    lo, hi = max(a, -300), min(b, 300)
    if not lo < hi:
        return []
    best, arg = None, None
    with mpmath.workdps(15):
        n = int((hi - lo) * 2)
        for i in range(n + 1):
            t = lo + (hi - lo) * i / max(n, 1)
            try:
                v = abs(mpmath.mpmathify(fn(t)))
            except (ZeroDivisionError, ValueError, OverflowError, TypeError):
                continue
            if mpmath.isfinite(v) and (best is None or v > best):
                best, arg = v, t
    if arg is None or abs(arg) < 3:
        return []
    return [arg + d for d in (-20, -10, -5, 0, 5, 10, 20)]


def _quad_pieces(pieces, weight_power, dps, factor=None):
    """E[prod(g)^weight_power * factor] by quadrature; returns an mpf correct to dps digits."""
    with mpmath.workdps(dps + GUARD_DPS):
        total = mpmath.mpf(0)
        err = mpmath.mpf(0)
        for lo, hi, g in pieces:
            integrand_expr = g**weight_power * (factor if factor is not None else 1) * sp.exp(-(T**2) / 2)
            fn = _mp_function(integrand_expr)
            a, b = _to_mpf(lo, dps + GUARD_DPS), _to_mpf(hi, dps + GUARD_DPS)
            pts = sorted({a, b, *(x for x in [mpmath.mpf(0), *_peak_points(fn, a, b)] if a < x < b)})
            value = error = None
            for degree in (None, 8, 10):
                kw = {} if degree is None else {"maxdegree": degree}
                value, error = mpmath.quad(fn, pts, error=True, **kw)
                if error <= mpmath.mpf(10) ** -(dps + 5) * max(1, abs(value)):
                    break
            else:
                raise QuadratureError(
                    f"quadrature of E[({g}) * ...] over ({lo}, {hi}) did not converge: "
                    f"error estimate {mpmath.nstr(error, 3)} at {dps} digits; ask for fewer digits, "
                    "or check that f is finite and integrable against the Gaussian"
                )
            total += value
            err += error
        total /= mpmath.sqrt(2 * mpmath.pi)
    with mpmath.workdps(dps):
        return +total


@functools.lru_cache(maxsize=1024)
def _numeric_hermite(pieces, k, dps):
    return _quad_pieces(pieces, 1, dps, _hermite(k) if k else None)


@functools.lru_cache(maxsize=256)
def _numeric_square(pieces, dps):
    return _quad_pieces(pieces, 2, dps)


def _numpy_erf():
    try:
        from scipy.special import erf  # noqa: PLC0415

        return erf
    except ImportError:  # pragma: no cover - scipy is optional
        import numpy as np  # noqa: PLC0415

        uf = np.frompyfunc(math.erf, 1, 1)
        return lambda x: np.asarray(uf(x), dtype=np.float64)


# ---------------------------------------------------------------------------
# the nonlinearity
# ---------------------------------------------------------------------------


class Nonlinearity:
    r"""A centered nonlinearity ``f`` with its Hermite data.

    Parameters
    ----------
    f : str or sympy.Expr or Nonlinearity
        A preset name (see :data:`PRESETS`), an expression in ``t`` (parsed by
        :func:`parse_f`), or a SymPy expression in a symbol named ``t``.
    center : bool, default False
        Subtract ``a_0 = E[f(xi)]``.  Without it a non-centered ``f`` is
        refused.  If ``a_0`` has no closed form it is computed by quadrature;
        the simulation callable (:meth:`numpy`) then subtracts its float value
        and :attr:`expr` shows it as a 40-digit ``Float``.  The preset
        ``"softplus"`` is always centered this way.
    timeout : float, default 10
        Time limit in seconds of each symbolic attempt (one coefficient).

    Raises
    ------
    ParameterError
        ``f`` cannot be parsed, is not real, is not centered (without
        ``center=True``), or its Gaussian moments diverge.

    Notes
    -----
    ``a_0`` is tested exactly when possible; otherwise ``|a_0| > 1e-20``
    (at 30 digits) counts as non-centered.  Divergence is tested with
    ``lim_{t -> +-oo} t^2 f(t)^2 exp(-t^2/2) = 0`` (sufficient for a finite
    ``nu``); when SymPy cannot decide, the test is ``|t^2 f(t)^2 exp(-t^2/2)|``
    small at ``|t| = 40``.

    Examples
    --------
    >>> import mpmath
    >>> relu = Nonlinearity("relu")
    >>> relu.a(1), relu.nu, relu.d
    (1/2, (-1 + pi)/(2*pi), 1)
    >>> mpmath.nstr(relu.a_mpf(2, 30), 30)
    '0.398942280401432677939946059934'
    >>> Nonlinearity("Max(t, 0)")
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: f is not centered: a_0 = E[f(ξ)] = ...
    >>> Nonlinearity("Max(t, 0)", center=True).expr
    Max(0, t) - sqrt(2)/(2*sqrt(pi))
    """

    def __init__(self, f, center: bool = False, *, timeout: float = 10.0):
        self.timeout = float(timeout)
        self.name = None
        if isinstance(f, Nonlinearity):
            f = f.text
        if isinstance(f, str):
            key = f.strip()
            if key in PRESETS:
                self.name = key
                self.text = PRESETS[key]
                if key in CENTER_NUMERICALLY:
                    center = True
            else:
                self.text = key
            base = parse_f(self.text)
        elif isinstance(f, sp.Basic):
            base = _check_expr(f, str(f))
            self.text = str(base)
        else:
            raise ParameterError(f"f: expected a preset name, an expression string or a SymPy expression, got {f!r}")
        if self.name is None:
            self.name = self.text
        self.center = bool(center)
        self._base = base
        self._check_real(base)
        self._check_growth(base)
        self._num_shift = None  # set when a_0 is known only numerically
        a0 = self._exact_or_none(base)
        if a0 is not None:
            a0 = sp.nsimplify(a0) if a0.is_Rational else a0
            zero = a0 == 0 or (abs(sp.N(a0, 60)) < sp.Float("1e-50", 60))
            if not zero:
                if not center:
                    self._not_centered(sp.N(a0, 15), str(a0))
                base = base - a0
            self.expr = base
            self._sym = base
        else:
            a0n = _numeric_hermite(self._pieces_of(base), 0, 30)
            if abs(a0n) > mpmath.mpf("1e-20"):
                if not center:
                    self._not_centered(mpmath.nstr(a0n, 15), None)
                self._num_shift = True
                self.expr = base - sp.Float(mpmath.nstr(_numeric_hermite(self._pieces_of(base), 0, 45), 40), 40)
            else:
                self.expr = base
            self._sym = base
        self._pieces = self._pieces_of(self._sym)

    # -- construction helpers -------------------------------------------------

    def __repr__(self):
        return f"Nonlinearity({self.name!r}, expr={self.expr})"

    def _not_centered(self, value, exact):
        shown = f"{value}" if exact is None else f"{exact} ≈ {value}"
        raise ParameterError(
            f"f is not centered: a_0 = E[f(ξ)] = {shown}; the theory needs a_0 = 0 "
            "(a non-centered f makes K blow up); pass center=True (CLI --center) to subtract a_0"
        )

    @staticmethod
    def _pieces_of(expr):
        p = _pieces(expr)
        if p is None:
            return ((-sp.oo, sp.oo, expr),)
        return p

    @staticmethod
    def _check_real(expr):
        for x0 in ("-2.3", "-0.7", "0.41", "1.9"):
            v = sp.N(expr.subs(T, sp.Rational(x0)), 20)
            if not v.is_real or not v.is_finite:
                raise ParameterError(
                    f"f must be real and finite on the whole real line; f({x0}) = {v}. "
                    "Use e.g. Abs(t) inside sqrt/log"
                )

    def _check_growth(self, expr):
        pieces = _pieces(expr) or ((-sp.oo, sp.oo, expr),)
        for end, g in ((sp.oo, pieces[-1][2]), (-sp.oo, pieces[0][2])):
            probe = T**2 * g**2 * sp.exp(-(T**2) / 2)
            try:
                lim = _with_timeout(lambda probe=probe, end=end: sp.limit(probe, T, end), min(self.timeout, 10.0))
            except (NotExact, NotImplementedError, ValueError, TypeError):
                lim = None
            if lim is not None and lim.is_number and lim == 0:
                continue
            if lim is None or not lim.is_number or isinstance(lim, sp.AccumBounds):
                fn = _mp_function(probe)
                with mpmath.workdps(30):
                    x = 40 if end == sp.oo else -40
                    try:
                        val = abs(fn(mpmath.mpf(x)))
                    except (OverflowError, ZeroDivisionError, ValueError):
                        val = mpmath.inf
                if val < mpmath.mpf("1e-100"):
                    continue
            raise ParameterError(
                f"f: E[f(ξ)^2] diverges: f grows too fast as t -> {end} "
                f"(t^2 f(t)^2 exp(-t^2/2) does not vanish there); f must satisfy |f(t)| = o(exp(t^2/4)/|t|)"
            )

    def _exact_or_none(self, expr):
        res = _exact_expectation(expr, self.timeout)
        return None if isinstance(res, Exception) else res

    # -- exact values -----------------------------------------------------------

    @functools.cached_property
    def parity(self):
        """``'odd'``, ``'even'`` or ``None``: the parity of ``f`` (used to zero coefficients)."""
        g = self.expr
        try:
            if _with_timeout(lambda: sp.simplify(g + g.subs(T, -T)), min(self.timeout, 10.0)) == 0:
                return "odd"
            if _with_timeout(lambda: sp.simplify(g - g.subs(T, -T)), min(self.timeout, 10.0)) == 0:
                return "even"
        except NotExact:
            pass
        return None

    def a(self, k: int):
        """Exact ``a_k = E[f(xi) He_k(xi)]`` as a SymPy expression.

        Parameters
        ----------
        k : int
            Order, ``k >= 0``.

        Returns
        -------
        sympy.Expr

        Raises
        ------
        NotExact
            No closed form within the time limit (use :meth:`a_mpf`).

        Examples
        --------
        >>> Nonlinearity("sin").a(1)
        exp(-1/2)
        >>> Nonlinearity("tanh").a(2)
        0
        >>> Nonlinearity("tanh").a(1)
        Traceback (most recent call last):
        ...
        symrmt.symbolic.hermite.NotExact: no closed form is attempted ...
        """
        k = _check_k(k)
        if k == 0:
            return sp.Integer(0)
        if (self.parity == "odd" and k % 2 == 0) or (self.parity == "even" and k % 2 == 1):
            return sp.Integer(0)
        res = _exact_expectation(sp.expand(self._sym * _hermite(k)), self.timeout)
        if isinstance(res, Exception):
            raise res
        return res

    @property
    def nu(self):
        """Exact ``nu = E[f(xi)^2]`` (raises :class:`NotExact` when unavailable)."""
        if self._num_shift:
            raise NotExact("a_0 of this f is known only numerically, so nu is too (use nu_mpf)")
        res = _exact_expectation(sp.expand(self._sym**2), self.timeout)
        if isinstance(res, Exception):
            raise res
        return res

    @functools.cached_property
    def exact(self) -> bool:
        """True when ``a_1`` and ``nu`` both have closed forms."""
        try:
            self.a(1)
            self.nu  # noqa: B018 - evaluated for its exception
        except NotExact:
            return False
        return True

    @functools.cached_property
    def _d_value(self):
        g = self._pieces[-1][2]
        try:
            lim = _with_timeout(lambda: sp.limit(g / T, T, sp.oo), min(self.timeout, 10.0))
        except (NotImplementedError, ValueError, TypeError) as exc:
            return NotExact(f"sympy.limit failed on f(t)/t: {exc}")
        except NotExact as exc:
            return exc
        if not lim.is_number or not lim.is_finite or isinstance(lim, sp.AccumBounds) or lim.has(sp.nan):
            return ParameterError(
                f"d = lim_(t->+oo) f(t)/t = {lim} is not finite for f = {self.expr}: "
                "diagonal='keep' is unsupported for this f; use diagonal='zero' (it does not need d)"
            )
        return lim

    @property
    def d(self):
        """Exact ``d = lim_{t -> +oo} f(t)/t``.

        Raises
        ------
        ParameterError
            The limit is infinite or does not exist: ``diagonal='keep'`` is
            unsupported for this ``f`` (``diagonal='zero'`` does not need ``d``).

        Examples
        --------
        >>> Nonlinearity("relu").d, Nonlinearity("tanh").d
        (1, 0)
        >>> Nonlinearity("poly2").d
        Traceback (most recent call last):
        ...
        symrmt.params.ParameterError: d = lim_(t->+oo) f(t)/t = oo is not finite ...
        """
        v = self._d_value
        if isinstance(v, Exception):
            raise v
        return v

    # -- numeric values ---------------------------------------------------------

    def _shift_mpf(self, dps):
        return _numeric_hermite(self._pieces, 0, dps)

    def a_mpf(self, k: int, dps: int = 15):
        """``a_k`` as an mpmath ``mpf`` correct to ``dps`` significant digits.

        From the closed form when there is one, else by quadrature at
        ``dps + GUARD_DPS`` digits, split at the kinks.

        Parameters
        ----------
        k : int
            Order, ``k >= 0``.
        dps : int, default 15
            Decimal digits.

        Returns
        -------
        mpmath.mpf

        Raises
        ------
        QuadratureError
            The quadrature error estimate is above ``10**-(dps+5)``.

        Examples
        --------
        >>> import mpmath
        >>> mpmath.nstr(Nonlinearity("tanh").a_mpf(3, 30), 30)
        '-0.36359537628097414949796785647'
        """
        k = _check_k(k)
        dps = _check_dps(dps)
        try:
            return _exact_to_mpf(self.a(k), dps)
        except NotExact:
            pass
        return _numeric_hermite(self._pieces, k, dps)

    def nu_mpf(self, dps: int = 15):
        """``nu = E[f(xi)^2]`` as an ``mpf`` correct to ``dps`` digits.

        Examples
        --------
        >>> import mpmath
        >>> mpmath.nstr(Nonlinearity("tanh").nu_mpf(30), 30)
        '0.394294490397841174416459772444'
        """
        dps = _check_dps(dps)
        try:
            return _exact_to_mpf(self.nu, dps)
        except NotExact:
            pass
        v = _numeric_square(self._pieces, dps + 5)
        if self._num_shift:
            with mpmath.workdps(dps + 5):
                v = v - self._shift_mpf(dps + 5) ** 2
        with mpmath.workdps(dps):
            return +v

    def d_mpf(self, dps: int = 15):
        """``d`` as an ``mpf`` (raises like :attr:`d`)."""
        return _exact_to_mpf(self.d, _check_dps(dps))

    # -- bridges ------------------------------------------------------------------

    def numpy(self):
        """A vectorized float64 NumPy callable of ``f`` (for the simulator).

        Intermediate overflow that still gives a finite value (``exp(-t)`` in
        the sigmoid at ``t = -1000``) is silent; a non-finite output at a finite
        input raises ``FloatingPointError`` (e.g. ``log(1 + exp(t))`` for
        ``t > 709``) instead of returning ``inf``.

        Examples
        --------
        >>> import numpy as np
        >>> g = Nonlinearity("relu").numpy()
        >>> y = g(np.array([[-1.0, 2.0]]))
        >>> y.dtype, y.shape, round(float(y[0, 1]), 12)
        (dtype('float64'), (1, 2), 1.601057719599)
        """
        import numpy as np  # noqa: PLC0415 - the symbolic layer does not need NumPy

        from symrmt.numeric import compile_expr

        raw = compile_expr(T, self.expr, modules=[{"erf": _numpy_erf()}, "numpy"], cse=False, floats_ok=True)

        def f(x):
            x = np.asarray(x, dtype=np.float64)
            with np.errstate(over="ignore"):
                y = np.asarray(raw(x), dtype=np.float64)
            if not np.all(np.isfinite(y[np.isfinite(x)] if y.shape == x.shape else y)):
                raise FloatingPointError(
                    f"f = {self.expr} overflowed in float64 at some inputs (|t| too large for this expression)"
                )
            if y.shape != x.shape:
                y = np.broadcast_to(y, x.shape).copy()
            return y

        f.__doc__ = f"f(t) = {self.expr} (vectorized, float64)"
        return f

    def to_dict(self, k: int = 3, dps: int = 15, symbolic: bool = False) -> dict:
        """Hermite data up to order ``k``.

        Parameters
        ----------
        k : int
            Highest order of ``a``.
        dps : int
            Digits of the ``mpf`` values.
        symbolic : bool
            If True, values with a closed form are SymPy expressions (others
            stay ``mpf``); if False every value is an ``mpf``.

        Returns
        -------
        dict
            ``{'a': [a_0, ..., a_k], 'a1', 'nu', 'nu_minus_a1sq', 'd', 'exact'}``;
            ``d`` is None when undefined.
        """
        k = _check_k(k)

        def get(exact_fn, num_fn):
            if symbolic:
                try:
                    return exact_fn()
                except NotExact:
                    pass
            return num_fn()

        a = [get(lambda j=j: self.a(j), lambda j=j: self.a_mpf(j, dps)) for j in range(k + 1)]
        a1 = get(lambda: self.a(1), lambda: self.a_mpf(1, dps))
        nu = get(lambda: self.nu, lambda: self.nu_mpf(dps))
        if isinstance(a1, sp.Basic) and isinstance(nu, sp.Basic):
            gap = sp.simplify(nu - a1**2)
        else:
            with mpmath.workdps(dps + 5):
                gap = self.nu_mpf(dps + 5) - self.a_mpf(1, dps + 5) ** 2
            with mpmath.workdps(dps):
                gap = +gap
        try:
            d = get(lambda: self.d, lambda: self.d_mpf(dps))
        except (ParameterError, NotExact):
            d = None
        return {"a": a, "a1": a1, "nu": nu, "nu_minus_a1sq": gap, "d": d, "exact": self.exact}


def _check_k(k):
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ParameterError(f"k must be an integer >= 0, got {k!r}")
    return check_count(k, "hermite_k", "k")


def _check_dps(dps):
    if isinstance(dps, bool) or not isinstance(dps, int) or dps < 1:
        raise ParameterError(f"dps must be an integer >= 1, got {dps!r}")
    return check_digits(dps, "dps")


def _exact_to_mpf(value, dps):
    with mpmath.workdps(dps + GUARD_DPS):
        x = _to_mpf(value, dps + GUARD_DPS)
    with mpmath.workdps(dps):
        return +x


def hermite_data(f, k: int = 3, dps: int = 15, center: bool = False, symbolic: bool = False) -> dict:
    """Shortcut for ``Nonlinearity(f, center).to_dict(k, dps, symbolic)``."""
    nl = f if isinstance(f, Nonlinearity) else Nonlinearity(f, center=center)
    return nl.to_dict(k, dps, symbolic)


def hermite_report(f, k: int = 3, dps: int = 15, center: bool = False) -> dict:
    """The JSON contract of the CLI verb ``hermite``.

    Parameters
    ----------
    f : str or sympy.Expr or Nonlinearity
        Preset name or expression.
    k : int
        Highest order of ``a``.
    dps : int
        Digits.  Numbers are Python floats when ``dps <= 15``, else decimal
        strings with ``dps`` significant digits.
    center : bool
        Subtract ``a_0`` (see :class:`Nonlinearity`).

    Returns
    -------
    dict
        ``{'a': [a_0..a_k], 'a1', 'nu', 'd' (None when undefined), 'exact'}``.

    Examples
    --------
    >>> hermite_report("relu", k=2)
    {'a': [0.0, 0.5, 0.3989422804014327], 'a1': 0.5, 'nu': 0.3408450569081047, 'd': 1.0, 'exact': True}
    >>> hermite_report("tanh", k=1, dps=20)["a1"]
    '0.60570550960215882558'
    """
    nl = f if isinstance(f, Nonlinearity) else Nonlinearity(f, center=center)
    dps = _check_dps(dps)

    def conv(x):
        # a float only when it is one: a value beyond the double range is a decimal string
        if dps <= 15 and mpmath.isfinite(x) and abs(x) < mpmath.mpf("1e300"):
            return float(x)
        if not mpmath.isfinite(x):
            raise QuadratureError(f"a Hermite value of f is not finite ({x}); f grows too fast for its "
                                  "Gaussian moments to be computed")
        return mpmath.nstr(x, dps)

    try:
        d = conv(nl.d_mpf(dps))
    except (ParameterError, NotExact):
        d = None
    return {
        "a": [conv(nl.a_mpf(j, dps)) for j in range(_check_k(k) + 1)],
        "a1": conv(nl.a_mpf(1, dps)),
        "nu": conv(nl.nu_mpf(dps)),
        "d": d,
        "exact": nl.exact,
    }
