"""The non-normal guard on every route, and the radius of a proved ball below the real axis.

References, none from the engine:

- Ginibre ``X = Z/sqrt(n)`` (square, real): its Brown measure is uniform on the unit disk, so
  ``tau((gamma + X)^{-1}) = conj(gamma)`` for ``|gamma| <= 1`` and ``1/gamma`` outside (for real ``gamma``:
  ``gamma`` inside, ``1/gamma`` outside).  The analytic continuation of the outside branch, ``1/gamma``, is
  the wrong value inside (``2`` at ``gamma = 1/2``).
- The product ``Z Y/n`` of two independent Ginibres: ``tau((gamma + ZY/n)^{-1}) = 1`` for ``0 < gamma < 1``
  (Burda, Janik and Waclaw 2010: ``mu(|w| <= r) = r`` on the unit disk).
- ``y^T y/n = 1`` for a sign vector; ``u^T u = u.u`` for a deterministic vector; ``y^T M y/n -> tau(M)`` for a
  sign vector independent of a symmetric ``M``; Marchenko--Pastur at ratio 1: ``tau((X^T X/n + g)^{-1}) =
  (sqrt(g^2 + 4 g) - g)/(2 g)``, ``(sqrt(5) - 1)/2`` at ``g = 1``.
- Inside the disk ``(gamma + X)^{-1}`` has a norm of order ``n`` (the smallest singular value of
  ``gamma + X`` is of order ``1/n``), so ``y^T (gamma + X)^{-1} y/n`` has a spread over draws of order 1 that
  does not shrink with ``n``: it has no deterministic limit, and the engine must refuse it (exit 3) rather
  than print the continuation's ``1/gamma``.
- Marchenko--Pastur at ratio ``c = 1/2`` (``Z`` of size ``n/2 x n``), ``tau((Z^T Z/n - z)^{-1})`` for complex
  ``z``: the conjugate of the value at ``conj(z)`` (real coefficients); the ball's radius must meet the
  digits asked in both half-planes.
"""

import json
from fractions import Fraction

import mpmath
import pytest

from symrmt.cli.app import main
from symrmt.engine import Model
from symrmt.engine.solve.hermitized import NonNormalError

F = Fraction
R = "inv(Z/sqrt(n) + gamma*I(n))"
TRACE_PLUS_SIGNS = f"trace({R}) + y.T*y/n"
TRACE_PLUS_DET = f"trace({R}) + u.T*u"
FORM = f"y.T*{R}*y/n"
GINIBRE = ["--matrix", "Z=gaussian(n,n)"]
SIGNS = ["--vector", "y=signs(n)"]
DET = ["--vector", "u=vector(n)"]


def brown(gamma):
    """``tau((gamma + Z/sqrt(n))^{-1})`` for real ``gamma`` (the Brown measure of Ginibre)."""
    return gamma if abs(gamma) <= 1 else 1 / gamma


def model(vector="signs"):
    m = Model()
    m.gaussian("Z", "n", "n")
    if vector == "signs":
        m.signs("y", "n")
    else:
        m.vector("u", "n")
    return m


def close(value, truth, digits=14):
    with mpmath.workdps(40):
        t = mpmath.mpf(truth.numerator) / truth.denominator
        assert abs(mpmath.mpf(value) - t) <= mpmath.mpf(10) ** (-digits) * max(1, abs(t)), (value, truth)


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------- a trace next to a quadratic form

@pytest.mark.parametrize("gamma", [F(1, 2), F(-3, 4), F(1, 10), F(4), F(-5, 4)])
def test_trace_plus_form_model_limit(gamma):
    r = model().limit(TRACE_PLUS_SIGNS, at={"gamma": gamma}, digits=25)
    close(r.value, brown(gamma) + 1, 24)
    if abs(gamma) < 1:
        assert list(r.hermitized) == [0]


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_trace_plus_deterministic_form_model_limit_and_prove():
    r = model("det").limit(TRACE_PLUS_DET, at={"gamma": F(1, 2), "u.u": 1}, digits=20, prove=True)
    close(r.value, F(3, 2), 19)
    assert r.ball.contains(1.5) and not r.ball.contains(3)
    assert r.ball.rad() <= 1e-20 * 1.5
    r = model("det").limit(TRACE_PLUS_DET, at={"gamma": F(1, 2), "u.u": F(5, 2)}, digits=20)
    close(r.value, F(1, 2) + F(5, 2), 19)


def test_trace_plus_form_cli(capsys):
    code, out, _ = run(["trace", TRACE_PLUS_SIGNS, *GINIBRE, *SIGNS, "--at", "gamma=1/2", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    close(data["value"], F(3, 2))
    assert data["hermitized"] == [1]
    code, out, _ = run(["trace", TRACE_PLUS_SIGNS, *GINIBRE, *SIGNS, "--at", "gamma=1/2"], capsys)
    assert code == 0 and "1.5" in out and "3.0" not in out and "Hermitization" in out


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_trace_plus_form_cli_prove(capsys):
    code, out, _ = run(["trace", TRACE_PLUS_DET, *GINIBRE, *DET, "--at", "gamma=1/2, u.u=1", "--prove", "--json"],
                       capsys)
    assert code == 0
    data = json.loads(out)
    close(data["value"], F(3, 2))
    ball = data["proved"]
    assert abs(float(ball["mid"]) - 1.5) <= float(ball["rad"]) + 1e-15
    code, out, _ = run(["trace", TRACE_PLUS_DET, *GINIBRE, *DET, "--at", "gamma=1/2, u.u=1", "--prove"], capsys)
    assert code == 0 and "3.000" not in out and "1.500" in out


def test_derivative_next_to_a_form():
    # d/dgamma tau((gamma + X)^{-1}) = 1 inside the disk (the value is gamma), -1/gamma^2 outside
    m = model()
    e = f"diff(trace({R}), gamma) + y.T*y/n"
    close(m.limit(e, at={"gamma": F(1, 2)}, digits=20).value, F(2), 19)
    close(m.limit(e, at={"gamma": F(2)}, digits=20).value, F(3, 4), 19)


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_other_matrices_next_to_a_form():
    m = Model()
    for name in ("Z", "Y", "X"):
        m.gaussian(name, "n", "n")
    m.signs("y", "n")
    e = "trace(inv(Z*Y/n + gamma*I(n))) + y.T*inv(X.T*X/n + I(n))*y/n"
    r = m.limit(e, at={"gamma": F(1, 2)}, digits=20)
    with mpmath.workdps(30):
        assert abs(r.value - (1 + (mpmath.sqrt(5) - 1) / 2)) < mpmath.mpf(10) ** -19


# ---------------------------------------------------------------- a quadratic form of a non-normal inverse

def test_form_of_a_non_normal_resolvent_model_limit():
    m = model()
    with pytest.raises(NonNormalError, match="no deterministic limit"):
        m.limit(FORM, at={"gamma": F(1, 2)})
    with pytest.raises(NonNormalError):
        m.limit(FORM, at={"gamma": F(1, 2)}, prove=True)
    close(m.limit(FORM, at={"gamma": F(2)}, digits=20).value, F(1, 2), 19)  # outside: tau = 1/gamma
    close(m.limit(FORM, at={"gamma": F(-4)}, digits=20).value, F(-1, 4), 19)


def test_form_of_a_non_normal_resolvent_cli(capsys):
    for extra in ([], ["--prove"], ["--json"]):
        code, out, err = run(["trace", FORM, *GINIBRE, *SIGNS, "--at", "gamma=1/2", *extra], capsys)
        assert code == 3 and "2.0" not in out and "non-normal" in err and "Traceback" not in err
    code, out, _ = run(["trace", FORM, *GINIBRE, *SIGNS, "--at", "gamma=2", "--prove", "--json"], capsys)
    assert code == 0
    close(json.loads(out)["value"], F(1, 2))


def test_trace_with_a_finite_rank_part_inside_a_non_normal_inverse():
    m = model("det")
    e = "trace(inv(Z/sqrt(n) + gamma*I(n) + u*u.T))"
    with pytest.raises(NonNormalError, match="finite-rank part"):
        m.limit(e, at={"gamma": F(1, 2), "u.u": 1})
    close(m.limit(e, at={"gamma": F(2), "u.u": 1}, digits=20).value, F(1, 2), 19)  # the bulk, outside


# ---------------------------------------------------------------- sweeps

def test_model_sweep():
    gammas = [F(1, 2), F(-3, 4), F(4)]
    r = model().sweep(TRACE_PLUS_SIGNS, grid={"gamma": gammas})
    for v, g in zip(r.values, gammas):
        assert abs(v - float(brown(g) + 1)) < 1e-12
    with pytest.raises(NonNormalError):
        model().sweep(FORM, grid={"gamma": [F(1, 2), F(2)]})


def test_cli_trace_sweep(capsys):
    code, out, _ = run(["trace-sweep", TRACE_PLUS_SIGNS, *GINIBRE, *SIGNS, "--grid", "gamma=1/2,-3/4,4"], capsys)
    assert code == 0
    rows = [line.split(",") for line in out.strip().splitlines()[1:]]
    got = {r[0]: float(r[1]) for r in rows}
    got = {float(k): v for k, v in got.items()}  # the axis as a decimal (0.5 for 1/2)
    assert abs(got[0.5] - 1.5) < 1e-12 and abs(got[-0.75] - 0.25) < 1e-12 and abs(got[4.0] - 1.25) < 1e-12
    # the point inside the disk is marked (its reason in the error column), the sweep goes on: exit 0
    code, out, err = run(["trace-sweep", FORM, *GINIBRE, *SIGNS, "--grid", "gamma=1/2,2"], capsys)
    assert code == 0 and "non-normal" in err and "Traceback" not in err
    rows = {r.split(",")[0]: r for r in out.strip().splitlines()[1:]}
    assert rows["0.5"].startswith("0.5,,") and "NonNormalError" in rows["0.5"]
    assert abs(float(rows["2"].split(",")[1]) - 0.5) < 1e-12
    # every point inside: exit 3
    code, out, err = run(["trace-sweep", FORM, *GINIBRE, *SIGNS, "--grid", "gamma=1/2,1/4"], capsys)
    assert code == 3 and "non-normal" in err


# ---------------------------------------------------------------- the radius of a proved ball below the real axis

MP = "trace(inv(Z.T*Z/n - z*I(n)))"


@pytest.mark.parametrize("z, digits", [("1-1j", 30), ("3-1/10j", 40), ("1+1j", 30)])
def test_complex_prove_radius_in_both_half_planes(z, digits):
    m = Model()
    m.dim("p", "n/2")
    m.gaussian("Z", "p", "n")
    r = m.limit(MP, at={"z": z}, digits=digits, prove=True)
    conj = m.limit(MP, at={"z": z.replace("-", "+") if "-" in z else z.replace("+", "-")}, digits=digits, prove=True)
    ball = r.ball
    tol = mpmath.mpf(10) ** -digits
    with mpmath.workdps(digits + 20):
        mod = abs(mpmath.mpc(float(ball.real.mid()), float(ball.imag.mid())))
        assert mpmath.mpf(ball.real.rad()) <= tol * mod and mpmath.mpf(ball.imag.rad()) <= tol * mod
    assert ball.real.overlaps(conj.ball.real) and ball.imag.overlaps(-conj.ball.imag)
    assert (float(ball.imag.mid()) < 0) == ("-" in z)  # Im tau has the sign of Im z


def test_complex_prove_radius_cli(capsys):
    code, out, _ = run(["trace", MP, "--matrix", "Z=gaussian(p,n)", "--dim", "p=n/2", "--at", "z=1-1j", "--prove",
                        "--digits", "30", "--json"], capsys)
    assert code == 0
    proved = json.loads(out)["proved"]
    mod = abs(complex(float(proved["re"]["mid"]), float(proved["im"]["mid"])))
    assert float(proved["im"]["mid"]) < 0
    for part in ("re", "im"):
        assert float(proved[part]["rad"]) <= 1e-30 * mod


# ---------------------------------------------------------------- the other checks every route passes

@pytest.mark.parametrize("expr, at, what", [
    ("trace(inv(Z.T*Z/n + sqrt(gamma)*I(n))) + y.T*y/n", "gamma=-1", "not real"),
    ("y.T*inv(Z.T*Z/n + sqrt(gamma)*I(n))*y/n", "gamma=-1", "not real"),
    ("trace(inv(Z.T*Z/n + 1/gamma*I(n))) + y.T*y/n", "gamma=0", "divides by zero"),
    ("trace(inv(Z.T*Z/n - sqrt(gamma)*z*I(n)))", "gamma=-1, z=1+1j", "not real"),
    ("trace(inv(Z.T*Z/n - z/gamma*I(n)))", "gamma=0, z=1+1j", "divides by zero"),
])
def test_coefficients_real_and_finite_on_every_route(expr, at, what, capsys):
    # the quadratic-form and complex routes refuse in one line, never a TypeError or a bare ZeroDivisionError
    vectors = SIGNS if "y." in expr else []
    code, out, err = run(["trace", expr, *GINIBRE, *vectors, "--at", at], capsys)
    assert code == 3 and what in err and "Traceback" not in err and out == ""


def test_dimension_ratios_on_the_complex_route(capsys):
    # p = (1 - c) n at c = 2 is a negative size: refused at a real point, and now at a complex one too
    base = ["trace", "trace(inv(Z.T*Z/n - z*I(n)))", "--matrix", "Z=gaussian(p,n)", "--dim", "p=(1-c)*n"]
    for at in ("c=2, z=1", "c=2, z=1+1j"):
        code, out, err = run(base + ["--at", at], capsys)
        assert code == 2 and "not a positive real number" in err and out == ""


def test_density_route_checks_sizes_and_coefficients(capsys):
    # a negative size printed rho = 0.0 with exit 0, and 1/gamma at gamma = 0 a bare ZeroDivisionError
    code, out, err = run(["density", "Z.T*Z/n", "--matrix", "Z=gaussian(p,n)", "--dim", "p=(1-c)*n", "--at", "c=2",
                          "--over", "x=0.5:2:2"], capsys)
    assert code == 2 and "not a positive real number" in err and "rho" not in out
    code, out, err = run(["density", "Z.T*Z/n/gamma", *GINIBRE, "--at", "gamma=0", "--over", "x=0.5:2:2"], capsys)
    assert code == 3 and "divides by zero" in err and "rho" not in out
    # Marchenko-Pastur at ratio 1: rho(2) = sqrt((4 - 2) 2)/(2 pi 2) = 1/(2 pi)
    d = Model()
    d.gaussian("Z", "n", "n")
    r = d.density("Z.T*Z/n/gamma", [2], at={"gamma": 1})
    assert abs(float(r.density[0]) - 1 / (2 * mpmath.pi)) < 1e-13


def test_batched_path_never_solves_a_non_normal_inverse(monkeypatch):
    # the batched float64 path has no Gram test: even if the sweep handed it such a plan, every point
    # falls back to the certified path (which Hermitizes inside the disk)
    from symrmt.engine.routes import sweep as sweep_module

    monkeypatch.setattr(sweep_module, "_batchable", lambda plan, model, names=(): None)  # the internal seam
    m = Model()
    m.gaussian("Z", "n", "n")
    gammas = [F(1, 2), F(-3, 4), F(4)]
    r = m.sweep(f"trace({R})", grid={"gamma": gammas})
    assert r.fallback.tolist() == [True, True, True]
    for v, g in zip(r.values, gammas):
        assert abs(v - float(brown(g))) < 1e-12


def test_complex_point_with_a_square_root_coefficient_of_z():
    # dR/dz held sqrt(gamma): it has no plain float code, and the complex path crashed (a TypeError traceback);
    # sqrt(4)*z at z = 1/2 + i is w = 1 + 2i, the Marchenko-Pastur Stieltjes transform at ratio 1:
    # tau((W - w)^{-1}) = (-w + sqrt(w^2 - 4w))/(2w), the root with Im tau > 0 for Im w > 0
    m = Model()
    m.gaussian("Z", "n", "n")
    r = m.limit("trace(inv(Z.T*Z/n - sqrt(gamma)*z*I(n)))", at={"gamma": 4, "z": "1/2+1j"}, digits=20, prove=True)
    with mpmath.workdps(40):
        w = mpmath.mpc(1, 2)
        roots = [(-w + s * mpmath.sqrt(w * w - 4 * w)) / (2 * w) for s in (1, -1)]
        ref = next(t for t in roots if t.imag > 0)
        assert abs(r.value - ref) < mpmath.mpf(10) ** -19 * abs(ref)
    assert float(r.ball.real.rad()) <= 1e-20 * abs(complex(ref))
