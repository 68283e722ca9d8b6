"""split-rows: a thread that owns one column and folds a long loop over the rows into a running
value (a bias gradient, a column sum) shares the rows with more threads.

The block becomes `bx x by`: the x threads keep their columns (consecutive columns in
consecutive lanes, so every row's read stays coalesced), and one loop of the thread's perfect
nest (its innermost, or its outermost: the `rows` parameter) starts at `threadIdx.y` (with a grid
of several blocks along y, at `blockIdx.y * blockDim.y + threadIdx.y`) and steps over every such
thread. Each accumulation
(`acc += e`, `acc = fmaxf(acc, e)`, ...) runs into a partial that starts at the operation's
identity, outside the column's guard, so every thread of the block reaches the barrier; the
partials of a column meet in shared memory, a tree over y combines them, and the block's first row
of threads joins the total to the accumulator and runs what the thread did after the loop. A
kernel launched `<<<1, 1>>>` is one column: its block becomes `1 x (32 * by)`, consecutive
threads taking consecutive iterations. With several blocks along y, each block adds its part to the output with one `atomicAdd` per column: offered only
where the thread's work after the loop is `out[c] += acc` (an accumulation into an element no
other statement touches, in a type atomicAdd takes) and `acc` starts at zero.

A batch of such kernels along the grid's y (`grid (cdiv(C, block.x), B)`, blockIdx.y only picking
the slice: `Context.batch_axes`) is split per slice: the batch moves to the grid's z
(`blockIdx.y` read as `blockIdx.z`, the same length, so every position stays), which leaves y to
the rows' threads and blocks; a grid whose y and z are both batch axes is refused.

Refused when the order of the rows could matter beyond rounding: a running value read inside the
loop, a write to memory in it, `break`, shared memory, barriers or atomics in the kernel."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.rewrite.transforms.common import (
    AXES, fresh, per_block_grid, render_condition, require_index_only_builtins, require_plain_1d)
from cuopt.rewrite.transforms.shuffle import FLOATS, INTS, combine, identity
from cuopt.source.accumulations import Accumulation, accumulation
from cuopt.source.atomics import atomic_statement
from cuopt.source.analysis import Assignment, assignment, bound_of, builtin_uses, called, condition, \
    cross_thread, mentions, steps_of
from cuopt.source.edits import Edit, apply, body_indent, node_text
from cuopt.source.model import Access, Loop
from cuopt.source.outparams import reference_writes
from cuopt.source.parse import assigned, declared_names, reindent, text, unparen, walk, within
from cuopt.spec import expr as E
from cuopt.spec.model import Launch

_LOOPS = ("for_statement", "while_statement", "do_statement")
_ATOMIC_ADD = {"float", "double", "int", "unsigned int", "unsigned", "unsigned long long"}  # atomicAdd's types
_MIN_ROWS = 64  # a row loop with a constant trip count below this leaves the added threads idle


@dataclass(frozen=True)
class Reduction:
    step: Accumulation
    type: str  # the accumulator's type, resolved


@dataclass
class Plan:
    single: bool  # a one-thread launch (`<<<1, 1>>>`): its one column gets a block of threads along y
    live: str | None  # the condition under which a thread has a column (the guard as it holds); None: always
    pre: list[ts.Node]  # the guarded declarations before the loop nest
    nest: ts.Node  # the outermost loop of the nest
    loop: Loop  # the loop of the nest whose rows the threads along y share
    reductions: list[Reduction]
    post: list[ts.Node]  # the guarded statements after the nest
    atomic: dict[int, tuple[ts.Node, str]]  # post statement's start -> (out[c], acc) where `out[c] += acc`
    no_atomic: str  # why the grid may not split the rows over blocks ("" when it may)


class SplitRows:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        work = _batch_on_z(ctx)  # the same positions: its nodes name the same sites
        plans = _plans(work)
        inner = plans[0]
        accs = ", ".join(r.step.acc for r in inner.reductions)
        return [Site(inner.loop.node, f"each thread folds every row of the loop at line {inner.loop.line} into "
                                      f"{accs}; threads along y can share its rows, read coalesced", (work, plans))]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        work, plans = site.data  # the kernel with its batch along z; its plans, the innermost loop's first
        moved = work is not ctx
        ctx = work
        rows = str(params["rows"])
        if rows not in ("inner", "outer"):
            raise Refuse(f"rows {rows!r}: expected inner or outer")
        if rows == "outer" and len(plans) == 1:
            raise Refuse(f"the loop at line {plans[0].loop.line} is the only loop of the nest whose rows can be shared")
        plan = plans[0] if rows == "inner" else plans[-1]
        bx, by = _block(str(params["block"]))
        blocks = int(params["blocks"])
        if blocks < 1:
            raise Refuse(f"blocks {blocks}: expected a positive count")
        if blocks > 1 and plan.no_atomic:
            raise Refuse(f"{blocks} blocks along y: {plan.no_atomic}")
        if plan.single:  # consecutive threads along y take consecutive iterations
            if bx != 32:
                raise Refuse(f"block {params['block']}: a one-thread kernel takes 32 x {by} as 1 x {32 * by}")
            bx, by = 1, bx * by
            grid: tuple[E.Expr, ...] = (E.Num(1),)
        else:
            extent, _ = per_block_grid(ctx, 0)
            grid = (E.Call("cdiv", (extent, E.Name("block.x"))),)
        if ctx.batch_axes:  # (x, 1, batch): the rows' blocks along y, the batch kept along z
            grid += (E.Num(blocks), ctx.launch.grid[2])
        elif blocks > 1:
            grid += (E.Num(blocks),)
        code = _body(ctx, plan, bx, by, blocks)
        launch = Launch((bx, by), grid, ctx.launch.shared)
        what = f"the rows of the loop at line {plan.loop.line} split over {by} threads along y"
        if blocks > 1:
            what += f" and {blocks} blocks, one atomicAdd per block and column"
        if moved:
            what += ", the batch moved from the grid's y to z"
        return Rewritten(apply(ctx.source, [Edit.replace(ctx.kernel.body, code)]), launch, what,
                         tuple(ctx.model.locals[r.step.acc].type for r in plan.reductions))


def _block(value: str) -> tuple[int, int]:
    try:
        bx, by = (int(v) for v in value.split("x"))
    except ValueError:
        raise Refuse(f"block {value!r}: expected XxY") from None
    if bx % 32 or by < 2 or by & (by - 1) or bx * by > 1024:
        raise Refuse(f"block {value}: x a multiple of 32, y a power of two from 2, at most 1024 threads")
    return bx, by


# -- emission ---------------------------------------------------------------------------------
def _body(ctx: Context, plan: Plan, bx: int, by: int, blocks: int) -> str:
    """The kernel's new body: partials outside the guard, the rows split, a tree over y in shared
    memory, and the thread's work after the loop in the block's first row of threads."""
    ind = body_indent(ctx.source, ctx.kernel.body)
    inner, deep = ind + "    ", ind + "        "
    names = {r.step.acc: fresh(ctx, f"cuopt_{r.step.acc}") for r in plan.reductions}
    rows = {r.step.acc: fresh(ctx, f"cuopt_rows_{r.step.acc}") for r in plan.reductions}
    k = fresh(ctx, "cuopt_k")
    lines = [reindent(st, text(st), ind) for st in ctx.model.shape.prelude]
    lines += [f"{ind}__shared__ {r.type} {rows[r.step.acc]}[{by}][{bx}];" for r in plan.reductions]
    lines += [f"{ind}{r.type} {names[r.step.acc]} = {identity(r.step.kind, r.type)};" for r in plan.reductions]
    work = [reindent(st, text(st), inner) for st in _needed(plan.pre, [plan.nest], set(names), set())]
    work.append(reindent(plan.nest, node_text(plan.nest, _split_loop(plan, names, blocks)), inner))
    lines += _guarded(plan.live, work, ind)
    lines += [f"{ind}{rows[r.step.acc]}[threadIdx.y][threadIdx.x] = {names[r.step.acc]};" for r in plan.reductions]
    lines.append(f"{ind}__syncthreads();")
    lines.append(f"{ind}for (int {k} = {by // 2}; {k} > 0; {k} /= 2) {{")
    lines.append(f"{inner}if (threadIdx.y < {k}) {{")
    for r in plan.reductions:
        mine, other = f"{rows[r.step.acc]}[threadIdx.y][threadIdx.x]", f"{rows[r.step.acc]}[threadIdx.y + {k}][threadIdx.x]"
        lines.append(f"{deep}{mine} = {combine(r.step.kind, mine, other)};")
    lines += [f"{inner}}}", f"{inner}__syncthreads();", f"{ind}}}"]
    users = plan.post if blocks == 1 else [a for a, _ in plan.atomic.values()]
    last = [reindent(st, text(st), deep) for st in _needed(plan.pre, users, set(), set(names))]
    for r in plan.reductions:
        acc, total = r.step.acc, f"{rows[r.step.acc]}[0][threadIdx.x]"
        last.append(f"{deep}{acc} -= {total};" if r.step.kind == "-" else
                    f"{deep}{acc} = {combine(r.step.kind, acc, total)};")
    for st in plan.post:
        if blocks > 1:
            target, acc = plan.atomic[st.start_byte]
            last.append(f"{deep}atomicAdd(&{text(target)}, {acc});")
        else:
            last.append(reindent(st, text(st), deep))
    lines.append(f"{ind}if (threadIdx.y == 0) {{")
    lines += _guarded(plan.live, last, inner)
    lines.append(f"{ind}}}")
    close = ind[:-4] if len(ind) >= 4 else ""
    return "{\n" + "\n".join(lines) + f"\n{close}}}"


def _guarded(live: str | None, lines: list[str], indent: str) -> list[str]:
    """`lines` (indented one level below `indent`) under `if (live)`, or in a block of their own
    where every thread has the work (a one-thread kernel)."""
    return [f"{indent}{'{' if live is None else f'if ({live}) {{'}", *lines, f"{indent}}}"]


def _needed(pre: list[ts.Node], users: list[ts.Node], skip: set[str], also: set[str]) -> list[ts.Node]:
    """The declarations of `pre` that `users` read or that declare a name of `also`, with those
    they read in turn (a declaration of a name of `skip` aside), in their order."""
    names = ({text(n) for u in users for n in walk(u) if n.type == "identifier"} | also) - skip
    kept = []
    for st in reversed(pre):
        if declared_names(st) & names and not declared_names(st) & skip:
            kept.insert(0, st)
            names |= {text(n) for n in walk(st) if n.type == "identifier"}
    return kept


def _split_loop(plan: Plan, names: dict[str, str], blocks: int) -> dict[tuple[int, int], str]:
    """Replacements that start the row loop at the thread's first row, step it over every thread
    along y, and fold each accumulation into its partial."""
    lp = plan.loop
    row, stride = ("blockIdx.y * blockDim.y + threadIdx.y", "blockDim.y * gridDim.y") if blocks > 1 \
        else ("threadIdx.y", "blockDim.y")
    start = text(lp.start_node)
    first = row if start.strip() == "0" else f"({start}) + (int)({row})"
    header = f"for ({lp.counter_type} {lp.var} = {first}; {text(condition(lp.node))}; {lp.var} += {stride})"
    repl = {(lp.node.start_byte, lp.body.start_byte): header + _spacing(lp)}
    for r in plan.reductions:
        st, p = r.step, names[r.step.acc]
        value = text(st.value)
        step = f"{p} += {value};" if st.kind in ("+", "-") else f"{p} *= {value};" if st.kind == "*" \
            else f"{p} = {st.kind}({p}, {value});"
        repl[(st.statement.start_byte, st.statement.end_byte)] = step
    return repl


def _spacing(lp: Loop) -> str:
    """The whitespace between the loop's `)` and its body, as written (a space, or a new line)."""
    before = lp.node.text.decode()[:lp.body.start_byte - lp.node.start_byte]
    return before[len(before.rstrip()):]


# -- analysis ---------------------------------------------------------------------------------
def _batch_on_z(ctx: Context) -> Context:
    """The context itself, or where the grid's y is its only batch axis (`grid (cdiv(C, block.x), B)`,
    blockIdx.y only picking the slice), the kernel with `blockIdx.y` read as `blockIdx.z` under the
    grid (x, 1, B): y is left to the rows' threads and blocks."""
    batch = ctx.batch_axes
    if not batch:
        return ctx
    if batch != (1,):
        if ctx.model.roles.role(1) == "batch":
            raise Refuse("the grid's y and z are both batch axes: the rows' threads and blocks need y")
        return ctx  # (x, 1, B): the batch is along z already
    body = ctx.kernel.body
    edits = [Edit.replace(n, "blockIdx.z") for n, name in builtin_uses(body) if name == "blockIdx.y"]
    grid = (ctx.launch.grid[0], E.Num(1), ctx.launch.grid[1])
    return replace(ctx, source=apply(ctx.source, edits), launch=replace(ctx.launch, grid=grid))


def _plans(ctx: Context) -> list[Plan]:
    """One plan for each loop of the thread's nest whose rows threads may share."""
    m = ctx.model
    sh = m.shape
    single = _one_thread(ctx)
    if single:  # a dot product or a sum run by the launch's only thread: one column
        if m.shared or m.barriers or m.atomics:
            raise Refuse("uses shared memory, barriers or atomics")
        for n, name in builtin_uses(ctx.kernel.body):
            raise Refuse(f"a one-thread launch that reads {name} (line {n.start_point.row + 1})")
    else:
        require_plain_1d(ctx, "one thread per column along x", atomics=True)  # the total's own, below
        if sh.guard is None or bound_of(m, 0) is None:
            raise Refuse("no `c < columns` guard on the thread's index")
        require_index_only_builtins(ctx, ctx.kernel.body, {0})
        batch = {f"blockIdx.{AXES[a]}" for a in ctx.batch_axes}  # a slice's index (`_batch_on_z`)
        for n, name in builtin_uses(ctx.kernel.body):
            if not name.endswith(".x") and name not in batch:
                raise Refuse(f"uses {name} (line {n.start_point.row + 1})")
    if sh.after:
        raise Refuse(f"statements after the guarded block (line {sh.after[0].start_point.row + 1})")
    if m.returns and not sh.negated or len(m.returns) > 1:
        raise Refuse(f"a return inside the thread's work (line {m.returns[-1].start_point.row + 1})")
    first = next((i for i, st in enumerate(sh.body) if any(n.type in _LOOPS for n in walk(st))), None)
    if first is None:
        raise Refuse("the thread's work has no loop")
    pre, nest, post = sh.body[:first], sh.body[first], sh.body[first + 1:]
    totals = [st for st in post if _atomic_total(ctx, st) is not None]  # `atomicAdd(&out[c], acc);`
    for n in walk(ctx.kernel.body):
        if (cross_thread(n) or called(n) == "printf") and not any(within(n, st) for st in totals):
            raise Refuse(f"calls {called(n)} (line {n.start_point.row + 1})")
    for st in pre:
        if st.type != "declaration" or any(n.type in ("call_expression", "assignment_expression",
                                                      "update_expression") for n in walk(st)):
            raise Refuse(f"a statement other than a plain declaration before the loop (line {st.start_point.row + 1})")
    chain = _nest(ctx, nest)
    reductions = _reductions(ctx, chain[-1], nest)
    accs = {r.step.acc for r in reductions}
    for st in post:
        if any(n.type in _LOOPS for n in walk(st)):
            raise Refuse(f"a loop after the row loop (line {st.start_point.row + 1})")
        for n in walk(st):
            target = assigned(n)
            if target is not None and target.type == "identifier" and text(target) in accs:
                raise Refuse(f"changes {text(target)} after the row loop (line {n.start_point.row + 1})")
    read_in_loop = {a.array for a in _accesses_in(ctx, nest)}
    for st in post:
        for a in _accesses_in(ctx, st):
            if a.write and a.array in read_in_loop:
                raise Refuse(f"{a.array} is read in the row loop and written after it (line {a.line})")
    live = None if sh.guard is None else render_condition(sh.guard, True, {}) if sh.negated else text(sh.guard)
    atomic, no_atomic = _atomic(ctx, reductions, pre, post)
    plans, reasons = [], []
    for lp in reversed(chain):  # the innermost first
        try:
            _splittable(ctx, lp, single)
        except Refuse as exc:
            reasons.append(str(exc))
            continue
        plans.append(Plan(single, live, pre, nest, lp, reductions, post, atomic, no_atomic))
    if not plans:
        raise Refuse("; ".join(reasons))
    return plans


def _splittable(ctx: Context, lp: Loop, single: bool) -> None:
    """Refuse unless threads can share the iterations of `lp`: a counter of its own stepping by one,
    enough iterations, and a read that stays coalesced when the threads along y take them."""
    where = f"the loop at line {lp.line}"
    if not lp.counter_type or lp.var is None or lp.start_node is None:
        raise Refuse(f"{where} does not declare its own counter")
    if lp.step != 1 or lp.cmp not in ("<", "<="):
        raise Refuse(f"{where} is not `for (int r = a; r < b; ++r)`")
    if lp.trip_count is not None and lp.trip_count < _MIN_ROWS:
        raise Refuse(f"{where} runs {lp.trip_count} times: too few rows to share")
    reads = [a for a in _accesses_in(ctx, lp.node) if a.read]
    if single and not any(_consecutive(a, lp) for a in reads):
        raise Refuse(f"no read in {where} is at consecutive elements from one {lp.var} to the next")
    if not single and not any(_coalesced(a, lp) for a in reads):
        raise Refuse(f"no read in {where} is consecutive along the thread's column "
                     f"and a row apart from one {lp.var} to the next")


def _one_thread(ctx: Context) -> bool:
    """Whether the launch is one block of one thread (`<<<1, 1>>>`) at every size."""
    if ctx.launch.block3 != (1, 1, 1):
        return False
    sizes = dict(ctx.spec.sizes) if ctx.spec is not None else {}
    try:
        return all(E.evaluate(g, ctx.launch.env(sizes)) == 1 for g in ctx.launch.grid) and \
            all(not E.names(g) - {"block.x", "block.y", "block.z"} for g in ctx.launch.grid)
    except E.ExprError:
        return False


def _nest(ctx: Context, nest: ts.Node) -> list[Loop]:
    """The loops of a perfect nest of `for` loops (each outer body holds the next alone), outermost
    first; none changes its counter in its body."""
    node, chain = nest, []
    while True:
        if node.type != "for_statement":
            raise Refuse(f"the loop at line {node.start_point.row + 1} is not a `for` loop")
        lp = ctx.model.loops[ctx.model.loop_of(node)]
        chain.append(lp)
        if lp.var is not None and any(assigned(n) is not None and text(assigned(n)) == lp.var for n in walk(lp.body)):
            raise Refuse(f"the loop at line {lp.line} changes its counter in the body")
        header = [n for n in walk(lp.node) if not within(n, lp.body) and assigned(n) is not None]
        if any(text(assigned(n)) != lp.var for n in header):
            raise Refuse(f"the header of the loop at line {lp.line} changes more than its counter")
        steps = steps_of(lp.body)
        if not any(n.type in _LOOPS for st in steps for n in walk(st)):
            return chain
        if len(steps) != 1 or steps[0].type != "for_statement":
            raise Refuse(f"the loop at line {lp.line} holds more than the next loop of the nest")
        node = steps[0]


def _reductions(ctx: Context, lp: Loop, nest: ts.Node) -> list[Reduction]:
    """The accumulations of the row loop's body into locals declared outside the nest; refuse
    anything else that outlives an iteration."""
    m = ctx.model
    body = lp.body
    where = f"the loop at line {lp.line}"
    inside = {n.start_byte for n in walk(body) if n.type == "declaration"}
    local_here = {name for n in walk(body) if n.type == "declaration" for name in declared_names(n)}
    local_here |= {name for name, loc in m.locals.items() if loc.node.start_byte in inside}
    for call, name in reference_writes(body):
        if name not in local_here:
            raise Refuse(f"the call of {called(call)} may change {name}: a value carried across {where}")
    found: dict[str, Reduction] = {}
    for n in walk(body):
        if n.type in ("break_statement", "goto_statement", "return_statement"):
            raise Refuse(f"{n.type.split('_')[0]} in {where}")
    for n in walk(body):
        target = assigned(n)
        if target is None:
            continue
        target = unparen(target)
        if target.type == "subscript_expression":
            raise Refuse(f"writes {text(target)} in {where}")
        if target.type != "identifier":
            raise Refuse(f"writes through {text(target)} in {where}")
        name = text(target)
        if name in local_here:
            continue
        if name == lp.var:
            raise Refuse(f"{where} changes its counter in the body")
        statement = n.parent if n.parent is not None and n.parent.type == "expression_statement" else n
        step = accumulation(statement)
        if step is None or step.acc != name or name in found:
            raise Refuse(f"updates {name} other than by one accumulation ({where})")
        local = m.locals.get(name)
        if local is None or within(local.node, nest):
            raise Refuse(f"{name} is not a local of the thread")
        type_ = ctx.kernel.resolve(local.type.replace("const", "").strip())
        if type_ not in FLOATS and type_ not in INTS:
            raise Refuse(f"{name} has type {local.type!r} (float, double or an integer type needed)")
        found[name] = Reduction(step, type_)
    if not found:
        raise Refuse(f"{where} folds nothing into a running value")
    headers = [x for x in m.loops if within(x.node, nest) or x.node == nest]
    for r in found.values():
        acc = r.step.acc
        if len(mentions(body, acc)) != len(mentions(r.step.statement, acc)) or mentions(r.step.value, *found):
            raise Refuse(f"reads the running value of {acc} ({where})")
        for x in headers:
            if len(mentions(x.node, acc)) != len(mentions(x.body, acc)):
                raise Refuse(f"the loop at line {x.line} reads {acc} in its header")
            if x.node != lp.node and len(mentions(x.body, acc)) != len(mentions(body, acc)):
                raise Refuse(f"reads {acc} between the loops of the nest (line {x.line})")
    return list(found.values())


def _accesses_in(ctx: Context, node: ts.Node) -> list[Access]:
    return [a for a in ctx.model.accesses if node.start_byte <= a.node.start_byte < node.end_byte]


def _coalesced(a: Access, lp: Loop) -> bool:
    """A global read at consecutive elements across the lanes (threadIdx.x's coefficient is 1)
    that moves a row with the counter: by a size, not a constant (`x[i + j]`, a 1D filter's taps,
    walks along the lanes' own row)."""
    p = a.flat
    return a.space == "global" and p is not None and p.degree_in(["threadIdx.x"]) == 1 and \
        p.coefficient("threadIdx.x").constant() == 1 and p.degree_in([lp.var]) == 1 and \
        p.coefficient(lp.var).constant() is None


def _consecutive(a: Access, lp: Loop) -> bool:
    """A global read at consecutive elements from one iteration to the next (`x[i]`, `x[r * n + i]`):
    coalesced once consecutive threads take consecutive iterations."""
    p = a.flat
    return a.space == "global" and p is not None and p.degree_in([lp.var]) == 1 and \
        p.coefficient(lp.var).constant() == 1


def _atomic(ctx: Context, reductions: list[Reduction], pre: list[ts.Node], post: list[ts.Node]
            ) -> tuple[dict[int, tuple[ts.Node, str]], str]:
    """`out[c] += acc` for each statement after the loop, where blocks along y may each add their
    part with atomicAdd; or why they may not."""
    kinds = {r.step.acc: r for r in reductions}
    found: dict[int, tuple[ts.Node, str]] = {}
    if not post:
        return {}, "nothing after the loop stores the total"
    for st in post:
        a = assignment(st)
        if a is None:
            a = _atomic_total(ctx, st)
        line = st.start_point.row + 1
        if a is None or a.op != "+=" or unparen(a.target).type != "subscript_expression":
            return {}, f"line {line} is not `out[c] += acc`: each block's part needs the total stored once"
        value = unparen(a.value)
        acc = text(value) if value.type == "identifier" else ""
        if acc not in kinds or kinds[acc].step.kind != "+" or acc in (v for _, v in found.values()):
            return {}, f"line {line} adds no sum of the loop's own"
        access = next((x for x in ctx.model.accesses if x.node == unparen(a.target)), None)
        if access is None or access.space != "global" or access.array in ctx.model.escapes:
            return {}, f"line {line} does not add into a global array by subscript"
        if len(ctx.model.global_accesses(access.array)) != 1:
            return {}, f"{access.array} is accessed elsewhere than at line {line}"
        param = ctx.kernel.param(access.array)
        type_ = ctx.kernel.resolve(param.base_type) if param is not None else ""
        if type_ not in _ATOMIC_ADD or type_ != kinds[acc].type:
            return {}, f"{access.array} holds {type_ or 'an unknown type'}, not a type atomicAdd takes as {acc}'s"
        if not _starts_at_zero(ctx, acc):
            return {}, f"{acc} does not start at zero: every block would add its first value"
        found[st.start_byte] = (unparen(a.target), acc)
    return found, ""


def _atomic_total(ctx: Context, st: ts.Node) -> Assignment | None:
    """The statement `atomicAdd(&out[c], v);` (one of the analysis's atomic accesses) read as the
    `out[c] += v` it performs, atomically; None otherwise."""
    for a in ctx.model.global_accesses():
        call = atomic_statement(a.node) if a.atomic else None
        if call is not None and call.parent == st and called(call) == "atomicAdd" and a.indices:
            return Assignment(call, a.node, "+=", call.child_by_field_name("arguments").named_children[1])
    return None


def _starts_at_zero(ctx: Context, acc: str) -> bool:
    local = ctx.model.locals.get(acc)
    if local is None or local.init is None:
        return False
    init = unparen(local.init)
    while init.type == "cast_expression":
        init = unparen(init.child_by_field_name("value"))
    return init.type == "number_literal" and text(init).rstrip("fFlLuU") in ("0", "0.0", "0.", ".0", "0.0e0")


TRANSFORM = SplitRows()
