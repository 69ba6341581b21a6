"""symrmt's in-memory caches: one bounded helper, one registry, one :func:`clear_caches`.

:func:`cached` (a bounded ``functools.lru_cache``) and :func:`cache_dict` (a dict that drops its oldest
entry) make every in-memory cache of the package; :func:`clear_caches` empties them all and
:func:`cache_info` lists them.  A cached function returns an immutable value.  The compiled-code cache on
disk (:mod:`symrmt.codegen.codecache`) is separate.
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

    Takes ``maxsize`` (an int >= 1; the decorator may be used bare); returns the decorator.  Raises
    :class:`~symrmt.errors.ParameterError` for another ``maxsize``.

    >>> @cached(maxsize=4)
    ... def square(x):
    ...     return x * x
    >>> square(3), square(3), square.cache_info().hits
    (9, 9, 1)
    >>> cached(maxsize=0)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: a symrmt cache needs a finite maxsize >= 1, got 0
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
    """A dict of at most ``maxsize`` entries: storing one more drops the oldest.

    >>> d = BoundedDict(2)
    >>> d["a"], d["b"], d["c"] = 1, 2, 3
    >>> list(d)
    ['b', 'c']
    """

    def __init__(self, maxsize: int = DEFAULT_MAXSIZE):
        super().__init__()
        self.maxsize = _check_maxsize(maxsize)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        while len(self) > self.maxsize:
            self.popitem(last=False)

    def cache_clear(self) -> None:
        """Empty the cache (the name ``functools.lru_cache`` gives it).

        >>> d = BoundedDict(2)
        >>> d["a"] = 1
        >>> d.cache_clear(); len(d)
        0
        """
        self.clear()


def cache_dict(name: str, maxsize: int = DEFAULT_MAXSIZE) -> BoundedDict:
    """A new registered :class:`BoundedDict` (``name`` says where it lives, for :func:`cache_info`).

    >>> table = cache_dict("symrmt.cache.example", maxsize=3)
    >>> table.maxsize, ("symrmt.cache.example", 0, 3) in cache_info()
    (3, True)
    """
    table = BoundedDict(maxsize)
    _REGISTRY.append((name, table))
    return table


def clear_caches() -> None:
    """Empty every registered cache.

    Takes nothing and returns ``None``; every cached value is computed again on its next use.

    >>> @cached(maxsize=4)
    ... def double(x):
    ...     return 2 * x
    >>> double(3), double.cache_info().currsize
    (6, 1)
    >>> clear_caches()
    >>> double.cache_info().currsize
    0
    """
    for _, cache in _REGISTRY:
        cache.cache_clear()


def cache_info() -> list:
    """``[(name, current size, maxsize), ...]`` of every registered cache.

    >>> @cached(maxsize=5)
    ... def triple(x):
    ...     return 3 * x
    >>> triple(1)
    3
    >>> [entry for entry in cache_info() if entry[0].endswith("triple")]
    [('symrmt.cache.triple', 1, 5)]
    """
    out = []
    for name, cache in _REGISTRY:
        if isinstance(cache, BoundedDict):
            out.append((name, len(cache), cache.maxsize))
        else:
            info = cache.cache_info()
            out.append((name, info.currsize, info.maxsize))
    return out
