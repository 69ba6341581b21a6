"""``compare(theory, sizes=...)``: the same point at several n, the means extrapolated in 1/n, and the
finite-size notes.  The fit is checked against closed forms (a line through exact means, the two-point
formula), not against its own output."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import symrmt
from symrmt.comparison import Extrapolation

GEO = symrmt.Geometry(snr=1)


def _trials(means, ses, trials=4):
    """Trials whose mean and standard error std(ddof=1)/sqrt(trials) are exactly ``means``, ``ses``."""
    z = np.array([-1.5, -0.5, 0.5, 1.5])[:trials]
    z = (z - z.mean()) / z.std(ddof=1)
    return np.asarray(means)[None, :] + np.asarray(ses)[None, :] * np.sqrt(trials) * z[:, None]


def _fake(sim, n, att, att_se, rr, rr_se):
    return dataclasses.replace(sim, n=n, p=n // 2, attention_trials=_trials(att, att_se),
                               ridge_trials=_trials(rr, rr_se))


@pytest.fixture(scope="module")
def base():
    th = symrmt.limit("tanh", 0.5, [0.1, 1], GEO, digits=15)
    sim = symrmt.simulate("tanh", 0.5, [0.1, 1], GEO, n=64, trials=4, seed=0)
    return th, sim


def test_fit_recovers_a_line_in_one_over_n(base):
    th, sim = base
    a, b = np.array([0.30, 0.45]), np.array([-4.0, 2.5])
    sims = [_fake(sim, n, a + b / n, [1e-3, 2e-3], a, [1e-3, 1e-3]) for n in (128, 256, 512)]
    e = Extrapolation.fit(sims)
    assert e.sizes == (128, 256, 512)
    assert np.allclose(e.attention, a, rtol=0, atol=1e-12) and np.allclose(e.attention_slope, b, atol=1e-9)
    assert np.allclose(e.chi2, 0, atol=1e-12)
    # two sizes: the line through both means, a = (n2 m2 - n1 m1)/(n2 - n1), var = (n2^2 s2^2 + n1^2 s1^2)/(n2 - n1)^2
    m1, m2, s1, s2 = np.array([0.2, 0.3]), np.array([0.25, 0.31]), np.array([1e-2, 2e-2]), np.array([3e-3, 4e-3])
    e2 = Extrapolation.fit([_fake(sim, 100, m1, s1, m1, s1), _fake(sim, 300, m2, s2, m2, s2)])
    assert np.allclose(e2.attention, (300 * m2 - 100 * m1) / 200, atol=1e-12)
    assert np.allclose(e2.attention_se, np.sqrt(300**2 * s2**2 + 100**2 * s1**2) / 200, rtol=1e-9)


def test_finite_size_gap_is_named(base):
    th, sim = base
    lim_a, lim_r = th.attention, th.ridge
    # E_A 10 se below the limit at n = 512 with a gap shrinking exactly as 1/n; E_RR on the limit
    b = -10 * 1e-3 * 512
    runs = [_fake(sim, n, lim_a + b / n, [1e-3, 1e-3], lim_r, [1e-3, 1e-3]) for n in (128, 256)]
    at512 = _fake(sim, 512, lim_a + b / 512, [1e-3, 1e-3], lim_r, [1e-3, 1e-3])
    cmp = at512.compare(th, runs=runs)
    assert np.allclose(cmp.attention_gap, -10) and np.allclose(cmp.extrapolated_attention_gap, 0, atol=1e-6)
    text = str(cmp)
    assert "extrapolated from n = 128, 256, 512 (E_A: mean(n) = a + b/n" in text
    assert text.count("a finite-size effect") == 2 and "note: E_A at gamma = 0.1" in text
    assert "a finite-size effect" in cmp._repr_html_()
    # a gap that does not go away is not called one
    stuck = [_fake(sim, n, lim_a - 0.01, [1e-3, 1e-3], lim_r, [1e-3, 1e-3]) for n in (128, 256)]
    cmp2 = _fake(sim, 512, lim_a - 0.01, [1e-3, 1e-3], lim_r, [1e-3, 1e-3]).compare(th, runs=stuck)
    x = np.array([1 / 128, 1 / 256, 1 / 512])
    se_a = 1e-3 * np.sqrt(np.sum(x**2) / (3 * np.sum(x**2) - np.sum(x) ** 2))  # WLS, equal weights
    print(str(cmp2))
    assert "a finite-size effect" not in str(cmp2)
    assert f"still {-0.01 / se_a:+.2f} se after the 1/n extrapolation" in str(cmp2)
    # without sizes a large gap says how to extrapolate
    assert "compare(theory, sizes=[n1, n2])" in str(at512.compare(th))


def test_sizes_simulate_the_same_point(base):
    th, sim = base
    cmp = sim.compare(th, sizes=[128])
    e = cmp.extrapolation
    assert e.sizes == (64, 128)
    other = symrmt.simulate("tanh", 0.5, [0.1, 1], GEO, n=128, trials=4, seed=0)
    assert np.allclose(e.attention, (128 * other.attention - 64 * sim.attention) / 64, atol=1e-12)
    with pytest.raises(symrmt.ParameterError, match="sizes must differ"):
        sim.compare(th, sizes=[64])
    with pytest.raises(symrmt.ParameterError, match="different models"):
        sim.compare(th, runs=[symrmt.simulate("tanh", 2, [0.1, 1], GEO, n=64, trials=3, seed=0)])
    fn = symrmt.simulate(np.tanh, 0.5, [0.1, 1], GEO, n=64, trials=3, seed=0)
    with pytest.raises(symrmt.ParameterError, match="runs="):
        fn.at_size(128)


def test_a_slower_decay_is_fitted_in_one_over_sqrt_n(base):
    """Means exactly ``a + b/sqrt(n)`` with small errors: the 1/n line is rejected by its chi-square,
    the 1/sqrt(n) form is used and recovers ``a``; the notes give each form's fit."""
    th, sim = base
    a, b = np.array([0.15, 0.16]), np.array([-1.6, -0.2])
    ns = (256, 512, 1024, 2048)
    sims = [_fake(sim, n, a + b / np.sqrt(n), [1e-3, 1e-3], a + 0.3 / n, [1e-3, 1e-3]) for n in ns]
    e = Extrapolation.fit(sims)
    assert e.forms == {"E_A": "1/sqrt(n)", "E_RR": "1/n"}
    assert np.allclose(e.attention, a, atol=1e-9) and np.allclose(e.ridge, a, atol=1e-9)
    line = e.fits["E_A"]["1/n"]
    assert line.rejected and line.dof == 4 and line.pvalue < 1e-6
    assert e.fits["E_A"]["1/sqrt(n)"].chi2 < 1e-12 and not e.fits["E_A"]["1/sqrt(n)"].rejected
    cmp = sims[-1].compare(th, runs=sims[:-1])
    notes = "\n".join(cmp.notes())
    assert "fit: E_A against n = 256, 512, 1024, 2048: a + b/n: chi2 = " in notes
    assert ", rejected; a + b/sqrt(n): chi2 = " in notes and "used: a + b/sqrt(n)" in notes


def test_data_no_form_fits_are_reported(base):
    """Means that jump around (no smooth decay): every testable form is rejected and the notes say the
    extrapolated value is not reliable."""
    th, sim = base
    ns = (128, 256, 512, 1024)
    bumps = [0.0, 0.05, -0.05, 0.05]
    sims = [_fake(sim, n, th.attention + d, [1e-3, 1e-3], th.ridge, [1e-3, 1e-3]) for n, d in zip(ns, bumps)]
    cmp = sims[-1].compare(th, runs=sims[:-1])
    assert any(note.startswith("no form fits the means of E_A") for note in cmp.notes())
    assert not any(note.startswith("no form fits the means of E_RR") for note in cmp.notes())


def test_two_sizes_say_the_form_is_untested(base):
    th, sim = base
    sims = [_fake(sim, n, th.attention, [1e-3, 1e-3], th.ridge, [1e-3, 1e-3]) for n in (128, 256)]
    cmp = sims[1].compare(th, runs=sims[:1])
    assert any("with two sizes every form passes through both means" in note for note in cmp.notes())


def test_chi2_pvalue_against_known_quantiles():
    from symrmt.comparison import chi2_pvalue

    # 95% quantiles of the chi-square law (tables): 1 dof 3.841459, 2 dof 5.991465, 10 dof 18.307038
    for q, dof in ((3.841459, 1), (5.991465, 2), (18.307038, 10)):
        assert abs(chi2_pvalue(q, dof) - 0.05) < 1e-6
    assert chi2_pvalue(1.0, 0) is None
