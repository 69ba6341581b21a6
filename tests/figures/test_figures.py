"""Tiny versions of every figure (symrmt.figures): each writes a non-empty PNG and PDF.

Skipped when matplotlib (the optional ``plot`` extra) is not installed.  The
simulations run in this process (``workers=1``) at ``n = 64`` with 2 trials;
the theory curves have a handful of points.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import mpmath  # noqa: E402

from symrmt import figures  # noqa: E402
from symrmt.figures.data import aligned_geometry, family_f  # noqa: E402
from symrmt.models.attention.geometry import Geometry  # noqa: E402
from symrmt.models.attention.theory import attention_limit  # noqa: E402
from symrmt.plotting import need_matplotlib  # noqa: E402

TINY = {"n": 64, "trials": 2, "workers": 1}


def _check(paths, tmp_path, name):
    assert sorted(paths) == sorted([str(tmp_path / f"{name}.png"), str(tmp_path / f"{name}.pdf")])
    png, pdf = (tmp_path / f"{name}.{ext}" for ext in ("png", "pdf"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_ridge_error(tmp_path):
    _check(figures.ridge_error(tmp_path, progress=False, n_sweep=64, points=5, **TINY), tmp_path, "ridge_error")


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_random_inputs(tmp_path):
    paths = figures.random_inputs(tmp_path, progress=False, count=3, simulated=2, **TINY)
    _check(paths, tmp_path, "random_inputs")


def test_random_inputs_refused_by_the_solver(tmp_path, monkeypatch):
    """A solver that refuses every set: no figure, a SolverError that counts the refusals."""
    from symrmt.errors import SolverError
    from symrmt.figures import draw

    def refuse(*args, **kwargs):
        raise SolverError("refused")

    monkeypatch.setattr(draw, "attention_limit", refuse)
    with pytest.raises(SolverError, match=r"refused 10 of 10 .* only 0 of the 2 points"):
        draw.random_inputs(tmp_path, progress=False, count=2, simulated=0, **TINY)
    assert not list(tmp_path.iterdir())


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_role_of_a1(tmp_path):
    paths = figures.role_of_a1(tmp_path, progress=False, points=3, fs=("erf", "cos"), gamma_range=(0.1, 10), **TINY)
    _check(paths, tmp_path, "role_of_a1")


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_alignment(tmp_path):
    paths = figures.alignment(tmp_path, progress=False, points=3, ns=[32, 64], **TINY)
    _check(paths, tmp_path, "alignment")


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_phase_diagram(tmp_path):
    _check(figures.phase_diagram(tmp_path, progress=False, grid=3), tmp_path, "phase_diagram")


def test_attention_over_geometries_matches_attention_limit():
    """The one-solve-many-geometries shortcut used by the maps agrees with attention_limit."""
    f = {"a1": Fraction(3, 5), "nu": Fraction(1, 2)}
    geoms = [
        Geometry(),
        Geometry(snr=2),
        aligned_geometry(1, 4, math.cos(math.radians(30))),
        aligned_geometry(1, 1, 1.0),
        Geometry(snr=1, wk2=1, wq2=2, wkwq=Fraction(1, 2), muwk=Fraction(1, 3), muwq=Fraction(-1, 4)),
    ]
    fast = figures.attention_over_geometries(f, "1/2", 1, geoms, digits=15)
    for geom, value in zip(geoms, fast):
        ref = attention_limit(f, "1/2", [1], geom, digits=15)[0]
        assert abs(value - ref) <= mpmath.mpf(10) ** -12 * abs(ref), geom


def test_family_has_the_stated_hermite_data():
    """f_a(t) = a t + b (t^2 - 1)/sqrt(2): a_1 = a, nu = a^2 + b^2 (Gauss-Hermite quadrature)."""
    import numpy as np

    x, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()
    a, b = 0.6, 0.8
    fx = family_f(x, a, b)
    assert abs(float(w @ fx)) < 1e-12
    assert abs(float(w @ (fx * x)) - a) < 1e-12
    assert abs(float(w @ fx**2) - (a * a + b * b)) < 1e-12


def test_missing_matplotlib_message(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    from symrmt.errors import ExtraUnavailable

    with pytest.raises(ExtraUnavailable, match=r"pip install 'symrmt\[plot\]'"):
        figures.main("unused")
    with pytest.raises(ExtraUnavailable, match=r"plot\(\) needs matplotlib: pip install 'symrmt\[plot\]'"):
        need_matplotlib()
