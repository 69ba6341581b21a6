"""The simulation machinery (NumPy only, never SymPy), shared by every model.

:mod:`~symrmt.simulation.executor` (running trials in processes or on Dask, seeded),
:mod:`~symrmt.simulation.store` (the on-disk store of finished trials),
:mod:`~symrmt.simulation.scheduler` (workers and batch sizes), :mod:`~symrmt.simulation.memory` (the
memory check before a run), :mod:`~symrmt.simulation.blas_threads`
(one BLAS thread per worker) and :mod:`~symrmt.simulation.ufuncs` (float64 special functions).
Each model's own sampler lives with the model.
"""

__all__: list[str] = []
