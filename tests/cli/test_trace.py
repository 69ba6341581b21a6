"""``symrmt trace``: the CLI contract, in process (``main(argv)``).

The values are checked against the Marchenko-Pastur closed form, written here
(independent of the engine), and the simulation against the value (3 se + 2/n:
k = 3 is a 0.3% two-sided false-failure rate, fixed seed; 2/n the O(1/n) bias).
"""

import json

import mpmath
import pytest

from symrmt.cli.app import main

MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"
BASE = ["--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2, gamma=1/5"]


def mp_closed_form(c, gamma, dps=50):
    """The positive root of ``gamma m^2 + (gamma + c - 1) m - 1 = 0``."""
    with mpmath.workdps(dps):
        c, gamma = mpmath.mpf(c), mpmath.mpf(gamma)
        b = gamma + c - 1
        return (-b + mpmath.sqrt(b * b + 4 * gamma)) / (2 * gamma)


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_json_value_is_a_float_up_to_15_digits(capsys):
    code, out, _ = _run(capsys, ["trace", MP, *BASE, "--json"])
    assert code == 0
    data = json.loads(out)
    assert isinstance(data["value"], float)
    assert data["value"] == pytest.approx(float(mp_closed_form("0.5", "0.2")), rel=1e-14)
    assert "simulation" not in data


def test_json_value_is_a_decimal_string_above_15_digits(capsys):
    code, out, _ = _run(capsys, ["trace", MP, *BASE, "--digits", "40", "--json"])
    assert code == 0
    value = json.loads(out)["value"]
    assert isinstance(value, str)
    with mpmath.workdps(60):
        ref = mp_closed_form("0.5", "0.2")
        assert abs(mpmath.mpf(value) - ref) <= mpmath.mpf(10) ** -39 * ref


def test_simulate_adds_mean_and_se(capsys):
    n = 128
    code, out, _ = _run(capsys, ["trace", MP, *BASE, "--json", "--simulate", "--n", str(n), "--trials", "8",
                                 "--seed", "3"])
    assert code == 0
    data = json.loads(out)
    sim = data["simulation"]
    assert set(sim) >= {"mean", "se"} and sim["se"] > 0
    assert abs(sim["mean"] - data["value"]) <= 3 * sim["se"] + 2 / n
    # the same seed gives the same numbers
    _, out2, _ = _run(capsys, ["trace", MP, *BASE, "--json", "--simulate", "--n", str(n), "--trials", "8",
                               "--seed", "3"])
    assert json.loads(out2)["simulation"] == sim


def test_text_output_and_latex(capsys):
    code, out, _ = _run(capsys, ["trace", MP, *BASE, "--digits", "20", "--latex"])
    assert code == 0
    assert mpmath.nstr(mp_closed_form("0.5", "0.2"), 20) in out
    assert "linear pencil" in out and "fixed point" in out
    assert "\\hat{Z}" in out


def test_star_and_at_are_both_the_matrix_product(capsys):
    _, a, _ = _run(capsys, ["trace", "trace(inv(Z.T*Z*Z.T*Z/n**2 + gamma*I(n)))", *BASE, "--json", "--digits", "25"])
    _, b, _ = _run(capsys, ["trace", "trace(inv(Z.T@Z@Z.T@Z/n**2 + gamma*I(n)))", *BASE, "--json", "--digits", "25"])
    assert json.loads(a)["value"] == json.loads(b)["value"]


def test_goe_and_diag_declarations(capsys):
    code, out, _ = _run(capsys, ["trace", "trace(inv(Z.T*D*Z/n + G/sqrt(n) + 3*I(n)))", "--matrix", "Z=gaussian(p,n)",
                                 "--matrix", "G=goe(n)", "--matrix", "D=diag(p, (1, 4), (1/4, 3/4))",
                                 "--dim", "p=c*n", "--at", "c=1/2", "--json"])
    assert code == 0
    # Z^T D Z/n >= 0 and the semicircle of G/sqrt(n) lies in [-2, 2], so the matrix is >= I: 0 < value <= 1
    assert 0 < json.loads(out)["value"] <= 1


@pytest.mark.parametrize("expr,matrices,at,why", [
    ("trace(inv(Z.T*Z + gamma*I(n)))", [], "c=1/2, gamma=1/5", "orders in n"),
    ("trace(Z/n)", [], "c=1/2, gamma=1/5", "non-square"),
    ("trace(inv(Z.T*Z/n + gamma*I(p)))", [], "c=1/2, gamma=1/5", "size mismatch"),
    ("__import__('os').system('true')", [], "c=1/2, gamma=1/5", "not a valid name|not allowed|unknown|only calls of whitelisted functions"),
    ("trace(Z.T*Z/n).__class__", [], "c=1/2, gamma=1/5", "not allowed|Attribute"),
    (MP, ["Y=open('x')"], "c=1/2, gamma=1/5", "unknown|not allowed"),
    (MP, [], "c=1/2", "gamma"),
    (MP, [], "c=1/2, gamma=exec('1')", "--at"),
    (MP, [], "c=1/2, gamma=1/5, gamma=1", "twice"),
    (MP, [], "c=-1, gamma=1/5", "c"),
])
def test_bad_input_exits_2(capsys, expr, matrices, at, why):
    argv = ["trace", expr, "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", at]
    for mtx in matrices:
        argv += ["--matrix", mtx]
    code, out, err = _run(capsys, argv)
    assert code == 2, err
    assert out == ""
    import re

    assert re.search(why, err), err


def test_solver_failure_exits_3(capsys):
    """A resolvent inside the spectrum (MP at z = +1/5 with c = 1/2) has no real limit: exit 3, no number."""
    code, out, err = _run(capsys, ["trace", "trace(inv(Z.T*Z/n - gamma*I(n)))", *BASE])
    assert code == 3
    assert out == ""
    assert "could not deliver" in err


@pytest.mark.slow
def test_kernel_declaration_gives_the_noise_only_attention_error(capsys):
    """``--matrix 'K=kernel(relu, Z)'``: the noise-only Attention error as one expression equals
    ``symrmt limit --snr 0`` (the package's own solver) to 30 digits."""
    code, out, err = _run(capsys, ["trace", "-gamma**2*diff(trace(inv(K*Z.T*Z*K/n + gamma*I(n))), gamma)",
                                   "--matrix", "Z=gaussian(p,n)", "--matrix", "K=kernel(relu, Z)", "--dim", "p=c*n",
                                   "--at", "c=2, gamma=1/2", "--digits", "30", "--json"])
    assert code == 0, err
    value = json.loads(out)["value"]
    code, out, _ = _run(capsys, ["limit", "--f", "relu", "--c", "2", "--gamma", "0.5", "--snr", "0", "--digits", "35",
                                 "--json"])
    assert code == 0
    with mpmath.workdps(50):
        ref = mpmath.mpf(json.loads(out)["attention"][0])
        assert abs(mpmath.mpf(value) - ref) <= mpmath.mpf(10) ** -29 * ref


@pytest.mark.parametrize("decl,why", [
    ("K=kernel(cosh, Z)", "unknown name .cosh."),
    ("K=kernel(2, Z)", "preset"),
    ("K=kernel(tanh, G)", "Gaussian"),
    ("K=kernel(tanh, Z, 1, diagonal)", "unknown name|zero or keep"),
    ("K=kernel(tanh, Z, 1, keep).__class__", "not allowed"),
])
def test_bad_kernel_declarations_exit_2(capsys, decl, why):
    import re

    code, _, err = _run(capsys, ["trace", "trace(K)", "--matrix", "Z=gaussian(p,n)", "--matrix", "G=goe(n)",
                                 "--matrix", decl, "--dim", "p=c*n", "--at", "c=1/2"])
    assert code == 2 and re.search(why, err), err


def test_trace_without_parameters_needs_no_at(capsys):
    # tau(G^2/n) = 1 for a GOE matrix of unit off-diagonal variance (the semicircle's variance)
    code, out, err = _run(capsys, ["trace", "trace(G*G/n)", "--matrix", "G=goe(n)", "--json"])
    assert code == 0, err
    assert json.loads(out)["value"] == pytest.approx(1.0, rel=1e-14)
    # a parameter left out is still a one-line error naming it
    code, out, err = _run(capsys, ["trace", "trace(inv(G/sqrt(n) + gamma*I(n)))", "--matrix", "G=goe(n)"])
    assert code == 2 and "gamma" in err


def test_trace_json_echoes_a_tiny_parameter_as_typed(capsys):
    """`--at 'gamma=1e-400'` is echoed as typed in the JSON `at`, not as a 400-digit fraction; every other
    value as typed too (0.5, not 1/2)."""
    import json

    from symrmt.cli.app import main

    code = main(["trace", "gamma*c", "--at", "gamma=1e-400, c=0.5", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["at"] == {"gamma": "1e-400", "c": "0.5"}
    assert out["value"] == "5.0e-401"


def test_help_lists_every_registered_law(capsys, monkeypatch):
    """``symrmt trace --help`` lists each law of the registry under its flag, a law added as one module too."""
    from symrmt.engine.laws import registry

    extra = registry.Law("mylaw", "mylaw(dim, t)", "matrix", "an added law", declare=lambda *a: None)
    monkeypatch.setitem(registry.laws(), "mylaw", extra)
    assert main(["trace", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split()).split("options:", 1)[1]
    matrix_help = text.split("--matrix DECL", 1)[1].split("--vector DECL", 1)[0]
    vector_help = text.split("--vector DECL", 1)[1].split("--let NAME=EXPR", 1)[0]
    for law in registry.laws().values():
        where = matrix_help if law.kind == "matrix" else vector_help
        assert f"NAME={law.signature}".replace(" ", "") in where.replace(" ", ""), law.keyword
    assert "NAME=mylaw(dim,t)" in matrix_help.replace(" ", "")
