"""Interim restricted parser with the contract of ``symrmt.parsing.parse_expression``.

Used only while the shared parser is not importable.  It walks a whitelisted
syntax tree (numbers, names, calls of whitelisted functions, ``+ - * / @ **``,
unary ``+ -``, whitelisted attributes, lists of values) and calls the caller's
objects; nothing is evaluated as Python code.
"""

from __future__ import annotations

import ast
import operator
from fractions import Fraction

from ..params import ParameterError

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.MatMult: operator.matmul, ast.Pow: operator.pow}
MAX_CHARS, MAX_NODES, MAX_DEPTH, MAX_EXPONENT = 4000, 1000, 60, 1000


def parse_expression(text, names, functions, *, what, attributes=frozenset(), number=None):
    """Build ``text`` from the whitelisted ``names`` and ``functions`` (see the module docstring)."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        raise ParameterError(f"{what}: expected a string of at most {MAX_CHARS} characters")
    try:
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise ParameterError(f"{what}: cannot parse {text[:60]!r} ({type(exc).__name__})") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ParameterError(f"{what}: more than {MAX_NODES} syntax nodes")
    number = number or (lambda q: q)

    def fail(msg):
        raise ParameterError(f"{what}: {msg} in {text[:60]!r}")

    def build(node, depth):
        if depth > MAX_DEPTH:
            fail(f"nesting deeper than {MAX_DEPTH}")
        d = depth + 1
        if isinstance(node, ast.Expression):
            return build(node.body, d)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            seg = ast.get_source_segment(text.strip().replace("^", "**"), node) or repr(node.value)
            if "e" in seg.lower() and abs(int(seg.lower().split("e")[1])) > MAX_EXPONENT:
                fail(f"the literal {seg!r} is too large")
            return number(Fraction(seg.replace("_", "")))
        if isinstance(node, ast.Name):
            if node.id in names:
                return names[node.id]
            fail(f"unknown name {node.id!r}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            v = build(node.operand, d)
            return -v if isinstance(node.op, ast.USub) else +v
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = build(node.left, d), build(node.right, d)
            if isinstance(node.op, ast.Pow):
                e = getattr(right, "value", right)
                if getattr(e, "is_number", False) and abs(float(e)) > MAX_EXPONENT:
                    fail(f"the exponent {e} is above {MAX_EXPONENT}")
            return _OPS[type(node.op)](left, right)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            if node.func.id not in functions:
                fail(f"unknown function {node.func.id!r}")
            args = [tuple(build(e, d) for e in a.elts) if isinstance(a, (ast.Tuple, ast.List)) else build(a, d)
                    for a in node.args]
            return functions[node.func.id](*args)
        if isinstance(node, ast.Attribute) and node.attr in attributes and not node.attr.startswith("_"):
            return getattr(build(node.value, d), node.attr)
        fail(f"{type(node).__name__} is not allowed")

    return build(tree, 0)
