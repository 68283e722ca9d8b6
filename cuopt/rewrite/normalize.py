"""The normal form the rules match, so that they see through spelling: the kernel of a context
through the steps of cuopt/source/normal_form.py, read under the context's launch. A tile-row loop
is the one step that changes the launch, so each rewrite of such a kernel states its launch. The
engine offers each rule on the normal form; a kernel already in it is unchanged."""
from __future__ import annotations

from dataclasses import replace

from cuopt.rewrite.context import Context
from cuopt.source.normal_form import Reading, normal_source
from cuopt.spec.model import Launch


def normalize(ctx: Context) -> Context:
    """`ctx` with its kernel in the normal form (the same context when it already is)."""
    sizes = ctx.spec.sizes if ctx.spec is not None else {}
    reading = Reading(block=tuple(ctx.launch.block), dims=ctx.dims, sizes=sizes)
    normal = normal_source(ctx.source, ctx.macros, ctx.kernel_name, reading)
    if normal.source == ctx.source:
        return ctx
    launch = ctx.launch if normal.block == reading.block else \
        Launch(tuple(normal.block or ctx.launch.block), ctx.launch.grid, ctx.launch.shared)
    return replace(ctx, source=normal.source, launch=launch)
