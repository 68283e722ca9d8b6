"""What smem-tile and register-tile share: a 2D kernel's global-index occurrences and its guard
split by axis, the matmul plan (`matmul_plan`, `Matmul`: a loop `acc += A[..k..] * B[..k..]`
where A's index follows the output row and B's the output column), and `finish`, which writes a
tiled kernel's new body."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten
from cuopt.source.edits import Edit, apply, node_text
from cuopt.rewrite.transforms.common import (
    per_block_grid, reindent, render_condition, require_index_only_builtins, unparen, used_declarations)
from cuopt.source.affine import BLOCK, DIM, THREAD
from cuopt.source.analysis import Shape, builtin_uses, mentions, read_expression, steps_of
from cuopt.source.increments import increment
from cuopt.source.model import Access
from cuopt.source.parse import assigned, operator_of, text, walk
from cuopt.spec.model import Launch

Ranges = dict[tuple[int, int], int]


def _axes_of(ranges: Ranges, node: ts.Node) -> set[int]:
    return {axis for (s, e), axis in ranges.items() if node.start_byte <= s and e <= node.end_byte}


def index_renames(ranges: Ranges, node: ts.Node, names: dict[int, str]) -> dict[tuple[int, int], str]:
    """The global-index occurrences in `node` along the axes of `names`, each renamed to its axis's name."""
    return {r: names[axis] for r, axis in ranges.items()
            if node.start_byte <= r[0] and r[1] <= node.end_byte and axis in names}


def check_free_locals(ctx: Context, node: ts.Node, ranges: Ranges, allowed: frozenset[str] = frozenset()) -> None:
    """Identifiers in `node` (outside the global-index ranges) must not name locals that depend on
    the thread's position: the transform moves this code to other threads."""
    inside = {n.start_byte for n in walk(node) if n.type == "declaration"}
    for n in walk(node):
        if n.type != "identifier" or any(s <= n.start_byte and n.end_byte <= e for (s, e) in ranges):
            continue
        local = ctx.model.locals.get(text(n))
        if local is None or text(n) in allowed or any(local.node.start_byte == b for b in inside):
            continue
        if local.writes or any(u.type == "field_expression" and text(u).split(".")[0] in
                               ("threadIdx", "blockIdx", "blockDim") for u in walk(local.node)):
            raise Refuse(f"{text(n)} (line {n.start_point.row + 1}) depends on the thread's position")


def two_d(ctx: Context, batched: bool = False) -> None:
    """A 2D launch (with `batched`, also a grid of such launches along z: blocks of one thread
    along z, `blockIdx.z` a per-block constant) whose grid is written per block."""
    if ctx.dims != 2 and not (batched and ctx.dims == 3 and _batch_axis(ctx)):
        raise Refuse("not a 2D launch" + (" or a batch of them along z" if batched else ""))
    per_block_grid(ctx, 0)
    per_block_grid(ctx, 1)
    m = ctx.model
    if m.barriers or m.shared:
        raise Refuse("already uses shared memory or barriers")
    if any(n.type in ("while_statement", "do_statement", "goto_statement") for n in walk(ctx.kernel.body)):
        raise Refuse("has while/do loops or goto")


def _batch_axis(ctx: Context) -> bool:
    """Blocks one thread deep along z, and no threadIdx.z: blockIdx.z is the same in a block."""
    return ctx.launch.block3[2] == 1 and not any(
        n == "threadIdx.z" for _, n in builtin_uses(ctx.kernel.body))


def batch_locals(ctx: Context) -> frozenset[str]:
    """Locals set once from blockIdx.z and thread-independent values: the same in a block."""
    out = set()
    for name, local in ctx.model.locals.items():
        uses = [n for _, n in builtin_uses(local.node)]
        if local.writes == 0 and uses and set(uses) <= {"blockIdx.z", "gridDim.z"}:
            out.add(name)
    return frozenset(out)


def guard_terms(ctx: Context, s: Shape, ranges: Ranges, allowed: frozenset[str] = frozenset()
                ) -> list[tuple[ts.Node, bool, set[int]]]:
    """The guard's conjuncts, each with the axes it is about (refused when it mixes both);
    `allowed` locals may depend on the block (see `check_free_locals`)."""
    out = []
    for node, neg in s.conjuncts():
        axes = _axes_of(ranges, node)
        if len(axes) > 1:
            raise Refuse(f"guard term {text(node)!r} mixes rows and columns")
        check_free_locals(ctx, node, ranges, allowed)
        out.append((node, neg, axes))
    return out


def render_guard(conj: list[tuple[ts.Node, bool, set[int]]], ranges: Ranges, names: dict[int, str],
                 axes: set[int] | None = None) -> str:
    """The guard's terms (those about `axes`, plus thread-independent ones), rendered with the
    global indices renamed."""
    parts = [render_condition(n, neg, index_renames(ranges, n, names)) for n, neg, ax in conj
             if axes is None or not ax or ax <= axes]
    return " && ".join(parts) if parts else "true"


def _uses(node: ts.Node, old: str, new: str) -> dict[tuple[int, int], str]:
    return {(n.start_byte, n.end_byte): new for n in mentions(node, old)}


@dataclass
class Matmul:
    """A matmul-like loop `acc += A[..k..] * B[..k..]` and the code around it (see matmul_plan)."""

    shape: Shape
    ranges: Ranges
    loop: Any
    stmt: ts.Node  # the loop body's single statement
    acc: str
    acc_type: str
    init: ts.Node  # the accumulator's initial value
    a: Access  # follows the output row (y)
    b: Access  # follows the output column (x)
    epilogue: list[ts.Node]
    conj: list[tuple[ts.Node, bool, set[int]]]

    def bounds(self, ctx: Context) -> tuple[str, str]:
        """The loop's start and bound, as written."""
        return ctx.text(self.loop.start_node), ctx.text(self.loop.bound_node)

    def k_uses(self, node: ts.Node, name: str) -> dict[tuple[int, int], str]:
        """Replace the loop variable in `node` by `name`."""
        return _uses(node, self.loop.var, name)

    def acc_uses(self, node: ts.Node, name: str) -> dict[tuple[int, int], str]:
        """Replace the accumulator in `node` by `name`."""
        return _uses(node, self.acc, name)

    def read(self, access: Access) -> tuple[int, int]:
        """The span of the expression that reads the operand (`A[..]`, or `__ldg(&A[..])` as a whole)."""
        return span(read_expression(access.node))

    def operand(self, access: Access, index: str, k: str) -> str:
        """The A or B access with its global index (row for A, column for B) and the loop variable renamed."""
        axis = 1 if access is self.a else 0
        return node_text(access.node, {**self.k_uses(access.node, k),
                                       **index_renames(self.ranges, access.node, {axis: index})})

    def guard(self, names: dict[int, str], axes: set[int] | None = None) -> str:
        """The original guard (its terms about `axes`, or all) with the global indices renamed."""
        return render_guard(self.conj, self.ranges, names, axes)

    @property
    def init_follows_output(self) -> bool:
        """Whether the initial value depends on the output's position (llm.c's `bias[oc]`)."""
        return bool(_axes_of(self.ranges, self.init))

    def init_statement(self, names: dict[int, str], acc_ref: str) -> str:
        """The accumulator's initialisation. An initial value that depends on the output's position
        is read with the global indices renamed, under the original guard (outside it the original
        never reads it), so each output starts where the original's does and adds in its order."""
        if not self.init_follows_output:
            return f"{acc_ref} = {text(self.init)};"
        value = node_text(self.init, index_renames(self.ranges, self.init, names))
        return f"{acc_ref} = ({self.guard(names)}) ? ({value}) : ({self.acc_type})0;"

    def epilogue_lines(self, names: dict[int, str], acc_ref: str) -> list[str]:
        """The statements after the loop, with the global indices and the accumulator renamed."""
        code = [reindent(st, node_text(st, {**index_renames(self.ranges, st, names), **self.acc_uses(st, acc_ref)}),
                         "") for st in self.epilogue]
        return [ln for c in code for ln in c.split("\n")]


def matmul_plan(ctx: Context) -> Matmul:
    """A 2D kernel whose guarded body is `acc = init; for (k = a; k < b; ++k) acc += A[..] * B[..];`
    then statements that use acc: A's index follows the output row, B's the column (a batch of
    them along z too: `blockIdx.z` a per-block constant)."""
    two_d(ctx, batched=True)
    batch = batch_locals(ctx)
    m = ctx.model
    if m.atomics:
        raise Refuse("has atomics")
    ranges = require_index_only_builtins(ctx, ctx.kernel.body, {0, 1})
    s = ctx.model.shape
    if s.after:
        raise Refuse("statements after the guarded block")
    loops = [i for i, lp in enumerate(m.loops)]
    if len(loops) != 1:
        raise Refuse("needs exactly one loop")
    lp = m.loops[0]
    if lp.var is None or lp.step != 1 or lp.cmp != "<" or lp.start is None or lp.bound is None:
        raise Refuse("the loop is not `for (k = a; k < b; ++k)`")
    for p in (lp.start, lp.bound):
        if p.symbols() & set(THREAD + BLOCK + DIM):
            raise Refuse("the loop bounds depend on the thread")
    if lp.node not in s.body:
        raise Refuse("the loop is not directly in the kernel's (guarded) body")
    body = steps_of(lp.body)
    if len(body) != 1 or body[0].type != "expression_statement" or not body[0].named_children:
        raise Refuse("the loop body is not a single `acc += a * b` statement")
    upd = body[0].named_children[0]
    if upd.type != "assignment_expression":
        raise Refuse("the loop body is not an accumulation")
    target = assigned(upd)
    if target is None or target.type != "identifier":
        raise Refuse("the accumulator is not a local scalar")
    acc, inc = text(target), increment(upd)
    if inc is None or inc.op != "+" or inc.step is None:
        raise Refuse("the loop body is not `acc += ...` or `acc = acc + ...`")
    inside = [a for a in m.accesses if 0 in a.loops]
    if len(inside) != 2 or any(a.space != "global" or a.write or a.flat is None for a in inside):
        raise Refuse("the loop must read exactly two global arrays with affine indices")
    side: dict[str, Access] = {}
    for a in inside:
        p = a.flat
        cx, cy = p.coefficient("threadIdx.x"), p.coefficient("threadIdx.y")
        if not p.depends_on(lp.var):
            raise Refuse(f"{ctx.text(a.node)} does not depend on {lp.var}")
        if p.degree_in(THREAD + (lp.var,)) > 1:
            raise Refuse(f"{ctx.text(a.node)} is not affine")
        if cy.terms and not cx.terms:
            side.setdefault("a", a)
        elif cx.terms and not cy.terms:
            side.setdefault("b", a)
    if set(side) != {"a", "b"}:
        raise Refuse("needs one operand that follows the output row and one that follows the column")
    local = m.locals.get(acc)
    if local is None or local.init is None or local.node.type != "declaration":
        raise Refuse(f"{acc} is not a local declared with an initial value")
    idx = s.body.index(lp.node)
    before = s.body[:idx]
    if any(st != local.node for st in before) or (local.node not in before and local.node not in s.prelude):
        raise Refuse("statements other than the accumulator's declaration precede the loop")
    if local.writes != 1:
        raise Refuse(f"{acc} is written outside the loop")
    check_free_locals(ctx, local.init, ranges, batch)
    epilogue = s.body[idx + 1:]
    for st in epilogue:
        if any(n.type in ("return_statement", "break_statement", "continue_statement") for n in walk(st)):
            raise Refuse("return or break after the loop")
        check_free_locals(ctx, st, ranges, batch | {acc})
    check_free_locals(ctx, upd, ranges, batch | {acc, lp.var})
    conj = guard_terms(ctx, s, ranges, batch)
    acc_type = text(local.node.child_by_field_name("type"))
    plan = Matmul(s, ranges, lp, upd, acc, acc_type, local.init, side["a"], side["b"], epilogue, conj)
    _require_product(plan)
    return plan


def _require_product(p: Matmul) -> None:
    """A padded step (zero operands) must add nothing, and the output's position may appear only in
    the operands' indices (the rest of the update runs in other threads)."""
    added = increment(p.stmt)
    assert added is not None and added.step is not None  # planned only for `acc += e` and its spellings
    factors = {span(f) for f in _factors(added.step)}
    operands = [p.read(p.a), p.read(p.b)]
    if not all(span in factors for span in operands):
        raise Refuse("the update is not a product of the two operands (zero padding would change it)")
    for s, e in p.ranges:
        if p.stmt.start_byte <= s and e <= p.stmt.end_byte and not any(lo <= s and e <= hi for lo, hi in operands):
            raise Refuse("the update uses the output's position outside the operands' indices")


def _factors(node: ts.Node) -> list[ts.Node]:
    """The factors of a product `a * b * ...` (parentheses removed)."""
    node = unparen(node)
    if node.type == "binary_expression" and operator_of(node) == "*":
        return _factors(node.child_by_field_name("left")) + _factors(node.child_by_field_name("right"))
    return [node]


def span(node: ts.Node) -> tuple[int, int]:
    """The node's bytes, as the key of a replacement."""
    return node.start_byte, node.end_byte


def finish(ctx: Context, prelude: list[ts.Node], lines: list[str], launch: Launch, summary: str,
           edits: tuple[Edit, ...] = (), pins: tuple[str, ...] = ()) -> Rewritten:
    """The new body (the prelude declarations it still uses, then `lines`), plus `edits` outside it
    (`pins`: see `Rewritten`)."""
    lines = used_declarations(ctx, prelude, {}, "\n".join(lines)) + lines
    body = "{\n" + "\n".join("    " + ln if ln.strip() else "" for ln in lines) + "\n}"
    return Rewritten(apply(ctx.source, [Edit.replace(ctx.kernel.body, body), *edits]), launch, summary, pins)
