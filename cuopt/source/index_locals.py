"""Index locals put into the subscripts they name: `int idx = i * n + j; ... a[idx]` is `a[i * n +
j]` where idx is an integer never written, used only in subscripts, and names only values that
keep them where idx is in scope (its declaration goes)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.ctypes import is_integer
from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel
from cuopt.source.parse import in_subscript, text, walk


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
    return out


def stable_index(m: KernelModel, terms: list[ts.Node], decl: ts.Node) -> bool:
    """The sum of `terms` is an affine index whose loop variables keep their values where the local
    declared by `decl` is in scope."""
    poly = m.poly_sum(terms)
    return poly is not None and not any(
        lp.var in poly.symbols() and not lp.node.start_byte <= decl.start_byte < lp.node.end_byte for lp in m.loops)
