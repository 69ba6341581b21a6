"""``symrmt limit/simulate --weights W.npy [--mu MU.npy]`` and ``--heads H --head-width D [--snr S | --mu MU.npy]``.

The flags and the verbs that read them.
"""

from __future__ import annotations

import mpmath

from symrmt.cli.common import GEOMETRY_FLAGS, attention_of, EXIT_OK, dump, format_table, nonlinearity_of
from symrmt.errors import NotDerived, ParameterError
from symrmt.models.attention.params import to_fraction, check_c

__all__ = ["add_weights", "weights_requested", "cmd_limit_weights", "cmd_simulate_weights"]


def add_weights(p):
    """The ``--weights``, ``--mu``, ``--heads`` and ``--head-width`` flags of ``limit`` and ``simulate``.

    >>> from symrmt.cli.common import Parser
    >>> p = Parser(prog="demo")
    >>> add_weights(p)
    >>> p.parse_args(["--heads", "2", "--head-width", "1/2"])
    Namespace(weights=None, mu=None, heads=2, head_width='1/2')
    """
    g = p.add_argument_group("general weights and heads")
    g.add_argument("--weights", metavar="W.npy", default=None,
                   help="a p x p weight matrix used as given, K_ij = f(x_i^T W x_j/sqrt(p))/sqrt(p) (file-trust "
                   "rule, at most 32 MiB and 2048 rows); p from the file, n = round(p/c)")
    g.add_argument("--mu", metavar="MU.npy", default=None,
                   help="the signal vector (length p, in the basis of --weights; file-trust rule); with --heads only "
                   "its norm enters (as --snr ||mu||^2 does)")
    g.add_argument("--heads", type=int, default=None, metavar="H",
                   help="H independent random heads W_h = Q_h K_h^T/sqrt(p d), Gaussian p x d Q_h, K_h, features "
                   "concatenated (1 <= H <= 8)")
    g.add_argument("--head-width", default=None, metavar="D", help="d/p for --heads (0 < D <= 64, e.g. 1/2)")


def weights_requested(args) -> bool:
    """Whether the arguments give weights of their own (``--weights``, ``--mu``, ``--heads``, ``--head-width``).

    >>> from types import SimpleNamespace
    >>> weights_requested(SimpleNamespace(weights=None, mu=None)), weights_requested(SimpleNamespace(weights="W.npy"))
    (False, True)
    """
    return any(getattr(args, k, None) is not None for k in ("weights", "mu", "heads", "head_width"))


def _check_plain(args):
    """Refuse flags the general-weights models do not take."""
    if args.weights is not None and args.heads is not None:
        raise ParameterError("give either --weights or --heads, not both")
    if args.weights is None and args.heads is None:
        raise ParameterError("--mu and --head-width need --weights or --heads")
    if args.heads is not None and args.head_width is None:
        raise ParameterError("--heads needs --head-width D (d = D p)")
    if args.weights is not None and args.head_width is not None:
        raise ParameterError("--head-width is for --heads")
    for name, _what in GEOMETRY_FLAGS:
        if to_fraction(getattr(args, name, "0"), f"--{name}") != 0:
            if name == "snr" and args.heads is not None:
                if args.mu is not None:
                    raise ParameterError("--heads: give the signal as --snr or as --mu, not both")
                continue
            raise ParameterError(f"--{name} is not taken with --weights/--heads (the weights are given"
                                 + ("; the signal is --mu)" if args.weights is not None else "; --heads takes --snr)"))
    for name in ("geometry", "alpha", "cos_muwk", "cos_muwq", "cos_wkwq"):
        if getattr(args, name, None) is not None:
            raise ParameterError(f"--{name.replace('_', '-')} is not taken with --weights/--heads")
    if getattr(args, "error", "train") != "train":
        raise ParameterError("--error test is not derived with --weights/--heads (their training error only)")
    if getattr(args, "grid", None):
        raise ParameterError("--grid is not taken with --weights/--heads (one point at a time)")

    args.attention = attention_of(args)
    softmax = args.attention == "softmax"
    if softmax and args.weights is not None:
        raise NotDerived("--attention softmax with --weights (a given W) is not derived: the softmax's entry-wise "
                         "kernel is the general-W kernel only once its diagonal and row normalization are redone "
                         "for that W; it is derived for random heads (--heads)")
    if softmax and getattr(args, "mask", True) is not True:
        raise ParameterError("--no-mask with --heads is not simulated here (the softmax heads are masked)")
    if args.diagonal != "zero":
        raise ParameterError("--diagonal keep with --weights/--heads is not derived (the diagonal is zero)")
    if args.f is None and not softmax:
        raise ParameterError("--f is needed with --weights/--heads")
    if getattr(args, "prove", False) or getattr(args, "prove_branch", False):
        raise ParameterError("--prove is not available with --weights/--heads")


def _heads_snr(args, p=None):
    """``||mu||^2`` for ``--heads``: ``--snr``, or the norm of ``--mu`` (of length ``p`` when given)."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention import weights as wm

    if args.mu is None:
        return wm.check_snr(getattr(args, "snr", "0"))
    mu = wm.signal_vector(args.mu, p)
    return 0 if mu is None else wm.signal_snr(mu)


def _f_record(args) -> dict:
    """``{"f": name, "expr": the f used}`` of an entry-wise ``--f`` (``--center`` shows in ``expr``), as
    ``limit`` and ``simulate`` without weights record it; empty for a softmax head (no ``--f``)."""
    if args.f is None:
        return {}
    nl = nonlinearity_of(args)  # validates f (parse, centering) before any solve or simulation
    return {"f": nl.name, "expr": str(nl.expr)}


def _num(x, D):
    return mpmath.nstr(x, D, strip_zeros=False) if not isinstance(x, float) else repr(x)


def cmd_limit_weights(args) -> int:
    """``symrmt limit`` with weights given by their entries (or independent heads), with or without a signal.
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["limit", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--weights", "/nonexistent.npy"])
    2
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention import weights as wm

    _check_plain(args)
    if getattr(args, "n", None) is not None:
        raise ParameterError("--n (the finite-n prediction) is not derived with --weights/--heads")
    D = args.digits
    if args.weights is not None:
        res = wm.weights_limit(args.f, args.c, list(args.gamma), args.weights, mu=args.mu, digits=D,
                               center=args.center)
        st = res["stats"]
        params = {"f": args.f, **_f_record(args), "c": str(args.c), "weights": args.weights, "p": res["p"], "n": str(res["n"]),
                  "s": _num(st["s"] if not hasattr(st["s"], "numerator") else float(st["s"]), 17),
                  "rho": _num(st["rho"], 17), "trace_W_over_p": _num(st["m"], 17), "tau": _num(st["tau"], 17),
                  "mu": args.mu, "snr": _num(float(st["snr"]), 17), "signal_eps": f"{float(st['signal_eps']):.4g}",
                  "value": "deterministic equivalent at p (E_A), limit (E_RR)", "digits": D}
    else:
        snr = _heads_snr(args)
        res = wm.heads_limit(args.f, args.c, list(args.gamma), args.heads, args.head_width, digits=D,
                             center=args.center, attention=args.attention, snr=snr)
        params = {"f": wm.SOFTMAX_HEAD_F, **_f_record(args), "c": str(args.c), "heads": args.heads,
                  "head_width": str(args.head_width), "snr": str(snr), "attention": args.attention, "value": "limit",
                  "digits": D}
    if args.json:
        dump({"gamma": list(args.gamma), "ridge": [_num(x, D) for x in res["ridge"]],
              "attention": [_num(x, D) for x in res["attention"]], "params": params})
        return EXIT_OK
    print(", ".join(f"{k} = {v}" for k, v in params.items()))
    rows = [[g, _num(a, D), _num(r, D)] for g, a, r in zip(args.gamma, res["attention"], res["ridge"])]
    print(format_table(["gamma", "E_A (attention)", "E_RR (ridge)"], rows))
    return EXIT_OK


def cmd_simulate_weights(args) -> int:
    """``symrmt simulate`` with weights given by their entries (or independent heads), with or without a signal.
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["simulate", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--n", "16", "--weights", "/nonexistent.npy"])
    2
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention import weights as wm

    _check_plain(args)
    if args.workers != 1 or args.scheduler is not None or args.store is not None:
        raise ParameterError("--workers, --scheduler and --store are not available with --weights/--heads")
    c = check_c(args.c)
    if args.weights is not None:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.engine.kernels.weights import check_weights
        from symrmt.models.attention.montecarlo import simulate

        W = check_weights(args.weights)
        mu = wm.signal_vector(args.mu, W.shape[0])
        p = W.shape[0]
        n = round(p / c)
        if args.n is not None and args.n != n:
            raise ParameterError(f"--n {args.n}: with --weights n = round(p/c) = {n} (p = {p} from the file)")
        if round(c * n) != p:
            raise ParameterError(f"no n gives round(c n) = p = {p} at c = {args.c}")
        res = simulate(nonlinearity_of(args).numpy(), n, c, list(args.gamma), weights=W, mu=mu, noise=args.noise,
                       trials=args.trials, seed=args.seed)
        params = {"n": n, "p": p, "weights": args.weights, "mu": args.mu, "trials": args.trials, "seed": args.seed}
    else:
        if args.n is None:
            raise ParameterError("--n is needed with --heads")
        snr = _heads_snr(args, round(c * args.n))
        res = wm.heads_simulate(args.f, args.n, c, list(args.gamma), args.heads, args.head_width,
                                trials=args.trials, seed=args.seed, noise=args.noise, center=args.center,
                                attention=args.attention, snr=snr)
        params = res["params"]
    params.update({"f": args.f, **_f_record(args), "c": str(args.c), "gamma": list(args.gamma)})
    out = {key: {"mean": [float(x) for x in res[key]["mean"]], "se": [float(x) for x in res[key]["se"]]}
           for key in ("attention", "ridge")}
    if args.json:
        out["params"] = params
        dump(out)
        return EXIT_OK
    print(", ".join(f"{k} = {v}" for k, v in params.items() if k != "gamma"))
    rows = [[g, f"{out['attention']['mean'][i]:.6f} ± {out['attention']['se'][i]:.1e}",
             f"{out['ridge']['mean'][i]:.6f} ± {out['ridge']['se'][i]:.1e}"] for i, g in enumerate(args.gamma)]
    print(format_table(["gamma", "E_A (mean ± se)", "E_RR (mean ± se)"], rows))
    return EXIT_OK
