#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.generalization` for the claim, the derivation and its checks.

Usage: python derivations/generalization.py [--quick] [--digits D]
"""

from symrmt.derivations.generalization import main

if __name__ == "__main__":
    raise SystemExit(main())
