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

from symrmt.arb import ProofError, _mat, require_flint, to_arb, working_bits
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
    m = len(x)
    for _ in range(steps):
        try:
            Y = _mat(J(x, t)).mid().inv().mid()
        except ZeroDivisionError:
            return None
        fx = flint.arb_mat([[v] for v in F(x, t)]).mid()
        step = Y * fx
        new = [(x[i] - step[i, 0]).mid() for i in range(m)]
        if not all(v.is_finite() for v in new):
            return None
        size = max(abs(v.mid()) for v in x) + 1
        delta = max(abs((a - b).mid()) for a, b in zip(new, x))
        x = new
        if delta <= size * flint.arb(2) ** (-flint.ctx.prec + 12):
            return x
    return None


def _newton_float(approx, x, t, steps=30):
    """Newton in floats on ``approx(x, t) -> (F, J, dF/dt)``: ``(x, dx/dt)`` or ``None``."""
    import numpy as np

    x = np.array(x, dtype=float)
    for _ in range(steps):
        try:
            f, j, _ = approx(list(x), t)
            dx = np.linalg.solve(np.array(j, dtype=float), np.array(f, dtype=float))
        except (np.linalg.LinAlgError, ArithmeticError, ValueError, OverflowError):
            return None
        x = x - dx
        if not np.all(np.isfinite(x)):
            return None
        if np.max(np.abs(dx)) <= 4e-16 * (1 + np.max(np.abs(x))):
            break
    else:
        if not np.max(np.abs(dx)) <= 1e-12 * (1 + np.max(np.abs(x))):
            return None
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


def _approx_point(F, J, approx, pred, t):
    """The approximate root at the point ``t`` (a Fraction) from the predictor ``pred`` (balls), or ``None``."""
    flint = require_flint()
    if approx is not None:
        got = _newton_float(approx, [float(v.mid()) for v in pred], float(t))
        if got is None:
            return None
        return [flint.arb(float(v)) for v in got[0]]
    return _newton_mid(F, J, pred, to_arb(t))


def _slope(approx, x, t):
    if approx is None:
        return None
    got = _newton_float(approx, [float(v.mid()) for v in x], float(t), steps=2)
    return None if got is None else [require_flint().arb(float(v)) for v in got[1]]


def _box(F, J, xt, T, link, eye, tiny, Ft=None):
    """``(X, K)``: a box ``X`` around ``xt`` with ``K = K(X, T)`` inside it and ``link`` inside it, or ``None``.

    With ``Ft`` (``dF/dt``), ``F(xt, T)`` is enclosed by the mean-value form
    ``F(xt, t_m) + Ft(xt, T) (T - t_m)`` (far tighter than ``F`` on the interval itself)."""
    flint = require_flint()
    arb = flint.arb
    m = len(xt)
    tm = T.mid() if T.rad() > 0 else T
    try:
        Y = _mat(J(xt, tm)).mid().inv().mid()
    except ZeroDivisionError:
        return None
    if Ft is not None and T.rad() > 0:
        dt = T - tm
        fx = [a + b * dt for a, b in zip(F(xt, tm), Ft(xt, T))]
    else:
        fx = F(xt, T)
    base = Y * flint.arb_mat([[v] for v in fx])
    r = [base[i, 0].abs_upper() * 2 + tiny * (abs(xt[i].mid()) + 1) for i in range(m)]
    if link is not None:
        r = [max(r[i], (link[i] - xt[i]).abs_upper() * arb("1.25")) for i in range(m)]
    for _ in range(8):
        X = [arb(xt[i], r[i]) for i in range(m)]
        K = (flint.arb_mat([[xt[i]] for i in range(m)]) - base) + (eye - Y * _mat(J(X, T))) * \
            flint.arb_mat([[X[i] - xt[i]] for i in range(m)])
        Ks = [K[i, 0] for i in range(m)]
        if not all(k.is_finite() for k in Ks):
            return None
        if _inside(Ks, X) and (link is None or _within(link, X)):
            return X, Ks
        r = [max((Ks[i] - xt[i]).abs_upper() * 2, r[i] * arb("1.5")) for i in range(m)]
    return None


def continuation_chain(F, J, start, end_box, what: str, bits: int = CHAIN_BITS, approx=None, Ft=None,
                       max_boxes: int = MAX_BOXES):
    """Prove that the root at ``t = 1`` in ``end_box`` is the continuation of ``start`` at ``t = 0``.

    ``F(x, t)`` and ``J(x, t)`` take a list of balls and a ball ``t``; ``start`` is the known root at
    ``t = 0`` (balls), ``end_box`` the proved enclosure of the root at ``t = 1`` (``None``: no check).
    Returns ``(boxes, enclosure)``: the number of boxes and an enclosure of the continued root at
    ``t = 1`` (a small Krawczyk box inside the last one, which may start a further chain); raises :class:`ProofError` when the chain cannot be closed (a turning point, a
    near-singular Jacobian on the way, or the last box missing ``end_box``: the root is then not
    proved to be the continued one).

    ``approx(x, t) -> (F, J, dF/dt)`` on floats, when given, makes the approximate points (Newton
    and the tangent predictor in float64; only the boxes' tests run on balls).  ``Ft(x, t)``: ``dF/dt``
    on balls, for the mean-value enclosure of ``F`` over an interval of ``t``."""
    flint = require_flint()
    arb = flint.arb
    with working_bits(bits):
        m = len(start)
        eye = flint.arb_mat(m, m, [1 if i == j else 0 for i in range(m) for j in range(m)])
        tiny = arb(2) ** (-bits + 24)
        t0, step = Fraction(0), Fraction(1, 16)
        x_prev = [to_arb(v).mid() for v in start]
        link = list(start)  # an enclosure of the (unique) root at t0 that the next box must contain
        slope = [arb(0)] * m
        boxes = tries = 0
        while t0 < 1:
            tries += 1
            if tries > max_boxes:
                raise ProofError(f"{what}: the continuation needed more than {max_boxes} boxes")
            t1 = min(Fraction(1), t0 + step)
            tm = (t0 + t1) / 2
            T = arb(to_arb(tm), to_arb((t1 - t0) / 2))
            pred = [x_prev[i] + slope[i] * to_arb(tm - t0) for i in range(m)]
            xt = _approx_point(F, J, approx, pred, tm)
            got = _box(F, J, xt, T, link, eye, tiny * 64, Ft) if xt is not None else None
            x1 = None
            if got is not None:
                X, _ = got
                # a small proved box at the point t1 inside X: its root is X's root at t1 (unique in X); its
                # radius floor (tiny) is below the big box's (tiny * 64), so a stationary entry fits
                x1 = _approx_point(F, J, approx, [x_prev[i] + slope[i] * to_arb(t1 - t0) for i in range(m)], t1)
                small = _box(F, J, x1, to_arb(t1), None, eye, tiny) if x1 is not None else None
                if small is None or not _within(small[0], X):
                    got = None
            if got is None:
                step /= 2
                if step < MIN_STEP:
                    raise ProofError(f"{what}: the continuation stalled at t = {float(t0):.6g} (no Krawczyk box "
                                     "over a parameter interval of width 2^-24: a turning point or a singular "
                                     "Jacobian on the path)")
                continue
            boxes += 1
            if t1 == 1:
                if end_box is not None and not all(e.overlaps(x) for e, x in zip(end_box, X)):
                    raise BranchError(f"{what}: the proved root at t = 1 lies outside the last box of the chain, "
                                      "whose only root is the one continued from the known start: the box holds "
                                      "another root (off the physical branch); it is refused")
                if end_box is not None and not _within(end_box, X):
                    raise ProofError(f"{what}: the continued root at t = 1 is not the proved one (the last box "
                                     "of the chain misses the proved box)")
                return boxes, small[1]
            link = small[1]
            slope = _slope(approx, x1, t1) or [((x1[i] - xt[i]) / to_arb(t1 - tm)).mid() for i in range(m)]
            x_prev, t0 = x1, t1
            step = min(step * 2, Fraction(1, 2))
    raise ProofError(f"{what}: the continuation did not reach t = 1")
