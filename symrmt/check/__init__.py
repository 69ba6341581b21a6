"""``symrmt check``: test a user's formula against the package (symbolic proof, numeric check,
region of validity, Monte-Carlo).  :func:`check` is in ``symrmt.check.core``; its stages in
``vocabulary`` (names and domain), ``candidate`` (reading the claim and ``where``), ``points`` (seeded
points, the package's values, the gap), ``prove`` (symbolic), ``region`` and ``bracket`` (where it
fails) and ``report`` (:class:`CheckReport`)."""


import sys
import types

from symrmt.check.core import DOMAIN, QUANTITIES, VOCABULARY, CheckReport, check, parse_candidate, parse_where

__all__ = ["CheckReport", "QUANTITIES", "VOCABULARY", "DOMAIN", "check", "parse_candidate", "parse_where"]


def _callable_package() -> None:
    """Make the package itself callable as :func:`check`.

    ``symrmt.check`` is both this package and the public function: importing the package
    binds the name ``check`` on ``symrmt`` to the module, so the module forwards calls to
    the function (``symrmt.check("E_RR", ...)`` works whichever was loaded first).
    """
    class _CheckModule(types.ModuleType):
        def __call__(self, *args, **kwargs):
            return check(*args, **kwargs)

    sys.modules[__name__].__class__ = _CheckModule


_callable_package()
