"""Index helpers: a `__device__` function of the file whose body is `return e;` (`at(x, y, w)`), or
a lambda the kernel declares for the same job (`auto at = [nx](int x, int y) { return y * nx + x; };`),
e arithmetic over its integer parameters. The analysis sees subscripts, so a call is put in as
the expression it returns with the arguments in place of the parameters. A file helper that reads
the built-ins (`__device__ int global_id() { return blockIdx.x * blockDim.x + threadIdx.x; }`, as
code ported from OpenCL writes `get_global_id(0)`) is put in wherever it is called, cast to the
type it returns."""
from __future__ import annotations

import re

import tree_sitter as ts

from cuopt.source.affine import BUILTINS
from cuopt.source.kernels import Kernel
from cuopt.source.ctypes import INTEGRAL
from cuopt.source.parse import assigned, in_subscript, root_of, text, walk
_ARITHMETIC = {"identifier", "number_literal", "binary_expression", "parenthesized_expression", "unary_expression",
               "field_identifier"}

Helper = tuple[list[str], ts.Node]  # parameter names, the returned expression


def helper_calls(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(node, replacement): each call of a file helper in a subscript and each call of an index
    lambda (its declaration too, replaced by nothing, where the kernel names it only in calls)."""
    helpers = _helpers(root_of(kernel.node))
    lambdas = _lambdas(kernel)
    out = []
    for call in walk(kernel.body):
        if call.type != "call_expression":
            continue
        name = text(call.child_by_field_name("function"))
        found, returns = helpers.get(name, (None, ""))
        thread_index = found is not None and returns in INTEGRAL and any(n.type == "field_expression"
                                                                         for n in walk(found[1]))
        helper = lambdas.get(name) or (found if in_subscript(call) or thread_index else None)
        args = call.child_by_field_name("arguments").named_children
        if helper is None or len(args) != len(helper[0]) or \
                any(c.start_byte <= call.start_byte and call.end_byte <= c.end_byte for c, _ in out):
            continue  # a call in another's arguments is put in with that call's text
        params, body = helper
        values = dict(zip(params, (f"({text(a)})" for a in args)))
        put = "(" + "".join(values.get(tok, tok) for tok in re.split(r"(\b\w+\b)", text(body))) + ")"
        out.append((call, f"(({returns}){put})" if thread_index and helper is found else put))
    inlined = [text(call.child_by_field_name("function")) for call, _ in out]
    return out + [(decl, "") for decl in _declarations(kernel, lambdas, inlined)]


def _helpers(root: ts.Node) -> dict[str, tuple[Helper, str]]:
    """The file's index helpers, each with the type it returns."""
    out = {}
    for fn in root.named_children:
        if fn.type != "function_definition" or not any(c.type == "__device__" for c in fn.children):
            continue
        decl = fn.child_by_field_name("declarator")
        name = decl.child_by_field_name("declarator") if decl is not None and decl.type == "function_declarator" \
            else None
        helper = _returned(decl.child_by_field_name("parameters") if name is not None else None,
                           fn.child_by_field_name("body"), set())
        returns = " ".join(text(fn.child_by_field_name("type")).split())
        if name is not None and name.type == "identifier" and helper is not None:
            out[text(name)] = (helper, returns)
    return out


def _returned(parameters: ts.Node | None, body: ts.Node | None, free: set[str]) -> Helper | None:
    """A body `{ return e; }`, e arithmetic over its integer parameters and the names in `free`."""
    inner = body.named_children if body is not None else []
    if parameters is None or len(inner) != 1 or inner[0].type != "return_statement" or not inner[0].named_children:
        return None
    params = []
    for p in parameters.named_children:
        kind, pname = p.child_by_field_name("type"), p.child_by_field_name("declarator")
        if p.type != "parameter_declaration" or kind is None or pname is None or pname.type != "identifier" \
                or text(kind) not in INTEGRAL:
            return None
        params.append(text(pname))
    expr = inner[0].named_children[0]
    builtins = [n for n in walk(expr) if n.type == "field_expression" and text(n).replace(" ", "") in BUILTINS]
    inside = {(n.start_byte, n.end_byte) for b in builtins for n in b.named_children}
    if any(n.type not in _ARITHMETIC and n not in builtins for n in walk(expr) if n.is_named) or \
            any(n.type == "identifier" and text(n) not in params and text(n) not in free and
                (n.start_byte, n.end_byte) not in inside for n in walk(expr)):
        return None
    return params, expr


def _lambdas(kernel: Kernel) -> dict[str, Helper]:
    """The kernel's index lambdas. What one uses besides its parameters must be a parameter of the
    kernel that the kernel never writes, so the value it captured is the value at every call."""
    written = {text(target) for n in walk(kernel.body) if (target := assigned(n)) is not None}
    unchanged = {p.name for p in kernel.params} - written
    out = {}
    for decl, name, value in _lambda_declarations(kernel):
        declarator = next((c for c in value.named_children if c.type == "lambda_declarator"), None)
        helper = _returned(declarator.child_by_field_name("parameters") if declarator is not None else None,
                           value.child_by_field_name("body"), unchanged)
        if helper is not None and name not in written:
            out[name] = helper
    return out


def _lambda_declarations(kernel: Kernel) -> list[tuple[ts.Node, str, ts.Node]]:
    """(declaration, name, lambda) for each `auto name = [...](...) {...};` of the kernel."""
    out = []
    for decl in walk(kernel.body):
        if decl.type != "declaration" or text(decl.child_by_field_name("type")) != "auto":
            continue
        inits = decl.children_by_field_name("declarator")
        value = inits[0].child_by_field_name("value") if len(inits) == 1 else None
        if value is not None and value.type == "lambda_expression":
            out.append((decl, text(inits[0].child_by_field_name("declarator")), value))
    return out


def _declarations(kernel: Kernel, lambdas: dict[str, Helper], inlined: list[str]) -> list[ts.Node]:
    """The declarations of `lambdas` that the kernel names only in calls, every one of them put in
    (`inlined`: the names of the calls put in)."""
    out = []
    for decl, name, _ in _lambda_declarations(kernel):
        uses = sum(n.type == "identifier" and text(n) == name for n in walk(kernel.body))
        if name in lambdas and uses == inlined.count(name) + 1:
            out.append(decl)
    return out
