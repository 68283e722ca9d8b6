"""row-cache: a row that a team of lanes reads in several column loops is loaded once, into a
register array, and the later loops read the registers.

The loops are `for (int j = START; j < BOUND; j += STEP)` with the same START, BOUND and STEP
(the form row-parallel writes, and the usual block-per-row spelling), and the row is `a[BASE + j]`
with `a` read-only; every such row the loops read is cached at once, each in a register array of
its own. Each loop becomes a fully unrolled loop over the `elements` register slots when the row
fits (`BOUND <= START + elements * STEP`, checked at run time, the branch opened with the
analysis's ROW_FITS comment), and stays as it was otherwise; a
lane whose slots all lie inside the row runs a copy without per-element bound checks (every lane,
when the row fills the slots exactly). With `width = 1` every thread walks the same columns in the
same order as before, so results are bit-identical. With `width = 4` each lane loads 4
consecutive elements at a time (float4), which changes which lane sees which column: allowed only
where the lanes' values are combined across the team afterwards (a shuffle, or a store to
`shared[threadIdx.x]` for a shared-memory tree) or the loop is elementwise. Atomic updates of
other buffers in the loops stay as they are.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, indent_of, node_text
from cuopt.rewrite.transforms.common import (
    assigned_outside, combined_after, fresh, read_only_element, reindent, uses, written_types)
from cuopt.rewrite.transforms.vectors import vector_type
from cuopt.source.analysis import ROW_FITS, called, cross_thread, global_accesses, mentions, read_expression
from cuopt.source.ctypes import HALF_TYPES
from cuopt.source.increments import Increment
from cuopt.source.model import ATOMIC_PREFIX
from cuopt.source.parse import assigned, assigned_target, declared_names, operator_of, text, walk

_ELEMENTS = ("float", "double", "int", "unsigned int", "unsigned", "long long", "short", "unsigned short",
             "char", "signed char", "unsigned char", *HALF_TYPES)
# a team's lane index, as written, that is exactly 0 .. STEP-1 (what width 4 needs)
_LANES = {("threadIdx.x % 32", "32"), ("threadIdx.x & 31", "32"), ("threadIdx.x", "blockDim.x")}


@dataclass(frozen=True)
class ColumnLoop:
    node: ts.Node  # the for statement
    pragma: ts.Node | None  # a `#pragma unroll` right before it
    var: str
    var_type: str
    start: str
    bound: str
    step: str
    reads: tuple[ts.Node, ...]  # the cached row's reads in this loop (an `__ldg(&a[i])` call or `a[i]`)
    carried: tuple[str, ...]  # variables declared outside the loop that it assigns
    writes: tuple[ts.Node, ...]  # global stores in the loop


@dataclass(frozen=True)
class Plan:
    array: str
    element: str
    base: str  # the row's first element: the read's index with the counter at 0
    loops: tuple[ColumnLoop, ...]
    anchor: ts.Node  # the statement the register array is declared before


# one loop's rewrite: each cached row's plan, its reads in this loop, and its register array
Cached = list[tuple[Plan, ColumnLoop, str]]


class RowCache:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        groups: dict[tuple[str, str, str], list[ColumnLoop]] = {}
        reasons: list[str] = []
        loose: list[str] = []
        for lp in ctx.model.loops:
            try:
                col = _column(ctx, lp.node)
            except Refuse as why:
                loose.append(str(why))
                continue
            groups.setdefault((col.start, col.bound, col.step), []).append(col)
        sites = []
        for loops in groups.values():
            if len(loops) < 2:
                continue
            together: dict[tuple[tuple[int, ...], str], list[Plan]] = {}
            for (array, base), chain in _chains(ctx, loops):
                try:
                    plan = _plan(ctx, array, base, chain)
                except Refuse as why:
                    reasons.append(str(why))
                    continue
                together.setdefault((tuple(c.node.start_byte for c in plan.loops), plan.element), []).append(plan)
            for plans in together.values():
                lines = ", ".join(str(c.node.start_point.row + 1) for c in plans[0].loops)
                rows = " and ".join(f"{p.array}[{p.base} + j]" for p in plans)
                sites.append(Site(plans[0].loops[0].node, f"the loops at lines {lines} each read the row "
                                  f"{rows} from memory; {'they fit' if len(plans) > 1 else 'it fits'} in "
                                  f"registers, read once", tuple(plans)))
        if not sites:
            raise Refuse((reasons or loose or ["no two column loops that read the same row"])[0])
        return sites

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        elements, width = int(params["elements"]), int(params["width"])
        plans: tuple[Plan, ...] = site.data
        if width not in (1, 4) or elements % width or elements <= 0:
            raise Refuse(f"elements {elements}, width {width}: expected width 1 or 4 dividing elements")
        plan = plans[0]
        _check_size(ctx, plan.loops[0], elements,
                    [int(e) for e in rule.params["elements"] if int(e) % width == 0])
        if width > 1:
            _check_vectorizable(ctx, plan)
            vt = vector_type(plan.element, width)
        else:
            vt = ""
        names = {k: fresh(ctx, f"cuopt_{k}") for k in ("k", "c", "t", "v")}
        rows = [fresh(ctx, "cuopt_row")] if len(plans) == 1 else [fresh(ctx, f"cuopt_{p.array}_row") for p in plans]
        indent = indent_of(ctx.source, plan.anchor)
        edits = [Edit.insert(_line_start(ctx, plan.anchor),
                             "".join(f"{indent}{plan.element} {row}[{elements}];\n" for row in rows))]
        for i, col in enumerate(plan.loops):
            cached = [(p, p.loops[i], row) for p, row in zip(plans, rows)]
            code = _cached_loop(ctx, cached, i == 0, elements, width, vt, names)
            start = col.pragma if col.pragma is not None else col.node
            edits.append(Edit(start.start_byte, col.node.end_byte, code))
        how = f"{width}-wide loads, " if width > 1 else ""
        arrays = [p.array for p in plans]
        what = f"{arrays[0]}'s row" if len(arrays) == 1 else f"the rows of {' and '.join(arrays)}"
        return Rewritten(apply(ctx.source, edits), ctx.launch,
                         f"{what} read once into {elements} registers per lane ({how}"
                         f"{len(plan.loops)} loops)", written_types(ctx, arrays))


# -- analysis ---------------------------------------------------------------------------------
def _column(ctx: Context, node: ts.Node) -> ColumnLoop:
    """A loop `for (int j = START; j < BOUND; j += STEP)` that keeps to itself (no barrier,
    shuffle, vote, break or return), or Refuse. An atomic update is allowed: its target is another
    buffer than a cached row (a cached row is read-only, `_plan`), so it cannot change the row."""
    line = node.start_point.row + 1
    index = ctx.model.loop_of(node)
    lp = ctx.model.loops[index] if index is not None else None
    if lp is None or not lp.counter_type or lp.var is None:
        raise Refuse(f"the loop at line {line} does not declare its counter")
    if len(declared_names(node.child_by_field_name("initializer"))) != 1:
        raise Refuse(f"the loop at line {line} does not declare one counter")
    var = lp.var
    if lp.cmp != "<" or lp.bound_node is None:
        raise Refuse(f"the loop at line {line} is not bounded by `{var} < ...`")
    step = _step(lp.increment, var, lp.step)
    if step is None or lp.start_node is None:
        raise Refuse(f"the loop at line {line} does not step by a constant or blockDim.x")
    body = lp.body
    carried = assigned_outside(body)
    if var in carried:
        raise Refuse(f"the loop at line {line} changes its counter in the body")
    writes: list[ts.Node] = []
    for n in walk(body):
        if n.type in ("break_statement", "goto_statement", "return_statement"):
            raise Refuse(f"{n.type.split('_')[0]} in the loop at line {line}")
        if cross_thread(n) and not called(n).startswith(ATOMIC_PREFIX):
            raise Refuse(f"the loop at line {line} calls {called(n)}")
        target = assigned(n)
        if target is not None and target.type == "subscript_expression":
            writes.append(target)
    return ColumnLoop(node, lp.pragma, var, lp.counter_type, _flat(text(lp.start_node)), _flat(text(lp.bound_node)),
                      step, (), tuple(carried), tuple(writes))


def _step(inc: Increment | None, var: str, constant: int | None) -> str | None:
    """The step's text: `var += S` (`var++`, `var = var + S`) with S a positive constant (a macro too)
    or blockDim.x."""
    if inc is None or inc.counter != var or inc.op != "+":
        return None
    if (constant is not None and constant > 0) or _flat(inc.amount) == "blockDim.x":
        return _flat(inc.amount)
    return None


def _chains(ctx: Context, loops: list[ColumnLoop]) -> list[tuple[tuple[str, str], list[ColumnLoop]]]:
    """Each row (array, base) with the loops from one that reads it on: one chain from its first
    reading loop, and another from each reading loop after a loop that stores (a kernel that keeps
    its original loops beside a rewritten copy, such as privatize's, reads the row in both)."""
    chains = []
    for key, chosen in _rows(ctx, loops).items():
        start = 0
        while start < len(chosen):
            chains.append((key, chosen[start:]))
            stored = next((i for i in range(start, len(chosen)) if chosen[i].writes and chosen[i].reads), None)
            if stored is None:
                break
            start = next((i for i in range(stored + 1, len(chosen)) if chosen[i].reads), len(chosen))
    return chains


def _rows(ctx: Context, loops: list[ColumnLoop]) -> dict[tuple[str, str], list[ColumnLoop]]:
    """The rows (array, base) read in two or more of the loops, each with the loops that read it."""
    found: dict[tuple[str, str], dict[int, list[ts.Node]]] = {}
    for i, col in enumerate(loops):
        for a in global_accesses(ctx.model):
            if not (col.node.start_byte <= a.node.start_byte < col.node.end_byte) or not a.read or a.write:
                continue
            base = _base(a.indices[0], col.var) if len(a.indices) == 1 else None
            if base is not None:
                found.setdefault((a.array, base), {}).setdefault(i, []).append(read_expression(a.node))
    rows = {}
    for key, by_loop in found.items():
        if len(by_loop) >= 2:
            first = min(by_loop)
            rows[key] = [ColumnLoop(**{**col.__dict__, "reads": tuple(by_loop.get(i, ()))})
                         for i, col in enumerate(loops) if i >= first]
    return rows


def _base(index: ts.Node, var: str) -> str | None:
    """`B` for an index `B + var` or `var + B` (B free of var), `0` for `var`; None otherwise."""
    while index.type == "parenthesized_expression" and index.named_child_count == 1:
        index = index.named_children[0]
    if index.type == "identifier" and text(index) == var:
        return "0"
    if index.type != "binary_expression" or operator_of(index) != "+":
        return None
    left, right = index.child_by_field_name("left"), index.child_by_field_name("right")
    for mine, other in ((right, left), (left, right)):
        if mine.type == "identifier" and text(mine) == var and not _mentions(other, var):
            return _flat(text(other))
    return None


def _plan(ctx: Context, array: str, base: str, loops: list[ColumnLoop]) -> Plan:
    m = ctx.model
    element = read_only_element(ctx, array, _ELEMENTS)
    for col in loops:
        if any(r.type == "pointer_expression" for r in col.reads):
            raise Refuse(f"the address of {array}[...] is taken in the loop at line {col.node.start_point.row + 1}")
    # a loop that reads the row but comes later than a loop that stores: the cache is only for
    # loops up to the first that stores (its stores come after its own reads of each element)
    kept: list[ColumnLoop] = []
    for col in loops:
        if not col.reads:
            continue
        kept.append(col)
        if col.writes:
            break
    if len(kept) < 2:
        raise Refuse(f"{array}'s row is read again only after a loop that stores")
    last = kept[-1]
    for w in last.writes:
        store = next((a for a in m.accesses if a.node == w), None)
        if store is None or len(store.indices) != 1 or _base(store.indices[0], last.var) != base:
            raise Refuse(f"the loop at line {last.node.start_point.row + 1} stores {text(w)}, "
                         f"not element {base} + {last.var}: it could overlap the cached row")
    region = (kept[0].node.start_byte, last.node.end_byte)
    for a in global_accesses(ctx.model):
        inside_last = last.node.start_byte <= a.node.start_byte < last.node.end_byte
        if region[0] <= a.node.start_byte < region[1] and (a.write or a.atomic) and not inside_last:
            raise Refuse(f"{text(a.node)} is stored between the loops (line {a.line}): it could overlap the row")
    names = {n for c in kept for part in (c.start, c.bound, base) for n in re.findall(r"[A-Za-z_]\w*", part)}
    for n in walk(ctx.kernel.body):
        target = assigned_target(n) if region[0] <= n.start_byte < region[1] else None
        if target in names:
            raise Refuse(f"{target} changes between the loops (line {n.start_point.row + 1})")
    return Plan(array, element, base, tuple(kept), _anchor(ctx, kept))


def _anchor(ctx: Context, loops: list[ColumnLoop]) -> ts.Node:
    """The statement, in the innermost block holding every loop, that holds the first loop; only
    plain blocks may lie between it and the first loop, so that loop always runs before the others."""
    first, last = loops[0].node, loops[-1].node
    scope = first.parent
    while scope is not None and not (scope.type == "compound_statement" and scope.start_byte <= last.start_byte
                                     and last.end_byte <= scope.end_byte):
        scope = scope.parent
    if scope is None:
        raise Refuse("the loops share no block")
    anchor = first
    while anchor.parent != scope:
        anchor = anchor.parent
        if anchor.type != "compound_statement":
            raise Refuse(f"the first loop (line {first.start_point.row + 1}) runs only under a condition or loop "
                         f"that the others are outside of")
    return anchor


def _check_size(ctx: Context, col: ColumnLoop, elements: int, choices: list[int]) -> None:
    """At the spec's sizes the row must fit, and no smaller count of the rule's `choices` may:
    the smallest register array that holds the row is the one worth trying."""
    m = ctx.model
    lp = m.loops[m.loop_of(col.node)]
    step = lp.step if lp.step is not None else \
        ctx.at_spec(m.poly(lp.increment.step)) if lp.increment is not None else None
    bound = ctx.at_spec(lp.bound)
    if step is None or bound is None or step <= 0:
        return
    if bound > elements * step:
        raise Refuse(f"a row of {bound} does not fit {elements} elements per lane over {step} lanes")
    smaller = [e for e in choices if e < elements and bound <= e * step]
    if smaller:
        raise Refuse(f"a row of {bound} fits {min(smaller)} elements per lane over {step} lanes")


def _check_vectorizable(ctx: Context, plan: Plan) -> None:
    col = plan.loops[0]
    local = ctx.model.locals.get(col.start)  # `const int lane = threadIdx.x % 32;`
    lane = _flat(text(local.init)) if local is not None and local.init is not None and local.writes == 0 else col.start
    lp = ctx.model.loops[ctx.model.loop_of(col.node)]
    step = str(lp.step) if lp.step is not None else col.step
    if (lane, step) not in _LANES:
        raise Refuse(f"wider loads give each lane other columns: the lanes must be threadIdx.x over blockDim.x "
                     f"or threadIdx.x % 32 over 32, not {col.start} over {col.step}")
    for c in plan.loops:
        for name in c.carried:
            if not combined_after(ctx, c.node, name):
                raise Refuse(f"{name} (line {c.node.start_point.row + 1}) is a lane's own value, not combined "
                             f"across the lanes after the loop: wider loads would change it")


# -- code -------------------------------------------------------------------------------------
def _cached_loop(ctx: Context, cached: Cached, load: bool, elements: int, width: int, vt: str,
                 names: dict[str, str]) -> str:
    """The loop, cached: `if (fits) { if (full) UNROLLED else GUARDED } else ORIGINAL`. A lane
    whose slots all hold columns of the row (`full`, every lane when the row fills the team's
    slots exactly) runs the unrolled loop without a per-element bound check; the guarded copy
    serves a row that ends inside the lane's slots."""
    col = cached[0][1]
    indent = indent_of(ctx.source, col.pragma if col.pragma is not None else col.node)
    i1 = indent + "    "
    original = reindent(col.node, ctx.text(col.node), i1)
    if col.pragma is not None:
        original = f"{i1}{ctx.text(col.pragma)}\n{original}"
    if width == 1:
        fits = f"{col.bound} <= {col.start} + {elements} * {col.step}"
        full = f"{_last_slot(col, elements - 1)} < {col.bound}"
    else:
        checks = [f"{col.bound} <= {elements} * {col.step}"]
        for base in dict.fromkeys(p.base for p, _, _ in cached):
            if base != "0":
                checks.append(f"({base}) % {width} == 0")
        checks += [f"reinterpret_cast<unsigned long long>({p.array}) % sizeof({vt}) == 0" for p, _, _ in cached]
        fits = " && ".join(checks)
        full = f"{width} * ({_last_slot(col, elements // width - 1)}) + {width - 1} < {col.bound}"
    unrolled = _unrolled(ctx, cached, load, elements, width, vt, names, indent + "    " * 2, guarded=False)
    guarded = _unrolled(ctx, cached, load, elements, width, vt, names, indent + "    " * 2, guarded=True)
    return "\n".join([f"if ({fits}) {{  {ROW_FITS}", f"{i1}if ({full}) {{", *unrolled, f"{i1}}} else {{", *guarded,
                      f"{i1}}}",
                      f"{indent}}} else {{", original, f"{indent}}}"])


def _last_slot(col: ColumnLoop, times: int) -> str:
    """The lane's column `times` steps after its first."""
    if times == 0:
        return col.start
    return f"{col.start} + {col.step}" if times == 1 else f"{col.start} + {times} * {col.step}"


def _unrolled(ctx: Context, cached: Cached, load: bool, elements: int, width: int, vt: str,
              names: dict[str, str], indent: str, *, guarded: bool) -> list[str]:
    """The fully unrolled loop over the lane's slots; with `guarded`, each element (and each
    vector load or store) only where it lies inside the row."""
    k, c, t, v = (names[x] for x in ("k", "c", "t", "v"))
    col = cached[0][1]
    slot = k if width == 1 else f"{width} * {c} + {t}"
    repl = {(r.start_byte, r.end_byte): f"{row}[{slot}]" for _, here, row in cached for r in here.reads}
    body = col.node.child_by_field_name("body")
    assert body is not None
    depth = (1 if width == 1 else 2) + guarded
    statements = reindent(body, node_text(body, repl), indent + "    " * depth)
    i1, i2 = indent + "    ", indent + "    " * 2
    if width == 1:
        lines = [f"{indent}#pragma unroll",
                 f"{indent}for (int {k} = 0; {k} < {elements}; ++{k}) {{"]
        if guarded or load or uses(statements, col.var):
            lines.append(f"{i1}const {col.var_type} {col.var} = {col.start} + {k} * {col.step};")
        inner = i2 if guarded else i1
        if guarded:
            lines.append(f"{i1}if ({col.var} < {col.bound}) {{")
        if load:
            lines += [f"{inner}{row}[{k}] = {ctx.text(here.reads[0])};" for _, here, row in cached]
        lines += [statements, *([f"{i1}}}"] if guarded else []), f"{indent}}}"]
        return lines
    lines = [f"{indent}#pragma unroll",
             f"{indent}for (int {c} = 0; {c} < {elements // width}; ++{c}) {{",
             f"{i1}const int {v}_at = {width} * ({col.start} + {c} * {col.step});"]
    if load:
        comps = "xyzw"[:width]
        vector_loads, scalar_loads = [], []
        for i, (p, _, row) in enumerate(cached):
            at = f"({p.base}) + {v}_at" if p.base != "0" else f"{v}_at"
            word = v if len(cached) == 1 else f"{v}{i}"
            vector_loads += [f"const {vt} {word} = *reinterpret_cast<const {vt}*>({p.array} + {at});",
                             *(f"{row}[{width} * {c} + {n}] = {word}.{comp};" for n, comp in enumerate(comps))]
            scalar_loads.append(f"{i2}    if ({v}_at + {t} < {col.bound}) {row}[{width} * {c} + {t}] = {p.array}[{at} + {t}];")
        if guarded:
            lines += [f"{i1}if ({v}_at + {width - 1} < {col.bound}) {{",
                      *(i2 + x for x in vector_loads),
                      f"{i1}}} else {{",
                      f"{i2}#pragma unroll",
                      f"{i2}for (int {t} = 0; {t} < {width}; ++{t})" + (" {" if len(cached) > 1 else ""),
                      *scalar_loads, *([f"{i2}}}"] if len(cached) > 1 else []),
                      f"{i1}}}"]
        else:
            lines += [i1 + x for x in vector_loads]
    lines += _vector_store(ctx, cached, width, vt, names, i1, guarded=guarded)
    lines += [f"{i1}#pragma unroll", f"{i1}for (int {t} = 0; {t} < {width}; ++{t}) {{"]
    if guarded or uses(statements, col.var):
        lines.append(f"{i2}const {col.var_type} {col.var} = {v}_at + {t};")
    lines += [f"{i2}if ({col.var} < {col.bound}) {{", statements, f"{i2}}}"] if guarded else [statements]
    return [*lines, f"{i1}}}", f"{indent}}}"]


def _vector_store(ctx: Context, cached: Cached, width: int, vt: str, names: dict[str, str],
                  indent: str, *, guarded: bool) -> list[str]:
    """For an elementwise loop `dst[base + j] = e;` (dst of the row's element type): the chunk's
    `width` results stored with one vector store when it is whole and dst aligned; the scalar
    loop after it handles the rest. No lines when the loop is not of that form."""
    plan, col, _ = cached[0]
    store = _single_store(ctx, col)
    if store is None:
        return []
    target, value = store
    dst = text(target.child_by_field_name("argument"))
    param = ctx.model.pointer_params.get(ctx.model.aliases.get(dst, dst))
    if getattr(param, "base_type", "") != plan.element or getattr(param, "pointer", 0) != 1:
        return []
    c, v = names["c"], names["v"]
    at = f"({plan.base}) + {v}_at" if plan.base != "0" else f"{v}_at"
    i1 = indent + "    "
    whole = f"{v}_at + {width - 1} < {col.bound} && " if guarded else ""
    lines = [f"{indent}if ({whole}reinterpret_cast<unsigned long long>({dst}) % sizeof({vt}) == 0) {{",
             f"{i1}{vt} {v}_out;"]
    for n, comp in enumerate("xyzw"[:width]):
        repl = {(r.start_byte, r.end_byte): f"{row}[{width} * {c} + {n}]" for _, here, row in cached for r in here.reads}
        repl.update({(i.start_byte, i.end_byte): f"({v}_at + {n})" for i in walk(value)
                     if i.type == "identifier" and text(i) == col.var})
        lines.append(f"{i1}{v}_out.{comp} = {_flat(node_text(value, repl))};")
    lines += [f"{i1}*reinterpret_cast<{vt}*>({dst} + {at}) = {v}_out;", f"{i1}continue;", f"{indent}}}"]
    return lines


def _single_store(ctx: Context, col: ColumnLoop) -> tuple[ts.Node, ts.Node] | None:
    """(target, value) when the loop's body is the one statement `dst[i] = value;`, i its row's
    element, with no other store or assignment in value."""
    body = col.node.child_by_field_name("body")
    while body is not None and body.type == "compound_statement" and body.named_child_count == 1:
        body = body.named_children[0]
    if body is None or body.type != "expression_statement" or body.named_child_count != 1:
        return None
    assign = body.named_children[0]
    if assign.type != "assignment_expression" or operator_of(assign) != "=":
        return None
    target, value = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    if target is None or value is None or target.type != "subscript_expression" or col.writes != (target,):
        return None
    if any(n.type in ("assignment_expression", "update_expression") for n in walk(value)):
        return None
    return target, value


def _line_start(ctx: Context, node: ts.Node) -> int:
    return ctx.source.rfind(b"\n", 0, node.start_byte) + 1


def _mentions(node: ts.Node, name: str) -> bool:
    return bool(mentions(node, name))


def _flat(code: str) -> str:
    return " ".join(code.split())


TRANSFORM = RowCache()
