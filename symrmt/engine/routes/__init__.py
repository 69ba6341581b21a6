"""The trace engine's calls built on the solvers: complex points, sweeps, outliers, the 1/n term."""

__all__: list = []
