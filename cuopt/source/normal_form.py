"""The normal form of a kernel: one ordered list of desugaring steps (`STEPS`), so that the rules
and `cuopt init` see through spelling alike. Each step is a small named function of a `Draft` (the
file's source, the kernel and its analysis) that gives (node, new text) pairs; a new real-world
spelling is taught here once, by a step in the list. After each step the file is parsed again, so
every step reads the one before it.

The two readers differ only by the `Reading` they ask for: the rules (cuopt/rewrite/normalize.py)
take the kernel under its launch, as an equivalent kernel they rewrite; `cuopt init`
(cuopt/spec/infer.py) takes `FOR_INFERENCE`, a read-only form whose every line is where the user
wrote it and whose every load is where the kernel makes it."""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

import tree_sitter as ts

from cuopt.source.accessors import accessor_calls
from cuopt.source.affine import BUILTINS
from cuopt.source.aliases import builtin_aliases
from cuopt.source.atomics import atomic_addresses
from cuopt.source.casts import named_casts
from cuopt.source.counters import dead_counters, loop_headers
from cuopt.source.declarations import single_assignments
from cuopt.source.fused import fused_updates
from cuopt.source.groups import group_ranks
from cuopt.source.helpers import helper_calls
from cuopt.source.index_locals import index_locals
from cuopt.source.kernels import Kernel, instantiate, load
from cuopt.source.loaded_once import loaded_once
from cuopt.source.loop_macros import loop_macro_headers
from cuopt.source.masks import mask_guards
from cuopt.source.model import KernelModel, analyze
from cuopt.source.mul24 import mul24_products
from cuopt.source.offset_guards import guard_offsets
from cuopt.source.paren_names import paren_names
from cuopt.source.parse import root_of, text, walk
from cuopt.source.preprocess import Macros
from cuopt.source.row_pointers import row_pointers
from cuopt.source.selects import compare_selects
from cuopt.source.shifts import power_shifts
from cuopt.source.store_guards import store_guards
from cuopt.source.tile_rows import tile_rows, tiled_block
from cuopt.source.updaters import updater_calls
from cuopt.source.whiles import bare_for_loops, while_loops

Pair = tuple[ts.Node, str]  # a node (or token) and the text that replaces it; "" takes it out


@dataclass(frozen=True)
class Reading:
    """What a reader needs of the normal form: the defaults are the rules', who also give the launch."""

    keep_lines: bool = False  # every line stays where it was: a node taken out leaves blank lines, a
    # step's text goes on the lines of what it replaces (init reports lines of the user's file)
    loads_as_written: bool = False  # no step moves a load under a condition: init sizes each buffer
    # by what the kernel as written reads, the rules may read a kernel that loads less
    block: tuple[int, ...] | None = None  # the launch's block where known: a tile-row loop becomes one row
    # a thread under a new block (the one step that changes the launch)
    dims: int | None = None  # the launch's dimensions where known; else the body's (x alone: one)
    sizes: Mapping[str, int] = field(default_factory=dict)  # the spec's sizes (a block tie's value)


FOR_INFERENCE = Reading(keep_lines=True, loads_as_written=True)


@dataclass(frozen=True)
class Draft:
    """The kernel between two steps: the whole file's source and the kernel in it."""

    source: bytes
    kernel: Kernel
    reading: Reading
    analyses: dict[str, KernelModel] = field(default_factory=dict, compare=False)  # the parsed file's, shared

    @cached_property
    def model(self) -> KernelModel:
        if self.kernel.entry not in self.analyses:
            self.analyses[self.kernel.entry] = analyze(self.kernel)
        return self.analyses[self.kernel.entry]

    @property
    def one_dimensional(self) -> bool:
        """The launch has one dimension; without one, the kernel reads only the built-ins' x."""
        if self.reading.dims is not None:
            return self.reading.dims == 1
        return not any(n.type == "field_expression" and (b := text(n).replace(" ", "")) in BUILTINS
                       and not b.endswith(".x") for n in walk(self.kernel.body))


@dataclass(frozen=True)
class Step:
    """One desugaring: its name, what it replaces, and which readings it serves."""

    name: str
    find: Callable[[Draft], list[Pair]]
    moves_loads: bool = False  # may put a load under a condition: not where loads stay as written
    retiles: bool = False  # changes the launch's block: only where the block is known


@dataclass(frozen=True)
class Normal:
    """A kernel's normal form: the whole file's source, and the block it runs under."""

    source: bytes
    block: tuple[int, ...] | None


def _loop_macros(d: Draft) -> list[Pair]:
    """`CUDA_KERNEL_LOOP(i, n) { ... }` as the `for` header the macro expands to (loop_macros.py)."""
    return loop_macro_headers(d.kernel)


def _paren_names(d: Draft) -> list[Pair]:
    """`(y) + x`, which the parser reads as a cast of `+x` to a type `y`, as `y + x` (paren_names.py)."""
    return paren_names(d.kernel, d.model.is_variable)


def _named_casts(d: Draft) -> list[Pair]:
    """`static_cast<size_t>(blockIdx.x)` as `((size_t)(blockIdx.x))` (casts.py)."""
    return named_casts(d.kernel)


def _mul24(d: Draft) -> list[Pair]:
    """`__umul24(blockIdx.x, blockDim.x)` as `(blockIdx.x * blockDim.x)` (mul24.py)."""
    return mul24_products(d.kernel)


def _group_ranks(d: Draft) -> list[Pair]:
    """`grid.thread_rank()` of `cg::this_grid()` on a one-dimensional launch as the built-ins (groups.py)."""
    return group_ranks(d.kernel, d.one_dimensional)


def _atomic_addresses(d: Draft) -> list[Pair]:
    """`atomicAdd(bins + v, 1)` as `atomicAdd(&bins[v], 1)` (atomics.py)."""
    return atomic_addresses(d.kernel)


def _accessors(d: Draft) -> list[Pair]:
    """`A(row, k)` of `#define A(i, j) a[(i) * lda + (j)]` as the subscript it expands to (accessors.py)."""
    return accessor_calls(d.kernel)


def _updaters(d: Draft) -> list[Pair]:
    """`welford_update(x[i], mean, m2, n);` as the helper's statements (updaters.py)."""
    return updater_calls(d.kernel)


def _single_assignments(d: Draft) -> list[Pair]:
    """`int i, j; i = e;` as `int i = e;` (declarations.py)."""
    return single_assignments(d.kernel)


def _mask_guards(d: Draft) -> list[Pair]:
    """`bool mask = i < n; if (mask)` as `if (i < n)` (masks.py)."""
    return mask_guards(d.kernel, d.model)


def _store_guards(d: Draft) -> list[Pair]:
    """Local work before the kernel's last statement, a guarded store, moved under its guard (store_guards.py)."""
    return store_guards(d.kernel, d.model, d.source)


def _compare_selects(d: Draft) -> list[Pair]:
    """`if (v > m) m = v;` as `m = fmaxf(m, v);` on a local that never holds NaN (selects.py)."""
    return compare_selects(d.kernel, d.model)


def _while_loops(d: Draft) -> list[Pair]:
    """`k = a; while (k < b) { ...; k++; }` as `for (int k = a; k < b; ++k) { ... }` (whiles.py),
    nested loops together: the counter's statement and the step go, `while` and its condition
    become the `for` header."""
    out: list[Pair] = []
    for w in while_loops(d.kernel, d.model):
        keyword, condition = w.loop.children[0], w.loop.child_by_field_name("condition")
        out += [(w.start, ""), (keyword, "for"), (condition, w.clause), (w.step, "")]
    return out


def _bare_for_loops(d: Draft) -> list[Pair]:
    """`size_t i = e; for (; i < n; i += s)` as `for (size_t i = e; i < n; i += s)` (whiles.py)."""
    return bare_for_loops(d.kernel, d.model)


def _loop_headers(d: Draft) -> list[Pair]:
    """`for (k = a; ...)` with a private counter as `for (int k = a; ...)`; `k <= b - 1` as `k < b` (counters.py)."""
    return loop_headers(d.kernel, d.model)


def _dead_counters(d: Draft) -> list[Pair]:
    """Declarations (`int i, k;`) of counters no statement uses any more (counters.py)."""
    return dead_counters(d.kernel)


def _power_shifts(d: Draft) -> list[Pair]:
    """`gap << 1` as `2 * gap`, `blockDim.x >> 1` as `blockDim.x / 2` of values never negative (shifts.py)."""
    return power_shifts(d.kernel, d.model.types)


def _builtin_aliases(d: Draft) -> list[Pair]:
    """`int tid = threadIdx.x;` put into the sums and products of index locals (aliases.py)."""
    return builtin_aliases(d.kernel, d.model)


def _index_helpers(d: Draft) -> list[Pair]:
    """`at(x - 1, y, w)` as `((y) * (w) + (x - 1))`, an index lambda's declaration gone (helpers.py)."""
    return helper_calls(d.kernel)


def _index_locals(d: Draft) -> list[Pair]:
    """`int idx = i * n + j; ... a[idx]` as `a[i * n + j]` (index_locals.py)."""
    return index_locals(d.kernel, d.model)


def _row_pointers(d: Draft) -> list[Pair]:
    """`const float* row = x + r * n; row[j]` as `x[r * n + j]` (row_pointers.py)."""
    return row_pointers(d.kernel, d.model)


def _fused_updates(d: Draft) -> list[Pair]:
    """`acc = fmaf(a, b, acc)` as `acc += a * b` (fused.py)."""
    return fused_updates(d.kernel)


def _tile_rows(d: Draft) -> list[Pair]:
    """A tile-row loop as one tile row a thread, under a block of the tile's rows (tile_rows.py)."""
    assert d.reading.block is not None
    return tile_rows(d.kernel, d.model, d.reading.block, d.reading.sizes)


def _guard_offsets(d: Draft) -> list[Pair]:
    """`if (i + WIN <= n)` as `if (i <= n - (WIN))` for signed operands (offset_guards.py)."""
    return guard_offsets(d.kernel, d.model)


def _loaded_once(d: Draft) -> list[Pair]:
    """`float a = A[i]; ... acc += a * b;` as `acc += A[i] * b;` (loaded_once.py)."""
    return loaded_once(d.kernel, d.model)


STEPS: tuple[Step, ...] = (
    Step("loop-macros", _loop_macros),
    Step("named-casts", _named_casts),
    Step("mul24", _mul24),
    Step("group-ranks", _group_ranks),
    Step("atomic-addresses", _atomic_addresses),
    Step("accessors", _accessors),
    Step("update-helpers", _updaters),
    Step("declare-then-assign", _single_assignments),
    Step("mask-guards", _mask_guards),
    Step("store-guards", _store_guards, moves_loads=True),
    Step("compare-selects", _compare_selects),
    Step("while-loops", _while_loops),
    Step("bare-for-loops", _bare_for_loops),
    Step("loop-headers", _loop_headers),
    Step("dead-counters", _dead_counters),
    Step("power-shifts", _power_shifts),
    Step("builtin-aliases", _builtin_aliases),
    Step("index-helpers", _index_helpers),
    Step("index-locals", _index_locals),
    Step("row-pointers", _row_pointers),
    Step("fused-updates", _fused_updates),
    Step("tile-rows", _tile_rows, retiles=True),  # before guards move their offsets
    Step("paren-names", _paren_names),  # after the steps that put values in parentheses
    Step("guard-offsets", _guard_offsets),
    Step("loaded-once", _loaded_once, moves_loads=True),
)


def steps_for(reading: Reading) -> list[Step]:
    """The steps of `STEPS` that serve `reading`, in order."""
    return [s for s in STEPS if not (s.moves_loads and reading.loads_as_written)
            and not (s.retiles and reading.block is None)]


def normal_source(source: bytes, macros: Macros, name: str, reading: Reading) -> Normal:
    """The file `source` with its kernel `name` (`k` or `k<float>`) in the normal form, and the
    block it runs under (`reading.block`, unless a step changed it). The same source where no step
    applies."""
    block = reading.block
    file = load(source, macros)
    kernel = file.kernel(name)
    for step in steps_for(reading):
        if kernel is None:
            break
        draft = Draft(source, kernel, replace(reading, block=block), file.analyses)
        pairs = step.find(draft)
        if not pairs:
            continue
        changed = load(_replaced(source, pairs, reading.keep_lines), macros)
        if changed.kernel(name) is None:
            continue  # the kernel no longer parses as one: the step's text is not read
        if step.retiles:
            block = tiled_block(kernel, draft.model, block, reading.sizes)
        file, source = changed, changed.source
        kernel = file.kernel(name)
    return Normal(source, block)


def normal_kernel(kernel: Kernel, reading: Reading = FOR_INFERENCE) -> Kernel:
    """`kernel` read in its normal form (by default the read-only one `cuopt init` analyses); the
    same kernel when no step applies."""
    root = root_of(kernel.node)
    assert root.text is not None
    # the file as parsed: the root starts after leading blank lines, which keep the lines where they were
    source = b"\n" * root.start_point.row + b" " * root.start_point.column + root.text
    normal = normal_source(source, kernel.macros, kernel.name, reading).source
    if normal == source:
        return kernel
    plain = load(normal, kernel.macros).kernel(kernel.name)
    if plain is None:
        return kernel
    return instantiate(plain, kernel.instantiation) if kernel.instantiation is not None else plain


def _replaced(source: bytes, pairs: list[Pair], keep_lines: bool) -> bytes:
    """`source` with each pair's node replaced by its text, back to front. A node taken out goes
    with its whole lines where it stands alone on them; with `keep_lines`, each replacement spans
    as many lines as its node did instead."""
    spans = []
    for node, new in pairs:
        start, end = node.start_byte, node.end_byte
        if keep_lines:
            new = _on_lines(new, source[start:end].count(b"\n"))
        elif not new:
            start, end = _whole_lines(source, node)
        spans.append((start, end, new))
    spans.sort()
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        if start < end:
            raise ValueError(f"normal form: overlapping replacements at byte {start}")
    for start, end, new in reversed(spans):
        source = source[:start] + new.encode() + source[end:]
    return source


def _whole_lines(source: bytes, node: ts.Node) -> tuple[int, int]:
    """The bytes of the lines `node` stands alone on, or the node's own where it shares a line."""
    start = source.rfind(b"\n", 0, node.start_byte) + 1
    end = source.find(b"\n", node.end_byte)
    if end < 0 or source[start:node.start_byte].strip() or source[node.end_byte:end].strip():
        return node.start_byte, node.end_byte
    return start, end + 1


def _on_lines(code: str, lines: int) -> str:
    """`code` on `lines` + 1 lines: joined (its `//` comments dropped) where it spans more, blank
    lines after it where it spans fewer."""
    if code.count("\n") > lines:
        code = " ".join(re.sub(r"//[^\n]*", "", ln).strip() for ln in code.split("\n")).strip()
    return code + "\n" * (lines - code.count("\n"))
