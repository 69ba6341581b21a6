#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.a1_zero` for the claim, the derivation and its checks.

Usage: python derivations/a1_zero.py [--quick] [--digits D]
"""

from symrmt.derivations.a1_zero import main

if __name__ == "__main__":
    raise SystemExit(main())
