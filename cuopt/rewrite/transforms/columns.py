"""Columns: reads that a walk along one index reads again, the analysis `stream` and `carry` share.

A walk is an index that a thread steps by one: the global index along y or z when `stream` gives
each thread consecutive rows or planes, a loop's counter for `carry`. A read `a[(s + d) * P + Q]`
(`s` the walked index, `P` one term without built-ins: a symbol, a product such as `nx * ny`, or a
constant; `d` a constant; `Q` anything that does not move along the walk) reads, at step `s`, the
element that step `s + 1` reads through offset `d - 1`. Reads of one read-only array with the same
`P` and `Q` form a column; a column read at two offsets or more, with at most one offset between
them that it does not read, can be carried in registers: each element loaded once, at the step
where the largest offset reaches it (the first step also loads every smaller offset, and the
offset between: its address lies between two that the original reads, in the same array)."""
from __future__ import annotations

from dataclasses import dataclass

import tree_sitter as ts

from cuopt.rewrite.context import Context, Refuse
from cuopt.rewrite.transforms.common import read_only_element
from cuopt.source.affine import BUILTINS, Poly
from cuopt.source.analysis import global_accesses, read_expression
from cuopt.source.ctypes import HALF_TYPES
from cuopt.source.parse import operator_of

ELEMENTS = ("float", "double", "int", "unsigned int", "unsigned", "short", "unsigned short", "char",
            "unsigned char", *HALF_TYPES)
_CONDITIONAL = ("if_statement", "conditional_expression", "for_statement", "while_statement", "do_statement",
                "switch_statement")


@dataclass(frozen=True)
class Walk:
    """The walked index: `index` (a polynomial), the symbol whose coefficient in a read's index is the
    pitch, the symbols that move along the walk (none may be left in a column's `Q`), and `x`, the
    index a 2D column is named by its offset from (None: columns are numbered)."""

    index: Poly
    lead: str
    moving: frozenset[str]
    x: Poly | None = None


@dataclass(frozen=True)
class Column:
    array: str
    element: str
    name: str  # names the carried registers: p1 for x + 1, c0...
    pitch: str  # P, as C
    reads: dict[int, tuple[ts.Node, ...]]  # offset d -> the subscripts a[(s + d) * P + Q] that read it

    @property
    def low(self) -> int:
        return min(self.reads)

    @property
    def high(self) -> int:
        return max(self.reads)

    def skipped(self) -> list[int]:
        """The offsets between `low` and `high` that no read reads (at most one)."""
        return [d for d in range(self.low + 1, self.high) if d not in self.reads]


def carried(ctx: Context, walk: Walk, region: tuple[int, int], loops: tuple[int, ...] | None = None) -> list[Column]:
    """The columns of reads in `region` (byte range) that run whenever the region does (no
    condition between) and, with `loops`, whose enclosing loops are exactly those; Refuse with the
    first reason when there is none."""
    found: dict[tuple[str, Poly, Poly], dict[int, list[ts.Node]]] = {}
    for a in global_accesses(ctx.model):
        if not (region[0] <= a.node.start_byte < region[1]) or not a.read or a.write or len(a.index) != 1:
            continue
        if loops is not None and a.loops != loops:
            continue
        split = _split(a.index[0], walk)
        if split is not None and _unconditional(a.node, region):
            d, pitch, column = split
            found.setdefault((a.array, pitch, column), {}).setdefault(d, []).append(a.node)
    columns: list[Column] = []
    reasons: list[str] = []
    for (array, pitch, column), reads in sorted(found.items(), key=lambda kv: (kv[0][0], str(kv[0][1]),
                                                                               _order(kv[0][2], walk))):
        if len(reads) < 2:
            continue
        gaps = max(reads) - min(reads) + 1 - len(reads)
        if gaps > 1:  # each offset between costs one load at the first step: worth it for one
            reasons.append(f"{array}'s column {column} reads offsets {sorted(reads)}, with {gaps} between")
            continue
        try:
            element = read_only_element(ctx, array, ELEMENTS)
        except Refuse as why:
            reasons.append(str(why))
            continue
        if any(read_expression(r).type == "pointer_expression" for rs in reads.values() for r in rs):
            reasons.append(f"the address of {array}[...] is taken")
            continue
        columns.append(Column(array, element, _name(column, walk, len(columns)), _c_term(pitch),
                              {d: tuple(rs) for d, rs in reads.items()}))
    if not columns:
        raise Refuse(reasons[0] if reasons else "")
    return columns


def _split(p: Poly | None, walk: Walk) -> tuple[int, Poly, Poly] | None:
    """(d, P, Q) for an index (s + d) * P + Q; None otherwise. A constant P takes the `d` that
    leaves the smallest constant in Q, which only names the column: any split of the same index
    reads the same element."""
    if p is None:
        return None
    pitch = p.coefficient(walk.lead)
    if len(pitch.terms) != 1 or any(s in BUILTINS or s in walk.moving for s in pitch.symbols()):
        return None
    rest = p - walk.index * pitch
    (monomial, coefficient), = pitch.terms
    share = rest.mapping.get(monomial, 0)
    if monomial and share % coefficient:
        return None
    d = share // coefficient if monomial else (2 * share + coefficient) // (2 * coefficient)
    column = rest - Poly.const(d) * pitch
    if walk.moving & column.symbols():
        return None
    return d, pitch, column


def _unconditional(node: ts.Node, region: tuple[int, int]) -> bool:
    """Whether the read runs whenever its statement does: no condition, loop, `?:`, `&&` or `||`
    between it and the region."""
    child, parent = node, node.parent
    while parent is not None and region[0] <= parent.start_byte and parent.end_byte <= region[1]:
        if parent.type in _CONDITIONAL:
            return False
        if parent.type == "binary_expression" and operator_of(parent) in ("&&", "||") \
                and parent.child_by_field_name("right") == child:
            return False
        child, parent = parent, parent.parent
    return True


def _offset(column: Poly, walk: Walk) -> int | None:
    return (column - walk.x).constant() if walk.x is not None else None


def _order(column: Poly, walk: Walk) -> tuple[int, str]:
    """A column's place among the others: by its offset from x where that is a constant."""
    return (_offset(column, walk) or 0, str(column))


def _name(column: Poly, walk: Walk, index: int) -> str:
    """m1/p0/p1 for a 2D column at x - 1, x, x + 1; c0, c1... otherwise."""
    e = _offset(column, walk)
    return f"{'m' if e < 0 else 'p'}{abs(e)}" if e is not None else f"c{index}"


def _c_term(p: Poly) -> str:
    """A one-term polynomial as C: `nx * ny`, `2 * w`, `4096`."""
    (monomial, coefficient), = p.terms
    factors = ([str(coefficient)] if coefficient != 1 or not monomial else []) + list(monomial)
    return " * ".join(factors)
