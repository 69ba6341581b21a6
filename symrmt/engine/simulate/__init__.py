"""Monte-Carlo of a trace-engine expression at finite size (NumPy only)."""

__all__: list = []
