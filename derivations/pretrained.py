#!/usr/bin/env python
"""Runnable derivation script: see :mod:`symrmt.derivations.pretrained` for the question, the steps and the checks.

Needs ``pip install 'symrmt[pretrained]'``.  Writes the committed figure and numbers with
``python derivations/pretrained.py --figure docs/figures/pretrained.png --json docs/pretrained.json``, and
the actual-weights study (every layer's ``W`` in ``symrmt limit --weights`` against simulation) with
``python derivations/pretrained.py --actual --figure docs/figures/pretrained_actual.png --json docs/pretrained_actual.json``.

Usage: python derivations/pretrained.py [--quick] [--actual] [--digits D] [--figure PATH] [--json PATH]
"""

from symrmt.derivations.pretrained import main

if __name__ == "__main__":
    raise SystemExit(main())
