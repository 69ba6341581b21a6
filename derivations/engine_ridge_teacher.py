#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.engine_ridge_teacher` for the claim, the derivation and its checks.

Usage: python derivations/engine_ridge_teacher.py [--quick] [--digits D]
"""

from symrmt.derivations.engine_ridge_teacher import main

if __name__ == "__main__":
    raise SystemExit(main())
