"""stream: a 2D stencil walks `rows` consecutive rows per thread (a 3D stencil `rows` consecutive
planes), carrying the column values that the next row reads again in registers (register streaming
along the launch's outermost axis, y or z: the in-register half of "2.5D blocking").

A 5-point stencil at (x, y) reads in[(y - 1) * w + x], in[y * w + x] and in[(y + 1) * w + x];
the thread below reads two of them again. Walking rows y0 .. y0 + rows - 1, a thread loads each
value of such a column once: at the first row every offset but the largest, and at every row
the largest (the row `y + dmax`). A 7-point stencil on a 3D launch does the same along z with
the column at (x, y): u[(z + d) * nx * ny + y * nx + x].

Reads `a[(s + d) * P + Q]` of a read-only array (`s` the global index along the walked axis, `P`
one term: a symbol, a product of symbols or a constant, `d` a constant, and `Q` anything that does
not change along the axis: the other global indices, parameters and constants) are grouped into
columns by (a, P, Q); a column read at two rows or more, with at most one row between them that
it does not read, is carried. Such a
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
from cuopt.source.affine import BLOCK, BUILTINS, DIM, THREAD, Poly, global_index
from cuopt.source.parse import text, walk

_ELEMENTS = ("float", "double", "int", "unsigned int", "unsigned", "short", "unsigned short", "char",
             "unsigned char", "__half", "half")
_CONDITIONAL = ("if_statement", "conditional_expression", "for_statement", "while_statement", "do_statement",
                "switch_statement")


@dataclass(frozen=True)
class Column:
    array: str
    element: str
    name: str  # names the carried registers: p1 for x + 1, c0...
    pitch: str  # P, as C
    reads: dict[int, tuple[ts.Node, ...]]  # row offset d -> the subscripts a[(s + d) * P + Q] read

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
    axis: int  # the walked axis: y (1) or z (2)


class Stream:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        plan = _plan(ctx)
        names = ", ".join(f"{c.array}[{c.low}..{c.high}]" for c in plan.columns)
        return [Site(ctx.kernel.node, f"{_ROWS[plan.axis]} next to each other read the same column values ({names})", plan)]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        rows = int(params["rows"])
        if rows < 2:
            raise Refuse(f"rows {rows}: expected at least 2")
        plan: Plan = site.data
        carried = len(plan.columns)
        return rewritten(ctx, plan.axis, rows, _code(ctx, plan, rows),
                         f"{rows} {_ROWS[plan.axis]} per thread, {carried} column{'s' if carried > 1 else ''} "
                         "carried in registers")


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
            if n.type == "call_expression" and CROSS_THREAD_CALL.match(text(n.child_by_field_name("function"))):
                raise Refuse(f"calls {text(n.child_by_field_name('function'))}")
    region = (sh.body[0].start_byte, sh.body[-1].end_byte) if sh.body else (0, 0)
    found: dict[tuple[str, Poly, Poly], dict[int, list[ts.Node]]] = {}
    for a in global_accesses(ctx):
        if not (region[0] <= a.node.start_byte < region[1]) or not a.read or a.write or len(a.index) != 1:
            continue
        split = _split(a.index[0], axis)
        if split is not None and _unconditional(a.node, region):
            d, pitch, column = split
            found.setdefault((a.array, pitch, column), {}).setdefault(d, []).append(a.node)
    columns = []
    reasons = []
    for (array, pitch, column), reads in sorted(found.items(), key=lambda kv: (kv[0][0], str(kv[0][1]),
                                                                               _order(kv[0][2], axis))):
        if len(reads) < 2:
            continue
        gaps = max(reads) - min(reads) + 1 - len(reads)
        if gaps > 1:  # each extra row costs one load at the first row: worth it for one
            reasons.append(f"{array}'s column {column} reads rows {sorted(reads)}, with {gaps} rows between")
            continue
        try:
            element = read_only_element(ctx, array, _ELEMENTS)
        except Refuse as why:
            reasons.append(str(why))
            continue
        if any(read_expression(r).type == "pointer_expression" for rs in reads.values() for r in rs):
            reasons.append(f"the address of {array}[...] is taken")
            continue
        columns.append(Column(array, element, _name_hint(column, axis, len(columns)), _c_term(pitch),
                              {d: tuple(rs) for d, rs in reads.items()}))
    if not columns:
        raise Refuse((reasons or [f"no array read at two neighbouring {_ROWS[axis]} of the same column, "
                                  f"{_SHAPES[axis]}"])[0])
    return Plan(sh, tuple(columns), ranges, axis)


_ROWS = {1: "rows", 2: "planes"}
_SHAPES = {1: "a[(y + d) * w + x + e]", 2: "a[(z + d) * nx * ny + y * nx + x]"}


def _split(p: Poly | None, axis: int) -> tuple[int, Poly, Poly] | None:
    """(d, P, Q) for an index (s + d) * P + Q, `s` the global index along `axis`, `P` one term without
    built-ins (a symbol, a product of symbols, a constant; any constant coefficient), `d` a constant,
    `Q` free of the axis' built-ins; None otherwise. A constant P takes the `d` that leaves the
    smallest constant in Q, which only names the column: any split of the same index reads the same
    element."""
    if p is None:
        return None
    pitch = p.coefficient(THREAD[axis])
    if len(pitch.terms) != 1 or pitch.terms[0][1] == 0 or any(s in BUILTINS for s in pitch.symbols()):
        return None
    rest = p - global_index(axis) * pitch
    (monomial, coefficient), = pitch.terms
    share = rest.mapping.get(monomial, 0)
    d = (2 * share + coefficient) // (2 * coefficient) if not monomial else share // coefficient
    if monomial and share % coefficient:
        return None
    column = rest - Poly.const(d) * pitch
    if {THREAD[axis], BLOCK[axis], DIM[axis]} & column.symbols():
        return None
    return d, pitch, column


def _order(column: Poly, axis: int) -> tuple[int, str]:
    """A column's place among the others: by its offset from x where that is a constant."""
    e = (column - global_index(0)).constant() if axis == 1 else None
    return (e if e is not None else 0, str(column))


def _name_hint(column: Poly, axis: int, index: int) -> str:
    """The carried registers' name: m1/p0/p1 for a 2D column at x - 1, x, x + 1; c0, c1... otherwise."""
    e = (column - global_index(0)).constant() if axis == 1 else None
    return f"{'m' if e < 0 else 'p'}{abs(e)}" if e is not None else f"c{index}"


def _c_term(p: Poly) -> str:
    """A one-term polynomial as C: `nx * ny`, `2 * w`, `4096`."""
    (monomial, coefficient), = p.terms
    factors = ([str(coefficient)] if coefficient != 1 or not monomial else []) + list(monomial)
    return " * ".join(factors)


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
