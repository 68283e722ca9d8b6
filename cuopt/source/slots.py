"""Slot loops: a fully unrolled loop `for (int k = 0; k < N; ++k)` (N a constant) whose body starts
with `const int c = LANE + k * STEP;`, LANE a local read from the thread's place in its block alone
(`threadIdx.x % 32`). Slot k of a thread is then always the same element c, whatever row the
thread is at, so a register array indexed by k can stand for those elements (privatize's
per-lane partials). row-cache writes such loops, and their vector form for W-wide loads."""
from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

from cuopt.source.model import KernelModel, Loop
from cuopt.source.parse import declared_names, operator_of, text, unparen

# what a lane's value may be read from: the thread's place in its block and numbers
_LANE_NAMES = {"threadIdx", "blockDim", "x"}


@dataclass(frozen=True)
class SlotLoop:
    loop: ts.Node  # the loop the element is read in (the inner one of the vector form)
    slots: int  # registers a lane keeps: N, or N * W
    column: str  # c
    lane: str  # LANE in C, as its local's value (`threadIdx.x % 32`), valid outside the loop too
    step: str  # STEP as written (a number)
    width: int = 1  # W of the vector form
    index: str = ""  # the register of the element in C: `k`, or `W * k + t`

    def element(self, slot: str) -> str:
        """The element that register `slot` (a C expression) of a lane stands for."""
        if self.width == 1:
            return f"({self.lane}) + {slot} * {self.step}"
        return f"{self.width} * (({self.lane}) + {slot} / {self.width} * {self.step}) + {slot} % {self.width}"


def slot_loop_of(model: KernelModel, node: ts.Node) -> SlotLoop | None:
    """The slot loop that `node` is directly in (no other loop between), or None. Also the vector
    form row-cache writes for W-wide loads: `for (k < N) { const int V = W * (LANE + k * STEP);
    for (t < W) { const int c = V + t; ... } }`, slot W * k + t."""
    inner = _counted(model, node)
    if inner is None:
        return None
    lp, column, value = inner
    split = _lane_plus_step(value, lp.var)
    if split is not None:
        return _slot(model, lp.node, lp.constants[1], column, *split, 1, lp.var)
    vector = _name_plus(value, lp.var)
    outer = _counted(model, lp.node)
    if vector is None or outer is None or outer[1] != vector:
        return None
    olp, _, scaled = outer
    width = lp.constants[1]
    left, right = (unparen(scaled.child_by_field_name(f)) for f in ("left", "right")) \
        if scaled.type == "binary_expression" and operator_of(scaled) == "*" else (None, None)
    if left is None or right is None or left.type != "number_literal" or text(left) != str(width):
        return None
    split = _lane_plus_step(right, olp.var)
    if split is None:
        return None
    return _slot(model, lp.node, olp.constants[1] * width, column, *split, width, f"{width} * {olp.var} + {lp.var}")


def _counted(model: KernelModel, node: ts.Node) -> tuple[Loop, str, ts.Node] | None:
    """The loop `node` is directly in when it counts up from 0 by 1 to a constant under an unroll
    pragma and its body opens with `const int NAME = VALUE;`: (loop, NAME, VALUE)."""
    parent = node.parent
    while parent is not None and parent.type not in ("for_statement", "while_statement", "do_statement"):
        parent = parent.parent
    index = model.loop_of(parent) if parent is not None else None
    if index is None:
        return None
    lp = model.loops[index]
    if lp.var is None or lp.cmp != "<" or lp.step != 1 or lp.pragma is None or lp.constants[0] != 0 \
            or lp.constants[1] is None:
        return None
    body = lp.node.child_by_field_name("body")
    first = body.named_children[0] if body is not None and body.type == "compound_statement" \
        and body.named_children else None
    if first is None or first.type != "declaration" or \
            not any(q.type == "type_qualifier" and text(q) == "const" for q in first.children):
        return None
    names = declared_names(first)
    declarator = first.child_by_field_name("declarator")
    value = declarator.child_by_field_name("value") if declarator is not None else None
    return (lp, next(iter(names)), unparen(value)) if len(names) == 1 and value is not None else None


def _slot(model: KernelModel, loop: ts.Node, slots: int, column: str, lane: str, step: str, width: int,
          index: str) -> SlotLoop | None:
    local = model.locals.get(lane)
    if local is None or local.init is None or local.writes or \
            not set(re.findall(r"[A-Za-z_]\w*", text(local.init))) <= _LANE_NAMES:
        return None
    return SlotLoop(loop, slots, column, " ".join(text(local.init).split()), step, width, index)


def _name_plus(value: ts.Node, counter: str) -> str | None:
    """NAME for `NAME + counter` (either order)."""
    if value.type != "binary_expression" or operator_of(value) != "+":
        return None
    left, right = unparen(value.child_by_field_name("left")), unparen(value.child_by_field_name("right"))
    for name, k in ((left, right), (right, left)):
        if name.type == "identifier" and k.type == "identifier" and text(k) == counter:
            return text(name)
    return None


def _lane_plus_step(value: ts.Node, counter: str) -> tuple[str, str] | None:
    """(LANE, STEP) for `LANE + counter * STEP` (either order of either sum and product), STEP a number."""
    if value.type != "binary_expression" or operator_of(value) != "+":
        return None
    left, right = unparen(value.child_by_field_name("left")), unparen(value.child_by_field_name("right"))
    for lane, product in ((left, right), (right, left)):
        if lane.type != "identifier" or product.type != "binary_expression" or operator_of(product) != "*":
            continue
        a, b = unparen(product.child_by_field_name("left")), unparen(product.child_by_field_name("right"))
        for k, step in ((a, b), (b, a)):
            if k.type == "identifier" and text(k) == counter and step.type == "number_literal":
                return text(lane), text(step)
    return None
