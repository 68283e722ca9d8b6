"""The float64 shadow of a kernel: the original with its float types, literals and math functions
promoted to double precision, run on the same inputs to give an accurate reference.

A pure source transform (tree-sitter edits on the kernel and the device functions it calls); when
a kernel cannot be promoted faithfully, `promote` says why and the original stays the reference."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import tree_sitter as ts

from cuopt.evaluate.accuracy import Error
from cuopt.evaluate.compile import CompileError, Compiled
from cuopt.rewrite.edits import Edit, apply, node_text
from cuopt.source.kernels import load
from cuopt.source.parse import text, walk
from cuopt.spec.bind import Bound

# float function -> double function (same arguments)
RENAMED = {name: name[:-1] for name in (
    "expf", "exp2f", "exp10f", "expm1f", "logf", "log2f", "log10f", "log1pf", "powf", "sqrtf", "cbrtf",
    "hypotf", "fabsf", "fmaxf", "fminf", "fmaf", "fmodf", "remainderf", "floorf", "ceilf", "roundf",
    "truncf", "rintf", "nearbyintf", "copysignf", "sinf", "cosf", "tanf", "asinf", "acosf", "atanf",
    "atan2f", "sinhf", "coshf", "tanhf", "asinhf", "acoshf", "atanhf", "erff", "erfcf", "lgammaf",
    "tgammaf", "sincosf", "sinpif", "cospif", "ldexpf", "frexpf", "fdimf", "normf")}
RENAMED.update({"__expf": "exp", "__exp10f": "exp10", "__logf": "log", "__log2f": "log2", "__log10f": "log10",
                "__powf": "pow", "__sinf": "sin", "__cosf": "cos", "__tanf": "tan", "__sincosf": "sincos",
                "__fsqrt_rn": "sqrt", "__fmaf_rn": "fma", "__fmaf_rz": "fma", "__float2int_rn": "__double2int_rn",
                "__float2int_rz": "__double2int_rz", "__float2int_rd": "__double2int_rd",
                "__float2int_ru": "__double2int_ru", "__float2uint_rn": "__double2uint_rn",
                "__float2uint_rz": "__double2uint_rz"})
# float function -> a double expression of its arguments
REWRITTEN = {
    "rsqrtf": "(1.0 / sqrt({0}))", "__frsqrt_rn": "(1.0 / sqrt({0}))", "__frcp_rn": "(1.0 / ({0}))",
    "__fdividef": "(({0}) / ({1}))", "__fdiv_rn": "(({0}) / ({1}))", "__fadd_rn": "(({0}) + ({1}))",
    "__fsub_rn": "(({0}) - ({1}))", "__fmul_rn": "(({0}) * ({1}))", "__saturatef": "fmin(fmax({0}, 0.0), 1.0)",
}
# calls that see a float's bits: a double twin would compute something else
BIT_LEVEL = ("__float_as_int", "__int_as_float", "__float_as_uint", "__uint_as_float", "__float2half",
             "__half2float", "__float2bfloat16", "__bfloat162float", "__float2half_rn")
HALF_TYPES = ("half", "__half", "half2", "__half2", "__nv_bfloat16", "__nv_bfloat162", "nv_bfloat16")
VECTOR_TYPE = re.compile(r"float[1-4]")
FLOAT_LITERAL = re.compile(r"^(?!0[xX])[0-9.]+(?:[eE][+-]?[0-9]+)?[fF]$|^0[xX][0-9a-fA-F.]+[pP][+-]?[0-9]+[fF]$")


@dataclass(frozen=True)
class Shadow:
    """The float64 twin of a kernel's file, or the reason there is none."""

    source: str | None
    reason: str = ""

    @property
    def promoted(self) -> bool:
        return self.source is not None


def promote(source: str, bound: Bound) -> Shadow:
    """The file with `bound`'s kernel (and the device functions it calls) in double precision."""
    dtypes = {name: dtype for name, dtype in bound.params}
    if any(d == "float16" for d in dtypes.values()):
        return Shadow(None, "a half-precision argument (float16) has no exact float64 twin here")
    outputs = [a for a in bound.spec.args if getattr(a, "role", "in") != "in"]
    if not any(dtypes.get(a.name) == "float32" for a in outputs):
        kinds = sorted({dtypes.get(a.name, "?") for a in outputs})
        return Shadow(None, f"no float32 output ({', '.join(kinds)}): outputs are compared with the original's")
    data = source.encode()
    file = load(data)
    kernel = file.kernel(bound.kernel_name)
    assert kernel is not None
    functions = _device_functions(file.tree.root_node)
    scope = _scope(kernel.node, functions)
    edits: list[Edit] = []
    for node in scope:
        refusal = _promote_into(node, edits)
        if refusal is not None:
            return Shadow(None, f"{refusal[0]} (line {refusal[1].start_point.row + 1})")
    macro = _float_macro(file.tree.root_node, scope)
    if macro:
        return Shadow(None, f"macro {macro} spells a float type, which the promotion cannot see into")
    edits += [Edit(n.start_byte, n.end_byte, "") for n in _host_launchers(file.tree.root_node, kernel.name)]
    return Shadow(apply(data, edits).decode())


def _promote_into(root: ts.Node, edits: list[Edit]) -> tuple[str, ts.Node] | None:
    """Add the edits that promote `root`; or why it cannot be promoted, and where."""
    calls: dict[tuple[int, int], str] = {}
    for node in walk(root):
        kind, spelled = node.type, text(node)
        if kind == "type_identifier" and spelled in HALF_TYPES:
            return f"uses the half-precision type {spelled}", node
        if kind == "type_identifier" and VECTOR_TYPE.fullmatch(spelled):
            return f"uses the vector type {spelled}", node
        if kind == "primitive_type" and spelled == "float":
            calls[(node.start_byte, node.end_byte)] = "double"
        elif kind == "number_literal" and FLOAT_LITERAL.match(spelled):
            calls[(node.start_byte, node.end_byte)] = spelled[:-1]
        elif kind == "call_expression":
            fn = node.child_by_field_name("function")
            name = text(fn) if fn is not None and fn.type == "identifier" else ""
            if name in BIT_LEVEL or name.startswith("make_float"):
                return f"calls {name}, which works on a float's bits or vector types", node
    for node in walk(root):
        if node.type != "call_expression":
            continue
        fn = node.child_by_field_name("function")
        name = text(fn) if fn is not None and fn.type == "identifier" else ""
        if name in RENAMED:
            calls[(fn.start_byte, fn.end_byte)] = RENAMED[name]  # type: ignore[union-attr]
    # calls rewritten as expressions last: their arguments carry the edits inside them
    for node in sorted((n for n in walk(root) if n.type == "call_expression"), key=lambda n: -_depth(n)):
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        name = text(fn) if fn is not None and fn.type == "identifier" else ""
        if name in REWRITTEN and args is not None:
            parts = [node_text(a, calls) for a in args.named_children]
            calls[(node.start_byte, node.end_byte)] = REWRITTEN[name].format(*parts, ", ".join(parts))
    edits += _outermost(calls)
    return None


def _outermost(replacements: dict[tuple[int, int], str]) -> list[Edit]:
    """Edits for the replacements not inside another one (those are already folded into it)."""
    chosen: list[Edit] = []
    for (s, e), t in sorted(replacements.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        if chosen and s < chosen[-1].end:
            continue
        chosen.append(Edit(s, e, t))
    return chosen


def _depth(node: ts.Node) -> int:
    depth = 0
    while node.parent is not None:
        node, depth = node.parent, depth + 1
    return depth


def _device_functions(root: ts.Node) -> dict[str, ts.Node]:
    """Name -> definition (with its template line) of every `__device__` function of the file."""
    out: dict[str, ts.Node] = {}
    for node in walk(root, descend=lambda n: n.type in ("translation_unit", "namespace_definition",
                                                          "declaration_list", "template_declaration",
                                                          "linkage_specification")):
        if node.type == "function_definition" and any(c.type == "__device__" for c in node.children):
            name = _function_name(node)
            if name:
                top = node.parent if node.parent is not None and node.parent.type == "template_declaration" else node
                out[name] = top
    return out


def _function_name(node: ts.Node) -> str:
    decl = node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    name = decl.child_by_field_name("declarator") if decl is not None else None
    return text(name).split("::")[-1] if name is not None else ""


def _scope(kernel: ts.Node, functions: dict[str, ts.Node]) -> list[ts.Node]:
    """The kernel and the device functions it calls, directly or not."""
    scope, todo, seen = [kernel], [kernel], set()
    while todo:
        for node in walk(todo.pop()):
            if node.type == "call_expression":
                fn = node.child_by_field_name("function")
                name = text(fn).split("<")[0] if fn is not None else ""
                if name in functions and name not in seen:
                    seen.add(name)
                    scope.append(functions[name])
                    todo.append(functions[name])
    return scope


def _float_macro(root: ts.Node, scope: list[ts.Node]) -> str:
    """A macro used in `scope` whose body names `float`, or ""."""
    floaty = {text(n.child_by_field_name("name")) for n in walk(root)
              if n.type in ("preproc_def", "preproc_function_def") and n.child_by_field_name("name") is not None
              and re.search(r"\bfloat\b", text(n.child_by_field_name("value")) if n.child_by_field_name("value")
                            else "")}
    used = {text(n) for s in scope for n in walk(s) if n.type in ("identifier", "type_identifier")}
    return next(iter(sorted(floaty & used)), "")


def _host_launchers(root: ts.Node, kernel: str) -> list[ts.Node]:
    """Host functions that launch the kernel: they would pass it float pointers, so the shadow drops them."""
    launch = re.compile(rf"\b{re.escape(kernel)}\s*<<<")
    out = []
    for node in walk(root, descend=lambda n: n.type in ("translation_unit", "namespace_definition",
                                                          "declaration_list", "linkage_specification")):
        if node.type == "function_definition" and not any(c.type in ("__global__", "__device__")
                                                          for c in node.children):
            if launch.search(text(node)):
                out.append(node)
    return out



@dataclass
class Reference:
    """Which outputs a kernel's variants are judged against: "float64" (the shadow's) or "original"
    (the original kernel's, with the reason), and the original's own error against the shadow."""

    kind: str
    reason: str = ""
    original: dict[str, dict[str, Error]] = field(default_factory=dict)  # size label -> output -> error
    shadow_ms: float = 0.0  # wall time of the shadow's runs

    def describe(self) -> str:
        if self.kind != "float64":
            return f"reference: the original kernel ({self.reason})"
        worst = max((e.norm for errors in self.original.values() for e in errors.values()), default=0.0)
        return f"reference: float64 shadow ({self.shadow_ms:.0f} ms; original vs float64: norm-wise {worst:.3g})"

    def json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reference": self.kind}
        if self.kind == "float64":
            out["original_error"] = {label: {name: asdict(e) for name, e in errors.items()}
                                     for label, errors in self.original.items()}
            out["shadow_ms"] = round(self.shadow_ms, 3)
        else:
            out["reference_reason"] = self.reason
        return out


def compile_shadow(source: str, bound: Bound, compile: Callable[[str], Compiled]) -> tuple[Compiled | None, str]:
    """The compiled float64 shadow of the kernel in `source`, or None and why not."""
    shadow = promote(source, bound)
    if shadow.source is None:
        return None, shadow.reason
    try:
        return compile(shadow.source), ""
    except CompileError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "nvcc failed"
        return None, f"the float64 twin does not compile: {first}"
