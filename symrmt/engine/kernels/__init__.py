"""Gaussian equivalents of entrywise nonlinear kernels, written in the engine's language."""

__all__: list = []
