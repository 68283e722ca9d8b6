"""fast-math: a kernel's single-precision math through the fast hardware intrinsics, in one action.

`expf`, `logf`, `sinf`, `cosf` and `powf` become `__expf`, `__logf`, `__sinf`, `__cosf` and `__powf`;
`1.0f / sqrtf(x)` becomes `rsqrtf(x)`; `a / b` and `a /= b` become `__fdividef(a, b)` when both
operands are provably `float`: float parameters and locals (names resolved in scope), literals
with an `f` suffix, calls of functions that return float, elements of float arrays and pointers,
components of float vectors, and `+ - * / ?:` of these. Integer and double operands, constant
expressions and `constexpr` initializers are left alone. The kernel's own body is rewritten;
device functions it calls are not."""
from __future__ import annotations

from collections import Counter
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply
from cuopt.rewrite.transforms.common import unparen
from cuopt.source.analysis import called
from cuopt.source.exprtypes import ExprTypes, is_float_literal
from cuopt.source.parse import operator_of, text, walk

RENAMES = {"expf": "__expf", "logf": "__logf", "sinf": "__sinf", "cosf": "__cosf", "powf": "__powf"}
Key = tuple[int, int, str]  # a node: start byte, end byte, node type


class FastMath:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        plan = _plan(ctx)
        if not plan:
            raise Refuse("no expf/logf/sinf/cosf/powf, 1/sqrtf or division of two floats to replace")
        edits = [Edit.replace(n, _render(ctx, n, plan))
                 for n in walk(ctx.kernel.body, descend=lambda n: _key(n) not in plan) if _key(n) in plan]
        counts = Counter("__fdividef" if kind == "/=" else kind for kind in plan.values())
        return [Site(ctx.kernel.node, note=", ".join(f"{n} {name}" for name, n in counts.items()), data=edits)]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        return Rewritten(apply(ctx.source, site.data), ctx.launch, f"fast-math intrinsics: {site.note}")


def _plan(ctx: Context) -> dict[Key, str]:
    """What to rewrite: node -> an intrinsic's name, "rsqrtf" or "/=" (compound division)."""
    types = ctx.model.types
    plan = {}
    for node in walk(ctx.kernel.body):
        kind = _kind(node, types)
        if kind is not None and not _in_constexpr(node):
            plan[_key(node)] = kind
    return plan


def _kind(node: ts.Node, types: ExprTypes) -> str | None:
    if node.type == "call_expression":
        fn = node.child_by_field_name("function")
        return RENAMES.get(text(fn)) if fn is not None and fn.type == "identifier" else None
    if node.type not in ("binary_expression", "assignment_expression"):
        return None
    left, right, op = _operands(node)
    if op not in ("/", "/=") or not (types.is_float(left) and types.is_float(right)):
        return None
    if op == "/=":
        return "/=" if _pure(left) else None
    if _constant(node):
        return None
    return "rsqrtf" if _is_one(left) and _sqrt_argument(right) is not None else "__fdividef"


def _render(ctx: Context, node: ts.Node, plan: dict[Key, str]) -> str:
    """The text of `node` with every planned rewrite inside it applied."""
    kind = plan.get(_key(node))
    if kind is None:
        return _splice(ctx, node, plan)
    if kind in RENAMES.values():
        return kind + _render(ctx, node.child_by_field_name("arguments"), plan)
    left, right, _ = _operands(node)
    if kind == "rsqrtf":
        argument = _sqrt_argument(right)
        assert argument is not None  # planned only for 1.0f / sqrtf(x)
        return f"rsqrtf({_render(ctx, argument, plan)})"
    a, b = _render(ctx, left, plan), _render(ctx, right, plan)
    return f"__fdividef({a}, {b})" if kind == "__fdividef" else f"{a} = __fdividef({a}, {b})"


def _splice(ctx: Context, node: ts.Node, plan: dict[Key, str]) -> str:
    if not node.children:
        return ctx.text(node)
    out, pos = [], node.start_byte
    for child in node.children:
        out += [ctx.source[pos:child.start_byte].decode(), _render(ctx, child, plan)]
        pos = child.end_byte
    return "".join(out) + ctx.source[pos:node.end_byte].decode()


def _operands(node: ts.Node) -> tuple[ts.Node, ts.Node, str]:
    return node.child_by_field_name("left"), node.child_by_field_name("right"), operator_of(node)


def _sqrt_argument(node: ts.Node) -> ts.Node | None:
    """`x` when `node` is `sqrtf(x)` (maybe parenthesized)."""
    node = unparen(node)
    if called(node) != "sqrtf":
        return None
    args = node.child_by_field_name("arguments").named_children
    return args[0] if len(args) == 1 else None


def _is_one(node: ts.Node) -> bool:
    return is_float_literal(node) and float(text(node)[:-1]) == 1.0


def _constant(node: ts.Node) -> bool:
    """No names and no calls: the compiler folds it."""
    return not any(n.type in ("identifier", "call_expression") for n in walk(node))


def _pure(node: ts.Node) -> bool:
    """Evaluating it twice does what evaluating it once does."""
    return not any(n.type in ("call_expression", "assignment_expression", "update_expression") for n in walk(node))


def _in_constexpr(node: ts.Node) -> bool:
    parent = node.parent
    while parent is not None and parent.type != "function_definition":
        if parent.type == "declaration" and any(c.type == "type_qualifier" and text(c) == "constexpr"
                                                for c in parent.children):
            return True
        parent = parent.parent
    return False


def _key(node: ts.Node) -> Key:
    return node.start_byte, node.end_byte, node.type


TRANSFORM = FastMath()
