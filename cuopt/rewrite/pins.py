"""Type pins: a rewrite of a template instantiation that spells code for the instantiation's type
(`T` read as `float`) keeps the template to that type with a `static_assert` at the top of the
body, and the pins a kernel has survive later rewrites."""
from __future__ import annotations

import re
from dataclasses import replace

from cuopt.rewrite.context import Context, Refuse, Rewritten
from cuopt.source.edits import body_indent
from cuopt.source.ctypes import ARITHMETIC
from cuopt.source.kernels import Kernel, load
from cuopt.source.templates import TemplateError, instantiations


def pin_types(ctx: Context, result: Rewritten) -> Rewritten:
    """A rewrite that read a template's type parameter as the instantiation's type (`T` as `float`:
    a float4 load, `-INFINITY` as max's identity) keeps the template to that type: a
    `static_assert` at the top of the body that holds only where `T` is `float`, so that another
    instantiation fails to compile, naming the pin, rather than run code written for another type.
    Pins the kernel had stay, whatever later rewrites rebuild."""
    kept = _PIN.findall(ctx.kernel.body.text.decode())
    types = [(name, type_) for name, type_ in ctx.kernel.types
             if any(re.search(rf"\b{re.escape(name)}\b", w) for w in result.pins)]
    for inst, _, _ in instantiations(ctx.file.tree.root_node, ctx.kernel.name) if types else ():
        other = instance(ctx, str(inst))
        clash = next(((n, t) for n, t in types if other is not None and dict(other.types).get(n, t) != t), None)
        if clash is not None:
            raise Refuse(f"reads {clash[0]} as {clash[1]}, but the file also instantiates {other.entry}")
    kernel = load(result.source, ctx.macros).kernel(ctx.kernel_name) if types or kept else None
    if kernel is None:
        return result
    body = kernel.body.text.decode()
    lines = kept + [f'static_assert({_same(name, type_)}, "cuopt rewrote {kernel.name} for {name} = {type_}");'
                    for name, type_ in types]
    lines = [line for line in dict.fromkeys(lines) if line not in body]
    if not lines:
        return result
    indent = body_indent(result.source, kernel.body)
    at = kernel.body.start_byte + 1
    source = result.source[:at] + "".join(f"\n{indent}{line}" for line in lines).encode() + result.source[at:]
    return replace(result, source=source)


_PIN = re.compile(r'static_assert\(.*, "cuopt rewrote \w+ for \w+ = [\w ]+"\);')


def _same(name: str, type_: str) -> str:
    """A constant expression true only where type parameter `name` is `type_` (or one alike in
    size, signedness and integrality: `char` for `signed char`). Arithmetic types are told apart by
    value, so that a failing assertion prints its message; any other type by a pointer conversion
    that compiles only for it."""
    if type_ not in ARITHMETIC:
        return f"sizeof(static_cast<{type_}*>(({name}*)nullptr)) > 0"
    return (f"sizeof({name}) == sizeof({type_}) && ({name})0.5 == ({type_})0.5 && "
            f"(({name})-1 < ({name})0) == (({type_})-1 < ({type_})0)")



def instance(ctx: Context, instantiation: str) -> Kernel | None:
    """The kernel of an instantiation the file makes; None when it does not fit the template."""
    try:
        return ctx.file.kernel(instantiation)
    except TemplateError:
        return None
