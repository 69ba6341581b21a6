"""``symrmt check``: test a user's formula against the package (symbolic proof, numeric check,
region of validity, Monte-Carlo).  The implementation is in ``symrmt.check.core``."""

from symrmt.check.core import *  # noqa: F401,F403
from symrmt.check.core import CheckReport, check  # noqa: F401
