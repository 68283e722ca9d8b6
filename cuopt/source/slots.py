"""Slot loops: a fully unrolled loop `for (int k = 0; k < N; ++k)` (N a constant) whose body starts
with `const int c = LANE + k * STEP;`, LANE a local read from the thread's place in its block alone
(`threadIdx.x % 32`). Slot k of a thread is then always the same element c, whatever row the
thread is at, so a register array indexed by k can stand for those elements (privatize's
per-lane partials). row-cache writes such loops."""
from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

from cuopt.source.model import KernelModel
from cuopt.source.parse import declared_names, operator_of, text, unparen

# what a lane's value may be read from: the thread's place in its block and numbers
_LANE_NAMES = {"threadIdx", "blockDim", "x"}


@dataclass(frozen=True)
class SlotLoop:
    loop: ts.Node
    counter: str  # k
    slots: int  # N
    column: str  # c
    lane: str  # LANE in C, as its local's value (`threadIdx.x % 32`), valid outside the loop too
    step: str  # STEP as written (a number)


def slot_loop_of(model: KernelModel, node: ts.Node) -> SlotLoop | None:
    """The slot loop that `node` is directly in (no other loop between), or None."""
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
    if len(names) != 1 or value is None:
        return None
    split = _lane_plus_step(unparen(value), lp.var)
    if split is None:
        return None
    lane, step = split
    local = model.locals.get(lane)
    if local is None or local.init is None or local.writes or \
            not set(re.findall(r"[A-Za-z_]\w*", text(local.init))) <= _LANE_NAMES:
        return None
    return SlotLoop(lp.node, lp.var, lp.constants[1], next(iter(names)), " ".join(text(local.init).split()), step)


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
