#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.ridge` for the claim, the derivation and its checks.

Usage: python derivations/ridge.py [--quick] [--digits D]
"""

from symrmt.derivations.ridge import main

if __name__ == "__main__":
    raise SystemExit(main())
