#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.engine_ridge_bias_variance` for the claim, the derivation and its checks.

Usage: python derivations/engine_ridge_bias_variance.py [--quick] [--digits D]
"""

from symrmt.derivations.engine_ridge_bias_variance import main

if __name__ == "__main__":
    raise SystemExit(main())
