"""Locals a call writes other than by assignment: through a reference parameter (`welford(v, mean,
m2, n)` where the file defines `__device__ void welford(float v, float& mean, float& m2, float&
n)`), through its address (`acc(&s, v)`, `sincosf(a, &s, &c)`), or as a capture by reference of
a lambda that assigns it (`auto add = [&](float v) { s += v; }; add(x)`). The analysis reads
writes from assignments, so without this such locals would look like values that never change
(and a rule that splits a loop would leave them unmerged)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.parse import assigned_target, root_of, text, unparen, walk


def reference_writes(node: ts.Node) -> list[tuple[ts.Node, str]]:
    """(call, name) for each plain name a call under `node` may write: passed to a non-const
    reference parameter of a function the file defines (any overload of that name), passed by
    address, or captured by reference by the lambda called, which assigns it."""
    outs = _out_parameters(root_of(node))
    lambdas = _lambda_writes(_function_of(node))
    found = []
    for call in walk(node):
        if call.type != "call_expression":
            continue
        fn = text(call.child_by_field_name("function"))
        found += [(call, name) for name in lambdas.get(fn, [])]
        positions = outs.get(fn, set())
        args = call.child_by_field_name("arguments")
        for i, arg in enumerate(args.named_children if args is not None else []):
            arg = unparen(arg)
            if arg.type == "pointer_expression" and text(arg.child_by_field_name("operator")) == "&":
                target = unparen(arg.child_by_field_name("argument"))
                if target.type == "identifier":
                    found.append((call, text(target)))
            elif i in positions and arg.type == "identifier":
                found.append((call, text(arg)))
    return found


def _function_of(node: ts.Node) -> ts.Node:
    """The function definition `node` is in (the file when it is in none)."""
    scope = node
    while scope.parent is not None and scope.type != "function_definition":
        scope = scope.parent
    return scope


def _lambda_writes(scope: ts.Node) -> dict[str, list[str]]:
    """Lambda variable (`auto add = [&](...) {...};`) -> the names it captures by reference and assigns."""
    out: dict[str, list[str]] = {}
    for d in walk(scope):
        value = d.child_by_field_name("value") if d.type == "init_declarator" else None
        if value is None or value.type != "lambda_expression":
            continue
        captures = value.child_by_field_name("captures")
        parts = captures.children if captures is not None else []
        every = any(c.type == "lambda_default_capture" and text(c) == "&" for c in parts)
        named = {text(c) for prev, c in zip(parts, parts[1:]) if c.type == "identifier" and prev.type == "&"}
        body = value.child_by_field_name("body")
        declarator = value.child_by_field_name("declarator")
        own = {text(n) for n in walk(declarator) if n.type == "identifier"} if declarator is not None else set()
        own |= {text(n.child_by_field_name("declarator") or n) for n in walk(body) if n.type == "init_declarator"}
        assigned = []
        for n in walk(body) if body is not None else []:
            target = assigned_target(n)
            if target is not None and target not in own and (every or target in named) and target not in assigned:
                assigned.append(target)
        if assigned:
            out[text(d.child_by_field_name("declarator"))] = assigned
    return out


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


def assigned_outside(body: ts.Node) -> list[str]:
    """Variables that `body` assigns but does not declare (a loop's running values, and its
    counter if the body changes it), in order of first assignment; a local a call may write (a
    helper's reference parameter, its address, a lambda's capture) counts as assigned there
    (cuopt/source/outparams.py)."""
    declared = {text(d) for d in walk(body) if is_declared_name(d)}
    by_call: dict[int, list[str]] = {}
    for call, name in reference_writes(body):
        by_call.setdefault(call.start_byte, []).append(name)
    out: list[str] = []
    for n in walk(body):
        target = assigned_target(n)
        names = [target] if target is not None else by_call.get(n.start_byte, [])
        out += [name for name in names if name not in declared and name not in out]
    return out


def is_declared_name(node: ts.Node) -> bool:
    parent = node.parent
    return node.type == "identifier" and parent is not None and parent.type in ("init_declarator", "declaration") \
        and parent.child_by_field_name("declarator") == node
