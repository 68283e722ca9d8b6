"""Loop counters in the form the rules read: `for (k = a; ...)` with a private counter declares it
(`for (int k = a; ...)`), `k <= b - 1` is `k < b`, and declarations of counters that no statement
uses any more (`int i, k;` once every loop declares its own) go."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel
from cuopt.source.parse import assigns, text, walk
from cuopt.source.whiles import counter_type


def loop_headers(kernel: Kernel, model: KernelModel) -> list[tuple[ts.Node, str]]:
    """(initializer, declaration) for `for (k = a; ...)` with a private counter (`for (int k = a;
    ...)`), (condition, `k < b`) for `k <= b - 1`."""
    out: list[tuple[ts.Node, str]] = []
    for lp in model.loops:
        if lp.var is None:
            continue
        init = lp.node.child_by_field_name("initializer")
        start = assigns(init, lp.var)
        type_ = counter_type(kernel, model, lp.var) if start is not None else None
        if type_ is not None:
            out.append((init, f"{type_} {lp.var} = {text(start)}"))
        cond = lp.node.child_by_field_name("condition")
        if lp.cmp == "<=" and lp.step is not None and lp.step > 0 and cond is not None:
            out.append((cond, f"{lp.var} < {_plus_one(cond.child_by_field_name('right'))}"))
    return out


def _plus_one(bound: ts.Node) -> str:
    """`b - 1` as `b`, otherwise `b + 1` (parenthesized unless it is a sum or product)."""
    op = text(bound.child_by_field_name("operator")) if bound.type == "binary_expression" else ""
    right = bound.child_by_field_name("right")
    if op == "-" and right is not None and text(right) == "1":
        return text(bound.child_by_field_name("left"))
    bare = bound.type in ("identifier", "field_expression", "number_literal", "call_expression") or \
        op in ("+", "-", "*", "/", "%")
    return f"{text(bound)} + 1" if bare else f"({text(bound)}) + 1"


def dead_counters(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(declaration, "") for each declaration (`int i, k;`) of counters no statement uses any more."""
    out: list[tuple[ts.Node, str]] = []
    for node in walk(kernel.body):
        if node.type != "declaration" or node.parent is None or node.parent.type != "compound_statement":
            continue
        names = [d for d in node.children_by_field_name("declarator")]
        if not names or any(d.type != "identifier" for d in names):
            continue
        if all(not _used_outside(kernel, text(d), node) for d in names):
            out.append((node, ""))
    return out


def _used_outside(kernel: Kernel, name: str, decl: ts.Node) -> bool:
    """`name` is used, other than by loops that declare a counter of that name themselves."""
    for n in walk(kernel.body):
        if n.type != "identifier" or text(n) != name or decl.start_byte <= n.start_byte < decl.end_byte:
            continue
        loop = n.parent
        while loop is not None and not (loop.type == "for_statement" and _declares(loop, name)):
            loop = loop.parent
        if loop is None:
            return True
    return False


def _declares(loop: ts.Node, name: str) -> bool:
    init = loop.child_by_field_name("initializer")
    return init is not None and init.type == "declaration" and any(
        text(d.child_by_field_name("declarator") or d) == name for d in init.children_by_field_name("declarator"))
