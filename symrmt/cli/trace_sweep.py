r"""``symrmt trace-sweep``: a trace-engine expression on a product grid, by the float64 batched path.

::

    symrmt trace-sweep 'EXPR' --matrix ... [--dim ...] --grid 'gamma=1e-3:10:400:log' [--grid 'c=1/2,2']
        [--at 'c=1/2'] [--certify K] [--seed S] [--json] [--out FILE]

The declarations are those of ``symrmt trace``; ``--grid NAME=SPEC`` (repeatable, the axes in that
order) takes the SPEC of ``symrmt sweep --grid``: ``V1,V2,...``, ``LO:HI:K`` (K evenly spaced values)
or ``LO:HI:K:log``.  Every point is computed by :meth:`symrmt.engine.Model.sweep`: the float64 batched
path, each point checked, a point failing its checks recomputed by the certified mpmath path (15
digits) and marked ``fallback``.  ``--certify K`` re-solves K random points at 30 digits and prints the
largest relative gap on stderr.  Output: CSV with one row per point (the axes, ``value``,
``fallback``, ``error_estimate``); ``--json``: ``{"columns", "rows", "grid", "at", "expression",
"fallbacks", "certified_gap"}``.  Values are float64: a batched point's estimated relative error is in
``error_estimate`` (at most ``1e-11``, else the point falls back); a fallback point carries 15
certified digits (``error_estimate`` empty, ``null`` in JSON).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys

from symrmt.errors import ParameterError

__all__ = ["add_trace_sweep_parser", "cmd_trace_sweep"]


def _grid_entry(text: str):
    from symrmt.cli.sweeps import grid_spec
    from symrmt.cli.trace import is_name

    key, sep, spec = text.partition("=")
    key = key.strip()
    if not sep or not is_name(key, inner=True):
        raise argparse.ArgumentTypeError(f"--grid needs NAME=SPEC (e.g. gamma=1e-3:10:400:log); got {text!r}")
    return key, grid_spec(text, key, spec)


def add_trace_sweep_parser(sub, int_at_least):
    from symrmt.cli.trace import add_declarations

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
    from symrmt.cli.common import MergeValues

    p.add_argument("--at", default=None, metavar="VALUES", action=MergeValues,
                   help="the other parameter values, e.g. 'c=1/2' (given twice, the values are merged)")
    p.add_argument("--certify", type=int_at_least("--certify", 0), default=0,
                   help="re-solve this many random points at 30 digits (the largest gap goes to stderr)")
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=0, help="seed of the --certify sample")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_trace_sweep)
    return p


def cmd_trace_sweep(args) -> int:
    from symrmt.cli.common import json_text, write_text
    from symrmt.cli.trace import build_model, parse_at

    model = build_model(args.dim, args.matrix, args.vector, args.let)
    grid = {}
    for key, values in args.grid:
        if key in grid:
            raise ParameterError(f"--grid {key} given twice")
        grid[key] = values
    at = parse_at(args.at) if args.at else {}
    res = model.sweep(model.parse(args.expr), grid=grid, at=at, certify=args.certify, seed=args.seed)
    if res.certified_gap is not None:
        print(f"trace-sweep: {int(res.fallback.sum())} of {res.values.size} points solved by mpmath; largest "
              f"relative gap of {args.certify} re-checked points from 30 digits: {res.certified_gap:.2g}",
              file=sys.stderr)
    names = list(grid)
    import numpy as np

    idx = np.indices(res.shape).reshape(len(names), -1)
    rows = []
    for i in range(res.values.size):
        fb = bool(res.fallback.flat[i])
        rows.append([grid[k][int(idx[a, i])] for a, k in enumerate(names)] +
                    [float(res.values.flat[i]), fb, None if fb else float(res.error_estimate.flat[i])])
    cols = names + ["value", "fallback", "error_estimate"]
    if args.json:
        text = json_text({"columns": cols, "rows": rows, "grid": grid, "expression": args.expr,
                          "at": {k: str(v) for k, v in at.items()}, "fallbacks": int(res.fallback.sum()),
                          "certified_gap": res.certified_gap}) + "\n"
    else:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        for row in rows:
            w.writerow(row[:-3] + [repr(row[-3]), str(row[-2]).lower(), "" if row[-1] is None else f"{row[-1]:.2g}"])
        text = buf.getvalue()
    write_text(text, args.out, f" ({len(rows)} points)")
    return 0
