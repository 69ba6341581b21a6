"""The attention model's geometry (symrmt.models.attention.geometry): decimals, angles, vectors,
keywords and files give the same exact PSD Gram matrix, or a one-line refusal that says why.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

import symrmt
from symrmt.cli.app import main
from symrmt.errors import ParameterError
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.parsing import ParseLimitError
from tests.cli_helpers import _run, _no_result, _one_line, cli, _one_line_refusal


def _cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def npy(tmp_path):
    def make(shape):
        path = tmp_path / f"g{shape[0]}x{shape[1]}.npy"
        np.save(path, np.random.default_rng(0).standard_normal(shape))
        return str(path)
    return make


def test_rank_cap():
    n = 2 * 20 + 1
    with pytest.raises(ParseLimitError, match="rank"):
        LowRankGeometry([[int(i == j) for j in range(n)] for i in range(n)])


def test_aligned_decimal_geometry_is_projected():
    r2 = 1.4142135623730951
    g = Geometry(snr=2, wk2=1, wq2=1, wkwq=1, muwk=r2, muwq=r2)
    assert g.rank() == 1 and 0 < g.projection < 1e-15
    assert g.muwk == Fraction(repr(r2))  # the pivot row is kept as typed (floats are read as their decimal)


def test_psd_violation_too_large_is_refused_with_size():
    with pytest.raises(ParameterError, match=r"violation is 1e-06"):
        Geometry(snr=1, wk2=1, muwk=Fraction(1) + Fraction(1, 2 * 10**6))


def test_from_angles_aligned_is_exact_rank_one():
    g = Geometry.from_angles(2, 1, 1, 1, 1, 1)
    assert g.rank() == 1 and g.projection is None
    assert abs(g.muwk - Fraction(14142135623730950488, 10**19)) < Fraction(1, 10**18)
    with pytest.raises(ParameterError, match="exclusive"):
        Geometry.from_angles(1, 1, 1, cos_muwk=0.5, muwk=0.5)


def test_from_vectors_rank_one_geometry():
    g = Geometry.from_vectors([1, 1, 0], [1, 0, 0], [0, 1, 0])
    assert (g.snr, g.muwk, g.muwq, g.wkwq) == (2, 1, 1, 0)


def test_cli_cos_flags_and_sqrt(capsys):
    base = ["limit", "--f", "tanh", "--c", "0.5", "--gamma", "0.1", "--snr", "2", "--wk2", "1", "--wq2", "1", "--json"]
    code, out, _ = _cli(base + ["--cos-muwk", "1", "--cos-muwq", "1", "--cos-wkwq", "1"], capsys)
    assert code == 0
    a = json.loads(out)
    code, out, err = _cli(base + ["--wkwq", "1", "--muwk", "1.4142135623730951", "--muwq", "1.4142135623730951"],
                          capsys)
    assert code == 0 and "PSD" in err
    b = json.loads(out)
    assert b["params"]["geometry"]["psd_projection"] < 1e-15
    assert abs(a["attention"][0] - b["attention"][0]) < 1e-12  # rounding-level change, same limit
    code, _, err = _cli(base + ["--muwk", "1", "--cos-muwk", "1"], capsys)
    assert code == 2 and "exclusive" in err


@pytest.mark.parametrize("array", [np.array([["a", "b"]] * 3), np.array([[1, None]] * 3, dtype=object),
                                   np.ones((3, 4), dtype=complex), np.ones((3, 4), dtype=bool)])
def test_geometry_npy_of_the_wrong_dtype(capsys, tmp_path, array):
    path = tmp_path / "g.npy"
    np.save(path, array, allow_pickle=True)
    code, out, err = _run(capsys, ["limit", "--f", "tanh", "--c", "1/2", "--gamma", "1", "--geometry", str(path)])
    assert code == 2 and _no_result(out)
    _one_line(err)


@pytest.mark.slow
def test_npy_geometry_rank_and_length_checked_first(npy):
    p = cli("limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--geometry", npy((2001, 5)), "--json")
    _one_line_refusal(p, "LIMITS['rank']")
    p = cli("limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--geometry", npy((3, 1_000_001)), "--json")
    _one_line_refusal(p, "LIMITS['vector_length']")


def test_npy_geometry_shape_checked_before_its_data_is_read(tmp_path, monkeypatch):
    """A (3, 10^6 + 1) file is refused from its header: the array is mapped, never read into memory
    (a file of many gigabytes would otherwise be loaded whole before the limit refused it)."""
    from symrmt.models.attention.geometry_io import load_geometry

    path = tmp_path / "long.npy"
    np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(3, 1_000_001)).flush()
    real_load, modes = np.load, []

    def spy(*args, **kwargs):
        modes.append(kwargs.get("mmap_mode"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(np, "load", spy)
    with pytest.raises(ParseLimitError, match="vector_length"):
        load_geometry(str(path))
    assert modes == ["r"]


@pytest.mark.slow
def test_exact_gram_in_integers_is_the_fraction_gram():
    from fractions import Fraction

    from symrmt.models.attention.geometry_io import exact_gram

    rng = np.random.default_rng(3)
    v = rng.standard_normal((3, 40)) * np.array([[1e-300], [1.0], [1e300]])
    v[1, 5] = 0.0
    ref = [[sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)), Fraction(0)) for b in v] for a in v]
    assert exact_gram(v) == ref


@pytest.mark.slow
def test_npy_geometry_300k_is_read(npy):
    from symrmt.models.attention.geometry_io import load_geometry

    path = npy((3, 300_000))
    g = load_geometry(path)
    x = np.load(path)
    assert abs(float(g.gram()[0][1]) - float(x[0] @ x[1])) < 1e-9 * 300_000


@pytest.mark.slow
def test_deep_json_geometry_is_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    p = cli("limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--geometry", str(path), "--json")
    _one_line_refusal(p, "deeper than")


def test_simulate_with_irrational_angles():
    g = symrmt.Geometry.from_angles(snr=3, wk2=1, wq2=1, cos_muwk=1, cos_muwq=1, cos_wkwq=1)
    assert max(len(str(x)) for row in g.gram() for x in row) > 4000  # entries no parser would read
    s = symrmt.simulate("tanh", 0.5, [1], g, n=64, trials=2, seed=0, progress=False)
    assert np.all(np.isfinite(s.attention)) and np.all(np.isfinite(s.ridge))
    # the same model with mu, w_K, w_Q given as the float vectors of that Gram matrix: the same draws
    mu = np.sqrt(3.0)
    g2 = symrmt.Geometry(snr=3, wk2=1, wq2=1, wkwq=1, muwk=float(mu), muwq=float(mu))
    s2 = symrmt.simulate("tanh", 0.5, [1], g2, n=64, trials=2, seed=0, progress=False)
    assert np.allclose(s.attention_trials, s2.attention_trials, rtol=1e-9, atol=0)


def test_geometry_keywords_and_dicts_everywhere():
    ref = symrmt.limit("tanh", 0.5, [0.1, 1], symrmt.Geometry(snr=1, wk2=1), digits=20)
    for kwargs in ({"snr": 1, "wk2": 1}, {"geometry": {"snr": 1, "wk2": 1}}, {"geometry": {"snr": 1}, "wk2": 1},
                   {"geometry": {"gram": [[1, 0, 0], [0, 1, 0], [0, 0, 0]]}}):
        r = symrmt.limit("tanh", 0.5, [0.1, 1], digits=20, **kwargs)
        assert r.attention_mp == ref.attention_mp and r.ridge_mp == ref.ridge_mp, kwargs
    sim_ref = symrmt.simulate("tanh", 0.5, [1], symrmt.Geometry(snr=1), n=64, trials=3, seed=2, progress=False)
    for kwargs in ({"snr": 1}, {"geometry": {"snr": 1}}):
        sim = symrmt.simulate("tanh", 0.5, [1], n=64, trials=3, seed=2, progress=False, **kwargs)
        assert np.array_equal(sim.attention_trials, sim_ref.attention_trials)
    s = symrmt.sweep("tanh", {"c": [0.5], "gamma": [0.1, 1]}, geometry={"snr": 1, "wk2": 1}, digits=20,
                     progress=False)
    assert tuple(s.attention_mp) == ref.attention_mp
    with pytest.raises(symrmt.ParameterError, match="given twice"):
        symrmt.limit("tanh", 0.5, 1, {"snr": 1}, snr=2)
    with pytest.raises(symrmt.ParameterError, match="unknown geometry entry"):
        symrmt.limit("tanh", 0.5, 1, snrr=1)
    with pytest.raises(symrmt.ParameterError, match="unknown entry"):
        symrmt.limit("tanh", 0.5, 1, {"snrr": 1})


def test_one_public_path_for_the_geometry_classes():
    import symrmt.models.attention.geometry
    import symrmt.models.attention.params

    assert symrmt.LowRankGeometry is symrmt.models.attention.geometry.LowRankGeometry
    assert not hasattr(symrmt.models.attention.params, "LowRankGeometry")  # one path: no alias left in params
    assert symrmt.Geometry is symrmt.models.attention.geometry.Geometry
    assert symrmt.LowRankGeometry.__module__ == "symrmt.models.attention.geometry"


def test_geometry_repr_is_short_for_irrational_inner_products():
    import symrmt

    g = symrmt.Geometry.from_angles(snr=2, wk2=1, wq2=1, cos_muwk=0.3, cos_muwq=0.3, cos_wkwq=1)
    text = repr(g)
    assert len(text) < 200, len(text)  # was ~4000 characters of Fractions
    assert "muwk≈0.42426406871192851464" in text and "snr=2" in text  # 0.3 * sqrt(2), to 20 digits
    assert g.muwk.denominator > 10**100  # the exact value stays inside
