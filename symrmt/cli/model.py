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
from symrmt.models.attention.geometry_io import geometry_record
from symrmt.models.attention.geometry import Geometry

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
    from symrmt.hermite import hermite_report

    nl = nonlinearity_of(args)
    if args.prove:
        from symrmt.arb import require_flint

        require_flint()
    rep = hermite_report(nl, k=args.k, dps=args.digits, center=args.center)
    if args.prove:
        from symrmt.arb import ball_json, ball_text
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
    from symrmt.cli.weights import cmd_limit_weights, weights_requested

    if weights_requested(args):
        return cmd_limit_weights(args)
    kind = attention_of(args)
    geom = geometry_of(args)
    if kind == "softmax":
        from symrmt.models.attention.geometry import as_low_rank
        from symrmt.models.softmax.kernel import check_mask, softmax_nonlinearity, softmax_text

        check_mask(args.mask)
        alpha = as_low_rank(geom).alpha
        solver_f, name, expr = softmax_nonlinearity(alpha), "softmax", softmax_text(alpha)
    else:
        nl = solver_f = nonlinearity_of(args)
        name, expr = nl.name, str(nl.expr)
    balls = None
    if args.prove or getattr(args, "prove_branch", False):
        from symrmt.models.attention.prove import prove_limit

        res, balls = prove_limit(solver_f, args.c, list(args.gamma), geometry=geom, diagonal=args.diagonal,
                                 digits=args.digits, branch=getattr(args, "prove_branch", False))
    else:
        limit = theory_limit()
        res = limit(solver_f, args.c, list(args.gamma), geometry=geom, diagonal=args.diagonal, digits=args.digits)
    D = args.digits
    params = {
        "attention": kind,
        "f": name,
        "expr": expr,
        "c": args.c,
        "geometry": geometry_record(geom, args.digits, exact=args.exact_params),
        "diagonal": args.diagonal,
        "digits": D,
    }
    if args.json:
        out = {"gamma": list(args.gamma), "ridge": [num(x, D) for x in res["ridge"]]}
        if "attention" in res:
            out["attention"] = [num(x, D) for x in res["attention"]]
        if balls is not None:
            from symrmt.models.attention.prove import balls_json

            out["proved"] = balls_json(balls, D)
        out["params"] = params
        dump(out)
        return EXIT_OK
    geo_text = (", ".join(f"{k} = {brief(v)}" for k, v in params["geometry"].items()) if isinstance(geom, Geometry)
                else f"rank r = {geom.r}, alpha = {geom.alpha}, ||mu||^2 = {geom.snr}")
    head = (f"softmax attention (masked; its limit is the entry-wise one of f(t) = {expr})" if kind == "softmax"
            else f"f(t) = {expr}")
    print(f"{head}, c = {args.c}, diagonal = {args.diagonal}, {geo_text}")
    att = res.get("attention")
    rows = []
    if balls is not None:
        from symrmt.models.attention.prove import BRANCH_NOTE
        from symrmt.arb import ball_text

        for i, g in enumerate(args.gamma):
            rows.append([g, ball_text(balls["attention"][i], D), ball_text(balls["ridge"][i], D)])
        print(format_table(["gamma", "E_A (attention, proved)", "E_RR (ridge, proved)"], rows))
        print(f"E_A: {BRANCH_NOTE[balls['branch']['attention']]}; E_RR: {BRANCH_NOTE[balls['branch']['ridge']]}")
        return EXIT_OK
    for i, g in enumerate(args.gamma):
        rows.append([g, show(att[i], D) if att is not None else "n/a", show(res["ridge"][i], D)])
    print(format_table(["gamma", "E_A (attention)", "E_RR (ridge)"], rows))
    if att is None:
        print("symrmt: the Attention limit is not available for these parameters", file=sys.stderr)
    return EXIT_OK


def cmd_simulate(args) -> int:
    from symrmt.cli.weights import cmd_simulate_weights, weights_requested

    if weights_requested(args):
        return cmd_simulate_weights(args)
    if args.n is None:
        from symrmt.errors import ParameterError

        raise ParameterError("--n is required (the number of tokens)")
    from symrmt.models.attention.kernel_f import SimulationF
    from symrmt.simulation.executor import StaleTrialsWarning, report_stale
    from symrmt.models.attention.montecarlo import simulate

    from symrmt.cli.common import scheduler_of

    kind = attention_of(args)
    scheduler_of(args)  # the scheduler's address and terms, before any work
    parallel = args.workers > 1 or args.scheduler is not None
    if kind == "softmax":
        f, f_key, name = None, None, "softmax" if args.mask else "softmax (unmasked)"
        expr = "row-softmax(X^T W X/sqrt(p))" + (" with S_ii = -inf" if args.mask else "")
    else:
        nl = nonlinearity_of(args)  # validates f (parse, centering) before any simulation
        f = SimulationF(nl.text, nl.center) if parallel else nl.numpy()
        f_key, name, expr = f"expr:{nl.expr}", nl.name, str(nl.expr)
    geom = geometry_of(args)
    with warnings.catch_warnings():  # reported below in one line
        warnings.simplefilter("ignore", StaleTrialsWarning)
        res = simulate(f, args.n, args.c, list(args.gamma), geometry=geom, diagonal=args.diagonal,
                       noise=args.noise, trials=args.trials, seed=args.seed, workers=args.workers, progress=None,
                       scheduler=scheduler_of(args), store=args.store, f_key=f_key, attention=kind, mask=args.mask)
    report_stale(res)
    params = dict(res["params"])
    params.update({"f": name, "expr": expr, "c": args.c, "gamma": list(args.gamma),
                   "workers": args.workers})
    params["geometry"] = geometry_record(geom, exact=args.exact_params)
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
    print(format_table(["gamma", "E_A (mean ± se)", "E_RR (mean ± se)"], rows))
    return EXIT_OK


def cmd_store(args) -> int:
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
