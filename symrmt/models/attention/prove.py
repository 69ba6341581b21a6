r"""Proved digits: every limit as a ball ``[mid ± rad]`` proved to contain it (python-flint's Arb).

The certified path of :mod:`symrmt.models.attention.theory` solves each system at two working precisions
that must agree.  This module turns such a solution into a proof, in ball arithmetic
(`Arb <https://arblib.org>`_ through ``python-flint``): the same SymPy residuals and Jacobians
that the mpmath solver runs are executed on balls (:func:`arb_function` runs the source that
:func:`symrmt.codegen.compile.compile_recipe` generated, in a namespace where ``mpf`` makes a ball),
with every exact parameter an exact ball (``fmpq``).

* **The fixed point** (:func:`krawczyk`): with ``x~`` the mpmath solution, ``Y ~ J(x~)^{-1}`` and
  the box ``X = x~ + [-r, r]``, the Krawczyk operator
  ``K(X) = x~ - Y F(x~) + (I - Y J(X)) (X - x~)``, evaluated in ball arithmetic with the
  parameters as balls, lies inside ``X``: then ``X`` holds exactly one root, inside ``K(X)``,
  for every parameter value in the balls.
* **The attention system** has nine equations in six unknowns.  The square system proved is
  ``G F(G)`` (its six upper entries), with ``F`` the 3x3 residual of
  :func:`symrmt.models.attention.equations.fixed_point_polynomial` reshaped: ``G F = det N (G M G - G)``
  is symmetric, so with ``det G != 0`` and ``det N != 0`` on the box (both checked on balls) its
  roots are exactly the fixed points ``M(G) G = I``.  Its Jacobian is assembled from the same
  compiled ``F`` and ``dF/dG`` (product rule), and ``dG/dgamma`` solves
  ``J_sq dG = -G dF/dgamma`` on the proved box.
* **Derived quantities** (the Woodbury readout, ``E_A = -gamma^2 dvarphi/dgamma``, an engine
  expression's derivatives in its parameters) are evaluated in ball arithmetic on the proved box.
* **Hermite data**: a closed form is evaluated as a ball; a quadrature value comes from
  ``acb.integral`` on ``[-L, L]`` (its error bound is part of the ball) plus a bound on the
  Gaussian tails (:func:`hermite_ball`).
* **The branch**: Krawczyk proves *a* root, not *the* root.  For the Marchenko-Pastur resolvent of
  ridge regression (and any one-unknown polynomial engine system) all real roots are isolated
  exactly (``fmpq_poly.complex_roots``) and exactly one must lie in the sanity region
  (``0 < m <= 1/gamma``); a box around another root is refused with :class:`BranchError`.  For the
  attention fixed point and larger engine systems the sanity bounds are proved on the ball
  (``0 < tau(Q) <= 1/gamma``, ``0 <= E_A <= 1``), but that no other root lies in the sanity
  region is **not** proved: ``branch`` says so (``"isolated"`` or ``"sanity"``).

What a ball means: the exact large-``n`` limit *as the package's equations define it*.  The
Gaussian-equivalence and deterministic-equivalent theorems that connect those equations to the
random matrices are the mathematics' part (``docs/prove.md``).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from fractions import Fraction

import mpmath
import sympy as sp

from symrmt.cache import cache_dict, cached
from symrmt.errors import BranchError, SolverError
from symrmt.errors import ParameterError

__all__ = [
    "ProofError",
    "ProveUnavailable",
    "require_flint",
    "arb_function",
    "krawczyk",
    "ball_json",
    "ball_text",
    "prove_mp_root",
    "prove_ridge",
    "prove_attention",
    "prove_trace",
    "prove_limit",
    "balls_json",
    "hermite_ball",
    "prove_hermite_report",
]

#: how to get the optional dependency (the message of :class:`ProveUnavailable`)
INSTALL = "pip install 'symrmt[prove]' (or pip install 'python-flint>=0.6')"
#: working bits beyond ``digits * log2(10)`` (before escalation doubles them)
GUARD_BITS = 64
#: escalations of the working precision before a :class:`ProofError`
ESCALATIONS = 3


class ProofError(SolverError):
    """A ball could not be proved (Krawczyk test failed, a ball too wide); the message says which."""


class ProveUnavailable(ParameterError):
    """``--prove`` / ``prove=True`` without python-flint installed (exit 2)."""


def require_flint():
    """The ``flint`` module, or :class:`ProveUnavailable` saying how to install it."""
    try:
        import flint
    except ImportError:
        raise ProveUnavailable(f"proved digits need python-flint, which is not installed: {INSTALL}") from None
    return flint


@contextmanager
def working_bits(bits: int):
    """``flint.ctx.prec = bits`` inside the block (restored after)."""
    flint = require_flint()
    old = flint.ctx.prec
    flint.ctx.prec = int(bits)
    try:
        yield
    finally:
        flint.ctx.prec = old


def bits_for(digits: int, extra_digits: int = 0) -> int:
    return int(math.ceil((digits + extra_digits) * math.log2(10))) + GUARD_BITS


# ---------------------------------------------------------------- exact inputs as balls

def to_arb(x):
    """An exact number (int, Fraction, SymPy rational, mpf) as a ball; already a ball: itself."""
    flint = require_flint()
    if isinstance(x, (flint.arb, flint.acb)):
        return x
    if isinstance(x, bool):
        x = int(x)
    if isinstance(x, (int, float)):
        return flint.arb(x)  # a float is an exact binary number
    if isinstance(x, Fraction):
        return flint.arb(flint.fmpq(x.numerator, x.denominator))
    if isinstance(x, mpmath.mpf) or (isinstance(x, sp.Basic) and x.is_Float):
        return _binary_ball(x._mpf_)  # the binary number itself, exactly
    if isinstance(x, sp.Basic):
        if x.is_Rational:
            return flint.arb(flint.fmpq(int(x.p), int(x.q)))
        return sympy_ball(x)
    if isinstance(x, str):
        from symrmt.models.attention.params import to_fraction

        return to_arb(to_fraction(x, "value"))
    raise TypeError(f"cannot make an exact ball of {x!r}")


def _binary_ball(mpf_tuple):
    """The exact ball of an mpmath/SymPy binary float ``(sign, man, exp, bc)``."""
    flint = require_flint()
    sign, man, exp, bc = mpf_tuple
    if not man:
        if exp:  # mpmath's encoding of inf and nan
            raise ValueError("not a finite number")
        return flint.arb(0)
    with working_bits(max(flint.ctx.prec, int(bc) + 16)):  # exact: man * 2^exp needs bc bits
        v = flint.arb(int(man)) * flint.arb(2) ** int(exp)
    return -v if sign else v


def sympy_ball(expr):
    """A closed-form SymPy number (``2*sqrt(3)/(3*sqrt(pi))``) evaluated as a ball."""
    from symrmt.codegen.compile import compile_expr
    import inspect

    fn = compile_expr([], sp.sympify(expr))
    out = arb_function(inspect.getsource(fn), "closed form")()
    return _arb_checked([out], f"the closed form {expr}")[0]


# ---------------------------------------------------------------- compiled code on balls

def _arb_namespace(complex_: bool = False):
    flint = require_flint()
    num = flint.acb if complex_ else flint.arb

    def mpf(x):
        return to_arb(x) if not isinstance(x, str) else num(x)

    def call(name):
        def f(*a):
            x = a[0] if isinstance(a[0], (flint.arb, flint.acb)) else num(a[0])
            return getattr(x, name)(*a[1:])
        return f

    def matrix(rows):
        return [list(r) for r in rows]

    ns = {"__builtins__": {}, "mpf": mpf, "ImmutableDenseMatrix": matrix, "MutableDenseMatrix": matrix,
          "abs": abs, "range": range, "len": len, "sum": sum, "list": list, "tuple": tuple,
          "pi": num.pi(), "e": num(1).exp(), "euler": num.const_euler() if not complex_ else num(flint.arb.const_euler()),
          "mpc": (lambda re, im=0: flint.acb(re, im))}
    for name in ("sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin", "acos", "atan", "erf",
                 "erfc", "gamma", "expm1", "log1p", "atanh", "asinh", "acosh"):
        ns[name] = call(name)
    return ns


_ARB_CACHE = cache_dict("symrmt.models.attention.prove._ARB_CACHE", 512)


def _ball_pow(a, n):
    """``a ** n``; an integer exponent by repeated multiplication (Arb's power of a ball that contains 0
    is ``nan``: ``arb(0, r) ** 2``), anything else by Arb's power."""
    flint = require_flint()
    if isinstance(n, int) and not isinstance(n, bool) and isinstance(a, (flint.arb, flint.acb)):
        if n == 0:
            return a * 0 + 1
        base, k, out = a, abs(n), None
        while k:
            if k & 1:
                out = base if out is None else out * base
            k >>= 1
            if k:
                base = base * base
        return out if n > 0 else 1 / out
    return a ** n


def _powers_as_calls(source: str) -> str:
    """The generated source with every ``x ** y`` written ``_symrmt_pow(x, y)`` (an AST rewrite: the
    arithmetic is unchanged, only Arb's power of a ball containing 0 is avoided)."""
    import ast

    class _Pow(ast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            if isinstance(node.op, ast.Pow):
                return ast.copy_location(ast.Call(func=ast.Name(id="_symrmt_pow", ctx=ast.Load()),
                                                  args=[node.left, node.right], keywords=[]), node)
            return node

    tree = ast.fix_missing_locations(_Pow().visit(ast.parse(source)))
    return ast.unparse(tree)


def arb_function(compiled, name: str | None = None, complex_: bool = False):
    """The lambdify-generated source of a :class:`~symrmt.codegen.compile.Compiled` (or a source text)
    run on balls: ``mpf(k)`` is an exact ball, ``sqrt`` etc. are Arb's, constants at the current precision.

    The generated code is the one the mpmath solver runs (no formula is retyped); a name outside the
    namespace raises ``NameError`` when called, which the callers report as not provable."""
    flint = require_flint()
    source = compiled if isinstance(compiled, str) else compiled.source
    name = name or getattr(compiled, "name", "expr")
    key = (source, flint.ctx.prec, complex_)
    fn = _ARB_CACHE.get(key)
    if fn is None:
        ns = _arb_namespace(complex_)
        ns["_symrmt_pow"] = _ball_pow
        exec(compile(_powers_as_calls(source), f"<symrmt-arb:{name}>", "exec"), ns)
        fn = _ARB_CACHE[key] = ns["_lambdifygenerated"]
        if len(_ARB_CACHE) > 512:
            _ARB_CACHE.clear()
            _ARB_CACHE[key] = fn
    return fn


# ---------------------------------------------------------------- balls out

def _mid_text(x, digits: int) -> str:
    return x.mid().str(digits + 2, radius=False).strip("[]").split(" +/-")[0]


def ball_parts(x, digits: int):
    """``(mid, rad)`` of a ball as decimal strings: the midpoint with ``digits + 2`` digits and the
    radius rounded up, widened by the midpoint's rounding so that the printed ball contains ``x``."""
    flint = require_flint()
    mid_s = _mid_text(x, digits + 2)
    with working_bits(max(flint.ctx.prec, bits_for(digits, 10))):
        m = flint.arb(mid_s)
        dist = (x - m).abs_upper() + m.rad()  # |x - printed mid|, all of x's ball included
    rad_s = _round_up(dist)
    return mid_s, rad_s


def _round_up(r) -> str:
    """An upper bound of a non-negative arb as a 2-digit decimal (``1.6e-36``)."""
    require_flint()
    if r == 0:
        return "0"
    up = r.upper() if hasattr(r, "upper") else r
    # exponent and two leading digits, rounded up (with a relative margin for the 5-digit print)
    text = up.str(5, radius=False).strip("[]")
    v = mpmath.mpf(text.split(" ")[0])
    if v <= 0:
        return "0"
    e = int(mpmath.floor(mpmath.log10(v)))
    lead = mpmath.ceil(v / mpmath.mpf(10) ** (e - 1) * (1 + mpmath.mpf(10) ** -4))
    if lead >= 100:
        lead, e = mpmath.ceil(lead / 10), e + 1
    return f"{int(lead) / 10:.1f}e{e:d}"


def ball_json(x, digits: int) -> dict:
    """``{"mid": "...", "rad": "..."}`` (decimal strings; the printed ball contains the proved one)."""
    mid, rad = ball_parts(x, digits)
    out = {"mid": mid, "rad": rad}
    if x.contains(0) and rad != "0":
        out["absolute"] = True  # the ball holds 0: its radius bounds the absolute error, not a relative one
    return out


def ball_text(x, digits: int) -> str:
    """``[0.5172612419124243846845534808797535 ± 1.6e-36]``."""
    mid, rad = ball_parts(x, digits)
    if rad == "0":
        return f"{mid} (exact)"
    return f"[{mid} ± {rad}]" + (" (absolute radius: the ball holds 0)" if x.contains(0) else "")


def check_radius(x, digits: int, what: str) -> None:
    """Raise :class:`ProofError` unless ``rad <= 10**-digits |mid|`` (``x`` finite); a ball that
    contains 0 must instead have ``rad <= 10**-digits`` (an absolute radius)."""
    flint = require_flint()
    if not x.is_finite():
        raise ProofError(f"{what}: the ball is not finite ({x})")
    tol = flint.arb(10) ** (-digits)
    if x.contains(0):
        if not x.rad() <= tol:
            raise ProofError(f"{what}: the ball {x.str(10)} contains 0 and its absolute radius exceeds 1e-{digits}")
        return
    if not x.rad() <= tol * abs(x.mid()):
        raise ProofError(f"{what}: radius {x.rad().str(3)} exceeds 1e-{digits} of |mid| ({x.str(10)})")


def relative_ok(x, digits: int) -> bool:
    try:
        check_radius(x, digits, "")
    except ProofError:
        return False
    return True


# ---------------------------------------------------------------- Krawczyk

def _mat(rows):
    flint = require_flint()
    return flint.arb_mat([list(r) for r in rows])


def krawczyk(F, J, x0, what: str = "fixed point", inflations: int = 12, refine: int = 8):
    """Prove that ``F(x) = 0`` has exactly one root in a box around the approximate root ``x0``.

    ``F(xs) -> list`` and ``J(xs) -> list of rows`` take a list of balls (``J`` is evaluated over the
    box).  ``x0`` is refined first by interval-free Newton steps on the midpoints (the mpmath solution
    may carry fewer digits than the working precision), then the box is inflated around it until
    ``K(X)`` lies in the interior of ``X``.  Returns the list of balls ``K(X)`` (a box that contains
    the one root of ``X``).  Raises :class:`ProofError` when no inflation passes.
    """
    flint = require_flint()
    arb = flint.arb
    m = len(x0)
    x = [to_arb(v).mid() for v in x0]
    eye = flint.arb_mat(m, m, [1 if i == j else 0 for i in range(m) for j in range(m)])
    # Newton on midpoints (quadratic: a handful of steps from ~digits/2 correct digits)
    Y = None
    for _ in range(refine):
        Jm = _mat(J(x)).mid()
        try:
            Y = Jm.inv().mid()
        except ZeroDivisionError:
            raise ProofError(f"{what}: the Jacobian is singular at the approximate root") from None
        fx = flint.arb_mat([[v] for v in F(x)])
        step = Y * fx
        new = [(x[i] - step[i, 0]).mid() for i in range(m)]
        size = max(abs(v.mid()) for v in x) + 1
        delta = max(abs((a - b).mid()) for a, b in zip(new, x))
        x = new
        if delta <= size * arb(2) ** (-flint.ctx.prec + 8):
            break
    Jm = _mat(J(x)).mid()
    try:
        Y = Jm.inv().mid()
    except ZeroDivisionError:
        raise ProofError(f"{what}: the Jacobian is singular at the approximate root") from None
    fx = flint.arb_mat([[v] for v in F(x)])
    base = Y * fx  # Y F(x~) as balls
    scale = [abs(v.mid()) + 1 for v in x]
    r = [(base[i, 0].abs_upper() * 4 + scale[i] * arb(2) ** (-flint.ctx.prec + 16)) for i in range(m)]
    for _ in range(inflations):
        X = [arb(x[i], r[i].upper()) if hasattr(r[i], "upper") else arb(x[i], r[i]) for i in range(m)]
        JX = _mat(J(X))
        dX = flint.arb_mat([[X[i] - x[i]] for i in range(m)])
        K = (flint.arb_mat([[x[i]] for i in range(m)]) - base) + (eye - Y * JX) * dX
        Ks = [K[i, 0] for i in range(m)]
        if all(X[i].contains_interior(Ks[i]) for i in range(m)):
            return Ks
        if not all(k.is_finite() for k in Ks):
            raise ProofError(f"{what}: the Krawczyk operator is not finite on the box (a singular Jacobian "
                             "or a pole near the root)")
        r = [max((Ks[i] - x[i]).abs_upper() * 2, r[i] * 4) for i in range(m)]
    raise ProofError(f"{what}: the Krawczyk test failed after {inflations} inflations of the box "
                     "(an ill-conditioned Jacobian at this precision: ask for fewer digits)")


def _mat_solve(A, b):
    """``A^{-1} b`` for ball matrices (an enclosure for every matrix in ``A``); ``ProofError`` if singular."""
    try:
        return A.solve(b)
    except ZeroDivisionError:
        raise ProofError("a linear system of the derivatives is singular on the proved box") from None


# ---------------------------------------------------------------- Marchenko-Pastur / ridge

@cached(maxsize=256)
def _mp_sources():
    """Generated source of ``(P(m), dP/dm)`` (:func:`~symrmt.models.attention.equations.mp_quadratic`) and of the
    closed-form root :func:`~symrmt.models.attention.equations.mp_root` (through the package's compile step)."""
    import inspect

    from symrmt.codegen.compile import compile_expr
    from symrmt.models.attention import equations as S

    quad = compile_expr([S.m, S.gamma, S.c], [S.mp_quadratic(), sp.diff(S.mp_quadratic(), S.m)])
    root = compile_expr([S.gamma, S.c], S.mp_root())
    return inspect.getsource(quad), inspect.getsource(root)


@cached(maxsize=256)
def _mp_coefficients():
    """Coefficients (in ``gamma``, ``c``; lowest degree first) of the numerator of
    :func:`~symrmt.models.attention.equations.mp_quadratic`, a polynomial in ``m`` (its denominator is free of ``m``)."""
    from symrmt.models.attention import equations as S

    num, den = sp.fraction(sp.cancel(sp.together(S.mp_quadratic())))
    if den.has(S.m):
        raise ProofError("the Marchenko-Pastur equation is not polynomial in m after cancellation")
    return tuple(reversed(sp.Poly(num, S.m).all_coeffs()))


def _mp_poly(c: Fraction, gamma: Fraction):
    """The Marchenko-Pastur quadratic of :func:`symrmt.models.attention.equations.mp_quadratic` at exact values,
    as an ``fmpq_poly`` in ``m`` (coefficients from SymPy)."""
    from symrmt.models.attention import equations as S

    flint = require_flint()
    subs = {S.c: sp.Rational(c.numerator, c.denominator), S.gamma: sp.Rational(gamma.numerator, gamma.denominator)}
    coeffs = [sp.Rational(cf.subs(subs)) for cf in _mp_coefficients()]
    return flint.fmpq_poly([flint.fmpq(int(x.p), int(x.q)) for x in coeffs]), None


def isolate_real_roots(poly):
    """Every real root of an ``fmpq_poly`` as a ball.

    ``complex_roots`` (Arb's ``arb_fmpz_poly_complex_roots`` on the square-free factors) returns
    disjoint enclosures that isolate every root, the real ones with an imaginary part exactly 0 and the
    others in conjugate pairs; so the real roots are exactly those.  Raises :class:`ProofError` on a
    multiple root."""
    require_flint()
    out = []
    for root, mult in poly.complex_roots():
        if mult != 1:
            raise ProofError("a multiple root: the isolation is not conclusive")
        if root.imag.is_zero():
            out.append(root.real)
    return out


def prove_mp_root(c, gamma, start, digits: int = 30):
    """Prove the Marchenko-Pastur root near ``start`` and that it is the physical one.

    Krawczyk on the SymPy quadratic gives a ball around the root near ``start``; all real roots
    are then isolated exactly, exactly one must lie in ``(0, 1/gamma]``, and the proved ball must
    be that one; otherwise :class:`BranchError` (e.g. ``start = -1.962`` at ``c = 1/2``,
    ``gamma = 1/100``, whose physical root is ``50.96``)."""

    require_flint()
    c, gamma = Fraction(c), Fraction(gamma)
    with working_bits(bits_for(digits, 10)):
        fn = arb_function(_mp_sources()[0], "Marchenko-Pastur quadratic")
        g, cc = to_arb(gamma), to_arb(c)
        ball = krawczyk(lambda x: [fn(x[0], g, cc)[0]], lambda x: [[fn(x[0], g, cc)[1]]], [to_arb(start)],
                        "Marchenko-Pastur root")[0]
        poly, _ = _mp_poly(c, gamma)
        roots = isolate_real_roots(poly)
        inv_g = 1 / g
        physical = [r for r in roots if r > 0 and r <= inv_g]
        if len(physical) != 1:
            raise BranchError(f"Marchenko-Pastur at c={c}, gamma={gamma}: {len(physical)} real roots in "
                              "(0, 1/gamma], not exactly one; the branch is not proved")
        if not ball.overlaps(physical[0]):
            raise BranchError(f"the proved Marchenko-Pastur root {ball.str(8)} is not the physical one "
                              f"{physical[0].str(8)} (the only real root in (0, 1/gamma] at c={c}, gamma={gamma}); "
                              "a box around another root is refused")
        return ball.intersection(physical[0])


def prove_ridge(c, gammas, snr, digits: int, mids=None):
    """Balls of ``E_RR(gamma)``: the SymPy closed form :func:`~symrmt.models.attention.equations.ridge_error_closed_form`
    on balls; its root of the Marchenko-Pastur quadratic is checked to be the physical one by
    :func:`prove_mp_root` (branch ``"isolated"``)."""
    from symrmt.codegen.compile import ridge_function

    c = Fraction(c)
    s = Fraction(snr)
    root_src = _mp_sources()[1]
    out = []
    for g in gammas:
        g = Fraction(g)
        bits = bits_for(digits, 10 + 2 * _decades(g))
        for _ in range(ESCALATIONS):
            with working_bits(bits):
                gb, cb = to_arb(g), to_arb(c)
                # the closed form's root expression is the one isolated in (0, 1/gamma]
                mroot = arb_function(root_src, "Marchenko-Pastur root")(gb, cb)
                proved = prove_mp_root(c, g, mroot.mid(), digits)
                if not proved.overlaps(mroot):
                    raise BranchError(f"ridge at gamma={g}: the closed form's root is not the physical one")
                v = arb_function(ridge_function())(gb, cb, to_arb(s))
                if relative_ok(v, digits):
                    break
            bits *= 2
        check_radius(v, digits, f"E_RR at gamma={g}")
        if not (v.overlaps(require_flint().arb("0.5", "0.5"))):
            raise BranchError(f"E_RR at gamma={g} is {v.str(10)}, outside [0, 1]")
        out.append(v)
    return out


def _decades(g: Fraction) -> int:
    return abs(len(str(g.numerator)) - len(str(g.denominator))) + 1


# ---------------------------------------------------------------- Hermite data

#: functions whose complex extension is meromorphic (``acb.integral`` needs no analyticity flag for them)
_MEROMORPHIC = (sp.exp, sp.tanh, sp.sin, sp.cos, sp.sinh, sp.cosh, sp.erf, sp.erfc, sp.cot, sp.tan, sp.coth)
#: seconds SymPy may spend bounding ``|f|`` on a tail
TAIL_TIMEOUT = 10.0


def _check_meromorphic(expr, what):
    from sympy.core.function import AppliedUndef

    from symrmt.hermite.gaussian import T

    for node in sp.preorder_traversal(expr):
        if isinstance(node, AppliedUndef) or (isinstance(node, sp.Function) and not isinstance(node, _MEROMORPHIC)):
            raise ProofError(f"{what}: {node.func} is not meromorphic, so acb.integral cannot bound the integral "
                             "of this piece without an analyticity check (no proof for this f)")
        if isinstance(node, sp.Pow) and node.base.has(T) and not node.exp.is_Integer:
            raise ProofError(f"{what}: the power {node} has a branch cut (no proof for this f)")


@cached(maxsize=256)
def _tail_growth(g, side: int):
    """``(B, j)`` with ``|g(t)| <= B (1 + |t|)^j`` for ``side * t >= L`` (``j`` in 0, 1, 2), from SymPy's
    ``function_range`` of ``g / (1 + |t|)^j`` on the tail; ``None`` when SymPy finds no bound."""
    from sympy.calculus.util import function_range

    from symrmt.hermite.gaussian import T, NotExact
    from symrmt.hermite.nonlinearity import with_timeout

    u = sp.Dummy("u", positive=True)
    h = g.subs(T, side * u)
    for j in (0, 1, 2):
        try:
            rng = with_timeout(lambda j=j: function_range(h / (1 + u) ** j, u, sp.Interval(1, sp.oo)), TAIL_TIMEOUT)
        except (NotExact, NotImplementedError, ValueError, TypeError, AttributeError, RecursionError):
            continue
        if isinstance(rng, sp.Interval) and rng.inf.is_finite and rng.sup.is_finite:
            return max(abs(sp.nsimplify(rng.inf) if rng.inf.is_Rational else rng.inf),
                       abs(rng.sup), key=lambda v: sp.N(v, 30)), j
    return None


def _tail_bound(B, j, w, hermite, L):
    """Upper bound (a ball) of ``int_L^oo (B (1+t)^j)^w |He_k(t)| exp(-t^2/2) dt`` (see :func:`hermite_ball`)."""
    flint = require_flint()
    arb = flint.arb
    t = sp.Symbol("t_tail")
    coeffs = sp.Poly(sp.expand((1 + t) ** (j * w)) * sum(abs(cf) * t ** i for i, cf in
                                                          enumerate(reversed(sp.Poly(hermite, t).all_coeffs())))
                     if hermite != 1 else sp.expand((1 + t) ** (j * w)), t).all_coeffs()
    total = arb(0)
    Lb = arb(L)
    core = 2 / Lb * (-(Lb * Lb) / 4).exp()
    for q, cf in enumerate(reversed(coeffs)):
        if cf == 0:
            continue
        peak = arb(1) if q == 0 else (arb(2 * q) / arb(1).exp()) ** (arb(q) / 2)
        total += to_arb(sp.Rational(cf)) * peak * core
    return to_arb(B) ** w * total


def _quad_ball(pieces, w: int, k: int):
    """``E[g^w He_k]`` over the smooth pieces as a ball: ``acb.integral`` on ``[-L, L]`` plus tail bounds."""
    from symrmt.codegen.compile import compile_expr
    from symrmt.hermite.gaussian import T, hermite_poly
    import inspect

    flint = require_flint()
    arb, acb = flint.arb, flint.acb
    prec = flint.ctx.prec
    L = int(math.ceil(2 * math.sqrt(prec * math.log(2) + 40))) + 2
    He = hermite_poly(k) if k else sp.Integer(1)
    total = arb(0)
    for lo, hi, g in pieces:
        _check_meromorphic(g, f"the piece {g} of f")
        expr = g ** w * He * sp.exp(-(T ** 2) / 2)
        fn = arb_function(inspect.getsource(compile_expr(T, expr, floats_ok=False)), "hermite integrand", True)
        a = to_arb(sp.Rational(lo)) if lo.is_finite else arb(-L)
        b = to_arb(sp.Rational(hi)) if hi.is_finite else arb(L)
        if lo.is_finite and lo > L or hi.is_finite and hi < -L:
            raise ProofError("a piece of f lies beyond the integration range; no proof for this f")
        a = max(a, arb(-L)) if lo.is_finite else a
        b = min(b, arb(L)) if hi.is_finite else b
        val = acb.integral(lambda x, _analytic, fn=fn: fn(x), acb(a), acb(b))
        if not val.imag.contains(0):
            raise ProofError("the Hermite integral is not real")
        part = val.real
        for side, end in ((-1, lo), (1, hi)):
            if end.is_finite:
                continue
            growth = _tail_growth(g, side)
            if growth is None:
                raise ProofError(f"no bound of |f| as t -> {'+' if side > 0 else '-'}oo was found (SymPy's "
                                 f"function_range of f/(1+|t|)^j, j <= 2, within {TAIL_TIMEOUT:g} s each), so the "
                                 "Gaussian tail of the Hermite integral is not bounded: no proof for this f")
            bound = _tail_bound(growth[0], growth[1], w, He.subs(T, sp.Symbol("t_tail")), L)
            part += arb(0, bound.upper())
        total += part
    return total / (2 * arb.pi()).sqrt()


def hermite_ball(f, diagonal: str = "zero"):
    """``(a_1, nu, d)`` as balls at the current precision.

    A closed form (:meth:`~symrmt.hermite.Nonlinearity.a`, ``.nu``, ``.d``) is evaluated as
    a ball; otherwise ``E[f(xi) He_1(xi)]`` and ``E[f(xi)^2]`` are integrated over each smooth piece
    of ``f`` by ``acb.integral`` on ``[-L, L]`` (``L ~ 2 sqrt(prec ln 2)``; its error bound is in the
    ball) and each Gaussian tail ``|t| > L`` is bounded by ``B^w int |He_k| (1+|t|)^(jw) phi``, with
    ``|f(t)| <= B (1 + |t|)^j`` there from SymPy's ``function_range``.  ``f`` given as Hermite data
    (a dict) is used as given.
    """
    from symrmt.models.attention.params import to_fraction
    from symrmt.hermite.gaussian import NotExact
    from symrmt.hermite.nonlinearity import Nonlinearity

    flint = require_flint()
    if isinstance(f, dict):
        vals = []
        for key in ("a1", "nu", "d"):
            v = f.get(key, 0) if key != "d" or diagonal == "keep" else 0
            vals.append(to_arb(v if isinstance(v, mpmath.mpf) else to_fraction(v, key)))
        return tuple(vals)
    nl = f if isinstance(f, Nonlinearity) else Nonlinearity(f)
    try:
        a1 = sympy_ball(nl.a(1))
    except NotExact:
        a1 = _quad_ball(nl._pieces, 1, 1)
    try:
        nu = sympy_ball(nl.nu)
    except NotExact:
        nu = _quad_ball(nl._pieces, 2, 0)
        if nl._num_shift:
            nu = nu - _quad_ball(nl._pieces, 1, 0) ** 2
    d = sympy_ball(nl.d) if diagonal == "keep" else flint.arb(0)
    return a1, nu, d


def prove_hermite_report(nl, k: int, digits: int) -> dict:
    """Balls of ``a_0..a_k``, ``nu`` and ``d`` (``None`` when undefined) for the ``hermite --prove`` verb."""
    from symrmt.hermite.gaussian import NotExact

    bits = bits_for(digits, 10)
    for _ in range(ESCALATIONS):
        with working_bits(bits):
            a = []
            for j in range(k + 1):
                try:
                    a.append(sympy_ball(nl.a(j)))
                except NotExact:
                    a.append(_quad_ball(nl._pieces, 1, j) if j else _quad_ball(nl._pieces, 1, 0) - _quad_ball(nl._pieces, 1, 0))
            _, nu, _ = hermite_ball(nl, "zero")
            try:
                d = sympy_ball(nl.d)
            except (ParameterError, NotExact):
                d = None
            balls = {"a": a, "nu": nu, "d": d}
            if all(relative_ok(x, digits) for x in a + [nu] + ([d] if d is not None else [])):
                break
        bits *= 2
    for j, x in enumerate(a):
        check_radius(x, digits, f"a_{j}")
    check_radius(nu, digits, "nu")
    return balls


# ---------------------------------------------------------------- the attention fixed point

def _symmetric(g):
    out = [[None] * 3 for _ in range(3)]
    from symrmt.models.attention.equations import G_INDEX

    for (i, j), v in zip(G_INDEX, g):
        out[i][j] = out[j][i] = v
    return out


def square_system(fjg, params):
    """``(F, J, F_gamma)`` of the square system ``G R(G)`` (upper entries), ``R`` the 3x3 residual.

    ``fjg`` is the arb version of the compiled flat ``[F (9), dF/dG (54), dF/dgamma (9)]`` of
    :func:`symrmt.codegen.compile.fixed_point_fjg`: the square system and its Jacobian
    ``d(G R)/dG_k = E_k R + G dR/dG_k`` are assembled from it, nothing is retyped."""
    from symrmt.models.attention.equations import G_INDEX

    def parts(xs):
        v = fjg(xs, params)
        R = [[v[3 * i + j] for j in range(3)] for i in range(3)]
        dR = [[[v[9 + 6 * (3 * i + j) + k] for k in range(6)] for j in range(3)] for i in range(3)]
        Rg = [[v[63 + 3 * i + j] for j in range(3)] for i in range(3)]
        G = _symmetric(xs)
        return R, dR, Rg, G

    def F(xs):
        R, _, _, G = parts(xs)
        return [sum(G[i][l] * R[l][j] for l in range(3)) for i, j in G_INDEX]

    def J(xs):
        R, dR, _, G = parts(xs)
        rows = []
        for i, j in G_INDEX:
            row = []
            for k, (a, b) in enumerate(G_INDEX):
                val = sum(G[i][l] * dR[l][j][k] for l in range(3))
                # E_k = e_a e_b^T + e_b e_a^T (once on the diagonal): (E_k R)_ij
                if i == a:
                    val += R[b][j]
                if i == b and a != b:
                    val += R[a][j]
                row.append(val)
            rows.append(row)
        return rows

    def Fg(xs):
        _, _, Rg, G = parts(xs)
        return [sum(G[i][l] * Rg[l][j] for l in range(3)) for i, j in G_INDEX]

    return F, J, Fg


_HERMITE_BALLS = cache_dict("symrmt.models.attention.prove._HERMITE_BALLS", 64)


def _hermite_cached(f, diagonal, bits):
    from symrmt.hermite.nonlinearity import Nonlinearity

    key = None
    if isinstance(f, Nonlinearity):
        key = (f.text, f.center, str(f.expr), diagonal, bits)
    elif isinstance(f, str):
        key = (f, diagonal, bits)
    if key is not None and key in _HERMITE_BALLS:
        return _HERMITE_BALLS[key]
    val = hermite_ball(f, diagonal)
    if key is not None:
        if len(_HERMITE_BALLS) > 64:
            _HERMITE_BALLS.clear()
        _HERMITE_BALLS[key] = val
    return val


def _gram_factor_arb(gram):
    """Rows of ``B`` with ``B B^T = gram`` as balls (exact LDL^T, the square roots as balls)."""
    from symrmt.models.attention.geometry import ldl_pivoted

    flint = require_flint()
    perm, L, Dg = ldl_pivoted(gram)
    n = len(Dg)
    B = [[flint.arb(0)] * n for _ in range(n)]
    roots = [to_arb(Fraction(x)).sqrt() for x in Dg]
    for i in range(n):
        for k in range(i + 1):
            if Dg[k] != 0:
                B[perm[i]][k] = to_arb(Fraction(L[i][k])) * roots[k]
    return B


def _woodbury_ball(G, dG, D):
    """``(varphi, dvarphi/dgamma)`` with ``x = (I + D H)^{-1} e``, ``H = Gm (x) I_s`` (on balls)."""
    flint = require_flint()
    gm, dgm = _symmetric(G), _symmetric(dG)
    n = len(D)
    s = n // 3
    H = flint.arb_mat(n, n)
    for a in range(3):
        for b in range(3):
            for i in range(s):
                H[a * s + i, b * s + i] = gm[a][b]
    M = flint.arb_mat(n, n, [1 if i == j else 0 for i in range(n) for j in range(n)]) + flint.arb_mat(D) * H
    e = flint.arb_mat(n, 1)
    e[0, 0] = 1
    x = _mat_solve(M, e)
    phi = sum((gm[0][b] * x[b * s, 0] for b in range(3)), flint.arb(0))
    dphi = flint.arb(0)
    for a in range(3):
        for b in range(3):
            dphi += dgm[a][b] * sum((x[a * s + i, 0] * x[b * s + i, 0] for i in range(s)), flint.arb(0))
    return phi, dphi


class AttentionBall:
    """A proved attention point: ``error`` (E_A), ``quadratic_form`` (varphi), ``block_traces`` (G), ``branch``."""

    def __init__(self, gamma, error, quadratic_form, block_traces, branch):
        self.gamma, self.error, self.quadratic_form = gamma, error, quadratic_form
        self.block_traces, self.branch = block_traces, branch

    def __repr__(self):
        return f"AttentionBall(gamma={self.gamma}, error={self.error}, branch={self.branch!r})"


def prove_attention(f, c, gammas, geometry=None, diagonal: str = "zero", digits: int = 15, points=None,
                    route: str | None = None):
    """Balls of ``E_A(gamma)`` (a list of :class:`AttentionBall`, in the order given).

    ``points``: the :class:`~symrmt.models.attention.theory.AttentionPoint` of the certified solve (computed
    here when not given), the centres of the boxes."""
    from symrmt.codegen.compile import closed_form_phi, fixed_point_fjg, woodbury_D_function
    from symrmt.models.attention.theory import _guard, attention_limit, route_for, scaled_nonlinearity
    from symrmt.models.attention.geometry import as_low_rank
    from symrmt.models.attention.params import check_c, check_gammas

    flint = require_flint()
    arb = flint.arb
    cf = check_c(c)
    gs = check_gammas(gammas)
    geometry = as_low_rank(geometry)
    if points is None:
        points = attention_limit(f, cf, gs, geometry, diagonal, digits, details=True, route=route)
    if geometry.alpha != 1:
        f = scaled_nonlinearity(f, geometry.alpha)
        geometry = geometry.scaled()
    fjg_src, detN_src, _ = fixed_point_fjg()
    out = []
    for g, pt in zip(gs, points):
        bits = bits_for(digits, _guard(g) + 10)
        for _ in range(ESCALATIONS):
            with working_bits(bits):
                a1, nu, d = _hermite_cached(f, diagonal, bits)
                rt = route if route is not None else route_for(a1 if a1 != 0 else 0, geometry)
                gb, cb = to_arb(g), to_arb(cf)
                params = [gb, cb, a1, nu, d]
                F, J, Fg = square_system(arb_function(fjg_src), params)
                G = krawczyk(F, J, list(pt.block_traces), f"the attention fixed point at gamma={g}")
                dN = arb_function(detN_src)(G, params)
                dG_mat = flint.arb_mat(_symmetric(G)).det()
                if dN.contains(0) or dG_mat.contains(0):
                    raise ProofError(f"at gamma={g}: det N or det G is not proved non-zero on the box, so the "
                                     "square system's root is not proved to be a fixed point")
                dG = _mat_solve(flint.arb_mat(J(G)), flint.arb_mat([[-x] for x in Fg(G)]))
                dG = [dG[i, 0] for i in range(6)]
                if rt == "noise_only":
                    phi, dphi = G[0], dG[0]
                elif rt in ("aligned", "a1_zero"):
                    vals = arb_function(closed_form_phi(rt))(G, dG, a1, cb, to_arb(geometry.snr),
                                                            to_arb(geometry.trace_wkwq))
                    phi, dphi = vals[0], vals[1]
                else:
                    B = _gram_factor_arb(geometry.gram())
                    D = arb_function(woodbury_D_function(geometry.r))([x for row in B for x in row], a1, cb)
                    phi, dphi = _woodbury_ball(G, dG, D)
                err = -gb * gb * dphi
                if relative_ok(err, digits) and relative_ok(phi, digits):
                    break
            bits *= 2
        check_radius(err, digits, f"E_A at gamma={g}")
        with working_bits(bits):
            if not (G[0] > 0 and G[0] <= 1 / gb):
                raise BranchError(f"at gamma={g} the proved tau(Q) = {G[0].str(10)} is not in (0, 1/gamma]: the box "
                                  "holds a root off the physical branch")
            if not (err.overlaps(arb("0.5", "0.5")) and phi > 0 and phi.overlaps(arb(1 / gb / 2, (1 / gb / 2).upper()))):
                raise BranchError(f"at gamma={g}: E_A = {err.str(10)} (must be in [0, 1]) and varphi = {phi.str(10)} "
                                  "(in (0, 1/gamma]): the proved root is off the physical branch")
        out.append(AttentionBall(g, err, phi, tuple(G), "sanity"))
    return out


# ---------------------------------------------------------------- engine traces

class TraceBall:
    """A proved trace limit: ``value`` (a ball), ``traces`` (the balls of each normalized trace),
    ``branch`` (``"isolated"``: every real solution's trace was isolated exactly and one lies in the
    sanity region; ``"sanity"``: the sanity bounds hold on the ball, other roots there not excluded)."""

    def __init__(self, value, traces, branch, notes):
        self.value, self.traces, self.branch, self.notes = value, traces, branch, notes

    def __repr__(self):
        return f"TraceBall({self.value}, branch={self.branch!r})"


def _arb_checked(values, what):
    """Refuse a result that left ball arithmetic (an mpf mixed in converts a ball silently)."""
    flint = require_flint()
    out = []
    for v in values:
        if isinstance(v, int) and not isinstance(v, bool):  # an exact integer entry (0, 1, -1 ...)
            v = flint.arb(v)
        if not isinstance(v, (flint.arb, flint.acb)):
            raise ProofError(f"{what}: a value left ball arithmetic ({type(v).__name__}); no proof")
        out.append(v)
    return out


def _trace_system_functions(cs, values):
    """``(F, J, pvals, pv)`` of a compiled engine system at ``s = 1``, ``eps = 0``, on balls."""
    from symrmt.engine.atom_solver import AtomCompiled

    m = cs.m
    pvals = [to_arb(Fraction(values[p.name])) for p in cs.params]
    if isinstance(cs, AtomCompiled):
        flat = _atom_flat(cs)
        aux = _arb_checked(list(arb_function(cs._aux)(pvals))[:-1], "the auxiliary parameters")
    else:
        fjs = arb_function(cs.fjs)
        flat = (lambda h, pv: fjs(h, pv))
        aux = _arb_checked(list(arb_function(cs.aux)(pvals))[:-1], "the auxiliary parameters")
    pv = pvals + [to_arb(1), to_arb(0)] + aux

    def F(h):
        return _arb_checked(list(flat(h, pv)[:m]), "the residual")

    def J(h):
        v = flat(h, pv)
        return [_arb_checked(list(v[m + m * i:m + m * (i + 1)]), "the Jacobian") for i in range(m)]

    return F, J, pvals, pv


def _atom_flat(cs):
    """The atom sums of :class:`~symrmt.engine.atom_solver.AtomCompiled` run on balls (its own code,
    with its compiled pieces on balls and each atom's exact value and weight as balls)."""
    from symrmt.engine.atom_solver import AtomCompiled

    class _Proxy:
        pass

    px = _Proxy()
    for name in ("m", "k", "params", "keep", "d_rows", "system"):
        setattr(px, name, getattr(cs, name))
    other, eta, l0 = arb_function(cs._other), arb_function(cs._eta), arb_function(cs._l0)

    class _Fn:
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, *a):
            return self.fn(*a)

        def float_version(self):
            return None

    px._other, px._eta = _Fn(other), _Fn(eta)

    def atom_data(pvals, floats):
        data = []
        k = cs.k
        for v, w in zip(cs.system.values, cs.system.weights):
            vals = l0(list(pvals), [to_arb(sp.sympify(v)), to_arb(0)])
            data.append((to_arb(sp.sympify(w)), list(vals[:k * k]), list(vals[k * k:])))
        return data

    px._atom_data = atom_data
    return lambda h, pv: AtomCompiled._flat(px, h, pv, "s")


def _readout_unknown(t):
    items = list(t.system.readout.items())
    if len(items) != 1:
        return None
    (ij, coef), = items
    return t.system.unknowns.index(ij), coef


def _isolate_trace_branch(t, values, tau_ball, checks):
    """``True`` when exact elimination isolates every real solution's trace and exactly one (the ball's)
    lies in the sanity region; ``False`` when the system is beyond it (more than 2 unknowns,
    irrational coefficients); :class:`BranchError` when the ball's root is not the one."""
    from symrmt.engine.blockfp import S_STRENGTH
    from symrmt.engine.linearize import EPS_SHIFT

    system = t.system
    m = len(system.h)
    ro = _readout_unknown(t)
    if m > 2 or ro is None:
        return False
    pos, coef = ro
    subs = {S_STRENGTH: 1, EPS_SHIFT: 0}
    for p in system.params:
        subs[p] = sp.Rational(Fraction(values[p.name]).numerator, Fraction(values[p.name]).denominator)
    polys = []
    for r in system.residual:
        num, _den = sp.fraction(sp.cancel(sp.together(sp.sympify(r).subs(subs))))
        polys.append(sp.expand(num))
    x = system.h[pos]
    if m == 2:
        other = system.h[1 - pos]
        uni = sp.resultant(polys[0], polys[1], other)
    else:
        uni = polys[0]
    uni = sp.expand(uni)
    if uni == 0 or uni.free_symbols - {x}:
        return False
    poly = sp.Poly(uni, x)
    if not all(cf.is_Rational for cf in poly.all_coeffs()):
        return False
    flint = require_flint()
    fp = flint.fmpq_poly([flint.fmpq(int(cf.p), int(cf.q)) for cf in reversed(poly.all_coeffs())])
    if fp.degree() < 1 or fp.gcd(fp.derivative()).degree() > 0:
        return False  # a multiple root: the isolation below needs simple roots
    roots = isolate_real_roots(fp)
    cf_ball = to_arb(sp.sympify(coef).subs(subs))
    inside = [r for r in roots if all(bd.holds(cf_ball * r) for bd in checks)]
    undecided = [r for r in roots if not all(bd.holds(cf_ball * r) for bd in checks)
                 and not any(bd.fails(cf_ball * r) for bd in checks)]
    if undecided or len(inside) != 1 or not checks:
        return False
    if not (cf_ball * inside[0]).overlaps(tau_ball):
        raise BranchError(f"trace #{t.index + 1}: the proved root {tau_ball.str(10)} is not the only real solution in "
                          f"the sanity region ({(cf_ball * inside[0]).str(10)}); a box around another root is refused")
    return True


class _Bound:
    def __init__(self, kind, b):
        self.kind, self.b = kind, b

    def holds(self, v):
        """Proved: the ball satisfies the bound."""
        if self.kind == "pos":
            return v > 0
        if self.kind == "nonneg":
            return v >= 0
        return v <= self.b

    def fails(self, v):
        """Proved: the ball violates it."""
        if self.kind == "pos":
            return v <= 0
        if self.kind == "nonneg":
            return v < 0
        return v > self.b


def _bounds(t, plan, values):
    from symrmt.engine.certify import _holds

    subs = {p: sp.Rational(Fraction(values[p.name]).numerator, Fraction(values[p.name]).denominator)
            for p in plan.params}
    out = []
    for kind, bound, conds in t.bounds:
        if not all(_holds(c, subs) for c in set(conds)):
            continue
        b = sp.sympify(bound).subs(subs)
        if not (b.is_extended_real and b.is_finite):
            continue
        out.append(_Bound(kind, to_arb(b) if b.is_Rational else sympy_ball(b)))
    return out


def prove_trace(plan, values: dict, digits: int, solvers=None):
    """The :class:`TraceBall` of an engine plan at exact ``values`` (name -> Fraction).

    ``solvers``: the :class:`~symrmt.engine.solver.TraceSolver` of each trace from the
    certified solve (their homotopy start points are reused), else they are made here."""
    import inspect

    from symrmt.codegen.compile import compile_expr
    from symrmt.engine.certify import compiled_system
    from symrmt.engine.solver import TraceSolver
    from symrmt.engine import blockfp

    flint = require_flint()
    if solvers is None:
        from symrmt.engine.certify import _acceptor

        solvers = {"values": values}
        for t in plan.traces:
            solvers[t.index] = TraceSolver(compiled_system(t.system), values)
            solvers[t.index].start(_acceptor(t, values))
    bits = bits_for(digits, 20)
    formula_src = inspect.getsource(compile_expr([list(s for s, _ in plan.symbols)], plan.formula))
    for _ in range(ESCALATIONS):
        with working_bits(bits):
            results, taus, branches, notes = {}, [], [], []
            for t in plan.traces:
                sol = solvers[t.index]
                cs = sol.c
                with mpmath.workdps(digits + 20):
                    h0, _, _, _ = sol.solve(digits + 20)
                F, J, pvals, _pv = _trace_system_functions(cs, values)
                H = krawczyk(F, J, h0, f"trace #{t.index + 1}")
                derivs = {}
                alphas = sorted({blockfp._canon(a) for a in plan.needs[t.index] if a}, key=len)
                if alphas:
                    JH = flint.arb_mat(J(H))
                    for alpha in alphas:
                        if not set(alpha) <= set(cs.params):
                            derivs[alpha] = [flint.arb(0)] * cs.m
                            continue
                        fn, lower = cs.derivative_function(alpha)
                        rhs = _arb_checked(list(arb_function(fn)(H, *[derivs[b] for b in lower], pvals)),
                                           "a derivative's right-hand side")
                        sol_ = _mat_solve(JH, flint.arb_mat([[-x] for x in rhs]))
                        derivs[alpha] = [sol_[i, 0] for i in range(cs.m)]
                results[t.index] = (H, derivs)
                subs = {p: sp.Rational(Fraction(values[p.name]).numerator, Fraction(values[p.name]).denominator)
                        for p in plan.params}
                tau = flint.arb(0)
                for (i, j), cf in t.system.readout.items():
                    tau += to_arb(sp.sympify(cf).subs(subs)) * H[t.system.unknowns.index((i, j))]
                taus.append(tau)
                checks = _bounds(t, plan, values)
                for bd in checks:
                    if bd.fails(tau):
                        raise BranchError(f"trace #{t.index + 1}: the proved root gives the trace {tau.str(10)}, which "
                                          f"violates its bound ({bd.kind} {bd.b.str(10)}): off the physical branch")
                    if not bd.holds(tau):
                        raise ProofError(f"trace #{t.index + 1}: the bound ({bd.kind}) is not decided on the ball "
                                         f"{tau.str(10)}; ask for more digits")
                try:
                    iso = _isolate_trace_branch(t, values, tau, checks)
                except ProofError:
                    iso = False
                branches.append("isolated" if iso else "sanity")
            args = []
            pballs = {p: to_arb(Fraction(values[p.name])) for p in plan.params}
            for _sym, what in plan.symbols:
                if what[0] == "param":
                    args.append(pballs[what[1]])
                    continue
                k, (i, j), alpha = what
                system = plan.traces[k].system
                pos = system.unknowns.index((i, j))
                H, derivs = results[k]
                args.append(H[pos] if not alpha else derivs[alpha][pos])
            value, = _arb_checked([arb_function(formula_src, "formula")(args)], "the expression")
            if isinstance(value, flint.acb):
                if not value.imag.contains(0) or value.imag.rad() > 0:
                    raise BranchError(f"the limit is not proved real ({value})")
                value = value.real
            if not value.is_finite():
                raise BranchError(f"the limit is not a finite number on the proved box ({value}): a square root of a "
                                  "negative quantity or a division by a zero limit")
            if relative_ok(value, digits):
                break
        bits *= 2
    check_radius(value, digits, "the trace limit")
    branch = "isolated" if all(b == "isolated" for b in branches) else "sanity"
    return TraceBall(value, taus, branch, notes)


# ---------------------------------------------------------------- the model's limits

def prove_limit(f, c, gammas, geometry=None, diagonal: str = "zero", digits: int = 15):
    """Certified values and their proved balls: ``(values, balls)``.

    ``values`` is :func:`symrmt.models.attention.theory.limit`'s dict (mpf lists); ``balls`` has the lists
    ``"attention"`` and ``"ridge"`` of balls (``flint.arb``) and ``"branch"``: ``{"attention": "sanity",
    "ridge": "isolated"}`` (see the module docstring)."""
    from symrmt.models.attention.theory import attention_limit, ridge_limit
    from symrmt.models.attention.geometry import as_low_rank

    require_flint()
    geometry = as_low_rank(geometry)
    points = attention_limit(f, c, gammas, geometry, diagonal, digits, details=True)
    rr = ridge_limit(c, gammas, geometry.snr, digits)
    att_balls = prove_attention(f, c, gammas, geometry, diagonal, digits, points=points)
    rr_balls = prove_ridge(c, list(gammas) if isinstance(gammas, (list, tuple)) else [gammas], geometry.snr, digits)
    values = {"ridge": rr, "attention": [p.error for p in points]}
    balls = {"attention": [b.error for b in att_balls], "ridge": rr_balls,
             "branch": {"attention": "sanity", "ridge": "isolated"}}
    return values, balls


BRANCH_NOTE = {
    "isolated": "branch proved: every real root isolated exactly, exactly one in the sanity region",
    "sanity": "branch: the sanity bounds hold on the ball; that no other root lies there is not proved",
}


def balls_json(balls: dict, digits: int) -> dict:
    """The ``"proved"`` record of the CLI's JSON: ``{"attention": [{"mid", "rad"}...], "ridge": [...], "branch"}``."""
    out = {k: [ball_json(x, digits) for x in v] for k, v in balls.items() if k != "branch"}
    if "branch" in balls:
        out["branch"] = dict(balls["branch"])
    return out
