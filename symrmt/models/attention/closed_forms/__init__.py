"""Closed forms: polynomial equations and explicit values derived from the symbolic layer."""

__all__: list[str] = []
