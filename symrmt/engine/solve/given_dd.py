"""The double-double and triple-double refinements of a deterministic equivalent with given matrices (up to 28
and to 32 digits).

The float64 fixed point of :mod:`symrmt.engine.solve.given` is refined by Newton steps whose residuals
need the traces of ``G = M^{-1}`` beyond float64: ``R = I - M X`` in double-double (exact slice products
of the given matrices, Ozaki, Ogita and Oishi 2012), ``G = X (I + R + R^2 + ...)`` (:func:`series_tail`), and the traces summed with
a rounding bound or error-free; where the Woodbury reduction applies, the same on its inner matrix
(``docs/engine.md``, section on given matrices).  With ``width = 3`` the products ``B X``, the cancellation
``I - M X`` and the coefficients are expansions of three float64 arrays (:func:`renorm`, :func:`split`), the
traces summed by :func:`sum_acc` and :func:`trace_exp`; the corrections still come from the float64 ``X``.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from symrmt.core.numbers import two_product
from symrmt.engine.solve.expansions import dd_add, dd_scale, dd_scale_64, renorm, split, sum_acc, sum_dd, trace_exp
from symrmt.engine.solve.given_blocks import inner_blocks, same_matrix
from symrmt.errors import ConvergenceError

__all__ = ["solve_dd"]


#: digits below those asked that the truncation and rounding of the series ``X (I + R + R^2 + ...)`` must stay
#: (:func:`series_tail`); the two evaluations that round differently must then agree to 2 digits below them
SERIES_GUARD = 4
#: the highest power of ``R`` that the series carries
MAX_ORDER = 8
#: the bits that the exact slice products deliver with two or three float64 components
MAX_BITS = {2: 112, 3: 159}
#: the name of the refinement with two or three float64 components, for messages
PATH = {2: "double-double", 3: "triple-double"}
#: the relative Newton step (a power of ten) below which the refinement stops whatever the digits asked: the
#: floor of its residual's accuracy with two or three float64 components
FLOOR = {2: 31, 3: 46}
#: with ``presolve``, the relative Newton step (a power of ten) below which the refinement goes on with three
#: components instead of two (well above the double-double floor, so that its steps still converge)
PRESOLVE = 24


def series_tail(Rh, amp, digits, terms=2, Rl=None):
    """``R^2 + R^3 + ... + R^k`` in float64, the tail of the series ``G = X (I + R + R^2 + ... + R^k)`` of an
    inverse from a float64 one ``X`` and its residual ``R = I - M X``; ``None`` where ``G = X (I + R)`` is enough.
    With ``terms = 3`` (the triple-double refinement, ``R = Rh + Rl``), the tail as a double-double
    ``(hi, lo)``: where the float64 ``Rh Rh`` is not enough (its rounding, or the terms in ``Rl`` left out,
    amplified), ``R R`` from exact slice products with ``Rh Rl + Rl Rh`` in float64, its rounding then
    ``2^-104`` of its size instead of ``2^-52``.

    ``amp`` says how much an error in ``G`` is amplified in the traces read from it; each bound below, times
    ``amp``, must stay under ``10^-(digits + SERIES_GUARD)``.  With ``r = ||R||`` (the row-sum norm) and
    ``||R^2||`` computed, the terms left out weigh at most ``||R^2|| r^(k-1)/(1 - r)``, and ``k`` is the least
    order (at most :data:`MAX_ORDER`) for which that will do.  The float64 product ``R R`` is off by at most
    ``gamma_K || |R| |R| ||`` (Higham 2002, 3.5); where that is too much, ``R R`` is summed from exact slice
    products (:func:`_exact_dot`) to the bits needed (at most those of ``terms`` float64 components: 112 bits
    for two, 159 for three).  Raises ``ConvergenceError`` when ``r`` is not below ``1e-6`` or a bound cannot be
    met.

    >>> R = np.array([[0.0, 5e-9], [0.0, 0.0]]) + 2.5e-9 * np.eye(2)
    >>> series_tail(R / 100, 1.0, 15) is None, bool(np.allclose(series_tail(R, 1e12, 15), R @ R + R @ R @ R,
    ...                                                         rtol=1e-15, atol=0))
    (True, True)
    >>> series_tail(1e-5 * np.eye(2), 1.0, 15)
    Traceback (most recent call last):
    ...
    symrmt.errors.ConvergenceError: the float64 inverse is too far from the inverse (residual 1e-05) for the double-double refinement
    """
    thresh = 10.0 ** (-(digits + SERIES_GUARD))
    absR = np.abs(Rh)
    r = float(np.max(absR.sum(axis=1)))
    if not r < 1e-6:
        raise ConvergenceError(f"the float64 inverse is too far from the inverse (residual {r:.3g}) for the "
                               f"{PATH[terms]} refinement")
    if amp * r * r / (1.0 - r) <= thresh:
        return None
    K = Rh.shape[1]
    g = K * 2.0 ** -53 / (1.0 - K * 2.0 ** -53)
    rounding = g * float(np.max(absR @ absR.sum(axis=1)))
    rl = float(np.max(np.abs(Rl).sum(axis=1))) if terms > 2 and Rl is not None else 0.0
    if terms > 2 and amp * (rounding + 2.0 * r * rl) <= thresh:   # R R in float64 will do
        RR = Rh @ Rh
        RRh, RRl = RR, 0.0
    elif terms > 2:
        scale = 4.0 * K * float(np.max(absR)) * max(r, float(np.max(absR.sum(axis=0))))
        bits = int(math.ceil(math.log2(max(amp * scale / thresh, 2.0)))) + 1
        if bits > MAX_BITS[2]:
            raise ConvergenceError(f"the float64 inverse is too far from the inverse (residual {r:.3g}, amplified "
                                   f"{amp:.3g} times) for {digits} digits on the {PATH[terms]} path")
        RRh, RRl = _exact_dot(Rh, Rh, bits)
        if Rl is not None:
            RRl = RRl + (Rh @ Rl + Rl @ Rh)
        RR = RRh
        rounding = scale * 2.0 ** -bits + 2.0 ** -104 * float(np.max(np.abs(RRh).sum(axis=1))) + 2 * g * r * rl
    elif amp * rounding <= thresh:
        RR = Rh @ Rh
    else:   # R R from exact slice products: off by at most 4 K 2^-bits max|R| max(||R||, ||R||_1) (_slices)
        scale = 4.0 * K * float(np.max(absR)) * max(r, float(np.max(absR.sum(axis=0))))
        bits = int(math.ceil(math.log2(amp * scale / thresh))) + 1
        if bits > MAX_BITS[terms]:
            raise ConvergenceError(f"the float64 inverse is too far from the inverse (residual {r:.3g}, amplified "
                                   f"{amp:.3g} times) for {digits} digits on the {PATH[terms]} path")
        RR = _exact_dot(Rh, Rh, bits, terms=terms)[0]
        rounding = scale * 2.0 ** -bits + 2.0 ** -52 * float(np.max(np.abs(RR).sum(axis=1)))
    r2 = float(np.max(np.abs(RR).sum(axis=1))) * (1.0 + g) + rounding
    k, bound = 2, amp * r2 * r / (1.0 - r)
    while bound > thresh and k <= MAX_ORDER:
        k, bound = k + 1, bound * r
    if k > MAX_ORDER or amp * (rounding + (k > 2) * g * r * r2) > thresh:
        raise ConvergenceError(f"the float64 inverse is too far from the inverse (residual {r:.3g}, amplified "
                               f"{amp:.3g} times) for {digits} digits on the {PATH[terms]} path")
    if terms > 2:
        higher = None
        for _ in range(k - 2):
            higher = Rh @ (RR if higher is None else RR + higher)
        return renorm([RRh, RRl] + ([higher] if higher is not None else []), 2)
    tail = RR
    for _ in range(k - 2):
        tail = RR + Rh @ tail
    return tail


#: the most products summed in float64 before an error-free sum (:func:`_chunked_dot`)
_CHUNK = 64


def _chunked_dot(A, B, Bl):
    """``(sum(A * (B + Bl)), bound)``: the sum as an mpmath number, ``A * B`` summed in float64 over chunks of
    at most :data:`_CHUNK` products (each chunk's error at most ``gamma_CHUNK`` times its sum of ``|a b|``,
    Higham 2002, Lemma 3.1 and 3.5), the chunks' sums added error-free (:func:`sum_dd`); ``A * Bl`` (``Bl``
    the low parts, below ``2^-53 |B|``) summed in float64 over all terms, its whole size counted in
    ``bound``."""
    A = np.ascontiguousarray(A).ravel()
    B = np.ascontiguousarray(B).ravel()
    Bl = np.ascontiguousarray(Bl).ravel()
    m = A.size
    prod = A * B
    pad = (-m) % _CHUNK
    if pad:
        prod = np.concatenate([prod, np.zeros(pad)])
    sums = prod.reshape(-1, _CHUNK).sum(axis=1)
    u = 2.0 ** -53
    g = (_CHUNK + 1) * u / (1 - (_CHUNK + 1) * u) + ((len(sums) + 1).bit_length() * u) ** 2  # + the chunks' sum
    absA = np.abs(A)
    low = float(np.dot(A, Bl))
    bound = (g * float(np.dot(absA, np.abs(B))) + 2.0 * float(np.dot(absA, np.abs(Bl)))) * (1 + (m + 2) * u * 2)

    return sum_dd(sums) + mpmath.mpf(low), bound


def _slices(M, axis, w, count):
    """``M`` as a sum of ``count`` slices, each of at most ``w`` bits on the grid of its row (``axis=1``) or
    column (``axis=0``) scale (every subtraction exact)."""
    amax = np.max(np.abs(M), axis=axis, keepdims=True)
    amax[amax == 0] = 1.0
    unit = np.exp2(np.ceil(np.log2(amax)))
    out, R = [], M.copy()
    for _ in range(count):
        unit = unit * 2.0 ** -w
        S = np.round(R / unit) * unit
        out.append(S)
        R = R - S
    return out


def _exact_dot(A, B, bits=112, cache=None, terms=2):
    """``A @ B`` as an expansion of ``terms`` float64 arrays (a double-double ``(hi, lo)`` for two) to about
    ``2^-bits`` of the row and column scales (``bits`` at most :data:`MAX_BITS`): the slices' products are exact in float64 (Ozaki, Ogita and Oishi 2012), those of one level
    ``a + b = k`` summed exactly by one product of the stacked slices (each slice has ``w`` bits, so a level's
    sum of ``(k + 1) K`` products of ``2 w`` bits stays within 53), and the levels summed error-free;
    ``cache`` (a dict) keeps the slices of ``A`` for another call with the same ``A``.

    >>> A = np.array([[1 / 3, 2 / 7], [1 / 11, 5 / 13]]); B = np.array([[3 / 17], [1 / 19]])
    >>> hi, lo = _exact_dot(A, B)
    >>> from fractions import Fraction as Fr
    >>> exact = [sum(Fr(A[i, k]) * Fr(B[k, 0]) for k in range(2)) for i in range(2)]
    >>> [abs(Fr(hi[i, 0]) + Fr(lo[i, 0]) - exact[i]) <= abs(exact[i]) * Fr(2) ** -100 for i in range(2)]
    [True, True]
    """
    K = A.shape[1]
    bits = min(bits, MAX_BITS[terms])
    count = 1
    while True:   # the fewest levels whose slices of w bits reach the bits asked, w fitting count K products
        w = (53 - int(np.ceil(np.log2(max(count * K, 2))))) // 2
        if count * w >= bits:
            break
        count += 1
    key = (id(A), w, count)
    if cache is not None and key in cache:
        As = cache[key][1]
    else:
        As = _slices(A, 1, w, count)
        if cache is not None:
            cache[key] = (A, As)   # A held, so that its id is not reused
    Bs = _slices(B, 0, w, count)
    acc, levels = None, []
    for k in range(count):
        level = As[0] @ Bs[k] if k == 0 else np.hstack(As[:k + 1]) @ np.vstack(Bs[k::-1])
        if terms > 2:
            levels.append(level)
            continue
        acc = (level, np.zeros_like(level)) if acc is None else dd_add(acc, (level, 0.0))
    return acc if terms == 2 else renorm(levels, terms)


def _dot_dd(A, B, Bl, terms=2):
    """``sum(A * (B + Bl))`` as an mpmath number: every product ``A * B`` split exactly (Dekker), the terms
    summed by a two-sum tree (:func:`sum_acc` with ``terms``)."""
    prod, err = two_product(A, B)
    return sum_acc(np.concatenate([prod.ravel(), err.ravel(), (A * Bl).ravel()]), terms)


def woodbury_reader(Ainv, pos, rows, cols, T):
    """A function ``(k, l) -> entry`` of the full inverse, read from its Woodbury form:
    ``Ainv[pos[k], pos[l]] - sum_{r, c} Ainv[pos[k], rows[r]] Ainv[cols[c], pos[l]] T[r][c]``, where ``Ainv``
    (indexed ``[i, j]``: an mpmath or python-flint matrix) is the inverse with the scalar blocks eliminated
    and ``T`` the inner matrix's correction; in the arithmetic the entries carry.

    >>> import mpmath
    >>> read = woodbury_reader(mpmath.matrix([[2, 1], [1, 3]]), {"a": 0, "b": 1}, [1], [0], [[1]])
    >>> read("a", "b")
    mpf('0.0')
    """
    nr, nc = len(rows), len(cols)

    def read(k, l):
        i, j = pos[k], pos[l]
        s = Ainv[i, j]
        for r in range(nr):
            for c in range(nc):
                s -= Ainv[i, rows[r]] * Ainv[cols[c], j] * T[r][c]
        return s

    return read


def _woodbury_dd(part, plan, h, det, eta, digits, variant, bits, slices, width=2):
    """The traces ``tr(G_kl)/N`` of the inverse of the materialized matrix in double-double through the
    Woodbury reduction ``plan`` (:meth:`_Part.woodbury_plan`): ``A^{-1}`` at the working precision,
    ``X`` a float64 inverse of ``N = I + (S (x) I) B`` (``S = A^{-1}[C, R]``; ``variant`` 1: from ``N^T``, which
    rounds differently), ``E = B X`` and ``R = I - N X`` in double-double (exact slice products of the
    given matrices), ``tr(Y_rc)`` of ``Y = B N^{-1} = E (I + R + R^2 + ...)`` (:func:`series_tail`) read as in
    :func:`solve_dd`, and ``tr(G_kl)/N = A^{-1}_kl - sum_rc A^{-1}_kr A^{-1}_cl tr(Y_rc)/N``.  Returns a function
    ``(k, l) -> mpf``, or ``None`` when ``A`` is ill-conditioned (``cond > 1e8``) or ``N`` singular in float64;
    raises ``ConvergenceError`` when ``R`` is too large for the series to reach the digits (amplified by
    ``A^{-1}`` and ``E``)."""

    N, pos, rows, cols, nz = plan
    nk, nr, nc = len(pos), len(rows), len(cols)
    A = mpmath.zeros(nk, nk)
    terms = []         # (index into rows, index into cols, given matrix, coefficient)
    for i, j, kind, data, c in det:
        if i not in pos or j not in pos:
            continue
        if kind == "I":
            A[pos[i], pos[j]] += c
        else:
            terms.append((rows.index(pos[i]), cols.index(pos[j]), data, c))
    for a, b, w, m, m2 in eta:
        if a in pos:
            A[pos[a], pos[b]] -= w * h[part.pos[(m, m2)]]
    A64 = np.array([[float(A[i, j]) for j in range(nk)] for i in range(nk)])
    try:
        if not np.linalg.cond(A64) < 1e8:
            return None
    except np.linalg.LinAlgError:
        return None
    Ainv = A ** -1
    a64 = np.array([[float(Ainv[i, j]) for j in range(nk)] for i in range(nk)])
    S = [[Ainv[cols[a], rows[b]] for b in range(nr)] for a in range(nc)]
    comps = inner_blocks(np.array([[0.0 if S[a][b] == 0 else 1.0 for b in range(nr)] for a in range(nc)]), nz)
    if len(comps) == 2:
        T = _two_blocks_dd(N, rows, cols, comps, S, terms, a64, digits, variant, bits, slices, width)
        if T is None:
            return None
        return woodbury_reader(Ainv, pos, rows, cols, T)
    N64 = np.eye(nc * N)
    for r, cc, data, c in terms:
        for a in range(nc):
            s = float(S[a][r])
            if s != 0.0:
                N64[a * N:(a + 1) * N, cc * N:(cc + 1) * N] += (s * float(c)) * data
    try:
        X = np.linalg.inv(N64) if not variant else np.ascontiguousarray(np.linalg.inv(N64.T).T)
    except np.linalg.LinAlgError:
        return None

    def dd(x):
        return split(x, width)

    E = [tuple(np.zeros((N, nc * N)) for _ in range(width)) for _ in range(nr)]
    for r, cc, data, c in terms:
        E[r] = dd_add(E[r], dd_scale(dd(c), _exact_dot(data, X[cc * N:(cc + 1) * N], bits, slices, width)))
    Rb = []
    for a in range(nc):
        eye = np.zeros((N, nc * N))
        eye[np.arange(N), a * N + np.arange(N)] = 1.0
        acc = dd_add((eye, np.zeros_like(eye)), (-X[a * N:(a + 1) * N], np.zeros_like(eye)))
        for r in range(nr):
            if S[a][r] != 0:
                acc = dd_add(acc, dd_scale(dd(-S[a][r]), E[r]))
        Rb.append(acc)
    Rh = np.vstack([x[0] for x in Rb])
    Rl = np.vstack([x[1] for x in Rb])
    # how an error in tr(Y_rc)/N moves a trace of G, and the size of E = B X
    wscale = float(np.max(np.abs(a64[:, rows]).sum(axis=1)) * np.max(np.abs(a64[cols, :]).sum(axis=0)))
    e_norm = max(float(np.max(np.sum(np.abs(e[0]), axis=1))) for e in E)
    amp = max(1.0, wscale * e_norm)
    RR = series_tail(Rh, amp, digits, width, Rl)
    if width > 2 and RR is not None:   # the tail in double-double, folded into R: G = X (I + R + tail)
        (Rh, Rl), RR = renorm([Rh, Rl, *RR], 2), None
    RT = (np.ascontiguousarray(Rh.T), np.ascontiguousarray(Rl.T))
    thresh = 10.0 ** (-(digits + 8))
    T = [[None] * nc for _ in range(nr)]
    for r in range(nr):
        Eh, El = E[r][0], E[r][1]
        for c in range(nc):
            cs = slice(c * N, (c + 1) * N)
            base = _trace_of(E[r], cs, width)
            B, Bl = RT[0][cs], RT[1][cs]
            fast, bound = _chunked_dot(Eh, B, Bl)
            low = float(np.vdot(El, B))
            bound += 2.0 * float(np.vdot(np.abs(El), np.abs(B)))
            if bound * wscale <= thresh * max(abs(float(base)), 1e-300):
                d = fast
            else:
                d = _dot_dd(Eh, B, Bl, width)
            d += mpmath.mpf(low)
            if RR is not None:
                d += mpmath.mpf(float(np.sum(Eh * RR[:, cs].T)))
            T[r][c] = (base + d) / N

    return woodbury_reader(Ainv, pos, rows, cols, T)


def _trace_of(E, cs, width):
    """``tr(E[:, cs])`` of the expansion ``E`` (a tuple of float64 arrays) as an mpmath number: the leading
    component's diagonal summed almost exactly, the next in float64 for a double-double; all components
    through :func:`sum_acc` for more."""
    if width == 2:
        return sum_dd(np.diagonal(E[0][:, cs])) + mpmath.mpf(float(np.sum(np.diagonal(E[1][:, cs]))))
    return sum_acc(np.concatenate([np.diagonal(x[:, cs]) for x in E]), width)


def _trace_dd(Ah, Al, Bt, Btl, scale, thresh, relative=False, width=2):
    """``sum(A * B)`` (``A = Ah + Al``, ``B = Bt + Btl`` double-double, ``B`` given transposed so that this is
    ``tr(A B^T)``) as an mpmath number: :func:`_chunked_dot` where its rounding bound times ``scale`` is below
    ``thresh`` (``relative``: times the size of the sum), else every product split exactly (:func:`_dot_dd`);
    the ``Al`` terms in float64 (below ``2^-53`` of the sum's terms, counted in the bound)."""
    fast, bound = _chunked_dot(Ah, Bt, Btl)
    low = float(np.vdot(Al, Bt))
    bound += 2.0 * float(np.vdot(np.abs(Al), np.abs(Bt)))
    if relative:
        thresh = thresh * max(abs(float(fast)), 1e-300)
    d = fast if bound * scale <= thresh else _dot_dd(Ah, Bt, Btl, width)
    return d + mpmath.mpf(low)


def _two_blocks_dd(N, rows, cols, comps, S, terms, a64, digits, variant, bits, slices, width=2):
    """``T[r][c] = tr(Y_rc)/N`` (mpmath) of ``Y = B K^{-1}`` when the inner matrix ``K`` is block upper
    triangular with two diagonal blocks ``comps`` (:mod:`symrmt.engine.solve.given_blocks`):
    ``Y[., C_1] = D_1 - D_0 (S[C_0, R] (x) I) D_1`` and ``Y[., C_0] = D_0``, ``D_i = B[., C_i] K_ii^{-1}``.  Each
    ``D_i = E_i (I + R_i + R_i^2 + ...)`` as in :func:`_woodbury_dd` (``X_i`` a float64 inverse of
    ``K_ii``, the other diagonal block's when they differ by less than ``10^-12`` of their size: the
    double-double residual ``R_i = I - K_ii X_i`` corrects it); the traces of ``D_0 D_1`` block products from
    ``tr(E_0 E_1)`` in double-double and the terms in ``R`` in float64.  Returns ``None`` when a diagonal block
    is singular in float64; raises ``ConvergenceError`` as :func:`_woodbury_dd`."""
    nr, nc = len(rows), len(cols)

    def dd(x):
        return split(x, width)

    blocks = []
    for comp in comps:
        m = len(comp)
        mine = [(r, comp.index(cc), data, c) for r, cc, data, c in terms if cc in comp]
        live = sorted({r for r, *_x in mine})
        K64 = np.eye(m * N)
        for r, ci, data, c in mine:
            for a_i, a in enumerate(comp):
                sv = float(S[a][r])
                if sv != 0.0:
                    K64[a_i * N:(a_i + 1) * N, ci * N:(ci + 1) * N] += (sv * float(c)) * data
        # the given blocks in their places: two blocks with the same key and inverse have the same product B X
        key = [(live.index(r), ci, same_matrix(data), c) for r, ci, data, c in mine]
        blocks.append({"comp": comp, "mine": mine, "live": live, "K64": K64, "key": key})
    for i, b in enumerate(blocks):
        for b2 in blocks[:i]:
            same = (b2["K64"].shape == b["K64"].shape
                    and np.max(np.abs(b["K64"] - b2["K64"])) <= 1e-12 * np.max(np.abs(b2["K64"])))
            if same:
                b["X"] = b2["X"]
                if b["key"] == b2["key"]:
                    b["E"] = b2["E"]
                break
        # the previous residual of this refinement (``slices`` lives as long as one solve_dd): a block that moved so
        # little that its float64 inverse's residual grows by at most 1e-13 (||dK|| ||X||, row-sum norms) keeps that
        # inverse (the residual R below is formed anew, exactly), and with the same given blocks its product B X
        prev = slices.get(("inverse", tuple(b["comp"])))
        if "X" not in b and prev is not None and prev[0].shape == b["K64"].shape \
                and float(np.max(np.abs(b["K64"] - prev[0]).sum(axis=1))) * prev[4] <= 1e-13:
            b["X"] = prev[1]
            if prev[2] == b["key"] and len(prev[3][0]) == width:
                b["E"] = prev[3]
        if "X" not in b:
            try:
                K64 = b["K64"]
                b["X"] = np.linalg.inv(K64) if not variant else np.ascontiguousarray(np.linalg.inv(K64.T).T)
            except np.linalg.LinAlgError:
                return None
        X, live, m = b["X"], b["live"], len(b["comp"])
        if "E" not in b:
            E = [tuple(np.zeros((N, m * N)) for _ in range(width)) if width == 2 else None for _ in live]
            for r, ci, data, c in b["mine"]:
                k = live.index(r)
                t = dd_scale(dd(c), _exact_dot(data, X[ci * N:(ci + 1) * N], bits, slices, width))
                E[k] = t if E[k] is None else dd_add(E[k], t)
            b["E"] = [e if e is not None else tuple(np.zeros((N, m * N)) for _ in range(width)) for e in E]
        xnorm = prev[4] if prev is not None and prev[1] is X else float(np.max(np.abs(X).sum(axis=1)))
        slices[("inverse", tuple(b["comp"]))] = (b["K64"], X, b["key"], b["E"], xnorm)
        E = b["E"]
        Rb = []
        for a_i, a in enumerate(b["comp"]):
            eye = np.zeros((N, m * N))
            eye[np.arange(N), a_i * N + np.arange(N)] = 1.0
            acc = dd_add((eye, np.zeros_like(eye)), (-X[a_i * N:(a_i + 1) * N], np.zeros_like(eye)))
            for k, r in enumerate(live):
                if S[a][r] != 0:
                    acc = dd_add(acc, dd_scale(dd(-S[a][r]), E[k]))
            Rb.append(acc)
        b["Rh"] = np.vstack([x[0] for x in Rb])
        b["Rl"] = np.vstack([x[1] for x in Rb])
        b["Ev"] = tuple(np.vstack([e[j] for e in E]) for j in range(width))
        b["Eh"], b["El"] = b["Ev"][0], b["Ev"][1]
    e_norm = max(float(np.max(np.sum(np.abs(b["Eh"]), axis=1))) for b in blocks)
    s_norm = max(sum(abs(float(S[a][r])) for r in range(nr)) for a in range(nc))
    wscale = float(np.max(np.abs(a64[:, rows]).sum(axis=1)) * np.max(np.abs(a64[cols, :]).sum(axis=0)))
    # how an error of D_i moves a trace of G: directly, and through the product D_0 (S (x) I) D_1
    amp = max(1.0, wscale * e_norm * (1.0 + s_norm * e_norm))
    thresh = 10.0 ** (-(digits + 8))
    for b in blocks:
        # F = E (R + R^2 + ...): the terms of D = E (I + R + R^2 + ...) after the first, in float64 (in
        # double-double for more components: E R from exact slice products, the rest in float64)
        b["RR"] = series_tail(b["Rh"], amp, digits, width, b["Rl"])
        if width > 2 and b["RR"] is not None:   # the tail in double-double, folded into R
            (b["Rh"], b["Rl"]), b["RR"] = renorm([b["Rh"], b["Rl"], *b["RR"]], 2), None
        if width == 2:
            b["F"] = b["Eh"] @ b["Rh"]
            if b["RR"] is not None:
                b["F"] = b["F"] + b["Eh"] @ b["RR"]
        else:
            # E_h R_h to 10^-(digits + 8) of the traces once amplified (its error about 2^-bits of the row and
            # column scales times K), at most to MAX_BITS[2]: like every rounding outside the series, what is
            # left is checked by the two evaluations that round differently
            big = float(np.max(np.abs(b["Eh"]))) * float(np.max(np.abs(b["Rh"]))) * b["Rh"].shape[0]
            fbits = min(MAX_BITS[2], max(1, int(math.ceil(math.log2(max(big * amp / thresh, 2.0))))))
            Fh, Fl = _exact_dot(b["Eh"], b["Rh"], fbits)
            Fl = Fl + (b["Eh"] @ b["Rl"] + b["El"] @ b["Rh"])
            if b["RR"] is not None:
                Fl = Fl + b["Eh"] @ b["RR"]
            b["Fv"] = renorm([Fh, Fl], 2)
            b["F"] = b["Fv"][0]
    T = [[mpmath.mpf(0)] * nc for _ in range(nr)]

    def blk(M, k, a_i):
        return M[k * N:(k + 1) * N, a_i * N:(a_i + 1) * N]

    for b in blocks:   # the diagonal blocks: tr(E) + tr(E R) (+ tr(E (R^2 + ...))), as in _woodbury_dd
        RT = (np.ascontiguousarray(b["Rh"].T), np.ascontiguousarray(b["Rl"].T))
        for k, r in enumerate(b["live"]):
            Eh, El = b["Eh"][k * N:(k + 1) * N], b["El"][k * N:(k + 1) * N]
            Ek = tuple(x[k * N:(k + 1) * N] for x in b["Ev"])
            for a_i, a in enumerate(b["comp"]):
                cs = slice(a_i * N, (a_i + 1) * N)
                base = _trace_of(Ek, cs, width)
                d = _trace_dd(Eh, El, RT[0][cs], RT[1][cs], wscale, thresh * max(abs(float(base)), 1e-300),
                              width=width)
                if b["RR"] is not None:
                    d += mpmath.mpf(float(np.sum(Eh * b["RR"][:, cs].T)))
                T[r][a] += (base + d) / N
    b0, b1 = blocks
    # D_0 (S[C_0, R] (x) I) D_1, block (r0, c): sum over a in C_0 of D0_{r0 a} M_{a c}, with
    # M_{a c} = sum_{r1} S[a][r1] D1_{r1 c} formed once (the E part in double-double, the F part in float64) and
    # given transposed, so that each trace is one pass over the block
    M = {}
    for a_i, a in enumerate(b0["comp"]):
        for c_i, c in enumerate(b1["comp"]):
            acc, f = None, 0.0
            for k1, r1 in enumerate(b1["live"]):
                s = S[a][r1]
                if s == 0:
                    continue
                term = dd_scale(dd(s), tuple(blk(x, k1, c_i) for x in b1["Ev"]))
                acc = term if acc is None else dd_add(acc, term)
                if width == 2:
                    f = f + float(s) * blk(b1["F"], k1, c_i)
                else:
                    ft = dd_scale(split(s, 2), tuple(blk(x, k1, c_i) for x in b1["Fv"]))
                    f = ft if isinstance(f, float) else dd_add(f, ft)
            if acc is not None:
                if width == 2:
                    M[(a_i, c)] = (np.ascontiguousarray(acc[0].T), np.ascontiguousarray(acc[1].T),
                                   np.ascontiguousarray(np.asarray(f).T))
                else:
                    M[(a_i, c)] = (tuple(np.ascontiguousarray(x.T) for x in acc),
                                   tuple(np.ascontiguousarray(x.T) for x in f))
    for k0, r0 in enumerate(b0["live"]):
        for a_i in range(len(b0["comp"])):
            if width > 2:
                # the same with each product of expansions to u^width of its size (trace_exp): tr(E0 M_E) with
                # all components, tr(F0 M_E) and tr(E0 M_F) (of the size of R) with two
                E0 = tuple(np.ascontiguousarray(blk(x, k0, a_i)) for x in b0["Ev"])
                F0 = tuple(np.ascontiguousarray(blk(x, k0, a_i)) for x in b0["Fv"])
                for c in b1["comp"]:
                    if (a_i, c) not in M:
                        continue
                    ME, MF = M[(a_i, c)]
                    tr = trace_exp(E0, ME, width) + trace_exp(F0, ME, 2) + trace_exp(E0, MF, 2)
                    tr += mpmath.mpf(float(np.vdot(F0[0], MF[0])))
                    T[r0][c] -= tr / N
                continue
            E0h, E0l, F0 = blk(b0["Eh"], k0, a_i), blk(b0["El"], k0, a_i), blk(b0["F"], k0, a_i)
            E0h, E0l, F0 = np.ascontiguousarray(E0h), np.ascontiguousarray(E0l), np.ascontiguousarray(F0)
            for c in b1["comp"]:
                if (a_i, c) not in M:
                    continue
                Mt, Mlt, MFt = M[(a_i, c)]
                # tr(D0 M) = tr(E0 M_E) + tr(F0 M_E) + tr(E0 M_F) + tr(F0 M_F)
                tr = _trace_dd(E0h, E0l, Mt, Mlt, wscale, thresh, relative=True)
                tr += mpmath.mpf(float(np.vdot(F0, Mt)) + float(np.vdot(E0h, MFt)) + float(np.vdot(F0, MFt)))
                T[r0][c] -= tr / N
    return T


def solve_dd(part, h_start, J, coef_mp, digits, variant, width=2, presolve=False):
    """``(h, G-reader, residual)``: Newton refinement of the fixed point of ``part`` (a pencil of
    :mod:`symrmt.engine.solve.given` at one point) from the float64 solution ``h_start`` with the float64
    Jacobian ``J``, each residual from a double-double evaluation of ``R = I - M X`` (``X`` the float64
    inverse; ``variant`` 1: another float64 inverse that rounds differently, the ``N^T`` one in the Woodbury
    form or one float64 Newton-Schulz step after a dense one) and ``G = X (I + R + R^2 + ...)``; ``coef_mp`` turns
    the pencil's coefficients into mpmath numbers.  ``width`` 3: ``B X``, ``I - M X`` and the coefficients as
    three float64 components (triple-double, for 29 to 32 digits; mpmath at 60 digits); ``presolve``: the
    steps before one below ``10^-PRESOLVE`` in double-double.  Raises ``ConvergenceError`` when ``R`` is too
    large for that series to reach the ``digits`` or the steps do not converge.

    Called by :func:`symrmt.engine.solve.given.given_limit` up to 28 digits (``width`` 2) and from 29 to 32
    (``width`` 3):

    >>> import numpy as np
    >>> from symrmt.engine import Model
    >>> from symrmt.engine.solve.given import given_limit
    >>> m = Model()
    >>> m.dim("p", "c*n")
    Dim('p', c)
    >>> Z = m.gaussian("Z", "p", "n")
    >>> S = m.matrix("S", "p", "p", np.diag([1.0, 2.0, 1.0, 2.0]))
    >>> print(given_limit(m, "trace(inv(S*Z*Z.T*S.T/n + gamma*I(p)))", {"c": "1/2", "gamma": 1}, digits=20))
    0.42225983872393900285
    """


    Jinv = np.linalg.inv(J) if len(part.unknowns) else np.zeros((0, 0))
    h = [mpmath.mpf(x) for x in h_start]
    det = [(i, j, kind, data, coef_mp(c)) for i, j, kind, data, c in part.det]
    eta = [(a, b, coef_mp(w), m, m2) for a, b, w, m, m2 in part.eta]
    bases = {False: part.base(False), True: part.base(True)}
    # the products with the given matrices to 2^-bits of their scales: 10^-(digits + 10), within MAX_BITS
    bits = min(MAX_BITS[width], int(math.ceil((digits + 10) * math.log2(10))))
    slices = {}
    given = [(i, j, np.ascontiguousarray(data, dtype=np.float64), c) for i, j, kind, data, c in det if kind != "I"]

    def dd(x):
        return split(x, width)

    def inverse(h, with_vectors):
        keep = part._keep(with_vectors)
        where, K = part.layout(with_vectors)
        Sm = mpmath.zeros(len(part.sca), len(part.sca))
        for i, j, kind, _data, c in det:
            if kind == "I" and i in part.sidx:
                Sm[part.sidx[i], part.sidx[j]] += c
        for a, b, w, m, m2 in eta:
            if a in part.sidx:
                Sm[part.sidx[a], part.sidx[b]] -= w * h[part.pos[(m, m2)]]
        Gs = Sm ** -1 if part.sca else None
        if not K:
            return None, Gs, where
        plan = part.woodbury_plan(keep) if not (with_vectors and part.unit) else None
        if plan is not None:
            read = _woodbury_dd(part, plan, h, det, eta, dig, variant, bits, slices, width)
            if read is not None:
                return read, Gs, where
        hf = np.array([float(x) for x in h])
        # variant 1: another approximate inverse, rounded differently (the other Woodbury form, or one
        # float64 Newton-Schulz step after a dense inverse)
        X = part.solve64(hf, 1.0, bases[with_vectors], with_vectors, side=variant, dense=True)[0]
        if variant and not part.structured:
            M64 = part.matrix64(hf, bases[with_vectors], with_vectors)
            X = X + X @ (np.eye(K) - M64 @ X)
        rows = {k: slice(where[k], where[k] + part.size[k]) for k in keep}
        # the multiples of I of each block pair, summed at the working precision before one rounding
        scal = {}
        for i, j, kind, _data, c in det:
            if kind == "I" and i in where and j in where:
                scal[(i, j)] = scal.get((i, j), 0) - c
        for a, b, w, m, m2 in eta:
            if a in where:
                scal[(a, b)] = scal.get((a, b), 0) + w * h[part.pos[(m, m2)]]
        if with_vectors:
            for u1, u2, v in part.schur(Gs, coef_mp):
                scal[(u1, u2)] = scal.get((u1, u2), 0) - v
        acc = {}
        for k in keep:
            eye = np.zeros((part.size[k], K))
            eye[np.arange(part.size[k]), where[k] + np.arange(part.size[k])] = 1.0
            acc[k] = (eye, np.zeros_like(eye))
        for (i, j), c in scal.items():
            if c != 0:
                acc[i] = dd_add(acc[i], dd_scale_64(dd(c), X[rows[j]]))
        for i, j, data, c in given:
            if i not in where or j not in where:
                continue
            t = dd_scale(dd(-c), _exact_dot(data, X[rows[j]], bits, slices, width))
            acc[i] = dd_add(acc[i], t)
        Rh = np.vstack([acc[k][0] for k in keep])
        Rl = np.vstack([acc[k][1] for k in keep])
        RR = series_tail(Rh, 1.0, dig, width, Rl)
        if width > 2 and RR is not None:   # the tail in double-double, folded into R
            (Rh, Rl), RR = renorm([Rh, Rl, *RR], 2), None
        R = (Rh, Rl)
        RT = (np.ascontiguousarray(Rh.T), np.ascontiguousarray(Rl.T))  # R_.l^T as rows, once
        return (X, R, RR, rows, RT), Gs, where

    def read_entry(G, k, l, unit):
        Gm, Gs, where = G
        if k in part.sidx:
            return Gs[part.sidx[k], part.sidx[l]]
        if callable(Gm):  # the Woodbury form: the traces only
            return Gm(k, l)
        X, R, RR, rows, RT = Gm
        rk, rl = rows[k], rows[l]
        n = 1 if unit else part.size[k]
        base = sum_acc(np.diagonal(X[rk, rl]), width)
        # tr(X_k. R_.l): float64 sums of at most _CHUNK products, those sums added error-free, where the
        # error bound gamma_CHUNK sum|x r| (Higham 2002, 3.1) is below 10^-(digits + 8) of the trace; else
        # every product split exactly (Dekker) and the terms summed by a two-sum tree
        A, B, Bl = X[rk], RT[0][rl], RT[1][rl]
        fast, bound = _chunked_dot(A, B, Bl)
        if bound <= 10.0 ** (-(dig + 8)) * max(abs(float(base)), 1e-300):
            d = fast
        else:
            d = _dot_dd(A, B, Bl, width)
        if RR is not None:
            d += mpmath.mpf(float(np.sum(X[rk] * RR[:, rl].T)))
        return (base + d) / n

    tol = mpmath.mpf(10) ** (-(digits + 6))
    G, resid = None, 0.0
    full, dig = width, digits
    if presolve and full > 2:   # the first steps in double-double (to PRESOLVE digits), far above its floor
        width, dig = 2, PRESOLVE
        bits = min(MAX_BITS[width], int(math.ceil((dig + 10) * math.log2(10))))
    for _ in range(12):
        if not part.unknowns:
            break
        try:
            G = inverse(h, False)
        except ConvergenceError:
            if width == full:
                raise
            width, dig = full, digits   # the double-double series does not reach: on with all components
            bits = min(MAX_BITS[width], int(math.ceil((dig + 10) * math.log2(10))))
            G = inverse(h, False)
        F = [h[i] - read_entry(G, m, m2, False) for i, (m, m2) in enumerate(part.unknowns)]
        # the step in float64: Jinv is a float64 inverse Jacobian, so each step is exact only to its relative
        # error (about 1e-13) anyway; the next residual, in double-double, corrects both
        step = [mpmath.mpf(x) for x in Jinv @ np.array([float(f) for f in F])]
        h = [x - st for x, st in zip(h, step)]
        for i in part.zero:
            h[i] = mpmath.mpf(0)
        resid = max(abs(float(f)) for f in F)
        scale = max(1, max(abs(x) for x in h))
        if width < full and max(abs(st) for st in step) <= scale * mpmath.mpf(10) ** -PRESOLVE:
            width, dig = full, digits
            bits = min(MAX_BITS[width], int(math.ceil((dig + 10) * math.log2(10))))
            continue
        if max(abs(st) for st in step) <= scale * max(tol, mpmath.mpf(10) ** -FLOOR[width]):
            break
    else:
        raise ConvergenceError(f"the {PATH[width]} refinement of the deterministic equivalent did not converge "
                               f"(residual {resid:.3g})")
    if width < full:   # no unknowns: the reading itself with all components
        width, dig, G = full, digits, None
        bits = min(MAX_BITS[width], int(math.ceil((dig + 10) * math.log2(10))))
    if G is None or part.unit:
        G = inverse(h, True)
    return h, (lambda k, l, unit=False: read_entry(G, k, l, unit)), resid
