r"""Test errors on a fresh sequence: the paper's readout, trained on ``(X, y)``, tested on new tokens.

The readout ``w`` (and ridge's ``w_R``) trained on ``(X, y)`` is tested on an independent sequence
``X' = mu y'^T + Z'``: ``T_A = ||y' - (X'K')^T w||^2/n``, ``T_RR = ||y' - X'^T w_R||^2/n``.  In the limit the
test error of a readout ``v`` is a quadratic form in ``||v||^2`` and its inner products with ``mu, w_K^j,
w_Q^j`` (:func:`fresh_error_formula`), which the training side gives as limits (:func:`training_forms`).  Also:
the ridge error in closed form, and the simulation of both.  The derivation is in ``docs/theory.md`` section 12.

>>> import sympy as sp
>>> a1, nu, d, c = sp.symbols("a_1 nu d c")
>>> sp.factor(fresh_error_formula(a1, nu, d, c, [[0]], r=0, vv=sp.Symbol("v2"), dots=[0]) - 1)
v2*(a_1**2 + 2*a_1*c*d + c**2*d**2 + c*nu)/c**2
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from symrmt.cache import cache_dict, cached
from symrmt.codegen.compile import compile_expr
from symrmt.errors import ModelError, NotDerived, ParameterError, PrecisionError
from symrmt.models.attention.engine_model import E_A, E_RR, attention_model
from symrmt.models.attention.geometry import as_low_rank
from symrmt.models.attention.params import check_c, check_int
from symrmt.models.attention.sampling import draw_tokens, kernel_matrix, weights_from_geometry
from symrmt.models.attention.equations import G_INDEX
from symrmt.models.attention.hermite_data import hermite_at_least, scaled_nonlinearity
from symrmt.models.attention.solver import gram_factor, lowrank_D
from symrmt.models.attention.theory import attention_limit
from symrmt.proofs.certified import certified

__all__ = ["fresh_error_formula", "ridge_test_formula", "training_forms", "projection_expr", "fresh_limit",
           "fresh_simulate", "woodbury_projections",
           "engine_projection", "engine_model", "ERRORS", "check_error"]

#: the errors ``symrmt limit/simulate --error`` take: the training (interpolation) error and the fresh-sample one
ERRORS = ("train", "test")


def check_error(error) -> str:
    """``error`` as one of :data:`ERRORS`, or a :class:`~symrmt.errors.ParameterError` naming them.

    >>> check_error("test")
    'test'
    """
    if not isinstance(error, str) or error.strip().lower() not in ERRORS:
        raise ParameterError(f"error must be one of {ERRORS}, got {error!r}")
    return error.strip().lower()


def fresh_error_formula(a1, nu, d, c, gram, r: int, vv, dots, alpha=1):
    """The limit ``T(v)`` of the module docstring as a SymPy expression.

    ``gram`` is the ``(2r+1)``-square Gram matrix of ``(mu, wk_1..r, wq_1..r)`` (``[[mu.mu]]`` when
    ``r = 0``: ``W = alpha I``); ``vv = ||v||^2``; ``dots`` the ``2r+1`` inner products of ``v`` with
    ``(mu, wk_1..r, wq_1..r)``.  ``(a1, nu, d)`` are the Hermite data of ``f_alpha``.

    Examples
    --------
    The zero readout has error 1; with ``a_1 = d = 0`` the error is ``1 + (nu/c)((mu.v)^2 + ||v||^2)``,
    here ``1 + (nu/c)(1/4 + 1)``:

    >>> a_1, nu, d, c = sp.symbols("a_1 nu d c")
    >>> fresh_error_formula(a_1, nu, d, c, [[1]], 0, 0, [0])
    1
    >>> fresh_error_formula(0, nu, 0, c, [[1]], 0, 1, [sp.Rational(1, 2)])
    1 + 5*nu/(4*c)
    """
    k = 2 * r + 1
    G = sp.zeros(k + 1, k + 1)   # basis (v, mu, wk.., wq..)
    G[0, 0] = vv
    for i in range(k):
        G[0, i + 1] = G[i + 1, 0] = dots[i]
        for j in range(k):
            G[i + 1, j + 1] = gram[i][j]

    def e(i):
        x = sp.zeros(k + 1, 1)
        x[i] = 1
        return x

    def dot(x, y):
        return (x.T * G * y)[0, 0]

    def Wt(x):  # W^T x = alpha x + sum_j wq_j (wk_j . x)
        out = alpha * x
        for j in range(r):
            out += e(2 + r + j) * dot(e(2 + j), x)
        return out

    def W(x):  # W x = alpha x + sum_j wk_j (wq_j . x)
        out = alpha * x
        for j in range(r):
            out += e(2 + j) * dot(e(2 + r + j), x)
        return out

    v, mu = e(0), e(1)
    s = dot(mu, v)
    h = v + mu * s
    kappa = a1 / (alpha * c)
    wth = Wt(h)
    return ((1 - kappa * dot(mu, wth)) ** 2 + kappa**2 * dot(wth, wth) - 2 * d * s
            + 2 * d * kappa * dot(h, W(h)) + (d**2 + nu / c) * (s**2 + vv))


#: the training side as engine expressions (``Q`` the training resolvent of the Attention readout)
_Q = "inv(K.T*X.T*X*K/n + gamma*I(n))"
_Q0 = "inv(X.T*X/n + gamma*I(n))"
PHI_A = f"y.T*{_Q}*y/n"
PHI_RR = f"y.T*{_Q0}*y/n"


def projection_expr(u: str, ridge: bool = False) -> str:
    """The engine expression of ``u . w`` for the trained readout ``w = X K Q y/n`` (or ``w_R = X Q_0 y/n``).

    >>> projection_expr("mu")
    'mu.T*X*K*inv(K.T*X.T*X*K/n + gamma*I(n))*y/n'
    >>> projection_expr("mu", ridge=True)
    'mu.T*X*inv(X.T*X/n + gamma*I(n))*y/n'
    """
    return f"{u}.T*X*{_Q0}*y/n" if ridge else f"{u}.T*X*K*{_Q}*y/n"


def training_forms(model, at: dict, names, digits: int, ridge: bool = False, zero=()):
    """``(||w||^2, [u . w for u in names])`` of the trained readout, as engine limits at ``at``.

    ``||w||^2 = phi - E/gamma`` with ``phi = y^T Q y/n`` and ``E = gamma^2 y^T Q^2 y/n`` the training
    error (push-through: ``w = X K Q y/n``, so ``||w||^2 = y^T Q (Q^{-1} - gamma) Q y/n``).  Names in
    ``zero`` (vectors that are 0) give 0 without a solve.

    Takes the engine model, the values ``at``, the vector names, ``digits``; returns mpf values; raises the
    engine's errors.  The real engine takes seconds (``tests/models/attention/test_test_error.py`` runs it);
    with a stand-in whose every limit is 1, ``||w||^2 = 1 - 1/2`` at ``gamma = 2``:

    >>> from types import SimpleNamespace
    >>> one = SimpleNamespace(limit=lambda expr, at, digits: SimpleNamespace(value=mpmath.mpf(1)))
    >>> training_forms(one, {"gamma": 2}, ["mu", "wk1"], 15, zero=("wk1",))
    (mpf('0.5'), [mpf('1.0'), mpf('0.0')])
    """
    phi = model.limit(PHI_RR if ridge else PHI_A, at=at, digits=digits).value
    err = model.limit(E_RR if ridge else E_A, at=at, digits=digits).value
    with mpmath.workdps(digits + 10):
        g = mpmath.mpf(sp.Rational(at["gamma"]).p) / sp.Rational(at["gamma"]).q
        vv = phi - err / g
    dots = [mpmath.mpf(0) if u in zero else model.limit(projection_expr(u, ridge), at=at, digits=digits).value
            for u in names]
    return vv, dots


def ridge_test_formula(c, gamma, snr):
    r"""The closed form of the ridge test error ``T_RR`` (``docs/theory.md`` section 12.3), a SymPy expression.

    With ``u = X y/n`` and ``B = X (I - y y^T/n) X^T/n`` independent of ``u`` (rotate the token index so
    that ``y/sqrt(n)`` is a basis vector), ``X X^T/n = u u^T + B`` and Sherman-Morrison gives
    ``w_R = R u/(1 + u^T R u)``, ``R = (B + gamma I)^{-1}``.  ``B`` is Marchenko-Pastur (ratio ``c``), with
    ``m = tr R/p`` the positive root of ``c gamma m^2 + (gamma + 1 - c) m - 1 = 0`` and ``tr R^2/p = -dm/dgamma``;
    ``u = mu + g/sqrt(n)`` with ``g`` standard Gaussian, so ``u^T R u -> (snr + c) m``.  Hence

    .. math::

        s = \mu\cdot w_R = \frac{snr\, m}{1 + (snr + c) m}, \qquad
        \|w_R\|^2 = \frac{(snr + c)(-m')}{(1 + (snr + c) m)^2}, \qquad T_{RR} = (1 - s)^2 + \|w_R\|^2 .

    >>> c, g = sp.symbols("c gamma", positive=True)
    >>> sp.limit(ridge_test_formula(c, g, 0), g, sp.oo)
    1
    """
    c, gamma, snr = sp.sympify(c), sp.sympify(gamma), sp.sympify(snr)
    g = sp.Dummy("g", positive=True)
    m = (-(g + 1 - c) + sp.sqrt((g + 1 - c) ** 2 + 4 * c * g)) / (2 * c * g)
    m2 = -sp.diff(m, g)
    q = (snr + c) * m
    s = snr * m / (1 + q)
    vv = (snr + c) * m2 / (1 + q) ** 2
    return ((1 - s) ** 2 + vv).subs(g, gamma)


def engine_projection(model, u: str, at: dict, digits: int):
    """The engine limit of ``u . w``; an engine refusal (e.g. its cap on unknowns) becomes :class:`NotDerived`.

    Takes the engine model, the vector's name ``u``, the values ``at`` and ``digits``; returns an mpf; raises
    :class:`~symrmt.errors.NotDerived` where the engine refuses the form.  The real engine takes seconds
    (``tests/models/attention/test_test_error.py`` runs it); a stand-in that refuses every form:

    >>> from types import SimpleNamespace
    >>> def refuse(expr, at, digits):
    ...     raise ModelError("too many unknowns")
    >>> engine_projection(SimpleNamespace(limit=refuse), "mu", {"gamma": 1}, 15)
    Traceback (most recent call last):
    ...
    symrmt.errors.NotDerived: the test error needs the training form mu . w, which the engine refuses here: too many unknowns
    """
    try:
        return model.limit(projection_expr(u), at=at, digits=digits).value
    except ModelError as exc:
        raise NotDerived(f"the test error needs the training form {u} . w, which the engine refuses here: {exc}") from exc


_MODELS = cache_dict("symrmt.models.attention.generalization._MODELS", 16)


def engine_model(f, r: int, alpha, diagonal: str, digits: int):
    """The engine model of :func:`~symrmt.models.attention.engine_model.attention_model`, kept per
    ``(f, r, alpha, diagonal)`` so that its plans (the Woodbury systems of the forms) are built once.

    Takes ``f``, the rank ``r``, ``alpha``, ``diagonal`` and ``digits``; returns the engine
    :class:`~symrmt.engine.Model` (cached per key, rebuilt for more ``digits``); raises
    :class:`~symrmt.errors.ParameterError` for a bad ``diagonal`` before any building (building takes
    seconds; ``tests/models/attention/test_test_error.py`` runs it):

    >>> engine_model("tanh", 1, 1, "kept", 15)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: diagonal must be one of ('zero', 'keep'), got 'kept'
    """
    key = (getattr(f, "text", f), getattr(f, "center", False), r, str(alpha), diagonal)
    hit = _MODELS.get(key)
    if hit is None or hit[0] < digits:
        _MODELS[key] = hit = (digits, attention_model(f, r, alpha, diagonal, digits=digits)[0])
    return hit[1]


@cached(maxsize=1)
def _ridge_function():
    """:func:`ridge_test_formula` compiled once (:func:`symrmt.codegen.compile.compile_expr`) to an mpmath
    function of ``(c, gamma, snr)``."""
    c, g, snr = sp.symbols("c gamma snr", positive=True)
    return compile_expr([c, g, snr], ridge_test_formula(c, g, snr))


def _vector_names(r: int):
    return ["mu"] + [f"wk{j}" for j in range(1, r + 1)] + [f"wq{j}" for j in range(1, r + 1)]


def woodbury_projections(block_traces, geometry, a1, c, dps: int):
    """``(phi, [u . w for u in (mu, wk_1..r, wq_1..r)])`` from the hand-built solver's noise-only block traces.

    The pencil of ``docs/theory.md`` section 4.1 has ``(L^{-1})_{31} = -K Q``, and ``X^T u = sqrt(n) E C u``
    for ``u`` in the span (section 5.1), so ``u . w = u^T X K Q y/n = -(C u)^T [U^T L^{-1} U]_{31} e`` with
    the compressed inverse ``U^T L^{-1} U = H (I + D H)^{-1}`` of section 5.3.  ``x = (I + D H)^{-1} e``
    gives ``phi = (H x)_1`` and the projections ``-(C u)^T (H x)_3``.  ``geometry`` has ``alpha = 1``
    (scaled), ``a1`` the Hermite coefficient of ``f_alpha``, ``block_traces`` the six entries of ``Gm``.

    Returns mpf values at ``dps`` digits.  Without signal and weights (``D = 0``) ``x = e``: ``phi = G_11`` and every
    projection is 0:

    >>> import mpmath
    >>> from fractions import Fraction
    >>> from symrmt.models.attention.geometry import Geometry
    >>> g = [mpmath.mpf(x) for x in ("0.5", "0.1", "0.2", "1", "0.3", "2")]
    >>> woodbury_projections(g, Geometry(), Fraction(1, 2), Fraction(1, 2), 20)
    (mpf('0.5'), [mpf('0.0'), mpf('0.0'), mpf('0.0')])
    """
    geo = as_low_rank(geometry)
    gram = geo.gram()
    k = len(gram)
    size = k + 1
    with mpmath.workdps(dps):
        gm = mpmath.matrix(3, 3)
        for (a, b), v in zip(G_INDEX, block_traces):
            gm[a, b] = gm[b, a] = v
        D = mpmath.matrix(lowrank_D(geo, a1, c, dps))
        H = mpmath.matrix(3 * size, 3 * size)
        for a in range(3):
            for b in range(3):
                for i in range(size):
                    H[a * size + i, b * size + i] = gm[a, b]
        e = mpmath.matrix(3 * size, 1)
        e[0] = 1
        x = mpmath.lu_solve(mpmath.eye(3 * size) + D * H, e)
        hx = H * x
        B = gram_factor(gram, dps)
        dots = []
        for j in range(k):
            cu = [mpmath.mpf(gram[0][j].numerator) / gram[0][j].denominator if hasattr(gram[0][j], "numerator")
                  else mpmath.mpf(gram[0][j])] + [B[j][i] for i in range(k)]
            dots.append(-mpmath.fsum(cu[i] * hx[2 * size + i] for i in range(size)))
        return hx[0], dots


def fresh_limit(f, c, gammas, geometry=None, diagonal: str = "zero", digits: int = 15) -> dict:
    """Limits of the test errors: ``{"attention": [T_A(gamma)...], "ridge": [T_RR(gamma)...]}`` (mpf lists, each
    printing the ``digits`` asked).

    ``f`` is a :class:`symrmt.hermite.Nonlinearity` or a preset name / expression; ``geometry`` a
    ``Geometry`` or ``LowRankGeometry`` (any rank, any ``alpha``); ``diagonal`` ``"zero"`` or ``"keep"``.
    ``phi``, ``E_A`` and the noise-only block traces come from the hand-built solver, certified to
    ``digits + 5`` digits; the projections ``u . w`` from its Woodbury system
    (:func:`woodbury_projections`), whose ``phi`` must reproduce the certified one; the fresh-sample
    limit (:func:`fresh_error_formula`) and the ridge closed form (:func:`ridge_test_formula`) are evaluated
    at ``digits + 15`` working digits.  Every value is at least 1 when ``mu = 0`` (the labels are then
    independent of the tokens); a value that breaks this bound, or a Woodbury ``phi`` that misses the certified
    one, raises :class:`~symrmt.errors.PrecisionError` rather than being returned.

    >>> r = fresh_limit("tanh", "2", ["1"], digits=12)
    >>> 1 < r["attention"][0] < r["ridge"][0] < 2, r["ridge"][0].digits
    (True, 12)
    """
    geo = as_low_rank(geometry)
    fs = f
    if geo.alpha != 1:
        fs = scaled_nonlinearity(f, geo.alpha)
        geo = geo.scaled()
    r = geo.r
    gram = [[sp.nsimplify(x) for x in row] for row in geo.gram()]
    names = _vector_names(r)
    zero = {u for u, row in zip(names, gram) if all(x == 0 for x in row)}
    work = digits + 5
    a1, nu, d = hermite_at_least(fs, diagonal, digits + 25)
    c = sp.nsimplify(c)
    gs = [sp.nsimplify(g) for g in gammas]
    points = attention_limit(fs, c, gs, geo, diagonal, work, details=True)
    T_RR = _ridge_function()
    out = {"attention": [], "ridge": []}
    with mpmath.workdps(digits + 15):
        cm = mpmath.mpf(c.p) / c.q
        gram_mp = [[mpmath.mpf(x.p) / x.q for x in row] for row in gram]
        for g, pt in zip(gs, points):
            gm = mpmath.mpf(g.p) / g.q
            vv = pt.quadratic_form - pt.error / gm
            if len(zero) == len(names):
                dots = [mpmath.mpf(0)] * len(names)
            else:
                phi, dots = woodbury_projections(pt.block_traces, geo, a1, cm, digits + 15)
                if abs(phi - pt.quadratic_form) > mpmath.mpf(10) ** -(digits + 2) * abs(pt.quadratic_form):
                    raise PrecisionError(f"test error at gamma={g}: the Woodbury system gives y^T Q y/n = "
                                         f"{mpmath.nstr(phi, 10)}, not the certified {mpmath.nstr(pt.quadratic_form, 10)}")
            ta = fresh_error_formula(a1, nu, d, cm, gram_mp, r, vv, dots)
            ta = mpmath.mpf(sp.Float(ta, digits + 15))
            tr = T_RR(cm, gm, gram_mp[0][0])
            if "mu" in zero and (ta < 1 or tr < 1):
                raise PrecisionError(f"test error below 1 with mu = 0 (T_A = {ta}, T_RR = {tr}): precision lost")
            # every bit of the evaluation, printed at the digits asked (rounded once)
            out["attention"].append(certified(ta, digits))
            out["ridge"].append(certified(tr, digits))
    return out


def _ridge_readouts(a, y, gammas):
    """``(A A^T/n + g I)^{-1} A y/n`` for each ``g`` (``A`` is ``p x n``), from one ``eigh`` of the smaller Gram side."""
    p, n = a.shape
    if p <= n:
        lam, u = np.linalg.eigh(a @ a.T / n)
        b = u.T @ (a @ y / n)
        return [u @ (b / (lam + g)) for g in gammas]
    lam, u = np.linalg.eigh(a.T @ a / n)  # push-through: A (A^T A/n + g I)^{-1} y/n
    b = u.T @ y / n
    return [a @ (u @ (b / (lam + g))) for g in gammas]


def fresh_simulate(f, n: int, c, gammas, geometry=None, diagonal: str = "zero", trials: int = 10, seed: int = 0,
                  noise: str = "gaussian") -> dict:
    """Monte-Carlo test errors: train on ``(X, y)``, test on a fresh sequence of ``n`` tokens.

    ``f`` is a vectorized NumPy function.  Returns ``{"attention": {"mean", "se", "trials"},
    "ridge": {...}, "params": {...}}`` (``trials`` a ``(trials, len(gammas))`` array).  Trial ``j``
    uses child ``j`` of ``numpy.random.SeedSequence(seed)``: the training sequence, then the fresh one.

    >>> import numpy as np
    >>> s = fresh_simulate(np.tanh, 64, 0.5, [1.0], trials=3)
    >>> s["attention"]["trials"].shape, bool(np.all(s["ridge"]["trials"] > 0))
    ((3, 1), True)
    """
    n = check_int(n, "n", 2)
    trials = check_int(trials, "trials", 2)
    cf = float(check_c(c))
    gs = np.asarray([float(g) for g in gammas], dtype=np.float64)
    p = round(cf * n)
    mu, wk, wq, alpha = weights_from_geometry(geometry, p)
    rows = np.zeros((2, trials, len(gs)))
    for j, child in enumerate(np.random.SeedSequence(seed).spawn(trials)):
        rng = np.random.default_rng(child)
        x, y = draw_tokens(rng, n, mu, noise)
        phi = x @ kernel_matrix(f, x, wk, wq, diagonal, alpha=alpha)
        x2, y2 = draw_tokens(rng, n, mu, noise)
        phi2 = x2 @ kernel_matrix(f, x2, wk, wq, diagonal, alpha=alpha)
        for k, (a, a2) in enumerate(((phi, phi2), (x, x2))):
            for i, w in enumerate(_ridge_readouts(a, y, gs)):
                rows[k, j, i] = np.mean((y2 - a2.T @ w) ** 2)
    out = {key: {"trials": rows[k], "mean": rows[k].mean(axis=0), "se": rows[k].std(axis=0, ddof=1) / np.sqrt(trials)}
           for k, key in enumerate(("attention", "ridge"))}
    out["params"] = {"n": n, "p": p, "c": cf, "trials": trials, "seed": seed, "diagonal": diagonal, "noise": noise}
    return out
