"""`cuopt init`: infer a spec skeleton from a kernel's signature and index expressions."""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import tree_sitter as ts

from cuopt.source.affine import BLOCK, DIM, THREAD, Poly, global_index
from cuopt.source.analysis import condition, returns_only
from cuopt.source.host import HostBuffer, HostLaunch, HostScalar, host_launch, kernel_macros
from cuopt.source.kernels import Kernel, Param
from cuopt.source.model import Access, KernelModel, analyze
from cuopt.source.normal_form import normal_kernel
from cuopt.source.parse import root_of, text, walk
from cuopt.source.preprocess import Macros, compile_time_sizes
from cuopt.spec import expr as E
from cuopt.spec.bind import unsupported
from cuopt.spec.dtypes import is_float, itemsize
from cuopt.spec.model import derive_check_sizes
from cuopt.spec.reach import (
    Body, BufferCount, Launch, buffer_count, index_inits, joined, line_list, max_text, span, strides, to_expr)

DEFAULT_BLOCK = {1: [256], 2: [16, 16], 3: [8, 8, 4]}
FOOTPRINT_BYTES = 512 << 20  # proposed timing sizes: large enough to leave the caches, small enough to be quick
AXES = "xyz"


@dataclass
class Inferred:
    """What init could work out, and TODO notes for the rest."""

    block: list[int]
    grid: list[str]
    sizes: dict[str, int]
    args: list[tuple[str, str | float, str]]  # (name, value, TODO note or "")
    notes: list[str] = field(default_factory=list)
    fixed: dict[str, int] = field(default_factory=dict)  # sizes #define'd in the source: compiled in
    check_sizes: list[dict[str, int]] | None = None  # None: derived from sizes
    given: set[str] = field(default_factory=set)  # sizes whose value comes from the source
    launch_line: int | None = None  # the host launch the block comes from
    remarks: list[str] = field(default_factory=list)  # choices made, not TODOs
    unsupported: str = ""  # why no spec can describe the kernel (bind.unsupported): the spec leaves it out
    shared: str | None = None  # dynamic shared memory bytes, from the launch
    aliased: list[str] = field(default_factory=list)  # buffer arguments the launch passes one buffer for
    varied: list[str] = field(default_factory=list)  # unguarded `#define` sizes the check sizes vary
    capture: str = ""  # the capture the launch, sizes and scalars come from (the spec's `capture` key)
    check_why: str = ""  # why check_sizes is what it is, where something other than the source decided
    strides: dict[str, str] = field(default_factory=dict)  # buffers indexed at values of others, by what a value steps


def infer(kernel: Kernel, *, host: HostLaunch | None = None, held: Mapping[str, E.Expr] | None = None) -> Inferred:
    """The spec `cuopt init` writes for a kernel: from its body (read through the file's macros),
    then from its launch in the host code when `host` has one (which wins for block, grid, counts,
    copy directions and scalars). `held` gives buffers' element counts known from elsewhere (a
    capture's allocations, over the spec's sizes): each is the buffer's count, and bounds the initial
    values of the buffers that index it. Integer macros the body uses are compile-time sizes at their
    values; those `fixed` are pinned in every check size: those no size set can change, and those
    without an `#ifndef` guard that no guard of the kernel bounds (`_held`)."""
    model = analyze(normal_kernel(kernel))
    scalars = [p for p in kernel.params if not p.pointer and p.named]
    int_params = [p.name for p in scalars if p.ctype is not None and not is_float(p.ctype.dtype)]
    macro_sizes = kernel_macros(kernel, kernel.macros)
    kinds = compile_time_sizes(macro_sizes, kernel.macros)
    bounds = _axis_bounds(model)
    notes: list[str] = []
    for lp in model.loops:  # a grid-stride loop's bound stands in where no guard bounds the axis
        axis = lp.grid_stride_axis
        if axis is not None and lp.bound is not None and axis not in bounds:
            bounds[axis] = lp.bound
            notes.append(f"grid[{axis}]: a grid-stride loop along {AXES[axis]}; the grid covers its range one "
                         f"thread per index: set the grid your code launches")

    naxes = max([*bounds, *_builtin_axes(kernel.body, "blockIdx|threadIdx|blockDim")]) + 1 if bounds else 1
    grid = []
    for axis in range(naxes):
        if axis in bounds:
            grid.append(f"cdiv({to_expr(bounds[axis])}, block.{AXES[axis]})")
        else:
            grid.append("1")
            notes.append(f"grid[{axis}]: no `index < bound` guard found along {AXES[axis]}; set the grid by hand")
    if not bounds:
        notes.append("grid: no `blockIdx.x * blockDim.x + threadIdx.x < n` guard found; set the grid by hand")

    in_bounds = {s for b in bounds.values() for s in b.symbols()}
    fixed = {name: value for name, value in macro_sizes.items()
             if kinds.get(name) == "fixed" or kinds.get(name) == "edited" and _held(name, model, in_bounds)}
    in_loops = {s for lp in model.loops if lp.bound is not None and lp.grid_stride_axis is None
                for s in lp.bound.symbols()}
    sizes = {name: (1 << 24 if naxes == 1 else 4096) if name in in_bounds - in_loops else 1024
             for name in int_params}
    sizes.update(macro_sizes)
    for name in sorted(in_bounds - set(sizes)):
        sizes[name] = 1024
        notes.append(f"{name} bounds the grid but is not a kernel parameter (a macro?); its size is a guess")

    host_args = host.args if host is not None else {}
    replaced = {name: h.value for name in int_params if isinstance(h := host_args.get(name), HostScalar)
                and h.value is not None and not isinstance(h.value, float) and h.value != E.Name(name)}
    for name in replaced:  # `int ni = NI;` passed for ni: the spec writes ni = "NI"
        sizes.pop(name, None)
    given = set(macro_sizes)
    if host is not None:
        for name, value in host.sizes.items():
            sizes[name] = value
            given.add(name)
        for name in host.free:  # `k<<<rows, 256>>>` in a function that takes rows: a size to pick
            sizes.setdefault(name, 4096)
            notes.append(f"size {name}: the launch at line {host.line} takes it from the program at run time "
                         f"(its grid is {name}); pick a value")

    def spec_text(body_expr: str) -> str:
        return str(E.substitute(E.parse(body_expr), replaced)) if replaced else body_expr

    grid = [spec_text(g) for g in grid]
    host_grid = host.grid if host is not None and host.grid is not None and \
        all(E.names(g) <= set(sizes) | set(E.BLOCK_NAMES) for g in host.grid) else None
    rounded: list[str] = []
    if host_grid is not None:
        guarded, grid = grid, [str(g) for g in host_grid]
        for axis in _rounded_down(host_grid, guarded, host.block, sizes, set(bounds)):
            rounded.append(f"grid[{axis}]: the launch at line {host.line} rounds down ({host_grid[axis]}), which "
                           f"leaves the last indices along {AXES[axis]} out wherever the size is not a multiple of "
                           f"the block; the kernel guards its own range, so the spec's grid covers it, "
                           f"{guarded[axis]} (the same grid at these sizes)")
            grid[axis] = guarded[axis]

    block = host.block if host is not None and host.block is not None else ()
    launch = Launch(tuple(host_grid), block, fixed | dict(zip(E.BLOCK_NAMES, block))) if host_grid else None
    free = set(host.free) if host is not None else set()
    body = Body(model, bounds, frozenset({q.name for q in kernel.params} | given | free), launch)
    buffers: dict[str, BufferCount] = {}
    footprint: list[tuple[Poly, int]] = []
    for p in kernel.params:
        if p.pointer:
            h = host_args.get(p.name)
            buffers[p.name] = buffer_count(body, p, h if isinstance(h, HostBuffer) else None, grid, sizes, replaced,
                                           (held or {}).get(p.name))
            if buffers[p.name].footprint is not None:
                footprint.append((buffers[p.name].footprint, itemsize(buffers[p.name].dtype)))
    inits, covered = index_inits(body, kernel, buffers, replaced)

    args: list[tuple[str, str | float, str]] = []
    for p in kernel.params:
        h = host_args.get(p.name)
        if not p.named and p.ctype is not None:  # `int /*unused*/`: any value does
            args.append((p.name, _unnamed(p), "the kernel does not name this parameter, so it never reads it"))
            continue
        if not p.pointer:
            if p.ctype is None:  # a struct or class passed by value: a spec cannot describe it
                args.append((p.name, 1.0, f"TODO: parameter type '{p.base_type}' is not supported (a spec passes "
                                          "numbers and pointers to them); cuopt cannot run this kernel"))
                continue
            args.append(_scalar(p.name, p.name in int_params, h if isinstance(h, HostScalar) else None, replaced))
            continue
        hb = h if isinstance(h, HostBuffer) else None
        b = buffers[p.name]
        accesses = [a for a, _ in b.uses]
        written = any(a.write for a in accesses) or p.name in model.escapes and not p.const
        read = any(a.read and not _plain_write(a) and not _stored_before(a, accesses) for a in accesses)
        atomic = any(a.atomic for a in accesses)
        # the body decides read-only vs written; for written buffers the host's copies decide out vs inout
        filled = hb is not None and (hb.copied_in or hb.zeroed)
        role = "in" if p.const or not written else ("inout" if read or atomic or filled else "out")
        count_text = b.text if b.text is not None else spec_text(max_text(b.counts))
        todo = [b.note] if b.note else []
        if b.partial:
            left = sorted({a.line for a in b.reach.unknown} |
                          {x.access.line for x in b.reach.indexed if span(x.access.node) not in covered})
            if left:
                todo.append(f"TODO: the count covers the affine accesses; the access{'es' if len(left) > 1 else ''}"
                            f"{line_list(left)} (data-dependent or non-affine index) may reach further")
        zeros = atomic or (role != "in" and hb is not None and hb.zeroed and not hb.copied_in)
        init = " zeros" if zeros else ""
        if p.name in inits and not zeros and role != "out":
            value, why = inits[p.name]
            init = f" {value}" if value else ""
            todo += [why] if why else []
        args.append((p.name, f"{role} {b.dtype}[{count_text}]{init}", joined(todo)))
    _fit(sizes, footprint, given)

    block = _default_block(naxes, _builtin_axes(kernel.body, "threadIdx|blockDim"))
    for axis, name in model.block_ties.items():  # `blockIdx.x * BLOCK`: the block is BLOCK
        if axis < naxes:
            block[axis] = model.tie_value(name) or block[axis]
    remarks = [_fixed_remark(name, value, kernel.macros, kinds.get(name)) for name, value in sorted(fixed.items())]
    remarks += rounded
    remarks += [f"the kernel reads __constant__ {name}, which the file declares without a value (the host sets it, "
                "cudaMemcpyToSymbol?): a spec cannot fill it, so the kernel and every variant run with it zero, "
                "and validation cannot tell how a variant reads it" for name in _unfilled_constants(kernel)]
    if host is not None:
        notes.extend(host.notes)
        if host.others:
            lines = ", ".join(str(line) for line in host.others)
            remarks.append(f"{kernel.entry} is also launched at line{'s' if len(host.others) > 1 else ''} {lines}; "
                           f"block, grid and arguments follow the first launch (line {host.line})")
        if host.block is not None:
            block = list(host.block)
        if host_grid is not None:
            notes = [n for n in notes if not n.startswith("grid")]
    sized = {f"block.{AXES[a]}": str(b) for a, b in enumerate(block)}
    args = [(name, re.sub(r"block\.[xyz]", lambda m: sized.get(m[0], "1"), value) if isinstance(value, str) else value,
             note) for name, value, note in args]
    _launchable(sizes, grid, block, given | set(fixed))
    free = {k: v for k, v in sizes.items() if k not in fixed}
    derived = [{**c, **fixed} for c in derive_check_sizes(free, tuple(block))] if free else []
    usable = [c for c in derived if grid_ok(grid, block, c)]
    # an unguarded size varies only in check sizes written out (derived ones keep it: targets.pinned)
    varied = sorted(n for n, kind in kinds.items() if kind == "edited" and n not in fixed)
    check_sizes = None if usable == derived and not fixed and not varied else (usable or [dict(sizes)])
    dynamic = sorted(a.name for a in model.shared.values() if a.extern)
    shared = spec_text(str(host.shared)) if host is not None and host.shared is not None else None
    if dynamic and shared is None and not any(n.startswith("shared:") for n in notes):
        notes.append(f"shared: the kernel uses extern __shared__ {', '.join(dynamic)}; set `shared` to the dynamic "
                     "shared memory bytes its launch passes (the launch's third argument)")
    passed: dict[str, list[str]] = {}
    for name, h in host_args.items():
        if isinstance(h, HostBuffer) and h.variable:
            passed.setdefault(h.variable, []).append(name)
    aliased = [name for names in passed.values() if len(names) > 1 for name in names]
    if aliased:
        remarks.append(f"the launch at line {host.line} passes one buffer for {' and '.join(aliased)}: `aliased` says "
                       "so, and cuopt, which validates with distinct buffers, leaves the kernel unrewritten")
    return Inferred(block, grid, sizes, args, notes, fixed, check_sizes, given,
                    host.line if host is not None and host.block is not None else None, remarks,
                    unsupported(kernel) or "", shared, aliased, varied=varied, strides=strides(buffers, replaced))


def _scalar(name: str, integer: bool, h: HostScalar | None, replaced: dict[str, E.Expr]
            ) -> tuple[str, str | float, str]:
    """A scalar argument: a size (or the host's expression over sizes) for integers, the host's value
    for floats; TODO where the host sets it at run time."""
    if integer:
        value = str(replaced[name]) if name in replaced else name
        return name, value, f"TODO: {h.note}" if h is not None and h.note else ""
    if h is not None and isinstance(h.value, float):
        return name, h.value, ""
    value = 1e-5 if "eps" in name.lower() else 1.0
    return name, value, f"TODO: value of this scalar ({h.note})" if h is not None and h.note else \
        "TODO: value of this scalar"


def _unnamed(p: Param) -> str | float:
    """The argument a spec passes for a parameter the kernel does not name: one element, or zero."""
    if p.pointer:
        return f"in {p.ctype.dtype}[1]"
    return 0.0 if "float" in p.ctype.dtype else "0"


def _held(name: str, model: KernelModel, in_bounds: set[str]) -> bool:
    """Whether an unguarded `#define` size stays at its value in the check sizes: unless a guard of
    the kernel bounds it (the kernel then runs at any value) and it sizes no block or shared array."""
    shaped = set(model.block_ties.values()) | {n for a in model.shared.values() for n in _NAME.findall(text(a.node))}
    return name not in in_bounds or name in shaped


_NAME = re.compile(r"[A-Za-z_]\w*")


def _fixed_remark(name: str, value: int, macros: Macros, kind: str | None) -> str:
    """Why a compile-time size is checked at its source value only."""
    d = macros.get(name)
    if kind == "edited":
        return (f"size {name} is `#define {name} {value}` without an #ifndef guard, and no guard of the kernel "
                f"bounds it: every check runs at {value} (cuopt sets the definition to the sizes the spec gives)")
    where = f"the constant {name} = {value}" if d is not None and d.constant else f"`#define {name} {value}`"
    return f"size {name} is fixed by {where}: no size set can change it, so every check runs at {value}"


def infer_in_file(source: bytes, kernel: Kernel, held: Mapping[str, E.Expr] | None = None) -> Inferred:
    """The spec `cuopt init` writes for a kernel of `source`: `infer` with the kernel's first launch
    in the file's host code (and the buffer counts `held`)."""
    return infer(kernel, host=host_launch(source, kernel, kernel.macros), held=held)


def infer_all(source: bytes, kernels: list[Kernel]) -> list[tuple[Kernel, Inferred]]:
    """`infer_in_file` for kernels of `source`."""
    return [(k, infer_in_file(source, k)) for k in kernels]


GRID_LIMITS = (2**31 - 1, 65535, 65535)


def _rounded_down(host_grid: tuple[E.Expr, ...], guarded: list[str], block: tuple[int, ...] | None,
                  sizes: dict[str, int], bounded: set[int]) -> list[int]:
    """The axes whose host grid is a floor division (`ni / TILE`, the grid rounded down) where the
    kernel's guard bounds the index and the grid the guard asks for (`guarded`) is the host's at
    the spec's sizes: the spec takes the guarded grid, which covers every size."""
    if block is None:
        return []
    env = {**sizes, **{name: b for name, b in zip(E.BLOCK_NAMES, block)}}
    out = []
    for axis, g in enumerate(host_grid):
        if axis not in bounded or axis >= len(guarded) or not (isinstance(g, E.Bin) and g.op == "//"):
            continue
        try:
            if E.evaluate(g, env) == E.evaluate(E.parse(guarded[axis]), env):
                out.append(axis)
        except E.ExprError:
            continue
    return out


def grid_ok(grid: list[str], block: list[int], sizes: dict[str, int]) -> bool:
    """Whether the grid has at least one and at most CUDA's limit of blocks along each axis."""
    env = {**sizes, **{f"block.{a}": b for a, b in zip(AXES, block + [1] * (3 - len(block)))}}
    try:
        values = [E.evaluate(E.parse(g), env) for g in grid]
    except E.ExprError:
        return True  # names init could not size: cuopt check says which
    return all(1 <= v <= limit for v, limit in zip(values, GRID_LIMITS))


def _launchable(sizes: dict[str, int], grid: list[str], block: list[int], keep: set[str]) -> None:
    """Halve the largest guessed sizes until the grid can be launched (a guessed loop counter may
    exceed the size it is subtracted from; guessed sizes may multiply past CUDA's grid limit)."""
    free = [k for k in sizes if k not in keep]
    while free and not grid_ok(grid, block, sizes):
        name = max(free, key=lambda k: sizes[k])
        if sizes[name] <= 1:
            break
        sizes[name] //= 2


def _fit(sizes: dict[str, int], footprint: list[tuple[Poly, int]], keep: set[str]) -> None:
    """Halve the largest sizes (but those in `keep`) until the buffers take at most FOOTPRINT_BYTES."""
    def total() -> int:
        return sum(_evaluate(p, sizes) * size for p, size in footprint)

    free = [k for k in sizes if k not in keep]
    while free and total() > FOOTPRINT_BYTES:
        name = max(free, key=lambda k: sizes[k])
        if sizes[name] <= 64:
            break
        sizes[name] //= 2


def _evaluate(p: Poly, values: dict[str, int]) -> int:
    total = 0
    for monomial, coefficient in p.terms:
        term = coefficient
        for s in monomial:
            term *= values.get(s, 1)
        total += term
    return total


def _plain_store(node: ts.Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "assignment_expression" and \
        text(parent.child_by_field_name("operator")) == "="


def _plain_write(a: Access) -> bool:
    """`x[i] = e`: a store that does not read the element."""
    return a.write and not a.atomic and _plain_store(a.node)


def _stored_before(read: Access, accesses: list[Access]) -> bool:
    """A plain store to the same element runs first on every path to `read`: `c[idx] = 0;` is a
    statement of a block that holds `read` after it (`c[idx] += ...` in a loop below)."""
    for w in accesses:
        if not _plain_write(w) or w.node == read.node:
            continue
        if None in w.index or str(w.index) != str(read.index):
            continue
        statement = w.node.parent.parent if w.node.parent is not None else None
        block = statement.parent if statement is not None and statement.type == "expression_statement" else None
        if block is not None and block.type == "compound_statement" and statement.end_byte <= read.node.start_byte \
                and block.start_byte <= read.node.start_byte and read.node.end_byte <= block.end_byte:
            return True
    return False


def _axis_bounds(model: KernelModel) -> dict[int, Poly]:
    """Upper bounds of the global thread index per axis, from `if (i < n)` guards and
    `if (i >= n) return;` early exits."""
    out: dict[int, Poly] = {}
    for node in _if_statements(model.kernel.body):
        value = condition(node)
        if value is None:
            continue
        mask = model.locals.get(text(value)) if value.type == "identifier" else None
        if mask is not None and not mask.writes and mask.init is not None:  # `bool xmask = x < n; if (xmask)`
            value = mask.init
        consequence = node.child_by_field_name("consequence")
        negated = consequence is not None and returns_only(consequence)
        for left, op, right in _comparisons(value, "||" if negated else "&&"):
            if negated:
                op = {">=": "<", ">": "<=", "<": ">=", "<=": ">"}.get(op, "")
            lp, rp = model.poly(left), model.poly(right)
            if op in (">", ">="):
                lp, rp, op = rp, lp, "<" if op == ">" else "<="
            if lp is None or rp is None or op not in ("<", "<="):
                continue
            axis, offset = _index_plus(lp)
            loop_vars = {loop.var for loop in model.loops if loop.var}
            if axis is None or (rp - offset).symbols() & (set(THREAD + BLOCK + DIM) | loop_vars):
                continue  # a check of `i + t` in a loop over t bounds a tap, not the thread's index
            bound = rp - offset  # `i + WIN <= n` bounds i by n - WIN + 1
            out.setdefault(axis, bound + Poly.const(1) if op == "<=" else bound)
    return out


def _index_plus(p: Poly) -> tuple[int | None, Poly]:
    """(axis, c) when `p` is the global index along an axis plus `c`, free of built-ins."""
    for axis in range(3):
        c = p - global_index(axis)
        if not c.symbols() & set(THREAD + BLOCK + DIM):
            return axis, c
    return None, Poly.const(0)


def _unfilled_constants(kernel: Kernel) -> list[str]:
    """The `__constant__` arrays and values the kernel reads that the file declares without an initializer."""
    used = {text(n) for n in walk(kernel.body) if n.type == "identifier"}
    out = []
    for decl in walk(root_of(kernel.node)):
        if decl.type != "declaration" or not any(c.type == "type_qualifier" and text(c) == "__constant__"
                                                  for c in decl.children):
            continue
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                continue
            name = d
            while name.type != "identifier" and name.child_by_field_name("declarator") is not None:
                name = name.child_by_field_name("declarator")
            if text(name) in used:
                out.append(text(name))
    return out


def _builtin_axes(body: ts.Node, names: str) -> set[int]:
    """The axes of the built-ins `names` (`blockIdx|threadIdx`) that the body reads: `int b =
    blockIdx.z;` makes the launch 3D even with no bound along z."""
    return {AXES.index(a) for a in re.findall(rf"\b(?:{names})\s*\.\s*([xyz])\b", text(body))}


def _default_block(naxes: int, threaded: set[int]) -> list[int]:
    """The default block of the axes the threads spread over; 1 along an axis only blockIdx reads
    (a batch index: threads there would repeat each other's work)."""
    spread = sorted(a for a in threaded if a < naxes) or [0]
    block = [1] * naxes
    for axis, size in zip(spread, DEFAULT_BLOCK[len(spread)]):
        block[axis] = size
    return block


def _if_statements(body: ts.Node):
    """if statements and `c ? a : b` expressions (both have a `condition` and a `consequence`)."""
    stack = [body]
    while stack:
        n = stack.pop()
        if n.type in ("if_statement", "conditional_expression"):
            yield n
        stack.extend(n.children)


def _comparisons(node: ts.Node, joiner: str):
    if node.type == "parenthesized_expression" and node.named_children:
        yield from _comparisons(node.named_children[0], joiner)
        return
    if node.type != "binary_expression":
        return
    op = text(node.child_by_field_name("operator"))
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if op == joiner:
        yield from _comparisons(left, joiner)
        yield from _comparisons(right, joiner)
    elif op in ("<", "<=", ">", ">="):
        yield left, op, right


def table_name(kernel: Kernel) -> str:
    """The spec table of a kernel: its name, or `scale_float_256` for `scale<float, 256>`."""
    if kernel.instantiation is None:
        return kernel.name
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", kernel.entry)).strip("_")


def render(kernels: list[tuple[Kernel, Inferred]], filename: str,
           left_out: list[tuple[Kernel, str]] | None = None) -> str:
    """The spec file text, with TODO comments where init could not infer; a kernel no spec can
    describe (and each of `left_out`, with its reason) is left out, with a comment that says why."""
    lines = [f"# Spec for {filename}, written by `cuopt init`. Check every TODO, then run `cuopt bench`.",
             "# Format: docs/spec.md", ""]
    for kernel, why in left_out or ():
        lines += [f"# {kernel.name} (line {kernel.line}) is left out: {why}", ""]
    for kernel, inf in kernels:
        if inf.unsupported:  # a table cuopt check would refuse: say why there is none
            lines += [f"# {kernel.entry} (line {kernel.line}) is left out: {inf.unsupported}; cuopt cannot run it", ""]
            continue
        if kernel.template and kernel.instantiation is None:  # a table needs one: `kernel = "name<...>"`
            lines += [f"# {kernel.name} (line {kernel.line}) is left out: a template, and no instantiation was "
                      f"given; add a table with kernel = \"{kernel.name}<...>\" to describe one", ""]
            continue
        table = table_name(kernel)
        lines.append(f"[{table}]")
        if kernel.instantiation is not None:
            lines.append(f'kernel = "{kernel.entry}"')
        if inf.capture:
            lines.append(f"capture = {json.dumps(inf.capture)}  # launch, sizes and scalars as the program ran")
        origin = f"  # from the launch at line {inf.launch_line}" if inf.launch_line is not None else ""
        lines.append(f"block = {inf.block}{origin}")
        lines.append("grid = [" + ", ".join(f'"{g}"' for g in inf.grid) + "]")
        if inf.shared is not None:
            lines.append(f'shared = "{inf.shared}"')
        if inf.aliased:
            lines.append("aliased = [" + ", ".join(f'"{a}"' for a in inf.aliased) + "]")
        guessed = [k for k in inf.sizes if k not in inf.given]
        if not inf.sizes:
            note = "a placeholder" if inf.capture else "TODO: the kernel has no integer parameters; keep a dummy size"
            lines.append(f"sizes = {{ n = 1 }}  # {note}")
        else:
            comment = (f"TODO: problem sizes used for timing (guessed: {', '.join(guessed)})" if guessed
                       else "the captured launch's sizes" if inf.capture else "the sizes the source uses")
            lines.append(f"sizes = {_table(inf.sizes)}  # {comment}")
        if inf.check_sizes is None:
            lines.append("# check_sizes: derived from sizes when absent (odd sizes, not multiples of the block)")
        else:
            why = inf.check_why or (
                f"{', '.join(inf.fixed)} checked at the source's value only (see the notes)"
                if inf.fixed else f"{', '.join(inf.varied)} set per size set: a guard of the kernel bounds "
                f"{'them' if len(inf.varied) > 1 else 'it'} (no #ifndef, so the check sizes are written out)"
                if inf.varied else "the derived sizes that give an empty or oversized grid are left out")
            lines.append("check_sizes = [" + ", ".join(_table(c) for c in inf.check_sizes) + f"]  # {why}")
        for remark in inf.remarks:
            lines.append(f"# note: {remark}")
        for note in inf.notes:
            lines.append(f"# TODO: {note}")
        lines.append("")
        lines.append(f"[{table}.args]")
        for name, value, note in inf.args:
            rendered = f'"{value}"' if isinstance(value, str) else repr(value)
            lines.append(f"{name} = {rendered}" + (f"  # {note}" if note else ""))
        lines.append("")
    return "\n".join(lines)


def _table(sizes: dict[str, int]) -> str:
    return "{ " + ", ".join(f"{k} = {v}" for k, v in sizes.items()) + " }"
