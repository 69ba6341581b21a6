"""The one compile step: SymPy expressions printed to mpmath or NumPy code (:mod:`~symrmt.codegen.compile`),
and the disk cache of the compiled code (:mod:`~symrmt.codegen.codecache`).

Each formula exists once, symbolically; every numeric evaluation of it is compiled here.
"""

__all__: list[str] = []
