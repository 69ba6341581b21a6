#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.ridgeless` for the claim, the derivation and its checks.

Usage: python derivations/ridgeless.py [--quick] [--digits D]
"""

from symrmt.derivations.ridgeless import main

if __name__ == "__main__":
    raise SystemExit(main())
