"""The numeric layer (mpmath): solvers compiled from the symbolic systems, at any precision.

``symrmt.numeric.solver`` holds the compile step, Newton, continuation and certification
(re-exported here); ``symrmt.numeric.codecache`` the disk cache of compiled code;
``symrmt.numeric.theory`` the limits ``limit``, ``ridge_limit`` and ``attention_limit``.
"""

from symrmt.numeric.solver import *  # noqa: F401,F403
