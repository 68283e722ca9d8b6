"""stream: a 2D stencil walks `rows` consecutive rows per thread (a 3D stencil `rows` consecutive
planes), carrying the column values that the next row reads again in registers (register streaming
along the launch's outermost axis, y or z: the in-register half of "2.5D blocking").

A 5-point stencil at (x, y) reads in[(y - 1) * w + x], in[y * w + x] and in[(y + 1) * w + x];
the thread below reads two of them again. Walking rows y0 .. y0 + rows - 1, a thread loads each
value of such a column once: at the first row every offset but the largest, and at every row
the largest (the row `y + dmax`). A 7-point stencil on a 3D launch does the same along z with
the column at (x, y): u[(z + d) * nx * ny + y * nx + x].

The walked index is the global index along z on a 3D launch (along y when z is a batch index),
else along y; the reads it carries are `columns`' (cuopt/rewrite/transforms/columns.py). The fast
path runs when every row of the thread passes the guard (checked at run time); otherwise each row
runs the original code. It reads only what the original rows read (and the rows between), so the
carried reads must be unconditional in the body.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.rewrite.transforms.columns import Column, Walk, carried
from cuopt.rewrite.transforms.common import fresh, require_index_only_builtins, written_types
from cuopt.rewrite.transforms.outputs import Outputs, guarded_shape, rewritten
from cuopt.source.affine import BLOCK, DIM, THREAD, global_index
from cuopt.source.analysis import Shape, called, cross_thread, read_expression
from cuopt.source.parse import text, walk


@dataclass(frozen=True)
class Plan:
    shape: Shape
    columns: tuple[Column, ...]
    ranges: dict[tuple[int, int], int]
    axis: int  # the walked axis: y (1) or z (2)


class Stream:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        plan = _plan(ctx)
        names = ", ".join(f"{c.array}[{c.low}..{c.high}]" for c in plan.columns)
        return [Site(ctx.kernel.node, f"{_ROWS[plan.axis]} next to each other read the same column values ({names})",
                     plan)]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        rows = int(params["rows"])
        if rows < 2:
            raise Refuse(f"rows {rows}: expected at least 2")
        plan: Plan = site.data
        carried = len(plan.columns)
        return rewritten(ctx, plan.axis, rows, _code(ctx, plan, rows),
                         f"{rows} {_ROWS[plan.axis]} per thread, {carried} column{'s' if carried > 1 else ''} "
                         "carried in registers", written_types(ctx, [c.array for c in plan.columns]))


# -- analysis ---------------------------------------------------------------------------------
def _plan(ctx: Context) -> Plan:
    """The plan along z for a 3D launch, else (a batch of 2D stencils along z, a 2D launch) along y."""
    if ctx.dims < 2:
        raise Refuse("only 2D and 3D launches (rows along y, planes along z)")
    m = ctx.model
    if m.shared or m.barriers or m.atomics:
        raise Refuse("uses shared memory, barriers or atomics")
    first: Refuse | None = None
    for axis in range(ctx.dims - 1, 0, -1):
        try:
            return _plan_along(ctx, axis)
        except Refuse as why:
            first = first or why
    assert first is not None
    raise first


def _plan_along(ctx: Context, axis: int) -> Plan:
    body = ctx.kernel.body
    ranges = require_index_only_builtins(ctx, body, {axis})
    sh = guarded_shape(ctx, axis)
    for st in sh.body:
        for n in walk(st):
            if n.type in ("for_statement", "while_statement", "do_statement", "goto_statement", "return_statement",
                          "break_statement", "continue_statement"):
                raise Refuse(f"{n.type.split('_')[0]} in the stencil's body (line {n.start_point.row + 1})")
            if cross_thread(n):
                raise Refuse(f"calls {called(n)}")
    region = (sh.body[0].start_byte, sh.body[-1].end_byte) if sh.body else (0, 0)
    moving = frozenset({THREAD[axis], BLOCK[axis], DIM[axis]})
    try:
        columns = carried(ctx, Walk(global_index(axis), THREAD[axis], moving, global_index(0) if axis == 1 else None),
                          region)
    except Refuse as why:
        raise Refuse(str(why) or f"no array read at two neighbouring {_ROWS[axis]} of the same column, "
                                 f"{_SHAPES[axis]}") from None
    return Plan(sh, tuple(columns), ranges, axis)


_ROWS = {1: "rows", 2: "planes"}
_SHAPES = {1: "a[(y + d) * w + x + e]", 2: "a[(z + d) * nx * ny + y * nx + x]"}


# -- code -------------------------------------------------------------------------------------
def _code(ctx: Context, plan: Plan, rows: int) -> str:
    out = Outputs(ctx, plan.shape, plan.ranges, plan.axis, rows)
    fast = fresh(ctx, "cuopt_fast")
    names = [fresh(ctx, f"cuopt_{c.array}_{c.name}") for c in plan.columns]
    carried: dict[tuple[int, int], str] = {}
    first_loads, loads = [], []
    for c, name in zip(plan.columns, names):
        for d, reads in c.reads.items():
            slot = f"{name}[{out.r} + {d - c.low}]" if d != c.low else f"{name}[{out.r}]"
            carried.update({(x.start_byte, x.end_byte): slot for x in map(read_expression, reads)})
            load = f"{slot} = {out.text(read_expression(reads[0]))};"
            (loads if d == c.high else first_loads).append(load)
        low = out.text(c.reads[c.low][0])
        first_loads += [f"{name}[{out.r} + {d - c.low}] = (&{low})[{d - c.low} * ({c.pitch})];"
                        for d in c.skipped()]
    body = "\n".join(out.text(st, carried) for st in plan.shape.body)
    step = [f"if ({out.r} == 0) {{", *("    " + ln for ln in first_loads), "}", *loads, body]
    lines = ["{", *out.head(fast, []),
             f"    if ({fast}) {{",
             *(f"        {c.element} {name}[{rows + c.high - c.low}];" for c, name in zip(plan.columns, names)),
             *out.each("\n".join(step), "        "),
             "    } else {",
             *out.fallback("        "),
             "    }",
             "}"]
    return "\n".join(lines)


TRANSFORM = Stream()
