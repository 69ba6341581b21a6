"""Models written in the trace engine's language (:mod:`symrmt.engine`): a model is a
:class:`~symrmt.engine.Model` with its declarations and the expressions of its quantities."""
