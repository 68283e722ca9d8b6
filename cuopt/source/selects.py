"""Compare-and-select read as the max or min it is: `if (v > m) m = v;` (or `m < v`, `>=`, in
braces, or `m = v > m ? v : m;`) is `m = fmaxf(m, v);`, and the `<` forms `fminf` (`fmax`/`fmin` for
double, `max`/`min` for integers of v's own type). Exact where m is never NaN: a NaN v loses both
ways, so m's initial value and every other value stored into it must be a constant or such a
select."""
from __future__ import annotations

import re

import tree_sitter as ts

from cuopt.source.ctypes import INTEGRAL
from cuopt.source.kernels import Kernel, resolve_type
from cuopt.source.model import KernelModel, Local
from cuopt.source.parse import assigned_name, beats, text, unparen, walk
from cuopt.spec.dtypes import normalize_c_type

_FLOAT_SELECT = {"float": ("fmaxf", "fminf"), "double": ("fmax", "fmin")}
_NAN_FREE = {"INFINITY", "HUGE_VALF", "HUGE_VAL", "FLT_MAX", "DBL_MAX", "CUDART_INF_F", "CUDART_INF",
             "FLT_MIN", "DBL_MIN"}
_SELECT_READS = {"identifier", "number_literal", "subscript_expression", "field_expression", "field_identifier",
                 "binary_expression", "unary_expression", "parenthesized_expression", "cast_expression",
                 "type_descriptor", "primitive_type", "subscript_argument_list"}


def compare_selects(kernel: Kernel, model: KernelModel) -> list[tuple[ts.Node, str]]:
    """(select, `m = fmaxf(m, v)`) for each compare-and-select of a local that never holds NaN."""
    selects: dict[str, list[tuple[ts.Node, str, ts.Node]]] = {}
    for node in walk(kernel.body):
        found = _select(node)
        if found is not None:
            selects.setdefault(found[1], []).append((node, found[2], found[0]))
    edits: list[tuple[ts.Node, str]] = []
    for acc, found in selects.items():
        local = model.locals.get(acc)
        if local is None or not _only_selected(kernel, acc, local, [n for n, _, _ in found]):
            continue
        type_ = normalize_c_type(resolve_type(local.type, kernel.macros))
        for node, kind, value in found:
            fn = _selector(kernel, model, type_, kind, value)
            if fn is not None:
                end = ";" if node.type == "if_statement" else ""
                edits.append((node, f"{acc} = {fn}({acc}, {text(value)}){end}"))
    return edits


def _select(node: ts.Node) -> tuple[ts.Node, str, str] | None:
    """(v, m, "max"|"min") of `if (v > m) m = v;` or `m = v > m ? v : m` (the assignment)."""
    if node.type == "if_statement" and node.child_by_field_name("alternative") is None:
        body = node.child_by_field_name("consequence")
        if body is not None and body.type == "compound_statement":
            body = body.named_children[0] if len(body.named_children) == 1 else None
        if body is None or body.type != "expression_statement" or len(body.named_children) != 1:
            return None
        assign, cond = body.named_children[0], node.child_by_field_name("condition")
        chosen = None
    elif node.type == "assignment_expression" and node.parent.type == "expression_statement":
        assign = node
        choice = unparen(node.child_by_field_name("right"))
        if choice.type != "conditional_expression":
            return None
        cond, chosen, kept = (choice.child_by_field_name(f) for f in ("condition", "consequence", "alternative"))
    else:
        return None
    if assign.type != "assignment_expression" or text(assign.child_by_field_name("operator")) != "=":
        return None
    acc, value = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    if acc.type != "identifier":
        return None
    if chosen is not None:
        if text(unparen(kept)) != text(acc):
            return None
        value = chosen
    value = unparen(value)
    if not all(n.type in _SELECT_READS for n in walk(value) if n.is_named):
        return None
    found = beats(cond.named_children[0] if cond.type == "condition_clause" else cond, value, text(acc))
    return (value, text(acc), found[0]) if found is not None else None


def _only_selected(kernel: Kernel, acc: str, local: Local, selects: list[ts.Node]) -> bool:
    """Every value stored into `acc` (its initializer included) is NaN-free or one of `selects`."""
    stores = [local.init] if local.init is not None else []
    if not stores:
        return False
    inside = [(s.start_byte, s.end_byte) for s in selects]
    for n in walk(kernel.body):
        if not assigned_name(n) & {acc} or any(a <= n.start_byte < b for a, b in inside):
            continue
        if n.type != "assignment_expression" or text(n.child_by_field_name("operator")) != "=" \
                or n.child_by_field_name("left").type != "identifier":
            return False
        stores.append(n.child_by_field_name("right"))
    if normalize_c_type(resolve_type(local.type, kernel.macros)) not in _FLOAT_SELECT:
        return True
    return all(_nan_free(kernel, v) for v in stores)


def _nan_free(kernel: Kernel, value: ts.Node) -> bool:
    """A constant that is not NaN: a number, +-INFINITY, +-FLT_MAX, ..., or a macro for one."""
    value = unparen(value)
    while value.type in ("unary_expression", "cast_expression"):
        if value.type == "unary_expression" and text(value.child_by_field_name("operator")) not in "+-":
            return False
        value = unparen(value.child_by_field_name("argument") or value.child_by_field_name("value"))
    if value.type == "number_literal":
        return True
    if value.type != "identifier":
        return False
    if text(value) in _NAN_FREE:
        return True
    body = kernel.macros.object_like(text(value))
    return body is not None and re.fullmatch(r"[-+(\s]*(\d[\w.]*|INFINITY|FLT_MAX|DBL_MAX)[)\s]*", body) is not None


def _selector(kernel: Kernel, model: KernelModel, type_: str, kind: str, value: ts.Node) -> str | None:
    """The function that keeps `kind` of an accumulator of `type_` and `value`, or None."""
    if type_ in _FLOAT_SELECT:
        return _FLOAT_SELECT[type_][kind == "min"]
    if type_ not in INTEGRAL or _value_type(kernel, model, value) != type_:
        return None
    return kind


def _value_type(kernel: Kernel, model: KernelModel, value: ts.Node) -> str | None:
    """The C type of a local or of an element of a pointer parameter (`x[i]`), macros expanded."""
    value = unparen(value)
    if value.type == "identifier" and text(value) in model.locals:
        return normalize_c_type(resolve_type(model.locals[text(value)].type, kernel.macros))
    if value.type == "subscript_expression":
        array = value.child_by_field_name("argument")
        param = next((p for p in kernel.params if p.name == text(array) and p.pointer == 1), None)
        return normalize_c_type(param.base_type) if param is not None else None
    return None
