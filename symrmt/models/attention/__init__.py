"""The paper's model: nonlinear Attention against ridge regression with a signal.

The model is defined once in SymPy (:mod:`~symrmt.models.attention.equations`); its certified limits are in
:mod:`~symrmt.models.attention.theory`, its simulations in :mod:`~symrmt.models.attention.montecarlo` and
its public calls in :mod:`~symrmt.models.attention.api`.  docs/architecture.md maps the other modules.
"""


def __getattr__(name):
    if name in __all__:
        # import-time cost: the engine's expression of the model loads SymPy and the engine, only when asked for
        from symrmt.models.attention import engine_model

        return getattr(engine_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["attention_model", "E_A", "E_RR", "at_from_gram"]
