"""What the host code of a file says about one kernel: the block and grid of its launch, the element
counts and copy directions of the device buffers it is passed, and the values of its scalars.

`host_launch(source, kernel, macros)` reads the first launch site `kernel<<<grid, block>>>(args)`,
follows the names it uses (dim3 variables, variables assigned once, helper functions' parameters
back to their call site, macros from `macros`) and the `cudaMalloc` / `cudaMemcpy` / `cudaMemset`
calls on the buffers it passes."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Union

import tree_sitter as ts

from cuopt.source.affine import BUILTINS, Poly
from cuopt.source.cexpr import Host, Translator, constant, enclosing_function, from_poly, strip, to_poly
from cuopt.source.kernels import Kernel, Param, load
from cuopt.source.launches import LaunchSite, launch_sites
from cuopt.source.parse import text, walk
from cuopt.source.preprocess import NO_MACROS, Macros, is_integer_literal
from cuopt.spec import expr as E
from cuopt.spec.dtypes import is_float, itemsize, normalize_c_type

_MALLOCS = {"cudaMalloc", "cudaMallocManaged", "cudaMallocAsync"}
_COPIES = {"cudaMemcpy", "cudaMemcpyAsync"}
_SETS = {"cudaMemset", "cudaMemsetAsync"}
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class HostBuffer:
    """A device buffer passed to the kernel: its element count, and how the host fills and reads it."""

    count: E.Expr | None  # elements; None when the allocation was not understood (see note)
    copied_in: bool  # cudaMemcpy host -> device
    copied_out: bool  # cudaMemcpy device -> host
    zeroed: bool  # cudaMemset(ptr, 0, ...)
    note: str = ""
    variable: str = field(default="", compare=False)  # the host pointer the launch passes ("": an expression)


@dataclass(frozen=True)
class HostScalar:
    """A scalar argument: a number, an expression over size names, or None (see note)."""

    value: float | E.Expr | None
    note: str = ""


HostArg = Union[HostBuffer, HostScalar]


@dataclass(frozen=True)
class HostLaunch:
    """One launch of a kernel as the host code writes it, in spec terms."""

    line: int
    block: tuple[int, ...] | None
    grid: tuple[E.Expr, ...] | None  # over size names and block.x|y|z
    args: dict[str, HostArg]  # by kernel parameter name
    sizes: dict[str, int]  # size name -> the value the host gives it
    notes: tuple[str, ...] = ()  # what could not be followed
    others: tuple[int, ...] = ()  # lines of the kernel's other launch sites
    shared: E.Expr | None = None  # the dynamic shared memory bytes of `<<<grid, block, shared>>>`
    free: tuple[str, ...] = ()  # sizes in the grid that the program sets at run time (no value here)


def kernel_macros(kernel: Kernel, macros: Macros = NO_MACROS) -> dict[str, int]:
    """The integer-literal macros the kernel body uses, directly or through other macros (`BOUND_NI`
    -> `NI`, `IDX(i, j)` -> `NJ`): compile-time sizes, by value. Macros with other replacements are
    expressions the analysis expands, not sizes."""
    params = {p.name for p in kernel.params}
    pending = sorted({text(n) for n in walk(kernel.body) if n.type == "identifier"} - params)
    seen: set[str] = set()
    out: dict[str, int] = {}
    while pending:
        name = pending.pop()
        d = macros.get(name) if name not in seen and not kernel.hides(name) else None
        seen.add(name)
        if d is None:
            continue
        if d.params is None and is_integer_literal(d.body):
            value = macros.integer(name)
            if value is not None and value > 0:
                out[name] = value
        else:
            pending.extend(_IDENTIFIER.findall(d.body))
    return dict(sorted(out.items()))


def host_launch(source: bytes, kernel: Kernel, macros: Macros = NO_MACROS) -> HostLaunch | None:
    """The launch of `kernel` in `source` in spec terms; None when the file never launches it.
    With several launch sites the first in the file is used (a note says so)."""
    sites = launch_sites(source, kernel.entry)
    if not sites:
        return None
    site = sites[0]
    notes: list[str] = []
    others = tuple(s.line for s in sites[1:])
    scope = enclosing_function(site.call)
    host = Host(load(source).tree.root_node, macros)
    sizes = dict(kernel_macros(kernel, macros))
    for name in sizes:
        host.aliases[(None, name)] = name
    if len(site.args) != len(kernel.params):
        notes.append(f"line {site.line}: {len(site.args)} arguments for {len(kernel.params)} parameters")
        return HostLaunch(site.line, None, None, {}, sizes, tuple(notes), others)

    args: dict[str, HostArg] = {}
    for p, arg in zip(kernel.params, site.args):
        if not p.pointer and p.ctype is not None and not is_float(p.ctype.dtype) and p.named:
            args[p.name] = _size_arg(host, p, arg, scope, sizes, notes)
    block = _block(host, site, scope, notes)
    free: set[str] = set()
    grid = _grid(host, site, scope, block, sizes, free, notes) if block is not None else None  # may add sizes
    for p, arg in zip(kernel.params, site.args):
        if p.pointer:
            args[p.name] = _buffer(host, p, arg, scope)
        elif p.name not in args:
            value = Translator(host).number(arg, scope)
            args[p.name] = HostScalar(value, "" if value is not None else
                                      f"the host passes {text(arg)} (line {site.line}), set at run time")
    for p, arg in zip(kernel.params, site.args):
        if isinstance(h := args.get(p.name), HostScalar) and h.value == E.Name(p.name) and p.name in sizes:
            _over_sizes(host, p.name, arg, scope, sizes, args)
    return HostLaunch(site.line, block, grid, args, sizes, tuple(notes), others,
                      _shared(host, site, scope, sizes, notes),
                      tuple(sorted(n for n in free if grid is not None and any(n in E.names(g) for g in grid))))


def _size_arg(host: Host, p: Param, arg: ts.Node, scope: ts.Node | None, sizes: dict[str, int],
              notes: list[str]) -> HostScalar:
    """An integer scalar: an expression over the kernel's macro sizes (`int ni = NI;` -> "NI"), or a
    size of its own named after the parameter, whose value is what the host variable holds."""
    over_macros = Translator(host).expr(arg, scope)
    if over_macros is not None and E.names(over_macros) and E.names(over_macros) <= set(sizes):
        return HostScalar(over_macros)
    node = strip(arg)
    value = constant(Translator(host, use_aliases=False).expr(arg, scope))
    if node.type == "identifier":
        where, name = scope, text(node)
        while True:  # the same name in the callers of helper functions stands for the same size
            host.aliases[(where.id if where is not None else None, name)] = p.name
            passed = host.caller_arg(where, name)
            if passed is None or strip(passed[0]).type != "identifier":
                break
            name, where = text(strip(passed[0])), passed[1]
    if value is None:
        return HostScalar(E.Name(p.name), f"the host passes {text(arg)}, set at run time; pick a size")
    if value <= 0:
        notes.append(f"{p.name}: the host passes {value}; a size must be positive")
        return HostScalar(E.Name(p.name), f"the host passes {value}; pick a positive size")
    sizes[p.name] = value
    return HostScalar(E.Name(p.name))


def _over_sizes(host: Host, name: str, arg: ts.Node, scope: ts.Node | None, sizes: dict[str, int],
                args: dict[str, HostArg]) -> None:
    """`k<<<...>>>(y, x, N * C)` where the buffers made B, T and C sizes and `N = B * T`: the argument
    is the expression over those sizes (it holds at every check size) rather than a size of its own,
    when it gives the same value."""
    over = Translator(host).expr(arg, scope)
    if over is None or not E.names(over) or not E.names(over) <= set(sizes) - {name}:
        return
    try:
        same = E.evaluate(over, sizes) == sizes[name]
    except E.ExprError:
        return
    if same:
        args[name] = HostScalar(over)
        del sizes[name]


def _buffer(host: Host, p: Param, arg: ts.Node, scope: ts.Node | None) -> HostBuffer:
    found = _allocation(host, p, arg, scope)
    node = strip(arg)
    return replace(found, variable=text(node)) if node.type == "identifier" else found


def _allocation(host: Host, p: Param, arg: ts.Node, scope: ts.Node | None) -> HostBuffer:
    node = strip(arg)
    if node.type != "identifier":
        return HostBuffer(None, False, False, False, f"the host passes {text(arg)}, not a device pointer variable")
    chain = [(scope, text(node))]
    while True:
        passed = host.caller_arg(*chain[-1])
        if passed is None or strip(passed[0]).type != "identifier" or len(chain) > 8:
            break
        chain.append((passed[1], text(strip(passed[0]))))
    copied_in = copied_out = zeroed = False
    allocation: tuple[ts.Node, ts.Node | None] | None = None
    for where, name in chain:
        for call in _calls(host, where):
            fn = text(call.child_by_field_name("function"))
            args = call.child_by_field_name("arguments").named_children
            if fn in _MALLOCS and len(args) >= 2 and _address_of(args[0]) == name:
                allocation = allocation or (args[1], where)
            elif fn in _COPIES and len(args) >= 4:
                kind = text(args[3])
                copied_in |= _names(args[0], name) and kind.endswith("HostToDevice")
                copied_out |= _names(args[1], name) and kind.endswith("DeviceToHost")
            elif fn in _SETS and len(args) >= 2 and _names(args[0], name):
                zeroed |= constant(Translator(host).expr(args[1], where)) == 0
    if allocation is None:
        return HostBuffer(None, copied_in, copied_out, zeroed, f"no cudaMalloc of {chain[-1][1]} found")
    count, note = _elements(host, p, allocation[0], allocation[1], chain[-1][1])
    return HostBuffer(count, copied_in, copied_out, zeroed, note)


def _calls(host: Host, where: ts.Node | None) -> list[ts.Node]:
    body = where.child_by_field_name("body") if where is not None else host.root
    return [n for n in walk(body) if n.type == "call_expression" and n.child_by_field_name("arguments")
            is not None] if body is not None else []


def _address_of(node: ts.Node) -> str | None:
    """`&d`, `(void**)&d`, `reinterpret_cast<void**>(&d)` -> "d"."""
    node = strip(node)
    if node.type == "call_expression":  # reinterpret_cast<void **>(&d)
        args = node.child_by_field_name("arguments")
        if args is None or len(args.named_children) != 1:
            return None
        node = strip(args.named_children[0])
    if node.type == "pointer_expression" and text(node.child_by_field_name("operator")) == "&":
        inner = strip(node.child_by_field_name("argument"))
        return text(inner) if inner.type == "identifier" else None
    return None


def _names(node: ts.Node, name: str) -> bool:
    node = strip(node)
    return node.type == "identifier" and text(node) == name


def _elements(host: Host, p: Param, nbytes: ts.Node, where: ts.Node | None, var: str
              ) -> tuple[E.Expr | None, str]:
    """The element count of a byte count: `sizeof(T) * NI * NK` -> NI*NK for a T buffer."""
    e = Translator(host).expr(nbytes, where)
    poly = to_poly(e) if e is not None else None
    if poly is None or any("sizeof:" in s and not s.startswith("sizeof:") for s in poly.symbols()):
        return None, f"byte count {text(nbytes)} of cudaMalloc not understood"
    element = itemsize(p.ctype.dtype) if p.ctype is not None else None
    param_bytes = element * p.ctype.width if p.ctype is not None else None
    for name in sorted(poly.symbols()):
        if not name.startswith("sizeof:"):
            continue
        spelled = name.removeprefix("sizeof:")
        size = param_bytes if spelled in (f"*{var}", normalize_c_type(p.base_type)) else None
        if size is None:
            return None, f"sizeof({spelled}) in cudaMalloc has no known size"
        poly = poly.substitute(name, Poly.const(size))
    if element is None or any(c % element for _, c in poly.terms):
        return None, f"byte count {text(nbytes)} is not a whole number of {p.base_type} elements"
    count = Poly.of({m: c // element for m, c in poly.terms})
    if any(s in BUILTINS or s.startswith("block.") for s in count.symbols()):
        return None, f"byte count {text(nbytes)} not understood"
    return from_poly(count), ""


def _block(host: Host, site: LaunchSite, scope: ts.Node | None, notes: list[str]) -> tuple[int, ...] | None:
    if len(site.config_args) < 2:
        notes.append(f"line {site.line}: unusual launch configuration")
        return None
    config = strip(site.config_args[1])
    if config.type == "identifier":
        host.block_var = (scope.id if scope is not None else None, text(config))
    values = host.constant_dims(config, scope)
    if values is None:
        notes.append(f"the block `{text(site.config_args[1])}` of the launch at line {site.line} is not a constant")
        return None
    threads = 1
    for v in values:
        threads *= v
    if threads > 1024:
        notes.append(f"the block `{text(site.config_args[1])}` of the launch at line {site.line} has {threads} "
                     "threads, over 1024")
        return None
    return values


def _grid(host: Host, site: LaunchSite, scope: ts.Node | None, block: tuple[int, ...], sizes: dict[str, int],
          free: set[str], notes: list[str]) -> tuple[E.Expr, ...] | None:
    parts = host.dims(site.config_args[0], scope)
    numbers = frozenset(block) | {math.prod(block)}  # a variable holding the block stays its number
    grid = [Translator(host, sizes=sizes, numbers=numbers, free=free).expr(n, s) for n, s in parts or ()]
    allowed = set(sizes) | set(E.BLOCK_NAMES) | set(host.aliases.values()) | free
    if not grid or len(grid) > 3 or any(g is None or not E.names(g) <= allowed for g in grid):
        notes.append(f"grid: `{text(site.config_args[0])}` of the launch at line {site.line} not understood")
        return None
    block3 = block + (1,) * (3 - len(block))
    grid = [_per_block(g, block3[axis], f"block.{'xyz'[axis]}") for axis, g in enumerate(grid)]
    while len(grid) > 1 and grid[-1] == E.Num(1):
        grid.pop()
    return tuple(grid)  # type: ignore[arg-type]


def _shared(host: Host, site: LaunchSite, scope: ts.Node | None, sizes: dict[str, int],
            notes: list[str]) -> E.Expr | None:
    """The launch's dynamic shared memory bytes (its third argument), over sizes and block.x|y|z."""
    if len(site.config_args) < 3:
        return None
    shared = Translator(host).expr(site.config_args[2], scope)
    if shared is None or not E.names(shared) <= set(sizes) | set(E.BLOCK_NAMES) | set(host.aliases.values()):
        notes.append(f"shared: `{text(site.config_args[2])}` of the launch at line {site.line} not understood; "
                     "set the dynamic shared memory bytes by hand")
        return None
    return shared


def _per_block(e: E.Expr, size: int, name: str) -> E.Expr:
    """Divisors equal to the block dimension written as `block.x` (so a new block keeps the grid right)."""
    if isinstance(e, E.Call):
        args = tuple(_per_block(a, size, name) for a in e.args)
        if e.fn == "cdiv" and constant(args[1]) == size and size > 1:
            args = (args[0], E.Name(name))
        return E.Call(e.fn, args)
    if isinstance(e, E.Bin):
        left, right = _per_block(e.left, size, name), _per_block(e.right, size, name)
        if e.op == "//" and constant(right) == size and size > 1:
            right = E.Name(name)
        return E.Bin(e.op, left, right)
    if isinstance(e, E.Neg):
        return E.Neg(_per_block(e.operand, size, name))
    return e
