r"""The general trace engine: from an expression alone to a certified large-n limit.

A :class:`Model` declares dimensions (ratios to ``n``), independent Gaussian and GOE
matrices, identities, diagonal matrices with a finite spectral law and scalar
parameters; an expression in them (``+ - * / @ .T inv() sqrt()``, normalized
``trace()`` and ``diff(., param)``) goes through the package's restricted parser.
:meth:`Model.limit` then

1. normalizes it (every Gaussian is ``sqrt(n)`` times a matrix of O(1) norm; the
   powers of ``n`` must cancel, else :class:`ModelError` says which do not);
2. linearizes every trace into a reduced linear pencil by recursive rules
   (:mod:`symrmt.engine.reduce.linearize`), splits the atoms of diagonal laws, and checks
   each pencil against direct evaluation at a finite size
   (:mod:`symrmt.engine.reduce.pencil_check`);
3. writes the block fixed point ``H = (L_0 - eta(H))^{-1}``, its Jacobian and its
   parameter derivatives in SymPy (:mod:`symrmt.engine.reduce.fixed_point`) and compiles
   them through the package's compile step and code cache;
4. solves by homotopy in the strength of the random part from ``H = L_0^{-1}``,
   polishes in mpmath, differentiates implicitly for ``diff``, and certifies the
   value at two working precisions (:mod:`symrmt.engine.solve.newton`,
   :mod:`symrmt.engine.solve.certify`), with sanity bounds such as
   ``0 < tau <= 1/gamma`` for the resolvent of a positive semi-definite matrix.

Public names (stable): :class:`Model`, :class:`TraceLimit`, the expression-tree
classes of :mod:`symrmt.engine.lang.matrices` (``Gaussian``, ``GOE``, ``Identity``,
``Diagonal``, ``MatSum``, ``MatProduct``, ``Scaled``, ``Transpose``, ``Inverse``,
``Const``, ``Trace``, ``Diff``, ``ScalarSum``, ``ScalarProduct``, ``Power``, ``Dim``),
the tree utilities :func:`bind` (numeric values and sizes, for a NumPy simulation),
:func:`differentiate` (exact ``Diff`` removal) and :func:`walk`, and :class:`ModelError`.

The same expressions can be built in Python with the operators and ``trace``, ``inv``,
``sqrt``, ``diff`` of this module, :meth:`Model.param`, :meth:`Model.size` and
:meth:`Model.identity`.

Examples
--------
>>> m = Model()
>>> m.dim("p", "c*n")
Dim('p', c)
>>> Z = m.gaussian("Z", "p", "n")
>>> n, gamma = m.size("n"), m.param("gamma")
>>> e = trace(inv(Z.T @ Z / n + gamma * m.identity("n")))
>>> e == m.parse("trace(inv(Z.T*Z/n + gamma*I(n)))")
True
>>> ridge = "-gamma**2*diff(trace(inv(Z.T*Z/n + gamma*I(n))), gamma)"
>>> print(m.limit(ridge, at={"c": "1/2", "gamma": "1/5"}, digits=30))
0.541499417001748994170020404927
>>> print(m.equations("trace(inv(Z.T*Z/n + gamma*I(n)))")[0].latex())  # doctest: +ELLIPSIS
H = \left(\left[\begin{matrix}H_{2,2} - 1 & 0\\0 & H_{1,1} c - \gamma...
>>> m.limit("trace(inv(Z.T*Z + gamma*I(n)))", at={"c": "1/2", "gamma": 1})
Traceback (most recent call last):
...
symrmt.errors.ModelError: the terms of a sum have different orders in n (n^1 and n^0); the limit would not be O(1)
-- check the scalings (a missing /n or /sqrt(n)?)
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy as sp

from symrmt.cache import cached
from symrmt.core.budget import solve_budget, stage, paused
from symrmt.engine import declarations as _model
from symrmt.engine.lang.matrices import (  # noqa: F401
    GOE, Const, Diagonal, Diff, Dim, Gaussian, Identity, Inverse, MatProduct, MatSum, ModelError, Power,
    ScalarProduct, ScalarSum, Scaled, Trace, Transpose, walk,
)
from symrmt.engine.declarations import check_expanded, inv, sqrt  # noqa: F401
from symrmt.engine.density.result import grid_points
from symrmt.engine.density.solver import compute
from symrmt.engine.lang.tree import bind, differentiate, exact_value  # noqa: F401
from symrmt.engine.solve.certify import TraceLimit, admitted, certified_limit
from symrmt.engine.solve.continuation import along_curve
from symrmt.engine.kernels.inner_product import kernel, kernel_coefficients  # noqa: F401  (the Gaussian-equivalent kernel)
from symrmt.engine.lang.vectors import gram_values, vectors_of, has_vectors
from symrmt.engine.laws.given import has_given
from symrmt.engine.prove.quadratic_forms import prove_qf
from symrmt.engine.prove.trace import prove_trace
from symrmt.engine.reduce import linearize as lin
from symrmt.engine.reduce.fixed_point import tex_symbols, tex_name
from symrmt.engine.reduce.independence import crosses, split_independent
from symrmt.engine.reduce.linearize import EPS_SHIFT
from symrmt.engine.reduce.pencil_check import checked, self_test
from symrmt.engine.reduce.plan import prepare
from symrmt.engine.reduce.woodbury import prepare_qf
from symrmt.engine.routes.complex_limit import as_complex, complex_limit
from symrmt.engine.routes.complex_qf import complex_qf_limit
from symrmt.engine.routes.finite_n import check_covered, finite_size
from symrmt.engine.routes.outliers import outliers
from symrmt.engine.routes.sweep import sweep
from symrmt.engine.solve.edge import DensityError
from symrmt.engine.solve.given import given_limit
from symrmt.engine.solve.moments import over_cap_polynomial, polynomial_limit
from symrmt.engine.solve.quadratic_forms import self_test_plan, certified_qf_limit
from symrmt.engine.solve.spectrum_guard import check as inside_spectrum
from symrmt.parsing import LIMITS, check_digits
from symrmt.progress import progress_bar
from symrmt.errors import ParameterError, SymrmtError
from symrmt.proofs.arb import require_flint, ProofError, check_radius, complex_ok

#: the language's functions, for expressions built in Python
trace = Trace
diff = Diff


__all__ = [
    "Model", "TraceLimit", "ModelError", "bind", "differentiate", "walk", "Dim", "Gaussian", "GOE", "Identity",
    "Diagonal", "MatSum", "MatProduct", "Scaled", "Transpose", "Inverse", "Const", "Trace", "Diff", "ScalarSum",
    "ScalarProduct", "Power", "trace", "inv", "sqrt", "diff", "kernel", "kernel_coefficients",
]


class Model(_model.Model):
    """A model of the trace engine: declarations, parsing, and the certified limit.

    See :mod:`symrmt.engine.lang.matrices` for the expression language.

    Examples
    --------
    >>> m = Model()
    >>> m.dim("p", "c*n")
    Dim('p', c)
    >>> Z = m.gaussian("Z", "p", "n")
    >>> r = m.limit("trace(inv(Z.T*Z/n + gamma*I(n)))", at={"c": "1/2", "gamma": "1/5"}, digits=30)
    >>> print(r)
    3.10849528301415095283016509441
    """

    def __init__(self):
        super().__init__()
        self._plans = {}
        self._split = set()  # trees written by _split_independent from a checked expression

    def plan(self, expr, *, split_atoms=None):
        """The symbolic plan (pencils, systems, formula) of a scalar expression (memoized);
        ``split_atoms``: split diagonal laws of up to that many atoms into one block per atom (default
        ``SPLIT_ATOMS``; the density path splits up to ``MAX_SPLIT_ATOMS``)."""
        expr = self.expr(expr)
        if expr not in self._split:  # a tree split across samples was counted before it was split
            check_expanded(expr)  # a tree built in Python with shared parts is counted written out too
        if self.__dict__.get("given_sizes"):
            if has_given(expr):  # symrmt/engine/solve/given.py solves these without a symbolic plan
                raise ModelError("an expression with a matrix or vector given by its entries has no symbolic plan "
                                 "(no --latex, equations, sweep or density); Model.limit gives its deterministic "
                                 "equivalent")
        key = expr if split_atoms is None else (expr, split_atoms)
        if key not in self._plans and _has_vectors(expr):
            self._plans[key] = self_test_plan(prepare_qf(expr))
        if key not in self._plans:
            plan = prepare(expr, split_atoms)
            for t in plan.traces:  # every pencil is self-tested before it is shown or used
                checked(t.pencil, t.matrix)
            self._plans[key] = plan
        return self._plans[key]

    def pencil(self, expr, symmetric: bool = False):
        """The linear pencils of the traces in ``expr`` (a list of :class:`PencilView`).

        With ``symmetric=True`` each trace of a symmetric matrix gets the symmetric realization
        ``[[0, Q], [Q^T, 0]]`` of :func:`symrmt.engine.reduce.linearize.symmetrize` (self-tested);
        the solver uses the smaller pencil, whose fixed point carries the same information.
        """
        views = Views(PencilView(t) for t in self.plan(expr).traces)
        if symmetric:
            for view in views:
                if not lin.is_symmetric(view.trace.matrix):
                    raise ModelError("symmetric=True needs a symmetric matrix inside each trace")
                sym = lin.symmetrize(view.pencil)
                self_test(sym, view.trace.matrix)
                view.pencil, view.size = sym, sym.size
        return views

    def woodbury(self, expr):
        """The Woodbury (Schur) systems of the quadratic forms in ``expr``: a list of
        :class:`~symrmt.engine.reduce.woodbury.FormPlan` (``.S``, ``.e``, ``.f``, ``.latex()``)."""
        return Views(getattr(self.plan(expr), "forms", []))

    def equations(self, expr):
        """The fixed-point systems of the traces in ``expr`` (a list of :class:`EquationsView`)."""
        return Views(EquationsView(t) for t in self.plan(expr).traces)

    def limit(self, expr, at: dict, digits: int = 15, prove: bool = False, n: int | None = None) -> TraceLimit:
        """The certified ``n -> oo`` limit of a scalar expression at the parameter values ``at``, or with ``n``
        the limit plus its ``1/n`` term (real Gaussian and GOE matrices, :mod:`symrmt.engine.routes.finite_n`).

        Parameters
        ----------
        expr : str or ScalarNode
        at : dict
            Parameter name -> value (int, Fraction, or a decimal/fraction string such as ``"1/5"``); one
            parameter may be complex (``complex``, or a text such as ``"0.5+0.01j"``): the traces are then
            solved at complex ``z`` (:mod:`symrmt.engine.routes.complex_limit`), the Stieltjes branch checked.
        digits : int
            Significant digits to certify (two solves at different working precisions must agree).
        prove : bool
            Also prove the value: ``.ball`` (a ``flint.arb`` ball proved to contain the limit),
            ``.balls`` (``{"value": ball, "traces": [...]}``) and ``.branch``
            (:mod:`symrmt.engine.prove.trace`; needs python-flint).  ``"branch"``: also the chain of
            Krawczyk boxes along the homotopy for systems of any size (by default only up to 32 unknowns).
        n : int, optional
            A finite size (at least :data:`symrmt.engine.routes.finite_n.MIN_N`, every size ``ratio * n`` an
            integer): ``value`` is then ``limit + correction/n``, with ``.limit`` (the limit), ``.correction``
            (the coefficient of ``1/n``, certified to ``digits`` as the limit is) and ``.n``.  Refused with a
            :class:`ModelError` where the term is not covered (vectors, kernels, non-normal matrices solved by
            Hermitization, many atoms, ``diff``, complex values, ``prove``).

        Returns
        -------
        TraceLimit

        Raises
        ------
        ModelError
            The expression is not in the grammar or its limit is not O(1).
        symrmt.errors.SolverError
            The homotopy or Newton failed (the message carries the residual), the digits could
            not be certified (``PrecisionError``), a sanity bound fails (``BranchError``), or the solve
            ran past ``LIMITS["solve_seconds"]`` (:class:`symrmt.core.budget.SolveTimeLimit`, naming the stage).
        """
        if n is None:
            with solve_budget(LIMITS["solve_seconds"], "the limit"):
                return self._limit(expr, at, digits, prove, stage)

        if prove:
            raise ModelError("prove is not available with n (the 1/n term is certified at two precisions, not proved)")
        expr = self.expr(expr)
        check_covered(self, expr, n)
        with solve_budget(LIMITS["solve_seconds"], "the limit and its 1/n term"):
            result = self._limit(expr, at, digits, False, stage)
            with stage("the 1/n term"):
                return finite_size(self.plan(expr), result, n, digits)

    def _split_independent(self, expr, at):
        """``(expr, notes)``: the quadratic forms of ``expr`` that cross between independent random objects
        split at the point ``at`` (:mod:`symrmt.engine.reduce.independence`; the inner products enter exactly)."""
        if not _has_vectors(expr) or not isinstance(at, Mapping):
            return expr, []

        if not crosses(expr):
            return expr, []

        gram = gram_values(self.vectors(), {str(k): exact_value(v, str(k)) for k, v in at.items() if "." in str(k)})
        out, notes = split_independent(expr, self.vectors(), gram)
        if notes:
            self._split.add(out)
        return out, notes

    def _limit(self, expr, at, digits, prove, stage):
        digits = check_digits(digits)
        if self.__dict__.get("given_sizes"):  # matrices or vectors given by their entries: symrmt/engine/laws/given.py
            if has_given(self.expr(expr)):
                if prove:
                    raise ModelError("prove=True is not available with given matrices (their value is certified "
                                     "at two precisions)")
                return given_limit(self, expr, at, digits)
        if prove:
            require_flint()
        expr = self.expr(expr)
        check_expanded(expr)
        norm_notes = _norms_not_given(expr, at)
        expr, split_notes = self._split_independent(expr, at)

        if over_cap_polynomial(expr):  # a polynomial moment: a finite series, no fixed point to cap
            if prove:
                raise ModelError("prove is not available for a polynomial moment summed as a series (its "
                                 "fixed point has more unknowns than LIMITS['unknowns']); the value is exact")
            if not isinstance(at, Mapping):
                raise ModelError(f"at must be a dict of parameter values, got {type(at).__name__}")
            known = {k for k in self.symbols if k != "n"}
            extra = sorted(str(k) for k in at if str(k) not in known)
            if extra:
                raise ModelError(f"unknown parameter {', '.join(extra)} in at= (the expression's parameters: "
                                 f"{', '.join(sorted(known)) or 'none'})")
            with stage("the moment series"):
                return polynomial_limit(expr, {str(k): exact_value(v, str(k)) for k, v in at.items()}, digits)
        with stage("the plan (pencils and fixed-point systems)"):
            plan = self.plan(expr)
        if not isinstance(at, Mapping):
            raise ModelError(f"at must be a dict of parameter values, got {type(at).__name__}")
        known = {p.name for p in plan.params} | {k for k in self.symbols if k != "n"}
        extra = sorted(str(k) for k in at if str(k) not in known and "." not in str(k))
        if extra:  # a typo such as gama=1 must not be ignored
            raise ModelError(f"unknown parameter {', '.join(extra)} in at= (the expression's parameters: "
                             f"{', '.join(sorted(known)) or 'none'})", unknown=extra, known=known)
        values, complex_at = {}, []
        for k, v in at.items():
            cv = as_complex(v, str(k))
            if cv is not None and cv.im != 0:
                complex_at.append((str(k), cv))
                continue
            values[str(k)] = exact_value(v, str(k)) if cv is None else cv.re
        missing = [p.name for p in plan.params if p.name not in values and p.name not in dict(complex_at)]
        if missing:
            raise ModelError(f"no value given for {', '.join(missing)} (pass them in at=...)", missing=missing,
                             known=known)
        if len(complex_at) == 1:  # the checks of every route that need no complex value: sizes, coefficients
            self.check_ratios(values)
            admitted(plan, values, complex_at=complex_at[0][0])
        if complex_at:  # a complex value of one parameter: symrmt/engine/routes/complex_limit.py
            if len(complex_at) > 1:
                raise ModelError("a complex value is supported for one parameter at a time")
            if any(p.is_positive for p in plan.params if p.name == complex_at[0][0]):
                raise ModelError(f"{complex_at[0][0]} is a dimension ratio and must be positive, not complex")
            for p in plan.params:
                if p.is_positive and p.name in values and not values[p.name] > 0:
                    raise ModelError(f"{p.name} is a dimension ratio and must be positive, got {values[p.name]}")
            if hasattr(plan, "forms"):  # vectors: quadratic forms at complex z (symrmt/engine/routes/complex_qf.py)
                if prove:
                    raise ModelError("--prove at a complex value is available for traces; an expression with vectors "
                                     "or quadratic forms at a complex value is certified at two precisions, not proved")
                return complex_qf_limit(plan, values, complex_at[0][0], complex_at[0][1], digits, self.vectors())
            if any("." in k for k in values):
                gram_values(self.vectors(), values)  # an undeclared name or a non-PSD Gram matrix is refused
            return complex_limit(plan, values, complex_at[0][0], complex_at[0][1], digits, prove=bool(prove))
        for p in plan.params:
            if p.is_positive and not values[p.name] > 0:
                raise ModelError(f"{p.name} is a dimension ratio and must be positive, got {values[p.name]}")
        self.check_ratios(values)

        # every real-valued route (traces, quadratic forms, their sums, sweeps, proofs) passes here: real,
        # finite coefficients, and the non-normal guard (a non-normal inverse is tested, its resolvent's trace
        # Hermitized, anything else refused)
        plan = admitted(plan, values)

        with stage("the spectrum check (a real point inside the spectrum of a symmetric, indefinite matrix)"):
            inside_spectrum(self, expr, values)  # refused at once: a resolvent there has no real limit
        if hasattr(plan, "forms"):
            result = certified_qf_limit(plan, values, digits, self.vectors())
            # forms split across independent samples (reduce/independence.py); random vectors replaced by their mean 0
            # (woodbury_qf.zero_mean_forms)
            result.notes = norm_notes + split_notes + list(plan.notes)
            result.hermitized = [t.index for t in plan.traces if getattr(t, "hermitized", False)]
            if prove:
                with paused():  # the proof has its own bounds (boxes, steps)
                    tb = prove_qf(plan, values, digits, result.solvers, self.vectors(),
                                  chain=True if prove == "branch" else None)
                result.ball, result.branch, result.branch_notes = tb.value, tb.branch, list(tb.notes)
                result.balls = {"value": tb.value, "traces": list(tb.traces), "forms": list(tb.forms)}
            return _radius_kept(result, digits)
        if any("." in k for k in values):
            if not self.vectors():
                raise ModelError(f"{sorted(k for k in values if '.' in k)[0]}: the model declares no vectors, so it "
                                 "has no inner products")

            gram_values(self.vectors(), values)  # an undeclared name or a non-PSD Gram matrix is refused here too
        fields = certified_limit(plan, values, digits)
        solvers, certificate, hermitized = fields.pop("solvers"), fields.pop("certificate"), fields.pop("hermitized")
        result = TraceLimit(**fields)
        result.solvers = solvers  # the checked homotopy starts (symrmt.engine.prove reuses them)
        result.certificate, result.hermitized = certificate, hermitized
        if prove:
            with paused():  # the proof has its own bounds (boxes, steps)
                tb = prove_trace(plan, values, digits, getattr(result, "solvers", None),
                                 chain=True if prove == "branch" else None)
            result.ball, result.branch = tb.value, tb.branch
            result.branch_notes = list(tb.notes)
            result.balls = {"value": tb.value, "traces": list(tb.traces)}
        return _radius_kept(result, digits)

    def outliers(self, expr, over: str, at=None, digits: int = 15) -> list:
        """The outliers of a spiked model: the real poles of the quadratic form ``expr``
        (``x.T*inv(A + a*z*I)*x``, ``A`` symmetric, e.g. ``u.T*inv(M - z*I(n))*u``) found on the grid
        ``over = "z=LO:HI:K"`` of its parameter ``z``, each with the residue of ``expr`` there and the eigenvector
        overlap ``|<x/|x|, v>|^2`` (a list of :class:`symrmt.engine.routes.outliers.Outlier`, certified to ``digits``).
        ``at``: the other parameters (inner products as ``"a.b"``).  See :mod:`symrmt.engine.routes.outliers`.

        >>> m = Model(); _ = m.goe("G", "n"); _ = m.vector("u", "n")
        >>> m.outliers("u.T*inv(G/sqrt(n) + 3*u*u.T - z*I(n))*u", "z=2.1:5:30", at={"u.u": 1}, digits=12)
        [Outlier(location=3.33333333333, residue=-0.888888888889, overlap=0.888888888889)]
        """
        return outliers(self, expr, over, at=at, digits=check_digits(digits))

    def curve(self, expr, over: dict, at: dict | None = None, digits: int = 15, progress: bool | None = None) -> list:
        """Certified limits of ``expr`` along one parameter: ``over = {name: values}`` (in the order given),
        the other parameters fixed by ``at``; a list of :class:`TraceLimit`, one per value, each certified
        exactly as :meth:`limit` certifies one point.

        What a curve saves is each point's start: the fixed point is followed from the previous point in
        the parameter (two paths, coarse and fine, must agree, and the end point must pass the branch
        checks; :func:`symrmt.engine.solve.continuation.along_curve`) instead of a fresh homotopy; a point
        where that fails starts afresh.  Ordered values (a monotone grid) make the steps short.  A progress
        bar appears on stderr once a curve has run a few seconds (``progress=None``; ``True`` always, ``False`` never).

        Raises what :meth:`limit` raises, for the first point that fails (named in the message), and
        :class:`ModelError` when ``over`` does not name exactly one parameter.

        >>> m = Model()
        >>> _ = m.gaussian("Z", "n", "n")
        >>> [str(r) for r in m.curve("trace(inv(Z.T*Z/n + gamma*I(n)))", over={"gamma": [1, 2, 3]}, digits=12)]
        ['0.61803398875', '0.366025403784', '0.263762615826']
        """
        if not isinstance(over, Mapping) or len(over) != 1:
            raise ModelError("over must name exactly one parameter and its values, e.g. over={'gamma': [1, 2]}")
        ((name, values),) = over.items()
        values = list(values)
        at = dict(at or {})
        if str(name) in {str(k) for k in at}:
            raise ModelError(f"{name} is given both in over= and in at=")
        if len(values) > LIMITS["points"]:
            raise ModelError(f"a curve takes at most LIMITS['points'] = {LIMITS['points']} values, got {len(values)}")
        expr = self.expr(expr)  # parsed once for the whole curve
        out = []
        with along_curve(), progress_bar(len(values), f"curve in {name}", enabled=progress) as bar:
            for v in values:
                try:
                    out.append(self.limit(expr, {**at, str(name): v}, digits))
                except SymrmtError as exc:
                    if exc.args and isinstance(exc.args[0], str):  # the point named, the class and data kept
                        exc.args = (f"at {name} = {v}: {exc.args[0]}", *exc.args[1:])
                    raise
                bar.update()
        return out

    def sweep(self, expr, grid, at=None, certify: int = 0, seed: int = 0, on_error: str = "raise"):
        """The limit of ``expr`` on the product grid of ``grid`` (``{name: values, ...}``, axes in that
        order), the other parameters fixed by ``at``, by the float64 batched path: every point checked,
        a failing point recomputed by the certified mpmath path and marked in ``.fallback``; ``certify=k``
        re-solves ``k`` random points at 30 digits (``.certified_gap``).  Returns a
        :class:`symrmt.engine.routes.sweep.TraceSweep` (``.values``, ``.to_numpy()``, ``.to_pandas()``).
        A point the certified path refuses too raises its error with the point named
        (``on_error="raise"``), or, with ``on_error="mark"``, is marked in ``.failed`` (its reason in
        ``.errors``, its value NaN) and the sweep goes on; a value outside the float64 normal range
        makes ``.values`` an object array holding it as an mpmath number.

        >>> m = Model()
        >>> m.dim("p", "c*n")
        Dim('p', c)
        >>> Z = m.gaussian("Z", "p", "n")
        >>> r = m.sweep("trace(inv(Z.T*Z/n + gamma*I(n)))", grid={"gamma": [1, 2]}, at={"c": 1})
        >>> [f"{v:.12f}" for v in r.values], r.fallback.tolist()  # (sqrt(g^2 + 4g) - g)/(2g)
        (['0.618033988750', '0.366025403784'], [False, False])
        """
        return sweep(self, expr, grid, at=at, certify=certify, seed=seed, on_error=on_error)

    def density(self, matrix, x, at=None, digits: int = 15, edges: bool = True, atoms: bool = True, certify=None,
                fast: bool = False):
        """The limiting spectral density of a symmetric matrix expression on the points ``x``
        (a :class:`symrmt.engine.density.result.Density`: values, support edges, atoms; see :mod:`symrmt.engine.density.solver`).

        ``x``: a sequence of points, or the text ``"LO:HI:K"`` of ``symrmt density --over``
        (:func:`symrmt.engine.density.result.grid_points`); ``certify=k``: certify every ``k``-th point only, the
        others are float64 values, checked (status ``"float"``); ``fast=True``: every point in one float64
        batch (:mod:`symrmt.engine.density.fast`), each checked (residual, conditioning, branch; status
        ``"float"``, at least 12 correct digits; a point that fails only the conditioning, next to an edge,
        refined by two corrections with its residual at 40 digits and kept when they show 14 digits), a point
        failing a check certified (status ``"ok"``); the support and atoms as without ``fast``."""

        digits = check_digits(digits)
        if isinstance(x, str):  # the CLI's grid 'LO:HI:K' (or 'x=LO:HI:K'), read as --over reads it
            name, _, spec = x.rpartition("=")
            xs = grid_points(spec, "--over", name.strip() or "x")
        else:
            xs = list(x)
        if not xs:
            raise ParameterError("x: give at least one point")
        if certify is not None and (not isinstance(certify, int) or certify < 1):
            raise ParameterError(f"certify must be a positive integer (every k-th point certified), got {certify!r}")
        if fast and certify is not None:
            raise ParameterError("give either fast=True (every point float64, checked) or certify=k, not both")
        try:
            return compute(self, matrix, xs, at or {}, digits=digits, edges=edges, atoms=atoms,
                           label=matrix if isinstance(matrix, str) else None, certify=certify, fast=bool(fast))
        except ZeroDivisionError as exc:  # a singular linear system the solver did not turn into a reason
            raise DensityError(f"the density solver met a singular linear system ({exc}): the fixed point's "
                               "Jacobian is singular on its path (an edge or an atom of the spectrum, or a pencil "
                               "whose deterministic part is singular)") from None
        except OverflowError as exc:  # a float stage met a number outside float64 (a constant such as 1e200)
            raise DensityError(f"the density's float64 stage overflowed ({exc}): a constant or a value of the "
                               "expression lies outside the float64 range; rescale the matrix (the density of "
                               "a*M at x is the density of M at x/a, divided by |a|)") from None


def _norms_not_given(expr, at) -> list:
    """The notes on the deterministic vectors of ``expr`` whose squared norm ``a.a`` is not in ``at`` (an
    inner product not given is 0, so such a vector is the zero vector).

    >>> _norms_not_given(None, {})
    []
    """
    if expr is None or not isinstance(at, Mapping):
        return []
    given = {str(k).replace(" ", "") for k in at}
    return [f"{v}.{v} (the squared norm of the vector {v}) is not given: it is taken as 0, so {v} is the zero "
            f"vector; give it in --at (at=), e.g. {v}.{v}=1"
            for v, x in sorted(vectors_of(expr).items()) if not x.random and f"{v}.{v}" not in given]


def _radius_kept(result, digits: int):
    """``result``, after checking the promise of its proved ball (a trace or a quadratic form at a real point; a
    complex point's ball is checked by :func:`symrmt.engine.prove.trace.prove_complex_trace`, after its conjugation):
    its radius at most ``10^-digits`` of its midpoint's modulus (absolute for a real ball holding 0); else
    :class:`symrmt.proofs.arb.ProofError` (exit 3), never a wider ball."""
    ball = getattr(result, "ball", None)
    if ball is None:
        return result

    if isinstance(ball, require_flint().acb):
        if not complex_ok(ball, digits):
            raise ProofError(f"the proved ball {ball.str(10)} is wider than 1e-{digits} of its modulus; no ball is "
                             "returned")
    else:
        check_radius(ball, digits, "the proved limit")
    return result


def _has_vectors(expr) -> bool:
    return has_vectors(expr)


class Views(list):
    """A list of per-trace views that also prints as a whole: :meth:`latex` joins them, and
    :meth:`matrix` is the one view's matrix when the expression holds a single trace (else
    :class:`ModelError`).  :meth:`Model.pencil`, :meth:`Model.forms` and :meth:`Model.equations` return one.

    >>> m = Model()
    >>> _ = m.goe("G", "n")
    >>> views = m.pencil("trace(inv(G/sqrt(n) - z*I(n)))")
    >>> len(views), views.matrix().shape
    (1, (1, 1))
    """

    def latex(self) -> str:
        return "\n\n".join(v.latex() for v in self)

    def matrix(self):
        if len(self) != 1:
            raise ModelError(f"the expression holds {len(self)} traces; index the list for one of them")
        return self[0].matrix()


class PencilView:
    """The pencil ``L = u Q^{-1} v`` of one trace (a plan's trace), printable as a SymPy block matrix
    (:meth:`matrix`, :meth:`latex`) with its constant row and column (:meth:`vectors`).

    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> view = m.pencil("trace(inv(Z.T*Z/n + gamma*I(n)))")[0]
    >>> view, view.size
    (PencilView(2 blocks: ['n', 'n']), 2)
    """

    def __init__(self, trace):
        self.trace = trace
        self.pencil = trace.pencil
        self.size = trace.pencil.size

    def matrix(self):
        """The pencil as a SymPy matrix of symbolic blocks (``Zh``, ``Zh^T``, ``Gh``, ``I`` times coefficients;
        ``Zh = Z/sqrt(n)``)."""
        p = self.pencil
        M = sp.zeros(p.size, p.size)
        for (i, j), e in p.Q.items():
            M[i, j] = sum((c.subs(EPS_SHIFT, 0) * _leaf_symbol(leaf, p.blocks[i]) for leaf, c in e.items()),
                          sp.Integer(0))
        return M

    def vectors(self):
        """``(u, v)``: the constant row and column with ``M = u L^{-1} v`` (block index -> coefficient)."""
        return dict(self.pencil.u), dict(self.pencil.v)

    def latex(self) -> str:
        return sp.latex(tex_symbols(self.matrix()))

    def __repr__(self):
        return f"PencilView({self.pencil.size} blocks: {[b[0] for b in self.pencil.blocks]})"


@cached(maxsize=4096)
def _leaf_symbol(leaf, block):
    if leaf == "I":
        return sp.Symbol(f"I_{{{tex_name(block[0])}}}", commutative=False)
    transposed = leaf[0] == "Z" and leaf[2]
    return sp.Symbol(tex_name(leaf[1], hat=True, transposed=transposed), commutative=False)


class EquationsView:
    """The fixed point ``H = (L_0 - eta(H))^{-1}`` of one trace (SymPy matrices and LaTeX): :meth:`matrices`,
    :meth:`matrix`, :meth:`residual` and :meth:`latex`.

    >>> m = Model()
    >>> _ = m.gaussian("Z", "n", "n")
    >>> view = m.equations("trace(inv(Z.T*Z/n + gamma*I(n)))")[0]   # the Marchenko-Pastur system
    >>> view.matrix()
    Matrix([
    [H_2_2 - 1,             0],
    [        0, H_1_1 - gamma]])
    """

    def __init__(self, trace):
        self.system = trace.system

    def matrices(self):
        """``(L0, eta(H), H)`` as SymPy matrices."""
        return self.system.matrices()

    def matrix(self):
        """``L0 - eta(H)``: the matrix whose inverse is ``H`` at the fixed point."""
        L0, eta, _ = self.system.matrices()
        return L0 - eta

    def residual(self):
        return list(self.system.residual)

    def latex(self) -> str:
        return self.system.latex()
