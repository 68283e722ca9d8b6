"""Helpers shared by the Python transforms: global-index occurrences renamed, grid expressions,
fresh names, conditions as C text, the element types a rewrite may read. What they read about a
kernel (its shape, guards, index occurrences) is in cuopt/source/analysis.py."""
from __future__ import annotations

import re
from collections.abc import Collection

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse
from cuopt.source.analysis import bound_of, builtin_uses, global_accesses, global_index_nodes
from cuopt.source.ctypes import is_integer, is_signed_integer, size_of
from cuopt.source.outparams import assigned_outside, is_declared_name
from cuopt.source.parse import assigned_target, node_text, operator_of, reindent, text, unparen, walk
from cuopt.spec import expr as E
from cuopt.spec.model import Scalar

AXES = "xyz"
SHARED_BYTES = 48 * 1024  # static shared memory of a block
TILE_ELEMENTS = ("float", "double", "int", "unsigned int", "unsigned")  # what a tile in shared memory holds
_FLIP = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_NAME = re.compile(r"(?<![\w.])(?<!->)[A-Za-z_]\w*")  # an identifier, not a member


def render_condition(node: ts.Node, negate: bool, replacements: dict[tuple[int, int], str]) -> str:
    """A conjunct as C text, with the negation folded into a comparison when possible."""
    if not negate:
        return node_text(node, replacements)
    if node.type == "binary_expression":
        op = operator_of(node)
        if op in _FLIP:
            left = node_text(node.child_by_field_name("left"), replacements)
            right = node_text(node.child_by_field_name("right"), replacements)
            return f"{left} {_FLIP[op]} {right}"
    return f"!({node_text(node, replacements)})"


def indent_rest(code: str, indent: str) -> str:
    """`code` with every line after the first indented by `indent` (empty lines stay empty), for
    text that replaces a node whose first line is already indented."""
    lines = code.split("\n")
    return "\n".join([lines[0]] + [indent + ln if ln else "" for ln in lines[1:]])


def index_replacements(ctx: Context, ranges: dict[tuple[int, int], int], axes: dict[int, str]
                       ) -> dict[tuple[int, int], str]:
    """Replace global-index occurrences of `axes` by new names, except those written with local
    variables only (`i`, `i + (0)`): the transform re-declares those from the new index, and the
    occurrence keeps its type (an `int` stays signed next to `- 1`)."""
    out = {}
    for (s, e), axis in ranges.items():
        if axis in axes and not set(_NAME.findall(ctx.source[s:e].decode())) <= ctx.model.locals.keys():
            out[(s, e)] = axes[axis]
    return out


def wide_cast(ctx: Context, span: tuple[int, int]) -> str | None:
    """The 64-bit integer type a global-index occurrence is computed in, as its cast writes it
    (`blockIdx.x * (int64_t)blockDim.x + threadIdx.x`, `(size_t)blockIdx.x * ...`); None when it
    has no such cast (it computes in 32 bits, as the row does)."""
    wide: dict[str, str] = {}
    for n in walk(ctx.kernel.body):
        if n.type != "cast_expression" or not (span[0] <= n.start_byte and n.end_byte <= span[1]):
            continue
        written = text(n.child_by_field_name("type"))
        resolved = ctx.kernel.resolve(written)
        if not is_integer(resolved):
            raise Refuse(f"the global index is cast to {written}, not an integer type (line {n.start_point.row + 1})")
        if size_of(resolved) == 8:
            wide.setdefault(is_signed_integer(resolved), written)
    if len(wide) > 1:
        raise Refuse(f"the global index is cast to several 64-bit types: {', '.join(wide.values())}")
    return next(iter(wide.values()), None)


def index_type(ctx: Context, ranges: dict[tuple[int, int], int], axis: int) -> str | None:
    """The 64-bit type the global index along `axis` is computed in where the kernel casts it
    (`(size_t)blockIdx.x * blockDim.x + threadIdx.x`): a rewrite that computes new indices along it
    computes them in that type too. None when no occurrence is cast to 64 bits."""
    types = {wide_cast(ctx, span) for span, a in ranges.items() if a == axis} - {None}
    if len(types) > 1:
        raise Refuse(f"the global index is cast to several 64-bit types: {', '.join(sorted(types))}")
    return next(iter(types), None)


def require_index_only_builtins(ctx: Context, root: ts.Node, axes: set[int]) -> dict[tuple[int, int], int]:
    """Global-index occurrences under `root`; refuse if thread/block builtins of `axes` appear other
    than inside them (the transform could not remap the thread's position)."""
    nodes = global_index_nodes(ctx.model, root)
    for n, name in builtin_uses(root):
        axis = AXES.index(name[-1])
        if axis not in axes and not name.startswith("gridDim"):
            continue
        if not any(s <= n.start_byte and n.end_byte <= e for (s, e) in nodes):
            raise Refuse(f"{name} is used other than in blockIdx.{name[-1]} * blockDim.{name[-1]} + "
                         f"threadIdx.{name[-1]} (line {n.start_point.row + 1})")
    return nodes


def per_block_grid(ctx: Context, axis: int) -> tuple[E.Expr, E.Expr]:
    """For grid[axis] = cdiv(E, block.a): (E, block.a); also for cdiv(E, TILE) where TILE is the
    block's size along the axis at the spec's sizes (a grid the host writes with the constant the
    kernel takes for blockDim), since the rewrite writes its grid with block.a. A grid rounded down,
    E // block.a (or E // TILE), over a kernel with no guard along the axis runs the positions
    [0, E // block.a * block.a) and no others: that is its extent. Refuse otherwise."""
    if axis >= len(ctx.launch.grid):
        raise no_axis(ctx, axis)
    g = ctx.launch.grid[axis]
    name = E.Name(f"block.{AXES[axis]}")
    if isinstance(g, E.Call) and g.fn == "cdiv" and (g.args[1] == name or _is_block(ctx, axis, g.args[1])):
        return g.args[0], name
    if isinstance(g, E.Bin) and g.op == "//" and (g.right == name or _is_block(ctx, axis, g.right)) \
            and bound_of(ctx.model, axis) is None:
        return E.Bin("*", g, g.right), name
    raise Refuse(f"grid[{axis}] is {g}, not cdiv(<extent>, block.{AXES[axis]})")


def no_axis(ctx: Context, axis: int) -> Refuse:
    """The refusal for a block that spreads threads along an axis the grid lacks; where the kernel
    reads nothing along it, also why those threads were not dropped (cuopt/source/thread_roles.py)."""
    roles = ctx.model.roles
    why = f"the grid has no {AXES[axis]} dimension"
    if roles.role(axis) == "unused" and roles.repeats is not None:
        why += (f" (the kernel reads nothing along {AXES[axis]}, but its {AXES[axis]} threads may not repeat "
                f"each other's work: {roles.repeats})")
    return Refuse(why)


def _is_block(ctx: Context, axis: int, divisor: E.Expr) -> bool:
    """Whether `divisor` is a constant equal to the block's size along `axis` (a literal, or sizes
    of the spec: `TILE`)."""
    sizes = dict(ctx.spec.sizes) if ctx.spec is not None else {}
    if E.names(divisor) - set(sizes):
        return False
    try:
        return E.evaluate(divisor, sizes) == ctx.launch.block3[axis]
    except E.ExprError:
        return False


def scales_with_block(ctx: Context, axis: int) -> None:
    """Refuse unless grid[axis] is cdiv(E, block.a) or cdiv(E, block.a * N), N a constant (a grid
    written per block after a rule that gives each thread N positions)."""
    if axis >= len(ctx.launch.grid):
        raise no_axis(ctx, axis)
    g = ctx.launch.grid[axis]
    name = E.Name(f"block.{AXES[axis]}")
    if isinstance(g, E.Call) and g.fn == "cdiv":
        per = g.args[1]
        if per == name or (isinstance(per, E.Bin) and per.op == "*" and
                           {type(per.left), type(per.right)} == {E.Name, E.Num} and name in (per.left, per.right)):
            return
    raise Refuse(f"grid[{axis}] is {g}, not cdiv(<extent>, block.{AXES[axis]}) or cdiv(<extent>, "
                 f"block.{AXES[axis]} * N)")


def require_plain_1d(ctx: Context, why: str, atomics: bool = False) -> None:
    """A 1D launch (or a batch of them along the grid's other axes, `Context.batch_axes`) whose grid
    is written per block, without shared memory, barriers or (unless `atomics`: the caller checks
    them) atomics."""
    if ctx.element_dims != 1:
        raise Refuse(f"only 1D launches ({why})")
    per_block_grid(ctx, 0)
    if ctx.model.shared or ctx.model.barriers or ctx.model.atomics and not atomics:
        raise Refuse("uses shared memory, barriers or atomics")


def scale_grid(ctx: Context, axis: int, factor: E.Expr) -> tuple[E.Expr, ...]:
    """The grid with grid[axis] = cdiv(E, block.a * factor)."""
    extent, name = per_block_grid(ctx, axis)
    grid = list(ctx.launch.grid)
    grid[axis] = E.Call("cdiv", (extent, E.Bin("*", name, factor)))
    return tuple(grid)


def fixed_grid(ctx: Context, tiles: dict[int, int]) -> tuple[E.Expr, ...]:
    """The grid with grid[axis] = cdiv(E, tile) for each axis in `tiles`; a grid already written
    per tile with a constant (`cdiv(w, TILE)`, `w // TILE` with TILE = tile) stays as written."""
    grid = list(ctx.launch.grid)
    for axis, tile in tiles.items():
        extent, _ = per_block_grid(ctx, axis)
        g = grid[axis]
        divisor = g.args[1] if isinstance(g, E.Call) else g.right if isinstance(g, E.Bin) else None
        if divisor is None or _fixed_value(ctx, divisor) != tile:
            grid[axis] = E.Call("cdiv", (extent, E.Num(tile)))
    return tuple(grid)


def _fixed_value(ctx: Context, e: E.Expr) -> int | None:
    """`e`'s value where it is literals and integer macros that `-D` cannot change (`#define TILE
    32`), the same at every size; None otherwise (block.x, a size, an `#ifndef` macro)."""
    values = {name: ctx.macros.integer(name) for name in E.names(e)}
    if any(v is None or ctx.macros.overridable(name) for name, v in values.items()):
        return None
    try:
        return E.evaluate(e, values)
    except E.ExprError:
        return None


def fresh(ctx: Context, name: str, avoid: Collection[str] = ()) -> str:
    """`name`, or `name_2`... if the source already uses it or it is among `avoid` (names the
    rewrite gave already)."""
    taken = ctx.source.decode()
    if name not in taken and name not in avoid:
        return name
    i = 2
    while f"{name}_{i}" in taken or f"{name}_{i}" in avoid:
        i += 1
    return f"{name}_{i}"


def scoped(code: list[str], indent: str) -> list[str]:
    """One statement as is; several in braces of their own."""
    if len(code) == 1:
        return [indent + code[0]]
    return [indent + "{"] + [indent + "    " + ln if ln else "" for ln in code] + [indent + "}"]


def uses(code: str, name: str) -> bool:
    """Whether C code mentions the identifier `name` (not as a member)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}\b", code) is not None


def used_declarations(ctx: Context, prelude: list[ts.Node], repl: dict[tuple[int, int], str],
                      code: str) -> list[str]:
    """The prelude declarations (edited by `repl`) that `code`, or a kept declaration, uses."""
    kept: list[str] = []
    for st in reversed(prelude):
        names = [ctx.text(d.child_by_field_name("declarator")) for d in st.children_by_field_name("declarator")
                 if d.type == "init_declarator"]
        used = "\n".join([code] + kept)
        if any(re.search(rf"(?<![\w.]){re.escape(n)}\b", used) for n in names):
            kept.insert(0, reindent(st, node_text(st, repl), ""))
    return kept


def combined_after(ctx: Context, loop: ts.Node, name: str) -> bool:
    """Whether a thread's partial `name`, accumulated in `loop`, is combined with the other threads'
    later in the loop's block: a shuffle, an atomic, or a store to `shared[threadIdx.x]` (a tree).
    A rewrite that changes which elements each thread sees keeps the combined result only then."""
    scope = loop.parent
    after = ctx.source[loop.end_byte:scope.end_byte if scope is not None else loop.end_byte].decode()
    n = re.escape(name)
    return re.search(rf"__shfl_(xor|down)_sync\([^;]*\b{n}\b|atomic\w*\([^;]*\b{n}\b"
                     rf"|\[\s*threadIdx\.x\s*\]\s*=\s*{n}\s*;", after) is not None


def written_types(ctx: Context, arrays: list[str]) -> tuple[str, ...]:
    """The element types of pointer parameters (or local pointers into them) as the kernel writes
    them (`T`): what a rewrite that spells `read_only_element`'s types pins (`Rewritten.pins`)."""
    m = ctx.model
    return tuple(m.pointer_params[m.aliases.get(a, a)].base_type for a in arrays)


def read_only_element(ctx: Context, array: str, elements: tuple[str, ...]) -> str:
    """The element type of `array`, a pointer parameter (or a local pointer into one) to one of
    `elements` that the kernel only reads (a template's `T` as its instantiation's type: a rewrite that
    spells it pins `T`, see `Rewritten.pins`); Refuse otherwise."""
    m = ctx.model
    target = m.aliases.get(array, array)
    param = m.pointer_params.get(target)
    element = getattr(param, "element", "")
    if param is None or getattr(param, "pointer", 0) != 1 or element not in elements:
        raise Refuse(f"{array} is not a pointer to a plain number type")
    names = {target} | {a for a, p in m.aliases.items() if p == target}
    if any(a.write and a.array in names for a in global_accesses(ctx.model)) or _escapes(ctx, names):
        raise Refuse(f"{target} is written in the kernel, or passed to a call or repointed")
    return element


def _escapes(ctx: Context, names: set[str]) -> bool:
    """Whether one of the pointers is passed to a call or assigned."""
    for n in walk(ctx.kernel.body):
        if n.type == "call_expression":
            args = n.child_by_field_name("arguments")
            if any(a.type == "identifier" and text(a) in names for a in (args.named_children if args else [])):
                return True
        elif assigned_target(n) in names:
            return True
    return False


def size_parameters(ctx: Context, expr: E.Expr) -> dict[str, str | None]:
    """For each size `expr` names, the kernel parameter the spec passes it to (`C = "C"`), a plain
    number the kernel never changes, so C code can compute `expr` at run time; None for a size
    that is no such parameter (every one, without a spec)."""
    changed = set(assigned_outside(ctx.kernel.body)) | ctx.model.escapes
    out: dict[str, str | None] = {}
    for size in E.names(expr):
        args = ctx.spec.args if ctx.spec is not None else ()
        param = next((a.name for a in args if isinstance(a, Scalar) and a.value == E.Name(size)), None)
        p = ctx.kernel.param(param) if param is not None else None
        out[size] = None if p is None or p.pointer or param in changed else param
    return out


def sizes_as_parameters(ctx: Context, expr: E.Expr) -> dict[str, str] | None:
    """`size_parameters` where every size is such a parameter, else None."""
    found = size_parameters(ctx, expr)
    return None if None in found.values() else {k: v for k, v in found.items() if v is not None}
