#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.linear_kernel` for the claim, the derivation and its checks.

Usage: python derivations/linear_kernel.py [--quick] [--digits D]
"""

from symrmt.derivations.linear_kernel import main

if __name__ == "__main__":
    raise SystemExit(main())
