"""The geometry of the model: the Gram matrix of ``(mu, w_K, w_Q)`` and its rank-``r`` generalization.

:class:`Geometry` holds the rank-one Gram matrix (``snr = ||mu||^2``, ``muwk``, ``muwq``, ``wk2``, ``wkwq``,
``wq2``; all 0 by default: ``mu = 0``, ``W = I``); :class:`LowRankGeometry` is ``W = alpha I + sum_j
w_K^j (w_Q^j)^T``, given by the Gram matrix of ``(mu, w_K^1.., w_Q^1..)`` and ``alpha > 0``.  Entries are exact
rationals, checked positive semi-definite by an exact pivoted ``LDL^T`` (:func:`ldl_pivoted`).
:func:`as_geometry` reads every form a geometry is given in (a class, a dict with entries, angles or
``"gram"``, ``None``, keywords).  It imports neither SymPy nor NumPy.

Examples
--------
>>> Geometry(snr="1/2", muwk=0).gram()[0]
[Fraction(1, 2), Fraction(0, 1), Fraction(0, 1)]
>>> is_psd([[1, 2], [2, 1]])
False
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from fractions import Fraction
from math import isqrt

from symrmt.errors import ParameterError
from symrmt.models.attention.params import to_fraction
from symrmt.parsing import IRRATIONAL_DIGITS, check_count
from symrmt.parsing.psd import PSD_ROUNDING, exact_rank, is_psd, ldl_pivoted, project_psd  # noqa: F401 (re-exported)

__all__ = [
    "ldl_pivoted",
    "PSD_ROUNDING",
    "project_psd",
    "is_psd",
    "exact_rank",
    "Geometry",
    "LowRankGeometry",
    "as_low_rank",
    "as_geometry",
    "GEOMETRY_KEYS",
    "GRAM_KEYS",
    "ANGLE_KEYS",
    "ANGLE_PAIRS",
    "point_geometry",
]

#: the entries of a rank-one geometry a dict (or keyword) may give: the Gram entries and the cosines
GEOMETRY_KEYS = ("snr", "wk2", "wq2", "wkwq", "muwk", "muwq", "cos_muwk", "cos_muwq", "cos_wkwq")


_GEOMETRY_INDEX = {"snr": (0, 0), "wk2": (1, 1), "wq2": (2, 2), "wkwq": (1, 2), "muwk": (0, 1), "muwq": (0, 2)}


def _sqrt_fraction(x: Fraction) -> Fraction:
    """``sqrt(x)`` exactly when ``x`` is the square of a rational, else rounded to
    :data:`symrmt.parsing.IRRATIONAL_DIGITS` significant digits."""
    p, q = x.numerator, x.denominator
    rp, rq = isqrt(p), isqrt(q)
    if rp * rp == p and rq * rq == q:
        return Fraction(rp, rq)
    scale = 10 ** (IRRATIONAL_DIGITS + max(0, len(str(q)) - len(str(p))))
    return Fraction(isqrt(p * q * scale * scale), q * scale)


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
    symrmt.errors.ParameterError: the geometry is not a Gram matrix (not positive semi-definite): ...

    A Gram matrix outside the PSD cone by rounding only (at most ``PSD_ROUNDING`` = 1e-12
    of its largest diagonal entry) is made exactly PSD by :func:`project_psd`;
    ``projection`` then holds the relative size of the change (else ``None``):

    >>> g = Geometry(snr=2, wk2=1, wq2=1, wkwq=1, muwk=1.4142135623730951, muwq=1.4142135623730951)
    >>> g.rank(), g.projection < 1e-15
    (1, True)
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
        try:
            gram, violation = project_psd(self.gram())
        except ParameterError as exc:
            g = [[float(x) for x in row] for row in self.gram()]
            raise ParameterError(
                "the geometry is not a Gram matrix (not positive semi-definite): "
                f"[[snr, muwk, muwq], [muwk, wk2, wkwq], [muwq, wkwq, wq2]] = {g}; "
                "check that |mu.w_K| <= ||mu|| ||w_K|| and the other Cauchy-Schwarz bounds hold "
                f"({str(exc).split(': ', 1)[1]})"
            ) from None
        #: None, or the relative size of the rounding-level PSD violation that was projected away
        object.__setattr__(self, "projection", violation)
        if violation is not None:
            for name, (i, j) in _GEOMETRY_INDEX.items():
                object.__setattr__(self, name, gram[i][j])

    @classmethod
    def from_angles(cls, snr, wk2, wq2, cos_muwk=None, cos_muwq=None, cos_wkwq=None, *,
                    muwk=0, muwq=0, wkwq=0) -> Geometry:
        """From the squared norms and the cosines of the angles between ``mu``, ``w_K``, ``w_Q``.

        ``muwk = cos_muwk * sqrt(snr * wk2)`` and so on; each cosine must lie in ``[-1, 1]``.
        Square roots are exact when the product is the square of a rational and otherwise
        rounded far below any working precision (then a rounding-level PSD violation is
        projected away, see :attr:`projection`).  Any argument may be numeric text (``"sqrt(2)/2"``).
        A cosine left at ``None`` takes its inner product from the keyword ``muwk``, ``muwq`` or
        ``wkwq`` instead (default 0); giving both a cosine and a non-zero inner product is an error.

        >>> g = Geometry.from_angles(snr=2, wk2=1, wq2=1, cos_muwk=1, cos_muwq=1, cos_wkwq=1)
        >>> g.rank(), round(float(g.muwk), 15)
        (1, 1.414213562373095)
        >>> Geometry.from_angles(1, 1, 1, cos_muwk=1.5)
        Traceback (most recent call last):
        ...
        symrmt.errors.ParameterError: cos_muwk must lie in [-1, 1], got 1.5
        """
        s, k, q = (to_fraction(v, n) for v, n in ((snr, "snr"), (wk2, "wk2"), (wq2, "wq2")))
        for name, val in (("snr", s), ("wk2", k), ("wq2", q)):
            if val < 0:
                raise ParameterError(f"{name} is a squared norm and must be >= 0, got {float(val)!r}")

        ips = []
        for name, v, ip, norms in (("cos_muwk", cos_muwk, muwk, s * k), ("cos_muwq", cos_muwq, muwq, s * q),
                                   ("cos_wkwq", cos_wkwq, wkwq, k * q)):
            if v is None:
                ips.append(to_fraction(ip, name[4:]))
                continue
            if to_fraction(ip, name[4:]) != 0:
                raise ParameterError(f"{name} and {name[4:]} are exclusive (a cosine sets the inner product)")
            cos = to_fraction(v, name)
            if abs(cos) > 1:
                raise ParameterError(f"{name} must lie in [-1, 1], got {float(cos)!r}")
            ips.append(cos * _sqrt_fraction(norms))
        mk, mq, kq = ips
        # the rounded square roots move the Gram matrix by ~10^-IRRATIONAL_DIGITS: drop the
        # trailing pivots of that size, so that e.g. cosines of +-1 give the exact rank
        gram, _ = project_psd([[s, mk, mq], [mk, k, kq], [mq, kq, q]],
                              rel_tol=Fraction(1, 10 ** (IRRATIONAL_DIGITS - 50)), always=True)
        return cls(**{name: gram[i][j] for name, (i, j) in _GEOMETRY_INDEX.items()})

    @classmethod
    def from_vectors(cls, mu, wk, wq) -> Geometry:
        """From the vectors ``mu``, ``w_K``, ``w_Q`` (equal lengths p): their exact Gram matrix.

        Entries may be ints, floats (their binary value), Fractions or numeric text.

        >>> Geometry.from_vectors([1, 1], [1, 0], [0, 1]).as_dict()["muwk"]
        Fraction(1, 1)
        """
        vecs = []
        for name, v in (("mu", mu), ("wk", wk), ("wq", wq)):
            vecs.append([to_fraction(x, name) for x in v])
        if len({len(v) for v in vecs}) != 1:
            raise ParameterError(f"mu, wk and wq must have the same length, got {[len(v) for v in vecs]}")

        def dot(u, v):
            return sum((x * y for x, y in zip(u, v)), Fraction(0))

        m, k, q = vecs
        return cls(snr=dot(m, m), wk2=dot(k, k), wq2=dot(q, q), wkwq=dot(k, q), muwk=dot(m, k), muwq=dot(m, q))

    def gram(self):
        """The 3x3 Gram matrix of (mu, w_K, w_Q) as nested lists of Fractions.

        >>> Geometry(snr=1, wk2=4, muwk=2).gram()
        [[Fraction(1, 1), Fraction(2, 1), Fraction(0, 1)], [Fraction(2, 1), Fraction(4, 1), Fraction(0, 1)], [Fraction(0, 1), Fraction(0, 1), Fraction(0, 1)]]
        """
        return [
            [self.snr, self.muwk, self.muwq],
            [self.muwk, self.wk2, self.wkwq],
            [self.muwq, self.wkwq, self.wq2],
        ]

    def __repr__(self) -> str:
        """Short values as typed; an irrational inner product (a ~2000-digit fraction inside) as ``≈`` its
        first 20 digits (the exact Fractions stay in the fields)."""
        # import-time cost: `import symrmt`, the CLI's start and the Monte-Carlo trials load no mpmath
        from symrmt.table import is_long, param_text

        parts = (f"{f.name}{'≈' if is_long(getattr(self, f.name)) else '='}{param_text(getattr(self, f.name), 20)}"
                 for f in fields(self))
        return f"Geometry({', '.join(parts)})"

    def rank(self) -> int:
        """Exact rank of the Gram matrix (the dimension of span(mu, w_K, w_Q)).

        >>> Geometry().rank(), Geometry(snr=1, wk2=4, muwk=2).rank(), Geometry(snr=1, wk2=4, muwk=1).rank()
        (0, 1, 2)
        """
        return exact_rank(self.gram())

    @property
    def has_weights(self) -> bool:
        """False exactly when ``w_K w_Q^T = 0`` (``w_K = 0`` or ``w_Q = 0``), i.e. ``W = I``.

        >>> Geometry(wk2=1).has_weights, Geometry(wk2=1, wq2=1).has_weights
        (False, True)
        """
        return self.wk2 != 0 and self.wq2 != 0

    def as_dict(self) -> dict:
        """The six Gram entries by name, as exact Fractions.

        >>> Geometry(snr=2, wk2=1).as_dict()["snr"], len(Geometry().as_dict())
        (Fraction(2, 1), 6)
        """
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
    symrmt.errors.ParameterError: geometry: the Gram matrix is not positive semi-definite: its violation is 3 relative to its scale 1 (rounding allows 1e-12)
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

        check_count((n - 1) // 2, "rank", "geometry: the rank r of the low-rank weights")
        g = tuple(tuple(to_fraction(x, f"gram[{i}][{j}]") for j, x in enumerate(row)) for i, row in enumerate(rows))
        for i in range(n):
            for j in range(i):
                if g[i][j] != g[j][i]:
                    raise ParameterError(f"geometry: the Gram matrix is not symmetric: entry ({i},{j}) is "
                                         f"{g[i][j]} but ({j},{i}) is {g[j][i]}")
        try:
            gp, violation = project_psd(g)
        except ParameterError as exc:
            raise ParameterError(f"geometry: {exc}") from None
        if violation is not None:
            g = tuple(tuple(row) for row in gp)
        object.__setattr__(self, "projection", violation)
        a = to_fraction(alpha, "alpha")
        if a <= 0:
            raise ParameterError(f"alpha must be positive (W = alpha I + low rank), got {alpha!r}")
        object.__setattr__(self, "gram_entries", g)
        object.__setattr__(self, "alpha", a)

    # -- constructors ---------------------------------------------------------
    @classmethod
    def from_geometry(cls, geometry: Geometry, alpha=1) -> LowRankGeometry:
        """The rank-one :class:`Geometry` as a ``LowRankGeometry`` with ``r = 1``.

        >>> g = LowRankGeometry.from_geometry(Geometry(snr=1, wk2=2, wq2=3, wkwq=1), alpha=2)
        >>> g.r, g.alpha, g.trace_wkwq, g.gram()[1]
        (1, Fraction(2, 1), Fraction(1, 1), [Fraction(0, 1), Fraction(2, 1), Fraction(1, 1)])
        """
        return cls(geometry.gram(), alpha)

    @classmethod
    def from_vectors(cls, mu, wk, wq, alpha=1) -> LowRankGeometry:
        """From the vectors themselves: ``mu`` of length p, ``wk`` and ``wq`` of shape (p, r).

        Accepts nested sequences or NumPy arrays of floats; the Gram matrix is
        formed in exact rational arithmetic from the binary values of the floats.

        Raises :class:`~symrmt.errors.ParameterError` for shapes that do not match.

        >>> g = LowRankGeometry.from_vectors([1, 0], [[1, 0], [0, 1]], [[0.5, 0], [0, 0.5]])
        >>> g.r, g.trace_wkwq, g.snr
        (2, Fraction(1, 1), Fraction(1, 1))
        >>> LowRankGeometry.from_vectors([1, 0], [[1], [0]], [[1, 0], [0, 1]])
        Traceback (most recent call last):
        ...
        symrmt.errors.ParameterError: wk and wq must have the same number of columns r, got 1 and 2
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
        """The number of rank-one terms ``w_K^j (w_Q^j)^T``.

        >>> LowRankGeometry([[2]]).r, LowRankGeometry([[1, 0, 0], [0, 1, 0], [0, 0, 1]]).r
        (0, 1)
        """
        return (len(self.gram_entries) - 1) // 2

    @property
    def snr(self) -> Fraction:
        """``||mu||^2``.

        >>> LowRankGeometry([[2]]).snr
        Fraction(2, 1)
        """
        return self.gram_entries[0][0]

    @property
    def trace_wkwq(self) -> Fraction:
        """``sum_j w_K^j . w_Q^j`` (the trace of the low-rank part).

        >>> LowRankGeometry([[1, 0, 0], [0, 4, 3], [0, 3, 9]]).trace_wkwq
        Fraction(3, 1)
        """
        r = self.r
        return sum((self.gram_entries[1 + j][1 + r + j] for j in range(r)), Fraction(0))

    def gram(self):
        """The Gram matrix as nested lists of Fractions.

        >>> LowRankGeometry([["1/2"]]).gram()
        [[Fraction(1, 2)]]
        """
        return [list(row) for row in self.gram_entries]

    def rank(self) -> int:
        """Exact rank of the Gram matrix (the dimension of the span of the vectors).

        >>> LowRankGeometry([[1, 1, 1], [1, 1, 1], [1, 1, 1]]).rank()
        1
        """
        return exact_rank(self.gram_entries)

    @property
    def has_weights(self) -> bool:
        """False exactly when the low-rank part ``sum_j w_K^j (w_Q^j)^T`` is zero.

        >>> LowRankGeometry([[1, 0, 0], [0, 1, 0], [0, 0, 0]]).has_weights, LowRankGeometry([[1, 0, 0], [0, 1, 0], [0, 0, 1]]).has_weights
        (False, True)
        """
        r = self.r
        G = self.gram_entries
        # ||sum_j k_j q_j^T||_F^2 = sum_{jl} (k_j . k_l)(q_j . q_l)
        fro2 = sum(G[1 + j][1 + l] * G[1 + r + j][1 + r + l] for j in range(r) for l in range(r))
        return fro2 != 0

    def scaled(self) -> LowRankGeometry:
        """``W / alpha = I + sum_j (w_K^j / alpha) (w_Q^j)^T``: the same Gram with ``w_K`` rows divided by alpha.

        >>> s = LowRankGeometry([[1, 0, 0], [0, 4, 2], [0, 2, 1]], alpha=2).scaled()
        >>> s.alpha, s.gram()[1], s.trace_wkwq
        (Fraction(1, 1), [Fraction(0, 1), Fraction(1, 1), Fraction(1, 1)], Fraction(1, 1))
        """
        a = self.alpha
        r = self.r
        scale = [Fraction(1)] + [1 / a] * r + [Fraction(1)] * r
        g = [[self.gram_entries[i][j] * scale[i] * scale[j] for j in range(2 * r + 1)] for i in range(2 * r + 1)]
        return LowRankGeometry(g, 1)

    def as_dict(self) -> dict:
        """``{"r": rank, "alpha": alpha, "gram": the (2r+1) x (2r+1) Gram matrix}`` (exact entries).

        >>> d = LowRankGeometry([[1, 0, 0], [0, 1, 0], [0, 0, 1]], alpha=2).as_dict()
        >>> d["r"], d["alpha"], len(d["gram"])
        (1, Fraction(2, 1), 3)
        """
        return {"r": self.r, "alpha": self.alpha, "gram": self.gram()}

    def to_json(self, path=None) -> str:
        """The geometry as the JSON that ``--geometry FILE`` reads: ``{"gram": [[...]], "alpha": A}``.

        Entries are exact fraction strings, so the file round-trips without rounding.
        With ``path`` the text is also written there.

        >>> g = LowRankGeometry([[1, 0, 0], [0, "1/2", 1], [0, 1, 2]], alpha=2)
        >>> print(g.to_json())
        {"gram": [["1", "0", "0"], ["0", "1/2", "1"], ["0", "1", "2"]], "alpha": "2"}
        """
        text = json.dumps({"gram": [[str(x) for x in row] for row in self.gram_entries], "alpha": str(self.alpha)})
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        return text


def as_low_rank(geometry) -> LowRankGeometry:
    """``None`` (``mu = 0``, ``W = I``), a :class:`Geometry` or a :class:`LowRankGeometry`, as the latter.

    Raises :class:`~symrmt.errors.ParameterError` for anything else (a dict goes through
    :func:`as_geometry` first).

    >>> as_low_rank(None).r, as_low_rank(None).gram_entries
    (0, ((Fraction(0, 1),),))
    >>> as_low_rank(Geometry(snr=1, wk2=1, muwk=1)).gram()[0]
    [Fraction(1, 1), Fraction(1, 1), Fraction(0, 1)]
    >>> as_low_rank({"snr": 1})
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: geometry must be a symrmt.Geometry or LowRankGeometry, got dict
    """
    if geometry is None:
        return LowRankGeometry([[0]])
    if isinstance(geometry, LowRankGeometry):
        return geometry
    if isinstance(geometry, Geometry):
        return LowRankGeometry.from_geometry(geometry)
    raise ParameterError(
        f"geometry must be a symrmt.Geometry or LowRankGeometry, got {type(geometry).__name__}"
    )


def as_geometry(geometry=None, **values):
    """The one reading of a ``geometry`` argument (with optional entries as keywords).

    ``geometry`` is ``None`` (``mu = 0``, ``W = I``), a :class:`Geometry`, a :class:`LowRankGeometry`,
    or a plain dict: ``{"gram": [[...]], "alpha": A}`` for a :class:`LowRankGeometry`, else entries of
    :data:`GEOMETRY_KEYS` (Gram entries and cosines, the cosines through :meth:`Geometry.from_angles`).
    ``values`` (``snr=1``, ``cos_muwk=0.5``, ...) set entries of a rank-one geometry on top of it.

    >>> as_geometry({"snr": 1, "wk2": 2}).as_dict()["wk2"]
    Fraction(2, 1)
    >>> as_geometry(None, snr="1/2").snr
    Fraction(1, 2)
    >>> as_geometry({"gram": [[1]]}).r
    0
    >>> as_geometry(Geometry(snr=1), snr=2)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: snr is given twice: in the geometry and as a keyword; give it once
    """
    unknown = [k for k in values if k not in GEOMETRY_KEYS]
    if unknown:
        raise ParameterError(f"unknown geometry entr{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
                             f"use {', '.join(GEOMETRY_KEYS)}")
    if isinstance(geometry, dict):
        if "gram" in geometry:
            extra = sorted(set(geometry) - {"gram", "alpha"})
            if extra:
                raise ParameterError(f"a low-rank geometry dict has the keys gram and alpha, got also "
                                     f"{', '.join(map(str, extra))}")
            geometry = LowRankGeometry(geometry["gram"], geometry.get("alpha", 1))
        else:
            bad = [str(k) for k in geometry if k not in GEOMETRY_KEYS]
            if bad:
                raise ParameterError(f"geometry dict: unknown entr{'y' if len(bad) == 1 else 'ies'} "
                                     f"{', '.join(bad)}; use {', '.join(GEOMETRY_KEYS)} (or gram and alpha)")
            both = [k for k in geometry if k in values]
            if both:
                raise ParameterError(f"{both[0]} is given twice: in the geometry and as a keyword; give it once")
            values = {**geometry, **values}
            geometry = None
    if geometry is not None and not isinstance(geometry, (Geometry, LowRankGeometry)):
        raise ParameterError(f"geometry must be a symrmt.Geometry, a symrmt.LowRankGeometry or a dict of its "
                             f"entries, got {type(geometry).__name__}")
    if not values:
        return geometry if geometry is not None else Geometry()
    if isinstance(geometry, LowRankGeometry):
        raise ParameterError(f"{', '.join(values)}: entries of a rank-one geometry cannot be set on a "
                             "LowRankGeometry; put them in its Gram matrix")
    if geometry is not None:
        both = [k for k in values if k in geometry.as_dict() and geometry.as_dict()[k] != 0]
        if both:
            raise ParameterError(f"{both[0]} is given twice: in the geometry and as a keyword; give it once")
    return point_geometry(values, geometry)


#: the inner products and the angles of a rank-one geometry a point may set
GRAM_KEYS = ("snr", "wk2", "wq2", "wkwq", "muwk", "muwq")
ANGLE_KEYS = ("cos_muwk", "cos_muwq", "cos_wkwq")
#: each angle and the inner product of the same pair
ANGLE_PAIRS = {"cos_muwk": "muwk", "cos_muwq": "muwq", "cos_wkwq": "wkwq"}


def point_geometry(values: dict, base=None):
    """The geometry of one point: ``base`` (default ``mu = 0, W = I``) with the Gram entries and angles
    in ``values`` put in.

    Angles go through :meth:`Geometry.from_angles` with the norms of the point; an inner product
    and the angle of the same pair cannot both be given.

    >>> point_geometry({"snr": 2, "wk2": 1}).as_dict()["snr"]
    Fraction(2, 1)
    """
    keys = [k for k in values if k in GRAM_KEYS or k in ANGLE_KEYS]
    if isinstance(base, dict):  # a plain dict of entries (as_geometry)
        base = as_geometry(base)
    if isinstance(base, LowRankGeometry):
        if keys:
            raise ParameterError(f"with a LowRankGeometry only c and gamma can vary; got {', '.join(keys)}")
        return base
    if base is not None and not isinstance(base, Geometry):
        raise ParameterError(f"geometry must be a symrmt.Geometry or LowRankGeometry, got {type(base).__name__}")
    entries = dict((base or Geometry()).as_dict())
    for k in GRAM_KEYS:
        if k in values:
            entries[k] = to_fraction(values[k], k)
    angles = {k: values[k] for k in ANGLE_KEYS if k in values}
    if not angles:
        return Geometry(**entries)
    both = [k for k in angles if ANGLE_PAIRS[k] in values]
    if both:
        raise ParameterError(f"give either {both[0]} or {ANGLE_PAIRS[both[0]]}, not both")
    if not hasattr(Geometry, "from_angles"):  # pragma: no cover - arrives with the angle constructor
        raise ParameterError("angles need Geometry.from_angles, which this installation lacks")
    # a pair without an angle keeps the inner product given (or the base's)
    return Geometry.from_angles(entries["snr"], entries["wk2"], entries["wq2"],
                                **{k: angles.get(k) for k in ANGLE_KEYS},
                                **{pair: entries[pair] for k, pair in ANGLE_PAIRS.items() if k not in angles})
