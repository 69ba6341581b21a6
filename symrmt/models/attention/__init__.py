"""The paper's model: nonlinear Attention against ridge regression with a signal.

Its rooms: :mod:`~symrmt.hermite.kernel_terms` (SymPy: the Gaussian-equivalent kernel and
its finite-rank terms, the one definition of the model), :mod:`~symrmt.models.attention.equations`
(SymPy: the pencil, the fixed point, the Woodbury system, read from that definition), :mod:`~symrmt.models.attention.closed_forms` (the special cases with closed
forms), :mod:`~symrmt.models.attention.solver` (the compiled fixed point: Newton, continuation),
:mod:`~symrmt.models.attention.theory` and :mod:`~symrmt.models.attention.hermite_data` (the
certified limits, their Hermite inputs), :mod:`~symrmt.models.attention.prove` (proved balls),
:mod:`~symrmt.models.attention.fast` and :mod:`~symrmt.models.attention.batch` (the float64 fast
path), :mod:`~symrmt.models.attention.sampling`, :mod:`~symrmt.models.attention.trials` and
:mod:`~symrmt.models.attention.montecarlo` (Monte-Carlo at finite ``n``: one trial, the trial kinds,
the driver), :mod:`~symrmt.models.attention.params`, :mod:`~symrmt.models.attention.geometry`,
:mod:`~symrmt.models.attention.geometry_io`, :mod:`~symrmt.models.attention.pretrained` and
:mod:`~symrmt.models.attention.kernel_f` (its inputs), :mod:`~symrmt.models.attention.api`,
:mod:`~symrmt.models.attention.sweeps`, :mod:`~symrmt.models.attention.sweeps_fast` and
:mod:`~symrmt.models.attention.boundary` (the public calls;
:mod:`~symrmt.models.attention.grid_results` holds the results of the last two), and
:mod:`~symrmt.models.attention.engine_model` (the same model written in the trace engine's
language, re-exported here).

A new model is a sibling package of this one under :mod:`symrmt.models`, as
:mod:`symrmt.models.softmax` (softmax attention, which builds on this one) is.
"""


def __getattr__(name):
    if name in __all__:
        # import-time cost: the engine's expression of the model loads SymPy and the engine, only when asked for
        from symrmt.models.attention import engine_model

        return getattr(engine_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["attention_model", "E_A", "E_RR", "at_from_gram"]
