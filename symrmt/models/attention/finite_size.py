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

__all__ = ["NOTE_P", "NOTE_THRESHOLD", "signal_term", "finite_size_note"]

#: the size at which the note is judged: the ``p`` of a typical simulation
NOTE_P = 512
#: the note is given when :func:`signal_term` at :data:`NOTE_P` exceeds this
NOTE_THRESHOLD = 0.25


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


def finite_size_note(geometry, c) -> str | None:
    """The warning of ``symrmt.limit`` and ``crossings`` when :func:`signal_term` is above
    :data:`NOTE_THRESHOLD` at ``p = 512``, else ``None``; it names the sizes and what to do.

    Takes the geometry (as :func:`signal_term`) and ``c = p/n`` (a number or exact text); returns a str or None.

    >>> from symrmt.models.attention.geometry import LowRankGeometry
    >>> print(finite_size_note(LowRankGeometry([[4, 4, 4], [4, 4, 4], [4, 4, 4]]), "1/2"))
    the signal and weight part of the kernel's argument, which the limit linearizes, has an RMS of 1.1
    (relative to the bulk's scale) at p = 512 (n = 1024), and 0.55 at p = 2048: it shrinks only like
    1/sqrt(p), so simulated errors at practical sizes can sit far from this limit (E_A below it); compare
    with a simulation at your n (symrmt simulate, .compare(limit, sizes=[...]))
    """
    s = signal_term(geometry, NOTE_P)
    if s <= NOTE_THRESHOLD:
        return None
    c = float(Fraction(c)) if not isinstance(c, float) else c
    n = round(NOTE_P / c)
    return (f"the signal and weight part of the kernel's argument, which the limit linearizes, has an RMS of "
            f"{s:.2g} (relative to the bulk's scale) at p = {NOTE_P} (n = {n}), and "
            f"{signal_term(geometry, 4 * NOTE_P):.2g} at p = {4 * NOTE_P}: it shrinks only like 1/sqrt(p), so "
            "simulated errors at practical sizes can sit far from this limit (E_A below it); compare with a "
            "simulation at your n (symrmt simulate, .compare(limit, sizes=[...]))")
