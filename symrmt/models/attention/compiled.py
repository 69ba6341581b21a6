"""The attention model's compiled systems: the recipes of :func:`symrmt.codegen.compile.compile_recipe`
built from :mod:`symrmt.models.attention.equations` (the noise-only fixed point, its homotopy, the
rank-``r`` Woodbury matrix, the closed forms and the ridge error), each cached in memory and on disk.

>>> import mpmath
>>> E = ridge_function()
>>> with mpmath.workdps(20):
...     print(E(mpmath.mpf(1), mpmath.mpf(1) / 2, mpmath.mpf(0)) > 0)
True
"""

from __future__ import annotations

import sympy as sp

from symrmt.cache import cached
from symrmt.codegen.compile import compile_recipe
from symrmt.errors import ParameterError
from symrmt.models.attention import equations as S

__all__ = ["aligned_phi_coefficients", "aligned_phi_in_snr_function", "closed_form_phi", "fixed_point_fjg", "fixed_point_functions", "fixed_point_homotopy_fjt", "fixed_point_residual",
           "fixed_point_tangent_function", "mp_root_function", "noise_L0_function", "ridge_function",
           "ridge_in_m_function", "woodbury_D_function"]


def _fixed_point_recipe(part: str, target: str = "mpmath"):
    def build():
        args = [S.G_SYMBOLS, S.PARAMS]
        if part == "detN":
            return args, S.det_N()
        if part == "map":
            return args, S.pencil_map()
        if part == "FJG":  # the product form: the same polynomials in ~6x fewer operations
            F, J, Fg = S.fixed_point_system(expand=False)
            return args, list(F) + list(J) + list(Fg)
        if part == "Ftangent":  # F and its derivative along (dGm/dgamma, 1): the fast path's long-double residuals
            return [S.G_SYMBOLS, S.PARAMS, S.V_SYMBOLS], S.fixed_point_tangent()
        if part == "Fprod":  # the residual alone, in the product form (the fast path's long-double residual)
            F, _, _ = S.fixed_point_system(expand=False)
            return args, list(F)
        F, J, Fg = S.fixed_point_system()
        return args, {"F": F, "J": J, "Fg": Fg}[part]

    return compile_recipe(f"fixed_point_{part}", build, target)


@cached(maxsize=1)
def fixed_point_functions():
    """Compiled ``(F, dF/dG, dF/dgamma, det N, L_0 + R(-G))`` of the noise-only fixed point (cached).

    Takes nothing; returns five compiled functions of ``(G, params)``.  (No doctest: compiling it cold takes about a second.)
    """
    return tuple(_fixed_point_recipe(part) for part in ("F", "J", "Fg", "detN", "map"))


@cached(maxsize=4)
def fixed_point_fjg(target: str = "mpmath"):
    """Compiled ``(F, dF/dG, dF/dgamma)`` in one flat list of ``9 + 54 + 9`` entries (shared
    subexpressions; ``dF/dG`` row-major), plus ``det N`` and ``L_0 + R(-G)``: the solver's functions.

    ``target="numpy"``: the same recipes printed for float64 arrays (:data:`TARGETS`).

    Takes ``target`` (``"mpmath"`` or ``"numpy"``); returns three compiled functions of ``(G, params)``.
    ``tests/models/attention/test_fast.py`` checks the NumPy code against the mpmath code.
    Raises :class:`~symrmt.errors.ParameterError` for another ``target``, before any compiling
    (a cold compile takes about a second):

    >>> fixed_point_fjg("fortran")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: compile target must be one of ('mpmath', 'numpy'), got 'fortran'
    """
    return tuple(_fixed_point_recipe(part, target) for part in ("FJG", "detN", "map"))


@cached(maxsize=2)
def fixed_point_residual(target: str = "numpy"):
    """Compiled residual ``F`` (9 entries) of the fixed point alone, in the product form of
    :func:`fixed_point_fjg` (about a third of its cost: the fast path's long-double residual).

    Takes ``target``; returns the compiled function of ``(G, params)``.
    Raises :class:`~symrmt.errors.ParameterError` for another ``target``, before any compiling (a cold
    compile takes about a second):

    >>> fixed_point_residual("fortran")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: compile target must be one of ('mpmath', 'numpy'), got 'fortran'
    """
    return _fixed_point_recipe("Fprod", target)


@cached(maxsize=2)
def fixed_point_tangent_function(target: str = "numpy"):
    """Compiled ``F`` (9 entries) and ``(dF/dG) V + dF/dgamma`` (9) of
    :func:`symrmt.models.attention.equations.fixed_point_tangent` (arguments ``(G, params, V)``): both
    residuals of the fast path's long-double correction in one evaluation, without the Jacobian's 54 entries.

    Takes ``target``; returns the compiled function.
    Raises :class:`~symrmt.errors.ParameterError` for another ``target``, before any compiling (a cold
    compile takes about a second):

    >>> fixed_point_tangent_function("fortran")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: compile target must be one of ('mpmath', 'numpy'), got 'fortran'
    """
    return _fixed_point_recipe("Ftangent", target)


@cached(maxsize=2)
def fixed_point_homotopy_fjt(target: str = "mpmath"):
    """Compiled ``[F (9), dF/dG (54), dF/dt (9)]`` of :func:`symrmt.models.attention.equations.fixed_point_homotopy`
    (arguments ``(G, params + [t])``; the layout of :func:`fixed_point_fjg` with ``t`` for ``gamma``).

    Takes ``target``; returns the compiled function.
    Raises :class:`~symrmt.errors.ParameterError` for another ``target``, before any compiling (a cold
    compile takes about a second):

    >>> fixed_point_homotopy_fjt("fortran")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: compile target must be one of ('mpmath', 'numpy'), got 'fortran'
    """

    def build():
        F = S.fixed_point_homotopy().reshape(9, 1)
        J = F.jacobian(S.G_SYMBOLS)
        Ft = F.diff(S.T_STRENGTH)
        return [S.G_SYMBOLS, list(S.PARAMS) + [S.T_STRENGTH]], list(F) + list(J) + list(Ft)

    return compile_recipe("fixed_point_homotopy_FJT", build, target)


@cached(maxsize=2)
def noise_L0_function():
    """Compiled ``L_0`` of :func:`symrmt.models.attention.equations.noise_pencil` (arguments: the parameters).

    Takes the list ``(gamma, c, a_1, nu, d)``; returns an mpmath matrix.

    >>> import mpmath
    >>> L0 = noise_L0_function()([2, 1, mpmath.mpf(1) / 2, 1, 0])   # [[gamma, d - a_1, 0], [d - a_1, 0, 1], [0, 1, 0]]
    >>> [[float(L0[i, j]) for j in range(3)] for i in range(3)]
    [[2.0, -0.5, 0.0], [-0.5, 0.0, 1.0], [0.0, 1.0, 0.0]]
    """
    return compile_recipe("noise_L0", lambda: ([list(S.PARAMS)], S.noise_pencil()[0]))


@cached(maxsize=32)
def woodbury_D_function(r: int = 1, target: str = "mpmath"):
    """Compiled ``D(coords; a_1, c)`` of the rank-``r`` low-rank part, ``3(2r+2)`` square (cached per ``r``).

    Takes the ``(2r+1)^2`` coordinates of :func:`symrmt.models.attention.equations.lowrank_coords`, ``a_1``
    and ``c``; returns an mpmath matrix.  With ``mu = e_1`` and ``W = I`` the blocks are ``(a_1/c) C C^T``
    and ``C C^T``, ``C C^T = [[1, 1], [1, 1]] + I_2``:

    >>> D = woodbury_D_function()([1, 0, 0, 0, 0, 0, 0, 0, 0], 1, 2)
    >>> D.rows, float(D[0, 4]), float(D[0, 5]), float(D[8, 9]), float(D[10, 10])
    (12, 0.5, 0.5, 1.0, 1.0)
    """
    return compile_recipe(f"woodbury_D_r{r}", lambda: ([S.lowrank_coords(r), S.a1, S.c], S.woodbury_D(r=r)), target)


@cached(maxsize=4)
def closed_form_phi(kind: str, target: str = "mpmath"):
    """Compiled ``(varphi, dvarphi/dgamma)`` of a special-case closed form of :mod:`symrmt.models.attention.equations`.

    ``kind`` is ``"aligned"`` (:func:`symrmt.models.attention.equations.aligned_phi`) or ``"a1_zero"``
    (:func:`symrmt.models.attention.equations.a1_zero_phi`).  Arguments: ``(G, dG, a_1, c, snr, w_K^T w_Q)``.
    Returns the compiled function (cached); raises :class:`~symrmt.errors.ParameterError` for another ``kind``.

    Examples
    --------
    ``a_1 = 0``: ``varphi = G_11 - G_13^2 snr/(1 + (1 + snr) G_33) = 1 - (1/4)/3`` at ``G_11 = G_33 = snr = 1``,
    ``G_13 = 1/2``; along ``dG_11 = 1`` its derivative is 1:

    >>> phi, dphi = closed_form_phi("a1_zero")([1, 0, 0.5, 1, 0, 1], [1, 0, 0, 0, 0, 0], 0, 1, 1, 0)
    >>> round(float(phi), 12), float(dphi)
    (0.916666666667, 1.0)
    >>> closed_form_phi("quadratic")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: closed_form_phi: no closed form of kind 'quadratic'; give 'aligned' or 'a1_zero'
    """
    if kind not in ("aligned", "a1_zero"):
        raise ParameterError(f"closed_form_phi: no closed form of kind {kind!r}; give 'aligned' or 'a1_zero'")

    def build():
        phi = S.aligned_phi(lu=True) if kind == "aligned" else S.a1_zero_phi()
        dphi, dsyms = S.phi_derivative(phi)
        return [S.G_SYMBOLS, dsyms, S.a1, S.c, S.snr, S.wkwq], [phi, dphi]

    return compile_recipe(f"closed_form_phi_{kind}", build, target)


@cached(maxsize=2)
def aligned_phi_coefficients(target: str = "numpy"):
    """Compiled coefficients ``P_0, P_1, P_2, Q_1, Q_2, Q_3`` of
    :func:`symrmt.models.attention.equations.aligned_phi_in_snr` and their ``gamma``-derivatives along ``dG``
    (12 entries; arguments ``(G, dG, a_1, c, w_K^T w_Q)``): the part of the aligned ``varphi`` that does not
    depend on ``||mu||^2``.

    Takes ``target``; returns the compiled function.
    Raises :class:`~symrmt.errors.ParameterError` for another ``target``, before any compiling (a cold
    compile takes about a second):

    >>> aligned_phi_coefficients("fortran")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: compile target must be one of ('mpmath', 'numpy'), got 'fortran'
    """

    def build():
        coeffs, _ = S.aligned_phi_in_snr()
        dsyms = S.phi_derivative(S.G_SYMBOLS[0])[1]
        return [S.G_SYMBOLS, dsyms, S.a1, S.c, S.wkwq], list(coeffs) + [S.phi_derivative(e)[0] for e in coeffs]

    return compile_recipe("aligned_phi_coefficients", build, target)


@cached(maxsize=2)
def aligned_phi_in_snr_function(target: str = "numpy"):
    """Compiled ``(varphi, dvarphi/dgamma)`` of the form of :func:`symrmt.models.attention.equations.aligned_phi_in_snr`
    from its coefficients: arguments ``((G_11, P_0, ..., Q_3), (dG_11, dP_0, ..., dQ_3), ||mu||^2)``, the
    coefficients and their derivatives from :func:`aligned_phi_coefficients` (a few operations per point).

    Takes ``target``; returns the compiled function.
    Raises :class:`~symrmt.errors.ParameterError` for another ``target``, before any compiling (a cold
    compile takes about a second):

    >>> aligned_phi_in_snr_function("fortran")
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: compile target must be one of ('mpmath', 'numpy'), got 'fortran'
    """

    def build():
        _, form = S.aligned_phi_in_snr()
        syms = (S.G_SYMBOLS[0],) + S.SNR_COEFFS
        dsyms = tuple(sp.Symbol("\\dot " + str(s), real=True) for s in syms)
        # the derivative along (dG_11, dP, dQ) as d/de form(coefficients + e * derivatives) at e = 0: the chain
        # rule with P and Q kept in Horner form (31 operations with the value, against 44 term by term)
        e = sp.Dummy("e")
        along = sp.diff(form.subs({s: s + e * ds for s, ds in zip(syms, dsyms)}), e).subs(e, 0)
        return [syms, dsyms, S.snr], [form, along]

    return compile_recipe("aligned_phi_in_snr", build, target)


@cached(maxsize=2)
def mp_root_function(target: str = "numpy"):
    """Compiled Marchenko-Pastur root ``m(-gamma)`` in its stable form
    (:func:`symrmt.models.attention.equations.mp_root_stable`; arguments ``(gamma, c)``, floats or arrays).

    The roots of ``gamma m^2 + (gamma + c - 1) m - 1``: ``(sqrt(5) - 1)/2`` at ``gamma = c = 1`` and
    ``(sqrt(41) - 3)/8`` at ``gamma = 2``, ``c = 1/2``:

    >>> import numpy as np
    >>> root = mp_root_function()(np.array([1.0, 2.0]), np.array([1.0, 0.5]))
    >>> np.allclose(root, [(5 ** 0.5 - 1) / 2, (41 ** 0.5 - 3) / 8], rtol=1e-15, atol=0)
    True
    """
    return compile_recipe("mp_root_stable", lambda: ([S.gamma, S.c], S.mp_root_stable()), target)


@cached(maxsize=2)
def ridge_in_m_function(target: str = "numpy"):
    """Compiled ``E_RR`` as a function of the root (:func:`symrmt.models.attention.equations.ridge_error_in_m`;
    arguments ``(m, gamma, c, snr)``): with :func:`mp_root_function`, :func:`ridge_function` in two parts, the
    root once per ``(gamma, c)``.

    Without signal ``E_RR = -gamma^2 dm/dgamma``, which at ``gamma = c = 1`` is ``1/(2 m + 1) = 1/sqrt(5)``:

    >>> E = ridge_in_m_function()((5 ** 0.5 - 1) / 2, 1.0, 1.0, 0.0)
    >>> abs(E - 5 ** -0.5) < 1e-15
    True
    """
    return compile_recipe("ridge_error_in_m", lambda: ([S.m, S.gamma, S.c, S.snr], S.ridge_error_in_m()), target)


@cached(maxsize=4)
def ridge_function(target: str = "mpmath"):
    """Compiled closed form ``E_RR(gamma, c, snr)`` (cached), with the root in its stable form
    (:func:`symrmt.models.attention.equations.mp_root_stable`).

    Arguments ``(gamma, c, snr)``; ``target`` as in :func:`fixed_point_fjg`.  Without signal at
    ``gamma = c = 1`` it is ``1/sqrt(5)`` (:func:`ridge_in_m_function`):

    >>> import mpmath
    >>> with mpmath.workdps(30):
    ...     E = ridge_function()(mpmath.mpf(1), mpmath.mpf(1), mpmath.mpf(0))
    ...     print(mpmath.nstr(E, 25), mpmath.nstr(1 / mpmath.sqrt(5), 25))
    0.4472135954999579392818347 0.4472135954999579392818347
    """
    return compile_recipe("ridge_error_stable", lambda: ([S.gamma, S.c, S.snr], S.ridge_error_stable_form()), target)
