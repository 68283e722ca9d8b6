"""Named casts of numbers: `static_cast<size_t>(blockIdx.x)` read as the C cast `((size_t)(blockIdx.x))`,
the spelling the analysis of indices and guards knows. Only casts to an arithmetic type: a cast of
a pointer keeps its spelling (and its meaning to the rules that read types)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.ctypes import ARITHMETIC
from cuopt.source.kernels import Kernel
from cuopt.source.parse import text, walk


def named_casts(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(node, replacement): each `static_cast<T>(e)` in the kernel, T an arithmetic type, as `((T)(e))`;
    outermost first, with the casts inside it put in too."""
    out: list[ts.Node] = []
    for node in walk(kernel.body):
        if _cast(node) is not None and not any(o.start_byte <= node.start_byte < o.end_byte for o in out):
            out.append(node)
    return [(node, _spelled(node).decode()) for node in out]


def _cast(node: ts.Node) -> tuple[str, ts.Node] | None:
    """(T, e) of `static_cast<T>(e)`, T arithmetic."""
    if node.type != "call_expression":
        return None
    function, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
    if function is None or function.type != "template_function" or args is None or len(args.named_children) != 1:
        return None
    name, targs = function.child_by_field_name("name"), function.child_by_field_name("arguments")
    if name is None or text(name) != "static_cast" or targs is None or len(targs.named_children) != 1:
        return None
    type_name = " ".join(text(targs.named_children[0]).split()).removeprefix("std::")
    return (type_name, args.named_children[0]) if type_name in ARITHMETIC else None


def _spelled(node: ts.Node) -> bytes:
    """The text of `node` with each arithmetic named cast in it as a C cast."""
    cast = _cast(node)
    if cast is not None:
        return b"((" + cast[0].encode() + b")(" + _spelled(cast[1]) + b"))"
    source, base = node.text or b"", node.start_byte
    for child in reversed(node.children):
        if any(_cast(n) is not None for n in walk(child)):
            source = source[:child.start_byte - base] + _spelled(child) + source[child.end_byte - base:]
    return source
