"""`cuopt init`: write a spec skeleton next to a .cu file."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from cuopt.commands import compile_options
from cuopt.compile_settings import CompileSettings
from cuopt.errors import CuoptError


def command(
    path: Annotated[Path, typer.Argument(help="The .cu file.")],
    kernel: Annotated[Optional[str], typer.Option("--kernel", "-k", help="Only this kernel.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing spec file.")] = False,
    include: compile_options.Include = None,
    define: compile_options.Define = None,
    nvcc_flag: compile_options.NvccFlag = None,
) -> None:
    """Infer a spec (launch, sizes, buffers) from the kernel's signature, index expressions and the
    host code that launches it.

    `const T*` parameters become inputs, written pointers outputs (inout when also read), integer
    scalars sizes; the grid comes from `blockIdx.x * blockDim.x + threadIdx.x < n` guards. A launch
    `kernel<<<grid, block>>>(...)` in the file gives the block, grid, cudaMalloc'd counts, copy
    directions and scalar values. What cannot be inferred is marked TODO. A template kernel is
    described for the first instantiation the file makes (explicitly or by a host launch); without
    one, a TODO asks for the `kernel = "name<...>"` line. A kernel whose parameters no spec can pass
    (a functor struct by value) is left out, with a comment and a message. -I, -D and --nvcc-flag go
    into the spec's [compile] table, so that later commands need them no more."""
    from cuopt.compile_settings import NO_SETTINGS, resolve
    from cuopt.spec.infer import infer_all, render
    from cuopt.spec.model import COMPILE_TABLE, spec_path_for
    from cuopt.targets import default_instance, read_source

    settings = compile_options.settings(include, define, nvcc_flag)
    source = read_source(path, resolve(path, NO_SETTINGS, settings))
    spec_path = spec_path_for(path)
    if spec_path.exists() and not force:
        raise CuoptError(f"{spec_path}: already exists; pass --force to overwrite it")
    kernels = [k for k in source.kernels if kernel is None or k.name == kernel]
    if not kernels:
        found = ", ".join(k.name for k in source.kernels) or "none"
        what = f"no __global__ kernel named {kernel!r}" if kernel else "no __global__ kernels"
        raise CuoptError(f"{path}: {what} (found: {found})")
    usable = []
    for k in kernels:
        if k.errors:
            e = k.errors[0]
            typer.echo(f"{path}:{e.line}:{e.column}: {e.message}; kernel {k.name} skipped", err=True)
        elif k.name == COMPILE_TABLE:
            typer.echo(f"{path}:{k.line}: kernel {k.name}: the name is reserved for the spec's [compile] table; "
                       "skipped", err=True)
        else:
            usable.append(default_instance(source, k) or k if k.template else k)
    inferred = infer_all(source.source, usable)
    for k, inf in inferred:
        if inf.unsupported:
            typer.echo(f"{path}:{k.line}: kernel {k.entry} skipped: {inf.unsupported}; cuopt cannot run it", err=True)
    described = [k for k, inf in inferred if not inf.unsupported]
    if not described:
        raise CuoptError(f"{path}: no kernel could be described")
    text = with_compile_table(render(inferred, path.name), settings, spec_path.parent)
    tmp = spec_path.with_name(spec_path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(spec_path)
    todos = text.count("TODO:")
    typer.echo(f"wrote {spec_path} ({len(described)} kernel{'s' if len(described) > 1 else ''}, "
               f"{todos} TODO{'s' if todos != 1 else ''} to check)")


def with_compile_table(text: str, settings: CompileSettings, spec_dir: Path) -> str:
    """The spec text with a `[compile]` table for `settings` (include paths relative to the spec's
    directory) before the first kernel table; the text as it is without settings."""
    table = settings.relative_to(spec_dir)
    if not table:
        return text
    lines = ["[compile]", *(f"{key} = {json.dumps(values)}" for key, values in table.items()), ""]
    head, sep, rest = text.partition("\n\n")
    return f"{head}{sep}" + "\n".join(lines) + "\n" + rest
