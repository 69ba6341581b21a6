r"""Certified numbers that print at the digits they carry.

:class:`CertifiedMpf` is an ``mpmath.mpf`` that remembers how many significant digits were
certified for it and shows them: ``repr`` and ``str`` print ``digits`` digits, whatever the
global ``mpmath.mp.dps`` is (a plain ``mpf`` of 103 bits prints 17 digits at the default
precision, which reads as if the other digits were lost).  Its value is the full binary value
the computation produced; arithmetic with it gives plain ``mpf`` at the context's precision, as
for any ``mpf``, and passing it back as a parameter of symrmt reads its exact binary value.
"""

from __future__ import annotations

import mpmath
from mpmath.libmp import to_str

__all__ = ["CertifiedMpf", "certified"]


class CertifiedMpf(mpmath.mpf):
    """An ``mpmath.mpf`` carrying ``digits``, its certified significant digits, which ``repr`` and ``str`` print
    whatever ``mpmath.mp.dps`` is; built by :func:`certified`.  It pickles bit for bit.

    >>> import pickle
    >>> x = pickle.loads(pickle.dumps(certified(mpmath.mpf(2) / 3, 5)))
    >>> type(x).__name__, str(x), x == mpmath.mpf(2) / 3
    ('CertifiedMpf', '0.66667', True)
    """

    __slots__ = ("digits",)

    def __repr__(self) -> str:
        return f"mpf('{to_str(self._mpf_, self.digits)}')"

    def __str__(self) -> str:
        return to_str(self._mpf_, self.digits)

    def __reduce__(self):
        return certified_from_state, (self._mpf_, self.digits)


def certified(x, digits: int) -> CertifiedMpf:
    """``x`` (an mpf, kept bit for bit; another number is made an mpf at the current precision) as a
    :class:`CertifiedMpf` that prints ``digits`` digits.

    >>> with mpmath.workdps(30):
    ...     x = certified(mpmath.mpf(1) / 3, 30)
    >>> x
    mpf('0.333333333333333333333333333333')
    >>> print(x)
    0.333333333333333333333333333333
    >>> x.digits, x + 0 == mpmath.mpf(1) / 3  # arithmetic: plain mpf at the context's precision
    (30, True)
    """
    return certified_from_state(mpmath.mpf(x)._mpf_ if not hasattr(x, "_mpf_") else x._mpf_, digits)


def certified_from_state(state, digits: int) -> CertifiedMpf:
    """The :class:`CertifiedMpf` of an mpf's internal ``_mpf_`` tuple, read bit for bit (how pickle
    restores one).

    >>> import mpmath
    >>> x = certified_from_state(mpmath.mpf(0.5)._mpf_, 3)
    >>> x.digits, x == 0.5
    (3, True)
    """
    obj = object.__new__(CertifiedMpf)
    obj._mpf_ = tuple(state)
    obj.digits = int(digits)
    return obj
