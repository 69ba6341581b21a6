r"""The nonlinearity ``f`` and its Hermite data (:class:`Nonlinearity`).

Conventions (``docs/theory.md`` section 2): probabilists' Hermite polynomials
``He_k``, ``xi ~ N(0, 1)``, ``a_k = E[f(xi) He_k(xi)]``, ``nu = E[f(xi)^2]``,
``d = lim_{t -> +oo} f(t) / t``.  Exact values come from
:mod:`symrmt.hermite.gaussian`, numeric ones from :mod:`symrmt.hermite.quadrature`.

Examples
--------
>>> Nonlinearity("erf").a(1)
2*sqrt(3)/(3*sqrt(pi))
"""

from __future__ import annotations

import functools

import mpmath
import sympy as sp

from symrmt.hermite.quadrature import exact_to_mpf, mp_function, numeric_hermite, numeric_square
from symrmt.errors import ParameterError
from symrmt.parsing import LIMITS, check_count, check_digits
from symrmt.hermite.gaussian import NotExact, T, exact_expectation, hermite_poly, smooth_pieces, with_timeout
from symrmt.hermite.parser import check_f_expression, parse_f

__all__ = ["PRESETS", "CENTER_NUMERICALLY", "Nonlinearity", "NotCenteredError", "check_order", "check_dps"]

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


class NotCenteredError(ParameterError):
    """``f`` is not centered under ``N(0, 1)``: ``E[f(xi)] != 0``.

    Attributes: ``a0`` is that mean as shown in the message (``"exact ≈ decimal"`` where it is
    known exactly, else the 15-digit decimal), ``a0_exact`` its exact SymPy text or ``None``, and
    ``a0_value`` its value as a float, for a caller that words its own message."""

    def __init__(self, message: str, a0: str, a0_exact: str | None = None, a0_value: float | None = None):
        super().__init__(message)
        self.a0 = a0
        self.a0_exact = a0_exact
        self.a0_value = a0_value


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
    symrmt.hermite.nonlinearity.NotCenteredError: f is not centered: a_0 = E[f(ξ)] = ...
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
            base = check_f_expression(f, str(f))
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
            a0n = numeric_hermite(self._pieces_of(base), 0, 30)
            if abs(a0n) > mpmath.mpf("1e-20"):
                if not center:
                    self._not_centered(mpmath.nstr(a0n, 15), None)
                self._num_shift = True
                self.expr = base - sp.Float(mpmath.nstr(numeric_hermite(self._pieces_of(base), 0, 45), 40), 40)
            else:
                self.expr = base
            self._sym = base
        self._pieces = self._pieces_of(self._sym)

    # -- construction helpers -------------------------------------------------

    def __repr__(self):
        return f"Nonlinearity({self.name!r}, expr={self.expr})"

    def _not_centered(self, value, exact):
        shown = f"{value}" if exact is None else f"{exact} ≈ {value}"
        raise NotCenteredError(
            f"f is not centered: a_0 = E[f(ξ)] = {shown}; the theory needs a_0 = 0 "
            "(a non-centered f makes K blow up); pass center=True (CLI --center) to subtract a_0",
            a0=shown, a0_exact=exact, a0_value=float(value),
        )

    @staticmethod
    def _pieces_of(expr):
        p = smooth_pieces(expr)
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
        pieces = smooth_pieces(expr) or ((-sp.oo, sp.oo, expr),)
        for end, g in ((sp.oo, pieces[-1][2]), (-sp.oo, pieces[0][2])):
            probe = T**2 * g**2 * sp.exp(-(T**2) / 2)
            try:
                lim = with_timeout(lambda probe=probe, end=end: sp.limit(probe, T, end), min(self.timeout, 10.0))
            except (NotExact, NotImplementedError, ValueError, TypeError):
                lim = None
            if lim is not None and lim.is_number and lim == 0:
                continue
            if lim is None or not lim.is_number or isinstance(lim, sp.AccumBounds):
                fn = mp_function(probe)
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
        res = exact_expectation(expr, self.timeout)
        return None if isinstance(res, Exception) else res

    # -- exact values -----------------------------------------------------------

    @functools.cached_property
    def parity(self):
        """``'odd'``, ``'even'`` or ``None``: the parity of ``f`` (used to zero coefficients)."""
        g = self.expr
        try:
            if with_timeout(lambda: sp.simplify(g + g.subs(T, -T)), min(self.timeout, 10.0)) == 0:
                return "odd"
            if with_timeout(lambda: sp.simplify(g - g.subs(T, -T)), min(self.timeout, 10.0)) == 0:
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
        symrmt.hermite.gaussian.NotExact: no closed form is attempted ...
        """
        k = check_order(k)
        if k == 0:
            return sp.Integer(0)
        if (self.parity == "odd" and k % 2 == 0) or (self.parity == "even" and k % 2 == 1):
            return sp.Integer(0)
        res = exact_expectation(sp.expand(self._sym * hermite_poly(k)), self.timeout)
        if isinstance(res, Exception):
            raise res
        return res

    @property
    def nu(self):
        """Exact ``nu = E[f(xi)^2]`` (raises :class:`NotExact` when unavailable)."""
        if self._num_shift:
            raise NotExact("a_0 of this f is known only numerically, so nu is too (use nu_mpf)")
        res = exact_expectation(sp.expand(self._sym**2), self.timeout)
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
            lim = with_timeout(lambda: sp.limit(g / T, T, sp.oo), min(self.timeout, 10.0))
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
        symrmt.errors.ParameterError: d = lim_(t->+oo) f(t)/t = oo is not finite ...
        """
        v = self._d_value
        if isinstance(v, Exception):
            raise v
        return v

    # -- numeric values ---------------------------------------------------------

    def _shift_mpf(self, dps):
        return numeric_hermite(self._pieces, 0, dps)

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
        k = check_order(k)
        dps = check_dps(dps)
        try:
            return exact_to_mpf(self.a(k), dps)
        except NotExact:
            pass
        return numeric_hermite(self._pieces, k, dps)

    def nu_mpf(self, dps: int = 15):
        """``nu = E[f(xi)^2]`` as an ``mpf`` correct to ``dps`` digits.

        Examples
        --------
        >>> import mpmath
        >>> mpmath.nstr(Nonlinearity("tanh").nu_mpf(30), 30)
        '0.394294490397841174416459772444'
        """
        dps = check_dps(dps)
        try:
            return exact_to_mpf(self.nu, dps)
        except NotExact:
            pass
        v = numeric_square(self._pieces, dps + 5)
        if self._num_shift:
            with mpmath.workdps(dps + 5):
                v = v - self._shift_mpf(dps + 5) ** 2
        with mpmath.workdps(dps):
            return +v

    def d_mpf(self, dps: int = 15):
        """``d`` as an ``mpf`` (raises like :attr:`d`)."""
        return exact_to_mpf(self.d, check_dps(dps))

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

        from symrmt.codegen.compile import compile_expr
        from symrmt.simulation.ufuncs import numpy_erf

        raw = compile_expr(T, self.expr, modules=[{"erf": numpy_erf()}, "numpy"], cse=False, floats_ok=True)

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
        k = check_order(k)

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


def check_order(k):
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ParameterError(f"k must be an integer >= 0, got {k!r}")
    return check_count(k, "hermite_k", "k")


#: working digits the limit solvers add to the largest --digits when they ask for Hermite data
GUARD_ALLOWANCE = 100


def check_dps(dps):
    """``dps`` as an int in ``[1, LIMITS['digits'] + GUARD_ALLOWANCE]`` (the solvers' guard digits on top of
    the largest ``--digits``)."""
    if isinstance(dps, bool) or not isinstance(dps, int) or dps < 1:
        raise ParameterError(f"dps must be an integer >= 1, got {dps!r}")
    if dps > LIMITS["digits"]:
        return check_digits(dps - GUARD_ALLOWANCE, "dps - GUARD_ALLOWANCE") + GUARD_ALLOWANCE
    return dps
