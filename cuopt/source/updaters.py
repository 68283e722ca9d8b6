"""Update helpers: a `__device__ void` function of the file that updates its reference parameters
(or pointer parameters it uses only as `*p`) with plain statements (`welford_update(v, mean, m2,
count)`: `count += 1.0f; float delta = v - mean; mean += delta / count; m2 += delta * (v -
mean);`), called as a statement with a local for each (`&local` for a pointer). The analysis reads
updates from assignments, so a call is put in as the helper's statements: each reference
parameter (each `*p`) replaced by the local passed for it, each value parameter by a local of its
own set to the argument, the helper's own locals renamed where the kernel uses their names."""
from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.parse import root_of, text, unparen, walk

_STATEMENTS = {"expression_statement", "declaration", "compound_statement", "if_statement"}
_BARRED = {"return_statement", "for_statement", "while_statement", "do_statement", "goto_statement",
           "labeled_statement", "break_statement", "continue_statement", "switch_statement", "asm_statement",
           "lambda_expression"}


@dataclass(frozen=True)
class Updater:
    params: list[tuple[str, str, str]]  # (name, type as written, "value", "ref" or "ptr")
    body: ts.Node  # the compound statement
    locals: set[str]  # names the body declares
    free: set[str]  # other names the body reads (the file's constants), calls aside


def updater_calls(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(statement, replacement): each `helper(args);` statement of the kernel that calls an update
    helper with a plain local for every reference parameter (`&local` for a pointer), as the
    helper's statements (in braces where the statement is a loop's or an `if`'s whole body)."""
    helpers = _updaters(root_of(kernel.node))
    if not helpers:
        return []
    taken = set(re.findall(r"\b\w+\b", text(kernel.node)))
    kernel_names = _declared(kernel.node)
    out = []
    for st in walk(kernel.body):
        call = st.named_children[0] if st.type == "expression_statement" and st.named_children else None
        if call is None or call.type != "call_expression":
            continue
        helper = helpers.get(text(call.child_by_field_name("function")))
        args = call.child_by_field_name("arguments").named_children
        if helper is None or len(args) != len(helper.params) or helper.free & kernel_names:
            continue  # (a name the helper reads from the file would mean the kernel's own there)
        outs = [_local(a, mode) for a, (_, _, mode) in zip(args, helper.params)]
        if any(mode != "value" and (o is None or o in helper.locals) for o, (_, _, mode) in zip(outs, helper.params)):
            continue
        names: dict[str, str] = {}
        lines = []
        for arg, out_name, (name, kind, mode) in zip(args, outs, helper.params):
            if mode == "value":
                names[name] = _fresh(f"cuopt_{name}", taken)
                lines.append(f"{kind} {names[name]} = {text(arg)};")
            else:
                names[name] = out_name  # type: ignore[assignment]
        for name in sorted(helper.locals):
            names[name] = _fresh(name, taken) if name in taken else name
            taken.add(names[name])
        inner = _substituted(helper, names).strip()[1:-1].strip("\n")
        lines += [ln.strip() for ln in inner.split("\n") if ln.strip()]
        line = (root_of(st).text or b"").split(b"\n")[st.start_point.row].decode()
        pad = line[:len(line) - len(line.lstrip())]
        if st.parent is not None and st.parent.type != "compound_statement":  # a loop's or an if's whole body
            out.append((st, "{\n" + "".join(f"{pad}    {ln}\n" for ln in lines) + pad + "}"))
        else:
            out.append((st, f"\n{pad}".join(lines)))
    return out


def _local(arg: ts.Node, mode: str) -> str | None:
    """The local an out-parameter's argument names: `x` for a reference, `&x` for a pointer."""
    arg = unparen(arg)
    if mode == "ptr":
        if arg.type != "pointer_expression" or text(arg.child_by_field_name("operator")) != "&":
            return None
        arg = unparen(arg.child_by_field_name("argument"))
    return text(arg) if arg.type == "identifier" else None


def _substituted(helper: Updater, names: dict[str, str]) -> str:
    """The helper's body with `*p` and the names in `names` replaced."""
    body = helper.body
    pointers = {p for p, _, mode in helper.params if mode == "ptr"}
    edits: list[tuple[int, int, str]] = []
    for n in walk(body):
        if n.type == "pointer_expression" and text(n.child_by_field_name("operator")) == "*" and \
                text(unparen(n.child_by_field_name("argument"))) in pointers:
            edits.append((n.start_byte, n.end_byte, names[text(unparen(n.child_by_field_name("argument")))]))
        elif n.type == "identifier" and text(n) in names and text(n) not in pointers:
            edits.append((n.start_byte, n.end_byte, names[text(n)]))
    source = body.text or b""
    for start, end, new in sorted(edits, reverse=True):
        source = source[:start - body.start_byte] + new.encode() + source[end - body.start_byte:]
    return source.decode()


def _declared(node: ts.Node) -> set[str]:
    """The names declarations and parameters under `node` introduce."""
    out = set()
    for n in walk(node):
        if n.type in ("declaration", "parameter_declaration"):
            for d in n.children_by_field_name("declarator"):
                while d is not None and d.type != "identifier":
                    d = d.child_by_field_name("declarator") or next(
                        (c for c in d.named_children if c.type == "identifier"), None)
                if d is not None:
                    out.add(text(d))
    return out


def _fresh(name: str, taken: set[str]) -> str:
    candidate, i = name, 2
    while candidate in taken:
        candidate, i = f"{name}_{i}", i + 1
    taken.add(candidate)
    return candidate


def _updaters(root: ts.Node) -> dict[str, Updater]:
    out: dict[str, Updater] = {}
    for fn in root.named_children:
        if fn.type != "function_definition" or not any(c.type == "__device__" for c in fn.children) \
                or text(fn.child_by_field_name("type") or fn) != "void":
            continue
        decl = fn.child_by_field_name("declarator")
        body = fn.child_by_field_name("body")
        if decl is None or decl.type != "function_declarator" or body is None:
            continue
        params = _params(decl.child_by_field_name("parameters"))
        if params is None or all(mode == "value" for _, _, mode in params) or \
                not _pointers_only_dereferenced(body, {p for p, _, mode in params if mode == "ptr"}) or \
                any(st.type not in _STATEMENTS for st in body.named_children if st.type != "comment") or \
                any(n.type in _BARRED for n in walk(body)):
            continue
        declared = _declared(body)
        called = {n.child_by_field_name("function").id for n in walk(body) if n.type == "call_expression"}
        free = {text(n) for n in walk(body) if n.type == "identifier" and n.id not in called} - declared - \
            {p for p, _, _ in params}
        name = text(decl.child_by_field_name("declarator"))
        if name in out:  # overloads: none is put in
            out[name] = Updater([], body, set(), set())
            continue
        out[name] = Updater(params, body, declared, free)
    return {k: v for k, v in out.items() if v.params}


def _params(parameters: ts.Node | None) -> list[tuple[str, str, str]] | None:
    """(name, type, mode) of each parameter: plain types, by value, by non-const reference ("ref")
    or through a pointer to non-const ("ptr")."""
    out = []
    for p in parameters.named_children if parameters is not None else []:
        kind, d = p.child_by_field_name("type"), p.child_by_field_name("declarator")
        if p.type != "parameter_declaration" or kind is None or d is None or kind.type != "primitive_type":
            return None
        const = any(c.type == "type_qualifier" for c in p.children)
        if d.type in ("reference_declarator", "pointer_declarator") and not const:
            inner = d.child_by_field_name("declarator") or next((c for c in d.named_children if c.type == "identifier"),
                                                                None)
            if inner is None or inner.type != "identifier":
                return None
            out.append((text(inner), text(kind), "ref" if d.type == "reference_declarator" else "ptr"))
        elif d.type == "identifier":
            out.append((text(d), text(kind), "value"))
        else:
            return None
    return out


def _pointers_only_dereferenced(body: ts.Node, pointers: set[str]) -> bool:
    """Every use of a pointer parameter in `body` is `*p`."""
    for n in walk(body):
        if n.type == "identifier" and text(n) in pointers:
            parent = n.parent
            while parent is not None and parent.type == "parenthesized_expression":
                parent = parent.parent
            if parent is None or parent.type != "pointer_expression" or \
                    text(parent.child_by_field_name("operator")) != "*":
                return False
    return True
