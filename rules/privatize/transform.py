"""privatize: atomics into a small global array indexed by data (histograms, counters) go to a
per-block copy in shared memory, merged into global memory once per block.

The merge costs one atomic per entry per block, so the kernel also becomes a grid-stride loop
(see stride.py) along the launch's outermost axis (x in 1D, rows in 2D, planes in 3D) over a grid
about `per_thread` times smaller there. The array's size comes from the spec
(a constant element count) or from the index (`v % C`, `v & (C - 1)`)."""
from __future__ import annotations

from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, node_text
from cuopt.rewrite.transforms.common import fresh, per_block_grid, reindent, scale_grid, unparen
from cuopt.rewrite.transforms.stride import stride_loop
from cuopt.source.analysis import called, statements
from cuopt.source.bounded import index_count
from cuopt.source.ctypes import size_of
from cuopt.source.model import KernelModel
from cuopt.source.parse import operator_of
from cuopt.spec import expr as E
from cuopt.spec.model import Buffer, Launch

MAX_SHARED_BYTES = 32 * 1024
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


class Privatize:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        m = ctx.model
        if m.shared or m.barriers:
            raise Refuse("already uses shared memory or barriers")
        strided = _grid_stride_body(ctx)
        if strided is None:
            per_block_grid(ctx, ctx.dims - 1)  # refuses grids not written per block
        sites = []
        for name in sorted({a.array for a in m.global_accesses() if a.atomic}):
            op, size, calls = self._target(ctx, name)
            sites.append(Site(calls[0], f"atomics into {name}[{size}] from every thread; a per-block copy in "
                              "shared memory turns them into shared-memory atomics",
                              (name, op, size, calls, strided)))
        if not sites:
            raise Refuse("no atomics into a global array")
        return sites

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        per_thread = int(params["per_thread"])
        name, op, size, calls, strided = site.data
        param = next(p for p in ctx.kernel.params if p.name == name)
        copy, t = fresh(ctx, f"cuopt_{name}"), fresh(ctx, "cuopt_t")
        extra = {}
        for call in calls:
            amp = unparen(call.child_by_field_name("arguments").named_children[0])
            array = unparen(amp.child_by_field_name("argument")).child_by_field_name("argument")
            extra[(array.start_byte, array.end_byte)] = copy
        identity = _OPS[op][1]
        walk_ = f"for (int {t} = {_THREAD[ctx.dims]}; {t} < {size}; {t} += {_THREADS[ctx.dims]})"
        head = (f"__shared__ {param.base_type} {copy}[{size}];", f"{walk_} {copy}[{t}] = {identity};",
                "__syncthreads();")
        tail = ("__syncthreads();", f"{walk_} {{",
                f"    if ({copy}[{t}] != {identity}) {op}(&{name}[{t}], {copy}[{t}]);", "}")
        if strided is None:
            body = stride_loop(ctx, extra, ctx.dims - 1).render(head, tail)
            grid = scale_grid(ctx, ctx.dims - 1, E.Num(per_thread))
        else:
            body, grid = _wrapped(ctx, extra, head, tail), _strided_grid(ctx, per_thread, rule)
        return Rewritten(apply(ctx.source, [Edit.replace(ctx.kernel.body, body)]),
                         Launch(ctx.launch.block, grid, ctx.launch.shared),
                         f"a per-block copy of {name} in shared memory, about {per_thread} indices per thread"
                         if grid != ctx.launch.grid else f"a per-block copy of {name} in shared memory",
                         (param.base_type,))

    def _target(self, ctx: Context, name: str) -> tuple[str, int, list[ts.Node]]:
        """The atomic function, the array's element count, and the atomic calls into it."""
        m = ctx.model
        param = next((p for p in ctx.kernel.params if p.name == name), None)
        if param is None or param.pointer != 1 or name in m.escapes:
            raise Refuse(f"{name} is not a plain pointer parameter")
        calls, ops = [], set()
        for a in m.global_accesses(name):
            call = _atomic_call(a.node)
            if not a.atomic or call is None:
                raise Refuse(f"{name} is accessed other than by `atomicOp(&{name}[i], v);` (line {a.line})")
            calls.append(call)
            ops.add(called(call))
        if len(ops) != 1:
            raise Refuse(f"{name} is updated with {', '.join(sorted(ops))}: one atomic operation needed")
        op = ops.pop()
        if op not in _OPS or param.element not in _OPS[op][0]:
            raise Refuse(f"{op} on {param.element} is not privatized")
        size = _spec_size(ctx, name) or _index_size(m, m.global_accesses(name))
        if size is None:
            raise Refuse(f"the size of {name} is neither a constant in the spec nor bounded by the index")
        if size * (size_of(param.element) or 0) > MAX_SHARED_BYTES:
            raise Refuse(f"{name}[{size}] does not fit in {MAX_SHARED_BYTES // 1024} KB of shared memory")
        return op, size, calls


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


def _atomic_call(node: ts.Node) -> ts.Node | None:
    """The call for `atomicOp(&a[i], v);` (or `&(a[i])`) whose subscript is `node`, used as a statement."""
    amp = _outer(node).parent
    if amp is None or amp.type != "pointer_expression" or operator_of(amp) != "&":
        return None
    amp = _outer(amp)
    args = amp.parent
    call = args.parent if args is not None else None
    if call is None or call.type != "call_expression" or args.named_children[0] != amp:
        return None
    if call.parent is None or call.parent.type != "expression_statement":
        return None
    return call


def _outer(node: ts.Node) -> ts.Node:
    """`node` with the parentheses around it."""
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    return node


def _spec_size(ctx: Context, name: str) -> int | None:
    if ctx.spec is None:
        return None
    buf = next((a for a in ctx.spec.args if isinstance(a, Buffer) and a.name == name), None)
    if buf is None or E.names(buf.count):
        return None
    return E.evaluate(buf.count, {})


def _index_size(m: KernelModel, accesses: list[Any]) -> int | None:
    """The largest number of values the accesses' indices take (`v % C`, `v & M`, a byte read from
    memory: cuopt/source/bounded.py); None when one is not bounded so."""
    sizes = [index_count(m, a.indices[0]) for a in accesses]
    known = [s for s in sizes if s is not None]
    return max(known) if known and len(known) == len(sizes) else None


TRANSFORM = Privatize()
