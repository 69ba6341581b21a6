"""One module per result: it derives the result with SymPy, evaluates it at high
precision, checks it against simulation, and asserts.

Each module has ``run(quick=False, digits=...) -> symrmt.derivations.checklist.CheckList`` and
``main(argv=None)``; the top-level ``derivations/<name>.py`` scripts call ``main``.
``symrmt verify`` runs all of them.
"""

import importlib

__all__ = ["DERIVATIONS", "load_module"]

#: module names in the order ``symrmt verify`` runs them
DERIVATIONS = (
    "hermite_linearization",
    "ridge",
    "noise_only",
    "attention_limit",
    "a1_zero",
    "aligned",
    "lowrank",
    "linear_kernel",
    "ridgeless",
    "precision",
    "engine_mp",
    "engine_anisotropic_mp",
    "engine_random_features",
    "engine_ridge_bias_variance",
    "engine_subordination",
    "engine_ridge_teacher",
    "engine_spiked",
    "engine_ridge_signal",
    "engine_attention",
    "attention_grid",
    "engine_density",
    "softmax",
    "icl",
    "generalization",
    "engine_fresh_samples",
)


def load_module(name: str):
    """Import ``symrmt.derivations.<name>``."""
    return importlib.import_module(f"{__name__}.{name}")
