"""The trial kinds of the simulation layer, for the executor and the trial store (NumPy only).

:data:`SIMULATE_SPEC` (``"simulate"``: the Attention errors at every gamma, then the ridge errors) and
:data:`RIDGE_SPEC` (``"ridge"``: the ridge errors alone); :func:`simulate_point` validates a ``simulate`` point
and builds its store key and worker context, :func:`summarize` turns its trials' rows into ``simulate``'s
result.  Trial ``j`` is drawn from child ``j`` of ``SeedSequence(seed)``, ``mu, W_K, W_Q`` rebuilt from the
exact Gram data on the worker.

>>> import numpy as np
>>> from symrmt.simulation.executor import run_trials
>>> pt = simulate_point(np.tanh, 32, "1/2", [1])
>>> pt.key["f"], pt.key["c"], pt.p
('numpy.tanh', '1/2', 16)
>>> rows, info = run_trials(SIMULATE_SPEC, pt.key, 3, 0, context=pt.context)
>>> summarize(pt, rows, 0, info)["attention"]["trials"].shape
(3, 1)
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from decimal import Context
from fractions import Fraction

import numpy as np

from symrmt.models.attention.geometry import Geometry, LowRankGeometry, as_geometry, as_low_rank
from symrmt.errors import ParameterError
from symrmt.models.attention.params import check_c, check_diagonal, check_gammas, check_int, check_noise
from symrmt.models.attention.sampling import (
    draw_tokens, ridge_errors, simulate_trial, vectors_from_gram, weights_from_geometry,
)
from symrmt.simulation.executor import TrialSpec, trial_seed

__all__ = ["NUMERICS_VERSION", "RIDGE_SPEC", "SIMULATE_SPEC", "SimPoint", "simulate_point", "summarize"]

#: Version of the sampling numerics of the trials below; the trial store keys its rows by it.
#: Bump it whenever a change of the sampling code (here or in the functions these trials call)
#: changes the numbers a seeded trial produces: stored trials of the old version are then
#: reported as stale and never reused.
NUMERICS_VERSION = "1"


def _simulate_trial(params, context, seed, j):
    """Trial ``j`` of ``simulate``: ``concat(E_A, E_RR)`` over the gammas, from the parameters alone
    (only an explicit weight matrix travels as an array, in ``context``)."""
    n = params["n"]
    p = round(Fraction(params["c"]) * n)
    gammas = np.array([float(Fraction(g)) for g in params["gammas"]], dtype=np.float64)
    if context.get("weights") is not None:
        model = (context["mu"], np.zeros((p, 1)), np.zeros((p, 1)), 1.0, context["weights"])
    elif context.get("gram") is not None:  # the Gram matrix as float64 numbers (never re-parsed from text)
        gram = np.asarray(context["gram"], dtype=np.float64)
        r = (gram.shape[0] - 1) // 2
        vecs = np.array(vectors_from_gram(gram, p))
        model = (vecs[0], vecs[1:1 + r].T, vecs[1 + r:].T, float(context["alpha"]), None)
    else:  # a context without the numbers: the key's exact fractions, read by Fraction (no text parser)
        geo = params["geometry"]
        gram = np.array([[float(Fraction(x)) for x in row] for row in geo["gram"]], dtype=np.float64)
        return _simulate_trial(params, {**context, "gram": gram, "alpha": float(Fraction(geo["alpha"]))}, seed, j)
    mu, w_k, w_q, alpha, weights = model
    e_att, e_rr = simulate_trial(context["f"], n, mu, w_k, w_q, gammas, params["diagonal"], params["noise"],
                                 np.random.default_rng(trial_seed(seed, j)), alpha=alpha, weights=weights,
                                 attention=params.get("attention", "entrywise"), mask=params.get("mask", True))
    return np.concatenate([e_att, e_rr])


def _ridge_trial(params, context, seed, j):
    """Trial ``j`` of the ridge error alone: ``E_RR`` over the gammas (``mu`` of norm^2 ``snr``, ``W`` unused)."""
    n = params["n"]
    p = round(Fraction(params["c"]) * n)
    mu, _, _ = vectors_from_gram(Geometry(snr=Fraction(params["snr"])).gram(), p)
    gammas = np.array([float(Fraction(g)) for g in params["gammas"]], dtype=np.float64)
    x, y = draw_tokens(np.random.default_rng(trial_seed(seed, j)), n, mu, params["noise"])
    return ridge_errors(x, y, gammas)


#: ``simulate``'s trial kind.
#: Its rows: ``E_A`` then ``E_RR`` at each gamma, every one in ``[0, ||y||^2/n] = [0, 1]``.
SIMULATE_SPEC = TrialSpec("simulate", NUMERICS_VERSION, _simulate_trial,
                          width=lambda params: 2 * len(params["gammas"]), bounds=(0.0, 1.0))
#: The ridge-only trial kind (``params``: ``n, c, gammas, snr, noise``); ``E_RR`` in ``[0, 1]``.
RIDGE_SPEC = TrialSpec("ridge", NUMERICS_VERSION, _ridge_trial,
                       width=lambda params: len(params["gammas"]), bounds=(0.0, 1.0))


def ridge_key(n: int, c, gammas, snr=0, noise: str = "gaussian") -> dict:
    """The exact key of a ridge-only point (the ``params`` of :data:`RIDGE_SPEC`).

    Raises :class:`~symrmt.errors.ParameterError` for a ``c``, a gamma or a noise the checks of
    :mod:`symrmt.models.attention.params` refuse.

    >>> ridge_key(64, "1/2", [1, "1/10"], snr=1)
    {'n': 64, 'c': '1/2', 'gammas': ['1', '1/10'], 'snr': '1', 'noise': 'gaussian'}
    """
    return {"n": int(n), "c": str(check_c(c)), "gammas": [str(g) for g in check_gammas(gammas)],
            "snr": str(Fraction(snr) if not isinstance(snr, float) else Fraction(snr)), "noise": check_noise(noise)}


@dataclass
class SimPoint:
    """A validated ``simulate`` point: its store ``key``, worker ``context`` and what the result reports.

    Made by :func:`simulate_point`; ``p = round(c n)``, ``gammas`` as float64, ``geometry_record`` the
    geometry's entries as floats (for the result's ``params``).

    >>> pt = simulate_point(np.tanh, 32, "1/2", [1, "1/10"], geometry={"snr": 1})
    >>> pt.n, pt.p, pt.c, pt.gammas.tolist(), pt.geometry_record["snr"]
    (32, 16, Fraction(1, 2), [1.0, 0.1], 1.0)
    >>> pt.key["geometry"]
    {'gram': [['1', '0', '0'], ['0', '0', '0'], ['0', '0', '0']], 'alpha': '1'}
    """

    key: dict
    context: dict
    n: int
    p: int
    c: Fraction
    gammas: np.ndarray
    diagonal: str
    noise: str
    geometry_record: dict


def _f_key(f, f_key):
    """The name of ``f`` in the store key: ``f_key``, ``f.store_key``, or ``numpy.<name>`` for a ufunc."""
    if f_key is not None:
        if not isinstance(f_key, str) or not f_key:
            raise ParameterError(f"f_key must be a non-empty string naming f, got {f_key!r}")
        return f_key
    key = getattr(f, "store_key", None)
    if isinstance(key, str) and key:
        return key
    if isinstance(f, np.ufunc):
        return f"numpy.{f.__name__}"
    return None


def _digest(a: np.ndarray) -> str:
    return "sha256:" + hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()


def simulate_point(f, n, c, gammas, geometry=None, diagonal="zero", noise="gaussian", weights=None, mu=None,
                   f_key=None, need_key: bool = False, attention: str = "entrywise", mask: bool = True) -> SimPoint:
    """Validate a ``simulate`` point (see :func:`symrmt.models.attention.montecarlo.simulate` for the parameters).

    ``attention="softmax"`` (``f`` None): the key names the softmax and its mask instead of ``f``
    (entry-wise keys are unchanged, so stored trials stay valid).

    ``need_key``: the key must name ``f`` (a trial store is in use), so an ``f`` without
    ``f_key``, ``store_key`` or ufunc name is refused.  Returns a :class:`SimPoint`.

    Raises
    ------
    ParameterError
        ``f`` not callable (entry-wise); ``n < 2``, ``c <= 0`` or ``round(c n) < 1``; a gamma outside
        ``(0, 1e300)``; both ``geometry`` and ``weights``, a weight matrix or ``mu`` of the wrong shape; a
        geometry outside float64; ``diagonal="keep"`` with the softmax; an unnamed ``f`` with ``need_key``.

    Examples
    --------
    >>> simulate_point(np.tanh, 32, "1/2", [1]).key["f"]
    'numpy.tanh'
    >>> simulate_point(np.tanh, 2, "1/10", [1])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: p = round(c*n) = round(0.1*2) = 0; need p >= 1, increase c or n
    >>> simulate_point("tanh", 32, "1/2", [1])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: f must be a callable (a vectorized NumPy function), got 'tanh'
    """
    softmax = attention == "softmax"
    if not softmax and not callable(f):
        raise ParameterError(f"f must be a callable (a vectorized NumPy function), got {f!r}")
    n = check_int(n, "n", 2)
    c_frac = check_c(c)
    p = round(c_frac * n)
    if p < 1:
        raise ParameterError(f"p = round(c*n) = round({float(c_frac)!r}*{n}) = {p}; need p >= 1, increase c or n")
    gam_exact = check_gammas(gammas)
    # a gamma beyond the float range would overflow float() itself: clamp the conversion, refuse below
    gam = np.array([float(g) if abs(g) < Fraction(10) ** 308 else float("inf") for g in gam_exact], dtype=np.float64)
    for g, gf in zip(gam_exact, gam):
        if not Fraction(1, 10**300) <= g <= Fraction(10) ** 300:  # float64 would make it 0, inf or subnormal
            shown = Context(prec=3).divide(g.numerator, g.denominator)
            raise ParameterError(f"gamma = {shown} is outside the float64 range of the simulation "
                                 f"(as a float64: {gf}); the simulation needs 1e-300 <= gamma <= 1e300")
    if weights is not None:
        if geometry is not None:
            raise ParameterError("give either geometry or an explicit weights matrix, not both")
        weights_arr = np.asarray(weights, dtype=np.float64)
        if weights_arr.shape != (p, p) or not np.all(np.isfinite(weights_arr)):
            raise ParameterError(
                f"weights must be a finite p x p matrix with p = round(c*n) = {p}, got shape {weights_arr.shape}"
            )
        mu_arr = np.zeros(p) if mu is None else np.asarray(mu, dtype=np.float64)
        if mu_arr.shape != (p,) or not np.all(np.isfinite(mu_arr)):
            raise ParameterError(f"mu must be a finite vector of length p = {p}, got shape {mu_arr.shape}")
        model = (mu_arr, np.zeros((p, 1)), np.zeros((p, 1)), 1.0, weights_arr)
        geometry_record = {"weights": f"explicit {p}x{p}", "snr": float(mu_arr @ mu_arr)}
    else:
        if mu is not None:
            raise ParameterError("mu is only for an explicit weights matrix; otherwise give the geometry")
        if geometry is None:
            geometry = Geometry()
        if isinstance(geometry, dict):  # a plain dict of entries (symrmt.models.attention.geometry.as_geometry)
            geometry = as_geometry(geometry)
        if isinstance(geometry, Geometry):
            geometry_record = {k: _sim_float(v, k) for k, v in geometry.as_dict().items()}
        elif isinstance(geometry, LowRankGeometry):
            geometry_record = {"r": geometry.r, "alpha": _sim_float(geometry.alpha, "alpha"),
                               "gram": [[_sim_float(x, "a Gram entry") for x in row] for row in geometry.gram()]}
        else:
            raise ParameterError(
                f"geometry must be a symrmt.Geometry or LowRankGeometry, got {type(geometry).__name__}"
            )
        model = weights_from_geometry(geometry, p) + (None,)
    diagonal = check_diagonal(diagonal)
    if softmax and diagonal != "zero":
        raise ParameterError("diagonal='keep' is not for the softmax: its diagonal is the mask "
                             "(mask=False, --no-mask, keeps the self term)")
    noise = check_noise(noise)
    key_f = ("softmax" if mask else "softmax-unmasked") if softmax else _f_key(f, f_key)
    if need_key and key_f is None:
        raise ParameterError(
            f"the trial store keys trials by f, and f = {f!r} has no name it can use: pass f_key='...' naming f "
            "exactly (e.g. its formula), or use a NumPy ufunc such as np.tanh"
        )
    if weights is not None:
        geometry_key = {"weights": _digest(model[4]), "mu": _digest(model[0])}
        context = {"f": f, "weights": model[4], "mu": model[0]}
    else:
        low = as_low_rank(geometry)
        geometry_key = {"gram": [[str(x) for x in row] for row in low.gram()], "alpha": str(low.alpha)}
        # the exact Gram matrix keys the store; the trials get its float64 values (an irrational inner
        # product, rounded to ~2000 digits, never goes back through text)
        gram = np.array([[float(x) for x in row] for row in low.gram()], dtype=np.float64)
        context = {"f": f, "weights": None, "mu": None, "gram": gram, "alpha": float(low.alpha)}
    key = {"f": key_f, "n": n, "c": str(c_frac), "gammas": [str(g) for g in gam_exact], "geometry": geometry_key,
           "diagonal": diagonal, "noise": noise}
    if softmax:
        key["attention"] = "softmax"
        key["mask"] = bool(mask)
    return SimPoint(key, context, n, p, c_frac, gam, diagonal, noise, geometry_record)


def summarize(point: SimPoint, rows: np.ndarray, seed: int, info: dict) -> dict:
    """``simulate``'s result from the ``(trials, 2 len(gammas))`` rows of a point.

    Takes the :class:`SimPoint`, the rows (``E_A`` then ``E_RR`` at each gamma), the seed and the run's
    ``info`` (merged into the result); returns a dict with ``attention`` and ``ridge`` (``mean``, ``se`` =
    sample standard deviation over ``sqrt(trials)``, ``trials``) and ``params``.

    Two trials at one gamma: ``E_A`` 0.5 and 0.7 (mean 0.6, se ``0.1414/sqrt(2) = 0.1``):

    >>> r = summarize(simulate_point(np.tanh, 32, "1/2", [1]), np.array([[0.5, 0.3], [0.7, 0.5]]), 7, {})
    >>> r["attention"]["mean"].round(12).tolist(), r["attention"]["se"].round(12).tolist(), r["ridge"]["mean"].round(12).tolist()
    ([0.6], [0.1], [0.4])
    >>> r["params"]["trials"], r["params"]["seed"], r["params"]["p"]
    (2, 7, 16)
    """
    trials = rows.shape[0]
    k = point.gammas.size
    att, rr = rows[:, :k], rows[:, k:]

    def summary(a):
        return {"mean": a.mean(axis=0), "se": a.std(axis=0, ddof=1) / math.sqrt(trials), "trials": a}

    return {
        "attention": summary(att),
        "ridge": summary(rr),
        "params": {
            "n": point.n,
            "p": point.p,
            "c": float(point.c),
            "gammas": [float(g) for g in point.gammas],
            "diagonal": point.diagonal,
            "noise": point.noise,
            "trials": trials,
            "seed": seed,
            "geometry": point.geometry_record,
            **({"attention": "softmax", "mask": point.key["mask"]} if "attention" in point.key else {}),
        },
        **info,
    }


def _sim_float(v, name: str) -> float:
    """A geometry entry as the simulation's float64, refused (:class:`ParameterError`) when float64 would
    make it inf or 0 (a magnitude above ``1e300``, or a nonzero one below ``1e-300``)."""
    q = Fraction(v) if not isinstance(v, Fraction) else v
    if abs(q) > Fraction(10) ** 300 or (q != 0 and abs(q) < Fraction(1, 10**300)):
        shown = Context(prec=3).divide(q.numerator, q.denominator)
        raise ParameterError(f"{name} = {shown} is outside the float64 range of the simulation (it needs "
                             "magnitudes 1e-300 to 1e300, or 0)")
    return float(q)
