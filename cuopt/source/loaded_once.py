"""Loads held in locals and read once put into their use: `float a = A[i * K + k]; float b = B[k * N
+ j]; acc += a * b;` is `acc += A[i * K + k] * B[k * N + j];` for a local that holds a load of
global memory and is read once, later in the same block and not in a loop of its own, with nothing
between that writes memory, calls or changes what the load reads (Parboil's and many textbooks'
matrix products stage the operands so). The load may then sit under a condition the use is in."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel
from cuopt.source.parse import assigned, text, walk

_EFFECTS = ("call_expression", "assignment_expression", "update_expression")


def loaded_once(kernel: Kernel, m: KernelModel) -> list[tuple[ts.Node, str]]:
    """(use, load) and (declaration, "") for each local that holds a load read once."""
    globals_ = set(m.pointer_params) | set(m.aliases)
    out: list[tuple[ts.Node, str]] = []
    for name, local in m.locals.items():
        decl, init = local.node, local.init
        if local.writes or init is None or len(decl.children_by_field_name("declarator")) != 1 or \
                decl.parent is None or decl.parent.type != "compound_statement":
            continue
        if not any(n.type == "subscript_expression" and text(n.child_by_field_name("argument")) in globals_
                   for n in walk(init)) or any(n.type in _EFFECTS for n in walk(init)):
            continue
        uses = [n for n in walk(kernel.body) if n.type == "identifier" and text(n) == name
                and not decl.start_byte <= n.start_byte < decl.end_byte]
        if len(uses) != 1 or not _quiet_between(decl, uses[0], {text(n) for n in walk(init) if n.type == "identifier"}):
            continue
        plain = init.type in ("subscript_expression", "call_expression", "identifier", "parenthesized_expression")
        out += [(uses[0], text(init) if plain else f"({text(init)})"), (decl, "")]
    return out


def _quiet_between(decl: ts.Node, use: ts.Node, names: set[str]) -> bool:
    """`use` lies in a later statement of `decl`'s block, outside loops of its own, and nothing from
    `decl` to it writes memory, calls, or assigns or redeclares one of `names`."""
    holder = use
    while holder.parent is not None and holder.parent != decl.parent:
        if holder.type in ("for_statement", "while_statement", "do_statement") or holder.parent.type == "lambda_expression":
            return False
        holder = holder.parent
    if holder.parent != decl.parent or holder.start_byte < decl.end_byte:
        return False
    for n in walk(decl.parent):
        if not decl.end_byte <= n.start_byte < use.start_byte:
            continue
        if n.type == "call_expression" or (n.type in ("assignment_expression", "update_expression") and (
                (target := assigned(n)) is None or target.type != "identifier" or text(target) in names)):
            return False
        if n.type == "identifier" and text(n) in names and n.parent is not None and \
                n.parent.type in ("init_declarator", "declaration") and n.parent.child_by_field_name("declarator") == n:
            return False
    return True
