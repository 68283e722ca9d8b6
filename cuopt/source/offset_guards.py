"""Offset index guards read with the global index alone on the left, as the rules read a guard:
`if (i + WIN <= n)` is `if (i <= n - (WIN))`. Only where every operand is a signed integer (a local
or parameter declared `int`/`long`..., an integer macro or literal), so that the subtraction
cannot wrap."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.affine import BUILTINS, Poly, axis_of_global_index
from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel
from cuopt.source.parse import text, walk


def guard_offsets(kernel: Kernel, m: KernelModel) -> list[tuple[ts.Node, str]]:
    """(comparison, `i <= n - (WIN)`) for each offset index guard of signed operands."""
    out: list[tuple[ts.Node, str]] = []
    for node in walk(kernel.body):
        if node.type != "if_statement":
            continue
        for comparison in walk(node.child_by_field_name("condition")):
            op = comparison.child_by_field_name("operator") if comparison.type == "binary_expression" else None
            if op is None or text(op) not in ("<", "<="):
                continue
            left, right = comparison.child_by_field_name("left"), comparison.child_by_field_name("right")
            if left.type != "binary_expression" or text(left.child_by_field_name("operator")) != "+":
                continue
            index, offset = left.child_by_field_name("left"), left.child_by_field_name("right")
            p = m.poly(index)
            if p is None or axis_of_global_index(p) is None or not all(m.types.signed(n) for n in (index, offset, right)):
                continue
            if offset.type != "number_literal" and m.poly(offset) is None or \
                    (m.poly(offset) or Poly.const(0)).symbols() & BUILTINS:
                continue
            out.append((comparison, f"{text(index)} {text(op)} {text(right)} - ({text(offset)})"))
    return out
