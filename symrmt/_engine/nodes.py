"""Compatibility alias of :mod:`symrmt.symbolic.engine_nodes`."""

from ..symbolic.engine_nodes import *  # noqa: F401,F403
from ..symbolic.engine_nodes import DimConst, _scalar, _show  # noqa: F401
