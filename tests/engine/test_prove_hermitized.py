"""--prove on a Hermitized (non-normal) resolvent: the pinned fixed point at eps = 0 on balls
(symrmt.engine.prove.hermitized), against the Ginibre closed forms (Brown measure uniform on the disk)."""

from fractions import Fraction

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.prove]  # seconds a test: outside the fast tier (pytest -m "not slow")

flint = pytest.importorskip("flint")

GINIBRE = "trace(inv(Z/sqrt(n) + gamma*I(n)))"


def _ginibre():
    from symrmt.engine import Model

    g = Model()
    g.gaussian("Z", "n", "n")
    return g


@pytest.mark.parametrize("gam", ["1/2", "-3/4", "9/10"])
def test_ginibre_inside_the_disk_proved(gam):
    """tau((gamma + Z/sqrt(n))^{-1}) = gamma for |gamma| <= 1: the ball holds it, excludes gamma + 1e-28,
    and its radius is below 1e-30 of the value."""
    from symrmt.proofs.arb import relative_ok, working_bits

    r = _ginibre().limit(GINIBRE, at={"gamma": gam}, digits=30, prove=True)
    assert r.hermitized and r.branch == "sanity" and any("pinned" in n for n in r.branch_notes)
    q = Fraction(gam)
    with working_bits(256):
        exact = flint.arb(flint.fmpq(q.numerator, q.denominator))
        assert r.ball.contains(exact)
        assert not r.ball.overlaps(exact * (1 + flint.arb(10) ** -28))
    assert relative_ok(r.ball, 30)


def test_ginibre_derivative_refused_with_reason():
    from symrmt.proofs.arb import ProofError

    with pytest.raises(ProofError, match="parameter derivatives of a Hermitized trace.*certified at two precisions"):
        _ginibre().limit(f"diff({GINIBRE}, gamma)", at={"gamma": "1/2"}, digits=30, prove=True)


def testsyzygy_is_an_identity():
    """The identity that makes the pinned system square: l . R expands to 0, and l is not 0 at the root."""
    import sympy as sp

    from symrmt.engine.prove.hermitized import syzygy

    a, b, c, d, g = sp.symbols("a b c d g")
    gam = sp.Rational(1, 2)
    R = [-a * d - c * gam - 1, -b * d - d * gam, -a * gam - c * a, -b * gam - a * d - 1]  # Ginibre, eps = 0
    s3 = 3 ** 0.5 / 2
    ell = syzygy(R, [a, b, c, d], [s3, -0.5, -0.5, -s3])
    assert ell is not None and sp.expand(sum(x * y for x, y in zip(ell, R))) == 0
    assert max(abs(float(x.subs({a: s3, b: -0.5, c: -0.5, d: -s3}))) for x in ell) > 1e-3


@pytest.mark.parametrize("expr, scale2", [("trace(inv(2*Z/sqrt(n) + gamma*I(n)))", 4),
                                          ("trace(inv(Z/sqrt(n) + Y/sqrt(n) + gamma*I(n)))", 2)])
def test_scaled_ginibre_proved(expr, scale2):
    """A Ginibre of variance sigma^2 (2 Z, or the sum of two): tau = gamma/sigma^2 inside |gamma| <= sigma."""
    from symrmt.proofs.arb import working_bits

    g = _ginibre()
    g.gaussian("Y", "n", "n")
    r = g.limit(expr, at={"gamma": "1/2"}, digits=30, prove=True)
    with working_bits(256):
        exact = flint.arb(flint.fmpq(1, 2 * scale2))
        assert r.hermitized and r.ball.contains(exact) and not r.ball.overlaps(exact * (1 + flint.arb(10) ** -28))
