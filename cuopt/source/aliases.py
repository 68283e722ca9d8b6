"""Built-in aliases: `int tid = threadIdx.x; int bid = blockIdx.x; int i = bid * blockDim.x + tid;`
(or a block's first index, `int xoffset = blockIdx.x * 1024;`, as generated code keeps it). Where
such an alias goes into a sum, product or difference that initializes an integer local, the
built-in takes its place, so the analysis sees the global index."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.affine import BUILTINS
from cuopt.source.ctypes import is_integer
from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel
from cuopt.source.parse import text, walk

_RING = {"identifier", "number_literal", "field_expression", "field_identifier", "parenthesized_expression",
         "binary_expression"}


def builtin_aliases(kernel: Kernel, m: KernelModel) -> list[tuple[ts.Node, str]]:
    """(node, replacement): each use of an alias in such an initializer, with the built-in it
    stands for; and the alias's declaration, replaced by nothing, where nothing else names it.
    Only in sums, products and differences that initialize an integer local: there the unsigned
    built-in and its signed alias give the same bits."""
    aliases = {name: text(local.init) for name, local in m.locals.items()
               if not local.writes and local.init is not None and is_integer(local.type)
               and (local.init.type == "field_expression" and text(local.init).replace(" ", "") in BUILTINS
                    or _block_offset(m, local.init))}
    out, used = [], set()
    for name, local in m.locals.items():
        init = local.init
        if name in aliases or local.writes or init is None or not is_integer(local.type) or \
                any(n.type not in _RING or n.type == "field_expression" and text(n).replace(" ", "") not in BUILTINS
                    for n in walk(init) if n.is_named) or \
                any(n.type == "binary_expression" and text(n.child_by_field_name("operator")) not in ("+", "-", "*")
                    for n in walk(init)):
            continue
        for n in walk(init):
            if n.type == "identifier" and text(n) in aliases:
                out.append((n, aliases[text(n)]))
                used.add(text(n))
    replaced = {n.start_byte for n, _ in out}

    def gone(name: str) -> bool:
        """An alias that only the rewritten indices named."""
        decl = m.locals[name].node
        return name in used and not any(n.type == "identifier" and text(n) == name and n.start_byte not in replaced
                                        and not decl.start_byte <= n.start_byte < decl.end_byte
                                        for n in walk(kernel.body))
    for decl in {m.locals[name].node for name in used}:  # `int bx = blockIdx.x, by = blockIdx.y;` goes whole
        names = [text(d.child_by_field_name("declarator")) for d in decl.children_by_field_name("declarator")]
        if all(gone(n) for n in names):
            out.append((decl, ""))
    return out


def _block_offset(m: KernelModel, init: ts.Node) -> bool:
    """`blockIdx.x * 1024` (or `* blockDim.x`, `* TILE`): the first index of a block, which generated
    code keeps in a local of its own (`int xoffset = blockIdx.x * 1024; int xindex = xoffset +
    threadIdx.x;`)."""
    if init.type != "binary_expression" or text(init.child_by_field_name("operator")) != "*":
        return False
    sides = [text(init.child_by_field_name(f)).replace(" ", "") for f in ("left", "right")]
    block = [x for x in sides if x.startswith("blockIdx.") and x in BUILTINS]
    other = [x for x in sides if x not in block]
    return len(block) == 1 and len(other) == 1 and (
        other[0] == f"blockDim.{block[0][-1]}" or m.tie_value(other[0]) is not None)
