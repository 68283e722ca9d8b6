"""fast-math: a kernel's single-precision math through the fast hardware intrinsics, in one action.

`expf`, `logf`, `sinf`, `cosf` and `powf` become `__expf`, `__logf`, `__sinf`, `__cosf` and `__powf`;
`1.0f / sqrtf(x)` becomes `rsqrtf(x)`; `a / b` and `a /= b` become `__fdividef(a, b)` when both
operands are provably `float`: float parameters and locals (names resolved in scope), literals
with an `f` suffix, calls of functions that return float, elements of float arrays and pointers,
components of float vectors, and `+ - * / ?:` of these. Integer and double operands, constant
expressions and `constexpr` initializers are left alone. The kernel's own body is rewritten;
device functions it calls are not."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply
from cuopt.rewrite.transforms.common import unparen
from cuopt.source.parse import text, walk
from cuopt.spec.dtypes import normalize_c_type

RENAMES = {"expf": "__expf", "logf": "__logf", "sinf": "__sinf", "cosf": "__cosf", "powf": "__powf"}
FLOAT_FUNCTIONS = frozenset({
    "expf", "exp2f", "exp10f", "expm1f", "logf", "log2f", "log10f", "log1pf", "sinf", "cosf", "tanf",
    "asinf", "acosf", "atanf", "atan2f", "sinhf", "coshf", "tanhf", "powf", "sqrtf", "rsqrtf", "cbrtf",
    "rcbrtf", "hypotf", "fabsf", "fmaxf", "fminf", "fmaf", "fmodf", "floorf", "ceilf", "truncf", "roundf",
    "rintf", "erff", "erfcf", "copysignf", "__expf", "__exp10f", "__logf", "__log2f", "__log10f", "__sinf",
    "__cosf", "__tanf", "__powf", "__fdividef", "__saturatef", "__frcp_rn", "__fsqrt_rn", "__frsqrt_rn",
    "__fadd_rn", "__fsub_rn", "__fmul_rn", "__fdiv_rn", "__fmaf_rn", "__int_as_float", "__uint_as_float"})
FLOAT_VECTORS = frozenset({"float1", "float2", "float3", "float4"})
_FLOAT_LITERAL = re.compile(r"(?:(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)[fF]")

Type = tuple[str, int]  # element type and indirection depth (pointers plus array dimensions)
Key = tuple[int, int, str]  # a node: start byte, end byte, node type
FLOAT: Type = ("float", 0)


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
    types = _Types(ctx)
    plan = {}
    for node in walk(ctx.kernel.body):
        kind = _kind(node, types)
        if kind is not None and not _in_constexpr(node):
            plan[_key(node)] = kind
    return plan


def _kind(node: ts.Node, types: _Types) -> str | None:
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


class _Types:
    """The static type of an expression where it can be proved; None where it cannot."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def is_float(self, node: ts.Node) -> bool:
        return self.of(node) == FLOAT

    def of(self, node: ts.Node) -> Type | None:
        t = node.type
        if t == "number_literal":
            return FLOAT if _FLOAT_LITERAL.fullmatch(text(node)) else None
        if t == "identifier":
            return _declared(self.ctx, node)
        if t == "parenthesized_expression" and len(node.named_children) == 1:
            return self.of(node.named_children[0])
        if t == "subscript_expression" or (t == "pointer_expression" and _op(node) == "*"):
            return self._element(node.child_by_field_name("argument"))
        if t == "field_expression":
            return self._component(node)
        if t == "call_expression":
            return self._call(node)
        if t == "cast_expression":
            return FLOAT if normalize_c_type(text(node.child_by_field_name("type"))) == "float" else None
        if t == "unary_expression" and _op(node) in ("-", "+"):
            return FLOAT if self.is_float(node.child_by_field_name("argument")) else None
        if t == "binary_expression" and _op(node) in ("+", "-", "*", "/"):
            return FLOAT if all(self.is_float(n) for n in _operands(node)[:2]) else None
        if t == "conditional_expression":
            branches = (node.child_by_field_name("consequence"), node.child_by_field_name("alternative"))
            return FLOAT if all(b is not None and self.is_float(b) for b in branches) else None
        return None

    def _element(self, base: ts.Node | None) -> Type | None:
        t = self.of(base) if base is not None else None
        return (t[0], t[1] - 1) if t is not None and t[1] > 0 else None

    def _component(self, node: ts.Node) -> Type | None:
        base = self.of(node.child_by_field_name("argument"))
        depth = 1 if _op(node) == "->" else 0
        if base is None or base[1] != depth or base[0] not in FLOAT_VECTORS:
            return None
        return FLOAT if text(node.child_by_field_name("field")) in ("x", "y", "z", "w") else None

    def _call(self, node: ts.Node) -> Type | None:
        fn = text(node.child_by_field_name("function"))
        if fn in FLOAT_FUNCTIONS:
            return FLOAT
        args = node.child_by_field_name("arguments").named_children
        if fn == "__ldg" and len(args) == 1 and args[0].type == "pointer_expression" and _op(args[0]) == "&":
            return self.of(args[0].child_by_field_name("argument"))
        return None


def _declared(ctx: Context, ident: ts.Node) -> Type | None:
    """The declared type of the variable `ident` names: the innermost declaration before it in an
    enclosing scope, else the kernel's parameter; None for anything declared outside the kernel."""
    name, scope = text(ident), ident.parent
    while scope is not None and scope != ctx.kernel.node:
        found = [t for decl in _declarations(scope) for node, t in _declarators(decl)
                 if text(node) == name and node.end_byte <= ident.start_byte]
        if found:
            return found[-1]
        scope = scope.parent
    param = ctx.kernel.param(name)
    return (param.base_type, param.pointer) if param is not None else None


def _declarations(scope: ts.Node) -> Iterator[ts.Node]:
    """Declarations directly in `scope` (a block, a for initializer, an if/while condition)."""
    for child in scope.named_children:
        if child.type == "declaration":
            yield child
        elif child.type == "condition_clause":
            yield from (c for c in child.named_children if c.type == "declaration")


def _declarators(decl: ts.Node) -> Iterator[tuple[ts.Node, Type]]:
    """(name node, type) of each variable a declaration declares; `?` for a type not followed."""
    type_node = decl.child_by_field_name("type")
    base = normalize_c_type(text(type_node)) if type_node is not None else "?"
    for d in decl.children_by_field_name("declarator"):
        element, depth = base, 0
        while d is not None and d.type != "identifier":
            if d.type in ("pointer_declarator", "array_declarator"):
                depth += 1
            elif d.type not in ("init_declarator", "reference_declarator"):
                element = "?"
            d = d.child_by_field_name("declarator") or next(
                (c for c in d.named_children if c.type == "identifier" or c.type.endswith("declarator")), None)
        if d is not None:
            yield d, (element, depth)


def _operands(node: ts.Node) -> tuple[ts.Node, ts.Node, str]:
    return node.child_by_field_name("left"), node.child_by_field_name("right"), _op(node)


def _op(node: ts.Node) -> str:
    return text(node.child_by_field_name("operator"))


def _sqrt_argument(node: ts.Node) -> ts.Node | None:
    """`x` when `node` is `sqrtf(x)` (maybe parenthesized)."""
    node = unparen(node)
    if node.type != "call_expression" or text(node.child_by_field_name("function")) != "sqrtf":
        return None
    args = node.child_by_field_name("arguments").named_children
    return args[0] if len(args) == 1 else None


def _is_one(node: ts.Node) -> bool:
    return node.type == "number_literal" and bool(_FLOAT_LITERAL.fullmatch(text(node))) \
        and float(text(node)[:-1]) == 1.0


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
