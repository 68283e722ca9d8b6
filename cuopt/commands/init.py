"""`cuopt init`: write a spec skeleton next to a .cu file."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from cuopt.errors import CuoptError


def command(
    path: Annotated[Path, typer.Argument(help="The .cu file.")],
    kernel: Annotated[Optional[str], typer.Option("--kernel", "-k", help="Only this kernel.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing spec file.")] = False,
) -> None:
    """Infer a spec (launch, sizes, buffers) from the kernel's signature, index expressions and the
    host code that launches it.

    `const T*` parameters become inputs, written pointers outputs (inout when also read), integer
    scalars sizes; the grid comes from `blockIdx.x * blockDim.x + threadIdx.x < n` guards. A launch
    `kernel<<<grid, block>>>(...)` in the file gives the block, grid, cudaMalloc'd counts, copy
    directions and scalar values. What cannot be inferred is marked TODO."""
    from cuopt.spec.infer import infer_all, render
    from cuopt.spec.model import spec_path_for
    from cuopt.targets import read_source

    source = read_source(path)
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
        elif k.template:
            typer.echo(f"{path}:{k.line}: kernel {k.name} is a template; skipped", err=True)
        else:
            usable.append(k)
    if not usable:
        raise CuoptError(f"{path}: no kernel could be described")
    text = render(infer_all(source.source, usable), path.name)
    tmp = spec_path.with_name(spec_path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(spec_path)
    todos = text.count("TODO:")
    typer.echo(f"wrote {spec_path} ({len(usable)} kernel{'s' if len(usable) > 1 else ''}, "
               f"{todos} TODO{'s' if todos != 1 else ''} to check)")
