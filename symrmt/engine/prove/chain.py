r"""The branch proved by continuation: a chain of Krawczyk boxes over intervals of the homotopy parameter.

A fixed point ``F(x; t) = 0`` whose physical root is known at ``t = 0`` (the engine's strength ``s``:
``H = L_0^{-1}`` with no random part; the attention system's kernel strength ``t``: ``G = L_0^{-1}``)
and wanted at ``t = 1``.  :func:`continuation_chain` covers ``[0, 1]`` by intervals
``T_k = [t_k, t_{k+1}]`` (dyadic end points, exact balls) and for each a box ``X_k`` with the
parametric Krawczyk test

    ``K(X_k, T_k) = x_k - Y_k F(x_k; T_k) + (I - Y_k J(X_k; T_k)) (X_k - x_k)``  inside ``X_k``

(``T_k`` a ball): for **every** ``t`` in ``T_k`` the box holds exactly one root ``x(t)``, and
``J`` is regular on ``X_k x T_k``, so ``x(t)`` is continuous there.  Consecutive boxes are
linked: an enclosure of the root at ``t_{k+1}`` in ``X_k`` (the Krawczyk operator at that point)
lies inside ``X_{k+1}``, so the two boxes' roots at ``t_{k+1}`` are one.  The first box contains the
known start at ``t = 0`` (checked on balls); the last box contains the proved box at ``t = 1``.

What follows: the roots form one continuous curve from the known start to the proved root, every
root on it is isolated (regular Jacobian), and any continuous curve of roots that starts at the known
start stays on it (at the first parameter where it would leave, it lies in the interior of a box
whose root is unique).  So **if** the physical solution depends continuously on ``t``, which is the
mathematics' part (the limit of the pencil with its random part scaled), the proved root is the
physical one.  The chain runs at a low working precision (:data:`CHAIN_BITS`); only the boxes'
inclusions matter.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from symrmt.proofs.arb import ProofError, ball_matrix, mid_newton, newton_last, require_flint, to_arb, working_bits
from symrmt.core.numbers import FLOAT64
from symrmt.errors import BranchError

#: working bits of the chain's boxes (their size, not their digits, is what matters)
CHAIN_BITS = 96
#: most boxes (accepted or refused) of one chain before it gives up
MAX_BOXES = 400
#: the smallest interval tried (a fraction of [0, 1])
MIN_STEP = Fraction(1, 2**24)


def _newton_mid(F, J, x, t, steps=12):
    """Newton on midpoints at the point ``t`` (an approximation only); ``None`` when it does not converge."""
    flint = require_flint()
    try:
        x, ok = mid_newton(lambda h: F(h, t), lambda h: J(h, t), x, flint.arb(2) ** (-flint.ctx.prec + 12), steps)
    except ZeroDivisionError:
        return None
    return x if ok else None


def _newton_float(approx, x, t, steps=30):
    """Newton in floats on ``approx(x, t) -> (F, J, dF/dt)`` (the package's driver, float64): ``(x, dx/dt)`` or
    ``None``; a run out of steps is accepted when its last step is below ``1e-12``."""
    def linear(xs):
        f, j, _ = approx(list(xs), t)
        dx = -np.linalg.solve(np.array(j, dtype=float), np.array(f, dtype=float))
        if not np.all(np.isfinite(dx)):
            raise ValueError("a step that is not finite")
        return [float(v) for v in dx], None

    try:
        x, ok, step = newton_last(linear, [float(v) for v in x], FLOAT64, 4e-16, steps)
    except (np.linalg.LinAlgError, ArithmeticError, ValueError, OverflowError):
        return None
    if not ok and not step <= 1e-12:
        return None
    x = np.array(x, dtype=float)
    f, j, ft = approx(list(x), t)
    try:
        tangent = -np.linalg.solve(np.array(j, dtype=float), np.array(ft, dtype=float))
    except np.linalg.LinAlgError:
        return None
    return x, tangent


def _inside(inner, outer):
    return all(o.contains_interior(i) for i, o in zip(inner, outer))


def _within(inner, outer):
    """``inner`` in the closed box ``outer`` (enough for a link: the box's root is unique on the closed box)."""
    return all(o.contains(i) for i, o in zip(inner, outer))


def _polish(F, J, x, t, steps: int = 2):
    """Two Newton steps on midpoints at the working precision from a float64 point (the small box around
    the result then has a radius near its floor, far inside the big box, even in an entry that stays put
    along the path); ``None`` if the Jacobian is singular."""
    try:  # exactly ``steps`` steps (tolerance 0): the package's driver, kept at its last iterate
        x, _ = mid_newton(lambda h: F(h, t), lambda h: J(h, t), x, 0, steps, precond=_preconditioner)
    except ZeroDivisionError:
        return None
    return x


def _rung(level: int) -> Fraction:
    """The step of a rung of the ladder ``1/2, 3/8, 1/4, 3/16, 1/8, ...`` (ratios 4/3 and 3/2): every step
    and every sum of steps >= :data:`MIN_STEP` is a dyadic of at most 27 bits, an exact ball."""
    k = level // 2
    return Fraction(1, 2 ** (k + 1)) if level % 2 == 0 else Fraction(3, 2 ** (k + 3))


def _approx_point(F, J, approx, pred, t):
    """``(x, v)``: the approximate root at the point ``t`` (a Fraction) from the predictor ``pred`` (balls) and
    the tangent ``dx/dt`` there (``None`` without ``approx``); ``None`` when Newton fails."""
    flint = require_flint()
    if approx is not None:
        got = _newton_float(approx, [float(v.mid()) for v in pred], float(t))
        if got is None:
            return None
        return [flint.arb(float(v)) for v in got[0]], [flint.arb(float(v)) for v in got[1]]
    x = _newton_mid(F, J, pred, to_arb(t))
    return None if x is None else (x, None)


class _Section:
    """A proved box: ``K`` (an enclosure of its root at the midpoint, or at the point) and its section at a
    parameter value ``t`` (a Fraction): :meth:`holds` (``B`` proved inside it) and :meth:`misses` (``B``
    proved disjoint from it).  A plain box is the same box for every ``t``; a tube is
    ``x~ + v (t - t_m) + Y`` (the tangent line plus the box ``Y``), its tests run in ``y = x - x~ - v (t - t_m)``
    so that a rounding of the section only enlarges the tested set."""

    def __init__(self, K, X=None, xt=None, v=None, tm=None, Yb=None):
        self.K, self.X, self.xt, self.v, self.tm, self.Yb = K, X, xt, v, tm, Yb

    def _y(self, B, t):
        s = to_arb(t) - self.tm
        return [b - x - w * s for b, x, w in zip(B, self.xt, self.v)]

    def holds(self, B, t):
        if self.X is not None:
            return _within(B, self.X)
        return _within(self._y(B, t), self.Yb)

    def misses(self, B, t):
        if self.X is not None:
            return not all(b.overlaps(x) for b, x in zip(B, self.X))
        return not all(b.overlaps(y) for b, y in zip(self._y(B, t), self.Yb))


def _preconditioner(J0):
    """An approximate inverse of the midpoint of ``J0`` (an exact ball matrix), or ``None`` if singular.

    Any matrix is a valid Krawczyk preconditioner (only the test's success depends on it): up to 8 unknowns
    Arb's inverse, beyond that NumPy's in float64 (the chain's boxes are far wider than its 1e-16 and
    Arb's inverse costs ~ 70 ms at 100 unknowns)."""
    flint = require_flint()
    m = J0.nrows()
    if m <= 8:
        try:
            return J0.mid().inv().mid()
        except ZeroDivisionError:
            return None

    Jf = np.array([float(v) for v in J0.entries()]).reshape(m, m)  # float(ball): its midpoint, rounded
    try:
        Yf = np.linalg.inv(Jf)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(Yf)):
        return None
    return flint.arb_mat(m, m, [float(v) for v in Yf.ravel()])


def _contraction(J, H, xt, tm, X, T, Y, eye, A0):
    """An enclosure of ``I - Y J(x, t)`` over ``X x T``.

    Without ``H``: ``J`` on the box itself.  With ``H(X, T) -> (dJ/dx_k for each k, dJ/dt, ...)`` (row lists,
    or ``None`` when the box is refused): the centred (mean-value) form
    ``A0 - sum_k (Y dJ/dx_k(X, T)) (X_k - x~_k) - (Y dJ/dt(X, T)) (T - t_m)``, ``A0 = I - Y J(x~, t_m)``,
    each product with ``Y`` taken before the sum, which keeps the cancellations that the interval
    Jacobian of a product-form residual loses (its width is then second order in the box)."""
    if H is None:
        return eye - Y * ball_matrix(J(X, T))
    got = H(X, T)
    if got is None:
        return None
    dJ, Jt = got[0], got[1]
    out = A0
    for k, Hk in enumerate(dJ):
        out = out - (Y * ball_matrix(Hk)) * (X[k] - xt[k])
    if Jt is not None and T.rad() > 0:
        out = out - (Y * ball_matrix(Jt)) * (T - tm)
    return out


def _box(F, J, xt, T, link, eye, tiny, Ft=None, H=None):
    """``(X, K)``: a box ``X`` around ``xt`` with ``K = K(X, T)`` inside it and ``link`` inside it, or ``None``.

    With ``Ft`` (``dF/dt``), ``F(xt, T)`` is enclosed by the mean-value form
    ``F(xt, t_m) + Ft(xt, T) (T - t_m)`` (far tighter than ``F`` on the interval itself); with ``H``
    (second derivatives, :func:`_contraction`), ``I - Y J`` by its centred form."""
    flint = require_flint()
    arb = flint.arb
    m = len(xt)
    tm = T.mid() if T.rad() > 0 else T
    J0 = ball_matrix(J(xt, tm))
    Y = _preconditioner(J0)
    if Y is None:
        return None
    A0 = eye - Y * J0 if H is not None else None
    if Ft is not None and T.rad() > 0:
        dt = T - tm
        fx = [a + b * dt for a, b in zip(F(xt, tm), Ft(xt, T))]
    else:
        fx = F(xt, T)
    base = Y * flint.arb_mat([[v] for v in fx])
    r = [base[i, 0].abs_upper() * 2 + tiny * (abs(xt[i].mid()) + 1) for i in range(m)]
    if link is not None:
        r = [max(r[i], (link[i] - xt[i]).abs_upper() * arb("1.25")) for i in range(m)]
    for it in range(8):
        X = [arb(xt[i], r[i]) for i in range(m)]
        C = _contraction(J, H, xt, tm, X, T, Y, eye, A0)
        if C is None:
            return None
        K = (flint.arb_mat([[xt[i]] for i in range(m)]) - base) + C * \
            flint.arb_mat([[X[i] - xt[i]] for i in range(m)])
        Ks = [K[i, 0] for i in range(m)]
        if not all(k.is_finite() for k in Ks):
            return None
        if _inside(Ks, X) and (link is None or _within(link, X)):
            return _Section(Ks, X=X)
        grow = [(Ks[i] - xt[i]).abs_upper() for i in range(m)]
        if it >= 2 and _diverging(grow, r):
            return None
        r = [max(grow[i] * 2, r[i] * arb("1.5")) for i in range(m)]
    return None


def _diverging(grow, r):
    """The inflation does not converge: ``K`` reaches beyond twice the box in some entry (the contraction
    exceeds 1 there, so a larger box would not pass either: give up early, the step is halved)."""
    return any(g > ri * 2 for g, ri in zip(grow, r))


def _tube(F, J, Ft, H, xt, v, T, t_link, link, eye, tiny):
    """A tube ``x~ + v s + Y`` (``s = t - t_m`` in ``T - t_m``, ``v`` the tangent at ``t_m``) whose every section
    holds exactly one root, or ``None``: the Krawczyk test in ``y`` for every ``s`` at once,
    ``K = -Z G(0, S) + (I - Z dG/dy(Y, S)) Y`` inside ``Y``, with ``G(y, s) = F(x~ + v s + y, t_m + s)``.

    ``H(X, T) -> (dJ/dx_k, dJ/dt, d^2F/dt^2)`` on the tube's hull gives both enclosures to second order:
    ``G(0, S) in F(x~, t_m) + phi(0) S + phi'(hull) S^2 / 2`` with ``phi = J v + F_t`` along the line
    (``phi' = (sum_k dJ/dx_k v_k + 2 dJ/dt) v + F_tt``), and ``dG/dy in J(x~, t_m) + D S + sum_k dJ/dx_k Y_k``,
    ``D = sum_k dJ/dx_k v_k + dJ/dt`` (the one ``s`` of both terms kept together: the root's own motion
    along the tangent costs no width).  ``link`` (an enclosure of the root at ``t_link``) must lie in
    its section."""
    flint = require_flint()
    arb = flint.arb
    m = len(xt)
    tm = T.mid()
    S = T - tm
    J0 = ball_matrix(J(xt, tm))
    Z = _preconditioner(J0)
    if Z is None:
        return None
    A0 = eye - Z * J0
    vcol = flint.arb_mat([[w] for w in v])
    phi0 = J0 * vcol + flint.arb_mat([[w] for w in Ft(xt, tm)])
    base = Z * flint.arb_mat([[w] for w in F(xt, tm)]) + (Z * phi0) * S
    half_s2 = S * S / 2
    r = [tiny * (abs(xt[i].mid()) + 1) for i in range(m)]
    ylink = None
    if link is not None:
        sl = to_arb(t_link) - tm
        ylink = [link[i] - xt[i] - v[i] * sl for i in range(m)]
        r = [max(r[i], ylink[i].abs_upper() * arb("1.25")) for i in range(m)]
    for it in range(10):
        Yb = [arb(0, r[i]) for i in range(m)]
        hull = [xt[i] + v[i] * S + Yb[i] for i in range(m)]
        got = H(hull, T)
        if got is None or got[2] is None:
            return None
        dJ, Jt, Ftt = got
        ZH = [Z * ball_matrix(h) for h in dJ]
        ZJt = Z * ball_matrix(Jt)
        ZD = ZJt
        for k in range(m):
            ZD = ZD + ZH[k] * v[k]
        curv = ZD * vcol + ZJt * vcol + Z * flint.arb_mat([[w] for w in Ftt])
        G0 = base + curv * half_s2
        C = A0 - ZD * S
        for k in range(m):
            C = C - ZH[k] * Yb[k]
        K = C * flint.arb_mat([[y] for y in Yb]) - G0
        Ks = [K[i, 0] for i in range(m)]
        if not all(k.is_finite() for k in Ks):
            return None
        if _inside(Ks, Yb) and (ylink is None or _within(ylink, Yb)):
            return _Section([xt[i] + Ks[i] for i in range(m)], xt=xt, v=v, tm=tm, Yb=Yb)
        grow = [Ks[i].abs_upper() for i in range(m)]
        if it >= 2 and _diverging(grow, r):
            return None
        r = [max(grow[i] * 2, r[i] * arb("1.5")) for i in range(m)]
    return None


def continuation_chain(F, J, start, end_box, what: str, bits: int = CHAIN_BITS, approx=None, Ft=None,
                       max_boxes: int = MAX_BOXES, H=None):
    """Prove that the root at ``t = 1`` in ``end_box`` is the continuation of ``start`` at ``t = 0``.

    ``F(x, t)`` and ``J(x, t)`` take a list of balls and a ball ``t``; ``start`` is the known root at
    ``t = 0`` (balls), ``end_box`` the proved enclosure of the root at ``t = 1`` (``None``: no check);
    ``what`` names the system in the errors, ``bits`` the working precision, ``max_boxes`` the most boxes.
    Returns ``(boxes, enclosure)``: the number of boxes and an enclosure of the continued root at
    ``t = 1`` (a small Krawczyk box inside the last one, which may start a further chain); raises :class:`ProofError` when the chain cannot be closed (a turning point, a
    near-singular Jacobian on the way, or the last box missing ``end_box``: the root is then not
    proved to be the continued one).

    ``approx(x, t) -> (F, J, dF/dt)`` on floats, when given, makes the approximate points (Newton
    and the tangent predictor in float64; only the boxes' tests run on balls).  ``Ft(x, t)``: ``dF/dt``
    on balls, for the mean-value enclosure of ``F`` over an interval of ``t``.  ``H(X, T)``: the second
    derivatives ``(dJ/dx_k for each k, dJ/dt, d^2F/dt^2)`` on balls (or ``None``: the box is refused; the
    last ``None``: no tube), for the centred form of the Krawczyk contraction (:func:`_contraction`) and,
    with ``approx``'s tangents, boxes that follow the tangent (:func:`_tube`).

    Examples
    --------
    >>> import flint
    >>> def F(x, t):   # x^2 = 1 + 3t: the root x = 1 at t = 0 continues to x = 2 at t = 1
    ...     return [x[0] * x[0] - (1 + 3 * t)]
    >>> boxes, end = continuation_chain(F, lambda x, t: [[2 * x[0]]], [flint.arb(1)], None, "x^2 = 1 + 3t")
    >>> boxes > 0, end[0].contains(2), float(end[0].rad()) < 1e-15
    (True, True, True)
    """
    flint = require_flint()
    arb = flint.arb
    with working_bits(bits):
        m = len(start)
        eye = flint.arb_mat(m, m, [1 if i == j else 0 for i in range(m) for j in range(m)])
        tiny = arb(2) ** (-bits + 24)
        t0, step = Fraction(0), _rung(6)
        x_prev = [to_arb(v).mid() for v in start]
        link = list(start)  # an enclosure of the (unique) root at t0 that the next box must contain
        slope = [arb(0)] * m
        boxes = tries = 0
        level = 6  # step 1/16
        while t0 < 1:
            tries += 1
            if tries > max_boxes:
                raise ProofError(f"{what}: the continuation needed more than {max_boxes} boxes")
            t1 = min(Fraction(1), t0 + step)
            tm = (t0 + t1) / 2
            T = arb(to_arb(tm), to_arb((t1 - t0) / 2))
            pred = [x_prev[i] + slope[i] * to_arb(tm - t0) for i in range(m)]
            pt = _approx_point(F, J, approx, pred, tm)
            got = None
            if pt is not None:
                xt, v = pt
                if H is not None and Ft is not None and v is not None:
                    got = _tube(F, J, Ft, H, xt, v, T, t0, link, eye, tiny * 64)
                if got is None:
                    got = _box(F, J, xt, T, link, eye, tiny * 64, Ft, H)
            x1 = None
            if got is not None:
                # a small proved box at the point t1 inside got's section there: its root is got's root at t1
                # (unique in the section); its radius floor (tiny) is below the big box's (tiny * 64)
                p1 = _approx_point(F, J, approx, [x_prev[i] + slope[i] * to_arb(t1 - t0) for i in range(m)], t1)
                x1 = _polish(F, J, p1[0], to_arb(t1)) if p1 is not None else None
                small = _box(F, J, x1, to_arb(t1), None, eye, tiny, H=H) if x1 is not None else None
                if small is None or not got.holds(small.X, t1):
                    got = None
            if got is None:
                level += 2  # half the step
                step = _rung(level)
                if step < MIN_STEP:
                    raise ProofError(f"{what}: the continuation stalled at t = {float(t0):.6g} (no Krawczyk box "
                                     "over a parameter interval of width 2^-24: a turning point or a singular "
                                     "Jacobian on the path)")
                continue
            boxes += 1
            if t1 == 1:
                if end_box is not None and got.misses(end_box, t1):
                    raise BranchError(f"{what}: the proved root at t = 1 lies outside the last box of the chain, "
                                      "whose only root is the one continued from the known start: the box holds "
                                      "another root (off the physical branch); it is refused")
                if end_box is not None and not got.holds(end_box, t1):
                    raise ProofError(f"{what}: the continued root at t = 1 is not the proved one (the last box "
                                     "of the chain misses the proved box)")
                return boxes, small.K
            link = small.K
            slope = (p1[1] if p1[1] is not None else
                     [((x1[i] - xt[i]) / to_arb(t1 - tm)).mid() for i in range(m)])
            x_prev, t0 = x1, t1
            # one rung up the ladder after each box (doubling failed about every other box)
            level = max(level - 1, 0)
            step = _rung(level)
    raise ProofError(f"{what}: the continuation did not reach t = 1")
