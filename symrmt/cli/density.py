"""``symrmt density``: the limiting spectral density of a symmetric matrix expression.

The flags (``--over``, ``--certify``, ``--fast``, ``--simulate``, ``--plot``), the JSON keys and the exit codes are
documented in docs/engine.md; the declarations are those of ``symrmt trace``.
"""

from __future__ import annotations

import sys

import mpmath

from symrmt.cli.common import add_simulation, MergeValues, dump, num, simulation_flags
from symrmt.cli.trace import split_assignment, add_declarations, build_model, parse_at
from symrmt.errors import ParameterError

__all__ = ["add_density_parser", "cmd_density", "parse_over"]

def parse_over(text: str):
    """``'x=0:4:400'`` -> ``(name, [points])`` (:func:`symrmt.engine.density.result.grid_points`: ``LO``, ``HI`` exact
    numbers through the restricted parser, ``K`` at most :data:`symrmt.engine.density.result.MAX_POINTS`).

    Examples
    --------
    >>> parse_over("x=0:1:3")
    ('x', [Fraction(0, 1), Fraction(1, 2), Fraction(1, 1)])
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.engine.density.result import grid_points

    name, rhs = split_assignment(text, "--over")
    if len(rhs.split(":")) != 3:
        raise ParameterError(f"--over: write NAME=LO:HI:K, e.g. x=0:4:400; got {text!r}")
    return name, grid_points(rhs, "--over", name)


def add_density_parser(sub, int_at_least):
    """Add the ``density`` verb (declarations, ``--over x=A:B:K``, edges, atoms, simulation) to the subparsers ``sub``. Returns the verb's parser.

    >>> from symrmt.cli.common import Parser, int_at_least, number
    >>> sub = Parser(prog="symrmt").add_subparsers(dest="verb", parser_class=Parser)
    >>> _ = add_density_parser(sub, int_at_least)
    >>> a = sub.choices["density"].parse_args(["Z.T*Z/n", "--matrix", "Z=gaussian(p,n)", "--dim", "p=n/2",
    ...                                        "--over", "x=0:4:40"])
    >>> a.expr, a.over, a.dim, a.simulate
    ('Z.T*Z/n', 'x=0:4:40', ['p=n/2'], False)
    """
    p = sub.add_parser(
        "density",
        help="limiting spectral density of a symmetric matrix expression (edges, atoms, histogram)",
        description="The large-n eigenvalue density of a symmetric matrix expression of Gaussian, GOE and "
        "diagonal matrices: the resolvent at complex z by continuation toward the real axis, certified at "
        "two precisions; the support's edges and atoms; optionally an eigenvalue histogram and a figure. "
        "See docs/engine.md.",
    )
    p.add_argument("expr", metavar="M", help="e.g. 'Z.T*Z/n' or 'G/sqrt(n) + Z.T*Z/p'")
    p.add_argument("--over", required=True, metavar="x=LO:HI:K", help="the grid, e.g. x=0:4:400")
    add_declarations(p)

    p.add_argument("--at", default="", metavar="VALUES", action=MergeValues,
                   help="parameter values, e.g. 'c=1/2' (given twice, the values are merged)")
    p.add_argument("--digits", type=int_at_least("--digits", 1), default=15, help="digits to certify (default 15)")
    p.add_argument("--certify", type=int_at_least("--certify", 1), default=None, metavar="K",
                   help="certify every K-th point; the others are float64 values, checked (status float)")
    p.add_argument("--fast", action="store_true",
                   help="every point in one float64 batch, checked (status float, >= 12 digits); failures certified")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--simulate", action="store_true", help="also an eigenvalue histogram at size n")
    add_simulation(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int_at_least("--workers", 1), default=1,
                   help="1 (default): trials in this process; N > 1: a local Dask cluster of N workers")
    g.add_argument("--scheduler", metavar="ADDRESS", default=None, help="an existing Dask cluster")
    p.add_argument("--plot", metavar="FILE.png", default=None, help="write the figure (matplotlib)")
    p.set_defaults(func=cmd_density)
    return p


def cmd_density(args) -> int:
    """``symrmt density EXPR``: the limiting spectral density of a trace-engine matrix on a grid of ``x``.
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["density", "Z.T*Z/n", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=-1",
    ...       "--over", "x=0.5:1.5:3"])   # a dimension ratio must be positive
    2
    """
    simulation_flags(args, ("n", "trials", "seed", "store", "scheduler"))  # refused without --simulate
    if not args.simulate and args.workers > 1:
        raise ParameterError("--workers applies to the simulation: add --simulate")
    model = build_model(args.dim, args.matrix, args.vector, args.let)
    typed = {}
    at = parse_at(args.at, typed) if args.at.strip() else {}
    _, xs = parse_over(args.over)
    if args.plot is not None:  # the figure's file checked before any work (the path printed is the one written)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ParameterError("--plot needs matplotlib: pip install 'symrmt[plot]'") from None
        # import-time cost: the CLI's start loads no NumPy
        from symrmt.plotting import figure_path

        args.plot = figure_path(args.plot)
    if args.fast and args.certify is not None:
        raise ParameterError("give either --fast or --certify K, not both")
    d = model.density(args.expr, x=xs, at=at, digits=args.digits, certify=args.certify, fast=args.fast)
    d.expression = args.expr
    if args.simulate:
        d.simulate(model, args.expr, n=args.n, trials=args.trials, seed=args.seed, store=args.store,
                   workers=args.workers, scheduler=args.scheduler)
    if args.plot is not None:
        d.plot(args.plot)
    power = getattr(d, "power_law_edges", [])
    if args.json:
        out = d.to_json(num)
        out["power_law_edges"] = [{"x": float(e["x"]), "exponent": e["exponent"], "tolerance": e["tolerance"]}
                                  for e in power]
        out["at"] = typed  # each value as typed (1e-12, not 1/1000000000000)
        dump(out)
        return 0
    D = args.digits
    print(f"density of {args.expr}" + (f"  at  {', '.join(f'{k} = {v}' for k, v in typed.items())}" if at else ""))
    for lo, hi in d.support():
        show = [("< grid" if lo is None else mpmath.nstr(lo, D)), ("> grid" if hi is None else mpmath.nstr(hi, D))]
        print(f"support: [{show[0]}, {show[1]}]")
    for e in power:
        print(f"edge at {float(e['x']):.6g} (+- {e['tolerance']:.1g}, not certified): power law, "
              f"rho ~ |x - x0|^{e['exponent']:.2f} (estimated), not a square root")
    for a in d.atoms():
        print(f"atom at {mpmath.nstr(a['x'], D)}: mass {mpmath.nstr(a['mass'], D)}")
    step = max(1, len(xs) // 20)
    for x, v, st in list(zip(d.x, d.density, d.status))[::step]:
        shown = min(D, 12 if st == "float" else 15)  # a float64 point: the 12 digits it is checked to
        print(f"  x = {float(x):<12.6g} rho = {mpmath.nstr(v, shown) if v is not None else 'singular'}")
    if args.simulate:
        h = d.histogram
        print(f"histogram: n = {h['n']} ({h['side']} x {h['side']}), {h['trials']} trials, seed {h['seed']}, "
              f"{len(h['density'])} bins; fraction of eigenvalues outside the grid {h['outside']:.3g}")
    if args.plot is not None:
        print(f"figure: {args.plot}")
    sys.stdout.flush()
    return 0
