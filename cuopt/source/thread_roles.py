"""Thread-index roles: for each axis, which of threadIdx, blockIdx, blockDim and gridDim the kernel
reads, and in what role (`element`: only in the global index blockIdx.a * blockDim.a + threadIdx.a;
`batch`: blockIdx.a alone, the same for a whole block, as `x + blockIdx.y * T * T` picks a slice;
`unused`: nothing of the axis; `other`: any other use). Two facts follow for the rules:

- threads (and blocks) that differ only along an axis the kernel does not read repeat each other's
  work: `dim3 block(32, 8)` over a kernel that reads only the x built-ins stores every element eight
  times. Where nothing lets such threads tell their work apart or add it up twice (no atomics,
  shuffles or votes, no shared memory, no element both read and written, no pointer handed to a
  call, no asm), the launch without them (`lean_launch`) computes the same outputs;
- a trailing grid axis read only as a batch index, over blocks one thread deep along it, is a batch
  of independent launches of the axes before it (`batch_axes`): a rule that changes only those
  axes works per batch slice and keeps the batch axis of the grid as it is."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import tree_sitter as ts

from cuopt.source.analysis import CROSS_THREAD_CALL, builtin_uses, global_accesses, global_index_nodes
from cuopt.source.parse import root_of, text, walk
from cuopt.spec import expr as E
from cuopt.spec.model import Launch

if TYPE_CHECKING:
    from cuopt.source.model import KernelModel

AXES = "xyz"
KINDS = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
_SAFE_SYNC = frozenset({"__syncthreads", "__syncwarp"})  # order memory, count nothing
_GROUPS = re.compile(r"\b(this_thread_block|this_grid|tiled_partition|coalesced_threads|thread_rank)\b")
_POSITION = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim|__shfl\w*|atomic\w*|__shared__|asm)\b")


@dataclass(frozen=True)
class ThreadRoles:
    """What a kernel reads of the built-ins along x, y and z, and whether threads that differ only
    along unread axes repeat each other's work."""

    reads: tuple[frozenset[str], frozenset[str], frozenset[str]]  # per axis: "threadIdx", "blockIdx", ...
    roles: tuple[str, str, str]  # per axis: "element", "batch", "unused" or "other"
    repeats: str | None  # None when such threads repeat each other's work exactly; else why not
    hidden: frozenset[str] = frozenset()  # built-ins ("blockIdx", ...) read where no axis can be told:
    # all of them for a built-in read whole or cooperative groups, else those a function it calls names

    def role(self, axis: int) -> str:
        return self.roles[axis]


def thread_roles(model: KernelModel) -> ThreadRoles:
    """The kernel's thread-index roles (see the module's docstring)."""
    body = model.kernel.body
    hidden, position = _hidden_builtins(model)
    whole = bool(hidden) or position
    reads: list[set[str]] = [set(), set(), set()]
    outside: list[set[str]] = [set(), set(), set()]  # built-ins read other than in a global index
    index_spans = global_index_nodes(model, body)
    for node, name in builtin_uses(body):
        kind, axis = name.split(".")
        a = AXES.index(axis)
        reads[a].add(kind)
        if not any(s <= node.start_byte and node.end_byte <= e for (s, e), ax in index_spans.items() if ax == a):
            outside[a].add(kind)
    roles = tuple(_role(reads[a], outside[a], whole) for a in range(3))
    return ThreadRoles(tuple(frozenset(r) for r in reads), roles, _why_not_repeated(model, whole),  # type: ignore[arg-type]
                       hidden)


def _role(reads: set[str], outside: set[str], whole: bool) -> str:
    if whole:
        return "other"
    if not reads:
        return "unused"
    if not outside:
        return "element"
    if reads == {"blockIdx"}:
        return "batch"
    return "other"


def _hidden_builtins(model: KernelModel) -> tuple[frozenset[str], bool]:
    """The built-ins the kernel reads where their axes cannot be told (every kind where it reads one
    whole, `dim3 t = threadIdx;`, or uses cooperative groups; else the kinds a function of its file
    that it calls names), and whether such a function names another thing of the thread's place
    (a shuffle, an atomic, shared memory, asm). Either way no axis's role is known."""
    body = model.kernel.body
    for n in walk(body):
        parent = n.parent
        if n.type == "identifier" and text(n) in KINDS and not (
                parent is not None and parent.type == "field_expression" and parent.child_by_field_name("argument") == n):
            return KINDS, False
    if _GROUPS.search(text(body)):
        return KINDS, False
    named = {m for f in _file_functions(model) for m in _POSITION.findall(text(f))}
    return frozenset(named & KINDS), bool(named - KINDS)


def _file_functions(model: KernelModel) -> list[ts.Node]:
    """The definitions in the kernel's file of the functions the kernel calls."""
    root = root_of(model.kernel.node)
    called = {c.split("<")[0].split("::")[-1].strip() for c in model.calls}
    out = []
    for node in walk(root):
        if node.type != "function_definition" or node == model.kernel.node:
            continue
        declarator = node.child_by_field_name("declarator")
        name = declarator.child_by_field_name("declarator") if declarator is not None else None
        if name is not None and text(name).split("::")[-1] in called:
            out.append(node)
    return out


def _why_not_repeated(model: KernelModel, whole: bool) -> str | None:
    """Why threads that differ only along axes the kernel does not read might not repeat each other's
    work exactly (dropping all but one of them could change the outputs); None when they do."""
    if whole:
        return "it reads the built-ins whole, through cooperative groups or in a function it calls"
    if model.atomics:
        return f"an atomic at line {model.atomics[0].start_point.row + 1} would run once per copy"
    if model.shared or model.shared_pointers:
        return "it uses shared memory"
    for node in walk(model.kernel.body):
        if node.type == "call_expression":
            fn = text(node.child_by_field_name("function"))
            if CROSS_THREAD_CALL.match(fn) and fn not in _SAFE_SYNC:
                return f"{fn} at line {node.start_point.row + 1} depends on which threads run"
        elif node.type in ("gnu_asm_expression", "asm_statement"):
            return f"inline asm at line {node.start_point.row + 1}"
    if model.escapes:
        return f"{sorted(model.escapes)[0]} is used other than by subscript"
    accesses = global_accesses(model)
    written = {model.aliases.get(a.array, a.array) for a in accesses if a.write}
    for a in accesses:
        name = model.aliases.get(a.array, a.array)
        if a.read and name in written:
            return f"{name} is read and written (line {a.line}): the copies would race"
    return None


def lean_launch(launch: Launch, roles: ThreadRoles) -> Launch:
    """`launch` without the threads and blocks that repeat each other's work: along y and z, one
    thread where the kernel reads neither threadIdx nor blockDim of the axis, one block where it
    reads nothing of it (unless the copies might not repeat, `ThreadRoles.repeats`); a grid written
    with `block.y` keeps its value there, so the x extent is the same. Trailing grid axes one block
    and one thread wide go too (`grid (g, 1)` is `grid (g)`). The launch itself where nothing goes."""
    block = list(launch.block3)
    grid = list(launch.grid) + [E.Num(1)] * (3 - len(launch.grid))
    kept: dict[str, E.Expr] = {}
    for axis in (1, 2) if roles.repeats is None else ():
        if not roles.reads[axis] & {"threadIdx", "blockDim"} and block[axis] > 1:
            kept[f"block.{AXES[axis]}"] = E.Num(block[axis])
            block[axis] = 1
        if not roles.reads[axis]:
            grid[axis] = E.Num(1)
    grid = [E.substitute(g, kept) for g in grid]
    while len(grid) > 1 and grid[-1] == E.Num(1) and (len(grid) > len(launch.grid) or block[len(grid) - 1] == 1):
        grid.pop()
    while kept and len(block) > 1 and block[-1] == 1:
        block.pop()
    lean = Launch(tuple(block) if kept else launch.block, tuple(grid), E.substitute(launch.shared, kept))
    return launch if lean == launch else lean


def batch_axes(launch: Launch, roles: ThreadRoles) -> tuple[int, ...]:
    """The launch's trailing grid axes (never x) that are batches of independent launches of the axes
    before them: read only as blockIdx (a per-block constant), over blocks one thread deep along
    them (or an axis one block and one thread wide that it does not read, between such an axis and
    the others: `grid (g, 1, B)`). A rule that changes only the axes before them keeps these as they are."""
    out: list[int] = []
    for axis in range(len(launch.grid) - 1, 0, -1):
        unit = roles.role(axis) == "unused" and launch.grid[axis] == E.Num(1) and bool(out)
        if roles.role(axis) != "batch" and not unit or launch.block3[axis] != 1:
            break
        out.insert(0, axis)
    return tuple(out)


def describe_lean(given: Launch, lean: Launch, roles: ThreadRoles) -> str:
    """What `lean_launch` dropped, for a rewrite's summary: `block 32x8 as 32: the y copies repeat
    each other's work (no threadIdx.y or blockIdx.y read)`."""
    parts = []
    if given.block != lean.block:
        parts.append(f"block {'x'.join(map(str, given.block))} as {'x'.join(map(str, lean.block))}")
    if given.grid != lean.grid:
        parts.append(f"grid ({', '.join(map(str, given.grid))}) as ({', '.join(map(str, lean.grid))})")
    axes = [a for a in (1, 2) if given.block3[a] != lean.block3[a] or
            len(given.grid) > a and len(lean.grid) <= a and given.grid[a] != E.Num(1)]
    if not axes:
        return " and ".join(parts)
    unread = " or ".join(f"{k}.{AXES[a]}" for a in axes for k in ("threadIdx", "blockIdx") if k not in roles.reads[a])
    return f"{' and '.join(parts)}: the {'/'.join(AXES[a] for a in axes)} copies repeat each other's work (no {unread} read)"
