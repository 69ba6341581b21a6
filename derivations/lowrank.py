#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.lowrank` for the claim, the derivation and its checks.

Usage: python derivations/lowrank.py [--quick] [--digits D]
"""

from symrmt.derivations.lowrank import main

if __name__ == "__main__":
    raise SystemExit(main())
