"""Guards through a bool local read as the condition itself: `bool mask = i < n; if (mask) { ... }`
(or `const bool`) is `if (i < n) { ... }` where the `if` comes later in the same block, mask names
nothing else, and its value is arithmetic over parameters, locals and built-ins that no statement
between changes (the declaration goes)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.affine import BUILTINS
from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel
from cuopt.source.parse import assigned_name, declared_names, names_read, text, walk


def mask_guards(kernel: Kernel, model: KernelModel) -> list[tuple[ts.Node, str]]:
    """(mask's use, its value) and (mask's declaration, "") for each guard through a bool local."""
    known = {p.name for p in kernel.params} | set(model.locals)
    out: list[tuple[ts.Node, str]] = []
    for decl in walk(kernel.body):
        found = _bool_local(decl)
        if found is None:
            continue
        name, value = found
        names = names_read(value)
        uses = [n for n in walk(kernel.body) if n.type == "identifier" and text(n) == name
                and not decl.start_byte <= n.start_byte < decl.end_byte]
        guard = uses[0].parent.parent if len(uses) == 1 and uses[0].parent.type == "condition_clause" else None
        if guard is None or guard.type != "if_statement" or not names <= known or not pure(value):
            continue
        between, stmt = [], decl.next_named_sibling
        while stmt is not None and stmt.start_byte != guard.start_byte:
            between.append(stmt)
            stmt = stmt.next_named_sibling
        if stmt is None or any(changes(s, names) for s in between) or \
                any(assigned_name(n) & names for n in walk(kernel.body) if n.type == "pointer_expression"):
            continue
        out += [(uses[0], text(value)), (decl, "")]
    return out


def _bool_local(decl: ts.Node) -> tuple[str, ts.Node] | None:
    """(name, value) of `bool name = value;` or `const bool name = value;`, one declarator."""
    if decl.type != "declaration" or text(decl.child_by_field_name("type")) != "bool":
        return None
    ds = decl.children_by_field_name("declarator")
    extra = [c for c in decl.named_children if c.type == "type_qualifier" and text(c) != "const"
             or c.type in ("storage_class_specifier", "attribute_specifier")]
    if len(ds) != 1 or ds[0].type != "init_declarator" or extra:
        return None
    name, value = ds[0].child_by_field_name("declarator"), ds[0].child_by_field_name("value")
    return (text(name), value) if name.type == "identifier" and value is not None else None


_PURE = {"identifier", "number_literal", "true", "false", "field_expression", "field_identifier", "binary_expression",
         "unary_expression", "parenthesized_expression", "conditional_expression"}


def pure(value: ts.Node) -> bool:
    """Arithmetic, comparisons and logic over names, numbers and built-ins: no call, load or assignment."""
    return all(n.type in _PURE and (n.type != "field_expression" or text(n).replace(" ", "") in BUILTINS)
               for n in walk(value) if n.is_named)


def changes(stmt: ts.Node, names: set[str]) -> bool:
    """`stmt` assigns one of `names`, declares one, or passes one to a call (a reference may change it)."""
    for n in walk(stmt):
        if assigned_name(n) & names or n.type == "declaration" and declared_names(n) & names:
            return True
        args = n.child_by_field_name("arguments") if n.type == "call_expression" else None
        if args is not None and any(a.type == "identifier" and text(a) in names for a in args.named_children):
            return True
    return False
