"""Atomics: addresses written as pointer sums, `atomicAdd(bins + v, 1)` read as `atomicAdd(&bins[v], 1)`,
the element the analysis of accesses knows (`&bins[v]` is the same address); and the arrays a
kernel only updates by atomic statements of one commutative function (privatize, row-parallel)."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.model import ATOMIC_PREFIX, KernelModel, summands
from cuopt.source.parse import operator_of, text, unparen, walk


def atomic_addresses(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(node, replacement): the address of each atomic call written `p + e` (or `e + p`, any grouping
    of `+`), p a pointer parameter and no other term a pointer, as `&p[e]`."""
    pointers = {p.name for p in kernel.params if p.pointer}
    others = pointers | _pointer_locals(kernel)
    out = []
    for call in walk(kernel.body):
        if call.type != "call_expression" or not text(call.child_by_field_name("function")).startswith(ATOMIC_PREFIX):
            continue
        args = call.child_by_field_name("arguments")
        address = args.named_children[0] if args is not None and args.named_children else None
        if address is None or unparen(address).type != "binary_expression":
            continue
        terms = summands(unparen(address))
        bases = [t for t in terms if t.type == "identifier" and text(t) in pointers]
        rest = [t for t in terms if t not in bases]
        if len(bases) != 1 or not rest or any(_names_pointer(t, others) for t in rest):
            continue
        out.append((address, f"&{text(bases[0])}[{' + '.join(text(t) for t in rest)}]"))
    return out


def _names_pointer(term: ts.Node, pointers: set[str]) -> bool:
    """Whether `term` names a pointer other than as the array of a subscript (`keys[i]` is a number)."""
    for n in walk(term):
        parent = n.parent
        if n.type == "identifier" and text(n) in pointers and not (
                parent is not None and parent.type == "subscript_expression" and parent.child_by_field_name("argument") == n):
            return True
    return False


def _pointer_locals(kernel: Kernel) -> set[str]:
    """Locals declared as pointers (`float* p = ...;`, `int *a, *b;`): a term naming one is not an offset."""
    names = set()
    for decl in walk(kernel.body):
        if decl.type != "declaration":
            continue
        for d in decl.children_by_field_name("declarator"):
            d = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if d is not None and d.type == "pointer_declarator":
                while d.type == "pointer_declarator":
                    d = d.child_by_field_name("declarator")
                names.add(text(d))
    return names


# atomic functions whose updates of one element give the same result in any order (up to rounding)
COMMUTATIVE = frozenset({"atomicAdd", "atomicSub", "atomicMax", "atomicMin", "atomicAnd", "atomicOr", "atomicXor"})


def atomic_statement(subscript: ts.Node) -> ts.Node | None:
    """The call of `atomicOp(&a[i], v);` (or `&(a[i])`) whose element `a[i]` is `subscript`, used as a
    statement (its old value unused); also of `atomicOp(a, v);`, `subscript` the pointer `a`; None for
    anything else."""
    if subscript.type == "identifier":
        args = subscript.parent
        call = args.parent if args is not None and args.type == "argument_list" else None
        first = args.named_children[0] if call is not None else None
        return call if first == subscript and _statement(call) else None
    amp = _outer(subscript).parent
    if amp is None or amp.type != "pointer_expression" or operator_of(amp) != "&":
        return None
    amp = _outer(amp)
    args = amp.parent
    call = args.parent if args is not None else None
    if call is None or call.type != "call_expression" or args.named_children[0] != amp:
        return None
    return call if _statement(call) else None


def _statement(call: ts.Node) -> bool:
    """Whether the atomic `call` is a statement of its own (its old value unused)."""
    return call.type == "call_expression" and text(call.child_by_field_name("function")).startswith(ATOMIC_PREFIX) \
        and call.parent is not None and call.parent.type == "expression_statement"


def commutative_updates(model: KernelModel) -> dict[str, str]:
    """Global arrays the kernel touches only by `atomicOp(&a[i], v);` statements of one
    commutative function (COMMUTATIVE), by array: every thread may apply its updates in any order
    and the array ends the same. Arrays also read, or updated otherwise, are not included."""
    out: dict[str, str] = {}
    for name in sorted({a.array for a in model.global_accesses() if a.atomic}):
        calls = [atomic_statement(a.node) for a in model.global_accesses(name)]
        ops = {text(c.child_by_field_name("function")) for c in calls if c is not None}
        if None not in calls and name not in model.escapes and len(ops) == 1 and ops <= COMMUTATIVE:
            out[name] = ops.pop()
    return out


def _outer(node: ts.Node) -> ts.Node:
    """`node` with the parentheses around it."""
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    return node
