"""The `__global__` kernels of a file and their parameters."""
from __future__ import annotations

import functools

from dataclasses import dataclass, field
from typing import Any

import tree_sitter as ts

from cuopt.source.parse import SyntaxIssue, parse, syntax_issues, text, walk
from cuopt.source.preprocess import NO_MACROS, Macros
from cuopt.spec.dtypes import CType, c_type, normalize_c_type

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

    @property
    def line(self) -> int:
        return self.node.start_point.row + 1

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

    def kernel(self, name: str) -> Kernel | None:
        return next((k for k in self.kernels if k.name == name), None)


def load(source: str | bytes, macros: Macros | None = None) -> SourceFile:
    """The parsed file, seen through `macros` (a rewritten variant is loaded with its original's);
    the same bytes and macros give the same (immutable) objects, so rewrites, the engine's checks
    and the policy's features parse and analyse a variant once."""
    return _load(source.encode() if isinstance(source, str) else source, macros or NO_MACROS)


@functools.lru_cache(maxsize=256)
def _load(data: bytes, macros: Macros) -> SourceFile:
    tree = parse(data)
    errors = tuple(syntax_issues(tree))
    kernels = tuple(_kernel(node, errors, macros) for node in _function_definitions(tree.root_node)
                    if _is_global(node))
    return SourceFile(data, tree, tuple(k for k in kernels if k is not None), errors, macros)


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
    inside = tuple(e for e in errors if node.start_byte <= e.start_byte < node.end_byte)
    template = node.parent is not None and node.parent.type == "template_declaration"
    return Kernel(text(name_node).split("::")[-1], params, node, body, template, inside, macros)


def resolve_type(written: str, macros: Macros) -> str:
    """A C type as the compiler sees it: `const DATA_TYPE` -> `float` when DATA_TYPE is a macro or
    a `typedef` of the file or its headers."""
    base = normalize_c_type(written)
    if not macros:
        return base
    resolved, seen = normalize_c_type(macros.expand(base)), set()
    while (named := macros.typedef(resolved)) is not None and resolved not in seen:
        seen.add(resolved)
        resolved = normalize_c_type(macros.expand(named))
    return resolved


def _param(node: ts.Node, macros: Macros) -> Param | None:
    type_node = node.child_by_field_name("type")
    if type_node is None:
        return None
    const = any(c.type == "type_qualifier" and text(c) == "const" for c in node.children)
    pointer, restrict, name = 0, False, ""
    decl = node.child_by_field_name("declarator")
    while decl is not None:
        if decl.type == "pointer_declarator":
            pointer += 1
            restrict |= any(c.type == "type_qualifier" and "restrict" in text(c) for c in decl.children)
        elif decl.type == "reference_declarator":
            ident = next((c for c in decl.named_children if c.type == "identifier"), None)
            base = resolve_type(text(type_node), macros) + "&"
            return Param(text(ident) if ident is not None else "", base, 0, const, False, None,
                         node.start_byte, node.end_byte)
        elif decl.type == "array_declarator":
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
