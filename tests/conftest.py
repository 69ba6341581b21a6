"""Test-session settings.

The simulations are BLAS-bound and small (n <= 512); one BLAS thread per process
avoids oversubscription on a shared 2-core machine (set before NumPy is imported).
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# The compiled-code disk cache (symrmt.numeric.codecache) goes to a throw-away folder, never the
# user's ~/.cache, unless the caller chose one.
if "SYMRMT_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _cache = tempfile.mkdtemp(prefix="symrmt-test-cache-")
    os.environ["SYMRMT_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, True)
