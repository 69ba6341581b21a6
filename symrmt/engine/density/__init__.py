"""Limiting spectral densities of symmetric expressions: the result, the point solver, edges and
atoms, the float64 grid, and the finite-size histogram and figure."""

__all__: list = []
