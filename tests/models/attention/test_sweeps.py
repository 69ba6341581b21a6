"""``symrmt.sweep`` and ``symrmt.crossings``, and their CLI verbs.

A sweep must give, point by point, the values of single ``symrmt.limit`` calls; a crossing is
checked independently: SciPy's ``brentq`` on the float values of ``E_A - E_RR`` must find the
same root, and the certified sign must change across it.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import mpmath
import numpy as np
import pytest

import symrmt
from symrmt.cli.app import main
from symrmt.errors import ParameterError
from symrmt.models.attention.theory import ridge_limit


def test_sweep_matches_single_limits_and_converts():
    s = symrmt.sweep("tanh", {"c": [0.5, 2], "gamma": [0.5, 1], "snr": 1, "wk2": [0, 1]}, digits=12, progress=False)
    assert s.axes == ("c", "gamma", "wk2") and s.shape == (2, 2, 2)
    assert s.gamma[0, 1, 0] == 1.0 and s.values("c")[1, 0, 0] == 2.0
    for idx in [(0, 0, 0), (1, 1, 1)]:
        c, g, wk2 = (s.values(k)[idx] for k in ("c", "gamma", "wk2"))
        one = symrmt.limit("tanh", c, [g], symrmt.Geometry(snr=1, wk2=wk2), digits=12)
        assert s.attention[idx] == pytest.approx(one.attention[0], rel=1e-11)
        assert s.ridge[idx] == pytest.approx(one.ridge[0], rel=1e-11)
    long = s.to_pandas(long=True)
    assert list(long.columns) == ["c", "gamma", "wk2", "error", "value"] and len(long) == 16
    wide = s.to_pandas()
    assert len(wide) == 8 and {"attention", "ridge", "snr", "muwq"} <= set(wide.columns)
    ds = s.to_xarray()
    assert ds["attention"].dims == ("c", "gamma", "wk2")
    assert float(ds["ridge"].sel(c=2.0, gamma=1.0, wk2=0.0)) == pytest.approx(s.ridge[1, 1, 0])
    assert s.to_numpy().shape == (8, 10)
    assert "8 points over c x gamma x wk2" in str(s) and "tabular" in s.latex() and "<table>" in s._repr_html_()


def test_sweep_tied_keys_share_one_axis():
    s = symrmt.sweep("tanh", {"c": 0.5, "gamma": 1, "snr": 1, "wk2": 4, "wq2": 4, "wkwq": 4,
                              ("muwk", "muwq"): [0, 2]}, digits=10, progress=False)
    assert s.axes == ("muwk=muwq",) and s.shape == (2,)
    assert s.values("muwk").tolist() == s.values("muwq").tolist() == [0.0, 2.0]
    one = symrmt.limit("tanh", 0.5, [1], symrmt.Geometry(snr=1, wk2=4, wq2=4, wkwq=4, muwk=2, muwq=2), digits=10)
    assert s.attention[1] == pytest.approx(one.attention[0], rel=1e-9)
    assert list(s.to_pandas(long=True).columns) == ["muwk", "error", "value"]
    with pytest.raises(ParameterError, match="given twice"):
        symrmt.sweep("tanh", {"c": 1, "gamma": 1, ("muwk", "muwq"): [0], "muwq": [1]})


def test_sweep_rejects_bad_grids():
    with pytest.raises(ParameterError, match="unknown grid key"):
        symrmt.sweep("tanh", {"c": [1], "gamma": 1, "lambda": [1]})
    with pytest.raises(ParameterError, match="needs gamma"):
        symrmt.sweep("tanh", {"c": [1, 2]})
    with pytest.raises(ParameterError, match="not positive semi-definite"):
        symrmt.sweep("tanh", {"c": 1, "gamma": 1, "snr": 1, "muwk": [0, 2], "wk2": 1})
    with pytest.raises(ParameterError, match="only c and gamma"):
        symrmt.sweep("tanh", {"c": 1, "gamma": 1, "snr": [1, 2]}, geometry=symrmt.LowRankGeometry([[1]]))


def test_sweep_fast_hook_is_explicit():
    import importlib

    try:
        importlib.import_module("symrmt.models.attention.fast")
    except ImportError:
        with pytest.raises(ParameterError, match="symrmt.models.attention.fast"):
            symrmt.sweep("tanh", {"c": [0.5, 1], "gamma": 1}, fast=True)
    else:  # the vectorised solver is there: its floats must agree with the certified values
        grid = {"c": [0.5, 2], "gamma": [0.1, 1], "snr": 1}
        fast = symrmt.sweep("tanh", grid, fast=True)
        exact = symrmt.sweep("tanh", grid, digits=15)
        assert fast.digits is None and len(fast.fallback) == 4
        np.testing.assert_allclose(fast.attention, exact.attention, rtol=1e-8)
        np.testing.assert_allclose(fast.ridge, exact.ridge, rtol=1e-8)


@pytest.mark.slow  # certified crossings against brentq: seconds, outside the fast tier
def test_crossings_relu_in_c_agree_with_brentq():
    brentq = pytest.importorskip("scipy.optimize").brentq
    r = symrmt.crossings("relu", over="c", between=(0.1, 4), gamma=1, snr=1, digits=15, scan=10, progress=False)
    assert len(r) == 1 and r.directions == (1,)
    root = r.roots[0]

    def diff(c, digits=15):
        v = symrmt.limit("relu", c, [1], symrmt.Geometry(snr=1), digits=digits)
        return v.attention_mp[0] - v.ridge_mp[0]

    i = int(np.searchsorted([float(x) for x in r.scan_x], float(root)))
    ref = brentq(lambda c: float(diff(c)), float(r.scan_x[i - 1]), float(r.scan_x[i]), xtol=1e-15, rtol=1e-14)
    assert float(root) == pytest.approx(ref, rel=1e-11)
    # the certified bracket: E_A - E_RR changes sign across it (30-digit values) and it is as narrow as promised
    lo, hi = r.brackets[0]
    assert diff(lo, 30) < 0 < diff(hi, 30)
    assert hi - lo <= abs(root) * mpmath.mpf(10) ** -15
    assert r.to_pandas()["c"].iloc[0] == pytest.approx(float(root))
    assert mpmath.nstr(root, 15) in str(r)


def test_crossings_empty_says_the_sign_never_changes():
    r = symrmt.crossings("tanh", over="gamma", between=(0.01, 10), c=2, snr=1, digits=10, scan=6, progress=False)
    assert len(r) == 0 and list(r) == []
    assert "keeps its sign" in str(r) and "E_A > E_RR" in r.summary()
    assert r.to_numpy().shape == (0, 2)


def test_crossings_bad_input():
    with pytest.raises(ParameterError, match="needs a fixed gamma"):
        symrmt.crossings("relu", over="c", between=(0.1, 4))
    with pytest.raises(ParameterError, match="a < b"):
        symrmt.crossings("relu", over="c", between=(4, 0.1), gamma=1)
    with pytest.raises(ParameterError, match="over must be"):
        symrmt.crossings("relu", over="p", between=(1, 2), gamma=1, c=1)
    with pytest.raises(ParameterError, match="unknown parameter"):
        symrmt.crossings("relu", over="c", between=(1, 2), gamma=1, mu=1)


def test_cli_sweep_csv_and_json(capsys):
    rc = main(["sweep", "--f", "tanh", "--grid", "c=1/2,2", "--grid", "snr=0:2:3", "--gamma", "1", "--digits", "12"])
    out = capsys.readouterr().out
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 6 and rows[1]["snr"] == "1" and rows[3]["c"] == "2"
    ref = symrmt.sweep("tanh", {"c": ["1/2", 2], "snr": [0, 1, 2], "gamma": 1}, digits=12, progress=False)
    assert [float(r["attention"]) for r in rows] == pytest.approx(ref.attention.ravel().tolist(), rel=1e-11)
    rc = main(["sweep", "--f", "tanh", "--grid", "gamma=0.01:1:3:log", "--c", "1/2", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["grid"]["gamma"] == ["0.01", "0.1", "1"]
    assert {"columns", "rows", "grid", "params"} <= set(data) and len(data["rows"]) == 3
    assert main(["sweep", "--f", "tanh", "--grid", "snr=1,2", "--gamma", "1"]) == 2  # c missing: bad input
    assert main(["sweep", "--f", "tanh", "--grid", "c=1:2:x", "--gamma", "1"]) == 2


def test_cli_crossings_json(capsys):
    rc = main(["crossings", "--f", "relu", "--over", "c", "--between", "0.1,4", "--gamma", "1", "--snr", "1",
               "--digits", "12", "--scan", "8", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["found"] == 1 and data["directions"] == [1]
    lo, hi = (float(x) for x in data["brackets"][0])
    assert lo <= data["roots"][0] <= hi
    assert main(["crossings", "--f", "relu", "--over", "c", "--between", "0.1", "--gamma", "1"]) == 2


def cli(*args, timeout=300):
    """The completed ``python -m symrmt ARGS`` (the timeout only stops a hang: no test asserts a time)."""
    return subprocess.run([sys.executable, "-m", "symrmt", *args], capture_output=True, text=True, timeout=timeout)


def _cli_json(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out)


@pytest.fixture(scope="module")
def crossing30():
    return symrmt.crossings("tanh", over="c", between=(0.1, 1), gamma=1, geometry=symrmt.Geometry(snr=1),
                            digits=30, scan=6, progress=False)


@pytest.mark.slow
def test_crossings_relu_over_the_whole_gamma_range():
    from symrmt.models.attention.geometry import Geometry
    from symrmt.models.attention.theory import attention_limit

    p = cli("crossings", "--f", "relu", "--over", "gamma", "--between", "1e-12,1e20", "--c", "0.5", "--snr", "1",
                "--fast", "--json")
    assert p.returncode == 0, p.stderr
    roots = [mpmath.mpf(r) for r in json.loads(p.stdout)["roots"]]
    assert len(roots) == 1
    signs = []
    for x in (roots[0] * (1 - mpmath.mpf(10) ** -6), roots[0] * (1 + mpmath.mpf(10) ** -6)):
        a = attention_limit("relu", "1/2", [str(x)], Geometry(snr=1), digits=20)[0]
        r = ridge_limit("1/2", [str(x)], 1, 20)[0]
        signs.append(mpmath.sign(a - r))
    assert signs[0] == -signs[1] != 0


def test_crossing_root_carries_30_digits(crossing30):
    (root,) = crossing30.roots
    # the root prints every digit asked for, at the default mpmath precision
    assert mpmath.mp.dps == 15
    text = repr(root)
    assert text.startswith("mpf('0.") and len(text.split("'")[1]) - 2 >= 29, text
    assert str(root) == mpmath.nstr(root, 30)
    # E_A - E_RR at the root, evaluated independently at 45 digits, is ~1e-30 (a 53-bit root gives ~3e-18)
    lim = symrmt.limit("tanh", root, 1, symrmt.Geometry(snr=1), digits=45)
    gap = abs(lim.attention_mp[0] - lim.ridge_mp[0])
    assert gap < mpmath.mpf("1e-29"), gap
    lim53 = symrmt.limit("tanh", float(root), 1, symrmt.Geometry(snr=1), digits=45)
    assert abs(lim53.attention_mp[0] - lim53.ridge_mp[0]) > mpmath.mpf("1e-20")  # the test can fail


def test_crossing_root_digits_in_pandas_and_json(crossing30, capsys):
    df = crossing30.to_pandas()
    assert df["c"].dtype == np.float64
    (root,) = df["root"]  # every digit, as a decimal string (a typed column)
    assert str(df["root"].dtype) == "string" and root == mpmath.nstr(crossing30.roots[0], 30)
    assert mpmath.mpf(root) == +crossing30.roots[0] or abs(mpmath.mpf(root) - crossing30.roots[0]) < 1e-29
    rc, out = _cli_json(capsys, ["crossings", "--f", "tanh", "--over", "c", "--between", "0.1,1", "--gamma", "1",
                                 "--snr", "1", "--digits", "30", "--scan", "6", "--json"])
    assert rc == 0
    (text,) = out["roots"]
    assert text == str(crossing30.roots[0]) and len(text) >= 31


@pytest.mark.slow  # certified crossings: seconds, outside the fast tier
def test_crossings_over_tied_angles(capsys):
    fixed = dict(c=2, gamma=10, snr=1, wk2=4, wq2=4, wkwq=4)
    r = symrmt.crossings("tanh", over=("cos_muwk", "cos_muwq"), between=(0, 1), digits=20, scan=6, progress=False,
                         **fixed)
    assert r.over == "cos_muwk=cos_muwq" and len(r) == 1
    x = r.roots[0]
    # independently: the limits at w_K = w_Q with both cosines x, E_A = E_RR there and the sign changes
    def diff(cos):
        geo = symrmt.Geometry.from_angles(snr=1, wk2=4, wq2=4, cos_muwk=cos, cos_muwq=cos, wkwq=4)
        lim = symrmt.limit("tanh", 2, 10, geo, digits=30)
        return lim.attention_mp[0] - lim.ridge_mp[0]

    assert abs(diff(x)) < mpmath.mpf("1e-19")
    assert diff(x - mpmath.mpf("1e-3")) > 0 > diff(x + mpmath.mpf("1e-3"))  # direction -1: E_A < E_RR above
    assert r.directions == (-1,)
    for over in ("cos_muwk=cos_muwq", "cos_muwk,cos_muwq"):
        rc, out = _cli_json(capsys, ["crossings", "--f", "tanh", "--over", over, "--between", "0,1", "--c", "2",
                                     "--gamma", "10", "--snr", "1", "--wk2", "4", "--wq2", "4", "--wkwq", "4",
                                     "--digits", "20", "--scan", "6", "--json"])
        assert rc == 0 and out["roots"] == [str(x)]
    with pytest.raises(symrmt.ParameterError, match="do not also fix"):
        symrmt.crossings("tanh", over=("cos_muwk", "cos_muwq"), between=(0, 1), cos_muwk=0.5, **fixed)


def test_sweep_caption_without_fixed_values_has_no_stray_separator():
    import symrmt

    sw = symrmt.sweep("linear", grid={"gamma": ["1"], "c": ["1/2"]})
    caption = str(sw).splitlines()[0]
    assert ", ;" not in caption and caption.startswith("sweep: f = ")


def test_sweep_takes_grid_entries_as_keywords():
    """symrmt.sweep takes c=, snr=, gamma= as keywords, as limit() and crossings() do: the same points as the grid dict, and clear refusals."""
    import pytest

    import symrmt
    from symrmt.errors import ParameterError

    by_dict = symrmt.sweep("erf", {"c": "1/2", "gamma": [1, 2], "snr": 1}, digits=20)
    by_kw = symrmt.sweep("erf", c="1/2", gamma=[1, 2], snr=1, digits=20)
    mixed = symrmt.sweep("erf", {"gamma": [1, 2]}, c="1/2", snr=1, digits=20)
    assert list(by_kw.attention) == list(by_dict.attention) == list(mixed.attention)
    assert list(by_kw.ridge) == list(by_dict.ridge)
    # the ridge column is the closed form E_RR, independent of the sweep's own path
    ref = symrmt.limit("erf", "1/2", [1, 2], snr=1, digits=20)
    assert [float(x) for x in by_kw.ridge] == [float(x) for x in ref.ridge]
    with pytest.raises(ParameterError, match="given twice"):
        symrmt.sweep("erf", {"c": "1/2", "gamma": [1]}, c="1/2")
    with pytest.raises(ParameterError, match="unknown keyword 'snrr'"):
        symrmt.sweep("erf", {"c": "1/2", "gamma": [1]}, snrr=1)
