"""`cuopt init`: write a spec skeleton next to a .cu file."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from cuopt.commands import compile_options
from cuopt.compile_settings import NO_SETTINGS, CompileSettings, resolve
from cuopt.errors import CuoptError
from cuopt.writeback import write_atomic

if TYPE_CHECKING:
    from cuopt.source.kernels import Kernel, SourceFile


def command(
    path: Annotated[Path, typer.Argument(help="The .cu file.")],
    kernel: Annotated[Optional[str], typer.Option("--kernel", "-k", help="Only this kernel.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing spec file.")] = False,
    include: compile_options.Include = None,
    define: compile_options.Define = None,
    nvcc_flag: compile_options.NvccFlag = None,
    from_capture: Annotated[Optional[str], typer.Option(
        "--from-capture", metavar="NAME|DIR",
        help="Take launches, sizes, scalars and counts from a capture (`cuopt capture`): its name under "
             ".cuopt/captures/ next to the file (`cuopt capture` names it by the file's stem) or its "
             "directory.")] = None,
) -> None:
    """Infer a spec (launch, sizes, buffers) from the kernel's signature, index expressions and the
    host code that launches it.

    `const T*` parameters become inputs, written pointers outputs (inout when also read), integer
    scalars sizes; the grid comes from `blockIdx.x * blockDim.x + threadIdx.x < n` guards. A launch
    `kernel<<<grid, block>>>(...)` in the file gives the block, grid, cudaMalloc'd counts, copy
    directions and scalar values. What cannot be inferred is marked TODO. A template kernel is
    described for the first instantiation the file makes (explicitly, by a host launch, through a host
    template, a constant or an integral-constant tag); without one, for its defaults and float
    buffers, with a TODO. A kernel no spec can describe (a parameter no spec can pass, such as a
    functor struct by value; a template no instantiation can be formed for; a syntax error) is left
    out, with a comment and a message. -I, -D and --nvcc-flag go
    into the spec's [compile] table, so that later commands need them no more.

    With --from-capture, each kernel the capture saw gets the captured launch, sizes, scalar values
    and counts, and `capture = "NAME"`, so that bench and optimize validate on the captured data too;
    where the source's expression gives another value, the captured one is written, and a line says so."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt.spec.infer import infer_all, render
    from cuopt.spec.model import COMPILE_TABLE, spec_path_for
    from cuopt.targets import read_source

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
    usable, left_out, guessed = [], [], {}
    for k in kernels:
        if k.errors:
            e = k.errors[0]
            typer.echo(f"{path}:{e.line}:{e.column}: {e.message}; kernel {k.name} skipped", err=True)
            left_out.append((k, f"it does not parse (line {e.line}: {e.message})"))
        elif k.name == COMPILE_TABLE:
            typer.echo(f"{path}:{k.line}: kernel {k.name}: the name is reserved for the spec's [compile] table; "
                       "skipped", err=True)
            left_out.append((k, "its name is reserved for the spec's [compile] table"))
        elif k.template:
            instance, why = template_instance(source, k)
            if instance is None:
                typer.echo(f"{path}:{k.line}: kernel {k.name} skipped: {why}", err=True)
                left_out.append((k, why))
                continue
            usable.append(instance)
            if why:
                guessed[instance.entry] = why
        else:
            usable.append(k)
    if from_capture is not None:
        _from_capture(path, source, usable, from_capture, spec_path, settings)
        return
    inferred = infer_all(source.source, usable)
    for k, inf in inferred:
        if k.entry in guessed:
            inf.notes.insert(0, guessed[k.entry])
    for k, inf in inferred:
        if inf.unsupported:
            typer.echo(f"{path}:{k.line}: kernel {k.entry} skipped: {inf.unsupported}; cuopt cannot run it", err=True)
    described = [k for k, inf in inferred if not inf.unsupported]
    if not described:
        raise CuoptError(f"{path}: no kernel could be described")
    text = settings.in_spec(render(inferred, path.name, left_out), spec_path.parent)
    tmp = spec_path.with_name(spec_path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(spec_path)
    todos = text.count("TODO:")
    typer.echo(f"wrote {spec_path} ({len(described)} kernel{'s' if len(described) > 1 else ''}, "
               f"{todos} TODO{'s' if todos != 1 else ''} to check)")


def template_instance(source: SourceFile, kernel: Kernel) -> tuple[Kernel | None, str]:
    """The instantiation of template `kernel` that init describes, with a TODO note when it is a
    guess; or None and why the kernel is left out. The first instantiation the file makes, else one a
    launch deduces from the pointers it passes, else the template's defaults and `float` for a type
    parameter that a pointer parameter points to."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt.source.template_args import deduced
    from cuopt.source.templates import TemplateError
    from cuopt.spec.bind import unsupported
    from cuopt.targets import default_instance

    found = default_instance(source, kernel)
    types = {t.name for t in kernel.template_params or () if t.kind == "type"}
    if found is not None and (unsupported(found) is None or not any(
            p.pointer and p.ctype is None and p.base_type in types for p in found.params)):
        return found, ""  # else its buffers' type is one cuopt cannot read (`k<scalar_t>`, a dispatch macro's alias)
    cannot = unsupported(kernel)  # a parameter no instantiation makes passable: `std::bool_constant<Atomic>`
    if cannot is not None:
        return None, f"{cannot}; cuopt cannot run it"
    if kernel.template_params is None:
        return None, "its template parameters (variadic, or templates themselves) are not supported"
    pointed = {p.base_type for p in kernel.params if p.pointer}
    positions = {p.base_type: i for i, p in reversed(list(enumerate(kernel.params)))
                 if p.pointer and p.base_type in types}  # each type's first `T*` parameter
    for given, _ in deduced(source.tree.root_node, kernel.name, positions):  # `k<<<g, b>>>(d_x, n)`, `float* d_x`
        args = [given.get(t.name) or t.default or "" for t in kernel.template_params]
        if "" in args:
            continue
        try:
            instance = source.kernel(f"{kernel.name}<{', '.join(args)}>")
        except TemplateError:
            continue
        if instance is not None and unsupported(instance) is None:
            return instance, ""
    args: list[str] = []
    for t in kernel.template_params:
        if t.default is not None:
            args.append(t.default)
        elif t.kind == "type" and t.name in pointed:
            args.append("float")
        else:
            what = "is no buffer's element type (a functor or lambda type?)" if t.kind == "type" else \
                "has no default"
            return None, (f"the file makes no instantiation that cuopt can read, and template parameter {t.name} "
                          f"{what}; add a table with kernel = \"{kernel.name}<...>\" to describe one")
    entry = f"{kernel.name}<{', '.join(args)}>"
    try:
        instance = source.kernel(entry)
    except TemplateError as exc:
        return None, f"the file makes no instantiation that cuopt can read, and {exc}"
    if instance is None:
        return None, f"the file makes no instantiation that cuopt can read, and {entry} cannot be formed"
    return instance, (f"kernel: the file makes no instantiation of {kernel.name} that cuopt can read (one the "
                      f"launch deduces, or one made elsewhere): described as {entry}; set the one your program runs")


def _from_capture(path: Path, source: SourceFile, kernels: list[Kernel], name: str, spec_path: Path,
                  settings: CompileSettings) -> None:
    """The spec from capture `name` (a name next to `path`, or a directory); nothing is written when the
    capture is damaged, of another version of the file, or does not fit a kernel's signature."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt.capture.manifest import load, locate
    from cuopt.capture.to_spec import from_capture

    capture = load(locate(name, path.parent))
    made = from_capture(path, source, capture, kernels, spec_path.parent, lambda line: typer.echo(line, err=True))
    if not made.kernels:
        raise CuoptError(f"{path}: no kernel could be described")
    for line in made.messages:
        typer.echo(line, err=True)
    write_atomic(spec_path, settings.in_spec(made.text, spec_path.parent).encode())
    typer.echo(f"wrote {spec_path} ({made.kernels} kernel{'s' if made.kernels > 1 else ''} from capture "
               f"{capture.name!r}, {made.todos} TODO{'s' if made.todos != 1 else ''} to check)")
