r"""The public API: ``symrmt.limit``, ``symrmt.simulate``, ``symrmt.sweep`` and ``symrmt.crossings``.

Checked wrappers over the theory and the simulation that take the same arguments and return result objects
carrying their inputs.  ``f`` is a preset name (``"tanh"``, ``"relu"``, ...), an expression string in ``t``
(read by the restricted parser, never ``eval``), a SymPy expression in ``t`` or a
:class:`~symrmt.hermite.Nonlinearity` (``simulate`` also takes a vectorized NumPy callable); ``gamma`` is a
number, list or array; ``c`` and the geometry's entries are read exactly (a float as the decimal it prints as).

Examples
--------
>>> import symrmt
>>> th = symrmt.limit("tanh", 0.5, [0.1, 1.0], symrmt.Geometry(snr=1), digits=20)
>>> sim = symrmt.simulate("tanh", 0.5, [0.1, 1.0], symrmt.Geometry(snr=1), n=128, trials=4, seed=1)
>>> cmp = sim.compare(th)
>>> cmp.attention_gap.shape, bool(cmp.max_gap < 10)
((2,), True)
"""

from __future__ import annotations

import time
import warnings
from fractions import Fraction
from functools import partial

from symrmt.errors import FiniteSizeWarning, NotDerived, ParameterError
from symrmt.models.attention.finite_n import finite_n_values
from symrmt.models.attention.finite_size import finite_size_note
from symrmt.models.attention.generalization import check_error, fresh_limit, fresh_simulate
from symrmt.models.attention.geometry import as_geometry, as_low_rank
from symrmt.models.attention.kernel_f import as_nonlinearity, simulation_f
from symrmt.models.attention.montecarlo import check_attention, simulate as _simulate
from symrmt.models.attention.params import check_c, check_diagonal, check_gammas
from symrmt.models.attention.prove import prove_limit
from symrmt.models.attention.sim_sweep import simulate_grid
from symrmt.models.attention.softmax_kernel import TEST_ERROR_REASON, check_mask, check_softmax_f, softmax_nonlinearity
from symrmt.models.attention.theory import attention_limit, ridge_limit
from symrmt.models.attention.weights import limit_with_weights, simulate_with_weights
from symrmt.parsing import check_digits
from symrmt.progress import progress_bar
from symrmt.proofs.arb import require_flint
from symrmt.results import LimitResult, SimulationResult

__all__ = ["limit", "simulate", "as_nonlinearity", "gamma_values"]

#: the model text of masked softmax attention in the result objects (``LimitResult.expr``, ``SimulationResult.expr``)
SOFTMAX_EXPR = "masked row-softmax(X^T W X/sqrt(p))"

#: limit calls with more gamma values than this show a progress bar (auto mode)
PROGRESS_MIN_GAMMAS = 8


def gamma_values(gamma) -> tuple:
    """``gamma`` (a number, a string, a list or a NumPy array) as a tuple of exact positive Fractions.

    Raises :class:`~symrmt.errors.ParameterError` for an empty list or a value that is not positive
    (:func:`symrmt.models.attention.params.check_gammas`).

    >>> import numpy as np
    >>> gamma_values(np.array([1.0, 0.5])), gamma_values("1/10")
    ((Fraction(1, 1), Fraction(1, 2)), (Fraction(1, 10),))
    >>> gamma_values([0])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: gamma must be positive (the probe needs gamma > 0), got 0.0
    """
    if hasattr(gamma, "tolist"):  # NumPy arrays and scalars: plain Python numbers, read as typed
        gamma = gamma.tolist()
    if not isinstance(gamma, (list, tuple)):
        gamma = [gamma]
    return check_gammas(list(gamma))


def _geometry(geometry, values=None):
    """The geometry argument and the entry keywords (``snr=1``): :func:`symrmt.models.attention.geometry.as_geometry`."""
    return as_geometry(geometry, **(values or {}))


def _number(x):
    return x.item() if hasattr(x, "item") else x


def limit(f, c, gamma, geometry=None, diagonal: str = "zero", digits: int = 15, center: bool = False,
          progress: bool | None = None, prove: bool = False, *, attention: str = "entrywise", mask: bool = True,
          error: str = "train", n: int | None = None, weights=None, mu=None, heads=None, head_width=None,
          **values):
    r"""Certified limits of the Attention error ``E_A(gamma)`` and the ridge error ``E_RR(gamma)``.

    Parameters
    ----------
    f : str, sympy.Expr or Nonlinearity
        The nonlinearity (see the module docstring).
    c : number or str
        ``p/n > 0``.
    gamma : number, list or NumPy array
        Ridge parameters, each ``> 0``.
    geometry : Geometry, LowRankGeometry or dict, optional
        The Gram data of ``mu`` and the weights; default ``mu = 0``, ``W = I``.  A dict gives
        the entries (``{"snr": 1, "wk2": 1}``, cosines ``cos_muwk``, ... too, or ``{"gram": ..., "alpha": ...}``).
    diagonal : {"zero", "keep"}
    digits : int
        Significant digits certified for every value (each is solved at two working
        precisions that must agree; see :mod:`symrmt.models.attention.theory`).
    center : bool
        Subtract ``a_0 = E f(xi)`` from ``f`` (the theory needs a centered ``f``).
    progress : bool or None
        Progress bar (``None``: auto, for more than 8 values of ``gamma`` that take a while).
    **values
        Entries of a rank-one geometry as keywords, as :func:`symrmt.crossings` and
        :func:`symrmt.sweep` take them: ``snr=1``, ``wk2=``, ``wq2=``, ``wkwq=``, ``muwk=``, ``muwq=``,
        ``cos_muwk=``, ``cos_muwq=``, ``cos_wkwq=`` (on top of ``geometry``; each entry once).
    weights, mu, heads, head_width : (keyword only)
        ``weights``: a ``p x p`` array (or ``.npy`` path) used as given, ``K = f(X^T W X/sqrt(p))/sqrt(p)``,
        ``n = p/c``: the deterministic equivalent at that size; ``mu`` its signal, a vector in the basis of
        ``W`` (answered while its size ``max(||W mu||, ||W^T mu||, |mu^T W mu|)/(s sqrt(p))`` is at most 0.2,
        else :class:`~symrmt.models.attention.weights.NotDerived`; ``docs/theory.md`` section 14).
        ``heads=H, head_width=D``: ``H`` independent random heads ``W_h = Q_h K_h^T/sqrt(p d)``,
        ``d = D p``.  Both return a :class:`~symrmt.models.attention.weights.WeightsResult`
        (:mod:`symrmt.models.attention.weights`; ``geometry`` and ``prove`` are not taken).
    prove : bool or "branch"
        Also prove every value: ``.balls`` holds ``flint.arb`` balls proved to contain the limits
        (:mod:`symrmt.models.attention.prove`; needs python-flint, ``pip install 'symrmt[prove]'``).
        ``"branch"``: also the attention branch by continuation (``.balls["branch"]["attention"]`` is
        ``"continued"`` when every point's chain of boxes closes; slower, see ``docs/prove.md``).
    attention : {"entrywise", "softmax"} (keyword only)
        ``"softmax"``: masked softmax attention ``K = (n/sqrt(p)) row-softmax(X^T W X/sqrt(p))``
        (``f`` must be ``None``, ``diagonal`` ``"zero"``); its limit is the entry-wise limit of
        ``exp(t - alpha^2/2) - 1`` (:mod:`symrmt.models.softmax`, ``docs/theory.md``).
    mask : bool (keyword only)
        Softmax only; ``False`` (the unmasked model) is refused: it has no limit in this scaling.
    error : {"train", "test"} (keyword only)
        ``"train"`` (default): the interpolation errors ``E_A, E_RR``.  ``"test"``: the errors of the
        same trained readouts on a fresh sequence of ``n`` tokens, ``T_A, T_RR``
        (:mod:`symrmt.models.attention.generalization`, ``docs/theory.md`` section 12), returned in the
        same fields (``attention_mp``, ``ridge_mp``; ``.error == "test"``).  Refused with the softmax
        and with ``prove`` (not derived there).
    n : int, optional (keyword only)
        The finite-size prediction at ``n`` tokens (``p = round(c n)``) instead of the limit: ``E_A`` with
        the signal kept inside ``f`` (:mod:`symrmt.models.attention.finite_n`; ``E_RR`` stays its limit,
        ``.n`` is set; ``digits`` are digits of the value of the discretized model, at most 15, more
        raise ``PrecisionError``).  Covered: ``f`` in tanh, erf, the centered ReLU, ``diagonal="zero"``,
        ``mu``, ``w_K = w_Q`` collinear, ``n >= 256``; anything else is refused with a ``ParameterError``
        naming the reason.

    Returns
    -------
    LimitResult

    Raises
    ------
    ParameterError
        Bad input (named in the message).
    symrmt.SolverError
        (``ConvergenceError``, ``BranchError``, ``PrecisionError``): no certified value could be
        computed; the message says what failed and what to try.

    Examples
    --------
    >>> import symrmt
    >>> r = symrmt.limit("relu", "1/2", [1], digits=30)
    >>> r.digits, r.attention_mp[0] < r.ridge_mp[0]
    (30, False)
    """
    if weights is not None or mu is not None or heads is not None or head_width is not None:
        if error != "train" or n is not None:
            raise NotDerived("weights=, mu=, heads= give the training error's limit; the test error (error='test') "
                             "and the finite-n prediction (n=) are not derived for them")

        return limit_with_weights(f, c, gamma, weights=weights, mu=mu, heads=heads, head_width=head_width,
                                  digits=digits, center=center, other=(geometry, values, diagonal, prove, attention))

    t0 = time.monotonic()

    attention = check_attention(attention)

    error = check_error(error)
    if error == "test" and attention == "softmax":
        raise NotDerived(TEST_ERROR_REASON)
    if error == "test" and prove:
        raise ParameterError("prove is for the training errors; the test errors are certified, not proved")
    geom = _geometry(geometry, values)
    if n is not None:
        if error == "test":
            raise NotDerived("the finite-n prediction (n=) is derived for the training error E_A only; the test "
                             "errors are limits (drop n=, or simulate at your n)")
        return _finite_n_limit(f, c, gamma, geom, diagonal, digits, center, prove, attention, n, t0)
    if attention == "softmax":
        check_softmax_f(f)
        check_mask(mask)
        if center:
            raise ParameterError("center is for the entry-wise kernel; the softmax's f is centered by construction")
        if diagonal != "zero":
            raise ParameterError("diagonal='keep' is not for the softmax: its zero diagonal is the mask")
        alpha = as_low_rank(geom).alpha
        solver_f = softmax_nonlinearity(alpha)
        # the same model text as symrmt.simulate(attention="softmax"), so that .compare matches them
        name, expr, centered = "softmax", SOFTMAX_EXPR, True
    else:
        if mask is not True:
            raise ParameterError("mask is for attention='softmax' only")
        nl = solver_f = as_nonlinearity(f, center)
        name, expr, centered = nl.name, str(nl.expr), nl.center
    cf = check_c(_number(c))
    gs = gamma_values(gamma)
    diagonal = check_diagonal(diagonal)

    digits = check_digits(digits)  # the one digits rule: an integer (NumPy too) in [1, LIMITS['digits']]
    snr = as_low_rank(geom).snr
    if prove:
        require_flint()  # before any work: without python-flint this is bad input (how to install it)
    balls = {"attention": {}, "ridge": {}}
    att_branch = []
    # continuation runs from large gamma down: hand the solver descending chunks, so the progress bar
    # moves while each chunk starts from the solutions of the previous one
    order = sorted(set(gs), reverse=True)
    chunk = max(1, len(order) // 20)
    values = {}
    enabled = progress if progress is not None else (None if len(order) > PROGRESS_MIN_GAMMAS else False)
    with progress_bar(len(order), f"limit {name}", enabled=enabled) as bar:
        for i in range(0, len(order), chunk):
            part = order[i:i + chunk]
            if prove:
                vals, bl = prove_limit(solver_f, cf, part, geom, diagonal, digits, branch=prove == "branch")
                att_branch.append(bl["branch"]["attention"])
                att, rr = vals["attention"], vals["ridge"]
                balls["attention"].update(zip(part, bl["attention"]))
                balls["ridge"].update(zip(part, bl["ridge"]))
            elif error == "test":
                res = fresh_limit(solver_f, cf, part, geom, diagonal, digits)
                att, rr = res["attention"], res["ridge"]
            else:
                att = attention_limit(solver_f, cf, part, geom, diagonal, digits)
                rr = ridge_limit(cf, part, snr, digits)
            values.update({g: (a, r) for g, a, r in zip(part, att, rr)})
            bar.update(len(part))

    note = finite_size_note(geom, cf, softmax=attention == "softmax")
    if note:
        warnings.warn(note, FiniteSizeWarning, stacklevel=2)
    def recompute(gammas, digits_at):  # the same model at other gamma (a plot's fine grid)
        exact = [Fraction(str(g)) for g in gammas]
        return (attention_limit(solver_f, cf, exact, geom, diagonal, digits_at),
                ridge_limit(cf, exact, snr, digits_at))

    return LimitResult(f=name, expr=expr, center=centered, c=cf, gamma_exact=gs, geometry=geom, finite_size_note=note,
                       recompute=recompute,
                       diagonal=diagonal, digits=digits, attention_mp=tuple(values[g][0] for g in gs),
                       ridge_mp=tuple(values[g][1] for g in gs), seconds=time.monotonic() - t0, error=error,
                       balls=({"attention": [balls["attention"][g] for g in gs], "ridge": [balls["ridge"][g] for g in gs],
                               "branch": {"attention": "continued" if att_branch and all(b == "continued" for b in att_branch)
                                          else "sanity", "ridge": "isolated"}} if prove else None))


def _finite_n_limit(f, c, gamma, geom, diagonal, digits, center, prove, attention, n, t0):
    """``limit(..., n=N)``: the finite-n prediction of E_A (:mod:`symrmt.models.attention.finite_n`)."""
    if attention != "entrywise":
        raise ParameterError("n (the finite-n prediction) covers the entry-wise kernel only, not the softmax")
    if prove:
        raise ParameterError("prove is for the limit; the finite-n prediction is a model's value, not provable")
    nl = as_nonlinearity(f, center)
    cf = check_c(_number(c))
    gs = gamma_values(gamma)
    diagonal = check_diagonal(diagonal)
    digits = check_digits(digits)
    vals, _, _ = finite_n_values(nl.name, cf, gs, geom, _number(n), diagonal, digits)
    shown = digits
    rr = ridge_limit(cf, gs, as_low_rank(geom).snr, shown)
    att = tuple(vals)
    return LimitResult(f=nl.name, expr=str(nl.expr), center=nl.center, c=cf, gamma_exact=gs, geometry=geom,
                       diagonal=diagonal, digits=shown, attention_mp=att, ridge_mp=tuple(rr),
                       seconds=time.monotonic() - t0, n=int(_number(n)))


def simulate(f, c=None, gamma=None, geometry=None, diagonal: str = "zero", center: bool = False, *, n: int = 512,
             trials: int = 10, seed: int = 0, noise: str = "gaussian", workers: int = 1,
             progress: bool | None = None, attention: str = "entrywise", mask: bool = True, grid: dict | None = None,
             store=None, scheduler=None, error: str = "train", weights=None, mu=None, heads=None, head_width=None,
             **values):
    """Monte-Carlo estimates of ``E_A(gamma)`` and ``E_RR(gamma)`` at finite ``n`` (``p = round(c n)``).

    The same model and arguments as :func:`limit`, plus the sampling ones; the result
    compares against a :class:`~symrmt.results.LimitResult` with ``.compare``.

    With ``grid`` (a dict read as :func:`symrmt.sweep` reads it: ``{"snr": [0, 1, 4], "gamma": [0.1, 1],
    "c": 0.5}``) every point of the grid is simulated (``c``, ``gamma`` and ``**values`` may be given
    there or as arguments) and the result is a
    :class:`~symrmt.models.attention.sim_sweep.SimulationSweep`: ``.compare()`` sets it against a
    :func:`symrmt.sweep` of the limits, ``.plot(over=...)`` draws both, with error bars, over any
    swept parameter.  ``store`` (a trial-store path) and ``scheduler`` (a Dask scheduler) as for
    ``symrmt simulate --store/--scheduler``.

    Parameters
    ----------
    f : str, sympy.Expr, Nonlinearity or callable
        As for :func:`limit`, or a vectorized NumPy function (float64 array in, same shape out); with
        ``weights=`` or ``heads=``, a name, an expression or a :class:`Nonlinearity` only (that path
        normalizes ``f`` by its Hermite data).
    c, gamma, geometry, diagonal, center
        As for :func:`limit`.
    n : int
        Number of tokens (default 512).
    trials : int
        Independent trials, ``>= 2``.
    seed : int
        Root seed: trial ``j`` uses child ``j`` of ``numpy.random.SeedSequence(seed)``.
    noise : {"gaussian", "rademacher"}
    workers : int
        Processes (``f`` given as text is rebuilt in each worker).
    progress : bool or None
        Progress bar (``None``: auto).
    **values
        Geometry entries as keywords (``snr=1``, ...), as for :func:`limit`.
    attention : {"entrywise", "softmax"}
        ``"softmax"``: the masked row softmax (``f`` must be ``None``), as in :func:`limit`.
    mask : bool
        Softmax only: ``False`` simulates the unmasked model (which has no limit).
    grid : dict, optional (keyword only)
        Simulate every point of this grid (keys and values as :func:`symrmt.sweep` takes them; ``c``,
        ``gamma`` and ``**values`` may be given here or as arguments, each once); entry-wise kernel only.
    store : str or Path, optional (keyword only)
        A trial store (SQLite file): stored trials of the same point and seed are reused, new ones kept.
    scheduler : str, optional (keyword only)
        A running Dask scheduler's address: the trials run on its workers.
    error : {"train", "test"}
        ``"test"``: the readouts trained on each trial's sequence are tested on a fresh sequence of
        ``n`` tokens (:func:`symrmt.models.attention.generalization.fresh_simulate`); the test errors fill the
        same fields.  Entry-wise kernel, ``workers=1`` only.
    weights, mu, heads, head_width
        As for :func:`limit` (``weights``: ``n = round(p/c)`` from its size, ``n`` is then not used;
        ``heads``: fresh ``Q_h, K_h`` each trial); a :class:`~symrmt.models.attention.weights.WeightsResult`.

    Returns
    -------
    SimulationResult, or SimulationSweep with ``grid``

    Examples
    --------
    >>> import symrmt
    >>> s = symrmt.simulate("relu", 0.5, [0.1, 1], n=64, trials=3, seed=0)
    >>> s.p, s.attention_trials.shape
    (32, (3, 2))
    >>> g = symrmt.simulate("tanh", grid={"c": 0.5, "gamma": 1, "snr": [0, 1]}, n=32, trials=2)
    >>> g.shape, g.attention.shape
    ((2,), (2,))
    """
    if weights is not None or mu is not None or heads is not None or head_width is not None:
        if grid is not None or error != "train":
            raise ParameterError("weights=, mu=, heads= simulate training errors at one point: not with grid= or "
                                 "error='test'")
        if mask is not True:
            raise ParameterError("mask=False with weights=/heads= is not simulated here (the softmax heads are "
                                 "masked, as their limit is)")

        return simulate_with_weights(f, c, gamma, weights=weights, mu=mu, heads=heads, head_width=head_width,
                                     n=n, trials=trials, seed=seed, noise=noise, center=center,
                                     other=(geometry, values, diagonal, attention, workers))
    if grid is not None:
        if attention != "entrywise" or mask is not True:
            raise ParameterError("simulate(grid=...) is for the entry-wise kernel; simulate a softmax point by point")
        if error != "train":
            raise ParameterError("simulate(grid=...) simulates training errors; simulate a test error point by point "
                                 "(error='test' without grid=)")
        grid = dict(grid) if isinstance(grid, dict) else grid
        if isinstance(grid, dict):
            for key, v in (("c", c), ("gamma", gamma)):
                if v is not None:
                    if key in grid:
                        raise ParameterError(f"{key} is given twice: in grid and as an argument")
                    grid[key] = v
        return simulate_grid(f, grid, geometry=geometry, diagonal=diagonal, center=center, n=n, trials=trials,
                             seed=seed, noise=noise, workers=workers, scheduler=scheduler, store=store,
                             progress=progress, **values)
    if c is None or gamma is None:
        raise ParameterError("simulate needs c and gamma (or a grid=, as sweep takes it)")

    t0 = time.monotonic()

    attention = check_attention(attention)

    error = check_error(error)
    if error == "test" and (attention == "softmax" or workers != 1):
        raise ParameterError("error='test' simulates the entry-wise kernel in this process only "
                             "(attention='entrywise', workers=1)")
    repeatable = True
    if attention == "softmax":
        check_softmax_f(f)
        if center:
            raise ParameterError("center is for the entry-wise kernel; the softmax fixes the kernel")
        fn, centered = None, True
        name = "softmax" if mask is True else "softmax (unmasked)"
        expr = SOFTMAX_EXPR if mask is True else "unmasked row-softmax(X^T W X/sqrt(p))"
    elif callable(f) and not hasattr(f, "free_symbols"):  # a NumPy callable (SymPy objects have free_symbols)
        fn, name, expr, centered = f, getattr(f, "__name__", repr(f)), repr(f), False
        repeatable = False  # a Python callable: no re-run at another n (SimulationResult.at_size says so)
        if center:
            raise ParameterError("center=True needs f in symbolic form (a preset or an expression), not a callable")
    else:
        nl = as_nonlinearity(f, center)
        name, expr, centered = nl.name, str(nl.expr), nl.center
        fn = simulation_f(nl) if workers != 1 else nl.numpy()
    cf = check_c(_number(c))
    gs = gamma_values(gamma)
    geom = _geometry(geometry, values)
    f_key = None
    if store is not None and attention != "softmax" and repeatable:
        f_key = f"expr:{expr}"  # the key `symrmt simulate --store` uses
    if error == "test":
        if store is not None or scheduler is not None:
            raise ParameterError("error='test' simulates in this process: store= and scheduler= are not taken")
        raw = fresh_simulate(fn, n, cf, list(gs), geom, check_diagonal(diagonal), trials, seed, noise)
        repeatable = False
    else:
        raw = _simulate(fn, n, cf, list(gs), geometry=geom, diagonal=diagonal, noise=noise, trials=trials, seed=seed,
                        workers=workers, progress=progress, attention=attention, mask=mask, store=store,
                        scheduler=scheduler, f_key=f_key)
    par = raw["params"]
    again = None
    if repeatable:  # the same point at another n (SimulationResult.at_size)
        again = partial(_simulate_at, f, cf, gs, geom, par["diagonal"], center, trials=par["trials"],
                        seed=par["seed"], noise=par["noise"], attention=attention, mask=mask)
    return SimulationResult(f=name, expr=expr, center=centered, c=cf, gamma_exact=gs, geometry=geom,
                            diagonal=par["diagonal"], n=par["n"], p=par["p"], trials=par["trials"], seed=par["seed"],
                            noise=par["noise"], attention_trials=raw["attention"]["trials"],
                            ridge_trials=raw["ridge"]["trials"], seconds=time.monotonic() - t0, resimulate=again,
                            error=error)


def _simulate_at(f, c, gammas, geometry, diagonal, center, n, **kw):
    """:func:`simulate` of the same point at ``n`` tokens, without a progress bar (``SimulationResult.at_size``)."""
    return simulate(f, c, list(gammas), geometry, diagonal, center, n=n, progress=False, **kw)
