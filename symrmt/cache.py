"""symrmt's in-memory caches: one bounded helper, one registry, one :func:`clear_caches`.

Every in-memory cache of the package is made here, bounded and registered:

* :func:`cached` -- a function cache (``functools.lru_cache`` with a finite ``maxsize``);
* :func:`cache_dict` -- a module-level table (a dict that drops its oldest entry beyond
  ``maxsize``), for caches whose key is computed inside the function.

:func:`clear_caches` empties all of them (a long-running session, or a test that wants a cold
start); :func:`cache_info` lists them with their sizes.  A cached function returns an immutable
value (a number, a tuple, a SymPy expression or ``ImmutableMatrix``, a read-only mapping, a
compiled function): a caller that changed a cached list would change what every later caller
gets.  The tables of :func:`cache_dict` hold solver objects that remember their continuation
path (``numeric.theory``'s fixed points) or compiled systems; those are the caches' state, not
values handed out for editing.

The compiled-code cache on disk (:mod:`symrmt.codegen.codecache`) is separate: it is keyed by
the source that generated the code and survives the process.

>>> @cached(maxsize=4)
... def square(x):
...     return x * x
>>> square(3), square.cache_info().currsize
(9, 1)
>>> clear_caches()
>>> square.cache_info().currsize
0
"""

from __future__ import annotations

import functools
from collections import OrderedDict

from symrmt.errors import ParameterError

__all__ = ["DEFAULT_MAXSIZE", "BoundedDict", "cache_dict", "cache_info", "cached", "clear_caches"]

#: ``maxsize`` of :func:`cached` and :func:`cache_dict` when none is given
DEFAULT_MAXSIZE = 256

#: every registered cache, as ``(name, cache)``
_REGISTRY: list = []


def _check_maxsize(maxsize) -> int:
    if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
        raise ParameterError(f"a symrmt cache needs a finite maxsize >= 1, got {maxsize!r}")
    return maxsize


def cached(maxsize: int = DEFAULT_MAXSIZE):
    """Decorator: ``functools.lru_cache(maxsize)`` (bounded), registered for :func:`clear_caches`.

    The arguments must be hashable; the function must return an immutable value.
    """
    if callable(maxsize):  # used bare, as @cached
        return cached(DEFAULT_MAXSIZE)(maxsize)
    size = _check_maxsize(maxsize)

    def decorate(fn):
        wrapped = functools.lru_cache(maxsize=size)(fn)
        _REGISTRY.append((f"{fn.__module__}.{fn.__qualname__}", wrapped))
        return wrapped

    return decorate


class BoundedDict(OrderedDict):
    """A dict of at most ``maxsize`` entries: storing one more drops the oldest."""

    def __init__(self, maxsize: int = DEFAULT_MAXSIZE):
        super().__init__()
        self.maxsize = _check_maxsize(maxsize)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        while len(self) > self.maxsize:
            self.popitem(last=False)

    def cache_clear(self) -> None:
        """Empty the cache (the name ``functools.lru_cache`` gives it)."""
        self.clear()


def cache_dict(name: str, maxsize: int = DEFAULT_MAXSIZE) -> BoundedDict:
    """A new registered :class:`BoundedDict` (``name`` says where it lives, for :func:`cache_info`)."""
    table = BoundedDict(maxsize)
    _REGISTRY.append((name, table))
    return table


def clear_caches() -> None:
    """Empty every registered cache."""
    for _, cache in _REGISTRY:
        cache.cache_clear()


def cache_info() -> list:
    """``[(name, current size, maxsize), ...]`` of every registered cache."""
    out = []
    for name, cache in _REGISTRY:
        if isinstance(cache, BoundedDict):
            out.append((name, len(cache), cache.maxsize))
        else:
            info = cache.cache_info()
            out.append((name, info.currsize, info.maxsize))
    return out
