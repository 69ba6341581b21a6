"""Validated parameters shared by the theory and the simulation.

This module imports neither SymPy nor NumPy: parameters are stored as exact
rationals (:class:`fractions.Fraction`), so that the symbolic layer can turn
them into ``sympy.Rational``, the numeric layer into ``mpmath.mpf`` at any
precision, and the simulation into ``float``, each at its own boundary.

The geometry of the model is the Gram matrix of ``(mu, w_K, w_Q)``::

    [[ snr,  muwk, muwq],
     [ muwk, wk2,  wkwq],
     [ muwq, wkwq, wq2 ]]

with ``snr = ||mu||^2``.  All entries default to 0, i.e. ``mu = 0`` and
``W = I + w_K w_Q^T = I``.

:class:`LowRankGeometry` generalizes it to ``W = alpha I + sum_j w_K^j (w_Q^j)^T``
(rank ``r``), given by the ``(2r+1) x (2r+1)`` Gram matrix of
``(mu, w_K^1, ..., w_K^r, w_Q^1, ..., w_Q^r)`` and ``alpha > 0``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from fractions import Fraction
from numbers import Rational, Real

DIAGONALS = ("zero", "keep")
NOISES = ("gaussian", "rademacher")


class ParameterError(ValueError):
    """A parameter is outside the domain of the model; the message names it."""


def to_fraction(value, name: str) -> Fraction:
    """Convert an int, float, Fraction or decimal/fraction string to an exact Fraction.

    Floats are converted through their shortest ``repr`` (``0.1`` becomes 1/10),
    so that a value typed by a user is taken as the decimal they typed.
    """
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a number, got a bool")
    try:
        if isinstance(value, Fraction):
            return value
        if isinstance(value, Rational):
            return Fraction(int(value.numerator), int(value.denominator))
        if hasattr(value, "_mpf_"):  # an mpmath mpf: its exact binary value
            man, exp = value.man_exp
            if man is None:
                raise ParameterError(f"{name} must be finite, got {value!r}")
            return Fraction(int(man)) * Fraction(2) ** int(exp)
        if isinstance(value, Real):
            fv = float(value)
            if fv != fv or fv in (float("inf"), float("-inf")):
                raise ParameterError(f"{name} must be finite, got {value!r}")
            return Fraction(repr(fv))
        if isinstance(value, str):
            return Fraction(value.strip())
        # mpmath mpf, sympy numbers and the like: go through their string form
        return Fraction(str(value))
    except (ValueError, ZeroDivisionError, TypeError) as exc:
        raise ParameterError(
            f"{name}: cannot read {value!r} as a number (use a decimal such as 0.25 or a fraction such as 1/4)"
        ) from exc


def check_c(c) -> Fraction:
    """Validate the aspect ratio ``c = p/n > 0``."""
    cf = to_fraction(c, "c")
    if cf <= 0:
        raise ParameterError(f"c = p/n must be positive, got {c!r}")
    return cf


def check_gammas(gammas) -> tuple[Fraction, ...]:
    """Validate a non-empty list of ridge parameters, each ``gamma > 0``."""
    if isinstance(gammas, (str, int, float, Fraction)):
        gammas = [gammas]
    out = tuple(to_fraction(g, "gamma") for g in gammas)
    if not out:
        raise ParameterError("gamma: give at least one value")
    for g in out:
        if g <= 0:
            raise ParameterError(f"gamma must be positive (the probe needs gamma > 0), got {float(g)!r}")
    return out


def check_diagonal(diagonal: str) -> str:
    if diagonal not in DIAGONALS:
        raise ParameterError(f"diagonal must be one of {DIAGONALS}, got {diagonal!r}")
    return diagonal


def check_noise(noise: str) -> str:
    if noise not in NOISES:
        raise ParameterError(f"noise must be one of {NOISES}, got {noise!r}")
    return noise


def ldl_pivoted(gram):
    """Exact ``P^T A P = L D L^T`` of a symmetric rational matrix, pivoting on the largest diagonal.

    Returns ``(perm, L, D)`` with ``L`` unit lower triangular (lists of Fractions,
    rows in pivot order), ``D`` the pivots and ``perm[k]`` the original index of
    pivot ``k``.  Raises :class:`ParameterError` when ``A`` is not positive
    semi-definite (a negative pivot, or a zero pivot with a non-zero column).

    >>> perm, L, D = ldl_pivoted([[1, 2], [2, 4]])
    >>> [str(x) for x in D]
    ['4', '0']
    >>> ldl_pivoted([[1, 2], [2, 1]])
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: the Gram matrix is not positive semi-definite (pivot 2 is -3)
    """
    A = [[Fraction(x) for x in row] for row in gram]
    n = len(A)
    perm = list(range(n))
    L = [[Fraction(0)] * n for _ in range(n)]
    D = [Fraction(0)] * n
    W = [row[:] for row in A]
    for k in range(n):
        piv = max(range(k, n), key=lambda i: W[perm[i]][perm[i]])
        perm[k], perm[piv] = perm[piv], perm[k]
        L[k][:k], L[piv][:k] = L[piv][:k], L[k][:k]
        L[k][k] = Fraction(1)
        pk = perm[k]
        D[k] = W[pk][pk]
        if D[k] < 0:
            raise ParameterError(f"the Gram matrix is not positive semi-definite (pivot {k + 1} is {D[k]})")
        if D[k] == 0:
            # the largest remaining diagonal is 0: PSD forces the whole remaining block to vanish
            if any(W[perm[i]][perm[j]] != 0 for i in range(k, n) for j in range(k, n)):
                raise ParameterError("the Gram matrix is not positive semi-definite (a zero norm with a non-zero "
                                     "inner product)")
            for i in range(k + 1, n):
                L[i][i] = Fraction(1)
            break
        for i in range(k + 1, n):
            L[i][k] = W[perm[i]][pk] / D[k]
        for i in range(k + 1, n):
            for j in range(k + 1, n):
                W[perm[i]][perm[j]] -= L[i][k] * D[k] * L[j][k]
    return perm, L, D


def is_psd(m) -> bool:
    """Exact PSD test of a symmetric rational matrix (through :func:`ldl_pivoted`)."""
    try:
        ldl_pivoted(m)
    except ParameterError:
        return False
    return True


def exact_rank(m) -> int:
    """Exact rank of a positive semi-definite rational matrix: its non-zero LDL^T pivots."""
    _, _, D = ldl_pivoted(m)
    return sum(1 for x in D if x != 0)


@dataclass(frozen=True)
class Geometry:
    """Gram data of ``(mu, w_K, w_Q)``: ``snr = ||mu||^2``, ``wk2 = ||w_K||^2``,
    ``wq2 = ||w_Q||^2``, ``wkwq = w_K . w_Q``, ``muwk = mu . w_K``, ``muwq = mu . w_Q``.

    Values are stored as exact Fractions.  Construction fails with a
    :class:`ParameterError` naming the problem when the entries do not form a
    positive semi-definite Gram matrix.

    >>> Geometry(snr=1, wk2=1, wq2=1, wkwq=1, muwk=1, muwq=1).rank()
    1
    >>> Geometry(snr=1, muwk=2, wk2=1)
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: the geometry is not a Gram matrix (not positive semi-definite): ...
    """

    snr: Fraction = Fraction(0)
    wk2: Fraction = Fraction(0)
    wq2: Fraction = Fraction(0)
    wkwq: Fraction = Fraction(0)
    muwk: Fraction = Fraction(0)
    muwq: Fraction = Fraction(0)

    def __post_init__(self):
        for f in fields(self):
            object.__setattr__(self, f.name, to_fraction(getattr(self, f.name), f.name))
        for name in ("snr", "wk2", "wq2"):
            if getattr(self, name) < 0:
                raise ParameterError(f"{name} is a squared norm and must be >= 0, got {float(getattr(self, name))!r}")
        if not is_psd(self.gram()):
            g = [[float(x) for x in row] for row in self.gram()]
            raise ParameterError(
                "the geometry is not a Gram matrix (not positive semi-definite): "
                f"[[snr, muwk, muwq], [muwk, wk2, wkwq], [muwq, wkwq, wq2]] = {g}; "
                "check that |mu.w_K| <= ||mu|| ||w_K|| and the other Cauchy-Schwarz bounds hold"
            )

    def gram(self):
        """The 3x3 Gram matrix of (mu, w_K, w_Q) as nested lists of Fractions."""
        return [
            [self.snr, self.muwk, self.muwq],
            [self.muwk, self.wk2, self.wkwq],
            [self.muwq, self.wkwq, self.wq2],
        ]

    def rank(self) -> int:
        """Exact rank of the Gram matrix (the dimension of span(mu, w_K, w_Q))."""
        return exact_rank(self.gram())

    @property
    def has_weights(self) -> bool:
        """False exactly when ``w_K w_Q^T = 0`` (``w_K = 0`` or ``w_Q = 0``), i.e. ``W = I``."""
        return self.wk2 != 0 and self.wq2 != 0

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, init=False)
class LowRankGeometry:
    r"""Weights ``W = alpha I + sum_{j=1}^r w_K^j (w_Q^j)^T`` and signal ``mu``, by their Gram matrix.

    ``gram`` is the ``(2r+1) x (2r+1)`` Gram matrix of
    ``(mu, w_K^1, ..., w_K^r, w_Q^1, ..., w_Q^r)`` (in that order); the limit depends
    on the vectors only through it.  ``alpha > 0`` scales the identity part.
    Entries are stored as exact Fractions; the PSD test is an exact pivoted LDL^T.

    ``r = 1`` with ``alpha = 1`` is the rank-one :class:`Geometry`
    (``LowRankGeometry.from_geometry``); ``r = 0`` (a 1x1 Gram, just ``||mu||^2``)
    is ``W = alpha I``.

    >>> g = LowRankGeometry([[1, 0, 0, 0, 0], [0, 1, 0, 1, 0], [0, 0, 1, 0, 1],
    ...                      [0, 1, 0, 1, 0], [0, 0, 1, 0, 1]])
    >>> g.r, g.snr, g.rank(), g.trace_wkwq
    (2, Fraction(1, 1), 3, Fraction(2, 1))
    >>> LowRankGeometry([[1, 2, 0], [2, 1, 0], [0, 0, 1]])
    Traceback (most recent call last):
    ...
    symrmt.params.ParameterError: geometry: the Gram matrix is not positive semi-definite (pivot 2 is -3)
    """

    gram_entries: tuple
    alpha: Fraction

    def __init__(self, gram, alpha=1):
        try:
            rows = [list(row) for row in gram]
        except TypeError as exc:
            raise ParameterError(f"geometry: the Gram matrix must be a square nested list, got {gram!r}") from exc
        n = len(rows)
        if n == 0 or n % 2 == 0 or any(len(row) != n for row in rows):
            raise ParameterError(
                f"geometry: the Gram matrix of (mu, w_K^1..w_K^r, w_Q^1..w_Q^r) must be (2r+1)x(2r+1), "
                f"got {n} rows of lengths {[len(row) for row in rows]}"
            )
        g = tuple(tuple(to_fraction(x, f"gram[{i}][{j}]") for j, x in enumerate(row)) for i, row in enumerate(rows))
        for i in range(n):
            for j in range(i):
                if g[i][j] != g[j][i]:
                    raise ParameterError(f"geometry: the Gram matrix is not symmetric: entry ({i},{j}) is "
                                         f"{g[i][j]} but ({j},{i}) is {g[j][i]}")
        try:
            ldl_pivoted(g)
        except ParameterError as exc:
            raise ParameterError(f"geometry: {exc}") from None
        a = to_fraction(alpha, "alpha")
        if a <= 0:
            raise ParameterError(f"alpha must be positive (W = alpha I + low rank), got {alpha!r}")
        object.__setattr__(self, "gram_entries", g)
        object.__setattr__(self, "alpha", a)

    # -- constructors ---------------------------------------------------------
    @classmethod
    def from_geometry(cls, geometry: Geometry, alpha=1) -> LowRankGeometry:
        """The rank-one :class:`Geometry` as a ``LowRankGeometry`` with ``r = 1``."""
        return cls(geometry.gram(), alpha)

    @classmethod
    def from_vectors(cls, mu, wk, wq, alpha=1) -> LowRankGeometry:
        """From the vectors themselves: ``mu`` of length p, ``wk`` and ``wq`` of shape (p, r).

        Accepts nested sequences or NumPy arrays of floats; the Gram matrix is
        formed in exact rational arithmetic from the binary values of the floats.
        """
        mu_row = [to_fraction(x, "mu") for x in mu]
        p = len(mu_row)

        def columns(w, name):
            rows = [list(row) for row in w]
            if len(rows) != p:
                raise ParameterError(f"{name} must have shape (p, r) with p = len(mu) = {p}, got {len(rows)} rows")
            r = len(rows[0]) if rows else 0
            if any(len(row) != r for row in rows):
                raise ParameterError(f"{name} rows have unequal lengths")
            return [[to_fraction(rows[i][j], name) for i in range(p)] for j in range(r)]

        ks, qs = columns(wk, "wk"), columns(wq, "wq")
        if len(ks) != len(qs):
            raise ParameterError(f"wk and wq must have the same number of columns r, got {len(ks)} and {len(qs)}")
        vecs = [mu_row] + ks + qs
        gram = [[sum((x * y for x, y in zip(u, v)), Fraction(0)) for v in vecs] for u in vecs]
        return cls(gram, alpha)

    # -- views ----------------------------------------------------------------
    @property
    def r(self) -> int:
        """The number of rank-one terms ``w_K^j (w_Q^j)^T``."""
        return (len(self.gram_entries) - 1) // 2

    @property
    def snr(self) -> Fraction:
        """``||mu||^2``."""
        return self.gram_entries[0][0]

    @property
    def trace_wkwq(self) -> Fraction:
        """``sum_j w_K^j . w_Q^j`` (the trace of the low-rank part)."""
        r = self.r
        return sum((self.gram_entries[1 + j][1 + r + j] for j in range(r)), Fraction(0))

    def gram(self):
        """The Gram matrix as nested lists of Fractions."""
        return [list(row) for row in self.gram_entries]

    def rank(self) -> int:
        """Exact rank of the Gram matrix (the dimension of the span of the vectors)."""
        return exact_rank(self.gram_entries)

    @property
    def has_weights(self) -> bool:
        """False exactly when the low-rank part ``sum_j w_K^j (w_Q^j)^T`` is zero."""
        r = self.r
        G = self.gram_entries
        # ||sum_j k_j q_j^T||_F^2 = sum_{jl} (k_j . k_l)(q_j . q_l)
        fro2 = sum(G[1 + j][1 + l] * G[1 + r + j][1 + r + l] for j in range(r) for l in range(r))
        return fro2 != 0

    def scaled(self) -> LowRankGeometry:
        """``W / alpha = I + sum_j (w_K^j / alpha) (w_Q^j)^T``: the same Gram with ``w_K`` rows divided by alpha."""
        a = self.alpha
        r = self.r
        scale = [Fraction(1)] + [1 / a] * r + [Fraction(1)] * r
        g = [[self.gram_entries[i][j] * scale[i] * scale[j] for j in range(2 * r + 1)] for i in range(2 * r + 1)]
        return LowRankGeometry(g, 1)

    def as_dict(self) -> dict:
        return {"r": self.r, "alpha": self.alpha, "gram": self.gram()}

    def to_json(self, path=None) -> str:
        """The geometry as the JSON that ``--geometry FILE`` reads: ``{"gram": [[...]], "alpha": A}``.

        Entries are exact fraction strings, so the file round-trips without rounding.
        With ``path`` the text is also written there.

        >>> g = LowRankGeometry([[1, 0, 0], [0, "1/2", 1], [0, 1, 2]], alpha=2)
        >>> print(g.to_json())
        {"gram": [["1", "0", "0"], ["0", "1/2", "1"], ["0", "1", "2"]], "alpha": "2"}
        """
        import json

        text = json.dumps({"gram": [[str(x) for x in row] for row in self.gram_entries], "alpha": str(self.alpha)})
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        return text


def as_low_rank(geometry) -> LowRankGeometry:
    """``None`` (``mu = 0``, ``W = I``), a :class:`Geometry` or a :class:`LowRankGeometry`, as the latter."""
    if geometry is None:
        return LowRankGeometry([[0]])
    if isinstance(geometry, LowRankGeometry):
        return geometry
    if isinstance(geometry, Geometry):
        return LowRankGeometry.from_geometry(geometry)
    raise ParameterError(
        f"geometry must be a symrmt.params.Geometry or LowRankGeometry, got {type(geometry).__name__}"
    )
