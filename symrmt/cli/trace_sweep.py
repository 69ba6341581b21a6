r"""``symrmt trace-sweep``: a trace-engine expression on a product grid, by the float64 batched path.

::

    symrmt trace-sweep 'EXPR' --matrix ... [--dim ...] --grid 'gamma=1e-3:10:400:log' [--grid 'c=1/2,2']
        [--at 'c=1/2'] [--certify K] [--seed S] [--json] [--out FILE]

The declarations are those of ``symrmt trace``, ``--grid NAME=SPEC`` those of ``symrmt sweep --grid``.  Every
point comes from :meth:`symrmt.engine.Model.sweep` (checked; a failing point recomputed at 15 certified digits
and marked ``fallback``; a point no path delivers marked with its reason, the sweep going on); output is a CSV
row per point (``value``, ``fallback``, ``error_estimate``, ``error``) or ``--json``; the exit code is 3 only
when every point fails.  The output and its values are in ``docs/engine.md`` section 15.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys

from symrmt.cli.common import MergeValues, EXIT_SOLVER, json_text, write_text
from symrmt.cli.sweeps import grid_spec
from symrmt.cli.trace import is_name, add_declarations, build_model, parse_at
from symrmt.errors import ParameterError
from symrmt.table import number_value, csv_param

__all__ = ["add_trace_sweep_parser", "cmd_trace_sweep"]


def _grid_entry(text: str):
    key, sep, spec = text.partition("=")
    key = key.strip()
    if not sep or not is_name(key, inner=True):
        raise argparse.ArgumentTypeError(f"--grid needs NAME=SPEC (e.g. gamma=1e-3:10:400:log); got {text!r}")
    return key, grid_spec(text, key, spec)


def add_trace_sweep_parser(sub, int_at_least):
    """Add the ``trace-sweep`` verb (declarations, ``--grid NAME=SPEC``, ``--certify``) to the subparsers ``sub``. Returns the verb's parser.

    >>> from symrmt.cli.common import Parser, int_at_least, number
    >>> sub = Parser(prog="symrmt").add_subparsers(dest="verb", parser_class=Parser)
    >>> _ = add_trace_sweep_parser(sub, int_at_least)
    >>> sub.choices["trace-sweep"].parse_args(["trace(Z.T*Z/n)", "--grid", "c=1/4,1/2"]).grid
    [('c', ['1/4', '1/2'])]
    """
    p = sub.add_parser(
        "trace-sweep",
        help="a trace-engine expression on a product grid of parameter values (float64 batched, checked)",
        description="The large-n limit of a trace-engine expression at every point of a product grid, by the "
        "float64 batched path: every point checked, a failing point recomputed by the certified mpmath path and "
        "marked. See docs/engine.md.",
    )
    p.add_argument("expr", metavar="EXPR", help="e.g. 'trace(inv(Z.T*Z/n + gamma*I(n)))'")
    add_declarations(p)
    p.add_argument("--grid", type=_grid_entry, action="append", required=True, metavar="NAME=SPEC",
                   help="an axis: V1,V2,... or LO:HI:K or LO:HI:K:log (repeatable; the product grid)")

    p.add_argument("--at", default=None, metavar="VALUES", action=MergeValues,
                   help="the other parameter values, e.g. 'c=1/2' (given twice, the values are merged)")
    p.add_argument("--certify", type=int_at_least("--certify", 0), default=0,
                   help="re-solve this many random points at 30 digits (the largest gap goes to stderr)")
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=None,
                   help="seed of the --certify sample (default 0)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_trace_sweep)
    return p


def cmd_trace_sweep(args) -> int:
    """``symrmt trace-sweep EXPR``: a trace-engine expression on a product grid, float64 batched, with an
    error estimate per point and the points it hands to the certified path.
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["trace-sweep", "trace(Z.T*Z/n)", "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n",
    ...       "--grid", "c=1/2,1"])   # tr(Z^T Z)/n^2 -> c
    c,value,fallback,error_estimate,error
    0.5,0.5,false,1.1e-16,
    1,1.0,false,1.1e-16,
    0
    """
    # import-time cost: the CLI's start loads no NumPy
    import numpy as np

    if args.seed is not None and not args.certify:
        raise ParameterError("--seed is the seed of the --certify sample: add --certify K")
    args.seed = 0 if args.seed is None else args.seed
    model = build_model(args.dim, args.matrix, args.vector, args.let)
    grid = {}
    for key, values in args.grid:
        if key in grid:
            raise ParameterError(f"--grid {key} given twice")
        grid[key] = values
    at_text = {}
    at = parse_at(args.at, at_text) if args.at else {}
    res = model.sweep(model.parse(args.expr), grid=grid, at=at, certify=args.certify, seed=args.seed,
                      on_error="mark")
    if res.certified_gap is not None:
        print(f"trace-sweep: {int(res.fallback.sum())} of {res.values.size} points solved by mpmath; largest "
              f"relative gap of {len(res.certified)} re-checked points from 30 digits: {res.certified_gap:.2g}",
              file=sys.stderr)
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.engine.routes.sweep import value_text

    names = list(grid)
    labels = {k: [_decimal_label(t, k) for t in res.axis_text[k]] for k in names}
    rows = []
    for i in range(res.values.size):
        fb, failed = bool(res.fallback.flat[i]), i in res.errors
        axes = [labels[k][int(j)] for k, j in zip(names, np.unravel_index(i, res.shape))]
        value = None if failed else (number_value(res.exact[i], 15) if i in res.exact else float(res.values.flat[i]))
        est = None if (fb or failed) else float(res.error_estimate.flat[i])
        rows.append(axes + [value, fb, est, res.errors.get(i)])
    cols = names + ["value", "fallback", "error_estimate", "error"]
    failed = len(res.errors)
    if args.json:
        text = json_text({"columns": cols, "rows": rows, "grid": grid, "expression": args.expr,
                          "at": at_text, "fallbacks": int(res.fallback.sum()), "failed": failed,
                          "certified_gap": res.certified_gap}) + "\n"
    else:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        for i, row in enumerate(rows):
            w.writerow(row[:-4] + [value_text(res, i), str(row[-3]).lower(),
                                   "" if row[-2] is None else f"{row[-2]:.2g}", row[-1] or ""])
        text = buf.getvalue()
    write_text(text, args.out, f" ({len(rows)} points)")
    if failed:
        first = min(res.errors)
        where = ", ".join(f"{k}={res.axis_text[k][int(j)]}" for k, j in zip(names, np.unravel_index(first, res.shape)))
        print(f"trace-sweep: warning: {failed} of {len(rows)} points could not be computed (marked in the column "
              f"error); the first, at {where}: {res.errors[first]}", file=sys.stderr)
    if failed == len(rows):
        return EXIT_SOLVER
    return 0


def _decimal_label(text: str, name: str) -> str:
    """An axis value for the CSV: as typed when it is a decimal a CSV reader takes as a number (``0.5``,
    ``1e-400``), else its exact value as a decimal of 15 significant digits (``1/3``, ``sqrt(2)``)."""
    try:
        float(text)
        return text
    except ValueError:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.engine.lang.tree import exact_value

        return csv_param(exact_value(text, name), 15)
