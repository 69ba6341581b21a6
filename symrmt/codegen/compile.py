"""The one compile step from SymPy to mpmath (or NumPy): :func:`compile_expr` and the cached recipes.

:func:`compile_expr` is the only place ``sympy.lambdify`` runs (``modules="mpmath"``, a namespace
without Python's builtins, common-subexpression elimination); :func:`compile_recipe` keeps the
generated source in the disk cache (:mod:`symrmt.codegen.codecache`).  The recipes of the attention
model's systems (:func:`fixed_point_fjg`, :func:`woodbury_D_function`, :func:`closed_form_phi`,
:func:`ridge_function`) are built here from :mod:`symrmt.models.attention.equations`.

Examples
--------
>>> import mpmath, sympy as sp
>>> x = sp.Symbol("x")
>>> f = compile_expr([x], sp.sqrt(x) + sp.Rational(1, 3))
>>> with mpmath.workdps(30):
...     print(f(mpmath.mpf(2)))
1.74754689570642838213502205754
"""

from __future__ import annotations

import inspect
import linecache

import sympy as sp

from symrmt.errors import ParameterError
from symrmt.cache import cache_dict, cached
from symrmt.codegen import codecache
from symrmt.models.attention import equations as S


# ---------------------------------------------------------------- compile step

def _check_no_floats(expr) -> None:
    """Refuse expressions holding 53-bit Float literals: they would silently cap precision."""
    floats = expr.atoms(sp.Float) if hasattr(expr, "atoms") else set()
    if floats:
        raise ParameterError(f"expression holds float literals {sorted(map(str, floats))[:3]}; use Rational")


#: The only Python builtins generated code may call (SymPy's printers emit ``abs``, ``max`` and
#: ``min`` for ``Abs``, ``Max`` and ``Min``); every compiled namespace has ``__builtins__ = {}``,
#: so a name that is not a printer's own (an undefined function such as ``print`` or ``exec``)
#: can never reach Python's builtins.
SAFE_BUILTINS = {"abs": abs, "max": max, "min": min, "int": int, "float": float, "bool": bool, "range": range,
                 "sum": sum, "len": len, "tuple": tuple, "list": list}


def _namespace_dict():
    return {"__builtins__": {}, **SAFE_BUILTINS}


def _check_functions(expr) -> None:
    """Refuse undefined functions (``f(c)``): generated code would look them up by name."""
    from sympy.core.function import AppliedUndef

    items = expr if isinstance(expr, (list, tuple)) else [expr]
    for e in items:
        if isinstance(e, (list, tuple)):
            _check_functions(e)
            continue
        undef = e.atoms(AppliedUndef) if hasattr(e, "atoms") else set()
        if undef:
            raise ParameterError(f"expression calls undefined functions {sorted(str(u.func) for u in undef)[:3]}")


#: what :func:`compile_recipe` can print a SymPy system to: mpmath (any precision) or NumPy (float64 arrays)
TARGETS = ("mpmath", "numpy")


def compile_expr(args, expr, modules="mpmath", cse=True, floats_ok=False):
    """``sympy.lambdify(args, expr, modules=[SAFE namespace, modules], cse=cse)`` after checks.

    The shared compile step of the package: float literals are refused (they would cap the
    precision), undefined functions are refused, and the generated code runs in a namespace
    whose ``__builtins__`` is empty (only :data:`SAFE_BUILTINS` are added), so no name in an
    expression can reach Python's builtins.

    >>> import sympy as sp
    >>> compile_expr([sp.Symbol("c")], sp.Function("print")(sp.Symbol("c")))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: expression calls undefined functions ['print']
    """
    if not isinstance(expr, (sp.MatrixBase, list, tuple)):
        expr = sp.sympify(expr)
    if not isinstance(expr, (list, tuple)) and not floats_ok:
        _check_no_floats(expr)
    _check_functions(expr)
    mods = [_namespace_dict()] + (list(modules) if isinstance(modules, (list, tuple)) else [modules])
    return sp.lambdify(args, expr, modules=mods, cse=cse)


class Compiled:
    """A function that ``lambdify`` generated, with its source text.

    Calling it evaluates the mpmath code.  :meth:`float_version` runs the *same*
    generated source on Python floats (for the cheap low-precision continuation),
    when the source uses nothing but arithmetic.
    """

    def __init__(self, name: str, source: str, fn, target: str = "mpmath"):
        self.name = name
        self.source = source
        self.fn = fn
        self.target = target
        self._float = False

    def __call__(self, *args):
        return self.fn(*args)

    def float_version(self):
        """The generated code run on Python floats, or ``None`` if it calls anything but arithmetic."""
        if self._float is False:
            self._float = None
            code = compile(self.source, f"<symrmt-float:{self.name}>", "exec")
            inner = [k for k in code.co_consts if hasattr(k, "co_names")]
            if len(inner) == 1 and _global_names(inner[0]) <= {"mpf"}:
                ns = {"mpf": float, "__builtins__": {}}
                exec(code, ns)
                self._float = ns["_lambdifygenerated"]
        return self._float


def _global_names(code) -> set:
    """Names a code object (and the code nested in it) may look up outside its locals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _global_names(const)
    return names


_NAMESPACES = cache_dict("symrmt.codegen.compile._NAMESPACES", 8)


def _exec_source(name: str, source: str, target: str = "mpmath"):
    """``exec`` lambdify-generated source in the namespace :func:`compile_expr` gives ``target``."""
    if target not in _NAMESPACES:
        _NAMESPACES[target] = compile_expr([], sp.Integer(0), modules=target).__globals__
    filename = f"<symrmt-cache:{name}>"
    ns = dict(_NAMESPACES[target])
    exec(compile(source, filename, "exec"), ns)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return ns["_lambdifygenerated"]


def compile_recipe(name: str, build, target: str = "mpmath") -> Compiled:
    """Compile ``build() -> (args, expr)`` with :func:`compile_expr`, through the disk cache.

    The expression is only derived on a cache miss; the key
    (:func:`symrmt.codegen.codecache.source_key`) covers the source of the symbolic and
    numeric layers and the library versions, so any change there re-derives it.
    ``target`` (see :data:`TARGETS`) picks the printer: the NumPy code of a recipe is
    printed from the same ``build()`` as its mpmath code (a matrix as its flat, row-major
    list of entries, so that every entry may be an array of points), under the cache name
    ``name + "@numpy"``.
    """
    if target not in TARGETS:
        raise ParameterError(f"compile target must be one of {TARGETS}, got {target!r}")
    cname = name if target == "mpmath" else f"{name}@{target}"
    key = codecache.source_key(cname) if codecache.enabled() else None
    source = codecache.load(cname, key) if key else None
    if source is not None:
        try:
            return Compiled(cname, source, _exec_source(cname, source, target), target)
        except Exception:  # noqa: BLE001 - a cache entry that does not run is ignored and rewritten
            source = None
    args, expr = build()
    if target == "numpy" and isinstance(expr, sp.MatrixBase):
        _check_no_floats(expr)
        expr = list(expr)
    fn = compile_expr(args, expr, modules=target)
    source = inspect.getsource(fn)
    if key:
        codecache.store(cname, key, source)
    return Compiled(cname, source, fn, target)


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
        if part == "Fprod":  # the residual alone, in the product form (the fast path's long-double residual)
            F, _, _ = S.fixed_point_system(expand=False)
            return args, list(F)
        F, J, Fg = S.fixed_point_system()
        return args, {"F": F, "J": J, "Fg": Fg}[part]

    return compile_recipe(f"fixed_point_{part}", build, target)


@cached(maxsize=1)
def fixed_point_functions():
    """Compiled ``(F, dF/dG, dF/dgamma, det N, L_0 + R(-G))`` of the noise-only fixed point (cached)."""
    return tuple(_fixed_point_recipe(part) for part in ("F", "J", "Fg", "detN", "map"))


@cached(maxsize=4)
def fixed_point_fjg(target: str = "mpmath"):
    """Compiled ``(F, dF/dG, dF/dgamma)`` in one flat list of ``9 + 54 + 9`` entries (shared
    subexpressions; ``dF/dG`` row-major), plus ``det N`` and ``L_0 + R(-G)``: the solver's functions.

    ``target="numpy"``: the same recipes printed for float64 arrays (:data:`TARGETS`)."""
    return tuple(_fixed_point_recipe(part, target) for part in ("FJG", "detN", "map"))


@cached(maxsize=2)
def fixed_point_residual(target: str = "numpy"):
    """Compiled residual ``F`` (9 entries) of the fixed point alone, in the product form of
    :func:`fixed_point_fjg` (about a third of its cost: the fast path's long-double residual)."""
    return _fixed_point_recipe("Fprod", target)


@cached(maxsize=2)
def fixed_point_homotopy_fjt(target: str = "mpmath"):
    """Compiled ``[F (9), dF/dG (54), dF/dt (9)]`` of :func:`symrmt.models.attention.equations.fixed_point_homotopy`
    (arguments ``(G, params + [t])``; the layout of :func:`fixed_point_fjg` with ``t`` for ``gamma``)."""

    def build():
        F = S.fixed_point_homotopy().reshape(9, 1)
        J = F.jacobian(S.G_SYMBOLS)
        Ft = F.diff(S.T_STRENGTH)
        return [S.G_SYMBOLS, list(S.PARAMS) + [S.T_STRENGTH]], list(F) + list(J) + list(Ft)

    return compile_recipe("fixed_point_homotopy_FJT", build, target)


@cached(maxsize=2)
def noise_L0_function():
    """Compiled ``L_0`` of :func:`symrmt.models.attention.equations.noise_pencil` (arguments: the parameters)."""
    return compile_recipe("noise_L0", lambda: ([list(S.PARAMS)], S.noise_pencil()[0]))


@cached(maxsize=32)
def woodbury_D_function(r: int = 1, target: str = "mpmath"):
    """Compiled ``D(coords; a_1, c)`` of the rank-``r`` low-rank part, ``3(2r+2)`` square (cached per ``r``)."""
    return compile_recipe(f"woodbury_D_r{r}", lambda: ([S.lowrank_coords(r), S.a1, S.c], S.woodbury_D(r=r)), target)


def closed_form_phi(kind: str, target: str = "mpmath"):
    """Compiled ``(varphi, dvarphi/dgamma)`` of a special-case closed form of :mod:`symrmt.models.attention.equations`.

    ``kind`` is ``"aligned"`` (:func:`symrmt.models.attention.equations.aligned_phi`) or ``"a1_zero"``
    (:func:`symrmt.models.attention.equations.a1_zero_phi`).  Arguments: ``(G, dG, a_1, c, snr, w_K^T w_Q)``.
    """
    if kind not in ("aligned", "a1_zero"):
        raise KeyError(kind)

    def build():
        phi = S.aligned_phi(lu=True) if kind == "aligned" else S.a1_zero_phi()
        dphi, dsyms = S.phi_derivative(phi)
        return [S.G_SYMBOLS, dsyms, S.a1, S.c, S.snr, S.wkwq], [phi, dphi]

    return compile_recipe(f"closed_form_phi_{kind}", build, target)


@cached(maxsize=4)
def ridge_function(target: str = "mpmath"):
    """Compiled closed form ``E_RR(gamma, c, snr)`` (cached), with the root in its stable form
    (:func:`symrmt.models.attention.equations.mp_root_stable`)."""
    return compile_recipe("ridge_error_stable", lambda: ([S.gamma, S.c, S.snr], S.ridge_error_stable_form()), target)
