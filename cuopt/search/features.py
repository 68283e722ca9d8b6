"""Fixed-length feature vectors for the learned policy: one per variant (state) and one per offered
rewrite (action). Counts and sizes are log2(1 + x), fractions lie in [0, 1], flags are 0 or 1; every
value is finite and the same inputs always give the same vector. Changing any name, its order or
its meaning requires bumping SCHEMA_VERSION (models of another version are not loaded)."""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any

import tree_sitter as ts

from cuopt.rewrite.context import Context, evaluate
from cuopt.rewrite.engine import Offer
from cuopt.source.affine import THREAD, Poly, poly_value
from cuopt.source.kernels import Kernel, load
from cuopt.source.model import ATOMIC_PREFIX, BARRIERS, MATH_FUNCTIONS, Access, KernelModel, Loop, SharedArray
from cuopt.source.parse import text
from cuopt.spec.dtypes import c_type, is_float, itemsize, moved_bytes
from cuopt.spec.model import Buffer, Launch

SCHEMA_VERSION: int = 4

RULE_IDS: tuple[str, ...] = (
    "block-size", "carry", "coarsen", "expand-loop", "fast-math", "grid-stride", "parallelize-loop",
    "privatize", "reduce-tree", "register-accumulate", "register-tile", "restrict-const", "row-cache",
    "row-parallel", "smem-tile", "stream", "unroll", "vectorize", "warp-atomic", "window", "window-shared",
)
# A rule folder added since SCHEMA_VERSION was set (rules/<id>/, found by the rule registry) is not
# named here: its actions count as `rule:other`, so the shipped model keeps loading; the next
# retrain adds it here and bumps the version.
# Older schemas whose rows `cuopt-train fit` still reads: their rule one-hots, the only names that
# differ from this schema's (version 2 knew 12 rules, version 3 19; their state names are this
# version's).
OLDER_RULE_IDS: dict[int, tuple[str, ...]] = {
    2: ("block-size", "coarsen", "fast-math", "grid-stride", "privatize", "reduce-tree", "register-tile",
        "restrict-const", "row-parallel", "smem-tile", "unroll", "vectorize"),
    3: ("block-size", "coarsen", "expand-loop", "fast-math", "grid-stride", "parallelize-loop", "privatize",
        "reduce-tree", "register-accumulate", "register-tile", "restrict-const", "row-cache", "row-parallel",
        "smem-tile", "stream", "unroll", "vectorize", "warp-atomic", "window"),
}

WARP = 32
REGISTER_UNIT = 256  # registers are allocated per warp in units of this many
MAX_PARAMS = 4  # positional parameter slots of an action
THREAD_SHIFTS = (1, -1, 2, -2, 3, -3, 4, -4)  # neighbour distances that count as reuse across threads
DEFAULT_LIMITS: dict[str, float] = {  # sm_90 (H100 / H200 SXM)
    "sms": 132.0, "max_threads_per_sm": 2048.0, "max_registers_per_sm": 65536.0,
    "max_shared_per_sm": 233472.0, "max_blocks_per_sm": 32.0, "shared_reserved_per_block": 1024.0,
}
MAX_BLOCKS_PER_SM = {"sm_75": 16, "sm_86": 16, "sm_87": 16, "sm_89": 24}  # others: 32
_INTRINSIC_PREFIXES = ("__shfl", "__ldg", "__syncwarp", "__ballot", "__any", "__all")
_OPS = {"+", "-", "*", "/"}
_COMPOUND_OPS = {"+=", "-=", "*=", "/="}
_NO_OPS = {"condition_clause", "subscript_argument_list", "comment"}  # index and branch arithmetic
MARKERS: dict[str, re.Pattern[str]] = {  # what earlier rewrites leave behind
    "marker:launch_bounds": re.compile(r"__launch_bounds__"),
    "marker:restrict": re.compile(r"__restrict__"),
    "marker:ldg": re.compile(r"__ldg\s*\("),
    "marker:vector_types": re.compile(r"\b(?:float|double|int|uint|half)[24]\b"),
    "marker:shuffle": re.compile(r"__shfl"),
    "marker:fast_intrinsics": re.compile(r"\b(?:__expf|__logf|__sinf|__cosf|__powf|__fdividef|rsqrtf)\b"),
    "marker:grid_stride": re.compile(r"\bgridDim\."),
    "marker:smem_tile": re.compile(r"\bCUOPT_TILE\b"),
    "marker:register_tile": re.compile(r"\bCUOPT_BM\b"),
    "marker:halo": re.compile(r"\bCUOPT_HALO\b"),
    "marker:lane": re.compile(r"\bcuopt_lane\b"),
}
_CUOPT_NAME = re.compile(r"\b(?:cuopt_\w+|CUOPT_\w+)")
_KNOB = re.compile(r"constexpr\s+int\s+(CUOPT_[A-Z]+)\s*=\s*(\d+)\s*;")
_SHAPE = re.compile(r"\d+(?:x\d+)*")
PARAM_WORDS = ("full", "warp", "block", "x", "y", "z")  # string parameter values with their own slot

STRUCTURE_NAMES: tuple[str, ...] = (
    "loop:count", "loop:max_depth", "loop:const_trip", "loop:with_barrier", "loop:unroll_pragmas",
    "access:global", "access:global_reads", "access:global_writes", "access:read_frac",
    "access:coalesced_frac", "access:broadcast_frac", "access:strided_frac", "access:opaque_frac",
    "access:contiguous_frac", "access:in_loop_frac", "access:reuse_invariant_frac",
    "access:reuse_overlap_frac", "access:arrays", "access:escaped_pointers", "access:elem_bytes",
    "access:local",
    "shared:arrays", "shared:static_bytes", "shared:extern", "shared:accesses",
    "sync:barriers", "atomic:global", "atomic:shared", "atomic:in_loop", "control:returns",
    "call:math", "call:other", "source:kernel_lines", "source:kernel_bytes",
    "marker:cuopt_names", *MARKERS, "knob:tile", "knob:micro_tile",
)
LAUNCH_NAMES: tuple[str, ...] = (
    "flag:spec", "flag:launch_known",
    "launch:block_threads", "launch:block_x", "launch:block_y", "launch:block_z", "launch:dims",
    "launch:grid_blocks", "launch:threads_total", "launch:device_fill", "launch:dynamic_shared",
)
WORK_NAMES: tuple[str, ...] = (
    "flag:flops_from_spec", "loop:innermost_trip", "work:ops_per_thread", "work:flops", "work:bytes",
    "work:intensity",
)
OCCUPANCY_NAMES: tuple[str, ...] = (
    "flag:resources_known", "ptxas:registers", "ptxas:shared_bytes", "ptxas:spills",
    "occ:fraction", "occ:blocks_per_sm", "occ:limit_threads", "occ:limit_blocks", "occ:limit_registers",
    "occ:limit_shared", "occ:waves",
)
STATE_NAMES: tuple[str, ...] = (
    *STRUCTURE_NAMES, *LAUNCH_NAMES, *WORK_NAMES, *OCCUPANCY_NAMES, "flag:fast_math", "flag:analysis_failed",
)

DELTAS: dict[str, tuple[str, ...]] = {  # constructs whose count an action changes: substrings of the kernel's text
    "loops": ("for (", "for(", "while (", "while("),
    "shared": ("__shared__",),
    "barriers": ("__syncthreads(",),
    "atomics": ("atomic",),
    "shuffles": ("__shfl",),
    "vector_types": ("float4", "float2", "int4", "int2", "double2"),
    "unroll_pragmas": ("#pragma unroll",),
    "grid_stride": ("gridDim",),
    "restrict": ("__restrict__",),
    "ldg": ("__ldg(",),
    "fast_intrinsics": ("__expf", "__logf", "__sinf", "__cosf", "__powf", "__fdividef", "rsqrtf"),
    "lines": ("\n",),
}
PARAM_NAMES: tuple[str, ...] = (
    "param:count",
    *(f"param{i}:{what}" for i in range(MAX_PARAMS) for what in ("log2", "numeric")),
    *(f"param:{w}" for w in PARAM_WORDS), "param:shape2d", "param:word_other",
)
SITE_NAMES: tuple[str, ...] = ("site:line_frac", "site:loop_depth")
ACTION_NAMES: tuple[str, ...] = (
    *(f"rule:{r}" for r in RULE_IDS), "rule:other", *PARAM_NAMES,
    "launch:changes", "launch:block_threads_ratio", "launch:block_x_ratio", "launch:block_y_ratio",
    "launch:grid_blocks_ratio", "launch:grid_known",
    *SITE_NAMES,
    *(f"delta:{n}" for n in DELTAS), "delta:bytes_ratio", "delta:failed",
)


def schema() -> dict:
    """What a model file records to check that its features match this code."""
    return {"version": SCHEMA_VERSION, "state": list(STATE_NAMES), "action": list(ACTION_NAMES)}


def device_limits(device: dict | None) -> dict[str, float]:
    """Per-SM limits from a device description as the GPU worker reports it (`sms`,
    `max_threads_per_sm`, `max_registers_per_sm`, `max_shared_per_sm`, `arch`); missing or zero
    values fall back to sm_90's. Keys: those four, `max_blocks_per_sm`, `shared_reserved_per_block`."""
    limits = dict(DEFAULT_LIMITS)
    if not device:
        return limits
    for key in ("sms", "max_threads_per_sm", "max_registers_per_sm", "max_shared_per_sm"):
        value = device.get(key)
        if isinstance(value, (int, float)) and value > 0:
            limits[key] = float(value)
    arch = str(device.get("arch") or "")
    if arch in MAX_BLOCKS_PER_SM:
        limits["max_blocks_per_sm"] = float(MAX_BLOCKS_PER_SM[arch])
    if re.fullmatch(r"sm_[1-7]\d", arch):
        limits["shared_reserved_per_block"] = 0.0
    return limits


# -- state ------------------------------------------------------------------------------------
def state_features(ctx: Context, resources: dict | None = None, device: dict | None = None) -> list[float]:
    """The variant's feature vector, in STATE_NAMES order. `resources` is ptxas's report
    (`registers`, `shared_bytes`, `spills`) or None when not compiled."""
    limits = device_limits(device)
    groups = [_guarded(lambda: _structure(ctx), STRUCTURE_NAMES),
              _guarded(lambda: _launch(ctx, limits), LAUNCH_NAMES),
              _guarded(lambda: _work(ctx), WORK_NAMES),
              _guarded(lambda: _occupancy(ctx, resources, limits), OCCUPANCY_NAMES)]
    values = {k: v for group, _ in groups for k, v in group.items()}
    values["flag:fast_math"] = float("fast-math" in ctx.enabled_options)
    values["flag:analysis_failed"] = float(not all(ok for _, ok in groups))
    return [_finite(values[n]) for n in STATE_NAMES]


def _structure(ctx: Context) -> dict[str, float]:
    """What the source says, without sizes or a device: loops, accesses, shared memory, markers."""
    model = ctx.model
    return {**_loops(model), **_accesses(model, ctx.launch.block3), **_shared(model), **_sync(model),
            **_source(ctx)}


def _loops(model: KernelModel) -> dict[str, float]:
    loops = model.loops
    return {
        "loop:count": _log(len(loops)),
        "loop:max_depth": float(max((lp.depth + 1 for lp in loops), default=0)),
        "loop:const_trip": _log(sum(lp.trip_count is not None for lp in loops)),
        "loop:with_barrier": _log(sum(lp.has_barrier for lp in loops)),
        "loop:unroll_pragmas": _log(sum(lp.pragma is not None for lp in loops)),
    }


def _accesses(model: KernelModel, block: tuple[int, int, int]) -> dict[str, float]:
    accesses = model.global_accesses()
    kinds = [model.coalescing(a) for a in accesses]
    reads = [a for a in accesses if a.read and not a.atomic]
    invariant, overlap = _reuse(model, reads, block)
    sizes = [itemsize(p.ctype.dtype) * p.ctype.width for p in model.kernel.params if p.pointer and p.ctype]
    return {
        "access:global": _log(len(accesses)),
        "access:global_reads": _log(sum(a.read for a in accesses)),
        "access:global_writes": _log(sum(a.write for a in accesses)),
        "access:read_frac": _frac(sum(a.read for a in accesses), len(accesses)),
        "access:coalesced_frac": _frac(kinds.count("coalesced"), len(kinds)),
        "access:broadcast_frac": _frac(kinds.count("broadcast"), len(kinds)),
        "access:strided_frac": _frac(kinds.count("strided"), len(kinds)),
        "access:opaque_frac": _frac(kinds.count("opaque"), len(kinds)),
        "access:contiguous_frac": _frac(sum(_contiguous(model, a) for a in accesses), len(accesses)),
        "access:in_loop_frac": _frac(sum(bool(a.loops) for a in accesses), len(accesses)),
        "access:reuse_invariant_frac": _frac(invariant, len(reads)),
        "access:reuse_overlap_frac": _frac(overlap, len(reads)),
        "access:arrays": _log(len({a.array for a in accesses})),
        "access:escaped_pointers": _log(len(model.escapes)),
        "access:elem_bytes": math.log2(sum(sizes) / len(sizes)) if sizes else 0.0,
        "access:local": _log(sum(a.space == "local" for a in model.accesses)),
    }


def _contiguous(model: KernelModel, access: Access) -> bool:
    """Consecutive iterations of the innermost enclosing loop touch consecutive elements."""
    p = access.index[-1]
    if not access.loops or p is None:
        return False
    loop = model.loops[access.loops[-1]]
    return loop.var is not None and loop.step == 1 and p.coefficient(loop.var).constant() == 1


def _reuse(model: KernelModel, reads: list[Access], block: tuple[int, int, int]) -> tuple[int, int]:
    """Reads sharing elements across the block: (those whose index ignores a thread axis the block
    spans, those whose elements another read, another iteration or a nearby thread reaches)."""
    loop_vars = {lp.var for lp in model.loops if lp.var}
    spanned = [t for t, n in zip(THREAD, block) if n > 1]
    invariant = overlap = 0
    for a in reads:
        p = a.flat
        if p is None:
            continue
        invariant += any(not p.depends_on(t) for t in spanned)
        overlap += _self_overlap(p, loop_vars) or any(
            _shifted(p, b.flat, loop_vars) for b in reads if b is not a and b.array == a.array and b.flat is not None)
    return invariant, overlap


def _self_overlap(p: Poly, loop_vars: set[str]) -> bool:
    """A sliding window: a loop variable moves the index as far as a thread step does (x[i + j])."""
    steps = [p.coefficient(t) for t in THREAD if p.depends_on(t)]
    return any(p.coefficient(v) in steps for v in sorted(loop_vars) if p.depends_on(v))


def _shifted(p: Poly, q: Poly, loop_vars: set[str]) -> bool:
    """`q` reaches p's elements from other loop iterations or from a few threads away."""
    d = (p - q).without(loop_vars)
    if not d.terms:
        return True
    steps = [p.coefficient(t) for t in THREAD if p.depends_on(t)]
    return any(d == step * Poly.const(k) for step in steps for k in THREAD_SHIFTS)


def _shared(model: KernelModel) -> dict[str, float]:
    return {
        "shared:arrays": _log(len(model.shared)),
        "shared:static_bytes": _log(_static_shared(model)),
        "shared:extern": _log(sum(s.extern for s in model.shared.values())),
        "shared:accesses": _log(sum(a.space == "shared" for a in model.accesses)),
    }


def _static_shared(model: KernelModel) -> int:
    return sum(_shared_bytes(model, s) for s in model.shared.values() if not s.extern)


def _shared_bytes(model: KernelModel, array: SharedArray) -> int:
    """Element size x the dims, with constexpr knobs resolved; 0 when a dim is unknown."""
    ctype = c_type(array.element)
    count = itemsize(ctype.dtype) * ctype.width if ctype else 4
    node = array.node
    while node is not None and node.type == "array_declarator":
        size = node.child_by_field_name("size")
        p = model.poly(size) if size is not None else None
        dim = p.constant() if p is not None else None
        if dim is None or dim <= 0:
            return 0
        count *= dim
        node = node.child_by_field_name("declarator")
    return count


def _sync(model: KernelModel) -> dict[str, float]:
    atomics = [a for a in model.accesses if a.atomic]
    calls = [c for c in model.calls if c not in MATH_FUNCTIONS and c not in BARRIERS
             and not c.startswith(ATOMIC_PREFIX) and not c.startswith(_INTRINSIC_PREFIXES)]
    return {
        "sync:barriers": _log(len(model.barriers)),
        "atomic:global": _log(sum(a.space == "global" for a in atomics)),
        "atomic:shared": _log(sum(a.space == "shared" for a in atomics)),
        "atomic:in_loop": _log(sum(bool(a.loops) for a in atomics)),
        "control:returns": _log(len(model.returns)),
        "call:math": _log(len(model.calls & MATH_FUNCTIONS)),
        "call:other": _log(len(calls)),
    }


def _source(ctx: Context) -> dict[str, float]:
    kernel = ctx.text(ctx.kernel.node)
    knobs = {name: int(value) for name, value in _KNOB.findall(kernel)}
    tile = knobs.get("CUOPT_TILE") or knobs.get("CUOPT_BM") or 0
    micro = math.prod(knobs.get(k, 1) for k in ("CUOPT_TM", "CUOPT_TN", "CUOPT_RM", "CUOPT_RN"))
    return {
        "source:kernel_lines": _log(kernel.count("\n") + 1),
        "source:kernel_bytes": _log(len(kernel)),
        "marker:cuopt_names": _log(len(set(_CUOPT_NAME.findall(kernel)))),
        **{name: float(pattern.search(kernel) is not None) for name, pattern in MARKERS.items()},
        "knob:tile": math.log2(max(1, tile)),
        "knob:micro_tile": math.log2(max(1, micro)),
    }


def _launch(ctx: Context, limits: dict[str, float]) -> dict[str, float]:
    """Block shape, and the grid at the spec's timing sizes (zeros and a flag off when unknown)."""
    launch, sizes = ctx.launch, _sizes(ctx)
    grid = _grid_blocks(launch, sizes) or 0
    total = math.prod(launch.block3) * grid
    return {
        "flag:spec": float(ctx.spec is not None),
        "flag:launch_known": float(total > 0),
        "launch:block_threads": math.log2(math.prod(launch.block3)),
        "launch:block_x": math.log2(launch.block3[0]),
        "launch:block_y": math.log2(launch.block3[1]),
        "launch:block_z": math.log2(launch.block3[2]),
        "launch:dims": float(ctx.dims),
        "launch:grid_blocks": _log(grid),
        "launch:threads_total": _log(total),
        "launch:device_fill": _log(total / (limits["sms"] * limits["max_threads_per_sm"])),
        "launch:dynamic_shared": _log(evaluate(launch.shared, launch.env(sizes)) or 0),
    }


def _work(ctx: Context) -> dict[str, float]:
    """FLOPs (the spec's, else an estimate from the source) and bytes at the spec's timing sizes."""
    spec, sizes = ctx.spec, _sizes(ctx)
    env = ctx.index_env
    ops = _ops_per_thread(ctx.model, env)
    spec_flops = evaluate(spec.flops, sizes) if spec is not None and spec.flops is not None else None
    threads = math.prod(ctx.launch.block3) * (_grid_blocks(ctx.launch, sizes) or 0)
    flops = float(spec_flops) if spec_flops is not None else ops * threads
    nbytes = _bytes_moved(ctx, sizes)
    trips = [_trip(ctx.model.loops[i], env) for i in ctx.model.inner_loops()]
    return {
        "flag:flops_from_spec": float(spec_flops is not None),
        "loop:innermost_trip": _log(max((t for t in trips if t is not None), default=0)),
        "work:ops_per_thread": _log(ops),
        "work:flops": _log(flops),
        "work:bytes": _log(nbytes),
        "work:intensity": max(-16.0, min(16.0, math.log2(flops / nbytes))) if flops > 0 and nbytes > 0 else 0.0,
    }


def _sizes(ctx: Context) -> dict[str, int]:
    return ctx.spec.sizes if ctx.spec is not None else {}


def _grid_blocks(launch: Launch, sizes: dict[str, int]) -> int | None:
    """Blocks in the grid at `sizes`; None when the grid cannot be evaluated."""
    dims = [evaluate(g, launch.env(sizes)) for g in launch.grid]
    if any(d is None or d <= 0 for d in dims):
        return None
    return math.prod(d for d in dims if d is not None)


def _bytes_moved(ctx: Context, sizes: dict[str, int]) -> int:
    """The spec's buffers at `sizes` (spec.dtypes.moved_bytes); buffers whose count does not evaluate count 0."""
    if ctx.spec is None:
        return 0
    total = 0
    for arg in ctx.spec.args:
        count = evaluate(arg.count, sizes) if isinstance(arg, Buffer) else None
        if count is not None and count > 0:
            total += moved_bytes(arg.role, arg.dtype, count)
    return total


def _trip(loop: Loop, env: dict[str, int]) -> int | None:
    """Iterations of a loop with an additive step, at the values in `env`."""
    if loop.trip_count is not None:
        return loop.trip_count
    start, bound, step = poly_value(loop.start, env), poly_value(loop.bound, env), loop.step
    if start is None or bound is None or not step:
        return None
    if step > 0 and loop.cmp in ("<", "<="):
        return max(0, -(-(bound + (loop.cmp == "<=") - start) // step))
    if step < 0 and loop.cmp in (">", ">="):
        return max(0, -(-(start - bound + (loop.cmp == ">=")) // -step))
    return None


def _ops_per_thread(model: KernelModel, env: dict[str, int]) -> float:
    """Float-ish arithmetic (+ - * /, compound assignments, math calls) a thread executes, loops
    weighted by their trip counts (1 when unknown); index, branch and integer arithmetic left out."""
    trips = {lp.node.id: _trip(lp, env) or 1 for lp in model.loops}
    total, stack = 0.0, [(model.kernel.body, 1.0)]
    while stack:
        node, weight = stack.pop()
        if node.type in _NO_OPS or (node.type == "declaration" and _integral(node)):
            continue
        if node.type == "for_statement":
            body = node.child_by_field_name("body")
            if body is not None:
                stack.append((body, weight * trips.get(node.id, 1)))
            continue
        total += weight * _is_op(node)
        stack.extend((c, weight) for c in node.named_children)
    return total


def _is_op(node: ts.Node) -> bool:
    if node.type == "binary_expression":
        return text(node.child_by_field_name("operator")) in _OPS
    if node.type == "assignment_expression":
        return text(node.child_by_field_name("operator")) in _COMPOUND_OPS
    if node.type == "call_expression":
        return text(node.child_by_field_name("function")) in MATH_FUNCTIONS
    return False


def _integral(declaration: ts.Node) -> bool:
    type_node = declaration.child_by_field_name("type")
    ctype = c_type(text(type_node)) if type_node is not None else None
    return ctype is not None and not is_float(ctype.dtype)


def _occupancy(ctx: Context, resources: dict | None, limits: dict[str, float]) -> dict[str, float]:
    """Resident blocks per SM from threads, registers and shared memory, as a fraction of the
    SM's warps; static shared memory from the source when ptxas's report is missing."""
    sizes = _sizes(ctx)
    registers = int(resources.get("registers", 0)) if resources else 0
    static = int(resources.get("shared_bytes", 0)) if resources else _static_shared(ctx.model)
    shared = static + (evaluate(ctx.launch.shared, ctx.launch.env(sizes)) or 0)
    warps = -(-math.prod(ctx.launch.block3) // WARP)
    blocks, limiter = _blocks_per_sm(warps, registers, shared, limits)
    grid = _grid_blocks(ctx.launch, sizes)
    resident = blocks * limits["sms"]
    return {
        "flag:resources_known": float(resources is not None),
        "ptxas:registers": registers / 255.0,
        "ptxas:shared_bytes": _log(static if resources else 0),
        "ptxas:spills": _log(int(resources.get("spills", 0)) if resources else 0),
        "occ:fraction": min(1.0, blocks * warps * WARP / limits["max_threads_per_sm"]),
        "occ:blocks_per_sm": blocks / limits["max_blocks_per_sm"],
        **{f"occ:limit_{k}": float(k == limiter) for k in ("threads", "blocks", "registers", "shared")},
        "occ:waves": _log(grid / resident) if grid and resident > 0 else 0.0,
    }


def _blocks_per_sm(warps: int, registers: int, shared: int, limits: dict[str, float]) -> tuple[int, str]:
    """Resident blocks per SM and what limits them (the first of equal limits)."""
    bound = {"threads": int(limits["max_threads_per_sm"]) // (warps * WARP),
             "blocks": int(limits["max_blocks_per_sm"])}
    if registers > 0:
        per_warp = -(-registers * WARP // REGISTER_UNIT) * REGISTER_UNIT
        bound["registers"] = int(limits["max_registers_per_sm"]) // per_warp // warps
    if shared > 0:
        bound["shared"] = int(limits["max_shared_per_sm"] // (shared + limits["shared_reserved_per_block"]))
    limiter = min(bound, key=lambda k: bound[k])
    return max(0, bound[limiter]), limiter


# -- actions ----------------------------------------------------------------------------------
def action_features(ctx: Context, offer: Offer) -> list[float]:
    """The offered rewrite's feature vector, in ACTION_NAMES order: rule, parameters, launch change,
    site, and how a few structure features change in the result."""
    rule = offer.action.rule
    values = {f"rule:{r}": float(r == rule) for r in RULE_IDS}
    values["rule:other"] = float(rule not in RULE_IDS)
    values.update(_params(offer.action.params))
    values.update(_launch_change(ctx, offer))
    values.update(_guarded(lambda: _site(ctx, offer.action.line), SITE_NAMES)[0])
    values.update(_deltas(ctx, offer))
    return [_finite(values[n]) for n in ACTION_NAMES]


def upgraded_action(version: int, rule: str, values: list[float]) -> list[float]:
    """An action vector of an older schema (one of OLDER_RULE_IDS) in this schema's names: the rule
    one-hot is set from `rule`, every other value is kept by name."""
    rules = OLDER_RULE_IDS[version]
    old_names = (*(f"rule:{r}" for r in rules), "rule:other", *ACTION_NAMES[len(RULE_IDS) + 1:])
    if len(values) != len(old_names):
        raise ValueError(f"expected {len(old_names)} numbers for schema {version}, got {len(values)}")
    named = dict(zip(old_names, values))
    named.update({f"rule:{r}": float(r == rule) for r in RULE_IDS})
    named["rule:other"] = float(rule not in RULE_IDS)
    return [named[n] for n in ACTION_NAMES]


def _params(params: tuple[tuple[str, Any], ...]) -> dict[str, float]:
    """Positional slots (log2 of a number, or of the threads of a shape such as 32x4) and a bag of
    the words used as values."""
    out = {name: 0.0 for name in PARAM_NAMES}
    out["param:count"] = float(len(params))
    for i, (_, value) in enumerate(params):
        number = _number(value)
        if i < MAX_PARAMS and number is not None:
            out[f"param{i}:log2"] = math.log2(number) if number > 0 else 0.0
            out[f"param{i}:numeric"] = 1.0
        if isinstance(value, str) and "x" in value and number is not None:
            out["param:shape2d"] = 1.0
        elif isinstance(value, str) and number is None:
            key = f"param:{value}" if value in PARAM_WORDS else "param:word_other"
            out[key] = 1.0
    return out


def _number(value: Any) -> float | None:
    """A number, a numeric string, or the product of a shape string ("32x4" -> 128)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and _SHAPE.fullmatch(value):
        return float(math.prod(int(v) for v in value.split("x")))
    return None


def _launch_change(ctx: Context, offer: Offer) -> dict[str, float]:
    old, new, sizes = ctx.launch, offer.result.launch, _sizes(ctx)
    before, after = _grid_blocks(old, sizes), _grid_blocks(new, sizes)
    known = before is not None and after is not None
    return {
        "launch:changes": float(offer.changes_launch),
        "launch:block_threads_ratio": math.log2(math.prod(new.block3) / math.prod(old.block3)),
        "launch:block_x_ratio": math.log2(new.block3[0] / old.block3[0]),
        "launch:block_y_ratio": math.log2(new.block3[1] / old.block3[1]),
        "launch:grid_blocks_ratio": math.log2(after / before) if known else 0.0,
        "launch:grid_known": float(known),
    }


def _site(ctx: Context, line: int) -> dict[str, float]:
    """Where in the kernel the rewrite applies, and inside how many loops."""
    node = ctx.kernel.node
    first, last = node.start_point.row + 1, node.end_point.row + 1
    depth = sum(lp.node.start_point.row + 1 < line <= lp.node.end_point.row + 1 for lp in ctx.model.loops)
    return {"site:line_frac": min(1.0, max(0.0, (line - first) / max(1, last - first))),
            "site:loop_depth": float(depth)}


def _deltas(ctx: Context, offer: Offer) -> dict[str, float]:
    """How the kernel's text changes: signed log2 of the change in each count of DELTAS, and log2 of
    the size ratio. Text, not analysis, so that scoring many offers stays cheap (the result is
    already parsed: load() caches by source)."""
    names = (*(f"delta:{n}" for n in DELTAS), "delta:bytes_ratio")
    after = load(offer.result.source).kernel(ctx.kernel_name)
    values, ok = _guarded(lambda: _text_deltas(ctx.text(ctx.kernel.node), _node_text(after)), names)
    return {**values, "delta:failed": float(not ok)}


@functools.lru_cache(maxsize=64)
def _counts(kernel_text: str) -> dict[str, int]:
    """How often each construct of DELTAS occurs (substring counts: cheap enough for every offer)."""
    return {name: sum(kernel_text.count(w) for w in words) for name, words in DELTAS.items()}


def _node_text(kernel: Kernel | None) -> str:
    if kernel is None:
        raise ValueError("the rewritten source has no such kernel")
    return (kernel.node.text or b"").decode()


def _text_deltas(before: str, after: str) -> dict[str, float]:
    out = {}
    old, new = _counts(before), _counts(after)
    for name in DELTAS:
        d = new[name] - old[name]
        out[f"delta:{name}"] = math.copysign(math.log2(1 + abs(d)), d)
    out["delta:bytes_ratio"] = math.log2(max(1, len(after)) / max(1, len(before)))
    return out


# -- helpers ----------------------------------------------------------------------------------
def _guarded(compute: Callable[[], dict[str, float]], names: tuple[str, ...]) -> tuple[dict[str, float], bool]:
    """The computed features, or zeros and False when the analysis fails on an unusual kernel."""
    try:
        return compute(), True
    except Exception:  # any analysis failure must not stop a search: the flag records it
        return {n: 0.0 for n in names}, False


def _log(x: float) -> float:
    return math.log2(1.0 + x) if x > 0 else 0.0


def _frac(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _finite(x: float) -> float:
    x = float(x)
    return x if math.isfinite(x) else 0.0
