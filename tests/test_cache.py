"""symrmt.cache: every in-memory cache is bounded and registered, clear_caches empties them all,
and cached functions hand out immutable values."""

import importlib
import pkgutil
import re
from pathlib import Path
from types import MappingProxyType

import pytest
import sympy as sp

import symrmt
from symrmt.cache import BoundedDict, cache_dict, cache_info, cached, clear_caches

ROOT = Path(__file__).resolve().parents[1]


def _import_all():
    for info in pkgutil.walk_packages(symrmt.__path__, "symrmt."):
        if info.name in ("symrmt.__main__", "symrmt.models.attention.pretrained"):
            continue
        importlib.import_module(info.name)


def test_no_cache_outside_the_helper():
    """No ``lru_cache``/``functools.cache`` and no bare module-level dict cache outside symrmt/cache.py."""
    offenders = []
    for path in (ROOT / "symrmt").rglob("*.py"):
        if path.name == "cache.py" and path.parent.name == "symrmt":
            continue
        text = path.read_text(encoding="utf-8")
        for i, line in enumerate(text.splitlines(), 1):
            if re.search(r"lru_cache|functools\.cache\b|@cache\b", line) or \
                    re.match(r"_[A-Z][A-Z_]*(: dict)? = (\{\}|dict\(\))\s*$", line):
                offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert offenders == []


def test_every_registered_cache_is_bounded_and_cleared():
    _import_all()
    from symrmt.models.attention import theory
    from symrmt.hermite.gaussian import exact_expectation, T

    exact_expectation(T**2, 5.0)  # fill two caches
    theory.attention_limit("tanh", "1/2", ["1"], digits=15)
    info = cache_info()
    assert len(info) >= 30
    assert all(isinstance(size, int) and 1 <= size <= 4096 for _, _, size in info), info
    assert any(n > 0 for _, n, _ in info)
    clear_caches()
    assert [row for row in cache_info() if row[1]] == []


def test_helper_refuses_an_unbounded_cache():
    with pytest.raises(ValueError, match="finite maxsize"):
        cached(maxsize=None)
    with pytest.raises(ValueError, match="finite maxsize"):
        cache_dict("x", 0)


def test_bounded_dict_drops_its_oldest_entry():
    d = BoundedDict(2)
    d["a"], d["b"], d["c"] = 1, 2, 3
    assert list(d) == ["b", "c"]


def test_cached_values_are_immutable():
    from symrmt.models.attention.batch import numpy_functions
    from symrmt.models.attention.solver import asymptotic_start
    from symrmt.models.attention import equations as S
    from symrmt.models.attention.closed_forms import noise_only as N
    from symrmt.hermite.gaussian import NotExact, T, exact_expectation

    assert isinstance(N.cubic_system(), sp.ImmutableMatrix)
    assert all(isinstance(x, sp.ImmutableMatrix) for x in S.fixed_point_system())
    assert isinstance(numpy_functions(), MappingProxyType)
    assert isinstance(asymptotic_start(sp.Integer(10), sp.Rational(1, 2)), tuple)
    # an unavailable exact value is cached as its message: a fresh exception each time
    e1, e2 = (exact_expectation(sp.besselj(0, T), 1.0) for _ in range(2))
    assert isinstance(e1, NotExact) and isinstance(e2, NotExact)
    assert e2 is not e1 and str(e1) == str(e2) and "outside the exact engine" in str(e1)
