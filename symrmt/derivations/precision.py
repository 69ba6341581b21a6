r"""Precision: the digits the solver returns are right.

Claim.  ``attention_limit(..., digits=D)`` returns ``D`` correct significant
digits, including small ``gamma`` and ``c`` near 1 where the system is stiff:
a ``D``-digit answer agrees with an independent ``D + 30``-digit answer (a fresh
solve, its own continuation and guard digits) to at least ``D - 2`` digits.
"""

from __future__ import annotations

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.theory import attention_limit, ridge_limit

NAME = "precision"


def run(quick: bool = False, digits: int = 50) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    geo = Geometry(snr=1, wk2=1, wq2="1/4", wkwq="3/10", muwk="1/2", muwq="-1/10")
    pts = [("1/2", "1e-3"), ("0.98", "1e-3"), ("1.02", "0.01")]
    if not quick:
        pts += [("2", "1e-8"), ("1.02", "1e-3"), ("0.98", "1e-6")]
    D = 30 if quick else digits
    for c, g in pts:
        lo = attention_limit("tanh", c, [g], geo, digits=D)[0]
        hi = attention_limit("tanh", c, [g], geo, digits=D + 30)[0]
        ck.close(f"E_A: {D} digits vs {D + 30} digits, c={c}, gamma={g}", lo, hi, D - 2)
    lo = ridge_limit("0.98", ["1e-8"], snr=2, digits=D)[0]
    hi = ridge_limit("0.98", ["1e-8"], snr=2, digits=D + 30)[0]
    ck.close(f"E_RR: {D} digits vs {D + 30} digits, c=0.98, gamma=1e-8", lo, hi, D - 2)
    return ck


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
