"""How a statement or a loop's update steps a counter: `i++`, `++i`, `i--`, `i += s`, `i -= s`,
`i = i + s`, `i = s + i`, `i = i - s`, and the geometric steps `s *= 2`, `s <<= 1`, `s /= 2`,
`s >>= 1` (also written `s = s * 2`, `s = 2 * s`, `s = s / 2`, `s = s >> 1`): the one reading of an
increment that the kernel model, the normal form and the rules share."""
from __future__ import annotations

from dataclasses import dataclass

import tree_sitter as ts

from cuopt.source.parse import operator_of, text, unparen

_UP = {"+": "-", "*": "/", "<<": ">>"}  # each operator that counts up and its inverse, which counts down
_COMMUTATIVE = {"+", "*"}  # `i = s + i` steps as `i = i + s` does


@dataclass(frozen=True)
class Increment:
    """A counter stepped by `op` and `step`: `i += s` is ("i", "+", s); `i++` is ("i", "+", None)."""

    counter: str
    op: str  # "+", "-", "*", "/", "<<" or ">>"
    step: ts.Node | None  # the amount as written; None for `++` and `--` (one)

    @property
    def direction(self) -> int:
        """+1 where the counter grows (`+`, `*`, `<<` by a positive amount), -1 where it shrinks."""
        return 1 if self.op in _UP else -1

    @property
    def additive(self) -> bool:
        return self.op in ("+", "-")

    @property
    def amount(self) -> str:
        """The step's text: `1` for `++` and `--`."""
        return "1" if self.step is None else text(self.step)


def increment(node: ts.Node | None) -> Increment | None:
    """The increment `node` is (an expression, or an expression statement of one); None otherwise."""
    if node is not None and node.type == "expression_statement" and node.named_child_count == 1:
        node = node.named_children[0]
    if node is None:
        return None
    node = unparen(node)
    if node.type == "update_expression":
        target = node.child_by_field_name("argument")
        op = operator_of(node)
        if target is None or target.type != "identifier":
            return None
        return Increment(text(target), op[0], None)
    if node.type != "assignment_expression":
        return None
    target, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    op = operator_of(node)
    if target is None or target.type != "identifier" or right is None:
        return None
    counter = text(target)
    if op != "=":
        op = op[:-1]
        return Increment(counter, op, right) if op in _UP or op in _UP.values() else None
    right = unparen(right)
    if right.type != "binary_expression":
        return None
    op = operator_of(right)
    left, other = right.child_by_field_name("left"), right.child_by_field_name("right")
    if op not in _UP and op not in _UP.values() or left is None or other is None:
        return None
    if left.type == "identifier" and text(left) == counter:
        return Increment(counter, op, other)
    if op in _COMMUTATIVE and other.type == "identifier" and text(other) == counter:
        return Increment(counter, op, left)
    return None
