r"""Simulations over a grid: ``symrmt.simulate(f, grid={...})`` and its result :class:`SimulationSweep`.

The grid is read as :func:`symrmt.sweep` reads it; the points that share ``c`` and the geometry are simulated
together over their values of ``gamma``, with the executor and trial store of one point and the same ``seed``
everywhere (common random numbers).  :meth:`SimulationSweep.compare` sets it against the limits on the same grid
(:class:`SweepComparison`, whose ``plot`` draws smooth limit curves and the simulated points with error bars).
It imports only the standard library at import time.

Examples
--------
>>> import symrmt
>>> s = symrmt.simulate("tanh", grid={"c": 0.5, "gamma": [0.1, 1], "snr": [0, 2]}, n=64, trials=3)
>>> s.shape, s.axes
((2, 2), ('gamma', 'snr'))
>>> cmp = s.compare(digits=10)
>>> cmp.attention_gap.shape
(2, 2)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from symrmt.comparison import gap_in_se
from symrmt.errors import ParameterError
from symrmt.hermite.presets import PRESETS
from symrmt.models.attention.geometry import as_geometry
from symrmt.models.attention.kernel_f import as_nonlinearity, simulation_f
from symrmt.models.attention.montecarlo import simulate as _simulate
from symrmt.models.attention.params import to_fraction, check_diagonal
from symrmt.models.attention.sweeps import sweep, GRID_KEYS, grid_points, split_grid
from symrmt.parsing import LIMITS, ParseLimitError
from symrmt.plotting import axis_label as _label, log_axis as _log_axis, need_matplotlib, COLORS, set_log, fine_axis
from symrmt.progress import progress_bar
from symrmt.simulation.executor import make_executor
from symrmt.table import need_pandas, text_table

__all__ = ["simulate_grid", "SimulationSweep", "SweepComparison"]

#: points of the fine grid of a limit curve drawn by :meth:`SweepComparison.plot`
FINE_POINTS = 61


def _axis_floats(values, key):
    return [float(to_fraction(v, key)) for v in values]


def _grid_key(axis: str):
    names = axis.split("=")
    return tuple(names) if len(names) > 1 else axis


@dataclass(frozen=True, eq=False)
class SimulationSweep:
    """Monte-Carlo means and standard errors of ``E_A`` and ``E_RR`` over a product grid.

    ``.attention``, ``.attention_se``, ``.ridge``, ``.ridge_se`` are float64 arrays of the grid's
    shape (one axis per list in the grid, in its order), as :class:`~symrmt.SweepResult` has;
    ``.values(key)`` gives a parameter at every point; ``points`` holds one dict of exact
    parameters per point (C order).  ``n``, ``trials``, ``seed``, ``noise``: the sampling.

    Examples
    --------
    A two-point sweep made by hand (:func:`simulate_grid` makes them):

    >>> from fractions import Fraction as F
    >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
    ...                     fixed={"c": F(1, 2)}, geometry=None,
    ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
    ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
    ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
    >>> s
    <SimulationSweep tanh: 2 points over gamma, n = 64, 4 trials>
    >>> s.axes, s.shape, s.attention.tolist(), s.ridge_se.tolist()
    (('gamma',), (2,), [0.8, 0.81], [0.02, 0.02])
    """

    f: str
    expr: str
    center: bool
    diagonal: str
    grid: dict
    fixed: dict
    geometry: object
    points: tuple
    n: int
    trials: int
    seed: int
    noise: str
    attention_flat: tuple
    attention_se_flat: tuple
    ridge_flat: tuple
    ridge_se_flat: tuple
    p: tuple = ()
    seconds: float = 0.0

    @property
    def axes(self) -> tuple:
        """The names of the grid's axes, in its order.

        >>> from fractions import Fraction as F
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
        ...                     fixed={"c": F(1, 2)}, geometry=None,
        ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
        ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
        >>> s.axes
        ('gamma',)
        """
        return tuple(self.grid)

    @property
    def shape(self) -> tuple:
        """The grid's shape: the length of each axis.

        >>> from fractions import Fraction as F
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
        ...                     fixed={"c": F(1, 2)}, geometry=None,
        ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
        ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
        >>> s.shape
        (2,)
        """
        return tuple(len(v) for v in self.grid.values())

    def _arr(self, flat):
        return np.array(flat, dtype=np.float64).reshape(self.shape)

    @property
    def attention(self):
        """Mean of ``E_A`` over the trials at every grid point (float64, the grid's shape).

        >>> from fractions import Fraction as F
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
        ...                     fixed={"c": F(1, 2)}, geometry=None,
        ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
        ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
        >>> s.attention.tolist()
        [0.8, 0.81]
        """
        return self._arr(self.attention_flat)

    @property
    def attention_se(self):
        """Standard error of :attr:`attention` (``std(ddof=1)/sqrt(trials)``), the grid's shape.

        >>> from fractions import Fraction as F
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
        ...                     fixed={"c": F(1, 2)}, geometry=None,
        ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
        ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
        >>> s.attention_se.tolist()
        [0.01, 0.01]
        """
        return self._arr(self.attention_se_flat)

    @property
    def ridge(self):
        """Mean of ``E_RR`` over the trials at every grid point (float64, the grid's shape).

        >>> from fractions import Fraction as F
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
        ...                     fixed={"c": F(1, 2)}, geometry=None,
        ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
        ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
        >>> s.ridge.tolist()
        [0.66, 0.77]
        """
        return self._arr(self.ridge_flat)

    @property
    def ridge_se(self):
        """Standard error of :attr:`ridge` (``std(ddof=1)/sqrt(trials)``), the grid's shape.

        >>> from fractions import Fraction as F
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
        ...                     fixed={"c": F(1, 2)}, geometry=None,
        ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
        ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
        >>> s.ridge_se.tolist()
        [0.02, 0.02]
        """
        return self._arr(self.ridge_se_flat)

    def values(self, key: str):
        """The value of parameter ``key`` at every grid point (float64, the grid's shape).

        Raises :class:`~symrmt.errors.ParameterError` for a parameter the grid does not have.

        >>> from fractions import Fraction as F
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
        ...                     fixed={"c": F(1, 2)}, geometry=None,
        ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
        ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
        >>> s.values("gamma").tolist()
        [1.0, 2.0]
        >>> s.values("snr")
        Traceback (most recent call last):
        ...
        symrmt.errors.ParameterError: no parameter 'snr' in this simulation; known: c, gamma
        """
        if key not in self.points[0]:
            raise ParameterError(f"no parameter {key!r} in this simulation; known: {', '.join(self.points[0])}")
        return np.array([float(p[key]) for p in self.points], dtype=np.float64).reshape(self.shape)

    def sweep_grid(self) -> dict:
        """The grid as :func:`symrmt.sweep` takes it (axes and fixed values).

        >>> from fractions import Fraction as F
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
        ...                     fixed={"c": F(1, 2)}, geometry=None,
        ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
        ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
        >>> s.sweep_grid()
        {'gamma': [Fraction(1, 1), Fraction(2, 1)], 'c': Fraction(1, 2)}
        """
        out = {_grid_key(k): list(v) for k, v in self.grid.items()}
        seen = {n for k in self.grid for n in k.split("=")}
        out.update({k: v for k, v in self.fixed.items() if k not in seen})
        return out

    def _f_spec(self):
        """``f`` as :func:`symrmt.sweep` takes it: the preset's name, else the expression (already centered
        when ``center`` was asked; centering it again changes nothing)."""
        return self.f if self.f in _presets() else self.expr

    def compare(self, limits=None, digits: int = 15, progress: bool | None = False) -> SweepComparison:
        """Against the limits on the same grid: ``limits`` (a :class:`~symrmt.SweepResult` of that grid),
        or computed here by :func:`symrmt.sweep` at ``digits`` digits.  Returns a :class:`SweepComparison`.

        Raises :class:`~symrmt.ParameterError` when ``limits`` has another grid.

        >>> from fractions import Fraction as F
        >>> from symrmt.models.attention.grid_results import SweepResult
        >>> grid, pts = {"gamma": (F(1), F(2))}, ({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)})
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid=grid, fixed={"c": F(1, 2)},
        ...                     geometry=None, points=pts, n=64, trials=4, seed=0, noise="gaussian",
        ...                     attention_flat=(0.80, 0.81), attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77),
        ...                     ridge_se_flat=(0.02, 0.02))
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid=grid,
        ...                 fixed={"c": F(1, 2)}, geometry=None, points=pts, attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> cmp = SweepComparison(s, r)
        >>> s.compare(r).max_gap
        2.0...
        >>> s.compare(SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid={"gamma": (F(1),)},
        ...                       fixed={"c": F(1, 2)}, geometry=None, points=pts[:1], attention_mp=(0.78,), ridge_mp=(0.67,)))
        Traceback (most recent call last):
        ...
        symrmt.errors.ParameterError: the limits' grid {'gamma': 1} is not the simulation's {'gamma': 2}
        """
        if limits is None:
            limits = sweep(self._f_spec(), self.sweep_grid(), geometry=self.geometry, diagonal=self.diagonal,
                           digits=digits, center=self.center, progress=progress)
        if tuple(limits.grid) != self.axes or limits.shape != self.shape:
            raise ParameterError(f"the limits' grid {dict(zip(limits.axes, limits.shape))} is not the simulation's "
                                 f"{dict(zip(self.axes, self.shape))}")
        for a, b in zip(limits.points, self.points):
            if any(a.get(k) != v for k, v in b.items() if k in a):
                raise ParameterError("the limits were computed on other grid values than the simulation's")
        return SweepComparison(simulation=self, limits=limits)

    def plot(self, over=None, limits=True, ax=None, k: float = 2.0, log=None, fine: int = FINE_POINTS):
        """The simulation (points, ``k`` se error bars) over the limit curves on a fine grid of ``over``
        (``limits=False``: points only).  See :meth:`SweepComparison.plot`; returns the axes.

        Raises :class:`~symrmt.errors.ParameterError` for ``over`` not an axis (before any work); it computes the
        limits and draws a figure (``tests/models/attention/test_simulate_grid.py`` checks the drawing):

        >>> from fractions import Fraction as F
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
        ...                     fixed={"c": F(1, 2)}, geometry=None,
        ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
        ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
        >>> s.plot(over="snr", limits=False)
        Traceback (most recent call last):
        ...
        symrmt.errors.ParameterError: over must be one of the grid's axes ['gamma'], got 'snr'
        """
        if limits:
            return self.compare(digits=10).plot(over=over, ax=ax, k=k, log=log, fine=fine)
        return SweepComparison(simulation=self, limits=None).plot(over=over, ax=ax, k=k, log=log, fine=0)

    def to_pandas(self):
        """One row per point: every parameter, then ``attention``, ``attention_se``, ``ridge``, ``ridge_se``.

        >>> from fractions import Fraction as F
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid={"gamma": (F(1), F(2))},
        ...                     fixed={"c": F(1, 2)}, geometry=None,
        ...                     points=({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)}),
        ...                     n=64, trials=4, seed=0, noise="gaussian", attention_flat=(0.80, 0.81),
        ...                     attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77), ridge_se_flat=(0.02, 0.02))
        >>> s.to_pandas().values.tolist()
        [[0.5, 1.0, 0.8, 0.01, 0.66, 0.02], [0.5, 2.0, 0.81, 0.01, 0.77, 0.02]]
        """
        pd = need_pandas()
        rows = [{**{k: float(v) for k, v in pt.items()}, "attention": a, "attention_se": ase, "ridge": r,
                 "ridge_se": rse}
                for pt, a, ase, r, rse in zip(self.points, self.attention_flat, self.attention_se_flat,
                                              self.ridge_flat, self.ridge_se_flat)]
        df = pd.DataFrame(rows)
        df.attrs.update({"f": self.f, "n": self.n, "trials": self.trials, "seed": self.seed})
        return df

    def __repr__(self) -> str:
        return (f"<SimulationSweep {self.f}: {'x'.join(map(str, self.shape))} points over "
                f"{', '.join(self.axes)}, n = {self.n}, {self.trials} trials>")

    def __str__(self) -> str:
        keys = [a.split("=")[0] for a in self.axes]
        rows = [[*(f"{float(pt[k]):.6g}" for k in keys), f"{a:.6f} ± {ase:.1e}", f"{r:.6f} ± {rse:.1e}"]
                for pt, a, ase, r, rse in zip(self.points, self.attention_flat, self.attention_se_flat,
                                              self.ridge_flat, self.ridge_se_flat)]
        head = (f"simulation of {self.f}: n = {self.n}, p = round(c n), {self.trials} trials, seed = {self.seed}")
        return head + "\n" + text_table([*self.axes, "E_A (mean ± se)", "E_RR (mean ± se)"], rows)


def _presets():
    return PRESETS


@dataclass(frozen=True, eq=False)
class SweepComparison:
    """A :class:`SimulationSweep` against a :class:`~symrmt.SweepResult` of the limits on the same grid.

    ``attention_gap = (mean - limit)/se`` (grid shape; likewise ``ridge_gap``); :meth:`within` applies
    ``|mean - limit| <= k se + slack`` at every point; :meth:`plot` draws both over one parameter.

    Examples
    --------
    Means 0.80, 0.81 (se 0.01) against limits 0.78, 0.82 are 2 and -1 standard errors away:

    >>> from fractions import Fraction as F
    >>> from symrmt.models.attention.grid_results import SweepResult
    >>> grid, pts = {"gamma": (F(1), F(2))}, ({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)})
    >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid=grid, fixed={"c": F(1, 2)},
    ...                     geometry=None, points=pts, n=64, trials=4, seed=0, noise="gaussian",
    ...                     attention_flat=(0.80, 0.81), attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77),
    ...                     ridge_se_flat=(0.02, 0.02))
    >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid=grid,
    ...                 fixed={"c": F(1, 2)}, geometry=None, points=pts, attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
    >>> cmp = SweepComparison(s, r)
    >>> cmp.attention_gap.round(9).tolist(), cmp.ridge_gap.round(9).tolist(), cmp.within(3), cmp.within(1)
    ([2.0, -1.0], [-0.5, 0.5], True, False)
    """

    simulation: SimulationSweep
    limits: object

    _gap = staticmethod(gap_in_se)

    @property
    def attention_gap(self):
        """``(mean - limit)/se`` of ``E_A`` at every grid point (0 where equal, ``inf`` where ``se = 0``).

        >>> from fractions import Fraction as F
        >>> from symrmt.models.attention.grid_results import SweepResult
        >>> grid, pts = {"gamma": (F(1), F(2))}, ({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)})
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid=grid, fixed={"c": F(1, 2)},
        ...                     geometry=None, points=pts, n=64, trials=4, seed=0, noise="gaussian",
        ...                     attention_flat=(0.80, 0.81), attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77),
        ...                     ridge_se_flat=(0.02, 0.02))
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid=grid,
        ...                 fixed={"c": F(1, 2)}, geometry=None, points=pts, attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> cmp = SweepComparison(s, r)
        >>> cmp.attention_gap.round(9).tolist()
        [2.0, -1.0]
        """
        return self._gap(self.simulation.attention, self.limits.attention, self.simulation.attention_se)

    @property
    def ridge_gap(self):
        """``(mean - limit)/se`` of ``E_RR`` at every grid point (0 where equal, ``inf`` where ``se = 0``).

        >>> from fractions import Fraction as F
        >>> from symrmt.models.attention.grid_results import SweepResult
        >>> grid, pts = {"gamma": (F(1), F(2))}, ({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)})
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid=grid, fixed={"c": F(1, 2)},
        ...                     geometry=None, points=pts, n=64, trials=4, seed=0, noise="gaussian",
        ...                     attention_flat=(0.80, 0.81), attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77),
        ...                     ridge_se_flat=(0.02, 0.02))
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid=grid,
        ...                 fixed={"c": F(1, 2)}, geometry=None, points=pts, attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> cmp = SweepComparison(s, r)
        >>> cmp.ridge_gap.round(9).tolist()
        [-0.5, 0.5]
        """
        return self._gap(self.simulation.ridge, self.limits.ridge, self.simulation.ridge_se)

    @property
    def max_gap(self) -> float:
        """The largest ``|gap|`` in standard errors over both errors and every point.

        >>> from fractions import Fraction as F
        >>> from symrmt.models.attention.grid_results import SweepResult
        >>> grid, pts = {"gamma": (F(1), F(2))}, ({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)})
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid=grid, fixed={"c": F(1, 2)},
        ...                     geometry=None, points=pts, n=64, trials=4, seed=0, noise="gaussian",
        ...                     attention_flat=(0.80, 0.81), attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77),
        ...                     ridge_se_flat=(0.02, 0.02))
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid=grid,
        ...                 fixed={"c": F(1, 2)}, geometry=None, points=pts, attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> cmp = SweepComparison(s, r)
        >>> round(cmp.max_gap, 9)
        2.0
        """
        return float(max(np.max(np.abs(self.attention_gap)), np.max(np.abs(self.ridge_gap))))

    def within(self, k: float = 3.0, slack: float = 0.0) -> bool:
        """``|mean - limit| <= k se + slack`` at every point, for both errors.

        >>> from fractions import Fraction as F
        >>> from symrmt.models.attention.grid_results import SweepResult
        >>> grid, pts = {"gamma": (F(1), F(2))}, ({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)})
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid=grid, fixed={"c": F(1, 2)},
        ...                     geometry=None, points=pts, n=64, trials=4, seed=0, noise="gaussian",
        ...                     attention_flat=(0.80, 0.81), attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77),
        ...                     ridge_se_flat=(0.02, 0.02))
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid=grid,
        ...                 fixed={"c": F(1, 2)}, geometry=None, points=pts, attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> cmp = SweepComparison(s, r)
        >>> cmp.within(), cmp.within(k=1), cmp.within(k=1, slack=0.011)
        (True, False, True)
        """
        s, t = self.simulation, self.limits
        ok_a = np.abs(s.attention - t.attention) <= k * s.attention_se + slack
        ok_r = np.abs(s.ridge - t.ridge) <= k * s.ridge_se + slack
        return bool(np.all(ok_a) and np.all(ok_r))

    def to_pandas(self):
        """The simulation's rows with ``attention_limit``, ``ridge_limit`` and the two gaps.

        >>> from fractions import Fraction as F
        >>> from symrmt.models.attention.grid_results import SweepResult
        >>> grid, pts = {"gamma": (F(1), F(2))}, ({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)})
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid=grid, fixed={"c": F(1, 2)},
        ...                     geometry=None, points=pts, n=64, trials=4, seed=0, noise="gaussian",
        ...                     attention_flat=(0.80, 0.81), attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77),
        ...                     ridge_se_flat=(0.02, 0.02))
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid=grid,
        ...                 fixed={"c": F(1, 2)}, geometry=None, points=pts, attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> cmp = SweepComparison(s, r)
        >>> cmp.to_pandas()[["attention_limit", "attention_gap"]].round(9).values.tolist()
        [[0.78, 2.0], [0.82, -1.0]]
        """
        df = self.simulation.to_pandas()
        df["attention_limit"] = self.limits.attention.ravel()
        df["ridge_limit"] = self.limits.ridge.ravel()
        df["attention_gap"] = self.attention_gap.ravel()
        df["ridge_gap"] = self.ridge_gap.ravel()
        return df

    def __repr__(self) -> str:
        return f"<SweepComparison max |gap| = {self.max_gap:.2f} se over {self.simulation.shape} points>"

    def plot(self, over=None, ax=None, k: float = 2.0, log=None, fine: int = FINE_POINTS, digits: int = 10):
        """``E_A`` and ``E_RR`` against the parameter ``over`` (default: the first axis of the grid that is
        not ``gamma``, else ``gamma``).  One colour per value of the other axis (over a one-axis grid
        ``E_A`` and ``E_RR`` in the colours of every other plot, ``symrmt.plotting.COLORS``): the limits as
        lines (``E_A`` solid, ``E_RR`` dashed) on ``fine`` points of ``over`` computed by
        :func:`symrmt.sweep` (float64 path where it applies, else ``digits`` certified digits), the
        simulation as points (``E_A`` circles, ``E_RR`` squares) with ``k`` se error bars in the same
        colour.  ``fine=0``: no fine grid (the limits at the simulated points are drawn as lines).
        Returns the axes (a new constrained-layout figure when ``ax`` is None).

        Raises :class:`~symrmt.errors.ParameterError` for ``over`` not an axis of the grid (before drawing):

        >>> from fractions import Fraction as F
        >>> from symrmt.models.attention.grid_results import SweepResult
        >>> grid, pts = {"gamma": (F(1), F(2))}, ({"c": F(1, 2), "gamma": F(1)}, {"c": F(1, 2), "gamma": F(2)})
        >>> s = SimulationSweep(f="tanh", expr="tanh(t)", center=False, diagonal="zero", grid=grid, fixed={"c": F(1, 2)},
        ...                     geometry=None, points=pts, n=64, trials=4, seed=0, noise="gaussian",
        ...                     attention_flat=(0.80, 0.81), attention_se_flat=(0.01, 0.01), ridge_flat=(0.66, 0.77),
        ...                     ridge_se_flat=(0.02, 0.02))
        >>> r = SweepResult(f="tanh", expr="tanh(t)", center=False, diagonal="zero", digits=10, grid=grid,
        ...                 fixed={"c": F(1, 2)}, geometry=None, points=pts, attention_mp=(0.78, 0.82), ridge_mp=(0.67, 0.76))
        >>> cmp = SweepComparison(s, r)
        >>> cmp.plot(over="c")
        Traceback (most recent call last):
        ...
        symrmt.errors.ParameterError: over must be one of the grid's axes ['gamma'], got 'c'
        """
        s = self.simulation
        axes = list(s.axes)
        if not axes:
            raise ParameterError("the simulation has no axis to plot over")
        if over is None:
            over = next((a for a in axes if a != "gamma"), axes[0])
        if over not in axes:
            raise ParameterError(f"over must be one of the grid's axes {axes}, got {over!r}")
        if len(axes) > 2:
            raise ParameterError(f"plot() draws a grid of one or two axes; this one has {len(axes)}")
        other = next((a for a in axes if a != over), None)
        if ax is None:
            plt = need_matplotlib()
            _, ax = plt.subplots(figsize=(5.6, 4.0), layout="constrained")
        i_over = axes.index(over)
        key = over.split("=")[0]
        x = np.array(_axis_floats(s.grid[over], key))
        order = np.argsort(x)
        curves = None
        if self.limits is not None and fine:
            curves = self._fine_curves(over, other, fine, digits, log)
        log_x = _log_axis(x) if log is None else log
        n_other = len(s.grid[other]) if other else 1

        for j in range(n_other):
            col = f"C{j % 10}"
            col_r = col if other else COLORS["ridge"]  # one series: E_A and E_RR in their usual colours
            if not other:
                col = COLORS["attention"]
            sel = [slice(None)] * len(axes)
            if other:
                sel[axes.index(other)] = j
            sel = tuple(sel)
            tag = ""
            if other:
                okey = other.split("=")[0]
                tag = f", {_label(other)} = {float(_axis_floats([s.grid[other][j]], okey)[0]):.4g}"
            att, att_se = s.attention[sel], s.attention_se[sel]
            rr, rr_se = s.ridge[sel], s.ridge_se[sel]
            if i_over != 0 and att.ndim > 1:
                att, att_se, rr, rr_se = (a.T for a in (att, att_se, rr, rr_se))
            if curves is not None:
                xf, ya, yr = curves[j]
                ax.plot(xf, ya, "-", color=col, lw=1.5, label=f"$E_A$ limit{tag}")
                ax.plot(xf, yr, "--", color=col_r, lw=1.3, label=f"$E_{{RR}}$ limit{tag}")
            elif self.limits is not None:
                la, lr = self.limits.attention[sel], self.limits.ridge[sel]
                ax.plot(x[order], la[order], "-", color=col, lw=1.5, label=f"$E_A$ limit{tag}")
                ax.plot(x[order], lr[order], "--", color=col_r, lw=1.3, label=f"$E_{{RR}}$ limit{tag}")
            ax.errorbar(x[order], att[order], yerr=k * att_se[order], fmt="o", ms=4, capsize=2.5, color=col,
                        label=f"$E_A$ simulation{tag}")
            ax.errorbar(x[order], rr[order], yerr=k * rr_se[order], fmt="s", ms=4, capsize=2.5, color=col_r,
                        mfc="white", label=f"$E_{{RR}}$ simulation{tag}")
        if log_x:
            set_log(ax, "x")
        ax.set_xlabel(_label(over))
        ax.set_ylabel("interpolation error")
        ax.set_title(f"{s.f}: limits (lines) and simulation (n = {s.n}, {s.trials} trials, $\\pm${k:g} se)",
                     fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small", ncol=2 if n_other > 1 else 1)
        return ax

    def _fine_curves(self, over, other, fine, digits, log):
        """``[(x, E_A, E_RR)]`` per value of ``other``: the limits on a fine grid of ``over``."""
        s = self.simulation
        key = over.split("=")[0]
        xf = fine_axis(_axis_floats(s.grid[over], key), fine, log)
        grid = s.sweep_grid()
        grid[_grid_key(over)] = xf
        if other is not None:  # the fine axis first
            grid = {_grid_key(over): xf, **{g: v for g, v in grid.items() if g != _grid_key(over)}}
        opts = {"geometry": s.geometry, "diagonal": s.diagonal, "center": s.center, "progress": False}
        try:
            lim = sweep(s._f_spec(), grid, fast=True, certify=2, **opts)
        except ParameterError:  # a geometry the float64 path does not take: the certified path
            lim = sweep(s._f_spec(), grid, digits=digits, **opts)
        att, rr = lim.attention, lim.ridge
        if other is None:
            return [(np.array(xf), att, rr)]
        return [(np.array(xf), att[:, j], rr[:, j]) for j in range(att.shape[1])]


def simulate_grid(f, grid: dict, *, geometry=None, diagonal: str = "zero", center: bool = False, n: int = 512,
                  trials: int = 10, seed: int = 0, noise: str = "gaussian", workers: int = 1, scheduler=None,
                  store=None, progress: bool | None = None, **values) -> SimulationSweep:
    """The simulation of ``f`` at every point of ``grid`` (read as :func:`symrmt.sweep` reads it).

    ``n``, ``trials``, ``seed``, ``noise``: as for :func:`symrmt.simulate` (``p = round(c n)`` at each
    ``c``); ``workers`` / ``scheduler`` run the trials on Dask, ``store`` keeps and reuses them.
    ``**values``: grid entries as keywords.  Returns a :class:`SimulationSweep`; raises
    :class:`~symrmt.ParameterError` on bad input (as ``sweep`` and ``simulate`` do).

    >>> s = simulate_grid("relu", {"c": [0.5, 1], "gamma": 1}, n=32, trials=2)
    >>> s.shape, [pt["c"] for pt in s.points] == [0.5, 1]
    ((2,), True)
    """
    t0 = time.monotonic()
    if not isinstance(grid, dict):
        raise ParameterError(f"grid must be a dict of grid entries, got {type(grid).__name__}")
    grid = dict(grid)
    for key, value in values.items():
        if key not in GRID_KEYS:
            raise ParameterError(f"simulate() got an unknown keyword {key!r}; grid entries are {', '.join(GRID_KEYS)}")
        if key in grid or any(isinstance(k, tuple) and key in k for k in grid):
            raise ParameterError(f"{key} is given twice: in grid and as a keyword")
        grid[key] = value
    nl = as_nonlinearity(f, center)
    diagonal = check_diagonal(diagonal)
    if isinstance(geometry, dict):
        geometry = as_geometry(geometry)
    axes, fixed = split_grid(grid)
    total = math.prod(len(v) for v in axes.values())
    if total > LIMITS["points"]:
        raise ParseLimitError(f"number of grid points (the product of the axes) = {total} is above the limit "
                              f"{LIMITS['points']} (LIMITS['points'])")
    points, models = grid_points(axes, fixed, geometry)
    groups: dict = {}
    for c, geo, g in models:
        groups.setdefault((c, geo), [])
        if g not in groups[(c, geo)]:
            groups[(c, geo)].append(g)
    parallel = (workers is not None and workers > 1) or scheduler is not None
    fn = simulation_f(nl) if parallel else nl.numpy()
    f_key = f"expr:{nl.expr}"  # the key `symrmt simulate` uses, so that stored trials are shared
    results = {}
    with make_executor(workers=workers if parallel and scheduler is None else None, scheduler=scheduler) as ex, \
            progress_bar(len(groups), f"simulate {nl.name} over {total} points", enabled=progress) as bar:
        for (c, geo), gs in groups.items():
            raw = _simulate(fn, n, c, list(gs), geometry=geo, diagonal=diagonal, noise=noise, trials=trials,
                            seed=seed, progress=False, store=store, f_key=f_key, executor=ex)
            for i, g in enumerate(gs):
                results[(c, geo, g)] = (raw["attention"]["mean"][i], raw["attention"]["se"][i],
                                        raw["ridge"]["mean"][i], raw["ridge"]["se"][i], raw["params"]["p"])
            bar.update()
    rows = [results[m] for m in models]
    return SimulationSweep(
        f=nl.name, expr=str(nl.expr), center=nl.center, diagonal=diagonal, grid=axes, fixed=fixed, geometry=geometry,
        points=tuple(points), n=int(n), trials=int(trials), seed=int(seed), noise=noise,
        attention_flat=tuple(float(r[0]) for r in rows), attention_se_flat=tuple(float(r[1]) for r in rows),
        ridge_flat=tuple(float(r[2]) for r in rows), ridge_se_flat=tuple(float(r[3]) for r in rows),
        p=tuple(int(r[4]) for r in rows), seconds=time.monotonic() - t0)
