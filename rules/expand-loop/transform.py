"""expand-loop: a loop with a small constant trip count (a filter's taps, `for (int dy = -R; dy <= R;
++dy)` with `#define R 2`) is written out, one copy of its body per iteration with the counter at
its value.

`#pragma unroll` asks the compiler for the same code, but the rules see only the source: written
out, the taps become constant offsets (`in[(y + (-2)) * w + x]`), which the stencil rules
(`stream`, `smem-tile`) read. Expanding the inner loop of a 2D filter, then the outer one, gives
the constant-offset stencil they match. Each copy is the body with the counter replaced by its
value in parentheses, in a block of its own, in order, so the result computes the same values in
the same order. Refused when the body assigns the counter, jumps (`break`, `continue`, `goto`,
`return`), declares a name the counter shadows, or holds a barrier, when no array index moves
with the counter, and for the loops earlier rewrites wrote (`cuopt_` counters)."""
from __future__ import annotations

from typing import Any

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, indent_of, node_text, unbraced_body
from cuopt.rewrite.transforms.common import reindent
from cuopt.source.analysis import mentions
from cuopt.source.parse import assigned, text, walk

MAX_TRIPS = 16
_JUMPS = ("break_statement", "continue_statement", "goto_statement", "return_statement")


class ExpandLoop:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        m = ctx.model
        sites, reasons = [], []
        for index, lp in enumerate(m.loops):
            trips = lp.trip_count
            if lp.var is None or trips is None or lp.step is None or lp.step <= 0 or lp.constants[0] is None:
                reasons.append(f"the loop at line {lp.line} has no constant trip count")
                continue
            if lp.var.startswith("cuopt_"):
                reasons.append(f"the loop at line {lp.line} is one an earlier rewrite wrote")
                continue
            if not any(index in a.loops and a.flat is not None and a.flat.depends_on(lp.var) for a in m.accesses):
                reasons.append(f"no array index at line {lp.line} moves with {lp.var}: nothing to read as offsets")
                continue
            if not 2 <= trips <= MAX_TRIPS:
                reasons.append(f"the loop at line {lp.line} runs {trips} times (2 to {MAX_TRIPS} are written out)")
                continue
            body = lp.body
            if lp.has_barrier or any(n.type in _JUMPS for n in walk(body)):
                reasons.append(f"the loop at line {lp.line} jumps or holds a barrier")
                continue
            names = mentions(body, lp.var)
            if any(_assigned(n) or _declares(n) for n in names):
                reasons.append(f"the loop at line {lp.line} assigns or redeclares {lp.var}")
                continue
            sites.append(Site(lp.node, f"a loop of {trips} iterations", (lp, names)))
        if not sites:
            raise Refuse(reasons[0] if reasons else "no loop")
        return sites

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        lp, names = site.data
        start = lp.constants[0]
        indent = indent_of(ctx.source, lp.pragma if lp.pragma is not None else lp.node)
        copies = []
        for k in range(lp.trip_count):
            value = start + k * lp.step
            code = node_text(lp.body, {(n.start_byte, n.end_byte): f"({value})" for n in names})
            copies.append("{\n" + reindent(lp.body, code, indent + "    ") + "\n" + indent + "}")
        first = lp.pragma if lp.pragma is not None else lp.node  # an unroll pragma goes with the loop
        if unbraced_body(lp.node):  # the body of another loop: the copies need a block of their own
            copies = [c.replace("\n", "\n    ") for c in copies]
            code = "{\n" + indent + "    " + ("\n" + indent + "    ").join(copies) + "\n" + indent + "}"
        else:
            code = ("\n" + indent).join(copies)
        return Rewritten(apply(ctx.source, [Edit(first.start_byte, lp.node.end_byte, code)]), ctx.launch,
                         f"the loop at line {lp.line} written out ({lp.trip_count} copies)")


def _assigned(node: Any) -> bool:
    """The counter is assigned, stepped or has its address taken at `node`."""
    parent = node.parent
    return parent is not None and (assigned(parent) == node or
                                   parent.type == "pointer_expression" and text(parent).startswith("&"))


def _declares(node: Any) -> bool:
    parent = node.parent
    return parent is not None and parent.type in ("init_declarator", "declaration", "parameter_declaration",
                                                  "pointer_declarator", "array_declarator")


TRANSFORM = ExpandLoop()
