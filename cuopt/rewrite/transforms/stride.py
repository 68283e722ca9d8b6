"""Grid-stride loops: the work of one thread per index becomes a loop over every index the grid
covers, `gridDim.x * blockDim.x` apart, so a smaller grid still does all the work."""
from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse
from cuopt.source.edits import node_text
from cuopt.rewrite.transforms.common import AXES, fresh, index_replacements, reindent, require_index_only_builtins
from cuopt.source.analysis import bound_of, return_in_loop, statements
from cuopt.source.parse import walk



@dataclass(frozen=True)
class StrideLoop:
    before: list[str]  # declarations that do not depend on the index: once, before the loop
    head: str  # `for (...)` without the body
    body: list[str]  # the thread's statements, `return` turned into `continue`
    index: str  # the loop's index variable

    def render(self, head: tuple[str, ...] = (), tail: tuple[str, ...] = ()) -> str:
        """The kernel body: `head` lines, the loop-invariant declarations, the loop, `tail` lines."""
        if not self.body:
            raise Refuse("nothing to do per index")
        loop = [self.head + " {"] + ["    " + ln if ln else "" for ln in self.body] + ["}"]
        lines = [*head, *self.before, *loop, *tail]
        return "\n".join(["{"] + ["    " + ln if ln else "" for ln in lines] + ["}"])


def stride_loop(ctx: Context, extra: dict[tuple[int, int], str] | None = None, axis: int = 0) -> StrideLoop:
    """The kernel's body as a grid-stride loop along `axis`, the launch's outermost (x for a 1D
    launch, y for a 2D one: each thread keeps its x and walks rows); `extra` replaces more byte
    ranges inside it."""
    if axis != ctx.element_dims - 1:  # batch axes of the grid stay as they are
        raise Refuse("only 1D launches" if axis == 0 else f"{AXES[axis]} is not the launch's outermost axis")
    a = AXES[axis]
    m = ctx.model
    if m.barriers:
        raise Refuse("uses barriers (threads would loop different numbers of times)")
    found = bound_of(ctx.model, axis)
    if found is None:
        raise Refuse(f"no `index < bound` guard along {a}: the loop would not know where to stop")
    bound, cmp = found
    body = ctx.kernel.body
    ranges = require_index_only_builtins(ctx, body, {axis})
    if not any(ax == axis for ax in ranges.values()):
        raise Refuse(f"the kernel does not use blockIdx.{a} * blockDim.{a} + threadIdx.{a}")
    inner = return_in_loop(m, body)
    if inner is not None:
        raise Refuse(f"return inside a loop (line {inner.start_point.row + 1})")
    e = fresh(ctx, "cuopt_e")
    repl = index_replacements(ctx, ranges, {axis: e})
    repl.update(extra or {})
    for r in m.returns:
        repl[(r.start_byte, r.end_byte)] = "continue;"
    before, inside = _split_prelude(ctx, ctx.model.shape.prelude, ranges)
    uses_inside = {ctx.text(d) for st in inside for d in _declared(st)}
    if any(n.type == "identifier" and ctx.text(n) in uses_inside for n in walk(bound)):
        raise Refuse("the bound depends on the index")
    head = (f"for (long long {e} = (long long)blockIdx.{a} * blockDim.{a} + threadIdx.{a}; "
            f"{e} {cmp} ({node_text(bound)}); {e} += (long long)gridDim.{a} * blockDim.{a})")
    rest = [st for st in statements(body) if st not in before]
    lines = [ln for st in rest for ln in reindent(st, node_text(st, repl), "").split("\n")]
    return StrideLoop([reindent(st, node_text(st), "") for st in before], head, lines, e)


def _declared(decl: ts.Node) -> list[ts.Node]:
    out = []
    for d in decl.children_by_field_name("declarator"):
        name = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
        if name is not None and name.type == "identifier":
            out.append(name)
    return out


def _split_prelude(ctx: Context, prelude: list[ts.Node], ranges: dict[tuple[int, int], int]
                   ) -> tuple[list[ts.Node], list[ts.Node]]:
    """Prelude declarations that depend on the index (directly or through another), and the rest."""
    before: list[ts.Node] = []
    inside: list[ts.Node] = []
    dependent: set[str] = set()
    for st in prelude:
        has_index = any(st.start_byte <= s and e <= st.end_byte for (s, e) in ranges)
        mentions = any(re.search(rf"(?<![\w.]){re.escape(n)}\b", ctx.text(st)) for n in dependent)
        if has_index or mentions:
            inside.append(st)
            dependent |= {ctx.text(d) for d in _declared(st)}
        else:
            before.append(st)
    return before, inside
