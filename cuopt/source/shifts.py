"""Shifts by a number read as the product or quotient they are: `gap << 1` as `2 * gap`,
`blockDim.x >> 1` as `blockDim.x / 2`, the spellings the tree, index and guard readings know. Only
where the shifted value is never negative (`ExprTypes.never_negative`): there `e >> k` is `e / 2^k`
and `e << k` is `2^k * e` of the same type, while a signed `-5 >> 1` is -3 and `-5 / 2` is -2. A
shift of zero or of 31 bits or more stays as written."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.exprtypes import ExprTypes
from cuopt.source.kernels import Kernel
from cuopt.source.parse import operator_of, text, walk
from cuopt.source.preprocess import is_integer_literal

_MAX_BITS = 30  # 2^30 is still an `int` literal
_PRIMARY = frozenset({"identifier", "field_expression", "number_literal", "parenthesized_expression",
                      "call_expression", "subscript_expression"})


def power_shifts(kernel: Kernel, types: ExprTypes) -> list[tuple[ts.Node, str]]:
    """(shift, product or quotient) for each outermost shift by a number of a value never negative in
    the kernel's body; shifts inside one are spelled in its text."""
    return [(n, _spelled(n, types)) for n in _outermost(kernel.body, types)]


def _outermost(node: ts.Node, types: ExprTypes) -> list[ts.Node]:
    """The shifts that `_bits` reads under `node` (itself excluded), none inside another."""
    out: list[ts.Node] = []
    for n in walk(node, lambda n: not out or not (out[-1].start_byte <= n.start_byte < out[-1].end_byte)):
        if n != node and _bits(n, types) is not None and \
                not any(o.start_byte <= n.start_byte < o.end_byte for o in out):
            out.append(n)
    return out


def _bits(node: ts.Node, types: ExprTypes) -> int | None:
    """k for `e << k` or `e >> k` of a number 1 <= k <= 30 and `e` never negative; else None."""
    if node.type != "binary_expression" or operator_of(node) not in ("<<", ">>"):
        return None
    right = node.child_by_field_name("right")
    if right is None or right.type != "number_literal" or not is_integer_literal(text(right)):
        return None
    bits = int(text(right).rstrip("uUlL"), 0)
    return bits if 1 <= bits <= _MAX_BITS and types.never_negative(node.child_by_field_name("left")) else None


def _spelled(shift: ts.Node, types: ExprTypes) -> str:
    """The shift as `2^k * e` or `e / 2^k`, shifts inside `e` spelled alike."""
    left = shift.child_by_field_name("left")
    operand = _inner(left, types)
    if left.type not in _PRIMARY:
        operand = f"({operand})"
    power = 1 << (_bits(shift, types) or 0)
    return f"{power} * {operand}" if operator_of(shift) == "<<" else f"{operand} / {power}"


def _inner(node: ts.Node, types: ExprTypes) -> str:
    """`node`'s text with its outermost shifts (or itself) spelled."""
    if _bits(node, types) is not None:
        return _spelled(node, types)
    raw, base = node.text or b"", node.start_byte
    for n in reversed(_outermost(node, types)):
        raw = raw[:n.start_byte - base] + _spelled(n, types).encode() + raw[n.end_byte - base:]
    return raw.decode()
