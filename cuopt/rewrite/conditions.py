"""Named conditions that template rules list under [match] conditions / when.

Each takes the context, the matched node and the parameters, and returns None when it holds or
the reason it does not."""
from __future__ import annotations

from typing import Any, Callable

import tree_sitter as ts

from cuopt.rewrite.context import Context
from cuopt.source.edits import starts_line
from cuopt.source.model import Loop
from cuopt.source.parse import within

Condition = Callable[[Context, ts.Node, dict[str, Any]], "str | None"]


def _loop(ctx: Context, node: ts.Node) -> Loop | None:
    index = ctx.model.loop_of(node)
    return ctx.model.loops[index] if index is not None else None


def innermost_loop(ctx: Context, node: ts.Node, params: dict[str, Any]) -> str | None:
    index = ctx.model.loop_of(node)
    if index is None:
        return "not an analysed for loop"
    return None if index in ctx.model.inner_loops() else "the loop contains another loop"


def analyzable_loop(ctx: Context, node: ts.Node, params: dict[str, Any]) -> str | None:
    """`for (i = a; i < b; i += c)`, c a constant; or an expression (a grid-stride step) where the
    loop loads from global memory (a loop that only zeroes or merges a shared copy gains nothing)."""
    lp = _loop(ctx, node)
    if lp is None or lp.var is None or lp.cmp is None or not (lp.step or lp.stride is not None):
        return "the loop is not of the form for (i = a; i < b; i += c)"
    if not lp.step and not any(a.read and not a.atomic and within(a.node, node) for a in ctx.model.global_accesses()):
        return "a loop with a step of its own that loads nothing from global memory"
    return None


def no_unroll_pragma(ctx: Context, node: ts.Node, params: dict[str, Any]) -> str | None:
    lp = _loop(ctx, node)
    return "the loop already has an unroll pragma" if lp is not None and lp.pragma is not None else None


def starts_its_line(ctx: Context, node: ts.Node, params: dict[str, Any]) -> str | None:
    return None if starts_line(ctx.source, node) else "other code precedes it on its line"


def constant_trip_count(ctx: Context, node: ts.Node, params: dict[str, Any]) -> str | None:
    lp = _loop(ctx, node)
    if lp is None or lp.trip_count is None:
        return "the trip count is not a compile-time constant"
    if lp.trip_count > 64:
        return f"the trip count {lp.trip_count} is too large to unroll fully"
    return None


def trip_count_exceeds_factor(ctx: Context, node: ts.Node, params: dict[str, Any]) -> str | None:
    lp = _loop(ctx, node)
    factor = params.get("factor")
    if lp is None or not isinstance(factor, int) or lp.trip_count is None:
        return None
    return None if lp.trip_count > factor else f"the loop runs only {lp.trip_count} times"


CONDITIONS: dict[str, Condition] = {
    "innermost-loop": innermost_loop,
    "analyzable-loop": analyzable_loop,
    "no-unroll-pragma": no_unroll_pragma,
    "starts-line": starts_its_line,
    "constant-trip-count": constant_trip_count,
    "trip-count-exceeds-factor": trip_count_exceeds_factor,
}
