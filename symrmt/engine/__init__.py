"""The trace engine: large-n limits of normalized traces and quadratic forms of matrix expressions.

A :class:`Model` declares dimensions, random and deterministic matrices and parameters; its
expressions are parsed by the one restricted parser (:mod:`symrmt.parsing`).  The rooms of this
package, from text to a certified number:

* the language -- :mod:`~symrmt.engine.base` (dimensions, the node base), :mod:`~symrmt.engine.nodes`
  (the node classes; those the operators build are in :mod:`~symrmt.engine.node_algebra`),
  :mod:`~symrmt.engine.declarations` (declarations and parsing), :mod:`~symrmt.engine.nonlinear_kernel`
  (the Gaussian equivalent of an entrywise nonlinearity, with a signal and weights too),
  :mod:`~symrmt.engine.io` (diagonal laws read from a file);
* the reduction -- :mod:`~symrmt.engine.tree` and :mod:`~symrmt.engine.plan` (the expression to a
  plan), :mod:`~symrmt.engine.linearize` (linear pencils), :mod:`~symrmt.engine.blockfp` (the block
  fixed point), :mod:`~symrmt.engine.atomsums` (deterministic laws with atoms),
  :mod:`~symrmt.engine.vectors` and :mod:`~symrmt.engine.woodbury_qf` (vectors and quadratic forms),
  :mod:`~symrmt.engine.hermitize` (non-normal matrices);
* the numbers -- :mod:`~symrmt.engine.solver` (Newton and the homotopy in the strength),
  :mod:`~symrmt.engine.continuation` (continuation in a parameter), :mod:`~symrmt.engine.certify`
  (two precisions that must agree), :mod:`~symrmt.engine.qf_solver`, :mod:`~symrmt.engine.atom_solver`,
  :mod:`~symrmt.engine.hermitize_solve`, :mod:`~symrmt.engine.complex_limit` (complex ``z``),
  :mod:`~symrmt.engine.pencil_check` (a finite-size self-test), :mod:`~symrmt.engine.batch` (float64
  batches), :mod:`~symrmt.engine.sweep` (grids of points);
* spectral densities -- :mod:`~symrmt.engine.density` (:func:`~symrmt.engine.density.density`),
  :mod:`~symrmt.engine.density_solver`, :mod:`~symrmt.engine.density_sim`;
* its simulation -- :mod:`~symrmt.engine.simulate` and :mod:`~symrmt.engine.trials`.

The public names below are those of :mod:`symrmt.engine.model` (``symrmt.engine.Model``, ...), loaded on
first use: importing a room of this package (its NumPy-only simulation, :mod:`symrmt.engine.simulate`)
does not import SymPy.
"""

__all__ = [
    "Model", "TraceLimit", "ModelError", "bind", "differentiate", "walk", "Dim", "Gaussian", "GOE", "Identity",
    "Diagonal", "MatSum", "MatProduct", "Scaled", "Transpose", "Inverse", "Const", "Trace", "Diff", "ScalarSum",
    "ScalarProduct", "Power", "trace", "inv", "sqrt", "diff", "kernel", "kernel_coefficients",
]


def __getattr__(name):
    if name in __all__:
        from symrmt.engine import model

        value = getattr(model, name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
