"""Locals declared first and assigned later (`int i, j; ... i = blockIdx.x * blockDim.x + threadIdx.x;`),
the older C style: where the assignment is the local's only one and every use comes after it in
its block, the assignment becomes the declaration, so the analysis sees an initialized local."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.ctypes import INTEGRAL
from cuopt.source.parse import assigned_name, assigns, text, walk


def single_assignments(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(node, replacement): each `i = e;` that becomes `int i = e;`, and the declaration it came
    from with what it still declares (`int j;`), or nothing where it declared no other local."""
    out = []
    for decl in kernel.body.named_children:
        if decl.type != "declaration" or not plain_declaration(decl):
            continue
        type_ = text(decl.child_by_field_name("type"))
        names = decl.children_by_field_name("declarator")
        moved = {d.start_byte: s for d in names if d.type == "identifier"
                 and (s := _sole_assignment(kernel, text(d), decl)) is not None}
        if not moved:
            continue
        for d in names:
            if d.start_byte in moved:
                out.append((moved[d.start_byte], f"{type_} {text(d)} = {text(assigns(moved[d.start_byte], text(d)))};"))
        kept = [text(d) for d in names if d.start_byte not in moved]
        out.append((decl, f"{type_} {', '.join(kept)};" if kept else ""))
    return out


def plain_declaration(decl: ts.Node) -> bool:
    """A declaration of a number or bool type and its declarators only (no `const`, `__shared__`,
    `static`: those cannot take a later assignment as their initializer)."""
    kind = decl.child_by_field_name("type")
    if kind is None or kind.type not in ("primitive_type", "sized_type_specifier") and text(kind) not in INTEGRAL:
        return False
    parts = {kind.start_byte} | {d.start_byte for d in decl.children_by_field_name("declarator")}
    return all(c.start_byte in parts or c.type == "comment" for c in decl.named_children)


def _sole_assignment(kernel: Kernel, var: str, decl: ts.Node) -> ts.Node | None:
    """The statement `var = e;` after `decl`, in the kernel's body or a block inside it (`if (...) {
    i00 = I2D(ni, i, j); ... }`), when no other statement assigns var or takes its address and every
    use of var (e included) comes after it in that block, one at least (a local never read is left
    as written)."""
    found = [n for n in walk(kernel.body) if n.type == "expression_statement" and n.start_byte > decl.end_byte
             and n.parent is not None and n.parent.type == "compound_statement" and assigns(n, var) is not None]
    if len(found) != 1:
        return None
    stmt = found[0]
    block = stmt.parent
    read = False
    for n in walk(kernel.body):
        if n.start_byte == stmt.start_byte or decl.start_byte <= n.start_byte < decl.end_byte:
            continue  # the assignment (its target) and the declaration
        if var in assigned_name(n):
            return None
        if n.type == "identifier" and text(n) == var:
            if n.start_byte < stmt.end_byte or n.end_byte > block.end_byte:
                return None
            read = True
    return stmt if read else None
