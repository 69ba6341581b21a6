"""The CLI verbs around the model: ``latex``, ``verify``, ``bench``, ``figures`` and ``check`` (printing only)."""

from __future__ import annotations

import sys
import time

from symrmt.cli.common import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_OK, dump, format_table, int_at_least, write_text
from symrmt.cli.common import scheduler_of
from symrmt.derivations import DERIVATIONS, load_module
from symrmt.derivations.proved import proved_checks, not_proved_reason
from symrmt.latex import latex_of
from symrmt.errors import ParameterError

def cmd_latex(args) -> int:
    """``symrmt latex RESULT``: a result's LaTeX on stdout or ``--out``.  Takes the parsed arguments; returns 0.

    >>> from symrmt.cli.app import main
    >>> main(["latex", "nope"])   # not a result
    2
    """
    text = latex_of(args.result, args.standalone, explicit=args.explicit)
    write_text(text, args.out)
    return EXIT_OK


def cmd_verify(args) -> int:
    """``symrmt verify``: run the derivations' checks (``--only NAME``; ``--prove``: on balls).
    Takes the parsed arguments; returns the exit code (1 when a check fails).

    >>> from symrmt.cli.app import main
    >>> main(["verify", "--only", "nope"])
    2
    """
    names = args.only or list(DERIVATIONS)
    known = DERIVATIONS + ("pretrained",)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ParameterError(f"unknown derivation(s) {unknown}; known: {', '.join(known)}")
    if args.pretrained and "pretrained" not in names:
        names = list(names) + ["pretrained"]
    if "pretrained" in names:
        # import-time cost: the CLI's start loads no NumPy
        from symrmt.models.attention.pretrained import PretrainedUnavailable, default_weights_path

        try:
            default_weights_path()
            import safetensors  # noqa: F401
        except (PretrainedUnavailable, ImportError) as exc:
            raise ParameterError(f"--pretrained needs the optional extra: pip install 'symrmt[pretrained]' ({exc})") from None
    if args.prove:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.proofs.arb import require_flint

        require_flint()
    rows, unproved = [], []
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
        if args.prove:
            try:
                pc = proved_checks(name)
                if pc is None:
                    unproved.append(name)
                else:
                    rows.extend(pc.as_dicts())
            except Exception as exc:  # a proof that cannot be made is a failed proved check
                rows.append({"name": "proved: checks ran", "kind": "precision", "passed": False,
                             "measured": f"{type(exc).__name__}: {exc}"[:300], "derivation": name})
        print(f"[verify] {name} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    failed = [r for r in rows if not r["passed"]]
    reasons = {}
    if args.prove and unproved:
        reasons = {name: not_proved_reason(name) for name in unproved}
        for name, why in reasons.items():
            print(f"[verify] {name}: not re-run with --prove: {why}", file=sys.stderr)
    if args.json:
        dump({"checks": rows, "passed": len(rows) - len(failed), "failed": len(failed),
              **({"not_proved": unproved, "not_proved_why": reasons} if args.prove else {})})
    else:
        table = [(r["derivation"], r["name"], r["kind"], "PASS" if r["passed"] else "FAIL", r["measured"])
                 for r in rows]
        print(format_table(("derivation", "check", "kind", "result", "measured"), table, left=(0, 1, 2, 3, 4)))
        print(f"{len(rows) - len(failed)} passed, {len(failed)} failed")
    return EXIT_CHECK_FAILED if failed else EXIT_OK


def cmd_bench(args) -> int:
    """``symrmt bench``: the package's timings and precision claims (``--quick``, ``--json``, ``--out``).
    Takes the parsed arguments; returns 0.  (No doctest: it runs the benchmarks for minutes.)"""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.bench.run import main as bench_main

    bench_main(quick=args.quick, as_json=args.json, out=args.out)
    return EXIT_OK


def cmd_figures(args) -> int:
    """``symrmt figures``: the paper's figures as PNG and PDF in ``--out``; raises ``ParameterError`` without
    matplotlib.  Takes the parsed arguments; returns 0.

    The figure names are checked before any work:

    >>> from types import SimpleNamespace
    >>> cmd_figures(SimpleNamespace(only="ridge_eror"))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --only: unknown figure(s) ['ridge_eror']; choose from ...
    """
    try:
        import matplotlib  # noqa: F401  (the figures import it lazily; fail early and clearly)
    except ImportError as exc:
        raise ParameterError(f"figures need matplotlib: pip install 'symrmt[plot]' ({exc})") from exc
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.figures import main as figures_main

    only = None
    if args.only is not None:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.figures import FIGURES

        only = [x.strip() for x in args.only.split(",") if x.strip()]
        bad = [x for x in only if x not in FIGURES]
        if not only:
            raise ParameterError(f"--only: give at least one figure name; choose from {', '.join(FIGURES)}")
        if bad:
            raise ParameterError(f"--only: unknown figure(s) {bad}; choose from {', '.join(FIGURES)}")

    scheduler = scheduler_of(args)
    if args.workers is not None:
        # import-time cost: the CLI's start loads no symrmt.simulation.scheduler
        from symrmt.simulation.scheduler import check_workers

        check_workers(args.workers)
    for path in figures_main(args.out, full=args.full, progress=True, store=args.store, workers=args.workers,
                             scheduler=scheduler, only=only):
        print(path)
    return EXIT_OK


def add_check(sub):
    """Add the ``check`` verb and its flags to the subparsers ``sub``.

    >>> from symrmt.cli.common import Parser, int_at_least, number
    >>> sub = Parser(prog="symrmt").add_subparsers(dest="verb", parser_class=Parser)
    >>> add_check(sub)
    >>> a = sub.choices["check"].parse_args(["E_RR", "1/(1+gamma)", "--where", "c<1"])
    >>> a.quantity, a.kind, a.where, a.digits
    ('E_RR', 'value', 'c<1', 30)
    """
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
    p.add_argument("--points", type=int_at_least("--points", 1), help="numeric points (default 24; 12 for E_A, "
                   "m_A; 6 for E_A0)")
    p.add_argument("--digits", type=int_at_least("--digits", 15, "digits"), default=30, help="digits compared (default 30)")
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=0, help="seed of the points (default 0)")
    p.add_argument("--timeout", type=float, default=10.0, help="time limit of each symbolic attempt, s (default 10)")
    p.add_argument("--mc", action="store_true", help="Monte-Carlo run at the worst failing point")
    p.add_argument("--no-region", action="store_true", help="skip the bisection for the failing region")
    p.add_argument("--prove", action="store_true", help="prove the package's values as balls at the worst failing "
                   "points (a ball of LHS - RHS excluding 0 is a proved counterexample; needs python-flint)")
    p.add_argument("--latex", action="store_true", help="EXPR is LaTeX (else: auto-detected by a backslash)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.set_defaults(func=cmd_check)


def cmd_check(args) -> int:
    """``symrmt check QUANTITY EXPR``: a formula of the user's against the package (:func:`symrmt.check`).
    Takes the parsed arguments; returns 0 proved or verified, 1 disproved, 2 undecided or bad input.

    >>> from symrmt.cli.app import main
    >>> main(["check", "E_XX", "c"])   # not a quantity of the package
    2
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.check.core import check

    rep = check(args.quantity, args.expr, kind=args.kind, where=args.where, points=args.points,
                digits=args.digits, seed=args.seed, mc=args.mc, timeout=args.timeout,
                syntax="latex" if args.latex else "auto", region=not args.no_region, prove=args.prove)
    if args.json:
        dump(rep.as_dict())
    else:
        print(rep.text())
    return {"proved": EXIT_OK, "verified": EXIT_OK, "disproved": EXIT_CHECK_FAILED}.get(rep.status, EXIT_BAD_INPUT)
