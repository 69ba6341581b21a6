"""``symrmt bench``: speed and precision measured side by side in one run.

:mod:`~symrmt.bench.run` runs the sections; :mod:`~symrmt.bench.fast` (the float64 fast path),
:mod:`~symrmt.bench.prove` (proved digits), :mod:`~symrmt.bench.engine` (the trace engine),
:mod:`~symrmt.bench.density` (spectral densities) and :mod:`~symrmt.bench.finite_n` (the finite-n
prediction) are its entries.
"""

__all__: list[str] = []
