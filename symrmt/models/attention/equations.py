r"""The attention model's deterministic equivalents as SymPy objects, each formula written once.

It holds the pencil ``L_0, A_S, P`` (read from :func:`symrmt.hermite.kernel_terms.kernel_terms`), the
noise-only fixed point ``Gm = (L_0 + R(-Gm))^{-1}`` in polynomial form with its exact Jacobians, the
Woodbury matrix ``D`` of the signal and weights, the read-out ``varphi = e^T H (I + D H)^{-1} e`` with
``H = Gm (x) I`` and ``E_A = -gamma^2 dvarphi/dgamma``, and the special-case closed forms
(``docs/theory.md`` sections 4, 5 and 7 derive them).
"""

from __future__ import annotations


import sympy as sp

from symrmt.errors import ClosedFormError, ParameterError
from symrmt.cache import cached
from symrmt.hermite import kernel_terms as KT

# ---------------------------------------------------------------- symbols
c = sp.Symbol("c", positive=True)
gamma = sp.Symbol("gamma", positive=True)
a1 = sp.Symbol("a_1", real=True)
nu = sp.Symbol("nu", nonnegative=True)
d = sp.Symbol("d", real=True)
snr = sp.Symbol(r"\|\mu\|^2", nonnegative=True)
m = sp.Symbol("m", positive=True)
wkwq = sp.Symbol("w_K^T w_Q", real=True)

#: order of the scalar parameters of every compiled function
PARAMS = (gamma, c, a1, nu, d)

#: the independent entries of the symmetric 3x3 block-trace matrix
G_INDEX = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
G_SYMBOLS = tuple(sp.Symbol(f"G_{{{i + 1}{j + 1}}}", real=True) for i, j in G_INDEX)

#: coordinates of (mu, w_K, w_Q) after the rotation
MU = sp.symbols("m_1:4", real=True)
WK = sp.symbols("k_1:4", real=True)
WQ = sp.symbols("q_1:4", real=True)
COORDS = MU + WK + WQ


def block_trace_matrix(symbols=G_SYMBOLS) -> sp.Matrix:
    """The symmetric 3x3 matrix ``Gm`` of block traces of ``L^{-1}``.

    Takes the six entries in :data:`G_INDEX` order (default :data:`G_SYMBOLS`); returns a SymPy Matrix.

    >>> block_trace_matrix(sp.symbols("a:f"))
    Matrix([
    [a, b, c],
    [b, d, e],
    [c, e, f]])
    """
    gm = sp.zeros(3, 3)
    for (i, j), s in zip(G_INDEX, symbols):
        gm[i, j] = s
        gm[j, i] = s
    return gm


def kernel_terms() -> KT.KernelTerms:
    """The Gaussian-equivalent kernel in this module's symbols (``alpha = 1``, section 2.3 of
    ``docs/theory.md``): :func:`symrmt.hermite.kernel_terms.gaussian_equivalent`, the one
    definition the pencil and ``D`` below are read from.

    >>> kt = kernel_terms()
    >>> kt.wishart, kt.identity, kt.b2
    (a_1, -a_1 + d, -a_1**2 + nu)
    """
    return KT.gaussian_equivalent(a1, nu, d)


def noise_pencil():
    """``(L_0, A_S, A_G / b)`` of the noise-only pencil ``L = L_0 + A_S (x) S + A_G (x) Gt``.

    The pencil linearizes ``Q = (c K^T S K + gamma I)^{-1}`` with the noise-only kernel
    ``K_0 = w S + e I + b Gt`` of :func:`kernel_terms`: ``w`` (``= a_1``) its coefficient of ``S``
    (:attr:`~symrmt.hermite.kernel_terms.KernelTerms.wishart`), ``e`` (``= d - a_1``) that of
    ``I``, ``b`` that of ``Gt``.  ``A_G = b P`` with ``b^2 = nu - a_1^2``; only ``b^2`` enters the
    limit, so the matrix returned is ``P`` and the factor ``b^2`` (:func:`b_squared`) is applied in the
    R-transform.  Returns three SymPy matrices.

    >>> L0, A_S, P = noise_pencil()
    >>> L0.subs(d, a1), A_S, P
    (Matrix([
    [gamma, 0, 0],
    [    0, 0, 1],
    [    0, 1, 0]]), Matrix([
    [  0, a_1, 0],
    [a_1,   0, 0],
    [  0,   0, c]]), Matrix([
    [0, 1, 0],
    [1, 0, 0],
    [0, 0, 0]]))
    """
    kt = kernel_terms()
    e, w = kt.identity, kt.wishart
    L0 = sp.Matrix([[gamma, e, 0], [e, 0, 1], [0, 1, 0]])
    A_S = sp.Matrix([[0, w, 0], [w, 0, 0], [0, 0, c]])
    P = sp.Matrix([[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    return L0, A_S, P


def b_squared():
    """``b^2 = nu - a_1^2``: the variance of the nonlinear (semicircular) noise (:func:`kernel_terms`).

    >>> b_squared()
    -a_1**2 + nu
    """
    return kernel_terms().b2


def fixed_point_polynomial(gm: sp.Matrix | None = None, expand: bool = True) -> sp.Matrix:
    r"""Residual of the noise-only fixed point, cleared of denominators.

    With ``N = c I + Gm A_S`` (so ``A_S (I + Gm A_S / c)^{-1} = c A_S N^{-1}``), the
    fixed point ``(L_0 + R(-Gm)) Gm = I`` multiplied by ``det N`` reads

    .. math::

        \det N \,(L_0 Gm - \tfrac{b^2}{c} P Gm P Gm - I) + c A_S \operatorname{adj}(N) Gm = 0 ,

    nine polynomial equations in the six entries of ``Gm`` (consistent at the
    solution).  The physical solution has ``det N != 0``; the solver checks it.

    ``expand=False`` returns the same polynomials unexpanded, in the product form
    above: about six times fewer arithmetic operations once compiled, which is
    what the numeric solver evaluates (``tests/models/attention/test_solver_numerics.py`` checks that both
    forms expand to the same polynomials).  ``gm`` replaces :func:`block_trace_matrix` (any 3x3 matrix);
    returns a 3x3 SymPy Matrix.

    Examples
    --------
    At ``Gm = 0`` (so ``N = c I``) the residual is ``det N (-I) = -c^3 I``:

    >>> fixed_point_polynomial(sp.zeros(3, 3), expand=False)
    Matrix([
    [-c**3,     0,     0],
    [    0, -c**3,     0],
    [    0,     0, -c**3]])
    """
    gm = block_trace_matrix() if gm is None else gm
    L0, A_S, P = noise_pencil()
    N = c * sp.eye(3) + gm * A_S
    detN = N.det(method="berkowitz")
    adjN = N.adjugate(method="berkowitz")
    if expand:
        detN = sp.expand(detN)
    res = detN * (L0 * gm - b_squared() / c * P * gm * P * gm - sp.eye(3)) + c * A_S * adjN * gm
    return res.applyfunc(sp.expand) if expand else res


#: the kernel strength of :func:`fixed_point_homotopy`
T_STRENGTH = sp.Symbol("t_hom", nonnegative=True)


def fixed_point_homotopy(t=T_STRENGTH) -> sp.Matrix:
    r"""The residual of :func:`fixed_point_polynomial` (product form) with the random part scaled.

    The pencil ``L_0 + t A_S (x) S + sqrt(t) b P (x) Gt`` (a Wishart part scaled by ``t``, the
    semicircular part by ``sqrt(t)``): ``A_S -> t A_S`` in ``R`` and ``b^2 -> t b^2``; ``L_0`` is kept.
    At ``t = 1`` it is :func:`fixed_point_polynomial` (``expand=False``); at ``t = 0`` it is
    ``c^3 (L_0 Gm - I)``, whose only root is ``L_0^{-1}``.  Used to prove the branch by continuation
    in ``t`` (:mod:`symrmt.engine.prove.chain`).  Returns a 3x3 SymPy Matrix.

    >>> L0 = noise_pencil()[0]
    >>> sp.expand(fixed_point_homotopy(0) - c**3 * (L0 * block_trace_matrix() - sp.eye(3)))
    Matrix([
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0]])
    """
    gm = block_trace_matrix()
    L0, A_S, P = noise_pencil()
    A = t * A_S
    N = c * sp.eye(3) + gm * A
    detN = N.det(method="berkowitz")
    adjN = N.adjugate(method="berkowitz")
    return detN * (L0 * gm - t * b_squared() / c * P * gm * P * gm - sp.eye(3)) + c * A * adjN * gm


@cached(maxsize=1)
def r_transform_equation():
    """The fixed point's matrices for LaTeX: ``(L_0, A_S, A_G, R(-Gm))`` (immutable; cached).

    ``A_G`` is the matrix ``P`` of :func:`noise_pencil`; at ``Gm = 0`` the R-transform is ``A_S``:

    >>> L0, A_S, P, R = r_transform_equation()
    >>> L0 == noise_pencil()[0], R.subs({s: 0 for s in G_SYMBOLS}) == A_S
    (True, True)
    """
    gm = block_trace_matrix()
    L0, A_S, P = noise_pencil()
    R = A_S * (sp.eye(3) + gm * A_S / c).inv() - b_squared() / c * P * gm * P
    return tuple(sp.ImmutableMatrix(x) for x in (L0, A_S, P, R))


def pencil_map(gm: sp.Matrix | None = None) -> sp.Matrix:
    """``L_0 + R(-Gm)``, whose inverse is ``Gm`` at the fixed point (the damped-iteration map).

    ``gm`` replaces :func:`block_trace_matrix`; returns a 3x3 SymPy Matrix.  At ``Gm = 0`` it is
    ``L_0 + A_S``:

    >>> pencil_map(sp.zeros(3, 3)) == noise_pencil()[0] + noise_pencil()[1]
    True
    """
    gm = block_trace_matrix() if gm is None else gm
    L0, A_S, P = noise_pencil()
    N = c * sp.eye(3) + gm * A_S
    detN = sp.expand(N.det(method="berkowitz"))
    return L0 + (c * A_S * N.adjugate(method="berkowitz")) / detN - b_squared() / c * P * gm * P


def det_N(gm: sp.Matrix | None = None):
    """``det(c I + Gm A_S)``, which must not vanish at the physical solution.

    ``gm`` replaces :func:`block_trace_matrix`; returns the expanded SymPy expression.

    >>> det_N(sp.zeros(3, 3)), det_N(sp.eye(3))
    (c**3, -2*a_1**2*c + 2*c**3)
    """
    gm = block_trace_matrix() if gm is None else gm
    _, A_S, _ = noise_pencil()
    return sp.expand((c * sp.eye(3) + gm * A_S).det(method="berkowitz"))


@cached(maxsize=2)
def fixed_point_system(expand: bool = True):
    """Residual ``F`` (9 entries), Jacobian ``dF/dG`` (9x6) and ``dF/dgamma`` (9).

    All three are (immutable) SymPy matrices; the Jacobians are exact symbolic derivatives,
    used for Newton's method and for the implicit derivative
    ``dG/dgamma = -(dF/dG)^+ dF/dgamma``.  ``expand`` as in :func:`fixed_point_polynomial`.

    (No doctest: deriving the Jacobian takes seconds; the code compiled from it is checked by the doctests
    of :mod:`symrmt.models.attention.compiled`.)
    """
    F = sp.Matrix(list(fixed_point_polynomial(expand=expand)))
    J = F.jacobian(G_SYMBOLS)
    Fg = F.diff(gamma)
    return F.as_immutable(), J.as_immutable(), Fg.as_immutable()


#: the entries of a direction ``V`` of ``Gm`` (``dGm/dgamma`` along the path), in ``G_INDEX`` order
V_SYMBOLS = tuple(sp.Symbol(f"V_{{{i + 1}{j + 1}}}", real=True) for i, j in G_INDEX)


@cached(maxsize=1)
def fixed_point_tangent():
    r"""The residual ``F`` of :func:`fixed_point_polynomial` (product form) and its derivative along the
    path direction ``(V, 1)`` in ``(Gm, gamma)``: ``d/dt F(Gm + t V, gamma + t)`` at ``t = 0``, which is
    ``(dF/dG) V + dF/dgamma`` (:func:`fixed_point_system`) in forward mode.  At the solution with
    ``V = dGm/dgamma`` the second part vanishes: it is the residual of the implicit derivative.
    Returns the 18 entries ``F`` then the derivative, as a list (arguments ``G_SYMBOLS``, ``PARAMS``,
    :data:`V_SYMBOLS`).

    (No doctest: deriving it takes most of a second.)
    """
    F = fixed_point_polynomial(expand=False)
    t = sp.Symbol("t_dir")
    moved = {g: g + t * v for g, v in zip(G_SYMBOLS, V_SYMBOLS)}
    moved[gamma] = gamma + t
    return list(F) + [sp.diff(f.xreplace(moved), t).subs(t, 0) for f in F]


# ---------------------------------------------------------------- low-rank part

def lowrank_coords(r: int = 1) -> tuple:
    """Coordinate symbols of ``(mu, w_K^1..w_K^r, w_Q^1..w_Q^r)`` in an orthonormal basis of ``R^{2r+1}``.

    Row-major: the ``2r+1`` coordinates of ``mu``, then of each ``w_K^j``, then of each
    ``w_Q^j``.  For ``r = 1`` these are :data:`COORDS`; for ``r > 1`` the ``(2r+1)^2`` symbols ``b_{i,j}``.

    >>> lowrank_coords()
    (m_1, m_2, m_3, k_1, k_2, k_3, q_1, q_2, q_3)
    >>> len(lowrank_coords(2))
    25
    """
    if r == 1:
        return COORDS
    k = 2 * r + 1
    return tuple(sp.Symbol(f"b_{{{i},{j}}}", real=True) for i in range(k) for j in range(k))


def woodbury_D(coords=None, r: int = 1) -> sp.Matrix:
    r"""The ``3(k+1) x 3(k+1)`` matrix ``D`` of the low-rank (signal + weights) part, ``k = 2r+1``.

    With ``W = I + sum_j w_K^j (w_Q^j)^T`` the rotated coordinates span ``k`` directions,
    ``C = [m^T; I_k]`` and ``A = I_k + sum_j k_j q_j^T``; for ``r = 1`` this is the
    12x12 matrix of the module docstring.  Its blocks are the kernel's and the sample covariance's
    finite-rank parts ``M_K = (a_1/c) C A C^T`` and ``M_S = C C^T``
    (:func:`symrmt.hermite.kernel_terms.finite_rank_parts` of :func:`kernel_terms`), placed where
    ``K`` (block (2, 1)), ``K^T`` (block (1, 2)) and ``c S`` (block (3, 3)) sit in the pencil.

    ``coords`` are the ``k^2`` coordinates (default :func:`lowrank_coords`); returns a SymPy Matrix.

    Raises
    ------
    ParameterError
        ``coords`` does not hold ``k^2`` entries.

    Examples
    --------
    With ``mu = e_1`` and ``W = I``, ``C C^T`` is ``[[1, 1], [1, 1]] + I_2`` and ``M_K = (a_1/c) C C^T``:

    >>> D = woodbury_D(coords=[1, 0, 0, 0, 0, 0, 0, 0, 0])
    >>> D.shape, D[8:, 8:], D[4:8, :4] == a1 / c * D[8:, 8:]
    ((12, 12), Matrix([
    [1, 1, 0, 0],
    [1, 1, 0, 0],
    [0, 0, 1, 0],
    [0, 0, 0, 1]]), True)
    >>> woodbury_D(coords=[1, 2, 3])
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: woodbury_D: rank 1 needs 9 coordinates, got 3
    """
    k = 2 * r + 1
    coords = lowrank_coords(r) if coords is None else tuple(coords)
    if len(coords) != k * k:
        raise ParameterError(f"woodbury_D: rank {r} needs {k * k} coordinates, got {len(coords)}")
    M_K, M_S = KT.finite_rank_parts(kernel_terms(), coords, r, c)
    Z = sp.zeros(k + 1, k + 1)
    return sp.Matrix(sp.BlockMatrix([
        [Z, M_K.T, Z],
        [M_K, Z, Z],
        [Z, Z, M_S],
    ]))


def woodbury_H(gm: sp.Matrix | None = None, size: int = 4) -> sp.Matrix:
    """``H = Gm (x) I_size``: the compressed noise-only resolvent in the basis ``E``.

    >>> woodbury_H(sp.diag(1, 2, 3), 2)
    Matrix([
    [1, 0, 0, 0, 0, 0],
    [0, 1, 0, 0, 0, 0],
    [0, 0, 2, 0, 0, 0],
    [0, 0, 0, 2, 0, 0],
    [0, 0, 0, 0, 3, 0],
    [0, 0, 0, 0, 0, 3]])
    """
    gm = block_trace_matrix() if gm is None else gm
    return sp.kronecker_product(gm, sp.eye(size))


def phi_compressed(gm, M, Delta, gram_rows):
    r"""Woodbury through a factorization ``D = (I_3 (x) C) Delta (I_3 (x) C)^T``.

    With ``U = I_3 (x) E C``: ``e^T H U = g_1^T (x) M^T`` (``g_1`` the first column of
    ``Gm``, ``M`` the coordinates of ``mu``) and ``U^T H U = Gm (x) C^T C``, so

    .. math:: \varphi = G_{11} - (g_1 \otimes M)^T \Delta (I + (Gm \otimes C^T C) \Delta)^{-1} (g_1 \otimes M).

    Takes ``Gm`` (3x3), ``M`` (a column), ``Delta`` and ``C^T C`` (``gram_rows``) as SymPy matrices; returns
    the scalar expression.

    Examples
    --------
    With ``Delta = 0`` there is no low-rank part and ``varphi = G_11``:

    >>> phi_compressed(block_trace_matrix(), sp.Matrix([1]), sp.zeros(3, 3), sp.Matrix([[1]]))
    G_{11}
    """
    g1 = gm[:, 0]
    u = sp.kronecker_product(g1, M)
    inner = sp.kronecker_product(gm, gram_rows)
    k = inner.shape[0]
    return gm[0, 0] - (u.T * Delta * (sp.eye(k) + inner * Delta).inv() * u)[0]


@cached(maxsize=2)
def aligned_phi(lu: bool = False):
    r"""Rank-one alignment (``w_K, w_Q`` parallel to ``mu``): ``varphi`` in closed form.

    Here ``C = (||mu||, 1)^T`` and ``A = 1 + w_K^T w_Q`` are scalars' worth, so
    ``D = (I_3 (x) C) Delta (I_3 (x) C)^T`` with
    ``Delta = [[0, beta, 0], [beta, 0, 0], [0, 0, 1]]``, ``beta = a_1 (1 + w_K^T w_Q)/c``
    (the kernel's finite-rank part :func:`~symrmt.hermite.kernel_terms.kernel_lowrank` with
    ``C = 1`` and ``A = 1 + w_K^T w_Q`` in the one direction), and ``C^T C = 1 + ||mu||^2``:

    .. math:: \varphi = G_{11} - \|\mu\|^2 g_1^T \Delta (I_3 + (1 + \|\mu\|^2) Gm \Delta)^{-1} g_1 .

    The weights enter only through ``w_K^T w_Q``.

    ``lu=True`` gives the same rational function with the 3x3 solve written as
    ``LUsolve`` (elimination in the natural order) instead of an explicit
    inverse: about 20 times fewer operations once compiled, and its derivative
    is derived in a fraction of the time.  The numeric layer compiles that form;
    ``tests/models/attention/test_solver_performance.py`` checks that the two agree exactly.

    Takes ``lu``; returns a SymPy expression in ``G_SYMBOLS``, ``a_1``, ``c``, ``||mu||^2`` and ``w_K^T w_Q``.
    With ``a_1 = 0`` (``beta = 0``) it is the ``a_1 = 0`` closed form
    ``G_11 - ||mu||^2 G_13^2/(1 + (1 + ||mu||^2) G_33)`` (``docs/theory.md`` section 7), without signal ``G_11``
    (the ``lu=True`` form, built in a fraction of a second; the other takes about a second):

    >>> phi = aligned_phi(lu=True)
    >>> G11, G12, G13, G22, G23, G33 = G_SYMBOLS
    >>> sp.cancel(phi.subs(a1, 0) - (G11 - snr * G13**2 / (1 + (1 + snr) * G33)))
    0
    >>> phi.subs(snr, 0) == G11
    True
    """
    gm, Delta, g1 = _aligned_parts()
    if lu:
        return gm[0, 0] - snr * (g1.T * Delta * (sp.eye(3) + (1 + snr) * gm * Delta).LUsolve(g1))[0]
    return gm[0, 0] - snr * (g1.T * Delta * (sp.eye(3) + (1 + snr) * gm * Delta).inv() * g1)[0]


def _aligned_parts():
    """``(Gm, Delta, g_1)`` of :func:`aligned_phi`: the block-trace matrix, the rank-one ``Delta`` with
    ``beta = a_1 (1 + w_K^T w_Q)/c`` from the kernel's finite-rank part, and the first column of ``Gm``."""
    gm = block_trace_matrix()
    beta = KT.kernel_lowrank(kernel_terms(), sp.Matrix([[1]]), sp.Matrix([[1 + wkwq]]), c)[0]
    return gm, sp.Matrix([[0, beta, 0], [beta, 0, 0], [0, 0, 1]]), gm[:, 0]


#: the coefficients of :func:`aligned_phi_in_snr`: ``varphi = G_11 - ||mu||^2 P(t)/Q(t)``, ``t = 1 + ||mu||^2``,
#: ``P = P_0 + P_1 t + P_2 t^2``, ``Q = 1 + Q_1 t + Q_2 t^2 + Q_3 t^3``
SNR_COEFFS = tuple(sp.Symbol(name, real=True) for name in ("P_0", "P_1", "P_2", "Q_1", "Q_2", "Q_3"))


@cached(maxsize=1)
def aligned_phi_in_snr():
    r""":func:`aligned_phi` as a rational function of ``||mu||^2``: ``(coefficients, form)``.

    With ``t = 1 + ||mu||^2`` and ``M = Gm Delta``, Cramer's rule gives
    ``(I_3 + t M)^{-1} = adj(I_3 + t M) / det(I_3 + t M)``, so

    .. math:: \varphi = G_{11} - \|\mu\|^2 \frac{g_1^T \Delta \operatorname{adj}(I_3 + t M) g_1}{\det(I_3 + t M)}
              = G_{11} - \|\mu\|^2 \frac{P_0 + P_1 t + P_2 t^2}{1 + Q_1 t + Q_2 t^2 + Q_3 t^3} .

    ``coefficients`` are the six ``P_k, Q_k`` as expressions in ``G``, ``a_1``, ``c`` and ``w_K^T w_Q`` (free
    of ``||mu||^2``); ``form`` is ``varphi`` in the symbols :data:`SNR_COEFFS`, ``G_11`` and ``||mu||^2``.
    A grid over ``||mu||^2`` evaluates the coefficients once per fixed point and the form at every
    point.  ``tests/models/attention/test_solver_performance.py`` checks that the form with the
    coefficients substituted is :func:`aligned_phi`.

    >>> coeffs, form = aligned_phi_in_snr()
    >>> len(coeffs), snr in set().union(*(e.free_symbols for e in coeffs))
    (6, False)
    """
    gm, Delta, g1 = _aligned_parts()
    t = 1 + snr
    tt = sp.Dummy("t")
    A = sp.eye(3) + tt * gm * Delta
    num = sp.Poly(sp.expand((g1.T * Delta * A.adjugate() * g1)[0]), tt).all_coeffs()[::-1]
    den = sp.Poly(sp.expand(A.det()), tt).all_coeffs()[::-1]
    if len(num) != 3 or len(den) != 4 or den[0] != 1:
        raise ClosedFormError("aligned_phi_in_snr: adj(I + t M) g_1 is not of degree 2 in t or det(I + t M) "
                              "not 1 + O(t) of degree 3")  # pragma: no cover - Cramer's rule on a 3x3
    p0, p1, p2, q1, q2, q3 = SNR_COEFFS
    form = G_SYMBOLS[0] - snr * (p0 + (p1 + p2 * t) * t) / (1 + (q1 + (q2 + q3 * t) * t) * t)
    return tuple(num) + tuple(den[1:]), form


@cached(maxsize=1)
def a1_zero_phi():
    r"""``a_1 = 0``: ``varphi = G_11 - G_13^2 ||mu||^2 / (1 + (1 + ||mu||^2) G_33)``.

    With ``a_1 = 0`` only the ``(3, 3)`` block ``C C^T`` of ``D`` survives: the weights
    drop out of ``D`` entirely, and the signal enters only through ``G_13``, which
    vanishes when ``d = 0`` (symmetry ``K -> -K``).  Derived (and asserted) in
    ``symrmt.derivations.a1_zero`` from :func:`phi_compressed`.

    >>> phi = a1_zero_phi()
    >>> phi.subs(snr, 0), phi.subs(G_SYMBOLS[2], 0)   # no signal, or G_13 = 0: varphi = G_11
    (G_{11}, G_{11})
    """
    gm = block_trace_matrix()
    return gm[0, 0] - gm[0, 2] ** 2 * snr / (1 + (1 + snr) * gm[2, 2])


def phi_derivative(phi):
    """``d varphi / d gamma = sum_ij (d varphi / d G_ij) dG_ij/dgamma`` (chain rule), as a
    function of the ``G`` symbols and their derivatives ``dG_ij`` (returned symbols).

    Returns ``(dphi, dsyms)``, ``dsyms`` the six derivative symbols in :data:`G_INDEX` order.

    >>> dphi, dsyms = phi_derivative(G_SYMBOLS[0] ** 2)
    >>> dphi == 2 * G_SYMBOLS[0] * dsyms[0], len(dsyms)
    (True, 6)
    """
    dsyms = tuple(sp.Symbol("\\dot " + str(s), real=True) for s in G_SYMBOLS)
    return sum(sp.diff(phi, s) * ds for s, ds in zip(G_SYMBOLS, dsyms)), dsyms


# ---------------------------------------------------------------- ridge regression

def mp_quadratic(mm=m):
    """Marchenko-Pastur: ``m = tau((X^T X/n + gamma)^{-1})`` for ``mu = 0`` solves this = 0.

    From the free Poisson R-transform ``R(w) = c/(1 - w)``:
    ``m = 1/(gamma + c/(1 + m))``, i.e. ``gamma m^2 + (gamma + c - 1) m - 1 = 0``.

    ``mm`` replaces the symbol ``m``.  The expression returned is expanded but not cancelled (it keeps
    terms over ``1 + m``); cancelled, it is that quadratic:

    >>> sp.expand(sp.cancel(mp_quadratic())) == sp.expand(gamma * m**2 + (gamma + c - 1) * m - 1)
    True
    """
    return sp.expand((mm * (gamma + c / (1 + mm)) - 1) * (1 + mm))


@cached(maxsize=1)
def mp_root():
    """The physical root: the one with ``m > 0`` at ``z = -gamma < 0``.

    At ``gamma = c = 1`` the quadratic is ``m^2 + m - 1``, whose positive root is ``(sqrt(5) - 1)/2``:

    >>> mp_root().subs({gamma: 1, c: 1})
    -1/2 + sqrt(5)/2
    """
    roots = sp.solve(mp_quadratic(), m)
    # the product of the roots is -1/gamma < 0: exactly one is positive
    for r in roots:
        if r.subs({gamma: 1, c: 1}) > 0:
            return r
    raise AssertionError("no positive Marchenko-Pastur root")  # pragma: no cover


@cached(maxsize=1)
def ridge_quadratic_form():
    r"""``y^T Q_0 y / n`` in terms of ``m``: Sherman-Morrison with ``v = \|\mu\| y + \xi``.

    ``X^T X / n = Z'^T Z'/n + v v^T / n``; in the basis ``[y, xi]/sqrt(n)`` the
    compressed resolvent is ``m I_2`` and the rank-one part has coefficient
    ``(sqrt(snr), 1)``.  Returns the simplified rational function of ``m`` and ``snr``:
    ``m (1 + m)/(1 + m + snr m)``, which is ``m`` without signal.

    >>> ridge_quadratic_form().subs(snr, 0)
    m
    """
    s = sp.sqrt(snr)
    D = KT.covariance_lowrank(sp.Matrix([[s], [1]]))   # C C^T, C = [||mu||; 1]: X^T X/n = cS' + E C C^T E^T
    H = m * sp.eye(2)
    val = (H * (sp.eye(2) + D * H).inv())[0, 0]
    return sp.factor(sp.simplify(val))


@cached(maxsize=1)
def ridge_error_in_m():
    """``E_RR = -gamma^2 d/dgamma [y^T Q_0 y/n]`` with ``dm/dgamma`` by implicit differentiation.

    Without signal ``y^T Q_0 y/n = m``, so ``E_RR = -gamma^2 dm/dgamma`` with ``dm/dgamma = -(m^2 + m)/(2 gamma m +
    gamma + c - 1)`` from the quadratic:

    >>> sp.cancel(ridge_error_in_m().subs(snr, 0) - gamma**2 * (m**2 + m) / (2 * gamma * m + gamma + c - 1))
    0
    """
    phi = ridge_quadratic_form()
    P = mp_quadratic()
    dm = -sp.diff(P, gamma) / sp.diff(P, m)
    return sp.factor(sp.simplify(-gamma**2 * sp.diff(phi, m) * dm))


@cached(maxsize=1)
def ridge_error_closed_form():
    """``E_RR(gamma; c, snr)`` as an explicit expression (``m`` replaced by its root).

    Without signal at ``gamma = c = 1``: ``m = (sqrt(5) - 1)/2``, ``m^2 + m = 1`` and ``E_RR = 1/(2 m + 1) = 1/sqrt(5)``:

    >>> abs(ridge_error_closed_form().subs({gamma: 1, c: 1, snr: 0}).evalf(40) - 1 / sp.sqrt(5)) < 1e-35
    True
    """
    return ridge_error_in_m().subs(m, mp_root())


def mp_root_stable():
    """:func:`mp_root` in a form without cancellation, for numeric evaluation.

    With ``b = gamma + c - 1`` and ``D = b^2 + 4 gamma`` the root is ``(sqrt(D) - b)/(2 gamma)``;
    for ``b >= 0`` (large ``gamma``) the numerator cancels, and its rationalized form
    ``2/(b + sqrt(D))`` does not (the two are equal because ``D - b^2 = 4 gamma``).

    Examples
    --------
    At ``gamma = c = 1`` the quadratic is ``m^2 + m - 1`` with positive root ``(sqrt(5) - 1)/2``:

    >>> root = mp_root_stable().subs({gamma: 1, c: 1})
    >>> root, sp.nsimplify(root - (sp.sqrt(5) - 1) / 2)
    (2/(1 + sqrt(5)), 0)
    """
    b = gamma + c - 1
    D = b**2 + 4 * gamma
    return sp.Piecewise((2 / (b + sp.sqrt(D)), b >= 0), ((sp.sqrt(D) - b) / (2 * gamma), True))


def ridge_error_stable_form():
    """:func:`ridge_error_closed_form` with the root :func:`mp_root_stable`: the form the numeric code
    evaluates (float64 loses every digit of the plain root's numerator beyond ``gamma ~ 1e16 eps``).

    >>> abs(ridge_error_stable_form().subs({gamma: 1, c: 1, snr: 0}).evalf(40) - 1 / sp.sqrt(5)) < 1e-35
    True
    """
    return ridge_error_in_m().subs(m, mp_root_stable())


__all__ = [name for name in dir() if not name.startswith("_")]
