"""Compatibility alias of :mod:`symrmt.symbolic.engine_model`."""

from ..symbolic.engine_model import *  # noqa: F401,F403
from ..symbolic.engine_model import Model, _number, _parse  # noqa: F401
