"""Work before a guarded store moved under its guard: `int i = ...; float acc = 0; for (...) acc +=
...; if (i < n) y[i] = acc;` is `int i = ...; if (i < n) { float acc = 0; for (...) acc += ...;
y[i] = acc; }`. Work that only computes locals, a loop among it, moves under the guard of the
kernel's last statement, a guarded store, so threads past the bound skip it (they skip reads,
never add any) and every store stays. The declarations the guard reads stay before it. An `if` of
the moved work with the guard's own condition opens into the block. Work with a barrier, an
atomic, a return or any other call keeps its place."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.masks import changes, pure
from cuopt.source.model import MATH_FUNCTIONS, KernelModel
from cuopt.source.parse import declared_names, names_read, reindent, text, walk

_VALUE_CALLS = frozenset({"min", "max", "abs", "fabsf", "__ldg"})
_LOOPS = ("for_statement", "while_statement", "do_statement")


def store_guards(kernel: Kernel, model: KernelModel, source: bytes) -> list[tuple[ts.Node, str]]:
    """(moved statement, "") for each statement that moves, and (the guarded store, the guarded
    block); none where nothing moves."""
    stmts = [c for c in kernel.body.named_children if c.type != "comment"]
    last = stmts[-1] if stmts else None
    if last is None or last.type != "if_statement" or last.child_by_field_name("alternative") is not None:
        return []
    cond = last.child_by_field_name("condition")
    value = cond.child_by_field_name("value") if cond is not None else None
    if value is None or not pure(value) or not any(a.write and a.space == "global" and _inside(a.node, last)
                                                   for a in model.accesses):
        return []
    needed, kept, moved = names_read(value), [], []
    for st in reversed(stmts[:-1]):
        if st.type == "declaration" and declared_names(st) & needed:
            kept.append(st)
            needed |= names_read(st)
        else:
            moved.append(st)
    kept.reverse()
    moved.reverse()
    if not any(n.type in _LOOPS for st in moved for n in walk(st)) or not all(_local_work(model, st) for st in moved):
        return []  # declarations alone: nothing a rule needs under the guard
    for st in moved:
        later = [k for k in kept if k.start_byte > st.start_byte]
        if changes(st, needed) or any(changes(st, names_read(k)) for k in later):
            return []
    guard = text(value)
    indent = source[source.rfind(b"\n", 0, last.start_byte) + 1:last.start_byte].decode()
    parts = [_opened(st, guard) for st in moved + [last]]
    declared = [name for part in parts for st in part for name in (declared_names(st) if st.type == "declaration" else ())]
    if indent.strip() or len(declared) != len(set(declared)):
        return []  # the guard shares its line, or the block would declare a name twice
    block = "\n".join(reindent(st, text(st), indent + "    ") for part in parts for st in part)
    return [(st, "") for st in moved] + [(last, f"if ({guard}) {{\n{block}\n{indent}}}")]


def _inside(node: ts.Node, outer: ts.Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _local_work(m: KernelModel, st: ts.Node) -> bool:
    """`st` computes locals only: no store to memory, and calls only to math functions that take no
    address."""
    if st.type not in ("declaration", "expression_statement", "for_statement", "while_statement", "do_statement",
                       "if_statement", "compound_statement"):
        return False
    if any(a.write and a.space != "local" and _inside(a.node, st) for a in m.accesses):
        return False
    for n in walk(st):
        if n.type == "call_expression":
            fn = text(n.child_by_field_name("function"))
            if fn not in MATH_FUNCTIONS and fn not in _VALUE_CALLS or \
                    any(c.type == "pointer_expression" for c in walk(n.child_by_field_name("arguments"))):
                return False
        elif n.type in ("break_statement", "continue_statement", "goto_statement", "return_statement") \
                and not any(p.type in _LOOPS for p in _ancestors(n, st)):
            return False
    return True


def _ancestors(node: ts.Node, top: ts.Node) -> list[ts.Node]:
    out, p = [], node.parent
    while p is not None and p != top.parent:
        out.append(p)
        p = p.parent
    return out


def _opened(st: ts.Node, guard: str) -> list[ts.Node]:
    """What `st` puts into the guarded block: an `if (guard)` without `else` its body's statements."""
    if st.type == "if_statement" and st.child_by_field_name("alternative") is None and \
            text(st.child_by_field_name("condition").child_by_field_name("value") or st) == guard:
        body = st.child_by_field_name("consequence")
        return body.named_children if body.type == "compound_statement" else [body]
    return [st]
