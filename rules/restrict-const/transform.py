"""restrict-const: `__restrict__` on every pointer parameter (the spec's buffers are distinct
allocations) and reads of read-only pointers through the read-only data path.

A pointee `const` would change the kernel's mangled name, so read-only pointers that are not
declared const get their loads wrapped in `__ldg()` instead; the signature stays as it is."""
from __future__ import annotations

from typing import Any

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply
from cuopt.source.analysis import READ_ONLY_LOADS, called
from cuopt.source.ctypes import HALF_TYPES
from cuopt.source.parse import text, walk

LDG_TYPES = {"float", "double", "int", "unsigned int", "unsigned", "char", "signed char", "unsigned char",
             "short", "unsigned short", "long long", "unsigned long long", "float2", "float4", "int2", "int4",
             "uint2", "uint4", "double2", *HALF_TYPES}


class RestrictConst:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        if ctx.spec is None:
            raise Refuse("needs the spec, which declares the buffers distinct")
        pointers = [p for p in ctx.kernel.params if p.pointer == 1]
        if not pointers:
            raise Refuse("the kernel has no pointer parameters")
        escaping = sorted(p.name for p in pointers if p.name in ctx.model.shared_pointers)
        if escaping:
            raise Refuse(f"{', '.join(escaping)} may alias another pointer (used other than by subscript or to "
                         f"point into its own buffer)")
        todo = [p for p in pointers if not p.restrict or (not p.const and ctx.model.read_only(p.name))]
        if not todo:
            raise Refuse("every pointer is already __restrict__, and read-only ones const")
        note = ", ".join(p.name for p in todo)
        return [Site(ctx.kernel.node, note=f"pointers without __restrict__/const: {note}")]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        edits = []
        for p in ctx.kernel.params:
            if p.pointer != 1:
                continue
            if not p.restrict:
                decl = _pointer_declarator(ctx, p.start_byte)
                star = next(c for c in decl.children if c.type == "*")
                spaced = ctx.source[star.end_byte:star.end_byte + 1].isspace()
                edits.append(Edit.insert(star.end_byte, " __restrict__" if spaced else " __restrict__ "))
            if not p.const and ctx.model.read_only(p.name) and p.element in LDG_TYPES:
                for a in ctx.model.global_accesses(p.name):
                    if a.indices and not _inside_ldg(a.node):
                        edits.append(Edit.replace(a.node, f"__ldg(&{ctx.text(a.node)})"))
        if not edits:
            raise Refuse("nothing to add")
        return Rewritten(apply(ctx.source, edits), ctx.launch, "__restrict__ on pointers, read-only loads via __ldg")


def _pointer_declarator(ctx: Context, start: int) -> Any:
    param = next(n for n in walk(ctx.kernel.node) if n.type == "parameter_declaration" and n.start_byte == start)
    decl = param.child_by_field_name("declarator")
    while decl is not None and decl.type not in ("pointer_declarator", "abstract_pointer_declarator"):  # unnamed
        decl = decl.child_by_field_name("declarator")
    if decl is None:
        raise Refuse("unusual pointer declarator")
    return decl


def _inside_ldg(node: Any) -> bool:
    """Whether the read is already a cache-hinted load (`__ldg(&a[i])`, `__ldcs(&a[i])`, ...)."""
    parent = node.parent
    while parent is not None:
        if called(parent) in READ_ONLY_LOADS:
            return True
        parent = parent.parent
    return False


TRANSFORM = RestrictConst()
