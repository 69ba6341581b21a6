"""The symbolic layer (SymPy only): Hermite data, pencils, fixed-point systems and closed forms.

``symrmt.symbolic.attention`` holds the attention model's pencil, fixed point and Woodbury system
(re-exported here); ``symrmt.symbolic.hermite`` the Hermite expansion of a nonlinearity;
``symrmt.symbolic.closed_forms`` the special cases that have closed forms.
"""

from symrmt.symbolic.attention import *  # noqa: F401,F403
