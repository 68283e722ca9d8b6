"""Cooperative groups' ranks on a one-dimensional launch read as the built-ins: `grid.thread_rank()`
of `cg::grid_group grid = cg::this_grid();` (or `auto grid = ...`, or `cg::this_grid().thread_rank()`)
is `blockIdx.x * blockDim.x + threadIdx.x`, `grid.size()` (`num_threads()`) the grid's threads,
`block.thread_rank()` of `cg::this_thread_block()` `threadIdx.x` and its `size()` `blockDim.x`; each
in the type the call returns. On a launch of more dimensions the ranks are linear over them, which
these are not, so nothing is read; nor in a kernel that synchronizes the grid (`grid.sync()` needs
a cooperative launch)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.parse import assigned, text, walk

_GROUPS = {"this_grid": "grid", "this_thread_block": "block"}
_RANKS = {  # (group, method) -> the built-ins, in the type the method returns
    ("grid", "thread_rank"): "((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x)",
    ("grid", "size"): "((unsigned long long)gridDim.x * blockDim.x)",
    ("grid", "num_threads"): "((unsigned long long)gridDim.x * blockDim.x)",
    ("block", "thread_rank"): "(threadIdx.x)",
    ("block", "size"): "(blockDim.x)",
    ("block", "num_threads"): "(blockDim.x)",
}


def group_ranks(kernel: Kernel, one_dimensional: bool) -> list[tuple[ts.Node, str]]:
    """(call, built-ins) for each rank or size of a grid or block group in the kernel's body, and
    (declaration, "") for each group variable that is named nowhere else; none unless the launch is
    `one_dimensional`, or when the grid is synchronized."""
    if not one_dimensional:
        return []
    variables = _variables(kernel)
    out: list[tuple[ts.Node, str]] = []
    for call in walk(kernel.body):
        method = _method(call)
        if method is None:
            continue
        obj, name = method
        group = _group_of(obj, variables)
        if group == "grid" and name == "sync":
            return []
        if group is not None and (group, name) in _RANKS:
            out.append((call, _RANKS[group, name]))
    for declaration, var, _ in variables.values():
        uses = [n for n in walk(kernel.body) if n.type == "identifier" and text(n) == var]
        replaced = [c for c, _ in out if text(c.child_by_field_name("function").child_by_field_name("argument")) == var]
        if len(uses) == len(replaced) + 1:
            out.append((declaration, ""))
    return out


def _method(call: ts.Node) -> tuple[ts.Node, str] | None:
    """(object, method) of a call `object.method()` with no arguments."""
    fn = call.child_by_field_name("function") if call.type == "call_expression" else None
    args = call.child_by_field_name("arguments") if fn is not None else None
    if fn is None or fn.type != "field_expression" or args is None or args.named_children:
        return None
    obj, field = fn.child_by_field_name("argument"), fn.child_by_field_name("field")
    return (obj, text(field)) if obj is not None and field is not None else None


def _variables(kernel: Kernel) -> dict[str, tuple[ts.Node, str, str]]:
    """Group variables of the kernel, by name: (declaration, name, "grid" | "block")."""
    out = {}
    for decl in walk(kernel.body):
        declarators = decl.children_by_field_name("declarator") if decl.type == "declaration" else []
        if len(declarators) != 1 or declarators[0].type != "init_declarator":
            continue
        name, value = declarators[0].child_by_field_name("declarator"), declarators[0].child_by_field_name("value")
        group = _made(value)
        if name is not None and name.type == "identifier" and group is not None:
            out[text(name)] = (decl, text(name), group)
    written = {text(target) for n in walk(kernel.body) if (target := assigned(n)) is not None}
    return {k: v for k, v in out.items() if k not in written}


def _made(value: ts.Node | None) -> str | None:
    """"grid" or "block" for `cg::this_grid()` / `cooperative_groups::this_thread_block()`."""
    if value is None or value.type != "call_expression":
        return None
    fn, args = value.child_by_field_name("function"), value.child_by_field_name("arguments")
    if fn is None or args is None or args.named_children:
        return None
    return _GROUPS.get(text(fn).split("::")[-1].strip())


def _group_of(obj: ts.Node, variables: dict[str, tuple[ts.Node, str, str]]) -> str | None:
    if obj.type == "identifier" and text(obj) in variables:
        return variables[text(obj)][2]
    return _made(obj)
