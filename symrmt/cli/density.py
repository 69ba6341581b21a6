r"""``symrmt density``: the limiting spectral density of a symmetric matrix expression.

::

    symrmt density 'M' --over 'x=LO:HI:K' [--matrix ...] [--vector ...] [--let ...] [--dim ...] [--at ...]
        [--digits D] [--simulate --n N --trials T --seed S] [--plot FILE.png] [--json] [--certify K]

``rho(x) = lim_{eta -> 0+} (1/pi) Im tau((M - (x + i eta))^{-1})`` on ``K`` equally spaced points of
``[LO, HI]`` (``K`` at most :data:`symrmt.engine.density.MAX_POINTS`), each certified to ``D`` digits
(:mod:`symrmt.engine.density_solver`); the edges of the support found between grid points (to ``D`` digits)
and the atoms (at 0 when ``0`` is in the range, and at grid points where the solution diverges).  Every
text goes through the package's one restricted parser (the declarations ``--matrix``, ``--vector``, ``--let``
and ``--dim`` as in ``symrmt trace``, by :func:`symrmt.cli.trace.build_model`).  ``M`` may use the
``--let`` names; a vector in ``M`` is refused (a finite-rank term adds finitely many eigenvalues, of mass
0: it does not move the limiting density).

``--certify K``: certify every ``K``-th point only; the others are float64 values whose residual and
Stieltjes sign are checked (status ``"float"``, about 10 digits).  ``--simulate``: eigenvalue histogram of the same matrix at size ``n`` (``--n``, default 512) over
``--trials`` seeded draws, with the standard error of each bin, through the package's executor
(``--workers N``, ``--scheduler ADDRESS``) and trial store (``--store PATH``), as for ``symrmt trace``.  ``--plot FILE.png``: the figure
(matplotlib, ``pip install 'symrmt[plot]'``).  ``--json``: ``{"x", "density", "status", "support",
"atoms", "digits", "expression", "at"}`` (numbers as in ``trace``: floats up to 15 digits, decimal strings
above; a point on an edge or an atom is ``null`` with status ``"singular"``), and ``"histogram"`` with
``--simulate``.  Exit codes: 2 bad input, 3 a point could not be certified.
"""

from __future__ import annotations

import sys

from symrmt.errors import ParameterError

__all__ = ["add_density_parser", "cmd_density", "parse_over"]

def parse_over(text: str):
    """``'x=0:4:400'`` -> ``(name, [points])`` (:func:`symrmt.engine.density.grid_points`: ``LO``, ``HI`` exact
    numbers through the restricted parser, ``K`` at most :data:`symrmt.engine.density.MAX_POINTS`).

    Examples
    --------
    >>> parse_over("x=0:1:3")
    ('x', [Fraction(0, 1), Fraction(1, 2), Fraction(1, 1)])
    """
    from symrmt.cli.trace import split_assignment
    from symrmt.engine.density import grid_points

    name, rhs = split_assignment(text, "--over")
    if len(rhs.split(":")) != 3:
        raise ParameterError(f"--over: write NAME=LO:HI:K, e.g. x=0:4:400; got {text!r}")
    return name, grid_points(rhs, "--over", name)


def add_density_parser(sub, int_at_least):
    from symrmt.cli.common import add_simulation
    from symrmt.cli.trace import add_declarations

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
    from symrmt.cli.common import MergeValues

    p.add_argument("--at", default="", metavar="VALUES", action=MergeValues,
                   help="parameter values, e.g. 'c=1/2' (given twice, the values are merged)")
    p.add_argument("--digits", type=int_at_least("--digits", 1), default=15, help="digits to certify (default 15)")
    p.add_argument("--certify", type=int_at_least("--certify", 1), default=None, metavar="K",
                   help="certify every K-th point; the others are float64 values, checked (status float)")
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
    import mpmath

    from symrmt.cli.common import dump, num
    from symrmt.cli.trace import build_model, parse_at

    model = build_model(args.dim, args.matrix, args.vector, args.let)
    at = parse_at(args.at) if args.at.strip() else {}
    _, xs = parse_over(args.over)
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ParameterError("--plot needs matplotlib: pip install 'symrmt[plot]'") from None
    d = model.density(args.expr, x=xs, at=at, digits=args.digits, certify=args.certify)
    d.expression = args.expr
    if args.simulate:
        d.simulate(model, args.expr, n=args.n, trials=args.trials, seed=args.seed, store=args.store,
                   workers=args.workers, scheduler=args.scheduler)
    if args.plot is not None:
        d.plot(args.plot)
    if args.json:
        dump(d.to_json(num))
        return 0
    D = args.digits
    print(f"density of {args.expr}" + (f"  at  {', '.join(f'{k} = {v}' for k, v in at.items())}" if at else ""))
    for lo, hi in d.support():
        show = [("< grid" if lo is None else mpmath.nstr(lo, D)), ("> grid" if hi is None else mpmath.nstr(hi, D))]
        print(f"support: [{show[0]}, {show[1]}]")
    for a in d.atoms():
        print(f"atom at {mpmath.nstr(a['x'], D)}: mass {mpmath.nstr(a['mass'], D)}")
    step = max(1, len(xs) // 20)
    for x, v in list(zip(d.x, d.density))[::step]:
        print(f"  x = {float(x):<12.6g} rho = {mpmath.nstr(v, min(D, 15)) if v is not None else 'singular'}")
    if args.simulate:
        h = d.histogram
        print(f"histogram: n = {h['n']} ({h['side']} x {h['side']}), {h['trials']} trials, seed {h['seed']}, "
              f"{len(h['density'])} bins; fraction of eigenvalues outside the grid {h['outside']:.3g}")
    if args.plot is not None:
        print(f"figure: {args.plot}")
    sys.stdout.flush()
    return 0
