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

from symrmt.errors import ParameterError
from symrmt.errors import NotCenteredError  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.hermite.admissible import check_growth, check_real
from symrmt.hermite.gaussian import NotExact, T, exact_expectation, hermite_poly, smooth_pieces, with_timeout
from symrmt.hermite.numpy_f import numpy_function
from symrmt.hermite.parser import check_f_expression, parse_f
from symrmt.hermite.presets import CENTER_NUMERICALLY, PRESETS, check_dps, check_order
from symrmt.hermite.quadrature import exact_to_mpf, numeric_hermite, numeric_square

__all__ = ["Nonlinearity", "NotCenteredError"]


#: the points where :func:`_may_vanish` evaluates an expression (irrational-free, away from kinks at 0 and 1)
_SAMPLES = (sp.Rational(37, 100), sp.Rational(13, 10), sp.Rational(29, 10))


def _may_vanish(expr) -> bool:
    """False when ``expr`` (in ``t``) is provably nonzero: its value at one of :data:`_SAMPLES`, evaluated
    to 30 digits, is above ``1e-15`` in absolute value; True otherwise (including when it cannot be
    evaluated), so that the caller's symbolic test decides.

    >>> _may_vanish(sp.sin(T)**2 - (1 - sp.cos(T)**2)), _may_vanish(sp.cos(T) + sp.cos(-T))
    (True, False)
    """
    for x in _SAMPLES:
        try:
            v = sp.N(expr.subs(T, x), 30)
        except (TypeError, ValueError, ArithmeticError):
            return True
        if v.is_number and v.is_comparable and abs(v) > sp.Float("1e-15"):
            return False
    return True


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
    symrmt.errors.NotCenteredError: f is not centered: a_0 = E[f(ξ)] = ...
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
        check_real(base)
        check_growth(base, self.timeout)
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

    def _exact_or_none(self, expr):
        res = exact_expectation(expr, self.timeout)
        return None if isinstance(res, Exception) else res

    # -- exact values -----------------------------------------------------------

    @functools.cached_property
    def parity(self):
        """``'odd'``, ``'even'`` or ``None``: the parity of ``f`` (used to zero coefficients)."""
        g = self.expr
        try:
            # a sum that is clearly nonzero at a sample point is not zero: no simplification is tried for it
            if _may_vanish(g + g.subs(T, -T)) and with_timeout(lambda: sp.simplify(g + g.subs(T, -T)),
                                                               min(self.timeout, 10.0)) == 0:
                return "odd"
            if _may_vanish(g - g.subs(T, -T)) and with_timeout(lambda: sp.simplify(g - g.subs(T, -T)),
                                                               min(self.timeout, 10.0)) == 0:
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
        symrmt.errors.NotExact: no closed form is attempted ...
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
        return numpy_function(self.expr)

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
