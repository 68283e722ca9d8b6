"""Element counts of a kernel's buffers for `cuopt init`: how far each buffer's accesses reach
(through local pointers, clamps and loops walked either way, over the spec's sizes), what the
host allocates, and the initial values that keep a buffer's values in range where they index
another buffer."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import tree_sitter as ts

from cuopt.source.affine import BLOCK, DIM, GRID, THREAD, Poly, to_expr
from cuopt.source.bounded import index_count
from cuopt.source.cexpr import strip, to_poly
from cuopt.source.host import HostBuffer
from cuopt.source.kernels import Kernel, Param
from cuopt.source.model import READ_ONLY_LOADS, Access, KernelModel, Loop, summands
from cuopt.source.parse import assigned, split_condition, text, walk
from cuopt.spec import expr as E
from cuopt.spec.bind import default_init
from cuopt.spec.dtypes import int_range, is_float, itemsize

def one_per_block(accesses: list[Access]) -> int | None:
    """The axis when every access is at `blockIdx.a` (one element per block), else None."""
    axes = {next((a for a in range(3) if x.flat == Poly.symbol(BLOCK[a])), None) for x in accesses}
    return axes.pop() if len(axes) == 1 and None not in axes else None

def sample(p: Poly) -> int:
    total = 0
    for m, c in p.terms:
        total += c * 1000 ** len(m)
    return total

def _host_count(hb: HostBuffer | None, reached: E.Expr | None, sizes: dict[str, int]) -> tuple[E.Expr | None, str]:
    """The host's element count when it is usable: over known sizes and covering every element the
    body reaches (`reached`, over the spec's sizes) at the timing sizes; else (None, why)."""
    if hb is None:
        return None, ""
    if hb.count is None:
        return None, hb.note
    if not E.names(hb.count) <= set(sizes):
        return None, f"the host's count {hb.count} uses sizes the spec lacks"
    if reached is not None and E.names(reached) <= set(sizes) and \
            E.evaluate(hb.count, sizes) < E.evaluate(reached, sizes):
        return None, f"the host allocates {hb.count} elements, fewer than the kernel reaches"
    return hb.count, ""


# -- how far the body reaches into each buffer ---------------------------------------------------------
FALLBACK_COUNT = 1024  # the count written, with a TODO, when the body says nothing usable
_MINMAX = {"min": "min", "max": "max", "umin": "min", "umax": "max", "llmin": "min", "llmax": "max",
           "ullmin": "min", "ullmax": "max"}


@dataclass(frozen=True)
class _Indexed:
    """An access `target[p + scale * v]` at a value v read from buffer `source`, p in [low, high]."""

    access: Access
    target: str
    source: str
    low: Poly
    high: Poly
    scale: Poly


@dataclass
class _Reach:
    """How far the body reaches into one buffer, in elements of its C type."""

    counts: list[Poly] = field(default_factory=list)  # the count covering the known accesses: the largest
    unknown: list[Access] = field(default_factory=list)  # accesses at indices whose reach is not known
    indexed: list[_Indexed] = field(default_factory=list)  # accesses at values read from other buffers


@dataclass(frozen=True)
class Launch:
    """The host's launch of the kernel, as the counts read it: its grid (over size names), its block,
    and the values of the compile-time sizes no `-D` can change, with the block's `block.x|y|z`."""

    grid: tuple[E.Expr, ...]
    block: tuple[int, ...]
    fixed: dict[str, int]


@dataclass
class BufferCount:
    """A buffer's dtype, its element count and what the count rests on."""

    dtype: str
    uses: list[tuple[Access, Poly | None]]  # its accesses (through local pointers too), with their indices
    reach: _Reach
    counts: list[Poly]  # the count when `text` is None: the largest of these (scalars, over kernel names)
    text: str | None  # the count as written: the host's, per block, or the fallback
    note: str
    footprint: Poly | None  # scalars over the spec's sizes, for _fit
    capacity: Poly | None  # elements of the C type the count surely holds, over the spec's sizes; None: unknown
    guessed: bool = False  # capacity is the fallback's
    partial: bool = False  # counts from the body while some access's reach is not known


class _Reader:
    """Index expressions as polynomials, as `KernelModel.poly` reads them but also through `min`/`max`
    calls (clamps) and elements of pointer parameters (values), each a symbol of its own."""

    MAX_DEPTH = 40

    def __init__(self, model: KernelModel) -> None:
        self.model = model
        self.clamps: dict[str, tuple[str, tuple[Poly, ...]]] = {}  # symbol -> ("min" | "max" | "/" | "%", arguments)
        self.values: dict[str, str] = {}  # symbol -> the pointer parameter it is an element of

    def read(self, node: ts.Node | None, depth: int = 0) -> Poly | None:
        if node is None or depth > self.MAX_DEPTH:
            return None
        p = self.model.poly(node)
        if p is not None:
            return p
        kind = node.type
        if kind == "cast_expression":
            return self.read(node.child_by_field_name("value"), depth + 1)
        if kind == "parenthesized_expression" and len(node.named_children) == 1:
            return self.read(node.named_children[0], depth + 1)
        if kind == "unary_expression" and _op(node) == "-":
            inner = self.read(node.child_by_field_name("argument"), depth + 1)
            return None if inner is None else -inner
        if kind == "binary_expression" and _op(node) in ("+", "-", "*"):
            left = self.read(node.child_by_field_name("left"), depth + 1)
            right = self.read(node.child_by_field_name("right"), depth + 1)
            if left is None or right is None:
                return None
            return left + right if _op(node) == "+" else left - right if _op(node) == "-" else left * right
        if kind == "binary_expression" and _op(node) in ("/", "%"):  # `idx / C`, `(idx / D) % S`
            left = self.read(node.child_by_field_name("left"), depth + 1)
            right = self.read(node.child_by_field_name("right"), depth + 1)
            if left is None or right is None or len(right.terms) != 1 or right.terms[0][1] < 1:
                return None
            symbol = f"__clamp{len(self.clamps)}"
            self.clamps[symbol] = (_op(node), (left, right))
            return Poly.symbol(symbol)
        if kind == "call_expression":
            return self._call(node, depth)
        if kind == "subscript_expression":
            return self._value(node)
        local = self.model.locals.get(text(node)) if kind == "identifier" else None
        if local is not None and local.writes == 0 and local.init is not None:
            return self.read(local.init, depth + 1)
        return None

    def _call(self, node: ts.Node, depth: int) -> Poly | None:
        """`min(a, b)`, `max(a, b)` (also `std::`, `umin`...), and `__ldg(&x[i])`."""
        fn = text(node.child_by_field_name("function")).removeprefix("std::").removeprefix("::")
        args = node.child_by_field_name("arguments")
        parts = args.named_children if args is not None else []
        if fn in _MINMAX and len(parts) >= 2:
            polys = [self.read(a, depth + 1) for a in parts]
            if any(q is None for q in polys):
                return None
            symbol = f"__clamp{len(self.clamps)}"
            self.clamps[symbol] = (_MINMAX[fn], tuple(q for q in polys if q is not None))
            return Poly.symbol(symbol)
        if fn in READ_ONLY_LOADS and len(parts) == 1:
            address = strip(parts[0])
            if address.type == "pointer_expression" and _op(address) == "&":
                element = strip(address.child_by_field_name("argument"))
                return self._value(element) if element.type == "subscript_expression" else None
        return None

    def _value(self, node: ts.Node) -> Poly | None:
        """An element of a pointer parameter: a symbol standing for the value."""
        base = node.child_by_field_name("argument")
        if base is None or base.type != "identifier" or text(base) not in self.model.pointer_params:
            return None
        symbol = f"__value{len(self.values)}"
        self.values[symbol] = text(base)
        return Poly.symbol(symbol)


class Body:
    """The kernel body as the element counts need it: index expressions read through clamps, values and
    local pointers, and their extremes over the threads and loops."""

    def __init__(self, model: KernelModel, bounds: dict[int, Poly], names: frozenset[str],
                 launch: Launch | None = None) -> None:
        self.model = model
        self.bounds = bounds  # axis -> the global thread index is below this
        self.launch = launch  # the host's launch, where it has one
        self.blocks = {a: to_poly(g) for a, g in enumerate(launch.grid)} if launch is not None else {}
        self.names = names  # what a count may use: kernel parameters and macro sizes
        self.reader = _Reader(model)
        self.aliases, self.address_only = _local_pointers(model, self.reader)

    def uses(self, name: str) -> list[tuple[Access, Poly | None]]:
        """The accesses of pointer parameter `name`, directly or through local pointers into it (as
        accesses of `name` at the pointer's offset plus the index), each with its index (None: unknown)."""
        out = []
        for a in self.model.accesses:
            if span(a.node) in self.address_only:
                continue
            if a.array == name and a.space == "global":
                offset: Poly | None = Poly.const(0)
            elif a.space != "global" and a.array in self.aliases and self.aliases[a.array][0] == name:
                offset = self.aliases[a.array][1]
            else:
                continue
            index = self.reader.read(a.indices[0]) if len(a.indices) == 1 else a.flat
            index = index + offset if index is not None and offset is not None else None
            out.append((a if a.array == name else replace(a, array=name, index=(index,)), index))
        return out

    def reach(self, name: str, uses: list[tuple[Access, Poly | None]]) -> _Reach:
        """The count the accesses whose reach is known need, and the others."""
        out = _Reach()
        for a, index in uses:
            values = index_count(self.model, a.indices[0]) if len(a.indices) == 1 and a.array == name else None
            if values is not None:  # `bins[data[i]]` of bytes, `bins[v & 255]`: 256 elements
                out.counts = _largest([*out.counts, Poly.const(values)])
            if index is not None and any(s in self.reader.values for s in index.symbols()):
                indexed = self._indexed(name, a, index)
                if indexed is not None:
                    out.indexed.append(indexed)
                elif values is None:
                    out.unknown.append(a)
                continue
            if values is not None:
                continue
            checked = self.checked(a, name)
            top = self.extreme(index, a.loops, upper=True) if index is not None and checked is None else None
            if top is None and checked is None:
                out.unknown.append(a)
                continue
            count = checked if checked is not None else top + Poly.const(1)
            const = count.mapping.get((), 0)
            if const < 0 and any(m for m, _ in count.terms):  # round `h*w - 1` up to `h*w`
                count = count - Poly.const(const)
            out.counts = _largest([*out.counts, count])
        return out

    def checked(self, a: Access, name: str) -> Poly | None:
        """The count a bounds check around the access gives (`if (k >= 0 && k < n) ... x[k]`,
        `k < n ? x[k] : 0`, `k < n && x[k] > t`, `if (d < w) ... x[y * w + d]`): the access runs
        only where the checked part of its index is below the bound. Only accesses of `name` itself:
        through a local pointer (`bb = B + b * K * N; bb[k * N + col]`) the offset is not checked."""
        base = a.node.child_by_field_name("argument")
        if len(a.indices) != 1 or base is None or text(base) != name:
            return None
        child, parent = a.node, a.node.parent
        while parent is not None and parent != self.model.kernel.body:
            cond = None
            if parent.type in ("if_statement", "conditional_expression") \
                    and child == parent.child_by_field_name("consequence"):
                cond = parent.child_by_field_name("condition")
                cond = cond.named_children[0] if cond is not None and cond.type == "condition_clause" else cond
            elif parent.type == "binary_expression" and _op(parent) == "&&" and child == parent.child_by_field_name("right"):
                cond = parent.child_by_field_name("left")
            for part, negated in split_condition(cond) if cond is not None else []:
                count = None if negated else self._below(part, a)
                if count is not None:
                    return count
            child, parent = parent, parent.parent
        return None

    def _below(self, comparison: ts.Node, a: Access) -> Poly | None:
        """For `e < b` (`e <= b`, `b > e`, `b >= e`), b over sizes: the count b (b + 1) when e is
        the access's index, or b plus the largest rest when the index is e plus a rest that does
        not change with what e does (a row `y * w` beside a checked column)."""
        op = _op(comparison) if comparison.type == "binary_expression" else ""
        if op not in ("<", "<=", ">", ">="):
            return None
        small, large = (comparison.child_by_field_name(k) for k in (("left", "right") if op in ("<", "<=")
                                                                     else ("right", "left")))
        if small is None or large is None:
            return None
        bound = self.reader.read(large)
        if bound is None or not bound.symbols() <= self.names:
            return None
        bound = bound + Poly.const(1) if op in ("<=", ">=") else bound
        index = a.indices[0]
        if re.sub(r"[\s()]", "", text(small)) == re.sub(r"[\s()]", "", text(index)):
            return bound
        checked, whole = self.reader.read(small), self.reader.read(index)
        if checked is None or whole is None or not checked.symbols():
            return None
        rest = whole - checked
        if rest.symbols() & checked.symbols() - self.names:
            return None
        top = self.extreme(rest, a.loops, upper=True) if rest.terms else Poly.const(0)
        return None if top is None else bound + top

    def _indexed(self, name: str, a: Access, index: Poly) -> _Indexed | None:
        """`x[p + scale * v]` with v one value, scale a positive size expression and p >= 0."""
        values = [s for s in index.symbols() if s in self.reader.values]
        if len(values) != 1 or index.degree_in(values) != 1:
            return None
        scale, rest = index.coefficient(values[0]), index.without(values)
        least = _least(scale)
        if not scale.symbols() <= self.names or least is None or least < 1:
            return None
        high, low = self.extreme(rest, a.loops, upper=True), self.extreme(rest, a.loops, upper=False)
        least = _least(low) if low is not None else None
        if high is None or low is None or least is None or least < 0:
            return None
        return _Indexed(a, name, self.reader.values[values[0]], low, high, scale)

    def extreme(self, p: Poly, loops: tuple[int, ...], upper: bool) -> Poly | None:
        """The largest (`upper`) or smallest value of `p` over the threads, the loops `loops` and the
        clamps, as a polynomial over sizes; None when unknown. Each variable goes to the end of its range
        that `p` grows towards, the other symbols taken as non-negative. Where no guard bounds the
        thread index, the host's launch does: each thread index within the launch's block, each block
        index within its grid (an unguarded tile kernel launched with `width / TILE` blocks)."""
        found = self._extreme(p, loops, upper, by_launch=False)
        if found is None and self.launch is not None:
            found = self._extreme(p, loops, upper, by_launch=True)
        return found

    def _extreme(self, p: Poly, loops: tuple[int, ...], upper: bool, by_launch: bool) -> Poly | None:
        fixed = self.launch.fixed if by_launch and self.launch is not None else {}
        p = _valued(p, fixed)  # compile-time sizes at their values: `TILE_DIM` is 32
        for symbol in sorted(s for s in p.symbols() if s in self.reader.clamps):
            high = _toward(p, symbol, upper, self.names)
            end = None if high is None else self._clamp(symbol, loops, high)
            if end is None:
                return None
            p = p.substitute(symbol, end)
        for lp in (self.model.loops[i] for i in reversed(loops)):  # inner first: bounds may use outer variables
            if not lp.var or not p.depends_on(lp.var):
                continue
            high, span = _toward(p, lp.var, upper, self.names), _range(lp, exact=by_launch)
            end = None if high is None or span is None else span[1] if high else span[0]
            if end is None:
                return None
            p = p.substitute(lp.var, end)
        if by_launch and self.launch is not None:
            p = self._in_block(p, self.launch, upper)
            if p is None:
                return None
        for axis in range(3):
            g = Poly.symbol(f"__g{axis}")
            p = p.substitute(THREAD[axis], g - Poly.symbol(BLOCK[axis]) * Poly.symbol(DIM[axis]))
        for axis in range(3):
            if not p.depends_on(f"__g{axis}"):
                continue
            high = _toward(p, f"__g{axis}", upper, self.names)
            if high is None or high and axis not in self.bounds:
                return None
            p = p.substitute(f"__g{axis}", self.bounds[axis] - Poly.const(1) if high else Poly.const(0))
        for axis, blocks in self.blocks.items():  # `table[blockIdx.y * D + d]` launched with T blocks along y
            if p.depends_on(BLOCK[axis]):
                high = _toward(p, BLOCK[axis], upper, self.names)
                if high is None:
                    return None
                tiled = _last_tile(p, BLOCK[axis], self.launch.grid[axis], fixed) if high and self.launch else None
                p = tiled if tiled is not None else \
                    p.substitute(BLOCK[axis], blocks - Poly.const(1) if high else Poly.const(0))
        return p if p.symbols() <= self.names else None

    def _in_block(self, p: Poly, launch: Launch, upper: bool) -> Poly | None:
        """`p` with each thread index at the end of the launch's block that p grows towards, and
        blockDim at the block, or at the value a kernel takes for it (`blockIdx.y * TILE_DIM` under
        a TILE_DIM x 8 block)."""
        for axis, size in enumerate(launch.block):
            tie = self.model.block_ties.get(axis)
            width = self.model.tie_value(tie) if tie is not None else size
            if width is None:
                return None
            p = p.substitute(DIM[axis], Poly.const(width))
            if p.depends_on(THREAD[axis]):
                high = _toward(p, THREAD[axis], upper, self.names)
                if high is None:
                    return None
                p = p.substitute(THREAD[axis], Poly.const(size - 1 if high else 0))
        return p

    def _clamp(self, symbol: str, loops: tuple[int, ...], upper: bool) -> Poly | None:
        """The largest (`upper`) or smallest value of a `min`/`max` call, from its arguments', or of a
        quotient or remainder."""
        kind, args = self.reader.clamps[symbol]
        if kind in ("/", "%"):
            return self._quotient(kind, args[0], args[1], loops, upper)
        ends = [self.extreme(a, loops, upper) for a in args]
        if (kind == "min") == upper:  # min(a, b) <= a and max(a, b) >= a: one argument bounds it
            known = [e for e in ends if e is not None]
            return (min if upper else max)(known, key=sample) if known else None
        out = ends[0]
        for e in ends[1:]:
            out = _join(out, e, upper) if out is not None and e is not None else None
        return out

    def _quotient(self, kind: str, left: Poly, divisor: Poly, loops: tuple[int, ...], upper: bool) -> Poly | None:
        """The largest (`upper`) or smallest value of `left / divisor` or `left % divisor`, left >= 0 and
        the divisor one term over sizes: a remainder stays below the divisor; a quotient of `left`'s
        largest value when the divisor divides it, or divides it plus one (`idx < B*T*C` gives
        `idx / C <= B*T - 1`)."""
        low = self.extreme(left, loops, upper=False)
        least = _least(low) if low is not None and low.symbols() <= self.names else None
        if not divisor.symbols() <= self.names or least is None or least < 0:
            return None
        if not upper:
            return Poly.const(0)
        if kind == "%":
            return divisor - Poly.const(1)
        high = self.extreme(left, loops, upper=True)
        if high is None:
            return None
        above = _exact_quotient(high + Poly.const(1), divisor)
        return above - Poly.const(1) if above is not None else _exact_quotient(high, divisor)

    def bounding_loops(self) -> dict[str, list[Loop]]:
        """Pointer parameters whose elements start or bound a loop (`for (j = row_ptr[r]; j < end; ++j)`
        with `int end = row_ptr[r + 1];`)."""
        out: dict[str, list[Loop]] = {}
        for lp in self.model.loops:
            for node in _loop_limits(lp):
                for name in sorted(self._elements_read(node, 0)):
                    out.setdefault(name, []).append(lp)
        return out

    def _elements_read(self, node: ts.Node, depth: int) -> set[str]:
        """The pointer parameters whose elements `node` reads, also through the locals it uses."""
        found: set[str] = set()
        if depth > 8:
            return found
        for n in walk(node):
            if n.type == "subscript_expression":
                base = n.child_by_field_name("argument")
                if base is not None and base.type == "identifier" and text(base) in self.model.pointer_params:
                    found.add(text(base))
            elif n.type == "identifier" and (local := self.model.locals.get(text(n))) is not None and \
                    local.init is not None:
                found |= self._elements_read(local.init, depth + 1)
        return found


def _local_pointers(model: KernelModel, reader: _Reader) -> tuple[dict[str, tuple[str, Poly | None]],
                                                                    set[tuple[int, int]]]:
    """Local pointers into pointer parameters with their offsets (None: not known): `T* p = x + off` as the
    model finds them and `T* p = &x[off]`; and where those `x[off]` are (they take an address, and
    access nothing)."""
    out = {name: (param, model.alias_offsets.get(name)) for name, param in model.aliases.items()}
    address_only: set[tuple[int, int]] = set()
    for node in walk(model.kernel.body):
        declarator, value = node.child_by_field_name("declarator"), node.child_by_field_name("value")
        address = strip(value) if value is not None else None
        if node.type == "init_declarator" and declarator is not None and declarator.type == "pointer_declarator" \
                and address is not None and address.type == "binary_expression":
            name = text(declarator.child_by_field_name("declarator"))
            if name in out and out[name][1] is None and not _reassigned(model.kernel.body, name):
                out[name] = (out[name][0], _read_sum(reader, summands(address), out[name][0]))
            continue
        if node.type != "init_declarator" or declarator is None or declarator.type != "pointer_declarator" or \
                address is None or address.type != "pointer_expression" or _op(address) != "&":
            continue
        name, element = declarator.child_by_field_name("declarator"), strip(address.child_by_field_name("argument"))
        base, indices = element.child_by_field_name("argument"), element.child_by_field_name("indices")
        if name is None or name.type != "identifier" or element.type != "subscript_expression" or base is None or \
                text(base) not in model.pointer_params or indices is None or len(indices.named_children) != 1:
            continue
        offset = None if _reassigned(model.kernel.body, text(name)) else reader.read(indices.named_children[0])
        out[text(name)] = (text(base), offset)
        address_only.add(span(element))
    return out, address_only


def _read_sum(reader: _Reader, terms: list[ts.Node], base: str) -> Poly | None:
    """The offset `T* p = x + ix * C + ...` adds to `base` (x), as the reader sees it: ix read from
    another buffer is a value of its own, which the model's offset cannot hold."""
    total = Poly.const(0)
    for term in terms:
        if text(strip(term)) != base:
            read = reader.read(term)
            if read is None:
                return None
            total = total + read
    return total


def _reassigned(body: ts.Node, name: str) -> bool:
    return any((target := assigned(n)) is not None and text(target) == name for n in walk(body))


def _loop_limits(lp: Loop) -> list[ts.Node]:
    """The start of a loop and the bound its variable is compared with."""
    out = []
    init = lp.node.child_by_field_name("initializer")
    if init is not None and init.type == "declaration":
        d = init.child_by_field_name("declarator")
        out.append(d.child_by_field_name("value") if d is not None and d.type == "init_declarator" else None)
    elif init is not None and init.type == "assignment_expression":
        out.append(init.child_by_field_name("right"))
    cond = lp.node.child_by_field_name("condition")
    if lp.var and cond is not None and cond.type == "binary_expression" and \
            text(cond.child_by_field_name("left")) == lp.var:
        out.append(cond.child_by_field_name("right"))
    return [n for n in out if n is not None]


def _range(lp: Loop, exact: bool) -> tuple[Poly | None, Poly | None] | None:
    """The first and last values of a loop's variable (None where not known); None for a loop that
    does not count up to or down to its bound. `exact`: a loop over constants (fixed macros count)
    ends where its step lands (`i < 32; i += 8` ends at 24)."""
    forward = (lp.step is not None and lp.step > 0) or _launch_stride(lp.stride)  # a grid-stride step too
    backward = lp.step is not None and lp.step < 0
    if lp.bound is None:
        return None
    if forward and lp.cmp in ("<", "<="):
        trips = lp.trip_count if exact else None
        if trips and lp.step is not None and lp.constants[0] is not None:
            return lp.start, Poly.const(lp.constants[0] + (trips - 1) * lp.step)
        return lp.start, lp.bound - Poly.const(1) if lp.cmp == "<" else lp.bound
    if backward and lp.cmp in (">", ">="):
        return lp.bound + Poly.const(1) if lp.cmp == ">" else lp.bound, lp.start
    return None


def _valued(p: Poly, values: dict[str, int]) -> Poly:
    """`p` with `values` for those of its symbols."""
    for name, value in values.items():
        p = p.substitute(name, Poly.const(value))
    return p


def _last_tile(p: Poly, block: str, grid: E.Expr, fixed: dict[str, int]) -> Poly | None:
    """`p` at the last block of a grid `x // d` or `cdiv(x, d)` where p steps by a multiple k*d per
    block: k*d*blockIdx is at most k*(x - d) (k*(x - 1) for cdiv), which a polynomial can say."""
    if isinstance(grid, E.Bin) and grid.op == "//":
        extent, divisor, rounded_up = grid.left, grid.right, False
    elif isinstance(grid, E.Call) and grid.fn == "cdiv":
        extent, divisor, rounded_up = grid.args[0], grid.args[1], True
    else:
        return None
    d = _valued(to_poly(divisor), fixed)
    if p.degree_in([block]) != 1 or len(d.terms) != 1 or d.terms[0][1] < 1:
        return None
    k = _exact_quotient(p.coefficient(block), d)
    return None if k is None else p.without([block]) + k * (to_poly(extent) - (Poly.const(1) if rounded_up else d))


def _launch_stride(stride: Poly | None) -> bool:
    """A step of the launch's dimensions, positive: `blockDim.x` (a block-stride loop), `gridDim.x *
    blockDim.x`, `blockDim.x * blockDim.y`."""
    return stride is not None and bool(stride.terms) and all(
        c > 0 and m and set(m) <= set(DIM) | set(GRID) for m, c in stride.terms)


def _toward(p: Poly, var: str, upper: bool, sizes: frozenset[str]) -> bool | None:
    """Whether `p`'s largest (`upper`) or smallest value is at the high end of `var`'s range: whether p
    grows with var (a coefficient `n - 1` over sizes >= 1 does, as does one of positive terms over
    other symbols >= 0); None when that is not known."""
    if p.degree_in([var]) == 1:
        slope = p.coefficient(var)
        grows = True if _not_negative(slope, sizes) else False if _not_negative(-slope, sizes) else None
    else:
        signs = {c > 0 for m, c in p.terms if var in m}
        grows = signs.pop() if len(signs) == 1 else None
    return None if grows is None else upper == grows


def _not_negative(p: Poly, sizes: frozenset[str]) -> bool:
    """Whether `p` is >= 0: its sizes >= 1 and every other symbol >= 0."""
    if p.symbols() <= sizes:
        least = _least(p)
        return least is not None and least >= 0
    return all(c >= 0 for _, c in p.terms)


def _least(d: Poly) -> int | None:
    """The smallest value of `d` at sizes >= 1, when d does not decrease as any size grows; else None."""
    for s in d.symbols():
        d = d.substitute(s, Poly.symbol(s) + Poly.const(1))
    if any(c < 0 for m, c in d.terms if m):
        return None
    return d.mapping.get((), 0)


def _join(a: Poly, b: Poly, upper: bool) -> Poly | None:
    """A polynomial at least (`upper`) or at most both `a` and `b` at every size >= 1: one of them, moved
    by a constant where the other exceeds it at small sizes; None when neither bounds the other so."""
    sign = 1 if upper else -1
    options = []
    for x, y in ((a, b), (b, a)):
        least = _least((x - y) * Poly.const(sign))
        if least is not None:
            options.append(x + Poly.const(sign * max(0, -least)))
    return (min if upper else max)(options, key=sample) if options else None


def _largest(polys: list[Poly]) -> list[Poly]:
    """The polynomials of `polys` that are not at most another one at every size >= 1."""
    out: list[Poly] = []
    for p in polys:
        if not any(_at_least(q, p) for q in out):
            out = [q for q in out if not _at_least(p, q)] + [p]
    return out


def _at_least(a: Poly, b: Poly) -> bool:
    least = _least(a - b)
    return least is not None and least >= 0


def max_text(polys: list[Poly]) -> str:
    return to_expr(polys[0]) if len(polys) == 1 else f"max({', '.join(to_expr(p) for p in polys)})"


def _renamed(p: Poly, replaced: dict[str, E.Expr]) -> Poly:
    """`p` over the spec's sizes: parameters the host passes expressions for (`ni` = NI) replaced."""
    for name, value in replaced.items():
        p = p.substitute(name, to_poly(value))
    return p


def span(node: ts.Node) -> tuple[int, int]:
    return node.start_byte, node.end_byte


def _op(node: ts.Node) -> str:
    op = node.child_by_field_name("operator")
    return text(op) if op is not None else ""


def buffer_count(body: Body, p: Param, hb: HostBuffer | None, grid: list[str], sizes: dict[str, int],
                  replaced: dict[str, E.Expr], held: E.Expr | None = None) -> BufferCount:
    """The element count of pointer parameter `p` (in scalars: a float2 is two floats): `held` when
    the count is known from elsewhere (a capture's allocation, over the spec's sizes), else the host's
    allocation when it covers what the body reaches, else the largest index the body reaches, else one
    element per block, else FALLBACK_COUNT with a TODO."""
    dtype = p.ctype.dtype if p.ctype is not None else "float32"
    width = p.ctype.width if p.ctype is not None else 1
    note = "" if p.ctype is not None else f"TODO: type {p.base_type} has no spec dtype"
    uses = body.uses(p.name)
    reach = body.reach(p.name, uses)
    scalars = [c * Poly.const(width) for c in reach.counts]
    renamed = [_renamed(c, replaced) for c in scalars]
    count, why = (held, "") if held is not None else \
        _host_count(hb, E.parse(max_text(renamed)) if renamed else None, sizes)
    if count is not None:
        allocated = to_poly(count)
        capacity = _divided(allocated, width) if allocated.symbols() <= set(sizes) else None
        return BufferCount(dtype, uses, reach, [], str(count), note, allocated, capacity)
    if renamed:
        note = note or (f"TODO: {why}; the count is from the kernel body" if why else "")
        largest = max(reach.counts, key=sample)
        return BufferCount(dtype, uses, reach, scalars, None, note, max(renamed, key=sample),
                            _renamed(largest, replaced), partial=bool(reach.unknown or reach.indexed))
    axis = one_per_block([a for a, _ in uses])
    if axis is not None and axis < len(grid):  # one element per block (`out[blockIdx.x] = partial;`)
        per_block = grid[axis] if width == 1 else f"{width}*{grid[axis]}"
        note = note or "TODO: one element per block: the count follows the grid at this block size"
        return BufferCount(dtype, uses, reach, [], per_block, note, None, None)
    note = note or "TODO: element count not inferred (data-dependent or non-affine index)" + (f"; {why}" if why else "")
    return BufferCount(dtype, uses, reach, [], str(FALLBACK_COUNT), note, None,
                        Poly.const(FALLBACK_COUNT // width), guessed=True)


def _divided(p: Poly, width: int) -> Poly | None:
    """`p` / width when it divides every coefficient."""
    return Poly.of({m: c // width for m, c in p.terms}) if all(c % width == 0 for _, c in p.terms) else None


def index_inits(body: Body, kernel: Kernel, buffers: dict[str, BufferCount], replaced: dict[str, E.Expr]
                 ) -> tuple[dict[str, tuple[str, str]], set[tuple[int, int]]]:
    """(init, TODO) of the buffers whose values are indices of other buffers or loop bounds, where the
    defaults (negative for signed types) would send the kernel out of bounds; and where the accesses
    are that those inits keep in bounds."""
    inits: dict[str, tuple[str, str]] = {}
    covered: set[tuple[int, int]] = set()
    indexing: dict[str, list[_Indexed]] = {}
    for b in buffers.values():
        for x in b.reach.indexed:
            indexing.setdefault(x.source, []).append(x)
    for name, loops in body.bounding_loops().items():
        inside = sorted({other for other, b in buffers.items() for _, index in b.uses if index is not None
                         and any(lp.var and index.depends_on(lp.var) for lp in loops)})
        over = f" over {', '.join(inside)}" if inside else ""
        inits[name] = ("zeros", f"TODO: its values bound the loop{line_list(lp.line for lp in loops)}{over}: they "
                                "must stay within the buffers the loop walks (sorted, as CSR row pointers), which no "
                                "spec init generates; zeros keeps the kernel in bounds but runs no iterations")
    for b in buffers.values():  # values that reach an index cuopt cannot follow (`wte[ix * C + c]`, c non-affine)
        for a in b.reach.unknown:
            for source in sorted(_loaded_from(body.model, a.indices, set()) - set(inits) - set(indexing)):
                if source in buffers and not is_float(buffers[source].dtype):
                    inits[source] = ("", f"TODO: its values index {a.array} (line {a.line}) through an index cuopt "
                                         "cannot follow: give it an init that keeps them in bounds")
    for name, uses in indexing.items():
        if name in inits or name not in buffers:
            continue
        targets = sorted({x.target for x in uses})
        indexed = f"{', '.join(targets)}{line_list(x.access.line for x in uses)}"
        ranges = [_index_range(buffers[x.target].capacity, x, replaced) for x in uses]
        dtype = buffers[name].dtype
        if is_float(dtype) or any(r is None for r in ranges):
            default = default_init(dtype)
            shown = f"{default.kind}({', '.join(f'{a:g}' for a in default.args if isinstance(a, float))})"
            inits[name] = ("", f"TODO: its values index {indexed}: give it an init that keeps those indices in bounds "
                               f"(the default, {shown}, does not)")
            continue
        high = _smallest([r for r in ranges if r is not None])
        cap = int_range(dtype)[1] + 1 if itemsize(dtype) <= 2 else None  # 8- and 16-bit types
        if cap is not None:
            high = E.Num(min(E.evaluate(high, {}), cap)) if not E.names(high) else E.Call("min", (high, E.Num(cap)))
        pinned = high == E.Num(cap)  # the type's range, not the count, bounds the values
        guessed = any(buffers[x.target].guessed for x in uses)
        inits[name] = (f"randint(0, {high})", f"TODO: its values index {indexed}, whose count is a guess: keep "
                                              "randint's upper bound within it" if guessed and not pinned else "")
        if not guessed:
            covered |= {span(x.access.node) for x in uses}
    return inits, covered


def strides(buffers: dict[str, BufferCount], replaced: dict[str, E.Expr]) -> dict[str, str]:
    """The buffers indexed at values read from other buffers (`wte[tokens[bt] * C + c]`), by the one
    expression over sizes those values step by (C): a count known at some sizes that is a multiple of
    it holds that many steps at every size."""
    out: dict[str, str] = {}
    for name, b in buffers.items():
        steps = {_renamed(x.scale, replaced) for x in b.reach.indexed if x.target == name}
        if len(steps) == 1 and (step := steps.pop()).symbols():
            out[name] = to_expr(step)
    return out


def _loaded_from(model: KernelModel, nodes: Iterable[ts.Node], seen: set[str]) -> set[str]:
    """The pointer parameters whose elements `nodes` read, directly or through locals they name."""
    out: set[str] = set()
    for node in nodes:
        for n in walk(node):
            if n.type == "subscript_expression":
                base = n.child_by_field_name("argument")
                if base is not None and text(base) in model.pointer_params:
                    out.add(text(base))
            elif n.type == "identifier" and text(n) not in seen:
                local = model.locals.get(text(n))
                if local is not None and local.init is not None:
                    out |= _loaded_from(model, [local.init], seen | {text(n)})
    return out


def _index_range(capacity: Poly | None, x: _Indexed, replaced: dict[str, E.Expr]) -> E.Expr | None:
    """The values v that keep `target[p + scale * v]` within `capacity` elements for every p: [0, range)."""
    if capacity is None:
        return None
    top = capacity - Poly.const(1) - _renamed(x.high, replaced)
    least = _least(top)
    if least is None or least < 0:
        return None
    scale = _renamed(x.scale, replaced)
    quotient = _exact_quotient(top, scale)
    if quotient is not None:
        return E.parse(to_expr(quotient + Poly.const(1)))
    return E.Bin("+", E.Bin("//", E.parse(to_expr(top)), E.parse(to_expr(scale))), E.Num(1))


def _exact_quotient(p: Poly, divisor: Poly) -> Poly | None:
    """`p / divisor` when divisor is one term that divides every term of p (`50256*C / C`); else None."""
    if len(divisor.terms) != 1:
        return None
    (monomial, coefficient), = divisor.terms
    out: dict[tuple[str, ...], int] = {}
    for m, c in p.terms:
        rest = list(m)
        for symbol in monomial:
            if symbol not in rest:
                return None
            rest.remove(symbol)
        if c % coefficient:
            return None
        out[tuple(rest)] = c // coefficient
    return Poly.of(out)


def _smallest(exprs: list[E.Expr]) -> E.Expr:
    unique = list(dict.fromkeys(exprs))
    return unique[0] if len(unique) == 1 else E.Call("min", tuple(unique))


def joined(todos: list[str]) -> str:
    """TODO notes as one comment: `TODO: a; b`."""
    return "; ".join([*todos[:1], *(t.removeprefix("TODO: ") for t in todos[1:])])


def line_list(lines: Iterable[int]) -> str:
    """` at line 9`, ` at lines 9, 12`."""
    found = sorted(set(lines))
    return f" at line{'s' if len(found) > 1 else ''} {', '.join(map(str, found))}"
