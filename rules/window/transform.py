"""window: a sliding-window loop (`acc += x[i + j] * w[j]`, a 1D convolution or stencil) computes
`outputs` consecutive outputs per thread, the window of `x` held in registers.

One thread per output reads `x[i + j]` for every tap j: each element of x is loaded once per tap,
and each load is a warp-wide instruction. With `outputs = R` consecutive outputs per thread, the
thread keeps `x[i0 + j .. i0 + j + R - 1]` in registers and slides it four taps at a time with
one 4-wide vector load, so R outputs cost one vector load per four taps instead of 4R scalar
loads; reads that do not depend on the output (the weights) are shared by the R outputs.

The kernel is `prelude; if (guard) { PRE; for (int j = A; j < B; ++j) BODY; POST }` (or the
early-return form), with a global index i along x; the window reads `x[i + j + c]`, c the same for
a thread's outputs (`-r`, `-Mask_Width / 2`, the row `y * w` of a 2D launch). PRE declares the
per-output values the loop accumulates into (they become arrays of R); BODY assigns only those
and stores nothing. A fast path runs when all R outputs pass the guard, the window array is
aligned for vector loads and A + c is a multiple of 4 (checked at run time; where the spec's sizes
put A + c off a multiple of 4, the window is loaded four scalars at a time and needs neither);
otherwise each of the R outputs runs the original code. The last taps, fewer than four, also read the window, extended by up to three scalar
loads. The fast path reads only elements the original reads: some read of `x[i + j]` runs at every
tap, under no condition (`if`, `?:`, `&&`, `||`, an inner loop), other reads keep their
conditions, and the last vector load of the loop is split where its fourth element lies past the
window. The one condition taken is a "same" convolution's bounds check, `if (i + j >= 0 && i + j
< n)` around the tap: a conjunction of signed comparisons, each affine in the tap, so it holds at
every tap where it holds at the first and the last. The fast path then also asks that it hold at
both ends for every output (the blocks at the array's ends fall back), and drops it from the taps.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site, poly_value
from cuopt.source.edits import node_text
from cuopt.rewrite.transforms.common import (
    SHARED_BYTES, assigned_outside, fresh, is_declared_name, per_block_grid, read_only_element,
    require_index_only_builtins, used_declarations, uses, written_types)
from cuopt.rewrite.transforms.outputs import Outputs, guarded_shape, rewritten
from cuopt.rewrite.transforms.vectors import vector_type
from cuopt.source.affine import BUILTINS, Poly, global_index
from cuopt.source.analysis import (Shape, assignment, called, condition, conditional, cross_thread, global_accesses,
                                   mentions, read_expression)
from cuopt.source.ctypes import is_signed_integer
from cuopt.source.model import fold_macros
from cuopt.source.parse import assigned, declared_names, operator_of, split_condition, text, unparen, walk, within

_ELEMENTS = ("float", "int", "unsigned int", "unsigned")  # 4 bytes: a window step is one 4-wide load
STAGES = ("registers", "shared")
_JUMPS = ("break_statement", "continue_statement", "goto_statement", "return_statement")


@dataclass(frozen=True)
class Store:
    """POST as one store `y[i + c] = value;` of the output's own element."""
    array: str
    element: str
    target: ts.Node  # y[i + c]
    value: ts.Node
    offset: Poly  # c


@dataclass(frozen=True)
class Clamp:
    """`max(value, bound)` (op ">=") or `min(value, bound)` (op "<="): the identity where `value op bound`."""
    value: ts.Node
    op: str
    bound: ts.Node


@dataclass(frozen=True)
class Plan:
    shape: Shape
    loop: ts.Node
    var: str
    var_type: str
    start: str
    bound: str  # exclusive
    array: str
    offset: Poly  # the window reads x[i + j + offset], offset the same for a thread's outputs and every tap
    element: str
    reads: tuple[ts.Node, ...]  # the window reads `x[i + j]` (or `__ldg(&x[i + j])`) in the loop
    pre: tuple[ts.Node, ...]
    post: tuple[ts.Node, ...]
    store: Store | None  # POST as `y[i + c] = value;`
    reach: ts.Node | None  # the `if` around the window reads whose condition the fast path checks at both ends
    clamps: tuple[Clamp, ...]  # clamps of the window's index (`min(max(i + j, 0), n - 1)`), inner first
    per_output: dict[str, str]  # value declared in PRE -> its type
    ranges: dict[tuple[int, int], int]  # global-index occurrences


class Window:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        plan = _plan(ctx)
        return [Site(plan.loop, f"the loop at line {plan.loop.start_point.row + 1} reads {plan.array}[i + "
                     f"{plan.var}]: neighbouring outputs load the same elements", plan)]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        outputs = int(params["outputs"])
        if outputs <= 0 or outputs % 4:
            raise Refuse(f"outputs {outputs}: expected a multiple of 4")
        stage = params.get("stage", "registers")
        if stage not in STAGES:
            raise Refuse(f"stage {stage!r}: expected one of {', '.join(STAGES)}")
        plan: Plan = site.data
        taps, aligned = _check_sizes(ctx, plan)
        if stage == "shared" and ctx.dims != 1:
            raise Refuse("a 2D or 3D launch: the shared window is a 1D block's")
        if stage == "shared" and not aligned:
            raise Refuse("the window starts off a multiple of 4 at the spec's sizes: no aligned loads into the tile")
        tile = _tile(ctx, outputs, taps) if stage == "shared" else None
        where = f"a block's window of {plan.array} in shared memory" if tile else \
            f"{plan.array}'s window in registers" + ("" if aligned else " (scalar loads: the taps start off a multiple of 4)")
        pins = written_types(ctx, [plan.array] + ([plan.store.array] if plan.store else []))
        return rewritten(ctx, 0, outputs, _code(ctx, plan, outputs, tile, aligned),
                         f"{outputs} consecutive outputs per thread, {where}", pins)


# -- analysis ---------------------------------------------------------------------------------
def _plan(ctx: Context) -> Plan:
    per_block_grid(ctx, 0)
    if ctx.model.shared or ctx.model.barriers or ctx.model.atomics:
        raise Refuse("uses shared memory, barriers or atomics")
    body = ctx.kernel.body
    ranges = require_index_only_builtins(ctx, body, {0})
    sh = guarded_shape(ctx, 0)
    loops = [s for s in sh.body if s.type in ("for_statement", "while_statement", "do_statement")]
    if len(loops) != 1 or loops[0].type != "for_statement":
        raise Refuse("the guarded block does not hold exactly one loop, a for loop")
    loop = loops[0]
    at = sh.body.index(loop)
    pre, post = sh.body[:at], sh.body[at + 1:]
    var, var_type, start, bound = _counter(ctx, loop)
    per_output = _per_output(pre)
    reads, array, offset, clamps = _window_reads(ctx, loop, var)
    element = read_only_element(ctx, array, _ELEMENTS)
    loop_body = loop.child_by_field_name("body")
    assert loop_body is not None
    every_time = any(not conditional(r, loop_body, loops=True) for r in reads)
    reach = None if every_time else _reach(ctx, loop, var, reads, array)
    for n in walk(loop_body):
        if n.type in _JUMPS:
            raise Refuse(f"{n.type.split('_')[0]} in the loop at line {loop.start_point.row + 1}")
        if cross_thread(n):
            raise Refuse(f"the loop at line {loop.start_point.row + 1} calls {called(n)}")
        target = assigned(n)
        if target is not None and target.type != "identifier":
            raise Refuse(f"the loop at line {loop.start_point.row + 1} stores {text(target)}")
    for name in assigned_outside(loop_body):
        if name not in per_output:
            raise Refuse(f"the loop at line {loop.start_point.row + 1} assigns {name}, not a value declared for "
                         f"each output before it")
    for st in post:
        for n in walk(st):
            if n.type in _JUMPS:
                raise Refuse(f"{n.type.split('_')[0]} after the loop (line {n.start_point.row + 1})")
    for part in (start, bound):
        used = set(re.findall(r"[A-Za-z_]\w*", part))
        if used & set(per_output) or any(b in part for b in BUILTINS):
            raise Refuse(f"the loop's range `{part}` depends on the output")
    plan = Plan(sh, loop, var, var_type, start, bound, array, offset, element, tuple(reads), tuple(pre), tuple(post),
                _store(ctx, post), reach, clamps, per_output, ranges)
    anchor = _anchor(plan)
    steps = _steps(loop)
    for before in steps[:steps.index(anchor)] if anchor is not None else []:
        if not _plain(before):
            raise Refuse(f"line {before.start_point.row + 1}, before the checked taps of the loop at line "
                         f"{loop.start_point.row + 1}, is not a plain declaration")
    return plan


def _counter(ctx: Context, loop: ts.Node) -> tuple[str, str, str, str]:
    """(counter, its type, start, exclusive bound) of `for (T j = A; j < B (or <= B); ++j)`."""
    line = loop.start_point.row + 1
    lp = ctx.model.loops[ctx.model.loop_of(loop)]
    if not lp.counter_type or lp.var is None or lp.step != 1 or lp.cmp not in ("<", "<="):
        raise Refuse(f"the loop at line {line} is not `for (int j = A; j < B; ++j)`")
    right = text(lp.bound_node)
    bound = right if lp.cmp == "<" else f"({right}) + 1"
    return lp.var, lp.counter_type, text(lp.start_node), bound


def _per_output(pre: list[ts.Node]) -> dict[str, str]:
    """The values PRE declares, one plain declaration each, by name -> type."""
    out: dict[str, str] = {}
    for st in pre:
        decls = st.children_by_field_name("declarator") if st.type == "declaration" else []
        if st.type != "declaration" or len(decls) != 1:
            raise Refuse(f"before the loop only single declarations (line {st.start_point.row + 1})")
        d = decls[0]
        name = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
        if name is None or name.type != "identifier":
            raise Refuse(f"{text(d)} (line {st.start_point.row + 1}) is not a plain value")
        out[text(name)] = text(st.child_by_field_name("type"))
    return out


def _window_reads(ctx: Context, loop: ts.Node, var: str) -> tuple[list[ts.Node], str, Poly, tuple[Clamp, ...]]:
    """The loop's reads `x[i + j + c]` (i the global index along x, c the same for every output of
    a thread and at every tap: `Mask_Width / 2`, a row `y * w` of a 2D launch) of the array read
    so most often, c, and the clamps of the index (`x[min(max(i + j, 0), n - 1)]`, clamp-to-edge
    addressing) the fast path checks are the identity at every tap."""
    tap = global_index(0) + Poly.symbol(var)
    moving = _MOVING | {lp.var for lp in ctx.model.loops if lp.var}
    found: dict[tuple[str, Poly], list[ts.Node]] = {}
    clamps: dict[ts.Node, list[Clamp]] = {}
    for a in global_accesses(ctx.model):
        if not (loop.start_byte <= a.node.start_byte < loop.end_byte and a.read and not a.write and len(a.index) == 1):
            continue
        index, chain = ctx.model.poly(a.indices[0], uniform=True), []
        if index is None:
            index, chain = _clamped(ctx, a.indices[0], var, loop)
        offset = index - tap if index is not None else None
        if offset is not None and not offset.symbols() & moving:
            read = read_expression(a.node)
            found.setdefault((a.array, offset), []).append(read)
            clamps[read] = chain
    if not found:
        raise Refuse(f"the loop at line {loop.start_point.row + 1} reads no array at the output's index + {var}")
    array, offset = max(found, key=lambda k: len(found[k]))
    reads = found[(array, offset)]
    if any(r.type == "pointer_expression" for r in reads):
        raise Refuse(f"the address of {array}[...] is taken in the loop")
    return reads, array, offset, tuple(c for r in reads for c in clamps[r])


_CLAMPS = {"min": "<=", "max": ">=", "std::min": "<=", "std::max": ">="}


def _clamped(ctx: Context, node: ts.Node, var: str, loop: ts.Node) -> tuple[Poly | None, list[Clamp]]:
    """An index `c + min(max(e, lo), hi)` (either order, `max` or `min` alone, through a local
    declared in the loop) as the polynomial of `c + e` and its clamps, inner first; e affine in
    `var`, the bounds free of it, every value signed. (None, []) otherwise."""
    node = unparen(node)
    if node.type == "binary_expression" and operator_of(node) == "+":
        for part, other in ((node.child_by_field_name("left"), node.child_by_field_name("right")),
                            (node.child_by_field_name("right"), node.child_by_field_name("left"))):
            rest = ctx.model.poly(other, uniform=True)
            inner, chain = _clamped(ctx, part, var, loop) if rest is not None else (None, [])
            if inner is not None and rest is not None:
                return inner + rest, chain
        return None, []
    local = ctx.model.locals.get(text(node)) if node.type == "identifier" else None
    if local is not None and local.writes == 0 and local.init is not None and within(local.node, loop) \
            and is_signed_integer(local.type):
        return _clamped(ctx, local.init, var, loop)
    fn = called(node)
    args = node.child_by_field_name("arguments")
    parts = args.named_children if args is not None and fn in _CLAMPS else []
    for value, bound in ((parts[0], parts[1]), (parts[1], parts[0])) if len(parts) == 2 else ():
        limit = ctx.model.poly(bound, uniform=True)
        if limit is None or limit.depends_on(var) or limit.symbols() & _MOVING or not ctx.model.types.signed(bound):
            continue
        inner = ctx.model.poly(value, uniform=True)
        chain: list[Clamp] = []
        if inner is None:
            inner, chain = _clamped(ctx, value, var, loop)
        elif inner.degree_in([var]) > 1 or not ctx.model.types.signed(value):
            inner = None
        if inner is not None:
            return inner, [*chain, Clamp(value, _CLAMPS[fn], bound)]
    return None, []


_MOVING = frozenset({"threadIdx.x", "blockIdx.x"})  # what differs between a thread's outputs
_COMPARISONS = ("<", "<=", ">", ">=")


def _reach(ctx: Context, loop: ts.Node, var: str, reads: list[ts.Node], array: str) -> ts.Node:
    """The `if (cond)` statement of the loop body around the window reads, where `cond` is a bounds
    check the fast path can test at the first and last tap (`_reach_condition`); Refuse otherwise."""
    line = loop.start_point.row + 1
    refusal = Refuse(f"{array}[i + {var}] is read only under a condition in the loop at line {line}: the window "
                     f"would load elements the original may skip")
    steps = _steps(loop)
    ifs = [st for st in steps if st.type == "if_statement" and st.child_by_field_name("alternative") is None
           and any(not conditional(r, st.child_by_field_name("consequence"), loops=True) for r in reads
                   if within(r, st.child_by_field_name("consequence")))]
    if len(ifs) != 1:
        raise refusal
    st = ifs[0]
    _reach_condition(ctx, condition(st), var)
    return st


def _steps(loop: ts.Node) -> list[ts.Node]:
    body = loop.child_by_field_name("body")
    assert body is not None
    return body.named_children if body.type == "compound_statement" else [body]


def _anchor(plan: Plan) -> ts.Node | None:
    """The loop body's statement before which the fast path's checks are evaluated: the bounds
    check, or the first statement reading the window through a clamp."""
    if plan.reach is not None:
        return plan.reach
    if not plan.clamps:
        return None
    return next(st for st in _steps(plan.loop) if any(within(r, st) for r in plan.reads))


def _plain(st: ts.Node) -> bool:
    """A declaration that reads no memory and calls nothing but min and max."""
    return st.type == "declaration" and not any(
        n.type == "subscript_expression" or n.type == "call_expression"
        and called(n) not in _CLAMPS for n in walk(st))


def _reach_condition(ctx: Context, cond: ts.Node, var: str) -> None:
    """A conjunction of comparisons `a < b` (`<`, `<=`, `>`, `>=`) of signed integer values, with
    `a - b` affine in `var` and nothing else in it changing in the loop; Refuse otherwise."""
    line = cond.start_point.row + 1
    for part, negated in split_condition(cond):
        op = operator_of(part) if part.type == "binary_expression" else ""
        sides = [part.child_by_field_name("left"), part.child_by_field_name("right")] if op else []
        polys = [ctx.model.poly(n, uniform=True) for n in sides]
        if negated or op not in _COMPARISONS or None in polys:
            raise Refuse(f"the loop's condition `{text(part)}` (line {line}) is not a comparison of indices")
        diff = polys[0] - polys[1]
        if diff.degree_in([var]) > 1 or diff.coefficient(var).depends_on(var) \
                or any(lp.var in diff.symbols() for lp in ctx.model.loops if lp.var != var):
            raise Refuse(f"`{text(part)}` (line {line}) is not affine in {var}")
        unsigned = next((n for n in sides if not ctx.model.types.signed(n)), None)
        if unsigned is not None:
            raise Refuse(f"`{text(unsigned)}` in `{text(part)}` (line {line}) is not of a signed integer type: the "
                         f"comparison may wrap")


def _store(ctx: Context, post: list[ts.Node]) -> Store | None:
    """POST when it is one store `y[i + c] = value;` of the output's own element (i the global
    index, c the same for the thread's outputs, y a pointer to a 4-byte type that nothing else in
    the kernel names): the outputs can then be stored four at a time, where y is aligned and c a
    multiple of 4 (checks of the fast path)."""
    assign = assignment(post[0]) if len(post) == 1 else None
    if assign is None or assign.op != "=" or assign.target.type != "subscript_expression":
        return None
    left, value = assign.target, assign.value
    array = text(left.child_by_field_name("argument"))
    param = ctx.model.pointer_params.get(array)
    access = next((a for a in global_accesses(ctx.model) if a.node == left and a.write), None)
    element = getattr(param, "element", "")
    offset = access.index[0] - global_index(0) if access is not None and len(access.index) == 1 \
        and access.index[0] is not None else None
    if offset is None or getattr(param, "pointer", 0) != 1 or element not in _ELEMENTS or offset.symbols() & _MOVING:
        return None
    names = mentions(ctx.kernel.body, array)
    return Store(array, element, left, value, offset) if len(names) == 1 else None


def _check_sizes(ctx: Context, plan: Plan) -> tuple[int | None, bool]:
    """At the spec's sizes the loop must run at least 8 taps; the taps there (None when the spec
    does not fix them), and whether the window may start at a multiple of 4 (False where the spec
    says it does not: the window then loads scalars)."""
    lp = ctx.model.loops[ctx.model.loop_of(plan.loop)]
    start, bound = (ctx.at_spec(p) if ctx.at_spec(p) is not None else fixed
                    for p, fixed in zip((lp.start, lp.bound), lp.constants))
    aligned = start is None or _aligned(ctx, fold_macros(ctx.model, plan.offset) + Poly.const(start))
    if start is None or bound is None:
        return None, aligned
    taps = bound + (lp.cmp == "<=") - start
    if taps < 8:
        raise Refuse(f"{taps} taps: too few to share a window")
    return taps, aligned


def _aligned(ctx: Context, begin: Poly) -> bool:
    """Whether the window's first element `begin` may be a multiple of 4 at the spec's sizes: True
    unless it is not one in thread 0, or it moves off one with another row's position (`y * w`
    with w not a multiple of 4), or the spec does not tell."""
    base = ctx.at_spec(begin)
    if base is None:
        return True
    env = ctx.index_env
    for name in begin.symbols() & BUILTINS:
        moved = poly_value(begin, {**env, name: env.get(name, 0) + 1})
        if moved is not None and moved % 4:
            return False
    return base % 4 == 0


@dataclass(frozen=True)
class Tile:
    """A block's window in shared memory: `threads * outputs` elements and a halo of up to `halo`,
    with 4 elements of padding after every 32 (a thread's 4-wide reads, `outputs` apart, then fall
    in distinct banks)."""
    threads: int
    halo: int

    def size(self, outputs: int) -> int:
        logical = self.threads * outputs + self.halo
        return logical + (logical >> 5) * 4 + 4

    @staticmethod
    def at(e: str) -> str:
        return f"({e}) + ((({e}) >> 5) << 2)"


def _tile(ctx: Context, outputs: int, taps: int | None) -> Tile:
    """The tile for the spec's taps: a halo of the taps rounded up to 4 (the fast path checks that
    the taps fit at run time)."""
    if taps is None:
        raise Refuse("the spec does not fix the number of taps: the shared window has no size")
    tile = Tile(ctx.launch.block3[0], -(-(taps - 1) // 4) * 4)
    if tile.size(outputs) * 4 > SHARED_BYTES:
        raise Refuse(f"a window of {tile.size(outputs)} elements does not fit a block's shared memory")
    return tile


# -- code -------------------------------------------------------------------------------------
def _code(ctx: Context, plan: Plan, outputs: int, tile: Tile | None, aligned: bool) -> str:
    """The rewritten body: the fast path (with `tile`, the block's window staged in shared memory
    when every thread of the block takes it, else read from global memory; with `aligned`, four
    elements at a time) or the original code per output."""
    out = Outputs(ctx, plan.shape, plan.ranges, 0, outputs)
    n = {k: fresh(ctx, f"cuopt_{k}") for k in ("q", "j", "win", "v", "x", "fast", "all", "tile", "t0", "l", "m", "count")}
    # a local named like one of the rewrite's own names (`first`) gets a name of its own
    mine = {*n.values(), out.first, out.index, out.r}
    arrays = {name: fresh(ctx, f"cuopt_{name}", avoid=mine) for name in plan.per_output}
    vt = vector_type(plan.element, 4)
    x = n["x"]
    begin = _c(plan.offset) if plan.start == "0" and plan.offset != Poly.const(0) else plan.start + _shift(plan)
    checks = [f"{plan.start} < {plan.bound}"]
    if aligned:
        checks += [] if begin.isdigit() else [f"({begin}) % 4 == 0"]
        checks.append(f"reinterpret_cast<unsigned long long>({plan.array}) % sizeof({vt}) == 0")
    if plan.store:
        checks.append(f"reinterpret_cast<unsigned long long>({plan.store.array}) % "
                      f"sizeof({vector_type(plan.store.element, 4)}) == 0")
        if plan.store.offset != Poly.const(0):
            checks.append(f"({_c(plan.store.offset)}) % 4 == 0")
    fast = partial(_fast, ctx, plan, outputs, out, n, arrays)
    def four(off: str) -> str:  # four elements from x + off: one vector load, or four scalar loads
        if aligned:
            return f"*reinterpret_cast<const {vt}*>({x} + {off})"
        return f"make_{vt}({', '.join(f'{x}[{off} + {t}]' if t else f'{x}[{off}]' for t in range(4))})"

    from_global = fast(four, lambda off: f"{x}[{off}]")
    lines = ["{", *out.head(n["fast"], checks), *_reach_check(ctx, plan, out, n["fast"])]
    if tile is None:
        lines += [f"    if ({n['fast']}) {{", *from_global]
    else:
        def at(off: str) -> str:
            return Tile.at(f"{n['t0']} + {off}")

        zero = plan.start == "0"
        base = f"{plan.array} + {outputs} * (blockIdx.x * blockDim.x)" + ("" if zero else f" + ({plan.start})") \
            + _shift(plan)
        halo = f"{plan.bound} - 1" if zero else f"({plan.bound}) - ({plan.start}) - 1"
        lines += [f"    const bool {n['all']} = __syncthreads_and({n['fast']} && {halo} <= {tile.halo});",
                  f"    if ({n['all']}) {{  // every thread of the block is on the fast path: the block's window, once",
                  f"        alignas(16) __shared__ {plan.element} {n['tile']}[{tile.size(outputs)}];",
                  f"        const {plan.element}* {x} = {base};",
                  f"        const int {n['count']} = {tile.threads * outputs} + {halo};",
                  f"        for (int {n['l']} = 4 * threadIdx.x; {n['l']} < {n['count']}; {n['l']} += {4 * tile.threads}) {{",
                  f"            if ({n['l']} + 4 <= {n['count']}) {{",
                  f"                *reinterpret_cast<{vt}*>(&{n['tile']}[{Tile.at(n['l'])}]) = "
                  f"*reinterpret_cast<const {vt}*>({x} + {n['l']});",
                  "            } else {",
                  f"                for (int {n['m']} = {n['l']}; {n['m']} < {n['count']}; ++{n['m']}) "
                  f"{n['tile']}[{Tile.at(n['m'])}] = {x}[{n['m']}];",
                  "            }",
                  "        }",
                  "        __syncthreads();",
                  f"        const int {n['t0']} = int(threadIdx.x * {outputs})" + ("" if zero else f" - ({plan.start})") + ";",
                  *fast(lambda off: f"*reinterpret_cast<const {vt}*>(&{n['tile']}[{at(off)}])",
                        lambda off: f"{n['tile']}[{at(off)}]", global_window=False),
                  f"    }} else if ({n['fast']}) {{", *from_global]
    return "\n".join([*lines, "    } else {", *out.fallback("        "), "    }", "}"])


def _shift(plan: Plan) -> str:
    """` + (c)` for the window's offset c, or nothing."""
    return "" if plan.offset == Poly.const(0) else f" + ({_c(plan.offset)})"


def _c(p: Poly) -> str:
    """An offset in C, signed: the built-ins (unsigned) as 64-bit integers, so that `y * w - 8`
    neither wraps nor moves a pointer by 2^32 - 8."""
    return re.sub(r"\b(threadIdx|blockIdx|blockDim|gridDim)\.([xyz])\b", r"(long long)\1.\2", str(p))


def _reach_check(ctx: Context, plan: Plan, out: Outputs, fast: str) -> list[str]:
    """For a bounds-checked or clamped tap, `fast` also asks that the check hold (the clamps be the
    identity) at the first and the last tap of every output, so at every tap (`_reach_condition`),
    evaluated as the original evaluates it."""
    anchor = _anchor(plan)
    if anchor is None:
        return []
    steps = _steps(plan.loop)
    before = [out.text(st) for st in steps[:steps.index(anchor)]]
    conditions = ([out.text(condition(plan.reach))] if plan.reach is not None else []) + \
        [f"{out.text(c.value)} {c.op} {out.text(c.bound)}" for c in plan.clamps]
    check = f"{fast} = {fast} && ({' && '.join(conditions)});"
    ends = [[f"const {plan.var_type} {plan.var} = {at};", *before, check]
            for at in (plan.start, f"({plan.bound}) - 1")]
    code = [ln for end in ends for ln in ["{", *("    " + x for x in end), "}"]]
    pre = used_declarations(ctx, list(plan.pre), out.replacements, "\n".join(code))
    return out.each("\n".join([f"if ({fast}) {{  // every tap within the bounds the loop checks or clamps to",
                                *("    " + ln for ln in [*pre, *code]), "}"]), "    ")


def _fast(ctx: Context, plan: Plan, outputs: int, out: Outputs, n: dict[str, str], arrays: dict[str, str],
          vector: Callable[[str], str], scalar: Callable[[str], str], global_window: bool = True) -> list[str]:
    """The fast path's code: R outputs, the window slid four taps at a time; `vector(off)` and
    `scalar(off)` load the window at `off` elements from the thread's first output (with
    `global_window`, from `x`, declared here)."""

    def values(node: ts.Node) -> dict[tuple[int, int], str]:
        return {(i.start_byte, i.end_byte): f"{arrays[text(i)]}[{out.r}]" for i in walk(node)
                if i.type == "identifier" and text(i) in arrays and not is_declared_name(i)}

    def per_output(node: ts.Node, extra: dict[tuple[int, int], str] | None = None) -> str:
        return out.text(node, {**values(node), **(extra or {})})

    pre = []
    for st in plan.pre:
        d = st.children_by_field_name("declarator")[0]
        value = d.child_by_field_name("value") if d.type == "init_declarator" else None
        if value is not None:
            name = text(d.child_by_field_name("declarator"))
            pre.append(f"{arrays[name]}[{out.r}] = {per_output(value)};")
    loop_body = plan.loop.child_by_field_name("body")
    assert loop_body is not None
    win, j, q, v = (n[k] for k in ("win", "j", "q", "v"))
    window = {(r.start_byte, r.end_byte): f"{win}[{q} + {out.r}]" for r in plan.reads}
    anchor = _anchor(plan)
    if plan.reach is not None:  # the fast path checked the bounds at every tap: the branch is taken
        taken = plan.reach.child_by_field_name("consequence")
        assert taken is not None
        window[(plan.reach.start_byte, plan.reach.end_byte)] = node_text(taken, {**out.replacements, **values(taken),
                                                                                 **window})
    if anchor is not None:
        steps = _steps(plan.loop)
        kept = "\n".join(node_text(st, {**out.replacements, **values(st), **window})
                         for st in steps[steps.index(anchor):])
        for st in reversed(steps[:steps.index(anchor)]):  # declarations only the checks used
            if not any(uses(kept, name) for name in declared_names(st)):
                line = ctx.source.rfind(b"\n", 0, st.start_byte)
                window[(line if ctx.source[line:st.start_byte].isspace() else st.start_byte, st.end_byte)] = ""
            else:
                kept += "\n" + text(st)
    tap = per_output(loop_body, window)
    post = "\n".join(per_output(st) for st in plan.post)
    first = q if plan.start == "0" else f"({plan.start}) + {q}"
    fields = "xyzw"
    each = out.each
    return [*(f"        {t} {arrays[name]}[{outputs}];" for name, t in plan.per_output.items()),
            *(each("\n".join(pre), "        ") if pre else []),
            *([f"        const {plan.element}* {n['x']} = {plan.array} + {out.first}{_shift(plan)};"]
              if global_window else []),
            f"        {plan.element} {win}[{outputs + 4}];",
            "        #pragma unroll",
            f"        for (int {q} = 0; {q} < {outputs}; {q} += 4) {{",
            f"            const {vector_type(plan.element, 4)} {v} = {vector(first)};",
            *(f"            {win}[{q} + {t}] = {v}.{c};" for t, c in enumerate(fields)),
            "        }",
            f"        {plan.var_type} {j} = {plan.start};",
            f"        for (; {j} + 4 <= {plan.bound}; {j} += 4) {{",
            f"            if ({j} + 5 <= {plan.bound}) {{",
            f"                const {vector_type(plan.element, 4)} {v} = {vector(f'{j} + {outputs}')};",
            *(f"                {win}[{outputs + t}] = {v}.{c};" for t, c in enumerate(fields)),
            "            } else {",
            *(f"                {win}[{outputs + t}] = {scalar(f'{j} + {outputs + t}')};" for t in range(3)),
            f"                {win}[{outputs + 3}] = 0;",
            "            }",
            "            #pragma unroll",
            f"            for (int {q} = 0; {q} < 4; ++{q}) {{",
            *([f"                const {plan.var_type} {plan.var} = {j} + {q};"] if uses(tap, plan.var) else []),
            *each(tap, "                "),
            "            }",
            "            #pragma unroll",
            f"            for (int {q} = 0; {q} < {outputs}; ++{q}) {win}[{q}] = {win}[{q} + 4];",
            "        }",
            f"        if ({j} < {plan.bound}) {{  // the last taps, fewer than 4, from the window",
            "            #pragma unroll",
            f"            for (int {q} = 0; {q} < 3; ++{q}) {{",
            f"                if ({j} + {q} + 1 < {plan.bound}) {win}[{outputs} + {q}] = {scalar(f'{j} + {outputs} + {q}')};",
            "            }",
            "            #pragma unroll",
            f"            for (int {q} = 0; {q} < 3; ++{q}) {{",
            f"                if ({j} + {q} < {plan.bound}) {{",
            *([f"                    const {plan.var_type} {plan.var} = {j} + {q};"] if uses(tap, plan.var) else []),
            *each(tap, "                    "),
            "                }",
            "            }",
            "        }",
            *(_stored(plan, out, per_output, fresh(ctx, "cuopt_out"), outputs) if plan.store
              else each(post, "        ") if post else [])]


def _stored(plan: Plan, out: Outputs, per_output: Callable[[ts.Node], str], name: str, outputs: int) -> list[str]:
    """The outputs' values, then their stores four at a time as vector stores (the fast path has
    checked that the output array is aligned)."""
    assert plan.store is not None
    element, left, value = plan.store.element, plan.store.target, plan.store.value
    vt = vector_type(element, 4)
    store = (f"*reinterpret_cast<{vt}*>(&{per_output(left)}) = make_{vt}("
             f"{', '.join(f'{name}[{out.r} + {t}]' for t in range(4))});")
    return [f"        {element} {name}[{outputs}];",
            *out.each(f"{name}[{out.r}] = {per_output(value)};", "        "),
            *out.each(store, "        ", step=4)]


TRANSFORM = Window()
