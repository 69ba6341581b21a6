"""The trace engine: large-n limits of normalized traces and quadratic forms of matrix expressions.

A :class:`Model` declares dimensions, random and deterministic matrices and parameters; its
expressions are parsed by the one restricted parser (:mod:`symrmt.parsing`).

**Layers.**  The modules of this package form layers, lowest first; a module imports (at the top or
inside a function) only from its own layer and the layers before it, never a lazy name of this
package (``from symrmt.engine import Model`` loads the facade), so the engine has no import cycle
through the facade.  What a lower module needs from a higher one lives in the lower module
(exact parameter values in :mod:`~symrmt.engine.tree`, :class:`~symrmt.engine.certify.TraceLimit` in
:mod:`~symrmt.engine.certify`, the :class:`~symrmt.engine.density.Density` result and its grid below the
density solver) or is passed in as an argument (the compile step into
:func:`~symrmt.engine.hermitize_solve.guard`).

1. the language -- :mod:`~symrmt.engine.base` (dimensions, the node base), :mod:`~symrmt.engine.nodes`
   (the node classes; those the operators build are in :mod:`~symrmt.engine.node_algebra`),
   :mod:`~symrmt.engine.vectors` (vectors), :mod:`~symrmt.engine.tree`
   (differentiation, exact values, binding), :mod:`~symrmt.engine.declarations` (declarations and parsing),
   :mod:`~symrmt.engine.nonlinear_kernel` (the Gaussian equivalent of an entrywise nonlinearity,
   with a signal and weights too), :mod:`~symrmt.engine.io` (diagonal laws read from a file),
   :mod:`~symrmt.engine.given` (matrices and vectors given by their entries), :mod:`~symrmt.engine.elliptic`
   (the elliptic law), :mod:`~symrmt.engine.kernel_weights` (the Gaussian equivalent of a kernel with a
   general weight matrix);
2. the reduction and the simulation -- :mod:`~symrmt.engine.linearize` (linear pencils),
   :mod:`~symrmt.engine.blockfp` (the block fixed point), :mod:`~symrmt.engine.atomsums` (deterministic laws
   with atoms), :mod:`~symrmt.engine.plan` (the expression to a plan), :mod:`~symrmt.engine.hermitize`
   (non-normal matrices), :mod:`~symrmt.engine.woodbury_qf` (quadratic forms), :mod:`~symrmt.engine.independence`
   (forms that cross between independent samples, split); :mod:`~symrmt.engine.simulate`,
   :mod:`~symrmt.engine.trials`, :mod:`~symrmt.engine.bound_tree` (one draw and its value) and
   :mod:`~symrmt.engine.density_sim` (an expression sampled at a finite size);
3. the numbers -- :mod:`~symrmt.engine.solver` (Newton and the homotopy in the strength),
   :mod:`~symrmt.engine.atom_solver`, :mod:`~symrmt.engine.continuation` (continuation in a parameter),
   :mod:`~symrmt.engine.edge_system` (the density's edge system and its error),
   :mod:`~symrmt.engine.pencil_check` (a finite-size self-test), :mod:`~symrmt.engine.hermitize_solve`
   (the Hermitized solve);
4. certification -- :mod:`~symrmt.engine.certify` (two precisions that must agree), :mod:`~symrmt.engine.batch`
   (float64 batches), :mod:`~symrmt.engine.prove_chain` (Krawczyk boxes along a path),
   :mod:`~symrmt.engine.density` (the spectral density's result and grid), :mod:`~symrmt.engine.density_plot`
   (its figure);
5. the solvers built on it -- :mod:`~symrmt.engine.qf_solver` (quadratic forms), :mod:`~symrmt.engine.batch_qf`
   (quadratic forms on the float64 batch), :mod:`~symrmt.engine.moments`
   (moments of polynomials as a finite series), :mod:`~symrmt.engine.prove`
   (proved balls), :mod:`~symrmt.engine.prove_qf` (proved quadratic forms),
   :mod:`~symrmt.engine.given_solver` (the deterministic equivalent with given matrices), :mod:`~symrmt.engine.prove_hermitized` (the Hermitized fixed point on balls), :mod:`~symrmt.engine.resolvent_solver` (the resolvent at one point),
   :mod:`~symrmt.engine.density_features` (edges and atoms), :mod:`~symrmt.engine.density_solver`
   (spectral densities), :mod:`~symrmt.engine.density_fast` (a density's grid as one float64 batch);
6. the routes -- :mod:`~symrmt.engine.complex_limit` (complex ``z``), :mod:`~symrmt.engine.complex_qf`
   (quadratic forms at complex ``z``), :mod:`~symrmt.engine.outliers` (outliers of spiked models and their
   overlaps), :mod:`~symrmt.engine.sweep` (grids of points), :mod:`~symrmt.engine.finite_n` (the ``1/n`` term of a
   limit with real Gaussian and GOE matrices), :mod:`~symrmt.engine.spectrum_guard` (a real point inside the
   spectrum of a symmetric, indefinite matrix, refused before any solve);
7. the facade -- :mod:`~symrmt.engine.model` (:class:`Model` and its calls: limit, sweep, density).

The public names below are those of :mod:`symrmt.engine.model` (``symrmt.engine.Model``, ...), loaded on
first use: importing a module of this package (its NumPy-only simulation, :mod:`symrmt.engine.simulate`)
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
