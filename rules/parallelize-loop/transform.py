"""parallelize-loop: a serial loop inside a thread whose iterations are independent becomes a
grid dimension, each of its iterations a thread of its own.

`for (int v = S; v < B; ++v) body` (the thread's last statement, nothing after it) becomes
`int v = S + <global index>; if (v < B) body`. With `axis = "y"` the loop's iterations take the
new y dimension and the thread's x index stays; with `axis = "x"` they take x (consecutive
iterations in consecutive lanes) and the thread's index moves to y. Triangular bounds
(`v = j1 + 1 .. m`) keep their start: the grid covers the widest row and the guard trims it.

Legal when no iteration reads or writes an element another iteration writes (proved on the
affine indices, cuopt.source.dependence), no value is carried from one iteration to the next, and
nothing before the loop reads what it writes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, indent_of, node_text
from cuopt.rewrite.transforms.common import (
    index_replacements, per_block_grid, require_index_only_builtins, require_plain_1d)
from cuopt.source.affine import BUILTINS, Poly, global_index
from cuopt.source.analysis import bound_of, condition
from cuopt.source.dependence import Ranged, same_iteration
from cuopt.source.model import Access, Loop
from cuopt.source.parse import assigned, declared_names, text, walk, within
from cuopt.spec import expr as E
from cuopt.spec.reach import to_expr
from cuopt.spec.model import Launch, Scalar

_LOOPS = ("for_statement", "while_statement", "do_statement")
_ESCAPES = ("break_statement", "continue_statement", "goto_statement", "return_statement")
_INDEX = {0: "blockIdx.x * blockDim.x + threadIdx.x", 1: "blockIdx.y * blockDim.y + threadIdx.y"}


@dataclass(frozen=True)
class Plan:
    loop: Loop
    type: str  # the counter's declared type
    start: ts.Node
    extent: E.Expr  # the launch's count of iterations (an upper bound)


class ParallelizeLoop:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        plan = _plan(ctx)
        lp = plan.loop
        return [Site(lp.node, f"the loop at line {lp.line} runs its independent iterations one after another "
                              f"in each thread; each can be a thread of its own", plan)]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        plan: Plan = site.data
        axis = str(params["axis"])
        block = tuple(int(v) for v in str(params["block"]).split("x"))
        if axis not in ("x", "y"):
            raise Refuse(f"axis {axis!r}: expected x or y")
        if len(block) != 2 or block[0] * block[1] > 1024 or min(block) < 1:
            raise Refuse(f"block {params['block']}: expected two dimensions of at most 1024 threads")
        extent, _ = per_block_grid(ctx, 0)
        lp = plan.loop
        repl: dict[tuple[int, int], str] = {}
        if axis == "x":  # the thread's own index moves to y
            ranges = require_index_only_builtins(ctx, ctx.kernel.body, {0})
            repl = index_replacements(ctx, ranges, {0: f"({_INDEX[1]})"})
        index = _INDEX[0] if axis == "x" else _INDEX[1]
        start = node_text(plan.start, repl)
        value = f"({index})" if start.strip() == "0" else f"{start} + ({index})"
        indent = indent_of(ctx.source, lp.node)
        cond = node_text(condition(lp.node), repl)
        body = node_text(lp.body, repl)
        before = ctx.source[:lp.body.start_byte].decode()
        gap = before[len(before.rstrip()):] or " "  # as the loop had it: same line or the next
        code = f"{plan.type} {lp.var} = {value};\n{indent}if ({cond}){gap}{body}"
        edits = [Edit.replace(lp.node, code)]
        edits += [Edit(s, e, t) for (s, e), t in repl.items() if not (lp.node.start_byte <= s < lp.node.end_byte)]
        names = (E.Name("block.x"), E.Name("block.y"))
        loop_grid, own_grid = (E.Call("cdiv", (plan.extent, names[0])), E.Call("cdiv", (extent, names[1]))) \
            if axis == "x" else (E.Call("cdiv", (plan.extent, names[1])), E.Call("cdiv", (extent, names[0])))
        grid = (loop_grid, own_grid) if axis == "x" else (own_grid, loop_grid)
        launch = Launch(block, grid, ctx.launch.shared)
        return Rewritten(apply(ctx.source, edits), launch,
                         f"the loop over {lp.var} at line {lp.line} spread over the grid's {axis} dimension")


# -- analysis ---------------------------------------------------------------------------------
def _plan(ctx: Context) -> Plan:
    require_plain_1d(ctx, "the loop takes the second dimension")
    m = ctx.model
    used = {text(n).replace(" ", "") for n in walk(ctx.kernel.body) if n.type == "field_expression"}
    if any(u in BUILTINS and not u.endswith(".x") for u in used):
        raise Refuse("uses the y or z thread builtins")
    sh = ctx.model.shape
    guard = bound_of(ctx.model, 0)
    if sh.guard is None or guard is None:
        raise Refuse("no `i < n` guard on the thread's index")
    if sh.after:
        raise Refuse(f"statements after the guarded block (line {sh.after[0].start_point.row + 1})")
    if not sh.body or sh.body[-1].type != "for_statement":
        raise Refuse("the thread's work does not end with a loop")
    node = sh.body[-1]
    for st in sh.body[:-1]:
        if st.type != "declaration":
            raise Refuse(f"a statement other than a declaration before the loop (line {st.start_point.row + 1})")
    lp = m.loops[m.loop_of(node)]
    where = f"the loop at line {lp.line}"
    if not lp.counter_type or lp.var is None or lp.start is None or lp.bound is None \
            or lp.step != 1 or lp.cmp not in ("<", "<="):
        raise Refuse(f"{where} is not `for (int v = a; v < b; ++v)`")
    if lp.trip_count is not None and lp.trip_count < 2:
        raise Refuse(f"{where} runs {lp.trip_count} time(s)")
    _no_carried_values(ctx, lp, where)
    if not _nonnegative(lp.start):
        raise Refuse(f"{where} may start below zero")
    guard_bound = _exclusive(ctx.model.poly(guard[0]), guard[1])
    loop_bound = _exclusive(lp.bound, lp.cmp)
    if guard_bound is None or loop_bound is None:
        raise Refuse("the guard's or the loop's bound is not an affine size")
    extent = per_block_grid(ctx, 0)[0] if loop_bound == guard_bound else _spec_extent(ctx, loop_bound)
    if extent is None:
        raise Refuse(f"the bound of {where} is not a size the launch can be written in")
    ranged = [Ranged(global_index(0), guard_bound), Ranged(Poly.symbol(lp.var), loop_bound)]
    inner = [x for x in m.loops if x.node != node and within(x.node, node)]
    for x in inner:
        if x.var is not None and x.start is not None and x.bound is not None and x.cmp in ("<", "<=") and \
                x.step and x.step > 0 and _nonnegative(x.start):
            bound = _exclusive(x.bound, x.cmp)
            if bound is not None:
                ranged.append(Ranged(Poly.symbol(x.var), bound))
    _independent(ctx, lp, {x.var for x in inner if x.var}, ranged, sh.body[:-1])
    return Plan(lp, lp.counter_type, lp.start_node, extent)


def _no_carried_values(ctx: Context, lp: Loop, where: str) -> None:
    """Nothing leaves an iteration but the elements it writes: no early exit, no local declared
    outside the loop assigned in it, no write through anything but a global buffer's subscript."""
    body = lp.body
    declared = {name for n in walk(body) if n.type == "declaration" for name in declared_names(n)}
    for n in walk(body):
        if n.type in _ESCAPES and (n.type in ("return_statement", "goto_statement") or _owner(n) == lp.node):
            raise Refuse(f"{n.type.split('_')[0]} in {where}")
        target = assigned(n)
        if target is None:
            continue
        if target.type == "identifier":
            name = text(target)
            if name == lp.var:
                raise Refuse(f"{where} changes its counter in the body")
            if name not in declared and not _counter_of_inner(ctx, name, lp):
                raise Refuse(f"{where} carries {name} from one iteration to the next")
        elif target.type == "subscript_expression":
            access = next((a for a in ctx.model.accesses if a.node == target), None)
            if access is None or (access.space != "global" and access.array not in declared):
                raise Refuse(f"{where} writes {text(target)}, which outlives an iteration")
        else:
            raise Refuse(f"{where} writes through {text(target)}")


def _independent(ctx: Context, lp: Loop, inner: set[str], ranged: list[Ranged], before: list[ts.Node]) -> None:
    """No element written in one iteration is read or written by another, nor read before the loop."""
    m = ctx.model
    inside = [a for a in m.global_accesses() if within(a.node, lp.node)]
    for name in sorted({a.array for a in inside if a.write}):
        if name in m.escapes:
            raise Refuse(f"{name} is used other than by subscript")
        if any(within(a.node, st) for st in before for a in m.global_accesses(name)):
            raise Refuse(f"{name} is read before the loop and written in it")
        mine = [a for a in inside if a.array == name]
        for w in (a for a in mine if a.write):
            for other in mine:
                if w.flat is None or other.flat is None:
                    raise Refuse(f"{name} is indexed opaquely (line {other.line})")
                if not same_iteration(w.flat, other.flat, lp.var, inner, ranged):
                    raise Refuse(f"{name}[{_index(other)}] may touch what another iteration writes at "
                                 f"{name}[{_index(w)}] (line {w.line})")


def _index(access: Access) -> str:
    return "][".join(text(i) for i in access.indices)


def _counter_of_inner(ctx: Context, name: str, lp: Loop) -> bool:
    """`name` is the counter of a loop nested in `lp` that sets it in its header."""
    return any(x.var == name and within(x.node, lp.node) and x.node != lp.node for x in ctx.model.loops)


def _owner(node: ts.Node) -> ts.Node | None:
    """The loop (or switch, for break) a break or continue leaves."""
    n = node.parent
    while n is not None:
        if n.type in _LOOPS or (n.type == "switch_statement" and node.type == "break_statement"):
            return n
        n = n.parent
    return None


def _exclusive(p: Poly | None, cmp: str) -> Poly | None:
    if p is None:
        return None
    return p + Poly.const(1) if cmp == "<=" else p


def _nonnegative(p: Poly | None) -> bool:
    """Every coefficient is non-negative: thread indices, sizes and counters are, so the value is."""
    return p is not None and all(c >= 0 for _, c in p.terms)


def _spec_extent(ctx: Context, bound: Poly) -> E.Expr | None:
    """`bound` written over the spec's sizes: scalar parameters replaced by their spec values."""
    if ctx.spec is None:
        return None
    mapping: dict[str, E.Expr] = {}
    for name in bound.symbols():
        arg = ctx.spec.arg(name)
        if isinstance(arg, Scalar) and isinstance(arg.value, E.Expr):
            mapping[name] = arg.value
        elif name in ctx.spec.sizes:
            mapping[name] = E.Name(name)
        else:
            return None
    return E.substitute(E.parse(to_expr(bound)), mapping)


TRANSFORM = ParallelizeLoop()
