r"""A simulation set against the theory: :class:`Comparison` (gaps in standard errors) and
:class:`Extrapolation` (means at several ``n`` fitted in ``1/n``, ``1/sqrt(n)`` or both, with each
fit's chi-square).  NumPy and pandas are imported when a method needs them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import mpmath
import numpy as np

from symrmt.plotting import need_xarray
from symrmt.table import (
    TableResult, float_text, gram_items, html_table, latex_array, latex_tabular, mp_text, need_pandas, param_column,
    se_text, text_table,
)

__all__ = ["Comparison", "Extrapolation", "FormFit", "FORMS", "chi2_pvalue", "gap_in_se"]


# ---------------------------------------------------------------------------
# extrapolation in n: a + b/n, a + b/sqrt(n), a + b/sqrt(n) + c/n
# ---------------------------------------------------------------------------
#: the forms fitted to the means at several n: name -> powers of n in the decaying terms
FORMS = {"1/n": (1.0,), "1/sqrt(n)": (0.5,), "1/sqrt(n) + 1/n": (0.5, 1.0)}
FORM_TEXT = {"1/n": "a + b/n", "1/sqrt(n)": "a + b/sqrt(n)", "1/sqrt(n) + 1/n": "a + b/sqrt(n) + c/n"}
#: a form is rejected when its chi-square p-value is below this
REJECT_P = 0.01


def chi2_pvalue(chi2: float, dof: int) -> float | None:
    """``P(X >= chi2)`` for ``X`` chi-square with ``dof`` degrees of freedom (``None`` at ``dof = 0``).

    >>> round(chi2_pvalue(3.841458820694124, 1), 6)
    0.05
    """
    if dof <= 0:
        return None
    return float(mpmath.gammainc(dof / 2.0, chi2 / 2.0, mpmath.inf, regularized=True))


@dataclass(frozen=True)
class FormFit:
    """One form ``mean(n) = a + sum_k b_k n^(-power_k)`` fitted to one error over every ``gamma``
    (weighted least squares per ``gamma``, weights ``1/se^2``): ``a`` and ``a_se`` per ``gamma``,
    ``slope`` the coefficient of the first decaying term, and the fit's ``chi2`` summed over ``gamma``
    on ``dof`` degrees of freedom (``pvalue`` ``None`` when ``dof = 0``: the form cannot be tested).

    A fit on two degrees of freedom: the chi-square p-value is ``exp(-chi2/2)``:

    >>> import math
    >>> fit = FormFit("1/n", None, None, None, None, chi2=2 * math.log(200), dof=2, pvalue=chi2_pvalue(2 * math.log(200), 2))
    >>> round(fit.pvalue, 12), fit.rejected
    (0.005, True)
    """

    form: str
    a: object
    a_se: object
    slope: object
    chi2_per_gamma: object
    chi2: float
    dof: int
    pvalue: float | None

    @property
    def rejected(self) -> bool:
        """Whether the chi-square p-value is below ``REJECT_P`` (a fit with no p-value is never rejected).

        >>> FormFit("1/n", None, None, None, None, 12.0, 2, 0.0025).rejected, FormFit("1/n", None, None, None, None, 0.0, 0, None).rejected
        (True, False)
        """
        return self.pvalue is not None and self.pvalue < REJECT_P

    def text(self) -> str:
        """One line: the form, its chi-square on its degrees of freedom and the p-value.

        >>> FormFit("1/sqrt(n)", None, None, None, None, chi2=1.5, dof=2, pvalue=0.4724).text()
        'a + b/sqrt(n): chi2 = 1.5 on 2 dof (p = 0.47)'
        >>> FormFit("1/n", None, None, None, None, chi2=0.0, dof=0, pvalue=None).text()
        'a + b/n: chi2 = 0 on 0 dof (untestable: as many terms as sizes)'
        """
        p = "untestable: as many terms as sizes" if self.pvalue is None else f"p = {self.pvalue:.2g}"
        return f"{FORM_TEXT[self.form]}: chi2 = {self.chi2:.3g} on {self.dof} dof ({p})"


def _fit_form(form: str, ns, y, se) -> FormFit | None:
    powers = FORMS[form]
    m, k = len(ns), 1 + len(powers)
    if m < k:
        return None
    x = np.array([[1.0] + [n ** -q for q in powers] for n in ns])  # (sizes, terms)
    w = 1.0 / np.maximum(se, 1e-300) ** 2  # (sizes, gammas)
    a, a_se, slope, chi = [], [], [], []
    for g in range(y.shape[1]):
        xw = x * w[:, g:g + 1]
        normal = x.T @ xw
        coef = np.linalg.solve(normal, xw.T @ y[:, g])
        cov = np.linalg.inv(normal)
        a.append(coef[0])
        a_se.append(np.sqrt(cov[0, 0]))
        slope.append(coef[1])
        chi.append(float((w[:, g] * (y[:, g] - x @ coef) ** 2).sum()))
    dof = (m - k) * y.shape[1]
    total = float(sum(chi))
    return FormFit(form, np.array(a), np.array(a_se), np.array(slope), np.array(chi), total, dof,
                   chi2_pvalue(total, dof))


def choose_form(fits: dict) -> FormFit:
    """The simplest form the data do not reject, in the order of :data:`FORMS` (``1/n`` first); when
    every testable form is rejected, the richest form that could be fitted.

    >>> fits = {"1/n": FormFit("1/n", None, None, None, None, 30.0, 2, 3e-7),
    ...         "1/sqrt(n)": FormFit("1/sqrt(n)", None, None, None, None, 1.0, 2, 0.61), "1/sqrt(n) + 1/n": None}
    >>> choose_form(fits).form
    '1/sqrt(n)'
    """
    testable = [f for f in fits.values() if f is not None]
    for fit in testable:
        if not fit.rejected:
            return fit
    return testable[-1]


@dataclass(frozen=True, eq=False)
class Extrapolation:
    """Simulated means at several ``n`` extrapolated to ``n -> oo``.

    Three forms are fitted to each error, ``mean(n) = a + b/n``, ``a + b/sqrt(n)`` and
    ``a + b/sqrt(n) + c/n`` (:data:`FORMS`; weighted least squares per ``gamma``, weights ``1/se^2``),
    each with its chi-square over every ``gamma`` (:attr:`fits`).  The simplest form the data do
    not reject (p-value >= :data:`REJECT_P`) is used: ``attention``, ``ridge`` hold its ``a`` per
    ``gamma``, ``attention_se``, ``ridge_se`` the standard error of ``a``, ``attention_slope``,
    ``ridge_slope`` its first decaying coefficient, and :attr:`forms` its name per error.  ``chi2``
    (per error, per ``gamma``) is the ``1/n`` fit's.  With two sizes every form passes through both
    means and none can be tested; :meth:`notes` says so.

    Means ``0.5 + 10/n`` (exactly of the ``1/n`` form) at three sizes extrapolate to ``a = 0.5``:

    >>> from types import SimpleNamespace as NS
    >>> sims = [NS(n=n, attention=[0.5 + 10 / n], attention_se=[0.01], ridge=[0.25 + 5 / n], ridge_se=[0.01])
    ...         for n in (100, 200, 400)]
    >>> e = Extrapolation.fit(sims)
    >>> e.sizes, e.forms, round(float(e.attention[0]), 12), round(float(e.ridge_slope[0]), 9)
    ((100, 200, 400), {'E_A': '1/n', 'E_RR': '1/n'}, 0.5, 5.0)
    """

    sizes: tuple
    attention: object
    attention_se: object
    attention_slope: object
    ridge: object
    ridge_se: object
    ridge_slope: object
    chi2: object
    fits: dict = None
    forms: dict = None

    @classmethod
    def fit(cls, sims) -> Extrapolation:
        """The extrapolation of ``sims`` (simulations of one model at two or more sizes ``n``, the same
        ``gamma`` values): every form of ``FORMS`` fitted to the means, weighted by their standard errors,
        and for each error the form :func:`choose_form` keeps.

        Means ``0.3 + 2/sqrt(n)`` at four sizes (standard error 0.001) reject the ``1/n`` form; the
        ``1/sqrt(n)`` form is kept and recovers ``a = 0.3``:

        >>> from types import SimpleNamespace as NS
        >>> sims = [NS(n=n, attention=[0.3 + 2 / n ** 0.5], attention_se=[1e-3], ridge=[0.3 + 2 / n ** 0.5],
        ...            ridge_se=[1e-3]) for n in (64, 256, 1024, 4096)]
        >>> e = Extrapolation.fit(sims)
        >>> e.fits["E_A"]["1/n"].rejected, e.forms["E_A"], round(float(e.attention[0]), 10)
        (True, '1/sqrt(n)', 0.3)
        """
        sims = sorted(sims, key=lambda s: s.n)
        ns = [s.n for s in sims]
        fits, used = {}, {}
        for name, mean, se in (("E_A", "attention", "attention_se"), ("E_RR", "ridge", "ridge_se")):
            y = np.array([getattr(s, mean) for s in sims])
            e = np.array([getattr(s, se) for s in sims])
            fits[name] = {form: _fit_form(form, ns, y, e) for form in FORMS}
            used[name] = choose_form(fits[name])
        a, r = used["E_A"], used["E_RR"]
        return cls(sizes=tuple(ns), attention=a.a, attention_se=a.a_se, attention_slope=a.slope, ridge=r.a,
                   ridge_se=r.a_se, ridge_slope=r.slope,
                   chi2=np.array([fits["E_A"]["1/n"].chi2_per_gamma, fits["E_RR"]["1/n"].chi2_per_gamma]),
                   fits=fits, forms={k: v.form for k, v in used.items()})

    def form_of(self, error: str) -> str:
        """The form used for ``error`` (``"E_A"`` or ``"E_RR"``).

        >>> from types import SimpleNamespace as NS
        >>> sims = [NS(n=n, attention=[1 / n], attention_se=[0.1], ridge=[1 / n], ridge_se=[0.1]) for n in (10, 20, 40)]
        >>> Extrapolation.fit(sims).form_of("E_RR")
        '1/n'
        """
        return self.forms[error]

    def quality(self) -> list:
        """One sentence per error: each form's chi-square, which were rejected and which is used.

        >>> from types import SimpleNamespace as NS
        >>> sims = [NS(n=n, attention=[1 / n], attention_se=[0.1], ridge=[1 / n], ridge_se=[0.1]) for n in (10, 20)]
        >>> print(Extrapolation.fit(sims).quality()[0])
        E_A against n = 10, 20: a + b/n: chi2 = 0 on 0 dof (untestable: as many terms as sizes); a + b/sqrt(n): chi2 = ... on 0 dof (untestable: as many terms as sizes); used: a + b/n
        """
        out = []
        for name, fits in self.fits.items():
            parts = [f.text() + (", rejected" if f.rejected else "") for f in fits.values() if f is not None]
            out.append(f"{name} against n = {', '.join(map(str, self.sizes))}: " + "; ".join(parts)
                       + f"; used: {FORM_TEXT[self.forms[name]]}")
        return out


def gap_in_se(mean, lim, se):
    """``(mean - lim)/se`` elementwise (NumPy arrays): 0 where the two are equal, ``inf`` where ``se = 0`` and
    they differ.

    >>> import numpy as np
    >>> gap_in_se(np.array([1.0, 2.0]), np.array([1.0, 1.0]), np.array([0.0, 0.5])).tolist()
    [0.0, 2.0]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = (mean - lim) / se
    return np.where(mean == lim, 0.0, gap)


# ---------------------------------------------------------------------------
# simulation against limit
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Comparison(TableResult):
    """A simulation against the limit of the same model: signed gaps in standard errors.

    ``attention_gap[i] = (mean_i - limit_i) / se_i`` (``inf`` when ``se_i = 0`` and the
    two differ); likewise ``ridge_gap``.  :meth:`within` applies the rule
    ``|mean - limit| <= k se + slack``.  Made by ``SimulationResult.compare(limit)``.

    Examples
    --------
    A simulation of two trials (mean 0.6, se 0.1) against limits given by hand:

    >>> import numpy as np
    >>> from fractions import Fraction
    >>> from types import SimpleNamespace
    >>> from symrmt.results import SimulationResult
    >>> sim = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=Fraction(1, 2), gamma_exact=(Fraction(1),),
    ...                        geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
    ...                        attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.6]]))
    >>> limit = SimpleNamespace(gamma=np.array([1.0]), attention=np.array([0.4]), ridge=np.array([0.5]))
    >>> cmp = Comparison(sim, limit)
    >>> cmp.attention_gap.round(6).tolist(), cmp.ridge_gap.round(6).tolist(), round(cmp.max_gap, 6)
    ([2.0], [0.0], 2.0)
    >>> cmp.within(k=3), cmp.within(k=1)
    (True, False)
    """

    simulation: object  # a symrmt.results.SimulationResult (not imported: results imports this module)
    theory: object  # a symrmt.results.LimitResult
    extrapolation: Extrapolation | None = None

    columns = ("gamma", "attention_limit", "attention_mean", "attention_se", "attention_gap",
               "ridge_limit", "ridge_mean", "ridge_se", "ridge_gap")

    @property
    def gamma(self):
        """The ``gamma`` values (float64), those of the limit.

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), attention=np.array([0.2]), ridge=np.array([0.5]))
        >>> cmp = Comparison(sim, limit)
        >>> cmp.gamma.tolist()
        [1.0]
        """
        return self.theory.gamma

    _gap = staticmethod(gap_in_se)

    @property
    def attention_gap(self):
        """``(mean - limit)/se`` of ``E_A`` at each ``gamma`` (0 where equal, ``inf`` where ``se = 0``).

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), attention=np.array([0.2]), ridge=np.array([0.5]))
        >>> cmp = Comparison(sim, limit)
        >>> cmp.attention_gap.round(9).tolist()
        [4.0]
        """
        s = self.simulation
        return self._gap(s.attention, self.theory.attention, s.attention_se)

    @property
    def ridge_gap(self):
        """``(mean - limit)/se`` of ``E_RR`` at each ``gamma`` (0 where equal, ``inf`` where ``se = 0``).

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), attention=np.array([0.2]), ridge=np.array([0.5]))
        >>> cmp = Comparison(sim, limit)
        >>> cmp.ridge_gap.tolist()
        [0.0]
        """
        s = self.simulation
        return self._gap(s.ridge, self.theory.ridge, s.ridge_se)

    @property
    def attention(self):
        """Simulation mean minus limit, for ``E_A``.

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), attention=np.array([0.2]), ridge=np.array([0.5]))
        >>> cmp = Comparison(sim, limit)
        >>> cmp.attention.round(9).tolist()
        [0.4]
        """
        return self.simulation.attention - self.theory.attention

    @property
    def ridge(self):
        """Simulation mean minus limit, for ``E_RR``.

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), attention=np.array([0.2]), ridge=np.array([0.5]))
        >>> cmp = Comparison(sim, limit)
        >>> cmp.ridge.tolist()
        [0.0]
        """
        return self.simulation.ridge - self.theory.ridge

    @property
    def extrapolated_attention_gap(self):
        """``(a - limit)/se(a)`` for ``E_A`` with ``a`` the extrapolated mean (None without sizes).

        Means ``0.5 + 10/n`` extrapolate to the limit 0.5 exactly:

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sims = [NS(n=n, attention=np.array([0.5 + 10 / n]), attention_se=np.array([0.01]), ridge=np.array([0.25 + 5 / n]),
        ...            ridge_se=np.array([0.01])) for n in (100, 200, 400)]
        >>> limit = NS(gamma=np.array([1.0]), attention=np.array([0.5]), ridge=np.array([0.26]))
        >>> cmp = Comparison(sims[0], limit, Extrapolation.fit(sims))
        >>> cmp.extrapolated_attention_gap.round(6).tolist(), cmp.attention_gap.round(6).tolist()
        ([0.0], [10.0])
        """
        e = self.extrapolation
        return None if e is None else self._gap(e.attention, self.theory.attention, e.attention_se)

    @property
    def extrapolated_ridge_gap(self):
        """``(a - limit)/se(a)`` for ``E_RR`` with ``a`` the extrapolated mean (None without sizes).

        Means ``0.25 + 5/n`` extrapolate to 0.25, one standard error ``se(a)`` below the limit 0.26 here:

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sims = [NS(n=n, attention=np.array([0.5 + 10 / n]), attention_se=np.array([0.01]), ridge=np.array([0.25 + 5 / n]),
        ...            ridge_se=np.array([0.01])) for n in (100, 200, 400)]
        >>> limit = NS(gamma=np.array([1.0]), attention=np.array([0.5]), ridge=np.array([0.26]))
        >>> cmp = Comparison(sims[0], limit, Extrapolation.fit(sims))
        >>> round(float(cmp.extrapolated_ridge_gap[0] * cmp.extrapolation.ridge_se[0]), 9)
        -0.01
        """
        e = self.extrapolation
        return None if e is None else self._gap(e.ridge, self.theory.ridge, e.ridge_se)

    def notes(self, k: float = 3.0) -> list:
        """Sentences on the gaps: which are finite-size effects (above ``k`` se at ``n``, within ``k`` se
        once extrapolated), which remain after the extrapolation, how well each form fits the means
        and whether any does, and, without an extrapolation, how to get one.

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, p=32, trials=2, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), gamma_exact=(1,), attention=np.array([0.2]), ridge=np.array([0.5]),
        ...            attention_mp=(0.2,), ridge_mp=(0.5,))
        >>> cmp = Comparison(sim, limit)
        >>> cmp.notes()
        ['gaps above 3 se at n = 64. compare(theory, sizes=[n1, n2]) simulates other sizes and extrapolates in n.']
        >>> cmp.notes(k=5)
        []
        """
        out = []
        gaps = {"E_A": self.attention_gap, "E_RR": self.ridge_gap}
        e = self.extrapolation
        if e is not None:
            ext = {"E_A": self.extrapolated_attention_gap, "E_RR": self.extrapolated_ridge_gap}
            sizes = ", ".join(map(str, e.sizes))
            for name in gaps:
                form = e.forms[name]
                for i, g in enumerate(self.theory.gamma_exact):
                    at_n, inf = gaps[name][i], ext[name][i]
                    if abs(at_n) > k and abs(inf) <= k:
                        out.append(f"{name} at gamma = {float_text(g)}: {at_n:+.2f} se at n = {self.simulation.n}, "
                                   f"{inf:+.2f} se extrapolated in {form}: a finite-size effect")
                    elif abs(inf) > k:
                        out.append(f"{name} at gamma = {float_text(g)}: still {inf:+.2f} se after the {form} "
                                   f"extrapolation from n = {sizes}: the extrapolation does not reach the limit")
            out.extend("fit: " + q for q in e.quality())
            if len(e.sizes) == 2:
                out.append("with two sizes every form passes through both means, so none can be tested and "
                           "a + b/n is used; simulate a third size (sizes=[n1, n2]) to test it")
            for name, fits in e.fits.items():
                testable = [f for f in fits.values() if f is not None and f.pvalue is not None]
                if testable and all(f.rejected for f in testable):
                    out.append(f"no form fits the means of {name} (every testable form has p < {REJECT_P:g}): the "
                               "extrapolated value is not reliable; simulate larger n or more trials")
        elif np.any(np.abs(np.concatenate([gaps["E_A"], gaps["E_RR"]])) > k):
            aligned = self.simulation.geometry is not None and any(
                v != 0 for key, v in gram_items(self.simulation.geometry) if key in ("muwk", "muwq"))
            known = (" At weights aligned with mu the simulated E_A sits below its limit at practical n, a "
                     "finite-size effect that shrinks slowly (like n^(-1/2) to n^(-0.7)) as n grows."
                     if aligned and np.any(gaps["E_A"] < -k) else "")
            out.append(f"gaps above {k:g} se at n = {self.simulation.n}.{known} compare(theory, sizes=[n1, n2]) "
                       "simulates other sizes and extrapolates in n.")
        return out

    @property
    def max_gap(self) -> float:
        """The largest ``|gap|`` in standard errors over both errors and every ``gamma``.

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), attention=np.array([0.2]), ridge=np.array([0.5]))
        >>> cmp = Comparison(sim, limit)
        >>> round(cmp.max_gap, 9)
        4.0
        """
        return float(np.max(np.abs(np.concatenate([self.attention_gap, self.ridge_gap]))))

    def within(self, k: float = 3.0, slack: float = 0.0) -> bool:
        """``|mean - limit| <= k se + slack`` at every ``gamma``, for both errors.

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, p=32, trials=2, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), gamma_exact=(1,), attention=np.array([0.2]), ridge=np.array([0.5]),
        ...            attention_mp=(0.2,), ridge_mp=(0.5,))
        >>> cmp = Comparison(sim, limit)
        >>> cmp.within(), cmp.within(k=4), cmp.within(slack=0.1)
        (False, True, True)
        """
        s = self.simulation
        ok_a = np.abs(self.attention) <= k * s.attention_se + slack
        ok_r = np.abs(self.ridge) <= k * s.ridge_se + slack
        return bool(np.all(ok_a) and np.all(ok_r))

    def to_numpy(self):
        """Float64 array ``(len(gamma), 9)`` with the columns of :attr:`columns`.

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, p=32, trials=2, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), gamma_exact=(1,), attention=np.array([0.2]), ridge=np.array([0.5]),
        ...            attention_mp=(0.2,), ridge_mp=(0.5,))
        >>> cmp = Comparison(sim, limit)
        >>> cmp.to_numpy().round(6).tolist()
        [[1.0, 0.2, 0.6, 0.1, 4.0, 0.5, 0.5, 0.05, 0.0]]
        """
        s, t = self.simulation, self.theory
        return np.column_stack([t.gamma, t.attention, s.attention, s.attention_se, self.attention_gap,
                                t.ridge, s.ridge, s.ridge_se, self.ridge_gap])

    def to_pandas(self, long: bool = False):
        """A DataFrame with :attr:`columns` (one row per gamma); ``long=True``: one row per gamma and error
        with ``limit, mean, se, gap``.

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, p=32, trials=2, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), gamma_exact=(1,), attention=np.array([0.2]), ridge=np.array([0.5]),
        ...            attention_mp=(0.2,), ridge_mp=(0.5,))
        >>> cmp = Comparison(sim, limit)
        >>> cmp.to_pandas()[["attention_gap", "ridge_gap"]].round(6).values.tolist()
        [[4.0, 0.0]]
        >>> cmp.to_pandas(long=True)[["error", "gap"]].round(6).values.tolist()
        [['attention', 4.0], ['ridge', 0.0]]
        """
        pd = need_pandas()
        df = pd.DataFrame(self.to_numpy(), columns=list(self.columns))
        if long:
            parts = []
            for err in ("attention", "ridge"):
                part = df[["gamma", f"{err}_limit", f"{err}_mean", f"{err}_se", f"{err}_gap"]].copy()
                part.columns = ["gamma", "limit", "mean", "se", "gap"]
                part.insert(1, "error", err)
                parts.append(part)
            return pd.concat(parts, ignore_index=True)
        return df

    def to_xarray(self):
        """An ``xarray.Dataset`` of every column over ``gamma``; raises :class:`~symrmt.errors.ExtraUnavailable`
        without xarray.  The gap is ``(0.6 - 0.2)/0.1 = 4``:

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(gamma=np.array([1.0]), attention=np.array([0.6]), attention_se=np.array([0.1]),
        ...          ridge=np.array([0.5]), ridge_se=np.array([0.05]), n=64, p=32, trials=2, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), gamma_exact=(1,), attention=np.array([0.2]), ridge=np.array([0.5]),
        ...            attention_mp=(0.2,), ridge_mp=(0.5,))
        >>> cmp = Comparison(sim, limit)
        >>> ds = cmp.to_xarray()
        >>> ds["attention_gap"].values.round(12).tolist(), ds["ridge_gap"].values.tolist(), ds["gamma"].values.tolist()
        ([4.0], [0.0], [1.0])
        """
        xr = need_xarray()
        data = self.to_numpy()
        return xr.Dataset({name: ("gamma", data[:, i]) for i, name in enumerate(self.columns) if name != "gamma"},
                          coords={"gamma": data[:, 0]})

    def plot(self, ax=None, k: float = 1.0, log=None, fine: int = 61):
        """The simulation's error bars (``k`` se) over the limit curves, evaluated on ``fine`` values of
        ``gamma`` spanning the simulated ones (smooth; ``fine=0``: only at the simulated ``gamma``), in
        matching colours (matplotlib); takes optional axes, ``k``, ``log`` and ``fine``, returns the axes.  A
        limit without ``recompute`` is drawn through its own points (axes of a ``matplotlib.figure.Figure``,
        nothing rendered):

        >>> import numpy as np
        >>> from fractions import Fraction as F
        >>> from types import SimpleNamespace as NS
        >>> from matplotlib.figure import Figure
        >>> from symrmt.results import SimulationResult
        >>> sim = SimulationResult(f="tanh", expr="tanh(t)", center=False, c=F(1, 2), gamma_exact=(F(1),),
        ...                        geometry=None, diagonal="zero", n=64, p=32, trials=2, seed=0, noise="gaussian",
        ...                        attention_trials=np.array([[0.5], [0.7]]), ridge_trials=np.array([[0.4], [0.6]]))
        >>> limit = NS(gamma=np.array([1.0]), gamma_exact=(1,), attention=np.array([0.2]), ridge=np.array([0.5]),
        ...            attention_mp=(0.2,), ridge_mp=(0.5,))
        >>> ax = Comparison(sim, limit).plot(ax=Figure().add_subplot())
        >>> [line.get_ydata().tolist() for line in ax.get_lines()[:2]]
        [[0.2], [0.5]]
        """
        return self.simulation.plot(ax=ax, limit=self.theory, k=k, log=log, fine=fine)

    def _rows(self):
        s, t = self.simulation, self.theory
        ga, gr = self.attention_gap, self.ridge_gap
        return [[g, mp_text(t.attention_mp[i], 10), se_text(s.attention[i], s.attention_se[i]), f"{ga[i]:+.2f}",
                 mp_text(t.ridge_mp[i], 10), se_text(s.ridge[i], s.ridge_se[i]), f"{gr[i]:+.2f}"]
                for i, g in enumerate(param_column(t.gamma_exact))]

    _HEADER = ["gamma", "E_A limit", "E_A simulation", "gap/se", "E_RR limit", "E_RR simulation", "gap/se"]

    def _caption(self) -> str:
        s = self.simulation
        return (f"simulation (n = {s.n}, p = {s.p}, {s.trials} trials) against the limit; "
                "gap/se = (mean - limit)/se")

    def _extrapolation_rows(self):
        e = self.extrapolation
        ga, gr = self.extrapolated_attention_gap, self.extrapolated_ridge_gap
        return [[float_text(g), se_text(e.attention[i], e.attention_se[i]), f"{ga[i]:+.2f}",
                 se_text(e.ridge[i], e.ridge_se[i]), f"{gr[i]:+.2f}"] for i, g in enumerate(self.theory.gamma_exact)]

    def __str__(self) -> str:
        out = self._caption() + "\n" + text_table(self._HEADER, self._rows())
        if self.extrapolation is not None:
            e = self.extrapolation
            out += (f"\nextrapolated from n = {', '.join(map(str, e.sizes))} (E_A: mean(n) = "
                    f"{FORM_TEXT[e.forms['E_A']]}, E_RR: {FORM_TEXT[e.forms['E_RR']]}; gap/se = (a - limit)/se(a))\n"
                    + text_table(["gamma", "E_A (n -> oo)", "gap/se", "E_RR (n -> oo)", "gap/se"],
                                 self._extrapolation_rows()))
        for note in self.notes():
            out += "\nnote: " + note
        return out

    def __repr__(self) -> str:
        return f"<Comparison max |gap| = {self.max_gap:.2f} se>"

    def _repr_html_(self) -> str:
        out = html_table(self._HEADER, self._rows(), self._caption())
        if self.extrapolation is not None:
            out += html_table(["γ", "E_A (n → ∞)", "gap/se", "E_RR (n → ∞)", "gap/se"], self._extrapolation_rows(),
                              f"extrapolated from n = {', '.join(map(str, self.extrapolation.sizes))}")
        return out + "".join(f"<p>note: {html.escape(note)}</p>" for note in self.notes())

    def latex(self) -> str:
        r"""A ``tabular`` with two rows per ``gamma`` (``E_A``, then ``E_RR``), so that it fits a page.

        >>> import numpy as np
        >>> from types import SimpleNamespace as NS
        >>> sim = NS(attention=np.array([0.6]), attention_se=np.array([0.1]), ridge=np.array([0.5]),
        ...          ridge_se=np.array([0.05]), n=64, p=32, trials=2, geometry=None)
        >>> limit = NS(gamma=np.array([1.0]), gamma_exact=(1,), attention=np.array([0.2]), ridge=np.array([0.5]),
        ...            attention_mp=(0.2,), ridge_mp=(0.5,))
        >>> cmp = Comparison(sim, limit)
        >>> print(cmp.latex(), end="")
        % simulation (n = 64, p = 32, 2 trials) against the limit; gap/se = (mean - limit)/se
        \begin{tabular}{rrrrr}
        \hline
        $\gamma$ & error & limit & simulation (mean $\pm$ se) & gap/se \\
        \hline
        1 & $E_A$ & 0.2 & $0.600000 \pm 1.0e-01$ & +4.00 \\
         & $E_{RR}$ & 0.5 & $0.500000 \pm 5.0e-02$ & +0.00 \\
        \hline
        \end{tabular}
        """
        header = [r"$\gamma$", "error", "limit", r"simulation (mean $\pm$ se)", "gap/se"]
        rows = []
        for r in self._rows():
            rows.append([r[0], "$E_A$", r[1], "$" + r[2].replace("±", r"\pm") + "$", r[3]])
            rows.append(["", "$E_{RR}$", r[4], "$" + r[5].replace("±", r"\pm") + "$", r[6]])
        return latex_tabular(header, rows, self._caption(), raw=(1, 3))

    def _repr_latex_(self) -> str:
        rows = []
        for r in self._rows():
            rows.append([r[0], "E_A", r[1], r[2].replace("±", r"\pm"), r[3]])
            rows.append(["", "E_{RR}", r[4], r[5].replace("±", r"\pm"), r[6]])
        return latex_array([r"\gamma", r"\text{error}", r"\text{limit}", r"\text{simulation}",
                            r"\text{gap}/\text{se}"], rows)
