"""reduce-tree: a block reduction in shared memory (`buf[tid] = v; tree loop; if (tid == 0) use
buf[0]`) becomes a warp-shuffle reduction: each thread first combines its values in a register
(a grid-stride loop when the block's result goes to an atomic), the warps reduce with
`__shfl_xor_sync`, and one shared slot per warp combines the warps.

Recognised trees: interleaved (`for (s = 1; s < blockDim.x; s *= 2) if (tid % (2 * s) == 0)`) and
sequential (`for (s = blockDim.x / 2; s > 0; s >>= 1) if (tid < s)`), combining with `+=`,
`fmaxf`/`fminf`/`max`/`min`; padding must be the operation's identity. A result stored per block
keeps the block size (each partial covers the same elements); an atomic of one element per thread
takes a new block size only over a grid written per block."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, node_text
from cuopt.rewrite.transforms.common import (
    fresh, indent_rest, per_block_grid, require_index_only_builtins, scale_grid, unparen)
from cuopt.rewrite.transforms.shuffle import WARP, butterfly, combine, identity
from cuopt.source.accumulations import EXTREMES
from cuopt.source.affine import Poly
from cuopt.source.analysis import assignment, bound_in, called, condition, mentions, statements, steps_of
from cuopt.source.increments import increment
from cuopt.source.parse import operator_of, split_condition, text, walk
from cuopt.spec import expr as E
from cuopt.spec.model import Launch

_TREES = {  # (init, condition, update, guard) with spaces removed; S = step variable, T = thread index; the
    # update as its increment's (operator, amount): doubling or halving
    "interleaved": ("S=1", "S<blockDim.x", {("*", "2"), ("<<", "1")}, {"T%(2*S)==0", "(T%(2*S))==0"}),
    "sequential": ("S=blockDim.x/2", "S>0", {("/", "2"), (">>", "1")}, {"T<S"}),
}
_ZERO = re.compile(r"^\(?(\([a-z ]+\))?0+(\.0*)?[fFuUlL]*\)?$")


@dataclass(frozen=True)
class Tree:
    buf: str
    element: str
    kind: str  # "+" or a combining function
    load: ts.Node  # `buf[tid] = value;`
    value: ts.Node
    statements: tuple[ts.Node, ...]  # load, barrier, tree loop: replaced
    final: ts.Node  # `if (tid == 0) ...buf[0]...`
    atomic: bool  # the final statement only does an atomic with buf[0]
    guarded: bool  # the value is one element, `index < n ? x : identity`; else the thread's own (a partial it summed)


class ReduceTree:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        tree = _find(ctx)
        return [Site(tree.statements[2], "a shared-memory tree reduction: a warp-shuffle reduction needs no "
                     "barriers in its last steps and each thread can first combine several elements", tree)]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        tree: Tree = site.data
        per_thread, block = int(params["per_thread"]), int(params["block"])
        if per_thread > 1 and not tree.atomic:
            raise Refuse("the block's result is stored per block: each thread keeps one element")
        if not tree.guarded and (per_thread > 1 or block != ctx.launch.block[0]):
            raise Refuse("the value put in the tree is the thread's own, not one element under `index < n ? x : "
                         "identity`: the threads keep their values and the block its size")
        acc, red = fresh(ctx, "cuopt_acc"), fresh(ctx, "cuopt_red")
        ident = identity(tree.kind, tree.element)
        ranges = _value_index(ctx, tree.value)
        edits = [Edit.replace(tree.statements[0], "\n".join(self._partial(ctx, tree, acc, ident, ranges,
                                                                            per_thread > 1))),
                 Edit.replace(tree.statements[1], "\n".join(_block_reduce(tree, acc, red, ident))),
                 Edit(tree.statements[1].end_byte, tree.statements[2].end_byte, "")]
        zero = [a.node for a in ctx.model.accesses if a.array == tree.buf and tree.final.start_byte <= a.node.start_byte
                < tree.final.end_byte]
        edits += [Edit.replace(n, acc) for n in zero]
        decl = next(a.node for a in ctx.model.shared.values() if a.name == tree.buf)
        while decl.type != "declaration":
            decl = decl.parent
        edits.append(Edit.replace(decl, f"__shared__ {tree.element} {red}[{WARP}];"))
        if per_thread > 1:
            edits += [_delete_line(ctx, st) for st in _unused_after(ctx, tree)]
        source = _reindent_edits(ctx, edits)
        grid = scale_grid(ctx, 0, E.Num(per_thread)) if per_thread > 1 else _one_per_thread_grid(ctx, tree, block)
        what = f"warp-shuffle reduction, {per_thread} elements per thread" if per_thread > 1 else "warp-shuffle reduction"
        return Rewritten(source, Launch((block,), grid, ctx.launch.shared), what)

    @staticmethod
    def _partial(ctx: Context, tree: Tree, acc: str, ident: str, ranges: dict[tuple[int, int], int],
                 stride: bool) -> list[str]:
        """The thread's partial: its one value, or (grid-stride) the combination of its values."""
        value = node_text(tree.value)
        if not stride:
            return [f"{tree.element} {acc} = {value};"]
        parts = split_condition(unparen(tree.value.child_by_field_name("condition")))
        found = bound_in(ctx.model, parts, 0)
        if found is None:
            raise Refuse("the loaded value is not guarded by `index < bound`")
        bound, cmp = found
        e = fresh(ctx, "cuopt_e")
        inner = node_text(tree.value, {r: e for r in ranges})
        return [f"{tree.element} {acc} = {ident};",
                f"for (long long {e} = (long long)blockIdx.x * blockDim.x + threadIdx.x; {e} {cmp} ({node_text(bound)}); "
                f"{e} += (long long)gridDim.x * blockDim.x) {{",
                f"    {acc} = {combine(tree.kind, acc, f'({inner})')};",
                "}"]


def _one_per_thread_grid(ctx: Context, tree: Tree, block: int) -> tuple[E.Expr, ...]:
    """The grid for one element per thread in blocks of `block`: the launch's own when the block
    stays; for a new block, only a result that goes to an atomic of the whole sum, over a grid
    written per block (`cdiv(n, block.x)`), so every element is still combined exactly once."""
    old = ctx.launch.block[0]
    if block == old:
        return ctx.launch.grid
    if not tree.atomic:
        raise Refuse(f"the block's result is stored per block: blocks of {block} would combine other elements "
                     f"than blocks of {old}")
    try:
        extent, name = per_block_grid(ctx, 0)
    except Refuse as exc:
        raise Refuse(f"blocks of {block}: {exc}, so the threads would not cover the elements they cover now") from exc
    return (E.Call("cdiv", (extent, name)), *ctx.launch.grid[1:])


def _find(ctx: Context) -> Tree:
    m = ctx.model
    if ctx.element_dims != 1:
        raise Refuse("only 1D launches (or batches of them along the grid's other axes)")
    block = ctx.launch.block[0]
    if block % WARP:
        raise Refuse(f"block {block} is not a multiple of {WARP}")
    stmts = statements(ctx.kernel.body)
    for i, loop in enumerate(stmts):
        if loop.type != "for_statement" or i < 2 or i + 1 >= len(stmts):
            continue
        found = _tree_loop(ctx, loop)
        if found is None:
            continue
        buf, kind = found
        load, barrier, final = stmts[i - 2], stmts[i - 1], stmts[i + 1]
        if not _is_barrier(barrier):
            raise Refuse(f"no __syncthreads() before the tree loop (line {loop.start_point.row + 1})")
        value = _load_value(ctx, load, buf)
        if stmts[i + 2:]:
            raise Refuse(f"statements after the block's result (line {stmts[i + 2].start_point.row + 1})")
        others = [a for a in m.accesses if a.array == buf and not any(
            s.start_byte <= a.node.start_byte < s.end_byte for s in (load, loop, final))]
        if others:
            raise Refuse(f"{buf} is used elsewhere (line {others[0].line})")
        atomic = _final(ctx, final, buf)
        element = m.shared[buf].element
        if kind != "+" and element not in ("float", "double"):
            raise Refuse(f"{kind} reductions of {element}")
        guarded = value.type == "conditional_expression"
        if guarded:
            _check_padding(value, kind)
        return Tree(buf, element, kind, load, value, (load, barrier, loop), final, atomic, guarded)
    raise Refuse("no shared-memory tree reduction")


def _tree_loop(ctx: Context, loop: ts.Node) -> tuple[str, str] | None:
    """(buffer, combining kind) if `loop` is a recognised tree over the block."""
    m = ctx.model
    lp = m.loops[m.loop_of(loop)]
    if lp.var is None:
        return None
    init, cond, update = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update"))
    if init is None or cond is None or update is None:
        return None
    decl = init.named_children[-1] if init.type == "declaration" else init
    body = steps_of(lp.body)
    if len(body) != 2 or body[0].type != "if_statement" or not _is_barrier(body[1]):
        return None
    guard = condition(body[0])
    step = _one_statement(body[0].child_by_field_name("consequence"))
    if step is None or body[0].child_by_field_name("alternative") is not None:
        return None
    tid = _thread_index(ctx, guard)
    if tid is None:
        return None

    def norm(node: ts.Node) -> str:
        s = re.sub(rf"\b{re.escape(lp.var)}\b", "S", text(node).replace(" ", ""))
        return re.sub(rf"\b{re.escape(tid)}\b", "T", s).rstrip(";")

    inc = increment(update)
    if inc is None or inc.counter != lp.var:
        return None
    for head, bound, updates, guards in _TREES.values():
        if norm(decl) == head and norm(cond) == bound and (inc.op, inc.amount) in updates and norm(guard) in guards:
            return _step(ctx, step, norm)
    return None


def _step(ctx: Context, step: ts.Node, norm: Any) -> tuple[str, str] | None:
    """`buf[T] += buf[T + S]` or `buf[T] = f(buf[T], buf[T + S])`: (buf, kind)."""
    s = norm(step)
    mm = re.fullmatch(r"(\w+)\[T\]\+=\1\[T\+S\]", s) or re.fullmatch(r"(\w+)\[T\]=\1\[T\]\+\1\[T\+S\]", s)
    if mm and mm.group(1) in ctx.model.shared:
        return mm.group(1), "+"
    mm = re.fullmatch(r"(\w+)\[T\]=(\w+)\(\1\[T\],\1\[T\+S\]\)", s)
    if mm and mm.group(1) in ctx.model.shared and mm.group(2) in EXTREMES:
        return mm.group(1), mm.group(2)
    return None


def _thread_index(ctx: Context, guard: ts.Node) -> str | None:
    """The name or text used for threadIdx.x in the tree's guard."""
    for n in walk(guard):
        if n.type in ("identifier", "field_expression") and ctx.model.poly(n) == Poly.symbol("threadIdx.x"):
            return text(n)
    return None


def _one_statement(node: ts.Node | None) -> ts.Node | None:
    if node is None:
        return None
    if node.type == "compound_statement":
        inner = statements(node)
        return inner[0] if len(inner) == 1 and inner[0].type == "expression_statement" else None
    return node if node.type == "expression_statement" else None


def _is_barrier(node: ts.Node) -> bool:
    return node.type == "expression_statement" and text(node).replace(" ", "") == "__syncthreads();"


def _load_value(ctx: Context, load: ts.Node, buf: str) -> ts.Node:
    """The value of `buf[threadIdx.x] = value;`: one element (`i < n ? x[i] : 0`) or the thread's own."""
    a = assignment(load)
    if a is None or a.op != "=":
        raise Refuse(f"the tree's buffer is not filled by `{buf}[tid] = value;`")
    acc = next((x for x in ctx.model.accesses if x.node == a.target), None)
    if acc is None or acc.array != buf or acc.index != (Poly.symbol("threadIdx.x"),):
        raise Refuse(f"the tree's buffer is not filled by `{buf}[tid] = value;`")
    value = unparen(a.value)
    if any(x.array == buf for x in ctx.model.accesses if value.start_byte <= x.node.start_byte < value.end_byte):
        raise Refuse(f"the loaded value reads {buf}")
    return value


def _check_padding(value: ts.Node, kind: str) -> None:
    pad = text(value.child_by_field_name("alternative")).replace(" ", "")
    ok = _ZERO.match(pad) if kind == "+" else pad == identity(kind, "float")
    if not ok:
        raise Refuse(f"the padding value {pad} is not the identity of the reduction")


def _final(ctx: Context, final: ts.Node, buf: str) -> bool:
    """Check `if (tid == 0) stmt` reads buf[0] only; True when stmt is just an atomic of it into an
    element no block index picks but a batch axis's (`&totals[blockIdx.y]`, `Context.batch_axes`)."""
    if final.type != "if_statement" or final.child_by_field_name("alternative") is not None:
        raise Refuse("the block's result is not used under `if (tid == 0)`")
    cond = condition(final)
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if cond.type != "binary_expression" or operator_of(cond) != "==" or \
            ctx.model.poly(left) != Poly.symbol("threadIdx.x") or text(right) != "0":
        raise Refuse("the block's result is not used under `if (tid == 0)`")
    uses = [a for a in ctx.model.accesses if a.array == buf and final.start_byte <= a.node.start_byte < final.end_byte]
    if not uses or any(a.index != (Poly.const(0),) or a.write for a in uses):
        raise Refuse(f"the final statement uses {buf} other than reading {buf}[0]")
    stmt = _one_statement(final.child_by_field_name("consequence"))
    call = stmt.named_children[0] if stmt is not None else None
    batch = {f"blockIdx.{'xyz'[a]}" for a in ctx.batch_axes}
    return call is not None and call.type == "call_expression" and \
        called(call).startswith("atomic") and \
        not any(n.type == "field_expression" and text(n).startswith("blockIdx") and
                text(n).replace(" ", "") not in batch for n in walk(call))


def _value_index(ctx: Context, value: ts.Node) -> dict[tuple[int, int], int]:
    """Where the loaded value uses the global index; refuse other uses of the thread's position."""
    ranges = require_index_only_builtins(ctx, value, {0})
    position = {"threadIdx.x", "blockIdx.x"}
    for n in walk(value):
        p = ctx.model.poly(n) if n.type == "identifier" else None
        if p is not None and p.symbols() & position and \
                not any(s <= n.start_byte and n.end_byte <= e for (s, e) in ranges):
            raise Refuse(f"the loaded value uses {text(n)}, not only the global index")
    return ranges


def _unused_after(ctx: Context, tree: Tree) -> list[ts.Node]:
    """Pure one-name declarations used only by the replaced load (the grid-stride loop re-reads
    the index itself), so the rewrite leaves no unused variable behind."""
    gone = [tree.load, tree.statements[2]]
    out = []
    for st in statements(ctx.kernel.body):
        names = [n for n in st.children_by_field_name("declarator") if n.type == "init_declarator"]
        if st.type != "declaration" or len(names) != 1 or st in gone or \
                any(n.type in ("call_expression", "assignment_expression", "update_expression") for n in walk(st)):
            continue
        name = text(names[0].child_by_field_name("declarator"))
        uses = [n for n in mentions(ctx.kernel.body, name)
                if not any(g.start_byte <= n.start_byte < g.end_byte for g in gone + [st])]
        if not uses:
            out.append(st)
    return out


def _delete_line(ctx: Context, node: ts.Node) -> Edit:
    """Remove `node` with its indentation and line break (it is alone on its line)."""
    start = ctx.source.rfind(b"\n", 0, node.start_byte)
    return Edit(start, node.end_byte, "")


def _block_reduce(tree: Tree, acc: str, red: str, ident: str) -> list[str]:
    shuffle = butterfly(acc, tree.kind)
    return [shuffle,
            f"if (threadIdx.x % {WARP} == 0) {red}[threadIdx.x / {WARP}] = {acc};",
            "__syncthreads();",
            f"if (threadIdx.x < {WARP}) {{",
            f"    {acc} = threadIdx.x < blockDim.x / {WARP} ? {red}[threadIdx.x] : {ident};",
            f"    {shuffle}",
            "}"]


def _reindent_edits(ctx: Context, edits: list[Edit]) -> bytes:
    """Apply `edits`, indenting the continuation lines of each multi-line text like its first."""
    fixed = []
    for e in edits:
        line_start = ctx.source.rfind(b"\n", 0, e.start) + 1
        indent = ctx.source[line_start:e.start].decode()
        indent = indent if indent.strip() == "" else ""
        fixed.append(Edit(e.start, e.end, indent_rest(e.text, indent)))
    return apply(ctx.source, fixed)


TRANSFORM = ReduceTree()
