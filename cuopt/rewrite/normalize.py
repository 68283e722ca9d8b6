"""The normal form the rules match, so that they see through spelling: the kernel of a context
through the steps of cuopt/source/normal_form.py, read under the context's launch. A tile-row loop
is the one step that changes the launch, so each rewrite of such a kernel states its launch. The
engine offers each rule on the normal form; a kernel already in it is unchanged. The rules that
change the launch read it under its lean launch (`lean`), without threads that repeat others' work."""
from __future__ import annotations

from dataclasses import replace

from cuopt.rewrite.context import Context
from cuopt.source.normal_form import Reading, normal_source
from cuopt.source.thread_roles import describe_lean, lean_launch
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


def lean(ctx: Context) -> Context:
    """`ctx` under its lean launch: without the threads and blocks that repeat each other's work
    (`dim3 block(32, 8)` over a kernel that reads no y built-in runs as block 32), with the launch it
    was given kept (`Context.given`); the same context when nothing repeats. The rules that change the
    launch read the kernel so, and each of their rewrites drops the copies."""
    launch = lean_launch(ctx.launch, ctx.model.roles)
    return ctx if launch == ctx.launch else replace(ctx, launch=launch, given=ctx.launch)


def lean_note(ctx: Context) -> str:
    """What reading `ctx` under its lean launch dropped, for a rewrite's summary ("" when nothing)."""
    return describe_lean(ctx.given, ctx.launch, ctx.model.roles) if ctx.given is not None else ""
