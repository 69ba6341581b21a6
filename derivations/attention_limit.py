#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.attention_limit` for the claim, the derivation and its checks.

Usage: python derivations/attention_limit.py [--quick] [--digits D]
"""

from symrmt.derivations.attention_limit import main

if __name__ == "__main__":
    raise SystemExit(main())
