"""The kernel as `cuopt init` analyses it: the spellings the rules' normal form rewrites
(cuopt/rewrite/normalize.py) put in by the same modules, in the text itself, with every line where
it was, so that what init reports by line still points at the user's file."""
from __future__ import annotations

from collections.abc import Callable

import tree_sitter as ts

from cuopt.source.accessors import accessor_calls
from cuopt.source.affine import BUILTINS
from cuopt.source.aliases import builtin_aliases
from cuopt.source.atomics import atomic_addresses
from cuopt.source.casts import named_casts
from cuopt.source.declarations import single_assignments
from cuopt.source.groups import group_ranks
from cuopt.source.helpers import helper_calls
from cuopt.source.kernels import Kernel, instantiate, load
from cuopt.source.loop_macros import loop_macro_headers
from cuopt.source.model import analyze
from cuopt.source.mul24 import mul24_products
from cuopt.source.parse import root_of, text, walk
from cuopt.source.whiles import bare_for_loops, while_loops


def plain_kernel(kernel: Kernel) -> Kernel:
    """The kernel with its loop macros as the `for` headers they expand to (loop_macros.py), its named casts of numbers as C casts (cuopt/source/casts.py), 24-bit multiplies as products (mul24.py), cooperative groups' ranks as the built-ins (groups.py), atomic addresses
    `p + e` as `&p[e]` (atomics.py), its accessor macro calls put in as subscripts (cuopt/source/accessors.py), its
    index helpers' calls as the expressions they return (helpers.py), locals declared first given
    their sole assignment as initializer (declarations.py), counted `while` loops as `for` loops
    (whiles.py) and built-in aliases put in (aliases.py);
    the same kernel when none applies."""
    for find in (loop_macro_headers, named_casts, mul24_products, _groups, atomic_addresses, accessor_calls, helper_calls, single_assignments, _whiles, _bare_fors, _aliases):
        kernel = _substituted(kernel, find)
    return kernel


def _groups(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """Cooperative groups' ranks (groups.py), where the kernel reads only the built-ins' x: its
    launch, which init does not know yet, is taken as one-dimensional then."""
    one_dimensional = not any(n.type == "field_expression" and (b := text(n).replace(" ", "")) in BUILTINS
                              and not b.endswith(".x") for n in walk(kernel.body))
    return group_ranks(kernel, one_dimensional)


def _bare_fors(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    return bare_for_loops(kernel, analyze(kernel))


def _aliases(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    return builtin_aliases(kernel, analyze(kernel))


def _whiles(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """Counted `while` loops as `for` loops (cuopt/source/whiles.py), every line kept: the counter's
    statement and the step leave blank lines. Innermost loops only (an outer one keeps its `while`)."""
    found = while_loops(kernel, analyze(kernel))
    out: list[tuple[ts.Node, str]] = []
    for w in found:
        if any(o is not w and w.loop.start_byte < o.loop.start_byte < w.loop.end_byte for o in found):
            continue
        body = w.loop.child_by_field_name("body")
        whole = body.text or b""
        inner = whole[:w.step.start_byte - body.start_byte] + whole[w.step.end_byte - body.start_byte:]
        out += [(w.start, ""), (w.loop, w.header + inner.decode())]
    return out


def _substituted(kernel: Kernel, find: Callable[[Kernel], list[tuple[ts.Node, str]]]) -> Kernel:
    """`kernel` with each node `find` gives replaced by its text."""
    calls = find(kernel)
    if not calls:
        return kernel
    root = root_of(kernel.node)
    assert root.text is not None
    # the file as parsed: the root starts after leading blank lines, which keep the lines where they were
    source = b"\n" * root.start_point.row + b" " * root.start_point.column + root.text
    shift = len(source) - len(root.text) - root.start_byte
    for call, subscript in sorted(calls, key=lambda c: c[0].start_byte, reverse=True):
        source = source[:call.start_byte + shift] + subscript.encode() + source[call.end_byte + shift:]
    plain = load(source, kernel.macros).kernel(kernel.name)
    if plain is None:
        return kernel
    return instantiate(plain, kernel.instantiation) if kernel.instantiation is not None else plain
