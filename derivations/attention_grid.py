#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.attention_grid` for the claim, the derivation and its checks.

Usage: python derivations/attention_grid.py [--quick] [--digits D]
"""

from symrmt.derivations.attention_grid import main

if __name__ == "__main__":
    raise SystemExit(main())
