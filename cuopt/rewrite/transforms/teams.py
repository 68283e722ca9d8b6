"""Kernels whose teams of lanes each take one row (row-parallel's warp per row): the grid is
`cdiv(E, block.x // W)`, the row `(blockIdx.x * blockDim.x + threadIdx.x) / W` and the lane
`threadIdx.x % W`. Their body becomes a loop over every thread of the original grid,
`gridDim.x * blockDim.x` apart, so a grid `per_thread` times smaller does the same work: the
stride is a multiple of W, so a warp's lanes keep their lane and move from row to row together
(their shuffles stay whole).

Kernels of a block per row (`grid (N)`, the row `blockIdx.x`, a block-wide reduction through shared
memory and barriers) loop over rows instead: `for (r = blockIdx.x; r < N; r += gridDim.x)`, each
iteration starting at a barrier (the rows share the block's shared memory), so a grid `per_thread`
times smaller does the same work; every `return` must be the whole block's, and becomes `continue`."""
from __future__ import annotations

from dataclasses import dataclass

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse
from cuopt.rewrite.transforms.common import index_replacements, reindent, sizes_as_parameters
from cuopt.source.analysis import (
    builtin_uses, enclosing_conditions, global_index_nodes, return_in_loop, statements, varies_in_block)
from cuopt.source.edits import node_text
from cuopt.source.launches import to_c
from cuopt.source.parse import operator_of, text, unparen
from cuopt.spec import expr as E



# the loop moves a row's work to another block or thread: a block's place read where it cannot be replaced
HIDDEN = "it reads blockIdx or gridDim whole, through cooperative groups or in a function it calls"
_PLACE = frozenset({"blockIdx", "gridDim"})


@dataclass(frozen=True)
class TeamRows:
    extent: E.Expr  # E of the grid cdiv(E, block.x // width)
    width: int  # W: the lanes of a row's team
    threads: str  # the original grid's thread count, in C over the kernel's parameters
    ranges: dict[tuple[int, int], int]  # the global-index occurrences


def team_rows(ctx: Context) -> TeamRows:
    """The kernel as rows of teams; Refuse when it is not one this module can loop."""
    grid = ctx.launch.grid
    per = grid[0].args[1] if len(grid) == 1 and isinstance(grid[0], E.Call) and grid[0].fn == "cdiv" else None
    if ctx.dims != 1 or not (isinstance(per, E.Bin) and per.op == "//" and per.left == E.Name("block.x")
                             and isinstance(per.right, E.Num)):
        raise Refuse(f"grid {', '.join(map(str, grid))} is neither cdiv(<extent>, block.x) nor "
                     "cdiv(<extent>, block.x // W) of a team per row")
    width = per.right.value
    if width not in (2, 4, 8, 16, 32) or ctx.launch.block[0] % width:
        raise Refuse(f"teams of {width} lanes in a block of {ctx.launch.block[0]}")
    if ctx.model.roles.hidden & _PLACE:
        raise Refuse(HIDDEN)
    body = ctx.kernel.body
    ranges = global_index_nodes(ctx.model, body)
    for n, name in builtin_uses(body):
        inside = any(s <= n.start_byte and n.end_byte <= e for (s, e) in ranges)
        if not inside and not (name == "threadIdx.x" and _lane(n, width)):
            raise Refuse(f"{name} is used other than in the row's blockIdx.x * blockDim.x + threadIdx.x or "
                         f"the lane's threadIdx.x % {width} (line {n.start_point.row + 1})")
    inner = return_in_loop(ctx.model, body)
    if inner is not None:
        raise Refuse(f"return inside a loop (line {inner.start_point.row + 1})")
    extent = grid[0].args[0]
    names = sizes_as_parameters(ctx, extent)
    if names is None:
        raise Refuse(f"the grid's extent {extent} is not a count of the kernel's parameters")
    blocks = to_c(E.Call("cdiv", (extent, per)), {**names, "block.x": "blockDim.x"})
    return TeamRows(extent, width, f"(long long){blocks} * blockDim.x", ranges)


def team_loop(ctx: Context, team: TeamRows, extra: dict[tuple[int, int], str], head: tuple[str, ...],
              tail: tuple[str, ...], name: str) -> str:
    """The kernel body: `head`, the loop over the original grid's threads (index `name`; `extra`
    replaces more byte ranges, `return` becomes `continue`), `tail`."""
    header = (f"for (long long {name} = (long long)blockIdx.x * blockDim.x + threadIdx.x; {name} < {team.threads}; "
              f"{name} += (long long)gridDim.x * blockDim.x)")
    return _looped(ctx, {**index_replacements(ctx, team.ranges, {0: name}), **extra}, header, (), head, tail)


def _looped(ctx: Context, repl: dict[tuple[int, int], str], header: str, first: tuple[str, ...],
            head: tuple[str, ...], tail: tuple[str, ...]) -> str:
    """The kernel body: `head`, then `header` over `first` and the body's statements (`repl`
    applied, every `return` as `continue`, a loop's `#pragma unroll` kept), then `tail`."""
    repl = {**repl, **{(r.start_byte, r.end_byte): "continue;" for r in ctx.model.returns}}
    lines = [ln for st in statements(ctx.kernel.body)
             for ln in (*_pragma(ctx, st), *reindent(st, node_text(st, repl), "").split("\n"))]
    loop = [f"{header} {{", *("    " + ln if ln else "" for ln in (*first, *lines)), "}"]
    return "\n".join(["{"] + ["    " + ln if ln else "" for ln in (*head, *loop, *tail)] + ["}"])


def _pragma(ctx: Context, statement: ts.Node) -> tuple[str, ...]:
    """The `#pragma unroll` written right before a loop statement (statements() leaves it out)."""
    index = ctx.model.loop_of(statement)
    pragma = ctx.model.loops[index].pragma if index is not None else None
    return (ctx.text(pragma).strip(),) if pragma is not None else ()


def grid_of(team: TeamRows, per_thread: int) -> tuple[E.Expr, ...]:
    """The grid about `per_thread` times smaller: cdiv(E, block.x // W * per_thread)."""
    per = E.Bin("//", E.Name("block.x"), E.Num(team.width))
    return (E.Call("cdiv", (team.extent, E.Bin("*", per, E.Num(per_thread)))),)


def _lane(node: ts.Node, width: int) -> bool:
    """Whether `node` (threadIdx.x) is the left side of `% width` or `& (width - 1)`."""
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        node, parent = parent, parent.parent
    if parent is None or parent.type != "binary_expression" or parent.child_by_field_name("left") != node:
        return False
    right = unparen(parent.child_by_field_name("right"))
    wanted = {"%": width, "&": width - 1}.get(operator_of(parent))
    return wanted is not None and right.type == "number_literal" and text(right).rstrip("uU") == str(wanted)


@dataclass(frozen=True)
class BlockRows:
    extent: E.Expr  # the grid, one block per row: N
    rows: str  # N in C over the kernel's parameters


def block_rows(ctx: Context) -> BlockRows:
    """The kernel as a block per row; Refuse when it is not one `block_loop` can loop."""
    grid = ctx.launch.grid
    names = sizes_as_parameters(ctx, grid[0]) if ctx.dims == 1 and len(grid) == 1 else None
    if names is None or isinstance(grid[0], E.Call):
        raise Refuse(f"grid {', '.join(map(str, grid))} is not a count of rows, one block each")
    body = ctx.kernel.body
    if ctx.model.roles.hidden & _PLACE:
        raise Refuse(HIDDEN)
    for n, name in builtin_uses(body):
        if name not in ("blockIdx.x", "threadIdx.x", "blockDim.x"):
            raise Refuse(f"a block per row that reads {name} (line {n.start_point.row + 1})")
    inner = return_in_loop(ctx.model, body)
    if inner is not None:
        raise Refuse(f"return inside a loop (line {inner.start_point.row + 1})")
    for r in ctx.model.returns:
        test = next((c for c in enclosing_conditions(r, body) if varies_in_block(ctx.model, c)), None)
        if test is not None:
            raise Refuse(f"the return at line {r.start_point.row + 1} depends on the thread ({text(test)}): "
                         "not the whole block's")
    return BlockRows(grid[0], to_c(grid[0], names))


def block_loop(ctx: Context, rows: BlockRows, extra: dict[tuple[int, int], str], head: tuple[str, ...],
               tail: tuple[str, ...], name: str) -> str:
    """The kernel body: `head`, the loop over the rows (`name`, for blockIdx.x; `extra` replaces
    more byte ranges, `return` becomes `continue`), each row from a barrier, `tail`."""
    repl = {(n.start_byte, n.end_byte): name for n, b in builtin_uses(ctx.kernel.body) if b == "blockIdx.x"}
    header = f"for (int {name} = blockIdx.x; {name} < {rows.rows}; {name} += gridDim.x)"
    return _looped(ctx, {**repl, **extra}, header, ("__syncthreads();",), head, tail)


def block_grid(rows: BlockRows, per_thread: int) -> tuple[E.Expr, ...]:
    """The grid about `per_thread` times smaller: cdiv(N, per_thread)."""
    return (E.Call("cdiv", (rows.extent, E.Num(per_thread))),)
