"""`cuopt capture`: record kernel launches from the running program."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer

from cuopt.commands import compile_options
from cuopt.compile_settings import CompileSettings
from cuopt.errors import CuoptError


def command(
    args: Annotated[list[str], typer.Argument(metavar="FILE.cu... -- COMMAND [ARGS]...", help=(
        "The .cu files the program was built from, then -- and the command that runs it."))],
    kernel: Annotated[Optional[list[str]], typer.Option(
        "--kernel", "-k", help="Capture this kernel (repeatable; default: every kernel of the files).")] = None,
    launches: Annotated[int, typer.Option("--launches", "-n", help="Launches to capture per kernel.")] = 1,
    max_bytes: Annotated[str, typer.Option(
        "--max-bytes", metavar="SIZE", help="Bytes of arrays in all (512M, 2GiB); what is over is left out "
        "and said.")] = "1GiB",
    name: Annotated[Optional[str], typer.Option(
        "--name", help="The capture's name (default: the first file's stem).")] = None,
    spec: Annotated[bool, typer.Option(
        "--spec/--no-spec", help="Write each file's spec from the capture (a file that has one keeps it; "
        "see --force).")] = True,
    force: Annotated[bool, typer.Option(
        "--force", help="Overwrite the files' existing specs with ones from this capture.")] = False,
    include: compile_options.Include = None,
    define: compile_options.Define = None,
) -> None:
    """Run the program as it is (its build, arguments, working directory and output unchanged) and
    record, for the chosen kernels' first launches: grid, block, dynamic shared memory, every scalar
    argument, and each pointer argument's allocation with its contents before and after the launch.

    The capture goes to .cuopt/captures/NAME/ next to the first file: manifest.json and .npy arrays
    (docs/capture.md). Then each file without a spec gets one from the capture, as `cuopt init
    --from-capture` writes it (an existing spec is kept, and the line says how to update it, unless
    --force). The command starts at the first argument that is not a .cu file; put -- before it.
    cuopt capture exits with the program's exit status."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt import ui
    from cuopt.capture.records import human
    from cuopt.capture.take import parse_size, take

    split = next((i for i, a in enumerate(args) if not a.endswith(".cu")), len(args))
    sources, program = [Path(a) for a in args[:split]], args[split:]
    if not sources:
        raise CuoptError("no .cu file given: cuopt capture FILE.cu... -- COMMAND [ARGS]...")
    if name is not None and (not name or "/" in name or name.startswith(".")):
        raise CuoptError(f"--name {name!r}: expected a plain directory name")
    limit = parse_size(max_bytes)
    settings = compile_options.settings(include, define, None)
    result = take(sources, program, kernel, launches, limit, name, settings)
    cap = result.capture
    err = ui.err_console()
    stored = sum(f.stat().st_size for f in cap.directory.glob("*.npy"))
    err.print(f"cuopt capture: {len(cap.launches)} launches of {len({ln.entry for ln in cap.launches})} kernels, "
              f"{human(stored)} of arrays in {cap.directory}", markup=False)
    for ln in cap.launches:
        err.print(f"  {ln.source}: {ln.entry} #{ln.ordinal}: grid {tuple(ln.grid)}, block {tuple(ln.block)}, "
                  f"shared {ln.shared}", markup=False)
    for line in cap.omitted:
        err.print(f"  left out: {line}", markup=False)
    if spec:
        _write_specs(cap.directory, sources, force, settings, lambda line: err.print(line, markup=False))
    if result.exit != 0:
        err.print(f"cuopt capture: the program exited with status {result.exit}", markup=False)
        raise typer.Exit(128 - result.exit if result.exit < 0 else result.exit)


def _write_specs(directory: Path, sources: list[Path], force: bool, settings: CompileSettings,
                 say: Callable[[str], None]) -> None:
    """Each source's spec from the capture in `directory`, on stderr what to say (stdout is the
    program's); a source whose spec exists keeps it unless `force`, with the command that updates it."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt.capture.manifest import captures_dir
    from cuopt.capture.to_spec import specs_from_capture
    from cuopt.spec.model import spec_path_for

    todo = []
    for path in sources:
        if force or not spec_path_for(path).exists():
            todo.append(path)
            continue
        near = directory.parent.resolve() == captures_dir(path.parent).resolve()
        say(f"{spec_path_for(path)}: exists, kept; to write it from this capture: cuopt init {path} "
            f"--from-capture {directory.name if near else directory} --force")
    if not todo:
        return
    for spec_path, made in specs_from_capture(directory, todo, force=force, say=say, settings=settings):
        for line in made.messages:
            say(line)
        say(f"wrote {spec_path} ({made.kernels} kernel{'s' if made.kernels > 1 else ''} from capture "
            f"{directory.name!r}, {made.todos} TODO{'s' if made.todos != 1 else ''} to check)")
