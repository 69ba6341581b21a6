"""The one compile step from SymPy to mpmath (or NumPy): :func:`compile_expr` and the cached recipes.

:func:`compile_expr` is the only place ``sympy.lambdify`` runs (``modules="mpmath"``, a namespace
without Python's builtins, common-subexpression elimination); :func:`compile_recipe` keeps the
generated source in the disk cache (:mod:`symrmt.codegen.codecache`).

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
from sympy.core.function import AppliedUndef
from sympy.printing.numpy import NumPyPrinter

from symrmt.errors import ParameterError
from symrmt.cache import cache_dict
from symrmt.codegen import codecache


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

#: the largest integer exponent the NumPy printer writes as a product (``x**3`` as ``x*x*x``)
PRODUCT_POWER = 4


def _numpy_printer(namespaces):
    """SymPy's NumPy printer with small integer powers as products and quotients: ``x**3`` prints as
    ``(x*x*x)``, ``x**-2`` as ``(1/(x*x))``.  NumPy's generic ``power`` on arrays costs tens of products
    per element (and much more on ``longdouble``), and a product is exact to one rounding per factor."""
    class _Printer(NumPyPrinter):
        def _print_Pow(self, expr, rational=False):
            b, e = expr.as_base_exp()
            if e.is_Integer and 1 <= abs(int(e)) <= PRODUCT_POWER:
                prod = "*".join(["(" + self._print(b) + ")"] * abs(int(e)))
                return f"({prod})" if e > 0 else f"(1/({prod}))"
            return super()._print_Pow(expr, rational=rational)

    user = {k: k for m in namespaces if isinstance(m, dict) for k in m}  # as lambdify's own printer
    return _Printer({"fully_qualified_modules": False, "inline": True, "allow_unknown_functions": True,
                     "user_functions": user})


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
    printer = _numpy_printer(mods) if "numpy" in mods else None
    return sp.lambdify(args, expr, modules=mods, cse=cse, printer=printer)


class Compiled:
    """A function that ``lambdify`` generated (``fn``), with its source text, its name and its target
    (``"mpmath"`` or ``"numpy"``); :func:`compile_recipe` builds them.

    Calling it evaluates the generated code.  :meth:`float_version` runs the *same* generated source on Python
    floats (for the cheap low-precision continuation), when the source uses nothing but arithmetic.

    >>> import inspect
    >>> x = sp.Symbol("x")
    >>> fn = compile_expr([x], x ** 2 / 3)
    >>> c = Compiled("square_third", inspect.getsource(fn), fn)
    >>> c(sp.Integer(3)), c.float_version()(3.0)
    (mpf('3.0'), 3.0)
    >>> print(Compiled("root", inspect.getsource(compile_expr([x], sp.sqrt(x))), None).float_version())  # sqrt: not arithmetic
    None
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
    """Compile ``build() -> (args, expr)`` with :func:`compile_expr`, through the disk cache; returns a
    :class:`Compiled`.

    The expression is only derived on a cache miss; the key (:func:`symrmt.codegen.codecache.source_key`)
    covers the source of the symbolic and numeric layers and the library versions, so any change there
    re-derives it.  ``target`` (see :data:`TARGETS`) picks the printer: the NumPy code of a recipe is printed
    from the same ``build()`` as its mpmath code (a matrix as its flat, row-major list of entries, so that every
    entry may be an array of points), under the cache name ``name + "@numpy"``.  Raises :class:`ParameterError`
    for an unknown target and what :func:`compile_expr` raises.

    >>> import os
    >>> from unittest import mock
    >>> x = sp.Symbol("x")
    >>> with mock.patch.dict(os.environ, {"SYMRMT_NO_CACHE": "1"}):  # no file written here
    ...     c = compile_recipe("demo", lambda: ([x], sp.Matrix([x, x ** 2 / 3])))
    ...     c.name, c(3).tolist()
    ('demo', [[mpf('3.0')], [mpf('3.0')]])
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
