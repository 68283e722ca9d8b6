"""The macros the compiler sees in a .cu file, computed with pcpp: the file's own `#define`s, those of
its local headers (quoted includes beside the file or in the include dirs, angle includes in the
include dirs) and the command line's `-D`s, with conditionals respected. Headers that cannot be
found (stdio.h, cuda_runtime.h) are skipped: they define nothing a kernel's sizes and types need."""
from __future__ import annotations

import functools
import io
import os
import re
import threading
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Iterable, Literal, Sequence

import pcpp
import tree_sitter as ts
from pcpp.parser import Action, OutputDirective

from cuopt.source.overrides import resolve_include, set_defines
from cuopt.source.parse import parse
from cuopt.spec.dtypes import c_type, is_float, normalize_c_type

Define = tuple[str, "str | None"]  # (-D NAME, VALUE or None for `-DNAME`)

PREDEFINED = (("__CUDACC__", "1"), ("__NVCC__", "1"), ("__cplusplus", "201703L"))
_BUILTIN = frozenset({"__DATE__", "__TIME__", "__PCPP__", "__FILE__", "__LINE__"}
                     | {name for name, _ in PREDEFINED})
_INTEGER = re.compile(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)[uUlL]*")
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define\b", re.M)
_CONDITIONAL = re.compile(rb"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else)\b", re.M)
_CONSTANT = re.compile(rb"\b(?:constexpr|const)\b[^;{}()]*=|\benum\b")
_LINE = re.compile(r'#line (\d+) "(.*)"')
DEVICE = (("__CUDA_ARCH__", "900"),)  # what the device pass defines: kernels are compiled in it
_LOCK = threading.Lock()  # pcpp preprocessors keep state while they expand


@dataclass(frozen=True)
class Definition:
    """One macro: object-like (params None) or function-like."""

    name: str
    params: tuple[str, ...] | None
    body: str
    variadic: bool = False
    constant: bool = False  # a C++ integer constant read as a macro (`constexpr int kBlock = 256;`)

    @property
    def directive(self) -> str:
        """The `#define` line's text after `#define`."""
        if self.params is None:
            return f"{self.name} {self.body}"
        params = list(self.params[:-1]) + ["..."] if self.variadic else list(self.params)
        return f"{self.name}({','.join(params)}) {self.body}"


@dataclass(frozen=True)
class _Origin:
    """What a Macros value was computed from (to run pcpp again with another define), with the
    state of the headers it read: two tables of equal definitions from different files or header
    contents are different values (their guards, so what `-D` overrides, may differ)."""

    data: bytes
    path: Path
    include_dirs: tuple[Path, ...]
    defines: tuple[Define, ...]
    headers: tuple = ()  # (path, (mtime, size)) of each header read


@dataclass(frozen=True)
class Macros:
    """The macros defined at the end of a file, as the compiler would see them."""

    definitions: tuple[Definition, ...] = ()
    origin: _Origin | None = field(default=None, repr=False)
    typedefs: tuple[tuple[str, str], ...] = ()  # `typedef float DATA_TYPE;` in the file or its headers

    def __bool__(self) -> bool:
        return bool(self.definitions or self.typedefs)

    def __hash__(self) -> int:  # loads are cached per (bytes, macros): hash the definitions once
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash(self.definitions)

    @cached_property
    def _by_name(self) -> dict[str, Definition]:
        return {d.name: d for d in self.definitions}

    def get(self, name: str) -> Definition | None:
        return self._by_name.get(name) if self.definitions else None

    def object_like(self, name: str) -> str | None:
        """The replacement text of an object-like macro `name`; None when it is not one."""
        d = self.get(name)
        return d.body if d is not None and d.params is None else None

    def typedef(self, name: str) -> str | None:
        """The type a `typedef` names `name` (as written), or None."""
        return next((t for n, t in self.typedefs if n == name), None)

    def function_like(self, name: str) -> Definition | None:
        d = self.get(name)
        return d if d is not None and d.params is not None else None

    def expand(self, text: str) -> str:
        """`text` with every macro expanded, as the compiler would see it."""
        if not self.definitions:
            return text
        with _LOCK:
            pp = _expander(self.definitions)
            return _join(pp.expand_macros(pp.tokenize(text)))

    def substitute(self, name: str, args: Sequence[str]) -> str | None:
        """One expansion of the function-like macro `name` with argument texts `args` (the macros
        in its body and arguments are left as written); None when it is not one or the count differs."""
        d = self.function_like(name)
        if d is None or (len(args) != len(d.params) and not (d.variadic and len(args) >= len(d.params) - 1)):
            return None
        with _LOCK:
            pp = _expander((d,))
            return _join(pp.expand_macros(pp.tokenize(f"{name}({','.join(args)})")))

    def integer(self, name: str) -> int | None:
        """The value of macro `name` when it expands to an integer constant expression."""
        return _integer(self.definitions, name) if self.object_like(name) is not None else None

    def overridable(self, name: str) -> bool:
        """Whether `-Dname=other` changes the macro (it is guarded by `#ifndef name` or the like):
        found by preprocessing the file again with that define."""
        return self._probe(name, "define")

    def settable(self, name: str) -> bool:
        """Whether a size set can give the macro another value the way the program sees it: its
        `#define`s in the file and its headers edited (`overrides.set_defines`), with the user's own
        `-D` of it, if any, set too; found by preprocessing the edited file."""
        return self._probe(name, "edit")

    def _probe(self, name: str, how: str) -> bool:
        d = self.get(name)
        if self.origin is None or d is None or d.constant:  # `-DkBlock=...` would break the declaration
            return False
        if (name, how) not in self._overrides:
            probe = str((self.integer(name) or 0) + 1)
            self._overrides[name, how] = _overridden(self.origin, name, probe, how == "edit")
        return self._overrides[name, how]

    @cached_property
    def _overrides(self) -> dict[tuple[str, str], bool]:
        return {}


NO_MACROS = Macros()


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


SizeKind = Literal["guarded", "edited", "fixed"]


def compile_time_sizes(names: Iterable[str], macros: Macros) -> dict[str, SizeKind]:
    """Of a spec's size names, those the file defines as integer macros, each with how a size set
    sets it: "guarded" (an `#ifndef` guard or the like: the program is meant to be built at other
    sizes; set by editing its definitions), "edited" (an unguarded `#define`, edited all the same),
    "fixed" (a C++ constant, or a definition no edit reaches: compiled at its value only)."""
    out: dict[str, SizeKind] = {}
    for name in names:
        if macros and macros.integer(name) is not None:
            out[name] = "fixed" if not macros.settable(name) else "guarded" if macros.overridable(name) else "edited"
    return out


def macros_of(data: bytes, path: Path, include_dirs: tuple[Path, ...] = (),
              defines: tuple[Define, ...] = ()) -> Macros:
    """The macros of the file `path` whose bytes are `data`; cached per arguments for as long as
    the headers it read are unchanged on disk."""
    key = (data, Path(path), tuple(Path(d) for d in include_dirs), tuple(defines))
    cached = _CACHE.get(key)
    if cached is not None and cached[1] == _stamp(cached[2]):
        return cached[0]
    macros, headers = _macros_of(*key)
    if len(_CACHE) >= 256:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = (macros, _stamp(headers), headers)
    return macros


_CACHE: dict[tuple, tuple[Macros, tuple, tuple[str, ...]]] = {}


def _stamp(headers: tuple[str, ...]) -> tuple:
    """What tells that a header changed: its modification time and size (None when it is gone)."""
    out = []
    for h in headers:
        try:
            st = os.stat(h)
            out.append((st.st_mtime_ns, st.st_size))
        except OSError:
            out.append(None)
    return tuple(out)


def _macros_of(data: bytes, path: Path, include_dirs: tuple[Path, ...], defines: tuple[Define, ...]
               ) -> tuple[Macros, tuple[str, ...]]:
    """The macros, and the headers read to find them."""
    if not defines and not _DEFINE.search(data) and b"typedef" not in data and not _CONSTANT.search(data) and \
            not _includes_something(data, path, include_dirs):
        return NO_MACROS, ()
    origin = _Origin(data, path, include_dirs, defines)
    found, headers, output = _run(origin)
    origin = replace(origin, headers=tuple(zip(headers, _stamp(headers))))
    tree = parse(output).root_node
    defined = tuple(d for d in found.values() if d.name not in _BUILTIN or _defined(defines, d.name))
    constants = tuple(d for d in _constants(tree) if d.name not in found)
    return Macros(defined + constants, origin, _typedefs(tree)), headers


def active_lines(data: bytes, macros: Macros) -> frozenset[int] | None:
    """The lines (1-based) of the file that hold code once the preprocessor has run for the device
    (the branches its conditionals take, without the directives); None when the file has no
    conditionals."""
    if not _CONDITIONAL.search(data):
        return None
    origin = macros.origin or _Origin(data, Path("kernel.cu"), (), ())
    return _active(_Origin(data, origin.path, origin.include_dirs, origin.defines + DEVICE))


@functools.lru_cache(maxsize=64)
def _active(origin: _Origin) -> frozenset[int]:
    name, here, line, active = os.path.abspath(origin.path), False, 0, set()
    for text in _run(origin)[2].split("\n"):
        directive = _LINE.fullmatch(text.strip())
        if directive is not None:
            line, here = int(directive.group(1)), os.path.abspath(directive.group(2)) == name
            continue
        if here and text.strip():
            active.add(line)
        line += 1
    return frozenset(active)


def _defined(defines: tuple[Define, ...], name: str) -> bool:
    return any(n == name for n, _ in defines)


def _includes_something(data: bytes, path: Path, include_dirs: tuple[Path, ...]) -> bool:
    """Whether an `#include` of the file names a header that exists (else pcpp has nothing to read)."""
    return any(resolve_include(m.group(2).decode(errors="replace"), m.group(1) == b'"', path.parent, include_dirs)
               for m in _INCLUDE.finditer(data))


def _overridden(origin: _Origin, name: str, probe: str, edit: bool) -> bool:
    """Whether the macro reads `probe` once set so: by `-Dname=probe` alone, or (`edit`) by editing
    its definitions in the file and the headers it reads, with the user's own `-D` of it set too."""
    defines = origin.defines
    if not edit or _defined(defines, name):
        defines = tuple(d for d in defines if d[0] != name) + ((name, probe),)
    data = set_defines(origin.data.decode(errors="replace"), {name: probe}).encode() if edit else origin.data
    d = _run(_Origin(data, origin.path, origin.include_dirs, defines), (name, probe) if edit else None)[0].get(name)
    return d is not None and d.params is None and d.body == probe


def _run(origin: _Origin, edit: tuple[str, str] | None = None) -> tuple[dict[str, Definition], tuple[str, ...], str]:
    """pcpp over the file: the macros defined at its end, the headers it read, the preprocessed text;
    with `edit` (NAME, VALUE), the headers read with their definitions of NAME set to VALUE."""
    pp = _Preprocessor()
    pp.edit = edit
    for d in origin.include_dirs:
        pp.add_path(str(d))
    for name, value in PREDEFINED + origin.defines:
        pp.define(f"{name} {'1' if value is None else value}")
    pp.parse(origin.data.decode(errors="replace"), str(origin.path))
    output = io.StringIO()
    with _LOCK:
        pp.write(output)
    headers = tuple(dict.fromkeys(t.included_abspath for t in pp.include_times if t.included_abspath))
    return {name: _definition(m) for name, m in pp.macros.items()}, headers, output.getvalue()


def _typedefs(root: ts.Node) -> tuple[tuple[str, str], ...]:
    """The file-scope `typedef TYPE NAME;` of the preprocessed text whose TYPE is a plain type
    (no pointer, array, struct or function): what a kernel's `NAME *a` parameter then means."""
    out = []
    for node in root.named_children:
        kind = node.child_by_field_name("type")
        name = node.child_by_field_name("declarator")
        if node.type == "type_definition" and kind is not None and name is not None and \
                kind.type in ("primitive_type", "sized_type_specifier", "type_identifier") and \
                name.type == "type_identifier":
            out.append((name.text.decode(), kind.text.decode()))
    return tuple(out)


def _constants(root: ts.Node) -> list[Definition]:
    """Integer constants at file or namespace scope of the preprocessed text, as object-like macros
    of their initializers (which no `-D` overrides): `constexpr int kBlock = 256;`, `static const
    unsigned TILE = 2 * kBlock;`, and the enumerators given a value (`enum { BLOCK = 256 };`).
    Modern code names its block and tile sizes so, where older code writes `#define`s."""
    out: list[Definition] = []
    for node in root.named_children:
        if node.type == "namespace_definition":
            body = node.child_by_field_name("body")
            out += _constants(body) if body is not None else []
        elif node.type == "declaration" and _integral_constant(node):
            for d in node.children_by_field_name("declarator"):
                name, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
                if d.type == "init_declarator" and name is not None and name.type == "identifier" and value is not None \
                        and value.type not in ("initializer_list", "argument_list"):
                    out.append(Definition(name.text.decode(), None, _body(value), constant=True))
        for enum in ([node] if node.type == "enum_specifier" else
                     [c for c in node.named_children if c.type == "enum_specifier"]):
            body = enum.child_by_field_name("body")
            for e in body.named_children if body is not None else []:
                name, value = e.child_by_field_name("name"), e.child_by_field_name("value")
                if e.type == "enumerator" and name is not None and value is not None:
                    out.append(Definition(name.text.decode(), None, _body(value), constant=True))
    return out


def _body(value: ts.Node) -> str:
    """A constant's initializer as a macro body: a literal as it is (a size kept by name), any other
    expression in parentheses."""
    spelled = value.text.decode()
    return spelled if is_integer_literal(spelled) else f"({spelled})"


def _integral_constant(declaration: ts.Node) -> bool:
    """`const` or `constexpr` with an integral type."""
    qualifiers = {c.text.decode() for c in declaration.children if c.type == "type_qualifier"}
    kind = declaration.child_by_field_name("type")
    ct = c_type(kind.text.decode()) if kind is not None else None
    return bool(qualifiers & {"const", "constexpr"}) and ct is not None and ct.width == 1 and not is_float(ct.dtype)


def _definition(m: pcpp.parser.Macro) -> Definition:
    params = None if m.arglist is None else tuple(m.arglist)
    return Definition(m.name, params, _join(m.value).strip(), bool(m.variadic))


@functools.lru_cache(maxsize=4096)
def _integer(definitions: tuple[Definition, ...], name: str) -> int | None:
    with _LOCK:
        pp = _expander(definitions)
        pp.strict, errors = True, pp.return_code
        try:
            value, partial = pp.evalexpr(pp.tokenize(name))
        finally:
            pp.strict = False
        return None if partial is not None or pp.return_code != errors else int(value)


@functools.lru_cache(maxsize=64)
def _expander(definitions: tuple[Definition, ...]) -> _Preprocessor:
    pp = _Preprocessor()
    for d in definitions:
        pp.define(d.directive)
    return pp


def is_integer_literal(text: str) -> bool:
    """`2048`, `0x100`, `64u`: a macro with such a body is a size, kept by name."""
    return _INTEGER.fullmatch(text.strip()) is not None


def _join(tokens: list) -> str:
    return "".join(t.value for t in tokens)


class _Preprocessor(pcpp.Preprocessor):
    """pcpp without output on stderr: headers it cannot find are dropped, errors counted; when
    `strict`, unknown identifiers leave an `#if`-style expression unevaluated instead of reading 0."""

    def __init__(self) -> None:
        super().__init__()
        self.strict = False
        self.edit: tuple[str, str] | None = None

    def on_file_open(self, is_system_include: bool, includepath: str):
        opened = super().on_file_open(is_system_include, includepath)
        if self.edit is None:
            return opened
        with opened:
            return io.StringIO(set_defines(opened.read(), dict([self.edit])))

    def on_error(self, file: str, line: int, msg: str) -> None:
        self.return_code += 1

    def on_include_not_found(self, is_malformed: bool, is_system_include: bool, curdir: str,
                             includepath: str) -> str:
        raise OutputDirective(Action.IgnoreAndRemove)

    def on_unknown_macro_in_expr(self, ident: str) -> int | None:
        return None if self.strict else 0

    def on_unknown_macro_function_in_expr(self, ident: str):
        return None if self.strict else (lambda x: 0)
