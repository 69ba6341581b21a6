"""``f``, the entry-wise kernel's nonlinearity, as the public calls take it.

* :func:`as_nonlinearity` -- a preset name, an expression string in ``t``, a SymPy expression or a
  :class:`~symrmt.hermite.Nonlinearity` as a Nonlinearity (a string's is built once and cached);
* :class:`SimulationF` and :func:`simulation_f` -- the picklable NumPy function of ``f``'s text, which
  worker processes rebuild, and which names itself in a trial store (``store_key``).

This module imports only the standard library and :mod:`symrmt.cache` at import time; SymPy comes
with the first Nonlinearity built.

>>> as_nonlinearity("relu").name
'relu'
>>> simulation_f(as_nonlinearity("tanh")).store_key
'text:tanh(t)|center=False'
"""

from __future__ import annotations

from symrmt.cache import cache_dict
from symrmt.errors import ParameterError
from symrmt.hermite import Nonlinearity

__all__ = ["as_nonlinearity", "SimulationF", "simulation_f"]


def as_nonlinearity(f, center: bool = False):
    """``f`` as a :class:`~symrmt.hermite.Nonlinearity` (a preset, an expression string, a SymPy
    expression or a Nonlinearity); ``center=True`` subtracts ``a_0``.

    Raises :class:`~symrmt.errors.ParameterError` for a Python callable (the limit needs ``f`` in
    symbolic form) or text the restricted parser refuses.

    >>> as_nonlinearity("relu").name
    'relu'
    >>> as_nonlinearity("relu") is as_nonlinearity(" relu ")   # a string's Nonlinearity is built once
    True
    >>> as_nonlinearity(abs)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: f = <built-in function abs> is a Python callable; the limit needs f in symbolic form: a preset name such as 'tanh', an expression string in t such as 'erf(t)', or a SymPy expression
    """
    if isinstance(f, Nonlinearity):
        if center and not f.center:
            return Nonlinearity(f.text, center=True, timeout=f.timeout)
        return f
    if callable(f) and not hasattr(f, "free_symbols"):
        raise ParameterError(
            f"f = {f!r} is a Python callable; the limit needs f in symbolic form: a preset name such as "
            "'tanh', an expression string in t such as 'erf(t)', or a SymPy expression"
        )
    if isinstance(f, str):  # building a Nonlinearity costs up to seconds (quadratures): reuse it
        key = (f.strip(), bool(center))
        nl = _NONLINEARITIES.get(key)
        if nl is None:
            nl = _NONLINEARITIES[key] = Nonlinearity(f, center=center)
        return nl
    return Nonlinearity(f, center=center)


_NONLINEARITIES = cache_dict("symrmt.models.attention.kernel_f._NONLINEARITIES", 64)


def simulation_f(nl) -> SimulationF:
    """A callable that worker processes can rebuild from the text of the Nonlinearity ``nl``.

    Takes a :class:`~symrmt.hermite.Nonlinearity` and returns a :class:`SimulationF` holding its text
    and centering (the NumPy function is built on the first call).

    >>> simulation_f(as_nonlinearity("relu"))
    f('Max(t, 0) - 1/sqrt(2*pi)')
    """
    return SimulationF(nl.text, nl.center)


class SimulationF:
    """A picklable simulation callable for ``f``: rebuilt (once per process) from its text.

    Takes the expression text in ``t`` and ``center`` (subtract ``a_0``); calling it on an array applies
    ``f`` entry-wise.

    >>> import pickle
    >>> g = pickle.loads(pickle.dumps(SimulationF("tanh(t)", True)))
    >>> g, g.store_key
    (f('tanh(t)', centered), 'text:tanh(t)|center=True')
    """

    _cache: dict = {}

    def __init__(self, text: str, center: bool):
        self.text = text
        self.center = center

    def _fn(self):
        key = (self.text, self.center)
        fn = self._cache.get(key)
        if fn is None:
            fn = self._cache[key] = Nonlinearity(self.text, center=self.center).numpy()
        return fn

    def __call__(self, x):
        return self._fn()(x)

    @property
    def store_key(self) -> str:
        """The text that names this ``f`` in a trial store (its expression and centering).

        >>> SimulationF("tanh(t)", center=True).store_key
        'text:tanh(t)|center=True'
        """
        return f"text:{self.text}|center={self.center}"

    def __repr__(self):
        return f"f({self.text!r}{', centered' if self.center else ''})"
