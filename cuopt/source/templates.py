"""Template kernels: their template parameters, instantiations such as `scale<float, 256>`, and the
instantiations a file makes (explicitly, or by launching one from host code)."""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import tree_sitter as ts

from cuopt.source.parse import function_name, text, walk
from cuopt.source.preprocess import NO_MACROS, Macros
from cuopt.source.template_args import argument_values
from cuopt.spec.dtypes import normalize_c_type

_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_INTEGER = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|\d+)[uUlL]*")
_BOOLS = {"true": 1, "false": 0}
# the spelling a demangler prints for C types that have several
_TYPE_SPELLING = {
    "half": "__half", "half2": "__half2", "nv_bfloat16": "__nv_bfloat16", "nv_bfloat162": "__nv_bfloat162",
    "unsigned": "unsigned int", "signed": "int", "signed int": "int",
    "short int": "short", "signed short": "short", "unsigned short int": "unsigned short",
    "long int": "long", "long long int": "long long", "unsigned long int": "unsigned long",
    "unsigned long long int": "unsigned long long", "int8_t": "signed char", "uint8_t": "unsigned char",
    "int16_t": "short", "uint16_t": "unsigned short", "int32_t": "int", "uint32_t": "unsigned int",
    "int64_t": "long", "uint64_t": "unsigned long", "size_t": "unsigned long", "ptrdiff_t": "long",
}


class TemplateError(ValueError):
    """An instantiation that is malformed or does not fit the template; the message says why."""


@dataclass(frozen=True)
class TemplateParam:
    """One template parameter: `typename T` (kind "type") or `int BLOCK` (kind "value")."""

    name: str
    kind: str  # "type" | "value"
    default: str | None  # the default argument as written, if any


@dataclass(frozen=True)
class Instantiation:
    """A template kernel's name with its arguments: types in their C spelling, values as integers."""

    name: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.name}<{', '.join(self.args)}>"


def parse_instantiation(value: str) -> Instantiation:
    """`scale<float, 256>` -> Instantiation; TemplateError when it is not `name<arg, ...>`."""
    m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z_0-9]*)\s*<(.*)>\s*", value, re.DOTALL)
    if m is None:
        raise TemplateError(f"expected a kernel name with template arguments such as \"scale<float, 256>\", "
                            f"got {value!r}")
    args = [_uncast(a) for a in split_args(m.group(2))]
    for a in args:
        if not a or not (_INTEGER.fullmatch(a) or a in _BOOLS or _is_type(a)):
            raise TemplateError(f"template argument {a!r} of {value!r} is neither a C type nor an integer literal")
    return Instantiation(m.group(1), tuple(_spelling(a) for a in args))


def split_args(inner: str, opening: str = "<(", closing: str = ">)") -> list[str]:
    """Top-level comma-separated arguments of a template argument list's inside (of a macro call's
    with `opening="([{"`, `closing=")]}"`: a `<` there is a comparison)."""
    out, depth, current = [], 0, ""
    for ch in inner:
        depth += (ch in opening) - (ch in closing)
        if ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip() or out:
        out.append(current.strip())
    return out


def template_params(node: ts.Node) -> tuple[TemplateParam, ...] | None:
    """The parameters of a `template_parameter_list` node; None when one is variadic or a template."""
    out = []
    for c in node.named_children:
        default = c.child_by_field_name("default_type") or c.child_by_field_name("default_value")
        name = next((text(n) for n in c.named_children if n.type in ("type_identifier", "identifier")
                     and n != default), "")
        if c.type in ("type_parameter_declaration", "optional_type_parameter_declaration"):
            out.append(TemplateParam(name, "type", text(default) if default is not None else None))
        elif c.type in ("parameter_declaration", "optional_parameter_declaration"):
            decl = c.child_by_field_name("declarator")
            out.append(TemplateParam(text(decl) if decl is not None else name, "value",
                                     text(default) if default is not None else None))
        elif c.type != "comment":
            return None
    return tuple(out)


def bind_args(params: tuple[TemplateParam, ...], inst: Instantiation) -> tuple[dict[str, str], dict[str, int]]:
    """The template's type parameters -> C types and value parameters -> integers for `inst`
    (defaults fill the missing trailing arguments); TemplateError when they do not fit."""
    args = list(inst.args)
    required = sum(1 for p in params if p.default is None)
    if not required <= len(args) <= len(params):
        expected = str(len(params)) if required == len(params) else f"{required} to {len(params)}"
        shown = ", ".join(f"{'typename' if p.kind == 'type' else 'value'} {p.name}" for p in params)
        raise TemplateError(f"{inst} gives {len(args)} template argument{'s' if len(args) != 1 else ''}; "
                            f"{inst.name} takes {expected} ({shown})")
    types: dict[str, str] = {}
    values: dict[str, int] = {}
    for i, p in enumerate(params):
        arg = args[i] if i < len(args) else _spelling(p.default or "")
        if p.kind == "type":
            if not _is_type(arg):
                raise TemplateError(f"template argument {i + 1} of {inst} ({arg}) must be a type for "
                                    f"typename {p.name}")
            types[p.name] = arg
        else:
            value = integer(arg)
            if value is None:
                raise TemplateError(f"template argument {i + 1} of {inst} ({arg}) must be an integer literal "
                                    f"for {p.name}")
            values[p.name] = value
    return types, values


def integer(arg: str) -> int | None:
    """The value of an integer literal, `true` or `false` (or a demangler's `(short)3`); else None."""
    arg = re.sub(r"^\([^()]*\)", "", arg.strip())
    if arg in _BOOLS:
        return _BOOLS[arg]
    if not _INTEGER.fullmatch(arg):
        return None
    return int(arg.rstrip("uUlL"), 0)


def same_argument(a: str, b: str) -> bool:
    """Whether two template arguments are the same: the same type, or the same integer value."""
    x, y = integer(a), integer(b)
    if x is not None or y is not None:
        return x == y
    return _spelling(a).replace(" ", "") == _spelling(b).replace(" ", "")


def substitute(text_: str, types: dict[str, str]) -> str:
    """`const T*` -> `const float*`: template type parameters replaced by their arguments."""
    if not types:
        return text_
    return re.sub(r"\b(" + "|".join(map(re.escape, types)) + r")\b", lambda m: types[m.group(1)], text_)


def instantiations(root: ts.Node, name: str, macros: Macros | None = None) -> list[tuple[Instantiation, bool, int]]:
    """The instantiations of template `name` that a file makes, in source order: (instantiation,
    explicit, line) for `template __global__ void name<...>(...);`, host launches `name<...><<<...>>>`,
    and launches `name<T, BLOCK><<<...>>>` inside a host template `run<T, BLOCK>` at each call
    `run<float, 256>(...)` of it (the line is the call's); arguments the host code fixes (a local
    constant, an integral constant, a generic lambda's tag: cuopt.source.template_args) at their
    values, one instantiation per combination."""
    out = []
    for node in walk(root):
        if node.type != "template_function":
            continue
        fn = node.child_by_field_name("name")
        args = node.child_by_field_name("arguments")
        if fn is None or args is None or text(fn).split("::")[-1] != name:
            continue
        outer = node
        while outer.parent is not None and outer.parent.type == "qualified_identifier":  # ops::scale<...>
            outer = outer.parent
        explicit = _explicit(outer)
        launch = outer.parent is not None and outer.parent.type == "call_expression" and any(
            c.type == "kernel_call_syntax" for c in outer.parent.children)
        if not explicit and not launch:
            continue
        written = split_args(text(args)[1:-1])
        for values, line in _through_host_templates(root, node, written):
            for combination in itertools.product(*(argument_values(v, node, macros or NO_MACROS) for v in values)):
                try:
                    inst = parse_instantiation(f"{name}<{', '.join(combination)}>")
                except TemplateError:
                    continue
                if (inst, explicit, line) not in out:
                    out.append((inst, explicit, line))
    return out


def _through_host_templates(root: ts.Node, node: ts.Node, args: list[str]) -> list[tuple[list[str], int]]:
    """The template arguments `args` written at `node`, with the parameters of an enclosing host
    template function replaced by the arguments of each explicit call of it: one (arguments, line)
    per call; the arguments as written when they name no such parameter."""
    fn = node.parent
    while fn is not None and fn.type != "function_definition":
        fn = fn.parent
    declaration = fn.parent if fn is not None else None
    plist = declaration.child_by_field_name("parameters") if declaration is not None and \
        declaration.type == "template_declaration" else None
    params = template_params(plist) if plist is not None else None
    names = [p.name for p in params or ()]
    if not set(names) & {a.strip() for a in args}:
        return [(args, node.start_point.row + 1)]
    host = function_name(fn)
    out = []
    for call in walk(root):
        callee = call.child_by_field_name("name") if call.type == "template_function" else None
        if callee is None or text(callee).split("::")[-1] != host or call.parent is None or \
                call.parent.type != "call_expression":
            continue
        given = split_args(text(call.child_by_field_name("arguments"))[1:-1])
        binding = dict(zip(names, given))
        out.append(([binding.get(a.strip(), a) for a in args], call.start_point.row + 1))
    return out


def _explicit(node: ts.Node) -> bool:
    """Whether a `template_function` node names an explicit instantiation's function."""
    parent = node.parent
    while parent is not None and parent.type in ("function_declarator", "pointer_declarator"):
        parent = parent.parent
    return parent is not None and parent.type == "template_instantiation"


def _uncast(arg: str) -> str:
    """`(int)16` -> `16`: the value of a literal that a demangler wrote with its type."""
    value = integer(arg) if arg.strip().startswith("(") else None
    return arg if value is None else str(value)


def _is_type(arg: str) -> bool:
    words = normalize_c_type(arg).split(" ")
    return bool(words) and all(_NAME.fullmatch(w) for w in words) and arg not in _BOOLS


def _spelling(arg: str) -> str:
    """One spelling per argument: C types normalised (`half` -> `__half`), literals as written."""
    arg = " ".join(arg.split())
    if _INTEGER.fullmatch(arg) or arg in _BOOLS or not _is_type(arg):
        return arg
    name = normalize_c_type(arg)
    return _TYPE_SPELLING.get(name, name)
