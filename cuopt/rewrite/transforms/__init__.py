"""Named transforms, by the name rules give in `transform = "..."`."""
from __future__ import annotations

from cuopt.rewrite.context import Transform
from cuopt.rewrite.template import TemplateTransform
from cuopt.rewrite.transforms.block_size import BlockSize
from cuopt.rewrite.transforms.carry import Carry
from cuopt.rewrite.transforms.coarsen import Coarsen
from cuopt.rewrite.transforms.expand_loop import ExpandLoop
from cuopt.rewrite.transforms.grid_stride import GridStride
from cuopt.rewrite.transforms.fast_math import FastMath
from cuopt.rewrite.transforms.parallelize_loop import ParallelizeLoop
from cuopt.rewrite.transforms.privatize import Privatize
from cuopt.rewrite.transforms.reduce_tree import ReduceTree
from cuopt.rewrite.transforms.register_accumulate import RegisterAccumulate
from cuopt.rewrite.transforms.register_tile import RegisterTile
from cuopt.rewrite.transforms.restrict_const import RestrictConst
from cuopt.rewrite.transforms.row_cache import RowCache
from cuopt.rewrite.transforms.row_parallel import RowParallel
from cuopt.rewrite.transforms.smem_tile import SmemTile
from cuopt.rewrite.transforms.stream import Stream
from cuopt.rewrite.transforms.vectorize import Vectorize
from cuopt.rewrite.transforms.warp_atomic import WarpAtomic
from cuopt.rewrite.transforms.window import Window

TRANSFORMS: dict[str, Transform] = {
    "template": TemplateTransform(),
    "block_size": BlockSize(),
    "restrict_const": RestrictConst(),
    "vectorize": Vectorize(),
    "smem_tile": SmemTile(),
    "coarsen": Coarsen(),
    "register_tile": RegisterTile(),
    "register_accumulate": RegisterAccumulate(),
    "fast_math": FastMath(),
    "row_parallel": RowParallel(),
    "row_cache": RowCache(),
    "grid_stride": GridStride(),
    "privatize": Privatize(),
    "reduce_tree": ReduceTree(),
    "parallelize_loop": ParallelizeLoop(),
    "window": Window(),
    "stream": Stream(),
    "warp_atomic": WarpAtomic(),
    "expand_loop": ExpandLoop(),
    "carry": Carry(),
}
