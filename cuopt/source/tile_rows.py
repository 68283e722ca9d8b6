"""Tile-row loops: the CUDA samples' way of giving a block a TILE x TILE tile with fewer threads,

    int y = blockIdx.y * TILE_DIM + threadIdx.y;          // block TILE_DIM x BLOCK_ROWS
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        odata[x * height + (y + j)] = idata[(y + j) * width + x];

Thread row `threadIdx.y` of the block does rows `threadIdx.y + j` of the tile. Where nothing the
threads do depends on `threadIdx.y` and `j` but through their sum, this is the kernel that gives
each tile row a thread of its own: the loop's body at `j = 0` under a block of TILE_DIM rows. The
normal form is that kernel and that launch, so the rules read one output per thread (a transpose
that smem-tile stages, with the samples' own BLOCK_ROWS loop in what it writes)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import tree_sitter as ts

from cuopt.source.affine import DIM, THREAD, Poly
from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel, Loop
from cuopt.source.outparams import assigned_outside
from cuopt.source.parse import names_read, node_text, text, walk

_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_EFFECTS = ("call_expression", "assignment_expression", "update_expression")
_JUMPS = ("return_statement", "break_statement", "continue_statement", "goto_statement")


@dataclass(frozen=True)
class TileRows:
    loop: Loop
    axis: int
    tile: int  # the tile's rows: what the kernel takes for blockDim along `axis`


def tile_rows(kernel: Kernel, model: KernelModel, block: tuple[int, ...], sizes: Mapping[str, int]
              ) -> list[tuple[ts.Node, str]]:
    """(loop, its body at the first tile row) for a tile-row loop (the module's docstring); none where
    the kernel has none or its meaning could depend on which thread row runs which tile row.
    `block` is the launch's, `sizes` the spec's (what the kernel takes for a block tie)."""
    found = _tile_rows(kernel, model, block, sizes)
    if found is None:
        return []
    lp = found.loop
    body = lp.body  # a body of one statement in braces goes in as that statement
    body = body.named_children[0] if body.type == "compound_statement" and body.named_child_count == 1 else body
    return [(lp.node, node_text(body, _at_zero(body, lp.var)))]


def tiled_block(kernel: Kernel, model: KernelModel, block: tuple[int, ...], sizes: Mapping[str, int]
                ) -> tuple[int, ...]:
    """The block that gives each tile row a thread: `block` with the tile's rows along the loop's axis."""
    found = _tile_rows(kernel, model, block, sizes)
    if found is None:
        return block
    out = list(_block3(block))
    out[found.axis] = found.tile
    while len(out) > len(block) and out[-1] == 1:
        out.pop()
    return tuple(out)


def _block3(block: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(block) + (1,) * (3 - len(block))


def _at_zero(node: ts.Node, var: str) -> dict[tuple[int, int], str]:
    """Replacements that put 0 for `var` in `node`: the term goes from a sum (`y + j` is `y`, `(j *
    w + x)` is `(x)`), else `var` is 0."""
    spans: dict[tuple[int, int], str] = {}
    for n in walk(node):
        if n.type != "identifier" or text(n) != var:
            continue
        term, parent = n, n.parent
        while parent is not None and parent.type == "binary_expression" and \
                text(parent.child_by_field_name("operator")) == "*":
            term, parent = parent, parent.parent
        left = parent.child_by_field_name("left") if parent is not None and parent.type == "binary_expression" else None
        op = text(parent.child_by_field_name("operator")) if left is not None else None
        if op == "+" or (op == "-" and term != left):
            kept = parent.child_by_field_name("right") if term == left else left
            spans[(parent.start_byte, parent.end_byte)] = text(kept)
        else:
            spans[(term.start_byte, term.end_byte)] = "0"
    ordered = sorted(spans)
    if any(a[1] > b[0] for a, b in zip(ordered, ordered[1:])):  # terms within terms: 0 for each use
        return {(n.start_byte, n.end_byte): "0" for n in walk(node) if n.type == "identifier" and text(n) == var}
    return spans


def _tile_rows(kernel: Kernel, m: KernelModel, block: tuple[int, ...], sizes: Mapping[str, int]
               ) -> TileRows | None:
    if m.barriers or m.shared:
        return None
    for axis, name in m.block_ties.items():
        tile, rows = sizes[name] if name in sizes else m.tie_value(name), _block3(block)[axis]
        if tile is None or tile == rows or tile % rows:
            continue
        top = [s for s in kernel.body.named_children if s.type != "comment"]
        loops = [lp for lp in m.loops if lp.parent is None and lp.node in top]
        if len(loops) != 1 or top[-1] != loops[0].node:
            return None
        lp = loops[0]
        if lp.var is None or lp.cmp != "<" or lp.constants != (0, tile) or lp.step != rows \
                or not all(_pure_declaration(s) for s in top[:-1]) or not _independent(m, lp) \
                or not _invariant(kernel, m, lp, axis):
            return None
        return TileRows(lp, axis, tile)
    return None


def _independent(m: KernelModel, lp: Loop) -> bool:
    """Whether the loop's iterations share nothing: no jump out of one (`return`, `break`,
    `continue`, `goto`), no value carried from one to the next (a local declared outside and
    assigned inside), and no element one writes that another reads or writes (every access to a
    written array is at the element written)."""
    if any(n.type in _JUMPS for n in walk(lp.body)) or assigned_outside(lp.body):
        return False
    inside = [a for a in m.accesses if lp.node.start_byte <= a.node.start_byte < lp.node.end_byte]
    for array in {a.array for a in inside if a.write}:
        written = {a.index for a in inside if a.array == array and a.write}
        if len(written) != 1 or None in next(iter(written)) or \
                any(a.index not in written for a in m.accesses if a.array == array):
            return False
    return True


def _pure_declaration(node: ts.Node) -> bool:
    """A declaration that computes values and nothing else (more threads may run it)."""
    return node.type == "declaration" and not any(n.type in _EFFECTS for n in walk(node))


def _invariant(kernel: Kernel, m: KernelModel, lp: Loop, axis: int) -> bool:
    """Whether every use of the loop's counter, of threadIdx along `axis` and of the locals made
    from them is in a subscript or a comparison whose value depends on the two only through their
    sum; `blockDim` along the axis (which the normal form changes) appears nowhere."""
    thread, var = THREAD[axis], lp.var
    body_text = text(kernel.body).replace(" ", "")
    if DIM[axis] in body_text:
        return False
    carriers = {var}
    grew = True
    while grew:  # locals computed from the thread's row or the counter carry them
        grew = False
        for name, local in m.locals.items():
            if name in carriers or local.init is None:
                continue
            if local.writes or (thread not in text(local.init).replace(" ", "")
                                and not names_read(local.init) & carriers):
                continue
            carriers.add(name)
            grew = True
    declarations = [m.locals[c].node for c in carriers if c in m.locals and c != var]
    header = (lp.node.start_byte, lp.body.start_byte)
    for node in walk(kernel.body):
        if header[0] <= node.start_byte < header[1]:
            continue
        use = (node.type == "identifier" and text(node) in carriers) or \
            (node.type == "field_expression" and text(node).replace(" ", "") == thread)
        if not use or any(d.start_byte <= node.start_byte < d.end_byte for d in declarations):
            continue
        context = _context(node)
        poly = m.poly(context) if context is not None else None
        if poly is None or not _shift_free(poly, thread, var):
            return False
    return True


def _context(node: ts.Node) -> ts.Node | None:
    """The index expression (a subscript's) or comparison operand that holds `node`; None when it
    is used otherwise (a value stored, a call's argument)."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type == "subscript_argument_list":
            return child
        if parent.type == "binary_expression" and text(parent.child_by_field_name("operator")) in _COMPARISONS:
            return child
        if parent.type not in ("binary_expression", "parenthesized_expression", "unary_expression", "cast_expression"):
            return None
        child, parent = parent, parent.parent
    return None


def _shift_free(poly: Poly, thread: str, var: str) -> bool:
    """Whether `poly` (over threadIdx and the counter) is a function of their sum."""
    at_zero = poly.substitute(var, Poly.const(0))
    return at_zero.substitute(thread, Poly.symbol(thread) + Poly.symbol(var)) == poly
