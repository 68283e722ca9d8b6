"""warp-atomic: an atomic update of one address per warp (`atomicAdd(sum, v)`, `atomicMax(&best[b], v)`)
is combined across the warp with shuffles first, and one lane performs the atomic.

Every lane of a warp updating the same address makes the memory system serialize 32 updates; a
butterfly of `__shfl_xor_sync` combines the 32 values in 5 steps and leaves one atomic. Each
thread keeps its updates in a register instead (the operation's identity when it makes none):
the atomic statement becomes `v = v + value;` where it stands, under whatever guards,
conditions and loops hold it (a grid-stride loop, `if (x[i] > 0)`), and after the kernel's
top-level statement that holds it the warp combines the registers and one lane updates the
address, if any lane of the warp would have. An early return (`if (i >= n) return;`) becomes a
block around the rest, so every lane reaches the shuffles.

The address must be the same for all lanes (no thread index or loop counter, directly or through
locals), nothing else in the kernel may name the updated array, the atomic's result must be
unused, and the block a whole number of warps. Refused where at most one lane per warp updates
already (`if (tid == 0)`). Sums are reassociated (validation judges float sums against the
tolerance); integer sums, maxima and minima are exact."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, indent_of
from cuopt.rewrite.transforms.common import fresh, unparen, written_types
from cuopt.rewrite.transforms.shuffle import WARP, butterfly, combine, identity
from cuopt.source.affine import THREAD
from cuopt.source.analysis import called, mentions, statements
from cuopt.source.parse import operator_of, text, walk

_KINDS = {"atomicAdd": "+", "atomicMax": "max", "atomicMin": "min"}
_MAX_MIN_TYPES = ("int", "unsigned int", "unsigned", "long long", "unsigned long long")


@dataclass(frozen=True)
class Plan:
    statement: ts.Node  # the atomic's statement
    call: ts.Node
    address: ts.Node
    value: ts.Node
    kind: str
    element: str
    top: ts.Node  # the kernel's top-level statement that holds it
    early_return: ts.Node | None  # `if (c) return;` before it, which becomes a block around the rest


class WarpAtomic:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        plan = _plan(ctx)
        return [Site(plan.statement, f"every lane of a warp updates {text(plan.address)} with "
                     f"{called(plan.call)}", plan)]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        p: Plan = site.data
        v, any_ = fresh(ctx, "cuopt_v"), fresh(ctx, "cuopt_any")
        fn = called(p.call)
        lane = "(threadIdx.x & 31) == 0" if ctx.dims == 1 else \
            "((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) % 32 == 0"
        first = p.early_return or p.top
        indent = indent_of(ctx.source, first)
        if p.statement == p.top and p.early_return is None:  # every lane reaches it
            lines = [f"{p.element} {v} = {text(p.value)};", butterfly(v, p.kind),
                     f"if ({lane}) {fn}({text(p.address)}, {v});"]
        else:
            update = f"{{ {v} = {combine(p.kind, v, f'({text(p.value)})')}; {any_} = true; }}"
            start = p.early_return.end_byte if p.early_return is not None else p.top.start_byte
            held = (ctx.source[start:p.statement.start_byte] + update.encode()
                    + ctx.source[p.statement.end_byte:p.top.end_byte]).decode().strip()
            if p.early_return is not None:  # the rest of the kernel in a block: every lane reaches the shuffles
                rest = [ln[len(indent):] if ln.startswith(indent) else ln for ln in held.split("\n")]
                cond = text(p.early_return.child_by_field_name("condition"))
                held = "\n".join([f"if (!{cond}) {{", *(f"{indent}    {ln}" if ln.strip() else "" for ln in rest),
                                  f"{indent}}}"])
            lines = [f"{p.element} {v} = {identity(p.kind, p.element)};", f"bool {any_} = false;", held,
                     butterfly(v, p.kind),
                     f"if ({lane} && __any_sync(0xffffffffu, {any_})) {fn}({text(p.address)}, {v});"]
        code = ("\n" + indent).join(lines)
        return Rewritten(apply(ctx.source, [Edit(first.start_byte, p.top.end_byte, code)]), ctx.launch,
                         f"{fn} combined across the warp, one lane updates",
                         written_types(ctx, [_pointer(ctx, p.address)]))


def _plan(ctx: Context) -> Plan:
    m = ctx.model
    threads = ctx.launch.block3[0] * ctx.launch.block3[1] * ctx.launch.block3[2]
    if threads % WARP:
        raise Refuse(f"{threads} threads per block: not a whole number of warps")
    calls = [n for n in m.atomics if called(n) in _KINDS]
    if len(calls) != 1 or len(m.atomics) != 1:
        raise Refuse("no single atomicAdd, atomicMax or atomicMin")
    call = calls[0]
    st = call.parent
    fn = called(call)
    if st is None or st.type != "expression_statement":
        raise Refuse(f"the result of {fn} is used")
    args = call.child_by_field_name("arguments").named_children
    if len(args) != 2:
        raise Refuse("the atomic does not take an address and a value")
    address, value = args
    target = _pointer(ctx, address)
    element = _element(ctx, target, address)
    kind = _KINDS[fn]
    if kind != "+" and element not in _MAX_MIN_TYPES:
        raise Refuse(f"{kind} of {element}")
    if not _uniform(ctx, address, set()):
        raise Refuse(f"the address {text(address)} differs between the lanes of a warp")
    named = mentions(ctx.kernel.body, target)
    if any(not address.start_byte <= n.start_byte < address.end_byte for n in named):
        raise Refuse(f"{target} is named outside the atomic's address")
    top = statements(ctx.kernel.body)
    holder = next((t for t in top if t.start_byte <= st.start_byte and st.end_byte <= t.end_byte), None)
    assert holder is not None
    if _one_lane(ctx, st, holder):
        raise Refuse(f"at most one lane per warp reaches {fn}")
    early = None
    if m.returns:
        sh = ctx.model.shape
        if not (sh.negated and sh.if_node is not None and len(m.returns) == 1 and sh.body and holder == sh.body[-1]):
            raise Refuse("a return other than one early return: not every lane reaches the shuffles")
        early = sh.if_node
    return Plan(st, call, address, value, kind, element, holder, early)


def _one_lane(ctx: Context, st: ts.Node, holder: ts.Node) -> bool:
    """An enclosing condition compares a thread index for equality (`if (tid == 0)`)."""
    node = st.parent
    while node is not None and node != holder.parent:
        if node.type == "if_statement":
            for n in walk(node.child_by_field_name("condition")):
                if n.type == "binary_expression" and operator_of(n) == "==" and \
                        any(not _uniform(ctx, side, set()) for side in (n.child_by_field_name("left"),
                                                                       n.child_by_field_name("right"))):
                    return True
        node = node.parent
    return False


def _element(ctx: Context, name: str | None, address: ts.Node) -> str:
    """The element type of the pointer parameter `name` (the address's pointer) points into."""
    param = ctx.model.pointer_params.get(ctx.model.aliases.get(name, name)) if name else None
    if param is None or getattr(param, "pointer", 0) != 1:
        raise Refuse(f"{text(address)} does not point into a pointer parameter")
    return param.element


def _pointer(ctx: Context, address: ts.Node) -> str | None:
    """The pointer `address` is formed from: `p`, `&p[i]` or `p + i`."""
    node = unparen(address)
    if node.type == "pointer_expression" and text(node).startswith("&"):
        node = node.child_by_field_name("argument")
        node = unparen(node) if node is not None else None
        node = node.child_by_field_name("argument") if node is not None and node.type == "subscript_expression" \
            else None
    elif node.type == "binary_expression" and operator_of(node) == "+":
        node = next((c for c in (node.child_by_field_name("left"), node.child_by_field_name("right"))
                     if c is not None and c.type == "identifier" and text(c) in ctx.model.pointer_params), None)
    return text(node) if node is not None and node.type == "identifier" else None


def _uniform(ctx: Context, node: ts.Node, seen: set[str]) -> bool:
    """`node` has the same value in every lane: no thread index, directly or through locals, and
    no loop counter."""
    m = ctx.model
    counters = {lp.var for lp in m.loops if lp.var}
    for n in walk(node):
        if n.type == "field_expression" and text(n).replace(" ", "") in THREAD:
            return False
        if n.type != "identifier" or text(n) in seen:
            continue
        name = text(n)
        if name in counters:
            return False
        local = m.locals.get(name)
        if local is not None:
            if local.writes or local.init is None or not _uniform(ctx, local.init, seen | {name}):
                return False
    return True


TRANSFORM = WarpAtomic()
