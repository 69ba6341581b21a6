#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.precision` for the claim, the derivation and its checks.

Usage: python derivations/precision.py [--quick] [--digits D]
"""

from symrmt.derivations.precision import main

if __name__ == "__main__":
    raise SystemExit(main())
