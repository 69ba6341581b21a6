"""Every exception and warning class symrmt defines derives from ``symrmt.errors.SymrmtError``,
keeps the built-in parent its exit code depends on, and carries its data as attributes."""

import importlib
import inspect
import pkgutil

import pytest
import sympy as sp

import symrmt
from symrmt.errors import SymrmtError
from symrmt.errors import ParameterError


def _symrmt_modules():
    for info in pkgutil.walk_packages(symrmt.__path__, "symrmt."):
        if info.name in ("symrmt.__main__", "symrmt.models.attention.pretrained") or ".derivations." in info.name:
            continue
        yield importlib.import_module(info.name)


def _defined_exceptions():
    seen = {}
    for mod in _symrmt_modules():
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__.startswith("symrmt") and issubclass(cls, Exception):
                seen[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return seen


def test_every_exception_derives_from_symrmt_error():
    found = _defined_exceptions()
    assert len(found) >= 15, sorted(found)
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, SymrmtError))
    assert outside == []
    from symrmt.models.attention.pretrained import PretrainedUnavailable
    from symrmt.simulation.executor import StaleTrialsWarning

    assert issubclass(PretrainedUnavailable, (SymrmtError, ImportError))
    assert issubclass(StaleTrialsWarning, SymrmtError) and issubclass(StaleTrialsWarning, UserWarning)


def test_exit_code_parents_kept():
    """Bad input is a ValueError (exit 2), a number that cannot be stood behind an ArithmeticError (exit 3)."""
    from symrmt.hermite.quadrature import QuadratureError
    from symrmt.errors import BranchError, ConvergenceError, PrecisionError, SolverError
    from symrmt.parsing import ParseLimitError
    from symrmt.simulation.store import StoreError
    from symrmt.engine.lang.node import ModelError
    from symrmt.hermite.gaussian import NotExact
    from symrmt.hermite.nonlinearity import NotCenteredError

    for cls in (ParameterError, ParseLimitError, StoreError, ModelError, NotCenteredError):
        assert issubclass(cls, ValueError) and issubclass(cls, SymrmtError), cls
    for cls in (SolverError, ConvergenceError, BranchError, PrecisionError, QuadratureError, NotExact):
        assert issubclass(cls, ArithmeticError) and issubclass(cls, SymrmtError), cls


def test_not_centered_carries_a0():
    """relu - E relu(xi) at scale alpha = 2: E f(2 xi) = 2/sqrt(2 pi) - 1/sqrt(2 pi) = 1/sqrt(2 pi)."""
    from symrmt.models.attention.geometry import LowRankGeometry
    from symrmt.models.attention.theory import attention_limit
    from symrmt.hermite.nonlinearity import NotCenteredError

    with pytest.raises(NotCenteredError) as info:
        attention_limit("relu", "1/2", [1], LowRankGeometry([[1]], alpha=2))
    exc = info.value
    assert sp.simplify(sp.sympify(exc.a0_exact) - 1 / sp.sqrt(2 * sp.pi)) == 0
    assert abs(exc.a0_value - 0.3989422804014327) < 1e-14
    assert exc.a0 in str(exc)
    with pytest.raises(NotCenteredError) as info:  # no closed form: the decimal only
        from symrmt.hermite import Nonlinearity

        Nonlinearity("softplus(t)")
    assert info.value.a0_exact is None and 0.8 < info.value.a0_value < 0.81
