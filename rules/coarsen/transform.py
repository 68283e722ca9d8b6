"""coarsen: each thread computes `factor` outputs along x or y; the grid shrinks accordingly.

On a kernel tiled by smem-tile (it declares `constexpr int CUOPT_TM/CUOPT_TN`), coarsening raises
the outputs per thread inside the tile (register blocking): the block shrinks, the tile stays.
Elsewhere the kernel body runs in an unrolled loop over `factor` block-strided positions, so each
step's accesses stay coalesced; bounds checks are kept as they are."""
from __future__ import annotations

import re
from typing import Any

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, node_text
from cuopt.rewrite.transforms.common import (
    AXES, fresh, index_replacements, index_type, per_block_grid, reindent, require_index_only_builtins, scale_grid,
    size_parameters)
from cuopt.source.analysis import bound_of, return_in_loop, statements
from cuopt.source.launches import to_c
from cuopt.spec import expr as E
from cuopt.spec.model import Launch

_KNOB = re.compile(r"constexpr\s+int\s+(CUOPT_TILE|CUOPT_TM|CUOPT_TN)\s*=\s*(\d+)\s*;")
MAX_OUTPUTS_PER_THREAD = 64


class Coarsen:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        if self._knobs(ctx):
            return [Site(ctx.kernel.node, data="tiled")]
        m = ctx.model
        if m.barriers or m.shared:
            raise Refuse("uses barriers or shared memory (only kernels tiled by smem-tile are coarsened)")
        return [Site(ctx.kernel.node, data="generic")]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        factor, axis = int(params["factor"]), AXES.index(params["axis"])
        if site.data == "tiled":
            return self._tiled(ctx, factor, axis)
        return self._generic(ctx, factor, axis)

    @staticmethod
    def _knobs(ctx: Context) -> dict[str, tuple[int, int, int]]:
        """CUOPT_TILE/TM/TN -> (value, start byte of the literal, end byte)."""
        body = ctx.text(ctx.kernel.body)
        base = ctx.kernel.body.start_byte
        out = {}
        for m in _KNOB.finditer(body):
            start = base + len(body[:m.start(2)].encode())
            out[m.group(1)] = (int(m.group(2)), start, start + len(m.group(2)))
        return out if {"CUOPT_TILE", "CUOPT_TM", "CUOPT_TN"} <= set(out) else {}

    def _tiled(self, ctx: Context, factor: int, axis: int) -> Rewritten:
        knobs = self._knobs(ctx)
        tile = knobs["CUOPT_TILE"][0]
        name = "CUOPT_TN" if axis == 0 else "CUOPT_TM"
        value, start, end = knobs[name]
        tm, tn = knobs["CUOPT_TM"][0], knobs["CUOPT_TN"][0]
        tm, tn = (tm, value * factor) if axis == 0 else (value * factor, tn)
        if tile % tm or tile % tn:
            raise Refuse(f"{tm}x{tn} outputs per thread do not divide the {tile}x{tile} tile")
        threads = (tile // tn) * (tile // tm)
        if threads < 32:
            raise Refuse(f"only {threads} threads per block")
        if tm * tn > MAX_OUTPUTS_PER_THREAD:
            raise Refuse(f"{tm * tn} outputs per thread")
        source = apply(ctx.source, [Edit(start, end, str(value * factor))])
        launch = Launch((tile // tn, tile // tm), ctx.launch.grid, ctx.launch.shared)
        return Rewritten(source, launch, f"{tm}x{tn} outputs per thread in the {tile}x{tile} tile")

    def _generic(self, ctx: Context, factor: int, axis: int) -> Rewritten:
        if axis >= ctx.dims:
            raise Refuse(f"the launch has no {AXES[axis]} dimension")
        if axis >= ctx.element_dims:
            raise Refuse(f"{AXES[axis]} is a batch axis of the grid (blockIdx.{AXES[axis]} picks a slice): it stays as it is")
        scale_grid(ctx, axis, E.Num(factor))  # refuses grids not written per block
        body = ctx.kernel.body
        ranges = require_index_only_builtins(ctx, body, {axis})
        ours = {r for r, a in ranges.items() if a == axis}
        if not ours:
            raise Refuse(f"the kernel does not use blockIdx.{AXES[axis]} * blockDim.{AXES[axis]} + "
                         f"threadIdx.{AXES[axis]}")
        blocks = None if bound_of(ctx.model, axis) is not None else _original_blocks(ctx, axis)
        inner = return_in_loop(ctx.model, body)
        if inner is not None:
            raise Refuse(f"return inside a loop (line {inner.start_point.row + 1})")
        e, c = fresh(ctx, "cuopt_e"), fresh(ctx, "cuopt_c")
        repl = index_replacements(ctx, ranges, {axis: e})
        for r in ctx.model.returns:
            repl[(r.start_byte, r.end_byte)] = "continue;"
        a, wide = AXES[axis], index_type(ctx, ranges, axis)
        block = f"(({wide})blockIdx.{a} * {factor} + {c})" if wide else f"(blockIdx.{a} * {factor} + {c})"
        lines = ["{", "    #pragma unroll", f"    for (int {c} = 0; {c} < {factor}; ++{c}) {{"]
        if blocks is not None:  # no guard: run exactly the original grid's positions, no more
            lines.append(f"        if (blockIdx.{a} * {factor} + {c} >= {blocks}) continue;  // past the original grid")
        lines.append(f"        const {wide or 'unsigned int'} {e} = {block} * blockDim.{a} + threadIdx.{a};")
        for st in statements(body):
            lines += ["        " + ln if ln else "" for ln in reindent(st, node_text(st, repl), "").split("\n")]
        lines += ["    }", "}"]
        launch = Launch(ctx.launch.block, scale_grid(ctx, axis, E.Num(factor)), ctx.launch.shared)
        return Rewritten(apply(ctx.source, [Edit.replace(body, "\n".join(lines))]), launch,
                         f"{factor} outputs per thread along {a}")


def _original_blocks(ctx: Context, axis: int) -> str:
    """The original grid's block count along `axis` in the kernel's terms, `cdiv(E, blockDim)` with
    each size of E a parameter the spec passes it to and the kernel never writes: a kernel with
    no guard along the axis does work at every position of its grid, so the coarsened kernel runs
    those positions and no others."""
    extent, _ = per_block_grid(ctx, axis)
    names: dict[str, str] = {f"block.{a}": f"blockDim.{a}" for a in AXES}
    for size, param in size_parameters(ctx, extent).items():
        if size in names:
            continue
        if param is None:
            raise Refuse(f"no `index < bound` guard along {AXES[axis]}, and the grid's size {size} is not a "
                         "kernel parameter: the coarsened positions could not be limited to the original grid's")
        names[size] = param
    return to_c(E.Call("cdiv", (extent, E.Name(f"block.{AXES[axis]}"))), names)


TRANSFORM = Coarsen()
