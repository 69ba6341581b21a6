"""Reading query/key weights from safetensors and fitting ``alpha I + rank r`` (symrmt.models.attention.pretrained).

The tests write their own small BERT-style safetensors file with a planted
``W = W_K^T W_Q = alpha I + rank 2`` (non-symmetric, so a transposed reading is
caught).  The real MiniLM run is tested only where the optional extra is installed.
"""

import json
import sys

import numpy as np
import pytest

from symrmt.errors import ParameterError
from symrmt.models.attention import pretrained as P

safetensors_numpy = pytest.importorskip("safetensors.numpy")

P_DIM, HEADS, ALPHA = 24, 3, 1.5


def _planted(seed=0):
    rng = np.random.default_rng(seed)
    a, b, c, d = (rng.standard_normal(P_DIM) for _ in range(4))
    low = np.outer(a, b) + 0.5 * np.outer(c, d)
    target = ALPHA * np.eye(P_DIM) + low
    # any invertible W_Q, then W_K = (target W_Q^{-1})^T so that W_K^T W_Q = target
    w_q = rng.standard_normal((P_DIM, P_DIM)) + 3 * np.eye(P_DIM)
    w_k = np.linalg.solve(w_q.T, target.T)
    return target, low, w_q, w_k


def _write(tmp_path, w_q, w_k, layers=2, dtype=np.float64, config=True, drop=None):
    tensors = {}
    for i in range(layers):
        tensors[f"encoder.layer.{i}.attention.self.query.weight"] = ((i + 1) * w_q).astype(dtype)
        tensors[f"encoder.layer.{i}.attention.self.key.weight"] = w_k.astype(dtype)
        tensors[f"encoder.layer.{i}.attention.self.query.bias"] = np.ones(P_DIM, dtype=dtype)
        tensors[f"encoder.layer.{i}.attention.output.dense.weight"] = np.eye(P_DIM, dtype=dtype)
    if drop:
        del tensors[drop]
    path = tmp_path / "model.safetensors"
    safetensors_numpy.save_file(tensors, str(path))
    if config:
        (tmp_path / "config.json").write_text(json.dumps({"num_attention_heads": HEADS}))
    return path


def test_loader_reads_layers_heads_and_the_key_query_order(tmp_path):
    target, _, w_q, w_k = _planted()
    assert np.abs(target - target.T).max() > 1.0  # non-symmetric: a transposed reading would fail below
    layers = P.load_attention_weights(_write(tmp_path, w_q, w_k))
    assert [layer.index for layer in layers] == [0, 1]
    assert layers[0].num_heads == HEADS and layers[0].head_dim == P_DIM // HEADS and layers[0].p == P_DIM
    np.testing.assert_allclose(layers[0].weight(), target, atol=1e-10)
    np.testing.assert_allclose(layers[1].weight(), 2 * target, atol=1e-10)
    # x_i^T W x_j is the key of token i dotted with the query of token j
    rng = np.random.default_rng(1)
    xi, xj = rng.standard_normal(P_DIM), rng.standard_normal(P_DIM)
    assert xi @ layers[0].weight() @ xj == pytest.approx((w_k @ xi) @ (w_q @ xj), rel=1e-10)
    # heads: rows of the stored matrices, rank <= head_dim, summing to W
    heads = [layers[0].head_weight(h) for h in range(HEADS)]
    np.testing.assert_allclose(sum(heads), target, atol=1e-10)
    assert all(np.linalg.matrix_rank(h) <= P_DIM // HEADS for h in heads)
    rows = slice(P_DIM // HEADS, 2 * P_DIM // HEADS)
    np.testing.assert_allclose(heads[1], w_k[rows].T @ w_q[rows], atol=1e-12)


def test_loader_float32_file_and_default_heads(tmp_path):
    target, _, w_q, w_k = _planted()
    layers = P.load_attention_weights(_write(tmp_path, w_q, w_k, dtype=np.float32, config=False))
    assert layers[0].num_heads == 1 and layers[0].w_q.dtype == np.float64
    np.testing.assert_allclose(layers[0].weight(), target, atol=1e-4 * np.abs(target).max())
    assert P.load_attention_weights(_write(tmp_path, w_q, w_k, config=False), num_heads=4)[0].head_dim == 6


def test_loader_errors(tmp_path, monkeypatch):
    _, _, w_q, w_k = _planted()
    with pytest.raises(ValueError, match="lacks its key"):
        P.load_attention_weights(_write(tmp_path, w_q, w_k, drop="encoder.layer.1.attention.self.key.weight"))
    with pytest.raises(ValueError, match="divisible"):
        P.load_attention_weights(_write(tmp_path, w_q, w_k), num_heads=5)
    empty = tmp_path / "empty.safetensors"
    safetensors_numpy.save_file({"pooler.dense.weight": np.eye(3)}, str(empty))
    with pytest.raises(ValueError, match="no tensors named"):
        P.load_attention_weights(empty)
    with pytest.raises(ParameterError, match=r"missing\.safetensors: no such file; give the path"):
        P.load_attention_weights(tmp_path / "missing.safetensors")
    text = tmp_path / "text.safetensors"
    text.write_text("not a tensor file")
    with pytest.raises(ParameterError, match="not a readable safetensors file"):
        P.load_attention_weights(text)
    monkeypatch.setitem(sys.modules, "safetensors", None)
    with pytest.raises(P.PretrainedUnavailable, match=r"symrmt\[pretrained\]"):
        P.load_attention_weights(_write(tmp_path, w_q, w_k))
    monkeypatch.setitem(sys.modules, P.MODEL_PACKAGE, None)
    with pytest.raises(P.PretrainedUnavailable, match=r"symrmt\[pretrained\]"):
        P.default_weights_path()


def test_fit_recovers_planted_alpha_and_low_rank(tmp_path):
    target, low, w_q, w_k = _planted()
    w = P.load_attention_weights(_write(tmp_path, w_q, w_k))[0].weight()
    fit = P.fit_scaled_identity_plus_low_rank(w, 2)
    assert fit.alpha == pytest.approx(ALPHA, abs=1e-9)
    np.testing.assert_allclose(fit.low_rank(), low, atol=1e-9)
    np.testing.assert_allclose(fit.matrix(), target, atol=1e-9)
    assert fit.explained == pytest.approx(1.0, abs=1e-12)
    # the factors: w_K^j = sqrt(s_j) u_j, w_Q^j = sqrt(s_j) v_j, so ||w_K^j|| = ||w_Q^j|| = sqrt(s_j)
    np.testing.assert_allclose(np.linalg.norm(fit.wk, axis=0) ** 2, fit.singular_values, rtol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(fit.wq, axis=0) ** 2, fit.singular_values, rtol=1e-10)
    np.testing.assert_allclose(fit.singular_values, np.linalg.svd(low, compute_uv=False)[:2], rtol=1e-9)


def test_fit_r0_is_the_trace_and_r1_is_the_global_optimum():
    target, _, _, _ = _planted()
    fit0 = P.fit_scaled_identity_plus_low_rank(target, 0)
    assert fit0.alpha == pytest.approx(np.trace(target) / P_DIM, rel=1e-14)
    assert fit0.explained == pytest.approx(np.trace(target) ** 2 / (P_DIM * np.sum(target**2)), rel=1e-12)
    # r = 1 of a rank-2 perturbation: compare with a brute-force scan of
    # g(alpha) = sum_{i > 1} s_i(W - alpha I)^2 (Eckart-Young at each alpha) and its refinement
    def g(a):
        s = np.linalg.svd(target - a * np.eye(P_DIM), compute_uv=False)
        return float(np.sum(s[1:] ** 2))

    grid = np.linspace(-5, 5, 2001)
    best = grid[int(np.argmin([g(a) for a in grid]))]
    from scipy.optimize import minimize_scalar

    opt = minimize_scalar(g, bracket=(best - 0.01, best, best + 0.01), tol=1e-12)
    fit1 = P.fit_scaled_identity_plus_low_rank(target, 1)
    assert fit1.residual_fro2 == pytest.approx(opt.fun, rel=1e-8)
    assert fit1.alpha == pytest.approx(opt.x, abs=1e-5)
    assert all(b <= a + 1e-12 * fit1.total_fro2 for a, b in zip(fit1.history, fit1.history[1:]))
    # explained fraction grows with r and reaches 1 at the planted rank
    ex = [P.fit_scaled_identity_plus_low_rank(target, r).explained for r in (0, 1, 2, 3)]
    assert ex[0] < ex[1] < ex[2] and ex[2] == pytest.approx(1.0, abs=1e-12) and ex[3] == pytest.approx(1.0, abs=1e-12)


def test_fit_with_noise_and_normalization():
    target, low, _, _ = _planted()
    rng = np.random.default_rng(7)
    noisy = target + 1e-3 * rng.standard_normal(target.shape)
    fit = P.fit_scaled_identity_plus_low_rank(noisy, 2)
    assert abs(fit.alpha - ALPHA) < 1e-3
    assert 1 - 1e-5 < fit.explained < 1
    wn, s = P.rms_normalize(noisy)
    assert np.sum(wn**2) == pytest.approx(P_DIM, rel=1e-12) and s == pytest.approx(np.linalg.norm(noisy) / P_DIM**0.5)
    # the fit is scale-equivariant: alpha and explained of W/s
    fit_n = P.fit_scaled_identity_plus_low_rank(wn, 2)
    assert fit_n.alpha == pytest.approx(fit.alpha / s, rel=1e-9)
    assert fit_n.explained == pytest.approx(fit.explained, abs=1e-12)
    summ = P.weight_summary(target)
    assert summ["rank90"] <= 3 and summ["trace_over_p"] == pytest.approx(np.trace(target) / P_DIM)
    with pytest.raises(ValueError):
        P.fit_scaled_identity_plus_low_rank(np.ones((3, 4)), 1)
    with pytest.raises(ValueError):
        P.fit_scaled_identity_plus_low_rank(target, P_DIM + 1)


def test_fit_table_rows(tmp_path):
    _, _, w_q, w_k = _planted()
    layers = P.load_attention_weights(_write(tmp_path, w_q, w_k))
    rows = P.fit_table(layers, ranks=(0, 2), heads=True)
    assert len(rows) == 2 * (1 + HEADS) * 2
    full = [r for r in rows if r["head"] is None and r["r"] == 2]
    assert all(r["explained"] == pytest.approx(1.0, abs=1e-12) for r in full)
    # layer 1 is 2 W: the same explained fraction and, after RMS normalization, the same alpha
    assert full[0]["alpha"] == pytest.approx(full[1]["alpha"], rel=1e-9)
    assert full[1]["scale"] == pytest.approx(2 * full[0]["scale"], rel=1e-12)
    text = P.format_fit_table(rows, ranks=(0, 2))
    assert text.count("\n") == 3 and "100.00%" in text


def test_verify_pretrained_without_the_extra(monkeypatch, capsys):
    from symrmt.cli.app import main

    monkeypatch.setitem(sys.modules, P.MODEL_PACKAGE, None)
    assert main(["verify", "--pretrained"]) == 2
    assert "pip install 'symrmt[pretrained]'" in capsys.readouterr().err


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_real_model_derivation_quick(capsys):
    """The MiniLM-L6 derivation in quick mode (only where the extra is installed)."""
    pytest.importorskip(P.MODEL_PACKAGE)
    from symrmt.derivations import DERIVATIONS
    from symrmt.derivations import pretrained as D

    assert "pretrained" not in DERIVATIONS  # it needs the extra; `symrmt verify --pretrained` runs it
    assert D.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and "| layer |" in out
