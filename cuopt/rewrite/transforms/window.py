"""window: a sliding-window loop (`acc += x[i + j] * w[j]`, a 1D convolution or stencil) computes
`outputs` consecutive outputs per thread, the window of `x` held in registers.

One thread per output reads `x[i + j]` for every tap j: each element of x is loaded once per tap,
and each load is a warp-wide instruction. With `outputs = R` consecutive outputs per thread, the
thread keeps `x[i0 + j .. i0 + j + R - 1]` in registers and slides it four taps at a time with
one 4-wide vector load, so R outputs cost one vector load per four taps instead of 4R scalar
loads; reads that do not depend on the output (the weights) are shared by the R outputs.

The kernel is `prelude; if (guard) { PRE; for (int j = A; j < B; ++j) BODY; POST }` (or the
early-return form), with one global index along x. PRE declares the per-output values the loop
accumulates into (they become arrays of R); BODY assigns only those and stores nothing. A fast
path runs when all R outputs pass the guard, the window array is aligned for vector loads and
A is a multiple of 4 (checked at run time); otherwise each of the R outputs runs the original
code. The last taps, fewer than four, also read the window, extended by up to three scalar
loads. The fast path reads only elements the original reads: some read of `x[i + j]` runs at every
tap, under no condition (`if`, `?:`, `&&`, `||`, an inner loop; a "same" convolution's bounds
check is refused), other reads keep their conditions, and the last vector load of the loop is
split where its fourth element lies past the window.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.rewrite.transforms.common import (
    CROSS_THREAD_CALL, SHARED_BYTES, Shape, assigned_outside, fresh, global_accesses, is_declared_name, read_expression,
    read_only_element, require_index_only_builtins, require_plain_1d, uses)
from cuopt.rewrite.transforms.outputs import Outputs, guarded_shape, rewritten
from cuopt.rewrite.transforms.vectorize import vector_type
from cuopt.source.affine import BUILTINS, Poly, global_index
from cuopt.source.parse import text, walk

_ELEMENTS = ("float", "int", "unsigned int", "unsigned")  # 4 bytes: a window step is one 4-wide load
STAGES = ("registers", "shared")
_JUMPS = ("break_statement", "continue_statement", "goto_statement", "return_statement")
_SKIPPING = ("for_statement", "while_statement", "do_statement", "switch_statement")  # may skip what they hold


@dataclass(frozen=True)
class Plan:
    shape: Shape
    loop: ts.Node
    var: str
    var_type: str
    start: str
    bound: str  # exclusive
    array: str
    element: str
    reads: tuple[ts.Node, ...]  # the window reads `x[i + j]` (or `__ldg(&x[i + j])`) in the loop
    pre: tuple[ts.Node, ...]
    post: tuple[ts.Node, ...]
    store: tuple[str, str, ts.Node, ts.Node] | None  # POST as `y[i] = value;`: (y, its element, y[i], value)
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
        taps = _check_sizes(ctx, plan)
        tile = _tile(ctx, outputs, taps) if stage == "shared" else None
        where = f"a block's window of {plan.array} in shared memory" if tile else f"{plan.array}'s window in registers"
        return rewritten(ctx, 0, outputs, _code(ctx, plan, outputs, tile), f"{outputs} consecutive outputs per thread, {where}")


# -- analysis ---------------------------------------------------------------------------------
def _plan(ctx: Context) -> Plan:
    require_plain_1d(ctx, "one global index along x")
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
    reads, array = _window_reads(ctx, loop, var)
    element = read_only_element(ctx, array, _ELEMENTS)
    loop_body = loop.child_by_field_name("body")
    assert loop_body is not None
    if not any(_every_iteration(r, loop_body) for r in reads):
        raise Refuse(f"{array}[i + {var}] is read only under a condition in the loop at line "
                     f"{loop.start_point.row + 1}: the window would load elements the original may skip")
    for n in walk(loop_body):
        if n.type in _JUMPS:
            raise Refuse(f"{n.type.split('_')[0]} in the loop at line {loop.start_point.row + 1}")
        if n.type == "call_expression" and CROSS_THREAD_CALL.match(text(n.child_by_field_name("function"))):
            raise Refuse(f"the loop at line {loop.start_point.row + 1} calls {text(n.child_by_field_name('function'))}")
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
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
    return Plan(sh, loop, var, var_type, start, bound, array, element, tuple(reads), tuple(pre), tuple(post),
                _store(ctx, post), per_output, ranges)


def _counter(ctx: Context, loop: ts.Node) -> tuple[str, str, str, str]:
    """(counter, its type, start, exclusive bound) of `for (T j = A; j < B (or <= B); ++j)`."""
    line = loop.start_point.row + 1
    lp = ctx.model.loops[ctx.model.loop_of(loop)]
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    decl = next((d for d in init.children_by_field_name("declarator") if d.type == "init_declarator"), None) \
        if init is not None and init.type == "declaration" else None
    if decl is None or lp.var is None or lp.step != 1 or lp.cmp not in ("<", "<=") or cond is None \
            or cond.type != "binary_expression" or text(cond.child_by_field_name("left")) != lp.var:
        raise Refuse(f"the loop at line {line} is not `for (int j = A; j < B; ++j)`")
    right = text(cond.child_by_field_name("right"))
    bound = right if lp.cmp == "<" else f"({right}) + 1"
    return lp.var, text(init.child_by_field_name("type")), text(decl.child_by_field_name("value")), bound


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


def _window_reads(ctx: Context, loop: ts.Node, var: str) -> tuple[list[ts.Node], str]:
    """The loop's reads `x[i + j]` (i the global index) of the array read so most often."""
    want = global_index(0) + Poly.symbol(var)
    found: dict[str, list[ts.Node]] = {}
    for a in global_accesses(ctx):
        if loop.start_byte <= a.node.start_byte < loop.end_byte and a.read and not a.write \
                and len(a.index) == 1 and a.index[0] == want:
            found.setdefault(a.array, []).append(read_expression(a.node))
    if not found:
        raise Refuse(f"the loop at line {loop.start_point.row + 1} reads no array at the output's index + {var}")
    array = max(found, key=lambda k: len(found[k]))
    if any(r.type == "pointer_expression" for r in found[array]):
        raise Refuse(f"the address of {array}[...] is taken in the loop")
    return found[array], array


def _every_iteration(node: ts.Node, body: ts.Node) -> bool:
    """Whether `node` is evaluated whenever the loop `body` runs: nothing between them can skip it
    (the branches of an `if` or `?:`, the right side of `&&` or `||`, an inner loop or switch)."""
    child, parent = node, node.parent
    while child != body:
        if parent is None or parent.type in _SKIPPING:
            return False
        if parent.type in ("if_statement", "conditional_expression") \
                and child != parent.child_by_field_name("condition"):
            return False
        if parent.type == "binary_expression" and text(parent.child_by_field_name("operator")) in ("&&", "||") \
                and child == parent.child_by_field_name("right"):
            return False
        child, parent = parent, parent.parent
    return True


def _store(ctx: Context, post: list[ts.Node]) -> tuple[str, str, ts.Node, ts.Node] | None:
    """POST when it is one store `y[i] = value;` of the output's own element (i the global index,
    y a pointer to a 4-byte type that nothing else in the kernel names): the outputs can then be
    stored four at a time, where y is aligned (a check of the fast path)."""
    if len(post) != 1 or post[0].type != "expression_statement" or not post[0].named_children:
        return None
    assign = post[0].named_children[0]
    left, value = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    if assign.type != "assignment_expression" or text(assign.child_by_field_name("operator")) != "=" \
            or left is None or left.type != "subscript_expression":
        return None
    array = text(left.child_by_field_name("argument"))
    param = ctx.model.pointer_params.get(array)
    access = next((a for a in global_accesses(ctx) if a.node == left and a.write), None)
    element = getattr(param, "base_type", "")
    if access is None or getattr(param, "pointer", 0) != 1 or element not in _ELEMENTS \
            or len(access.index) != 1 or access.index[0] != global_index(0):
        return None
    names = [n for n in walk(ctx.kernel.body) if n.type == "identifier" and text(n) == array]
    return (array, element, left, value) if len(names) == 1 else None


def _check_sizes(ctx: Context, plan: Plan) -> int | None:
    """At the spec's sizes the loop must run at least 8 taps from a multiple of 4; the taps there
    (None when the spec does not fix them)."""
    lp = ctx.model.loops[ctx.model.loop_of(plan.loop)]
    start, bound = (ctx.at_spec(p) if ctx.at_spec(p) is not None else fixed
                    for p, fixed in zip((lp.start, lp.bound), lp.constants))
    if start is not None and start % 4:
        raise Refuse(f"the window starts at {start}, not a multiple of 4: no aligned vector loads")
    if start is None or bound is None:
        return None
    taps = bound + (lp.cmp == "<=") - start
    if taps < 8:
        raise Refuse(f"{taps} taps: too few to share a window")
    return taps


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
def _code(ctx: Context, plan: Plan, outputs: int, tile: Tile | None) -> str:
    """The rewritten body: the fast path (with `tile`, the block's window staged in shared memory
    when every thread of the block takes it, else read from global memory) or the original code
    per output."""
    out = Outputs(ctx, plan.shape, plan.ranges, 0, outputs)
    n = {k: fresh(ctx, f"cuopt_{k}") for k in ("q", "j", "win", "v", "x", "fast", "all", "tile", "t0", "l", "m", "count")}
    arrays = {name: fresh(ctx, f"cuopt_{name}") for name in plan.per_output}
    vt = vector_type(plan.element, 4)
    x = n["x"]
    checks = [f"{plan.start} < {plan.bound}"] + ([] if plan.start.isdigit() else [f"({plan.start}) % 4 == 0"])
    checks.append(f"reinterpret_cast<unsigned long long>({plan.array}) % sizeof({vt}) == 0")
    if plan.store:
        checks.append(f"reinterpret_cast<unsigned long long>({plan.store[0]}) % sizeof({vector_type(plan.store[1], 4)}) == 0")
    fast = partial(_fast, ctx, plan, outputs, out, n, arrays)
    from_global = fast(lambda off: f"*reinterpret_cast<const {vt}*>({x} + {off})", lambda off: f"{x}[{off}]")
    lines = ["{", *out.head(n["fast"], checks)]
    if tile is None:
        lines += [f"    if ({n['fast']}) {{", *from_global]
    else:
        def at(off: str) -> str:
            return Tile.at(f"{n['t0']} + {off}")

        zero = plan.start == "0"
        base = f"{plan.array} + {outputs} * (blockIdx.x * blockDim.x)" + ("" if zero else f" + ({plan.start})")
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


def _fast(ctx: Context, plan: Plan, outputs: int, out: Outputs, n: dict[str, str], arrays: dict[str, str],
          vector: Callable[[str], str], scalar: Callable[[str], str], global_window: bool = True) -> list[str]:
    """The fast path's code: R outputs, the window slid four taps at a time; `vector(off)` and
    `scalar(off)` load the window at `off` elements from the thread's first output (with
    `global_window`, from `x`, declared here)."""

    def per_output(node: ts.Node, extra: dict[tuple[int, int], str] | None = None) -> str:
        repl = {(i.start_byte, i.end_byte): f"{arrays[text(i)]}[{out.r}]" for i in walk(node)
                if i.type == "identifier" and text(i) in arrays and not is_declared_name(i)}
        return out.text(node, {**repl, **(extra or {})})

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
    tap = per_output(loop_body, window)
    post = "\n".join(per_output(st) for st in plan.post)
    first = q if plan.start == "0" else f"({plan.start}) + {q}"
    fields = "xyzw"
    each = out.each
    return [*(f"        {t} {arrays[name]}[{outputs}];" for name, t in plan.per_output.items()),
            *(each("\n".join(pre), "        ") if pre else []),
            *([f"        const {plan.element}* {n['x']} = {plan.array} + {out.first};"] if global_window else []),
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
    _, element, left, value = plan.store
    vt = vector_type(element, 4)
    store = (f"*reinterpret_cast<{vt}*>(&{per_output(left)}) = make_{vt}("
             f"{', '.join(f'{name}[{out.r} + {t}]' for t in range(4))});")
    return [f"        {element} {name}[{outputs}];",
            *out.each(f"{name}[{out.r}] = {per_output(value)};", "        "),
            *out.each(store, "        ", step=4)]
