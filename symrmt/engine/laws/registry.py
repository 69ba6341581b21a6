"""The registry of the trace engine's laws: each module of :mod:`symrmt.engine.laws` that defines ``LAW``.

A law module holds what the engine knows of one law: its keyword in the declaration grammar, the
arguments of that keyword, how it builds its node, and the sampler of its entries (NumPy only).  The
declarations (:class:`symrmt.engine.declarations.Model`), the simulation and the pencil's self-test
consult this registry, so a new law is one module here plus its tests.  A module whose name is a
sampling kind (``gaussian``, ``goe``, ``signs``) imports only NumPy at its top, so a Monte-Carlo worker
finds a sampler without SymPy.

Examples
--------
>>> sorted(k for k in keywords() if k in ("elliptic", "goe", "matrix"))
['elliptic', 'goe', 'matrix']
>>> law("goe").signature
'goe(dim)'
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

import symrmt.engine.laws as package
from symrmt.cache import cache_dict

__all__ = ["Law", "laws", "law", "keywords", "sampler"]


@dataclass(frozen=True)
class Law:
    """One law of the engine's language.

    ``keyword``: its word in a declaration (``G=goe(n)``); ``signature``: the call as a user writes it;
    ``kind``: ``"matrix"`` or ``"vector"``; ``summary``: one line (entries, scaling); ``declare(model,
    name, *args)``: declares ``name`` in ``model`` and returns its node (what ``Model.<keyword>`` calls);
    ``params``: whether its text arguments may name scalar parameters (``elliptic(n, tau)``), not only
    dimensions; ``declare_text(model, name, rhs)``: a text form that is not a plain call of dimensions and
    parameters (a quoted file path), or None; ``sample(rows, cols, rng)``: one draw of its entries
    (variance 1, the user divides by ``sqrt(n)``), or None when it is drawn through the leaves it is
    written with; ``leaves``: the node kinds it is written with (its pencil and sampler are theirs).

    >>> Law("x", "x(dim)", "matrix", "an example", declare=lambda model, name, dim: None).params
    False
    """

    keyword: str
    signature: str
    kind: str
    summary: str
    declare: Callable
    params: bool = False
    declare_text: Callable | None = None
    sample: Callable | None = None
    leaves: tuple = ()


#: keyword -> Law, filled once by :func:`laws` (emptied by ``symrmt.clear_caches()``, then filled again)
_LAWS = cache_dict("engine.laws.registry", maxsize=256)


def _module(name: str):
    return importlib.import_module(f"{__name__.rsplit('.', 1)[0]}.{name}")


def laws() -> dict:
    """keyword -> :class:`Law` of every module of this package that defines ``LAW`` (a law, or a tuple
    of laws that share their code), loaded once.

    >>> isinstance(laws()["elliptic"], Law)
    True
    """
    if not _LAWS:
        found = {}
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            if info.name == "registry":
                continue
            entry = getattr(_module(info.name), "LAW", None)
            for one in (entry if isinstance(entry, tuple) else (entry,) if entry is not None else ()):
                if one.keyword in found:
                    raise RuntimeError(f"two laws use the keyword {one.keyword!r} ({info.name})")
                found[one.keyword] = one
        _LAWS.update(found)
    return _LAWS


def law(keyword: str) -> Law:
    """The :class:`Law` of ``keyword``; raises ``KeyError`` when no law has it.

    >>> law("elliptic").params
    True
    """
    return laws()[keyword]


def keywords() -> frozenset:
    """The keywords of every law (reserved: no parameter or matrix may take these names).

    >>> "goe" in keywords()
    True
    """
    return frozenset(laws())


def sampler(kind: str) -> Callable:
    """The sampler ``sample(rows, cols, rng)`` of the leaves of ``kind`` (``"gaussian"``, ``"goe"``,
    ``"signs"``): read from the module of that name alone, which imports NumPy only.

    >>> import numpy as np
    >>> sampler("goe")(2, 2, np.random.default_rng(0)).shape
    (2, 2)
    """
    entry = getattr(_module(kind), "LAW", None)
    found = [one for one in (entry if isinstance(entry, tuple) else (entry,)) if one is not None and one.sample]
    if not found:
        raise KeyError(f"no sampler for the kind {kind!r}")
    return found[0].sample
