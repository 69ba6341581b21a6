"""In-context regression by linear attention (Lu, Letey, Zavatone-Veth, Maiti, Pehlevan, PNAS 2025; ``docs/icl.md``).

Its rooms: :mod:`~symrmt.models.icl.equations` (SymPy: the task-diversity resolvent, the ridgeless limit
of the ICL error -- the paper's Result 1 --, the exact finite-``d`` test error of a readout, and the pieces of
the package's own derivation), :mod:`~symrmt.models.icl.theory` (:func:`icl_limit`: mpmath at any
precision, the resolvents from the trace engine) and :mod:`~symrmt.models.icl.simulation`
(:func:`icl_simulate`: NumPy, the model at finite ``d``), with the public call :func:`icl` in
:mod:`~symrmt.models.icl.api`.
"""

from symrmt.models.icl.api import icl, icl_simulate
from symrmt.models.icl.params import POLE_REASON
from symrmt.models.icl.theory import ICLLimit, icl_limit

__all__ = ["icl", "icl_limit", "icl_simulate", "ICLLimit", "POLE_REASON"]
