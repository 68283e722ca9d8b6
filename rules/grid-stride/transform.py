"""grid-stride: a grid about `per_thread` times smaller, each thread looping over the indices
`gridDim.x * blockDim.x` apart (every step stays coalesced)."""
from __future__ import annotations

from typing import Any

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply
from cuopt.rewrite.transforms.common import per_block_grid, scale_grid
from cuopt.rewrite.transforms.stride import StrideLoop, stride_loop
from cuopt.spec import expr as E
from cuopt.spec.model import Launch


class GridStride:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        if ctx.model.shared:
            raise Refuse("uses shared memory")
        per_block_grid(ctx, 0)  # refuses grids not written per block
        loop = stride_loop(ctx)
        return [Site(ctx.kernel.node, data=loop)]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        per_thread = int(params["per_thread"])
        loop: StrideLoop = site.data
        launch = Launch(ctx.launch.block, scale_grid(ctx, 0, E.Num(per_thread)), ctx.launch.shared)
        return Rewritten(apply(ctx.source, [Edit.replace(ctx.kernel.body, loop.render())]), launch,
                         f"a grid-stride loop, about {per_thread} indices per thread")


TRANSFORM = GridStride()
