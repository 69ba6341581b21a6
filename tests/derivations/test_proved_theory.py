"""``verify --prove`` on the claims made up to a tolerance (symrmt.derivations.proved_theory): they pass,
and they fail when the reference moves beyond the tolerance."""

from fractions import Fraction

import mpmath
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.prove]  # seconds a test: outside the fast tier (pytest -m "not slow")

flint = pytest.importorskip("flint")


def test_within_can_fail():
    from symrmt.derivations.proved_common import within

    b = flint.arb("0.5", "1e-40")
    assert within(b, mpmath.mpf("0.5"), Fraction(1, 10 ** 30))
    with mpmath.workdps(50):
        moved = mpmath.mpf(1) / 2 + mpmath.mpf(10) ** -20
    assert not within(b, moved, Fraction(1, 10 ** 28))
    assert not within(flint.arb("0.5", "1e-10"), Fraction(1, 2), Fraction(1, 10 ** 15))  # too wide to decide


def test_every_derivation_proved_or_explained():
    from symrmt.derivations import DERIVATIONS as NAMES
    from symrmt.derivations.proved import NOT_PROVED, PROVED

    assert {"ridgeless", "attention_limit", "precision", "simulation_agreement", "attention_grid", "softmax",
            "engine_density"} <= set(PROVED)
    assert set(NAMES) <= set(PROVED) | set(NOT_PROVED), set(NAMES) - set(PROVED) - set(NOT_PROVED)


def test_density_and_precision_pass():
    from symrmt.derivations.proved import proved_checks

    for name in ("engine_density", "precision"):
        ck = proved_checks(name)
        assert ck.checks and ck.passed, ck.table()


def test_density_check_fails_on_a_moved_reference(monkeypatch):
    """The closed form moved by 1e-20 (relative): the proved density ball excludes it beyond 1e-28."""
    from symrmt.derivations import engine_density as E
    from symrmt.derivations.proved import proved_checks

    true = E.mp_density
    monkeypatch.setattr(E, "mp_density", lambda c, x: true(c, x) * (1 + mpmath.mpf(10) ** -20))  # at 60 digits
    ck = proved_checks("engine_density")
    mp = [c for c in ck.checks if c.name.startswith("proved: MP density")]
    assert mp and not any(c.passed for c in mp)


def test_ridgeless_cubic_and_limits():
    from symrmt.derivations.proved import proved_checks

    ck = proved_checks("ridgeless")
    assert ck.checks and ck.passed, ck.table()
    assert any("exactly one real root" in c.name for c in ck.checks)


def test_verify_prove_prints_why_not(monkeypatch, capsys):
    """A derivation without proved checks is listed with its reason (JSON ``not_proved_why``, stderr)."""
    import json

    from symrmt.cli.app import main
    from symrmt.derivations import proved

    monkeypatch.delitem(proved.PROVED, "ridge")
    monkeypatch.setitem(proved.NOT_PROVED, "ridge", "a reason for the test")
    assert main(["verify", "--only", "ridge", "--prove", "--json"]) == 0
    cap = capsys.readouterr()
    data = json.loads(cap.out)
    assert data["not_proved"] == ["ridge"] and data["not_proved_why"] == {"ridge": "a reason for the test"}
    assert "ridge: not re-run with --prove: a reason for the test" in cap.err
