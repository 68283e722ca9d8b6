"""Atomic addresses written as pointer sums: `atomicAdd(bins + v, 1)` read as `atomicAdd(&bins[v], 1)`,
the element the analysis of accesses knows (`&bins[v]` is the same address)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.model import ATOMIC_PREFIX, summands
from cuopt.source.parse import text, unparen, walk


def atomic_addresses(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(node, replacement): the address of each atomic call written `p + e` (or `e + p`, any grouping
    of `+`), p a pointer parameter and no other term a pointer, as `&p[e]`."""
    pointers = {p.name for p in kernel.params if p.pointer}
    others = pointers | _pointer_locals(kernel)
    out = []
    for call in walk(kernel.body):
        if call.type != "call_expression" or not text(call.child_by_field_name("function")).startswith(ATOMIC_PREFIX):
            continue
        args = call.child_by_field_name("arguments")
        address = args.named_children[0] if args is not None and args.named_children else None
        if address is None or unparen(address).type != "binary_expression":
            continue
        terms = summands(unparen(address))
        bases = [t for t in terms if t.type == "identifier" and text(t) in pointers]
        rest = [t for t in terms if t not in bases]
        if len(bases) != 1 or not rest or any(_names_pointer(t, others) for t in rest):
            continue
        out.append((address, f"&{text(bases[0])}[{' + '.join(text(t) for t in rest)}]"))
    return out


def _names_pointer(term: ts.Node, pointers: set[str]) -> bool:
    """Whether `term` names a pointer other than as the array of a subscript (`keys[i]` is a number)."""
    for n in walk(term):
        parent = n.parent
        if n.type == "identifier" and text(n) in pointers and not (
                parent is not None and parent.type == "subscript_expression" and parent.child_by_field_name("argument") == n):
            return True
    return False


def _pointer_locals(kernel: Kernel) -> set[str]:
    """Locals declared as pointers (`float* p = ...;`, `int *a, *b;`): a term naming one is not an offset."""
    names = set()
    for decl in walk(kernel.body):
        if decl.type != "declaration":
            continue
        for d in decl.children_by_field_name("declarator"):
            d = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if d is not None and d.type == "pointer_declarator":
                while d.type == "pointer_declarator":
                    d = d.child_by_field_name("declarator")
                names.add(text(d))
    return names
