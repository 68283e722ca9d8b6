"""Fused updates read as the updates they are: `acc = fmaf(a, b, acc)` is `acc += a * b` (acc any
lvalue written the same way twice), which nvcc contracts to the same fused multiply-add unless
built with `-fmad=false`."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.kernels import Kernel
from cuopt.source.parse import operand, text, walk

_FMA = ("fmaf", "fma", "__fmaf_rn", "__fma_rn")


def fused_updates(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(assignment, `acc += a * b`) for each `acc = fmaf(a, b, acc)`."""
    out: list[tuple[ts.Node, str]] = []
    for node in walk(kernel.body):
        if node.type != "assignment_expression" or text(node.child_by_field_name("operator")) != "=":
            continue
        left, call = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or call is None or call.type != "call_expression" \
                or text(call.child_by_field_name("function")) not in _FMA:
            continue
        args = call.child_by_field_name("arguments").named_children
        if len(args) != 3 or text(args[2]) != text(left):
            continue
        out.append((node, f"{text(left)} += {operand(args[0], ('*',))} * {operand(args[1], ('*',))}"))
    return out
