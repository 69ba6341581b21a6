"""Shared helpers of the proved checks (:mod:`symrmt.derivations.proved`, :mod:`symrmt.derivations.proved_theory`)."""

from __future__ import annotations

import inspect
from fractions import Fraction

import mpmath

DIGITS = 30


def contains(ball, ref) -> bool:
    """The ball meets the reference, taken as a 40-digit value (a ball of relative radius ``1e-40``:
    the references are computed at 45 digits or more, the proved balls are often far tighter)."""
    # optional dependency (flint); import-time cost: the CLI's start loads no SymPy or NumPy
    import flint

    from symrmt.proofs.arb import working_bits

    with working_bits(256):
        r = flint.arb(mpmath.nstr(ref, 50), abs(float(ref)) * 1e-40)
        return ball.overlaps(r)


def mpq(text):
    """The mpf of a fraction given as text.

    >>> float(mpq("1/4"))
    0.25
    """
    q = Fraction(text)
    return mpmath.mpf(q.numerator) / q.denominator


def tight(ball) -> bool:
    """Whether the ball is narrow enough for the proved derivations' ``DIGITS`` digits."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.proofs.arb import relative_ok

    return relative_ok(ball, DIGITS)


def record(ck, name, ball, ok, ref_text=""):
    """Add the check ``proved: name`` to ``ck``: it passes when ``ok`` and the ball is :func:`tight`."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.proofs.arb import ball_text

    ck.add("proved: " + name, "precision", ok and tight(ball), ball_text(ball, DIGITS) + ref_text)


def within(ball, ref, rel) -> bool:
    """Proved ``|ball - ref| <= rel |ref|`` (``ref`` an mpf or a ball, ``rel`` a number)."""
    # optional dependency (flint); import-time cost: the CLI's start loads no SymPy or NumPy
    import flint

    from symrmt.proofs.arb import to_arb, working_bits

    with working_bits(256):
        r = to_arb(ref) if not isinstance(ref, flint.arb) else ref
        tol = to_arb(Fraction(rel)) * abs(r).lower()
        return bool(abs(ball - r).upper() <= tol)


def gap(ball, ref) -> str:
    """The distance from ``ref`` to the ball, as text for a check's record."""
    # optional dependency (flint); import-time cost: the CLI's start loads no SymPy or NumPy
    import flint

    from symrmt.proofs.arb import to_arb, working_bits

    with working_bits(256):
        r = to_arb(ref) if not isinstance(ref, flint.arb) else ref
        return f" (|ball - ref| <= {abs(ball - r).upper().str(3, radius=False)})"


def ball_of(expr, symbols, values):
    """A SymPy expression (exact coefficients) evaluated on balls, through the package's compile step."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.proofs.arb import arb_checked, arb_function
    from symrmt.codegen.compile import compile_expr

    fn = compile_expr(list(symbols), expr, cse=False)
    return arb_checked([arb_function(inspect.getsource(fn), "expr")(*values)], str(expr)[:60])[0]


def rational(x, digits: int = 50) -> Fraction:
    """An mpf as the exact rational of its ``digits``-digit decimal (the value both sides then use exactly)."""
    return Fraction(mpmath.nstr(x, digits, min_fixed=-mpmath.inf, max_fixed=mpmath.inf))
