"""The vocabulary of ``symrmt check``: the quantities, the parameter names and symbols, the domain."""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symrmt.parsing import LIMITS
from symrmt.models.attention import equations as S


# ---------------------------------------------------------------------------
# vocabulary
# ---------------------------------------------------------------------------
#: the parameter names a candidate may use
VOCABULARY = ("c", "gamma", "snr", "a1", "nu", "d", "wk2", "wq2", "wkwq", "muwk", "muwq")
GEOMETRY_NAMES = ("snr", "wk2", "wq2", "wkwq", "muwk", "muwq")

PARAM_SYMBOLS = {
    "c": S.c, "gamma": S.gamma, "snr": S.snr, "a1": S.a1, "nu": S.nu, "d": S.d, "wkwq": S.wkwq,
    "wk2": sp.Symbol("wk2", nonnegative=True), "wq2": sp.Symbol("wq2", nonnegative=True),
    "muwk": sp.Symbol("muwk", real=True), "muwq": sp.Symbol("muwq", real=True),
}

ALL = VOCABULARY
ATT_NOGAMMA = tuple(p for p in ALL if p != "gamma")


@dataclass(frozen=True)
class Quantity:
    """A quantity ``symrmt check`` knows: its name, parameters, meaning, whether the package has an exact
    form, and the default number of numeric points.

    >>> QUANTITIES["E_RR"]
    Quantity(name='E_RR', params=('c', 'gamma', 'snr'), meaning='ridge error E_RR(gamma)', exact=True, points=24)
    """

    name: str
    params: tuple
    meaning: str
    exact: bool  # the package has an exact (symbolic) form
    points: int  # default number of numeric points


QUANTITIES = {
    "E_RR": Quantity("E_RR", ("c", "gamma", "snr"), "ridge error E_RR(gamma)", True, 24),
    "m": Quantity("m", ("c", "gamma"), "Marchenko-Pastur Stieltjes transform lim tr (X^T X/n + gamma)^{-1}/n "
                  "at mu = 0 (positive root of gamma m^2 + (gamma+c-1) m - 1)", True, 24),
    "E_RR0": Quantity("E_RR0", ("c", "snr"), "ridgeless ridge error E_RR(0+)", True, 24),
    "E_A": Quantity("E_A", ALL, "Attention error E_A(gamma)", False, 12),
    "m_A": Quantity("m_A", ("c", "gamma", "a1", "nu", "d"),
                    "Attention Stieltjes transform lim tr (K^T X^T X K/n + gamma)^{-1}/n", False, 12),
    "E_A0": Quantity("E_A0", ATT_NOGAMMA, "ridgeless Attention error E_A(0+)", False, 6),
}

QUANTITY_SYMBOLS = {name: (S.m if name == "m" else sp.Symbol(name, real=True)) for name in QUANTITIES}
SYMBOL_NAME = {v: k for k, v in {**PARAM_SYMBOLS, **QUANTITY_SYMBOLS}.items()}

#: default domain: (low, high, scale, probability of an atom at 0) per parameter (``c`` and ``gamma``
#: log-uniform); ``nu`` is
#: ``a1^2 + U(0, 1)``; the geometry is redrawn until it is a Gram matrix; ``c`` avoids ``|c - 1| < 0.02``
DOMAIN = {
    "c": (0.05, 4.0, "log", 0.0),
    "gamma": (1e-3, 10.0, "log", 0.0),
    "snr": (0.0, 5.0, "linear", 0.0),
    "a1": (-1.0, 1.0, "linear", 0.0),
    "nu": (0.0, 1.0, "above a1^2", 0.0),
    "d": (0.0, 1.0, "linear", 0.5),
    "wk2": (0.0, 2.0, "linear", 0.5),
    "wq2": (0.0, 2.0, "linear", 0.5),
    "wkwq": (-1.0, 1.0, "correlation", 0.5),
    "muwk": (-1.0, 1.0, "correlation", 0.5),
    "muwq": (-1.0, 1.0, "correlation", 0.5),
}
#: the Attention solver is slow below gamma = 1e-2; its quantities start there
ATTENTION_GAMMA_LOW = 1e-2

FUNCTIONS = {
    "sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log, "Abs": sp.Abs, "abs": sp.Abs, "sign": sp.sign,
    "Min": sp.Min, "Max": sp.Max, "min": sp.Min, "max": sp.Max, "Piecewise": sp.Piecewise,
    "Heaviside": sp.Heaviside, "atan": sp.atan, "asin": sp.asin, "acos": sp.acos,
    "sin": sp.sin, "cos": sp.cos, "tanh": sp.tanh, "arcsin": sp.asin, "erf": sp.erf,
}
CONSTANTS = {"pi": sp.pi, "E": sp.E, "True": sp.true}
_OPS = frozenset({"+", "-", "*", "/", "**", "^", "(", ")", ",", "<", ">", "<=", ">=", "&", "|"})

DEFAULT_DIGITS = 30
DEFAULT_TIMEOUT = 10.0
#: seconds for parsing one candidate (the parser's own limit, see symrmt.parsing.LIMITS)
PARSE_TIMEOUT = LIMITS["time"]
DEFAULT_SEED = 0
