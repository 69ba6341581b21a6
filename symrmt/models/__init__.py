"""Models written in the trace engine's language (:mod:`symrmt.engine`): a model is a
:class:`~symrmt.engine.Model` with its declarations and the expressions of its quantities.

Each model is a package of its own: :mod:`symrmt.models.attention` is the paper's model,
:mod:`symrmt.models.softmax` the softmax attention built on it; a new model is a sibling of them
(``docs/architecture.md``)."""

__all__: list[str] = []
