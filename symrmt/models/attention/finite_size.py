r"""How far the limit may sit from a simulation at practical sizes: the signal's share of the kernel's argument.

:func:`signal_term` gives the root mean square of the part ``delta_ij`` of ``t_ij = x_i^T W x_j/sqrt(p)`` that
the limit linearizes ``f`` in, relative to the bulk's scale ``alpha`` (it vanishes like ``1/sqrt(p)``);
:func:`finite_size_note` words the warning that ``symrmt.limit`` and ``crossings`` carry where it is not small.
The formula is in ``docs/theory.md`` section 13.1.

>>> from symrmt.models.attention.geometry import LowRankGeometry
>>> aligned = LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]])  # mu = w_K = w_Q, norms^2 4
>>> round(signal_term(aligned, 512), 3)
1.097
>>> finite_size_note(LowRankGeometry([[1]]), "1/2") is None
True
"""

from __future__ import annotations

import math
from fractions import Fraction

from symrmt.models.attention.geometry import as_low_rank

__all__ = ["NOTE_P", "NOTE_THRESHOLD", "SOFTMAX_NU_THRESHOLD", "signal_term", "softmax_nu", "finite_size_note"]

#: the size at which the note is judged: the ``p`` of a typical simulation
NOTE_P = 512
#: the note is given when :func:`signal_term` at :data:`NOTE_P` exceeds this
NOTE_THRESHOLD = 0.25
#: the softmax's note is given when its kernel's ``nu = e^{alpha^2} - 1`` exceeds this (``alpha > 1.55``).  Measured
#: (docs/theory.md section 11) at c = 1/2, ||mu||^2 = 1/2, n = 512, 160 trials: E_A simulated minus the limit is
#: -0.1%, -1.9%, -4.4%, -6.8% of the limit at nu = 3.8, 8.5, 20, 54 (gamma = 0.1; 0.1 to 12.9 se) and +2.0%,
#: +1.4%, -1.2%, -4.6% at gamma = 1; at nu = 54 still 4-5% at n = 1024, at nu = 517 8-10% at n = 512
SOFTMAX_NU_THRESHOLD = 10


def signal_term(geometry, p: int) -> float:
    """``rms(delta_ij)/alpha`` at dimension ``p``: the root mean square of the signal and weight part of
    the kernel's argument, relative to the bulk's scale (module docstring).

    ``geometry``: ``None``, a :class:`~symrmt.models.attention.geometry.Geometry` or a
    :class:`~symrmt.models.attention.geometry.LowRankGeometry`.  Returns 0 at ``mu = 0`` and ``W = alpha I``.

    >>> signal_term(None, 100)
    0.0
    """
    geo = as_low_rank(geometry)
    g, a, r = geo.gram_entries, Fraction(geo.alpha), geo.r
    k = list(range(1, r + 1))
    q = list(range(r + 1, 2 * r + 1))
    mwm = a * g[0][0] + sum(g[0][kj] * g[qj][0] for kj, qj in zip(k, q))  # mu^T W mu
    # W mu = alpha mu + sum_j w_K^j (w_Q^j . mu);  W^T mu = alpha mu + sum_j w_Q^j (w_K^j . mu)
    wmu = (a * a * g[0][0] + 2 * a * sum(g[qj][0] * g[0][kj] for kj, qj in zip(k, q))
           + sum(g[qj][0] * g[ql][0] * g[kj][kl] for kj, qj in zip(k, q) for kl, ql in zip(k, q)))
    wtmu = (a * a * g[0][0] + 2 * a * sum(g[kj][0] * g[0][qj] for kj, qj in zip(k, q))
            + sum(g[kj][0] * g[kl][0] * g[qj][ql] for kj, qj in zip(k, q) for kl, ql in zip(k, q)))
    lf = sum(g[kj][kl] * g[qj][ql] for kj, qj in zip(k, q) for kl, ql in zip(k, q))  # ||L||_F^2
    total = mwm * mwm + wmu + wtmu + lf
    return math.sqrt(float(total)) / (float(a) * math.sqrt(p))


def softmax_nu(geometry) -> float:
    """``nu = e^{alpha^2} - 1`` of the softmax's entry-wise kernel ``h`` at the geometry's ``alpha`` (docs/theory.md
    section 11).  Takes a geometry (as :func:`signal_term`); returns a float.

    >>> from symrmt.models.attention.geometry import LowRankGeometry
    >>> round(softmax_nu(None), 4), round(softmax_nu(LowRankGeometry([[0]], alpha=2)), 2)
    (1.7183, 53.6)
    """
    return math.expm1(float(as_low_rank(geometry).alpha) ** 2)


def _softmax_note(nu: float) -> str:
    return (f"the softmax's kernel has nu = e^(alpha^2) - 1 = {nu:.3g}, above {SOFTMAX_NU_THRESHOLD}: its large-n "
            "limit is approached slowly in n (measured at c = 1/2, ||mu||^2 = 1/2, n = 512: simulated E_A 2% below "
            "the limit at nu = 8.5, 4-7% at nu = 20-54, 8-10% at nu = 517, still 4-8% at n = 1024); compare with "
            "a simulation at your n (symrmt simulate, .compare(limit, sizes=[...]))")


def finite_size_note(geometry, c, softmax: bool = False) -> str | None:
    """The warning of ``symrmt.limit`` and ``crossings`` when :func:`signal_term` is above
    :data:`NOTE_THRESHOLD` at ``p = 512``, or (``softmax=True``) when :func:`softmax_nu` is above
    :data:`SOFTMAX_NU_THRESHOLD`, else ``None``; it names the sizes and what to do.

    Takes the geometry (as :func:`signal_term`), ``c = p/n`` (a number or exact text) and whether the kernel is
    the softmax; returns a str or None.

    >>> from symrmt.models.attention.geometry import LowRankGeometry
    >>> finite_size_note(LowRankGeometry([[1]], alpha=2), "1/2", softmax=True)[:52]
    "the softmax's kernel has nu = e^(alpha^2) - 1 = 53.6"
    >>> finite_size_note(LowRankGeometry([[1]], alpha=2), "1/2") is None
    True

    >>> from symrmt.models.attention.geometry import LowRankGeometry
    >>> print(finite_size_note(LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]]), "1/2"))
    the signal and weight part of the kernel's argument, which the limit linearizes, has an RMS of 1.1
    (relative to the bulk's scale) at p = 512 (n = 1024), and 0.55 at p = 2048: it shrinks only like
    1/sqrt(p), so simulated errors at practical sizes can sit far from this limit (E_A below it); compare
    with a simulation at your n (symrmt simulate, .compare(limit, sizes=[...]))
    """
    nu = softmax_nu(geometry) if softmax else 0.0
    kernel = _softmax_note(nu) if nu > SOFTMAX_NU_THRESHOLD else None
    s = signal_term(geometry, NOTE_P)
    if s <= NOTE_THRESHOLD:
        return kernel
    c = float(Fraction(c)) if not isinstance(c, float) else c
    n = round(NOTE_P / c)
    signal = (f"the signal and weight part of the kernel's argument, which the limit linearizes, has an RMS of "
              f"{s:.2g} (relative to the bulk's scale) at p = {NOTE_P} (n = {n}), and "
              f"{signal_term(geometry, 4 * NOTE_P):.2g} at p = {4 * NOTE_P}: it shrinks only like 1/sqrt(p), so "
              "simulated errors at practical sizes can sit far from this limit (E_A below it); compare with a "
              "simulation at your n (symrmt simulate, .compare(limit, sizes=[...]))")
    return signal if kernel is None else f"{kernel}; and {signal}"
