"""Pointers into a parameter read as its subscripts: `const T* p = x + off; ... p[e]` is `x[off +
e]` where p is never repointed, is used only by subscript, and `off` names only values that keep
them where p is in scope (also `&x[off]`, `off + x` and chains of sums)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.index_locals import stable_index
from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel, pointer_summands
from cuopt.source.parse import assigned_target, operand, text, walk, within


def row_pointers(kernel: Kernel, m: KernelModel) -> list[tuple[ts.Node, str]]:
    """(subscript, the parameter's subscript) for each use of a pointer into a parameter, and
    (its declaration, "")."""
    params = {p.name for p in kernel.params if p.pointer}
    out: list[tuple[ts.Node, str]] = []
    for decl in walk(kernel.body):
        found = _pointer_into(decl, params)
        if found is None:
            continue
        name, param, offs = found
        if m.aliases.get(name) != param or (offs and not _unchanging(m, offs, decl)):
            continue
        uses = [n for n in walk(kernel.body) if n.type == "identifier" and text(n) == name
                and not decl.start_byte <= n.start_byte < decl.end_byte]
        indices = [_single_index(n) for n in uses]
        if not uses or any(i is None for i in indices):
            continue
        prefix = "".join(operand(off) + " + " for off in offs)
        out += [(n.parent, f"{param}[{prefix}{operand(i)}]") for n, i in zip(uses, indices)]
        out.append((decl, ""))
    return out


def sole_row_pointer(kernel: Kernel, m: KernelModel, name: str) -> ts.Node | None:
    """The declaration of `name` where it is a pointer into a parameter (`float* out = att + off;`,
    whatever `off` is) that stays put and is the only way the kernel reaches that parameter: used
    only by subscript, the parameter named nowhere else. Its elements are then the parameter's at
    one fixed offset, so two of its subscripts meet where their indices do. None otherwise."""
    param = m.aliases.get(name)
    if param is None or sum(1 for other in m.aliases.values() if other == param) != 1:
        return None
    declaration = None
    for n in walk(kernel.body):
        if n.type != "identifier" or text(n) not in (name, param):
            continue
        holder = n.parent
        while holder is not None and holder.type not in ("declaration", "compound_statement"):
            holder = holder.parent
        if holder is not None and holder.type == "declaration" and _pointer_into(holder, {param}) is not None \
                and _pointer_into(holder, {param})[0] == name:
            declaration = holder
        elif text(n) == param or _single_index(n) is None:
            return None
    return declaration


def _single_index(name: ts.Node) -> ts.Node | None:
    """The index of `name[e]` when `name` is subscripted by one expression, else None."""
    sub = name.parent
    if sub is None or sub.type != "subscript_expression" or sub.child_by_field_name("argument") != name:
        return None
    index = sub.child_by_field_name("indices")
    return index.named_children[0] if index is not None and len(index.named_children) == 1 else None


def _pointer_into(decl: ts.Node, params: set[str]) -> tuple[str, str, list[ts.Node]] | None:
    """(p, x, offsets) of a declaration `T* p = x + off;` (or `off + x`, `x + a + b`, `x`, or
    `&x[off]`), x a pointer parameter."""
    if decl.type != "declaration" or len(decl.children_by_field_name("declarator")) != 1:
        return None
    d = decl.child_by_field_name("declarator")
    pointer = d.child_by_field_name("declarator") if d.type == "init_declarator" else None
    value = d.child_by_field_name("value") if d.type == "init_declarator" else None
    name = pointer.child_by_field_name("declarator") if pointer is not None and pointer.type == "pointer_declarator" \
        else None
    if name is None or name.type != "identifier" or value is None:
        return None
    terms = pointer_summands(value)
    bases = [t for t in terms if t.type == "identifier" and text(t) in params]
    if len(bases) != 1:
        return None
    return text(name), text(bases[0]), [t for t in terms if t is not bases[0]]


def _unchanging(m: KernelModel, offs: list[ts.Node], decl: ts.Node) -> bool:
    """The sum of `offs` is an affine index whose names are never assigned where the declaration
    is in scope: locals never assigned after their declaration, and the counters of the loops whose
    bodies hold the declaration (`for (t...) { const float* row = x + t * n; ... }`), which only
    their headers step."""
    if not stable_index(m, offs, decl):
        return False
    names = {text(n) for off in offs for n in walk(off) if n.type == "identifier"}
    fixed = {lp.var for lp in m.loops if lp.var is not None and within(decl, lp.body)
             and not any(assigned_target(n) == lp.var for n in walk(lp.body))}
    return not any(m.locals[n].writes for n in names - fixed if n in m.locals)
