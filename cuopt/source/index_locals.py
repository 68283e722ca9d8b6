"""Index locals put into the subscripts they name: `int idx = i * n + j; ... a[idx]` is `a[i * n +
j]` where idx is an integer never written, used only in subscripts, and names only values that
keep them where idx is in scope (its declaration goes). A built-in's alias (`int lane =
threadIdx.x;`) is put in wherever the built-in gives the same value, so `buf[lane] = s; ... if
(lane < w)` reads as it does written with `threadIdx.x`."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.affine import BUILTINS
from cuopt.source.ctypes import is_integer, size_of
from cuopt.source.exprtypes import ExprTypes
from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel
from cuopt.source.parse import in_subscript, operator_of, text, walk

_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_THROUGH = frozenset({"+", "*", "/", "%"})  # of two values never negative: the same value in either signedness


def index_locals(kernel: Kernel, m: KernelModel) -> list[tuple[ts.Node, str]]:
    """(use, value) for each use of an index local, and (its declaration, "")."""
    out: list[tuple[ts.Node, str]] = []
    for name, local in m.locals.items():
        if local.writes or local.init is None or not is_integer(local.type):
            continue
        if len(local.node.children_by_field_name("declarator")) != 1 or not stable_index(m, [local.init], local.node):
            continue
        uses = [n for n in walk(kernel.body) if n.type == "identifier" and text(n) == name
                and not (local.node.start_byte <= n.start_byte < local.node.end_byte)]
        if not uses or not all(in_subscript(n) for n in uses):
            continue
        value = text(local.init)
        for n in uses:
            whole = n.parent is not None and n.parent.type == "subscript_argument_list"
            out.append((n, value if whole or local.init.type != "binary_expression" else f"({value})"))
        out.append((local.node, ""))
    return out + _builtin_alias_uses(kernel, m, out)


def _builtin_alias_uses(kernel: Kernel, m: KernelModel, taken: list[tuple[ts.Node, str]]) -> list[tuple[ts.Node, str]]:
    """(use, built-in) for each use of a built-in's alias (an integer of 32 bits or more, never written,
    declared alone: it holds the built-in's value), and (its declaration, ""), where at every use the
    unsigned built-in gives the same value (`_keeps_value`) and no use is in what `taken` replaces:
    the kernel then reads as written with the built-in. Not an index local's: those went in whole."""
    out: list[tuple[ts.Node, str]] = []
    for name, local in m.locals.items():
        init = local.init
        if init is None or local.writes or init.type != "field_expression" or \
                text(init).replace(" ", "") not in BUILTINS or not is_integer(local.type) or \
                (size_of(local.type) or 0) < 4 or len(local.node.children_by_field_name("declarator")) != 1 or \
                any(t == local.node for t, _ in taken) or _declarations_of(kernel, name) != 1:
            continue
        uses = [n for n in walk(kernel.body) if n.type == "identifier" and text(n) == name
                and not local.node.start_byte <= n.start_byte < local.node.end_byte]
        put = [n for n in uses if _keeps_value(n, m.types)
               and not any(t.start_byte <= n.start_byte < t.end_byte for t, _ in taken)]
        if uses and len(put) == len(uses):
            out += [(n, text(init)) for n in put] + [(local.node, "")]
    return out


def _keeps_value(use: ts.Node, types: ExprTypes) -> bool:
    """Whether `use`, an alias of a built-in, has the same value written as the built-in: a whole
    subscript, the value of an integer of 32 bits or more, or a side of a comparison with a value
    never negative, through parentheses and `+ * / %` with values never negative (an `int` and an
    `unsigned` of one value compare alike only when the other side is not negative: `lane < -1` is
    false, `threadIdx.x < -1` true)."""
    node, parent = use, use.parent
    while parent is not None and (parent.type == "parenthesized_expression" or
                                  parent.type == "binary_expression" and operator_of(parent) in _THROUGH):
        if parent.type == "binary_expression" and not types.never_negative(_other_side(parent, node)):
            return False
        node, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type == "subscript_argument_list":
        return True
    if parent.type == "init_declarator" and parent.child_by_field_name("value") == node:
        declared = parent.parent.child_by_field_name("type") if parent.parent is not None else None
        return declared is not None and is_integer(text(declared)) and (size_of(text(declared)) or 0) >= 4
    return parent.type == "binary_expression" and operator_of(parent) in _COMPARISONS and \
        types.never_negative(_other_side(parent, node))


def _declarations_of(kernel: Kernel, name: str) -> int:
    """How many declarators in the kernel's body declare `name` (one: every use is of that one)."""
    return sum(1 for n in walk(kernel.body) if n.type == "identifier" and text(n) == name and n.parent is not None
               and n.parent.type in ("init_declarator", "declaration") and n in n.parent.children_by_field_name("declarator"))


def _other_side(binary: ts.Node, side: ts.Node) -> ts.Node:
    left, right = binary.child_by_field_name("left"), binary.child_by_field_name("right")
    return right if left == side else left


def stable_index(m: KernelModel, terms: list[ts.Node], decl: ts.Node) -> bool:
    """The sum of `terms` is an affine index whose loop variables keep their values where the local
    declared by `decl` is in scope."""
    poly = m.poly_sum(terms)
    return poly is not None and not any(
        lp.var in poly.symbols() and not lp.node.start_byte <= decl.start_byte < lp.node.end_byte for lp in m.loops)
