#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.icl` for the claim, the derivation and its checks.

Usage: python derivations/icl.py [--quick] [--digits D]
"""

from symrmt.derivations.icl import main

if __name__ == "__main__":
    raise SystemExit(main())
