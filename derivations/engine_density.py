#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.engine_density` for the claim, the derivation and its checks.

Usage: python derivations/engine_density.py [--quick] [--digits D]
"""

from symrmt.derivations.engine_density import main

if __name__ == "__main__":
    raise SystemExit(main())
