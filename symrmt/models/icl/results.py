r"""The results of the ICL model: :class:`ICLLimit` (``symrmt.icl``) and :class:`ICLSimulation`
(``symrmt.icl_simulate``), values that carry their inputs.

Both follow the table protocol of :class:`symrmt.table.TableResult` (text, HTML, LaTeX, pandas, xarray): one row
with the inputs and the value.  ``str()`` of an :class:`ICLLimit` is the value alone (what ``print(symrmt.icl(...))``
shows); its table is :meth:`ICLLimit.table`.  Neither SymPy nor NumPy is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import mpmath

from symrmt.table import (
    TableResult, digit_lines, is_long, latex_array, latex_tabular, math_text, mp_text, need_pandas, param_text,
    text_table,
)

__all__ = ["ICLLimit", "ICLSimulation"]


def _exact(v: Fraction) -> str:
    """``p/q`` (``1/10``), or a decimal where that text is long (``1e-300``, not 301 digits): :func:`param_text`."""
    return param_text(v) if is_long(v) else str(v)


@dataclass(frozen=True)
class ICLLimit(TableResult):
    r"""The ridgeless limit of the ICL error: ``error`` (mpf, correct to ``digits`` significant digits).

    Also ``alpha, kappa, tau, rho`` (exact Fractions), ``branch`` (``"below"``: ``tau < 1``, ``"above"``:
    ``tau > 1``), ``x = (1 + rho)/alpha``, ``m = M_kappa(x)`` and ``mu = x M_{kappa/tau}(x)`` (mpf; ``mu`` is
    ``None`` above the pole, where it does not enter).  ``str()`` is the error at ``digits``;
    :meth:`to_dict` the JSON record (key ``error``); :meth:`table`, ``_repr_html_``, :meth:`latex` and
    :meth:`to_pandas` the table protocol's forms (one row).

    >>> r = ICLLimit(mpmath.mpf("1.25"), 5, Fraction(1), Fraction(1, 2), Fraction(2), Fraction(1, 10), "above",
    ...              mpmath.mpf("1.1"), mpmath.mpf("0.5"), None)
    >>> print(r)
    1.25
    >>> print(r.table())
    ICL error, ridgeless limit d -> oo (5 digits)
    alpha  kappa  tau  rho  branch  e_ICL    m  mu
    -----  -----  ---  ---  ------  -----  ---  --
        1    0.5    2  0.1   above   1.25  0.5   -
    """

    error: object
    digits: int
    alpha: Fraction
    kappa: Fraction
    tau: Fraction
    rho: Fraction
    branch: str
    x: object
    m: object
    mu: object

    def __str__(self):
        return mpmath.nstr(self.error, self.digits)

    def __float__(self):
        return float(self.error)

    def to_dict(self, num=None) -> dict:
        """``{"error", "alpha", "kappa", "tau", "rho", "branch", "m", "mu", "digits"}``; numbers through ``num``
        (default: decimal strings at ``digits``).

        >>> r = ICLLimit(mpmath.mpf("1.25"), 5, Fraction(1), Fraction(1, 2), Fraction(2), Fraction(1, 10), "above",
        ...              mpmath.mpf("1.1"), mpmath.mpf("0.5"), None)
        >>> r.to_dict()["kappa"], r.to_dict()["error"], r.to_dict()["mu"]
        ('1/2', '1.25', None)
        """
        num = num or (lambda v, dg: mpmath.nstr(v, dg))
        return {"error": num(self.error, self.digits), "alpha": _exact(self.alpha), "kappa": _exact(self.kappa),
                "tau": _exact(self.tau), "rho": _exact(self.rho), "branch": self.branch,
                "m": num(self.m, self.digits), "mu": None if self.mu is None else num(self.mu, self.digits),
                "digits": self.digits}

    # -- the table protocol -------------------------------------------------------
    def _caption(self) -> str:
        return f"ICL error, ridgeless limit d -> oo ({self.digits} digits)"

    def _columns(self) -> list:
        return ["alpha", "kappa", "tau", "rho", "branch", "e_ICL", "m", "mu"]

    def _columns_tex(self) -> list:
        return [r"\alpha", r"\kappa", r"\tau", r"\rho", r"\text{branch}", r"e_{\text{ICL}}", "m", r"\mu"]

    def _rows(self, limit: int | None = None) -> list:
        params = [param_text(v, self.digits) for v in (self.alpha, self.kappa, self.tau, self.rho)]
        mu = "-" if self.mu is None else mp_text(self.mu, self.digits)
        return [params + [self.branch, mp_text(self.error, self.digits), mp_text(self.m, self.digits), mu]][:limit]

    def table(self) -> str:
        """The text table of the table protocol (``str()`` is the value alone)."""
        return self._caption() + "\n" + text_table(self._columns(), self._rows())

    def latex(self) -> str:
        r"""A LaTeX ``tabular`` of one quantity a row (the caption in a comment line above), a value's digits
        grouped by five, 40 to a line, so that the table fits the page at any ``digits``.

        >>> r = ICLLimit(mpmath.mpf("1.25"), 5, Fraction(1), Fraction(1, 2), Fraction(2), Fraction(1, 10), "above",
        ...              mpmath.mpf("1.1"), mpmath.mpf("0.5"), None)
        >>> print(r.latex(), end="")
        % ICL error, ridgeless limit d -> oo (5 digits)
        \begin{tabular}{rl}
        \hline
        quantity & value \\
        \hline
        $\alpha$ & 1 \\
        $\kappa$ & 0.5 \\
        $\tau$ & 2 \\
        $\rho$ & 0.1 \\
        $\text{branch}$ & above \\
        $e_{\text{ICL}}$ & 1.25 \\
        $m$ & 0.5 \\
        $\mu$ & - \\
        \hline
        \end{tabular}
        """
        rows = [[f"${tex}$" if tex else "", line] for tex, line in self._quantity_lines()]
        return latex_tabular(["quantity", "value"], rows, self._caption(), raw=(0,), cols="rl")

    def _repr_latex_(self) -> str:
        rows = [[tex, math_text(line)] for tex, line in self._quantity_lines()]
        return latex_array([r"\text{quantity}", r"\text{value}"], rows)

    def _quantity_lines(self) -> list:
        """``(tex name or "", text)``: one quantity a row, a long value on lines of 40 digits."""
        out = []
        for name, tex, value in zip(self._columns(), self._columns_tex(), self._rows()[0]):
            lines = digit_lines(value) if name in ("e_ICL", "m", "mu") and value != "-" else [value]
            out += [(tex if k == 0 else "", line) for k, line in enumerate(lines)]
        return out

    def to_pandas(self):
        """One row: ``alpha, kappa, tau, rho`` (floats), ``branch``, ``error``, ``m``, ``mu`` (floats; ``mu``
        NaN above the pole); the exact record :meth:`to_dict` in ``.attrs`` (needs pandas).

        >>> r = ICLLimit(mpmath.mpf("1.25"), 5, Fraction(1), Fraction(1, 2), Fraction(2), Fraction(1, 10), "above",
        ...              mpmath.mpf("1.1"), mpmath.mpf("0.5"), None)
        >>> df = r.to_pandas()
        >>> df.loc[0, "error"], df.attrs["kappa"]
        (np.float64(1.25), '1/2')
        """
        pd = need_pandas()
        row = {"alpha": float(self.alpha), "kappa": float(self.kappa), "tau": float(self.tau),
               "rho": float(self.rho), "branch": self.branch, "error": float(self.error), "m": float(self.m),
               "mu": float("nan") if self.mu is None else float(self.mu)}
        df = pd.DataFrame([row])
        df.attrs.update(self.to_dict())
        return df


@dataclass(frozen=True)
class ICLSimulation(TableResult):
    """Monte-Carlo ICL error: ``mean`` and ``se`` (standard error) over ``trials`` pretraining draws.

    Also ``errors`` (one exact test error per trial), the sizes ``d, ell, k, n`` (and ``p = d(d+1)``
    features), ``alpha, kappa, tau, rho`` (exact), ``seed``, and how many trials were computed now, taken
    from a trial store, or found there under older numerics (``trials_computed``, ``trials_reused``,
    ``trials_stale``).  ``str()``, ``_repr_html_``, :meth:`latex` and :meth:`to_pandas` are the table
    protocol's forms (one row); :meth:`to_dict` the JSON record.

    >>> s = ICLSimulation(1.5, 0.25, 2, 4, 4, 4, 8, Fraction(1), Fraction(1), Fraction(1, 2), Fraction(0), 0,
    ...                   (1.25, 1.75))
    >>> print(s)
    ICL error simulated: alpha = 1, kappa = 1, tau = 0.5, rho = 0; seed 0
    d  ell  k  n  features  trials  e_ICL (mean)       se
    -  ---  -  -  --------  ------  ------------  -------
    4    4  4  8        20       2      1.500000  2.5e-01
    """

    mean: float
    se: float
    trials: int
    d: int
    ell: int
    k: int
    n: int
    alpha: Fraction
    kappa: Fraction
    tau: Fraction
    rho: Fraction
    seed: int
    errors: tuple = field(repr=False)
    trials_computed: int = field(default=0, repr=False, compare=False)
    trials_reused: int = field(default=0, repr=False, compare=False)
    trials_stale: int = field(default=0, repr=False, compare=False)

    @property
    def p(self) -> int:
        """The number of features ``d(d+1)`` (the finite-``d`` pole is ``n = p``)."""
        return self.d * (self.d + 1)

    def to_dict(self) -> dict:
        """The JSON record: ``error`` (the mean), ``se``, ``trials``, sizes, parameters, ``errors``.

        >>> s = ICLSimulation(1.5, 0.25, 2, 4, 4, 4, 8, Fraction(1), Fraction(1), Fraction(1, 2), Fraction(0), 0,
        ...                   (1.25, 1.75))
        >>> s.to_dict()["features"], s.to_dict()["tau"], s.to_dict()["errors"]
        (20, '1/2', [1.25, 1.75])
        """
        return {"error": self.mean, "se": self.se, "trials": self.trials, "d": self.d, "ell": self.ell,
                "k": self.k, "n": self.n, "features": self.p, "alpha": _exact(self.alpha),
                "kappa": _exact(self.kappa), "tau": _exact(self.tau), "rho": _exact(self.rho), "seed": self.seed,
                "errors": list(self.errors)}

    # -- the table protocol -------------------------------------------------------
    def _caption(self) -> str:
        params = ", ".join(f"{name} = {param_text(v)}" for name, v in
                           (("alpha", self.alpha), ("kappa", self.kappa), ("tau", self.tau), ("rho", self.rho)))
        return f"ICL error simulated: {params}; seed {self.seed}"

    def _columns(self) -> list:
        return ["d", "ell", "k", "n", "features", "trials", "e_ICL (mean)", "se"]

    def _columns_tex(self) -> list:
        return ["d", r"\ell", "k", "n", r"\text{features}", r"\text{trials}", r"e_{\text{ICL}}\ \text{(mean)}",
                r"\text{se}"]

    def _rows(self, limit: int | None = None) -> list:
        return [[str(v) for v in (self.d, self.ell, self.k, self.n, self.p, self.trials)]
                + [f"{self.mean:.6f}", f"{self.se:.1e}"]][:limit]

    def to_pandas(self):
        """One row: the sizes ``d, ell, k, n, features, trials`` (ints), ``error`` (the mean) and ``se`` (floats);
        the JSON record :meth:`to_dict` (parameters exact, the per-trial ``errors``) in ``.attrs`` (needs pandas).

        >>> s = ICLSimulation(1.5, 0.25, 2, 4, 4, 4, 8, Fraction(1), Fraction(1), Fraction(1, 2), Fraction(0), 0,
        ...                   (1.25, 1.75))
        >>> df = s.to_pandas()
        >>> df[["n", "error", "se"]].to_dict("records"), df.attrs["errors"]
        ([{'n': 8, 'error': 1.5, 'se': 0.25}], [1.25, 1.75])
        """
        pd = need_pandas()
        df = pd.DataFrame([{"d": self.d, "ell": self.ell, "k": self.k, "n": self.n, "features": self.p,
                            "trials": self.trials, "error": self.mean, "se": self.se}])
        df.attrs.update(self.to_dict())
        return df
