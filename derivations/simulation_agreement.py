#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.simulation_agreement` for the claim, the derivation and its checks.

Usage: python derivations/simulation_agreement.py [--quick] [--digits D]
"""

from symrmt.derivations.simulation_agreement import main

if __name__ == "__main__":
    raise SystemExit(main())
