"""``symrmt trace``: the certified large-n limit of a normalized trace, from the expression alone.

The flags, the declarations, the JSON keys and the exit codes are documented in docs/engine.md; every text
goes through the package's one restricted parser (nothing typed runs as code).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import warnings
from fractions import Fraction

import mpmath

from symrmt.cli.common import MergeValues, add_executor, add_simulation, scheduler_of, simulation_flags, dump as _dump, num as _num
from symrmt.errors import ParameterError, UnknownNameError
from symrmt.parsing import parse_expression

__all__ = ["add_trace_parser", "cmd_trace", "parse_at", "at_value", "build_model", "add_declarations", "split_assignment",
           "is_name"]

#: most declarations of each kind, most values in --at
MAX_DECLARATIONS = 32
#: ``--simulate`` agrees when ``|mean - limit| <= SIM_SE * se + SIM_SLACK * (1 + |limit|) / n`` (the finite-size
#: slack: the traces of resolvents move like 1/n; a larger gap is a warning on stderr and exit 1)
SIM_SE, SIM_SLACK = 5, 10


def simulation_gap(limit: float, mean: float, se: float, n: int) -> tuple:
    """``(|mean - limit|, allowed)`` with ``allowed = SIM_SE * se + SIM_SLACK * (1 + |limit|) / n``.

    >>> gap, allowed = simulation_gap(0.5, 0.52, 0.01, 100)
    >>> round(gap, 12), round(allowed, 12)   # allowed = 5 * 0.01 + 10 * 1.5 / 100
    (0.02, 0.2)
    """
    return abs(mean - limit), SIM_SE * se + SIM_SLACK * (1 + abs(limit)) / n

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
#: an inner product of two declared vectors in --at, e.g. beta.beta or mu.beta
_INNER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*\.[A-Za-z][A-Za-z0-9_]*$")


def _parser():
    return parse_expression


def is_name(text: str, inner: bool = False) -> bool:
    """Whether ``text`` is a declared name (letters, digits, ``_``; a letter first) or, with ``inner``, an
    inner product of two declared vectors as ``--at`` takes it (``beta.beta``, ``mu.beta``).

    >>> is_name("beta"), is_name("1x"), is_name("mu.beta"), is_name("mu.beta", inner=True)
    (True, False, False, True)
    """
    return bool(_NAME.match(text) or (inner and _INNER.match(text)))


def split_assignment(text: str, what: str, inner: bool = False) -> tuple[str, str]:
    """``'NAME=VALUE'`` -> ``(NAME, VALUE)``, both stripped; ``inner``: ``NAME`` may be an inner product
    ``a.b`` (:func:`is_name`).  ``what`` names the option in the errors.

    >>> split_assignment("p = c*n", "--dim")
    ('p', 'c*n')
    """
    if not isinstance(text, str) or "=" not in text:
        raise ParameterError(f"{what}: expected NAME=VALUE, got {text!r}")
    name, _, rhs = text.partition("=")
    name = name.strip()
    if not is_name(name, inner):
        raise ParameterError(f"{what}: {name!r} is not a valid name (letters, digits, _; a letter first)")
    if not rhs.strip():
        raise ParameterError(f"{what}: nothing after '=' in {text!r}")
    return name, rhs.strip()


def parse_at(text: str, texts: dict | None = None) -> dict:
    """``'c=1/2, gamma=1/5'`` -> ``{"c": Fraction(1, 2), "gamma": Fraction(1, 5)}``.

    A value is a decimal, a fraction, or an exact number such as ``sqrt(2)``, ``pi``, ``E`` or
    ``E-2`` (the restricted parser's numbers, :func:`symrmt.parsing.parse_number`); an irrational is
    rounded to :data:`symrmt.parsing.IRRATIONAL_DIGITS` significant digits, far below any precision
    the engine certifies, as :meth:`symrmt.engine.Model.limit` does.  ``texts``, when given, receives
    each value as typed (for display).

    Examples
    --------
    >>> parse_at("c=1/2, gamma=0.2")
    {'c': Fraction(1, 2), 'gamma': Fraction(1, 5)}
    >>> float(parse_at("gamma=sqrt(2)")["gamma"])
    1.4142135623730951
    >>> parse_at("c=__import__('os')")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --at c: ...
    """
    out = {}
    parts = [s for s in (text or "").split(",") if s.strip()]
    if not parts:
        raise ParameterError("--at: give the parameter values, e.g. --at 'c=1/2, gamma=1/5'")
    if len(parts) > MAX_DECLARATIONS:
        raise ParameterError(f"--at: at most {MAX_DECLARATIONS} values, got {len(parts)}")
    for part in parts:
        name, rhs = split_assignment(part, "--at", inner=True)
        if name in out:
            raise ParameterError(f"--at: {name} is given twice")
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.engine.routes.complex_limit import as_complex

        cv = as_complex(rhs, f"--at {name}")  # a complex literal a+bj: each part through the parser
        out[name] = cv if cv is not None else at_value(rhs, f"--at {name}")
        if texts is not None:
            texts[name] = rhs
    return out


def at_value(text: str, what: str) -> Fraction:
    """A value of ``--at`` read exactly (through the restricted parser); ``what`` names it in errors.

    >>> at_value("3/4", "c"), at_value("0.25", "c")
    (Fraction(3, 4), Fraction(1, 4))
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.engine.lang.tree import exact_value

    return exact_value(text, what)


def _declare_diag(model, name: str, rhs: str):
    """``diag(dim, (values), (weights))`` (weights optional: equal) through the restricted parser."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.engine.declarations import number_node
    from symrmt.engine.lang.matrices import Const, DimConst

    names = {k: DimConst(d) for k, d in model.dims.items()}
    for k, s in model.symbols.items():
        if k not in names:
            names[k] = Const(s)
    out = {}

    def diag(dim, values, weights=None):
        if not isinstance(values, tuple) or (weights is not None and not isinstance(weights, tuple)):
            raise ParameterError(f"--matrix {name}: write diag(dim, (v1, v2, ...), (w1, w2, ...))")
        out["node"] = model.diag(name, dim, list(values), None if weights is None else list(weights))
        return out["node"]

    got = _parser()(rhs, names, {"diag": diag, "sqrt": lambda x: x ** Fraction(1, 2)}, what=f"--matrix {name}",
                    number=number_node, whole_call=("diag",))
    if "node" not in out or got is not out["node"]:  # nothing of the text may be dropped
        raise ParameterError(f"--matrix {name}: {rhs!r} declares no matrix")
    return out["node"]


def _declare_kernel(model, name: str, rhs: str):
    """``kernel(f, Z[, alpha[, zero|keep]])`` or ``kernel(f, X, W[, zero|keep])``: the Gaussian-equivalent
    kernel of the preset ``f`` on the Gaussian ``Z``, or on ``X = Z + finite rank`` with weights
    ``W = alpha I + finite rank`` (``X``, ``W`` named by ``--let``) (:func:`symrmt.engine.kernel`), named
    ``name`` in the expression; its fresh ``goe(n)`` is declared as ``G_<Z>``."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.engine import kernel
    from symrmt.hermite import PRESETS

    model._matrix_name(name)
    names = {k: k for k in PRESETS}
    names.update(zero="zero", keep="keep")
    names.update(model.matrices)
    names.update(model.named)  # kernel(f, X, W) with X, W named by --let
    out = {}

    def call(f, Z, alpha=1, diagonal="zero"):
        if not isinstance(f, str) or f not in PRESETS:
            raise ParameterError(f"--matrix {name}: kernel(f, Z, ...) takes a preset f, one of {', '.join(PRESETS)}")
        if isinstance(alpha, str) and alpha in ("zero", "keep") and diagonal == "zero":
            alpha, diagonal = 1, alpha
        if diagonal not in ("zero", "keep"):
            raise ParameterError(f"--matrix {name}: the diagonal is zero or keep, got {diagonal!r}")
        out["args"] = (f, Z, alpha, diagonal)
        out["marker"] = marker = object()  # not a matrix: no operator applies to it
        return marker

    got = _parser()(rhs, names, {"kernel": call}, what=f"--matrix {name}", number=Fraction, whole_call=("kernel",))
    if "args" not in out or got is not out["marker"]:  # nothing of the text may be dropped
        raise ParameterError(f"--matrix {name}: {rhs!r} declares no matrix")
    # the Hermite data are computed outside the parser's time limit (the quadrature may take seconds)
    f, Z, alpha, diagonal = out["args"]
    node = kernel(f, Z, alpha=alpha, diagonal=diagonal, model=model)
    return model.let(name, node)  # a named sub-expression: the parser substitutes it


@contextlib.contextmanager
def _dimension_hint(model):
    """An unknown name in a declaration, which nothing known resembles, is most likely a dimension not
    declared: the message says how to declare it (``--dim 'p=c*n'``)."""
    try:
        yield
    except UnknownNameError as exc:
        if exc.called or exc.suggestions or exc.name in model.dims:
            raise
        raise ParameterError(f"{exc.plain}; a dimension other than n is declared with --dim, e.g. "
                             f"--dim '{exc.name}=c*n'") from None


def build_model(dims=(), matrices=(), vectors=(), lets=()):
    """A :class:`symrmt.engine.Model` from ``--dim``, ``--vector``, ``--matrix`` and ``--let`` texts.

    The order: dimensions, vectors, the matrices other than kernels, the ``--let`` names (in the
    order given; each may use the ones before it), then the kernels (which may use the names).

    Examples
    --------
    >>> m = build_model(["p=c*n"], ["Z=gaussian(p,n)", "D=diag(p, (1, 4), (1/4, 3/4))"])
    >>> sorted(m.matrices), str(m.dims["p"].ratio)
    (['D', 'Z'], 'c')
    """
    # import-time cost: the CLI's start loads no symrmt.engine
    from symrmt.engine import Model

    if max(len(dims), len(matrices), len(vectors), len(lets)) > MAX_DECLARATIONS:
        raise ParameterError(f"at most {MAX_DECLARATIONS} each of --dim, --vector, --matrix and --let")
    model = Model()
    for text in dims:
        name, rhs = split_assignment(text, "--dim")
        model.dim(name, rhs)
    for text in vectors:
        name, rhs = split_assignment(text, "--vector")
        with _dimension_hint(model):
            model.declare_vector(f"{name}={rhs}")
    kernels = []
    for text in matrices:
        name, rhs = split_assignment(text, "--matrix")
        if rhs.replace(" ", "").startswith("diag("):
            with _dimension_hint(model):
                _declare_diag(model, name, rhs)
        elif rhs.replace(" ", "").startswith("kernel("):
            kernels.append((name, rhs))
        else:
            with _dimension_hint(model):
                model.declare(f"{name}={rhs}")
    # import-time cost: the CLI's start loads no symrmt.engine.laws.registry
    from symrmt.engine.laws.registry import laws

    for text in lets:
        name, rhs = split_assignment(text, "--let")
        for decl in ("kernel", "diag", *sorted(laws())):  # a declaration, not an expression
            if rhs.replace(" ", "").startswith(decl + "("):
                raise ParameterError(f"--let {name}: {decl}(...) declares a matrix, it is not an expression of "
                                     f"declared ones: write --matrix '{name}={rhs}'")
        model._matrix_name(name)
        node = model.parse(rhs, what=f"--let {name}")
        # import-time cost: the CLI's start loads no SymPy
        from symrmt.engine.lang.matrices import MatrixNode

        if not isinstance(node, MatrixNode):
            raise ParameterError(f"--let {name}: {rhs!r} is not a matrix expression")
        model.let(name, node)
    for name, rhs in kernels:
        _declare_kernel(model, name, rhs)
    return model


def add_declarations(p):
    """``--matrix``, ``--vector``, ``--let`` and ``--dim`` of a verb that reads them as ``symrmt trace`` does
    (:func:`build_model`), with help that points at ``symrmt trace``.

    >>> from symrmt.cli.common import Parser
    >>> p = Parser(prog="demo")
    >>> add_declarations(p)
    >>> p.parse_args(["--matrix", "Z=gaussian(p,n)", "--dim", "p=n/2"])
    Namespace(matrix=['Z=gaussian(p,n)'], vector=[], let=[], dim=['p=n/2'])
    """
    p.add_argument("--matrix", action="append", default=[], metavar="DECL", help="as for symrmt trace (repeatable)")
    p.add_argument("--vector", action="append", default=[], metavar="DECL",
                   help="as for symrmt trace, e.g. beta=vector(p), y=signs(n) (repeatable)")
    p.add_argument("--let", action="append", default=[], metavar="NAME=EXPR", help="as for symrmt trace")
    p.add_argument("--dim", action="append", default=[], metavar="DECL", help="NAME=RATIO*n (repeatable)")


#: where a flag's help lists the registered laws of one kind (:func:`law_lines`, filled when the help is printed)
LAWS_MARK = {"matrix": "<matrix laws>", "vector": "<vector laws>"}


def law_lines(kind: str) -> str:
    """The laws of ``kind`` (``"matrix"`` or ``"vector"``) in the engine's registry, as a flag's help lists
    them: ``NAME=signature (summary)``, joined by `` | ``.  A law module added to ``symrmt/engine/laws/``
    appears here with no other edit.

    >>> print(law_lines("vector").split(" | ")[0])
    NAME=gaussian_vector(dim) (iid N(0, 1) entries (norm about sqrt(dim)))
    """
    from symrmt.engine.laws.registry import laws  # import-time cost: the CLI starts without SymPy

    return " | ".join(f"NAME={law.signature} ({law.summary})" for law in laws().values() if law.kind == kind)


class LawsHelpFormatter(argparse.HelpFormatter):
    """The help formatter of ``symrmt trace``: a flag's help that holds a mark of :data:`LAWS_MARK` lists the
    registered laws of that kind, read from the registry only when the help is printed.  Takes what
    ``argparse.HelpFormatter`` takes (argparse passes the program name).

    >>> import argparse
    >>> p = argparse.ArgumentParser(allow_abbrev=False, prog="demo", formatter_class=LawsHelpFormatter)
    >>> _ = p.add_argument("--vector", help=LAWS_MARK["vector"])
    >>> "NAME=gaussian_vector(dim)" in p.format_help(), LAWS_MARK["vector"] in p.format_help()
    (True, False)
    """

    def _get_help_string(self, action):
        text = super()._get_help_string(action) or ""
        for kind, mark in LAWS_MARK.items():
            if mark in text:
                text = text.replace(mark, law_lines(kind).replace("%", "%%"))
        return text


def add_trace_parser(sub, int_at_least):
    """Add the ``trace`` verb to the CLI's subparsers (``int_at_least(flag, minimum)``: an argparse type). Returns the verb's parser.

    >>> from symrmt.cli.common import Parser, int_at_least, number
    >>> sub = Parser(prog="symrmt").add_subparsers(dest="verb", parser_class=Parser)
    >>> _ = add_trace_parser(sub, int_at_least)
    >>> a = sub.choices["trace"].parse_args(["trace(inv(Z.T*Z/n + gamma*I(n)))", "--matrix", "Z=gaussian(p,n)"])
    >>> a.matrix, a.digits, a.n
    (['Z=gaussian(p,n)'], 15, None)
    """
    p = sub.add_parser(
        "trace", formatter_class=LawsHelpFormatter,
        help="certified large-n limit of a normalized trace of your own expression",
        description="The large-n limit of a scalar expression in normalized traces of Gaussian, GOE and "
        "diagonal matrices: linear pencil, block fixed point, homotopy solve and Newton polish, certified "
        "at two precisions; optionally a Monte-Carlo of the same expression. See docs/engine.md.",
    )
    p.add_argument("expr", metavar="EXPR", help="e.g. 'trace(inv(Z.T*Z/n + gamma*I(n)))'")
    p.add_argument("--matrix", action="append", default=[], metavar="DECL",
                   help="NAME=diag(a, (values), (weights)) | "
                   "NAME=kernel(f, Z[, alpha[, zero|keep]]) | NAME=kernel(f, X, W[, zero|keep]) (f a preset; the "
                   "Gaussian-equivalent kernel of f(alpha Z^T Z/sqrt(p))/sqrt(p), or of f(X^T W X/sqrt(p))/sqrt(p) "
                   "for X = Z + finite rank, W = alpha I + finite rank, named by --let) | "
                   f"{LAWS_MARK['matrix']} (repeatable)")
    p.add_argument("--vector", action="append", default=[], metavar="DECL",
                   help="NAME=vector(a) (deterministic, O(1) norm; inner products a.b in --at, 0 when not given) | "
                   f"{LAWS_MARK['vector']} (repeatable)")
    p.add_argument("--let", action="append", default=[], metavar="NAME=EXPR",
                   help="name a matrix sub-expression, e.g. X=mu*y.T + Z (repeatable, in order)")
    p.add_argument("--dim", action="append", default=[], metavar="DECL",
                   help="NAME=RATIO*n, e.g. p=c*n (repeatable; n is the reference dimension)")
    p.add_argument("--at", default="", metavar="VALUES", action=MergeValues,
                   help="parameter values, e.g. 'c=1/2, gamma=1/5' (may be left out when the expression has none; "
                   "given twice, the values are merged: --at c=1/2 --at gamma=1/5)")
    p.add_argument("--digits", type=int_at_least("--digits", 1), default=15,
                   help="significant digits to certify (default 15)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--prove", action="store_true", help="prove every value: a ball [mid ± rad] proved to contain the limit (needs python-flint: pip install 'symrmt[prove]')")
    p.add_argument("--prove-branch", action="store_true", help="--prove, and the branch of every system proved by a "
                   "chain of Krawczyk boxes along the homotopy (systems of more than 32 unknowns; slower)")
    p.add_argument("--latex", action="store_true", help="print the derivation in LaTeX: the quantity, each linear pencil, its fixed point "
                   "and a form's Woodbury system, every symbol defined, equations numbered")
    p.add_argument("--simulate", action="store_true", help="also a Monte-Carlo of the same expression")
    p.add_argument("--outliers", default=None, metavar="Z=LO:HI:K",
                   help="instead of the limit: the outliers of a spiked model, the real poles of the quadratic form "
                   "EXPR = x.T*inv(A + a*z*I)*x (A symmetric, e.g. u.T*inv(M - z*I(n))*u) found on the grid LO:HI:K "
                   "of z, each with the residue of EXPR and the eigenvector overlap |<x/|x|, v>|^2 (z is left out "
                   "of --at; see docs/engine.md)")

    add_simulation(p, n_help="with --simulate: the simulation's size (default 512); without: the limit plus its 1/n "
                   "term at that size (real Gaussian and GOE matrices; JSON keys value = limit + correction/n, "
                   "limit, correction; n >= 8, see docs/engine.md)")
    add_executor(p)
    p.set_defaults(func=cmd_trace)
    return p


def _simulate(args, expr, at) -> dict:
    """The Monte-Carlo of ``--simulate`` through the package's executor and (``--store``) trial store.

    The store key names the model by its texts (the expression, the declarations sorted, the exact
    values of ``--at`` and ``n``) and by the digest of the bound tree (see
    :func:`symrmt.engine.simulate.trials.trace_point`)."""
    # import-time cost: the CLI's start loads no NumPy
    from symrmt.engine import bind
    from symrmt.simulation.executor import StaleTrialsWarning, report_stale
    from symrmt.engine.simulate.monte_carlo import simulate_trace

    label = {"expression": args.expr, "matrices": sorted(args.matrix), "dims": sorted(args.dim),
             **({"vectors": sorted(args.vector), "lets": list(args.let)} if args.vector or args.let else {}),
             "at": {k: str(v) for k, v in sorted(at.items())}, "n": args.n}
    with warnings.catch_warnings():  # reported below in one line
        warnings.simplefilter("ignore", StaleTrialsWarning)
        sim = simulate_trace(bind(expr, at, args.n), trials=args.trials, seed=args.seed, progress=None,
                             store=args.store, workers=args.workers, scheduler=scheduler_of(args), label=label)
    report_stale(sim)
    return sim


def cmd_trace(args) -> int:
    """Run ``symrmt trace``; returns the exit code (errors are raised for the CLI's handler).

    Raises :class:`~symrmt.errors.ParameterError` for simulation flags without ``--simulate`` (checked before
    any work), and the engine's errors:

    >>> from types import SimpleNamespace
    >>> cmd_trace(SimpleNamespace(simulate=False, store="trials.db", workers=1, scheduler=None))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --store, --workers and --scheduler apply to the simulation: add --simulate
    """
    if not args.simulate and (args.store is not None or args.workers > 1 or args.scheduler is not None):
        raise ParameterError("--store, --workers and --scheduler apply to the simulation: add --simulate")
    simulation_flags(args)  # --trials, --seed: refused without --simulate, else their defaults
    if args.simulate:  # the executor's terms, checked before any work
        # import-time cost: the CLI's start loads no symrmt.simulation.scheduler
        from symrmt.simulation.scheduler import check_workers

        scheduler_of(args)
        check_workers(args.workers)
    finite_n = None
    if args.n is None:
        args.n = 512  # the simulation's default size
    elif not args.simulate:  # --n alone: the limit and its 1/n term at that size
        finite_n = args.n
        if args.outliers is not None or args.prove or args.prove_branch:
            raise ParameterError("--n without --simulate gives the limit plus its 1/n term: leave out --outliers, "
                                 "--prove and --prove-branch")
    model = build_model(args.dim, args.matrix, args.vector, args.let)
    typed = {}
    at = parse_at(args.at, typed) if args.at.strip() else {}
    expr = model.parse(args.expr)
    D = args.digits
    if args.simulate and any(not isinstance(v, Fraction) for v in at.values()):
        raise ParameterError("--simulate needs real parameter values (a complex value is a limit only)")
    if args.simulate:  # refuse a simulation that cannot fit before the limit is computed
        # import-time cost: the CLI's start loads no NumPy
        from symrmt.engine import bind
        from symrmt.engine.simulate.monte_carlo import check_trace_memory

        check_trace_memory(bind(expr, at, args.n))
    if args.prove_branch:
        args.prove = True
    if args.outliers is not None:
        return _outliers(args, model, expr, at, typed)
    if finite_n is not None:
        result = model.limit(expr, at=at, digits=D, n=finite_n)
    else:
        result = model.limit(expr, at=at, digits=D, prove="branch" if args.prove_branch else args.prove)
    if isinstance(result.value, mpmath.mpc):
        value = {"re": _num(result.value.real, D), "im": _num(result.value.imag, D)}
    else:
        value = _num(result.value, D)
    out = {
        "value": value,
        "digits": D,
        "expression": args.expr,
        # every value as typed (1e-12, not 1/1000000000000; sqrt(2), not its 1000-digit rounding)
        "at": {k: typed[k] for k in at},
        "certificate": getattr(result, "certificate", "relative"),
    }
    if finite_n is not None:
        out.update({"limit": _num(result.limit, D), "correction": _num(result.correction, D), "n": finite_n})
    if args.prove:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.proofs.arb import ball_json

        from symrmt.proofs.arb import complex_ball_json

        pj = complex_ball_json(result.ball, D) if isinstance(result.value, mpmath.mpc) else ball_json(result.ball, D)
        out["proved"] = {**pj, "branch": result.branch,
                         **({"notes": result.branch_notes} if getattr(result, "branch_notes", None) else {})}
    if getattr(result, "hermitized", ()):
        out["hermitized"] = [k + 1 for k in result.hermitized]
    if getattr(result, "notes", ()):
        out["notes"] = list(result.notes)
    code = 0
    if args.simulate:
        sim = _simulate(args, expr, at)
        out["simulation"] = {"mean": sim["mean"], "se": sim["se"], "n": args.n, "trials": args.trials,
                             "seed": args.seed, "sizes": sim["params"]["sizes"]}
        out.update({k: sim[k] for k in ("trials_computed", "trials_reused", "trials_stale")})
        gap, allowed = simulation_gap(float(result.value), sim["mean"], sim["se"], args.n)
        out["simulation"]["agrees"] = gap <= allowed
        if not gap <= allowed:
            code = 1
            print(f"symrmt trace: warning: the simulation disagrees with the limit: gap {gap:.3g} > "
                  f"{SIM_SE} se + finite-size slack {SIM_SLACK}*(1 + |limit|)/n = {allowed:.3g}", file=sys.stderr)
    if args.latex:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.latex_trace import trace_derivation

        # the closing sentence states a real limit certified to D significant digits
        plain = finite_n is None and out["certificate"] == "relative" and not isinstance(result.value, mpmath.mpc)
        shown = mpmath.nstr(result.value, D) if plain else None
        out["latex"] = trace_derivation(model, expr, args.expr, at=out["at"], value=shown, digits=D,
                                        hermitized=tuple(getattr(result, "hermitized", ())))
    if args.json:
        _dump(out)  # the CLI's one strict JSON writer
        return code
    at_text = ", ".join(f"{k} = {v}" for k, v in out["at"].items())
    print(f"{args.expr}  at  {at_text}" if at_text else args.expr)
    if finite_n is not None:
        print(f"limit ({D} digits): {mpmath.nstr(result.limit, D)}")
        print(f"1/n term: correction = {mpmath.nstr(result.correction, D)}  (value = limit + correction/n)")
        print(f"at n = {finite_n}: {mpmath.nstr(result.value, D)}  (up to O(1/n^2))")
    elif out["certificate"] == "absolute":
        print(f"limit: 0 (absolute error < 1e-{D}: the two solves agree to 1e-{D + 1} around 0)")
    else:
        print(f"limit ({D} digits): {mpmath.nstr(result.value, D)}")
    for note in out.get("notes", ()):
        print(f"note: {note}")
    if out.get("hermitized"):
        print(f"trace #{', #'.join(map(str, out['hermitized']))}: a non-normal matrix, not invertible in the limit: "
              "solved by Hermitization (the Brown measure), see docs/engine.md")
    if args.prove:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.models.attention.prove import BRANCH_NOTE
        from symrmt.proofs.arb import ball_text

        from symrmt.proofs.arb import complex_ball_text

        text = complex_ball_text(result.ball, D) if isinstance(result.value, mpmath.mpc) else ball_text(result.ball, D)
        note = result.branch_notes[0] if isinstance(result.value, mpmath.mpc) else BRANCH_NOTE[result.branch]
        print(f"proved: {text}  ({note})")
    if args.simulate and args.store is not None:
        print(f"store {args.store}: {out['trials_reused']} trial(s) reused, {out['trials_computed']} computed")
    if args.simulate:
        s = out["simulation"]
        gap = abs(s["mean"] - float(result.value))
        se_text = f"{gap / s['se']:.2f} se" if s["se"] > 0 else "se = 0"
        print(f"simulation n = {args.n}, {args.trials} trials, seed {args.seed}: "
              f"{s['mean']:.6f} ± {s['se']:.1e}  (gap {gap:.1e} = {se_text})")
    if args.latex:
        print(out["latex"])
    sys.stdout.flush()
    return code


def _outliers(args, model, expr, at, typed) -> int:
    """``symrmt trace EXPR --outliers 'z=LO:HI:K'``: the outliers (:meth:`symrmt.engine.Model.outliers`)."""
    if args.simulate or args.prove or args.latex:
        raise ParameterError("--outliers prints the outliers only: leave out --simulate, --prove and --latex")
    if any(not isinstance(v, Fraction) for v in at.values()):
        raise ParameterError("--outliers scans a real grid: the values in --at must be real")
    D = args.digits
    found = model.outliers(expr, args.outliers, at=at, digits=D)
    out = {"outliers": [{"location": _num(o.location, D), "residue": _num(o.residue, D),
                         "overlap": None if o.overlap is None else _num(o.overlap, D)} for o in found],
           "digits": D, "expression": args.expr, "grid": args.outliers, "edge_gap": float(found.edge_gap),
           "at": {k: typed[k] for k in at}}  # every value as typed
    if args.json:
        _dump(out)
        return 0
    at_text = ", ".join(f"{k} = {v}" for k, v in out["at"].items())
    print(f"{args.expr}  at  {at_text}" if at_text else args.expr)
    zname = args.outliers.partition("=")[0].strip()
    if not found:
        print(f"no outlier on the grid {args.outliers} (no pole of the form outside the bulk"
              + (f" farther than {found.edge_gap:.1e} from its edges)" if found.edge_gap else ")"))
    for o in found:
        ov = "" if o.overlap is None else f", overlap {mpmath.nstr(o.overlap, D)}"
        print(f"outlier {zname} = {mpmath.nstr(o.location, D)}: residue {mpmath.nstr(o.residue, D)}{ov}  ({D} digits)")
    sys.stdout.flush()
    return 0
