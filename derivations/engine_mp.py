#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.engine_mp` for the claim, the derivation and its checks.

Usage: python derivations/engine_mp.py [--quick] [--digits D]
"""

from symrmt.derivations.engine_mp import main

if __name__ == "__main__":
    raise SystemExit(main())
