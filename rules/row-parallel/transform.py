"""row-parallel: a kernel where each thread owns a row and loops over its columns becomes
warp-per-row or block-per-row.

The lanes of the row's team stride over the columns (coalesced). Each accumulation in a column
loop (`acc += e`, `acc = fmaxf(acc, e)`, ...) runs into a per-lane partial that starts at the
operation's identity; the partials combine with `__shfl_xor_sync` (and shared memory across the
warps of a block), which leaves the same total in every lane, and the total joins the accumulator.
An argmax (`if (v > m) { m = v; i = j; }`) runs into a (value, column) pair per lane; pairs combine
by value, then by the smaller column, which is the loop's own answer (the first extreme column).
Column loops that write elements (elementwise passes) are split over the lanes as they are; other
statements run in every lane on the same values, and those that write global memory run in lane 0
only. The row is computed in the 64-bit type a cast in the original index names (`blockIdx.x *
(int64_t)blockDim.x + threadIdx.x`). Refused: anything whose meaning depends on which lane runs
which column.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, body_indent, indent_of, node_text
from cuopt.rewrite.transforms.common import (
    fresh, indent_rest, index_replacements, per_block_grid, reindent, require_index_only_builtins,
    require_plain_1d, wide_cast)
from cuopt.rewrite.transforms.shuffle import FLOATS, INTS, WARP, butterfly, combine, identity
from cuopt.source.accumulations import accumulation
from cuopt.source.analysis import (
    assignment, bound_of, called, condition, cross_thread, global_accesses, mentions, statements)
from cuopt.source.atomics import atomic_statement, commutative_updates
from cuopt.source.increments import increment
from cuopt.source.model import Access, Loop
from cuopt.source.outparams import reference_writes
from cuopt.source.parse import assigned, beats, operator_of, text, unparen, walk, within
from cuopt.source.row_pointers import sole_row_pointer
from cuopt.spec import expr as E
from cuopt.spec.model import Launch

_LOOPS = ("for_statement", "while_statement", "do_statement")


@dataclass(frozen=True)
class Reduction:
    """One accumulation in a column loop: `acc <op>= e` or `acc = fn(acc, e)`."""

    statement: ts.Node  # the expression statement
    acc: str
    kind: str  # "+", "-", "*" or a combining function name (fmaxf, min, ...)
    value: ts.Node  # e
    type: str


@dataclass(frozen=True)
class ArgReduction:
    """`if (v > m) { m = v; i = j; }` in a column loop (j its counter): the first column of the
    largest value (`<`: the smallest), as a pair that lanes combine by value, then by column."""

    statement: ts.Node  # the if statement
    acc: str  # m
    index: str  # i
    kind: str  # "max" or "min"
    value: ts.Node  # v
    type: str  # m's type
    index_type: str  # i's type

    @property
    def op(self) -> str:
        """The comparison by which a value beats the running one."""
        return ">" if self.kind == "max" else "<"


@dataclass(frozen=True)
class Welford:
    """`d = v - m; m += d / (j + 1); q += d * (v - m);` in a column loop (j its counter, from 0; or
    a count `n` the loop steps by one, `m += d / n`): a running mean and sum of squared deviations
    (Welford's update), which lanes merge pairwise (Chan et al.)."""

    mean: str  # m
    squares: str  # q
    count: str | None  # n, or None when the counter gives the count (`j + 1`)
    denominator: ts.Node  # `(j + 1)` or `n` in the mean's update
    statements: tuple[ts.Node, ...]  # the updates of m, q and n
    type: str  # m's and q's type
    count_type: str


@dataclass
class ColumnLoop:
    loop: Loop
    var: str
    start: ts.Node  # the counter's initial value
    reductions: list[Reduction] = field(default_factory=list)
    args: list[ArgReduction] = field(default_factory=list)
    welfords: list[Welford] = field(default_factory=list)

    @property
    def combined(self) -> list[str]:
        """The row locals the loop's lanes combine after it."""
        return [r.acc for r in self.reductions] + [n for a in self.args for n in (a.acc, a.index)] + \
            [n for w in self.welfords for n in (w.mean, w.squares, w.count) if n is not None]


@dataclass
class Plan:
    loops: list[ColumnLoop]
    lane_writes: list[ts.Node]  # top-level statements that write global memory: lane 0 only
    ranges: dict[tuple[int, int], int]  # global-index occurrences


class RowParallel:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        plan = _plan(ctx)
        lines = ", ".join(str(c.loop.line) for c in plan.loops)
        strided = any(a.flat is not None and a.flat.depends_on(c.var) and a.flat.depends_on("threadIdx.x")
                      for c in plan.loops for a in _accesses_in(ctx, c.loop.node))
        why = (f"its loads are {WARP} rows apart across a warp; a warp or block per row reads them coalesced"
               if strided else "every thread walks the same elements; a warp or block per output splits the walk")
        return [Site(ctx.kernel.node, f"each thread loops over a whole row (line {lines}): {why}", plan)]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        unit, block = str(params["unit"]), int(params["block"])
        if block % WARP or not WARP <= block <= 1024:
            raise Refuse(f"block {block} is not a multiple of {WARP} up to 1024")
        plan: Plan = site.data
        extent, _ = per_block_grid(ctx, 0)
        lane, red = fresh(ctx, "cuopt_lane"), fresh(ctx, "cuopt_red")
        if unit == "warp":
            stride, lane_init = str(WARP), f"threadIdx.x % {WARP}"
            grid: tuple[E.Expr, ...] = (E.Call("cdiv", (extent, E.Bin("//", E.Name("block.x"), E.Num(WARP)))),)
        elif unit == "block":
            stride, lane_init = "blockDim.x", "threadIdx.x"
            grid = (extent,)
        else:
            raise Refuse(f"unit {unit!r}: expected warp or block")
        repl = {span: _row(unit, wide_cast(ctx, span)) for span in index_replacements(ctx, plan.ranges, {0: ""})}
        edits: list[Edit] = []
        covered: list[ts.Node] = []
        types: list[str] = []
        index_types: list[str] = []
        for col in plan.loops:
            code = _column_loop(ctx, col, repl, lane, stride, unit, red, ctx.source)
            start = col.loop.pragma if col.loop.pragma is not None else col.loop.node  # an unroll pragma goes too
            edits.append(Edit(start.start_byte, col.loop.node.end_byte, code))
            covered.append(col.loop.node)
            types += [t for t in dict.fromkeys([r.type for r in col.reductions] + [a.type for a in col.args])
                      if t not in types]
            index_types += [t for t in dict.fromkeys(a.index_type for a in col.args) if t not in index_types]
        for st in plan.lane_writes:
            body = node_text(st, repl)
            if "\n" in body:
                indent = indent_of(ctx.source, st)
                body = "{\n" + reindent(st, body, indent + "    ") + "\n" + indent + "}"
            edits.append(Edit.replace(st, f"if ({lane} == 0) {body}"))
            covered.append(st)
        for (s, e), text_ in repl.items():
            if not any(n.start_byte <= s and e <= n.end_byte for n in covered):
                edits.append(Edit(s, e, text_))
        head = [f"const int {lane} = {lane_init};"]
        if unit == "block":
            head += [f"__shared__ {t} {_red_name(red, t)}[{WARP}];" for t in types]
            head += [f"__shared__ {t} {_red_name(red + '_i', t)}[{WARP}];" for t in index_types]
            head += list(dict.fromkeys(f"__shared__ {t} {name}[{WARP}];" for col in plan.loops for w in col.welfords
                                       for t, name in zip((w.count_type, w.type, w.type), _welford_buffers(red, w))))
        accs = [n for col in plan.loops for n in col.combined]
        indent = body_indent(ctx.source, ctx.kernel.body)
        edits.append(Edit.insert(ctx.kernel.body.start_byte + 1, "".join(f"\n{indent}{h}" for h in head)))
        launch = Launch((block,), grid + ctx.launch.grid[1:], ctx.launch.shared)  # batch axes stay
        what = f"a warp per row ({block // WARP} rows per block)" if unit == "warp" else f"a block of {block} per row"
        return Rewritten(apply(ctx.source, edits), launch, what, tuple(ctx.model.locals[n].type for n in accs))


def _row(unit: str, cast: str | None) -> str:
    """The row of a warp or block, computed in `cast` (a 64-bit type) where the original index was."""
    first = f"({cast})blockIdx.x" if cast else "blockIdx.x"
    return f"({first} * blockDim.x + threadIdx.x) / {WARP}" if unit == "warp" else first


# -- analysis ---------------------------------------------------------------------------------
def _plan(ctx: Context) -> Plan:
    require_plain_1d(ctx, "one thread per row along x", atomics=True)
    m = ctx.model
    updates = _atomic_updates(ctx)
    sh = ctx.model.shape
    if sh.guard is None or bound_of(ctx.model, 0) is None:
        raise Refuse("no `row < rows` guard on the thread's index")
    if sh.after:
        raise Refuse(f"statements after the guarded block (line {sh.after[0].start_point.row + 1})")
    early = sh.if_node if sh.negated else None
    exits = {}  # top-level statements of the row's work that return: the whole row's team leaves together
    for r in m.returns:
        if early is not None and early.start_byte <= r.start_byte < early.end_byte:
            continue
        holder = next((st for st in sh.body if st.start_byte <= r.start_byte < st.end_byte), None)
        if holder is None or holder.type != "if_statement":
            raise Refuse(f"return inside the row's work, not in an `if` of its own (line {r.start_point.row + 1})")
        exits[holder.start_byte] = holder
    ranges = require_index_only_builtins(ctx, ctx.kernel.body, {0})
    for n in walk(ctx.kernel.body):
        if cross_thread(n) and n.start_byte not in updates or called(n) == "printf":
            raise Refuse(f"calls {called(n)} (line {n.start_point.row + 1})")
    loops: list[ColumnLoop] = []
    lane_writes: list[ts.Node] = []
    for st in sh.body:
        if st.type == "for_statement":
            loops.append(_column(ctx, st))
            continue
        inner = next((n for n in walk(st) if n.type in _LOOPS), None)
        if inner is not None:
            raise Refuse(f"a loop that is not a column loop (line {inner.start_point.row + 1})")
        if st.start_byte in exits:  # its writes run in lane 0, its test and return in every lane
            lane_writes += _writes_in(ctx, st)
        elif any(a.write for a in _accesses_in(ctx, st)):
            if st.type == "declaration":
                raise Refuse(f"a declaration that writes memory (line {st.start_point.row + 1})")
            lane_writes.append(st)
    if not loops:
        raise Refuse("no loop over the row's columns")
    _check_writes(ctx, loops, lane_writes)
    if not any(_contiguous(ctx, a, c.var) for c in loops for a in _accesses_in(ctx, c.loop.node)):
        raise Refuse("no column loop reads or writes consecutive elements")
    return Plan(loops, lane_writes, ranges)


def _column(ctx: Context, node: ts.Node) -> ColumnLoop:
    m = ctx.model
    lp = m.loops[m.loop_of(node)]
    where = f"line {lp.line}"
    if not lp.counter_type or lp.var is None:
        raise Refuse(f"the loop at {where} does not declare its own counter")
    if lp.step != 1 or lp.cmp not in ("<", "<="):
        raise Refuse(f"the loop at {where} is not `for (int j = a; j < b; ++j)`")
    if lp.trip_count is not None and lp.trip_count < WARP:
        raise Refuse(f"the loop at {where} runs {lp.trip_count} times: most of a warp's {WARP} lanes would idle")
    start = lp.start_node
    body = lp.body
    inside = {n.start_byte for n in walk(body) if n.type == "declaration"}
    local_here = {name for name, loc in m.locals.items() if loc.node.start_byte in inside}
    reductions: dict[int, Reduction] = {}
    args = [a for a in (_arg_reduction(ctx, n, lp.var, local_here) for n in walk(body)) if a is not None]
    welfords = _welfords(ctx, lp, local_here)
    in_args = [(a.statement.start_byte, a.statement.end_byte) for a in args] + \
        [(st.start_byte, st.end_byte) for w in welfords for st in w.statements]
    for call, name in reference_writes(body):
        if name not in local_here:
            raise Refuse(f"the call of {called(call)} may change {name} (a reference, "
                         f"its address or a lambda's capture): a value carried across the loop at {where}")
    for n in walk(body):
        if n.type in ("break_statement", "goto_statement", "return_statement"):
            raise Refuse(f"{n.type.split('_')[0]} in the loop at {where}")
        target = assigned(n)
        if target is None or any(s <= n.start_byte < e for s, e in in_args):
            continue
        if target.type == "identifier":
            name = text(target)
            if name in local_here:
                continue
            if name == lp.var:
                raise Refuse(f"the loop at {where} changes its counter in the body")
            red = _reduction(ctx, n, name)
            reductions[red.statement.start_byte] = red
        elif target.type == "subscript_expression":
            arrays = [a for a in m.accesses if a.node == target]
            pointer = sole_row_pointer(ctx.kernel, m, arrays[0].array) if arrays else None
            if not arrays or (arrays[0].space != "global" and arrays[0].array not in local_here
                              and (pointer is None or within(pointer, node))):
                raise Refuse(f"writes {text(target)} across iterations ({where})")
        else:
            raise Refuse(f"writes through {text(target)} ({where})")
    cond = condition(lp.node)
    written = {r.acc for r in reductions.values()} | {n for a in args for n in (a.acc, a.index)} | \
        {n for w in welfords for n in (w.mean, w.squares, w.count) if n is not None}
    for a in args:  # m and i are read and written by their `if` alone
        for name in (a.acc, a.index):
            outside = [n for n in mentions(body, name)
                       if not a.statement.start_byte <= n.start_byte < a.statement.end_byte]
            if outside or name in {r.acc for r in reductions.values()} or \
                    sum(name in (b.acc, b.index) for b in args) > 1:
                raise Refuse(f"reads or updates {name} outside its compare-and-select ({where})")
    if cond is not None and mentions(cond, *written):
        raise Refuse(f"the bound of the loop at {where} changes inside it")
    for red in reductions.values():
        if len(mentions(body, red.acc)) != len(mentions(red.statement, red.acc)) or mentions(red.value, red.acc):
            raise Refuse(f"reads the running value of {red.acc} ({where})")
    return ColumnLoop(lp, lp.var, start, list(reductions.values()), args, welfords)


def _arg_reduction(ctx: Context, node: ts.Node, var: str, local_here: set[str]) -> ArgReduction | None:
    """`if (v > m) { m = v; i = j; }` (also `m < v`, `<` for the smallest, either order of the two
    assignments), j the loop's counter, m and i locals of the row; None for anything else."""
    if node.type != "if_statement" or node.child_by_field_name("alternative") is not None:
        return None
    body = node.child_by_field_name("consequence")
    stmts = body.named_children if body is not None and body.type == "compound_statement" else []
    assigns = [assignment(st) for st in stmts if st.type == "expression_statement"]
    if len(stmts) != 2 or len(assigns) != 2 or any(
            a is None or a.op != "=" or a.target.type != "identifier" for a in assigns):
        return None
    cond = condition(node)
    if cond is None:
        return None
    for m_assign, i_assign in (assigns, assigns[::-1]):
        acc, value = text(m_assign.target), m_assign.value
        found = beats(cond, value, acc)
        index, counter = text(i_assign.target), unparen(i_assign.value)
        if found is None or not found[1] or text(counter) != var or index == acc:
            continue
        locals_ = ctx.model.locals
        if acc not in locals_ or index not in locals_ or {acc, index} & local_here:
            return None
        if any(n.type in ("call_expression", "assignment_expression", "update_expression")
               or n.type == "identifier" and text(n) in (acc, index) for n in walk(value)):
            return None
        type_ = ctx.kernel.resolve(locals_[acc].type.replace("const", ""))
        index_type = ctx.kernel.resolve(locals_[index].type.replace("const", ""))
        if type_ not in FLOATS and type_ not in INTS or index_type not in INTS:
            return None
        return ArgReduction(node, acc, index, found[0], value, type_, index_type)
    return None


def _welfords(ctx: Context, lp: Loop, local_here: set[str]) -> list[Welford]:
    """Welford updates among the top-level statements of the loop's body (so they run every
    iteration; never with a `continue`): `T d = v - m;`, then `m += d / (j + 1);` (the counter from
    0; a cast of `j + 1` too) or `m += d / n;` after `n += 1;` (`n++`, `++n`), then `q += d * (v -
    m);` (either order, or a local `T d2 = v - m;`). m, q and n are the row's locals, set to 0
    where declared and changed nowhere else; the loop names them nowhere else."""
    body = lp.body
    stmts = statements(body) if body.type == "compound_statement" else []
    if any(n.type == "continue_statement" for n in walk(body)):
        return []
    values = {dv[0]: (st, dv[1]) for st in stmts if st.type == "declaration"
              and (dv := _declared_value(st)) is not None and dv[0] in local_here}
    found: list[Welford] = []
    for i, st in enumerate(stmts):
        update = _update_of(st, "+=")
        value = unparen(update[1]) if update is not None else None
        if value is None or value.type != "binary_expression" or operator_of(value) != "/":
            continue
        mean = update[0]
        d, den = unparen(value.child_by_field_name("left")), unparen(value.child_by_field_name("right"))
        d_decl, diff = values.get(text(d), (None, None))
        if diff is None or not _minus(diff, mean):
            continue
        count, count_stmt = _count(lp, stmts[:i], den)
        if count is False:
            continue
        for later in stmts[i + 1:]:
            sq = _update_of(later, "+=")
            product = unparen(sq[1]) if sq is not None and sq[0] != mean else None
            if product is None or product.type != "binary_expression" or \
                    operator_of(product) != "*":
                continue
            factors = [unparen(product.child_by_field_name(k)) for k in ("left", "right")]
            if text(d) not in [text(f) for f in factors]:
                continue
            other = factors[1] if text(factors[0]) == text(d) else factors[0]
            d2_decl, d2 = values.get(text(other), (None, other)) if other.type == "identifier" else (None, other)
            if not _minus(d2, mean) or text(unparen(d2.child_by_field_name("left"))) != \
                    text(unparen(diff.child_by_field_name("left"))):
                break
            updates = (st, later) + ((count_stmt,) if count_stmt is not None else ())
            reads = tuple(n for n in (d_decl, d2_decl) if n is not None)
            welford = _welford(ctx, body, sq[0], mean, count, den, updates, reads)
            if welford is not None:
                found.append(welford)
            break
    return found


def _welford(ctx: Context, body: ts.Node, squares: str, mean: str, count: str | None, den: ts.Node,
             updates: tuple[ts.Node, ...], reads: tuple[ts.Node, ...]) -> Welford | None:
    """The update when m, q (and n) are the row's locals, zero where declared, written only by
    `updates` and named in the loop only there and in `reads` (the declarations of `v - m`), m and
    q of one float type; None otherwise."""
    locals_ = ctx.model.locals
    names = [mean, squares] + ([count] if count else [])
    if any(n not in locals_ or locals_[n].writes != 1 or not _zero(locals_[n].init) for n in names):
        return None
    allowed = updates + reads
    if any(n.type == "identifier" and text(n) in names and not any(a.start_byte <= n.start_byte < a.end_byte
                                                                  for a in allowed) for n in walk(body)):
        return None
    type_ = ctx.kernel.resolve(locals_[mean].type.replace("const", ""))
    if type_ not in FLOATS or ctx.kernel.resolve(locals_[squares].type.replace("const", "")) != type_:
        return None
    count_type = ctx.kernel.resolve(locals_[count].type.replace("const", "")) if count else "int"
    if count_type not in INTS and count_type not in FLOATS:  # a float count as the helper of a layer norm keeps it
        return None
    return Welford(mean, squares, count, den, updates, type_, count_type)


def _zero(value: ts.Node | None) -> bool:
    """`0`, `0.0f`, `0.` ...: a number literal that is zero."""
    return _number(value) == 0.0


def _number(value: ts.Node | None) -> float | None:
    """The value of a decimal number literal (`1`, `1.0f`, `0.`), else None."""
    if value is None or value.type != "number_literal":
        return None
    try:
        return float(text(value).rstrip("fFlLuU"))
    except ValueError:
        return None


def _update_of(st: ts.Node, op: str) -> tuple[str, ts.Node] | None:
    """(x, e) of the statement `x op e;`, x an identifier."""
    a = assignment(st) if st.type == "expression_statement" else None
    return (text(a.target), a.value) if a is not None and a.op == op and a.target.type == "identifier" else None


def _declared_value(st: ts.Node) -> tuple[str, ts.Node] | None:
    """(name, value) of a one-declarator declaration `T name = value;`."""
    ds = st.children_by_field_name("declarator")
    if len(ds) != 1 or ds[0].type != "init_declarator":
        return None
    return text(ds[0].child_by_field_name("declarator")), ds[0].child_by_field_name("value")


def _minus(node: ts.Node, name: str) -> bool:
    """`node` is `v - name`, v naming something other than `name`."""
    node = unparen(node)
    if node.type != "binary_expression" or operator_of(node) != "-":
        return False
    right = unparen(node.child_by_field_name("right"))
    return right.type == "identifier" and text(right) == name and \
        not mentions(node.child_by_field_name("left"), name)


def _count(lp: Loop, before: list[ts.Node], den: ts.Node) -> tuple[str | None | bool, ts.Node | None]:
    """What counts the update: (None, None) for `j + 1` (j the counter, from 0, a cast around it
    allowed), (n, its step) for a local n the statements before step by one, (False, None) else."""
    if den.type == "cast_expression":
        den = unparen(den.child_by_field_name("value"))
    if den.type == "binary_expression" and operator_of(den) == "+":
        sides = {text(unparen(den.child_by_field_name(k))) for k in ("left", "right")}
        from_zero = lp.start is not None and lp.start.constant() == 0 and lp.step == 1
        return (None, None) if sides == {lp.var, "1"} and from_zero else (False, None)
    if den.type != "identifier":
        return False, None
    name = text(den)
    steps = [st for st in before if _steps_by_one(st, name)]
    return (name, steps[0]) if len(steps) == 1 else (False, None)


def _steps_by_one(st: ts.Node, name: str) -> bool:
    """`name++;`, `++name;`, `name += 1;` (`1.0f` for a float count) or `name = name + 1;`."""
    inc = increment(st)
    return inc is not None and inc.counter == name and inc.op == "+" and (inc.step is None or _number(inc.step) == 1.0)


def _reduction(ctx: Context, node: ts.Node, acc: str) -> Reduction:
    """`node` assigns `acc`; recognise an accumulation or refuse."""
    statement = node.parent
    where = f"line {node.start_point.row + 1}"
    found = accumulation(statement) if node.type == "assignment_expression" and statement is not None else None
    local = ctx.model.locals.get(acc)
    if found is None or found.acc != acc or local is None:
        raise Refuse(f"updates {acc} other than by an accumulation ({where})")
    type_ = ctx.kernel.resolve(local.type.replace("const", ""))
    if type_ not in FLOATS and type_ not in INTS:
        raise Refuse(f"{acc} has type {local.type!r} (float, double or an integer type needed)")
    return Reduction(statement, acc, found.kind, found.value, type_)


def _writes_in(ctx: Context, exit_: ts.Node) -> list[ts.Node]:
    """The statements of a returning `if` that write memory (each an expression statement): lane 0
    makes them, while every lane of the row's team evaluates the test and returns together."""
    out = []
    for a in _accesses_in(ctx, exit_):
        if not a.write:
            continue
        st = a.node
        while st is not None and st.type != "expression_statement":
            if st.type == "declaration" or st == exit_:
                raise Refuse(f"a write in the test or a declaration of the returning `if` (line {a.line})")
            st = st.parent
        if st is not None and st not in out:
            out.append(st)
    return out


def _atomic_updates(ctx: Context) -> set[int]:
    """The atomics (by start) that update arrays the kernel touches only by atomic statements of one
    commutative function (cuopt/source/atomics.py): a column's runs once in the lane that takes the
    column, one outside the column loops in lane 0, and the array ends the same (float sums added
    in another order, as the original's atomics add them in none). Refuse any other atomic."""
    m = ctx.model
    arrays = commutative_updates(m)
    calls = {call.start_byte for a in m.global_accesses() if a.atomic and a.array in arrays
             for call in [atomic_statement(a.node)] if call is not None}
    for call in m.atomics:
        if call.start_byte not in calls:
            raise Refuse(f"{called(call)} at line {call.start_point.row + 1} is not a statement updating an array "
                         "that is touched only by one commutative atomic function")
    return calls


def _accesses_in(ctx: Context, node: ts.Node) -> list[Access]:
    return [a for a in ctx.model.accesses if node.start_byte <= a.node.start_byte < node.end_byte]


def _contiguous(ctx: Context, access: Access, var: str) -> bool:
    p = access.flat
    return access in global_accesses(ctx.model) and p is not None and p.degree_in([var]) == 1 and \
        p.coefficient(var).constant() == 1


def _check_writes(ctx: Context, loops: list[ColumnLoop], lane_writes: list[ts.Node]) -> None:
    """Every element a lane writes in a column loop is read or written only by that lane (same index,
    same start); arrays written in lane 0 only are not read at all."""
    m = ctx.model
    owners = {}
    for c in loops:
        for a in _accesses_in(ctx, c.loop.node):
            owners[a.node.start_byte] = c
    memory = global_accesses(m)  # through a parameter, or a local pointer into one
    for name in {a.array for a in memory if a.write} - set(commutative_updates(m)):
        if name in m.aliases and sole_row_pointer(ctx.kernel, m, name) is None:
            raise Refuse(f"{name} is written, and points into {m.aliases[name]}, which the kernel also reaches "
                         "otherwise")
        uses = [a for a in memory if a.array == name]
        keys = set()
        for a in uses:
            col = owners.get(a.node.start_byte)
            if col is None:
                if any(u.read for u in uses):
                    raise Refuse(f"{name} is written in lane 0 and read (line {a.line})")
                continue
            p = a.flat
            if a.write and (p is None or p.degree_in([col.var]) != 1 or p.coefficient(col.var).constant() in (None, 0)):
                raise Refuse(f"{name} is written at an index that is not one element per column (line {a.line})")
            index = re.sub(rf"\b{re.escape(col.var)}\b", "@", " ".join(text(i) for i in a.indices).replace(" ", ""))
            keys.add((index, text(col.start)))
        if len(keys) > 1:
            raise Refuse(f"{name} is written and accessed at different positions")


# -- emission ---------------------------------------------------------------------------------
def _red_name(base: str, type_: str) -> str:
    return f"{base}_{type_.replace(' ', '_')}"


def _column_loop(ctx: Context, col: ColumnLoop, repl: dict[tuple[int, int], str], lane: str, stride: str,
                 unit: str, red: str, source: bytes) -> str:
    node = col.loop.node
    indent = indent_of(source, node)
    partial = {r.acc: fresh(ctx, f"cuopt_{r.acc}") for r in col.reductions}
    loop_repl = dict(repl)
    for r in col.reductions:
        p = partial[r.acc]
        value = node_text(r.value, repl)
        step = f"{p} += {value};" if r.kind in ("+", "-") else \
            f"{p} *= {value};" if r.kind == "*" else f"{p} = {r.kind}({p}, {value});"
        loop_repl[(r.statement.start_byte, r.statement.end_byte)] = step
    pairs = {a.acc: (fresh(ctx, f"cuopt_{a.acc}"), fresh(ctx, f"cuopt_{a.index}")) for a in col.args}
    for a in col.args:
        pv, pi = pairs[a.acc]
        loop_repl[(a.statement.start_byte, a.statement.end_byte)] = \
            f"if ({node_text(a.value, repl)} {a.op} {pv}) {{ {pv} = {node_text(a.value, repl)}; {pi} = {col.var}; }}"
    body = col.loop.body
    welford = {w.mean: (fresh(ctx, f"cuopt_{w.mean}"), fresh(ctx, f"cuopt_{w.squares}"),
                        fresh(ctx, f"cuopt_{w.count or 'n'}")) for w in col.welfords}
    for w in col.welfords:
        pm, pq, pn = welford[w.mean]
        renamed = {w.mean: pm, w.squares: pq, **({w.count: pn} if w.count else {})}
        loop_repl.update({(n.start_byte, n.end_byte): renamed[text(n)] for n in mentions(body, *renamed)})
        if w.count is None:  # `(j + 1)`: the lane's own count
            loop_repl[(w.denominator.start_byte, w.denominator.end_byte)] = f"++{pn}"
    cond = condition(node)
    type_ = col.loop.counter_type
    start = lane if text(col.start) == "0" else f"({node_text(col.start, repl)}) + {lane}"
    header = f"for ({type_} {col.var} = {start}; {node_text(cond, repl)}; {col.var} += {stride})"
    inner = reindent(body, node_text(body, loop_repl), "    ")
    loop = f"{header} {{\n{inner}\n}}" if body.type == "compound_statement" else f"{header}\n{inner}"
    if not col.reductions and not col.args and not col.welfords:
        return indent_rest(loop, indent)
    lines = [f"{r.type} {partial[r.acc]} = {identity(r.kind, r.type)};" for r in col.reductions]
    for w in col.welfords:
        pm, pq, pn = welford[w.mean]
        lines += [f"{w.type} {pm} = ({w.type})0, {pq} = ({w.type})0;", f"{w.count_type} {pn} = 0;"]
    for a in col.args:
        pv, pi = pairs[a.acc]
        lines += [f"{a.type} {pv} = {_extreme(a)};", f"{a.index_type} {pi} = {INTS[a.index_type][1]};"]
    lines += loop.split("\n")
    for r in col.reductions:
        lines += _reduce(partial[r.acc], r, unit, lane, red)
        lines.append(f"{r.acc} -= {partial[r.acc]};" if r.kind == "-" else
                     f"{r.acc} = {combine(r.kind, r.acc, partial[r.acc])};")
    for a in col.args:
        pv, pi = pairs[a.acc]
        lines += _reduce_pair(a, pv, pi, unit, lane, red)
        lines.append(f"if ({pv} {a.op} {a.acc}) {{ {a.acc} = {pv}; {a.index} = {pi}; }}")
    for w in col.welfords:
        pm, pq, pn = welford[w.mean]
        lines += _reduce_welford(w, pm, pq, pn, unit, lane, red)
        lines.append(f"{w.mean} = {pm};")
        lines.append(f"{w.squares} = {pq};")
        if w.count is not None:
            lines.append(f"{w.count} = {pn};")
    return indent_rest("\n".join(["{"] + ["    " + ln if ln else "" for ln in lines] + ["}"]), indent)


def _extreme(a: ArgReduction) -> str:
    """The value no element beats: where a lane's pair starts."""
    return identity("fmaxf" if a.kind == "max" else "fminf", a.type)


def _reduce_pair(a: ArgReduction, pv: str, pi: str, unit: str, lane: str, red: str) -> list[str]:
    """Lines that leave the team's best (value, first column) pair in every lane: a pair beats another
    by value, and at an equal value by the smaller column (the first one, as the loop finds it)."""
    def better(v: str, i: str) -> str:
        return f"if ({v} {a.op} {pv} || ({v} == {pv} && {i} < {pi})) {{ {pv} = {v}; {pi} = {i}; }}"

    shuffle = (f"for (int cuopt_o = {WARP // 2}; cuopt_o > 0; cuopt_o /= 2) {{ "
               f"const {a.type} cuopt_ov = __shfl_xor_sync(0xffffffffu, {pv}, cuopt_o); "
               f"const {a.index_type} cuopt_oi = __shfl_xor_sync(0xffffffffu, {pi}, cuopt_o); "
               f"{better('cuopt_ov', 'cuopt_oi')} }}")
    if unit == "warp":
        return [shuffle]
    vbuf, ibuf = _red_name(red, a.type), _red_name(red + "_i", a.index_type)
    return [shuffle,
            f"if ({lane} % {WARP} == 0) {{ {vbuf}[{lane} / {WARP}] = {pv}; {ibuf}[{lane} / {WARP}] = {pi}; }}",
            "__syncthreads();",
            f"{pv} = {lane} % {WARP} < blockDim.x / {WARP} ? {vbuf}[{lane} % {WARP}] : {_extreme(a)};",
            f"{pi} = {lane} % {WARP} < blockDim.x / {WARP} ? {ibuf}[{lane} % {WARP}] : {INTS[a.index_type][1]};",
            shuffle,
            "__syncthreads();"]


def _reduce_welford(w: Welford, pm: str, pq: str, pn: str, unit: str, lane: str, red: str) -> list[str]:
    """Lines that leave the team's (count, mean, sum of squared deviations) in every lane, merging
    two lanes' as Chan et al. do. Both lanes of a pair merge the lower lane's into the higher's, so
    every lane computes the same bits."""
    t, ct = w.type, w.count_type

    def merge(on: str, om: str, oq: str) -> list[str]:
        return [f"    const bool cuopt_hi = ({lane} & cuopt_o) != 0;  // the other lane's values come first",
                f"    const {ct} cuopt_na = cuopt_hi ? {on} : {pn}, cuopt_nb = cuopt_hi ? {pn} : {on};",
                f"    const {t} cuopt_ma = cuopt_hi ? {om} : {pm}, cuopt_mb = cuopt_hi ? {pm} : {om};",
                f"    const {t} cuopt_qa = cuopt_hi ? {oq} : {pq}, cuopt_qb = cuopt_hi ? {pq} : {oq};",
                f"    {pn} = cuopt_na + cuopt_nb;",
                f"    if ({pn} > 0) {{",
                f"        const {t} cuopt_d = cuopt_mb - cuopt_ma;",
                f"        {pm} = cuopt_ma + cuopt_d * (({t})cuopt_nb / ({t}){pn});",
                f"        {pq} = cuopt_qa + cuopt_qb + cuopt_d * cuopt_d * (({t})cuopt_na * ({t})cuopt_nb / ({t}){pn});",
                "    }"]

    shuffle = [f"for (int cuopt_o = {WARP // 2}; cuopt_o > 0; cuopt_o /= 2) {{",
               f"    const {ct} cuopt_on = __shfl_xor_sync(0xffffffffu, {pn}, cuopt_o);",
               f"    const {t} cuopt_om = __shfl_xor_sync(0xffffffffu, {pm}, cuopt_o);",
               f"    const {t} cuopt_oq = __shfl_xor_sync(0xffffffffu, {pq}, cuopt_o);",
               *merge("cuopt_on", "cuopt_om", "cuopt_oq"),
               "}"]
    if unit == "warp":
        return shuffle
    wn, wm, wq = _welford_buffers(red, w)
    live = f"{lane} % {WARP} < blockDim.x / {WARP}"
    return [*shuffle,
            f"if ({lane} % {WARP} == 0) {{ {wn}[{lane} / {WARP}] = {pn}; {wm}[{lane} / {WARP}] = {pm}; "
            f"{wq}[{lane} / {WARP}] = {pq}; }}",
            "__syncthreads();",
            f"{pn} = {live} ? {wn}[{lane} % {WARP}] : 0;",
            f"{pm} = {live} ? {wm}[{lane} % {WARP}] : ({t})0;",
            f"{pq} = {live} ? {wq}[{lane} % {WARP}] : ({t})0;",
            *shuffle,
            "__syncthreads();"]


def _welford_buffers(red: str, w: Welford) -> tuple[str, str, str]:
    """A block's shared slots for its warps' counts, means and sums of squared deviations."""
    return _red_name(red + "_wn", w.count_type), _red_name(red + "_wm", w.type), _red_name(red + "_wq", w.type)


def _reduce(p: str, r: Reduction, unit: str, lane: str, red: str) -> list[str]:
    """Lines that leave the team's total of the partial `p` in every lane."""
    shuffle = butterfly(p, r.kind)
    if unit == "warp":
        return [shuffle]
    buf = _red_name(red, r.type)
    return [shuffle,
            f"if ({lane} % {WARP} == 0) {buf}[{lane} / {WARP}] = {p};",
            "__syncthreads();",
            f"{p} = {lane} % {WARP} < blockDim.x / {WARP} ? {buf}[{lane} % {WARP}] : {identity(r.kind, r.type)};",
            shuffle,
            "__syncthreads();"]


TRANSFORM = RowParallel()
