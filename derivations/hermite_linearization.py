#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.hermite_linearization` for the claim, the derivation and its checks.

Usage: python derivations/hermite_linearization.py [--quick] [--digits D]
"""

from symrmt.derivations.hermite_linearization import main

if __name__ == "__main__":
    raise SystemExit(main())
