"""The memory check of every simulation entry point: a run whose arrays would not fit is refused before
anything is allocated or spawned, with the amount in the message.
"""

from __future__ import annotations

import os
from decimal import Decimal

from symrmt.errors import ParameterError

__all__ = ["MEMORY_FRACTION", "TRIAL_BOOKKEEPING", "check_memory_bytes"]

#: fraction of the physical memory one simulate() call may plan to use
MEMORY_FRACTION = 0.5
#: bytes kept per trial whatever n (its seed sequence and results), an upper estimate: a huge
#: ``trials`` is refused by the memory check before anything is spawned
TRIAL_BOOKKEEPING = 1024


def check_memory_bytes(need: int, what: str, detail: str, advice: str) -> None:
    """Refuse, before any allocation, a plan needing ``need`` bytes above ``MEMORY_FRACTION`` of the machine's
    physical memory; returns ``None`` when it fits (or when the memory cannot be read).  Raises
    :class:`ParameterError` that starts with ``what``, states the amount and the ``detail`` of the plan, and ends
    with the ``advice``.

    >>> check_memory_bytes(8 * 512 ** 2, "simulate", "one 512 x 512 matrix", "use a smaller n") is None
    True
    >>> check_memory_bytes(2 ** 80, "simulate", "a huge plan", "use a smaller n")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: simulate: needs about 1.13e+15 GiB (a huge plan), more than 50% of this machine's ... GiB; use a smaller n
    """
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        total = None
    if total and need > MEMORY_FRACTION * total:
        raise ParameterError(f"{what}: needs about {Decimal(need) / 2**30:.3g} GiB ({detail}), more than "
                             f"{MEMORY_FRACTION:.0%} of this machine's {total / 2**30:.3g} GiB; {advice}")
