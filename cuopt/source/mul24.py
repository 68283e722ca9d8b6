"""24-bit multiplies read as products: `__umul24(blockIdx.x, blockDim.x)` (and `__mul24`, also
behind a macro, `#define IMUL(a, b) __mul24(a, b)`) as `blockIdx.x * blockDim.x`, the spelling the
analysis of indices and guards knows. Older CUDA code used them for speed on the first GPUs; since
Fermi a 32-bit multiply is one instruction and the intrinsics take several. Writing one promises
that both operands fit in 24 bits, where the product is the same: the replacement keeps the
intrinsic's type (`unsigned int` for `__umul24`, `int` for `__mul24`), and the GPU checks every
variant against the original as always."""
from __future__ import annotations

import tree_sitter as ts

from cuopt.source.affine import BUILTINS
from cuopt.source.kernels import Kernel
from cuopt.source.macro_expr import expansion
from cuopt.source.parse import root_of, text, unparen, walk

INTRINSICS = {"__umul24": "unsigned int", "__mul24": "int"}


def mul24_products(kernel: Kernel) -> list[tuple[ts.Node, str]]:
    """(call, product) for each 24-bit multiply in the kernel's body, written directly or through a
    function-like macro that expands to one (not one nested in another's operands)."""
    out: list[tuple[ts.Node, str]] = []
    for node in walk(kernel.body):
        if node.type != "call_expression" or any(o.start_byte <= node.start_byte < o.end_byte for o, _ in out):
            continue
        product = _product(kernel, node)
        if product is not None:
            out.append((node, product))
    return out


def _product(kernel: Kernel, call: ts.Node) -> str | None:
    """The call as products: an intrinsic's, or a function-like macro's expansion with the
    intrinsics in it spelled so (`IMAD(a, b, c)` for `( __mul24((a), (b)) + (c) )`)."""
    fn, args = call.child_by_field_name("function"), call.child_by_field_name("arguments")
    if fn is None or fn.type != "identifier" or args is None:
        return None
    if text(fn) in INTRINSICS:
        return _spelled(text(fn), [text(unparen(a)) for a in args.named_children])
    if kernel.macros.function_like(text(fn)) is None:
        return None
    body = kernel.macros.substitute(text(fn), [text(a) for a in args.named_children])
    tree = expansion(body) if body is not None else None
    if tree is None:
        return None
    root = root_of(tree).text or b""
    base = root.index(body.encode())
    edits = []
    for node in walk(tree):
        inner = node.child_by_field_name("function") if node.type == "call_expression" else None
        inner_args = node.child_by_field_name("arguments") if inner is not None else None
        if inner is None or text(inner) not in INTRINSICS or inner_args is None:
            continue
        product = _spelled(text(inner), [text(unparen(a)) for a in inner_args.named_children])
        if product is None:
            return None
        edits.append((node.start_byte - base, node.end_byte - base, product))
    if not edits:
        return None
    spelled = body.encode()
    for start, end, product in reversed(edits):
        spelled = spelled[:start] + product.encode() + spelled[end:]
    whole = spelled.decode().strip()
    return whole if len(edits) == 1 and whole == edits[0][2] else f"({whole})"


def _spelled(intrinsic: str, operands: list[str]) -> str | None:
    """The product with the intrinsic's type (built-ins are `unsigned int` already)."""
    if len(operands) != 2 or any(name in o for o in operands for name in INTRINSICS):
        return None
    plain = ["".join(o.split()) for o in operands]
    if all(p in BUILTINS for p in plain):
        product = f"{plain[0]} * {plain[1]}"
        return f"({product})" if intrinsic == "__umul24" else f"((int)({product}))"
    kind = INTRINSICS[intrinsic]
    return f"(({kind})({operands[0]}) * ({kind})({operands[1]}))"
