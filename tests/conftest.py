"""Test-session settings.

The simulations are BLAS-bound and small (n <= 512); one BLAS thread per process
avoids oversubscription on a shared 2-core machine (set before NumPy is imported).
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
