#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.noise_only` for the claim, the derivation and its checks.

Usage: python derivations/noise_only.py [--quick] [--digits D]
"""

from symrmt.derivations.noise_only import main

if __name__ == "__main__":
    raise SystemExit(main())
