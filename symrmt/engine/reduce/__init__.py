"""From an expression to its pencils and block fixed point (SymPy): linearization, plans, atoms,
Hermitization, quadratic forms by Woodbury, and the pencil's finite-size self-test."""

__all__: list = []
