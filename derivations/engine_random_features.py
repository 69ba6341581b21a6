#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.engine_random_features` for the claim, the derivation and its checks.

Usage: python derivations/engine_random_features.py [--quick] [--digits D]
"""

from symrmt.derivations.engine_random_features import main

if __name__ == "__main__":
    raise SystemExit(main())
