"""Proved digits: ball arithmetic (python-flint's Arb) around the package's compiled formulas.

:mod:`symrmt.proofs.arb` holds the number context of balls, the radius checks and the Krawczyk test's
building blocks that the engine's, the Hermite data's and the attention model's proofs share.
"""

__all__ = []
