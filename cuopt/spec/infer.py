"""`cuopt init`: infer a spec skeleton from a kernel's signature and index expressions."""
from __future__ import annotations

from dataclasses import dataclass, field

import tree_sitter as ts

from cuopt.source.affine import BLOCK, DIM, THREAD, Poly, axis_of_global_index
from cuopt.source.kernels import Kernel
from cuopt.source.model import KernelModel, analyze
from cuopt.source.parse import text
from cuopt.source.preprocess import compile_time_sizes
from cuopt.spec.dtypes import itemsize

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


def infer(kernel: Kernel) -> Inferred:
    model = analyze(kernel)
    scalars = [p for p in kernel.params if not p.pointer]
    int_params = [p.name for p in scalars if p.ctype is not None and not p.ctype.dtype.startswith("float")]
    bounds = _axis_bounds(model)
    notes: list[str] = []

    naxes = max(bounds) + 1 if bounds else 1
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
    in_loops = {s for lp in model.loops if lp.bound is not None for s in lp.bound.symbols()}
    sizes = {name: (1 << 24 if naxes == 1 else 4096) if name in in_bounds - in_loops else 1024
             for name in int_params}
    fixed: dict[str, int] = {}  # sizes the file #defines, at the value it gives them

    args: list[tuple[str, str | float, str]] = []
    footprint: list[tuple[Poly, int]] = []
    for p in kernel.params:
        if not p.pointer:
            if p.name in int_params:
                args.append((p.name, p.name, ""))
            else:
                value = 1e-5 if "eps" in p.name.lower() else 1.0
                args.append((p.name, value, "TODO: value of this scalar"))
            continue
        dtype = p.ctype.dtype if p.ctype is not None else "float32"
        note = "" if p.ctype is not None else f"TODO: type {p.base_type} has no spec dtype"
        accesses = [a for a in model.accesses if a.array == p.name]
        written = any(a.write for a in accesses) or p.name in model.escapes and not p.const
        read = any(a.read and not (a.write and not a.atomic and _plain_store(a.node)) for a in accesses)
        atomic = any(a.atomic for a in accesses)
        role = "in" if p.const or not written else ("inout" if read or atomic else "out")
        count = _count(model, accesses, bounds)
        if count is None:
            count_text = "1024"
            note = note or "TODO: element count not inferred (data-dependent or non-affine index)"
        else:
            count_text = to_expr(count)
            footprint.append((count, itemsize(dtype)))
        init = " zeros" if atomic else ""
        args.append((p.name, f"{role} {dtype}[{count_text}]{init}", note))
    used = in_bounds | in_loops | {s for count, _ in footprint for s in count.symbols()}
    for name, overridable in compile_time_sizes(sorted(used), kernel.macros).items():
        value = kernel.macros.integer(name)
        assert value is not None  # compile_time_sizes names integer macros only
        if overridable:
            sizes[name] = value
        else:
            fixed[name] = value
            notes.append(f"size {name} is fixed by `#define {name} {value}` (no #ifndef guard): "
                         f"-D{name}=... cannot change it, keep it at {value} in sizes and check_sizes")
    _fit(sizes, footprint, fixed)
    return Inferred(DEFAULT_BLOCK[naxes], grid, {**sizes, **fixed}, args, notes)


def _fit(sizes: dict[str, int], footprint: list[tuple[Poly, int]], fixed: dict[str, int]) -> None:
    """Halve the largest of `sizes` (not the `fixed` ones) until the buffers take at most FOOTPRINT_BYTES."""
    def total() -> int:
        return sum(_evaluate(p, {**sizes, **fixed}) * size for p, size in footprint)

    while sizes and total() > FOOTPRINT_BYTES:
        name = max(sizes, key=lambda k: sizes[k])
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


def _axis_bounds(model: KernelModel) -> dict[int, Poly]:
    """Upper bounds of the global thread index per axis, from `if (i < n)` guards and
    `if (i >= n) return;` early exits."""
    out: dict[int, Poly] = {}
    for node in _if_statements(model.kernel.body):
        cond = node.child_by_field_name("condition")
        value = cond.child_by_field_name("value") if cond is not None and cond.type == "condition_clause" else cond
        if value is None:
            continue
        consequence = node.child_by_field_name("consequence")
        negated = consequence is not None and (consequence.type == "return_statement" or (
            consequence.type == "compound_statement" and len(consequence.named_children) == 1
            and consequence.named_children[0].type == "return_statement"))
        for left, op, right in _comparisons(value, "||" if negated else "&&"):
            if negated:
                op = {">=": "<", ">": "<=", "<": ">=", "<=": ">"}.get(op, "")
            lp, rp = model.poly(left), model.poly(right)
            if op in (">", ">="):
                lp, rp, op = rp, lp, "<" if op == ">" else "<="
            if lp is None or rp is None or op not in ("<", "<="):
                continue
            axis = axis_of_global_index(lp)
            if axis is None or rp.symbols() & set(THREAD + BLOCK + DIM):
                continue
            out.setdefault(axis, rp + Poly.const(1) if op == "<=" else rp)
    return out


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


def _count(model: KernelModel, accesses: list, bounds: dict[int, Poly]) -> Poly | None:
    """Largest index + 1 over all accesses, with thread indices and loop variables at their maxima."""
    best: Poly | None = None
    for a in accesses:
        p = a.flat
        if p is None:
            return None
        top = _maximum(model, p, bounds, a.loops)
        if top is None:
            return None
        candidate = top + Poly.const(1)
        if best is None or _sample(candidate) > _sample(best):
            best = candidate
    if best is None:
        return None
    const = best.mapping.get((), 0)
    if const < 0 and best.without(()).terms:  # round `h*w - 1` up to `h*w`
        best = best - Poly.const(const)
    return best


def _maximum(model: KernelModel, p: Poly, bounds: dict[int, Poly], loops: tuple[int, ...]) -> Poly | None:
    for axis in range(3):
        g = Poly.symbol(f"__g{axis}")
        p = p.substitute(THREAD[axis], g - Poly.symbol(BLOCK[axis]) * Poly.symbol(DIM[axis]))
    for lp in (model.loops[i] for i in reversed(loops)):  # inner first: bounds may use outer variables
        if lp.var and p.depends_on(lp.var):
            if lp.bound is None or lp.cmp not in ("<", "<=") or not lp.step or lp.step < 0:
                return None
            top = lp.bound - Poly.const(1) if lp.cmp == "<" else lp.bound
            p = p.substitute(lp.var, top)
    for axis in range(3):
        name = f"__g{axis}"
        if p.depends_on(name):
            if axis not in bounds:
                return None
            p = p.substitute(name, bounds[axis] - Poly.const(1))
    if p.symbols() & set(THREAD + BLOCK + DIM) or any(s.startswith("__g") for s in p.symbols()):
        return None
    known = {q.name for q in model.kernel.params}
    if any(s not in known and model.kernel.macros.integer(s) is None for s in p.symbols()):
        return None
    return p


def _sample(p: Poly) -> int:
    total = 0
    for m, c in p.terms:
        total += c * 1000 ** len(m)
    return total


def to_expr(p: Poly) -> str:
    """A spec expression for a polynomial over size names: `rows*cols`, `n - k + 1`."""
    terms = sorted(p.terms, key=lambda t: (not t[0], t[1] < 0, -len(t[0]), t[0]))
    out = ""
    for m, c in terms:
        body = "*".join(m)
        mag = abs(c)
        piece = body if mag == 1 and body else (f"{mag}*{body}" if body else str(mag))
        if not out:
            out = f"-{piece}" if c < 0 else piece
        else:
            out += f" - {piece}" if c < 0 else f" + {piece}"
    return out or "0"


def render(kernels: list[tuple[Kernel, Inferred]], filename: str) -> str:
    """The spec file text, with TODO comments where init could not infer."""
    lines = [f"# Spec for {filename}, written by `cuopt init`. Check every TODO, then run `cuopt bench`.",
             "# Format: docs/spec.md", ""]
    for kernel, inf in kernels:
        lines.append(f"[{kernel.name}]")
        lines.append(f"block = {inf.block}")
        lines.append("grid = [" + ", ".join(f'"{g}"' for g in inf.grid) + "]")
        if inf.sizes:
            lines.append("sizes = { " + ", ".join(f"{k} = {v}" for k, v in inf.sizes.items())
                         + " }  # TODO: problem sizes used for timing")
        else:
            lines.append("sizes = { n = 1 }  # TODO: the kernel has no integer parameters; keep a dummy size")
        lines.append("# check_sizes: derived from sizes when absent (odd sizes, not multiples of the block)")
        for note in inf.notes:
            lines.append(f"# TODO: {note}")
        lines.append("")
        lines.append(f"[{kernel.name}.args]")
        for name, value, note in inf.args:
            rendered = f'"{value}"' if isinstance(value, str) else repr(value)
            lines.append(f"{name} = {rendered}" + (f"  # {note}" if note else ""))
        lines.append("")
    return "\n".join(lines)
