r"""Proved digits: every limit of the paper's model as a ball ``[mid ± rad]`` proved to contain it (Arb).

It proves the Marchenko-Pastur and ridge values, the attention fixed point (Krawczyk's test on the square
system ``G F(G)``, with ``det G != 0`` and ``det N != 0`` proved on the box), the quantities derived from it on
the proved box (:func:`prove_limit`), and re-exports the public names of the ball arithmetic
(:mod:`symrmt.proofs.arb`), the Hermite balls and the engine's proofs.  Each ball carries its branch
(``"isolated"``, ``"continued"`` or ``"sanity"``).  A ball holds the exact large-``n`` limit as the package's
equations define it; ``docs/prove.md`` states the method and what is proved.
"""

from __future__ import annotations

import inspect
from fractions import Fraction

import sympy as sp

from symrmt.cache import cache_dict, cached
from symrmt.codegen.compile import compile_expr
from symrmt.errors import BranchError

# the ball arithmetic, the Hermite balls and the engine's proofs live in their own rooms; re-exported here
from symrmt.proofs.arb import (  # noqa: F401
    ESCALATIONS, GUARD_BITS, INSTALL, ProofError, ProveUnavailable, arb_checked, arb_function, ball_json, ball_parts,
    ball_text, bits_for, check_radius, isolate_real_roots, krawczyk, mat_solve, relative_ok, require_flint, sympy_ball,
    to_arb, working_bits,
)
from symrmt.engine.prove.trace import TraceBall, prove_trace  # noqa: F401
from symrmt.hermite.balls import hermite_ball, prove_hermite_report  # noqa: F401
from symrmt.hermite.nonlinearity import Nonlinearity
from symrmt.models.attention import equations as S
from symrmt.models.attention.compiled import ridge_function, closed_form_phi, fixed_point_fjg, woodbury_D_function
from symrmt.models.attention.geometry import as_low_rank
from symrmt.models.attention.params import check_c, check_gammas
from symrmt.models.attention.prove_branch import attention_chain, square_system, symmetric_matrix  # noqa: F401
from symrmt.models.attention.theory import attention_limit, guard_digits, route_for, scaled_nonlinearity, ridge_limit
from symrmt.parsing.psd import ldl_pivoted

__all__ = [
    "ProofError",
    "ProveUnavailable",
    "require_flint",
    "arb_function",
    "krawczyk",
    "ball_json",
    "ball_text",
    "prove_mp_root",
    "prove_ridge",
    "prove_attention",
    "prove_trace",
    "prove_limit",
    "balls_json",
    "hermite_ball",
    "prove_hermite_report",
]


# ---------------------------------------------------------------- Marchenko-Pastur / ridge

@cached(maxsize=256)
def _mp_sources():
    """Generated source of ``(P(m), dP/dm)`` (:func:`~symrmt.models.attention.equations.mp_quadratic`) and of the
    closed-form root :func:`~symrmt.models.attention.equations.mp_root` (through the package's compile step)."""
    quad = compile_expr([S.m, S.gamma, S.c], [S.mp_quadratic(), sp.diff(S.mp_quadratic(), S.m)])
    root = compile_expr([S.gamma, S.c], S.mp_root())
    return inspect.getsource(quad), inspect.getsource(root)


@cached(maxsize=256)
def _mp_coefficients():
    """Coefficients (in ``gamma``, ``c``; lowest degree first) of the numerator of
    :func:`~symrmt.models.attention.equations.mp_quadratic`, a polynomial in ``m`` (its denominator is free of ``m``)."""
    num, den = sp.fraction(sp.cancel(sp.together(S.mp_quadratic())))
    if den.has(S.m):
        raise ProofError("the Marchenko-Pastur equation is not polynomial in m after cancellation")
    return tuple(reversed(sp.Poly(num, S.m).all_coeffs()))


def _mp_poly(c: Fraction, gamma: Fraction):
    """The Marchenko-Pastur quadratic of :func:`symrmt.models.attention.equations.mp_quadratic` at exact values,
    as an ``fmpq_poly`` in ``m`` (coefficients from SymPy)."""
    flint = require_flint()
    subs = {S.c: sp.Rational(c.numerator, c.denominator), S.gamma: sp.Rational(gamma.numerator, gamma.denominator)}
    coeffs = [sp.Rational(cf.subs(subs)) for cf in _mp_coefficients()]
    return flint.fmpq_poly([flint.fmpq(int(x.p), int(x.q)) for x in coeffs]), None




def prove_mp_root(c, gamma, start, digits: int = 30):
    """Prove the Marchenko-Pastur root near ``start`` and that it is the physical one.

    Krawczyk on the SymPy quadratic gives a ball around the root near ``start``; all real roots
    are then isolated exactly, exactly one must lie in ``(0, 1/gamma]``, and the proved ball must
    be that one; otherwise :class:`BranchError` (e.g. ``start = -1.962`` at ``c = 1/2``,
    ``gamma = 1/100``, whose physical root is ``50.96``).

    Takes exact ``c``, ``gamma``, a float ``start`` and the digits; returns a ``flint.arb`` ball; raises
    :class:`~symrmt.errors.BranchError` as above and :class:`~symrmt.errors.ProofError` when Krawczyk fails.
    At ``gamma = c = 1`` the root is ``(sqrt(5) - 1)/2``:

    >>> import flint
    >>> prove_mp_root(1, 1, 0.618, 20).overlaps((flint.arb(5).sqrt() - 1) / 2)
    True
    >>> prove_mp_root("1/2", "1/100", -1.962, 20)
    Traceback (most recent call last):
    ...
    symrmt.errors.BranchError: the proved Marchenko-Pastur root [-1.9622372 +/- 4.48e-8] is not the physical one [50.962237 +/- 2.45e-7] (the only real root in (0, 1/gamma] at c=1/2, gamma=1/100); a box around another root is refused
    """

    require_flint()
    c, gamma = Fraction(c), Fraction(gamma)
    with working_bits(bits_for(digits, 10)):
        fn = arb_function(_mp_sources()[0], "Marchenko-Pastur quadratic")
        g, cc = to_arb(gamma), to_arb(c)
        ball = krawczyk(lambda x: [fn(x[0], g, cc)[0]], lambda x: [[fn(x[0], g, cc)[1]]], [to_arb(start)],
                        "Marchenko-Pastur root")[0]
        poly, _ = _mp_poly(c, gamma)
        roots = isolate_real_roots(poly)
        inv_g = 1 / g
        physical = [r for r in roots if r > 0 and r <= inv_g]
        if len(physical) != 1:
            raise BranchError(f"Marchenko-Pastur at c={c}, gamma={gamma}: {len(physical)} real roots in "
                              "(0, 1/gamma], not exactly one; the branch is not proved")
        if not ball.overlaps(physical[0]):
            raise BranchError(f"the proved Marchenko-Pastur root {ball.str(8)} is not the physical one "
                              f"{physical[0].str(8)} (the only real root in (0, 1/gamma] at c={c}, gamma={gamma}); "
                              "a box around another root is refused")
        return ball.intersection(physical[0])


def prove_ridge(c, gammas, snr, digits: int, mids=None):
    """Balls of ``E_RR(gamma)``: the SymPy closed form :func:`~symrmt.models.attention.equations.ridge_error_closed_form`
    on balls; its root of the Marchenko-Pastur quadratic is checked to be the physical one by
    :func:`prove_mp_root` (branch ``"isolated"``).

    Returns one ball per ``gamma``; raises :class:`~symrmt.errors.BranchError` and
    :class:`~symrmt.errors.ProofError`.  Without signal at ``gamma = c = 1``, ``E_RR = 1/sqrt(5)``:

    >>> import flint
    >>> prove_ridge(1, [1], 0, 15)[0].overlaps(1 / flint.arb(5).sqrt())
    True
    """
    c = Fraction(c)
    s = Fraction(snr)
    root_src = _mp_sources()[1]
    out = []
    for g in gammas:
        g = Fraction(g)
        bits = bits_for(digits, 10 + 2 * _decades(g))
        for _ in range(ESCALATIONS):
            with working_bits(bits):
                gb, cb = to_arb(g), to_arb(c)
                # the closed form's root expression is the one isolated in (0, 1/gamma]
                mroot = arb_function(root_src, "Marchenko-Pastur root")(gb, cb)
                proved = prove_mp_root(c, g, mroot.mid(), digits)
                if not proved.overlaps(mroot):
                    raise BranchError(f"ridge at gamma={g}: the closed form's root is not the physical one")
                v = arb_function(ridge_function())(gb, cb, to_arb(s))
                if relative_ok(v, digits):
                    break
            bits *= 2
        check_radius(v, digits, f"E_RR at gamma={g}")
        if not (v.overlaps(require_flint().arb("0.5", "0.5"))):
            raise BranchError(f"E_RR at gamma={g} is {v.str(10)}, outside [0, 1]")
        out.append(v)
    return out


def _decades(g: Fraction) -> int:
    return abs(len(str(g.numerator)) - len(str(g.denominator))) + 1


# ---------------------------------------------------------------- the attention fixed point

_HERMITE_BALLS = cache_dict("symrmt.models.attention.prove._HERMITE_BALLS", 64)


def _hermite_cached(f, diagonal, bits):
    key = None
    if isinstance(f, Nonlinearity):
        key = (f.text, f.center, str(f.expr), diagonal, bits)
    elif isinstance(f, str):
        key = (f, diagonal, bits)
    if key is not None and key in _HERMITE_BALLS:
        return _HERMITE_BALLS[key]
    val = hermite_ball(f, diagonal)
    if key is not None:
        if len(_HERMITE_BALLS) > 64:
            _HERMITE_BALLS.clear()
        _HERMITE_BALLS[key] = val
    return val


def _gram_factor_arb(gram):
    """Rows of ``B`` with ``B B^T = gram`` as balls (exact LDL^T, the square roots as balls)."""
    flint = require_flint()
    perm, L, Dg = ldl_pivoted(gram)
    n = len(Dg)
    B = [[flint.arb(0)] * n for _ in range(n)]
    roots = [to_arb(Fraction(x)).sqrt() for x in Dg]
    for i in range(n):
        for k in range(i + 1):
            if Dg[k] != 0:
                B[perm[i]][k] = to_arb(Fraction(L[i][k])) * roots[k]
    return B


def _woodbury_ball(G, dG, D):
    """``(varphi, dvarphi/dgamma)`` with ``x = (I + D H)^{-1} e``, ``H = Gm (x) I_s`` (on balls)."""
    flint = require_flint()
    gm, dgm = symmetric_matrix(G), symmetric_matrix(dG)
    n = len(D)
    s = n // 3
    H = flint.arb_mat(n, n)
    for a in range(3):
        for b in range(3):
            for i in range(s):
                H[a * s + i, b * s + i] = gm[a][b]
    M = flint.arb_mat(n, n, [1 if i == j else 0 for i in range(n) for j in range(n)]) + flint.arb_mat(D) * H
    e = flint.arb_mat(n, 1)
    e[0, 0] = 1
    x = mat_solve(M, e)
    phi = sum((gm[0][b] * x[b * s, 0] for b in range(3)), flint.arb(0))
    dphi = flint.arb(0)
    for a in range(3):
        for b in range(3):
            dphi += dgm[a][b] * sum((x[a * s + i, 0] * x[b * s + i, 0] for i in range(s)), flint.arb(0))
    return phi, dphi


class AttentionBall:
    """A proved attention point: ``error`` (E_A), ``quadratic_form`` (varphi), ``block_traces`` (G), ``branch``.

    Made by :func:`prove_attention`; the values are ``flint.arb`` balls.

    >>> from fractions import Fraction
    >>> from symrmt.proofs.arb import to_arb
    >>> ball = AttentionBall(Fraction(1), to_arb(Fraction(1, 4)), to_arb(Fraction(1, 2)), (), "proved")
    >>> ball.gamma, float(ball.error.mid()), ball.branch, ball.note
    (Fraction(1, 1), 0.25, 'proved', None)
    """

    def __init__(self, gamma, error, quadratic_form, block_traces, branch):
        self.gamma, self.error, self.quadratic_form = gamma, error, quadratic_form
        self.block_traces, self.branch = block_traces, branch
        self.note = self.params = None  # the chain's note; the parameters' balls (the chain's input)

    def __repr__(self):
        return f"AttentionBall(gamma={self.gamma}, error={self.error}, branch={self.branch!r})"


def prove_attention(f, c, gammas, geometry=None, diagonal: str = "zero", digits: int = 15, points=None,
                    route: str | None = None, chain: bool = False):
    """Balls of ``E_A(gamma)`` (a list of :class:`AttentionBall`, in the order given).

    ``points``: the :class:`~symrmt.models.attention.theory.AttentionPoint` of the certified solve (computed
    here when not given), the centres of the boxes.  ``chain``: prove the branch by continuation in
    the kernel strength (:func:`~symrmt.models.attention.prove_branch.attention_chain`; branch ``"continued"``); when it cannot be made the
    branch is ``"sanity"`` and the ball's ``note`` says why.

    Raises :class:`~symrmt.errors.ProveUnavailable` without python-flint, the solver's errors, and
    :class:`~symrmt.errors.ProofError` where a ball cannot be proved.  (The inputs are checked first; a
    proof takes seconds, ``tests/models/attention/test_prove.py`` runs them.)

    >>> prove_attention("tanh", -1, [1])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: c = p/n must be positive, got -1
    """
    flint = require_flint()
    arb = flint.arb
    cf = check_c(c)
    gs = check_gammas(gammas)
    geometry = as_low_rank(geometry)
    if points is None:
        points = attention_limit(f, cf, gs, geometry, diagonal, digits, details=True, route=route)
    if geometry.alpha != 1:
        f = scaled_nonlinearity(f, geometry.alpha)
        geometry = geometry.scaled()
    fjg_src, detN_src, _ = fixed_point_fjg()
    out = []
    for g, pt in zip(gs, points):
        bits = bits_for(digits, guard_digits(g) + 10)
        for _ in range(ESCALATIONS):
            with working_bits(bits):
                a1, nu, d = _hermite_cached(f, diagonal, bits)
                rt = route if route is not None else route_for(a1 if a1 != 0 else 0, geometry)
                gb, cb = to_arb(g), to_arb(cf)
                params = [gb, cb, a1, nu, d]
                F, J, Fg = square_system(arb_function(fjg_src), params)
                G = krawczyk(F, J, list(pt.block_traces), f"the attention fixed point at gamma={g}")
                dN = arb_function(detN_src)(G, params)
                dG_mat = flint.arb_mat(symmetric_matrix(G)).det()
                if dN.contains(0) or dG_mat.contains(0):
                    raise ProofError(f"at gamma={g}: det N or det G is not proved non-zero on the box, so the "
                                     "square system's root is not proved to be a fixed point")
                dG = mat_solve(flint.arb_mat(J(G)), flint.arb_mat([[-x] for x in Fg(G)]))
                dG = [dG[i, 0] for i in range(6)]
                if rt == "noise_only":
                    phi, dphi = G[0], dG[0]
                elif rt in ("aligned", "a1_zero"):
                    vals = arb_function(closed_form_phi(rt))(G, dG, a1, cb, to_arb(geometry.snr),
                                                            to_arb(geometry.trace_wkwq))
                    phi, dphi = vals[0], vals[1]
                else:
                    B = _gram_factor_arb(geometry.gram())
                    D = arb_function(woodbury_D_function(geometry.r))([x for row in B for x in row], a1, cb)
                    phi, dphi = _woodbury_ball(G, dG, D)
                err = -gb * gb * dphi
                if relative_ok(err, digits) and relative_ok(phi, digits):
                    break
            bits *= 2
        check_radius(err, digits, f"E_A at gamma={g}")
        with working_bits(bits):
            if not (G[0] > 0 and G[0] <= 1 / gb):
                raise BranchError(f"at gamma={g} the proved tau(Q) = {G[0].str(10)} is not in (0, 1/gamma]: the box "
                                  "holds a root off the physical branch")
            if not (err.overlaps(arb("0.5", "0.5")) and phi > 0 and phi.overlaps(arb(1 / gb / 2, (1 / gb / 2).upper()))):
                raise BranchError(f"at gamma={g}: E_A = {err.str(10)} (must be in [0, 1]) and varphi = {phi.str(10)} "
                                  "(in (0, 1/gamma]): the proved root is off the physical branch")
        ball = AttentionBall(g, err, phi, tuple(G), "sanity")
        ball.params = params
        out.append(ball)
    if chain:
        _chain_balls(out)
    return out


def _chain_balls(balls):
    """The branch of each ball by :func:`~symrmt.models.attention.prove_branch.attention_chain`, from the largest
    ``gamma`` down: the chain of a ``gamma`` below 1 starts from the continued root of the nearest larger
    ``gamma`` already chained (a proved enclosure of the same curve), so a list costs about its smallest point."""
    ends = []  # (gamma, enclosure) of the chains that closed
    done = {}
    for ball in sorted(balls, key=lambda b: -b.gamma):
        if ball.gamma in done:
            ball.branch, ball.note = done[ball.gamma]
            continue
        above = [e for e in ends if ball.gamma < e[0] < 1]
        start = min(above, key=lambda e: e[0]) if above else None
        try:
            nbox, enc = attention_chain(ball.params, ball.block_traces, f"the attention branch at gamma={ball.gamma}",
                                        start=None if start is None else (to_arb(start[0]), start[1]))
        except ProofError as exc:
            ball.note = f"branch not continued: {exc}"
        else:
            ends.append((ball.gamma, enc))
            ball.branch = "continued"
            ball.note = ("continued from L_0^-1 at kernel strength 0" +
                         (f" by {nbox} boxes" if start is None else
                          f" through the chain at gamma={start[0]} (then {nbox} boxes)"))
        done[ball.gamma] = (ball.branch, ball.note)


# ---------------------------------------------------------------- the model's limits

def prove_limit(f, c, gammas, geometry=None, diagonal: str = "zero", digits: int = 15, branch: bool = False):
    """Certified values and their proved balls: ``(values, balls)``.

    ``values`` is :func:`symrmt.models.attention.theory.limit`'s dict (mpf lists); ``balls`` has the lists
    ``"attention"`` and ``"ridge"`` of balls (``flint.arb``) and ``"branch"``: ``{"attention": "sanity",
    "ridge": "isolated"}`` (see the module docstring); ``branch=True``: the attention branch by
    continuation in the kernel strength (``"continued"`` when every point's chain closes).

    Raises what :func:`prove_attention` and :func:`prove_ridge` raise.  (No proof here: it takes seconds,
    ``tests/models/attention/test_prove.py`` runs them; the inputs are checked first.)

    >>> prove_limit("tanh", "1/2", [0])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: gamma must be positive (the probe needs gamma > 0), got 0.0
    """
    require_flint()
    geometry = as_low_rank(geometry)
    points = attention_limit(f, c, gammas, geometry, diagonal, digits, details=True)
    rr = ridge_limit(c, gammas, geometry.snr, digits)
    att_balls = prove_attention(f, c, gammas, geometry, diagonal, digits, points=points, chain=branch)
    rr_balls = prove_ridge(c, list(gammas) if isinstance(gammas, (list, tuple)) else [gammas], geometry.snr, digits)
    values = {"ridge": rr, "attention": [p.error for p in points]}
    balls = {"attention": [b.error for b in att_balls], "ridge": rr_balls,
             "branch": {"attention": "continued" if all(b.branch == "continued" for b in att_balls) else "sanity",
                        "ridge": "isolated"}}
    notes = [b.note for b in att_balls if b.note and b.branch != "continued"]
    if notes:
        balls["notes"] = notes
    return values, balls


BRANCH_NOTE = {
    "isolated": "branch proved: every real root isolated exactly, exactly one in the sanity region",
    "continued": "branch proved by continuation: a chain of Krawczyk boxes from L_0^-1 at zero strength",
    "sanity": "branch: the sanity bounds hold on the ball; that no other root lies there is not proved",
}


def balls_json(balls: dict, digits: int) -> dict:
    """The ``"proved"`` record of the CLI's JSON: ``{"attention": [{"mid", "rad"}...], "ridge": [...], "branch"}``.

    Takes the balls by name (lists of ``flint.arb``; ``notes`` and ``branch`` copied as they are) and the
    digits printed.

    >>> from fractions import Fraction
    >>> from symrmt.proofs.arb import to_arb
    >>> balls_json({"attention": [to_arb(Fraction(1, 4))], "branch": {"proved": True}}, 5)
    {'attention': [{'mid': '0.250000000', 'rad': '0'}], 'branch': {'proved': True}}
    """
    out = {k: [ball_json(x, digits) for x in v] for k, v in balls.items() if k not in ("branch", "notes")}
    if balls.get("notes"):
        out["notes"] = list(balls["notes"])
    if "branch" in balls:
        out["branch"] = dict(balls["branch"])
    return out
