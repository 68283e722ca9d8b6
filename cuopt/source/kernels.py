"""The `__global__` kernels of a file and their parameters."""
from __future__ import annotations

import functools
import re

from dataclasses import dataclass, field, replace
from typing import Any

import tree_sitter as ts

from cuopt.source.parse import SyntaxIssue, declared_names, parse, syntax_issues, text, walk
from cuopt.source.preprocess import NO_MACROS, Macros, active_lines, resolve_type
from cuopt.source.templates import (Instantiation, TemplateError, TemplateParam, bind_args, parse_instantiation,
                                    substitute, template_params)
from cuopt.spec.dtypes import CType, c_type

UNNAMED = "unnamed-"  # a parameter without a name is keyed by its position: `unnamed-4` (never a C identifier)
_CONTAINERS = {"translation_unit", "linkage_specification", "declaration_list", "namespace_definition",
               "template_declaration", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif"}


@dataclass(frozen=True)
class Param:
    """One kernel parameter as the compiler sees it (its type through the macros)."""

    name: str
    base_type: str  # element type without qualifiers, macros expanded: `float`, `unsigned int`
    pointer: int  # pointer depth (0 for scalars)
    const: bool  # pointee (or scalar) is const
    restrict: bool
    ctype: CType | None  # None when the type is not one a spec can describe
    start_byte: int
    end_byte: int
    concrete: str = ""  # in an instantiation of a template kernel: the C type `base_type` stands for

    @property
    def named(self) -> bool:
        """Whether the source names the parameter (`int /*unused*/` is keyed `unnamed-4` by position)."""
        return not self.name.startswith(UNNAMED)

    @property
    def element(self) -> str:
        """The element type the code computes with: `float` for `const T*` in `k<float>`."""
        return self.concrete or self.base_type

    @property
    def abi(self) -> str:
        """What the mangled symbol sees: element type, pointee const, pointer depth."""
        return f"{'const ' if self.const and self.pointer else ''}{self.base_type}{'*' * self.pointer}"


@dataclass(frozen=True)
class Kernel:
    """A `__global__` function definition."""

    name: str
    params: tuple[Param, ...]
    node: ts.Node  # the function_definition
    body: ts.Node
    template: bool
    errors: tuple[SyntaxIssue, ...]  # syntax errors inside this kernel
    macros: Macros = field(default=NO_MACROS, compare=False, repr=False)  # the file's, for the analysis
    template_params: tuple[TemplateParam, ...] | None = ()  # None: a form cuopt cannot instantiate
    instantiation: Instantiation | None = None  # set on the instantiations SourceFile.kernel returns
    constants: tuple[tuple[str, int], ...] = ()  # the instantiation's value template parameters
    types: tuple[tuple[str, str], ...] = ()  # the instantiation's type template parameters -> C types
    conditional: bool = False  # parsed as the preprocessor leaves it (untaken branches, __align__ blanked)

    @property
    def line(self) -> int:
        return self.node.start_point.row + 1

    @property
    def entry(self) -> str:
        """What names this kernel in its file and its symbol in the cubin: `saxpy`, `scale<float, 256>`."""
        return str(self.instantiation) if self.instantiation is not None else self.name

    def resolve(self, written: str) -> str:
        """A type written in the kernel as the compiler sees it in this instantiation: template type
        parameters by their arguments, then macros and typedefs (`const T` -> `float`)."""
        return resolve_type(substitute(written, dict(self.types)), self.macros)

    def constant(self, name: str) -> int | None:
        """The value of template parameter `name` in this instantiation, if it is a value parameter."""
        return next((v for n, v in self.constants if n == name), None)

    def hides(self, name: str) -> bool:
        """Whether `name` is a C++ constant of the file (`constexpr int n = 4;`) that a parameter or a
        declaration of the kernel hides: the preprocessor replaces a macro everywhere, a constant's
        name is scoped."""
        d = self.macros.get(name)
        return d is not None and d.constant and (self.param(name) is not None or any(
            n.type == "declaration" and name in declared_names(n) for n in walk(self.body)))

    @property
    def signature(self) -> tuple[str, tuple[str, ...]]:
        return self.name, tuple(p.abi for p in self.params)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class SourceFile:
    """A parsed .cu file: its tree, kernels and syntax problems."""

    source: bytes
    tree: ts.Tree
    kernels: tuple[Kernel, ...]
    errors: tuple[SyntaxIssue, ...]
    macros: Macros = NO_MACROS  # what the preprocessor defines; variants of the file keep the same
    analyses: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # kernel -> KernelModel
    instances: dict[str, Kernel] = field(default_factory=dict, compare=False, repr=False)  # entry -> Kernel

    def kernel(self, name: str) -> Kernel | None:
        """The kernel `name`, or the instantiation `name<args>` of a template kernel; None when the
        file defines no such kernel. TemplateError when the arguments do not fit the template."""
        if "<" not in name:
            return next((k for k in self.kernels if k.name == name), None)
        if name not in self.instances:
            inst = parse_instantiation(name)
            base = self.kernel(inst.name)
            if base is None:
                return None
            self.instances[name] = instantiate(base, inst)
        return self.instances[name]


def instantiate(kernel: Kernel, inst: Instantiation) -> Kernel:
    """`kernel` as instantiated by `inst`: parameters typed by the template's type arguments, value
    arguments known as constants. TemplateError when `inst` does not fit the template."""
    if not kernel.template:
        raise TemplateError(f"kernel {kernel.name} is not a template; name it without template arguments")
    if kernel.template_params is None:
        raise TemplateError(f"kernel {kernel.name}'s template parameters (variadic or template template "
                            "parameters) are not supported")
    inst = Instantiation(inst.name, tuple(_through_macros(a, kernel.macros) for a in inst.args))
    types, values = bind_args(kernel.template_params, inst)
    params = tuple(_instantiate_param(p, types) for p in kernel.params)
    args = tuple(types.get(p.name) or str(values[p.name]) for p in kernel.template_params)
    return replace(kernel, params=params, instantiation=Instantiation(inst.name, args),
                   constants=tuple(values.items()), types=tuple(types.items()))


def explicit_instantiation(kernel: Kernel) -> str:
    """`template __global__ void ns::scale<float, 256>(float* out, const float* in, float a, int n);`"""
    assert kernel.instantiation is not None and kernel.template_params is not None
    types = {p.name: a for p, a in zip(kernel.template_params, kernel.instantiation.args) if p.kind == "type"}
    decl = kernel.node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    assert decl is not None
    params = [substitute(text(c), types) for c in decl.child_by_field_name("parameters").named_children
              if c.type == "parameter_declaration"]
    scopes = []
    node = kernel.node.parent
    while node is not None:
        if node.type == "namespace_definition" and node.child_by_field_name("name") is not None:
            scopes.append(text(node.child_by_field_name("name")))
        node = node.parent
    name = "::".join([*reversed(scopes), str(kernel.instantiation)])
    return f"template __global__ void {name}({', '.join(params)});"


def _through_macros(arg: str, macros: Macros) -> str:
    """A template argument as the compiler sees it: a macro or typedef (`DATA_TYPE`, `BLOCK`) by
    what it stands for when that is a C type or an integer literal; else as written."""
    seen = resolve_type(arg, macros) if macros else arg
    if seen == arg:
        return arg
    try:
        return parse_instantiation(f"_<{seen}>").args[0]
    except TemplateError:
        return arg


def _instantiate_param(p: Param, types: dict[str, str]) -> Param:
    concrete = substitute(p.base_type, types)
    if concrete == p.base_type:
        return p
    return replace(p, ctype=c_type(concrete), concrete=concrete)


def load(source: str | bytes, macros: Macros | None = None) -> SourceFile:
    """The parsed file, seen through `macros` (a rewritten variant is loaded with its original's);
    the same bytes and macros give the same (immutable) objects, so rewrites, the engine's checks
    and the policy's features parse and analyse a variant once."""
    return _load(source.encode() if isinstance(source, str) else source, macros or NO_MACROS)


@functools.lru_cache(maxsize=256)
def _load(data: bytes, macros: Macros) -> SourceFile:
    tree = parse(data)
    errors = tuple(syntax_issues(tree))
    hidden: list[tuple[int, int]] = []
    if errors:  # code that only parses with the preprocessor's branches taken: `#ifdef` inside an `if`
        tree, errors, hidden = _through_conditionals(data, macros, tree, errors)
    kernels = tuple(_kernel(node, errors, macros) for node in _function_definitions(tree.root_node)
                    if _is_global(node))
    kernels = tuple(replace(k, conditional=any(k.node.start_byte <= s < k.node.end_byte for s, _ in hidden))
                    for k in kernels if k is not None)
    return SourceFile(data, tree, kernels, errors, macros)


def _through_conditionals(data: bytes, macros: Macros, tree: ts.Tree, errors: tuple[SyntaxIssue, ...]
                          ) -> tuple[ts.Tree, tuple[SyntaxIssue, ...], list[tuple[int, int]]]:
    """The file parsed as the preprocessor leaves it, byte for byte: the lines it drops (untaken
    branches, directives) and CUDA's `__align__(n)` attributes (a macro of its headers) blanked,
    when that parses with fewer errors; else as it was. Also the byte ranges blanked."""
    active = active_lines(data, macros)
    hidden, view, start = [], bytearray(data), 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        if active is not None and number not in active and line.strip():
            hidden.append((start, start + len(line)))
            view[start:start + len(line)] = re.sub(rb"[^\r]", b" ", line)
        start += len(line) + 1
    for m in _ALIGN.finditer(bytes(view)):
        hidden.append(m.span())
        view[m.start():m.end()] = b" " * (m.end() - m.start())
    if not hidden:
        return tree, errors, []
    blanked = parse(bytes(view))
    fewer = tuple(syntax_issues(blanked))
    return (blanked, fewer, hidden) if len(fewer) < len(errors) else (tree, errors, [])


_ALIGN = re.compile(rb"\b__align__\s*\((?:[^()]|\([^()]*\))*\)")


def _function_definitions(root: ts.Node):
    for node in walk(root, descend=lambda n: n.type in _CONTAINERS or n.type == "ERROR"):
        if node.type == "function_definition":
            yield node


def _is_global(node: ts.Node) -> bool:
    return any(c.type == "__global__" for c in node.children)


def _kernel(node: ts.Node, errors: tuple[SyntaxIssue, ...], macros: Macros) -> Kernel | None:
    decl = node.child_by_field_name("declarator")
    body = node.child_by_field_name("body")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    if decl is None or body is None:
        return None
    name_node = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters")
    if name_node is None or plist is None:
        return None
    params = tuple(p for p in (_param(c, macros) for c in plist.named_children
                               if c.type == "parameter_declaration") if p is not None)
    params = tuple(p if p.name else replace(p, name=f"{UNNAMED}{i + 1}") for i, p in enumerate(params))
    inside = tuple(e for e in errors if node.start_byte <= e.start_byte < node.end_byte)
    template = node.parent is not None and node.parent.type == "template_declaration"
    tparams: tuple[TemplateParam, ...] | None = ()
    if template:
        plist_node = node.parent.child_by_field_name("parameters")
        tparams = template_params(plist_node) if plist_node is not None else None
    return Kernel(text(name_node).split("::")[-1], params, node, body, template, inside, macros, tparams)


def _param(node: ts.Node, macros: Macros) -> Param | None:
    type_node = node.child_by_field_name("type")
    if type_node is None:
        return None
    const = any(c.type == "type_qualifier" and text(c) == "const" for c in node.children)
    pointer, restrict, name = 0, False, ""
    decl = node.child_by_field_name("declarator")
    while decl is not None:
        if decl.type in ("pointer_declarator", "abstract_pointer_declarator"):  # `float*` with or without a name
            pointer += 1
            restrict |= any(c.type in ("type_qualifier", "ms_pointer_modifier") and "restrict" in text(c)
                            for c in decl.children)  # `__restrict__`, or `__restrict` (an MS pointer modifier)
        elif decl.type in ("reference_declarator", "abstract_reference_declarator"):
            ident = next((c for c in decl.named_children if c.type == "identifier"), None)
            base = resolve_type(text(type_node), macros) + "&"
            return Param(text(ident) if ident is not None else "", base, 0, const, False, None,
                         node.start_byte, node.end_byte)
        elif decl.type in ("array_declarator", "abstract_array_declarator"):
            pointer += 1  # `float x[]` is `float* x`
        elif decl.type == "identifier":
            name = text(decl)
            break
        nxt = decl.child_by_field_name("declarator")
        if nxt is None:  # reference/array declarators keep the name as a plain child
            ident = next((c for c in decl.named_children if c.type == "identifier"), None)
            name = text(ident) if ident is not None else ""
            break
        decl = nxt
    restrict |= any(c.type == "type_qualifier" and "restrict" in text(c) for c in node.children)
    base = resolve_type(text(type_node), macros)
    return Param(name, base, pointer, const, restrict, c_type(base), node.start_byte, node.end_byte)
