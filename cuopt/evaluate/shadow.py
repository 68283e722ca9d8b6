"""The float64 shadow of a kernel: the original with its float types, literals and math functions
promoted to double precision, run on the same inputs to give an accurate reference.

A pure source transform (tree-sitter edits on the kernel and the device functions it calls), seen
through the file's macros: a macro or typedef that stands for exactly `float` (`DATA_TYPE`) is spelled
`double` inside the kernel only (an object-like macro that spells float otherwise, `((DATA_TYPE)M)`,
is written there as its promoted body; float literals inside macros stay as written), and the twin
of a template instantiation (`scale<float, 256>`) is the instantiation with `double` for its float
type arguments. A kernel whose data is 16-bit (`__half`, `__nv_bfloat16`, a `floatX` of them) is
promoted the same way, its 16-bit types spelled `double` too: the twin reads the very values the
kernel reads, exactly converted, and the conversion intrinsics and 16-bit arithmetic
(`__bfloat162float`, `__float2half`, `__hmul`) become double expressions. When a kernel cannot be
promoted faithfully, `promote` says why and the original stays the reference."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import tree_sitter as ts

from cuopt.evaluate.accuracy import Error
from cuopt.evaluate.compile import CompileError, Compiled
from cuopt.source.edits import Edit, apply, node_text
from cuopt.source.kernels import Kernel, load
from cuopt.source.parse import function_name, text, walk
from cuopt.source.preprocess import Macros
from cuopt.source.templates import Instantiation, TemplateError
from cuopt.spec.bind import Bound
from cuopt.spec.dtypes import HALF2_TYPES, HALF_DTYPES, HALF_TYPES, c_type, itemsize

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
INT_ARGS = {("ldexpf", 1), ("frexpf", 1)}  # (function, argument) an integer where the float function takes one
# float function -> a double expression of its arguments
REWRITTEN = {
    "rsqrtf": "(1.0 / sqrt({0}))", "__frsqrt_rn": "(1.0 / sqrt({0}))", "__frcp_rn": "(1.0 / ({0}))",
    "__fdividef": "(({0}) / ({1}))", "__fdiv_rn": "(({0}) / ({1}))", "__fadd_rn": "(({0}) + ({1}))",
    "__fsub_rn": "(({0}) - ({1}))", "__fmul_rn": "(({0}) * ({1}))", "__saturatef": "fmin(fmax({0}, 0.0), 1.0)",
}
# 16-bit float conversions and arithmetic (cuda_fp16.h, cuda_bf16.h): in the twin of a kernel of 16-bit
# data the value is a double
HALF_REWRITTEN = {name: "((double)({0}))" for name in (
    "__half2float", "__float2half", "__float2half_rn", "__double2half", "__int2half_rn", "__bfloat162float",
    "__float2bfloat16", "__float2bfloat16_rn", "__double2bfloat16", "__int2bfloat16_rn")}
HALF_REWRITTEN.update({f"__h{op}": form for op, form in (
    ("add", "(({0}) + ({1}))"), ("sub", "(({0}) - ({1}))"), ("mul", "(({0}) * ({1}))"), ("div", "(({0}) / ({1}))"),
    ("add_rn", "(({0}) + ({1}))"), ("sub_rn", "(({0}) - ({1}))"), ("mul_rn", "(({0}) * ({1}))"),
    ("fma", "fma({0}, {1}, {2})"), ("neg", "(-({0}))"), ("abs", "fabs({0})"), ("max", "fmax({0}, {1})"),
    ("min", "fmin({0}, {1})"), ("eq", "(({0}) == ({1}))"), ("ne", "(({0}) != ({1}))"), ("lt", "(({0}) < ({1}))"),
    ("le", "(({0}) <= ({1}))"), ("gt", "(({0}) > ({1}))"), ("ge", "(({0}) >= ({1}))"))})
HALF_REWRITTEN.update({"hsqrt": "sqrt({0})", "hrsqrt": "(1.0 / sqrt({0}))", "hrcp": "(1.0 / ({0}))", "hexp": "exp({0})",
                  "hexp2": "exp2({0})", "hlog": "log({0})", "hlog2": "log2({0})", "hsin": "sin({0})",
                  "hcos": "cos({0})", "htanh": "tanh({0})", "hfloor": "floor({0})", "hceil": "ceil({0})",
                  "htrunc": "trunc({0})", "hrint": "rint({0})"})
# calls that see a float's bits: a double twin would compute something else
BIT_LEVEL = ("__float_as_int", "__int_as_float", "__float_as_uint", "__uint_as_float", "__half_as_short",
             "__half_as_ushort", "__short_as_half", "__ushort_as_half", "__bfloat16_as_short",
             "__bfloat16_as_ushort", "__short_as_bfloat16", "__ushort_as_bfloat16")
PROMOTED = ("float", *HALF_TYPES)  # the C types the twin spells double
TWINNED = ("float32", "float16", "bfloat16")  # the dtypes whose buffers and scalars are doubles in the twin
VECTOR_TYPE = re.compile(r"float[1-4]")
FLOATY = re.compile(r"\bfloat\w*|\b__half\w*|\bhalf\d?\b|\b_*nv_bfloat16\w*|\b(?:" +
                    "|".join(map(re.escape, (*RENAMED, *REWRITTEN, *HALF_REWRITTEN, *BIT_LEVEL))) + r")\b")


@dataclass(frozen=True)
class _Promotion:
    """What the twin spells `double` and which calls it writes as double expressions: float alone,
    or also the 16-bit float types and their intrinsics when the kernel's data is 16-bit (in a
    kernel of float data, a round trip through 16 bits is part of what it computes)."""

    types: tuple[str, ...]
    rewritten: dict[str, str]


FLOAT_ONLY = _Promotion(("float",), REWRITTEN)
WITH_HALVES = _Promotion(PROMOTED, {**REWRITTEN, **HALF_REWRITTEN})
FLOAT_LITERAL = re.compile(r"^(?!0[xX])[0-9.]+(?:[eE][+-]?[0-9]+)?[fF]$|^0[xX][0-9a-fA-F.]+[pP][+-]?[0-9]+[fF]$")


@dataclass(frozen=True)
class Shadow:
    """The float64 twin of a kernel's file, or the reason there is none."""

    source: str | None
    reason: str = ""
    kernel: str = ""  # what the twin compiles as: the kernel's name, or its double instantiation

    @property
    def promoted(self) -> bool:
        return self.source is not None


def promote(source: str, bound: Bound, macros: Macros) -> Shadow:
    """The file with `bound`'s kernel (and the device functions it calls) in double precision;
    `macros` are the file's (its headers' and the compile settings' included)."""
    dtypes = {name: dtype for name, dtype in bound.params}
    outputs = [a for a in bound.spec.args if getattr(a, "role", "in") != "in"]
    if not any(dtypes.get(a.name) in TWINNED for a in outputs):
        kinds = sorted({dtypes.get(a.name, "?") for a in outputs})
        return Shadow(None, f"no float32, float16 or bfloat16 output ({', '.join(kinds)}): outputs are "
                            "compared with the original's")
    how = WITH_HALVES if any(d in HALF_DTYPES for d in dtypes.values()) else FLOAT_ONLY
    data = source.encode()
    file = load(data, macros)
    kernel = file.kernel(bound.kernel_name)
    assert kernel is not None
    entry, why = _twin_entry(kernel, file.tree.root_node, macros, how)
    if why:
        return Shadow(None, why)
    functions = _device_functions(file.tree.root_node)
    scope = _scope(kernel.node, functions)
    spelled, refusal = _float_names(scope, macros, how)
    if refusal:
        return Shadow(None, refusal)
    edits: list[Edit] = []
    for node in scope:
        refused = _promote_into(node, edits, spelled, how)
        if refused is not None:
            return Shadow(None, f"{refused[0]} (line {refused[1].start_point.row + 1})")
    edits += [Edit(n.start_byte, n.end_byte, "") for n in _host_code(file.tree.root_node, kernel.name)]
    twin = apply(data, edits).decode()
    still = _float_params(twin, entry, dtypes, macros)
    if still:
        return Shadow(None, f"parameter {still} is still float in the float64 twin")
    return Shadow(twin, kernel=entry)


def shared_growth(bound: Bound) -> int:
    """How many times the original's dynamic shared memory the twin asks for: its float arrays hold
    doubles, twice a float's bytes and four times a 16-bit float's (when the kernel's data is 16-bit)."""
    sizes = [itemsize(d) for _, d in bound.params if d in TWINNED]
    return 8 // min(sizes, default=4)


def _twin_entry(kernel: Kernel, root: ts.Node, macros: Macros, how: _Promotion) -> tuple[str, str]:
    """The twin's entry: the kernel's name, or its instantiation with `double` for every float type
    argument (`how` says which types are float); or "" and why there is none."""
    inst = kernel.instantiation
    if inst is None:
        return kernel.name, ""
    if _specialized(root, kernel.name):
        return "", (f"template kernel {kernel.name} has explicit specializations, which its double "
                    "instantiation may pick")
    args = []
    for a in inst.args:
        if _spells_float(a, macros, how.types):
            args.append("double")
        elif FLOATY.search(a):
            return "", f"template argument {a} of {inst} has no float64 twin"
        else:
            args.append(a)
    return str(Instantiation(inst.name, tuple(args))), ""


def _specialized(root: ts.Node, name: str) -> bool:
    """Whether the file specializes template `name` explicitly (`template <> __global__ void name<...>`)."""
    for node in walk(root):
        if node.type == "template_declaration":
            plist = node.child_by_field_name("parameters")
            if plist is not None and not plist.named_children and any(
                    c.type == "function_definition" and re.search(rf"\b{re.escape(name)}\s*<", text(c).split("(")[0])
                    for c in node.named_children):
                return True
    return False


def _spells_float(name: str, macros: Macros, types: tuple[str, ...] = ("float",)) -> bool:
    """Whether `name` (a macro, a typedef or a chain of them) stands for exactly one of `types`."""
    seen: set[str] = set()
    while name not in seen:
        seen.add(name)
        expanded = " ".join(macros.expand(name).split()) if macros else name
        if expanded in types:
            return True
        named = macros.typedef(expanded)
        if named is None:
            return False
        name = named
    return False


def _float_names(scope: list[ts.Node], macros: Macros, how: _Promotion) -> tuple[dict[str, str], str]:
    """What the macros and typedefs used in `scope` that spell float become in the twin: `double` for
    those that stand for `float` (or a 16-bit float, as `how` says), the promoted body for an
    object-like macro such as `((DATA_TYPE)M)`;
    and why the promotion cannot go on when another one (a function-like macro) spells float."""
    used = sorted({text(n) for s in scope for n in walk(s) if n.type in ("identifier", "type_identifier")})
    spelled: dict[str, str] = {}
    for name in used:
        definition = macros.get(name)
        typedef = macros.typedef(name)
        if definition is None and typedef is None:
            continue
        if _spells_float(name, macros, how.types):
            spelled[name] = "double"
            continue
        meaning = macros.expand(definition.body) if definition is not None else macros.expand(typedef or "")
        found = FLOATY.search(meaning)
        if not found:
            continue
        inlined = _inlined(name, macros, how.types)
        if inlined is not None:
            spelled[name] = inlined
            continue
        kind = "macro" if definition is not None else "typedef"
        return spelled, (f"{kind} {name} spells {found.group(0)} ({' '.join(meaning.split())}), which the "
                         "promotion cannot rewrite inside the kernel alone")
    return spelled, ""


def _inlined(name: str, macros: Macros, types: tuple[str, ...], depth: int = 0) -> str | None:
    """The body of object-like macro `name` in double precision (`float` and the names that stand
    for it spelled `double`, float functions renamed, such macros inside it inlined the same way),
    written in the kernel in place of the macro; None when that leaves float in it."""
    body = macros.object_like(name)
    if body is None or depth > 16:
        return None

    def one(m: re.Match[str]) -> str:
        word = m.group(0)
        if word in types or _spells_float(word, macros, types):
            return "double"
        if word in RENAMED:
            return RENAMED[word]
        if macros.object_like(word) is not None and FLOATY.search(macros.expand(word)):
            return _inlined(word, macros, types, depth + 1) or word
        return word

    out = re.sub(r"[A-Za-z_]\w*", one, body)
    return None if FLOATY.search(macros.expand(out)) else out


def _float_params(twin: str, entry: str, dtypes: dict[str, str], macros: Macros) -> str:
    """A float32 or 16-bit float parameter of the spec that the twin's kernel does not take as double, or ""."""
    try:
        kernel = load(twin, macros).kernel(entry)
    except TemplateError:
        kernel = None
    if kernel is None:
        return f"of {entry} (the twin defines no such kernel)"
    for p in kernel.params:
        if dtypes.get(p.name) in TWINNED and (p.ctype is None or p.ctype.dtype != "float64"):
            return p.name
    return ""


def _promote_into(root: ts.Node, edits: list[Edit], floats: dict[str, str],
                  how: _Promotion) -> tuple[str, ts.Node] | None:
    """Add the edits that promote `root` (the macros and typedefs in `floats` spelled as it says,
    the types and calls `how` names); or why it cannot be promoted, and where."""
    calls: dict[tuple[int, int], str] = {}
    for node in walk(root):
        kind, spelled = node.type, text(node)
        if kind in ("identifier", "type_identifier") and spelled in floats:
            calls[(node.start_byte, node.end_byte)] = floats[spelled]
        elif spelled in HALF_TYPES and spelled in how.types and (kind == "type_identifier" or _called(node)):
            calls[(node.start_byte, node.end_byte)] = "double"  # `__nv_bfloat16 t`, `__nv_bfloat16(x)`
        elif kind == "type_identifier" and (spelled in HALF_TYPES or spelled in HALF2_TYPES):
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
            if name in HALF_REWRITTEN and name not in how.rewritten:
                return f"calls {name}, which rounds to 16 bits a kernel of wider data computes with", node
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
        if name in how.rewritten and args is not None:
            parts = [node_text(a, calls) for a in args.named_children]
            calls[(node.start_byte, node.end_byte)] = how.rewritten[name].format(*parts, ", ".join(parts))
        elif name in RENAMED and args is not None and any(_integral(a, root) for a in args.named_children):
            parts = [f"(double)({node_text(a, calls)})" if _integral(a, root) and (name, i) not in INT_ARGS
                     else node_text(a, calls) for i, a in enumerate(args.named_children)]
            calls[(node.start_byte, node.end_byte)] = f"{RENAMED[name]}({', '.join(parts)})"  # never `sqrt(int)`
    edits += _outermost(calls)
    return None


def _integral(node: ts.Node, root: ts.Node) -> bool:
    """Whether an argument is an integer: a literal, a variable or parameter of `root` declared with an
    integer type, or arithmetic of those; `sqrtf(n)`'s twin `sqrt(n)` would be ambiguous."""
    kind = node.type
    if kind == "number_literal":
        return re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", text(node)) is not None
    if kind == "parenthesized_expression":
        return all(_integral(c, root) for c in node.named_children)
    if kind == "binary_expression":
        return text(node.child_by_field_name("operator")) in ("+", "-", "*", "/", "%", "<<", ">>", "&", "|") and \
            _integral(node.child_by_field_name("left"), root) and _integral(node.child_by_field_name("right"), root)
    if kind == "cast_expression":
        ctype = c_type(text(node.child_by_field_name("type")))
        return ctype is not None and ctype.dtype.startswith(("int", "uint"))
    if kind != "identifier":
        return False
    for decl in walk(root):
        if decl.type not in ("parameter_declaration", "declaration") or decl.child_by_field_name("type") is None:
            continue
        for d in decl.children_by_field_name("declarator"):
            target = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if target is not None and target.type == "identifier" and text(target) == text(node):
                ctype = c_type(text(decl.child_by_field_name("type")))
                return ctype is not None and ctype.dtype.startswith(("int", "uint"))
    return False


def _called(node: ts.Node) -> bool:
    """Whether `node` is the function a call names (`__half(x)`: a cast written as a call)."""
    parent = node.parent
    return parent is not None and parent.type == "call_expression" and parent.child_by_field_name("function") == node


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
            name = function_name(node)
            if name:
                top = node.parent if node.parent is not None and node.parent.type == "template_declaration" else node
                out[name] = top
    return out


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


def _host_code(root: ts.Node, kernel: str) -> list[ts.Node]:
    """What the shadow drops: the host functions that launch the kernel (they would pass it float
    pointers), those that call a dropped one, and explicit instantiations of any of them."""
    hosts: list[tuple[str, ts.Node, set[str]]] = []  # (name, node to drop, names it calls)
    explicit: list[tuple[str, ts.Node]] = []
    for node in walk(root, descend=lambda n: n.type in ("translation_unit", "namespace_definition",
                                                          "declaration_list", "linkage_specification",
                                                          "template_declaration")):
        if node.type == "template_instantiation":
            explicit.append((_declared_name(node), node))
        elif node.type == "function_definition" and not any(c.type in ("__global__", "__device__")
                                                            for c in node.children):
            top = node.parent if node.parent is not None and node.parent.type == "template_declaration" else node
            calls = {_callee(n) for n in walk(node) if n.type == "call_expression"}
            hosts.append((function_name(node), top, calls))
    dropped, changed = {kernel}, True
    while changed:
        changed = False
        for name, _, calls in hosts:
            if name not in dropped and calls & dropped:
                dropped.add(name)
                changed = True
    out = [top for name, top, calls in hosts if calls & dropped]
    return out + [node for name, node in explicit if name in dropped]


def _callee(call: ts.Node) -> str:
    """The unqualified name a call (or kernel launch) calls: `run` of `ops::run<float, 256>(...)`."""
    fn = call.child_by_field_name("function")
    return re.split(r"\s*<", text(fn), maxsplit=1)[0].split("::")[-1].strip() if fn is not None else ""


def _declared_name(node: ts.Node) -> str:
    """The unqualified function name an explicit instantiation names."""
    spelled = text(node).split("(")[0]
    m = re.search(r"([A-Za-z_]\w*)\s*(?:<[^;]*)?$", spelled)
    return m.group(1) if m else ""



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


def compile_shadow(source: str, bound: Bound, compile: Callable[[str, str], Compiled], *,
                   macros: Macros) -> tuple[Compiled | None, str]:
    """The compiled float64 shadow of the kernel in `source`, or None and why not; `compile(source,
    kernel)` builds as the original is built (the twin of a template kernel is another instantiation)."""
    shadow = promote(source, bound, macros)
    if shadow.source is None:
        return None, shadow.reason
    try:
        return compile(shadow.source, shadow.kernel), ""
    except CompileError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "nvcc failed"
        return None, f"the float64 twin does not compile: {first}"
