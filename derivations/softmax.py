#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.softmax` for the claim, the derivation and its checks.

Usage: python derivations/softmax.py [--quick] [--digits D]
"""

from symrmt.derivations.softmax import main

if __name__ == "__main__":
    raise SystemExit(main())
