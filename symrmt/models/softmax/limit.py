"""Softmax attention's certified limit: :func:`softmax_limit`, the public ``symrmt.limit`` with
``attention="softmax"`` (the entry-wise limit of the kernel of :mod:`symrmt.models.attention.softmax_kernel`).

It calls :mod:`symrmt.models.attention.api`, which uses :mod:`symrmt.models.attention.softmax_kernel`: the
softmax package builds on the attention model, never the reverse.
"""

from __future__ import annotations

__all__ = ["softmax_limit"]


def softmax_limit(c, gamma, geometry=None, digits: int = 15, mask: bool = True, progress=None):
    """Certified limits of ``E_A`` (masked softmax attention) and ``E_RR``: ``symrmt.limit(None, ...,
    attention="softmax")``, the entry-wise limit of
    :func:`~symrmt.models.attention.softmax_kernel.softmax_nonlinearity` for ``geometry``'s ``alpha``."""
    # import-time cost: the softmax kernel loads no SymPy, mpmath or NumPy
    from symrmt.models.attention.api import limit

    return limit(None, c, gamma, geometry, digits=digits, progress=progress, attention="softmax", mask=mask)
