r"""``symrmt trace``: the certified large-n limit of a normalized trace, from the expression alone.

::

    symrmt trace 'EXPR' --matrix 'Z=gaussian(p,n)' [--matrix 'G=goe(n)' ...]
        [--matrix 'D=diag(p, (1, 4), (1/4, 3/4))' ...] [--matrix 'K=kernel(tanh, Z)' ...] [--dim 'p=c*n' ...]
        --at 'c=1/2, gamma=1/5' [--digits D] [--json] [--latex]
        [--simulate --n N --trials T --seed S [--store PATH] [--workers N | --scheduler ADDRESS]]

Every text (the expression, each declaration, each value) goes through the
package's one restricted parser: numbers, declared names, ``+ - * / @ **``,
``.T`` and the functions ``trace inv diff sqrt I`` (and, in a declaration,
``gaussian goe diag``); nothing typed runs as code.  ``*`` and ``@`` are both
the matrix product.  Dimensions are ratios to ``n`` (``--dim 'p=c*n'``);
``n`` itself needs no declaration.  A value in ``--at`` is an exact number
(``1/5``, ``0.2``, ``1e-3``); one value may be complex, ``z=0.5+0.01j`` (each part read by the same
parser; the traces are solved at complex ``z`` on the Stieltjes branch, see docs/engine.md), and its
``--json`` value is ``{"re": ..., "im": ...}``.

Output: the value with ``D`` significant digits (two solves at different
working precisions agree on them); ``--json`` gives ``{"value": ...}`` (a
decimal string when ``D > 15``, a float otherwise) plus ``digits``,
``expression``, ``at``, ``certificate`` (``"relative"``, or ``"absolute"`` for a limit 0) and, when a
non-normal resolvent was Hermitized, ``hermitized`` (its traces, from 1); with ``--simulate`` also ``{"simulation": {"mean",
"se", "n", "trials", "seed"}}`` (a Monte-Carlo of the same expression at size
``n``) and ``"trials_computed"``, ``"trials_reused"``, ``"trials_stale"`` as for
``symrmt simulate``: the trials run in this process, on a local Dask cluster
(``--workers N``) or an existing one (``--scheduler ADDRESS``), with the same
numbers on each, and ``--store PATH`` keeps them in a trial store and reuses them.  ``--latex`` prints each trace's linear pencil and its fixed-point
system.  A simulation whose gap to the limit exceeds ``5 se + 10 (1 + |limit|)/n`` (the finite-size slack)
prints a warning on stderr, sets ``"agrees": false`` and exits 1.  Exit codes: 1 the simulation disagrees, 2 bad input (the expression is not in the grammar, its
limit is not O(1), a size mismatch, a bad value), 3 the solver could not certify
the value (or a simulation draw was singular).
"""

from __future__ import annotations

import re
import sys
from fractions import Fraction

from symrmt.params import ParameterError

__all__ = ["add_trace_parser", "cmd_trace", "parse_at", "build_model"]

#: most declarations of each kind, most values in --at
MAX_DECLARATIONS = 32
#: ``--simulate`` agrees when ``|mean - limit| <= SIM_SE * se + SIM_SLACK * (1 + |limit|) / n`` (the finite-size
#: slack: the traces of resolvents move like 1/n; a larger gap is a warning on stderr and exit 1)
SIM_SE, SIM_SLACK = 5, 10


def simulation_gap(limit: float, mean: float, se: float, n: int) -> tuple:
    """``(|mean - limit|, allowed)`` with ``allowed = SIM_SE * se + SIM_SLACK * (1 + |limit|) / n``."""
    return abs(mean - limit), SIM_SE * se + SIM_SLACK * (1 + abs(limit)) / n

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _parser():
    from symrmt.parsing import parse_expression

    return parse_expression


def _exact_number(text: str, what: str) -> Fraction:
    """An exact rational from text (``1/5``, ``0.2``, ``1e-3``, ``2**-3``) through the restricted parser."""
    value = _parser()(text, {}, {}, what=what, number=lambda q: Fraction(q))
    if not isinstance(value, Fraction):
        raise ParameterError(f"{what}: {text!r} is not a rational number")
    return value


def _split_assignment(text: str, what: str) -> tuple[str, str]:
    if not isinstance(text, str) or "=" not in text:
        raise ParameterError(f"{what}: expected NAME=VALUE, got {text!r}")
    name, _, rhs = text.partition("=")
    name = name.strip()
    if not _NAME.match(name):
        raise ParameterError(f"{what}: {name!r} is not a valid name (letters, digits, _; a letter first)")
    if not rhs.strip():
        raise ParameterError(f"{what}: nothing after '=' in {text!r}")
    return name, rhs.strip()


def parse_at(text: str) -> dict:
    """``'c=1/2, gamma=1/5'`` -> ``{"c": Fraction(1, 2), "gamma": Fraction(1, 5)}``.

    Examples
    --------
    >>> parse_at("c=1/2, gamma=0.2")
    {'c': Fraction(1, 2), 'gamma': Fraction(1, 5)}
    >>> parse_at("c=__import__('os')")
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: --at c: ...
    """
    out = {}
    parts = [s for s in (text or "").split(",") if s.strip()]
    if not parts:
        raise ParameterError("--at: give the parameter values, e.g. --at 'c=1/2, gamma=1/5'")
    if len(parts) > MAX_DECLARATIONS:
        raise ParameterError(f"--at: at most {MAX_DECLARATIONS} values, got {len(parts)}")
    for part in parts:
        name, rhs = _split_assignment(part, "--at")
        if name in out:
            raise ParameterError(f"--at: {name} is given twice")
        from symrmt.numeric.complex_limit import as_complex

        cv = as_complex(rhs, f"--at {name}")  # a complex literal a+bj: each part through the parser
        out[name] = cv if cv is not None else _exact_number(rhs, f"--at {name}")
    return out


def _declare_diag(model, name: str, rhs: str):
    """``diag(dim, (values), (weights))`` (weights optional: equal) through the restricted parser."""
    from symrmt.symbolic.engine_model import _number
    from symrmt.symbolic.engine_nodes import Const, DimConst

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

    _parser()(rhs, names, {"diag": diag, "sqrt": lambda x: x ** Fraction(1, 2)}, what=f"--matrix {name}",
              number=_number)
    if "node" not in out:
        raise ParameterError(f"--matrix {name}: {rhs!r} declares no matrix")
    return out["node"]


def _declare_kernel(model, name: str, rhs: str):
    """``kernel(f, Z[, alpha[, zero|keep]])``: the Gaussian-equivalent kernel of the preset ``f`` on the
    Gaussian ``Z`` (:func:`symrmt.engine.kernel`), named ``name`` in the expression; its fresh
    ``goe(n)`` is declared as ``G_<Z>``."""
    from symrmt.engine import kernel
    from symrmt.symbolic.hermite import PRESETS

    model._matrix_name(name)
    names = {k: k for k in PRESETS}
    names.update(zero="zero", keep="keep")
    names.update(model.matrices)
    out = {}

    def call(f, Z, alpha=1, diagonal="zero"):
        if not isinstance(f, str) or f not in PRESETS:
            raise ParameterError(f"--matrix {name}: kernel(f, Z, ...) takes a preset f, one of {', '.join(PRESETS)}")
        if diagonal not in ("zero", "keep"):
            raise ParameterError(f"--matrix {name}: the diagonal is zero or keep, got {diagonal!r}")
        out["args"] = (f, Z, alpha, diagonal)
        return Z

    _parser()(rhs, names, {"kernel": call}, what=f"--matrix {name}", number=Fraction)
    if "args" not in out:
        raise ParameterError(f"--matrix {name}: {rhs!r} declares no matrix")
    # the Hermite data are computed outside the parser's time limit (the quadrature may take seconds)
    f, Z, alpha, diagonal = out["args"]
    node = kernel(f, Z, alpha=alpha, diagonal=diagonal, model=model)
    return model.let(name, node)  # a named sub-expression: the parser substitutes it


def build_model(dims=(), matrices=()):
    """A :class:`symrmt.engine.Model` from ``--dim`` and ``--matrix`` texts (dimensions first).

    Examples
    --------
    >>> m = build_model(["p=c*n"], ["Z=gaussian(p,n)", "D=diag(p, (1, 4), (1/4, 3/4))"])
    >>> sorted(m.matrices), str(m.dims["p"].ratio)
    (['D', 'Z'], 'c')
    """
    from symrmt.engine import Model

    if len(dims) > MAX_DECLARATIONS or len(matrices) > MAX_DECLARATIONS:
        raise ParameterError(f"at most {MAX_DECLARATIONS} --dim and {MAX_DECLARATIONS} --matrix declarations")
    model = Model()
    for text in dims:
        name, rhs = _split_assignment(text, "--dim")
        model.dim(name, rhs)
    for text in matrices:
        name, rhs = _split_assignment(text, "--matrix")
        if rhs.replace(" ", "").startswith("diag("):
            _declare_diag(model, name, rhs)
        elif rhs.replace(" ", "").startswith("kernel("):
            _declare_kernel(model, name, rhs)
        else:
            model.declare(f"{name}={rhs}")
    return model


def add_trace_parser(sub, int_at_least):
    """Add the ``trace`` verb to the CLI's subparsers (``int_at_least(flag, minimum)``: an argparse type)."""
    p = sub.add_parser(
        "trace",
        help="certified large-n limit of a normalized trace of your own expression",
        description="The large-n limit of a scalar expression in normalized traces of Gaussian, GOE and "
        "diagonal matrices: linear pencil, block fixed point, homotopy solve and Newton polish, certified "
        "at two precisions; optionally a Monte-Carlo of the same expression. See docs/engine.md.",
    )
    p.add_argument("expr", metavar="EXPR", help="e.g. 'trace(inv(Z.T*Z/n + gamma*I(n)))'")
    p.add_argument("--matrix", action="append", default=[], metavar="DECL",
                   help="NAME=gaussian(a,b) | NAME=goe(a) | NAME=diag(a, (values), (weights)) | "
                   "NAME=kernel(f, Z[, alpha[, zero|keep]]) (f a preset; the Gaussian-equivalent kernel of "
                   "f(alpha Z^T Z/sqrt(p))/sqrt(p)) (repeatable)")
    p.add_argument("--dim", action="append", default=[], metavar="DECL",
                   help="NAME=RATIO*n, e.g. p=c*n (repeatable; n is the reference dimension)")
    p.add_argument("--at", required=True, metavar="VALUES", help="parameter values, e.g. 'c=1/2, gamma=1/5'")
    p.add_argument("--digits", type=int_at_least("--digits", 1), default=15,
                   help="significant digits to certify (default 15)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--latex", action="store_true", help="print the pencils and fixed-point systems in LaTeX")
    p.add_argument("--simulate", action="store_true", help="also a Monte-Carlo of the same expression")
    p.add_argument("--n", type=int_at_least("--n", 2), default=512, help="simulation size n (default 512)")
    p.add_argument("--trials", type=int_at_least("--trials", 2), default=10, help="simulation trials (default 10)")
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=0, help="simulation root seed (default 0)")
    p.add_argument("--store", metavar="PATH", default=None,
                   help="trial store (SQLite file) for --simulate: reuse stored trials, keep each new one")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int_at_least("--workers", 1), default=1,
                   help="1 (default): trials in this process; N > 1: a local Dask cluster of N worker processes "
                   "(pip install 'symrmt[dask]')")
    g.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run the trials on an existing Dask cluster, e.g. tcp://host:8786")
    p.set_defaults(func=cmd_trace)
    return p


def _simulate(args, expr, at) -> dict:
    """The Monte-Carlo of ``--simulate`` through the package's executor and (``--store``) trial store.

    The store key names the model by its texts (the expression, the declarations sorted, the exact
    values of ``--at`` and ``n``) and by the digest of the bound tree (see
    :func:`symrmt.simulation.trace_trials.trace_point`)."""
    import warnings

    from symrmt.engine import bind
    from symrmt.simulation.executor import StaleTrialsWarning, report_stale
    from symrmt.simulation.trace_sim import simulate_trace

    label = {"expression": args.expr, "matrices": sorted(args.matrix), "dims": sorted(args.dim),
             "at": {k: str(v) for k, v in sorted(at.items())}, "n": args.n}
    with warnings.catch_warnings():  # reported below in one line
        warnings.simplefilter("ignore", StaleTrialsWarning)
        sim = simulate_trace(bind(expr, at, args.n), trials=args.trials, seed=args.seed, progress=None,
                             store=args.store, workers=args.workers, scheduler=args.scheduler, label=label)
    report_stale(sim)
    return sim


def cmd_trace(args) -> int:
    """Run ``symrmt trace``; returns the exit code (errors are raised for the CLI's handler)."""
    import mpmath

    from symrmt.cli_common import dump as _dump
    from symrmt.cli_common import num as _num

    if not args.simulate and (args.store is not None or args.workers > 1 or args.scheduler is not None):
        raise ParameterError("--store, --workers and --scheduler apply to the simulation: add --simulate")
    model = build_model(args.dim, args.matrix)
    at = parse_at(args.at)
    expr = model.parse(args.expr)
    D = args.digits
    if args.simulate and any(not isinstance(v, Fraction) for v in at.values()):
        raise ParameterError("--simulate needs real parameter values (a complex value is a limit only)")
    if args.simulate:  # refuse a simulation that cannot fit before the limit is computed
        from symrmt.engine import bind
        from symrmt.simulation.trace_sim import check_trace_memory

        check_trace_memory(bind(expr, at, args.n))
    result = model.limit(expr, at=at, digits=D)
    if isinstance(result.value, mpmath.mpc):
        value = {"re": _num(result.value.real, D), "im": _num(result.value.imag, D)}
    else:
        value = _num(result.value, D)
    out = {
        "value": value,
        "digits": D,
        "expression": args.expr,
        "at": {k: str(v) for k, v in at.items()},
        "certificate": getattr(result, "certificate", "relative"),
    }
    if getattr(result, "hermitized", ()):
        out["hermitized"] = [k + 1 for k in result.hermitized]
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
        tex = []
        for k, (pen, eqs) in enumerate(zip(model.pencil(expr), model.equations(expr))):
            tex.append(f"% trace {k + 1}: linear pencil\n{pen.latex()}\n% trace {k + 1}: fixed point\n{eqs.latex()}")
        out["latex"] = "\n".join(tex)
    if args.json:
        _dump(out)  # the CLI's one strict JSON writer
        return code
    at_text = ", ".join(f"{k} = {v}" for k, v in out["at"].items())
    print(f"{args.expr}  at  {at_text}")
    if out["certificate"] == "absolute":
        print(f"limit: 0 (absolute error < 1e-{D}: the two solves agree to 1e-{D + 1} around 0)")
    else:
        print(f"limit ({D} digits): {mpmath.nstr(result.value, D)}")
    if out.get("hermitized"):
        print(f"trace #{', #'.join(map(str, out['hermitized']))}: a non-normal matrix, not invertible in the limit: "
              "solved by Hermitization (the Brown measure), see docs/engine.md")
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
