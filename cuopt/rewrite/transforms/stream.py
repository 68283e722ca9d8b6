"""stream: a 2D stencil walks `rows` consecutive rows per thread, carrying the column values that the
next row reads again in registers (register streaming along y, "2.5D blocking").

A 5-point stencil at (x, y) reads in[(y - 1) * w + x], in[y * w + x] and in[(y + 1) * w + x];
the thread below reads two of them again. Walking rows y0 .. y0 + rows - 1, a thread loads each
value of such a column once: at the first row every offset but the largest, and at every row
the largest (the row `y + dmax`). Reads `a[(y + d) * W + x + e]` of a
read-only array, with constant d and e, are grouped into columns by (a, e); a column read at
two rows or more, with at most one row between them that it does not read, is carried. Such a
row (the center of a 4-point stencil that skips it) is loaded at the first row only: its
address lies between two the original reads, in the same array. The fast path runs when every
row of the thread passes the guard (checked at run time); otherwise each row runs the original
code. It reads only what the original rows read (and the rows between), so the carried reads
must be unconditional in the body.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.rewrite.transforms.common import (
    CROSS_THREAD_CALL, Shape, fresh, global_accesses, read_expression, read_only_element,
    require_index_only_builtins)
from cuopt.rewrite.transforms.outputs import Outputs, guarded_shape, rewritten
from cuopt.source.affine import BUILTINS, Poly, global_index
from cuopt.source.parse import text, walk

_ELEMENTS = ("float", "double", "int", "unsigned int", "unsigned", "short", "unsigned short", "char",
             "unsigned char", "__half", "half")
_CONDITIONAL = ("if_statement", "conditional_expression", "for_statement", "while_statement", "do_statement",
                "switch_statement")


@dataclass(frozen=True)
class Column:
    array: str
    element: str
    offset: int  # e: the column offset from x
    pitch: str  # W
    reads: dict[int, tuple[ts.Node, ...]]  # row offset d -> the subscripts a[(y + d) * W + x + e] read

    @property
    def low(self) -> int:
        return min(self.reads)

    @property
    def high(self) -> int:
        return max(self.reads)


@dataclass(frozen=True)
class Plan:
    shape: Shape
    columns: tuple[Column, ...]
    ranges: dict[tuple[int, int], int]


class Stream:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        plan = _plan(ctx)
        names = ", ".join(f"{c.array}[{c.low}..{c.high}]" for c in plan.columns)
        return [Site(ctx.kernel.node, f"rows next to each other read the same column values ({names})", plan)]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        rows = int(params["rows"])
        if rows < 2:
            raise Refuse(f"rows {rows}: expected at least 2")
        plan: Plan = site.data
        carried = len(plan.columns)
        return rewritten(ctx, 1, rows, _code(ctx, plan, rows),
                         f"{rows} rows per thread, {carried} column{'s' if carried > 1 else ''} carried in registers")


# -- analysis ---------------------------------------------------------------------------------
def _plan(ctx: Context) -> Plan:
    if ctx.dims != 2:
        raise Refuse("only 2D launches (rows along y)")
    m = ctx.model
    if m.shared or m.barriers or m.atomics:
        raise Refuse("uses shared memory, barriers or atomics")
    body = ctx.kernel.body
    ranges = require_index_only_builtins(ctx, body, {0, 1})
    sh = guarded_shape(ctx, 1)
    for st in sh.body:
        for n in walk(st):
            if n.type in ("for_statement", "while_statement", "do_statement", "goto_statement", "return_statement",
                          "break_statement", "continue_statement"):
                raise Refuse(f"{n.type.split('_')[0]} in the stencil's body (line {n.start_point.row + 1})")
            if n.type == "call_expression" and CROSS_THREAD_CALL.match(text(n.child_by_field_name("function"))):
                raise Refuse(f"calls {text(n.child_by_field_name('function'))}")
    region = (sh.body[0].start_byte, sh.body[-1].end_byte) if sh.body else (0, 0)
    found: dict[tuple[str, int, str], dict[int, list[ts.Node]]] = {}
    for a in global_accesses(ctx):
        if not (region[0] <= a.node.start_byte < region[1]) or not a.read or a.write or len(a.index) != 1:
            continue
        de = _offsets(a.index[0])
        if de is not None and _unconditional(a.node, region):
            key = (a.array, de[1], de[2])
            found.setdefault(key, {}).setdefault(de[0], []).append(a.node)
    columns = []
    reasons = []
    for (array, e, pitch), reads in sorted(found.items()):
        if len(reads) < 2:
            continue
        gaps = max(reads) - min(reads) + 1 - len(reads)
        if gaps > 1:  # each extra row costs one load at the first row: worth it for one
            reasons.append(f"{array}'s column {e:+d} reads rows {sorted(reads)}, with {gaps} rows between")
            continue
        try:
            element = read_only_element(ctx, array, _ELEMENTS)
        except Refuse as why:
            reasons.append(str(why))
            continue
        if any(read_expression(r).type == "pointer_expression" for rs in reads.values() for r in rs):
            reasons.append(f"the address of {array}[...] is taken")
            continue
        columns.append(Column(array, element, e, pitch, {d: tuple(rs) for d, rs in reads.items()}))
    if not columns:
        raise Refuse((reasons or ["no array read at two neighbouring rows of the same column, "
                                  "a[(y + d) * w + x + e]"])[0])
    return Plan(sh, tuple(columns), ranges)


def _offsets(p: Poly | None) -> tuple[int, int, str] | None:
    """(d, e, W) for an index (y + d) * W + x + e, y and x the global indices, W one symbol, d and
    e constants; None otherwise."""
    if p is None:
        return None
    gy, gx = global_index(1), global_index(0)
    pitch = p.coefficient("threadIdx.y")
    if len(pitch.terms) != 1 or pitch.terms[0][1] != 1 or any(s in BUILTINS for s in pitch.symbols()):
        return None
    rest = p - gy * pitch - gx
    d = rest.mapping.get(pitch.terms[0][0], 0)
    e = (rest - Poly.const(d) * pitch).constant()
    return (d, e, pitch.terms[0][0][0]) if e is not None else None


def _unconditional(node: ts.Node, region: tuple[int, int]) -> bool:
    """Whether the read runs whenever its statement does: no condition, `?:`, `&&` or `||` between."""
    child, parent = node, node.parent
    while parent is not None and region[0] <= parent.start_byte and parent.end_byte <= region[1]:
        if parent.type in _CONDITIONAL:
            return False
        if parent.type == "binary_expression" and text(parent.child_by_field_name("operator")) in ("&&", "||") \
                and parent.child_by_field_name("right") == child:
            return False
        child, parent = parent, parent.parent
    return True


# -- code -------------------------------------------------------------------------------------
def _code(ctx: Context, plan: Plan, rows: int) -> str:
    out = Outputs(ctx, plan.shape, plan.ranges, 1, rows)
    fast = fresh(ctx, "cuopt_fast")
    names = [fresh(ctx, f"cuopt_{c.array}_{'m' if c.offset < 0 else 'p'}{abs(c.offset)}") for c in plan.columns]
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
                        for d in range(c.low + 1, c.high) if d not in c.reads]
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
