"""Checks recorded by the derivations and reported by ``symrmt verify``.

A derivation builds a :class:`CheckList`, adds one :class:`Check` per identity
or comparison it asserts, and finally calls :meth:`CheckList.assert_all`.
Three kinds, with their tolerance tiers:

* ``symbolic``  -- exact: ``simplify(a - b) == 0``;
* ``precision`` -- mpmath against a closed form or a second solve, ``10**(-digits + k)``;
* ``simulation`` -- ``|mc - theory| <= k se + slack`` with ``k`` and the slack stated.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass, field

import mpmath
import sympy as sp

KINDS = ("symbolic", "precision", "simulation")


@dataclass
class Check:
    """One check: its name, kind, outcome and what was measured (value or gap)."""

    name: str
    kind: str
    passed: bool
    measured: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"check kind must be one of {KINDS}, got {self.kind!r}")


@dataclass
class CheckList:
    """The checks of one derivation, in order: each passes or fails with what it measured.

    >>> ck = CheckList("demo")
    >>> ck.add("1 + 1 == 2", "symbolic", 1 + 1 == 2), ck.close("pi", "3.14159265", "3.14159265358979", 8)
    (True, True)
    >>> ck.passed, len(ck.as_dicts())
    (True, 2)
    >>> ck.add("2 > 3", "symbolic", 2 > 3)
    False
    >>> ck.assert_all()
    Traceback (most recent call last):
    ...
    AssertionError: failed checks: 2 > 3 ()
    """

    derivation: str
    checks: list = field(default_factory=list)

    def add(self, name: str, kind: str, passed, measured="") -> bool:
        """Record a check ``name`` of ``kind`` (symbolic, precision, simulation) with what it measured;
        returns whether it passed (a failure is recorded, not raised: :meth:`assert_all` raises)."""
        self.checks.append(Check(name, kind, bool(passed), str(measured)))
        return bool(passed)

    def symbolic(self, name: str, difference, measured: str = "") -> bool:
        """Exact identity: passes iff ``sympy.simplify(difference) == 0``."""
        diff = sp.simplify(difference)
        return self.add(name, "symbolic", diff == 0, measured or ("0" if diff == 0 else f"residual {diff}"))

    def close(self, name: str, a, b, digits: int) -> bool:
        """High precision: ``|a - b| <= 10**(-digits) * max(1, |b|)``; records the agreeing digits."""
        with mpmath.workdps(digits + 20):
            a, b = mpmath.mpf(a), mpmath.mpf(b)
            err = abs(a - b)
            scale = max(1, abs(b))
            ok = err <= mpmath.mpf(10) ** (-digits) * scale
            agree = f"equal to all {digits} digits" if err == 0 else f"{float(-mpmath.log10(err / scale)):.1f} digits"
        return self.add(name, "precision", ok, agree)

    def statistical(self, name: str, mc_mean, se, theory, k: float, slack: float) -> bool:
        """``|mc - theory| <= k se + slack``; records the gap in units of se."""
        gap = abs(float(mc_mean) - float(theory))
        ok = gap <= k * float(se) + slack
        return self.add(name, "simulation", ok, f"gap {gap:.2e} = {gap / float(se):.2f} se (tol {k} se + {slack})")

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return all(c.passed for c in self.checks)

    def table(self) -> str:
        """The checks as a text table: name, kind, PASS or FAIL, what was measured."""
        width = max([len(c.name) for c in self.checks] + [10])
        lines = [f"{self.derivation}"]
        for c in self.checks:
            lines.append(f"  {c.name:<{width}}  {c.kind:<10}  {'PASS' if c.passed else 'FAIL'}  {c.measured}")
        return "\n".join(lines)

    def as_dicts(self) -> list:
        """One dict per check (with the derivation's name), for JSON."""
        return [dict(asdict(c), derivation=self.derivation) for c in self.checks]

    def assert_all(self) -> None:
        """Raise ``AssertionError`` naming every failed check (with what it measured)."""
        failed = [c for c in self.checks if not c.passed]
        assert not failed, "failed checks: " + "; ".join(f"{c.name} ({c.measured})" for c in failed)


def derivation_main(name: str, run, argv=None, doc: str = "") -> int:
    """Standard ``main(argv)`` of a derivation: ``--quick``, ``--digits``; prints the table, asserts."""
    ap = argparse.ArgumentParser(allow_abbrev=False, prog=name, description=doc)
    ap.add_argument("--quick", action="store_true", help="seconds-long run (smaller simulations)")
    ap.add_argument("--digits", type=int, default=None, help="working digits for the high-precision checks")
    args = ap.parse_args(argv)
    kwargs = {"quick": args.quick}
    if args.digits is not None:
        kwargs["digits"] = args.digits
    checks = run(**kwargs)
    print(checks.table())
    checks.assert_all()
    print(f"{len(checks.checks)} checks passed", file=sys.stderr)
    return 0
