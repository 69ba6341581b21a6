"""The CLI verbs over the model: ``hermite``, ``limit``, ``simulate``, ``store`` and ``demo`` (printing only)."""

from __future__ import annotations

import json
import math
import sys
import time
import warnings

from symrmt.cli.common import (
    EXIT_OK,
    EXIT_SOLVER,
    attention_of,
    brief,
    dump,
    geometry_of,
    nonlinearity_of,
    num,
    show,
    format_table,
    theory_limit,
)
from symrmt.cli.common import scheduler_of
from symrmt.cli.sweeps import base_geometry
from symrmt.cli.weights import cmd_limit_weights, weights_requested, cmd_simulate_weights
from symrmt.errors import NotDerived, ParameterError
from symrmt.models.attention.geometry_io import geometry_record
from symrmt.models.attention.geometry import Geometry, as_low_rank

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


def cmd_hermite(args) -> int:
    """``symrmt hermite``: the Hermite data of ``--f`` (``a_0 .. a_3``, ``nu``, ``d``), as text or ``--json``.
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["hermite", "--f", "t**2", "--center", "--digits", "5"])
    f(t) = t**2 - 1
    a_0 = 0.0
    a_1 = 0.0
    a_2 = 2.0
    ...
    0
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.hermite import hermite_report

    nl = nonlinearity_of(args)
    if args.prove:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.proofs.arb import require_flint

        require_flint()
    rep = hermite_report(nl, k=args.k, dps=args.digits, center=args.center)
    if args.prove:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.proofs.arb import ball_json, ball_text
        from symrmt.hermite.balls import prove_hermite_report

        balls = prove_hermite_report(nl, args.k, args.digits)
        if args.json:
            rep["proved"] = {"a": [ball_json(x, args.digits) for x in balls["a"]], "nu": ball_json(balls["nu"], args.digits),
                             "d": ball_json(balls["d"], args.digits) if balls["d"] is not None else None}
            dump(rep)
            return EXIT_OK
        print(f"f(t) = {nl.expr}  (proved balls)")
        for j, a in enumerate(balls["a"]):
            print(f"a_{j} = {ball_text(a, args.digits)}")
        print(f"nu  = {ball_text(balls['nu'], args.digits)}")
        print(f"d   = {ball_text(balls['d'], args.digits) if balls['d'] is not None else 'undefined'}")
        print(f"exact = {rep['exact']}")
        return EXIT_OK
    if args.json:
        dump(rep)
        return EXIT_OK
    print(f"f(t) = {nl.expr}")
    for j, a in enumerate(rep["a"]):
        print(f"a_{j} = {a}")
    print(f"nu  = {rep['nu']}")
    print(f"d   = {rep['d'] if rep['d'] is not None else 'undefined (f(t)/t has no finite limit)'}")
    print(f"exact = {rep['exact']}")
    return EXIT_OK


def cmd_limit(args) -> int:
    """``symrmt limit``: the certified limits ``E_A(gamma)`` and ``E_RR(gamma)`` (given weights: their own path).
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["limit", "--f", "tanh", "--c", "-1", "--gamma", "1"])   # c must be positive
    2
    """
    if weights_requested(args):
        return cmd_limit_weights(args)
    kind = attention_of(args)
    geom = geometry_of(args)
    test = getattr(args, "error", "train") == "test"
    if test and kind == "softmax":
        # import-time cost: the CLI's start loads no symrmt.models.attention.softmax_kernel
        from symrmt.models.attention.softmax_kernel import TEST_ERROR_REASON

        raise NotDerived(TEST_ERROR_REASON)
    if test and (args.prove or getattr(args, "prove_branch", False)):
        raise ParameterError("--prove is for the training errors; --error test values are certified, not proved")
    if kind == "softmax":
        # import-time cost: the CLI's start loads no symrmt.models.attention.softmax_kernel
        from symrmt.models.attention.softmax_kernel import check_mask, softmax_nonlinearity, softmax_text

        check_mask(args.mask)
        alpha = as_low_rank(geom).alpha
        solver_f, name, expr = softmax_nonlinearity(alpha), "softmax", softmax_text(alpha)
    else:
        nl = solver_f = nonlinearity_of(args)
        name, expr = nl.name, str(nl.expr)
    balls = None
    finite_n = getattr(args, "n", None)
    D = args.digits
    if finite_n is not None:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.models.attention.finite_n import finite_n_values
        from symrmt.models.attention.theory import ridge_limit

        if kind != "entrywise":
            raise ParameterError("--n (the finite-n prediction) covers the entry-wise kernel only, not the softmax")
        if test:
            raise NotDerived("the finite-n prediction (--n) is derived for the training error E_A only; the test "
                             "errors are limits (drop --n, or simulate at your n)")
        if args.prove or getattr(args, "prove_branch", False):
            raise ParameterError("--prove is for the limit; the finite-n prediction is a model's value, not provable")
        vals, agree, types = finite_n_values(name, args.c, list(args.gamma), geom, finite_n, args.diagonal, D)
        res = {"attention": vals, "ridge": ridge_limit(args.c, list(args.gamma), as_low_rank(geom).snr, D)}
    elif args.prove or getattr(args, "prove_branch", False):
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.models.attention.prove import prove_limit

        res, balls = prove_limit(solver_f, args.c, list(args.gamma), geometry=geom, diagonal=args.diagonal,
                                 digits=args.digits, branch=getattr(args, "prove_branch", False))
    elif test:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.models.attention.generalization import fresh_limit

        res = fresh_limit(solver_f, args.c, list(args.gamma), geom, args.diagonal, args.digits)
    else:
        limit = theory_limit()
        res = limit(solver_f, args.c, list(args.gamma), geometry=geom, diagonal=args.diagonal, digits=args.digits)
    # import-time cost: the CLI's start loads no symrmt.models.attention.finite_size
    from symrmt.models.attention.finite_size import finite_size_note

    note = finite_size_note(geom, args.c, softmax=kind == "softmax") if finite_n is None else None  # about the limit
    if note:
        print(f"symrmt limit: note: {note}", file=sys.stderr)
    params = {
        "attention": kind,
        "f": name,
        "expr": expr,
        "c": args.c,
        "geometry": geometry_record(geom, args.digits, exact=args.exact_params),
        "diagonal": args.diagonal,
        "digits": D,
        "error": "test" if test else "train",
    }
    if finite_n is not None:
        params.update({"n": finite_n, "types": 2 * types, "discretization_digits": agree})
    if args.json:
        out = {"gamma": list(args.gamma), "ridge": [num(x, D) for x in res["ridge"]]}
        if "attention" in res:
            out["attention"] = [num(x, D) for x in res["attention"]]
        if balls is not None:
            # import-time cost: the CLI's start loads no SymPy or NumPy
            from symrmt.models.attention.prove import balls_json

            out["proved"] = balls_json(balls, D)
        out["params"] = params
        if note:
            out["finite_size_note"] = note
        dump(out)
        return EXIT_OK
    geo_text = (", ".join(f"{k} = {brief(v)}" for k, v in params["geometry"].items()) if isinstance(geom, Geometry)
                else f"rank r = {geom.r}, alpha = {geom.alpha}, ||mu||^2 = {geom.snr}")
    head = (f"softmax attention (masked; its limit is the entry-wise one of f(t) = {expr})" if kind == "softmax"
            else f"f(t) = {expr}")
    if finite_n is not None:
        head = f"finite-n prediction at n = {finite_n} (E_A; E_RR is its limit), {head}"
    print(f"{head}, c = {args.c}, diagonal = {args.diagonal}, {geo_text}")
    att = res.get("attention")
    rows = []
    if balls is not None:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.models.attention.prove import BRANCH_NOTE
        from symrmt.proofs.arb import ball_text

        for i, g in enumerate(args.gamma):
            rows.append([g, ball_text(balls["attention"][i], D), ball_text(balls["ridge"][i], D)])
        print(format_table(["gamma", "E_A (attention, proved)", "E_RR (ridge, proved)"], rows))
        print(f"E_A: {BRANCH_NOTE[balls['branch']['attention']]}; E_RR: {BRANCH_NOTE[balls['branch']['ridge']]}")
        return EXIT_OK
    for i, g in enumerate(args.gamma):
        rows.append([g, show(att[i], D) if att is not None else "n/a", show(res["ridge"][i], D)])
    heads = ["T_A (attention, test)", "T_RR (ridge, test)"] if test else ["E_A (attention)", "E_RR (ridge)"]
    print(format_table(["gamma"] + heads, rows))
    if finite_n is not None:
        print(f"E_A: the model discretized over {2 * types} token types, to {D} digits; a coarser discretization "
              f"agrees on {agree} of them (discretization_digits)")
    if att is None:
        print("symrmt: the Attention limit is not available for these parameters", file=sys.stderr)
    return EXIT_OK


def cmd_simulate(args) -> int:
    """``symrmt simulate``: Monte-Carlo ``E_A`` and ``E_RR`` at ``--n`` tokens (means and standard errors).
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["simulate", "--f", "tanh", "--c", "1/2", "--gamma", "1"])   # --n is required
    2
    """
    if weights_requested(args):
        return cmd_simulate_weights(args)
    if args.n is None:
        raise ParameterError("--n is required (the number of tokens)")
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention.kernel_f import SimulationF
    from symrmt.simulation.executor import StaleTrialsWarning, report_stale
    from symrmt.models.attention.montecarlo import simulate

    kind = attention_of(args)
    scheduler_of(args)  # the scheduler's address and terms, before any work
    if args.grid is not None:
        return _simulate_grid(args, kind)
    for flag in ("compare", "plot", "over"):
        if getattr(args, flag):
            raise ParameterError(f"--{flag} is for a simulation over a grid (--grid KEY=SPEC)")
    missing = [f"--{k}" for k in ("c", "gamma") if getattr(args, k) is None]
    if missing:
        raise ParameterError(f"simulate needs {' and '.join(missing)} (or --grid KEY=SPEC for a grid)")
    parallel = args.workers > 1 or args.scheduler is not None
    if kind == "softmax":
        f, f_key, name = None, None, "softmax" if args.mask else "softmax (unmasked)"
        expr = "row-softmax(X^T W X/sqrt(p))" + (" with S_ii = -inf" if args.mask else "")
    else:
        nl = nonlinearity_of(args)  # validates f (parse, centering) before any simulation
        f = SimulationF(nl.text, nl.center) if parallel else nl.numpy()
        f_key, name, expr = f"expr:{nl.expr}", nl.name, str(nl.expr)
    geom = geometry_of(args)
    test = getattr(args, "error", "train") == "test"
    if test:
        if kind == "softmax" or parallel or args.store is not None:
            raise ParameterError("--error test simulates the entry-wise kernel in this process only "
                                 "(no --attention softmax, --workers, --scheduler or --store)")
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.models.attention.generalization import fresh_simulate

        res = fresh_simulate(f, args.n, args.c, list(args.gamma), geom, args.diagonal, args.trials, args.seed,
                            args.noise)
        res.update({"trials_computed": args.trials, "trials_reused": 0, "trials_stale": 0})
    with warnings.catch_warnings():  # reported below in one line
        warnings.simplefilter("ignore", StaleTrialsWarning)
        res = res if test else simulate(f, args.n, args.c, list(args.gamma), geometry=geom, diagonal=args.diagonal,
                       noise=args.noise, trials=args.trials, seed=args.seed, workers=args.workers, progress=None,
                       scheduler=scheduler_of(args), store=args.store, f_key=f_key, attention=kind, mask=args.mask)
    report_stale(res)
    params = dict(res["params"])
    params.update({"f": name, "expr": expr, "c": args.c, "gamma": list(args.gamma),
                   "workers": args.workers})
    params["geometry"] = geometry_record(geom, exact=args.exact_params)
    params["error"] = "test" if test else "train"
    if args.json:
        out = {
            key: {"mean": [float(x) for x in res[key]["mean"]], "se": [float(x) for x in res[key]["se"]]}
            for key in ("attention", "ridge")
        }
        out["params"] = params
        out.update({k: res[k] for k in ("trials_computed", "trials_reused", "trials_stale")})
        dump(out)
        return EXIT_OK
    if args.store is not None:
        print(f"store {args.store}: {res['trials_reused']} trial(s) reused, {res['trials_computed']} computed")
    head = f"{name} attention" if kind == "softmax" else f"f(t) = {expr}"
    print(f"{head}, n = {params['n']}, p = {params['p']}, c = {args.c}, trials = {args.trials}, "
          f"seed = {args.seed}, diagonal = {args.diagonal}, noise = {args.noise}")
    rows = []
    for i, g in enumerate(args.gamma):
        rows.append([
            g,
            f"{res['attention']['mean'][i]:.6f} ± {res['attention']['se'][i]:.1e}",
            f"{res['ridge']['mean'][i]:.6f} ± {res['ridge']['se'][i]:.1e}",
        ])
    heads = ["T_A (test, mean ± se)", "T_RR (test, mean ± se)"] if test else ["E_A (mean ± se)", "E_RR (mean ± se)"]
    print(format_table(["gamma"] + heads, rows))
    return EXIT_OK


def _simulate_grid(args, kind) -> int:
    """``symrmt simulate --grid ...``: every point of the grid (symrmt.simulate(grid=...)), with the limits
    (``--compare``) and a figure (``--plot``)."""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.models.attention.api import simulate as api_simulate

    if kind == "softmax":
        raise ParameterError("--grid is for the entry-wise kernel; simulate the softmax point by point")
    if args.over and not args.plot:
        raise ParameterError("--over is for --plot")
    grid = {}
    for key, values in args.grid:
        if key in grid:
            raise ParameterError(f"--grid {key} given twice")
        grid[key] = values
    for key in ("c", "gamma"):
        v = getattr(args, key)
        if v is not None:
            if key in grid:
                raise ParameterError(f"--{key} is fixed and also varies in --grid; drop one")
            grid[key] = (v if len(v) > 1 else v[0]) if isinstance(v, list) else v
    if args.plot:  # the axis, matplotlib and the figure's file checked before any simulation
        axes = [k for k, v in grid.items() if isinstance(v, list)]
        if args.over is not None and args.over not in axes:
            raise ParameterError(f"--over must be one of the grid's axes {axes}, got {args.over!r}")
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ParameterError("--plot needs matplotlib: pip install 'symrmt[plot]'") from None
        # import-time cost: the CLI's start loads no NumPy
        from symrmt.plotting import figure_path

        args.plot = figure_path(args.plot)
    base, extra = base_geometry(args, set(grid))
    nonlinearity_of(args)  # validates f (parse, centering) before any simulation
    res = api_simulate(args.f, grid={**extra, **grid}, geometry=base,
                       diagonal=args.diagonal, center=args.center, n=args.n, trials=args.trials, seed=args.seed,
                       noise=args.noise, workers=args.workers, scheduler=scheduler_of(args), store=args.store,
                       progress=None)
    cmp = res.compare(digits=15) if (args.compare or args.plot) else None
    keys = [a.split("=")[0] for a in res.axes]
    rows = []
    for i, pt in enumerate(res.points):
        row = {k: float(pt[k]) for k in keys}
        row.update({"p": res.p[i], "attention_mean": res.attention_flat[i], "attention_se": res.attention_se_flat[i],
                    "ridge_mean": res.ridge_flat[i], "ridge_se": res.ridge_se_flat[i]})
        if cmp is not None:
            row.update({"attention_limit": float(cmp.limits.attention.ravel()[i]),
                        "attention_gap": float(cmp.attention_gap.ravel()[i]),
                        "ridge_limit": float(cmp.limits.ridge.ravel()[i]),
                        "ridge_gap": float(cmp.ridge_gap.ravel()[i])})
        rows.append(row)
    if args.plot:
        # import-time cost: the CLI's start loads no NumPy
        from symrmt.plotting import need_matplotlib

        plt = need_matplotlib()
        ax = cmp.plot(over=args.over)
        ax.figure.savefig(args.plot, dpi=150, bbox_inches="tight")
        plt.close(ax.figure)
        print(f"wrote {args.plot}", file=sys.stderr)
    if args.json:
        dump({"columns": list(rows[0]), "rows": [list(r.values()) for r in rows],
              "params": {"f": res.f, "expr": res.expr, "n": res.n, "trials": res.trials, "seed": res.seed,
                         "noise": res.noise, "diagonal": res.diagonal, "grid": {k: [str(v) for v in vals]
                                                                               for k, vals in res.grid.items()}}})
        return EXIT_OK
    print(f"f(t) = {res.expr}, n = {res.n}, p = round(c n), trials = {res.trials}, seed = {res.seed}, "
          f"diagonal = {res.diagonal}, noise = {res.noise}")
    head = [*res.axes, "p", "E_A (mean ± se)", "E_RR (mean ± se)"]
    if cmp is not None:
        head += ["E_A limit", "gap/se", "E_RR limit", "gap/se"]
    table = []
    for r in rows:
        line = [f"{r[k]:.6g}" for k in keys] + [r["p"], f"{r['attention_mean']:.6f} ± {r['attention_se']:.1e}",
                                              f"{r['ridge_mean']:.6f} ± {r['ridge_se']:.1e}"]
        if cmp is not None:
            line += [f"{r['attention_limit']:.6f}", f"{r['attention_gap']:+.2f}", f"{r['ridge_limit']:.6f}",
                     f"{r['ridge_gap']:+.2f}"]
        table.append(line)
    print(format_table(head, table))
    return EXIT_OK


def cmd_store(args) -> int:
    """``symrmt store PATH``: the points a trial store holds and their trial counts.
    Takes the parsed arguments; returns the exit code.  Bad input raises ``ParameterError`` and a value
    that cannot be certified ``SolverError``, which :func:`symrmt.cli.app.main` prints in one line (exit 2, 3).

    >>> from symrmt.cli.app import main
    >>> main(["store", "/nonexistent/trials.sqlite"])
    2
    """
    # import-time cost: the CLI's start loads no NumPy
    from symrmt.simulation.store import TrialStore

    with TrialStore.open_existing(args.path) as st:
        rows = st.summary()
    if args.json:
        dump({"path": args.path, "points": rows, "trials": sum(r["trials"] for r in rows)})
        return EXIT_OK
    table = []
    for r in rows:
        par = dict(r["params"])
        head = [str(par.pop(k, "")) for k in ("n", "c", "seed")]
        rest = ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in sorted(par.items()))
        table.append([r["kind"], r["version"], *head, r["trials"], f"{r['seconds']:.1f}", rest])
    print(f"{args.path}: {len(rows)} point(s), {sum(r['trials'] for r in rows)} trial(s)")
    if table:
        print(format_table(["kind", "version", "n", "c", "seed", "trials", "trial s", "parameters"], table,
                     left=(0, 1, 7)))
    return EXIT_OK


def cmd_demo(args) -> int:
    """``symrmt demo``: one limit set against its simulation, with the Hermite data (a minute-long tour).
    Takes the parsed arguments; returns the exit code (0; 3 when the limit could not be computed, which is
    reported after the simulation, not raised).  (No doctest: it runs a simulation; ``tests/cli/test_app.py`` runs it.)"""
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.hermite import Nonlinearity
    from symrmt.models.attention.montecarlo import simulate

    cfg = DEMO
    D = cfg["digits"]
    nl = Nonlinearity(cfg["f"])
    geom = Geometry(snr=cfg["snr"])
    gammas = cfg["gammas"]
    print(f"symrmt demo: f = {cfg['f']}, c = {cfg['c']}, ||mu||^2 = {cfg['snr']}, W = I, diagonal = zero", file=sys.stderr)

    t0 = time.monotonic()
    theory, theory_err = None, None
    try:
        limit = theory_limit()
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
            rows_json.append({"error": key, "gamma": g, "theory": num(th, D) if th is not None else None,
                              "mean": mean, "se": se, "gap_over_se": gap(th, mean, se)})
    if args.json:
        dump({"rows": rows_json, "params": {**{k: v for k, v in cfg.items()}, "p": sim["params"]["p"]},
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
        print(format_table(["error", "gamma", f"limit ({D} digits)", "simulation (mean ± se)", "|gap|/se"], rows))
        print("|gap|/se = |simulation - limit| / se; with 8 trials at n = 256 values up to about 3 are ordinary "
              "(statistical error plus a finite-n bias).")
    if theory_err is not None:
        print(f"symrmt: the theory could not be computed: {theory_err}", file=sys.stderr)
        return EXIT_SOLVER
    return EXIT_OK
