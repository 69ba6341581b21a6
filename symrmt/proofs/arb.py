r"""Ball arithmetic for proved digits (python-flint's Arb): exact inputs as balls, compiled code run on
balls, Krawczyk's test, and balls printed at the digits they prove.

Every proof of the package uses these; ``docs/prove.md`` says what a ball means.  python-flint is an
optional dependency: each function raises :class:`ProveUnavailable` without it.

>>> import flint
>>> with working_bits(bits_for(20)):
...     print(ball_text(sympy_ball(sp.sqrt(2)), 20))
[1.41421356237309504880169 ± 1.3e-24]
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from fractions import Fraction
import ast
import inspect

import mpmath
import sympy as sp

from symrmt.cache import cache_dict
from symrmt.core.newton import NewtonError, newton
from symrmt.core.numbers import NumberContext
from symrmt.errors import ParameterError
from symrmt.errors import ProofError, ProveUnavailable  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.codegen.compile import compile_expr
from symrmt.parsing.numbers import to_fraction


__all__ = ["INSTALL", "GUARD_BITS", "ESCALATIONS", "ProofError", "ProveUnavailable", "require_flint", "working_bits",
           "bits_for", "to_arb", "sympy_ball", "arb_function", "ball_parts", "ball_json", "ball_text", "check_radius",
           "relative_ok", "ball_matrix", "newton_last", "mid_newton", "krawczyk", "mat_solve", "arb_checked", "isolate_real_roots", "complex_ok",
           "complex_ball_json", "complex_ball_text"]

#: how to get the optional dependency (the message of :class:`ProveUnavailable`)
INSTALL = "pip install 'symrmt[prove]' (or pip install 'python-flint>=0.6')"
#: working bits beyond ``digits * log2(10)`` (before escalation doubles them)
GUARD_BITS = 64
#: escalations of the working precision before a :class:`ProofError`
ESCALATIONS = 3


def require_flint():
    """The ``flint`` module (python-flint).  Raises :class:`ProveUnavailable` saying how to install it.

    >>> require_flint().__name__
    'flint'
    """
    try:
        import flint
    except ImportError:
        raise ProveUnavailable(f"proved digits need python-flint, which is not installed: {INSTALL}") from None
    return flint


@contextmanager
def working_bits(bits: int):
    """Set ``flint.ctx.prec = bits`` (python-flint's working precision, in bits) inside the block, restored after.

    >>> import flint
    >>> with working_bits(100):
    ...     print(flint.arb(1) / 3)
    [0.33333333333333333333333333333 +/- 3.47e-30]
    """
    flint = require_flint()
    old = flint.ctx.prec
    flint.ctx.prec = int(bits)
    try:
        yield
    finally:
        flint.ctx.prec = old


def bits_for(digits: int, extra_digits: int = 0) -> int:
    """Working bits for ``digits + extra_digits`` decimal digits, plus ``GUARD_BITS``.

    >>> bits_for(30), bits_for(30, 10) - bits_for(30)
    (164, 33)
    """
    return int(math.ceil((digits + extra_digits) * math.log2(10))) + GUARD_BITS


# ---------------------------------------------------------------- exact inputs as balls

def to_arb(x):
    """An exact number (int, float, Fraction, SymPy rational or Float, mpf, or a decimal or fraction text) as an
    exact ``arb`` ball; a ball is returned as it is, and another SymPy number goes to :func:`sympy_ball`.  Raises
    ``TypeError`` for anything else and :class:`~symrmt.errors.ParameterError` (a ``ValueError``) for an
    infinite or nan mpf.

    >>> float(to_arb(0.5)), float(to_arb("1/4")), to_arb(Fraction(1, 3)).contains(to_arb(sp.Rational(1, 3)))
    (0.5, 0.25, True)
    >>> import mpmath
    >>> to_arb(mpmath.inf)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: cannot make an exact ball of a number that is not finite (an infinity or nan); give a finite value
    """
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
        return to_arb(to_fraction(x, "value"))
    raise TypeError(f"cannot make an exact ball of {x!r}")


def _binary_ball(mpf_tuple):
    """The exact ball of an mpmath/SymPy binary float ``(sign, man, exp, bc)``."""
    flint = require_flint()
    sign, man, exp, bc = mpf_tuple
    if not man:
        if exp:  # mpmath's encoding of inf and nan
            raise ParameterError("cannot make an exact ball of a number that is not finite (an infinity or nan); give a "
                                 "finite value")
        return flint.arb(0)
    with working_bits(max(flint.ctx.prec, int(bc) + 16)):  # exact: man * 2^exp needs bc bits
        v = flint.arb(int(man)) * flint.arb(2) ** int(exp)
    return -v if sign else v


def sympy_ball(expr):
    """A closed-form SymPy number (``2*sqrt(3)/(3*sqrt(pi))``) evaluated as an ``arb`` ball at the current flint
    precision, by the compiled code of the expression run on balls.  Raises :class:`ProofError` when the
    evaluation leaves ball arithmetic.

    >>> with working_bits(bits_for(15)):
    ...     print(ball_text(sympy_ball(2 * sp.sqrt(3) / (3 * sp.sqrt(sp.pi))), 15))  # a_1 of erf
    [0.6514700158705598954 ± 4.9e-20]
    """
    fn = compile_expr([], sp.sympify(expr))
    out = arb_function(inspect.getsource(fn), "closed form")()
    return arb_checked([out], f"the closed form {expr}")[0]


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


_ARB_CACHE = cache_dict("symrmt.proofs.arb._ARB_CACHE", 512)


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
    """The lambdify-generated source of a :class:`~symrmt.codegen.compile.Compiled` (or a source text defining
    ``_lambdifygenerated``) as a function run on balls: ``mpf(k)`` is an exact ball, ``sqrt`` etc. are Arb's,
    constants at the current precision, and an integer power is repeated multiplication (cached per source,
    precision and ``complex_``).

    The generated code is the one the mpmath solver runs (no formula is retyped); a name outside the
    namespace raises ``NameError`` when called, which the callers report as not provable.

    >>> import flint
    >>> f = arb_function("def _lambdifygenerated(x):\\n    return x ** 2 - mpf(1) / 3\\n")
    >>> f(flint.arb(0, 1))  # x in [-1, 1]: x^2 is in [0, 1], not [-1, 1]
    [+/- 1.34]
    >>> (f(flint.arb(1)) - to_arb(Fraction(2, 3))).contains(0)  # both balls enclose 2/3
    True
    """
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
    """``(mid, rad)`` of the ``arb`` ball ``x`` as decimal strings: the midpoint to ``digits + 4`` significant digits
    and the radius rounded up to two digits, widened by the midpoint's rounding so that the printed ball
    contains ``x``.

    >>> with working_bits(bits_for(20)):
    ...     ball_parts(sympy_ball(sp.sqrt(2)), 20)
    ('1.41421356237309504880169', '1.3e-24')
    """
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
    """``{"mid": "...", "rad": "..."}`` (decimal strings of :func:`ball_parts`; the printed ball contains the
    proved one), with ``"absolute": True`` when the ball holds 0 (its radius then bounds the absolute error).

    >>> import flint
    >>> ball_json(to_arb(Fraction(1, 4)), 5), ball_json(flint.arb(0, 1e-30), 20)
    ({'mid': '0.250000000', 'rad': '0'}, {'mid': '0', 'rad': '1.1e-30', 'absolute': True})
    """
    mid, rad = ball_parts(x, digits)
    out = {"mid": mid, "rad": rad}
    if x.contains(0) and rad != "0":
        out["absolute"] = True  # the ball holds 0: its radius bounds the absolute error, not a relative one
    return out


def ball_text(x, digits: int) -> str:
    """The ``arb`` ball ``x`` as text, ``[mid ± rad]`` (:func:`ball_parts`), ``mid (exact)`` for a zero radius, and a
    note when the ball holds 0 (an absolute radius).

    >>> import flint
    >>> ball_text(to_arb(Fraction(1, 4)), 5), ball_text(flint.arb(0, 1e-30), 20)
    ('0.250000000 (exact)', '[0 ± 1.1e-30] (absolute radius: the ball holds 0)')
    """
    mid, rad = ball_parts(x, digits)
    if rad == "0":
        return f"{mid} (exact)"
    return f"[{mid} ± {rad}]" + (" (absolute radius: the ball holds 0)" if x.contains(0) else "")


def check_radius(x, digits: int, what: str) -> None:
    """Check that the ``arb`` ball ``x`` proves ``digits`` digits: ``rad <= 10**-digits |mid|`` and ``x`` finite; a
    ball that contains 0 must instead have ``rad <= 10**-digits`` (an absolute radius).  Returns ``None``; raises
    :class:`ProofError`, naming ``what``, otherwise.

    >>> import flint
    >>> check_radius(flint.arb(1, 1e-7), 6, "a_1") is None
    True
    >>> check_radius(flint.arb(1, 1e-5), 6, "a_1")
    Traceback (most recent call last):
    ...
    symrmt.errors.ProofError: a_1: radius [1.00e-5 +/- 2e-12] exceeds 1e-6 of |mid| ([1.0000 +/- 1.01e-5])
    """
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
    """Whether the ball ``x`` (a ``flint.arb``) is narrow enough for ``digits`` digits: the test of
    :func:`check_radius`, as a bool instead of a :class:`ProofError`.

    >>> import flint
    >>> relative_ok(flint.arb(1, 1e-5), 4), relative_ok(flint.arb(1, 1e-5), 6)
    (True, False)
    """
    try:
        check_radius(x, digits, "")
    except ProofError:
        return False
    return True


# ---------------------------------------------------------------- Krawczyk

def ball_matrix(rows):
    """An ``arb_mat`` of a list of rows of balls or exact numbers (built from the flat list: four times faster at
    m = 100).

    >>> ball_matrix([[1, 2], [3, 4]]).nrows(), float(ball_matrix([[1, 2], [3, 4]])[1, 0])
    (2, 3.0)
    """
    flint = require_flint()
    rows = [list(r) for r in rows]
    if not rows or not rows[0]:
        return flint.arb_mat(rows)
    return flint.arb_mat(len(rows), len(rows[0]), [v for r in rows for v in r])


def newton_last(linear, x, ctx, tol, maxsteps: int, **kw):
    """:func:`symrmt.core.newton.newton` (same arguments) that also hands back its last iterate when it runs out of
    steps: ``(x, converged, step)``.  The provers' approximate points need it (a fixed number of polishing steps, a
    refinement that may stop short): only the boxes built around them are proved.  Raises what ``newton`` raises
    other than :class:`NewtonError`.

    >>> from symrmt.core.numbers import FLOAT64
    >>> sqrt2 = lambda x: ([-(x[0] ** 2 - 2) / (2 * x[0])], None)
    >>> x, ok, step = newton_last(sqrt2, [1.0], FLOAT64, 1e-30, 3, stagnation=False)  # 1 -> 3/2 -> 17/12 -> 577/408
    >>> x[0] == 577 / 408, ok
    (True, False)
    """
    last = {}

    def tracked(xs):
        dx, extra = linear(xs)
        last["x"] = [a + b for a, b in zip(xs, dx)]
        return dx, extra

    try:
        x, _, step = newton(tracked, x, ctx, tol, maxsteps, **kw)
        return x, True, step
    except NewtonError as exc:
        return last.get("x", x), False, exc.step


def _mid_context():
    """The number context of exact Arb midpoints at the current precision: a sum of two midpoints (the
    Newton update) is a ball whose radius is its rounding, and each step takes the midpoints again."""
    flint = require_flint()
    return NumberContext("arb-midpoint", lambda v: flint.arb(v).sqrt().mid(), flint.arb(2) ** (-flint.ctx.prec), flint.arb,
                         norm_fn=lambda v: sum((a.mid() * a.mid() for a in v), flint.arb(0)).sqrt().mid())


def mid_newton(F, J, x, tol, maxsteps: int, precond=None, stagnation: bool = False):
    """Newton on Arb midpoints (an approximation only, not a proof) through the package's one Newton driver with
    the midpoint context: ``x <- mid(x - Y F(x))``, ``Y = precond(mid J(x))`` (default: Arb's inverse of the
    midpoint matrix).  ``F(xs) -> list`` and ``J(xs) -> list of rows`` take a list of balls; ``tol``: the relative
    step that stops it, ``maxsteps`` the most steps.  Returns ``(x, converged)``, ``x`` exact midpoints; raises
    ``ZeroDivisionError`` on a singular Jacobian or a step that is not finite.

    >>> import flint
    >>> with working_bits(bits_for(20)):
    ...     x, ok = mid_newton(lambda v: [v[0] ** 2 - 2], lambda v: [[2 * v[0]]], [1.4], flint.arb(2) ** -100, 20)
    ...     print(ball_text(x[0], 20), ok)
    [1.41421356237309504880169 ± 1.3e-24] True
    """
    flint = require_flint()
    m = len(x)

    def linear(xs):
        xs = [v.mid() for v in xs]
        Jm = ball_matrix(J(xs)).mid()
        Y = Jm.inv().mid() if precond is None else precond(Jm)
        if Y is None:
            raise ZeroDivisionError("singular Jacobian")
        step = Y * flint.arb_mat([[v] for v in F(xs)]).mid()
        dx = [(-step[i, 0]).mid() for i in range(m)]
        if not all(v.is_finite() for v in dx):
            raise ZeroDivisionError("a step that is not finite")
        return dx, None

    x, ok, _ = newton_last(linear, [to_arb(v).mid() for v in x], _mid_context(), tol, maxsteps,
                           stagnation=stagnation)
    return [v.mid() for v in x], ok


def krawczyk(F, J, x0, what: str = "fixed point", inflations: int = 12, refine: int = 8):
    """Prove that ``F(x) = 0`` has exactly one root in a box around the approximate root ``x0``.

    ``F(xs) -> list`` and ``J(xs) -> list of rows`` take a list of balls (``J`` is evaluated over the
    box).  ``x0`` is refined first by at most ``refine`` Newton steps on the midpoints (the mpmath solution
    may carry fewer digits than the working precision), then the box is inflated around it (at most
    ``inflations`` times) until ``K(X)`` lies in the interior of ``X``.  Returns the list of balls ``K(X)`` (a box
    that contains the one root of ``X``).  Raises :class:`ProofError`, naming ``what``, when the Jacobian is
    singular or no inflation passes.

    >>> with working_bits(bits_for(20)):
    ...     root, = krawczyk(lambda v: [v[0] ** 2 - 2], lambda v: [[2 * v[0]]], [1.4])
    ...     print(ball_text(root, 20), root.overlaps(sympy_ball(sp.sqrt(2))))
    [1.41421356237309504880169 ± 1.3e-24] True
    """
    flint = require_flint()
    arb = flint.arb
    m = len(x0)
    eye = flint.arb_mat(m, m, [1 if i == j else 0 for i in range(m) for j in range(m)])
    # Newton on midpoints (quadratic: a handful of steps from ~digits/2 correct digits); a refinement that
    # stops short is kept: only the box built around it below is proved
    try:
        x, _ = mid_newton(F, J, x0, arb(2) ** (-flint.ctx.prec + 8), refine)
    except ZeroDivisionError:
        raise ProofError(f"{what}: the Jacobian is singular at the approximate root") from None
    Jm = ball_matrix(J(x)).mid()
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
        JX = ball_matrix(J(X))
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


def mat_solve(A, b):
    """``A^{-1} b`` for ball matrices (an enclosure of the solution for every matrix in ``A``).  Raises
    :class:`ProofError` when ``A`` may be singular.

    >>> x = mat_solve(ball_matrix([[2, 0], [0, 4]]), ball_matrix([[1], [1]]))
    >>> [float(x[i, 0]) for i in range(2)], all(x[i, 0].rad() == 0 for i in range(2))
    ([0.5, 0.25], True)
    """
    try:
        return A.solve(b)
    except ZeroDivisionError:
        raise ProofError("a linear system of the derivatives is singular on the proved box") from None


def arb_checked(values, what):
    """The list ``values`` with exact integer entries made balls; raises :class:`ProofError`, naming ``what``, when a
    value left ball arithmetic (an mpf or a float mixed in converts a ball silently).

    >>> import flint
    >>> [float(x) for x in arb_checked([flint.arb(1), 2], "J")]
    [1.0, 2.0]
    >>> arb_checked([flint.arb(1), 2.0], "J")
    Traceback (most recent call last):
    ...
    symrmt.errors.ProofError: J: a value left ball arithmetic (float); no proof
    """
    flint = require_flint()
    arb, acb = flint.arb, flint.acb
    out = list(values)
    types = set(map(type, out))
    if types <= {arb, acb}:  # the common case, at C speed (a Jacobian has m^2 entries)
        return out
    if types <= {arb, acb, int}:  # exact integer entries (structural zeros, 1, -1 ...) as exact balls
        return [arb(v) if type(v) is int else v for v in out]
    for i, v in enumerate(out):
        tv = type(v)
        if tv is arb or tv is acb:  # the common case, tested first (a Jacobian has m^2 entries)
            continue
        if tv is int:  # an exact integer entry (0, 1, -1 ...)
            out[i] = arb(v)
        elif not isinstance(v, (arb, acb)) or isinstance(v, bool):
            raise ProofError(f"{what}: a value left ball arithmetic ({tv.__name__}); no proof")
    return out


def isolate_real_roots(poly):
    """Every real root of an ``fmpq_poly`` as an ``arb`` ball, in Arb's order.

    ``complex_roots`` (Arb's ``arb_fmpz_poly_complex_roots`` on the square-free factors) returns
    disjoint enclosures that isolate every root, the real ones with an imaginary part exactly 0 and the
    others in conjugate pairs; so the real roots are exactly those.  Raises :class:`ProofError` on a
    multiple root.

    >>> import flint
    >>> [r.overlaps(sympy_ball(sp.sqrt(2))) for r in isolate_real_roots(flint.fmpq_poly([-2, 0, 1]))]  # t^2 - 2
    [False, True]
    >>> isolate_real_roots(flint.fmpq_poly([1, 0, 1]))  # t^2 + 1
    []
    """
    require_flint()
    out = []
    for root, mult in poly.complex_roots():
        if mult != 1:
            raise ProofError("a multiple root: the isolation is not conclusive")
        if root.imag.is_zero():
            out.append(root.real)
    return out


# ---------------------------------------------------------------- complex balls (acb)

def complex_ok(v, digits: int) -> bool:
    """Whether the ``acb`` ball ``v`` proves ``digits`` digits: ``max(rad Re, rad Im) <= 10^-digits |mid|`` and ``v``
    finite (``|mid| > 0``).

    >>> import flint
    >>> complex_ok(flint.acb(1, 1), 10), complex_ok(flint.acb(flint.arb(1, 1e-3), 1), 10)
    (True, False)
    """
    flint = require_flint()
    if not v.is_finite():
        return False
    r = max(v.real.rad(), v.imag.rad())
    return bool(r <= abs(v.mid()) * flint.arb(10) ** (-digits))


def complex_ball_json(v, digits: int) -> dict:
    """``{"re": {"mid", "rad"}, "im": {"mid", "rad"}}`` of an ``acb`` ball, each part as :func:`ball_json` writes it.

    >>> import flint
    >>> complex_ball_json(flint.acb(0.5, -1), 5)
    {'re': {'mid': '0.500000000', 'rad': '0'}, 'im': {'mid': '-1.00000000', 'rad': '0'}}
    """
    return {"re": ball_json(v.real, digits), "im": ball_json(v.imag, digits)}


def complex_ball_text(v, digits: int) -> str:
    """A complex ball (a ``flint.acb``) as ``[re ± r] + [im ± r] i``, each part as :func:`ball_text` writes it.

    >>> import flint
    >>> complex_ball_text(flint.acb(0.5, -1), 5)
    '0.500000000 (exact) + -1.00000000 (exact) i'
    """
    return f"{ball_text(v.real, digits)} + {ball_text(v.imag, digits)} i"
