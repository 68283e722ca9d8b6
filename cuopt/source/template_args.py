"""The values host code gives the template arguments it launches a kernel with: constants of an
enclosing scope (`constexpr int block_size = 256;`), integral constants (`vec.value` for
`auto vec = std::integral_constant<int, 4>{};`) and the tags a generic lambda is called with
(`[&](auto unroll) { k<decltype(unroll)::value><<<...>>>(...); }` called with
`std::integral_constant<int, 4>{}`)."""
from __future__ import annotations

import re

import tree_sitter as ts

from cuopt.source.cexpr import Host, Translator, constant, enclosing_function, expression
from cuopt.source.parse import root_of, text, walk
from cuopt.source.preprocess import NO_MACROS, Macros

MAX_DEPTH = 8  # declarations and calls followed for one argument
_LITERAL = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|true|false")
_TAG = re.compile(r"(?:std\s*::\s*)?(?:integral_constant\s*<[^,<>]+,(?P<value>.+)>|bool_constant\s*<(?P<flag>.+)>"
                  r"|(?P<known>true_type|false_type))\s*(?:::\s*value|\{\s*\}|\(\s*\))?")
_MEMBER = re.compile(r"(?:decltype\s*\(\s*(?P<decl>[A-Za-z_]\w*)\s*\)|(?P<name>[A-Za-z_]\w*))\s*(?:::|\.)\s*value")
_NAME = re.compile(r"[A-Za-z_]\w*")


def argument_values(arg: str, at: ts.Node, macros: Macros = NO_MACROS, depth: int = 0) -> list[str]:
    """The values template argument `arg`, written at node `at`, takes: the value of each tag or
    constant the code gives it, else `arg` as written (a literal, a type, a macro)."""
    arg = " ".join(arg.split())
    if depth > MAX_DEPTH or _LITERAL.fullmatch(arg):
        return [arg]
    m = _TAG.fullmatch(arg)
    if m is not None:
        if m.group("known"):
            return ["true" if m.group("known") == "true_type" else "false"]
        return argument_values(m.group("value") or m.group("flag"), at, macros, depth + 1)
    m = _MEMBER.fullmatch(arg)
    name = (m.group("decl") or m.group("name")) if m is not None else arg if _NAME.fullmatch(arg) else None
    if name is None:
        return _evaluated(arg, at, macros)
    found = _lambda_tags(name, at) if m is not None else None
    if found is None:
        declared = _declaration(name, at)
        if declared is None:
            return [arg]
        kind, value = declared
        found = [(text(value), value)] if value is not None else [(kind, at)]
    out: list[str] = []
    for written, where in found:
        for v in argument_values(written, where, macros, depth + 1):
            if v not in out:
                out.append(v)
    return out


def _evaluated(arg: str, at: ts.Node, macros: Macros) -> list[str]:
    """An integer constant expression (`2 * 128`, a macro of one) as its value; else as written."""
    node = expression(arg)
    if node is None:
        return [arg]
    value = constant(Translator(Host(root_of(at), macros), use_aliases=False).expr(node, enclosing_function(at)))
    return [str(value)] if value is not None else [arg]


def _lambda_tags(name: str, at: ts.Node) -> list[tuple[str, ts.Node]] | None:
    """The arguments a generic lambda around `at` is called with for its parameter `name`, with
    where each is written; None when no lambda around `at` takes `name`."""
    node = at
    while node is not None and node.type != "function_definition":
        if node.type == "lambda_expression":
            params = _lambda_params(node)
            if name in params:
                index = params.index(name)
                holder = node.parent
                if holder is None or holder.type != "init_declarator":
                    return []
                var = text(holder.child_by_field_name("declarator"))
                scope = enclosing_function(holder) or root_of(holder)
                out = []
                for call in walk(scope):
                    fn = call.child_by_field_name("function") if call.type == "call_expression" else None
                    args = call.child_by_field_name("arguments") if fn is not None else None
                    if fn is not None and text(fn) == var and args is not None and index < len(args.named_children):
                        out.append((text(args.named_children[index]), args.named_children[index]))
                return out
        node = node.parent
    return None


def _lambda_params(lam: ts.Node) -> list[str]:
    decl = lam.child_by_field_name("declarator")
    plist = next((c for c in decl.named_children if c.type == "parameter_list"), None) if decl is not None else None
    out = []
    for p in plist.named_children if plist is not None else ():
        names = [n for n in walk(p) if n.type == "identifier"]
        out.append(text(names[-1]) if names else "")
    return out


def _declaration(name: str, at: ts.Node) -> tuple[str, ts.Node | None] | None:
    """(declared type, initializer) of the local `name` in scope at `at`; None when there is none."""
    found = _declared(name, at, parameters=False)
    if found is None:
        return None
    declaration, d = found
    kind = declaration.child_by_field_name("type")
    return text(kind) if kind is not None else "", d.child_by_field_name("value") if d.type == "init_declarator" else None


def _declared(name: str, at: ts.Node, parameters: bool) -> tuple[ts.Node, ts.Node] | None:
    """(declaration, declarator) that declares `name` in scope at `at`: the nearest declaration of an
    enclosing block before `at`, or with `parameters` a parameter of the enclosing function."""
    node = at
    while node is not None:
        parent = node.parent
        if parent is not None and parent.type == "compound_statement":
            scope = [s for s in parent.named_children if s.type == "declaration" and s.start_byte < node.start_byte]
        elif parameters and node.type == "function_definition":
            decl = node.child_by_field_name("declarator")
            plist = decl.child_by_field_name("parameters") if decl is not None else None
            scope = [p for p in plist.named_children if p.type == "parameter_declaration"] if plist is not None else []
        else:
            scope = []
        for declaration in reversed(scope):
            for d in declaration.children_by_field_name("declarator"):
                inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                while inner is not None and inner.type == "pointer_declarator":
                    inner = inner.child_by_field_name("declarator")
                if inner is not None and text(inner) == name:
                    return declaration, d
        node = parent
    return None


def deduced(root: ts.Node, name: str, pointed: dict[str, int]) -> list[tuple[dict[str, str], int]]:
    """What each launch `name<<<...>>>(...)` that writes no template arguments deduces: for each
    type parameter of `pointed` (the position of its `T*` parameter), the element type of the
    pointer passed there (a variable or parameter declared `float* x`, a cast `(float*)p` or
    `static_cast<float*>(p)`, either plus an offset), with the launch's line. Launches where one
    cannot be read give nothing."""
    out = []
    for call in walk(root):
        fn = call.child_by_field_name("function") if call.type == "call_expression" else None
        if fn is None or not any(c.type == "kernel_call_syntax" for c in call.children) or \
                fn.type not in ("identifier", "qualified_identifier") or text(fn).split("::")[-1] != name:
            continue
        args = call.child_by_field_name("arguments")
        passed = args.named_children if args is not None else []
        types = {t: _pointee(passed[i], call) if i < len(passed) else None for t, i in pointed.items()}
        if all(types.values()):
            out.append(({t: v for t, v in types.items() if v}, call.start_point.row + 1))
    return out


def _pointee(arg: ts.Node, at: ts.Node) -> str | None:
    """The element type of the pointer expression `arg`, or None."""
    while arg.type == "parenthesized_expression" and arg.named_children:
        arg = arg.named_children[0]
    if arg.type == "binary_expression" and text(arg.child_by_field_name("operator")) in ("+", "-"):
        arg = arg.child_by_field_name("left")
    if arg.type == "cast_expression":
        return _element(text(arg.child_by_field_name("type")))
    fn = arg.child_by_field_name("function") if arg.type == "call_expression" else None
    if fn is not None and fn.type == "template_function" and \
            text(fn.child_by_field_name("name")) in ("static_cast", "reinterpret_cast", "const_cast"):
        return _element(text(fn.child_by_field_name("arguments"))[1:-1])
    found = _declared(text(arg), at, parameters=True) if arg.type == "identifier" else None
    if found is None:
        return None
    declaration, d = found
    d = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
    kind = declaration.child_by_field_name("type")
    if d is None or d.type != "pointer_declarator" or d.child_by_field_name("declarator").type != "identifier" or \
            kind is None:
        return None  # not a pointer to one element type: `float** p`, `int n`
    return " ".join(text(kind).split())


def _element(pointer_type: str) -> str | None:
    """`const float*` -> `float`; None for anything but a pointer to one element type."""
    words = pointer_type.replace("*", " * ").split()
    if words.count("*") != 1 or words[-1] != "*":
        return None
    words = [w for w in words[:-1] if w not in ("const", "volatile", "__restrict__")]
    return " ".join(words) or None
