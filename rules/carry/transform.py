"""carry: a loop that reads again what its previous iterations read carries those values in
registers (scalar replacement across iterations, "predictive commoning").

A thread that walks a 3D grid's z in a loop, `for (int k = 1; k < nz - 1; ++k) v[...] = ... +
u[(k - 1) * P + Q] + u[k * P + Q] + u[(k + 1) * P + Q]`, loads each plane of its column three
times; a row smoothed by one thread, `out[r * n + j] = in[r * n + j - 1] + in[r * n + j] + in[r *
n + j + 1]`, each element three times. The compiler does not keep such loads across iterations.
With the reads grouped into columns along the counter (cuopt/rewrite/transforms/columns.py), each
column's offsets low .. high get a register each: before the loop, when its condition holds for
the first value, the offsets below `high` are loaded at that value; each iteration loads `high`,
runs the body on the registers, and shifts them down by one. So each element is loaded once, and
only elements the original reads are read (plus, at the first iteration, an offset between two it
reads).

Legal when the counter steps by one and the body does not assign it, the arrays carried are read-
only in the kernel, the carried reads run in every iteration (no condition between them and the
loop body), and the body does not jump (`break`, `continue`, `return`, `goto`: the registers must
shift at the end of every iteration). The loop's start and condition must be free of calls and
assignments (they are evaluated once more, before the loop), and what the first loads read must be
in scope before the loop."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, indent_of, node_text
from cuopt.rewrite.transforms.columns import Column, Walk, carried
from cuopt.rewrite.transforms.common import assigned_outside, fresh, is_declared_name, reindent, written_types
from cuopt.source.affine import Poly
from cuopt.source.analysis import condition, mentions, read_expression
from cuopt.source.model import Loop
from cuopt.source.parse import assigned, text, walk

_JUMPS = ("break_statement", "continue_statement", "goto_statement", "return_statement")
_EFFECTS = ("call_expression", "assignment_expression", "update_expression")


@dataclass(frozen=True)
class Plan:
    loop: Loop
    start: ts.Node  # the counter's first value
    columns: tuple[Column, ...]


class Carry:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        sites, reasons = [], []
        for index, lp in enumerate(ctx.model.loops):
            try:
                plan = _plan(ctx, index, lp)
            except Refuse as why:
                reasons.append(str(why))
                continue
            names = ", ".join(f"{c.array}[{lp.var}{c.low:+d}..{lp.var}{c.high:+d}]" for c in plan.columns)
            sites.append(Site(lp.node, f"iterations next to each other read the same elements ({names})", plan))
        if not sites:
            raise Refuse(reasons[0] if reasons else "no loop")
        return sites

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        plan: Plan = site.data
        lp = plan.loop
        first = lp.pragma if lp.pragma is not None else lp.node
        code = _code(ctx, plan, indent_of(ctx.source, first))
        count = sum(c.high - c.low + 1 for c in plan.columns)
        return Rewritten(apply(ctx.source, [Edit(first.start_byte, lp.node.end_byte, code)]), ctx.launch,
                         f"the loop at line {lp.line} carries {count} values in registers",
                         written_types(ctx, [c.array for c in plan.columns]))


# -- analysis ---------------------------------------------------------------------------------
def _plan(ctx: Context, index: int, lp: Loop) -> Plan:
    where = f"the loop at line {lp.line}"
    if lp.var is None or lp.var.startswith("cuopt_"):
        raise Refuse(f"{where} has no counter of its own" if lp.var is None else f"{where} is one a rewrite wrote")
    if lp.step != 1 or lp.cmp not in ("<", "<=", "!="):
        raise Refuse(f"{where} does not count up by one")
    node, body = lp.node, lp.body
    start, test = lp.start_node, condition(node)
    if start is None or test is None or any(n.type in _EFFECTS for part in (start, test) for n in walk(part)):
        raise Refuse(f"{where}: its start or condition is not a plain expression")
    for n in walk(body):
        if n.type in _JUMPS:
            raise Refuse(f"{where} jumps ({text(n).split()[0].rstrip(';')}, line {n.start_point.row + 1})")
        if n.type == "identifier" and text(n) == lp.var and n.parent is not None and assigned(n.parent) == n:
            raise Refuse(f"{where} assigns its counter {lp.var} (line {n.start_point.row + 1})")
    moving = frozenset({lp.var, *assigned_outside(body)})
    try:
        columns = carried(ctx, Walk(Poly.symbol(lp.var), lp.var, moving), (body.start_byte, body.end_byte),
                          _chain(ctx, index))
    except Refuse as why:
        raise Refuse(str(why) or f"{where}: no array read at two neighbouring values of {lp.var} in every "
                                 f"iteration") from None
    inside = {text(n) for n in walk(node) if is_declared_name(n)} - {lp.var}
    for c in columns:
        used = {text(n) for r in c.reads[c.low] for n in walk(read_expression(r)) if n.type == "identifier"}
        if used & inside:
            raise Refuse(f"{where}: {c.array}[...] is read through {sorted(used & inside)[0]}, declared in the loop")
    return Plan(lp, start, tuple(columns))


def _chain(ctx: Context, index: int) -> tuple[int, ...]:
    """The loop and the loops around it, outermost first: the `loops` of an access directly in it."""
    chain = [index]
    while ctx.model.loops[chain[0]].parent is not None:
        chain.insert(0, ctx.model.loops[chain[0]].parent)
    return tuple(chain)


# -- code -------------------------------------------------------------------------------------
def _code(ctx: Context, plan: Plan, indent: str) -> str:
    lp = plan.loop
    at_start = f"({text(plan.start)})"

    def first_value(node: ts.Node) -> str:
        """`node`'s text with the counter at its first value."""
        return node_text(node, {(n.start_byte, n.end_byte): at_start for n in mentions(node, lp.var)})

    declarations, first_loads, loads, shifts = [], [], [], []
    replaced: dict[tuple[int, int], str] = {}
    for c in plan.columns:
        base = fresh(ctx, f"cuopt_{c.array}_{c.name}")
        slots = [f"{base}_{d - c.low}" for d in range(c.low, c.high + 1)]
        declarations.append(f"{c.element} {', '.join(slots)};")
        for d, reads in c.reads.items():
            replaced.update({(x.start_byte, x.end_byte): slots[d - c.low] for x in map(read_expression, reads)})
        low = first_value(read_expression(c.reads[c.low][0]))
        for d in range(c.low, c.high):
            value = first_value(read_expression(c.reads[d][0])) if d in c.reads \
                else f"(&{low})[{d - c.low} * ({c.pitch})]"
            first_loads.append(f"{slots[d - c.low]} = {value};")
        loads.append(f"{slots[-1]} = {text(read_expression(c.reads[c.high][0]))};")
        shifts += [f"{a} = {b};" for a, b in zip(slots, slots[1:])]
    header = ctx.source[lp.node.start_byte:lp.body.start_byte].decode().rstrip()
    inner = indent + "        "
    body = reindent(lp.body, node_text(lp.body, replaced), inner)
    lines = ["{",
             *(f"{indent}    {d}" for d in declarations),
             f"{indent}    if ({first_value(condition(lp.node))}) {{",
             *(f"{indent}        {ln}" for ln in first_loads),
             f"{indent}    }}",
             *([f"{indent}    {text(lp.pragma).strip()}"] if lp.pragma is not None else []),
             f"{indent}    {header} {{",
             *(inner + ln for ln in loads),
             body,
             *(inner + ln for ln in shifts),
             f"{indent}    }}",
             f"{indent}}}"]
    return "\n".join(lines)


TRANSFORM = Carry()
