"""Several consecutive outputs per thread along one axis: the code `window` and `stream` share.

A kernel `prelude; if (guard) { body }` (or the early-return form) is rewritten so each thread
takes `count` consecutive positions `first .. first + count - 1` along `axis`. The rewritten body
declares the prelude's index-free values once, checks the guard for every position (the fast
path runs only when all pass), and falls back to the original code, once per position, when one
does not. Each position's code runs in an unrolled loop that declares the position's index and
the prelude values that depend on it."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten
from cuopt.source.edits import Edit, apply, node_text
from cuopt.rewrite.transforms.common import (
    AXES, assigned_outside, fresh, index_replacements, index_type, reindent, scale_grid, used_declarations, uses)
from cuopt.source.analysis import Shape, bound_of, statements
from cuopt.source.parse import text, walk
from cuopt.spec import expr as E
from cuopt.spec.model import Launch


def guarded_shape(ctx: Context, axis: int) -> Shape:
    """The kernel as `prelude; if (guard) { body }` (or the early-return form) with an `index < bound`
    guard along `axis`, nothing after the guarded block, and no prelude value that the body changes
    (the fast path declares the prelude once for all positions); Refuse otherwise."""
    sh = ctx.model.shape
    if sh.guard is None or bound_of(ctx.model, axis) is None:
        raise Refuse(f"no `index < bound` guard along {AXES[axis]}: extra positions would do work")
    if sh.after:
        raise Refuse(f"statements after the guarded block (line {sh.after[0].start_point.row + 1})")
    prelude = {text(d.child_by_field_name("declarator")) for st in sh.prelude
               for d in st.children_by_field_name("declarator") if d.type == "init_declarator"}
    for st in sh.body:
        changed = [name for name in assigned_outside(st) if name in prelude]
        if changed:
            raise Refuse(f"{changed[0]}, declared before the guard, changes for each position (line "
                         f"{st.start_point.row + 1})")
    return sh


class Outputs:
    def __init__(self, ctx: Context, shape: Shape, ranges: dict[tuple[int, int], int], axis: int, count: int):
        self.ctx, self.shape, self.count = ctx, shape, count
        self.first, self.index, self.r = (fresh(ctx, f"cuopt_{k}") for k in ("first", "e", "r"))
        self.replacements = index_replacements(ctx, ranges, {axis: self.index})
        self.dependent = _index_dependent(shape.prelude, ranges)
        self.axis = axis
        self.wide = index_type(ctx, ranges, axis)  # the original's 64-bit index type, if it casts to one
        self.type = self.wide or "unsigned int"

    def each(self, code: str, indent: str, *, declare: bool = True, step: int = 1) -> list[str]:
        """`code` (one position's) in an unrolled loop over the positions (every `step`-th), the
        position's index (and, with `declare`, the prelude's values that depend on it) declared first."""
        decls = used_declarations(self.ctx, self.dependent, self.replacements, code) if declare else []
        head = [f"const {self.type} {self.index} = {self.first} + {self.r};"] \
            if (decls or uses(code, self.index)) else []
        inner = [*head, *decls, *code.split("\n")]
        return [f"{indent}#pragma unroll",
                f"{indent}for (int {self.r} = 0; {self.r} < {self.count}; "
                f"{f'++{self.r}' if step == 1 else f'{self.r} += {step}'}) {{",
                *(f"{indent}    {ln}" if ln else "" for ln in inner), f"{indent}}}"]

    def text(self, node: ts.Node, extra: dict[tuple[int, int], str] | None = None) -> str:
        """A node's code for one position: the global index replaced, and `extra`."""
        return reindent(node, node_text(node, {**self.replacements, **(extra or {})}), "")

    def head(self, fast: str, checks: list[str]) -> list[str]:
        """The prelude's index-free declarations, the first position, and `fast`: `checks` and the
        guard at every position."""
        a = AXES[self.axis]
        guard = node_text(self.shape.guard, self.replacements) if self.shape.guard is not None else "true"
        guard = f"!({guard})" if self.shape.negated else f"({guard})"
        free = [st for st in self.shape.prelude if st not in self.dependent]
        return [*("    " + ln for st in free for ln in reindent(st, self.ctx.text(st), "").split("\n")),
                f"    const {self.type} {self.first} = {self.count} * ({f'({self.wide})' if self.wide else ''}blockIdx.{a} * "
                f"blockDim.{a} + threadIdx.{a});",
                f"    bool {fast} = {' && '.join(checks) or 'true'};",
                *self.each(f"{fast} = {fast} && {guard};", "    ")]

    def fallback(self, indent: str) -> list[str]:
        """The original kernel body once per position, `return` as `continue`."""
        repl = dict(self.replacements)
        for r in self.ctx.model.returns:
            repl[(r.start_byte, r.end_byte)] = "continue;"
        body = "\n".join(reindent(st, node_text(st, repl), "") for st in statements(self.ctx.kernel.body))
        return self.each(body, indent, declare=False)


def rewritten(ctx: Context, axis: int, count: int, body: str, summary: str, pins: tuple[str, ...] = ()) -> Rewritten:
    """The kernel with `body` as its body and a grid `count` times smaller along `axis` (`pins`: see
    `Rewritten`)."""
    grid = scale_grid(ctx, axis, E.Num(count))
    return Rewritten(apply(ctx.source, [Edit.replace(ctx.kernel.body, body)]),
                     Launch(ctx.launch.block, grid, ctx.launch.shared), summary, pins)


def _index_dependent(prelude: list[ts.Node], ranges: dict[tuple[int, int], int]) -> list[ts.Node]:
    """The prelude declarations whose value depends on a global index, directly or through another."""
    out: list[ts.Node] = []
    names: set[str] = set()
    for st in prelude:
        direct = any(st.start_byte <= s and e <= st.end_byte for (s, e) in ranges)
        used = {text(i) for i in walk(st) if i.type == "identifier"}
        if direct or used & names:
            out.append(st)
            names |= {text(d.child_by_field_name("declarator")) for d in st.children_by_field_name("declarator")
                      if d.type == "init_declarator"}
    return out
