"""privatize: atomics into a small global array indexed by data (histograms, counters) go to a
per-block copy in shared memory, merged into global memory once per block.

The merge costs one atomic per entry per block, so the kernel also becomes a grid-stride loop
(see stride.py) along the launch's outermost axis (x in 1D, rows in 2D, planes in 3D) over a grid
about `per_thread` times smaller there (a batch axis of the grid, `Context.batch_axes`, stays as it is); a kernel of a warp per row (row-parallel's) loops over
its original grid's threads, and one of a block per row over its rows, each from a barrier
(cuopt/rewrite/transforms/teams.py). The array's size comes from the spec
(a constant element count), from the index (`v % C`, `v & (C - 1)`), or from the spec's sizes
(`float32[C]`, C a parameter of the kernel: a layer norm's weight gradient); then the copy holds
the largest count the spec runs at, and a launch with a larger one runs the original body. Every
array the kernel updates so is privatized at once (a weight and a bias gradient)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, node_text
from cuopt.rewrite.transforms.common import (
    fresh, per_block_grid, reindent, scale_grid, sizes_as_parameters, unparen)
from cuopt.rewrite.transforms.stride import stride_loop
from cuopt.rewrite.transforms.teams import block_grid, block_loop, block_rows, grid_of, team_loop, team_rows
from cuopt.source.analysis import called, fit_branches, statements
from cuopt.source.atomics import atomic_statement
from cuopt.source.bounded import index_count
from cuopt.source.ctypes import size_of
from cuopt.source.launches import to_c
from cuopt.source.model import KernelModel
from cuopt.source.parse import text
from cuopt.source.slots import SlotLoop, slot_loop_of
from cuopt.spec import expr as E
from cuopt.spec.model import Buffer, Launch

MAX_SHARED_BYTES = 32 * 1024
MAX_SLOTS = 32  # registers per lane for one array's partials (row-cache's slot loops, `_slots`)
ROWS_ONLY = 16  # fewer indices per thread only where an index is a lane of a team's row (teams.py)
# by launch dimensions: a thread's place in its block, and the block's size (the copy's init and merge walk)
_THREAD = {1: "threadIdx.x", 2: "threadIdx.y * blockDim.x + threadIdx.x",
           3: "(threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x"}
_THREADS = {1: "blockDim.x", 2: "blockDim.x * blockDim.y", 3: "blockDim.x * blockDim.y * blockDim.z"}
# atomic function -> element types it may be privatized for, and the identity it starts from
_OPS = {"atomicAdd": ({"unsigned int", "unsigned", "int", "float", "unsigned long long",
                       "unsigned long long int"}, "0"),
        "atomicOr": ({"unsigned int", "unsigned", "int", "unsigned long long", "unsigned long long int"}, "0"),
        "atomicXor": ({"unsigned int", "unsigned", "int", "unsigned long long", "unsigned long long int"}, "0"),
        "atomicMax": ({"unsigned int", "unsigned", "unsigned long long", "unsigned long long int"}, "0")}


@dataclass(frozen=True)
class Target:
    """An array the kernel updates only by atomics, and the shared copy it gets."""

    name: str
    op: str  # the atomic function
    element: str  # the element type as declared (`unsigned int`, `T`)
    capacity: int  # the copy's element count
    count: str | None  # the array's count at run time in C (`C`), when it is not `capacity` itself
    calls: tuple[ts.Node, ...]
    bytes: int  # the copy's size


class Privatize:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        m = ctx.model
        strided, team, block = None, None, None
        try:
            block = block_rows(ctx)  # a block per row: its shared memory and barriers stay per row
        except Refuse as why:
            as_block = f"as a block per row: {why}"
            if m.shared or m.barriers:
                raise Refuse(f"already uses shared memory or barriers ({as_block})") from None
            strided = _grid_stride_body(ctx)
        if strided is None and block is None:
            try:
                per_block_grid(ctx, ctx.element_dims - 1)  # a batch axis of the grid stays as it is
            except Refuse:
                try:
                    team = team_rows(ctx)  # a warp per row; refuses other grids not written per block
                except Refuse as why:
                    raise Refuse(f"{why}; {as_block}") from None
        targets = [self._target(ctx, name) for name in sorted({a.array for a in m.global_accesses() if a.atomic})]
        if not targets:
            raise Refuse("no atomics into a global array")
        total = sum(t.bytes for t in targets)
        if total > MAX_SHARED_BYTES:
            raise Refuse(f"{' and '.join(f'{t.name}[{t.capacity}]' for t in targets)} do not fit in "
                         f"{MAX_SHARED_BYTES // 1024} KB of shared memory")
        arrays = " and ".join(f"{t.name}[{t.count or t.capacity}]" for t in targets)
        return [Site(targets[0].calls[0], f"atomics into {arrays} from every thread; a per-block copy in "
                     "shared memory turns them into shared-memory atomics", (tuple(targets), strided, team, block))]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        per_thread = int(params["per_thread"])
        targets, strided, team, block = site.data
        if per_thread < ROWS_ONLY and team is None and block is None:
            raise Refuse(f"per_thread {per_thread} is offered for a team per row only (a warp per row: a grid "
                         f"{ROWS_ONLY} times smaller would leave most of the GPU idle)")
        t = fresh(ctx, "cuopt_t")
        extra: dict[tuple[int, int], str] = {}
        declare, zero, merge, flush = [], [], [], []
        for target in targets:
            copy = fresh(ctx, f"cuopt_{target.name}")
            slots = _slots(ctx, target) if team is not None else {}
            part = fresh(ctx, f"cuopt_{target.name}_part") if slots else ""
            for call in target.calls:
                args = call.child_by_field_name("arguments").named_children
                at = slots.get((call.start_byte, call.end_byte))
                if at is not None:  # into the lane's register for the slot
                    extra[(call.start_byte, call.end_byte)] = f"{part}[{at.index}] += {ctx.text(args[1])}"
                    continue
                array = unparen(unparen(args[0]).child_by_field_name("argument")).child_by_field_name("argument")
                extra[(array.start_byte, array.end_byte)] = copy
            if slots:
                slot = next(iter(slots.values()))
                declare.append(f"{target.element} {part}[{slot.slots}];")
                zero += ["#pragma unroll", f"for (int {t} = 0; {t} < {slot.slots}; ++{t}) {part}[{t}] = 0;"]
                flush += ["#pragma unroll", f"for (int {t} = 0; {t} < {slot.slots}; ++{t}) {{",
                          f"    const int {t}_at = {slot.element(t)};",
                          f"    if ({t}_at < {target.count or target.capacity} && {part}[{t}] != 0) "
                          f"{target.op}(&{copy}[{t}_at], {part}[{t}]);", "}"]
            identity = _OPS[target.op][1]
            walk_ = (f"for (int {t} = {_THREAD[ctx.element_dims]}; {t} < {target.count or target.capacity}; "
                     f"{t} += {_THREADS[ctx.element_dims]})")
            declare.append(f"__shared__ {target.element} {copy}[{target.capacity}];")
            zero.append(f"{walk_} {copy}[{t}] = {identity};")
            merge += [f"{walk_} {{",
                      f"    if ({copy}[{t}] != {identity}) {target.op}(&{target.name}[{t}], {copy}[{t}]);", "}"]
        e = fresh(ctx, "cuopt_e")

        def looped(redirect: dict[tuple[int, int], str], head: tuple[str, ...], tail: tuple[str, ...]) -> str:
            """The body between `head` and `tail` as the loop that covers the original grid's work."""
            if team is not None:
                return team_loop(ctx, team, redirect, head, tail, e)
            if block is not None:
                return block_loop(ctx, block, redirect, head, tail, e)
            if strided is None:
                return stride_loop(ctx, redirect, ctx.element_dims - 1).render(head, tail)
            return _wrapped(ctx, redirect, head, tail)

        head = (*_fallback(targets, looped(_as_written(ctx), (), ())), *declare, *zero, "__syncthreads();")
        body = looped(extra, head, (*flush, "__syncthreads();", *merge))
        names = " and ".join(target.name for target in targets)
        if team is not None:
            grid = grid_of(team, per_thread)
        elif block is not None:
            grid = block_grid(block, per_thread)
        elif strided is None:
            grid = scale_grid(ctx, ctx.element_dims - 1, E.Num(per_thread))
        else:
            grid = _strided_grid(ctx, per_thread, rule)
        return Rewritten(apply(ctx.source, [Edit.replace(ctx.kernel.body, body)]),
                         Launch(ctx.launch.block, grid, ctx.launch.shared),
                         f"a per-block copy of {names} in shared memory, about {per_thread} "
                         f"{'rows per team' if team is not None else 'rows per block' if block is not None else 'indices per thread'}"
                         if grid != ctx.launch.grid else f"a per-block copy of {names} in shared memory",
                         tuple(dict.fromkeys(target.element for target in targets)))

    def _target(self, ctx: Context, name: str) -> Target:
        """The array's atomic function, its copy's size and the atomic calls into it."""
        m = ctx.model
        param = next((p for p in ctx.kernel.params if p.name == name), None)
        if param is None or param.pointer != 1 or name in m.escapes:
            raise Refuse(f"{name} is not a plain pointer parameter")
        calls, ops = [], set()
        for a in m.global_accesses(name):
            call = atomic_statement(a.node)
            if not a.atomic or call is None or a.node.type != "subscript_expression":
                raise Refuse(f"{name} is accessed other than by `atomicOp(&{name}[i], v);` (line {a.line})")
            calls.append(call)
            ops.add(called(call))
        if len(ops) != 1:
            raise Refuse(f"{name} is updated with {', '.join(sorted(ops))}: one atomic operation needed")
        op = ops.pop()
        if op not in _OPS or param.element not in _OPS[op][0]:
            raise Refuse(f"{op} on {param.element} is not privatized")
        size = _spec_size(ctx, name) or _index_size(m, m.global_accesses(name))
        count = None
        if size is None:
            size, count = _sized_by_spec(ctx, name)
        nbytes = size * (size_of(param.element) or 0)
        if nbytes > MAX_SHARED_BYTES:
            raise Refuse(f"{name}[{count or size}] does not fit in {MAX_SHARED_BYTES // 1024} KB of shared memory"
                         + (f" at {size} elements" if count else ""))
        return Target(name, op, param.base_type, size, count, tuple(calls), nbytes)


def _slots(ctx: Context, target: Target) -> dict[tuple[int, int], SlotLoop]:
    """The target's `atomicAdd`s (by their calls' byte ranges) that sit in slot loops of one lane and
    step (row-cache's unrolled column loops, cuopt/source/slots.py) at the slot's element, each with
    its loop: a team's lane adds those into a register per slot across its rows and into the shared
    copy once. Empty when there are none, or when the slot loops do not all map slot k of a lane to
    the same element."""
    if target.op != "atomicAdd":
        return {}
    found = {}
    for a in ctx.model.global_accesses(target.name):
        call = atomic_statement(a.node)
        slot = slot_loop_of(ctx.model, a.node)
        index = unparen(a.indices[0]) if len(a.indices) == 1 else None
        if call is not None and slot is not None and index is not None and index.type == "identifier" \
                and text(index) == slot.column:
            found[(call.start_byte, call.end_byte)] = slot
    shapes = {(s.slots, s.element("t")) for s in found.values()}
    return found if len(shapes) == 1 and next(iter(shapes))[0] <= MAX_SLOTS else {}


def _grid_stride_body(ctx: Context) -> ts.Node | None:
    """The kernel's grid-stride loop along x when its body is that loop (and declarations before it),
    with no return: every thread reaches the end, where the block's copy is merged."""
    m = ctx.model
    rest = [st for st in statements(ctx.kernel.body) if st.type != "declaration"]
    loop = next((lp for lp in m.loops if lp.depth == 0 and lp.grid_stride_axis == 0), None)
    if ctx.dims != 1 or loop is None or rest != [loop.node] or m.returns:
        return None
    return loop.node


def _wrapped(ctx: Context, extra: dict[tuple[int, int], str], head: tuple[str, ...], tail: tuple[str, ...]) -> str:
    """The kernel's own body (its grid-stride loop) between `head` and `tail`, the atomics redirected."""
    lines = [ln for st in statements(ctx.kernel.body)
             for ln in reindent(st, node_text(st, extra), "").split("\n")]
    return "\n".join(["{"] + ["    " + ln if ln else "" for ln in (*head, *lines, *tail)] + ["}"])


def _strided_grid(ctx: Context, per_thread: int, rule: Any) -> tuple[E.Expr, ...]:
    """A kernel that loops over its grid already: a grid written per block shrinks `per_thread` times;
    a fixed grid (`<<<1024, 256>>>`) stays, offered once (the first `per_thread`)."""
    try:
        return scale_grid(ctx, 0, E.Num(per_thread))
    except Refuse:
        if per_thread != rule.params["per_thread"][0]:
            raise Refuse("the kernel's grid is fixed: its grid-stride loop sets the work per thread") from None
        return ctx.launch.grid


def _spec_size(ctx: Context, name: str) -> int | None:
    if ctx.spec is None:
        return None
    buf = next((a for a in ctx.spec.args if isinstance(a, Buffer) and a.name == name), None)
    if buf is None or E.names(buf.count):
        return None
    return E.evaluate(buf.count, {})


def _sized_by_spec(ctx: Context, name: str) -> tuple[int, str]:
    """The largest count the spec gives `name` over its size sets, and that count in C over the
    kernel's parameters (`float32[C]` -> `C`); Refuse when the spec gives none so."""
    buf = ctx.spec.arg(name) if ctx.spec is not None else None
    params = sizes_as_parameters(ctx, buf.count) if isinstance(buf, Buffer) else None
    if params is None:
        raise Refuse(f"the size of {name} is neither a constant in the spec nor bounded by the index, "
                     "nor a count of the spec's sizes the kernel takes as parameters")
    try:
        largest = max(E.evaluate(buf.count, sizes) for _, sizes in ctx.spec.size_sets())
    except E.ExprError:
        raise Refuse(f"the spec's count of {name}, {buf.count}, does not evaluate at its sizes") from None
    return largest, to_c(buf.count, params)


def _fallback(targets: tuple[Target, ...], original: str) -> tuple[str, ...]:
    """Where a copy holds the spec's largest count rather than the array's own, a launch whose
    count is larger runs `original` (the body looped as the rewrite loops it, its global atomics
    kept: the smaller grid still covers every index; row-cache's branches as their loops) and leaves."""
    sized = [t for t in targets if t.count is not None]
    if not sized:
        return ()
    test = " || ".join(dict.fromkeys(f"{t.count} > {t.capacity}" for t in sized))
    return (f"if ({test}) {{", *original.split("\n")[1:-1], "    return;", "}")


def _as_written(ctx: Context) -> dict[tuple[int, int], str]:
    """The fallback's edits: row-cache's branches reduced to their loops as written (the analysis's
    `fit_branches`), so that the seldom-run copy does not hold the cached row's registers too (which
    raises the whole kernel's register count: 168 against 128 for a warp-per-row layer-norm backward)."""
    return {(n.start_byte, n.child_by_field_name("alternative").named_children[0].start_byte): ""
            for n in fit_branches(ctx.kernel.body)}


def _index_size(m: KernelModel, accesses: list[Any]) -> int | None:
    """The largest number of values the accesses' indices take (`v % C`, `v & M`, a byte read from
    memory: cuopt/source/bounded.py); None when one is not bounded so."""
    sizes = [index_count(m, a.indices[0]) for a in accesses]
    known = [s for s in sizes if s is not None]
    return max(known) if known and len(known) == len(sizes) else None


TRANSFORM = Privatize()
