"""Every value written as the number it is, messages that say what happened, and trace-sweep's
error estimate and partial output.

References are independent of the code under test: the Marchenko-Pastur closed form of
``tau((Z^T Z/n - z)^{-1})`` (``p = c n``) evaluated in mpmath at 40 digits, and, for the error
estimate, the same closed form against the float64 batched values.
"""

import csv
import io
import json
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from symrmt.cli.app import main
from symrmt.cli.common import dump, num
from symrmt.cli.trace import build_model

MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"
DECL = ["--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n"]


def stieltjes(z, c):
    """``m(z) = tau((Z^T Z/n - z)^{-1})`` with ``p = c n`` (an atom of mass ``1 - c`` at 0 when ``c < 1``): the
    root of ``z m^2 + (z + 1 - c) m + 1 = 0`` with ``Im m > 0`` for ``Im z > 0``, ``m > 0`` for ``z < 0``."""
    with mpmath.workdps(60):
        z, c = mpmath.mpmathify(z), mpmath.mpmathify(c)
        b = z + 1 - c
        roots = [(-b + s * mpmath.sqrt(b * b - 4 * z)) / (2 * z) for s in (1, -1)]
        if mpmath.im(z) != 0:
            return +next(r for r in roots if mpmath.im(r) * mpmath.im(z) > 0)
        return +next(r for r in roots if mpmath.re(r) > 0)


def mp_value(gamma, c):
    """``tau((Z^T Z/n + gamma)^{-1})`` = ``m(-gamma)``: the positive root of ``gamma t^2 + (gamma + c - 1) t - 1``
    in the cancellation-free form (any gamma > 0, 1e-400 to 1e400)."""
    with mpmath.workdps(60):
        g, c = mpmath.mpf(gamma), mpmath.mpf(c)
        b = g + (c - 1)
        sq = mpmath.sqrt(b * b + 4 * g)
        return +(2 / (b + sq) if b > 0 else (sq - b) / (2 * g))


def rel(a, b):
    with mpmath.workdps(40):
        if isinstance(b, Fraction):
            b = mpmath.mpf(b.numerator) / b.denominator
        return abs(mpmath.mpmathify(a) - b) / abs(b)


def run(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


# ----------------------------------------------------------------- trace-sweep: values outside float64

def test_trace_sweep_tiny_value_is_not_zero(capsys):
    code, out, err = run(capsys, ["trace-sweep", MP + "*1e-400", *DECL, "--grid", "gamma=1,2", "--at", "c=1/2"])
    assert code == 0, err
    rows = csv_rows(out)
    for row, g in zip(rows, (1, 2)):
        assert row["value"] != "0.0" and "e-401" in row["value"]
        assert rel(mpmath.mpf(row["value"]), mp_value(g, "0.5") * mpmath.mpf("1e-400")) < 1e-14


@pytest.mark.parametrize("k", ["1e-320", "3e-322", "1e-400", "1e400"])
def test_trace_sweep_subnormal_and_huge_factors_keep_their_digits(capsys, k):
    code, out, err = run(capsys, ["trace-sweep", MP + "*k", *DECL, "--grid", f"k={k},1", "--at", "c=1/2, gamma=1",
                                  "--json"])
    assert code == 0, err
    d = json.loads(out)
    (label, value, fallback, estimate, error), (_, one, *_rest) = d["rows"]
    assert label == k and isinstance(value, str) and error is None
    exact = mp_value(1, "0.5")
    with mpmath.workdps(40):
        assert rel(mpmath.mpf(value), exact * mpmath.mpf(k)) < 1e-14
    assert isinstance(one, float) and rel(one, exact) < 1e-15


def test_trace_sweep_huge_constant_is_not_an_overflow(capsys):
    code, out, err = run(capsys, ["trace-sweep", MP + "*1e400", *DECL, "--grid", "gamma=1,2", "--at", "c=1/2"])
    assert code == 0, err
    for row, g in zip(csv_rows(out), (1, 2)):
        assert rel(mpmath.mpf(row["value"]), mp_value(g, "0.5") * mpmath.mpf("1e400")) < 1e-14


def test_trace_sweep_grid_value_beyond_float_range_is_shown_as_typed(capsys):
    code, out, err = run(capsys, ["trace-sweep", MP, *DECL, "--grid", "gamma=1e400", "--at", "c=1/2"])
    assert code == 0, err
    (row,) = csv_rows(out)
    assert row["gamma"] == "1e400" and rel(mpmath.mpf(row["value"]), mp_value("1e400", "0.5")) < 1e-14


def test_model_sweep_keeps_out_of_range_values_as_numbers():
    m = build_model(["p=c*n"], ["Z=gaussian(p,n)"])
    r = m.sweep(MP + "*k", grid={"k": ["1e-400", "1e-320", 2]}, at={"c": "1/2", "gamma": 1})
    assert r.values.dtype == object  # never a float 0.0 or a subnormal
    exact = mp_value(1, "0.5")
    assert rel(r.values[0], exact * mpmath.mpf("1e-400")) < 1e-14
    assert rel(r.values[1], exact * mpmath.mpf("1e-320")) < 1e-14
    assert float(r.values[2]) == pytest.approx(2 * float(exact), rel=1e-15)
    assert list(r.to_pandas()["error"]) == ["", "", ""]
    assert rel(r.grid["k"][0], Fraction(1, 10**400)) < 1e-25  # the axis holds the value, not 0.0 or inf


# ----------------------------------------------------------------- error_estimate near c = 1

def test_error_estimate_bounds_the_actual_error_near_c_1():
    cs = ["1.001", "0.999", "1.0001", "1.00001", "1.01"]
    gs = ["1e-8", "1e-6", "1e-5", "1e-4"]
    r = build_model(["p=c*n"], ["Z=gaussian(p,n)"]).sweep(MP, grid={"c": cs, "gamma": gs})
    checked = 0
    for i, c in enumerate(cs):
        for j, g in enumerate(gs):
            if r.fallback[i, j]:
                continue
            actual = rel(float(r.values[i, j]), mp_value(g, c))
            assert actual <= r.error_estimate[i, j], (c, g, actual, r.error_estimate[i, j])
            checked += 1
    assert checked >= 15  # the batched path took them (the test compares its estimate)


# ----------------------------------------------------------------- trace-sweep: a failing point

@pytest.mark.slow  # seconds per call: outside the fast tier
def test_trace_sweep_marks_a_failing_point_and_goes_on(capsys):
    # gamma = -1 at c = 1: z = 1 is inside the spectrum [0, 4]; gamma = 1 is fine
    code, out, err = run(capsys, ["trace-sweep", MP, *DECL, "--grid", "gamma=-1,1", "--at", "c=1"])
    assert code == 0 and "1 of 2 points could not be computed" in err
    bad, good = csv_rows(out)
    assert bad["gamma"] == "-1" and bad["value"] == "" and "ConvergenceError" in bad["error"]
    assert good["error"] == "" and rel(float(good["value"]), mp_value(1, 1)) < 1e-15
    code, out, err = run(capsys, ["trace-sweep", MP, *DECL, "--grid", "gamma=-1,1", "--at", "c=1", "--json"])
    d = json.loads(out)
    assert code == 0 and d["failed"] == 1 and d["rows"][0][1] is None and d["rows"][0][4]


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_trace_sweep_exits_3_only_when_every_point_fails(capsys):
    code, out, err = run(capsys, ["trace-sweep", MP, *DECL, "--grid", "gamma=-1,-2", "--at", "c=1"])
    assert code == 3
    rows = csv_rows(out)
    assert len(rows) == 2 and all(r["error"] for r in rows)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_model_sweep_on_error_mark():
    m = build_model(["p=c*n"], ["Z=gaussian(p,n)"])
    r = m.sweep(MP, grid={"gamma": [-1, 1]}, at={"c": 1}, on_error="mark")
    assert r.failed.tolist() == [True, False] and np.isnan(r.values[0]) and 0 in r.errors
    assert r.values[1] == pytest.approx(float(mp_value(1, 1)), rel=1e-15)


# ----------------------------------------------------------------- output other tools read

def test_sweep_csv_parameters_are_decimals(capsys):
    pd = pytest.importorskip("pandas")
    code, out, _ = run(capsys, ["sweep", "--f", "tanh", "--grid", "c=1/3,1/2", "--gamma", "1/7"])
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert df["c"].dtype == np.float64 and df["gamma"].dtype == np.float64
    assert df["c"][0] == pytest.approx(1 / 3, rel=1e-14) and df["gamma"][0] == pytest.approx(1 / 7, rel=1e-14)
    code, out, _ = run(capsys, ["sweep", "--f", "tanh", "--grid", "c=1/3", "--gamma", "1", "--digits", "20"])
    (row,) = csv_rows(out)
    assert row["c"] == "0.33333333333333333333"  # the full precision, as a decimal string


def test_trace_echoes_values_as_typed(capsys):
    code, out, _ = run(capsys, ["trace", MP, *DECL, "--at", "c=0.5, gamma=1e-12", "--json"])
    d = json.loads(out)
    assert code == 0 and d["at"] == {"c": "0.5", "gamma": "1e-12"}
    assert rel(d["value"], mp_value("1e-12", "0.5")) < 1e-14


def test_attention_limit_carries_the_digits_asked():
    from symrmt.models.attention.theory import attention_limit, ridge_limit

    (a,) = attention_limit("tanh", "1/2", [1], digits=20)
    assert repr(a) == f"mpf('{mpmath.nstr(a, 20)}')" and len(mpmath.nstr(a, 20).strip("0.")) >= 19
    (r,) = ridge_limit("1/2", [1], digits=25)
    assert str(r) == mpmath.nstr(r, 25) and repr(r) == f"mpf('{mpmath.nstr(r, 25)}')"
    # the digits shown are the limit's: E_RR = -gamma^2 dt/dgamma at mu = 0, t = tau((Z^T Z/n + gamma)^-1)
    # (t solves gamma t^2 + (gamma + c - 1) t - 1 = 0, so dt/dgamma = -(t^2 + t)/(2 gamma t + gamma + c - 1))
    with mpmath.workdps(50):
        t, g, c = mp_value(1, "0.5"), mpmath.mpf(1), mpmath.mpf("0.5")
        ref = g**2 * (t * t + t) / (2 * g * t + g + c - 1)
        assert abs(mpmath.mpf(str(r)) - ref) <= mpmath.mpf(10) ** -24 * abs(ref)


def test_crossings_to_pandas_has_typed_columns():
    pytest.importorskip("pandas")
    import symrmt

    found = symrmt.crossings("relu", over="c", between=("0.1", "8"), gamma=1, snr=1, scan=8).to_pandas()
    none = symrmt.crossings("relu", over="c", between=("0.1", "0.2"), gamma=1, scan=4).to_pandas()
    assert len(found) >= 1 and len(none) == 0
    for df in (found, none):
        assert [str(t) for t in df.dtypes] == ["float64", "string", "int64", "float64", "float64"]
    assert float(found["root"][0]) == pytest.approx(found["c"][0], rel=1e-15)


# ----------------------------------------------------------------- inputs beyond the float range

def test_complex_value_with_a_tiny_imaginary_part(capsys):
    code, out, err = run(capsys, ["trace", "trace(inv(Z.T*Z/n - z*I(n)))", *DECL, "--at", "c=1/2, z=1+1e-400j",
                                  "--json", "--digits", "20"])
    assert code == 0, err
    d = json.loads(out)
    m = stieltjes(mpmath.mpc(1, mpmath.mpf("1e-400")), "0.5")
    with mpmath.workdps(40):
        got = mpmath.mpc(mpmath.mpf(str(d["value"]["re"])), mpmath.mpf(str(d["value"]["im"])))
    assert rel(got, m) < 1e-19
    model = build_model(["p=c*n"], ["Z=gaussian(p,n)"])
    v = model.limit("trace(inv(Z.T*Z/n - z*I(n)))", at={"c": "1/2", "z": "1-1e-400j"}).value
    assert rel(v, mpmath.conj(m)) < 1e-14


def test_complex_value_beyond_the_float_range_is_refused(capsys):
    code, out, err = run(capsys, ["trace", "trace(inv(Z.T*Z/n - z*I(n)))", *DECL, "--at", "c=1/2, z=1+1e400j"])
    assert code == 2 and "1e300" in err and "Traceback" not in err


@pytest.mark.parametrize("flags, says", [(["--c", "1/2", "--gamma", "1e400"], "float64 range"),
                                         (["--c", "1/2", "--gamma", "1", "--snr", "1e400"], "float64 range"),
                                         (["--c", "1e400", "--gamma", "1"], "p=1.60e+401")])
def test_simulate_values_beyond_the_float_range_are_refused(capsys, flags, says):
    code, _, err = run(capsys, ["simulate", "--f", "tanh", *flags, "--n", "16", "--trials", "2"])
    assert code == 2 and says in err and "OverflowError" not in err


def test_density_grid_point_below_the_float_range_is_refused(capsys):
    code, _, err = run(capsys, ["density", "Z.T*Z/n", *DECL, "--at", "c=1/2", "--over", "x=1e-400:1:3"])
    assert code == 2 and "1e-400 is not 0" in err


# ----------------------------------------------------------------- --plot checked before the work

@pytest.mark.parametrize("path, says", [("out.txt", "cannot write a .txt figure"),
                                        ("/missing/dir/x.png", "does not exist"),
                                        (".", "is a folder")])
def test_density_plot_path_checked_before_computing(capsys, monkeypatch, path, says):
    pytest.importorskip("matplotlib")
    from symrmt.engine import Model

    def never(*a, **k):
        raise AssertionError("the density was computed before the --plot path was checked")

    monkeypatch.setattr(Model, "density", never)
    code, _, err = run(capsys, ["density", "Z.T*Z/n", *DECL, "--at", "c=1/2", "--over", "x=0:3:3", "--plot", path])
    assert code == 2 and says in err


def test_density_plot_prints_the_file_written(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "rho"
    code, out, _ = run(capsys, ["density", "Z.T*Z/n", *DECL, "--at", "c=1/2", "--over", "x=0:3:3", "--plot",
                                str(target)])
    assert code == 0 and f"figure: {target}.png" in out and (tmp_path / "rho.png").exists()


# ----------------------------------------------------------------- messages that say what happened

def test_kernel_in_let_is_named_as_a_declaration(capsys):
    code, _, err = run(capsys, ["trace", "trace(inv(A + gamma*I(n)))", *DECL, "--let", "A=kernel(tanh, Z)",
                                "--at", "c=1/2, gamma=1"])
    assert code == 2 and "--matrix 'A=kernel(tanh, Z)'" in err and "unknown name" not in err


def test_complex_scalar_in_front_of_a_symmetric_product():
    m = build_model(["p=c*n"], ["Z=gaussian(p,n)"])
    w = mpmath.mpc(1, 1)
    a = m.limit("trace(inv(I(n) + w*Z.T*Z/n))", at={"c": "1/2", "w": "1+1j"}).value
    b = m.limit("trace(inv(I(n) + Z.T*Z*w/n))", at={"c": "1/2", "w": "1+1j"}).value
    # tau((I + w W)^{-1}) = m(-1/w)/w
    ref = stieltjes(-1 / w, "0.5") / w
    assert rel(a, ref) < 1e-14 and rel(b, ref) < 1e-14


def test_huge_inner_product_is_computed():
    m = build_model(["p=c*n"], ["Z=gaussian(p,n)"], ["v=vector(n)"])
    for vv in ("1e300", "1e400"):
        v = m.limit("v.T*inv(Z.T*Z/n + gamma*I(n))*v", at={"c": "1/2", "gamma": 1, "v.v": vv}).value
        assert rel(v, mpmath.mpf(vv) * mp_value(1, "0.5")) < 1e-14


def test_split_quadratic_form_refused_for_its_real_reason(capsys):
    code, _, err = run(capsys, ["trace", "y.T*(Z.T*b*b.T*Z)*y/n", *DECL, "--vector", "b=vector(p)",
                                "--vector", "y=signs(n)", "--at", "c=1/2, b.b=1"])
    assert code == 2 and "chi-square" in err and "grows like" not in err


@pytest.mark.parametrize("scale", ["1e-400", "1e400"])
def test_hermite_values_beyond_the_float_range_are_written_as_they_are(capsys, scale):
    # a_1 of c*tanh is c times a_1 of tanh (a linear functional of f)
    code, out, _ = run(capsys, ["hermite", "--f", f"tanh(t)*{scale}", "--json"])
    d = json.loads(out)
    code1, out1, _ = run(capsys, ["hermite", "--f", "tanh", "--json", "--digits", "15"])
    base = json.loads(out1)["a1"]
    assert code == code1 == 0 and isinstance(d["a1"], str)
    assert rel(mpmath.mpf(d["a1"]), mpmath.mpf(base) * mpmath.mpf(scale)) < 1e-14


def test_trace_sweep_csv_is_read_as_numbers(capsys):
    pd = pytest.importorskip("pandas")
    code, out, err = run(capsys, ["trace-sweep", MP, *DECL, "--grid", "gamma=1/3,2", "--grid", "c=1/2,sqrt(2)"])
    assert code == 0, err
    df = pd.read_csv(io.StringIO(out))
    assert df["gamma"].dtype == df["c"].dtype == df["value"].dtype == np.float64
    row = df.iloc[1]  # gamma = 1/3, c = sqrt(2)
    assert row["gamma"] == pytest.approx(1 / 3, rel=1e-14) and row["c"] == pytest.approx(2**0.5, rel=1e-14)
    assert rel(row["value"], mp_value(mpmath.mpf(1) / 3, mpmath.sqrt(2))) < 1e-14


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _trace(capsys, expr, matrices, at, dims=("p=c*n",), extra=()):
    argv = ["trace", expr, "--at", at, *extra]
    for m in matrices:
        argv += ["--matrix", m]
    for d in dims:
        argv += ["--dim", d]
    return _run(capsys, argv)


def _cli_json(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out)


def test_json_writer_is_strict(capsys):
    with pytest.raises(ArithmeticError, match="not finite"):
        dump({"x": float("inf")})


def test_one_digit_rounds_in_decimal(capsys):
    # 3.108... at one significant digit is 3 (a binary rounding to one digit first gave 3.09375)
    code, out, err = _trace(capsys, MP, ["Z=gaussian(p,n)"], "c=1/2, gamma=1/5", extra=["--digits", "1", "--json"])
    assert code == 0, err
    assert json.loads(out)["value"] == 3.0
    code, out, err = _trace(capsys, MP, ["Z=gaussian(p,n)"], "c=1/2, gamma=1/5", extra=["--digits", "2"])
    assert "limit (2 digits): 3.1" in out


@pytest.mark.parametrize("x, digits, want", [
    ("3.1084952830141509", 1, 3.0), ("3.49", 1, 3.0), ("0.0349", 2, 0.035), ("0", 15, 0.0),
    ("1e-400", 15, "1.0e-400"), ("-2.5e400", 15, "-2.5e+400"), ("1e-310", 15, "1.0e-310"),
    ("0.1", 15, 0.1), ("123456.7", 3, 123000.0),
])
def test_num_rounds_in_decimal_and_never_writes_another_number(x, digits, want):
    with mpmath.workdps(50):
        got = num(mpmath.mpf(x), digits)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("x", ["nan", "inf", "-inf"])
def test_num_refuses_a_value_that_is_not_finite(x):
    with pytest.raises(ArithmeticError):
        num(mpmath.mpf(x), 15)


@pytest.mark.parametrize("expr, matrices, at, want", [
    ("gamma", [], "gamma=1e-400", "1.0e-400"),
    (MP, ["Z=gaussian(p,n)"], "c=1/2, gamma=1e400", "1.0e-400"),  # tau = 1/gamma - c/gamma^2 + ...
])
def test_values_outside_the_float_range_are_decimal_strings(capsys, expr, matrices, at, want):
    code, out, err = _trace(capsys, expr, matrices, at, extra=["--json"])
    assert code == 0, err
    assert json.loads(out)["value"] == want


def test_sweep_json_numbers_outside_the_float_range_are_strings():
    from symrmt.cli.sweeps import json_number

    with mpmath.workdps(30):
        assert json_number(mpmath.mpf("1e-400"), 12) == "1.0e-400"
        assert json_number(mpmath.mpf("2e400"), 12) == "2.0e+400"
        assert json_number(mpmath.mpf("0.25"), 12) == 0.25
    assert json_number(0.5, 30) == 0.5


def test_cli_params_print_decimals_unless_exact(capsys):
    base = ["limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--snr", "2", "--wk2", "1", "--wq2", "1",
            "--cos-muwk", "0.3", "--json"]
    rc, out = _cli_json(capsys, base)
    assert rc == 0 and out["params"]["geometry"]["muwk"] == "0.424264068711929"
    rc, out = _cli_json(capsys, base + ["--exact-params"])
    assert rc == 0 and len(out["params"]["geometry"]["muwk"]) > 1000
    rc = main(["sweep", "--f", "tanh", "--grid", "cos_muwk=0.3,0.5", "--c", "0.5", "--gamma", "1", "--snr", "2",
               "--wk2", "1", "--wq2", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0 and max(len(line) for line in lines) < 200 and lines[1].split(",")[6] == "0.424264068711929"


def test_a_non_finite_value_is_never_written_as_json(capsys):
    """``NaN`` and ``inf`` are not JSON: the one writer refuses them with the package's error (exit 3)."""
    from symrmt.errors import SolverError

    for bad in (float("nan"), float("inf")):
        with pytest.raises(SolverError, match="not finite and cannot be written as JSON"):
            dump({"value": bad})
    assert capsys.readouterr().out == ""


def test_a_non_finite_number_has_no_value():
    from symrmt.errors import SolverError

    with pytest.raises(SolverError, match="a result is nan, not a finite real number"):
        num(mpmath.mpf("nan"), 15)
