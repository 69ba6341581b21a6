r"""``symrmt icl``: the ICL error of ridgeless linear attention on in-context linear regression.

::

    symrmt icl --alpha A --kappa K --tau T --rho R [--digits D] [--json]
    symrmt icl --alpha A --kappa K --tau T --rho R --simulate --d D [--trials N] [--seed S] [--json]
               [--workers W | --scheduler ADDRESS] [--store PATH]

Without ``--simulate``: the ``d -> oo`` ridgeless limit (the paper's Result 1) to ``D`` significant digits; with
it, the model simulated at token dimension ``d`` through the package's executor and trial store.  Exit codes: 2
bad input (``tau = 1`` is the pole of the limit), 3 a value that could not be certified.  The flags, the JSON
records and the exit codes are in ``docs/icl.md`` section 4.

>>> from symrmt.cli.app import main
>>> main(["icl", "--alpha", "1", "--kappa", "1/2", "--tau", "2", "--rho", "0.1", "--digits", "12", "--json"])
... # doctest: +ELLIPSIS
{"error": 1.47104594562, "alpha": "1", "kappa": "1/2", "tau": "2", "rho": "1/10", "branch": "above", ...}
0
"""

from __future__ import annotations

import warnings

from symrmt.cli.common import EXIT_OK, add_executor, dump, num, scheduler_of, simulation_flags
from symrmt.errors import ParameterError

__all__ = ["add_icl_parser", "cmd_icl"]


def add_icl_parser(sub, int_at_least, number) -> None:
    """Add the ``icl`` verb (``--alpha --kappa --tau --rho``, ``--simulate --d --trials --seed``, and where the
    simulation runs: ``--workers``/``--scheduler``, ``--store``) to the subparsers ``sub``.

    >>> from symrmt.cli.common import Parser, int_at_least, number
    >>> sub = Parser(prog="symrmt").add_subparsers(dest="verb", parser_class=Parser)
    >>> add_icl_parser(sub, int_at_least, number)
    >>> a = sub.choices["icl"].parse_args(["--alpha", "2", "--kappa", "1", "--tau", "3", "--rho", "1/10"])
    >>> a.alpha, a.rho, a.simulate
    ('2', '1/10', False)
    """
    p = sub.add_parser("icl", help="ICL error of ridgeless linear attention (in-context linear regression)",
                       description="The ridgeless d -> oo limit of the in-context-learning error of linear attention "
                       "(Lu, Letey, Zavatone-Veth, Maiti, Pehlevan 2025, Result 1): ell = alpha d examples per "
                       "context, k = kappa d pretraining tasks, n = tau d^2 pretraining contexts, label noise of "
                       "variance rho. --simulate: the model at finite d. See docs/icl.md.")
    p.add_argument("--alpha", required=True, type=number("--alpha"), help="context length over d (> 0)")
    p.add_argument("--kappa", required=True, type=number("--kappa"), help="pretraining tasks over d (> 0)")
    p.add_argument("--tau", required=True, type=number("--tau"), help="pretraining contexts over d^2 (> 0, != 1)")
    p.add_argument("--rho", required=True, type=number("--rho"), help="label-noise variance (>= 0)")
    p.add_argument("--digits", type=int_at_least("--digits", 1, "digits"), default=15,
                   help="significant digits of the limit (default 15, at most 975)")
    p.add_argument("--simulate", action="store_true", help="simulate the model at finite d instead")
    p.add_argument("--d", type=int_at_least("--d", 2), default=None, help="token dimension (with --simulate)")
    p.add_argument("--trials", type=int_at_least("--trials", 2), default=None,
                   help="independent pretraining draws (with --simulate, default 10)")
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=None, help="root seed (with --simulate, default 0)")
    p.add_argument("--store", metavar="PATH", default=None,
                   help="trial store (SQLite file) for --simulate: reuse stored trials, keep each new one")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    add_executor(p)
    p.set_defaults(func=cmd_icl)


def _typed(args) -> str:
    """``alpha = .., kappa = .., tau = .., rho = ..`` as typed (``1e-300``, not its exact fraction), as ``limit``
    and ``simulate`` print their parameters."""
    return ", ".join(f"{k} = {getattr(args, k)}" for k in ("alpha", "kappa", "tau", "rho"))


def cmd_icl(args) -> int:
    """``symrmt icl``: the ICL error's ``d -> oo`` limit (``--simulate``: also the model at finite ``d``).
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["icl", "--alpha", "1", "--kappa", "1", "--tau", "3/10", "--rho", "0", "--digits", "8"])
    alpha = 1, kappa = 1, tau = 3/10, rho = 0  (ridgeless limit, tau < 1)
    e_ICL = 1.0639281
    0
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.icl.simulation import icl_simulate
    from symrmt.models.icl.theory import icl_limit
    from symrmt.simulation.executor import StaleTrialsWarning, report_stale

    simulation_flags(args)  # --trials, --seed: refused without --simulate, else their defaults
    if not args.simulate:
        for flag in ("d", "store", "scheduler"):
            if getattr(args, flag) is not None:
                raise ParameterError(f"--{flag} is a simulation flag: add --simulate")
        if args.workers > 1:
            raise ParameterError("--workers is a simulation flag: add --simulate")
        r = icl_limit(args.alpha, args.kappa, args.tau, args.rho, digits=args.digits)
        if args.json:
            dump(r.to_dict(num))
            return EXIT_OK
        print(f"{_typed(args)}  "
              f"(ridgeless limit, tau {'<' if r.branch == 'below' else '>'} 1)")
        print(f"e_ICL = {r}")
        return EXIT_OK
    if args.d is None:
        raise ParameterError("--simulate needs --d (the token dimension)")
    scheduler = scheduler_of(args)  # the scheduler's address and terms, before any work
    with warnings.catch_warnings():  # reported below in one line
        warnings.simplefilter("ignore", StaleTrialsWarning)
        s = icl_simulate(args.alpha, args.kappa, args.tau, args.rho, d=args.d, trials=args.trials, seed=args.seed,
                         workers=args.workers, scheduler=scheduler, store=args.store, progress=None)
    report_stale({"trials_stale": s.trials_stale})
    theory = None if s.tau == 1 else icl_limit(args.alpha, args.kappa, args.tau, args.rho, digits=15)
    gap = None if theory is None or s.se == 0 else (s.mean - float(theory.error)) / s.se
    if args.json:
        rec = s.to_dict()
        rec["theory"] = None if theory is None else num(theory.error, 15)
        rec["gap_se"] = gap
        dump(rec)
        return EXIT_OK
    print(f"{_typed(args)}; d = {s.d}: ell = {s.ell}, "
          f"k = {s.k}, n = {s.n} contexts, {s.p} features")
    print(f"e_ICL (simulated, {s.trials} trials) = {s.mean:.6g} +- {s.se:.2g} (se)")
    if theory is not None:
        print(f"e_ICL (d -> oo limit)            = {float(theory.error):.10g}   gap = {gap:+.2f} se")
    else:
        print("no d -> oo value at tau = 1 (the pole of the ridgeless limit)")
    return EXIT_OK
