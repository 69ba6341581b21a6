"""The ``sweep`` and ``crossings`` verbs of the CLI (argparse and printing over :mod:`symrmt.models.attention.sweeps`
and :mod:`symrmt.models.attention.boundary`).

``symrmt sweep --f tanh --grid c=0.1:4:12:log --grid snr=0,1,4 --gamma 1`` prints a CSV
(``--json`` for JSON) with one row per grid point; ``symrmt crossings --f relu --over c
--between 0.1,8 --gamma 1 --snr 1`` prints every crossing ``E_A = E_RR``.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import warnings
from fractions import Fraction

import mpmath

from symrmt.cli.common import add_attention, add_f, add_geometry, add_output, attention_of, dump, geometry_of, num
from symrmt.cli.common import int_at_least, json_text, number, write_text
from symrmt.errors import FiniteSizeWarning, ParameterError
from symrmt.models.attention.geometry import as_low_rank
from symrmt.models.attention.params import to_fraction
from symrmt.table import csv_param, is_long, param_text

GRID_HELP = ("KEY=SPEC, repeatable: KEY one of c, gamma, snr, wk2, wq2, wkwq, muwk, muwq, cos_muwk, cos_muwq, "
             "cos_wkwq; SPEC a list V1,V2,... or LO:HI:K (K evenly spaced values) or LO:HI:K:log (log-spaced)")


def _g12(x) -> str:
    """An mpf to 12 significant digits, as a decimal literal (``%.12g`` style, any exponent)."""
    m = mpmath.nstr(x, 12, min_fixed=-4, max_fixed=12)
    m = m.replace(".0e", "e")
    return m[:-2] if m.endswith(".0") else m


def grid_entry(text: str):
    """``KEY=SPEC`` -> ``(KEY, [values as strings])`` (exact decimals/fractions; log-spaced values rounded to 12 digits).

    Raises ``argparse.ArgumentTypeError`` (argparse prints it, exit 2) for another key or a SPEC it cannot read.

    >>> grid_entry("gamma=0.1:1:3"), grid_entry("gamma=1e-2:1:3:log")
    (('gamma', ['1/10', '11/20', '1']), ('gamma', ['1e-2', '0.1', '1']))
    >>> grid_entry("foo=1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --grid needs KEY=SPEC with KEY in c, gamma, snr, wk2, wq2, wkwq, muwk, muwq, cos_muwk, cos_muwq, cos_wkwq; got 'foo=1'
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention.sweeps import GRID_KEYS

    key, sep, spec = text.partition("=")
    key = key.strip()
    if not sep or key not in GRID_KEYS:
        raise argparse.ArgumentTypeError(f"--grid needs KEY=SPEC with KEY in {', '.join(GRID_KEYS)}; got {text!r}")
    return key, grid_spec(text, key, spec)


def grid_spec(text: str, key: str, spec: str) -> list:
    """The values (strings) of one ``--grid`` SPEC: ``V1,V2,...``, ``LO:HI:K`` or ``LO:HI:K:log``.

    ``text`` is the whole ``--grid`` word (for the message), ``key`` the parameter.  Raises
    ``argparse.ArgumentTypeError``.

    >>> grid_spec("c=1/4,1/2", "c", "1/4, 1/2"), grid_spec("c=0:1:3", "c", "0:1:3")
    (['1/4', '1/2'], ['0', '1/2', '1'])
    >>> grid_spec("c=1:2", "c", "1:2")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --grid 'c=1:2': use LO:HI:K or LO:HI:K:log
    >>> grid_spec("c=0:1:3:log", "c", "0:1:3:log")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --grid 'c=0:1:3:log': a log-spaced range needs LO, HI > 0
    """
    spec = spec.strip()
    try:
        if ":" in spec:
            parts = spec.split(":")
            if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] != "log"):
                raise ValueError("use LO:HI:K or LO:HI:K:log")
            lo, hi = to_fraction(parts[0], key), to_fraction(parts[1], key)
            try:
                k = int(parts[2])
            except ValueError:
                raise ValueError(f"K must be an integer, got {parts[2].strip()!r}") from None
            if k < 1 or k > 10_000:
                raise ValueError(f"K must be in 1..10000, got {k}")
            if len(parts) == 4:
                if lo <= 0 or hi <= 0:
                    raise ValueError("a log-spaced range needs LO, HI > 0")
                # in mpmath: float(1e-400) underflows to 0 (and math.log(0) is a domain error)
                with mpmath.workdps(30):
                    a = mpmath.log(mpmath.mpf(lo.numerator) / lo.denominator)
                    b = mpmath.log(mpmath.mpf(hi.numerator) / hi.denominator)
                    inner = [_g12(mpmath.exp(a + (b - a) * i / (k - 1))) for i in range(1, k - 1)]
                ends = parts[0].strip(), parts[1].strip()  # as the user wrote them
                values = [ends[0]] if k == 1 else [ends[0], *inner, ends[1]]
            else:
                values = [str(lo + (hi - lo) * Fraction(i, k - 1)) for i in range(k)] if k > 1 else [str(lo)]
        else:
            values = [s.strip() for s in spec.split(",")]
            if any(not s for s in values):
                raise ValueError("empty entry")
            for s in values:
                to_fraction(s, key)
    except (ValueError, ParameterError) as exc:
        raise argparse.ArgumentTypeError(f"--grid {text!r}: {exc}") from None
    return values


def add_parsers(sub) -> None:
    """Register ``sweep`` and ``crossings`` on the CLI's subparsers.

    >>> from symrmt.cli.common import Parser, int_at_least, number
    >>> sub = Parser(prog="symrmt").add_subparsers(dest="verb", parser_class=Parser)
    >>> add_parsers(sub)
    >>> a = sub.choices["sweep"].parse_args(["--f", "tanh", "--grid", "c=1/4,1/2", "--gamma", "1"])
    >>> a.f, a.grid, a.gamma
    ('tanh', [('c', ['1/4', '1/2'])], '1')
    >>> sorted(sub.choices)
    ['crossings', 'sweep']
    """
    p = sub.add_parser("sweep", help="limits of E_A and E_RR over a product grid (CSV or JSON)",
                       description="Certified limits of E_A and E_RR at every point of a product grid of c, gamma, "
                       "the Gram entries and the angles (symrmt.sweep). CSV on stdout (one row per point), or JSON.")
    add_f(p, required=False)
    add_attention(p, simulate=False)
    p.add_argument("--grid", type=grid_entry, action="append", required=True, metavar="KEY=SPEC", help=GRID_HELP)
    p.add_argument("--c", type=number("--c"), default=None, metavar="C", help="fixed c (unless in --grid)")
    p.add_argument("--gamma", type=number("--gamma"), default=None, metavar="G",
                   help="fixed gamma (unless in --grid)")
    add_geometry(p)
    p.add_argument("--diagonal", choices=("zero", "keep"), default="zero", help="K_ii = 0 (zero, default) or kept")
    add_output(p)
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--prove", action="store_true", help="prove every value: columns attention_rad, ridge_rad "
                   "(CSV) or a 'proved' record (JSON) of balls proved to contain the limits (needs python-flint: "
                   "pip install 'symrmt[prove]'; not with --fast)")
    p.add_argument("--fast", action="store_true", help="the vectorised float64 solver (float64 values, not "
                   "certified digits; rank-one geometries)")
    p.add_argument("--certify", type=int_at_least("--certify", 0), default=None, metavar="K",
                   help="with --fast: re-solve K random points at 30 digits and report the largest relative gap "
                   "on stderr (default 8; 0 skips it)")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("crossings", help="every crossing E_A = E_RR in an interval",
                       description="Scans the interval, brackets each sign change of E_A - E_RR and refines it to "
                       "--digits digits on certified values (symrmt.crossings).")
    add_f(p, required=False)
    add_attention(p, simulate=False)
    p.add_argument("--over", required=True, metavar="KEY", help="the parameter that varies (c, gamma, snr, a Gram "
                   "entry or cos_muwk, cos_muwq, cos_wkwq); KEY1=KEY2 (or KEY1,KEY2) ties them to one value, e.g. "
                   "--over cos_muwk=cos_muwq for w_K = w_Q at a varying angle to mu")
    p.add_argument("--between", required=True, metavar="A,B", help="the interval, A < B")
    p.add_argument("--c", type=number("--c"), default=None, metavar="C", help="fixed c (unless --over c)")
    p.add_argument("--gamma", type=number("--gamma"), default=None, metavar="G",
                   help="fixed gamma (unless --over gamma)")
    add_geometry(p)
    p.add_argument("--diagonal", choices=("zero", "keep"), default="zero", help="K_ii = 0 (zero, default) or kept")
    p.add_argument("--scan", type=int_at_least("--scan", 2), default=None,
                   help="scan points (default 24, or 257 with --fast)")
    p.add_argument("--fast", action="store_true", help="scan with the vectorised float64 solver (rank-one "
                   "geometries), then certify and polish each bracket as without it: same guarantee on the roots")
    spacing = p.add_mutually_exclusive_group()
    spacing.add_argument("--log", dest="log", action="store_true", default=None, help="log-spaced scan")
    spacing.add_argument("--linear", dest="log", action="store_false", help="evenly spaced scan")
    add_output(p)
    p.set_defaults(func=cmd_crossings)


def base_geometry(args, varying):
    """The geometry flags as (base geometry, the non-zero rank-one values not also varying): for the verbs that
    take a grid (``sweep``, ``simulate --grid``).

    Raises :class:`~symrmt.errors.ParameterError` for a value both fixed and varying.

    >>> from types import SimpleNamespace
    >>> flags = dict(geometry=None, alpha=None, snr="1", wk2="0", wq2="0", wkwq="0", muwk="0", muwq="0")
    >>> base_geometry(SimpleNamespace(**flags), ("gamma",))
    (None, {'snr': '1'})
    >>> base_geometry(SimpleNamespace(**flags), ("snr",))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --snr is fixed and also varies; drop one
    """
    return _base(args, varying)


def _base(args, varying):
    """The geometry flags as (base geometry, the non-zero rank-one values not also varying)."""
    if getattr(args, "geometry", None) is not None or getattr(args, "alpha", None) is not None:
        return geometry_of(args), {}
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention.sweeps import GRAM_KEYS

    values = {}
    for key in GRAM_KEYS:
        v = getattr(args, key)
        if to_fraction(v, key) != 0:
            if key in varying:
                raise ParameterError(f"--{key} is fixed and also varies; drop one")
            values[key] = v
    for key in ("cos_muwk", "cos_muwq", "cos_wkwq"):  # the angle flags, where this version has them
        v = getattr(args, key, None)
        if v is not None:
            if key in varying:
                raise ParameterError(f"--{key.replace('_', '-')} is fixed and also varies; drop one")
            values[key] = v
    return None, values


def _f_of(args, base):
    """``--f``, or for ``--attention softmax`` its entry-wise equivalent ``exp(t - 1/2) - 1`` (alpha = 1 only)."""
    if attention_of(args) != "softmax":
        return args.f
    # import-time cost: the CLI's start loads no symrmt.models.attention.softmax_kernel
    from symrmt.models.attention.softmax_kernel import check_mask, softmax_text

    check_mask(args.mask)
    if base is not None and as_low_rank(base).alpha != 1:
        raise ParameterError("sweep and crossings with --attention softmax need alpha = 1 (the softmax's "
                             "exp(t - alpha^2/2) - 1 is centered only at its own scale); use limit for alpha != 1")
    return softmax_text(1)


def _fixed(args, varying) -> dict:
    out = {}
    for key in ("c", "gamma"):
        v = getattr(args, key)
        if v is not None:
            if key in varying:
                raise ParameterError(f"--{key} is fixed and also varies; drop one")
            out[key] = v
    return out


def _csv_params(cells, args) -> list:
    """The parameter cells of a CSV row as decimals a CSV reader takes as numbers (``1/3`` ->
    ``0.333333333333333``, at ``--digits``: a full-precision decimal string above 15); exact fractions with
    ``--exact-params``."""
    if args.exact_params:
        return list(cells)

    return [csv_param(Fraction(c), args.digits) if isinstance(c, str) and "/" in c else c for c in cells]


def _text(x, digits) -> str:
    return repr(x) if isinstance(x, float) else mpmath.nstr(x, digits)


def json_number(x, digits):
    """The JSON value of one error of a sweep: a float as it is (the ``--fast`` path's float64 values); an mpmath
    value, at ``digits <= 15`` and inside the float64 normal range, as its float; else :func:`~symrmt.cli.common.num`'s
    decimal string (``1e-400`` is never written as ``0.0``, ``2e400`` never as ``inf``).

    >>> import mpmath
    >>> json_number(0.5, 30), json_number(mpmath.mpf("0.25"), 12), json_number(mpmath.mpf("1e-400"), 12)
    (0.5, 0.25, '1.0e-400')
    """
    if isinstance(x, float):  # the --fast path's float64 values
        return x
    if digits <= 15 and mpmath.isfinite(x) and (x == 0 or sys.float_info.min <= abs(x) <= sys.float_info.max):
        return float(x)
    return num(x, digits)  # outside the normal float range: a decimal string, never 0.0 or inf


def cmd_sweep(args) -> int:
    """``symrmt sweep``: the limits over a product grid of ``--grid KEY=SPEC`` entries (``--fast``: float64).
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["sweep", "--f", "tanh", "--grid", "gama=1"])   # an unknown grid key
    2
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.proofs.arb import ball_parts
    from symrmt.models.attention.prove import balls_json
    from symrmt.models.attention.sweeps import sweep

    grid = {}
    for key, values in args.grid:
        if key in grid:
            raise ParameterError(f"--grid {key} given twice")
        grid[key] = values
    if args.certify is not None and not args.fast:
        raise ParameterError("--certify K re-checks the float64 path: add --fast (the certified path checks every point)")
    if args.certify is None:
        args.certify = 8
    base, extra = _base(args, set(grid))
    fixed = _fixed(args, set(grid))
    res = sweep(_f_of(args, base), {**extra, **fixed, **grid}, geometry=base, diagonal=args.diagonal, digits=args.digits,
                center=args.center, fast=args.fast, certify=args.certify, prove=args.prove)
    if res.fast and res.certified_gap is not None:
        print(f"fast path: {sum(res.fallback)} of {len(res.points)} points solved by mpmath; largest relative gap "
              f"of {min(args.certify, len(res.points))} re-checked points from 30 digits: {res.certified_gap:.2g}", file=sys.stderr)
    cols = list(res.columns)
    if hasattr(res.points, "text"):  # the fast path: each exact grid value formatted once
        rows = [list(row) for row in zip(*[res.points.text(k) for k in cols[:-2]], res.attention_mp, res.ridge_mp)]
    else:
        # a long parameter (an irrational inner product) as a decimal at --digits, unless --exact-params
        text_of = {}

        def ptext(v):
            if v not in text_of:
                text_of[v] = param_text(v, args.digits, exact=args.exact_params)
            return text_of[v]

        rows = [[ptext(p[k]) for k in cols[:-2]] + [a, r]
                for p, a, r in zip(res.points, res.attention_mp, res.ridge_mp)]
    if args.json:
        text = json_text({
            "columns": cols,
            "rows": [row[:-2] + [json_number(row[-2], args.digits), json_number(row[-1], args.digits)] for row in rows],
            "grid": {k: [param_text(to_fraction(v, k.split("=")[0]), args.digits) for v in vals]
                     for k, vals in res.grid.items()},  # exact when short (1/3), a decimal when long (1e-400)
            "params": {"f": res.f, "expr": res.expr, "diagonal": res.diagonal, "digits": res.digits,
                       "fixed": {k: param_text(to_fraction(v, k), args.digits, exact=args.exact_params)
                                 for k, v in res.fixed.items()}},
            **({"proved": balls_json(res.balls, args.digits)} if res.balls is not None else {}),
        }) + "\n"
    else:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        if res.balls is not None:  # the balls' midpoints and radii (a ball [mid ± rad] per value)
            w.writerow(cols + ["attention_rad", "ridge_rad"])
            for row, ba, br in zip(rows, res.balls["attention"], res.balls["ridge"]):
                (ma, ra), (mr, rr) = ball_parts(ba, args.digits), ball_parts(br, args.digits)
                w.writerow(_csv_params(row[:-2], args) + [ma, mr, ra, rr])
        else:
            w.writerow(cols)
        for row in (rows if res.balls is None else []):
            w.writerow(_csv_params(row[:-2], args) + [_text(row[-2], args.digits), _text(row[-1], args.digits)])
        text = buf.getvalue()
    write_text(text, args.out, f" ({len(rows)} points)")
    return 0


def cmd_crossings(args) -> int:
    """``symrmt crossings``: every point of ``--between A,B`` where ``E_A = E_RR``, certified.
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["crossings", "--f", "tanh", "--over", "c", "--between", "1"])
    2
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention.boundary import crossings

    parts = [s.strip() for s in args.between.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ParameterError(f"--between needs A,B; got {args.between!r}")
    keys = tuple(k.strip() for k in args.over.replace(",", "=").split("="))
    over = keys if len(keys) > 1 else keys[0]
    base, extra = _base(args, set(keys))
    fixed = _fixed(args, set(keys))

    with warnings.catch_warnings():  # the note goes to stderr in one line below
        warnings.simplefilter("ignore", FiniteSizeWarning)
        res = crossings(_f_of(args, base), over=over, between=tuple(parts), geometry=base, diagonal=args.diagonal,
                        digits=args.digits, center=args.center, scan=args.scan, log=args.log, fast=args.fast,
                        **fixed, **extra)
    if res.finite_size_note:
        print(f"symrmt crossings: note: {res.finite_size_note}", file=sys.stderr)

    if args.json:
        dump({
            "roots": [json_number(r, args.digits) if args.digits <= 15 else mpmath.nstr(r, args.digits) for r in res.roots],
            "directions": list(res.directions),
            "brackets": [[mpmath.nstr(lo, args.digits + 5), mpmath.nstr(hi, args.digits + 5)] for lo, hi in res.brackets],
            "found": len(res.roots),
            "summary": res.summary(),
            "params": {"f": res.f, "expr": res.expr, "over": res.over, "between": [param_text(x, args.digits) if is_long(x) else str(x) for x in res.between],
                       "fixed": {k: param_text(to_fraction(v, k), args.digits, exact=args.exact_params)
                                 for k, v in res.fixed.items()}, "diagonal": res.diagonal,
                       "digits": res.digits, "scan": len(res.scan_x), "fast": res.fast},
            **({"finite_size_note": res.finite_size_note} if res.finite_size_note else {}),
        })
    else:
        print(res)
    return 0

