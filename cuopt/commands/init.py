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
    """Infer a spec (launch, sizes, buffers) from the kernel's signature and index expressions.

    `const T*` parameters become inputs, written pointers outputs (inout when also read), integer
    scalars sizes; the grid comes from `blockIdx.x * blockDim.x + threadIdx.x < n` guards. What
    cannot be inferred is marked TODO. A template kernel is described for the first instantiation
    the file makes (explicitly or by a host launch); without one, a TODO asks for the
    `kernel = "name<...>"` line."""
    from cuopt.spec.infer import infer, render
    from cuopt.spec.model import spec_path_for
    from cuopt.targets import default_instance, read_source

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
        else:
            usable.append(default_instance(source, k) or k if k.template else k)
    if not usable:
        raise CuoptError(f"{path}: no kernel could be described")
    text = render([(k, infer(k)) for k in usable], path.name)
    tmp = spec_path.with_name(spec_path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(spec_path)
    todos = text.count("TODO:")
    typer.echo(f"wrote {spec_path} ({len(usable)} kernel{'s' if len(usable) > 1 else ''}, "
               f"{todos} TODO{'s' if todos != 1 else ''} to check)")
