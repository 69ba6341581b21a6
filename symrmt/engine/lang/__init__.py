"""The trace engine's expression language: dimensions, the nodes, vectors, differentiation and binding."""

__all__: list = []
