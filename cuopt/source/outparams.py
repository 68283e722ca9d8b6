"""Locals a call writes through a reference parameter: `welford(v, mean, m2, n)` where the file
defines `__device__ void welford(float v, float& mean, float& m2, float& n)`. The analysis reads
writes from assignments, so without this a helper's out-parameters would look like values that
never change (and a rule that splits a loop would leave them unmerged)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.parse import root_of, text, walk


def reference_writes(node: ts.Node) -> list[tuple[ts.Node, str]]:
    """(call, name) for each plain name a call under `node` passes to a non-const reference
    parameter of a function the file defines (any overload of that name)."""
    outs = _out_parameters(root_of(node))
    found = []
    for call in walk(node):
        if call.type != "call_expression":
            continue
        positions = outs.get(text(call.child_by_field_name("function")), set())
        args = call.child_by_field_name("arguments")
        for i, arg in enumerate(args.named_children if args is not None and positions else []):
            while arg.type == "parenthesized_expression" and arg.named_children:
                arg = arg.named_children[0]
            if i in positions and arg.type == "identifier":
                found.append((call, text(arg)))
    return found


def _out_parameters(root: ts.Node) -> dict[str, set[int]]:
    """Function name -> positions of its non-const reference parameters, over the file's definitions."""
    outs: dict[str, set[int]] = {}
    for fn in walk(root):
        if fn.type != "function_definition":
            continue
        declarator = fn.child_by_field_name("declarator")
        while declarator is not None and declarator.type != "function_declarator":
            declarator = declarator.child_by_field_name("declarator")
        if declarator is None:
            continue
        name = text(declarator.child_by_field_name("declarator"))
        params = declarator.child_by_field_name("parameters")
        for i, p in enumerate(c for c in (params.named_children if params is not None else [])
                              if c.type == "parameter_declaration"):
            d = p.child_by_field_name("declarator")
            const = any(c.type == "type_qualifier" and text(c) == "const" for c in p.children)
            if d is not None and d.type == "reference_declarator" and not const:
                outs.setdefault(name, set()).add(i)
    return outs
