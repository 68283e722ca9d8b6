"""`cuopt rewrites`: list the rewrites that apply to a kernel, or apply some and write the variant."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cuopt.commands import compile_options
from cuopt.errors import CuoptError
from cuopt.writeback import check_destination, write_atomic


def command(
    path: Annotated[Path, typer.Argument(help="The .cu file.")],
    kernel: Annotated[Optional[str], typer.Option("--kernel", "-k", help="Only this kernel.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    apply: Annotated[Optional[list[str]], typer.Option(
        "--apply", "-a", help="Apply this rewrite id (repeatable; each applies to the previous result).")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the variant here (and its spec "
                                                "next to it); without it the variant goes to stdout.")] = None,
    why: Annotated[bool, typer.Option("--why", help="Also say why rules do not apply.")] = False,
    fast_math: Annotated[bool, typer.Option("--fast-math", help="Allow rules that need fast-math.")] = False,
    include: compile_options.Include = None,
    define: compile_options.Define = None,
    nvcc_flag: compile_options.NvccFlag = None,
) -> None:
    """List applicable rewrites (id, rule, parameters, line), or apply rewrites by id.

    Ids are stable for the same source. Works without a GPU; nothing is validated here: use
    `cuopt bench` on the written variant, or `cuopt optimize`."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt import ui
    from cuopt.rewrite.engine import Engine, Refusal
    from cuopt.targets import rewrite_contexts

    options = frozenset({"fast-math"} if fast_math else set())
    warnings: list[str] = []
    contexts = rewrite_contexts(path, kernel, options, warnings, compile_options.settings(include, define, nvcc_flag))
    for w in warnings:
        ui.warn(w)
    engine = Engine.default()
    if apply:
        if len(contexts) != 1:
            raise CuoptError(f"{path} has {len(contexts)} kernels; name one with --kernel to apply rewrites")
        if out is not None:
            check_destination(out, "--out")
        _apply(engine, contexts[0], apply, path, out, json_out)
        return
    if out is not None:
        raise CuoptError("--out needs --apply")
    rows: list[dict[str, Any]] = []
    refusals: list[tuple[str, Refusal]] = []
    for ctx in contexts:
        refused: list[Refusal] = []
        for offer in engine.offers(ctx, refusals=refused if why else None):
            rows.append({"kernel": ctx.kernel_name, "id": offer.action.id, "rule": offer.action.rule,
                         "params": offer.action.param_dict, "line": offer.action.line,
                         "summary": offer.result.summary,
                         "launch": offer.result.launch.describe() if offer.changes_launch else None})
        refusals += [(ctx.kernel_name, r) for r in refused]
    if json_out:
        ui.print_json(rows if not why else {"rewrites": rows,
                                            "refused": [{"kernel": k, **r.__dict__} for k, r in refusals]})
        return
    # deferred: loaded when the command runs, not at `cuopt --help`
    from rich.table import Table

    table = Table(title=f"{len(rows)} rewrites for {path.name}")
    for col in ("id", "summary", "new launch"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["id"] if len(contexts) == 1 else f"{r['kernel']}: {r['id']}", r["summary"], r["launch"] or "")
    console = ui.console()
    console.print(table)
    for kernel_name, r in refusals:
        where = f"{kernel_name}: " if len(contexts) > 1 else ""
        console.print(f"  {where}{r.rule}: {r.reason}", markup=False)


def _apply(engine: Any, ctx: Any, ids: list[str], path: Path, out: Path | None, json_out: bool) -> None:
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt import ui
    from cuopt.rewrite.context import Context
    from cuopt.spec.edit import relocate
    from cuopt.source.launches import with_launch
    from cuopt.spec.model import spec_path_for

    summaries = []
    original = ctx
    for action_id in ids:
        offer = engine.apply(ctx, action_id)
        summaries.append(f"{action_id}: {offer.result.summary}")
        ctx = Context(offer.result.source, offer.result.launch, ctx.kernel_name, ctx.spec, ctx.options, ctx.macros,
                      ctx.settings)
    launch, source = ctx.launch, ctx.source
    if original.spec is not None and launch != original.launch:
        source, note = with_launch(source, original.kernel, original.spec, original.launch, launch, original.macros)
        summaries.append(note)
    written = []
    if out is not None:
        write_atomic(out, source)
        written.append(str(out))
        spec_text = relocate(_spec_text(path, ctx, launch), path.parent, out.parent)
        write_atomic(spec_path_for(out), spec_text.encode())
        written.append(str(spec_path_for(out)))
    if json_out:
        ui.print_json({"kernel": ctx.kernel_name, "applied": ids, "launch": {
            "block": list(launch.block), "grid": [str(g) for g in launch.grid], "shared": str(launch.shared)},
            "written": written, **({} if out else {"source": source.decode()})})
        return
    console = ui.err_console()
    for s in summaries:
        console.print(s, markup=False)
    if out is None:
        typer.echo(source.decode(), nl=False)
    else:
        console.print(f"wrote {' and '.join(written)}", markup=False)
    console.print(f"launch: {launch.describe()}", markup=False)


def _spec_text(path: Path, ctx: Any, launch: Any) -> str:
    """The original spec with this kernel's launch replaced. A kernel the spec leaves out (or a file
    without a spec) gets the table `cuopt init` writes, after the spec's tables; a kernel no spec can
    describe gets none (the spec as it is, else init's comment that says why)."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt.spec.edit import set_launch
    from cuopt.spec.infer import infer_in_file, render, table_name
    from cuopt.spec.model import spec_path_for

    spec_path = spec_path_for(path)
    existing = spec_path.read_text() if spec_path.is_file() else None
    if ctx.spec is not None and existing is not None:
        return set_launch(existing, ctx.spec.name, launch)
    inferred = infer_in_file(ctx.source, ctx.kernel)
    skeleton = render([(ctx.kernel, inferred)], path.name)
    if inferred.unsupported:
        return existing or skeleton
    skeleton = set_launch(skeleton, table_name(ctx.kernel), launch)
    return skeleton if existing is None else existing.rstrip("\n") + "\n\n" + skeleton.split("\n\n", 1)[1]
