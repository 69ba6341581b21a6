"""The trace engine: large-n limits of normalized traces and quadratic forms of matrix expressions.

A :class:`Model` declares dimensions, random and deterministic matrices and parameters; its
expressions are parsed by the one restricted parser (:mod:`symrmt.parsing`).

**Subpackages.**  ``lang`` (the expression language), ``laws`` (one module per law and their registry),
``kernels`` (Gaussian equivalents of kernels), ``reduce`` (pencils and the block fixed point, SymPy),
``solve`` (the numbers and their certification), ``prove`` (balls), ``density`` (spectral densities),
``simulate`` (Monte-Carlo, NumPy only), ``routes`` (complex points, sweeps, outliers, the ``1/n`` term);
``declarations`` and ``model`` build on them all.

**Layers.**  The modules of this package form layers, lowest first; a module imports (at the top or
inside a function) only from its own layer and the layers before it, never a lazy name of this
package (``from symrmt.engine import Model`` loads the facade), so the engine has no import cycle
through the facade.  What a lower module needs from a higher one lives in the lower module
(exact parameter values in :mod:`~symrmt.engine.lang.tree`, :class:`~symrmt.engine.solve.certify.TraceLimit` in
:mod:`~symrmt.engine.solve.certify`, the :class:`~symrmt.engine.density.result.Density` result and its grid below the
density solver) or is passed in as an argument (the compile step into
:func:`~symrmt.engine.solve.hermitized.guard`).

1. the language -- :mod:`~symrmt.engine.lang.node` (dimensions, the node base), :mod:`~symrmt.engine.lang.matrices`
   (the node classes; those the operators build are in :mod:`~symrmt.engine.lang.algebra`),
   :mod:`~symrmt.engine.lang.vectors` (vectors), :mod:`~symrmt.engine.lang.tree`
   (differentiation, exact values, binding), :mod:`~symrmt.engine.declarations` (declarations and parsing),
   :mod:`~symrmt.engine.kernels.inner_product` (the Gaussian equivalent of an entrywise nonlinearity,
   with a signal and weights too), :mod:`~symrmt.engine.laws` (every module of the package: one per law,
   with its sampler, and the registry of laws by keyword; a new law module joins this layer by itself),
   :mod:`~symrmt.engine.kernels.weights` (the Gaussian equivalent of a kernel with a
   general weight matrix);
2. the reduction and the simulation -- :mod:`~symrmt.engine.reduce.linearize` (linear pencils),
   :mod:`~symrmt.engine.reduce.merge` (the unknowns of a fixed point that it fixes exactly, substituted),
   :mod:`~symrmt.engine.reduce.fixed_point` (the block fixed point), :mod:`~symrmt.engine.reduce.atoms` (deterministic laws
   with atoms), :mod:`~symrmt.engine.reduce.plan` (the expression to a plan), :mod:`~symrmt.engine.reduce.hermitize`
   (non-normal matrices), :mod:`~symrmt.engine.reduce.woodbury` (quadratic forms), :mod:`~symrmt.engine.reduce.independence`
   (forms that cross between independent samples, split); :mod:`~symrmt.engine.simulate.monte_carlo`,
   :mod:`~symrmt.engine.simulate.trials`, :mod:`~symrmt.engine.simulate.evaluate` (one draw and its value) and
   :mod:`~symrmt.engine.density.histogram` (an expression sampled at a finite size);
3. the numbers -- :mod:`~symrmt.engine.solve.newton` (Newton and the homotopy in the strength),
   :mod:`~symrmt.engine.solve.atoms`, :mod:`~symrmt.engine.solve.continuation` (continuation in a parameter),
   :mod:`~symrmt.engine.solve.edge` (the density's edge system and its error),
   :mod:`~symrmt.engine.reduce.pencil_check` (a finite-size self-test), :mod:`~symrmt.engine.solve.hermitized`
   (the Hermitized solve), :mod:`~symrmt.engine.solve.given_dd` (the double-double and triple-double
   refinements of a given-matrix pencil), :mod:`~symrmt.engine.solve.expansions` (their float64 expansions),
   :mod:`~symrmt.engine.solve.given_flint` (its python-flint refinement),
   :mod:`~symrmt.engine.solve.given_blocks` (its Woodbury inner matrix inverted block-triangularly);
4. certification -- :mod:`~symrmt.engine.solve.certify` (two precisions that must agree), :mod:`~symrmt.engine.solve.batch`
   (float64 batches), :mod:`~symrmt.engine.prove.chain` (Krawczyk boxes along a path),
   :mod:`~symrmt.engine.density.result` (the spectral density's result and grid), :mod:`~symrmt.engine.density.plot`
   (its figure);
5. the solvers built on it -- :mod:`~symrmt.engine.solve.quadratic_forms` (quadratic forms), :mod:`~symrmt.engine.solve.batch_qf`
   (quadratic forms on the float64 batch), :mod:`~symrmt.engine.solve.batch_axis` (the float64 batch continued along
   a grid axis), :mod:`~symrmt.engine.solve.moments`
   (moments of polynomials as a finite series), :mod:`~symrmt.engine.prove.trace`
   (proved balls), :mod:`~symrmt.engine.prove.quadratic_forms` (proved quadratic forms),
   :mod:`~symrmt.engine.solve.given` (the deterministic equivalent with given matrices), :mod:`~symrmt.engine.prove.hermitized` (the Hermitized fixed point on balls), :mod:`~symrmt.engine.density.resolvent` (the resolvent at one point),
   :mod:`~symrmt.engine.density.features` (edges and atoms), :mod:`~symrmt.engine.density.solver`
   (spectral densities), :mod:`~symrmt.engine.density.newton_step` (one compiled Newton step of a density's
   fixed point), :mod:`~symrmt.engine.density.fast` (a density's grid as one float64 batch);
6. the routes -- :mod:`~symrmt.engine.routes.complex_limit` (complex ``z``), :mod:`~symrmt.engine.routes.complex_qf`
   (quadratic forms at complex ``z``), :mod:`~symrmt.engine.routes.outliers` (outliers of spiked models and their
   overlaps), :mod:`~symrmt.engine.routes.sweep` (grids of points), :mod:`~symrmt.engine.routes.finite_n` (the ``1/n`` term of a
   limit with real Gaussian and GOE matrices), :mod:`~symrmt.engine.solve.spectrum_guard` (a real point inside the
   spectrum of a symmetric, indefinite matrix, refused before any solve);
7. the facade -- :mod:`~symrmt.engine.model` (:class:`Model` and its calls: limit, sweep, density).

The public names below are those of :mod:`symrmt.engine.model` (``symrmt.engine.Model``, ...), loaded on
first use: importing a module of this package (its NumPy-only simulation, :mod:`symrmt.engine.simulate.monte_carlo`)
does not import SymPy.
"""

__all__ = [
    "Model", "TraceLimit", "ModelError", "bind", "differentiate", "walk", "Dim", "Gaussian", "GOE", "Identity",
    "Diagonal", "MatSum", "MatProduct", "Scaled", "Transpose", "Inverse", "Const", "Trace", "Diff", "ScalarSum",
    "ScalarProduct", "Power", "trace", "inv", "sqrt", "diff", "kernel", "kernel_coefficients",
]


def __getattr__(name):
    if name in __all__:
        # import-time cost: the Monte-Carlo trials load no SymPy or mpmath
        from symrmt.engine import model

        value = getattr(model, name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
