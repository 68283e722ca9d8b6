"""register-accumulate (scalar promotion): a global element that a loop reads and writes at one
loop-invariant index becomes a register, loaded once before the loop (or set by the plain store
just before it), updated in the loop and stored once after it.

Legal because no other access of that buffer is in the loop, and the spec's buffers are distinct
allocations (docs/spec.md), so no other pointer reaches the element while the loop runs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, indent_of, node_text
from cuopt.rewrite.transforms.common import fresh
from cuopt.source.analysis import assignment
from cuopt.source.model import Access, Loop
from cuopt.source.parse import assigned, declared_names, text, walk, within


_ZERO = {"float": "0.0f", "double": "0.0"}


@dataclass(frozen=True)
class Promotion:
    loop: Loop
    accesses: tuple[Access, ...]  # every access of the element in the loop
    before: ts.Node | None  # `X[i] = e;` or `X[i] op= e;` right before the loop, absorbed


class RegisterAccumulate:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        if ctx.spec is None:
            raise Refuse("needs the spec, which declares the buffers distinct")
        out, reasons = [], []
        for index, lp in enumerate(ctx.model.loops):
            for name in sorted({a.array for a in ctx.model.global_accesses() if index in a.loops and a.write}):
                try:
                    p = _promotion(ctx, index, name)
                except Refuse as exc:
                    reasons.append(f"{name} in the loop at line {lp.line}: {exc}")
                    continue
                out.append(Site(p.accesses[0].node, note=f"{name} is read and written in the loop at line "
                                                         f"{lp.line}", data=p))
        if not out:
            raise Refuse("; ".join(reasons) or "no loop writes a global element")
        return out

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        p: Promotion = site.data
        first = p.accesses[0]
        element = ctx.text(first.node)
        reg = fresh(ctx, f"{first.array}_acc")
        type_ = ctx.kernel.param(first.array).base_type
        indent = indent_of(ctx.source, p.loop.node)
        body = node_text(p.loop.node, {(a.node.start_byte, a.node.end_byte): reg for a in p.accesses})
        initial = _initial(ctx, p.before, element)
        if p.before is not None and _literal(p.before):
            start, store = initial, reg
        elif all(_summed(a) for a in p.accesses):
            start, store = _ZERO.get(type_, "0"), f"{initial} + {reg}"
        else:
            start, store = initial, reg
        code = f"{type_} {reg} = {start};\n{indent}{body}\n{indent}{element} = {store};"
        begin = p.before if p.before is not None else p.loop.node
        edits = [Edit(begin.start_byte, p.loop.node.end_byte, code)]
        return Rewritten(apply(ctx.source, edits), ctx.launch,
                         f"{element} kept in a register across the loop at line {p.loop.line}")


def _promotion(ctx: Context, index: int, name: str) -> Promotion:
    m = ctx.model
    lp = m.loops[index]
    if name in m.escapes:
        raise Refuse("the pointer is used other than by subscript")
    inside = [a for a in m.global_accesses(name) if index in a.loops]
    if any(a.atomic for a in inside):
        raise Refuse("updated atomically")
    keys = {str(a.index) for a in inside}
    if len(keys) != 1 or any(i is None for a in inside for i in a.index):
        raise Refuse("accessed at more than one index (or an opaque one) in the loop")
    if any(a.node.parent is not None and a.node.parent.type == "pointer_expression" for a in inside):
        raise Refuse("its address is taken")
    if any(i.symbols() & _assigned(lp.node) for i in inside[0].index):
        raise Refuse("the index changes with the loop")
    if not any(a.read for a in inside):
        raise Refuse("only written in the loop")
    before = lp.node.prev_named_sibling
    if before is None or not _stores(ctx, before, name, keys):
        before = None
    return Promotion(lp, tuple(sorted(inside, key=lambda a: a.node.start_byte)), before)


def _stores(ctx: Context, st: ts.Node, name: str, keys: set[str]) -> bool:
    """`st` is `X[i] = e;` or `X[i] op= e;` at the loop's index, with no other access of X in e."""
    a = assignment(st) if st.type == "expression_statement" else None
    if a is None:
        return False
    target = next((x for x in ctx.model.global_accesses(name) if x.node == a.target), None)
    others = [x for x in ctx.model.global_accesses(name) if x.node != a.target and within(x.node, a.node)]
    return target is not None and str(target.index) in keys and not others


def _initial(ctx: Context, before: ts.Node | None, element: str) -> str:
    """The element's value when the loop starts: the absorbed store's, or the element itself."""
    if before is None:
        return element
    a = assignment(before)
    assert a is not None  # `_stores` took it
    op, value = a.op, a.value
    right = ctx.text(value)
    if op == "=":
        return right
    bare = value.type in ("identifier", "number_literal", "field_expression", "call_expression", "subscript_expression")
    return f"{element} {op[:-1]} {right if bare else f'({right})'}"


def _literal(st: ts.Node) -> bool:
    """`X[i] = 0.0f;` and the like: a plain store of a number."""
    a = assignment(st)
    value = a.value if a is not None and a.op == "=" else None
    if value is not None and value.type == "unary_expression":
        value = value.child_by_field_name("argument")
    return value is not None and value.type == "number_literal"


def _summed(access: Access) -> bool:
    """The access is the target of `X[i] += e` or `X[i] -= e`, its only use in the statement."""
    a = assignment(access.node.parent) if access.node.parent is not None else None
    return a is not None and a.target == access.node and a.op in ("+=", "-=")


def _assigned(node: ts.Node) -> set[str]:
    """Names assigned or stepped anywhere in `node` (a loop's counters among them)."""
    out = set()
    for n in walk(node):
        target = assigned(n)
        if target is not None and target.type == "identifier":
            out.add(text(target))
        if n.type == "declaration":
            out |= declared_names(n)
    return out


TRANSFORM = RegisterAccumulate()
