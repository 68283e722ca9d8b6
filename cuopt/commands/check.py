"""`cuopt check`: lint .cu/.cuh files (syntax, spec, nvcc, optimization findings) for pre-commit and CI."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from cuopt import __version__
from cuopt.commands import compile_options
from cuopt.lint.diagnostics import to_json, to_text


class Format(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"


def command(
    paths: Annotated[list[Path], typer.Argument(metavar="FILES", help=".cu/.cuh files, or directories of them.")],
    strict: Annotated[bool, typer.Option("--strict", help="Fail on findings (warnings) too, not only on errors.")] = False,
    fmt: Annotated[Format, typer.Option("--format", help="Output format: text, json or sarif (SARIF 2.1.0).",
                                        case_sensitive=False)] = Format.text,
    no_compile: Annotated[bool, typer.Option("--no-compile", help="Do not compile with nvcc.")] = False,
    arch: Annotated[str, typer.Option(metavar="ARCH", help="Architecture nvcc compiles for.")] = "sm_90",
    include: compile_options.Include = None,
    define: compile_options.Define = None,
    nvcc_flag: compile_options.NvccFlag = None,
) -> None:
    """Check CUDA files without a GPU: they parse, their specs match the kernel signatures, they
    compile with nvcc (when it is on PATH), and report likely wins of `cuopt optimize` as findings.

    Exit status 0 without errors (findings are warnings), 1 with errors, or with findings under
    --strict. `// cuopt: ignore[rule-id]` on or right above a kernel silences a rule there."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt import ui
    from cuopt.lint.check import check

    report = check(paths, use_nvcc=not no_compile, arch=arch,
                   settings=compile_options.settings(include, define, nvcc_flag))
    diagnostics = list(report.diagnostics)
    if fmt is Format.text:
        typer.echo(to_text(diagnostics, len(report.files)), nl=False)
    elif fmt is Format.json:
        ui.print_json(to_json(diagnostics))
    else:
        # deferred: only --format sarif needs it, and its urllib would slow `cuopt --help`
        from cuopt.lint.sarif import sarif_log

        ui.print_json(sarif_log(diagnostics, report.codes, __version__))
    raise typer.Exit(report.exit_code(strict))
