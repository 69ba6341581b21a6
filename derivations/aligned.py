#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.aligned` for the claim, the derivation and its checks.

Usage: python derivations/aligned.py [--quick] [--digits D]
"""

from symrmt.derivations.aligned import main

if __name__ == "__main__":
    raise SystemExit(main())
