"""Softmax attention, the second model: ``K = (n/sqrt(p)) row-softmax(X^T W X/sqrt(p))`` with the mask
``S_ii = -inf``, whose limit is the entry-wise limit of ``h(t) = exp(t - alpha^2/2) - 1``
(``docs/theory.md``, section "Softmax attention").

Its rooms: :mod:`~symrmt.models.attention.softmax_kernel` (``h``, its text and its Nonlinearity, the checks of
``f`` and ``mask``) and :mod:`~symrmt.models.softmax.limit` (:func:`softmax_limit`).  It builds on the
attention model (:mod:`symrmt.models.attention`): the certified solver is the entry-wise one, and
the simulation is :func:`symrmt.models.attention.sampling.softmax_kernel`.
"""

from symrmt.models.attention.softmax_kernel import (
    UNMASKED_REASON, check_mask, check_softmax_f, softmax_nonlinearity, softmax_text,
)
from symrmt.models.softmax.limit import softmax_limit

__all__ = ["softmax_text", "softmax_nonlinearity", "softmax_limit", "UNMASKED_REASON", "check_softmax_f",
           "check_mask"]
