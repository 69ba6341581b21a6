"""The finite-size note of ``symrmt.limit`` and ``crossings``: the RMS of the signal and weight part of the
kernel's argument, checked against a direct simulation of that part, and where the note appears."""

from __future__ import annotations

import json

import numpy as np
import pytest

import symrmt
from symrmt.cli.app import main
from symrmt.errors import FiniteSizeWarning
from symrmt.models.attention.finite_size import finite_size_note, signal_term
from symrmt.models.attention.geometry import LowRankGeometry

pytestmark = pytest.mark.montecarlo


def _vectors(p, rng):
    """mu, w_K, w_Q (rank one) with a generic Gram matrix, and that Gram matrix."""
    basis = np.linalg.qr(rng.standard_normal((p, 3)))[0]
    mu = basis @ np.array([1.5, 0.0, 0.0])
    wk = basis @ np.array([1.0, 1.2, 0.0])
    wq = basis @ np.array([-0.7, 0.4, 0.9])
    vecs = [mu, wk, wq]
    return mu, wk, wq, [[float(u @ v) for v in vecs] for u in vecs]


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_signal_term_is_the_rms_of_the_signal_part(alpha):
    """delta_ij = (x_i^T W x_j - alpha z_i^T z_j)/sqrt(p) over independent token pairs: its RMS against
    signal_term * alpha (k = 4 standard errors of the simulated mean square)."""
    rng = np.random.default_rng(1)
    p, pairs = 64, 40000
    mu, wk, wq, gram = _vectors(p, rng)
    w = alpha * np.eye(p) + np.outer(wk, wq)
    y = rng.choice([-1.0, 1.0], size=(2, pairs))
    z = rng.standard_normal((2, pairs, p))
    x = y[..., None] * mu + z
    delta = (np.einsum("ip,pq,iq->i", x[0], w, x[1]) - alpha * np.einsum("ip,ip->i", z[0], z[1])) / np.sqrt(p)
    ms, se = np.mean(delta**2), np.std(delta**2, ddof=1) / np.sqrt(pairs)
    geo = LowRankGeometry(gram, alpha=alpha)
    theory = (signal_term(geo, p) * alpha) ** 2
    assert abs(ms - theory) <= 4 * se, (ms, se, theory)


def test_signal_term_of_simple_geometries():
    # mu = 0, W = I: nothing is linearized; W = I with a signal: (||mu||^2)^2 + 2 ||mu||^2
    assert signal_term(None, 128) == 0.0
    assert signal_term(symrmt.Geometry(snr=2), 100) == pytest.approx(np.sqrt(4 + 4) / 10, rel=1e-15)


def test_limit_notes_the_aligned_high_snr_case(capsys):
    aligned = symrmt.Geometry(snr=4, wk2=4, wq2=4, wkwq=4, muwk=4, muwq=4)
    with pytest.warns(FiniteSizeWarning, match="p = 512"):
        r = symrmt.limit("tanh", "1/2", [1], aligned, digits=10)
    assert r.finite_size_note and "note:" in str(r)
    assert symrmt.limit("tanh", "1/2", [1], symrmt.Geometry(snr=1), digits=10).finite_size_note is None
    assert main(["limit", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--snr", "4", "--wk2", "4", "--wq2", "4",
                 "--wkwq", "4", "--muwk", "4", "--muwq", "4", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "symrmt limit: note:" in err and "finite_size_note" in json.loads(out)
    assert main(["limit", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--snr", "1"]) == 0
    assert "note" not in capsys.readouterr().err


def test_crossings_carry_the_note():
    with pytest.warns(FiniteSizeWarning):
        res = symrmt.crossings("tanh", over="snr", between=(1, 8), c="1/2", gamma=1, scan=3,
                               geometry=symrmt.Geometry(wk2=4, wq2=4, wkwq=4))
    assert res.finite_size_note is not None and "note:" in str(res)
    assert finite_size_note(symrmt.Geometry(snr=1), "1/2") is None


def test_softmax_note_above_the_measured_nu_threshold(capsys):
    """The softmax's kernel nu = e^{alpha^2} - 1 (53.6 at alpha = 2, 8.5 at alpha = 3/2): measured at n = 512,
    c = 1/2, ||mu||^2 = 1/2, E_A simulated 6.8% below the limit at nu = 54 and 1.9% at nu = 8.5 (gamma = 0.1): the
    note is given above nu = 10, for the softmax only (for an entry-wise f nu alone is not scale-free)."""
    geo = LowRankGeometry([[0.5]], alpha=2)
    note = finite_size_note(geo, "1/2", softmax=True)
    assert note is not None and "53.6" in note and "above 10" in note
    assert finite_size_note(LowRankGeometry([[0.5]], alpha="3/2"), "1/2", softmax=True) is None
    assert finite_size_note(geo, "1/2") is None
    argv = ["limit", "--attention", "softmax", "--alpha", "2", "--snr", "1/2", "--c", "1/2", "--gamma", "0.1",
            "--digits", "6", "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "note: the softmax's kernel has nu" in err and "53.6" in json.loads(out)["finite_size_note"]
    with pytest.warns(FiniteSizeWarning, match="softmax's kernel"):
        symrmt.limit(None, "1/2", [0.1], {"gram": [["1/2"]], "alpha": 2}, attention="softmax", digits=6)
