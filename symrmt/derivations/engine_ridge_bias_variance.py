r"""auto-fpt example 4, the bias and the variance of ridge regression, written as expressions.

Claim.  With ``Z`` an ``n x d`` Gaussian matrix, ``d = phi n``, a covariance ``Sigma`` with a
finite law ``sum_a w_a delta_{s_a}``, ``S = Sigma^{1/2}``, ``Sigma_hat = S Z^T Z S/n`` and
``R = (Sigma_hat + lambda I_d)^{-1}``, the bias (isotropic prior ``Theta = I``) and the variance

.. math::

    B = \lambda^2 \tau(R \Theta R \Sigma), \qquad V = \tau(R \hat\Sigma R \Sigma)

have the limits ``B = -(lambda^2/phi) delta'(lambda)`` and ``V = (delta + lambda delta')/phi``,
where ``delta`` solves the deterministic-equivalent equation
``delta = phi sum_a w_a s_a / (s_a/(1 + delta) + lambda)`` (``R ~ (Sigma/(1 + delta) + lambda)^{-1}``,
``delta = lim tr(Sigma R)/n``), because ``lambda^2 tau(R^2 Sigma) = -lambda^2 d/dlambda tau(R Sigma)`` and
``R Sigma_hat = I - lambda R``.  ``delta'`` comes from implicit differentiation, exactly.

A prior ``Theta = t_0 I + t_1 Sigma`` that commutes with ``Sigma`` is checked against simulation.

symrmt needs the three expressions below (``R`` written out) with ``S`` declared by its law; the
engine derives the pencils, differentiates nothing by hand and certifies.  auto-fpt needs two
pencils built beforehand (``ridge-regression-error-bias-pencil.pkl`` and ``-var-pencil.pkl``,
NCAlgebra in Mathematica), ``Theta`` and ``Sigma`` as symbols assumed to commute, and returns the
equations unsolved.
"""

from __future__ import annotations

import mpmath

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.derivations import _engine_examples as ex
from symrmt.engine import Model

NAME = "engine_ridge_bias_variance"
R = "inv(S*Z.T*Z*S/n + lam*I(d))"
BIAS = f"lam**2*trace({R}*{R}*S*S)"
BIAS_PRIOR = f"lam**2*trace({R}*(t0*I(d) + t1*S*S)*{R}*S*S)"
VARIANCE = f"trace({R}*S*Z.T*Z*S/n*{R}*S*S)"
SQRT_VALUES, WEIGHTS = ("1", "2"), ("1/2", "1/2")
POINTS = ({"phi": "1/2", "lam": "1/10"}, {"phi": "2", "lam": "1/2"})


def model():
    """The engine :class:`~symrmt.engine.Model` this derivation declares (its dimensions and matrices)."""
    m = Model()
    m.dim("d", "phi*n")
    m.gaussian("Z", "n", "d")
    m.diag("S", "d", list(SQRT_VALUES), list(WEIGHTS))
    return m


def _q(text):
    a, _, b = str(text).partition("/")
    return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)


def bias_variance(phi, lam, dps: int):
    """``(B, V)`` from the scalar deterministic equivalent and its exact implicit derivative."""
    with mpmath.workdps(dps):
        phi, lam = _q(phi), _q(lam)
        ss = [_q(v) ** 2 for v in SQRT_VALUES]
        ws = [_q(w) for w in WEIGHTS]

        def rhs(delta):
            return phi * sum(w * s / (s / (1 + delta) + lam) for s, w in zip(ss, ws))

        delta = mpmath.mpf(0)
        for _ in range(400):  # increasing, bounded map from 0: monotone convergence; then polish
            delta = rhs(delta)
        delta = mpmath.findroot(lambda x: x - rhs(x), delta)
        f_delta = 1 - phi * sum(w * s * s / (1 + delta) ** 2 / (s / (1 + delta) + lam) ** 2 for s, w in zip(ss, ws))
        f_lam = phi * sum(w * s / (s / (1 + delta) + lam) ** 2 for s, w in zip(ss, ws))
        d_delta = -f_lam / f_delta
        return -(lam**2) / phi * d_delta, (delta + lam * d_delta) / phi


def run(quick: bool = False, digits: int = 30) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    m = model()
    for label, e in (("bias", BIAS), ("variance", VARIANCE), ("bias, anisotropic prior", BIAS_PRIOR)):
        ex.check_pencil(ck, label, m, e)
    for at in POINTS:
        b = m.limit(BIAS, at=at, digits=digits).value
        v = m.limit(VARIANCE, at=at, digits=digits).value
        rb, rv = bias_variance(at["phi"], at["lam"], digits + 20)
        ex.close(ck, f"bias == deterministic equivalent (phi={at['phi']}, lam={at['lam']})", b, rb, digits)
        ex.close(ck, f"variance == deterministic equivalent (phi={at['phi']}, lam={at['lam']})", v, rv, digits)
    at = dict(POINTS[0], t0="1/2", t1="1/4")
    for label, e, seed in (("bias", BIAS, 5), ("variance", VARIANCE, 5), ("bias, prior 1/2 + Sigma/4", BIAS_PRIOR, 6)):
        ex.check_simulation(ck, label, m, e, at, m.limit(e, at=at, digits=15).value, quick, seed=seed)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    m = model()
    return "\n".join(ex.latex_of(m, e) for e in (BIAS, VARIANCE))


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
