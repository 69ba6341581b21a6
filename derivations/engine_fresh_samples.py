#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.engine_fresh_samples` for the claim, the derivation and its checks.

Usage: python derivations/engine_fresh_samples.py [--quick] [--digits D]
"""

from symrmt.derivations.engine_fresh_samples import main

if __name__ == "__main__":
    raise SystemExit(main())
