"""Proved digits of the trace engine: traces and quadratic forms as balls (Krawczyk)."""

__all__: list = []
